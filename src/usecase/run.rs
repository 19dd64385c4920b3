//! Run once: one load level held for a duration (or a request count), then a summary.
use super::command::{self, Argv};
use super::config::{base_config, parse_slo, ConnConfig, OpenLoopConfig, RequestConfig};
use crate::analysis::Slo;
use crate::engine::{self, Control, EngineConfig, Load, Outcome};
use crate::metrics::Summary;
use crate::observe::{ObserveArgs, StepObservation};
use crate::report::{json, progress::Progress, terminal};
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
    pub load: RunLoad,
    pub open: OpenLoopConfig,
    /// Length of the measured run; `None` with `requests` set: until the count is reached.
    pub duration: Option<Duration>,
    /// Stop after this many counted requests.
    pub requests: Option<u64>,
    /// Load sent before measuring starts (not counted).
    pub warmup: Duration,
    pub conn: ConnConfig,
    pub observe: ObserveArgs,
    pub slo: Option<String>,
    /// Write the summary as one JSON object here.
    pub json: Option<PathBuf>,
    pub quiet: bool,
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
            open: OpenLoopConfig::default(),
            duration: Some(DEFAULT_DURATION),
            requests: None,
            warmup: Duration::ZERO,
            conn: ConnConfig::default(),
            observe: ObserveArgs::default(),
            slo: None,
            json: None,
            quiet: false,
        }
    }
}

impl RunConfig {
    /// Validates the configuration into an engine configuration (plus the URLs for display).
    pub fn engine_config(&self) -> crate::Result<(EngineConfig, Vec<String>)> {
        let load = match self.load {
            RunLoad::Rate(rate) => {
                self.open.validate()?;
                self.open.load(rate)
            }
            RunLoad::Users { users, think } => {
                if users == 0 || users > 1_000_000 {
                    return Err(Error::usage(format!("--users {users}: use 1 to 1000000")));
                }
                Load::Closed {
                    users,
                    think: think.unwrap_or((Duration::ZERO, Duration::ZERO)),
                }
            }
        };
        if self.duration.is_some_and(|d| d.is_zero()) {
            return Err(Error::usage("--duration must be above zero"));
        }
        if self.duration.is_none() && self.requests.is_none() {
            return Err(Error::usage("give --duration or --requests"));
        }
        if self.requests == Some(0) {
            return Err(Error::usage("--requests must be at least 1"));
        }
        base_config(
            &self.request,
            &self.conn,
            load,
            self.duration,
            self.requests,
            self.warmup,
        )
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
        match self.load {
            RunLoad::Rate(r) => {
                command::open_loop(&mut a, &self.open);
                a.opt("--rate", r.to_string());
            }
            RunLoad::Users { users, think } => {
                command::think(&mut a, think);
                a.opt("--users", users.to_string());
            }
        }
        if self.observing() {
            command::observe(&mut a, &self.observe);
        }
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
}

impl RunOutcome {
    /// Why the run failed as a whole: no request succeeded (the dominant error, in one line).
    /// An interrupted run is not judged.
    pub fn failure(&self) -> Option<String> {
        if self.outcome.interrupted {
            return None;
        }
        self.summary
            .nothing_answered(&self.cfg.addrs[0].to_string())
    }

    /// 130 when interrupted, 1 when nothing answered, 3 when the SLO failed, else 0.
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
        if self.outcome.interrupted {
            return Ok(());
        }
        if let Some(slo) = &self.slo {
            f.write_str(&terminal::slo_lines(slo, &self.summary))?;
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
    crate::signals::install();
    let ctl = Control::new(cfg.threads);
    if !quiet {
        crate::eoutln!("{}", terminal::plan_line(cfg, urls));
    }
    let mut progress = Progress::new(cfg, quiet);
    let outcome = engine::run(cfg, &ctl, |elapsed| progress.tick(&ctl, elapsed))?;
    progress.finish();
    let (rate, users) = cfg.offered();
    let summary =
        Summary::from_recorder(&outcome.recorder, rate, users, outcome.planned_window(cfg));
    Ok((summary, outcome))
}

/// Runs once: validates, observes the server when asked, sends the load, writes `--json`.
pub fn run(rc: &RunConfig) -> crate::Result<RunOutcome> {
    let (cfg, urls) = rc.engine_config()?;
    let slo = parse_slo(rc.slo.as_deref())?;
    if let Some(p) = &rc.json {
        json::check_writable(p)?;
    }
    // Server-side sampling only when asked for: a plain run stays a pure load generator.
    let observer = if rc.observing() {
        let oc = rc.observe.to_config(cfg.addrs[0].port())?;
        Some(crate::observe::Observer::start(oc)?)
    } else {
        None
    };
    let from = crate::clock::unix_ms();
    let (summary, outcome) = execute(&cfg, &urls, rc.quiet)?;
    let server = observer.map(|h| {
        let samples = h.samples_between(from, crate::clock::unix_ms());
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
        )?;
    }
    Ok(RunOutcome {
        cfg,
        summary,
        outcome,
        server,
        slo,
    })
}
