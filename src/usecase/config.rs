//! The parts every load-sending configuration shares (run, sweep, capacity): what to send,
//! how connections behave, the open loop's arrivals, the steps' timing and where results go.
//! Each `Default` is the only copy of its defaults: the command line's `--help` shows them
//! from here and the experiment files fall back to them.
//!
//! Errors name the command-line flag, since that is how users meet these options; the
//! experiment validates its TOML keys before it builds these, with errors naming the key.
use crate::engine::tls::{TlsClient, TlsClientOptions, TlsVersion};
use crate::engine::{Arrival, Http2, Http3, Load, Pick};
use crate::fsutil::read_capped;
use crate::plan::access_log::LogFormat;
use crate::plan::segment::check_start_at;
use crate::plan::Segment;
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
    /// `--scenario FILE`: users follow the file's requests instead of the URL mix.
    pub scenario: Option<ScenarioSource>,
    /// The requests of an access log, sent to the one URL's origin (`--access-log`).
    pub access_log: Option<AccessLogConfig>,
    /// The statuses that count as success (`--ok-status`; 2xx and 3xx by default).
    pub ok_status: crate::metrics::OkStatus,
}

/// A scenario file and how much of each answer's body its users may keep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioSource {
    pub file: PathBuf,
    /// `--max-body-capture`: body bytes kept per answer that a check or extraction reads.
    pub max_body_capture: usize,
    /// A scenario TOML, or a recording imported as scenarios (`--har`, `--wsesslog`).
    pub format: crate::scenario::Format,
}

/// `--access-log FILE`: a weighted URL mix, or a replay on the log's clock.
#[derive(Debug, Clone, PartialEq)]
pub struct AccessLogConfig {
    pub path: PathBuf,
    /// None: each line's format is detected.
    pub format: Option<LogFormat>,
    /// Send methods other than GET and HEAD (bodiless: a log has no bodies).
    pub allow_unsafe_methods: bool,
    /// Replay the arrivals at this multiple of their speed; None: a weighted mix.
    pub replay_speed: Option<f64>,
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
            scenario: None,
            access_log: None,
            ok_status: crate::metrics::OkStatus::default(),
        }
    }
}

/// Which HTTP version the connections speak (`--http`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpVersion {
    V1,
    /// HTTP/2: h2c with prior knowledge over cleartext (no upgrade dance).
    V2,
    /// HTTP/3 over QUIC (https:// only).
    V3,
    /// What the server negotiates: over cleartext there is nothing to negotiate, so HTTP/1.1.
    Auto,
}

impl HttpVersion {
    pub fn parse(s: &str) -> Result<HttpVersion, String> {
        match s {
            "1.1" | "1" => Ok(HttpVersion::V1),
            "2" | "2.0" => Ok(HttpVersion::V2),
            "3" | "3.0" => Ok(HttpVersion::V3),
            "auto" => Ok(HttpVersion::Auto),
            _ => Err(format!("'{s}': use 1.1, 2, 3 or auto")),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            HttpVersion::V1 => "1.1",
            HttpVersion::V2 => "2",
            HttpVersion::V3 => "3",
            HttpVersion::Auto => "auto",
        }
    }
}

/// How connections behave.
#[derive(Debug, Clone, PartialEq)]
pub struct ConnConfig {
    pub http: HttpVersion,
    /// `--http auto` over https: follow the server's `Alt-Svc: h3=…` (`--alt-svc`).
    pub alt_svc: bool,
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
    /// For https:// URLs.
    pub tls: TlsConfig,
    /// The I/O backend (`--io`).
    pub io: crate::engine::IoChoice,
    /// `--source`: the local addresses connections are made from (None: the kernel's choice).
    pub source: Option<std::sync::Arc<crate::engine::source::Sources>>,
}

/// TLS options (https:// URLs).
#[derive(Debug, Clone, PartialEq)]
pub struct TlsConfig {
    /// Trust these PEM certificates instead of the system's roots.
    pub cacert: Option<PathBuf>,
    /// Do not verify the server's certificate.
    pub insecure: bool,
    pub client_cert: Option<PathBuf>,
    pub client_key: Option<PathBuf>,
    /// None: TLS 1.2 or 1.3, as the server prefers.
    pub version: Option<TlsVersion>,
    /// Resume TLS sessions on new connections (a session cache per worker thread).
    pub resumption: bool,
    /// ALPN protocols offered, most preferred first.
    pub alpn: Vec<String>,
    /// HTTP/3: 0-RTT on resumed connections (`--0rtt on`), idempotent requests only.
    pub early_data: bool,
    /// PEM certificates to trust given as text, not as a file: what a generator agent
    /// receives in a step (`scale::wire`), where paths mean nothing.
    pub ca_pem: Option<Vec<u8>>,
}

impl Default for TlsConfig {
    fn default() -> Self {
        TlsConfig {
            cacert: None,
            insecure: false,
            client_cert: None,
            client_key: None,
            version: None,
            resumption: true,
            alpn: vec!["http/1.1".into()],
            early_data: false,
            ca_pem: None,
        }
    }
}

/// PEM files are small; a cap keeps a wrong path (a disk image, /dev/zero) from filling memory.
const MAX_PEM_FILE: u64 = 1 << 20;

impl TlsConfig {
    /// Any option that only makes sense for https:// URLs was given.
    pub fn any_set(&self) -> bool {
        let d = TlsConfig::default();
        self.cacert.is_some()
            || self.ca_pem.is_some()
            || self.insecure
            || self.client_cert.is_some()
            || self.client_key.is_some()
            || self.version.is_some()
            || self.resumption != d.resumption
            || self.early_data != d.early_data
    }

    pub fn validate(&self) -> crate::Result<()> {
        match (&self.client_cert, &self.client_key) {
            (Some(_), None) => Err(Error::usage("--client-cert needs --client-key")),
            (None, Some(_)) => Err(Error::usage("--client-key needs --client-cert")),
            _ if self.insecure && (self.cacert.is_some() || self.ca_pem.is_some()) => Err(
                Error::usage("--insecure and --cacert contradict each other (nothing is verified)"),
            ),
            _ => Ok(()),
        }
    }

    /// Reads the PEM files and builds the engine's client for these servers.
    pub fn client(&self, servers: &[(SocketAddr, String)]) -> crate::Result<TlsClient> {
        self.validate()?;
        let read = |p: &Option<PathBuf>, what: &str| {
            p.as_deref()
                .map(|p| read_capped(p, MAX_PEM_FILE, what).map_err(Error::usage))
                .transpose()
        };
        let opts = TlsClientOptions {
            ca_pem: read(&self.cacert, "--cacert")?.or_else(|| self.ca_pem.clone()),
            client_cert_pem: read(&self.client_cert, "--client-cert")?,
            client_key_pem: read(&self.client_key, "--client-key")?,
            insecure: self.insecure,
            version: self.version,
            resumption: self.resumption,
            alpn: self.alpn.iter().map(|p| p.as_bytes().to_vec()).collect(),
            early_data: self.early_data,
        };
        TlsClient::new(&opts, servers).map_err(Error::usage)
    }
}

impl Default for ConnConfig {
    fn default() -> Self {
        ConnConfig {
            http: HttpVersion::Auto,
            alt_svc: false,
            streams: 100,
            keep_alive: true,
            calls_per_connection: None,
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(3),
            threads: None,
            pacing_slack: Duration::from_millis(1),
            seed: 1,
            tls: TlsConfig::default(),
            io: crate::engine::IoChoice::Auto,
            source: None,
        }
    }
}

/// The open loop's arrivals and connection pool.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpenLoopConfig {
    pub arrival: Arrival,
    /// Most connections to open.
    pub connections: usize,
    /// With a scenario: most sessions in flight; arrivals past it are dropped.
    pub max_sessions: usize,
}

impl Default for OpenLoopConfig {
    fn default() -> Self {
        OpenLoopConfig {
            arrival: Arrival::Constant,
            connections: 10_000,
            max_sessions: 10_000,
        }
    }
}

impl OpenLoopConfig {
    pub fn validate(&self) -> crate::Result<()> {
        check_load(&self.load(1.0))?;
        if self.max_sessions == 0 || self.max_sessions > 1_000_000 {
            return Err(Error::usage(format!(
                "--max-sessions {}: use 1 to 1000000",
                self.max_sessions
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

/// Most users (closed loop) or connections (open loop) in one load.
pub(crate) const MAX_USERS: usize = 1_000_000;

/// The checks every load passes, whoever gives it: the command line, an experiment, or a
/// controller's step that a generator agent receives (through [`base_config_of`]): a rate
/// above zero, users and connections from 1 to a million, a think range in order. Errors
/// name the flag, as users meet these options.
pub fn check_load(load: &Load) -> crate::Result<()> {
    match *load {
        Load::Open {
            rate,
            max_connections,
            ..
        } => {
            if !(rate.is_finite() && rate > 0.0) {
                return Err(Error::usage(format!(
                    "--rate {rate}: use a rate above zero"
                )));
            }
            if max_connections == 0 || max_connections > MAX_USERS {
                return Err(Error::usage(format!(
                    "--connections {max_connections}: use 1 to {MAX_USERS}"
                )));
            }
        }
        Load::Closed { users, think } => {
            if users == 0 || users > MAX_USERS {
                return Err(Error::usage(format!(
                    "--users {users}: use 1 to {MAX_USERS}"
                )));
            }
            if think.1 < think.0 {
                let show = crate::units::fmt_duration;
                return Err(Error::usage(format!(
                    "--think {}..{}: the upper bound is below the lower one",
                    show(think.0),
                    show(think.1)
                )));
            }
        }
    }
    Ok(())
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
    /// Serve the report on 127.0.0.1:PORT while the run goes on (`live::LivePage`).
    pub live_port: Option<u16>,
    /// Show the live view on the terminal (`tui`) instead of the progress lines.
    pub live_view: bool,
    /// Serve the report on this address while the run goes on (`--live-listen`).
    pub live_listen: Option<std::net::SocketAddr>,
    /// Write HdrHistogram's interval log here when the run ends (`--hdr-log`).
    pub hdr_log: Option<PathBuf>,
    /// The run's title, in free words (`--title`).
    pub title: Option<String>,
    /// Push the run's figures once a second to these sinks (`--prometheus-remote-write`,
    /// `--otlp`).
    pub push: Vec<crate::push::Target>,
    /// Live control: `--control-port`, `--control-step`, `--control-max`.
    pub control: ControlConfig,
}

/// Live control of the load while it runs (the live view's keys, `--control-port`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ControlConfig {
    /// Take changes as authenticated requests on this address.
    pub port: Option<std::net::SocketAddr>,
    /// The step of `+`/`-` (None: 10% of the level, at least 1).
    pub step: Option<f64>,
    /// The highest level a change may set (None: 10× the planned level).
    pub max: Option<f64>,
}

impl Output {
    /// Where the live report page listens, if anywhere: `--live-listen`, or loopback at
    /// `--live-port`.
    pub fn live_addr(&self) -> Option<std::net::SocketAddr> {
        self.live_listen.or_else(|| {
            self.live_port
                .map(|p| std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, p)))
        })
    }
}

/// Scale-out: the part of the plan this generator sends, and when all parts start.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SegmentConfig {
    /// `--segment I/N`: arrivals I, I+N, … of the schedule, a share of users and connections.
    pub segment: Segment,
    /// `--start-at`: Unix time (ms) at which every segment starts; a stepped run's steps then
    /// start on a grid from it (step k at k × (warm-up + step + rest)), so they line up.
    pub start_at_ms: Option<u64>,
}

impl SegmentConfig {
    /// Refuses a start more than `late` in the past or more than a day ahead, and a load
    /// level that leaves this segment without a user (or connection) to send with.
    pub fn validate(&self, late: Duration, loads: &[Load]) -> crate::Result<()> {
        if let Some(at) = self.start_at_ms {
            check_start_at(at, crate::clock::unix_ms(), late).map_err(Error::usage)?;
        }
        let seg = self.segment;
        for load in loads {
            let (n, what) = match *load {
                Load::Closed { users, .. } => (users, "users"),
                Load::Open {
                    max_connections, ..
                } => (max_connections, "connections"),
            };
            if seg.share(n as u64) == 0 {
                return Err(Error::usage(format!(
                    "--segment {seg}: {n} {what} leave this segment none; use at least {} {what}",
                    seg.count
                )));
            }
        }
        Ok(())
    }

    /// The results' record of the split (run.json's config): `None` for a whole plan.
    pub fn record(&self) -> serde_json::Value {
        if self.segment.is_whole() && self.start_at_ms.is_none() {
            return serde_json::Value::Null;
        }
        serde_json::json!({
            "index": self.segment.index,
            "count": self.segment.count,
            "start_at_unix_ms": self.start_at_ms,
        })
    }
}

/// Parses an SLO text into the analysis' type, as a usage error.
pub fn parse_slo(text: Option<&str>) -> crate::Result<Option<crate::analysis::Slo>> {
    text.map(crate::analysis::slo::parse)
        .transpose()
        .map_err(Error::usage)
}

/// Most `--streams`: beyond what servers allow (nginx 128, h2o 100, Go 250) by far.
const MAX_STREAMS: u32 = 65_536;

impl ConnConfig {
    /// The protocol the run speaks as `choice` chose it, with this run's HTTP/2 settings.
    pub fn protocol_of(&self, choice: &crate::metrics::ProtocolChoice) -> crate::engine::Protocol {
        match choice.version.as_str() {
            "2" => crate::engine::Protocol::Http2(Http2 {
                streams: self.streams,
            }),
            "3" => crate::engine::Protocol::Http3(Http3 {
                streams: self.streams,
            }),
            _ => crate::engine::Protocol::Http1,
        }
    }

    pub fn validate(&self) -> crate::Result<()> {
        if self.alt_svc && self.http != HttpVersion::Auto {
            return Err(Error::usage(format!(
                "--alt-svc follows the server's Alt-Svc under --http auto; --http {} already \
                 chooses the protocol",
                self.http.as_str()
            )));
        }
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
        if matches!(self.http, HttpVersion::V2 | HttpVersion::V3) && !self.keep_alive {
            let v = self.http.as_str();
            return Err(Error::usage(format!(
                "--http {v} and --no-keep-alive contradict each other (HTTP/{v} multiplexes \
                 requests on kept connections; use --calls-per-connection 1 for one request per \
                 connection)"
            )));
        }
        if self.http == HttpVersion::V3 && self.tls.version == Some(TlsVersion::V12) {
            return Err(Error::usage(
                "--http 3 and --tls-version 1.2 contradict each other (QUIC carries TLS 1.3 only)",
            ));
        }
        if self.tls.early_data && self.http != HttpVersion::V3 {
            return Err(Error::usage(
                "--0rtt on is for --http 3 (0-RTT over TCP's TLS is not offered)",
            ));
        }
        if self.tls.early_data && !self.tls.resumption {
            return Err(Error::usage(
                "--0rtt on needs --tls-resumption on (0-RTT rides a resumed session)",
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
        self.tls.validate()
    }

    pub fn threads(&self) -> usize {
        self.threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    }
}
