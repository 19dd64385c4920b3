//! The run's figures pushed to the monitoring an operator runs, checked against the real
//! receivers: a real Prometheus (`--web.enable-remote-write-receiver`; ignored with the
//! reason where the `prometheus` package is missing), queried back with PromQL, and an OTLP
//! receiver in the test decoding the export requests with OpenTelemetry's own messages.
//! Also: a sink that is down or hangs never slows the load, and bad URLs are usage errors.
use crate::common::harness::{self, Need};
use crate::common::{bin, free_port, output_within, scratch, wait_until, Target, QUICK};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::metrics::v1::{metric, number_data_point};
use overload::url::Url;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const LOAD: Duration = Duration::from_secs(90);

pub fn trials() -> Vec<libtest_mimic::Trial> {
    vec![
        harness::trial(
            "prometheus_holds_the_runs_responses_and_p99",
            &[Need::Prometheus],
            prometheus_holds_the_run,
        ),
        harness::trial(
            "prometheus_holds_each_step_of_a_sweep",
            &[Need::Prometheus],
            sweep_steps,
        ),
        harness::trial("otlp_receiver_gets_the_runs_figures", &[], otlp_receiver),
        harness::trial("a_down_or_hung_sink_never_slows_the_load", &[], sink_down),
        harness::trial("bad_push_urls_are_usage_errors", &[], bad_urls),
    ]
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `overload run … --json FILE --out DIR EXTRA` against `t`: the JSON, and the p99 (ms,
/// None for a second without responses) and responses of each second of series.jsonl.
fn run(t: &Target, dir: &Path, extra: &[&str]) -> (serde_json::Value, Vec<(Option<f64>, u64)>) {
    let json = dir.join("run.json");
    let out = output_within(
        bin()
            .args(["run", "-R", "200", "-d", "5s", "-q", "--name", "push-test"])
            .arg("--json")
            .arg(&json)
            .arg("--out")
            .arg(dir.join("out"))
            .args(extra)
            .arg(format!("{}/sleep?ms=1", t.url)),
        LOAD,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let series = std::fs::read_to_string(dir.join("out/series.jsonl")).unwrap();
    let seconds = series
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|p| {
            let n = p["responses"].as_u64().unwrap();
            let p99 = p["response_time_p99_ms"].as_f64().filter(|_| n > 0);
            (p99, n)
        })
        .collect();
    (v, seconds)
}

struct Prometheus {
    child: Child,
    url: Url,
    _dir: tempfile::TempDir,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Prometheus {
    /// A Prometheus with no scrape targets, its remote-write receiver on, its data in a
    /// scratch folder.
    fn start() -> Prometheus {
        let dir = scratch();
        let config = dir.path().join("prometheus.yml");
        std::fs::write(&config, "global:\n  scrape_interval: 1m\n").unwrap();
        let port = free_port();
        let child = Command::new("prometheus")
            .arg("--web.enable-remote-write-receiver")
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg(format!("--config.file={}", config.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn prometheus");
        let url = Url::parse(&format!("http://127.0.0.1:{port}/")).unwrap();
        let p = Prometheus {
            child,
            url,
            _dir: dir,
        };
        wait_until("prometheus ready", Duration::from_secs(60), || {
            overload::http_get::get(&p.url, "/-/ready", &[], Duration::from_secs(2), 4096)
                .is_ok_and(|r| r.status == 200)
        });
        p
    }

    /// The `result` of an instant query.
    fn query(&self, promql: &str) -> serde_json::Value {
        let q: String = promql
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect();
        let r = overload::http_get::get(
            &self.url,
            &format!("/api/v1/query?query={q}"),
            &[],
            Duration::from_secs(10),
            1 << 20,
        )
        .expect("query prometheus");
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["status"], "success", "{promql}: {v}");
        v["data"]["result"].clone()
    }

    /// The value of a query whose result is one sample, once it has one.
    fn scalar(&self, promql: &str) -> Option<f64> {
        let r = self.query(promql);
        r.get(0)?["value"][1].as_str()?.parse().ok()
    }
}

/// A 5 s run pushed into a real Prometheus: `sum(overload_responses_total)` and the request
/// count equal the run's JSON, and the p99 and throughput series pushed are, second by
/// second, those of series.jsonl (at the precision the series keep, µs).
fn prometheus_holds_the_run() {
    let prom = Prometheus::start();
    let t = Target::start(&["--threads", "1"]);
    let d = scratch();
    let write = format!("http://127.0.0.1:{}/api/v1/write", prom.url.port);
    let (v, seconds) = run(
        &t,
        d.path(),
        &[
            "--prometheus-remote-write",
            &write,
            "--watch",
            "gen=overload",
        ],
    );
    let push = &v["push"][0];
    assert_eq!(push["sink"], "prometheus-remote-write", "{v}");
    assert_eq!(push["dropped"], 0, "{push}");
    assert!(push["pushed"].as_u64().unwrap() >= 3, "{push}");
    let responses = v["responses"].as_f64().unwrap();
    assert!(responses > 500.0, "{v}");
    let mut got = None;
    wait_until(
        "the run's responses in prometheus",
        Duration::from_secs(30),
        || {
            got = prom.scalar(r#"sum(overload_responses_total{run="push-test"})"#);
            got == Some(responses)
        },
    );
    assert_eq!(
        prom.scalar(r#"sum(overload_requests_total{run="push-test",segment="0/1",step="0"})"#),
        v["requests"].as_f64(),
    );
    assert_eq!(
        prom.scalar(r#"sum(overload_errors_total{run="push-test"})"#),
        Some(0.0)
    );
    // The observed side rides along under the agent's /metrics names: the watched group.
    let procs = prom.scalar(r#"max(overload_group_processes{run="push-test",group="gen"})"#);
    assert!(procs.is_some_and(|n| n >= 1.0), "{procs:?}");
    let raw = |q: &str| -> Vec<f64> {
        prom.query(q)[0]["values"]
            .as_array()
            .unwrap_or_else(|| panic!("no samples for {q}"))
            .iter()
            .map(|s| s[1].as_str().unwrap().parse().unwrap())
            .collect()
    };
    let p99s = raw(r#"overload_response_time_seconds{run="push-test",quantile="0.99"}[10m]"#);
    let want: Vec<f64> = seconds.iter().filter_map(|s| s.0).collect();
    assert_eq!(p99s.len(), want.len(), "{p99s:?} vs {seconds:?}");
    for (p, w) in p99s.iter().zip(&want) {
        assert!((p * 1e3 - w).abs() <= 0.0011, "{p99s:?} vs {want:?}");
    }
    let counts = raw(r#"overload_throughput{run="push-test"}[10m]"#);
    let want: Vec<f64> = seconds.iter().map(|s| s.1 as f64).collect();
    assert_eq!(counts, want, "pushed throughput vs series.jsonl");
    // Every query of the Grafana dashboard is valid PromQL and finds the run's series.
    let dash: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/deploy/grafana/overload.json"
        ))
        .unwrap(),
    )
    .unwrap();
    for panel in dash["panels"].as_array().unwrap() {
        for t in panel["targets"].as_array().unwrap() {
            let e = t["expr"].as_str().unwrap();
            let q = e
                .replace("$run", "push-test")
                .replace("$__rate_interval", "1m");
            let r = prom.query(&q);
            // Names are sent with the summary only; errors are filtered to those above zero.
            let may_be_empty = q.contains("overload_users") || q.contains("errors_total");
            assert!(
                may_be_empty || !r.as_array().unwrap().is_empty(),
                "{q}: {r}"
            );
        }
    }
}

/// A two-step sweep pushed into a real Prometheus: each step is its own series (`step`
/// label), and each step's responses there equal the step's in steps.jsonl.
fn sweep_steps() {
    let prom = Prometheus::start();
    let t = Target::start(&["--threads", "1"]);
    let d = scratch();
    let write = format!("http://127.0.0.1:{}/api/v1/write", prom.url.port);
    let out = output_within(
        bin()
            .args([
                "sweep", "--rates", "100,200", "--warmup", "0s", "--step", "2s",
            ])
            .args(["--rest", "0s", "-q", "--name", "push-sweep", "--out"])
            .arg(d.path().join("sweep"))
            .args(["--prometheus-remote-write", &write])
            .arg(format!("{}/sleep?ms=1", t.url)),
        LOAD,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("push: prometheus-remote-write: pushed") && stdout.contains("dropped 0"),
        "{stdout}"
    );
    let steps = std::fs::read_to_string(d.path().join("sweep/steps.jsonl")).unwrap();
    let steps: Vec<serde_json::Value> = steps
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(steps.len(), 2);
    for (i, s) in steps.iter().enumerate() {
        let want = s["responses"].as_f64();
        assert!(want.unwrap() > 100.0, "{s}");
        let q = format!(r#"sum(overload_responses_total{{run="push-sweep",step="{i}"}})"#);
        let mut got = None;
        wait_until(
            "a step's responses in prometheus",
            Duration::from_secs(30),
            || {
                got = prom.scalar(&q);
                got == want
            },
        );
    }
}

/// An OTLP/HTTP receiver on loopback: each POST's body decoded as an export request, answered
/// 200 (or never answered, for the hung sink).
struct Receiver {
    port: u16,
    got: Arc<Mutex<Vec<ExportMetricsServiceRequest>>>,
}

impl Receiver {
    fn start(answer: bool) -> Receiver {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let got: Arc<Mutex<Vec<ExportMetricsServiceRequest>>> = Arc::default();
        let g = got.clone();
        std::thread::spawn(move || {
            let mut held = Vec::new();
            for s in l.incoming() {
                let Ok(s) = s else { continue };
                if !answer {
                    held.push(s); // never read, never answered
                    continue;
                }
                let mut r = BufReader::new(s);
                let mut len = 0;
                let mut path = String::new();
                loop {
                    let mut line = String::new();
                    if r.read_line(&mut line).unwrap_or(0) == 0 {
                        break;
                    }
                    if path.is_empty() {
                        path = line.clone();
                    }
                    let lower = line.to_ascii_lowercase();
                    if let Some(v) = lower.strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap();
                    }
                    if line == "\r\n" {
                        break;
                    }
                }
                assert!(path.starts_with("POST /v1/metrics "), "{path}");
                let mut body = vec![0; len];
                r.read_exact(&mut body).unwrap();
                g.lock()
                    .unwrap()
                    .push(prost::Message::decode(body.as_slice()).expect("an OTLP request"));
                let _ = r
                    .into_inner()
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
            }
        });
        Receiver { port, got }
    }
}

/// The run pushed over OTLP/HTTP: the last `overload_responses_total` point (a cumulative
/// monotonic sum) equals the JSON's responses, with the run's labels as attributes.
fn otlp_receiver() {
    let rx = Receiver::start(true);
    let t = Target::start(&["--threads", "1"]);
    let d = scratch();
    let url = format!("http://127.0.0.1:{}", rx.port);
    let (v, _) = run(&t, d.path(), &["--otlp", &url]);
    assert_eq!(v["push"][0]["sink"], "otlp", "{v}");
    assert_eq!(v["push"][0]["dropped"], 0, "{v}");
    let got = rx.got.lock().unwrap();
    assert!(got.len() >= 2, "{} requests", got.len());
    let mut last = None;
    for req in got.iter() {
        for m in &req.resource_metrics[0].scope_metrics[0].metrics {
            if m.name != "overload_responses_total" {
                continue;
            }
            let Some(metric::Data::Sum(s)) = &m.data else {
                panic!("{m:?}")
            };
            assert!(s.is_monotonic);
            for p in &s.data_points {
                let attr = |k: &str| {
                    p.attributes
                        .iter()
                        .find(|a| a.key == k)
                        .and_then(|a| a.value.clone())
                };
                assert!(attr("run").is_some() && attr("segment").is_some(), "{p:?}");
                if let Some(number_data_point::Value::AsDouble(x)) = p.value {
                    last = Some(x);
                }
            }
        }
    }
    assert_eq!(last, v["responses"].as_f64(), "{v}");
}

/// Sinks that refuse connections and that accept and never answer: the run sends its
/// planned load and ends on time (its drain bounded), its JSON says what was dropped and why.
fn sink_down() {
    let hung = Receiver::start(false);
    let t = Target::start(&["--threads", "1"]);
    let d = scratch();
    let refused = format!("http://127.0.0.1:{}/api/v1/write", free_port());
    let hung_url = format!("http://127.0.0.1:{}", hung.port);
    let t0 = Instant::now();
    let (v, _) = run(
        &t,
        d.path(),
        &["--prometheus-remote-write", &refused, "--otlp", &hung_url],
    );
    // 5 s of load, at most 10 s of drain, and a loaded machine's margin.
    assert!(t0.elapsed() < Duration::from_secs(40), "{:?}", t0.elapsed());
    let requests = v["requests"].as_f64().unwrap();
    assert!(requests >= 900.0, "the load was slowed: {requests} of 1000");
    for p in v["push"].as_array().unwrap() {
        assert_eq!(p["pushed"], 0, "{p}");
        assert!(p["dropped"].as_u64().unwrap() >= 1, "{p}");
    }
    let refused_report = &v["push"][0];
    assert!(
        refused_report["last_error"]
            .as_str()
            .unwrap()
            .contains("refused"),
        "{refused_report}"
    );
}

/// A URL that is not http(s): exit 2, one line naming the flag.
fn bad_urls() {
    for (flag, url) in [
        ("--prometheus-remote-write", "ftp://x/api/v1/write"),
        ("--otlp", "localhost:4318"),
    ] {
        let out = output_within(
            bin().args(["run", "-d", "1s", flag, url, "http://127.0.0.1:9/"]),
            QUICK,
        );
        assert_eq!(out.status.code(), Some(2), "{flag} {url}");
        let err = text(&out.stderr);
        assert!(err.contains(flag), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}
