//! The summary of a run (or of one step of a sweep): the object `run --json` writes and the
//! terminal report prints. Its fields are documented in docs/results.md.
use super::histo::LatencyStats;
use super::names::{sort_names, NameSummary};
use super::{ErrorKind, OkStatus, Recorder, TlsReason};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// `open` (arrival rate) or `closed` (users).
    pub mode: String,
    /// Requests per second the plan scheduled (open loop); null in closed loop.
    pub offered_rate: Option<f64>,
    /// Users (closed loop); null in open loop.
    pub users: Option<u64>,
    /// Responses per second (any status).
    pub throughput: f64,
    /// Responses per second whose status is in `ok_status`.
    pub goodput: f64,
    /// Requests started in the measured window (warm-up excluded), whatever their outcome.
    pub requests: u64,
    /// Of `requests`, those whose bytes were all written to a connection.
    #[serde(default)]
    pub sent: u64,
    pub responses: u64,
    /// Requests scheduled in the window that never got a connection before the run ended.
    pub unsent: u64,
    /// Requests sent a second time on a fresh connection because the kept-alive one they were
    /// sent on was closed by the server before any byte of the answer (not errors).
    #[serde(default)]
    pub retries: u64,
    /// Requests in flight when the run was interrupted: counted in `requests` (the server
    /// had them), neither answered nor failed. Absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub interrupted_requests: u64,
    /// Requests sent by HTTP version (`"1.1"`, `"2"`); versions not used are left out.
    #[serde(default)]
    pub protocols: BTreeMap<String, u64>,
    /// The HTTP version the run spoke and how it was chosen (absent from older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<ProtocolChoice>,
    /// Length of the measured window in seconds.
    pub duration_s: f64,
    pub connections_opened: u64,
    /// Connection attempts and how they failed, apart from the requests (absent from results
    /// written before attempts were counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connects: Option<ConnectSummary>,
    pub errors: BTreeMap<String, u64>,
    pub error_count: u64,
    /// errors / requests.
    pub error_ratio: f64,
    pub statuses: BTreeMap<String, u64>,
    /// The statuses that count as success (`--ok-status`); absent: 2xx and 3xx.
    #[serde(default, skip_serializing_if = "OkStatus::is_default")]
    pub ok_status: OkStatus,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub bytes_in_per_s: f64,
    pub response_time_ms: LatencyStats,
    pub service_time_ms: LatencyStats,
    pub send_lag_ms: LatencyStats,
    pub connect_time_ms: LatencyStats,
    /// From the write of the request to the first byte of its response.
    #[serde(default)]
    pub first_byte_ms: LatencyStats,
    /// Present when the run spoke TLS (https:// URLs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsSummary>,
    /// Present when the run spoke HTTP/3: QUIC's packets, per answer too, and 0-RTT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic: Option<QuicSummary>,
    /// Per request name, most time spent first: the names that completed a request
    /// (absent from results written before names were kept: read as none).
    #[serde(default)]
    pub names: Vec<NameSummary>,
    /// Open loop with a scenario: the sessions (`offered_rate` is then sessions/s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<SessionSummary>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// Open-loop scenario sessions (httperf's `--wsess`): arrivals per second and what became of
/// them. Sessions cut off by the end of the run are started but neither completed nor failed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// Sessions per second the plan scheduled.
    pub offered_per_s: f64,
    pub started: u64,
    pub completed: u64,
    pub completed_per_s: f64,
    /// Ended by a failed request, check or extraction.
    pub failed: u64,
    /// Arrivals that found `--max-sessions` in flight.
    pub dropped: u64,
}

/// The I/O backend a run's workers used (`--io`; `engine::io` runs it): in the results, so a
/// step's generator figures say what they were measured on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum IoBackend {
    #[default]
    #[serde(rename = "epoll")]
    Epoll,
    #[serde(rename = "io_uring")]
    Uring,
}

impl IoBackend {
    /// Its name in the plan line, summary and results (`epoll`, `io_uring`).
    pub fn name(self) -> &'static str {
        match self {
            IoBackend::Epoll => "epoll",
            IoBackend::Uring => "io_uring",
        }
    }
}

/// The HTTP version a run speaks and how it was chosen: an https:// run with `--http auto`
/// speaks what ALPN negotiated with the first server (often HTTP/2, where http:// speaks
/// HTTP/1.1: not the same protocol to compare).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtocolChoice {
    /// `"1.1"` or `"2"`.
    pub version: String,
    /// `alpn` (https://, `--http auto`: the first server's pick; with `--alt-svc`, `fallback`
    /// says why HTTP/3 was not), `alt-svc` (`--alt-svc`: the server announced `h3`),
    /// `http-flag` (asked with
    /// `--http`), `cleartext` (http:// speaks HTTP/1.1 unless `--http 2`), `no-keep-alive`
    /// (HTTP/2 needs kept connections), `alpn-probe-failed` (the question could not be
    /// asked: HTTP/1.1, `fallback` says why).
    pub chosen_by: String,
    /// `alpn-probe-failed`: why the probe failed; `alpn` under `--alt-svc`: why the run
    /// stayed on TCP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
}

impl Default for ProtocolChoice {
    fn default() -> Self {
        ProtocolChoice::new("1.1", "cleartext")
    }
}

impl ProtocolChoice {
    pub fn new(version: &str, chosen_by: &str) -> ProtocolChoice {
        ProtocolChoice {
            version: version.to_string(),
            chosen_by: chosen_by.to_string(),
            fallback: None,
        }
    }

    /// `HTTP/2, negotiated by ALPN; --http 1.1 to compare with http://`: the version, how it
    /// was chosen, and the flag that changes it.
    pub fn describe(&self) -> String {
        let v = format!("HTTP/{}", self.version);
        match (self.chosen_by.as_str(), self.version.as_str()) {
            ("alpn", _) if self.fallback.is_some() => format!(
                "{v}, negotiated by ALPN ({})",
                self.fallback.as_deref().unwrap_or_default()
            ),
            ("alt-svc", _) => {
                format!("{v}, announced by the server's Alt-Svc; --http 2 to compare over TCP")
            }
            ("alpn", "2") => format!("{v}, negotiated by ALPN; --http 1.1 to compare with http://"),
            ("alpn", _) => format!("{v}, negotiated by ALPN (the server did not pick h2)"),
            ("http-flag", ver) => format!("{v}, asked with --http {ver}"),
            ("no-keep-alive", _) => {
                format!("{v}, --no-keep-alive (HTTP/2 needs kept connections)")
            }
            ("alpn-probe-failed", _) => format!(
                "{v}, as the ALPN probe failed ({}); --http 2 to insist",
                self.fallback.as_deref().unwrap_or("no reason given")
            ),
            _ => format!("{v}, cleartext (http://; --http 2 for h2c)"),
        }
    }
}

/// Connection attempts, counted as what they are: one per socket connect started, whatever
/// number of requests waited on it (HTTP/2 puts many on one).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConnectSummary {
    /// Socket connects started in the measured window.
    pub attempts: u64,
    /// Attempts that failed before TCP connected, by error kind (`connect-refused`,
    /// `connect-timeout`, `other` for unreachable, …); TLS handshake failures are in
    /// `tls.failures`.
    pub failed: BTreeMap<String, u64>,
    /// Requests that needed a new connection while the connect backoff held (every attempt
    /// of the last second had failed): failed at once as the last attempt did, no attempt.
    pub held_by_backoff: u64,
}

impl ConnectSummary {
    fn from_recorder(r: &Recorder) -> ConnectSummary {
        ConnectSummary {
            attempts: r.connect_attempts,
            failed: ErrorKind::ALL
                .iter()
                .filter(|k| r.connect_failures[k.index()] > 0)
                .map(|k| (k.name().to_string(), r.connect_failures[k.index()]))
                .collect(),
            held_by_backoff: r.connects_held,
        }
    }

    /// Attempts that failed before TCP connected.
    pub fn failed_count(&self) -> u64 {
        self.failed.values().sum()
    }
}

/// What TLS cost and how it went: handshakes apart from the requests they carried.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TlsSummary {
    /// Handshakes begun (their TCP connect completed): completed (full + resumed) plus
    /// failed, and any the end of the run cut off (0 in results written before it was kept).
    #[serde(default)]
    pub handshakes_started: u64,
    /// Handshakes with the full key exchange, and those that resumed a session.
    pub handshakes_full: u64,
    pub handshakes_resumed: u64,
    /// Handshake time of new connections, after the TCP connect.
    pub handshake_time_ms: LatencyStats,
    /// Why handshakes failed, by reason: one per failed handshake (the requests it carried
    /// are `tls-handshake` and `tls-certificate` errors).
    pub failures: BTreeMap<String, u64>,
}

/// HTTP/3's QUIC figures, from quinn-proto's statistics of each connection up to its last
/// counted answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QuicSummary {
    pub packets_sent: u64,
    pub packets_received: u64,
    /// Packets QUIC declared lost; their frames were sent again in later packets.
    pub packets_lost: u64,
    /// The same per answer (the responses counted).
    pub packets_sent_per_response: f64,
    pub packets_received_per_response: f64,
    pub packets_lost_per_response: f64,
    /// Handshakes whose 0-RTT early data the server accepted (`--0rtt on`); they are also
    /// among `tls.handshakes_resumed`.
    pub zero_rtt_accepted: u64,
}

impl QuicSummary {
    /// From the run's totals and its answers.
    pub fn of(t: &super::recorder::QuicTally, responses: u64) -> QuicSummary {
        let per = |n: u64| {
            if responses > 0 {
                n as f64 / responses as f64
            } else {
                0.0
            }
        };
        QuicSummary {
            packets_sent: t.packets_sent,
            packets_received: t.packets_received,
            packets_lost: t.packets_lost,
            packets_sent_per_response: per(t.packets_sent),
            packets_received_per_response: per(t.packets_received),
            packets_lost_per_response: per(t.packets_lost),
            zero_rtt_accepted: t.zero_rtt_accepted,
        }
    }

    /// Its tally (for adding the parts of a split run).
    pub fn tally(&self) -> super::recorder::QuicTally {
        super::recorder::QuicTally {
            packets_sent: self.packets_sent,
            packets_received: self.packets_received,
            packets_lost: self.packets_lost,
            zero_rtt_accepted: self.zero_rtt_accepted,
        }
    }
}

impl TlsSummary {
    pub fn failed_count(&self) -> u64 {
        self.failures.values().sum()
    }
}

impl TlsSummary {
    fn from_recorder(r: &Recorder) -> Option<TlsSummary> {
        r.tls.then(|| TlsSummary {
            handshakes_started: r.handshakes_started,
            handshakes_full: r.handshakes_full,
            handshakes_resumed: r.handshakes_resumed,
            handshake_time_ms: LatencyStats::from_hist(&r.tls_handshake),
            failures: TlsReason::ALL
                .iter()
                .filter(|k| r.tls_failures[k.index()] > 0)
                .map(|k| (k.name().to_string(), r.tls_failures[k.index()]))
                .collect(),
        })
    }
}

impl Summary {
    /// Builds the summary of merged measurements. `planned` is the window's planned length
    /// when the run went its full course (see [`Recorder::window_secs`]).
    pub fn from_recorder(
        r: &Recorder,
        offered_rate: Option<f64>,
        users: Option<u64>,
        planned: Option<Duration>,
    ) -> Summary {
        let secs = r.window_secs(planned);
        let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        let errors: BTreeMap<String, u64> = ErrorKind::ALL
            .iter()
            .filter(|k| r.errors[k.index()] > 0)
            .map(|k| (k.name().to_string(), r.errors[k.index()]))
            .collect();
        let statuses = r
            .statuses
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(code, &n)| {
                (
                    if code == 0 {
                        "other".to_string()
                    } else {
                        code.to_string()
                    },
                    n,
                )
            })
            .collect();
        let error_count = r.error_count();
        Summary {
            mode: if users.is_some() { "closed" } else { "open" }.to_string(),
            offered_rate,
            users,
            throughput: per_s(r.responses),
            goodput: per_s(r.ok),
            requests: r.requests,
            sent: r.sent,
            responses: r.responses,
            unsent: r.unsent,
            retries: r.retries,
            interrupted_requests: r.interrupted,
            protocol: None,
            protocols: super::recorder::PROTOCOLS
                .iter()
                .zip(r.protocols)
                .filter(|(_, n)| *n > 0)
                .map(|(v, n)| (v.to_string(), n))
                .collect(),
            duration_s: secs,
            connections_opened: r.connections_opened,
            connects: Some(ConnectSummary::from_recorder(r)),
            errors,
            error_count,
            error_ratio: if r.requests > 0 {
                error_count as f64 / r.requests as f64
            } else {
                0.0
            },
            statuses,
            ok_status: r.ok_status,
            bytes_in: r.bytes_in,
            bytes_out: r.bytes_out,
            bytes_in_per_s: per_s(r.bytes_in),
            response_time_ms: LatencyStats::from_hist(&r.response_time),
            service_time_ms: LatencyStats::from_hist(&r.service_time),
            send_lag_ms: LatencyStats::from_hist(&r.send_lag),
            connect_time_ms: LatencyStats::from_hist(&r.connect_time),
            first_byte_ms: LatencyStats::from_hist(&r.first_byte),
            tls: TlsSummary::from_recorder(r),
            quic: (r.protocols[2] > 0).then(|| QuicSummary::of(&r.quic, r.responses)),
            names: {
                let mut names: Vec<NameSummary> = r
                    .names
                    .iter()
                    .filter(|n| n.responses + n.error_count() > 0)
                    .map(|n| NameSummary::of(n, secs))
                    .collect();
                sort_names(&mut names);
                names
            },
            sessions: r.sessions.open.then(|| SessionSummary {
                offered_per_s: offered_rate.unwrap_or(0.0),
                started: r.sessions.started,
                completed: r.sessions.completed,
                completed_per_s: per_s(r.sessions.completed),
                failed: r.sessions.failed,
                dropped: r.sessions.dropped,
            }),
        }
    }

    /// Responses whose status counts as success (`ok_status`: 2xx and 3xx by default).
    pub fn ok_count(&self) -> u64 {
        self.statuses
            .iter()
            .filter(|(code, _)| self.ok_status.contains_code(code))
            .map(|(_, n)| n)
            .sum()
    }

    /// Answers whose status does not count as success (4xx and 5xx by default), statuses out
    /// of range included.
    pub fn not_ok_count(&self) -> u64 {
        self.statuses
            .iter()
            .filter(|(code, _)| !self.ok_status.contains_code(code))
            .map(|(_, n)| n)
            .sum()
    }

    /// A run in which requests failed and none got an answer measured nothing about the server
    /// (wrk and ab stop with "connection refused"): the one-line reason it failed, naming the
    /// dominant error kind; None when something answered (any status) or nothing failed.
    /// `target`: where the requests went, for the message.
    pub fn nothing_answered(&self, target: &str) -> Option<String> {
        if self.responses > 0 || self.error_count == 0 {
            return None;
        }
        // The most frequent kind; on a tie the first in taxonomy order, so the line is stable.
        let (kind, n) = ErrorKind::ALL.iter().map(|&k| (k, self.errors_of(k))).fold(
            (ErrorKind::Other, 0),
            |best, cur| {
                if cur.1 > best.1 {
                    cur
                } else {
                    best
                }
            },
        );
        let rest = self.error_count - n;
        let rest = if rest > 0 {
            format!(" (and {rest} other errors)")
        } else {
            String::new()
        };
        // A refused handshake says why (name-mismatch, expired, …): the kind alone does not.
        let why = match &self.tls {
            Some(t) if matches!(kind, ErrorKind::TlsCertificate | ErrorKind::TlsHandshake) => {
                let reasons: Vec<&str> = TlsReason::ALL
                    .iter()
                    .filter(|r| r.kind() == kind && t.failures.contains_key(r.name()))
                    .map(|r| r.name())
                    .collect();
                if reasons.is_empty() {
                    String::new()
                } else {
                    format!(": {}", reasons.join(", "))
                }
            }
            _ => String::new(),
        };
        Some(format!(
            "no request succeeded: {n} {} ({}{why}) to {target}{rest}",
            kind.name(),
            kind.describe()
        ))
    }

    /// Count of one error kind.
    pub fn errors_of(&self, kind: ErrorKind) -> u64 {
        self.errors.get(kind.name()).copied().unwrap_or(0)
    }
}

/// The exact figures the integration tests can only bracket on a busy machine (tests/suite/run.rs):
/// throughput, percentiles and Little's law, computed here from scripted recordings.
#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn ms(n: f64) -> Duration {
        Duration::from_secs_f64(n / 1000.0)
    }

    /// `n` responses due at `every_ms` intervals; `delays(due)` is (ms from due to the send,
    /// ms from the send to the answer).
    fn open_loop(n: usize, every_ms: f64, delays: impl Fn(f64) -> (f64, f64)) -> Recorder {
        let t0 = Instant::now();
        let mut r = Recorder::new(t0, t0, 16);
        for i in 0..n {
            let at = i as f64 * every_ms;
            let intended = t0 + ms(at);
            let (lag, service) = delays(at);
            let sent = intended + ms(lag);
            r.requests += 1;
            r.response(
                200,
                intended,
                Duration::ZERO,
                sent,
                sent,
                sent + ms(service),
                100,
            );
        }
        r
    }

    #[test]
    fn open_loop_at_2000_per_s_for_5_s_is_2000_per_s() {
        let r = open_loop(10_000, 0.5, |_| (0.0, 50.0));
        let s = Summary::from_recorder(&r, Some(2000.0), None, Some(Duration::from_secs(5)));
        assert_eq!(s.responses, 10_000);
        assert!((s.throughput - 2000.0).abs() < 0.5, "{}", s.throughput);
        assert_eq!(s.goodput, s.throughput);
        // 3 significant digits: 50 ms reads as 50.0 ± 0.05.
        assert!(
            (s.response_time_ms.p50 - 50.0).abs() < 0.05,
            "{:?}",
            s.response_time_ms
        );
        assert!((s.service_time_ms.p99 - 50.0).abs() < 0.05);
        assert_eq!(s.send_lag_ms.max, 0.0);
        assert_eq!(s.error_count, 0);
    }

    /// The coordinated-omission case of tests/suite/run.rs: 500/s for 10 s against a server frozen
    /// the last second of every 5. A request due while frozen waits for a connection until
    /// the freeze ends, then takes 1 ms: 20% of the requests are 0–1 s late, evenly, so from
    /// the intended time p90 ≈ 0.5 s and p99 ≈ 0.95 s, while the service time stays 1 ms.
    #[test]
    fn a_stall_is_counted_from_the_intended_time() {
        let r = open_loop(5000, 2.0, |at| {
            let in_period = at % 5000.0;
            let lag = if in_period >= 4000.0 {
                5000.0 - in_period
            } else {
                0.0
            };
            (lag, 1.0)
        });
        let s = Summary::from_recorder(&r, Some(500.0), None, Some(Duration::from_secs(10)));
        let rt = s.response_time_ms;
        assert!((rt.p50 - 1.0).abs() < 0.01, "{rt:?}");
        assert!((rt.p90 - 501.0).abs() < 3.0, "{rt:?}");
        assert!((rt.p99 - 951.0).abs() < 3.0, "{rt:?}");
        assert!((rt.max - 1001.0).abs() < 1.0, "{rt:?}");
        assert!((s.throughput - 500.0).abs() < 0.5, "{}", s.throughput);
        assert!((s.service_time_ms.max - 1.0).abs() < 0.01);
        assert!((s.send_lag_ms.p99 - 950.0).abs() < 3.0);
    }

    #[test]
    fn a_run_where_nothing_answered_fails_with_the_dominant_error() {
        let t0 = Instant::now();
        let mut r = Recorder::new(t0, t0, 4);
        r.requests = 10;
        for _ in 0..7 {
            r.error(ErrorKind::ConnectRefused, t0);
        }
        for _ in 0..3 {
            r.error(ErrorKind::Reset, t0);
        }
        let s = Summary::from_recorder(&r, Some(10.0), None, None);
        assert_eq!(
            s.nothing_answered("127.0.0.1:9").as_deref(),
            Some(
                "no request succeeded: 7 connect-refused (connection refused) to 127.0.0.1:9 \
                 (and 3 other errors)"
            )
        );
        // One answer, even a 503, is a measurement of the server: not this failure.
        r.response(503, t0, Duration::ZERO, t0, t0, t0 + ms(1.0), 10);
        let s = Summary::from_recorder(&r, Some(10.0), None, None);
        assert_eq!(s.nothing_answered("127.0.0.1:9"), None);
        // Nothing failed and nothing answered (nothing was sent): not this failure either.
        let empty = Summary::from_recorder(&Recorder::new(t0, t0, 1), Some(1.0), None, None);
        assert_eq!(empty.nothing_answered("x"), None);
        // A tie names the first kind in taxonomy order.
        let mut r = Recorder::new(t0, t0, 4);
        r.error(ErrorKind::Timeout, t0);
        r.error(ErrorKind::Reset, t0);
        let s = Summary::from_recorder(&r, None, Some(1), None);
        assert!(s.nothing_answered("h:1").unwrap().contains(" 1 reset "));
    }

    /// Each way a protocol is chosen reads as the version, how, and the flag that changes it;
    /// a probe that failed says why the run fell back; older results without it still read.
    #[test]
    fn the_protocol_choice_says_how_and_older_results_read_without_it() {
        let d = |v: &str, by: &str| ProtocolChoice::new(v, by).describe();
        assert_eq!(
            d("2", "alpn"),
            "HTTP/2, negotiated by ALPN; --http 1.1 to compare with http://"
        );
        assert_eq!(
            d("1.1", "alpn"),
            "HTTP/1.1, negotiated by ALPN (the server did not pick h2)"
        );
        assert_eq!(d("2", "http-flag"), "HTTP/2, asked with --http 2");
        assert_eq!(
            d("1.1", "cleartext"),
            "HTTP/1.1, cleartext (http://; --http 2 for h2c)"
        );
        let failed = ProtocolChoice {
            fallback: Some("127.0.0.1:1: TLS handshake not done within 300 ms".into()),
            ..ProtocolChoice::new("1.1", "alpn-probe-failed")
        };
        assert_eq!(
            failed.describe(),
            "HTTP/1.1, as the ALPN probe failed (127.0.0.1:1: TLS handshake not done within \
             300 ms); --http 2 to insist"
        );
        let t0 = Instant::now();
        let mut s = Summary::from_recorder(&Recorder::new(t0, t0, 1), None, Some(1), None);
        s.protocol = Some(failed.clone());
        let mut v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["protocol"]["chosen_by"], "alpn-probe-failed");
        assert_eq!(v["connects"]["attempts"], 0);
        let o = v.as_object_mut().unwrap();
        o.remove("protocol");
        o.remove("connects");
        let old: Summary = serde_json::from_value(v).unwrap();
        assert_eq!((old.protocol, old.connects), (None, None));
    }

    /// Closed loop: 4 users, 20 ms per answer, no think time, for 4 s: 200/s, and
    /// throughput × mean response time = 4 users (Little's law).
    #[test]
    fn closed_loop_throughput_obeys_littles_law() {
        let t0 = Instant::now();
        let mut r = Recorder::new(t0, t0, 8);
        for _user in 0..4 {
            for k in 0..200 {
                let sent = t0 + ms(20.0 * k as f64);
                r.requests += 1;
                r.response(200, sent, Duration::ZERO, sent, sent, sent + ms(20.0), 10);
            }
        }
        let s = Summary::from_recorder(&r, None, Some(4), Some(Duration::from_secs(4)));
        assert_eq!(s.mode, "closed");
        assert!((s.throughput - 200.0).abs() < 0.5, "{}", s.throughput);
        let users = s.throughput * s.response_time_ms.mean / 1000.0;
        assert!((users - 4.0).abs() < 0.01, "{users}");
    }
}
