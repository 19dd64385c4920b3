//! overload: load-test web stacks and analyse how they behave under overload.
//!
//! The flow runs one way: `plan` (what to send, when) → `engine` (send, time) →
//! `metrics` (histograms, counters) → `report` (terminal, JSON). `target` is the embedded
//! HTTP server used by the demo, the tests and the benchmarks; `lab` brings up real stacks.
// The library's own name in its unit tests: src/report/testdata.rs, compiled there and into
// tests/suite/report.rs, names the library as `overload::` in both.
#[cfg(test)]
extern crate self as overload;

pub mod analysis;
pub mod audit;
pub mod cli;
pub mod clock;
pub mod console;
pub mod engine;
pub mod error;
pub mod experiment;
pub mod fsutil;
pub mod http_get;
pub mod lab;
pub mod listen;
pub mod live;
pub mod liverun;
pub mod merge;
pub mod metrics;
pub mod observe;
pub mod plan;
pub mod push;
pub mod report;
pub mod runner;
pub mod scale;
pub mod scenario;
pub mod signals;
pub mod store;
pub mod target;
pub mod tui;
pub mod units;
pub mod url;
pub mod usecase;

pub use error::{Error, Result};
