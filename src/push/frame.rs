//! What is pushed: the metrics (one table, [`METRICS`], that the encoders, the docs and the
//! Grafana dashboard's test read), and a [`Frame`] of them built each second from the
//! engine's live counters, or at the end from the run's summary.
use crate::engine::Control;
use crate::metrics::{ErrorKind, SecondBucket, Summary};
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
/// (segments) and the steps of a run stay apart, and add up with `sum by (run)`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Labels {
    /// `--name`, or the name taken from the URL (the same on every generator of a run).
    pub run: String,
    /// `I/N` of `--segment` (0-based), or `0/1`.
    pub segment: String,
    /// The step's index (a run has one: 0).
    pub step: String,
}

impl Labels {
    pub fn pairs(&self) -> [(&'static str, &str); 3] {
        [
            ("run", self.run.as_str()),
            ("segment", self.segment.as_str()),
            ("step", self.step.as_str()),
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

    /// The observed server's newest samples (the agent's `/metrics` families).
    pub fn add_server(&mut self, samples: &[crate::observe::Sample]) {
        for f in crate::observe::prom_export::families(samples) {
            for (labels, value) in f.rows {
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

/// Builds a run's frames: the CPU of the second between two readings, and each second of
/// the per-second series once, when it closes.
#[derive(Debug)]
pub struct FrameMaker {
    offered: Offered,
    /// Unix ms of the engine's start: second `i` of its series ends at `start_ms + (i+1) s`.
    start_ms: u64,
    last_cpu: Option<(std::time::Instant, u64)>,
    /// Seconds of the series already made into frames.
    seconds_sent: usize,
}

impl FrameMaker {
    pub fn new(offered: Offered) -> FrameMaker {
        FrameMaker {
            offered,
            start_ms: crate::clock::unix_ms(),
            last_cpu: Some((std::time::Instant::now(), crate::clock::process_cpu_us())),
            seconds_sent: 0,
        }
    }

    /// A frame per second of `closed` (the run's closed seconds, oldest first) not sent yet,
    /// stamped at the second's end: throughput, goodput, percentiles and send lag, the
    /// figures series.jsonl stores for it. Every second is sent once, none skipped however
    /// the ticks fall.
    pub fn seconds(&mut self, closed: &[SecondBucket]) -> Vec<Frame> {
        let from = self.seconds_sent.min(closed.len());
        self.seconds_sent = closed.len();
        closed[from..]
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let at_ms = self.start_ms + (from + k + 1) as u64 * 1000;
                self.second_frame(at_ms, s)
            })
            .collect()
    }

    fn second_frame(&self, at_ms: u64, s: &SecondBucket) -> Frame {
        let mut f = Frame {
            at_ms,
            start_ms: self.start_ms,
            points: Vec::new(),
        };
        f.push("overload_throughput", vec![], s.responses as f64);
        f.push("overload_goodput", vec![], s.ok as f64);
        if s.responses > 0 {
            for (q, us) in [("0.5", s.p50_us), ("0.95", s.p95_us), ("0.99", s.p99_us)] {
                f.push(
                    "overload_response_time_seconds",
                    vec![("quantile", q.to_string())],
                    us as f64 / 1e6,
                );
            }
            f.push(
                "overload_send_lag_seconds",
                vec![],
                s.send_lag_sum_us as f64 / s.responses as f64 / 1e6,
            );
        }
        f
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
        f.push("overload_requests_total", vec![], r.requests as f64);
        f.push("overload_responses_total", vec![], r.responses as f64);
        f.push("overload_ok_responses_total", vec![], r.ok as f64);
        for k in ErrorKind::ALL {
            f.push(
                "overload_errors_total",
                vec![("kind", k.name().to_string())],
                r.errors[k.index()] as f64,
            );
        }
        self.offered_points(&mut f);
        f.push("overload_in_flight", vec![], r.in_flight as f64);
        f.push("overload_connections", vec![], r.connections as f64);
        f.push("overload_generator_cpu_cores", vec![], cpu_cores);
        f
    }

    fn offered_points(&self, f: &mut Frame) {
        match self.offered {
            Offered::Rate(r) => f.push("overload_offered_rate", vec![], r),
            Offered::Users(u) => f.push("overload_users", vec![], u as f64),
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
        f.push("overload_requests_total", vec![], s.requests as f64);
        f.push("overload_responses_total", vec![], s.responses as f64);
        f.push("overload_ok_responses_total", vec![], s.ok_count() as f64);
        for k in ErrorKind::ALL {
            let n = s.errors.get(k.name()).copied().unwrap_or(0);
            f.push(
                "overload_errors_total",
                vec![("kind", k.name().to_string())],
                n as f64,
            );
        }
        self.offered_points(&mut f);
        f.push("overload_in_flight", vec![], 0.0);
        f.push("overload_connections", vec![], 0.0);
        for n in s.names.iter().take(cap) {
            let name = || vec![("name", n.name.clone())];
            f.push("overload_name_responses_total", name(), n.responses as f64);
            f.push("overload_name_errors_total", name(), n.error_count as f64);
            let rt = &n.response_time_ms;
            for (q, ms) in [("0.5", rt.p50), ("0.95", rt.p95), ("0.99", rt.p99)] {
                let mut l = name();
                l.push(("quantile", q.to_string()));
                f.push("overload_name_response_time_seconds", l, ms / 1e3);
            }
        }
        (f, s.names.len().saturating_sub(cap))
    }
}

#[cfg(test)]
mod tests {
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

    fn second(responses: u64, p99_us: u64) -> SecondBucket {
        SecondBucket {
            responses,
            ok: responses.saturating_sub(5),
            send_lag_sum_us: responses * 1_000,
            p50_us: 1_000,
            p95_us: 5_000,
            p99_us,
            ..SecondBucket::default()
        }
    }

    /// The counters are the totals, in base units.
    #[test]
    fn a_frame_holds_the_totals() {
        let fm = FrameMaker::new(Offered::Rate(200.0));
        let f = fm.frame_at(1_000, &reading(), 0.25);
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
        let mut fm = FrameMaker::new(Offered::Users(5));
        let start = fm.start_ms;
        let mut closed = vec![second(50, 9_000)];
        let a = fm.seconds(&closed);
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].at_ms, start + 1_000);
        assert_eq!(a[0].value("overload_throughput", &[]), Some(50.0));
        assert_eq!(
            a[0].value("overload_response_time_seconds", &[("quantile", "0.99")]),
            Some(0.009)
        );
        assert_eq!(a[0].value("overload_send_lag_seconds", &[]), Some(0.001));
        assert!(fm.seconds(&closed).is_empty());
        closed.push(SecondBucket::default());
        closed.push(second(70, 12_000));
        let b = fm.seconds(&closed);
        assert_eq!(
            b.iter().map(|f| f.at_ms - start).collect::<Vec<_>>(),
            [2_000, 3_000]
        );
        assert_eq!(b[0].value("overload_response_time_seconds", &[]), None);
        assert_eq!(b[0].value("overload_throughput", &[]), Some(0.0));
        assert_eq!(
            b[1].value("overload_response_time_seconds", &[("quantile", "0.99")]),
            Some(0.012)
        );
        let f = fm.frame_at(start + 3_000, &reading(), 0.0);
        assert_eq!(f.value("overload_users", &[]), Some(5.0));
        assert_eq!(f.value("overload_throughput", &[]), None);
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
        f.add_server(std::slice::from_ref(&sample));
        let families = crate::observe::prom_export::families(&[sample]);
        let rows: usize = families.iter().map(|f| f.rows.len()).sum();
        assert_eq!(f.points.len(), rows);
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
        let (f, left_out) = FrameMaker::new(Offered::Rate(1.0)).final_frame(&s, 3);
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
