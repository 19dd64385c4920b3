//! `overload capacity`: the highest rate that meets an SLO, by geometric growth then bisection.
use super::load_args::{base_config, ConnArgs, OpenLoopArgs, RequestArgs};
use super::results;
use super::sweep::{parse_share, StepArgs};
use crate::analysis;
use crate::engine::Load;
use crate::plan::capacity::CapacitySearch;
use crate::report::progress::SweepProgress;
use crate::runner::Stepper;
use crate::units::parse_rate;
use crate::Error;
use clap::Args;
use std::time::Instant;

#[derive(Args, Debug, Clone)]
pub struct CapacityArgs {
    #[command(flatten)]
    pub request: RequestArgs,
    /// First rate probed (req/s); it doubles until a probe fails the SLO.
    #[arg(long, default_value = "50", value_parser = parse_rate)]
    pub start: f64,
    /// Highest rate probed (req/s).
    #[arg(long, default_value = "100000", value_parser = parse_rate)]
    pub max: f64,
    /// Stop bisecting when the bracket is narrower than this share of its low end.
    #[arg(long, default_value = "5%", value_parser = parse_share)]
    pub precision: f64,
    #[command(flatten)]
    pub open: OpenLoopArgs,
    #[command(flatten)]
    pub steps: StepArgs,
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub observe: crate::observe::ObserveArgs,
}

pub fn run(args: CapacityArgs) -> crate::Result<i32> {
    args.steps.validate()?;
    let slo = args
        .steps
        .slo()?
        .ok_or_else(|| Error::usage("capacity needs --slo, e.g. --slo 'p99<500ms,errors<1%'"))?;
    if args.max < args.start {
        return Err(Error::usage("--max is below --start"));
    }
    if args.precision <= 0.0 {
        return Err(Error::usage("--precision must be above 0%"));
    }
    args.open.validate()?;
    let arrival = args.open.arrival.into();
    let first = Load::Open {
        rate: args.start,
        arrival,
        max_connections: args.open.connections,
    };
    let (base, urls) = base_config(
        &args.request,
        &args.conn,
        first,
        Some(args.steps.step),
        None,
        args.steps.warmup,
    )?;
    let config = serde_json::json!({
        "start": args.start, "max": args.max, "precision": args.precision,
        "warmup_s": args.steps.warmup.as_secs_f64(), "step_s": args.steps.step.as_secs_f64(),
        "rest_s": args.steps.rest.as_secs_f64(), "keep_alive": base.keep_alive, "threads": base.threads,
        "connections": args.open.connections,
    });
    let mut writer = results::open(
        args.steps.out.as_deref(),
        args.steps.name.as_deref(),
        "capacity",
        "open",
        &urls,
        config,
        Some(&slo),
    )?;
    crate::signals::install();
    let dir = writer.dir().to_path_buf();
    if !args.steps.quiet {
        eprintln!(
            "overload capacity: SLO '{}', from {:.0} req/s, precision {:.0}%; results in {}",
            slo.text,
            args.start,
            args.precision * 100.0,
            dir.display()
        );
    }
    let started = Instant::now();
    let progress = SweepProgress::new(
        None,
        args.steps.warmup,
        args.steps.step,
        args.steps.rest,
        "req/s",
        args.steps.quiet,
    );
    let observe_cfg = args.observe.to_config(base.addrs[0].port())?;
    let mut stepper = Stepper::new(&base, "open", Some(&slo), &mut writer, progress);
    stepper.observer = Some(crate::observe::Observer::start(observe_cfg)?);
    let search = CapacitySearch::new(args.start, args.max, args.precision);
    let result = crate::runner::capacity::search(
        &mut stepper,
        search,
        arrival,
        args.open.connections,
        args.steps.rest,
    );
    let done = stepper.finish(&result, |(_, r)| r.clone())?;
    let (steps, notes, complete, reason) = (done.steps, done.notes, done.complete, done.reason);
    let (search, _) = result?;
    println!(
        "\ncapacity search ended: {reason} ({:.0}s)",
        started.elapsed().as_secs_f64()
    );
    // Every step run, in search order (a generator-bound failure shows twice: it was re-run).
    for (i, step) in steps.iter().enumerate() {
        let s = &step.summary;
        let gen = if step.flags.iter().any(|f| f == "generator-bound") {
            "  (generator-bound)"
        } else {
            ""
        };
        println!(
            "  probe {:>2}: {:>9.1} req/s  {}  p99 {:>8}  errors {:.2}%{gen}",
            i + 1,
            step.offered,
            if slo.holds(s) { "met   " } else { "FAILED" },
            crate::units::fmt_ms(s.response_time_ms.p99),
            analysis::Slo::measure(analysis::slo::Metric::Errors, s) * 100.0
        );
    }
    let code = match (search.lo, search.hi) {
        (Some(lo), hi) => {
            let bracket = hi.map_or(format!("[{lo:.1}, >{:.0}]", args.max), |h| {
                format!("[{lo:.1}, {h:.1})")
            });
            println!(
                "\ncapacity: {lo:.1} req/s under '{}' (bracket {bracket})",
                slo.text
            );
            let linear = CapacitySearch::linear_steps(args.start, lo, args.precision);
            println!(
                "  {} probes; a linear sweep from {:.0} req/s in steps of {:.0}% would need about {linear}",
                steps.len(),
                args.start,
                args.precision * 100.0
            );
            0
        }
        (None, _) => {
            println!(
                "\ncapacity: below {:.1} req/s: the first probe already failed '{}'",
                args.start, slo.text
            );
            3
        }
    };
    results::print_analysis(
        &analysis::analyze("open", &by_load(&steps), Some(&slo)),
        &notes,
    );
    super::report_hook::after_run(&dir)?;
    println!("\nresults: {}", dir.display());
    Ok(if !complete { 130 } else { code })
}

/// The probes in order of load (they were run in search order), as the analysis reads them.
fn by_load(steps: &[crate::store::StepRecord]) -> Vec<crate::store::StepRecord> {
    let mut v = steps.to_vec();
    v.sort_by(|a, b| a.offered.total_cmp(&b.offered));
    v
}
