//! The use cases, as a library: run once, sweep, capacity search, demo, audit. Each takes a typed
//! configuration whose `Default` holds the only copy of its defaults, runs on an
//! [`Executor`](crate::runner::Executor) where it steps, and returns a typed outcome whose
//! `Display` is what the command line prints. `cli` builds these configurations from
//! arguments; `experiment` builds the same ones from its TOML file. The `Display` of each
//! configuration is the equivalent `overload …` command line.
pub mod audit;
pub mod capacity;
pub mod command;
pub mod config;
pub mod demo;
pub mod engine_config;
pub mod lifecycle;
pub mod mix;
pub mod probe;
pub mod results;
pub mod run;
pub mod sweep;

pub use capacity::CapacityConfig;
pub use config::{ConnConfig, OpenLoopConfig, Output, RequestConfig, SegmentConfig, StepTiming};
pub use demo::DemoConfig;
pub use run::{RunConfig, RunLoad};
pub use sweep::{Levels, SweepConfig};

#[cfg(test)]
mod tests;
