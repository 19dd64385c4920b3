//! The seam between the runner's decisions (stop rules, the capacity search, experiment
//! sequencing) and the load engine: an [`Executor`] runs one step, rests between steps and
//! says whether an interruption was asked for. [`LocalEngine`] (the engine in this process)
//! is the real one; the scale-out controller's generators are another; the unit tests use a
//! scripted one (`runner::fake`), so the decisions are tested without sockets or sleeps.
use super::step::{run_step, RunClock, StepResult};
use crate::analysis::Slo;
use crate::engine::{Control, EngineConfig, Load};
use std::time::{Duration, Instant};

pub trait Executor {
    /// Runs one step at `load` on `base`'s request mix and timing (see [`run_step`]).
    fn run_step(
        &mut self,
        base: &EngineConfig,
        load: Load,
        index: usize,
        clock: &RunClock,
        slo: Option<&Slo>,
        on_tick: &mut dyn FnMut(&Control, Duration),
    ) -> crate::Result<StepResult>;

    /// Rests between steps, so the server drains.
    fn rest(&mut self, d: Duration);

    /// An interruption (SIGINT) was asked for.
    fn interrupted(&self) -> bool;

    /// Why the run must stop when it is not SIGINT (a lost generator), for run.json.
    fn stop_reason(&self) -> Option<String> {
        None
    }

    /// The results folder the steps go to, once it exists (the controller writes which
    /// generators ran each step beside them).
    fn results_folder(&mut self, _dir: &std::path::Path) {}
}

/// The real load engine; rests are cut short by SIGINT.
#[derive(Debug, Default, Clone, Copy)]
pub struct LocalEngine;

impl Executor for LocalEngine {
    fn run_step(
        &mut self,
        base: &EngineConfig,
        load: Load,
        index: usize,
        clock: &RunClock,
        slo: Option<&Slo>,
        on_tick: &mut dyn FnMut(&Control, Duration),
    ) -> crate::Result<StepResult> {
        run_step(base, load, index, clock, slo, on_tick)
    }

    fn rest(&mut self, d: Duration) {
        let end = Instant::now() + d;
        while Instant::now() < end && !crate::signals::interrupted() {
            std::thread::sleep(
                Duration::from_millis(50).min(end.saturating_duration_since(Instant::now())),
            );
        }
    }

    fn interrupted(&self) -> bool {
        crate::signals::interrupted()
    }
}
