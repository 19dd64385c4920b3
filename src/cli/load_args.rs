//! Options shared by every command that sends load (run, sweep, capacity): the request mix,
//! connection handling and timeouts, and the steps' timing. Each group turns into its part of
//! the library's configuration (`usecase::config`); the defaults shown by `--help` come from
//! those configurations' `Default`, so they exist once.
use crate::engine::source::Sources;
use crate::engine::tls::TlsVersion;
use crate::engine::{Arrival, Pick};
use crate::units::{parse_duration, parse_duration_range, parse_share};
use crate::usecase::config::{
    ConnConfig, HttpVersion, OpenLoopConfig, Output, RequestConfig, StepTiming, TlsConfig,
};
use clap::{Args, ValueEnum};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

/// A duration argument; its `Display` is how `--help` shows a default, and parses back.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dur(pub Duration);

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_zero() {
            f.write_str("0s")
        } else {
            f.write_str(&crate::units::fmt_duration(self.0))
        }
    }
}

pub fn parse_dur(s: &str) -> Result<Dur, String> {
    parse_duration(s).map(Dur)
}

/// A share argument (`20%` or `0.2`); shown as a percentage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Share(pub f64);

impl fmt::Display for Share {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", (self.0 * 1e4).round() / 1e2)
    }
}

pub fn parse_share_arg(s: &str) -> Result<Share, String> {
    parse_share(s).map(Share)
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum PickArg {
    /// Each request picks a URL at random (siege --internet).
    Random,
    /// URLs in file order, round and round (httperf --wlog).
    Sequence,
}

impl From<Pick> for PickArg {
    fn from(p: Pick) -> PickArg {
        match p {
            Pick::Random => PickArg::Random,
            Pick::Sequence => PickArg::Sequence,
            // An access log's mix: no flag picks it, --access-log does.
            Pick::Weighted => PickArg::Random,
        }
    }
}

impl From<PickArg> for Pick {
    fn from(p: PickArg) -> Pick {
        match p {
            PickArg::Random => Pick::Random,
            PickArg::Sequence => Pick::Sequence,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ArrivalArg {
    /// Evenly spaced arrivals.
    Constant,
    /// Exponential gaps: independent users arriving at random.
    Poisson,
}

impl From<Arrival> for ArrivalArg {
    fn from(a: Arrival) -> ArrivalArg {
        match a {
            Arrival::Constant => ArrivalArg::Constant,
            Arrival::Poisson => ArrivalArg::Poisson,
        }
    }
}

impl From<ArrivalArg> for Arrival {
    fn from(a: ArrivalArg) -> Arrival {
        match a {
            ArrivalArg::Constant => Arrival::Constant,
            ArrivalArg::Poisson => Arrival::Poisson,
        }
    }
}

/// What to send.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Requests")]
pub struct RequestArgs {
    /// Target URL(s), http://host[:port]/path.
    #[arg(value_name = "URL")]
    pub urls: Vec<String>,
    /// Read the URLs from a file (siege's format).
    ///
    /// One `URL` or `URL POST data` (or `URL POST <file`) per line, # comments.
    #[arg(long = "urls", value_name = "FILE")]
    pub urls_file: Option<PathBuf>,
    /// How each request chooses among several URLs.
    #[arg(long, value_enum, default_value_t = RequestConfig::default().pick.into())]
    pub pick: PickArg,
    /// HTTP method of the URL arguments [default: GET].
    ///
    /// For the URLs given on the command line (hey: -m; curl: -X).
    #[arg(short = 'X', long = "method", short_alias = 'm')]
    pub method: Option<String>,
    /// Extra request header, 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// Request body: TEXT, or @FILE to read it from a file.
    #[arg(long)]
    pub body: Option<String>,
    /// Statuses that count as success [default: 200-399].
    ///
    /// E.g. 200-399,404 for a URL list whose 404 is meant; others count as failed requests
    /// (errors %, SLOs, saturation).
    #[arg(long, value_name = "LIST", value_parser = crate::metrics::OkStatus::parse)]
    pub ok_status: Option<crate::metrics::OkStatus>,
    #[command(flatten)]
    pub scenario: super::scenario_args::ScenarioArgs,
}

impl RequestArgs {
    /// The request configuration; a URL without `http://` is refused with the suggestion,
    /// and a body without `-X` is warned about (it stays a GET).
    pub fn config(self) -> crate::Result<RequestConfig> {
        super::hints::check_scheme(&self.urls)?;
        let warning = super::hints::body_without_method(self.body.is_some(), self.method.is_some());
        let config = RequestConfig {
            urls: self.urls,
            urls_file: self.urls_file,
            pick: self.pick.into(),
            method: self
                .method
                .unwrap_or_else(|| RequestConfig::default().method),
            headers: self.headers,
            body: self.body,
            scenario: self.scenario.source(),
            access_log: None,
            ok_status: self.ok_status.unwrap_or_default(),
        };
        if let Some(w) = warning {
            // A bad body or URL is reported alone: the error, not a warning and an error.
            config.specs()?;
            crate::eoutln!("overload: warning: {w}");
        }
        Ok(config)
    }
}

/// A count argument (`1000`, `10k`, `1M`) that must fit a `usize`.
pub fn parse_usize_count(s: &str) -> Result<usize, String> {
    let n = crate::units::parse_count(s)?;
    usize::try_from(n).map_err(|_| format!("'{s}' is too large"))
}

/// The open loop's arrivals and connection pool (sweep --rates, capacity).
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Load")]
pub struct OpenLoopArgs {
    /// Arrival process of the open loop.
    #[arg(long, value_enum, default_value_t = OpenLoopConfig::default().arrival.into())]
    pub arrival: ArrivalArg,
    /// Open loop: most connections, opened as needed.
    #[arg(long, value_name = "N", default_value_t = OpenLoopConfig::default().connections, value_parser = parse_usize_count)]
    pub connections: usize,
    /// Open loop with --scenario (--rate counts sessions/s): most sessions in flight; an
    /// arrival past it is dropped and counted, not queued.
    #[arg(long, value_name = "N", default_value_t = OpenLoopConfig::default().max_sessions, value_parser = parse_usize_count)]
    pub max_sessions: usize,
}

impl From<OpenLoopArgs> for OpenLoopConfig {
    fn from(a: OpenLoopArgs) -> OpenLoopConfig {
        OpenLoopConfig {
            arrival: a.arrival.into(),
            connections: a.connections,
            max_sessions: a.max_sessions,
        }
    }
}

/// How connections behave.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Connections")]
pub struct ConnArgs {
    /// HTTP version: 1.1, 2, 3 or auto.
    ///
    /// auto: what TLS negotiates (h2 or http/1.1; auto picks HTTP/3, which runs over UDP,
    /// only with --alt-svc when the server announces it: or ask for it with `3`), HTTP/1.1
    /// over cleartext. `2` on an http:// URL is h2c with
    /// prior knowledge. `3`: HTTP/3 over QUIC, https:// only (certificates checked as for
    /// TLS: --cacert, --insecure).
    #[arg(long, value_name = "VERSION", default_value = ConnConfig::default().http.as_str(),
          value_parser = parse_http)]
    pub http: HttpVersion,
    /// With --http auto over https: speak HTTP/3 where the server announces it.
    ///
    /// Before the load, one HTTP/1.1 HEAD / to the first server reads its `Alt-Svc` header
    /// (RFC 7838): an `h3` alternative on the same host makes the run HTTP/3 on the announced
    /// UDP port; without one (or with `clear`) the run stays on TCP as ALPN chooses, and the
    /// plan says why. Without --alt-svc, --http auto never leaves TCP.
    #[arg(long)]
    pub alt_svc: bool,
    /// HTTP/2 and HTTP/3: concurrent streams per connection (capped by the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS, or QUIC's MAX_STREAMS). Closed loop: each user takes one stream, so users
    /// share ⌈users / streams⌉ connections. A scenario's user has its own connection, and
    /// its page's burst goes on at most this many streams of it at once.
    #[arg(long, value_name = "N", default_value_t = ConnConfig::default().streams)]
    pub streams: u32,
    /// A new connection for every request (ab without -k).
    ///
    /// As httperf's --num-calls 1.
    #[arg(long)]
    pub no_keep_alive: bool,
    /// Keep connections alive: the default; accepted for ab's -k.
    #[arg(short = 'k', long, conflicts_with = "no_keep_alive")]
    pub keep_alive: bool,
    /// Close a kept-alive connection after K requests (httperf --num-calls K).
    #[arg(long, value_name = "K")]
    pub calls_per_connection: Option<u32>,
    /// Time allowed for one request.
    ///
    /// From its start to the end of its response; past it, the request is a `timeout` error.
    #[arg(long, value_name = "DURATION", default_value_t = Dur(ConnConfig::default().timeout), value_parser = parse_dur)]
    pub timeout: Dur,
    /// Time allowed to establish a TCP connection.
    ///
    /// When every connect attempt of the last second failed, each thread spaces its attempts
    /// (10 ms, doubling to 1 s) until one connects; requests meanwhile fail at once
    /// (docs/security.md).
    #[arg(long, value_name = "DURATION", default_value_t = Dur(ConnConfig::default().connect_timeout), value_parser = parse_dur)]
    pub connect_timeout: Dur,
    /// Worker threads [default: number of cores] (wrk: -t).
    ///
    /// Each with its own event loop.
    #[arg(long, short = 't', value_name = "N")]
    pub threads: Option<usize>,
    /// Open loop: at most one wake-up per this period for arrivals, so that dense arrivals
    /// share one (wrk2's granularity is 1 ms). Response times forgive at most this much of the
    /// resulting wait; send lag shows it raw. 0 = wake for every arrival (costs more CPU).
    #[arg(long, value_name = "DURATION", default_value_t = Dur(ConnConfig::default().pacing_slack), value_parser = parse_dur)]
    pub pacing_slack: Dur,
    /// Seed for random choices (arrivals, think times, URL picks), for repeatable plans.
    #[arg(long, default_value_t = ConnConfig::default().seed)]
    pub seed: u64,
    /// I/O backend: io_uring (one ring per thread, one submit per loop turn, multishot
    /// receives) or epoll. auto: epoll for the open loop (io_uring costs more CPU there),
    /// io_uring for the closed loop where the kernel allows it; the plan line and the summary
    /// say which ran and why. `--io uring` where the kernel refuses it is an error.
    #[arg(long, value_name = "auto|epoll|uring", default_value = "auto", env = "OVERLOAD_IO", value_parser = parse_io)]
    pub io: crate::engine::IoChoice,
    /// Make connections from these local addresses, round-robin per thread: a list, range or
    /// CIDR block (127.0.0.1-127.0.0.250, 127.0.0.0/24, 10.0.0.5,10.0.0.6, IPv6 too).
    ///
    /// One source address has about 28,000 local ports per server (net.ipv4.ip_local_port_range);
    /// more addresses hold more connections (a million over 250 loopback addresses). Each must
    /// be an address of this host, of the target's family; at most 65536.
    #[arg(long, value_name = "ADDRS", value_parser = parse_source)]
    pub source: Option<Sources>,
    #[command(flatten)]
    pub tls: TlsArgs,
}

fn parse_io(s: &str) -> Result<crate::engine::IoChoice, String> {
    crate::engine::IoChoice::parse(s)
}

fn parse_source(s: &str) -> Result<Sources, String> {
    Sources::parse(s)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TlsVersionArg {
    #[value(name = "1.2")]
    V12,
    #[value(name = "1.3")]
    V13,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

/// TLS options, for https:// URLs.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Connections")]
pub struct TlsArgs {
    /// https: trust the CA certificate(s) of this PEM file.
    ///
    /// Instead of the system's roots.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// https: do not verify the server's certificate (the summary says so).
    #[arg(long)]
    pub insecure: bool,
    /// https: client certificate chain (PEM) for servers that ask for one; needs --client-key.
    #[arg(long, value_name = "FILE")]
    pub client_cert: Option<PathBuf>,
    /// https: the private key (PEM) of --client-cert.
    #[arg(long, value_name = "FILE")]
    pub client_key: Option<PathBuf>,
    /// https: speak only this TLS version [default: 1.2 or 1.3, as the server prefers].
    #[arg(long, value_enum, value_name = "VERSION")]
    pub tls_version: Option<TlsVersionArg>,
    /// https: resume TLS sessions on new connections (one session cache per thread, as
    /// browsers keep); off: every new connection does a full handshake.
    #[arg(long, value_enum, default_value = "on", value_name = "on|off")]
    pub tls_resumption: OnOff,
    /// HTTP/3: send idempotent requests as 0-RTT early data on resumed connections.
    ///
    /// Needs --tls-resumption on; requests that are not idempotent (POST) wait for the
    /// handshake. Handshakes whose early data the server accepted are counted apart.
    #[arg(
        long = "0rtt",
        value_enum,
        default_value = "off",
        value_name = "on|off"
    )]
    pub zero_rtt: OnOff,
}

impl From<TlsArgs> for TlsConfig {
    fn from(a: TlsArgs) -> TlsConfig {
        TlsConfig {
            cacert: a.cacert,
            insecure: a.insecure,
            client_cert: a.client_cert,
            client_key: a.client_key,
            version: a.tls_version.map(|v| match v {
                TlsVersionArg::V12 => TlsVersion::V12,
                TlsVersionArg::V13 => TlsVersion::V13,
            }),
            resumption: a.tls_resumption == OnOff::On,
            early_data: a.zero_rtt == OnOff::On,
            ..TlsConfig::default()
        }
    }
}

impl From<ConnArgs> for ConnConfig {
    fn from(a: ConnArgs) -> ConnConfig {
        ConnConfig {
            http: a.http,
            alt_svc: a.alt_svc,
            streams: a.streams,
            keep_alive: !a.no_keep_alive,
            calls_per_connection: a.calls_per_connection,
            timeout: a.timeout.0,
            connect_timeout: a.connect_timeout.0,
            threads: a.threads,
            pacing_slack: a.pacing_slack.0,
            seed: a.seed,
            tls: a.tls.into(),
            io: a.io,
            source: a.source.map(std::sync::Arc::new),
        }
    }
}

fn parse_http(s: &str) -> Result<HttpVersion, String> {
    HttpVersion::parse(s)
}

/// Options of every stepped command (sweep, capacity): timing, SLO, output.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Steps")]
pub struct StepArgs {
    /// Warm-up of each step (sent, not counted).
    #[arg(long, value_name = "DURATION", default_value_t = Dur(StepTiming::default().warmup), value_parser = parse_dur)]
    pub warmup: Dur,
    /// Measured length of each step.
    ///
    /// S1's TEST_DURATION.
    #[arg(long, value_name = "DURATION", default_value_t = Dur(StepTiming::default().step), value_parser = parse_dur)]
    pub step: Dur,
    /// Pause between steps, so the server drains.
    ///
    /// S1's WAIT.
    #[arg(long, value_name = "DURATION", default_value_t = Dur(StepTiming::default().rest), value_parser = parse_dur)]
    pub rest: Dur,
    /// Service-level objective, e.g. 'p99<500ms,errors<1%'.
    ///
    /// Conditions on mean/p50/p90/p99/p999/max, errors and goodput, comma-separated; a
    /// request's name before a colon limits one to that request ('login:p95<300ms'). Each
    /// step is marked; exit code 3 when one fails it.
    #[arg(long)]
    pub slo: Option<String>,
    /// Results folder [default: runs/<UTC time>-<name>].
    #[arg(long, value_name = "DIR", help_heading = "Output")]
    pub out: Option<PathBuf>,
    /// Name of the run in reports [default: from the URL].
    ///
    /// In reports and comparisons, and the end of its folder's name in runs/ (no '/', at
    /// most 100 bytes).
    #[arg(long, help_heading = "Output")]
    pub name: Option<String>,
    /// No progress bar and no per-step lines.
    #[arg(long, short = 'q', help_heading = "Output")]
    pub quiet: bool,
    /// Serve the report live on 127.0.0.1:PORT (0: any port).
    ///
    /// Reloaded every second while the run goes on, at a secret path printed on the
    /// terminal.
    #[arg(long, value_name = "PORT", help_heading = "Output")]
    pub live_port: Option<u16>,
    #[command(flatten)]
    pub listen: super::view_args::LiveListenArgs,
    #[command(flatten)]
    pub view: super::view_args::ViewArgs,
}

impl StepArgs {
    pub fn timing(&self) -> StepTiming {
        StepTiming {
            warmup: self.warmup.0,
            step: self.step.0,
            rest: self.rest.0,
        }
    }

    pub fn output(&self) -> Output {
        Output {
            out: self.out.clone(),
            name: self.name.clone(),
            quiet: self.quiet,
            live_port: self.live_port,
            live_view: false,
            live_listen: self.listen.live_listen,
            ..self.view.output()
        }
    }
}

/// Parses `--think`: a duration or a `lo..hi` range.
pub fn parse_think(s: &str) -> Result<(Duration, Duration), String> {
    parse_duration_range(s)
}
