//! The bottleneck at the knee: which limit the server (or the generator) reached first, ranked
//! by evidence and by how far it led the latency rise. Pure functions of the steps' records
//! and their observations, so a results folder read back says the same as the run did.
//!
//! Each candidate is one resource: the server's CPU (its `--watch`ed processes' share of the
//! cores), its worker pool (PHP-FPM, Apache's mod_status, the embedded target's
//! `/pool-status`), the accept queue of its own port, the database (`--mysql`), memory, the
//! network (`--link-speed`) and the generator. A candidate is *at its limit* from the first
//! step where its own numbers say so, *near* it when they came close, and has *no evidence*
//! otherwise. Host-wide counters (the CPU of other processes, ListenOverflows of other ports)
//! never make a candidate: the rule of `observe::findings`.
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

mod candidates;

pub use candidates::fmt_bits;
use candidates::{accept_queue, cpu, database, generator, memory, network, pool};

use crate::observe::{SourceObservation, StepObservation};
use crate::store::StepRecord;
use crate::units::fmt_num;

/// A ramp's knee: seconds in a row below the offered line before it counts (one slow second
/// is noise); the verdict names it as the knee's "time to notice" (`analysis::ramp::WINDOW`).
pub const RAMP_WINDOW: usize = 3;

/// A resource that can limit a web stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Limit {
    WorkerPool,
    Cpu,
    AcceptQueue,
    Database,
    Memory,
    Network,
    Generator,
}

impl Limit {
    /// How the verdict names it.
    pub fn name(self) -> &'static str {
        match self {
            Limit::WorkerPool => "the worker pool",
            Limit::Cpu => "the server's CPU",
            Limit::AcceptQueue => "the accept queue",
            Limit::Database => "the database",
            Limit::Memory => "memory",
            Limit::Network => "the network",
            Limit::Generator => "the generator (overload itself)",
        }
    }
}

/// How strongly a candidate's numbers point at it, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Evidence {
    AtLimit,
    Near,
    None,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub limit: Limit,
    pub evidence: Evidence,
    /// Index (steps in load order) of the first step at (or near) the limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_step: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_load: Option<f64>,
    /// Steps by which that came before the latency rise (0: the same step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead_steps: Option<i64>,
    /// The numbers behind it, at the knee unless the name says otherwise.
    pub numbers: BTreeMap<String, f64>,
    /// What was seen, with its numbers.
    pub seen: String,
    /// The short form beside another verdict: "CPU 31%", "no listen drops".
    pub brief: String,
    /// The one change to make.
    pub change: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Diagnosis {
    /// One candidate reached its limit first.
    Limit,
    /// Two or more reached their limits in the same step.
    Tie,
    /// None of the observed candidates reached its limit.
    NoEvidence,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bottleneck {
    /// The knee: index (steps in load order) of the saturation point, and its load.
    pub knee_step: usize,
    pub knee_load: f64,
    /// The first step whose response time p90 doubled over the lighter steps' best.
    pub latency_rise_step: usize,
    pub outcome: Diagnosis,
    /// The one line: the knee, the winner with its numbers, the others briefly, the change.
    pub verdict: String,
    /// Every observed candidate, best first.
    pub candidates: Vec<Candidate>,
    /// What was not observed, with the flag that observes it.
    pub not_observed: Vec<String>,
}

impl Bottleneck {
    /// The winner (or the first of a tie); None without evidence.
    pub fn leader(&self) -> Option<&Candidate> {
        (self.outcome != Diagnosis::NoEvidence).then(|| &self.candidates[0])
    }
}

/// What the verdict needs besides the steps.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Context {
    /// The link's speed, bits/s (`--link-speed`).
    pub link_bps: Option<f64>,
}

impl Context {
    /// What a results folder's run.json `config` recorded (`link_speed_bps`).
    pub fn from_config(config: &serde_json::Value) -> Context {
        Context {
            link_bps: config
                .get("link_speed_bps")
                .and_then(serde_json::Value::as_f64)
                .filter(|l| l.is_finite() && *l > 0.0),
        }
    }
}

/// The verdict for the knee at `knee` (index into `steps`, which are in load order).
pub fn diagnose(mode: &str, steps: &[StepRecord], knee: usize, cx: Context) -> Bottleneck {
    diagnose_on(mode, steps, knee, cx, None)
}

/// The verdict on a ramp (`analysis::ramp`): `windows` are spans of its seconds in time
/// order, each `step` the second it starts at; the knee is given as (level, ± uncertainty,
/// seconds into the run), since a window's mean level is coarser than the knee found.
pub fn diagnose_ramp(
    mode: &str,
    windows: &[StepRecord],
    knee: usize,
    cx: Context,
    at: (f64, f64, f64),
) -> Bottleneck {
    let mut b = diagnose_on(mode, windows, knee, cx, Some(at));
    b.knee_load = at.0;
    b
}

fn diagnose_on(
    mode: &str,
    steps: &[StepRecord],
    knee: usize,
    cx: Context,
    ramp: Option<(f64, f64, f64)>,
) -> Bottleneck {
    let knee = knee.min(steps.len().saturating_sub(1));
    let c = Ctx {
        mode,
        steps: &steps[..(knee + 1).min(steps.len())],
        rise: latency_rise(steps, knee),
        ramp,
        link_bps: cx.link_bps,
    };
    let mut not_observed = Vec::new();
    let mut candidates = Vec::new();
    for (find, what, told_by) in CANDIDATES {
        match find(&c) {
            Some(x) => candidates.push(x),
            None => not_observed.push(not_observed_line(what, told_by)),
        }
    }
    // Stable: equal evidence and onset keep the order above (the server's own limits first).
    candidates.sort_by_key(|x| (x.evidence, x.from_step.unwrap_or(usize::MAX)));
    let outcome = match candidates.as_slice() {
        [a, b, ..]
            if a.evidence == Evidence::AtLimit
                && b.evidence == Evidence::AtLimit
                && a.from_step == b.from_step =>
        {
            Diagnosis::Tie
        }
        [a, ..] if a.evidence == Evidence::AtLimit => Diagnosis::Limit,
        _ => Diagnosis::NoEvidence,
    };
    let knee_load = steps.get(knee).map_or(0.0, |s| s.offered);
    let verdict = verdict(&c, knee, knee_load, outcome, &candidates, &not_observed);
    Bottleneck {
        knee_step: knee,
        knee_load,
        latency_rise_step: c.rise,
        outcome,
        verdict,
        candidates,
        not_observed,
    }
}

/// A candidate's finder: `None` when nothing observed its resource.
type Find = fn(&Ctx) -> Option<Candidate>;

/// Every candidate, in the order ties keep (the server's own limits first), with what it is
/// and the observation sources (`observe::source::KINDS`, by name) whose flags observe it;
/// a name that is no source kind (`--link-speed`, a figure handed to the verdict) is shown
/// as it is.
const CANDIDATES: [(Find, &str, &[&str]); 7] = [
    (pool, "the worker pool", &["fpm", "apache"]),
    (cpu, "the server's CPU", &["groups"]),
    (accept_queue, "the accept queue", &["tcp"]),
    (database, "the database", &["mariadb"]),
    (memory, "memory", &["host"]),
    (network, "the network", &["--link-speed"]),
    // The engine's own figures: always there, nothing to turn on.
    (generator, "the generator", &[]),
];

/// "the worker pool (--fpm-status, --apache-status)".
fn not_observed_line(what: &str, told_by: &[&str]) -> String {
    let flags: Vec<&str> = told_by
        .iter()
        .map(|k| crate::observe::source::kind(k).map_or(*k, |k| k.flag))
        .collect();
    if flags.is_empty() {
        what.to_string()
    } else {
        format!("{what} ({})", flags.join(", "))
    }
}

struct Ctx<'a> {
    mode: &'a str,
    /// The steps up to and including the knee: what came after did not cause it.
    steps: &'a [StepRecord],
    rise: usize,
    /// On a ramp: the knee's (level, ± uncertainty, seconds into the run); steps are
    /// windows of seconds, named by the second they start at.
    ramp: Option<(f64, f64, f64)>,
    /// The link's speed, bits/s (`--link-speed`).
    link_bps: Option<f64>,
}

impl Ctx<'_> {
    fn load(&self, x: f64) -> String {
        let unit = if self.mode == "closed" {
            "users"
        } else {
            "req/s"
        };
        format!("{} {unit}", fmt_num(x))
    }

    /// "step 7 at 377 req/s"; on a ramp "12 s at 377 req/s".
    fn at(&self, i: usize) -> String {
        let s = &self.steps[i];
        match self.ramp {
            Some(_) => format!("{:.0} s at {}", s.start_s, self.load(s.offered)),
            None => format!("step {} at {}", s.step + 1, self.load(s.offered)),
        }
    }

    /// "step 7", or on a ramp "12 s" (the window's start).
    fn step_name(&self, i: usize) -> String {
        let s = &self.steps[i];
        match self.ramp {
            Some(_) => format!("{:.0} s", s.start_s),
            None => format!("step {}", s.step + 1),
        }
    }

    fn knee(&self) -> &StepRecord {
        &self.steps[self.steps.len() - 1]
    }

    /// The first step where `f` holds.
    fn first(&self, f: impl Fn(&StepRecord) -> bool) -> Option<usize> {
        self.steps.iter().position(f)
    }

    /// A candidate with its onset filled in from the first step at, else near, the limit.
    fn candidate(&self, limit: Limit, at: Option<usize>, near: Option<usize>) -> Candidate {
        let (evidence, from) = match (at, near) {
            (Some(i), _) => (Evidence::AtLimit, Some(i)),
            (None, Some(i)) => (Evidence::Near, Some(i)),
            _ => (Evidence::None, None),
        };
        Candidate {
            limit,
            evidence,
            from_step: from,
            from_load: from.map(|i| self.steps[i].offered),
            lead_steps: from.map(|i| self.rise as i64 - i as i64),
            numbers: BTreeMap::new(),
            seen: String::new(),
            brief: String::new(),
            change: String::new(),
        }
    }
}

/// The server's source of a step: the first agent, else this host.
fn server(s: &StepRecord) -> Option<&SourceObservation> {
    s.server.as_ref().and_then(StepObservation::server)
}

/// Every source of a step (status pages and databases are read from wherever was told).
fn sources(s: &StepRecord) -> impl Iterator<Item = &SourceObservation> {
    s.server.iter().flat_map(|o| o.sources.iter())
}

/// The first step (up to the knee) whose response time p90 is at least twice the best of
/// the steps before it (and 1 ms more): where latency began to rise. The knee when none.
pub fn latency_rise(steps: &[StepRecord], knee: usize) -> usize {
    let mut best = f64::INFINITY;
    for (i, s) in steps.iter().enumerate().take(knee + 1) {
        let p90 = s.summary.response_time_ms.p90;
        if best.is_finite() && p90 >= 2.0 * best && p90 >= best + 1.0 {
            return i;
        }
        best = best.min(p90);
    }
    knee
}

fn int(x: f64) -> String {
    crate::observe::findings::int(x.max(0.0).round() as u64)
}

fn verdict(
    c: &Ctx,
    knee: usize,
    load: f64,
    outcome: Diagnosis,
    cands: &[Candidate],
    not_observed: &[String],
) -> String {
    let head = match c.ramp {
        Some((level, pm, t)) => format!(
            "knee at {} ± {} ({} s into the run; ± the ramp's slope × {} s to notice)",
            c.load(level),
            fmt_num(pm),
            fmt_num(t),
            RAMP_WINDOW
        ),
        None => format!(
            "knee at {} (step {})",
            c.load(load),
            c.steps.get(knee).map_or(knee, |s| s.step) + 1
        ),
    };
    let others = |skip: usize| {
        cands[skip..]
            .iter()
            .map(|x| x.brief.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let tail = |skip: usize| {
        let o = others(skip);
        if o.is_empty() {
            String::new()
        } else {
            format!(", {o}")
        }
    };
    match outcome {
        Diagnosis::Limit => {
            let w = &cands[0];
            format!(
                "{head}: {}{} → {}; {}",
                w.seen,
                tail(1),
                w.limit.name(),
                w.change
            )
        }
        Diagnosis::Tie => {
            let n = cands
                .iter()
                .take_while(|x| {
                    x.evidence == Evidence::AtLimit && x.from_step == cands[0].from_step
                })
                .count();
            let tied: Vec<String> = cands[..n]
                .iter()
                .map(|x| format!("{} ({})", x.limit.name(), x.seen))
                .collect();
            format!(
                "{head}: a tie, all at their limit from the same step: {}{} → change one at a \
                 time, first: {}",
                tied.join("; "),
                tail(n),
                cands[0].change
            )
        }
        Diagnosis::NoEvidence => {
            let near: Vec<String> = cands
                .iter()
                .filter(|x| x.evidence == Evidence::Near)
                .map(|x| format!("{} ({})", x.limit.name(), x.seen))
                .collect();
            let mut s = format!("{head}: no observed limit was reached");
            if !cands.is_empty() {
                s += &format!(" ({})", others(0));
            }
            if !near.is_empty() {
                s += &format!("; nearest: {}", near.join("; "));
            }
            if !not_observed.is_empty() {
                s += &format!("; not observed: {}", not_observed.join(", "));
            }
            s
        }
    }
}

#[cfg(test)]
mod tests;
