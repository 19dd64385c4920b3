//! The configuration of `overload capacity`: the search's range, precision and SLO;
//! `Display` is the equivalent command line.
use super::command::{self, Argv};
use super::config::{ConnConfig, OpenLoopConfig, Output, RequestConfig, SegmentConfig, StepTiming};
use crate::observe::ObserveArgs;
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub struct CapacityConfig {
    pub request: RequestConfig,
    /// First rate probed (req/s); it doubles until a probe fails the SLO.
    pub start: f64,
    /// Highest rate probed (req/s).
    pub max: f64,
    /// Stop bisecting when the bracket is narrower than this share of its low end.
    pub precision: f64,
    /// Runs of the capacity probe (the highest rate that met) once the bracket is found: the
    /// capacity holds only if every run met, and comes with the spread of their throughput.
    pub repeat: usize,
    pub open: OpenLoopConfig,
    pub timing: StepTiming,
    /// The SLO the search is about (required).
    pub slo: Option<String>,
    pub conn: ConnConfig,
    /// Scale-out: this generator's part of the plan and the common start.
    pub segment: SegmentConfig,
    pub observe: ObserveArgs,
    pub output: Output,
}

impl Default for CapacityConfig {
    fn default() -> Self {
        CapacityConfig {
            request: RequestConfig::default(),
            start: 50.0,
            max: 100_000.0,
            precision: 0.05,
            repeat: 2,
            open: OpenLoopConfig::default(),
            timing: StepTiming::default(),
            slo: None,
            conn: ConnConfig::default(),
            segment: SegmentConfig::default(),
            observe: ObserveArgs::default(),
            output: Output::default(),
        }
    }
}

/// The equivalent `overload capacity …` command line.
impl fmt::Display for CapacityConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut a = Argv::new("capacity");
        command::request(&mut a, &self.request, &self.conn);
        command::open_loop(&mut a, &self.open);
        command::observe(&mut a, &self.observe);
        command::segment(&mut a, &self.segment);
        a.opt("--start", self.start.to_string());
        a.opt("--max", self.max.to_string());
        a.opt("--precision", self.precision.to_string());
        a.opt("--repeat", self.repeat.to_string());
        command::timing(&mut a, &self.timing, self.slo.as_deref(), &self.output);
        a.fmt(f)
    }
}
