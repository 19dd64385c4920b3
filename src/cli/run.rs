//! `overload run`: one load level held for a duration, then a summary.
use super::load_args::{base_config, parse_think, ConnArgs, OpenLoopArgs, RequestArgs};
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
    #[command(flatten)]
    pub open: OpenLoopArgs,
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
    #[command(flatten)]
    pub observe: crate::observe::ObserveArgs,
    /// Service-level objective, e.g. 'p99<500ms,errors<1%'; exit code 3 when it fails.
    #[arg(long)]
    pub slo: Option<String>,
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
        let load = match (self.rate, self.users) {
            (Some(rate), None) => {
                if self.think.is_some() {
                    return Err(Error::usage(
                        "--think applies to the closed loop (--users), not to --rate",
                    ));
                }
                self.open.validate()?;
                Load::Open {
                    rate,
                    arrival: self.open.arrival.into(),
                    max_connections: self.open.connections,
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
        base_config(
            &self.request,
            &self.conn,
            load,
            duration,
            self.requests,
            self.warmup,
        )
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
    let slo = args
        .slo
        .as_deref()
        .map(crate::analysis::slo::parse)
        .transpose()
        .map_err(Error::usage)?;
    if let Some(p) = &args.json {
        json::check_writable(p)?;
    }
    // Server-side sampling only when asked for: a plain run stays a pure load generator.
    let o = &args.observe;
    let observing = !o.watch.is_empty()
        || !o.fpm_status.is_empty()
        || !o.agent.is_empty()
        || o.observe_port.is_some();
    let observer = if observing {
        Some(crate::observe::Observer::start(
            o.to_config(cfg.addrs[0].port())?,
        )?)
    } else {
        None
    };
    let from = crate::store::unix_ms();
    let (summary, outcome) = execute(&cfg, &urls, args.quiet)?;
    let server = observer.map(|h| {
        let samples = h.samples_between(from, crate::store::unix_ms());
        let warnings = h.warnings();
        h.stop();
        (crate::observe::summarize(&samples), warnings)
    });
    print!("{}", terminal::summary(&summary, &outcome, &cfg));
    if let Some((obs, warnings)) = &server {
        print!("{}", terminal::server(obs));
        let (rate, users) = cfg.offered();
        let mode = if users.is_some() { "closed" } else { "open" };
        for f in crate::observe::findings(&[(rate.unwrap_or(users.unwrap_or(0) as f64), obs)], mode)
        {
            println!("  • {f}");
        }
        for w in warnings {
            println!("  ! {w}");
        }
    }
    if let Some(p) = &args.json {
        json::write_run(
            p,
            &summary,
            &outcome,
            &cfg,
            &urls,
            server.as_ref().map(|s| &s.0),
        )?;
    }
    if outcome.interrupted {
        return Ok(130);
    }
    if let Some(failed) = summary.nothing_answered(&cfg.addrs[0].to_string()) {
        return Err(Error::runtime(failed));
    }
    if let Some(slo) = slo {
        let failures = slo.failures(&summary);
        if failures.is_empty() {
            println!("\n  SLO '{}' met", slo.text);
        } else {
            println!("\n  SLO '{}' FAILED: {}", slo.text, failures.join("; "));
            return Ok(3);
        }
    }
    Ok(0)
}
