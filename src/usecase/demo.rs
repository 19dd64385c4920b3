//! Demo: the tool in one call, with nothing to install. It starts the embedded target
//! in-process with a known capacity (workers × service time), sweeps the rate past
//! saturation, stores the results and writes the report.
use super::config::{ConnConfig, OpenLoopConfig, RequestConfig};
use super::results;
use crate::analysis::{self, Analysis};
use crate::engine::{EngineConfig, Load, Protocol, Reuse};
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
pub const WARMUP: Duration = Duration::from_secs(1);
pub const REST: Duration = Duration::from_millis(500);

/// The rates the demo steps through, req/s: 40% to 160% of the capacity in steps of 10%.
pub fn rates(capacity: f64) -> Vec<f64> {
    TENTHS
        .map(|tenth| capacity * f64::from(tenth) / 10.0)
        .collect()
}

/// How long the demo takes, from its plan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DemoTime {
    /// Steps run when the target saturates where it should: at its capacity.
    pub steps: usize,
    /// Their time: each a warm-up and a measured step, the rests between, and for each step
    /// past the capacity the time the queue it left at the target takes to drain once its
    /// time is up ((offered / capacity − 1) × (warm-up + step)).
    pub typical: Duration,
    /// The same when no step saturates and every step runs.
    pub longest: Duration,
}

pub fn expected_time(cfg: &DemoConfig) -> DemoTime {
    let capacity = cfg.workers as f64 * 1000.0 / cfg.service_ms as f64;
    let rates = rates(capacity);
    let past = super::sweep::SweepConfig::default().past_saturation;
    let knee = rates
        .iter()
        .position(|&r| r >= capacity * (1.0 - 1e-9))
        .unwrap_or(rates.len() - 1);
    let steps = (knee + 1 + past).min(rates.len());
    let per_step = (WARMUP + cfg.step).as_secs_f64();
    let time = |rates: &[f64]| {
        let drain: f64 = rates
            .iter()
            .map(|r| (r / capacity - 1.0).max(0.0) * per_step)
            .sum();
        let n = rates.len() as f64;
        Duration::from_secs_f64(n * per_step + (n - 1.0) * REST.as_secs_f64() + drain)
    };
    DemoTime {
        steps,
        typical: time(&rates[..steps]),
        longest: time(&rates),
    }
}

/// A time as the demo announces it: rounded up to 5 s ("about 45 s"), the start and the
/// report on top of the plan's time.
pub fn about(d: Duration) -> String {
    let s = d.as_secs_f64();
    let rounded = ((s / 5.0).ceil() * 5.0).max(5.0);
    format!("about {rounded:.0} s")
}

/// The line `demo --help` ends with: what the defaults take.
pub fn help_note() -> String {
    let cfg = DemoConfig::default();
    let t = expected_time(&cfg);
    format!(
        "With the defaults it takes {} ({} steps of {} warm-up + {}, {} apart; {} if no step \
         saturated); --step changes it.",
        about(t.typical),
        t.steps,
        crate::units::fmt_duration(WARMUP),
        crate::units::fmt_duration(cfg.step),
        crate::units::fmt_duration(REST),
        about(t.longest),
    )
}

/// The target as started, before the sweep.
pub struct DemoTarget {
    pub url: String,
    pub workers: usize,
    pub service_ms: u64,
    /// Theoretical capacity, req/s.
    pub capacity: f64,
    /// How long the sweep should take.
    pub time: DemoTime,
}

/// What is printed before the sweep starts.
impl fmt::Display for DemoTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "overload demo: the embedded target at {} has {} workers x {} ms per request: capacity {:.0} req/s.",
            self.url, self.workers, self.service_ms, self.capacity
        )?;
        writeln!(
            f,
            "Sweeping the request rate from 40% to 160% of that, in steps of 10%, until 2 steps past saturation: {} ({} steps).\n",
            about(self.time.typical),
            self.time.steps
        )
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
        time: expected_time(cfg),
    });
    let spec = RequestSpec {
        method: "GET".into(),
        url: Url::parse(&url).map_err(crate::Error::runtime)?,
        headers: Vec::new(),
        body: None,
    };
    let open = OpenLoopConfig::default();
    let loads: Vec<Load> = rates(capacity).into_iter().map(|r| open.load(r)).collect();
    let conn = ConnConfig::default();
    let base = EngineConfig {
        addrs: vec![handle.addr],
        requests: std::sync::Arc::new(vec![Protocol::Http1.prepare(
            &spec,
            Reuse {
                keep_alive: conn.keep_alive,
                calls_per_connection: conn.calls_per_connection,
            },
            0,
            0,
        )]),
        pick: RequestConfig::default().pick,
        load: loads[0],
        duration: Some(cfg.step),
        warmup: WARMUP,
        threads: conn.threads(),
        keep_alive: conn.keep_alive,
        calls_per_connection: conn.calls_per_connection,
        timeout: conn.timeout,
        connect_timeout: conn.connect_timeout,
        seed: conn.seed,
        pacing_slack: conn.pacing_slack,
        max_sessions: open.max_sessions,
        ..EngineConfig::default()
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
