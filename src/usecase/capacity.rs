//! Capacity: the highest rate that meets an SLO, by geometric growth then bisection
//! (plan::capacity), each probe a full step.
use super::command::{self, Argv};
use super::engine_config::base_config;
use super::config::{parse_slo, ConnConfig, OpenLoopConfig, Output};
use super::config::{RequestConfig, SegmentConfig, StepTiming};
use super::lifecycle::{Lifecycle, Pace};
use super::results;
use crate::analysis::{self, Analysis, Slo};
use crate::observe::ObserveArgs;
use crate::plan::capacity::CapacitySearch;
use crate::runner::Executor;
use crate::store::StepRecord;
use crate::Error;
use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

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

/// A capacity search, ended.
#[derive(Debug)]
pub struct CapacityOutcome {
    pub dir: PathBuf,
    pub report: PathBuf,
    /// Every step run, in search order (a generator-bound failure shows twice: it was re-run).
    pub steps: Vec<StepRecord>,
    pub notes: Vec<String>,
    pub complete: bool,
    pub reason: String,
    pub search: CapacitySearch,
    pub slo: Slo,
    pub start: f64,
    pub max: f64,
    pub precision: f64,
    pub elapsed: Duration,
    /// The analysis of the probes in order of load.
    pub analysis: Analysis,
}

impl CapacityOutcome {
    /// 130 when interrupted, 3 when even the first probe failed, else 0.
    pub fn exit_code(&self) -> i32 {
        if !self.complete {
            130
        } else if self.search.lo.is_none() {
            3
        } else {
            0
        }
    }
}

/// What is printed when the search ends.
impl fmt::Display for CapacityOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "\ncapacity search ended: {} ({:.0}s)",
            self.reason,
            self.elapsed.as_secs_f64()
        )?;
        for (i, step) in self.steps.iter().enumerate() {
            let s = &step.summary;
            let gen = if step.flags.iter().any(|f| f == "generator-bound") {
                "  (generator-bound)"
            } else {
                ""
            };
            writeln!(
                f,
                "  probe {:>2}: {:>9.1} req/s  {}  p99 {:>8}  errors {:.2}%{gen}",
                i + 1,
                step.offered,
                if self.slo.holds(s) && !step.flags.iter().any(|f| f == "not-sustained") {
                    "met   "
                } else {
                    "FAILED"
                },
                crate::units::fmt_ms(s.response_time_ms.p99),
                Slo::measure(analysis::slo::Metric::Errors, s) * 100.0
            )?;
        }
        match (self.search.lo, self.search.hi) {
            (Some(lo), hi) => {
                let bracket = hi.map_or(format!("[{lo:.1}, >{:.0}]", self.max), |h| {
                    format!("[{lo:.1}, {h:.1})")
                });
                let at_least = if hi.is_none() { "at least " } else { "" };
                writeln!(
                    f,
                    "\ncapacity: {at_least}{lo:.1} req/s under '{}' (bracket {bracket}){}",
                    self.slo.text,
                    self.search.spread_text()
                )?;
                let linear = CapacitySearch::linear_steps(self.start, lo, self.precision);
                writeln!(
                    f,
                    "  {} probes; a linear sweep from {:.0} req/s in steps of {:.0}% would need about {linear}",
                    self.steps.len(),
                    self.start,
                    self.precision * 100.0
                )?;
            }
            (None, _) => writeln!(
                f,
                "\ncapacity: below {:.1} req/s: the first probe already failed '{}'",
                self.start, self.slo.text
            )?,
        }
        f.write_str(&results::analysis_text(&self.analysis, &self.notes))?;
        writeln!(f, "report:  {}", crate::fsutil::shown(&self.report))?;
        writeln!(f, "\nresults: {}", crate::fsutil::shown(&self.dir))
    }
}

/// Runs the search on `exec`, storing every probe in the results folder as it ends.
pub fn run(cfg: &CapacityConfig, exec: &mut dyn Executor) -> crate::Result<CapacityOutcome> {
    cfg.timing.validate()?;
    let slo = parse_slo(cfg.slo.as_deref())?
        .ok_or_else(|| Error::usage("capacity needs --slo, e.g. --slo 'p99<500ms,errors<1%'"))?;
    if cfg.max < cfg.start {
        return Err(Error::usage("--max is below --start"));
    }
    if cfg.repeat == 0 {
        return Err(Error::usage("--repeat must be at least 1"));
    }
    if cfg.precision <= 0.0 {
        return Err(Error::usage("--precision must be above 0%"));
    }
    cfg.open.validate()?;
    let t = &cfg.timing;
    let first = cfg.open.load(cfg.start);
    let (mut base, urls) =
        base_config(&cfg.request, &cfg.conn, first, Some(t.step), None, t.warmup)?;
    slo.check_names(&base.names).map_err(Error::usage)?;
    cfg.segment.validate(t.step, &[first])?;
    base.segment = cfg.segment.segment;
    base.max_sessions = cfg.open.max_sessions;
    let config = serde_json::json!({
        "start": cfg.start, "max": cfg.max, "precision": cfg.precision, "repeat": cfg.repeat,
        "warmup_s": t.warmup.as_secs_f64(), "step_s": t.step.as_secs_f64(),
        "rest_s": t.rest.as_secs_f64(), "keep_alive": base.keep_alive, "threads": base.threads,
        "connections": cfg.open.connections, "segment": cfg.segment.record(),
    });
    let observe_cfg = cfg.observe.to_config(base.addrs[0].port())?;
    let mut config = config;
    if let Some(l) = observe_cfg.link_bps {
        // Kept for the verdict of `overload report` (the network against the link).
        config["link_speed_bps"] = l.into();
    }
    let started = Instant::now();
    let search = CapacitySearch::new(cfg.start, cfg.max, cfg.precision);
    let ended = Lifecycle {
        kind: "capacity",
        mode: "open",
        base: &base,
        urls: &urls,
        config,
        slo: Some(&slo),
        output: &cfg.output,
        folder: true,
        observe: Some(observe_cfg),
        segment: cfg.segment,
        banner: Some(format!(
            "overload capacity: SLO '{}', from {:.0} req/s, precision {:.0}%",
            slo.text,
            cfg.start,
            cfg.precision * 100.0,
        )),
        pace: Pace::Stepped {
            planned: None,
            timing: *t,
        },
        before_load: None,
    }
    .run(
        exec,
        |s| {
            let (arrival, connections) = (cfg.open.arrival, cfg.open.connections);
            crate::runner::capacity::search(s, search, arrival, connections, t.rest, cfg.repeat)
        },
        |(_, r)| r.clone(),
    )?;
    let stored = ended.stored.expect("a capacity search writes its folder");
    let done = ended.finished;
    Ok(CapacityOutcome {
        dir: stored.dir,
        report: stored.report,
        steps: done.steps,
        notes: done.notes,
        complete: done.complete,
        reason: done.reason,
        search: ended.driven.0,
        slo,
        start: cfg.start,
        max: cfg.max,
        precision: cfg.precision,
        elapsed: started.elapsed(),
        analysis: stored.analysis,
    })
}
