//! Run once: one load level held for a duration (or a request count), then a summary.
use super::command::{self, Argv};
use super::config::SegmentConfig;
use super::config::{base_config, parse_slo, ConnConfig, OpenLoopConfig, RequestConfig};
use super::results;
use crate::analysis::ramp::{self, RampAnalysis};
use crate::analysis::Slo;
use crate::engine::{self, Control, EngineConfig, Load, Outcome};
use crate::metrics::Summary;
use crate::observe::{ObserveArgs, StepObservation};
use crate::plan::stages::Stages;
use crate::report::{json, progress::Progress, terminal};
use crate::runner::step::{live_series, RunClock};
use crate::Error;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// Open loop (a rate) or closed loop (users).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RunLoad {
    /// Requests per second on one global schedule.
    Rate(f64),
    /// Users, each holding one connection and waiting for its answer, with a think time.
    Users {
        users: usize,
        think: Option<(Duration, Duration)>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct RunConfig {
    pub request: RequestConfig,
    /// With `stages`, which level moves (its number: the stages' peak).
    pub load: RunLoad,
    /// `--stages` / `--user-stages`: the level ramps through these; the run lasts their sum.
    pub stages: Option<Stages>,
    pub open: OpenLoopConfig,
    /// Length of the measured run; `None` with `requests` set: until the count is reached.
    pub duration: Option<Duration>,
    /// Stop after this many counted requests.
    pub requests: Option<u64>,
    /// Load sent before measuring starts (not counted).
    pub warmup: Duration,
    pub conn: ConnConfig,
    /// Scale-out: this generator's part of the plan and the common start.
    pub segment: SegmentConfig,
    pub observe: ObserveArgs,
    pub slo: Option<String>,
    /// Write the summary as one JSON object here.
    pub json: Option<PathBuf>,
    pub quiet: bool,
    /// Results folder (the sweep's layout, one step); with `report` and no folder:
    /// `runs/<UTC time>-<name>`.
    pub out: Option<PathBuf>,
    /// Write a results folder and its report.html even without `out`.
    pub report: bool,
    /// Name of the run in its results folder [default: from the URL].
    pub name: Option<String>,
    /// Show the live view on the terminal (`tui`) instead of the progress line.
    pub live_view: bool,
    /// Write HdrHistogram's interval log here when the run ends (a results folder is then
    /// written too, as with `report`).
    pub hdr_log: Option<PathBuf>,
    /// Serve the report page while the run goes on, its per-second series as they come:
    /// `--live-port` (loopback) or `--live-listen` (a results folder is then written too).
    pub live_port: Option<u16>,
    pub live_listen: Option<std::net::SocketAddr>,
}

/// Users of the closed loop when neither a rate nor users are given.
pub const DEFAULT_USERS: usize = 10;
/// The measured length when neither a duration nor a request count is given.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            request: RequestConfig::default(),
            load: RunLoad::Users {
                users: DEFAULT_USERS,
                think: None,
            },
            stages: None,
            open: OpenLoopConfig::default(),
            duration: Some(DEFAULT_DURATION),
            requests: None,
            warmup: Duration::ZERO,
            conn: ConnConfig::default(),
            segment: SegmentConfig::default(),
            observe: ObserveArgs::default(),
            slo: None,
            json: None,
            quiet: false,
            out: None,
            report: false,
            name: None,
            live_view: false,
            hdr_log: None,
            live_port: None,
            live_listen: None,
        }
    }
}

impl RunConfig {
    /// Validates the configuration into an engine configuration (plus the URLs for display).
    pub fn engine_config(&self) -> crate::Result<(EngineConfig, Vec<String>)> {
        if let Some(st) = &self.stages {
            return self.ramp_config(st);
        }
        let load = match self.load {
            RunLoad::Rate(rate) => {
                self.open.validate()?;
                self.open.load(rate)
            }
            RunLoad::Users { users, think } => Load::Closed {
                users,
                think: think.unwrap_or((Duration::ZERO, Duration::ZERO)),
            },
        };
        crate::usecase::config::check_load(&load)?;
        if self.duration.is_some_and(|d| d.is_zero()) {
            return Err(Error::usage("--duration must be above zero"));
        }
        let replaying = self
            .request
            .access_log
            .as_ref()
            .is_some_and(|a| a.replay_speed.is_some());
        if self.duration.is_none() && self.requests.is_none() && !replaying {
            return Err(Error::usage("give --duration or --requests"));
        }
        if self.requests == Some(0) {
            return Err(Error::usage("--requests must be at least 1"));
        }
        // Late by at most the run's length: past that this segment would miss the others.
        let late = self.duration.unwrap_or(Duration::from_secs(1)) + self.warmup;
        self.segment.validate(late, &[load])?;
        let (mut cfg, urls) = base_config(
            &self.request,
            &self.conn,
            load,
            self.duration,
            self.requests,
            self.warmup,
        )?;
        cfg.segment = self.segment.segment;
        cfg.max_sessions = self.open.max_sessions;
        if let Some(r) = &cfg.replay {
            // The log's clock is the schedule: the open loop at its mean rate, for as long as
            // the log lasts (scaled) unless --duration cuts it.
            self.open.validate()?;
            // Above the engine's rate the send window (the scaled span) closes before much
            // is sent: refuse, naming what would fit, rather than run and blame connections.
            if r.rate() > crate::units::MAX_RATE {
                let speed = self
                    .request
                    .access_log
                    .as_ref()
                    .and_then(|a| a.replay_speed)
                    .unwrap_or(1.0);
                let span = Duration::from_nanos((r.span_ns as f64 * speed) as u64);
                return Err(Error::usage(format!(
                    "--replay-speed {}: the log's {} lines in {} would go out at {} req/s, above \
                     the supported {} req/s; use --replay-speed {} or less",
                    crate::units::fmt_num(speed),
                    r.at_ns.len(),
                    crate::units::fmt_duration(span),
                    crate::units::fmt_si(r.rate()),
                    crate::units::fmt_si(crate::units::MAX_RATE),
                    crate::units::fmt_num(speed * crate::units::MAX_RATE / r.rate()),
                )));
            }
            cfg.load = self.open.load(r.rate());
            let span = Duration::from_nanos(r.span_ns);
            cfg.duration = Some(self.duration.map_or(span, |d| d.min(span)));
        }
        Ok((cfg, urls))
    }

    /// The flag that gave the stages, for messages.
    pub fn stages_flag(&self) -> &'static str {
        match self.load {
            RunLoad::Rate(_) => "--stages",
            RunLoad::Users { .. } => "--user-stages",
        }
    }

    /// [`RunConfig::engine_config`] on stages: the run lasts their sum (after the warm-up,
    /// which holds the level they start from); the engine follows their profile. `Load`
    /// carries the measured window's mean rate (open loop) or the peak of users (closed).
    fn ramp_config(&self, st: &Stages) -> crate::Result<(EngineConfig, Vec<String>)> {
        let flag = self.stages_flag();
        let length = crate::units::fmt_duration(st.duration());
        if self.duration.is_some() {
            return Err(Error::usage(format!(
                "{flag} sets the run's length (the sum of its stages, {length}); leave out \
                 --duration"
            )));
        }
        let replaying = self.request.access_log.as_ref();
        if replaying.is_some_and(|a| a.replay_speed.is_some()) {
            return Err(Error::usage(format!(
                "{flag} and --replay-speed both set when requests go out; give one"
            )));
        }
        if self.requests == Some(0) {
            return Err(Error::usage("--requests must be at least 1"));
        }
        let profile = st.profile(self.warmup);
        let load = match self.load {
            RunLoad::Rate(_) => {
                self.open.validate()?;
                let secs = st.duration().as_secs_f64();
                let w = self.warmup.as_secs_f64();
                let mean = (profile.integral(w + secs) - profile.integral(w)) / secs;
                self.open.load(mean)
            }
            RunLoad::Users { think, .. } => {
                st.check_users()
                    .map_err(|e| Error::usage(format!("{flag}: {e}")))?;
                let most = crate::usecase::config::MAX_USERS;
                if st.peak() > most as f64 {
                    return Err(Error::usage(format!(
                        "{flag}: the stages reach {} users; at most {most} are supported",
                        crate::units::fmt_num(st.peak())
                    )));
                }
                if self.request.scenario.is_some() {
                    return Err(Error::usage(
                        "--user-stages does not ramp --scenario users; use --stages (sessions \
                         per second) with the scenario",
                    ));
                }
                Load::Closed {
                    users: st.peak() as usize,
                    think: think.unwrap_or((Duration::ZERO, Duration::ZERO)),
                }
            }
        };
        crate::usecase::config::check_load(&load)?;
        self.segment
            .validate(st.duration() + self.warmup, &[load])?;
        let (mut cfg, urls) = base_config(
            &self.request,
            &self.conn,
            load,
            Some(st.duration()),
            self.requests,
            self.warmup,
        )?;
        cfg.segment = self.segment.segment;
        cfg.max_sessions = self.open.max_sessions;
        cfg.ramp = Some(std::sync::Arc::new(profile));
        Ok((cfg, urls))
    }

    fn observing(&self) -> bool {
        let o = &self.observe;
        !o.watch.is_empty()
            || !o.fpm_status.is_empty()
            || !o.agent.is_empty()
            || o.observe_port.is_some()
    }
}

/// The equivalent `overload run …` command line.
impl fmt::Display for RunConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut a = Argv::new("run");
        command::request(&mut a, &self.request, &self.conn);
        match (self.load, &self.stages) {
            (RunLoad::Rate(_), Some(st)) => {
                command::open_loop(&mut a, &self.open);
                a.opt("--stages", st.to_string());
            }
            (RunLoad::Rate(r), None) => {
                command::open_loop(&mut a, &self.open);
                a.opt("--rate", r.to_string());
            }
            (RunLoad::Users { think, .. }, Some(st)) => {
                command::think(&mut a, think);
                a.opt("--user-stages", st.to_string());
            }
            (RunLoad::Users { users, think }, None) => {
                command::think(&mut a, think);
                a.opt("--users", users.to_string());
            }
        }
        if self.observing() {
            command::observe(&mut a, &self.observe);
        }
        command::segment(&mut a, &self.segment);
        if let Some(d) = self.duration {
            a.opt("--duration", command::dur(d));
        }
        if let Some(n) = self.requests {
            a.opt("--requests", n.to_string());
        }
        if !self.warmup.is_zero() {
            a.opt("--warmup", command::dur(self.warmup));
        }
        if let Some(s) = &self.slo {
            a.opt("--slo", s.clone());
        }
        if let Some(j) = &self.json {
            a.opt("--json", j.display().to_string());
        }
        if self.quiet {
            a.arg("-q");
        }
        if let Some(o) = &self.out {
            a.opt("--out", o.display().to_string());
        }
        if self.report {
            a.arg("--report");
        }
        if let Some(n) = &self.name {
            a.opt("--name", n.clone());
        }
        if let Some(p) = &self.hdr_log {
            a.opt("--hdr-log", p.display().to_string());
        }
        a.fmt(f)
    }
}

/// A run, ended.
pub struct RunOutcome {
    pub cfg: EngineConfig,
    pub summary: Summary,
    pub outcome: Outcome,
    /// The server's side and the observer's warnings, when observed.
    pub server: Option<(StepObservation, Vec<String>)>,
    pub slo: Option<Slo>,
    /// The results folder and its report, when one was asked for (`--out`, `--report`).
    pub stored: Option<(PathBuf, PathBuf)>,
    /// On stages: the knee found on the ramp and its verdict.
    pub ramp: Option<RampAnalysis>,
}

impl RunOutcome {
    /// Why the run failed as a whole, in one line: no request succeeded (the dominant error),
    /// or the plan was not carried out (`analysis::plan_carried_out`: over 1% of its arrivals
    /// never sent). An interrupted run is not judged.
    pub fn failure(&self) -> Option<String> {
        if self.outcome.interrupted {
            return None;
        }
        self.summary
            .nothing_answered(&self.cfg.addrs[0].to_string())
            .or_else(|| {
                let g = terminal::generator_of(&self.outcome);
                let n = crate::analysis::not_sent(&self.summary, &g)?;
                (!n.plan_carried_out).then(|| {
                    format!(
                        "the plan was not carried out: {} of its {} arrivals ({:.2}%) were never sent; {}",
                        n.count,
                        n.intended,
                        n.share * 100.0,
                        n.why
                    )
                })
            })
    }

    /// 130 when interrupted, 1 when nothing answered or the plan was not carried out, 3 when
    /// the SLO failed, else 0.
    pub fn exit_code(&self) -> i32 {
        if self.outcome.interrupted {
            130
        } else if self.failure().is_some() {
            1
        } else if self.slo.as_ref().is_some_and(|s| !s.holds(&self.summary)) {
            3
        } else {
            0
        }
    }
}

/// What is printed when the run ends: the summary, the server's side, the SLO verdict.
impl fmt::Display for RunOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&terminal::summary(&self.summary, &self.outcome, &self.cfg))?;
        if let Some(r) = &self.ramp {
            writeln!(f, "\n  {}", r.describe())?;
        }
        if let Some((obs, warnings)) = &self.server {
            f.write_str(&terminal::server(obs))?;
            let (rate, users) = self.cfg.offered();
            let mode = if users.is_some() { "closed" } else { "open" };
            let level = rate.unwrap_or(users.unwrap_or(0) as f64);
            for finding in crate::observe::findings(&[(level, obs)], mode) {
                writeln!(f, "  • {finding}")?;
            }
            for w in warnings {
                writeln!(f, "  ! {w}")?;
            }
        }
        if !self.outcome.interrupted {
            if let Some(slo) = &self.slo {
                f.write_str(&terminal::slo_lines(slo, &self.summary))?;
            }
        }
        if let Some((dir, report)) = &self.stored {
            writeln!(f, "\nreport:  {}", report.display())?;
            writeln!(f, "results: {}", dir.display())?;
        }
        Ok(())
    }
}

/// Runs the load and returns the summary (shared by `run` and the experiment's warm-up).
pub fn execute(
    cfg: &EngineConfig,
    urls: &[String],
    quiet: bool,
) -> crate::Result<(Summary, Outcome)> {
    execute_shown(cfg, urls, quiet, None, None, None)
}

/// [`execute`], shown in the live view when `view` is given (with the server's side from
/// `observer`), else on the progress line.
fn execute_shown(
    cfg: &EngineConfig,
    urls: &[String],
    quiet: bool,
    view: Option<crate::tui::Setup>,
    observer: Option<&crate::observe::ObserverHandle>,
    page: Option<(&crate::live::LivePage, &RunClock)>,
) -> crate::Result<(Summary, Outcome)> {
    crate::signals::install();
    let ctl = Control::new(cfg.threads);
    if !quiet {
        crate::eoutln!("{}", terminal::plan_line(cfg, urls));
    }
    let mut progress = Progress::new(cfg, quiet);
    if let Some(setup) = view.filter(|_| !quiet) {
        progress = progress.with_view(Box::new(crate::tui::LiveScreen::start(setup)?));
    }
    let outcome = engine::run(cfg, &ctl, |elapsed| {
        progress.tick(&ctl, elapsed, observer);
        if let Some((page, clock)) = page {
            page.show_series(live_series(cfg, &ctl, elapsed, 0, clock));
        }
    });
    progress.finish();
    let outcome = outcome?;
    let (rate, users) = cfg.offered();
    let mut summary =
        Summary::from_recorder(&outcome.recorder, rate, users, outcome.planned_window(cfg));
    summary.protocol = Some(cfg.protocol_choice.clone());
    Ok((summary, outcome))
}

/// Runs once: validates, observes the server when asked, sends the load, writes `--json`.
pub fn run(rc: &RunConfig) -> crate::Result<RunOutcome> {
    let (cfg, urls) = rc.engine_config()?;
    let slo = parse_slo(rc.slo.as_deref())?;
    if let Some(s) = &slo {
        s.check_names(&cfg.names).map_err(Error::usage)?;
    }
    if let Some(p) = &rc.json {
        json::check_writable(p)?;
    }
    results::check_hdr_log(rc.hdr_log.as_deref())?;
    // Server-side sampling only when asked for: a plain run stays a pure load generator.
    let observer = if rc.observing() {
        let oc = rc.observe.to_config(cfg.addrs[0].port())?;
        Some(crate::observe::Observer::start(oc)?)
    } else {
        None
    };
    crate::signals::install();
    if !rc.segment.wait_for_start(rc.quiet) {
        return Err(Error::runtime("interrupted while waiting for --start-at"));
    }
    let live_out = super::config::Output {
        live_port: rc.live_port,
        live_listen: rc.live_listen,
        ..Default::default()
    };
    let wants_folder = rc.out.is_some() || rc.report || rc.hdr_log.is_some();
    let mut writer = if wants_folder || live_out.live_addr().is_some() {
        Some(open_results(rc, &cfg, &urls, slo.as_ref())?)
    } else {
        None
    };
    // Kept until the report is written, so the page's last reload shows the stored run.
    let live = match &writer {
        Some(w) => results::live_page(&live_out, w.dir())?,
        None => None,
    };
    let clock = RunClock::now();
    let from = crate::clock::unix_ms();
    let view = rc.live_view.then(|| crate::tui::Setup {
        command: "run",
        target: urls.first().cloned().unwrap_or_default(),
        unit: if matches!(rc.load, RunLoad::Rate(_)) {
            "req/s"
        } else {
            "users"
        },
        planned: None,
        step_len: cfg.duration.map(|d| d + cfg.warmup),
        per_step: Duration::ZERO,
        end_step_key: false,
    });
    let page = live.as_ref().map(|p| (p, &clock));
    let (summary, outcome) = execute_shown(&cfg, &urls, rc.quiet, view, observer.as_ref(), page)?;
    let to = crate::clock::unix_ms();
    let ramp = ramp_of(&cfg, &outcome, &clock, observer.as_ref());
    let stored = match writer.as_mut() {
        Some(w) => Some(store_run(
            w,
            &cfg,
            &outcome,
            &clock,
            slo.as_ref(),
            (from, to),
            observer.as_ref(),
            ramp.as_ref(),
        )?),
        None => None,
    };
    if let (Some(p), Some((dir, _))) = (&rc.hdr_log, &stored) {
        results::write_hdr_log(dir, p)?;
    }
    let server = observer.map(|h| {
        let samples = h.samples_between(from, to);
        let warnings = h.stop();
        (crate::observe::summarize(&samples), warnings)
    });
    if let Some(p) = &rc.json {
        json::write_run(
            p,
            &summary,
            &outcome,
            &cfg,
            &urls,
            server.as_ref().map(|s| &s.0),
            ramp.as_ref(),
        )?;
    }
    Ok(RunOutcome {
        cfg,
        summary,
        outcome,
        server,
        slo,
        stored,
        ramp,
    })
}

/// On stages: the knee on the ramp from its per-second series, and the sweep's bottleneck
/// verdict on windows of its seconds with the server's samples of each (when observed).
fn ramp_of(
    cfg: &EngineConfig,
    outcome: &Outcome,
    clock: &RunClock,
    observer: Option<&crate::observe::ObserverHandle>,
) -> Option<RampAnalysis> {
    cfg.ramp.as_ref()?;
    let window = (clock.start_unix_ms, crate::clock::unix_ms());
    let result = crate::runner::step::record_of(cfg, outcome, 0, clock, None, window);
    let at = |t: f64| clock.start_unix_ms + (t * 1000.0) as u64;
    let windows = ramp::windows(&result.series, &result.record, |t0, t1| {
        let samples = observer?.samples_between(at(t0), at(t1));
        (!samples.is_empty()).then(|| crate::observe::summarize(&samples))
    });
    Some(ramp::analyze_with_verdict(
        mode_of(cfg),
        &result.series,
        &windows,
        Default::default(),
    ))
}

/// `open` or `closed`, as the results folder says it.
fn mode_of(cfg: &EngineConfig) -> &'static str {
    match cfg.load {
        Load::Open { .. } => "open",
        Load::Closed { .. } => "closed",
    }
}

/// Opens the run's results folder (before the load, so a bad `--out` costs no run).
fn open_results(
    rc: &RunConfig,
    cfg: &EngineConfig,
    urls: &[String],
    slo: Option<&Slo>,
) -> crate::Result<crate::store::Writer> {
    let think = match rc.load {
        RunLoad::Users { think, .. } => think,
        RunLoad::Rate(_) => None,
    };
    let config = serde_json::json!({
        "levels": [crate::runner::step::offered_of(&cfg.load)],
        "warmup_s": cfg.warmup.as_secs_f64(),
        "duration_s": cfg.duration.map(|d| d.as_secs_f64()),
        "requests": cfg.max_requests,
        "keep_alive": cfg.keep_alive,
        "threads": cfg.threads,
        "timeout_s": cfg.timeout.as_secs_f64(),
        "think_s": think.map(|t| [t.0.as_secs_f64(), t.1.as_secs_f64()]),
        "connections": rc.open.connections,
        "stages": rc.stages.as_ref().map(ToString::to_string),
    });
    let w = results::open(
        rc.out.as_deref(),
        rc.name.as_deref(),
        "run",
        mode_of(cfg),
        urls,
        config,
        slo,
    )?;
    if !rc.quiet {
        crate::eoutln!("overload: results in {}", w.dir().display());
    }
    Ok(w)
}

#[allow(clippy::too_many_arguments)]
/// Stores the run as the one step of its results folder (the sweep's record and series,
/// server side included), marks it finished and writes report.html beside it.
fn store_run(
    w: &mut crate::store::Writer,
    cfg: &EngineConfig,
    outcome: &Outcome,
    clock: &RunClock,
    slo: Option<&Slo>,
    window: (u64, u64),
    observer: Option<&crate::observe::ObserverHandle>,
    ramp: Option<&RampAnalysis>,
) -> crate::Result<(PathBuf, PathBuf)> {
    let mut result = crate::runner::step::record_of(cfg, outcome, 0, clock, slo, window);
    if let Some(obs) = observer {
        crate::runner::attach_server(obs, clock, &mut result);
    }
    let mut steps = vec![result.record];
    crate::runner::step::flag_last(mode_of(cfg), &mut steps, slo);
    w.append_step(&steps[0], &result.series)?;
    let reason = if outcome.interrupted {
        "interrupted"
    } else {
        "run ended"
    };
    if let Some(r) = ramp {
        let text = serde_json::to_vec_pretty(r)
            .map_err(|e| Error::runtime(format!("{}: {e}", ramp::RAMP_FILE)))?;
        crate::fsutil::write_atomic(&w.dir().join(ramp::RAMP_FILE), &text)?;
    }
    w.finish(!outcome.interrupted, reason)?;
    let dir = w.dir().to_path_buf();
    let report = results::write_report(&dir)?;
    Ok((dir, report))
}
