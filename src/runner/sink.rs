//! What a run shows while it goes is fed through one [`Sink`]: the stepper hands it each
//! engine tick and each stored step, and asks it whether the user ended a step early. The
//! use case decides what is behind it (the progress line or bar, the terminal view, the live
//! page), so the runner knows none of them.
use super::step::{level_of, live_series, RunClock};
use crate::engine::{Control, EngineConfig, Load};
use crate::observe::ObserverHandle;
use crate::store::{SeriesPoint, StepRecord};
use std::time::Duration;

/// One tick of the engine of the step in progress (about once a second, on the runner's
/// thread).
pub struct StepTick<'a> {
    /// The step's index in the run (0 for a single run).
    pub index: usize,
    pub load: Load,
    /// The step's live counters; setting its `stop` ends the step.
    pub ctl: &'a Control,
    /// Since the step's engine started, warm-up included.
    pub elapsed: Duration,
    /// The server's side, when observed.
    pub observer: Option<&'a ObserverHandle>,
    /// The run's engine configuration (the step's is this at `load`).
    pub base: &'a EngineConfig,
    pub clock: &'a RunClock,
}

impl StepTick<'_> {
    /// The step's level now: requests/s or users; on a ramp, or steered by live control,
    /// where the level is at this tick (this generator's share of it when the plan is
    /// split). The one reading of "offered now": the progress, the view and the push.
    pub fn offered(&self) -> f64 {
        self.moving_level().unwrap_or_else(|| {
            let seg = self.base.segment;
            match self.load {
                Load::Open { rate, .. } => rate / f64::from(seg.count),
                Load::Closed { users, .. } => seg.share(users as u64) as f64,
            }
        })
    }

    /// The level now when it moves (a ramp, or a step live control changed), else None.
    pub fn moving_level(&self) -> Option<f64> {
        let steered = self.base.steer.as_ref().is_some_and(|s| s.steered());
        if self.base.ramp.is_none() && !steered {
            return None;
        }
        let p = level_of(self.base)?;
        Some(p.level(self.elapsed.as_secs_f64()) / f64::from(self.base.segment.count))
    }

    /// The changes live control made to the step so far, as series.jsonl will record them.
    pub fn events(&self) -> Vec<crate::store::ControlEvent> {
        let Some(st) = &self.base.steer else {
            return Vec::new();
        };
        let started = std::time::Instant::now()
            .checked_sub(self.elapsed)
            .unwrap_or(self.clock.start);
        let start_s = self.clock.secs(started);
        st.changes_of(self.index)
            .iter()
            .map(|a| super::step::control_event(a, start_s))
            .collect()
    }

    /// The closed seconds of the step so far, as the results folder will store them.
    pub fn series(&self) -> Vec<SeriesPoint> {
        let cfg = EngineConfig {
            load: self.load,
            ..self.base.clone()
        };
        live_series(&cfg, self.ctl, self.elapsed, self.index, self.clock)
    }
}

pub trait Sink {
    /// A tick of the step in progress. Must return at once.
    fn tick(&mut self, tick: &StepTick);
    /// A step ended and was stored (flags set), with its per-second series.
    fn step_done(&mut self, _rec: &StepRecord, _series: &[SeriesPoint], _mode: &str) {}
    /// Whether the user ended step `index` early (asked once, then forgotten).
    fn take_ended_early(&mut self, _index: usize) -> bool {
        false
    }
    /// The run's steps are over: give the terminal back.
    fn close(&mut self) {}
}

/// Shows nothing.
pub struct Silent;

impl Sink for Silent {
    fn tick(&mut self, _tick: &StepTick) {}
}
