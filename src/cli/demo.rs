//! `overload demo`: the tool in one command, with nothing to install. It starts the embedded
//! target in-process with a known capacity (workers × service time), sweeps the rate past
//! saturation, stores the results, writes the report and says where saturation was found.
use super::results;
use crate::analysis;
use crate::engine::{Arrival, EngineConfig, Load, Pick, Prepared};
use crate::plan::{RequestSpec, Url};
use crate::report::progress::SweepProgress;
use crate::runner::{sweep::SweepPlan, Stepper};
use crate::target::{self, TargetConfig};
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Target workers (each request holds one for its whole service time).
    #[arg(long, default_value_t = 8)]
    pub workers: usize,
    /// Service time of each request, in ms (the target's /sleep?ms=).
    #[arg(long, default_value_t = 20)]
    pub service_ms: u64,
    /// Measured length of each step.
    #[arg(long, default_value = "3s", value_parser = crate::units::parse_duration)]
    pub step: Duration,
    /// Results folder [default: runs/<UTC time>-demo].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// No progress bar and no per-step lines.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

pub fn run(args: DemoArgs) -> crate::Result<i32> {
    if args.workers == 0
        || args.workers > 10_000
        || args.service_ms == 0
        || args.service_ms > 10_000
    {
        return Err(crate::Error::usage(
            "demo: --workers must be 1..10000 and --service-ms 1..10000",
        ));
    }
    if args.step.is_zero() {
        return Err(crate::Error::usage("demo: --step must be above zero"));
    }
    let handle = target::start(TargetConfig {
        workers: Some(args.workers),
        ..TargetConfig::default()
    })?;
    let capacity = args.workers as f64 * 1000.0 / args.service_ms as f64;
    let url = format!("{}/sleep?ms={}", handle.url(), args.service_ms);
    println!(
        "overload demo: the embedded target at {} has {} workers x {} ms per request: capacity {:.0} req/s.",
        handle.url(),
        args.workers,
        args.service_ms,
        capacity
    );
    println!("Sweeping the request rate from 40% to 160% of that, in steps of 10%, until 2 steps past saturation.\n");
    let spec = RequestSpec {
        method: "GET".into(),
        url: Url::parse(&url).map_err(crate::Error::runtime)?,
        headers: Vec::new(),
        body: None,
    };
    let warmup = Duration::from_secs(1);
    let rest = Duration::from_millis(500);
    let loads: Vec<Load> = (4..=16)
        .map(|tenth| Load::Open {
            rate: capacity * tenth as f64 / 10.0,
            arrival: Arrival::Constant,
            max_connections: 10_000,
        })
        .collect();
    let base = EngineConfig {
        addrs: vec![handle.addr],
        requests: vec![Prepared {
            addr: 0,
            keep_alive: spec.render(false),
            close: spec.render(true),
            head_only: false,
        }],
        pick: Pick::Sequence,
        load: loads[0],
        duration: Some(args.step),
        max_requests: None,
        warmup,
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        keep_alive: true,
        calls_per_connection: None,
        timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(3),
        seed: 1,
        pacing_slack: Duration::from_millis(1),
    };
    let urls = [format!("GET {url}")];
    let config = serde_json::json!({ "demo": true, "workers": args.workers, "service_ms": args.service_ms, "capacity": capacity });
    let mut writer = results::open(
        args.out.as_deref(),
        Some("demo"),
        "sweep",
        "open",
        &urls,
        config,
        None,
    )?;
    let dir = writer.dir().to_path_buf();
    crate::signals::install();
    let progress = SweepProgress::new(
        Some(loads.len()),
        warmup,
        args.step,
        rest,
        "req/s",
        args.quiet,
    );
    let plan = SweepPlan {
        loads,
        past_saturation: 2,
        max_errors: Some(0.2),
        max_p99_ms: None,
        rest,
    };
    let mut stepper = Stepper::new(&base, "open", None, &mut writer, progress);
    // Watch the target's port and this process (the target runs in it) beside the load.
    let observe_cfg = crate::observe::ObserveConfig {
        port: Some(handle.addr.port()),
        groups: vec![crate::observe::GroupSpec::parse(&format!(
            "target=pid:{}",
            std::process::id()
        ))
        .map_err(crate::Error::runtime)?],
        ..crate::observe::ObserveConfig::default()
    };
    stepper.observer = Some(crate::observe::Observer::start(observe_cfg)?);
    let result = crate::runner::sweep::sweep(&mut stepper, &plan);
    handle.stop();
    let done = stepper.finish(&result, String::clone)?;
    let (steps, notes, complete) = (done.steps, done.notes, done.complete);
    result?;
    let a = analysis::analyze("open", &steps, None);
    match &a.saturation {
        Some(s) => println!(
            "\nsaturation at ~{:.0} req/s (the target's theoretical capacity: {capacity:.0}); first saturated step: {:.0} req/s offered",
            s.peak_throughput, s.offered
        ),
        None => println!("\nno saturation found up to {:.0} req/s (the target's theoretical capacity: {capacity:.0})", a.peak_throughput),
    }
    results::print_analysis(&a, &notes);
    super::report_hook::after_run(&dir)?;
    println!(
        "\nresults: {}  (overload report {} regenerates the report)",
        dir.display(),
        dir.display()
    );
    Ok(if complete { 0 } else { 130 })
}
