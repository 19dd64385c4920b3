//! What the controller and a generator agent say to each other: a step sent as data (the
//! typed plan of one step, serde JSON) and its answer (the step's record with its histograms
//! and per-second series, as the results folder stores them).
//!
//! The engine's own types (`Load`, `Arrival`, `Pick`, pre-rendered requests) carry no serde
//! derives and hold resolved addresses, so the wire mirrors them field for field and converts
//! both ways: the agent resolves the URLs itself, which is what lets it check them against its
//! allow-list.
//!
//! TLS options travel as values, never as paths: the controller reads `--cacert` and sends
//! the PEM text (a path on the controller means nothing on the agent). A client key never
//! travels: `--client-cert`/`--client-key` are refused with `--generators`.
use crate::engine::tls::TlsVersion;
use crate::engine::{Arrival, Load, Pick};
use crate::plan::{RequestSpec, Segment, Url};
use crate::store::{SeriesPoint, StepRecord};
use crate::usecase::config::{ConnConfig, HttpVersion, TlsConfig};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Bumped when a field changes meaning; an agent refuses another version in one line.
/// 2: the connection's HTTP version and streams as given (`http`, `streams`), and TLS.
pub const PROTOCOL: u32 = 2;

/// Largest `--cacert` file sent (PEM bundles are tens of KB; the system's is about 200 KB).
const MAX_CA_PEM: u64 = 1 << 20;

/// One step for one generator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepPlan {
    pub protocol: u32,
    pub requests: Vec<WireRequest>,
    pub pick: WirePick,
    /// The whole plan's load: the agent sends its segment's part of it.
    pub load: WireLoad,
    pub conn: WireConn,
    pub warmup_ms: u64,
    pub duration_ms: u64,
    /// The step's index in the run.
    pub index: usize,
    pub segment_index: u32,
    pub segment_count: u32,
    /// Unix ms at which every agent starts the step.
    pub start_at_unix_ms: u64,
    /// Unix ms at which the run started: the seconds of the step's series count from it.
    pub run_start_unix_ms: u64,
    /// The statuses that count as success (`--ok-status`); absent: 2xx and 3xx, as agents
    /// of an earlier protocol judged them.
    #[serde(default, skip_serializing_if = "crate::metrics::OkStatus::is_default")]
    pub ok_status: crate::metrics::OkStatus,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireRequest {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    /// The body, base64 (it may be binary).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_base64: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WirePick {
    Sequence,
    Random,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WireArrival {
    Constant,
    Poisson,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "loop", rename_all = "lowercase")]
pub enum WireLoad {
    Open {
        rate: f64,
        arrival: WireArrival,
        max_connections: usize,
    },
    Closed {
        users: usize,
        think_ms: (u64, u64),
    },
}

/// How connections behave (`ConnConfig`, its TLS files read).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireConn {
    pub http: WireHttp,
    /// `--alt-svc`: each agent reads the server's `Alt-Svc` itself.
    #[serde(default)]
    pub alt_svc: bool,
    /// HTTP/2: concurrent streams per connection.
    pub streams: u32,
    pub keep_alive: bool,
    pub calls_per_connection: Option<u32>,
    pub timeout_ms: u64,
    pub connect_timeout_ms: u64,
    /// None: the agent's cores.
    pub threads: Option<usize>,
    pub pacing_slack_us: u64,
    pub seed: u64,
    /// For https:// URLs.
    pub tls: WireTls,
    /// `--io` when not auto (absent: auto, each agent probing its own kernel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<String>,
}

/// `--http`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WireHttp {
    #[serde(rename = "1.1")]
    V1,
    #[serde(rename = "2")]
    V2,
    #[serde(rename = "3")]
    V3,
    #[serde(rename = "auto")]
    Auto,
}

/// The TLS options of https:// targets, as values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireTls {
    /// `--cacert`'s contents (PEM text); None: the agent's system roots.
    pub ca_pem: Option<String>,
    /// `--insecure`.
    pub insecure: bool,
    /// `--tls-version`; None: 1.2 or 1.3.
    pub version: Option<WireTlsVersion>,
    /// `--tls-resumption`.
    pub resumption: bool,
    /// `--0rtt` (absent from a controller that predates it: off).
    #[serde(default)]
    pub early_data: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WireTlsVersion {
    #[serde(rename = "1.2")]
    V12,
    #[serde(rename = "1.3")]
    V13,
}

/// `POST /stop`: end the step that starts at this time (the controller was interrupted);
/// the step's own exchange then answers with what was measured up to now. Naming the step
/// keeps a late stop from ending the next one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopStep {
    pub start_at_unix_ms: u64,
}

/// A generator's answer: its part of the step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepAnswer {
    pub protocol: u32,
    /// The agent's host name, for the record.
    pub host: String,
    pub record: StepRecord,
    pub series: Vec<SeriesPoint>,
    pub notes: Vec<String>,
    pub interrupted: bool,
}

/// What an agent allows, as `GET /generator` tells a controller before the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GeneratorInfo {
    pub protocol: u32,
    pub host: String,
    pub allowed_targets: Vec<String>,
    pub max_rate: f64,
    pub max_duration_ms: u64,
    pub max_connections: usize,
    pub cores: usize,
}

fn ms(d: Duration) -> u64 {
    d.as_millis().min(u128::from(u64::MAX)) as u64
}

impl WireRequest {
    pub fn of(s: &RequestSpec) -> WireRequest {
        WireRequest {
            method: s.method.clone(),
            url: format!("{}{}", s.url.origin(), s.url.target),
            headers: s.headers.clone(),
            body_base64: s
                .body
                .as_ref()
                .map(|b| base64::engine::general_purpose::STANDARD.encode(b)),
        }
    }

    /// The request spec, its URL parsed; errors name the URL.
    pub fn spec(&self) -> Result<RequestSpec, String> {
        let url = Url::parse(&self.url).map_err(|e| format!("URL {e}"))?;
        let method = crate::plan::parse_method(&self.method)?;
        let body = match &self.body_base64 {
            None => None,
            Some(b) => Some(
                base64::engine::general_purpose::STANDARD
                    .decode(b)
                    .map_err(|_| format!("URL '{}': the body is not base64", self.url))?,
            ),
        };
        Ok(RequestSpec {
            method,
            url,
            headers: self.headers.clone(),
            body,
        })
    }
}

impl WirePick {
    /// None for an access log's weighted mix: its weights do not travel (sweep and capacity
    /// take no access log today).
    pub fn of(p: Pick) -> Option<WirePick> {
        match p {
            Pick::Sequence => Some(WirePick::Sequence),
            Pick::Random => Some(WirePick::Random),
            Pick::Weighted => None,
        }
    }
    pub fn pick(self) -> Pick {
        match self {
            WirePick::Sequence => Pick::Sequence,
            WirePick::Random => Pick::Random,
        }
    }
}

impl WireLoad {
    pub fn of(l: Load) -> WireLoad {
        match l {
            Load::Open {
                rate,
                arrival,
                max_connections,
            } => WireLoad::Open {
                rate,
                arrival: match arrival {
                    Arrival::Constant => WireArrival::Constant,
                    Arrival::Poisson => WireArrival::Poisson,
                },
                max_connections,
            },
            Load::Closed { users, think } => WireLoad::Closed {
                users,
                think_ms: (ms(think.0), ms(think.1)),
            },
        }
    }
    pub fn load(self) -> Load {
        match self {
            WireLoad::Open {
                rate,
                arrival,
                max_connections,
            } => Load::Open {
                rate,
                arrival: match arrival {
                    WireArrival::Constant => Arrival::Constant,
                    WireArrival::Poisson => Arrival::Poisson,
                },
                max_connections,
            },
            WireLoad::Closed { users, think_ms } => Load::Closed {
                users,
                think: (
                    Duration::from_millis(think_ms.0),
                    Duration::from_millis(think_ms.1),
                ),
            },
        }
    }
}

impl WireConn {
    /// The wire form of `c`, `--cacert` read into it; errors in one line (a client key
    /// refused: it must not leave this host).
    pub fn of(c: &ConnConfig) -> crate::Result<WireConn> {
        let t = &c.tls;
        if c.source.is_some() {
            return Err(crate::Error::usage(
                "--source names this host's addresses, not the generators': with --generators, \
                 give each agent its own (agent --generate --source ADDRS)",
            ));
        }
        if t.client_cert.is_some() || t.client_key.is_some() {
            return Err(crate::Error::usage(
                "--client-cert/--client-key: a client key is not sent to generator agents; \
                 with --generators, leave them out (or run the segments with --segment I/N and merge)",
            ));
        }
        let ca_pem = match (&t.cacert, &t.ca_pem) {
            (Some(path), _) => {
                let pem = crate::fsutil::read_capped(path, MAX_CA_PEM, "--cacert")
                    .map_err(crate::Error::usage)?;
                Some(String::from_utf8(pem).map_err(|_| {
                    crate::Error::usage(format!("--cacert {}: not a PEM text file", path.display()))
                })?)
            }
            (None, Some(pem)) => Some(String::from_utf8_lossy(pem).into_owned()),
            (None, None) => None,
        };
        Ok(WireConn {
            http: match c.http {
                HttpVersion::V1 => WireHttp::V1,
                HttpVersion::V2 => WireHttp::V2,
                HttpVersion::V3 => WireHttp::V3,
                HttpVersion::Auto => WireHttp::Auto,
            },
            alt_svc: c.alt_svc,
            streams: c.streams,
            keep_alive: c.keep_alive,
            calls_per_connection: c.calls_per_connection,
            timeout_ms: ms(c.timeout),
            connect_timeout_ms: ms(c.connect_timeout),
            threads: c.threads,
            pacing_slack_us: c.pacing_slack.as_micros().min(u128::from(u64::MAX)) as u64,
            seed: c.seed,
            io: (c.io != crate::engine::IoChoice::Auto).then(|| c.io.name().to_string()),
            tls: WireTls {
                ca_pem,
                insecure: t.insecure,
                version: t.version.map(|v| match v {
                    TlsVersion::V12 => WireTlsVersion::V12,
                    TlsVersion::V13 => WireTlsVersion::V13,
                }),
                resumption: t.resumption,
                early_data: t.early_data,
            },
        })
    }

    /// The connection options on the agent: the CA's PEM text given inline
    /// (`TlsConfig::ca_pem`), the agent's own system roots without one.
    pub fn conn(&self) -> ConnConfig {
        ConnConfig {
            http: match self.http {
                WireHttp::V1 => HttpVersion::V1,
                WireHttp::V2 => HttpVersion::V2,
                WireHttp::V3 => HttpVersion::V3,
                WireHttp::Auto => HttpVersion::Auto,
            },
            alt_svc: self.alt_svc,
            streams: self.streams,
            keep_alive: self.keep_alive,
            calls_per_connection: self.calls_per_connection,
            timeout: Duration::from_millis(self.timeout_ms),
            connect_timeout: Duration::from_millis(self.connect_timeout_ms),
            threads: self.threads,
            pacing_slack: Duration::from_micros(self.pacing_slack_us),
            seed: self.seed,
            io: self
                .io
                .as_deref()
                .and_then(|s| crate::engine::IoChoice::parse(s).ok())
                .unwrap_or_default(),
            tls: TlsConfig {
                ca_pem: self.tls.ca_pem.as_ref().map(|p| p.clone().into_bytes()),
                insecure: self.tls.insecure,
                version: self.tls.version.map(|v| match v {
                    WireTlsVersion::V12 => TlsVersion::V12,
                    WireTlsVersion::V13 => TlsVersion::V13,
                }),
                resumption: self.tls.resumption,
                early_data: self.tls.early_data,
                ..TlsConfig::default()
            },
            // The controller's addresses mean nothing on the agent: it has its own
            // (`agent --generate --source`).
            source: None,
        }
    }
}

impl StepPlan {
    pub fn segment(&self) -> Result<Segment, String> {
        Segment::parse(&format!("{}/{}", self.segment_index, self.segment_count))
    }
    pub fn warmup(&self) -> Duration {
        Duration::from_millis(self.warmup_ms)
    }
    pub fn duration(&self) -> Duration {
        Duration::from_millis(self.duration_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_and_connections_round_trip_through_json() {
        for load in [
            Load::Open {
                rate: 1234.5,
                arrival: Arrival::Poisson,
                max_connections: 77,
            },
            Load::Closed {
                users: 9,
                think: (Duration::from_millis(10), Duration::from_millis(250)),
            },
        ] {
            let text = serde_json::to_string(&WireLoad::of(load)).unwrap();
            let back: WireLoad = serde_json::from_str(&text).unwrap();
            assert_eq!(back.load(), load, "{text}");
        }
        let c = ConnConfig {
            http: HttpVersion::V2,
            alt_svc: false,
            streams: 8,
            keep_alive: true,
            calls_per_connection: Some(5),
            timeout: Duration::from_millis(1500),
            connect_timeout: Duration::from_millis(700),
            threads: Some(3),
            pacing_slack: Duration::from_micros(250),
            seed: 42,
            io: crate::engine::IoChoice::Epoll,
            tls: TlsConfig {
                insecure: true,
                version: Some(TlsVersion::V12),
                resumption: false,
                ..TlsConfig::default()
            },
            source: None,
        };
        let wire = WireConn::of(&c).unwrap();
        let text = serde_json::to_string(&wire).unwrap();
        let back: WireConn = serde_json::from_str(&text).unwrap();
        assert_eq!(back.conn(), c, "{text}");
        for (http, alt_svc) in [(HttpVersion::V1, false), (HttpVersion::Auto, true)] {
            let c = ConnConfig {
                http,
                alt_svc,
                ..ConnConfig::default()
            };
            assert_eq!(WireConn::of(&c).unwrap().conn(), c);
        }
        // This host's source addresses are not the generators': refused, in one line.
        let c = ConnConfig {
            source: Some(std::sync::Arc::new(
                crate::engine::source::Sources::parse("127.0.0.1-127.0.0.4").unwrap(),
            )),
            ..ConnConfig::default()
        };
        let e = WireConn::of(&c).unwrap_err().to_string();
        assert!(e.contains("agent --generate --source"), "{e}");
    }

    #[test]
    fn the_cacert_travels_as_its_text_and_a_client_key_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        let pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
        std::fs::write(&ca, pem).unwrap();
        let mut c = ConnConfig::default();
        c.tls.cacert = Some(ca.clone());
        let wire = WireConn::of(&c).unwrap();
        let text = serde_json::to_string(&wire).unwrap();
        assert!(
            !text.contains(ca.to_str().unwrap()),
            "no path on the wire: {text}"
        );
        assert_eq!(wire.tls.ca_pem.as_deref(), Some(pem));
        let on_agent = wire.conn().tls;
        assert_eq!(on_agent.cacert, None);
        assert_eq!(on_agent.ca_pem.as_deref(), Some(pem.as_bytes()));

        c.tls.cacert = Some(dir.path().join("missing.pem"));
        let e = WireConn::of(&c).unwrap_err().to_string();
        assert!(e.contains("--cacert") && e.contains("missing.pem"), "{e}");

        let mut c = ConnConfig::default();
        c.tls.client_cert = Some(dir.path().join("client.pem"));
        c.tls.client_key = Some(dir.path().join("client.key"));
        let e = WireConn::of(&c).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("client key is not sent"), "{e}");
    }

    #[test]
    fn requests_keep_method_headers_and_binary_bodies() {
        let spec = RequestSpec {
            method: "POST".into(),
            url: Url::parse("http://127.0.0.1:8080/a?b=1").unwrap(),
            headers: vec![("X-A".into(), "1".into())],
            body: Some(vec![0, 255, 10, 13]),
        };
        let w = WireRequest::of(&spec);
        let back: WireRequest = serde_json::from_str(&serde_json::to_string(&w).unwrap()).unwrap();
        assert_eq!(back.spec().unwrap(), spec);
        let bad = WireRequest {
            body_base64: Some("***".into()),
            ..w
        };
        assert!(bad.spec().unwrap_err().contains("base64"));
    }
}
