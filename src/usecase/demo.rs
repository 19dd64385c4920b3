//! Demo: the tool in one call, with nothing to install. It starts the embedded target
//! in-process with a known capacity (workers × service time), sweeps the rate past
//! saturation, stores the results and writes the report.
use super::config::{ConnConfig, OpenLoopConfig, RequestConfig};
use super::results;
use crate::analysis::{self, Analysis};
use crate::engine::{EngineConfig, Load, Prepared};
use crate::plan::{RequestSpec, Url};
use crate::report::progress::SweepProgress;
use crate::runner::{sweep::SweepPlan, Executor, Stepper};
use crate::target::{self, TargetConfig};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq)]
pub struct DemoConfig {
    /// Target workers (each request holds one for its whole service time).
    pub workers: usize,
    /// Service time of each request, in ms (the target's /sleep?ms=).
    pub service_ms: u64,
    /// Measured length of each step.
    pub step: Duration,
    /// Results folder; `None`: runs/<UTC time>-demo.
    pub out: Option<PathBuf>,
    pub quiet: bool,
}

impl Default for DemoConfig {
    fn default() -> Self {
        DemoConfig {
            workers: 8,
            service_ms: 20,
            step: Duration::from_secs(3),
            out: None,
            quiet: false,
        }
    }
}

/// The sweep's shape: 40% to 160% of the capacity in steps of 10%, short warm-ups and
/// rests, stopping 2 steps past saturation (the sweep's own default).
const TENTHS: std::ops::RangeInclusive<u32> = 4..=16;
const WARMUP: Duration = Duration::from_secs(1);
const REST: Duration = Duration::from_millis(500);

/// The target as started, before the sweep.
pub struct DemoTarget {
    pub url: String,
    pub workers: usize,
    pub service_ms: u64,
    /// Theoretical capacity, req/s.
    pub capacity: f64,
}

/// What is printed before the sweep starts.
impl fmt::Display for DemoTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "overload demo: the embedded target at {} has {} workers x {} ms per request: capacity {:.0} req/s.",
            self.url, self.workers, self.service_ms, self.capacity
        )?;
        writeln!(f, "Sweeping the request rate from 40% to 160% of that, in steps of 10%, until 2 steps past saturation.\n")
    }
}

pub struct DemoOutcome {
    pub capacity: f64,
    pub dir: PathBuf,
    pub report: PathBuf,
    pub notes: Vec<String>,
    pub complete: bool,
    pub analysis: Analysis,
}

impl DemoOutcome {
    pub fn exit_code(&self) -> i32 {
        if self.complete {
            0
        } else {
            130
        }
    }
}

impl fmt::Display for DemoOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let capacity = self.capacity;
        match &self.analysis.saturation {
            Some(s) => writeln!(
                f,
                "\n{} (the target's theoretical capacity: {capacity:.0} req/s)",
                s.describe("req/s")
            )?,
            None => writeln!(
                f,
                "\nno saturation found up to {:.0} req/s (the target's theoretical capacity: {capacity:.0})",
                self.analysis.peak_throughput
            )?,
        }
        f.write_str(&results::analysis_text(&self.analysis, &self.notes))?;
        writeln!(f, "report:  {}", crate::fsutil::shown(&self.report))?;
        writeln!(
            f,
            "\nresults: {}  (overload report {} regenerates the report)",
            crate::fsutil::shown(&self.dir),
            crate::fsutil::shown(&self.dir)
        )
    }
}

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
        ramp: None,
        max_sessions: 10_000,
        ok_status: Default::default(),
        protocol_choice: Default::default(),
    };
    let urls = [format!("GET {url}")];
    let config = serde_json::json!({ "demo": true, "workers": cfg.workers, "service_ms": cfg.service_ms, "capacity": capacity });
    let mut writer = results::open(
        cfg.out.as_deref(),
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
        WARMUP,
        cfg.step,
        REST,
        "req/s",
        cfg.quiet,
    );
    let sweep_defaults = super::sweep::SweepConfig::default();
    let plan = SweepPlan {
        loads,
        past_saturation: sweep_defaults.past_saturation,
        max_errors: Some(sweep_defaults.max_errors),
        max_p99_ms: None,
        rest: REST,
    };
    let mut stepper = Stepper::new(&base, "open", None, &mut writer, progress, exec);
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
    stepper.observer = Some(crate::observe::Observer::start(observe_cfg)?);
    let result = crate::runner::sweep::sweep(&mut stepper, &plan);
    handle.stop();
    let done = stepper.finish(&result, String::clone)?;
    result?;
    let mut analysis = analysis::analyze("open", &done.steps, None);
    // What the target's side showed (its pool, the host), as the report says it.
    let observed: Vec<(f64, &crate::observe::StepObservation)> = done
        .steps
        .iter()
        .filter_map(|s| s.server.as_ref().map(|o| (s.offered, o)))
        .collect();
    analysis
        .findings
        .extend(crate::observe::findings(&observed, "open"));
    let report = results::write_report(&dir)?;
    Ok(DemoOutcome {
        capacity,
        dir,
        report,
        notes: done.notes,
        complete: done.complete,
        analysis,
    })
}
