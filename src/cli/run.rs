//! `overload run`: one load level held for a duration, then a summary.
use super::load_args::{parse_think, ArrivalArg, ConnArgs, RequestArgs};
use crate::engine::{self, Control, EngineConfig, Load};
use crate::metrics::Summary;
use crate::report::{json, progress::Progress, terminal};
use crate::units::{parse_duration, parse_rate};
use crate::Error;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub request: RequestArgs,
    /// Open loop: requests per second on one global schedule (e.g. 2000, 1.5k).
    #[arg(long, value_parser = parse_rate, conflicts_with = "users")]
    pub rate: Option<f64>,
    /// Arrival process of the open loop.
    #[arg(long, value_enum, default_value = "constant")]
    pub arrival: ArrivalArg,
    /// Open loop: most connections to open (opened as needed).
    #[arg(long, default_value_t = 10_000)]
    pub connections: usize,
    /// Closed loop: users, each holding one connection and waiting for its answer [default: 10].
    #[arg(long)]
    pub users: Option<usize>,
    /// Closed loop: think time between a user's answer and its next request, `D` or `LO..HI`.
    #[arg(long, value_parser = parse_think, value_name = "DURATION[..DURATION]")]
    pub think: Option<(Duration, Duration)>,
    /// Length of the measured run (after warm-up) [default: 10s unless --requests is given].
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Stop after this many counted requests (whichever of --duration/--requests ends first).
    #[arg(long)]
    pub requests: Option<u64>,
    /// Load sent before measuring starts (not counted).
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub warmup: Duration,
    #[command(flatten)]
    pub conn: ConnArgs,
    /// Write the summary as one JSON object (format: docs/results.md).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No progress line while running.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

impl RunArgs {
    /// Validates the arguments into an engine configuration (plus the URLs for display).
    pub fn engine_config(&self) -> crate::Result<(EngineConfig, Vec<String>)> {
        self.conn.validate()?;
        let mix = self.request.mix()?;
        let load = match (self.rate, self.users) {
            (Some(rate), None) => {
                if self.think.is_some() {
                    return Err(Error::usage(
                        "--think applies to the closed loop (--users), not to --rate",
                    ));
                }
                if self.connections == 0 || self.connections > 1_000_000 {
                    return Err(Error::usage(format!(
                        "--connections {}: use 1 to 1000000",
                        self.connections
                    )));
                }
                Load::Open {
                    rate,
                    arrival: self.arrival.into(),
                    max_connections: self.connections,
                }
            }
            (None, users) => {
                let users = users.unwrap_or(10);
                if users == 0 || users > 1_000_000 {
                    return Err(Error::usage(format!("--users {users}: use 1 to 1000000")));
                }
                Load::Closed {
                    users,
                    think: self.think.unwrap_or((Duration::ZERO, Duration::ZERO)),
                }
            }
            (Some(_), Some(_)) => unreachable!("clap rejects --rate with --users"),
        };
        let duration = match (self.duration, self.requests) {
            (None, None) => Some(Duration::from_secs(10)),
            (d, _) => d,
        };
        if duration.is_some_and(|d| d.is_zero()) {
            return Err(Error::usage("--duration must be above zero"));
        }
        if self.requests == Some(0) {
            return Err(Error::usage("--requests must be at least 1"));
        }
        let cfg = EngineConfig {
            addrs: mix.addrs,
            requests: mix.requests,
            pick: mix.pick,
            load,
            duration,
            max_requests: self.requests,
            warmup: self.warmup,
            threads: self.conn.threads(),
            keep_alive: !self.conn.no_keep_alive && self.conn.calls_per_connection != Some(1),
            calls_per_connection: self.conn.calls_per_connection,
            timeout: self.conn.timeout,
            connect_timeout: self.conn.connect_timeout,
            seed: self.conn.seed,
        };
        Ok((cfg, mix.urls))
    }
}

/// Runs the load and returns the summary (shared by `run` and `demo`).
pub fn execute(
    cfg: &EngineConfig,
    urls: &[String],
    quiet: bool,
) -> crate::Result<(Summary, engine::Outcome)> {
    crate::signals::install();
    let ctl = Control::new(cfg.threads);
    if !quiet {
        eprintln!("{}", terminal::plan_line(cfg, urls));
    }
    let mut progress = Progress::new(cfg, quiet);
    let outcome = engine::run(cfg, &ctl, |elapsed| progress.tick(&ctl, elapsed))?;
    progress.finish();
    let (rate, users) = cfg.offered();
    let summary =
        Summary::from_recorder(&outcome.recorder, rate, users, outcome.planned_window(cfg));
    Ok((summary, outcome))
}

pub fn run(args: RunArgs) -> crate::Result<i32> {
    let (cfg, urls) = args.engine_config()?;
    if let Some(p) = &args.json {
        json::check_writable(p)?;
    }
    let (summary, outcome) = execute(&cfg, &urls, args.quiet)?;
    print!("{}", terminal::summary(&summary, &outcome, &cfg));
    if let Some(p) = &args.json {
        json::write_run(p, &summary, &outcome, &cfg, &urls)?;
    }
    Ok(if outcome.interrupted { 130 } else { 0 })
}
