//! The parts every load-sending configuration shares (run, sweep, capacity): what to send,
//! how connections behave, the open loop's arrivals, the steps' timing and where results go.
//! Each `Default` is the only copy of its defaults: the command line's `--help` shows them
//! from here and the experiment files fall back to them.
//!
//! Errors name the command-line flag, since that is how users meet these options; the
//! experiment validates its TOML keys before it builds these, with errors naming the key.
use crate::engine::h2::hpack::{encode_request, RequestParts};
use crate::engine::tls::{TlsClient, TlsClientOptions, TlsVersion};
use crate::engine::{Arrival, EngineConfig, Http2, Load, Pick, Prepared};
use crate::fsutil::{read_capped, MAX_BODY_FILE};
use crate::metrics::ProtocolChoice;
use crate::plan::access_log::{read_access_log, AccessLog, Keep, LogFormat, LoggedRequest};
use crate::plan::segment::check_start_at;
use crate::plan::{
    check_headers, parse_headers, parse_method, read_urls_file, RequestSpec, Segment, Url,
};
use crate::url::Scheme;
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
    /// For https:// URLs.
    pub tls: TlsConfig,
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
            ca_pem: None,
        }
    }
}

/// PEM files are small; a cap keeps a wrong path (a disk image, /dev/zero) from filling memory.
const MAX_PEM_FILE: u64 = 1 << 20;

impl TlsConfig {
    /// Any option that only makes sense for https:// URLs was given.
    fn any_set(&self) -> bool {
        let d = TlsConfig::default();
        self.cacert.is_some()
            || self.ca_pem.is_some()
            || self.insecure
            || self.client_cert.is_some()
            || self.client_key.is_some()
            || self.version.is_some()
            || self.resumption != d.resumption
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
        };
        TlsClient::new(&opts, servers).map_err(Error::usage)
    }
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
            tls: TlsConfig::default(),
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

    /// Waits for `--start-at` (cut short by SIGINT); false when interrupted.
    pub fn wait_for_start(&self, quiet: bool) -> bool {
        let Some(at) = self.start_at_ms else {
            return true;
        };
        let now = crate::clock::unix_ms();
        if at > now && !quiet {
            crate::eoutln!(
                "waiting {:.1} s for --start-at {}",
                (at - now) as f64 / 1e3,
                crate::units::fmt_unix_ms(at)
            );
        }
        while crate::clock::unix_ms() < at {
            if crate::signals::interrupted() {
                return false;
            }
            let left = at.saturating_sub(crate::clock::unix_ms());
            std::thread::sleep(Duration::from_millis(left.min(50)));
        }
        true
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

/// The request mix, resolved; rendered for the engine by [`base_config_of`].
pub struct Mix {
    pub addrs: Vec<SocketAddr>,
    requests: Unrendered,
    pub pick: Pick,
    /// The URLs, for display and the results.
    pub urls: Vec<String>,
    /// https:// URLs: each address with its host name (SNI, certificate check); empty for
    /// http://. A mix is all one or all the other.
    pub tls_servers: Vec<(SocketAddr, String)>,
    /// `--scenario`: the loaded file the users follow (`requests` is then empty).
    pub scenario: Option<std::sync::Arc<crate::scenario::Plan>>,
    /// The requests' names (`Prepared::name` indexes it).
    pub names: Vec<String>,
    /// An access log's mix: running sums of the requests' counts (`Pick::Weighted`).
    pub weights: Vec<u64>,
    /// An access log replayed on its clock (`--replay-speed`).
    pub replay: Option<std::sync::Arc<crate::engine::Replay>>,
    /// Which answers count as success (`--ok-status`): set from the request configuration,
    /// or from the step a generator agent received.
    pub ok_status: crate::metrics::OkStatus,
}

/// A mix's requests before rendering: the engine's forms of a request (kept-alive, closing,
/// HTTP/2) are rendered once the run's protocol and connection reuse are known, and only
/// those it sends, so that an access log of a million distinct requests costs one rendering
/// of each.
enum Unrendered {
    /// Each request its own spec (URL arguments, `--urls`, an agent's step), with its server
    /// (an index into `addrs`) and name.
    Specs(Vec<(RequestSpec, usize, u16)>),
    /// An access log: the one server's spec (the URL argument and `-H` headers), whose method
    /// and target each distinct request replaces, and each one's name.
    Log {
        base: RequestSpec,
        requests: Vec<LoggedRequest>,
        names: Vec<u16>,
    },
    /// A scenario: its users render their own requests.
    None,
}

/// Which renderings of each request a run sends.
#[derive(Debug, Clone, Copy)]
struct Forms {
    keep_alive: bool,
    close: bool,
    h2: bool,
}

impl Forms {
    fn of(conn: &ConnConfig, http2: bool) -> Forms {
        let keeps = conn.keep_alive && conn.calls_per_connection != Some(1);
        Forms {
            // HTTP/2 sends neither; the kept-alive form still tells whether a request may be
            // retried (`Prepared::idempotent`).
            keep_alive: keeps,
            close: !http2 && (!keeps || conn.calls_per_connection.is_some()),
            h2: http2,
        }
    }

    fn prepare(self, s: &RequestSpec, addr: usize, name: u16) -> Prepared {
        // Rendered into a guess of a buffer: trimmed, a mix holds many.
        let exact = |mut v: Vec<u8>| {
            v.shrink_to_fit();
            v
        };
        let if_ = |on: bool, f: &dyn Fn() -> Vec<u8>| if on { exact(f()) } else { Vec::new() };
        Prepared {
            addr,
            keep_alive: if_(self.keep_alive, &|| s.render(false)),
            close: if_(self.close, &|| s.render(true)),
            head_only: s.method == "HEAD",
            h2_block: if_(self.h2, &|| {
                encode_request(&RequestParts {
                    method: &s.method,
                    scheme: s.url.scheme.as_str(),
                    authority: &s.url.authority,
                    path: &s.url.target,
                    headers: &s.headers,
                    body_len: s.body.as_ref().map(Vec::len),
                })
            }),
            body: s.body.clone().unwrap_or_default(),
            name,
        }
    }
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
        if let Some(a) = &self.access_log {
            return self.logged_specs(a, method, headers);
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

    /// A scenario file instead of URLs: loaded and checked now, before any connection. A URL
    /// argument is the server its relative URLs (`/login`) go to.
    fn scenario_mix(&self, s: &ScenarioSource) -> crate::Result<Mix> {
        let (flag, what) = match s.format {
            crate::scenario::Format::Toml => ("--scenario", "scenario"),
            crate::scenario::Format::Har(_) => ("--har", "HAR"),
            crate::scenario::Format::Wsesslog { .. } => ("--wsesslog", "session log"),
        };
        if self.urls.len() > 1 || self.urls_file.is_some() {
            return Err(Error::usage(format!(
                "{flag} takes at most one URL (the server of its relative URLs), and no --urls"
            )));
        }
        if self.body.is_some() || !self.headers.is_empty() || self.method != "GET" {
            return Err(Error::usage(format!(
                "{flag}: methods, headers and bodies come from the file, not -X, -H, --body"
            )));
        }
        let (plan, note) = crate::scenario::load_as(
            &s.file,
            s.format,
            self.urls.first().map(String::as_str),
            s.max_body_capture,
        )
        .map_err(Error::usage)?;
        if let Some(note) = note {
            crate::eoutln!("overload: {note}");
        }
        let servers = &plan.servers;
        Ok(Mix {
            addrs: servers.iter().map(|s| s.addr).collect(),
            requests: Unrendered::None,
            pick: self.pick,
            urls: vec![format!("{what} {}", crate::fsutil::shown(&s.file))],
            tls_servers: servers
                .iter()
                .filter(|s| s.https)
                .map(|s| (s.addr, s.host.clone()))
                .collect(),
            names: plan.names.clone(),
            scenario: Some(std::sync::Arc::new(plan)),
            weights: Vec::new(),
            replay: None,
            ok_status: crate::metrics::OkStatus::default(),
        })
    }

    /// An access log's distinct requests as specs, sent to the origin of the one URL given
    /// (what a controller sends its generators).
    fn logged_specs(
        &self,
        a: &AccessLogConfig,
        method: String,
        headers: Vec<(String, String)>,
    ) -> crate::Result<Vec<RequestSpec>> {
        let (base, log) = self.read_log(a, &method)?;
        let mut specs = Vec::with_capacity(log.requests.len());
        for r in log.requests {
            let mut url = base.clone();
            url.target = r.target.into();
            specs.push(RequestSpec {
                method: r.method.to_string(),
                url,
                headers: headers.clone(),
                body: None,
            });
        }
        Ok(specs)
    }

    /// The URL argument (the server an access log's requests go to) and the log, read:
    /// weights (its counts) and arrivals (its clock).
    fn read_log(&self, a: &AccessLogConfig, method: &str) -> crate::Result<(Url, AccessLog)> {
        let base = match (self.urls.as_slice(), &self.urls_file) {
            ([one], None) => Url::parse(one).map_err(|e| Error::usage(format!("URL {e}")))?,
            _ => {
                return Err(Error::usage(
                    "--access-log takes the one URL of the server to send its requests to \
                     (its path is ignored), and no --urls",
                ))
            }
        };
        if self.body.is_some() || method != "GET" {
            return Err(Error::usage(
                "--access-log sends each line's own method, without a body: drop -X and --body",
            ));
        }
        // A weighted mix needs each request's count only; a replay, each line's time too.
        let keep = match a.replay_speed {
            Some(_) => Keep::Arrivals,
            None => Keep::Counts,
        };
        let log = read_access_log(&a.path, a.format, a.allow_unsafe_methods, keep)
            .map_err(Error::usage)?;
        if let Some(note) = log.skipped_note() {
            crate::eoutln!("overload: {note}");
        }
        Ok((base, log))
    }

    /// An access log's mix: its distinct requests, all to the URL argument's server (resolved
    /// once), picked by their counts or replayed on the log's clock.
    fn log_mix(&self, a: &AccessLogConfig) -> crate::Result<Mix> {
        let method = parse_method(&self.method).map_err(|e| Error::usage(format!("-X: {e}")))?;
        let headers = parse_headers(&self.headers).map_err(|e| Error::usage(format!("-H: {e}")))?;
        let (url, mut log) = self.read_log(a, &method)?;
        let addr = url
            .resolve()
            .map_err(|e| Error::usage(format!("URL '{}': {e}", url.origin())))?;
        let mut names = crate::plan::naming::Names::new();
        let request_names = log
            .requests
            .iter()
            .map(|r| names.index(&crate::plan::naming::name_of_target(&r.target)))
            .collect();
        let (weights, replay) = match a.replay_speed {
            Some(speed) => {
                let scale = |ns: u64| (ns as f64 / speed).round() as u64;
                // Scaled in place and moved: a replay holds 12 bytes a line, once.
                let mut at_ns = std::mem::take(&mut log.at_ns);
                for t in &mut at_ns {
                    *t = scale(*t);
                }
                let replay = crate::engine::Replay {
                    at_ns,
                    requests: std::mem::take(&mut log.order),
                    span_ns: scale(log.span_ns).max(1),
                };
                (Vec::new(), Some(std::sync::Arc::new(replay)))
            }
            None => {
                let weights = log
                    .requests
                    .iter()
                    .scan(0u64, |sum, r| {
                        *sum += r.count;
                        Some(*sum)
                    })
                    .collect();
                (weights, None)
            }
        };
        Ok(Mix {
            addrs: vec![addr],
            pick: if replay.is_some() {
                self.pick
            } else {
                Pick::Weighted
            },
            urls: vec![format!(
                "access log {} ({} distinct requests)",
                crate::fsutil::shown(&a.path),
                log.requests.len()
            )],
            tls_servers: match url.scheme {
                Scheme::Https => vec![(addr, url.host.clone())],
                Scheme::Http => Vec::new(),
            },
            scenario: None,
            names: names.into_vec(),
            weights,
            replay,
            ok_status: crate::metrics::OkStatus::default(),
            requests: Unrendered::Log {
                base: RequestSpec {
                    method,
                    url,
                    headers,
                    body: None,
                },
                requests: log.requests,
                names: request_names,
            },
        })
    }

    /// Resolves hosts (once, before the run); [`base_config_of`] renders the requests.
    pub fn mix(&self) -> crate::Result<Mix> {
        if let Some(s) = &self.scenario {
            return self.scenario_mix(s);
        }
        if let Some(a) = &self.access_log {
            return self.log_mix(a);
        }
        Mix::of(self.specs()?, self.pick)
    }
}

impl Mix {
    /// Resolves the hosts of `specs` (once, before the run) and renders every request; a
    /// generator agent builds its mix from a step sent as data the same way.
    pub fn of(specs: Vec<RequestSpec>, pick: Pick) -> crate::Result<Mix> {
        let mut addrs: Vec<SocketAddr> = Vec::new();
        let mut requests = Vec::new();
        let mut urls = Vec::new();
        let mut tls_servers: Vec<(SocketAddr, String)> = Vec::new();
        let mut names = crate::plan::naming::Names::new();
        let scheme = specs
            .first()
            .ok_or_else(|| Error::usage("no URL given"))?
            .url
            .scheme;
        for mut s in specs {
            let shown = format!("{}{}", s.url.origin(), s.url.target);
            // The checks of -X and -H, for requests that did not come through them (a file's
            // lines, a controller's step): what is rendered below is sent as it is.
            let bad = |e: String| Error::usage(format!("URL '{shown}': {e}"));
            s.method = parse_method(&s.method).map_err(bad)?;
            s.headers = check_headers(&s.headers).map_err(bad)?;
            if s.url.scheme != scheme {
                return Err(Error::usage(format!(
                    "URL '{shown}': a run's URLs are all http:// or all https://"
                )));
            }
            let addr = s
                .url
                .resolve()
                .map_err(|e| Error::usage(format!("URL '{shown}': {e}")))?;
            let idx = match addrs.iter().position(|a| *a == addr) {
                Some(i) => i,
                None => {
                    addrs.push(addr);
                    if scheme == Scheme::Https {
                        tls_servers.push((addr, s.url.host.clone()));
                    }
                    addrs.len() - 1
                }
            };
            // The engine names a TLS server by its address: one host per address.
            if scheme == Scheme::Https && tls_servers[idx].1 != s.url.host {
                return Err(Error::usage(format!(
                    "URL '{shown}': hosts '{}' and '{}' share the address {addr}; one https \
                     host per address is supported",
                    tls_servers[idx].1, s.url.host
                )));
            }
            urls.push(format!("{} {shown}", s.method));
            let name = names.index(&crate::plan::naming::name_of_target(&s.url.target));
            requests.push((s, idx, name));
        }
        Ok(Mix {
            addrs,
            requests: Unrendered::Specs(requests),
            pick,
            urls,
            tls_servers,
            scenario: None,
            names: names.into_vec(),
            weights: Vec::new(),
            replay: None,
            ok_status: crate::metrics::OkStatus::default(),
        })
    }

    /// The first request sent to `addrs[addr]`, as an index into the mix's requests.
    pub fn first_request_to(&self, addr: usize) -> Option<usize> {
        match &self.requests {
            Unrendered::Specs(specs) => specs.iter().position(|(_, a, _)| *a == addr),
            Unrendered::Log { requests, .. } => (addr == 0 && !requests.is_empty()).then_some(0),
            Unrendered::None => None,
        }
    }

    /// The engine's requests, in the forms the run sends; each spec is dropped once rendered.
    fn render(requests: Unrendered, forms: Forms) -> Vec<Prepared> {
        match requests {
            Unrendered::Specs(specs) => specs
                .into_iter()
                .map(|(s, addr, name)| forms.prepare(&s, addr, name))
                .collect(),
            Unrendered::Log {
                mut base,
                requests,
                names,
            } => {
                let mut out = Vec::with_capacity(requests.len());
                for (r, name) in requests.into_iter().zip(names) {
                    if *base.method != *r.method {
                        base.method = r.method.to_string();
                    }
                    base.url.target = r.target.into();
                    out.push(forms.prepare(&base, 0, name));
                }
                out
            }
            Unrendered::None => Vec::new(),
        }
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
        self.tls.validate()
    }

    pub fn threads(&self) -> usize {
        self.threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    }
}

/// https: the TLS client, offering by ALPN the protocol the run will speak, the HTTP/2
/// settings when it is h2, and how it was chosen. `--http auto` asks the first server once
/// which it picks from both (the engine speaks one protocol per run); a server that cannot be
/// asked gets HTTP/1.1, the choice saying why, and the run's errors too.
fn tls_and_protocol(
    conn: &ConnConfig,
    servers: &[(SocketAddr, String)],
) -> crate::Result<(Option<TlsClient>, Option<Http2>, ProtocolChoice)> {
    let with_alpn = |alpn: &[&str]| {
        let mut t = conn.tls.clone();
        t.alpn = alpn.iter().map(|p| p.to_string()).collect();
        t.client(servers)
    };
    let choice = match conn.http {
        HttpVersion::V2 => ProtocolChoice::new("2", "http-flag"),
        HttpVersion::V1 => ProtocolChoice::new("1.1", "http-flag"),
        HttpVersion::Auto if !conn.keep_alive => ProtocolChoice::new("1.1", "no-keep-alive"),
        HttpVersion::Auto => {
            let probe = with_alpn(&["h2", "http/1.1"])?;
            match probe.negotiate(servers[0].0, conn.connect_timeout) {
                Ok(p) if p.as_deref() == Some(b"h2".as_slice()) => ProtocolChoice::new("2", "alpn"),
                Ok(_) => ProtocolChoice::new("1.1", "alpn"),
                Err(e) => ProtocolChoice {
                    fallback: Some(e),
                    ..ProtocolChoice::new("1.1", "alpn-probe-failed")
                },
            }
        }
    };
    let h2 = choice.version == "2";
    let http2 = h2.then_some(Http2 {
        streams: conn.streams,
    });
    let client = with_alpn(if h2 { &["h2"] } else { &["http/1.1"] })?;
    Ok((Some(client), http2, choice))
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
    let mut mix = request.mix()?;
    mix.ok_status = request.ok_status;
    base_config_of(mix, conn, load, duration, max_requests, warmup)
}

/// As [`base_config`], for a mix already resolved (a generator agent's step).
pub fn base_config_of(
    mix: Mix,
    conn: &ConnConfig,
    load: Load,
    duration: Option<Duration>,
    max_requests: Option<u64>,
    warmup: Duration,
) -> crate::Result<(EngineConfig, Vec<String>)> {
    conn.validate()?;
    check_load(&load)?;
    let (tls, http2, protocol) = if mix.tls_servers.is_empty() {
        if conn.tls.any_set() {
            return Err(Error::usage(
                "TLS options (--cacert, --insecure, --client-cert, --tls-*) need https:// URLs",
            ));
        }
        let choice = match conn.http {
            HttpVersion::V2 => ProtocolChoice::new("2", "http-flag"),
            HttpVersion::V1 => ProtocolChoice::new("1.1", "http-flag"),
            HttpVersion::Auto => ProtocolChoice::new("1.1", "cleartext"),
        };
        (None, conn.http2(), choice)
    } else {
        tls_and_protocol(conn, &mix.tls_servers)?
    };
    let requests = Mix::render(mix.requests, Forms::of(conn, http2.is_some()));
    let cfg = EngineConfig {
        addrs: mix.addrs,
        requests: std::sync::Arc::new(requests),
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
        segment: Segment::WHOLE,
        tls,
        http2,
        scenario: mix.scenario,
        names: mix.names,
        weights: std::sync::Arc::new(mix.weights),
        replay: mix.replay,
        ramp: None,
        max_sessions: OpenLoopConfig::default().max_sessions,
        ok_status: mix.ok_status,
        protocol_choice: protocol,
    };
    Ok((cfg, mix.urls))
}
