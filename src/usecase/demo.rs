//! Demo: the tool in one call, with nothing to install. It starts the embedded target
//! in-process with a known capacity (workers × service time), sweeps the rate past
//! saturation, stores the results and writes the report.
use super::config::{ConnConfig, OpenLoopConfig, Output, RequestConfig, StepTiming};
use super::demo_config::{expected_time, rates, DemoConfig, REST, WARMUP};
use super::engine_config::base_config;
use super::lifecycle::{Lifecycle, Pace};
use super::outcome::{DemoOutcome, DemoTarget};
use crate::engine::Load;
use crate::runner::{sweep::SweepPlan, Executor};
use crate::target::{self, TargetConfig};

/// Starts the target, calls `on_ready` with it, sweeps it on `exec`, stops it.
pub fn run(
    cfg: &DemoConfig,
    exec: &mut dyn Executor,
    on_ready: impl FnOnce(&DemoTarget),
) -> crate::Result<DemoOutcome> {
    cfg.validate()?;
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
        time: expected_time(cfg),
    });
    let open = OpenLoopConfig::default();
    let loads: Vec<Load> = rates(capacity).into_iter().map(|r| open.load(r)).collect();
    let request = RequestConfig {
        urls: vec![url],
        ..RequestConfig::default()
    };
    let conn = ConnConfig::default();
    let (base, urls) = base_config(&request, &conn, loads[0], Some(cfg.step), None, WARMUP)?;
    let config = serde_json::json!({ "demo": true, "workers": cfg.workers, "service_ms": cfg.service_ms, "capacity": capacity });
    let sweep = super::SweepConfig::default();
    let plan = SweepPlan {
        loads,
        past_saturation: sweep.past_saturation,
        max_errors: Some(sweep.max_errors),
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
        name: cfg.output.name.clone().or(Some("demo".into())),
        ..cfg.output.clone()
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
