//! Experiments: a matrix of server configurations under the same load, written once in a
//! TOML file, run one configuration after another with a restart (and a warm-up round)
//! before each run, stored in one folder and compared in one report — what S2 did by hand
//! with siege and shell scripts, and S3–S5 with a handful of configurations.
//!
//! - `spec`: the file format and its validation (errors name the file and the key);
//! - `plan`: the matrix expanded into runs, durations for `--dry-run`, `--quick` scaling;
//! - `runner`: server start/stop (lab stacks or setup/teardown commands), warm-up, runs;
//! - `resume`: `experiment.json`, the finished runs, for `--resume`;
//! - `report`: the comparison page and table.
pub mod plan;
pub mod report;
pub mod resume;
pub mod runner;
pub mod servers;
pub mod spec;

pub use spec::{load, Experiment};

#[cfg(test)]
mod tests;
