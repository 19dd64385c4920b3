//! What the live view shows, as plain data: updated from the runner's ticks, finished steps
//! and the observer's newest samples, drawn by `view.rs`. No terminal here, so the unit tests
//! script a sequence of ticks and read what each panel holds.
use crate::liverun::progress::{SecondLatency, Tick};
use crate::observe::Sample;
use crate::store::StepRecord;
use std::collections::VecDeque;
use std::time::Duration;

/// Seconds of history the charts keep.
pub const HISTORY: usize = 120;

/// What stays the same for the whole run.
#[derive(Debug, Clone, PartialEq)]
pub struct Setup {
    /// `run`, `sweep` or `capacity`.
    pub command: &'static str,
    /// The first URL of the mix, as the plan line shows it.
    pub target: String,
    /// `req/s` (open loop) or `users` (closed loop).
    pub unit: &'static str,
    /// Steps planned (None: a single run, or a search whose length is not known).
    pub planned: Option<usize>,
    /// Warm-up + measured length of a step (or of the run; None: until a request count).
    pub step_len: Option<Duration>,
    /// Warm-up + step + rest: for the sweep's ETA.
    pub per_step: Duration,
    /// `n` ends the step in progress (stepped runs).
    pub end_step_key: bool,
    /// `+`/`-`/`p` steer the load (live control).
    pub steer_keys: bool,
}

/// One second of the step in progress.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Second {
    /// The step it belongs to (None: a single run).
    pub step: Option<usize>,
    /// The level offered: requests/s, or users in closed loop.
    pub offered: f64,
    /// Responses per second (errors included).
    pub achieved: f64,
    pub errors: f64,
    pub in_flight: u64,
    /// Response times of the newest closed second at this tick (None: no response in it).
    pub latency: Option<SecondLatency>,
    /// The generator process's CPU, % of one core.
    pub cpu_pct: f64,
}

/// A finished step, as the table and the throughput chart show it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRow {
    pub step: usize,
    pub offered: f64,
    pub throughput: f64,
    pub ok_pct: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub lag_p99_ms: f64,
    pub gen_cpu_pct: f64,
    pub flags: Vec<String>,
}

/// The view's state.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    pub setup: Setup,
    /// The newest seconds, oldest first (at most [`HISTORY`]).
    pub seconds: VecDeque<Second>,
    /// The step in progress: (index, level, newest tick).
    pub current: Option<(Option<usize>, f64, Tick)>,
    pub steps: Vec<StepRow>,
    /// The server's side: one line per observed thing, newest samples.
    pub server: Vec<String>,
    /// `q` was pressed: the run is ending (the step is recorded, the report written).
    pub stopping: bool,
    /// `n` was pressed: the step in progress ends at the next tick.
    pub ending_step: bool,
    /// p99 of each closed second (ms; 0 for a second without responses), oldest first, at
    /// most [`HISTORY`]: one point per second even when a tick repeats or skips one.
    pub p99: VecDeque<f64>,
    /// The (step, second) of the newest point of `p99`.
    p99_at: Option<(Option<usize>, usize)>,
    /// What the last key of live control did (`rate 50→55 in 0.25 s`) or why it was refused.
    pub control_note: Option<String>,
    /// The load is paused (live control).
    pub paused: bool,
}

impl Model {
    pub fn new(setup: Setup) -> Model {
        Model {
            setup,
            seconds: VecDeque::with_capacity(HISTORY),
            current: None,
            steps: Vec::new(),
            server: Vec::new(),
            stopping: false,
            ending_step: false,
            p99: VecDeque::with_capacity(HISTORY),
            p99_at: None,
            control_note: None,
            paused: false,
        }
    }

    pub fn tick(&mut self, step: Option<usize>, offered: f64, t: &Tick) {
        if self.current.is_some_and(|(s, _, _)| s != step) {
            self.ending_step = false;
        }
        self.current = Some((step, offered, *t));
        if self.seconds.len() == HISTORY {
            self.seconds.pop_front();
        }
        self.seconds.push_back(Second {
            step,
            offered,
            achieved: t.rate,
            errors: t.error_rate,
            in_flight: t.in_flight,
            latency: t.latency,
            cpu_pct: t.cpu_pct,
        });
        if let Some(l) = t.latency {
            self.p99_point(step, l);
        }
    }

    /// Adds the second's p99 to the sparkline, once per second: a tick that reads the same
    /// second again adds nothing, one that skipped a second (no response in it) adds a zero.
    fn p99_point(&mut self, step: Option<usize>, l: SecondLatency) {
        let from = match self.p99_at {
            Some((s, sec)) if s == step => {
                if l.second <= sec {
                    return;
                }
                sec + 1
            }
            _ => l.second,
        };
        for sec in from..=l.second {
            if self.p99.len() == HISTORY {
                self.p99.pop_front();
            }
            self.p99
                .push_back(if sec == l.second { l.p99_ms } else { 0.0 });
        }
        self.p99_at = Some((step, l.second));
    }

    pub fn step_done(&mut self, rec: &StepRecord) {
        let s = &rec.summary;
        self.steps.push(StepRow {
            step: rec.step,
            offered: rec.offered,
            throughput: s.throughput,
            ok_pct: if s.requests > 0 {
                s.ok_count() as f64 / s.requests as f64 * 100.0
            } else {
                0.0
            },
            p50_ms: s.response_time_ms.p50,
            p95_ms: s.response_time_ms.p95,
            p99_ms: s.response_time_ms.p99,
            lag_p99_ms: s.send_lag_ms.p99,
            gen_cpu_pct: rec.generator.cpu_pct,
            flags: rec.flags.clone(),
        });
        self.current = None;
        self.ending_step = false;
    }

    /// The first step flagged `saturated`: where throughput stopped following the offered
    /// load (the analysis's judgement, as the report shows it).
    pub fn saturation(&self) -> Option<&StepRow> {
        self.steps
            .iter()
            .find(|r| r.flags.iter().any(|f| f == "saturated"))
    }

    /// The server's side from the newest sample of each source.
    pub fn server_samples(&mut self, samples: &[Sample]) {
        self.server = samples.iter().flat_map(server_lines).collect();
    }

    /// The header's step part: `step 3/8 · 300 req/s · 7s of 12s`.
    pub fn step_text(&self) -> String {
        let Some((step, offered, t)) = &self.current else {
            return match self.steps.last() {
                Some(r) => format!("step {} done, resting", r.step + 1),
                None => "starting".into(),
            };
        };
        let level = format!("{} {}", crate::units::fmt_num(*offered), self.setup.unit);
        let of = match self.setup.step_len {
            Some(l) => format!(" of {}s", l.as_secs()),
            None => String::new(),
        };
        let time = format!("{}s{of}", t.elapsed.as_secs());
        match step {
            Some(i) => {
                let planned = self
                    .setup
                    .planned
                    .map_or(String::new(), |n| format!("/{n}"));
                format!("step {}{planned} · {level} · {time}", i + 1)
            }
            None => format!("{level} · {time}"),
        }
    }

    /// Time left in the sweep, at most (its stop rules may end it sooner).
    pub fn eta(&self) -> Option<Duration> {
        let (Some(planned), Some(len), Some((Some(i), _, t))) =
            (self.setup.planned, self.setup.step_len, &self.current)
        else {
            return None;
        };
        let later = planned.saturating_sub(i + 1) as u32;
        Some(self.setup.per_step * later + len.saturating_sub(t.elapsed))
    }
}

/// What one source's sample says about the server: host CPU, the watched process groups'
/// CPU, the worker pools (PHP-FPM's, the target's `/pool-status`), the listen queue.
fn server_lines(s: &Sample) -> Vec<String> {
    let mut out = Vec::new();
    let who = &s.source;
    if let Some(h) = &s.host {
        out.push(format!(
            "{who}: host CPU {:.0}% busy of {} cores (softirq {:.0}%), load {:.1}",
            h.cpu_busy_pct, h.cores, h.cpu_softirq_pct, h.load1
        ));
    }
    for g in &s.groups {
        out.push(format!(
            "{who}: {} CPU {:.0}% of a core, {} processes",
            g.name, g.cpu_pct, g.processes
        ));
    }
    for f in &s.fpm {
        match &f.error {
            Some(e) => out.push(format!("{who}: pool {}: {e}", f.url)),
            None => out.push(format!(
                "{who}: pool {}: {} of {} workers busy, {} waiting",
                f.pool, f.active, f.total, f.listen_queue
            )),
        }
    }
    if let Some(t) = &s.tcp {
        if let (Some(q), Some(l)) = (t.listen_queue, t.listen_limit) {
            out.push(format!(
                "{who}: port {} accept queue {q}/{l}, {} established",
                t.port, t.established
            ));
        }
    }
    out
}
