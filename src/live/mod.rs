//! Watching a run as it goes. `--live-port PORT` ([`LivePage`]): the results folder's HTML
//! report served on loopback and reloaded by the browser every second, read from what the
//! runner has already stored (one source of figures: the folder). Only a GET of the page, at
//! a path holding a random token printed on the terminal, is answered, so another local user
//! cannot read it. The runner also hands it the per-second series of the step in progress
//! (`LivePage::show_series`), so a single run's charts fill as it goes, not at its end.
//! `--control-port` ([`ControlPort`]): live control of the load, behind a secret path too.
mod control;
mod page;

pub use control::{ControlPort, CONTROL_LIMITS};

pub use page::{respond, LivePage, LIMITS};
