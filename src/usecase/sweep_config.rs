//! The configuration of `overload sweep`: its load levels, stop rules and timing; `Display`
//! is the equivalent command line.
use super::command::{self, Argv};
use super::config::{ConnConfig, OpenLoopConfig, Output, RequestConfig, SegmentConfig, StepTiming};
use crate::engine::Load;
use crate::observe::ObserveArgs;
use std::fmt;
use std::time::Duration;

/// The load levels of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub enum Levels {
    /// Open loop: requests per second.
    Rates(Vec<f64>),
    /// Closed loop: users, with an optional think time (`lo..hi`).
    Users {
        users: Vec<usize>,
        think: Option<(Duration, Duration)>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct SweepConfig {
    pub request: RequestConfig,
    pub levels: Levels,
    pub open: OpenLoopConfig,
    /// Steps to run after the saturation point.
    pub past_saturation: usize,
    /// Stop when a step fails more than this share of requests.
    pub max_errors: f64,
    /// Stop when a step's response-time p99 exceeds this.
    pub max_p99: Option<Duration>,
    pub timing: StepTiming,
    /// Service-level objective, e.g. `p99<500ms,errors<1%`.
    pub slo: Option<String>,
    pub conn: ConnConfig,
    /// Scale-out: this generator's part of the plan and the common start.
    pub segment: SegmentConfig,
    pub observe: ObserveArgs,
    pub output: Output,
    /// Audit the first URL before the load and store it as audit.json (`--audit`).
    pub audit: bool,
}

impl Default for SweepConfig {
    fn default() -> Self {
        SweepConfig {
            request: RequestConfig::default(),
            levels: Levels::Rates(Vec::new()),
            open: OpenLoopConfig::default(),
            past_saturation: 2,
            max_errors: 0.2,
            max_p99: None,
            timing: StepTiming::default(),
            slo: None,
            conn: ConnConfig::default(),
            segment: SegmentConfig::default(),
            observe: ObserveArgs::default(),
            output: Output::default(),
            audit: false,
        }
    }
}

impl SweepConfig {
    /// `open` or `closed`.
    pub fn mode(&self) -> &'static str {
        match self.levels {
            Levels::Rates(_) => "open",
            Levels::Users { .. } => "closed",
        }
    }

    /// The loads of the steps, in order.
    pub fn loads(&self) -> Vec<Load> {
        match &self.levels {
            Levels::Rates(r) => r.iter().map(|&rate| self.open.load(rate)).collect(),
            Levels::Users { users, think } => users
                .iter()
                .map(|&users| Load::Closed {
                    users,
                    think: think.unwrap_or((Duration::ZERO, Duration::ZERO)),
                })
                .collect(),
        }
    }
}

fn join<T: fmt::Display>(v: &[T]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// The equivalent `overload sweep …` command line.
impl fmt::Display for SweepConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut a = Argv::new("sweep");
        command::request(&mut a, &self.request, &self.conn);
        match &self.levels {
            Levels::Users { think, .. } => command::think(&mut a, *think),
            Levels::Rates(_) => command::open_loop(&mut a, &self.open),
        }
        command::observe(&mut a, &self.observe);
        command::segment(&mut a, &self.segment);
        match &self.levels {
            Levels::Rates(r) => a.opt("--rates", join(r)),
            Levels::Users { users, .. } => a.opt("--users", join(users)),
        };
        a.opt("--past-saturation", self.past_saturation.to_string());
        a.opt("--max-errors", self.max_errors.to_string());
        if let Some(m) = self.max_p99 {
            a.opt("--max-p99", command::dur(m));
        }
        command::timing(&mut a, &self.timing, self.slo.as_deref(), &self.output);
        if self.audit {
            a.arg("--audit");
        }
        a.fmt(f)
    }
}
