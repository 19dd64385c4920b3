//! The configuration of `overload run`: one load level held for a duration (or a request
//! count); `Display` is the equivalent command line.
use super::command::{self, Argv};
use super::config::{ConnConfig, OpenLoopConfig, Output, RequestConfig, SegmentConfig};
use super::engine_config::base_config;
use crate::engine::{EngineConfig, Load};
use crate::observe::ObserveArgs;
use crate::plan::stages::Stages;
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
    /// The results folder (the sweep's layout, one step) and how the run is shown. A folder
    /// is written when `--out`, `--report`, `--hdr-log` or the live page asks for one; with
    /// no `--out`: `runs/<UTC time>-<name>`.
    pub output: Output,
    /// Write a results folder and its report.html even without `--out`.
    pub report: bool,
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
            output: Output::default(),
            report: false,
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

    /// Server-side sampling was asked for (a plain run stays a pure load generator).
    pub fn observing(&self) -> bool {
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
        command::output(&mut a, &self.output);
        if self.report {
            a.arg("--report");
        }
        a.fmt(f)
    }
}
