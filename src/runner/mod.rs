//! Runs made of steps: sweeps over load levels and capacity searches. A [`Stepper`] runs one
//! step after another on the same clock, stores each as soon as it ends, and prints it.
//! Steps run on an [`Executor`]: the real engine, or a scripted one in the unit tests.
pub mod executor;
#[cfg(test)]
pub mod fake;
pub mod probes;
pub mod sink;
pub mod step;
pub mod sweep;

use crate::analysis::Slo;
use crate::engine::{EngineConfig, Load};
use crate::store::{StepRecord, Writer};
pub use executor::{Executor, LocalEngine};
pub use sink::{Silent, Sink, StepTick};
use std::time::Duration;
use step::{flag_last, RunClock};

/// A stepped run, ended: what [`Stepper::finish`] returns.
pub struct Finished {
    pub steps: Vec<StepRecord>,
    pub notes: Vec<String>,
    /// The run went its full course (not interrupted, no failure).
    pub complete: bool,
    /// Why it stopped, as recorded in run.json.
    pub reason: String,
    /// The observer's warnings (agents unreachable…), also in `notes`.
    pub observer_notes: Vec<String>,
    /// The engine's own account of the last step, when a local engine ran it (a single run
    /// prints its summary from it).
    pub last_engine: Option<crate::engine::Outcome>,
    /// The changes live control made to the load, every step's, in order.
    pub steered: Vec<crate::store::ControlEvent>,
}

pub struct Stepper<'a> {
    pub base: &'a EngineConfig,
    pub mode: &'static str,
    pub slo: Option<&'a Slo>,
    /// The results folder; `None`: a single run that stores nothing.
    pub writer: Option<&'a mut Writer>,
    pub clock: RunClock,
    pub steps: Vec<StepRecord>,
    /// What shows the run while it goes (progress, terminal view, live page).
    pub sink: &'a mut dyn Sink,
    pub notes: Vec<String>,
    pub interrupted: bool,
    /// Server-side sampling beside the load (same clock), when started.
    pub observer: Option<crate::observe::ObserverHandle>,
    /// What runs the steps and the rests.
    pub exec: &'a mut dyn Executor,
    /// Capacity probes: flag a step `not-sustained` when the server did not keep up over it
    /// (analysis::sustained), judged on its per-second series before it is stored.
    pub check_sustained: bool,
    /// `--start-at`: step k starts at `clock.start + k × grid` (warm-up + step + rest), so
    /// the steps of generators sharing a plan line up; a step's drain eats into its rest.
    pub grid: Option<Duration>,
    /// The engine's own account of the last step run.
    last_engine: Option<crate::engine::Outcome>,
    /// The changes live control made so far (see [`Finished::steered`]).
    pub steered: Vec<crate::store::ControlEvent>,
}

impl<'a> Stepper<'a> {
    pub fn new(
        base: &'a EngineConfig,
        mode: &'static str,
        slo: Option<&'a Slo>,
        writer: Option<&'a mut Writer>,
        sink: &'a mut dyn Sink,
        exec: &'a mut dyn Executor,
    ) -> Self {
        if let Some(w) = &writer {
            exec.results_folder(w.dir());
        }
        Stepper {
            base,
            mode,
            slo,
            writer,
            clock: RunClock::now(),
            steps: Vec::new(),
            sink,
            notes: Vec::new(),
            interrupted: false,
            observer: None,
            exec,
            check_sustained: false,
            grid: None,
            last_engine: None,
            steered: Vec::new(),
        }
    }

    /// Runs one step at `load`, appends it to the results folder, prints its line.
    /// The engine's own account of the last step run (a local engine's), its per-second
    /// seconds included.
    pub fn last_engine(&self) -> Option<&crate::engine::Outcome> {
        self.last_engine.as_ref()
    }

    pub fn step(&mut self, load: Load) -> crate::Result<&StepRecord> {
        self.run_one(load)?;
        Ok(self.steps.last().expect("a step was just run"))
    }

    fn run_one(&mut self, load: Load) -> crate::Result<()> {
        let index = self.steps.len();
        let sink = &mut *self.sink;
        let (observer, base, clock) = (self.observer.as_ref(), self.base, &self.clock);
        let mut result = self.exec.run_step(
            self.base,
            load,
            index,
            clock,
            self.slo,
            &mut |ctl, elapsed| {
                sink.tick(&StepTick {
                    index,
                    load,
                    ctl,
                    elapsed,
                    observer,
                    base,
                    clock,
                })
            },
        )?;
        if self.sink.take_ended_early(index) && !self.exec.interrupted() {
            step::ended_early(&mut result);
            self.notes.push(format!(
                "step {}: ended early from the live view",
                index + 1
            ));
        }
        if let Some(obs) = &self.observer {
            attach_server(obs, &self.clock, &mut result);
        }
        self.interrupted |= result.interrupted;
        self.notes.extend(result.notes);
        self.last_engine = result.engine;
        self.steps.push(result.record);
        flag_last(self.mode, &mut self.steps, self.slo);
        if self.check_sustained {
            let rec = self.steps.last_mut().expect("just pushed");
            if let Some(why) = crate::analysis::sustained::not_sustained(rec, &result.series) {
                rec.flags.push("not-sustained".into());
                self.notes.push(format!("step {}: {why}", rec.step + 1));
            }
        }
        let rec = self.steps.last().expect("just pushed");
        if let Some(w) = self.writer.as_mut() {
            w.append_events(&result.events)?;
            w.append_step(rec, &result.series)?;
        }
        if !result.events.is_empty() {
            self.notes.push(format!(
                "step {}: steered by live control ({}): its load was not the plan's",
                rec.step + 1,
                result
                    .events
                    .iter()
                    .map(|e| format!("{} at {:.1} s", e.label(), e.t))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        self.steered.extend(result.events);
        self.sink.step_done(rec, &result.series, self.mode);
        Ok(())
    }

    /// Ends the run: stops the observer, marks the results folder complete (or not) with why
    /// it stopped, and hands back the steps. `result` is what the sweep or search returned.
    pub fn finish<T>(
        &mut self,
        result: &crate::Result<T>,
        reason: impl Fn(&T) -> String,
    ) -> crate::Result<Finished> {
        self.sink.close();
        let observer_notes = self.stop_observer();
        let mut notes = observer_notes.clone();
        notes.append(&mut self.notes);
        let reason = match result {
            Ok(r) => reason(r),
            Err(e) => format!("failed: {e}"),
        };
        let complete = result.is_ok() && !self.interrupted && !self.exec.interrupted();
        if let Some(w) = self.writer.as_mut() {
            w.finish(complete, &reason)?;
        }
        Ok(Finished {
            steps: std::mem::take(&mut self.steps),
            notes,
            complete,
            reason,
            observer_notes,
            last_engine: self.last_engine.take(),
            steered: std::mem::take(&mut self.steered),
        })
    }

    /// Stops the observer and returns its warnings (agents unreachable…).
    pub fn stop_observer(&mut self) -> Vec<String> {
        match self.observer.take() {
            Some(o) => o.stop(),
            None => Vec::new(),
        }
    }

    /// Rests between steps (the server drains); cut short by SIGINT.
    pub fn rest(&mut self, d: Duration) {
        match self.grid {
            Some(grid) => {
                let k = self.steps.len() as u32;
                let due = self.clock.start + grid * k;
                let now = std::time::Instant::now();
                let late = now.saturating_duration_since(due);
                // A few ms late is scheduling noise; more means this generator's steps no
                // longer line up with the others' (its drain outlasted the rest).
                if late > Duration::from_millis(100) {
                    self.notes.push(format!(
                        "step {} started {:.1} s after its --start-at slot: the previous step drained past the rest",
                        k + 1,
                        late.as_secs_f64()
                    ));
                }
                self.exec.rest(due.saturating_duration_since(now));
            }
            None => self.exec.rest(d),
        }
    }

    /// Why the run stops early: the executor's reason (a lost generator), else `default`.
    pub fn interruption(&self, default: String) -> String {
        self.exec.stop_reason().unwrap_or(default)
    }

    /// An interruption was asked for (before or during a step).
    pub fn stop_asked(&self) -> bool {
        self.interrupted || self.exec.interrupted()
    }
}

/// The server's side of a step's window, sampled on the same clock: per step, and per second
/// of its series.
pub fn attach_server(
    obs: &crate::observe::ObserverHandle,
    clock: &RunClock,
    result: &mut step::StepResult,
) {
    let r = &mut result.record;
    let samples = obs.samples_between(r.start_unix_ms, r.end_unix_ms);
    if !samples.is_empty() {
        r.server = Some(crate::observe::summarize(&samples));
    }
    for p in result.series.iter_mut() {
        let from = clock.start_unix_ms + (p.t * 1000.0) as u64;
        p.server = crate::observe::second(&obs.samples_between(from, from + 999));
    }
}

#[cfg(test)]
mod tests;
