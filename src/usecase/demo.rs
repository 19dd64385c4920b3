//! Demo: the tool in one call, with nothing to install. It starts the embedded target
//! in-process with a known capacity (workers × service time), sweeps the rate past
//! saturation, stores the results and writes the report.
use super::config::{ConnConfig, OpenLoopConfig, Output, RequestConfig, StepTiming};
use super::demo_config::DemoConfig;
use super::lifecycle::{Lifecycle, Pace};
use super::outcome::{DemoOutcome, DemoTarget};
use crate::engine::{EngineConfig, Load, Prepared};
use crate::plan::{RequestSpec, Url};
use crate::runner::{sweep::SweepPlan, Executor};
use crate::target::{self, TargetConfig};
use std::time::Duration;

/// The sweep's shape: 40% to 160% of the capacity in steps of 10%, short warm-ups and
/// rests, stopping 2 steps past saturation (the sweep's own default).
const TENTHS: std::ops::RangeInclusive<u32> = 4..=16;
const WARMUP: Duration = Duration::from_secs(1);
const REST: Duration = Duration::from_millis(500);

/// Starts the target, calls `on_ready` with it, sweeps it on `exec`, stops it.
pub fn run(
    cfg: &DemoConfig,
    exec: &mut dyn Executor,
    on_ready: impl FnOnce(&DemoTarget),
) -> crate::Result<DemoOutcome> {
    if cfg.workers == 0 || cfg.workers > 10_000 || cfg.service_ms == 0 || cfg.service_ms > 10_000 {
        return Err(crate::Error::usage(
            "demo: --workers must be 1..10000 and --service-ms 1..10000",
        ));
    }
    if cfg.step.is_zero() {
        return Err(crate::Error::usage("demo: --step must be above zero"));
    }
    let handle = target::start(TargetConfig {
        workers: Some(cfg.workers),
        ..TargetConfig::default()
    })?;
    let capacity = cfg.workers as f64 * 1000.0 / cfg.service_ms as f64;
    let url = format!("{}/sleep?ms={}", handle.url(), cfg.service_ms);
    on_ready(&DemoTarget {
        url: handle.url(),
        workers: cfg.workers,
        service_ms: cfg.service_ms,
        capacity,
    });
    let spec = RequestSpec {
        method: "GET".into(),
        url: Url::parse(&url).map_err(crate::Error::runtime)?,
        headers: Vec::new(),
        body: None,
    };
    let open = OpenLoopConfig::default();
    let loads: Vec<Load> = TENTHS
        .map(|tenth| open.load(capacity * f64::from(tenth) / 10.0))
        .collect();
    let conn = ConnConfig::default();
    let base = EngineConfig {
        addrs: vec![handle.addr],
        requests: std::sync::Arc::new(vec![Prepared {
            addr: 0,
            keep_alive: spec.render(false),
            close: spec.render(true),
            head_only: false,
            h2_block: Vec::new(),
            body: Vec::new(),
            name: 0,
        }]),
        pick: RequestConfig::default().pick,
        load: loads[0],
        duration: Some(cfg.step),
        max_requests: None,
        warmup: WARMUP,
        threads: conn.threads(),
        keep_alive: conn.keep_alive,
        calls_per_connection: conn.calls_per_connection,
        timeout: conn.timeout,
        connect_timeout: conn.connect_timeout,
        seed: conn.seed,
        pacing_slack: conn.pacing_slack,
        segment: crate::plan::Segment::WHOLE,
        tls: None,
        http2: None,
        scenario: None,
        names: Vec::new(),
        weights: Default::default(),
        replay: None,
        max_sessions: 10_000,
        ok_status: Default::default(),
    };
    let urls = [format!("GET {url}")];
    let config = serde_json::json!({ "demo": true, "workers": cfg.workers, "service_ms": cfg.service_ms, "capacity": capacity });
    let sweep_defaults = super::SweepConfig::default();
    let plan = SweepPlan {
        loads,
        past_saturation: sweep_defaults.past_saturation,
        max_errors: Some(sweep_defaults.max_errors),
        max_p99_ms: None,
        rest: REST,
    };
    // Watch the target's port, this process (the target runs in it) and the target's own
    // worker pool (its FPM-style status page) beside the load: the findings then name the
    // busy workers and their queue, the limit this demo is built around.
    let pool = crate::observe::FpmSource::parse(&format!("{}/pool-status", handle.url()))
        .map_err(crate::Error::runtime)?;
    let observe_cfg = crate::observe::ObserveConfig {
        port: Some(handle.addr.port()),
        fpm: vec![pool],
        groups: vec![crate::observe::GroupSpec::parse(&format!(
            "target=pid:{}",
            std::process::id()
        ))
        .map_err(crate::Error::runtime)?],
        ..crate::observe::ObserveConfig::default()
    };
    let output = Output {
        out: cfg.out.clone(),
        name: Some("demo".into()),
        quiet: cfg.quiet,
        ..Output::default()
    };
    let ended = Lifecycle {
        kind: "sweep",
        mode: "open",
        base: &base,
        urls: &urls,
        config,
        slo: None,
        output: &output,
        folder: true,
        observe: Some(observe_cfg),
        segment: Default::default(),
        banner: None,
        pace: Pace::Stepped {
            planned: Some(plan.loads.len()),
            timing: StepTiming {
                warmup: WARMUP,
                step: cfg.step,
                rest: REST,
            },
        },
        before_load: None,
    }
    .run(
        exec,
        |s| crate::runner::sweep::sweep(s, &plan),
        String::clone,
    );
    handle.stop();
    let ended = ended?;
    let stored = ended.stored.expect("the demo writes its folder");
    Ok(DemoOutcome {
        capacity,
        dir: stored.dir,
        report: stored.report,
        notes: ended.finished.notes,
        complete: ended.finished.complete,
        analysis: stored.analysis,
    })
}
