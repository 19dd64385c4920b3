//! What the controller and a generator agent say to each other: a step sent as data (the
//! typed plan of one step, serde JSON) and its answer (the step's record with its histograms
//! and per-second series, as the results folder stores them).
//!
//! The engine's own types (`Load`, `Arrival`, `Pick`, pre-rendered requests) carry no serde
//! derives and hold resolved addresses, so the wire mirrors them field for field and converts
//! both ways: the agent resolves the URLs itself, which is what lets it check them against its
//! allow-list.
use crate::engine::{Arrival, Load, Pick};
use crate::plan::{RequestSpec, Segment, Url};
use crate::store::{SeriesPoint, StepRecord};
use crate::usecase::config::{ConnConfig, HttpVersion, TlsConfig};
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Bumped when a field changes meaning; an agent refuses another version in one line.
pub const PROTOCOL: u32 = 1;

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

/// How connections behave (the plain-HTTP part of `ConnConfig`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WireConn {
    pub keep_alive: bool,
    pub calls_per_connection: Option<u32>,
    pub timeout_ms: u64,
    pub connect_timeout_ms: u64,
    /// None: the agent's cores.
    pub threads: Option<usize>,
    pub pacing_slack_us: u64,
    pub seed: u64,
    /// Some: HTTP/2 (h2c) with this many streams per connection.
    pub http2_streams: Option<u32>,
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
    /// The wire form of `c`; TLS options have no wire form (https targets are refused
    /// before: see `scale::controller`).
    pub fn of(c: &ConnConfig) -> WireConn {
        WireConn {
            keep_alive: c.keep_alive,
            calls_per_connection: c.calls_per_connection,
            timeout_ms: ms(c.timeout),
            connect_timeout_ms: ms(c.connect_timeout),
            threads: c.threads,
            pacing_slack_us: c.pacing_slack.as_micros().min(u128::from(u64::MAX)) as u64,
            seed: c.seed,
            http2_streams: c.http2().map(|h| h.streams),
        }
    }
    pub fn conn(&self) -> ConnConfig {
        ConnConfig {
            http: if self.http2_streams.is_some() {
                HttpVersion::V2
            } else {
                HttpVersion::V1
            },
            streams: self.http2_streams.unwrap_or(ConnConfig::default().streams),
            keep_alive: self.keep_alive,
            calls_per_connection: self.calls_per_connection,
            timeout: Duration::from_millis(self.timeout_ms),
            connect_timeout: Duration::from_millis(self.connect_timeout_ms),
            threads: self.threads,
            pacing_slack: Duration::from_micros(self.pacing_slack_us),
            seed: self.seed,
            tls: TlsConfig::default(),
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
            streams: 8,
            keep_alive: true,
            calls_per_connection: Some(5),
            timeout: Duration::from_millis(1500),
            connect_timeout: Duration::from_millis(700),
            threads: Some(3),
            pacing_slack: Duration::from_micros(250),
            seed: 42,
            tls: TlsConfig::default(),
        };
        assert_eq!(WireConn::of(&c).conn(), c);
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
