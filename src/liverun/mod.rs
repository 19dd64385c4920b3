//! What a run shows on the console while it goes and prints when it ends: the progress line
//! and the sweep's bar (`progress.rs`, fed once a second; its [`progress::LiveView`] is what
//! the terminal view implements), the summary of a single run (`summary.rs`: the plan line,
//! figures, warnings, the server's side, the SLO verdict) and its `--json` (`json.rs`). The
//! reports of a results folder are `report`'s; this floor reads the engine's live counters
//! and outcome, which `report` never sees.
pub mod json;
pub mod progress;
pub mod summary;
