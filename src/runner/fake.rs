//! A scripted [`Executor`] for the unit tests (hyperfine's MockExecutor): each step's result
//! is computed from its load by a script (throughput, p99, errors, generator CPU), rests are
//! recorded instead of slept, and an interruption can be asked for at a given step. No
//! sockets, no sleeps, no clock: the runner's decisions are tested on exactly these numbers.
use super::executor::Executor;
use super::step::{offered_of, RunClock, StepResult};
use crate::analysis::Slo;
use crate::engine::{Control, EngineConfig, Load};
use crate::metrics::LatencyStats;
use crate::metrics::Summary;
use crate::store::{GeneratorStats, RunInfo, StepRecord, Writer};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// What a scripted step measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    /// Responses per second.
    pub throughput: f64,
    pub p99_ms: f64,
    /// Share of requests that failed.
    pub errors: f64,
    /// Generator CPU, % of its threads (90 and above is generator-bound).
    pub generator_cpu_pct: f64,
}

impl Shape {
    /// A healthy step: everything offered is answered in `p99_ms`.
    pub fn ok(offered: f64, p99_ms: f64) -> Shape {
        Shape {
            throughput: offered,
            p99_ms,
            errors: 0.0,
            generator_cpu_pct: 10.0,
        }
    }
}

/// A server that answers `capacity` responses/s in 5 ms; above it, p99 grows with the
/// overload and a share of requests fails past 1.5× capacity.
pub fn server(capacity: f64) -> impl FnMut(usize, f64) -> Shape {
    move |_, offered| {
        if offered <= capacity {
            Shape::ok(offered, 5.0)
        } else {
            let over = offered / capacity;
            Shape {
                throughput: capacity,
                p99_ms: 5.0 + 1000.0 * (over - 1.0),
                errors: if over > 1.5 { (over - 1.5) / over } else { 0.0 },
                generator_cpu_pct: 10.0,
            }
        }
    }
}

pub struct Scripted<F: FnMut(usize, f64) -> Shape> {
    /// Called with the number of steps run so far and the offered load.
    pub script: F,
    /// The offered load of every step run, in order.
    pub offered: Vec<f64>,
    /// Every rest asked for.
    pub rests: Vec<Duration>,
    /// SIGINT arrives during the step with this index (0-based, counting every step run).
    pub interrupt_during: Option<usize>,
    /// SIGINT arrives during the rest with this index (0-based).
    pub interrupt_in_rest: Option<usize>,
    /// The step with this index fails (an engine error).
    pub fail_at: Option<usize>,
    interrupted: bool,
}

impl<F: FnMut(usize, f64) -> Shape> Scripted<F> {
    pub fn new(script: F) -> Self {
        Scripted {
            script,
            offered: Vec::new(),
            rests: Vec::new(),
            interrupt_during: None,
            interrupt_in_rest: None,
            fail_at: None,
            interrupted: false,
        }
    }
}

impl<F: FnMut(usize, f64) -> Shape> Executor for Scripted<F> {
    fn run_step(
        &mut self,
        base: &EngineConfig,
        load: Load,
        index: usize,
        _clock: &RunClock,
        slo: Option<&Slo>,
        on_tick: &mut dyn FnMut(&Control, Duration),
    ) -> crate::Result<StepResult> {
        let n = self.offered.len();
        let offered = offered_of(&load);
        self.offered.push(offered);
        if self.fail_at == Some(n) {
            return Err(crate::Error::runtime(format!(
                "scripted failure at step {n}"
            )));
        }
        let shape = (self.script)(n, offered);
        // One tick, as the engine gives once a second; a stop asked there (the live view's
        // `n`) ends the step as an interruption does, without SIGINT.
        let ctl = Control::new(1);
        on_tick(&ctl, Duration::from_secs(1));
        let stopped = ctl.stop.load(std::sync::atomic::Ordering::Relaxed);
        let signalled = self.interrupt_during == Some(n);
        self.interrupted |= signalled;
        let interrupted = signalled || stopped;
        let secs = base.duration.map_or(1.0, |d| d.as_secs_f64());
        let mut record = record(index, &load, shape, secs);
        record.slo_ok = slo.map(|s| s.holds(&record.summary));
        if interrupted {
            record.flags.push("interrupted".into());
        }
        Ok(StepResult {
            record,
            series: Vec::new(),
            interrupted,
            notes: Vec::new(),
            engine: None,
            events: Vec::new(),
        })
    }

    fn rest(&mut self, d: Duration) {
        self.interrupted |= self.interrupt_in_rest == Some(self.rests.len());
        self.rests.push(d);
    }

    fn interrupted(&self) -> bool {
        self.interrupted
    }
}

/// A step record with the shape's numbers (response-time stats all at p99, so percentiles
/// agree with each other).
pub fn record(index: usize, load: &Load, s: Shape, secs: f64) -> StepRecord {
    let offered = offered_of(load);
    let responses = (s.throughput * secs).round() as u64;
    let requests = ((responses as f64) / (1.0 - s.errors).max(1e-9)).round() as u64;
    let error_count = requests - responses.min(requests);
    let lat = |ms: f64| LatencyStats {
        mean: ms,
        p50: ms,
        p90: ms,
        p95: ms,
        p99: ms,
        p999: ms,
        max: ms,
        count: responses,
    };
    let (mode, offered_rate, users) = match load {
        Load::Open { rate, .. } => ("open", Some(*rate), None),
        Load::Closed { users, .. } => ("closed", None, Some(*users as u64)),
    };
    let mut errors = BTreeMap::new();
    if error_count > 0 {
        errors.insert("timeout".to_string(), error_count);
    }
    StepRecord {
        step: index,
        offered,
        start_unix_ms: 0,
        end_unix_ms: 0,
        start_s: 0.0,
        end_s: secs,
        think_ms: 0.0,
        summary: Summary {
            mode: mode.into(),
            offered_rate,
            users,
            throughput: s.throughput,
            goodput: s.throughput,
            requests,
            sent: requests,
            responses,
            unsent: 0,
            retries: 0,
            interrupted_requests: 0,
            protocols: Default::default(),
            duration_s: secs,
            connections_opened: 1,
            connects: None,
            protocol: None,
            errors,
            error_count,
            error_ratio: if requests > 0 {
                error_count as f64 / requests as f64
            } else {
                0.0
            },
            statuses: BTreeMap::from([("200".to_string(), responses)]),
            ok_status: Default::default(),
            bytes_in: 0,
            bytes_out: 0,
            bytes_in_per_s: 0.0,
            response_time_ms: lat(s.p99_ms),
            service_time_ms: lat(s.p99_ms),
            send_lag_ms: LatencyStats::default(),
            connect_time_ms: LatencyStats::default(),
            first_byte_ms: LatencyStats::default(),
            tls: None,
            quic: None,
            names: Vec::new(),
            sessions: None,
        },
        generator: GeneratorStats {
            io: None,
            cpu_pct: s.generator_cpu_pct,
            cpu_us_per_response: 0.0,
            threads: 1,
            pool_waits: 0,
        },
        response_time_hist: String::new(),
        hists: None,
        flags: Vec::new(),
        slo_ok: None,
        server: None,
    }
}

/// An engine configuration that is never sent anywhere (the fake ignores its addresses).
pub fn base(load: Load) -> EngineConfig {
    EngineConfig {
        addrs: vec!["127.0.0.1:9".parse().expect("a socket address")],
        load,
        duration: Some(Duration::from_secs(10)),
        timeout: Duration::from_secs(1),
        connect_timeout: Duration::from_secs(1),
        ..EngineConfig::default()
    }
}

/// A results folder in `dir`.
pub fn writer(dir: &Path, mode: &str) -> Writer {
    let info = RunInfo {
        format_version: crate::store::FORMAT_VERSION,
        overload_version: "test".into(),
        name: "t".into(),
        kind: "sweep".into(),
        command_line: Vec::new(),
        mode: mode.into(),
        urls: Vec::new(),
        config: serde_json::Value::Null,
        host: crate::store::host::host_info(),
        started_unix_ms: 0,
        finished_unix_ms: None,
        complete: false,
        stop_reason: None,
        slo: None,
    };
    Writer::create(dir, info).expect("a results folder in a temporary directory")
}
