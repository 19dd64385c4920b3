//! `overload demo`: the tool in one command, with nothing to install. It starts the embedded
//! target in-process with a known capacity and runs a short open-loop load against it.
use super::run::execute;
use crate::engine::{Arrival, EngineConfig, Load, Pick, Prepared};
use crate::plan::{RequestSpec, Url};
use crate::report::terminal;
use crate::target::{self, TargetConfig};
use clap::Args;
use std::time::Duration;

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Target workers (each request holds one for its whole service time).
    #[arg(long, default_value_t = 8)]
    pub workers: usize,
    /// Service time of each request, in ms (the target's /sleep?ms=).
    #[arg(long, default_value_t = 20)]
    pub service_ms: u64,
    /// Offered rate as a share of the target's capacity (workers / service time).
    #[arg(long, default_value_t = 0.75)]
    pub load: f64,
    /// Length of the run.
    #[arg(long, default_value = "5s", value_parser = crate::units::parse_duration)]
    pub duration: Duration,
}

pub fn run(args: DemoArgs) -> crate::Result<i32> {
    if args.workers == 0 || args.service_ms == 0 || !(args.load > 0.0 && args.load <= 10.0) {
        return Err(crate::Error::usage(
            "demo: --workers and --service-ms must be above 0, --load in (0, 10]",
        ));
    }
    let handle = target::start(TargetConfig {
        workers: Some(args.workers),
        ..TargetConfig::default()
    })?;
    let capacity = args.workers as f64 * 1000.0 / args.service_ms as f64;
    let rate = (capacity * args.load).max(1.0);
    let url = format!("{}/sleep?ms={}", handle.url(), args.service_ms);
    println!(
        "embedded target at {} with {} workers x {} ms per request: capacity {:.0} req/s",
        handle.url(),
        args.workers,
        args.service_ms,
        capacity
    );
    let spec = RequestSpec {
        method: "GET".into(),
        url: Url::parse(&url).map_err(crate::Error::runtime)?,
        headers: Vec::new(),
        body: None,
    };
    let cfg = EngineConfig {
        addrs: vec![handle.addr],
        requests: vec![Prepared {
            addr: 0,
            keep_alive: spec.render(false),
            close: spec.render(true),
            head_only: false,
        }],
        pick: Pick::Sequence,
        load: Load::Open {
            rate,
            arrival: Arrival::Constant,
            max_connections: 10_000,
        },
        duration: Some(args.duration),
        max_requests: None,
        warmup: Duration::from_secs(1),
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        keep_alive: true,
        calls_per_connection: None,
        timeout: Duration::from_secs(10),
        connect_timeout: Duration::from_secs(3),
        seed: 1,
    };
    let urls = [format!("GET {url}")];
    let (summary, outcome) = execute(&cfg, &urls, false)?;
    print!("{}", terminal::summary(&summary, &outcome, &cfg));
    println!(
        "\nAt {:.0}% of capacity the target answered {:.0} req/s with a median response time of {:.1} ms \
         (service time {} ms: the rest is waiting for a worker).",
        args.load * 100.0,
        summary.throughput,
        summary.response_time_ms.p50,
        args.service_ms
    );
    handle.stop();
    Ok(if outcome.interrupted { 130 } else { 0 })
}
