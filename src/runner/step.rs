//! One step of a sweep: a load level held for a duration after a warm-up, turned into a
//! [`StepRecord`] and its per-second [`SeriesPoint`]s.
use crate::analysis::{self, Slo};
use crate::clock::unix_ms;
use crate::engine::{self, Control, EngineConfig, Load};
use crate::metrics::{histo, SecondBucket, Summary};
use crate::store::{SeriesPoint, StepHists, StepRecord};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What stays the same across the steps of one run.
pub struct RunClock {
    pub start: Instant,
    pub start_unix_ms: u64,
}

impl RunClock {
    pub fn now() -> RunClock {
        RunClock {
            start: Instant::now(),
            start_unix_ms: unix_ms(),
        }
    }
    /// The clock of a run that starts at Unix time `at_ms` (`--start-at`), whether that is
    /// a moment ago or still ahead: every generator of a split plan counts from it.
    pub fn at(at_ms: u64) -> RunClock {
        let (now, now_ms) = (Instant::now(), unix_ms());
        let start = if at_ms >= now_ms {
            now + Duration::from_millis(at_ms - now_ms)
        } else {
            now.checked_sub(Duration::from_millis(now_ms - at_ms))
                .unwrap_or(now)
        };
        RunClock {
            start,
            start_unix_ms: at_ms,
        }
    }
    /// Seconds from the run's start to `t`.
    pub fn secs(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.start).as_secs_f64()
    }
}

pub struct StepResult {
    pub record: StepRecord,
    pub series: Vec<SeriesPoint>,
    pub interrupted: bool,
    pub notes: Vec<String>,
    /// The engine's own account of the step (its recorder, fd limit, notes), when a local
    /// engine ran it.
    pub engine: Option<engine::Outcome>,
    /// The changes live control made to the step's load (written to series.jsonl with it).
    pub events: Vec<crate::store::ControlEvent>,
}

/// The load level of a step as one number: requests/s or users.
pub fn offered_of(load: &Load) -> f64 {
    match *load {
        Load::Open { rate, .. } => rate,
        Load::Closed { users, .. } => users as f64,
    }
}

/// Runs one step. Its flags are left to the caller, who knows the steps before it
/// (see [`flag_last`]).
pub fn run_step(
    base: &EngineConfig,
    load: Load,
    index: usize,
    clock: &RunClock,
    slo: Option<&Slo>,
    on_tick: &mut dyn FnMut(&Control, Duration),
) -> crate::Result<StepResult> {
    let cfg = EngineConfig {
        load,
        ..base.clone()
    };
    let ctl = Control::new(cfg.threads);
    if let Some(st) = &cfg.steer {
        st.step_starts(index);
    }
    let start_unix_ms = unix_ms();
    let ctl2: Arc<Control> = Arc::clone(&ctl);
    let outcome = engine::run(&cfg, &ctl, |elapsed| on_tick(&ctl2, elapsed))?;
    let end_unix_ms = unix_ms();
    let mut result = record_of(
        &cfg,
        &outcome,
        index,
        clock,
        slo,
        (start_unix_ms, end_unix_ms),
    );
    result.engine = Some(outcome);
    Ok(result)
}

/// The stored form of a finished engine run: its [`StepRecord`] (summary, generator effort,
/// histogram) and per-second series. `run_step` uses it for each step of a sweep, and a single
/// `overload run --out` for its one step: one results format.
pub fn record_of(
    cfg: &EngineConfig,
    outcome: &engine::Outcome,
    index: usize,
    clock: &RunClock,
    slo: Option<&Slo>,
    (start_unix_ms, end_unix_ms): (u64, u64),
) -> StepResult {
    let load = cfg.load;
    let (rate, users) = cfg.offered();
    let mut summary =
        Summary::from_recorder(&outcome.recorder, rate, users, outcome.planned_window(cfg));
    summary.protocol = Some(cfg.protocol_choice.clone());
    // This generator's share of the level (the whole level unless the plan is split).
    let offered = rate.unwrap_or(users.unwrap_or(0) as f64);
    let rec = &outcome.recorder;
    let generator = generator_of(outcome);
    // The mean think per request, a scenario's steps' own included (Little's law needs it).
    let think_ms = match load {
        Load::Closed { .. } => cfg.think().mean.as_secs_f64() * 1e3,
        Load::Open { .. } => 0.0,
    };
    let start_s = clock.secs(outcome.started);
    let level = outcome.steered.as_deref().or(cfg.ramp.as_deref());
    let series = series_of(cfg, level, &rec.seconds, index, start_s);
    let events: Vec<crate::store::ControlEvent> = match &cfg.steer {
        Some(st) => st
            .changes_of(index)
            .iter()
            .map(|a| control_event(a, start_s))
            .collect(),
        None => Vec::new(),
    };
    let mut record = StepRecord {
        step: index,
        offered,
        start_unix_ms,
        end_unix_ms,
        start_s,
        end_s: clock.secs(outcome.finished),
        think_ms,
        summary,
        generator,
        response_time_hist: histo::encode(&rec.response_time),
        hists: Some(StepHists {
            service_time: histo::encode(&rec.service_time),
            send_lag: histo::encode(&rec.send_lag),
            connect_time: histo::encode(&rec.connect_time),
            first_byte: histo::encode(&rec.first_byte),
            tls_handshake: rec.tls.then(|| histo::encode(&rec.tls_handshake)),
            names: rec
                .names
                .iter()
                .filter_map(|n| Some((n.name.clone(), histo::encode(n.response_time.as_ref()?))))
                .collect(),
        }),
        flags: Vec::new(),
        slo_ok: slo.map(|_| true),
        server: None,
    };
    if let Some(slo) = slo {
        record.slo_ok = Some(slo.holds(&record.summary));
    }
    if outcome.interrupted {
        record.flags.push("interrupted".to_string());
    }
    if !events.is_empty() {
        // Its load is not the plan's: verdicts that assume a fixed level say so.
        record.flags.push("steered".to_string());
    }
    StepResult {
        record,
        series,
        interrupted: outcome.interrupted,
        notes: outcome.notes.clone(),
        engine: None,
        events,
    }
}

/// A change of live control as series.jsonl records it, at the run second it took effect
/// (its step's engine started `start_s` into the run).
pub fn control_event(a: &engine::steer::Applied, start_s: f64) -> crate::store::ControlEvent {
    crate::store::ControlEvent {
        event: "control".to_string(),
        // Whole milliseconds: the record reads as typed.
        t: ((start_s + a.at) * 1e3).round() / 1e3,
        step: a.step,
        what: a.what.to_string(),
        from: a.from,
        to: a.to,
        by: a.by.as_str().to_string(),
    }
}

/// The level a step follows now, when it moves (a ramp, or live control's): the one source
/// of "offered now" for the progress, the series and the metrics push.
pub fn level_of(cfg: &EngineConfig) -> Option<Arc<crate::plan::stages::Profile>> {
    cfg.steer
        .as_ref()
        .and_then(|st| st.profile())
        .or_else(|| cfg.ramp.clone())
}

/// The generator's effort over a run (its worker threads' CPU, arrivals that queued for a
/// connection): one computation, for a step's record and a run's summary alike.
pub fn generator_of(outcome: &engine::Outcome) -> crate::store::GeneratorStats {
    let rec = &outcome.recorder;
    let wall = outcome
        .finished
        .saturating_duration_since(outcome.started)
        .as_secs_f64()
        .max(1e-9);
    crate::store::GeneratorStats {
        cpu_pct: rec.cpu.as_secs_f64() / (wall * outcome.threads.max(1) as f64) * 100.0,
        cpu_us_per_response: if rec.responses > 0 {
            rec.cpu.as_secs_f64() * 1e6 / rec.responses as f64
        } else {
            0.0
        },
        threads: outcome.threads,
        pool_waits: rec.pool_waits,
        io: Some(outcome.io),
    }
}

/// The stored per-second series of a step (or run) whose engine started `start_s` seconds
/// into the run: its closed seconds (`Control::seconds` while it runs, the recorder's after),
/// as results store them and the live page shows them.
pub fn series_of(
    cfg: &EngineConfig,
    level: Option<&crate::plan::stages::Profile>,
    seconds: &[SecondBucket],
    index: usize,
    start_s: f64,
) -> Vec<SeriesPoint> {
    let (rate, users) = cfg.offered();
    let offered = rate.unwrap_or(users.unwrap_or(0) as f64);
    let warm_secs = cfg.warmup.as_secs_f64();
    let mean = |sum_us: u64, n: u64| {
        if n > 0 {
            sum_us as f64 / n as f64 / 1e3
        } else {
            0.0
        }
    };
    let pct = |us: u64, n: u64| (n > 0).then_some(us as f64 / 1e3);
    seconds
        .iter()
        .enumerate()
        .map(|(i, b)| SeriesPoint {
            t: start_s + i as f64,
            step: index,
            // On a ramp (or steered), the second's own level: the profile's mean over it
            // (this generator's share of it when the plan is split).
            offered: match level {
                Some(p) => p.mean(i as f64, i as f64 + 1.0) / f64::from(cfg.segment.count),
                None => offered,
            },
            warmup: (i as f64) < warm_secs,
            responses: b.responses,
            ok: b.ok,
            errors: b.errors,
            bytes_in: b.bytes_in,
            response_time_mean_ms: mean(b.response_time_sum_us, b.responses),
            response_time_max_ms: b.response_time_max_us as f64 / 1e3,
            send_lag_mean_ms: mean(b.send_lag_sum_us, b.responses),
            response_time_p50_ms: pct(b.p50_us, b.responses),
            response_time_p95_ms: pct(b.p95_us, b.responses),
            response_time_p99_ms: pct(b.p99_us, b.responses),
            server: None,
        })
        .collect()
}

/// The closed seconds so far of an engine running for `elapsed`, as [`series_of`] stores
/// them: what the live page shows of the step (or run) in progress.
pub fn live_series(
    cfg: &EngineConfig,
    ctl: &Control,
    elapsed: Duration,
    index: usize,
    clock: &RunClock,
) -> Vec<SeriesPoint> {
    // The engine started `elapsed` ago: its seconds count from there.
    let started = Instant::now().checked_sub(elapsed).unwrap_or(clock.start);
    let seconds = ctl.seconds();
    let level = level_of(cfg);
    series_of(
        cfg,
        level.as_deref(),
        seconds.closed(),
        index,
        clock.secs(started),
    )
}

/// A step the user ended before its time (the live view's `n`): its engine was stopped as an
/// interruption stops it, but the run goes on, so the step is `ended-early`, not
/// `interrupted`. Its summary already measures the window it ran, not the planned one.
pub fn ended_early(result: &mut StepResult) {
    result.interrupted = false;
    let flags = &mut result.record.flags;
    flags.retain(|f| f != "interrupted");
    flags.push("ended-early".to_string());
}

/// Sets the flags of the last step of `steps`, judged against the steps before it.
pub fn flag_last(mode: &str, steps: &mut [StepRecord], slo: Option<&Slo>) {
    let i = steps.len() - 1;
    let mut flags = analysis::step_flags(mode, steps, i, slo);
    flags.append(&mut steps[i].flags);
    steps[i].flags = flags;
}
