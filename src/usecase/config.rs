//! The parts every load-sending configuration shares (run, sweep, capacity): what to send,
//! how connections behave, the open loop's arrivals, the steps' timing and where results go.
//! Each `Default` is the only copy of its defaults: the command line's `--help` shows them
//! from here and the experiment files fall back to them.
//!
//! Errors name the command-line flag, since that is how users meet these options; the
//! experiment validates its TOML keys before it builds these, with errors naming the key.
use crate::engine::h2::hpack::{encode_request, RequestParts};
use crate::engine::{Arrival, EngineConfig, Http2, Load, Pick, Prepared};
use crate::fsutil::{read_capped, MAX_BODY_FILE};
use crate::plan::{parse_headers, parse_method, read_urls_file, RequestSpec, Url};
use crate::Error;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// What to send.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestConfig {
    /// Target URLs, `http://host[:port]/path`.
    pub urls: Vec<String>,
    /// More URLs from a file in siege's format.
    pub urls_file: Option<PathBuf>,
    pub pick: Pick,
    pub method: String,
    /// `Name: value` headers.
    pub headers: Vec<String>,
    /// Request body: text, or `@FILE`.
    pub body: Option<String>,
}

impl Default for RequestConfig {
    fn default() -> Self {
        RequestConfig {
            urls: Vec::new(),
            urls_file: None,
            pick: Pick::Sequence,
            method: "GET".into(),
            headers: Vec::new(),
            body: None,
        }
    }
}

/// Which HTTP version the connections speak (`--http`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpVersion {
    V1,
    /// HTTP/2: h2c with prior knowledge over cleartext (no upgrade dance).
    V2,
    /// What the server negotiates: over cleartext there is nothing to negotiate, so HTTP/1.1.
    Auto,
}

impl HttpVersion {
    pub fn parse(s: &str) -> Result<HttpVersion, String> {
        match s {
            "1.1" | "1" => Ok(HttpVersion::V1),
            "2" | "2.0" => Ok(HttpVersion::V2),
            "auto" => Ok(HttpVersion::Auto),
            _ => Err(format!("'{s}': use 1.1, 2 or auto")),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            HttpVersion::V1 => "1.1",
            HttpVersion::V2 => "2",
            HttpVersion::Auto => "auto",
        }
    }
}

/// How connections behave.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnConfig {
    pub http: HttpVersion,
    /// HTTP/2: concurrent streams per connection.
    pub streams: u32,
    pub keep_alive: bool,
    pub calls_per_connection: Option<u32>,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    /// Worker threads; `None`: one per core.
    pub threads: Option<usize>,
    pub pacing_slack: Duration,
    pub seed: u64,
}

impl Default for ConnConfig {
    fn default() -> Self {
        ConnConfig {
            http: HttpVersion::Auto,
            streams: 100,
            keep_alive: true,
            calls_per_connection: None,
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(3),
            threads: None,
            pacing_slack: Duration::from_millis(1),
            seed: 1,
        }
    }
}

/// The open loop's arrivals and connection pool.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpenLoopConfig {
    pub arrival: Arrival,
    /// Most connections to open.
    pub connections: usize,
}

impl Default for OpenLoopConfig {
    fn default() -> Self {
        OpenLoopConfig {
            arrival: Arrival::Constant,
            connections: 10_000,
        }
    }
}

impl OpenLoopConfig {
    pub fn validate(&self) -> crate::Result<()> {
        if self.connections == 0 || self.connections > 1_000_000 {
            return Err(Error::usage(format!(
                "--connections {}: use 1 to 1000000",
                self.connections
            )));
        }
        Ok(())
    }

    pub fn load(&self, rate: f64) -> Load {
        Load::Open {
            rate,
            arrival: self.arrival,
            max_connections: self.connections,
        }
    }
}

/// The timing of every step of a stepped run (sweep, capacity).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepTiming {
    /// Warm-up of each step (sent, not counted).
    pub warmup: Duration,
    /// Measured length of each step (S1's TEST_DURATION).
    pub step: Duration,
    /// Pause between steps, so the server drains (S1's WAIT).
    pub rest: Duration,
}

impl Default for StepTiming {
    fn default() -> Self {
        StepTiming {
            warmup: Duration::from_secs(5),
            step: Duration::from_secs(30),
            rest: Duration::from_secs(5),
        }
    }
}

impl StepTiming {
    pub fn validate(&self) -> crate::Result<()> {
        if self.step.is_zero() {
            return Err(Error::usage("--step must be above zero"));
        }
        Ok(())
    }
}

/// Where a stepped run's results go and how much it prints while running.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Output {
    /// Results folder; `None`: `runs/<UTC time>-<name>`.
    pub out: Option<PathBuf>,
    /// Name of the run; `None`: from the first URL.
    pub name: Option<String>,
    /// No progress bar and no per-step lines.
    pub quiet: bool,
}

/// Parses an SLO text into the analysis' type, as a usage error.
pub fn parse_slo(text: Option<&str>) -> crate::Result<Option<crate::analysis::Slo>> {
    text.map(crate::analysis::slo::parse)
        .transpose()
        .map_err(Error::usage)
}

/// The request mix, resolved and pre-rendered for the engine.
pub struct Mix {
    pub addrs: Vec<SocketAddr>,
    pub requests: Vec<Prepared>,
    pub pick: Pick,
    /// The URLs, for display and the results.
    pub urls: Vec<String>,
}

impl RequestConfig {
    pub fn specs(&self) -> crate::Result<Vec<RequestSpec>> {
        let method = parse_method(&self.method).map_err(|e| Error::usage(format!("-X: {e}")))?;
        let headers = parse_headers(&self.headers).map_err(|e| Error::usage(format!("-H: {e}")))?;
        let body = match &self.body {
            None => None,
            Some(b) => match b.strip_prefix('@') {
                Some(path) => Some(
                    read_capped(path.as_ref(), MAX_BODY_FILE, "--body").map_err(Error::usage)?,
                ),
                None => Some(b.as_bytes().to_vec()),
            },
        };
        let mut specs = Vec::new();
        for u in &self.urls {
            let url = Url::parse(u).map_err(|e| Error::usage(format!("URL {e}")))?;
            specs.push(RequestSpec {
                method: method.clone(),
                url,
                headers: headers.clone(),
                body: body.clone(),
            });
        }
        if let Some(f) = &self.urls_file {
            for mut s in read_urls_file(f).map_err(Error::usage)? {
                s.headers.extend(headers.iter().cloned());
                specs.push(s);
            }
        }
        if specs.is_empty() {
            return Err(Error::usage(
                "no URL given (pass URL arguments or --urls FILE)",
            ));
        }
        Ok(specs)
    }

    /// Resolves hosts (once, before the run) and renders every request.
    pub fn mix(&self) -> crate::Result<Mix> {
        let specs = self.specs()?;
        let mut addrs: Vec<SocketAddr> = Vec::new();
        let mut requests = Vec::new();
        let mut urls = Vec::new();
        for s in &specs {
            let addr = s.url.resolve().map_err(|e| {
                Error::usage(format!(
                    "URL 'http://{}{}': {e}",
                    s.url.authority, s.url.target
                ))
            })?;
            let idx = match addrs.iter().position(|a| *a == addr) {
                Some(i) => i,
                None => {
                    addrs.push(addr);
                    addrs.len() - 1
                }
            };
            requests.push(Prepared {
                addr: idx,
                keep_alive: s.render(false),
                close: s.render(true),
                head_only: s.method == "HEAD",
                h2_block: encode_request(&RequestParts {
                    method: &s.method,
                    scheme: s.url.scheme.as_str(),
                    authority: &s.url.authority,
                    path: &s.url.target,
                    headers: &s.headers,
                    body_len: s.body.as_ref().map(Vec::len),
                }),
                body: s.body.clone().unwrap_or_default(),
            });
            urls.push(format!(
                "{} http://{}{}",
                s.method, s.url.authority, s.url.target
            ));
        }
        Ok(Mix {
            addrs,
            requests,
            pick: self.pick,
            urls,
        })
    }
}

/// Most `--streams`: beyond what servers allow (nginx 128, h2o 100, Go 250) by far.
const MAX_STREAMS: u32 = 65_536;

impl ConnConfig {
    /// The engine's HTTP/2 settings, when the connections speak it. `auto` over cleartext is
    /// HTTP/1.1: h2c is only used when asked for.
    pub fn http2(&self) -> Option<Http2> {
        (self.http == HttpVersion::V2).then_some(Http2 {
            streams: self.streams,
        })
    }

    pub fn validate(&self) -> crate::Result<()> {
        if self.calls_per_connection == Some(0) {
            return Err(Error::usage("--calls-per-connection must be at least 1"));
        }
        if !self.keep_alive && self.calls_per_connection.is_some_and(|k| k > 1) {
            return Err(Error::usage(
                "--no-keep-alive and --calls-per-connection K > 1 contradict each other",
            ));
        }
        if self.streams == 0 || self.streams > MAX_STREAMS {
            return Err(Error::usage(format!(
                "--streams {}: use 1 to {MAX_STREAMS}",
                self.streams
            )));
        }
        if self.http == HttpVersion::V2 && !self.keep_alive {
            return Err(Error::usage(
                "--http 2 and --no-keep-alive contradict each other (HTTP/2 multiplexes requests \
                 on kept connections; use --calls-per-connection 1 for one request per connection)",
            ));
        }
        if self.timeout.is_zero() {
            return Err(Error::usage("--timeout must be above zero"));
        }
        if self.connect_timeout.is_zero() {
            return Err(Error::usage("--connect-timeout must be above zero"));
        }
        if let Some(t) = self.threads {
            if t == 0 || t > 1024 {
                return Err(Error::usage(format!("--threads {t}: use 1 to 1024")));
            }
        }
        Ok(())
    }

    pub fn threads(&self) -> usize {
        self.threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    }
}

/// The engine configuration shared by run, sweep and capacity (the load itself aside).
pub fn base_config(
    request: &RequestConfig,
    conn: &ConnConfig,
    load: Load,
    duration: Option<Duration>,
    max_requests: Option<u64>,
    warmup: Duration,
) -> crate::Result<(EngineConfig, Vec<String>)> {
    conn.validate()?;
    let mix = request.mix()?;
    let cfg = EngineConfig {
        addrs: mix.addrs,
        requests: mix.requests,
        pick: mix.pick,
        load,
        duration,
        max_requests,
        warmup,
        threads: conn.threads(),
        keep_alive: conn.keep_alive && conn.calls_per_connection != Some(1),
        calls_per_connection: conn.calls_per_connection,
        timeout: conn.timeout,
        connect_timeout: conn.connect_timeout,
        seed: conn.seed,
        pacing_slack: conn.pacing_slack,
        http2: conn.http2(),
    };
    Ok((cfg, mix.urls))
}
