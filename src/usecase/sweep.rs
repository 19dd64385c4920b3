//! Sweep: load levels one after another (S1's stepped rates, S2/S5's concurrency sweeps),
//! each stored when it ends; then the saturation point, capacity and findings.
use super::command::{self, Argv};
use super::engine_config::base_config;
use super::config::{parse_slo, ConnConfig, OpenLoopConfig, Output};
use super::config::{RequestConfig, SegmentConfig, StepTiming};
use super::lifecycle::{Lifecycle, Pace};
use super::results;
use crate::analysis::Analysis;
use crate::engine::Load;
use crate::observe::ObserveArgs;
use crate::runner::{sweep::SweepPlan, Executor};
use crate::store::StepRecord;
use crate::Error;
use std::fmt;
use std::path::PathBuf;
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

/// A sweep, ended.
#[derive(Debug)]
pub struct SweepOutcome {
    pub dir: PathBuf,
    pub report: PathBuf,
    pub steps: Vec<StepRecord>,
    pub notes: Vec<String>,
    /// Went its full course (not interrupted).
    pub complete: bool,
    /// Why it stopped, as recorded in run.json.
    pub reason: String,
    pub analysis: Analysis,
    pub has_slo: bool,
}

impl SweepOutcome {
    /// 130 when interrupted, 3 when a step failed the SLO, else 0.
    pub fn exit_code(&self) -> i32 {
        if !self.complete {
            130
        } else if self.has_slo && self.steps.iter().any(|s| s.slo_ok == Some(false)) {
            3
        } else {
            0
        }
    }
}

/// What is printed when the sweep ends.
impl fmt::Display for SweepOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "sweep ended: {}", self.reason)?;
        f.write_str(&results::analysis_text(&self.analysis, &self.notes))?;
        writeln!(f, "report:  {}", crate::fsutil::shown(&self.report))?;
        writeln!(f, "\nresults: {}", crate::fsutil::shown(&self.dir))
    }
}

/// Runs the sweep on `exec`, storing every step in the results folder as it ends.
pub fn run(cfg: &SweepConfig, exec: &mut dyn Executor) -> crate::Result<SweepOutcome> {
    cfg.timing.validate()?;
    let slo = parse_slo(cfg.slo.as_deref())?;
    let mode = cfg.mode();
    if let Levels::Rates(_) = cfg.levels {
        cfg.open.validate()?;
    }
    let loads = cfg.loads();
    for l in &loads {
        crate::usecase::config::check_load(l)?;
    }
    let first = *loads
        .first()
        .ok_or_else(|| Error::usage("give --rates (open loop) or --users (closed loop)"))?;
    let t = &cfg.timing;
    let (mut base, urls) =
        base_config(&cfg.request, &cfg.conn, first, Some(t.step), None, t.warmup)?;
    if let Some(s) = &slo {
        s.check_names(&base.names).map_err(Error::usage)?;
    }
    cfg.segment.validate(t.step, &loads)?;
    base.segment = cfg.segment.segment;
    base.max_sessions = cfg.open.max_sessions;
    let think = match &cfg.levels {
        Levels::Users { think, .. } => *think,
        Levels::Rates(_) => None,
    };
    let config = serde_json::json!({
        "levels": loads.iter().map(crate::runner::step::offered_of).collect::<Vec<_>>(),
        "warmup_s": t.warmup.as_secs_f64(),
        "step_s": t.step.as_secs_f64(),
        "rest_s": t.rest.as_secs_f64(),
        "keep_alive": base.keep_alive,
        "threads": base.threads,
        "timeout_s": base.timeout.as_secs_f64(),
        "think_s": think.map(|t| [t.0.as_secs_f64(), t.1.as_secs_f64()]),
        "connections": cfg.open.connections,
        "past_saturation": cfg.past_saturation,
        "max_errors": cfg.max_errors,
        "segment": cfg.segment.record(),
    });
    let observe_cfg = cfg.observe.to_config(base.addrs[0].port())?;
    let mut config = config;
    if let Some(l) = observe_cfg.link_bps {
        // Kept for the verdict of `overload report` (the network against the link).
        config["link_speed_bps"] = l.into();
    }
    let plan = SweepPlan {
        loads,
        past_saturation: cfg.past_saturation,
        max_errors: Some(cfg.max_errors),
        max_p99_ms: cfg.max_p99.map(|d| d.as_secs_f64() * 1e3),
        rest: t.rest,
    };
    // The plan's first URL (shown as `METHOD URL`).
    let audit_url = urls[0].split_whitespace().find(|w| w.contains("://"));
    let audit = |dir: &std::path::Path| {
        let url = audit_url.unwrap_or(&urls[0]);
        super::audit::before_load(url, &cfg.conn.tls, dir, cfg.output.quiet)
    };
    let ended = Lifecycle {
        kind: "sweep",
        mode,
        base: &base,
        urls: &urls,
        config,
        slo: slo.as_ref(),
        output: &cfg.output,
        folder: true,
        observe: Some(observe_cfg),
        segment: cfg.segment,
        banner: Some(format!(
            "overload sweep: {} steps of {} (+{} warm-up, {} rest), {mode} loop",
            plan.loads.len(),
            crate::units::fmt_duration(t.step),
            crate::units::fmt_duration(t.warmup),
            crate::units::fmt_duration(t.rest),
        )),
        pace: Pace::Stepped {
            planned: Some(plan.loads.len()),
            timing: *t,
        },
        before_load: cfg.audit.then_some(&audit as &dyn Fn(&std::path::Path)),
    }
    .run(
        exec,
        |s| crate::runner::sweep::sweep(s, &plan),
        String::clone,
    )?;
    let stored = ended.stored.expect("a sweep writes its folder");
    let done = ended.finished;
    Ok(SweepOutcome {
        dir: stored.dir,
        report: stored.report,
        steps: done.steps,
        notes: done.notes,
        complete: done.complete,
        reason: done.reason,
        analysis: stored.analysis,
        has_slo: slo.is_some(),
    })
}
