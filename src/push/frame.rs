//! What is pushed: the metrics (one table, [`METRICS`], that the encoders, the docs and the
//! Grafana dashboard's test read), and a [`Frame`] of them built each second from the
//! engine's live counters, or at the end from the run's summary.
use crate::engine::Control;
use crate::metrics::{ErrorKind, Summary};
use crate::store::SeriesPoint;
use std::sync::atomic::Ordering;

/// A counter (cumulative from the run's start) or a gauge (a reading).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
}

/// One pushed metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    pub name: &'static str,
    pub kind: Kind,
    pub help: &'static str,
    /// OTLP's unit (UCUM): `1`, `s`, `{request}`, …
    pub unit: &'static str,
}

const fn m(name: &'static str, kind: Kind, unit: &'static str, help: &'static str) -> Metric {
    Metric {
        name,
        kind,
        help,
        unit,
    }
}

/// Every metric of the load the pushers send (the observed server's go by their own names,
/// `observe::prom_export`'s, the agent's `/metrics`).
pub const METRICS: &[Metric] = &[
    m(
        "overload_requests_total",
        Kind::Counter,
        "{request}",
        "Requests started in the measured window (warm-up excluded).",
    ),
    m(
        "overload_responses_total",
        Kind::Counter,
        "{response}",
        "Responses received (any status) in the measured window.",
    ),
    m(
        "overload_ok_responses_total",
        Kind::Counter,
        "{response}",
        "Responses whose status counts as success (--ok-status; 2xx and 3xx by default).",
    ),
    m(
        "overload_errors_total",
        Kind::Counter,
        "{error}",
        "Requests that ended in a transport error, by kind.",
    ),
    m(
        "overload_offered_rate",
        Kind::Gauge,
        "{request}/s",
        "Requests per second the plan schedules (open loop).",
    ),
    m(
        "overload_users",
        Kind::Gauge,
        "{user}",
        "Users of the closed loop.",
    ),
    m(
        "overload_throughput",
        Kind::Gauge,
        "{response}/s",
        "Responses in each second of the run (stamped at its end).",
    ),
    m(
        "overload_goodput",
        Kind::Gauge,
        "{response}/s",
        "Successful responses in each second of the run.",
    ),
    m(
        "overload_response_time_seconds",
        Kind::Gauge,
        "s",
        "Response time (from the intended send) of each second of the run, by quantile.",
    ),
    m(
        "overload_send_lag_seconds",
        Kind::Gauge,
        "s",
        "Mean send lag (actual send - intended send) of each second of the run.",
    ),
    m(
        "overload_in_flight",
        Kind::Gauge,
        "{request}",
        "Requests sent and not yet answered.",
    ),
    m(
        "overload_connections",
        Kind::Gauge,
        "{connection}",
        "Connections the generator holds open.",
    ),
    m(
        "overload_generator_cpu_cores",
        Kind::Gauge,
        "{core}",
        "CPU the generator process used in the last second, in cores.",
    ),
    m(
        "overload_name_responses_total",
        Kind::Counter,
        "{response}",
        "Responses per request name (the run's names, capped; sent with the run's summary).",
    ),
    m(
        "overload_name_errors_total",
        Kind::Counter,
        "{error}",
        "Errors per request name (sent with the run's summary).",
    ),
    m(
        "overload_name_response_time_seconds",
        Kind::Gauge,
        "s",
        "Response time per request name over the run, by quantile (sent with the summary).",
    ),
];

/// The metric of this name, from [`METRICS`].
pub fn metric(name: &str) -> Option<&'static Metric> {
    METRICS.iter().find(|m| m.name == name)
}

/// The labels every point of a run carries, so that the runs of several generators
/// (segments) stay apart, and add up with `sum by (run)`. Each point also carries its step
/// (`step`: its index, 0 for a single run), set by the [`FrameMaker`] of that step.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Labels {
    /// `--name`, or the name taken from the URL (the same on every generator of a run).
    pub run: String,
    /// `I/N` of `--segment` (0-based), or `0/1`.
    pub segment: String,
}

impl Labels {
    pub fn pairs(&self) -> [(&'static str, &str); 2] {
        [
            ("run", self.run.as_str()),
            ("segment", self.segment.as_str()),
        ]
    }
}

/// One value of one metric: the metric's name (a [`METRICS`] entry, or an observed server's
/// family) and its own labels, beside the run's.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub metric: &'static str,
    pub labels: Vec<(&'static str, String)>,
    pub value: f64,
    /// A counter (cumulative) or a gauge.
    pub kind: Kind,
    pub help: &'static str,
}

/// The points of one moment.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Frame {
    /// Unix ms.
    pub at_ms: u64,
    /// Unix ms the counters count from (OTLP's start time of a cumulative sum).
    pub start_ms: u64,
    pub points: Vec<Point>,
}

impl Frame {
    fn push(&mut self, name: &'static str, labels: Vec<(&'static str, String)>, value: f64) {
        let m = metric(name).expect("a metric of METRICS");
        self.points.push(Point {
            metric: m.name,
            labels,
            value,
            kind: m.kind,
            help: m.help,
        });
    }

    /// The observed server's newest samples (the agent's `/metrics` families), labelled
    /// with the step in progress.
    pub fn add_server(&mut self, samples: &[crate::observe::Sample], step: &str) {
        for f in crate::observe::prom_export::families(samples) {
            for (mut labels, value) in f.rows {
                labels.push(("step", step.to_string()));
                self.points.push(Point {
                    metric: f.name,
                    labels,
                    value,
                    // Pushed as the agent's /metrics types them (mostly gauges over the last
                    // interval: the sampler keeps deltas).
                    kind: if f.kind == "counter" {
                        Kind::Counter
                    } else {
                        Kind::Gauge
                    },
                    help: f.help,
                });
            }
        }
    }

    /// The value of `metric` whose labels include `labels` (tests, the report).
    pub fn value(&self, metric: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.points
            .iter()
            .find(|p| {
                p.metric == metric
                    && labels
                        .iter()
                        .all(|(k, v)| p.labels.iter().any(|(pk, pv)| pk == k && pv == v))
            })
            .map(|p| p.value)
    }
}

/// One reading of the engine's live counters (summed over its threads): what the counters
/// of a frame of the run in progress are made of.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reading {
    pub requests: u64,
    pub responses: u64,
    pub ok: u64,
    pub errors: [u64; ErrorKind::COUNT],
    pub in_flight: u64,
    pub connections: u64,
    /// Process CPU µs at the reading.
    pub cpu_us: u64,
}

impl Reading {
    pub fn of(ctl: &Control) -> Reading {
        let mut r = Reading {
            cpu_us: crate::clock::process_cpu_us(),
            ..Reading::default()
        };
        for l in &ctl.live {
            let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
            r.requests += get(&l.requests);
            r.responses += get(&l.responses);
            r.ok += get(&l.ok);
            r.in_flight += get(&l.in_flight);
            r.connections += get(&l.connections);
            for (sum, n) in r.errors.iter_mut().zip(&l.error_kinds) {
                *sum += get(n);
            }
        }
        r
    }
}

/// The offered load, as pushed: a rate (open loop) or users (closed loop).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Offered {
    Rate(f64),
    Users(u64),
}

/// Builds one step's frames: the CPU of the second between two readings, and each second
/// of the step's per-second series once, when it closes. Every point gets the step label.
#[derive(Debug)]
pub struct FrameMaker {
    /// The level the gauges show (each tick sets the level it is at).
    pub offered: Offered,
    step: String,
    /// Unix ms the counters count from (the step's first frame).
    start_ms: u64,
    /// Unix ms of the run's clock origin: a series point at `t` s ends at `origin + t + 1 s`.
    origin_ms: u64,
    last_cpu: Option<(std::time::Instant, u64)>,
    /// Points of the series already made into frames.
    seconds_sent: usize,
}

impl FrameMaker {
    /// The frames of step `step` at `offered` (this generator's share), on the run's clock
    /// whose origin is `origin_ms` (Unix ms).
    pub fn new(offered: Offered, step: usize, origin_ms: u64) -> FrameMaker {
        FrameMaker {
            offered,
            step: step.to_string(),
            start_ms: crate::clock::unix_ms(),
            origin_ms,
            last_cpu: Some((std::time::Instant::now(), crate::clock::process_cpu_us())),
            seconds_sent: 0,
        }
    }

    /// The step's index this maker labels.
    pub fn step(&self) -> &str {
        &self.step
    }

    /// A frame per point of `series` (the step's closed seconds so far, oldest first, as
    /// the results folder stores them) not sent yet, stamped at the second's end:
    /// throughput, goodput, percentiles and send lag. Every second is sent once, none
    /// skipped however the ticks fall.
    pub fn seconds(&mut self, series: &[SeriesPoint]) -> Vec<Frame> {
        self.seconds_at(series, crate::clock::unix_ms())
    }

    /// [`seconds`](Self::seconds) made at `now_ms`: a second closed before its end (the
    /// run's last, cut short by the end of the run) is stamped at `now_ms`, never in the
    /// future, where a query evaluated now would not find it.
    fn seconds_at(&mut self, series: &[SeriesPoint], now_ms: u64) -> Vec<Frame> {
        let from = self.seconds_sent.min(series.len());
        self.seconds_sent = series.len();
        series[from..]
            .iter()
            .map(|p| {
                let end_ms = self.origin_ms + ((p.t + 1.0) * 1000.0).round() as u64;
                self.second_frame(end_ms.min(now_ms), p)
            })
            .collect()
    }

    fn second_frame(&self, at_ms: u64, p: &SeriesPoint) -> Frame {
        let mut f = Frame {
            at_ms,
            start_ms: self.start_ms,
            points: Vec::new(),
        };
        self.push(&mut f, "overload_throughput", vec![], p.responses as f64);
        self.push(&mut f, "overload_goodput", vec![], p.ok as f64);
        if p.responses > 0 {
            let qs = [
                ("0.5", p.response_time_p50_ms),
                ("0.95", p.response_time_p95_ms),
                ("0.99", p.response_time_p99_ms),
            ];
            for (q, ms) in qs {
                if let Some(ms) = ms {
                    let l = vec![("quantile", q.to_string())];
                    self.push(&mut f, "overload_response_time_seconds", l, ms / 1e3);
                }
            }
            let lag = p.send_lag_mean_ms / 1e3;
            self.push(&mut f, "overload_send_lag_seconds", vec![], lag);
        }
        f
    }

    /// A point of this step.
    fn push(&self, f: &mut Frame, name: &'static str, mut l: Vec<(&'static str, String)>, v: f64) {
        l.push(("step", self.step.clone()));
        f.push(name, l, v);
    }

    /// The frame of a reading taken now.
    pub fn frame(&mut self, r: &Reading) -> Frame {
        let now = std::time::Instant::now();
        let cpu_cores = match self.last_cpu {
            Some((t, c)) if now > t => {
                r.cpu_us.saturating_sub(c) as f64 / 1e6 / (now - t).as_secs_f64()
            }
            _ => 0.0,
        };
        self.last_cpu = Some((now, r.cpu_us));
        self.frame_at(crate::clock::unix_ms(), r, cpu_cores)
    }

    /// The frame of reading `r` at `at_ms` (pure: the unit tests script it).
    pub fn frame_at(&self, at_ms: u64, r: &Reading, cpu_cores: f64) -> Frame {
        let mut f = Frame {
            at_ms,
            start_ms: self.start_ms,
            points: Vec::new(),
        };
        self.push(&mut f, "overload_requests_total", vec![], r.requests as f64);
        self.push(
            &mut f,
            "overload_responses_total",
            vec![],
            r.responses as f64,
        );
        self.push(&mut f, "overload_ok_responses_total", vec![], r.ok as f64);
        for k in ErrorKind::ALL {
            self.push(
                &mut f,
                "overload_errors_total",
                vec![("kind", k.name().to_string())],
                r.errors[k.index()] as f64,
            );
        }
        self.offered_points(&mut f);
        self.push(&mut f, "overload_in_flight", vec![], r.in_flight as f64);
        self.push(&mut f, "overload_connections", vec![], r.connections as f64);
        self.push(&mut f, "overload_generator_cpu_cores", vec![], cpu_cores);
        f
    }

    fn offered_points(&self, f: &mut Frame) {
        match self.offered {
            Offered::Rate(r) => self.push(f, "overload_offered_rate", vec![], r),
            Offered::Users(u) => self.push(f, "overload_users", vec![], u as f64),
        }
    }

    /// The last frame: the run's summary, the figures its JSON holds (so the counters end
    /// on the JSON's values), per request name for the first `cap` names (returned: how
    /// many names were left out).
    pub fn final_frame(&self, s: &Summary, cap: usize) -> (Frame, usize) {
        let mut f = Frame {
            at_ms: crate::clock::unix_ms(),
            start_ms: self.start_ms,
            points: Vec::new(),
        };
        self.push(&mut f, "overload_requests_total", vec![], s.requests as f64);
        self.push(
            &mut f,
            "overload_responses_total",
            vec![],
            s.responses as f64,
        );
        self.push(
            &mut f,
            "overload_ok_responses_total",
            vec![],
            s.ok_count() as f64,
        );
        for k in ErrorKind::ALL {
            let n = s.errors.get(k.name()).copied().unwrap_or(0);
            self.push(
                &mut f,
                "overload_errors_total",
                vec![("kind", k.name().to_string())],
                n as f64,
            );
        }
        self.offered_points(&mut f);
        self.push(&mut f, "overload_in_flight", vec![], 0.0);
        self.push(&mut f, "overload_connections", vec![], 0.0);
        for n in s.names.iter().take(cap) {
            let name = || vec![("name", n.name.clone())];
            self.push(
                &mut f,
                "overload_name_responses_total",
                name(),
                n.responses as f64,
            );
            self.push(
                &mut f,
                "overload_name_errors_total",
                name(),
                n.error_count as f64,
            );
            let rt = &n.response_time_ms;
            for (q, ms) in [("0.5", rt.p50), ("0.95", rt.p95), ("0.99", rt.p99)] {
                let mut l = name();
                l.push(("quantile", q.to_string()));
                self.push(&mut f, "overload_name_response_time_seconds", l, ms / 1e3);
            }
        }
        (f, s.names.len().saturating_sub(cap))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn reading() -> Reading {
        let mut errors = [0; ErrorKind::COUNT];
        errors[ErrorKind::Timeout.index()] = 3;
        Reading {
            requests: 110,
            responses: 100,
            ok: 90,
            errors,
            in_flight: 7,
            connections: 12,
            cpu_us: 0,
        }
    }

    /// The point of second `t` of the run's clock.
    pub(crate) fn second(t: f64, responses: u64, p99_ms: f64) -> SeriesPoint {
        let some = |v| (responses > 0).then_some(v);
        SeriesPoint {
            t,
            responses,
            ok: responses.saturating_sub(5),
            send_lag_mean_ms: 1.0,
            response_time_p50_ms: some(1.0),
            response_time_p95_ms: some(5.0),
            response_time_p99_ms: some(p99_ms),
            step: 0,
            offered: 100.0,
            warmup: false,
            errors: 0,
            bytes_in: 0,
            response_time_mean_ms: 1.0,
            response_time_max_ms: p99_ms,
            server: None,
        }
    }

    /// The counters are the totals, in base units.
    #[test]
    fn a_frame_holds_the_totals() {
        let fm = FrameMaker::new(Offered::Rate(200.0), 2, 0);
        let f = fm.frame_at(1_000, &reading(), 0.25);
        // Every point says its step.
        assert!(f
            .points
            .iter()
            .all(|p| p.labels.contains(&("step", "2".to_string()))));
        assert_eq!(f.value("overload_responses_total", &[]), Some(100.0));
        assert_eq!(f.value("overload_ok_responses_total", &[]), Some(90.0));
        assert_eq!(
            f.value("overload_errors_total", &[("kind", "timeout")]),
            Some(3.0)
        );
        assert_eq!(
            f.value("overload_errors_total", &[("kind", "reset")]),
            Some(0.0)
        );
        assert_eq!(f.value("overload_offered_rate", &[]), Some(200.0));
        assert_eq!(f.value("overload_users", &[]), None);
        assert_eq!(f.value("overload_generator_cpu_cores", &[]), Some(0.25));
        // Every point is a metric of the table, with its kind.
        for p in &f.points {
            assert_eq!(metric(p.metric).unwrap().kind, p.kind);
        }
    }

    /// Each closed second becomes one frame, once, stamped at its end, however the
    /// readings fall (two seconds closed between readings: both sent); a second nobody
    /// answered in sends no percentiles (a zero would read as a fast server).
    #[test]
    fn every_second_is_sent_once_at_its_end() {
        let origin = 1_000_000;
        let mut fm = FrameMaker::new(Offered::Users(5), 0, origin);
        let mut closed = vec![second(0.0, 50, 9.0)];
        let a = fm.seconds(&closed);
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].at_ms, origin + 1_000);
        assert_eq!(a[0].value("overload_throughput", &[]), Some(50.0));
        assert_eq!(
            a[0].value("overload_response_time_seconds", &[("quantile", "0.99")]),
            Some(0.009)
        );
        assert_eq!(a[0].value("overload_send_lag_seconds", &[]), Some(0.001));
        assert!(fm.seconds(&closed).is_empty());
        closed.push(second(1.0, 0, 0.0));
        closed.push(second(2.0, 70, 12.0));
        let b = fm.seconds(&closed);
        assert_eq!(
            b.iter().map(|f| f.at_ms - origin).collect::<Vec<_>>(),
            [2_000, 3_000]
        );
        assert_eq!(b[0].value("overload_response_time_seconds", &[]), None);
        assert_eq!(b[0].value("overload_throughput", &[]), Some(0.0));
        assert_eq!(
            b[1].value("overload_response_time_seconds", &[("quantile", "0.99")]),
            Some(0.012)
        );
        let f = fm.frame_at(origin + 3_000, &reading(), 0.0);
        assert_eq!(f.value("overload_users", &[]), Some(5.0));
        assert_eq!(f.value("overload_throughput", &[]), None);
    }

    /// The run's last second, closed by the end of the run 300 ms into it, is stamped when
    /// it closed, not at its nominal end 700 ms later (a query evaluated at the end of the run
    /// missed it: seen failing in the Prometheus test).
    #[test]
    fn a_second_cut_short_is_stamped_when_it_closed() {
        let origin = 1_000_000;
        let mut fm = FrameMaker::new(Offered::Users(5), 0, origin);
        let closed = vec![second(0.0, 50, 9.0), second(1.0, 20, 9.0)];
        let a = fm.seconds_at(&closed, origin + 1_300);
        assert_eq!(
            a.iter().map(|f| f.at_ms - origin).collect::<Vec<_>>(),
            [1_000, 1_300]
        );
    }

    /// The observed server's newest samples ride along, under the agent's /metrics names
    /// and labels (the source among them).
    #[test]
    fn server_samples_ride_along() {
        let sample = crate::observe::Sample {
            source: "web1".into(),
            host: Some(crate::observe::sample::HostSample {
                cpu_busy_pct: 42.0,
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut f = Frame::default();
        f.add_server(std::slice::from_ref(&sample), "0");
        let families = crate::observe::prom_export::families(&[sample]);
        let rows: usize = families.iter().map(|f| f.rows.len()).sum();
        assert_eq!(f.points.len(), rows);
        assert!(f
            .points
            .iter()
            .all(|p| p.labels.last() == Some(&("step", "0".into()))));
        assert!(f.points.len() > 2);
        let busy = f
            .points
            .iter()
            .find(|p| p.value == 42.0)
            .expect("the busy share");
        assert!(
            busy.labels.contains(&("source", "web1".to_string())),
            "{busy:?}"
        );
        assert!(
            busy.labels.contains(&("mode", "busy".to_string())),
            "{busy:?}"
        );
    }

    /// The names beyond the cap are left out and counted.
    #[test]
    fn the_final_frame_caps_names() {
        let t0 = std::time::Instant::now();
        let rec = crate::metrics::Recorder::new(t0, t0, 1);
        let mut s = Summary::from_recorder(&rec, Some(1.0), None, None);
        s.responses = 42;
        for i in 0..5 {
            s.names.push(crate::metrics::NameSummary {
                name: format!("n{i}"),
                responses: i,
                ..Default::default()
            });
        }
        let (f, left_out) = FrameMaker::new(Offered::Rate(1.0), 0, 0).final_frame(&s, 3);
        assert_eq!(left_out, 2);
        assert_eq!(f.value("overload_responses_total", &[]), Some(42.0));
        assert_eq!(
            f.value("overload_name_responses_total", &[("name", "n2")]),
            Some(2.0)
        );
        assert_eq!(
            f.value("overload_name_responses_total", &[("name", "n3")]),
            None
        );
    }
}
