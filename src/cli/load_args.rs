//! Options shared by every command that sends load (run; later sweep, capacity): the request
//! mix, connection handling and timeouts. Each is validated here into the engine's types,
//! with a one-line error naming the flag.
use crate::engine::{Arrival, Pick, Prepared};
use crate::plan::{parse_headers, parse_method, read_urls_file, RequestSpec, Url};
use crate::store::fsutil::{read_capped, MAX_BODY_FILE};
use crate::units::{parse_duration, parse_duration_range};
use crate::Error;
use clap::{Args, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum PickArg {
    /// Each request picks a URL at random (siege --internet).
    Random,
    /// URLs in file order, round and round (httperf --wlog).
    Sequence,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ArrivalArg {
    /// Evenly spaced arrivals.
    Constant,
    /// Exponential gaps: independent users arriving at random.
    Poisson,
}

/// What to send.
#[derive(Args, Debug, Clone)]
pub struct RequestArgs {
    /// Target URL(s), http://host[:port]/path.
    #[arg(value_name = "URL")]
    pub urls: Vec<String>,
    /// Read the URLs from a file in siege's format: `URL` or `URL POST data` per line, # comments.
    #[arg(long = "urls", value_name = "FILE")]
    pub urls_file: Option<PathBuf>,
    /// How each request chooses among several URLs.
    #[arg(long, value_enum, default_value = "sequence")]
    pub pick: PickArg,
    /// HTTP method for the URLs given on the command line.
    #[arg(short = 'X', long = "method", default_value = "GET")]
    pub method: String,
    /// Extra request header, 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    pub headers: Vec<String>,
    /// Request body: TEXT, or @FILE to read it from a file.
    #[arg(long)]
    pub body: Option<String>,
}

/// The open loop's arrivals and connection pool (sweep --rates, capacity).
#[derive(Args, Debug, Clone)]
pub struct OpenLoopArgs {
    /// Arrival process of the open loop.
    #[arg(long, value_enum, default_value = "constant")]
    pub arrival: ArrivalArg,
    /// Open loop: most connections to open (opened as needed).
    #[arg(long, default_value_t = 10_000)]
    pub connections: usize,
}

impl OpenLoopArgs {
    pub fn validate(&self) -> crate::Result<()> {
        if self.connections == 0 || self.connections > 1_000_000 {
            return Err(Error::usage(format!(
                "--connections {}: use 1 to 1000000",
                self.connections
            )));
        }
        Ok(())
    }
}

/// How connections behave.
#[derive(Args, Debug, Clone)]
pub struct ConnArgs {
    /// A new connection for every request (ab without -k, httperf --num-calls 1).
    #[arg(long)]
    pub no_keep_alive: bool,
    /// Close a kept-alive connection after K requests (httperf --num-calls K).
    #[arg(long, value_name = "K")]
    pub calls_per_connection: Option<u32>,
    /// Time allowed for one request, from its start to the end of its response.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Time allowed to establish a TCP connection.
    #[arg(long, default_value = "3s", value_parser = parse_duration)]
    pub connect_timeout: Duration,
    /// Worker threads, each with its own event loop (default: number of cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Open loop: at most one wake-up per this period for arrivals, so that dense arrivals
    /// share one (wrk2's granularity is 1 ms). Response times forgive at most this much of the
    /// resulting wait; send lag shows it raw. 0 = wake for every arrival (costs more CPU).
    #[arg(long, default_value = "1ms", value_parser = parse_duration)]
    pub pacing_slack: Duration,
    /// Seed for random choices (arrivals, think times, URL picks), for repeatable plans.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

/// The request mix, resolved and pre-rendered for the engine.
pub struct Mix {
    pub addrs: Vec<SocketAddr>,
    pub requests: Vec<Prepared>,
    pub pick: Pick,
    /// The URLs, for display and the results.
    pub urls: Vec<String>,
}

impl RequestArgs {
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
            });
            urls.push(format!(
                "{} http://{}{}",
                s.method, s.url.authority, s.url.target
            ));
        }
        let pick = match self.pick {
            PickArg::Random => Pick::Random,
            PickArg::Sequence => Pick::Sequence,
        };
        Ok(Mix {
            addrs,
            requests,
            pick,
            urls,
        })
    }
}

impl ConnArgs {
    pub fn validate(&self) -> crate::Result<()> {
        if self.calls_per_connection == Some(0) {
            return Err(Error::usage("--calls-per-connection must be at least 1"));
        }
        if self.no_keep_alive && self.calls_per_connection.is_some_and(|k| k > 1) {
            return Err(Error::usage(
                "--no-keep-alive and --calls-per-connection K > 1 contradict each other",
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

impl From<ArrivalArg> for Arrival {
    fn from(a: ArrivalArg) -> Arrival {
        match a {
            ArrivalArg::Constant => Arrival::Constant,
            ArrivalArg::Poisson => Arrival::Poisson,
        }
    }
}

/// The engine configuration shared by run, sweep and capacity (the load itself aside).
pub fn base_config(
    request: &RequestArgs,
    conn: &ConnArgs,
    load: crate::engine::Load,
    duration: Option<Duration>,
    max_requests: Option<u64>,
    warmup: Duration,
) -> crate::Result<(crate::engine::EngineConfig, Vec<String>)> {
    conn.validate()?;
    let mix = request.mix()?;
    let cfg = crate::engine::EngineConfig {
        addrs: mix.addrs,
        requests: mix.requests,
        pick: mix.pick,
        load,
        duration,
        max_requests,
        warmup,
        threads: conn.threads(),
        keep_alive: !conn.no_keep_alive && conn.calls_per_connection != Some(1),
        calls_per_connection: conn.calls_per_connection,
        timeout: conn.timeout,
        connect_timeout: conn.connect_timeout,
        seed: conn.seed,
        pacing_slack: conn.pacing_slack,
    };
    Ok((cfg, mix.urls))
}

/// Parses `--think`: a duration or a `lo..hi` range.
pub fn parse_think(s: &str) -> Result<(Duration, Duration), String> {
    parse_duration_range(s)
}
