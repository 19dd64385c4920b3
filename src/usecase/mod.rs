//! The use cases, as a library: run once, sweep, capacity search, demo, audit. Each takes a typed
//! configuration whose `Default` holds the only copy of its defaults, runs on an
//! [`Executor`](crate::runner::Executor) where it steps, and returns a typed outcome whose
//! `Display` is what the command line prints. `cli` builds these configurations from
//! arguments; `experiment` builds the same ones from its TOML file. The `Display` of each
//! configuration is the equivalent `overload …` command line.
//!
//! The run kinds (run, sweep, capacity, demo) share one lifecycle (`lifecycle.rs`: results
//! folder, live page, banner, `--start-at`, progress or terminal view, observer, then report,
//! hdr-log and analysis); each kind's file holds only its validation and its driver (which
//! step next), its configuration is in `<kind>_config.rs` and its outcome in `outcome.rs`.
//! `config.rs` holds the option types they share, `mix.rs` the request mix, `probe.rs` the
//! ALPN probe, `engine_config.rs` the engine configuration built from them, and `ramp.rs` a
//! run on stages' knee, read right after its load.
pub mod alt_svc;
pub mod audit;
pub mod capacity;
pub mod capacity_config;
pub mod command;
pub mod config;
pub mod demo;
pub mod demo_config;
pub mod engine_config;
pub mod lifecycle;
pub mod mix;
pub mod outcome;
pub mod probe;
mod ramp;
pub mod results;
pub mod run;
pub mod run_config;
pub mod sweep;
pub mod sweep_config;

pub use capacity_config::CapacityConfig;
pub use config::{
    ConnConfig, ControlConfig, OpenLoopConfig, Output, RequestConfig, SegmentConfig, StepTiming,
};
pub use demo_config::DemoConfig;
pub use outcome::{CapacityOutcome, DemoOutcome, DemoTarget, RunOutcome, SweepOutcome};
pub use run_config::{RunConfig, RunLoad, DEFAULT_DURATION, DEFAULT_USERS};
pub use sweep_config::{Levels, SweepConfig};

#[cfg(test)]
mod tests;
