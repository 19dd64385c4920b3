//! The controller of live scale-out: an [`Executor`] that cuts each step into one segment
//! per live generator agent, sends them with a common start a moment ahead, gathers the
//! parts and adds them (`merge::add_step`, the same adding as `overload merge`), so the stop
//! rules and the capacity search decide on the whole load as for one host.
//!
//! A generator that cannot be reached, breaks the connection or does not answer in time is
//! lost: the step keeps the other parts and is flagged `generator-lost`, a note says which
//! generator and what it was to send, and per `--on-generator-loss` the run stops (results
//! kept) or goes on with the others, whose segments are cut anew for the next steps. A
//! generator that *refuses* a step (its limits, its allow-list) is not lost: the plan is
//! wrong for it, and the run fails with its one-line reason.
use super::channel::{Channel, Failure};
use super::wire::{StepAnswer, StepPlan, WireConn, WireLoad, WirePick, WireRequest, PROTOCOL};
use crate::analysis::Slo;
use crate::engine::{Control, EngineConfig, Load};
use crate::runner::step::{RunClock, StepResult};
use crate::runner::Executor;
use crate::Error;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// What the run does when a generator is lost mid-step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnLoss {
    /// Keep the step, mark it, stop the run.
    #[default]
    Stop,
    /// Keep the step, mark it, go on with the other generators.
    Continue,
}

impl OnLoss {
    pub fn parse(s: &str) -> Result<OnLoss, String> {
        match s {
            "stop" => Ok(OnLoss::Stop),
            "continue" => Ok(OnLoss::Continue),
            _ => Err(format!("'{s}': use stop or continue")),
        }
    }
}

/// How far ahead of now a step's common start is set: time for the plan to reach every
/// agent (one round trip) with room for a slow one.
pub const LEAD: Duration = Duration::from_millis(500);
/// Beyond the step's own length, how long an agent's answer may take before it is lost.
const ANSWER_GRACE: Duration = Duration::from_secs(10);
/// How often the controller looks at its exchanges and the signal flag during a step.
const POLL: Duration = Duration::from_millis(20);

/// The request mix and connection options every step shares, as sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Mixture {
    pub requests: Vec<WireRequest>,
    pub pick: WirePick,
    pub conn: WireConn,
    /// `--ok-status`: the agents' summaries judge answers by it.
    pub ok_status: crate::metrics::OkStatus,
}

pub struct Controller<C: Channel> {
    channel: C,
    /// Generators still in the run (indices into the channel's list).
    alive: Vec<usize>,
    mix: Mixture,
    on_loss: OnLoss,
    /// Why the run must stop (a generator lost under `stop`).
    stop: Option<String>,
    /// `generators.jsonl` in the results folder: which generators ran each step.
    log: Option<std::fs::File>,
}

impl<C: Channel> Controller<C> {
    pub fn new(channel: C, mix: Mixture, on_loss: OnLoss) -> Controller<C> {
        let alive = (0..channel.len()).collect();
        Controller {
            channel,
            alive,
            mix,
            on_loss,
            stop: None,
            log: None,
        }
    }

    /// The generators still in the run.
    pub fn alive(&self) -> &[usize] {
        &self.alive
    }

    fn plan(
        &self,
        base: &EngineConfig,
        load: Load,
        index: usize,
        seg: (u32, u32),
        at: (u64, u64),
    ) -> StepPlan {
        StepPlan {
            protocol: PROTOCOL,
            requests: self.mix.requests.clone(),
            pick: self.mix.pick,
            load: WireLoad::of(load),
            conn: self.mix.conn.clone(),
            warmup_ms: base.warmup.as_millis() as u64,
            duration_ms: base.duration.map_or(0, |d| d.as_millis() as u64),
            index,
            segment_index: seg.0,
            segment_count: seg.1,
            start_at_unix_ms: at.0,
            run_start_unix_ms: at.1,
            ok_status: self.mix.ok_status,
        }
    }

    fn log_step(&mut self, index: usize, entries: Vec<serde_json::Value>) {
        if let Some(f) = &mut self.log {
            let line = serde_json::json!({"step": index, "generators": entries});
            // Best effort beside the step itself, which the store keeps: a full disk shows
            // there first.
            let _ = writeln!(f, "{line}").and_then(|_| f.sync_data());
        }
    }
}

/// What generator `name` was to send of `load` as segment `seg`.
fn share_text(load: &Load, seg: (u32, u32)) -> String {
    let s = crate::plan::Segment {
        index: seg.0,
        count: seg.1,
    };
    match *load {
        Load::Open { rate, .. } => format!("{:.1} req/s", rate / f64::from(seg.1)),
        Load::Closed { users, .. } => format!("{} users", s.share(users as u64)),
    }
}

/// This generator's part of `load` as segment `seg`: ("open", req/s) or ("closed", users).
fn part_of(load: &Load, seg: (u32, u32)) -> (&'static str, f64) {
    match *load {
        Load::Open { rate, .. } => ("open", rate / f64::from(seg.1)),
        Load::Closed { users, .. } => {
            let s = crate::plan::Segment {
                index: seg.0,
                count: seg.1,
            };
            ("closed", s.share(users as u64) as f64)
        }
    }
}

/// Why an answer is not the part it was sent (another mode, another offered rate or users),
/// or None when it states the part the controller planned.
fn misstated(a: &StepAnswer, load: &Load, seg: (u32, u32)) -> Option<String> {
    let (mode, part) = part_of(load, seg);
    let s = &a.record.summary;
    let same = |x: f64| (x - part).abs() <= 1e-6 * part.abs().max(1.0);
    let stated = match mode {
        "open" => s.offered_rate,
        _ => s.users.map(|u| u as f64),
    };
    let unit = if mode == "open" { "req/s" } else { "users" };
    let claims_ok = s.mode == mode
        && same(a.record.offered)
        && stated.is_some_and(same)
        && a.series.iter().all(|p| same(p.offered));
    (!claims_ok).then(|| {
        let claimed = if s.mode == mode {
            format!("{} {unit}", a.record.offered)
        } else {
            format!("the {} loop", crate::units::escape_controls(&s.mode))
        };
        format!("its answer states {claimed} where its part was {part} {unit} ({mode} loop)")
    })
}

/// Puts the controller's own numbers on a merged step: the mode it sent and the level the
/// kept parts (segments `kept`) were to offer.
fn own_numbers(
    record: &mut crate::store::StepRecord,
    series: &mut [crate::store::SeriesPoint],
    load: &Load,
    kept: &[(u32, u32)],
) {
    let (mode, _) = part_of(load, (0, 1));
    let level = match *load {
        // Each kept part offered rate/N: the sum, without the rounding of adding N floats.
        Load::Open { rate, .. } => match kept.first() {
            Some(&(_, n)) if kept.len() as u32 == n => rate,
            _ => kept.iter().map(|&seg| part_of(load, seg).1).sum(),
        },
        Load::Closed { .. } => kept.iter().map(|&seg| part_of(load, seg).1).sum(),
    };
    record.offered = level;
    record.summary.mode = mode.to_string();
    match mode {
        "open" => {
            record.summary.offered_rate = Some(level);
            record.summary.users = None;
        }
        _ => {
            record.summary.offered_rate = None;
            record.summary.users = Some(level as u64);
        }
    }
    for p in series {
        p.offered = level;
    }
}

impl<C: Channel> Executor for Controller<C> {
    fn run_step(
        &mut self,
        base: &EngineConfig,
        load: Load,
        index: usize,
        clock: &RunClock,
        slo: Option<&Slo>,
        _on_tick: &mut dyn FnMut(&Control, Duration),
    ) -> crate::Result<StepResult> {
        let n = self.alive.len() as u32;
        if n == 0 {
            return Err(Error::runtime("no generator left"));
        }
        let at = crate::clock::unix_ms() + LEAD.as_millis() as u64;
        let plans: Vec<(usize, StepPlan)> = self
            .alive
            .iter()
            .enumerate()
            .map(|(i, &g)| {
                (
                    g,
                    self.plan(base, load, index, (i as u32, n), (at, clock.start_unix_ms)),
                )
            })
            .collect();
        let wait =
            LEAD + base.warmup + base.duration.unwrap_or_default() + base.timeout + ANSWER_GRACE;
        let channel = &self.channel;
        let answers: Vec<(usize, Result<StepAnswer, Failure>)> = std::thread::scope(|s| {
            let handles: Vec<_> = plans
                .iter()
                .map(|(g, p)| (*g, s.spawn(move || channel.step(*g, p, wait))))
                .collect();
            // On an interruption the agents are told to end the step now and answer with
            // what they measured; each exchange then waits STOP_GRACE more at most.
            let mut told = false;
            while !handles.iter().all(|(_, h)| h.is_finished()) {
                if !told && crate::signals::interrupted() {
                    told = true;
                    for (g, p) in &plans {
                        s.spawn(move || channel.stop(*g, p));
                    }
                }
                std::thread::sleep(POLL);
            }
            handles
                .into_iter()
                .map(|(g, h)| {
                    let r = h.join().unwrap_or_else(|_| {
                        Err(Failure::Lost("the controller's thread failed".into()))
                    });
                    (g, r)
                })
                .collect()
        });
        let step_no = index + 1;
        let mut parts: Vec<(String, StepAnswer)> = Vec::new();
        let mut seg_of_parts: Vec<(u32, u32)> = Vec::new();
        let mut lost: Vec<(usize, (u32, u32), String)> = Vec::new();
        let mut entries = Vec::new();
        for (pos, (g, r)) in answers.into_iter().enumerate() {
            let seg = (pos as u32, n);
            let name = self.channel.name(g).to_string();
            // The controller knows what it sent: a part that states another load is not
            // this step's part, whatever else it holds.
            let r = r.and_then(|a| match misstated(&a, &load, seg) {
                Some(why) => Err(Failure::Lost(why)),
                None => Ok(a),
            });
            match r {
                Ok(a) => {
                    entries.push(serde_json::json!({"generator": name, "host": a.host, "segment": format!("{}/{}", seg.0, seg.1), "ok": true}));
                    parts.push((name, a));
                    seg_of_parts.push(seg);
                }
                Err(Failure::Refused(why)) => {
                    return Err(Error::usage(format!(
                        "step {step_no}: generator {name} refused it: {why}"
                    )));
                }
                Err(Failure::Lost(why)) => {
                    entries.push(serde_json::json!({"generator": name, "segment": format!("{}/{}", seg.0, seg.1), "ok": false, "lost": why}));
                    lost.push((g, seg, why));
                }
            }
        }
        self.log_step(index, entries);
        if parts.is_empty() {
            let whys: Vec<String> = lost
                .iter()
                .map(|(g, _, why)| format!("{}: {why}", self.channel.name(*g)))
                .collect();
            return Err(Error::runtime(format!(
                "step {step_no}: every generator was lost ({})",
                whys.join("; ")
            )));
        }
        let refs: Vec<(
            String,
            &crate::store::StepRecord,
            &[crate::store::SeriesPoint],
        )> = parts
            .iter()
            .map(|(name, a)| (name.clone(), &a.record, a.series.as_slice()))
            .collect();
        let (mut record, mut series) = crate::merge::add_step(index, &refs)
            .map_err(|e| Error::runtime(format!("step {step_no}: {e}")))?;
        record.step = index;
        // The level is the controller's own: the shares of the parts kept.
        own_numbers(&mut record, &mut series, &load, &seg_of_parts);
        record.slo_ok = slo.map(|s| s.holds(&record.summary));
        let mut notes: Vec<String> = parts
            .iter()
            .flat_map(|(name, a)| a.notes.iter().map(move |t| format!("{name}: {t}")))
            .collect();
        // Interrupted here (the agents were told to stop), or by an agent's own signal.
        let signalled = crate::signals::interrupted();
        let mut interrupted = signalled || parts.iter().any(|(_, a)| a.interrupted);
        if interrupted && !record.flags.iter().any(|f| f == "interrupted") {
            record.flags.push("interrupted".into());
        }
        if !lost.is_empty() {
            record.flags.push("generator-lost".into());
            for (g, seg, why) in &lost {
                notes.push(format!(
                    "step {step_no}: generator {} lost ({why}); its segment {}/{} ({}) is missing from the step, which holds the other {} part(s)",
                    self.channel.name(*g),
                    seg.0,
                    seg.1,
                    share_text(&load, *seg),
                    parts.len()
                ));
            }
            self.alive.retain(|g| !lost.iter().any(|(l, _, _)| l == g));
            match self.on_loss {
                // The run stops for the signal; the loss is in the notes, not its reason.
                _ if signalled => {}
                OnLoss::Stop => {
                    interrupted = true;
                    self.stop = Some(format!(
                        "generator lost in step {step_no} (--on-generator-loss stop)"
                    ));
                }
                OnLoss::Continue => notes.push(format!(
                    "going on with {} generator(s) (--on-generator-loss continue): the next steps are cut into {} segments",
                    self.alive.len(),
                    self.alive.len()
                )),
            }
        }
        Ok(StepResult {
            record,
            series,
            interrupted,
            notes,
            engine: None,
            // Generator agents are not steered (live control is the local engine's).
            events: Vec::new(),
        })
    }

    fn rest(&mut self, d: Duration) {
        crate::runner::LocalEngine.rest(d);
    }

    fn interrupted(&self) -> bool {
        self.stop.is_some() || crate::signals::interrupted()
    }

    fn stop_reason(&self) -> Option<String> {
        self.stop.clone()
    }

    fn results_folder(&mut self, dir: &Path) {
        self.log = crate::fsutil::open_append(&dir.join("generators.jsonl")).ok();
    }
}

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;
