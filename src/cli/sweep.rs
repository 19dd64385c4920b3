//! `overload sweep`: load levels one after another (S1's stepped rates, S2/S5's concurrency
//! sweeps), each stored when it ends; then the saturation point, capacity and findings.
use super::load_args::{base_config, parse_think, ConnArgs, OpenLoopArgs, RequestArgs};
use super::results;
use crate::analysis::{self, slo, Slo};
use crate::engine::Load;
use crate::plan::steps::{parse_levels, parse_users};
use crate::report::progress::SweepProgress;
use crate::runner::{sweep::SweepPlan, Stepper};
use crate::units::parse_duration;
use crate::Error;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// Options of every stepped command (sweep, capacity): timing, stop rules, SLO, output.
#[derive(Args, Debug, Clone)]
pub struct StepArgs {
    /// Warm-up of each step (sent, not counted).
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub warmup: Duration,
    /// Measured length of each step (S1's TEST_DURATION).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub step: Duration,
    /// Pause between steps, so the server drains (S1's WAIT).
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub rest: Duration,
    /// Service-level objective, e.g. 'p99<500ms,errors<1%' (mean/p50/p90/p99/p999/max, errors, goodput).
    #[arg(long)]
    pub slo: Option<String>,
    /// Results folder [default: runs/<UTC time>-<name>].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Name of the run in reports and comparisons [default: from the URL].
    #[arg(long)]
    pub name: Option<String>,
    /// No progress bar and no per-step lines.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

impl StepArgs {
    pub fn slo(&self) -> crate::Result<Option<Slo>> {
        self.slo
            .as_deref()
            .map(slo::parse)
            .transpose()
            .map_err(Error::usage)
    }

    pub fn validate(&self) -> crate::Result<()> {
        if self.step.is_zero() {
            return Err(Error::usage("--step must be above zero"));
        }
        Ok(())
    }
}

#[derive(Args, Debug, Clone)]
pub struct SweepArgs {
    #[command(flatten)]
    pub request: RequestArgs,
    /// Open loop: rates to step through, start:stop:step or a list (e.g. 100:3000:100).
    #[arg(long, conflicts_with = "users", required_unless_present = "users")]
    pub rates: Option<String>,
    /// Closed loop: user counts to step through, start:stop:step or a list (e.g. 1:200:10).
    #[arg(long)]
    pub users: Option<String>,
    #[command(flatten)]
    pub open: OpenLoopArgs,
    /// Closed loop: think time between a user's answer and its next request, `D` or `LO..HI`.
    #[arg(long, value_parser = parse_think, value_name = "DURATION[..DURATION]")]
    pub think: Option<(Duration, Duration)>,
    /// Steps to run after the saturation point.
    #[arg(long, default_value_t = 2)]
    pub past_saturation: usize,
    /// Stop when a step fails more than this share of requests (e.g. 20%).
    #[arg(long, default_value = "20%", value_parser = parse_share)]
    pub max_errors: f64,
    /// Stop when a step's response-time p99 exceeds this.
    #[arg(long, value_parser = parse_duration)]
    pub max_p99: Option<Duration>,
    #[command(flatten)]
    pub steps: StepArgs,
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub observe: crate::observe::ObserveArgs,
}

/// Parses `20%` or `0.2`.
pub fn parse_share(s: &str) -> Result<f64, String> {
    let v = match s.trim().strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => s.trim().parse::<f64>(),
    }
    .map_err(|_| format!("'{s}' is not a percentage (e.g. 20%)"))?;
    if !(0.0..=1.0).contains(&v) {
        return Err(format!("'{s}' must be between 0% and 100%"));
    }
    Ok(v)
}

pub fn run(args: SweepArgs) -> crate::Result<i32> {
    args.steps.validate()?;
    let slo = args.steps.slo()?;
    let (mode, loads, unit): (&'static str, Vec<Load>, &'static str) =
        match (&args.rates, &args.users) {
            (Some(r), None) => {
                if args.think.is_some() {
                    return Err(Error::usage(
                        "--think applies to the closed loop (--users), not to --rates",
                    ));
                }
                args.open.validate()?;
                let levels = parse_levels(r, "--rates").map_err(Error::usage)?;
                let arrival = args.open.arrival.into();
                let loads = levels
                    .into_iter()
                    .map(|rate| Load::Open {
                        rate,
                        arrival,
                        max_connections: args.open.connections,
                    })
                    .collect();
                ("open", loads, "req/s")
            }
            (None, Some(u)) => {
                let think = args.think.unwrap_or((Duration::ZERO, Duration::ZERO));
                let loads = parse_users(u)
                    .map_err(Error::usage)?
                    .into_iter()
                    .map(|users| Load::Closed { users, think })
                    .collect();
                ("closed", loads, "users")
            }
            _ => {
                return Err(Error::usage(
                    "give --rates (open loop) or --users (closed loop)",
                ))
            }
        };
    let (base, urls) = base_config(
        &args.request,
        &args.conn,
        loads[0],
        Some(args.steps.step),
        None,
        args.steps.warmup,
    )?;
    let config = serde_json::json!({
        "levels": loads.iter().map(crate::runner::step::offered_of).collect::<Vec<_>>(),
        "warmup_s": args.steps.warmup.as_secs_f64(),
        "step_s": args.steps.step.as_secs_f64(),
        "rest_s": args.steps.rest.as_secs_f64(),
        "keep_alive": base.keep_alive,
        "threads": base.threads,
        "timeout_s": base.timeout.as_secs_f64(),
        "think_s": args.think.map(|t| [t.0.as_secs_f64(), t.1.as_secs_f64()]),
        "connections": args.open.connections,
        "past_saturation": args.past_saturation,
        "max_errors": args.max_errors,
    });
    let mut writer = results::open(
        args.steps.out.as_deref(),
        args.steps.name.as_deref(),
        "sweep",
        mode,
        &urls,
        config,
        slo.as_ref(),
    )?;
    crate::signals::install();
    let dir = writer.dir().to_path_buf();
    if !args.steps.quiet {
        eprintln!(
            "overload sweep: {} steps of {} (+{} warm-up, {} rest), {mode} loop; results in {}",
            loads.len(),
            crate::units::fmt_duration(args.steps.step),
            crate::units::fmt_duration(args.steps.warmup),
            crate::units::fmt_duration(args.steps.rest),
            dir.display()
        );
    }
    let progress = SweepProgress::new(
        Some(loads.len()),
        args.steps.warmup,
        args.steps.step,
        args.steps.rest,
        unit,
        args.steps.quiet,
    );
    let plan = SweepPlan {
        loads,
        past_saturation: args.past_saturation,
        max_errors: Some(args.max_errors),
        max_p99_ms: args.max_p99.map(|d| d.as_secs_f64() * 1e3),
        rest: args.steps.rest,
    };
    let observe_cfg = args.observe.to_config(base.addrs[0].port())?;
    let mut stepper = Stepper::new(&base, mode, slo.as_ref(), &mut writer, progress);
    stepper.observer = Some(crate::observe::Observer::start(observe_cfg)?);
    let result = crate::runner::sweep::sweep(&mut stepper, &plan);
    let done = stepper.finish(&result, String::clone)?;
    let (steps, notes, complete, reason) = (done.steps, done.notes, done.complete, done.reason);
    result?;
    let analysis = analysis::analyze(mode, &steps, slo.as_ref());
    println!("sweep ended: {reason}");
    results::print_analysis(&analysis, &notes);
    super::report_hook::after_run(&dir)?;
    println!("\nresults: {}", dir.display());
    Ok(if !complete {
        130
    } else if slo.is_some() && steps.iter().any(|s| s.slo_ok == Some(false)) {
        3
    } else {
        0
    })
}
