//! Test data: results folders' contents built from synthetic steps. Compiled only for tests:
//! the library's unit tests (`#[cfg(test)] mod testdata`) and tests/suite/report.rs, which
//! includes this file with `#[path]`. Its paths name the library as `overload::`, which both
//! crates resolve: the library's unit tests through `extern crate self as overload` (lib.rs).
use overload::metrics::{LatencyStats, Summary};
use overload::observe::{
    FpmObservation, GeneratorObservation, GroupObservation, HostObservation, KernelLimits,
    SecondObservation, SourceObservation, Stat, StepObservation, TcpObservation, LOCAL,
};
use overload::store::{GeneratorStats, HostInfo, RunInfo, SeriesPoint, StepRecord};
use std::collections::BTreeMap;

/// run.json of a synthetic sweep.
pub fn info(name: &str, mode: &str, slo: Option<&str>) -> RunInfo {
    RunInfo {
        format_version: overload::store::FORMAT_VERSION,
        overload_version: env!("CARGO_PKG_VERSION").to_string(),
        name: name.to_string(),
        kind: "sweep".to_string(),
        command_line: vec![
            "overload".into(),
            "sweep".into(),
            "--rate".into(),
            "100..500/100".into(),
            "http://127.0.0.1:8080/".into(),
        ],
        mode: mode.to_string(),
        urls: vec!["GET http://127.0.0.1:8080/".to_string()],
        config: serde_json::json!({"step_duration_s": 10}),
        host: HostInfo {
            hostname: "gen1".into(),
            cores: 2,
            kernel: "6.1.0".into(),
            fd_limit_soft: 1024,
            fd_limit_hard: 65536,
            sysctls: BTreeMap::from([("net.core.somaxconn".into(), "4096".into())]),
        },
        started_unix_ms: 1_700_000_000_000,
        finished_unix_ms: Some(1_700_000_060_000),
        complete: true,
        stop_reason: Some("all steps done".into()),
        slo: slo.map(str::to_string),
    }
}

/// A step at `offered` answering `throughput`/s with response time growing from `rt_ms`
/// (p99 = 3×, max = 5×), `errors` timeouts and `e503` 503 answers, 10 s long.
pub fn step(
    i: usize,
    mode: &str,
    offered: f64,
    throughput: f64,
    rt_ms: f64,
    errors: u64,
    e503: u64,
) -> StepRecord {
    let lat = |m: f64| LatencyStats {
        mean: m * 1.1,
        p50: m,
        p90: m * 2.0,
        p95: m * 2.5,
        p99: m * 3.0,
        p999: m * 4.0,
        max: m * 5.0,
        count: (throughput * 10.0) as u64,
    };
    let responses = (throughput * 10.0) as u64;
    let mut statuses = BTreeMap::new();
    statuses.insert("200".to_string(), responses.saturating_sub(e503));
    if e503 > 0 {
        statuses.insert("503".to_string(), e503);
    }
    let mut errs = BTreeMap::new();
    if errors > 0 {
        errs.insert("timeout".to_string(), errors);
    }
    let open = mode == "open";
    let summary = Summary {
        mode: mode.to_string(),
        retries: 0,
        interrupted_requests: 0,
        protocols: Default::default(),
        offered_rate: open.then_some(offered),
        users: (!open).then_some(offered as u64),
        throughput,
        goodput: (responses.saturating_sub(e503)) as f64 / 10.0,
        requests: responses + errors,
        sent: responses + errors,
        responses,
        unsent: 0,
        duration_s: 10.0,
        connections_opened: 10,
        connects: None,
        protocol: None,
        errors: errs,
        error_count: errors,
        error_ratio: errors as f64 / (responses + errors).max(1) as f64,
        statuses,
        ok_status: Default::default(),
        bytes_in: responses * 1000,
        bytes_out: responses * 100,
        bytes_in_per_s: throughput * 1000.0,
        response_time_ms: lat(rt_ms),
        service_time_ms: lat(rt_ms * 0.9),
        send_lag_ms: LatencyStats {
            p99: 0.2,
            ..LatencyStats::default()
        },
        connect_time_ms: LatencyStats {
            mean: 0.3,
            ..LatencyStats::default()
        },
        first_byte_ms: LatencyStats::default(),
        tls: None,
        quic: None,
        names: Vec::new(),
        sessions: None,
    };
    let start_s = i as f64 * 12.0;
    StepRecord {
        step: i,
        offered,
        start_unix_ms: 1_700_000_000_000 + (start_s * 1000.0) as u64,
        end_unix_ms: 1_700_000_000_000 + ((start_s + 12.0) * 1000.0) as u64,
        start_s,
        end_s: start_s + 12.0,
        think_ms: 0.0,
        summary,
        generator: GeneratorStats {
            io: None,
            cpu_pct: 12.0,
            cpu_us_per_response: 20.0,
            threads: 2,
            pool_waits: 0,
        },
        response_time_hist: "HISTFAKE".to_string(),
        hists: None,
        flags: vec![],
        slo_ok: None,
        server: None,
    }
}

/// The seconds of a step: 2 s warm-up then 10 s around its throughput (±5%).
pub fn series(s: &StepRecord) -> Vec<SeriesPoint> {
    (0..12)
        .map(|k| {
            let x = s.summary.throughput * (1.0 + 0.05 * ((k % 3) as f64 - 1.0));
            SeriesPoint {
                t: s.start_s + k as f64,
                step: s.step,
                offered: s.offered,
                warmup: k < 2,
                responses: x as u64,
                ok: x as u64,
                errors: 0,
                bytes_in: 0,
                response_time_mean_ms: s.summary.response_time_ms.mean,
                response_time_max_ms: s.summary.response_time_ms.max,
                send_lag_mean_ms: 0.0,
                response_time_p50_ms: Some(s.summary.response_time_ms.p50),
                response_time_p95_ms: Some(s.summary.response_time_ms.p95),
                response_time_p99_ms: Some(s.summary.response_time_ms.p99),
                server: s.server.as_ref().and_then(|o| second_of(o, k)),
            }
        })
        .collect()
}

/// Second `k` of a step whose server figures are `o`: means, with a wobble and the
/// step's maxima in its last second, as a sampler would have seen them. The first second
/// has none (sampling had not started), to exercise gaps.
fn second_of(o: &StepObservation, k: usize) -> Option<SecondObservation> {
    if k == 0 {
        return None;
    }
    let web = o.server()?;
    let last = k == 11;
    let pick = |s: Stat| {
        if last {
            s.max
        } else {
            s.mean * (0.95 + 0.05 * (k % 3) as f64)
        }
    };
    let n = |s: Stat| pick(s).round() as u64;
    let tcp = web.tcp.as_ref();
    Some(SecondObservation {
        cpu_busy_pct: web.host.map(|h| pick(h.cpu_busy_pct).min(100.0)),
        load1: web.host.map(|h| pick(h.load1)),
        mem_available_bytes: None,
        established: tcp.map(|t| n(t.state("ESTABLISHED"))),
        syn_recv: tcp.map(|t| n(t.state("SYN_RECV"))),
        time_wait: tcp.map(|t| n(t.state("TIME_WAIT"))),
        close_wait: tcp.map(|t| n(t.state("CLOSE_WAIT"))),
        listen_queue: tcp.and_then(|t| t.listen_queue.map(n)),
        listen_overflows: tcp.map(|t| t.listen_overflows / 11),
        retrans_segs: tcp.map(|_| 0),
        processes: (!web.groups.is_empty())
            .then(|| web.groups.iter().map(|g| n(g.processes)).sum()),
        fpm_active: (!web.fpm.is_empty()).then(|| web.fpm.iter().map(|f| n(f.active)).sum()),
        generator_cpu_pct: o.generator.map(|g| pick(g.cpu_pct)),
    })
}

/// What an observed server did in a step at `offered` (of a 400 req/s server on 2
/// cores): CPU and PHP workers growing with load to 100% and 16 workers, TIME_WAIT
/// growing, the accept queue filling and overflowing past saturation.
pub fn observation(offered: f64) -> StepObservation {
    let load = (offered / 400.0).min(1.25);
    let st = |mean: f64, max: f64| Stat { mean, max };
    let busy = (load * 100.0).min(100.0);
    let host = |busy: f64| HostObservation {
        cores: 2,
        cpu_user_pct: st(busy * 0.7, busy * 0.75),
        cpu_system_pct: st(busy * 0.2, busy * 0.22),
        cpu_softirq_pct: st(busy * 0.05, busy * 0.06),
        cpu_busy_pct: st(busy, (busy * 1.05).min(100.0)),
        load1: st(load * 2.5, load * 3.0),
        mem_total_bytes: 8 << 30,
        mem_used_bytes: st(2e9, 2.2e9),
        mem_available_bytes: st(6.5e9, 6.6e9),
        ..HostObservation::default()
    };
    let over = load > 1.0;
    let tcp = TcpObservation {
        port: 8080,
        states: BTreeMap::from([
            ("ESTABLISHED".to_string(), st(load * 40.0, load * 48.0)),
            ("TIME_WAIT".to_string(), st(offered * 30.0, offered * 40.0)),
            (
                "SYN_RECV".to_string(),
                st(if over { 20.0 } else { 0.0 }, if over { 40.0 } else { 0.0 }),
            ),
        ]),
        listen_queue: Some(if over {
            st(90.0, 128.0)
        } else {
            st(load * 2.0, load * 6.0)
        }),
        listen_limit: Some(128),
        listen_overflows: if over { 550 } else { 0 },
        listen_overflows_per_s_max: if over { 80.0 } else { 0.0 },
        listen_drops: if over { 550 } else { 0 },
        ..TcpObservation::default()
    };
    let workers = (load * 16.0).ceil().min(16.0);
    let web = SourceObservation {
        source: "web".to_string(),
        samples: 12,
        host: Some(host(busy)),
        groups: vec![GroupObservation {
            name: "php".to_string(),
            processes: st(workers + 1.0, workers + 1.0),
            threads: st(workers + 1.0, workers + 1.0),
            cpu_pct: st(busy * 1.8, busy * 1.9),
            rss_bytes: st(workers * 30e6, workers * 32e6),
            open_fds: None,
        }],
        fpm: vec![FpmObservation {
            url: "http://127.0.0.1/status".to_string(),
            pool: "www".to_string(),
            // Overloaded, the pool stays full for most of the step (the findings' and the
            // verdict's rule: more than one sample, `observe::summary::pool_at_limit_from`).
            active: st(workers * if over { 0.97 } else { 0.9 }, workers),
            idle: st(
                16.0 - workers * if over { 0.97 } else { 0.9 },
                16.0 - workers,
            ),
            total: st(16.0, 16.0),
            listen_queue: st(if over { 30.0 } else { 0.0 }, if over { 64.0 } else { 0.0 }),
            max_listen_queue: if over { 64 } else { 0 },
            max_children_reached: u64::from(over),
            errors: 0,
        }],
        tcp: Some(tcp),
        kernel: Some(KernelLimits {
            somaxconn: Some(4096),
            port_range: Some((32768, 60999)),
            tcp_tw_reuse: Some(2),
            ..KernelLimits::default()
        }),
        sample_cost_us: st(800.0, 1200.0),
        ..SourceObservation::default()
    };
    let local = SourceObservation {
        source: LOCAL.to_string(),
        samples: 12,
        host: Some(host(offered / 40.0)),
        sample_cost_us: st(100.0, 150.0),
        ..SourceObservation::default()
    };
    StepObservation {
        samples: 24,
        sources: vec![local, web],
        generator: Some(GeneratorObservation {
            cpu_pct: st(offered / 20.0, offered / 16.0),
            rss_bytes: st(20e6, 21e6),
            threads: st(3.0, 3.0),
        }),
    }
}

/// [`open_sweep`] observed on the server (an agent named `web`) and on the generator
/// host, step by step (and second by second through [`series`]).
pub fn server_sweep() -> Vec<StepRecord> {
    let mut steps = open_sweep();
    for s in &mut steps {
        s.server = Some(observation(s.offered));
    }
    steps
}

/// An open-loop sweep 100..500 req/s that saturates at 400 (errors and 503s past it).
pub fn open_sweep() -> Vec<StepRecord> {
    [
        (100.0, 100.0, 5.0, 0, 0),
        (200.0, 199.0, 6.0, 0, 0),
        (300.0, 298.0, 9.0, 0, 0),
        (400.0, 350.0, 400.0, 30, 20),
        (500.0, 340.0, 1500.0, 200, 150),
    ]
    .iter()
    .enumerate()
    .map(|(i, &(o, x, l, e, s))| step(i, "open", o, x, l, e, s))
    .collect()
}

/// A closed-loop sweep over users: 20 ms service, 8 workers.
pub fn closed_sweep() -> Vec<StepRecord> {
    [1.0f64, 2.0, 4.0, 8.0, 16.0, 32.0]
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let x = n.min(8.0) / 0.02;
            step(i, "closed", n, x, n / x * 1000.0, 0, 0)
        })
        .collect()
}
