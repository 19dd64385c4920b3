//! `overload agent`: serves this host's samples to a controller.
//!
//! Served by the server core (`listen`: one request per connection, deadlines, slots). Security model: loopback
//! unless allowed otherwise; every request must carry `Authorization: Bearer TOKEN`
//! (compared in constant time); read-only — GET of fixed paths, no file serving, nothing in
//! a request changes what is sampled. The audit's two questions (`/host?port=N`: kernel
//! limits, the backlog on port N, the listener's open-files limit; `/php-ini`: the PHP
//! settings found, which runs the FPM binary's `-i` or `php --ini`, fixed commands no
//! request can change) are answered by [`HostQuestions`].
//!
//! `overload agent --generate` adds one [`Extension`] (the generator, `scale::agent`): the
//! same listener, token check and connection limits then also take POSTs with a bounded body,
//! which the extension answers. The channel is TLS when a rustls server configuration is
//! given (`--tls-cert/--tls-key`, `--tls-self-signed`).
//!
//! Under a slow-connection attack (many connections sending a byte a second, from one
//! address or many) the controller still gets through: the token is checked on the head alone,
//! before a serving slot or a body, and the connections still sending their heads are bounded
//! by [`LIMITS`], a newcomer pushing out the oldest of the peer holding the most.
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::client::SamplesResponse;
use super::sampler::{Sampler, SamplerConfig};
use super::{prom_export, ObserveConfig, Observer, ObserverHandle, LOCAL};
pub use crate::listen::Reply;
use crate::listen::{Head, Limits, Service};

/// What a peer may make the agent spend (docs/security.md, "A network peer without the
/// token"): a controller sends its head in one packet, so 2 s is generous; 128 connections
/// may be sending their heads (8 per peer address, a newcomer pushing out the oldest of the
/// peer holding the most), 32 admitted requests are answered at once.
pub const LIMITS: Limits = Limits::BASE;
/// Samples per /samples answer (a controller that fell far behind pages through).
const MAX_PER_RESPONSE: usize = 10_000;

#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub listen: SocketAddr,
    pub token: String,
    /// What to sample here; `agents` must be empty (an agent does not chain).
    pub observe: ObserveConfig,
    /// Requests beyond observation (the generator of `agent --generate`); None: read-only.
    pub extension: Option<Arc<dyn Extension>>,
    /// Serve over TLS with this configuration; None: plain HTTP.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Answers the audit's `/host` and `/php-ini`; None: 404.
    pub host: Option<Arc<dyn HostQuestions>>,
}

/// The audit's read-only questions about this host (`GET /host?port=N`, `GET /php-ini`),
/// answered as JSON by `audit::gather::AgentAnswers`; handed in because audit sits above
/// observe.
pub trait HostQuestions: Send + Sync + std::fmt::Debug {
    fn host(&self, port: u16) -> Reply;
    /// `port`: the audited server's, so PHP's files are not taken for another program's.
    fn php_ini(&self, port: Option<u16>) -> Reply;
}

/// Requests the agent answers beyond observation, behind the same token check and limits.
/// Lives above `observe` (it may run load), so it is handed in as a trait object.
pub trait Extension: Send + Sync + std::fmt::Debug {
    /// Largest request body accepted (a longer one gets 413 before it is read).
    fn max_body(&self) -> usize;
    /// An authorized POST of `body` to `path`.
    fn post(&self, path: &str, body: &[u8]) -> Reply;
    /// An authorized GET of a path that observation does not serve; None: 404.
    fn get(&self, path: &str) -> Option<Reply>;
}

pub struct AgentHandle {
    pub addr: SocketAddr,
    server: crate::listen::Server,
    observer: Arc<ObserverHandle>,
}

impl AgentHandle {
    /// Stops listening (bounded: no client is waited on) and sampling.
    pub fn stop(self) {
        self.server.stop();
    }
    /// The observer behind the agent (for tests and for an in-process agent).
    pub fn observer(&self) -> &ObserverHandle {
        &self.observer
    }
}

/// The agent as the server core sees it.
struct Agent {
    obs: Arc<ObserverHandle>,
    token: Vec<u8>,
    /// Answers /metrics before the first periodic sample, so a scrape is never empty.
    scrape: Mutex<Sampler>,
    ext: Option<Arc<dyn Extension>>,
    host: Option<Arc<dyn HostQuestions>>,
}

impl Agent {
    fn routes(&self) -> Routes<'_> {
        Routes {
            obs: &self.obs,
            token: &self.token,
            ext: self.ext.as_deref(),
            host: self.host.as_deref(),
            scrape: Some(&self.scrape),
        }
    }
}

impl Service for Agent {
    fn admit(&self, head: &Head) -> Result<usize, Reply> {
        self.routes().admit(head)
    }
    fn answer(&self, head: &Head, body: &[u8]) -> Reply {
        self.routes().answer(head, body)
    }
}

/// Starts sampling and serving; returns once the socket listens.
pub fn start(cfg: AgentConfig) -> crate::Result<AgentHandle> {
    check_token(&cfg.token)?;
    let mut observe = cfg.observe;
    observe.agents.clear();
    observe.local = true;
    let scrape = Sampler::new(SamplerConfig {
        source: LOCAL.to_string(),
        groups: observe.groups.clone(),
        fpm: observe.fpm.clone(),
        port: observe.port,
        this_process: true,
        fpm_timeout: (observe.every / 2).min(Duration::from_secs(2)),
        apache: Vec::new(),
        mysql: Vec::new(),
    });
    let observer = Arc::new(Observer::start(observe)?);
    let listener = TcpListener::bind(cfg.listen).map_err(|e| {
        crate::Error::runtime(format!("agent: cannot listen on {}: {e}", cfg.listen))
    })?;
    let agent = Agent {
        obs: Arc::clone(&observer),
        token: cfg.token.into_bytes(),
        scrape: Mutex::new(scrape),
        ext: cfg.extension,
        host: cfg.host,
    };
    let server = crate::listen::serve(listener, "agent", LIMITS, Arc::new(agent), cfg.tls)
        .map_err(|e| crate::Error::runtime(format!("agent: cannot serve: {e}")))?;
    Ok(AgentHandle {
        addr: server.addr,
        server,
        observer,
    })
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The answer to a request arriving whole in `buf` (no extension), or None while it is
/// incomplete: the same judgement and routes as the listener, without I/O (unit tests, the
/// `listeners` fuzz target).
pub fn handle(
    buf: &[u8],
    obs: &ObserverHandle,
    token: &[u8],
    host: Option<&dyn HostQuestions>,
) -> Option<Vec<u8>> {
    let routes = Routes {
        obs,
        token,
        ext: None,
        host,
        scrape: None,
    };
    crate::listen::respond(&routes, buf, LIMITS.max_head).map(|r| r.to_bytes())
}

/// What the agent answers, over borrowed parts.
struct Routes<'a> {
    obs: &'a ObserverHandle,
    token: &'a [u8],
    ext: Option<&'a dyn Extension>,
    host: Option<&'a dyn HostQuestions>,
    /// Samples now for /metrics while the observer has none; None: a fresh sampler.
    scrape: Option<&'a Mutex<Sampler>>,
}

impl Routes<'_> {
    fn sample_now(&self) -> super::Sample {
        match self.scrape {
            Some(s) => lock(s).sample(),
            None => Sampler::new(SamplerConfig {
                source: LOCAL.to_string(),
                groups: Vec::new(),
                fpm: Vec::new(),
                port: None,
                this_process: true,
                fpm_timeout: Duration::from_secs(1),
                apache: Vec::new(),
                mysql: Vec::new(),
            })
            .sample(),
        }
    }
}

impl Service for Routes<'_> {
    /// The token first, before anything else; then the method.
    fn admit(&self, head: &Head) -> Result<usize, Reply> {
        if !authorized(head.header("authorization"), self.token) {
            return Err(Reply::text(401, "unauthorized").with_header("WWW-Authenticate", "Bearer"));
        }
        match (head.method.as_str(), self.ext) {
            ("GET", _) => Ok(0),
            ("POST", Some(ext)) => Ok(ext.max_body()),
            _ => Err(Reply::text(405, "GET only").with_header("Allow", "GET")),
        }
    }

    fn answer(&self, head: &Head, body: &[u8]) -> Reply {
        let path = head.target.as_str();
        if let (Some(ext), "POST") = (self.ext, head.method.as_str()) {
            return ext.post(path, body);
        }
        let (route, query) = path.split_once('?').unwrap_or((path, ""));
        match route {
            "/samples" => {
                let since = match query.split('&').find_map(|kv| kv.strip_prefix("since=")) {
                    None => 0,
                    Some(v) => match v.parse::<u64>() {
                        Ok(v) => v,
                        Err(_) => return Reply::text(400, "since: expected Unix ms"),
                    },
                };
                let mut samples = self.obs.samples_between(since, u64::MAX);
                samples.truncate(MAX_PER_RESPONSE);
                let body = SamplesResponse {
                    now_unix_ms: crate::clock::unix_ms(),
                    source: LOCAL.to_string(),
                    samples,
                };
                match serde_json::to_vec(&body) {
                    Ok(b) => Reply::json(b),
                    Err(_) => Reply::text(500, "encoding failed"),
                }
            }
            "/metrics" => {
                let latest = vec![self.obs.latest(LOCAL).unwrap_or_else(|| self.sample_now())];
                Reply {
                    status: 200,
                    content_type: "text/plain; version=0.0.4; charset=utf-8",
                    body: prom_export::render(&latest).into_bytes(),
                    headers: Vec::new(),
                }
            }
            "/host" | "/php-ini" if self.host.is_some() => {
                let h = self.host.expect("checked");
                let given = query.split('&').find_map(|kv| kv.strip_prefix("port="));
                let port = given.and_then(|v| v.parse::<u16>().ok()).filter(|p| *p > 0);
                match (route, given, port) {
                    (_, Some(_), None) | ("/host", None, _) => {
                        Reply::text(400, "port: expected ?port=N, N in 1-65535")
                    }
                    ("/php-ini", _, p) => h.php_ini(p),
                    (_, _, p) => h.host(p.expect("matched above")),
                }
            }
            other => self
                .ext
                .and_then(|e| e.get(other))
                .unwrap_or_else(|| Reply::text(404, "not found (try /samples or /metrics)")),
        }
    }
}

fn authorized(header: Option<&[u8]>, token: &[u8]) -> bool {
    let Some(h) = header else {
        return false;
    };
    // The scheme is case-insensitive (RFC 7235); what follows it is the secret.
    let given = match h.get(..7) {
        Some(p) if p.eq_ignore_ascii_case(b"bearer ") => &h[7..],
        _ => return false,
    };
    constant_time_eq(given, token)
}

/// Compares without an early exit: the time depends on the expected token's length only,
/// never on where the first difference is or on the given token's content. (The length of
/// the secret is the one thing left to time; tokens are long and random.)
pub fn constant_time_eq(given: &[u8], expected: &[u8]) -> bool {
    let mut diff = u8::from(given.len() != expected.len());
    for (i, e) in expected.iter().enumerate() {
        // Wrap around a shorter input so each expected byte costs the same work.
        let g = if given.is_empty() {
            0
        } else {
            given[i % given.len()]
        };
        diff |= g ^ e;
    }
    std::hint::black_box(diff) == 0
}

/// Tokens must be long and header-safe: visible ASCII, no spaces.
pub fn check_token(t: &str) -> crate::Result<()> {
    if t.len() < 16 {
        return Err(crate::Error::usage(
            "agent token: at least 16 characters (e.g. `head -c 24 /dev/urandom | base64`)",
        ));
    }
    if !t.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(crate::Error::usage(
            "agent token: visible ASCII characters only, no spaces",
        ));
    }
    Ok(())
}

/// Largest token file: a token is tens of bytes.
const MAX_TOKEN_FILE: u64 = 4096;

/// Reads a token file (surrounding whitespace trimmed): a regular file of at most 4 KiB
/// (`/dev/zero` or a FIFO is refused at once, not read or waited on).
pub fn read_token(path: &std::path::Path) -> crate::Result<String> {
    let t = crate::fsutil::read_capped_text(path, MAX_TOKEN_FILE, "--token-file")
        .map_err(crate::Error::usage)?;
    let t = t.trim().to_string();
    check_token(&t)?;
    if let Some(w) = std::fs::metadata(path).ok().and_then(|m| {
        token_file_warning(
            path,
            std::os::unix::fs::PermissionsExt::mode(&m.permissions()),
        )
    }) {
        crate::eoutln!("overload: warning: {w}");
    }
    Ok(t)
}

/// A warning when the agent listens beyond loopback (`--allow-remote`) without TLS: every
/// request's token, and every answer, then cross the network in clear text.
pub fn plain_remote_warning(listen: SocketAddr, tls: bool) -> Option<String> {
    (!tls && !listen.ip().is_loopback()).then(|| {
        format!(
            "--allow-remote on {listen} over plain HTTP: the token travels in clear text; \
             serve TLS (--tls-self-signed, or --tls-cert/--tls-key) or reach the agent \
             through an SSH tunnel"
        )
    })
}

/// A warning when a token file's `mode` lets every user read the secret.
pub fn token_file_warning(path: &std::path::Path, mode: u32) -> Option<String> {
    (mode & 0o004 != 0).then(|| {
        format!(
            "token file '{}' is readable by every user (mode {:o}); `chmod 600` it",
            crate::units::escape_controls(&path.display().to_string()),
            mode & 0o777
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ct_eq() {
        assert!(constant_time_eq(b"abcdefgh", b"abcdefgh"));
        assert!(!constant_time_eq(b"abcdefgX", b"abcdefgh"));
        assert!(!constant_time_eq(b"abcdefg", b"abcdefgh"));
        assert!(!constant_time_eq(b"abcdefghabcdefgh", b"abcdefgh"));
        assert!(!constant_time_eq(b"", b"abcdefgh"));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn bearer_header() {
        let t = b"0123456789abcdef";
        assert!(authorized(Some(b"Bearer 0123456789abcdef"), t));
        assert!(authorized(Some(b"bearer 0123456789abcdef"), t));
        assert!(!authorized(Some(b"Basic 0123456789abcdef"), t));
        assert!(!authorized(Some(b"Bearer"), t));
        assert!(!authorized(None, t));
    }

    #[test]
    fn world_readable_token_file_is_warned_about() {
        let p = std::path::Path::new("/etc/overload/token");
        let w = token_file_warning(p, 0o100644).expect("warned");
        assert!(
            w.contains("/etc/overload/token") && w.contains("644"),
            "{w}"
        );
        assert!(token_file_warning(p, 0o100600).is_none());
        assert!(token_file_warning(p, 0o100640).is_none());
    }

    #[test]
    fn plain_http_beyond_loopback_is_warned_about() {
        let any: SocketAddr = "0.0.0.0:9090".parse().unwrap();
        let w = plain_remote_warning(any, false).expect("warned");
        assert!(
            w.contains("clear text") && w.contains("--allow-remote"),
            "{w}"
        );
        assert!(
            plain_remote_warning(any, true).is_none(),
            "TLS: nothing to say"
        );
        assert!(plain_remote_warning("127.0.0.1:9090".parse().unwrap(), false).is_none());
        assert!(plain_remote_warning("[::1]:9090".parse().unwrap(), false).is_none());
    }

    #[test]
    fn tokens() {
        assert!(check_token("short").is_err());
        assert!(check_token("0123456789 abcdef").is_err());
        assert!(check_token("0123456789abcdef").is_ok());
    }

    #[test]
    fn requests() {
        let obs = Observer::start(ObserveConfig {
            every: Duration::from_millis(20),
            ..Default::default()
        })
        .unwrap();
        let tok = b"0123456789abcdef";
        let status = |raw: &[u8]| -> Option<u16> {
            let r = handle(raw, &obs, tok, None)?;
            std::str::from_utf8(&r[9..12]).ok()?.parse().ok()
        };
        assert_eq!(
            status(b"GET /metrics HTTP/1.1\r\n"),
            None,
            "incomplete head"
        );
        assert_eq!(status(b"\x00\x01garbage\r\n\r\n"), Some(400));
        assert_eq!(status(b"GET /metrics HTTP/1.1\r\n\r\n"), Some(401));
        let auth = "Authorization: Bearer 0123456789abcdef\r\n\r\n";
        assert_eq!(
            status(format!("POST /samples HTTP/1.1\r\n{auth}").as_bytes()),
            Some(405)
        );
        assert_eq!(
            status(format!("GET /etc/passwd HTTP/1.1\r\n{auth}").as_bytes()),
            Some(404)
        );
        assert_eq!(
            status(format!("GET /samples?since=x HTTP/1.1\r\n{auth}").as_bytes()),
            Some(400)
        );
        assert_eq!(
            status(format!("GET /samples?since=0 HTTP/1.1\r\n{auth}").as_bytes()),
            Some(200)
        );
        assert_eq!(
            status(format!("GET /metrics HTTP/1.1\r\n{auth}").as_bytes()),
            Some(200)
        );
        assert_eq!(
            status(format!("GET /host?port=80 HTTP/1.1\r\n{auth}").as_bytes()),
            Some(404),
            "no audit answers handed in"
        );
        obs.stop();
    }

    /// Answers that say which question they got.
    #[derive(Debug)]
    struct Echo;
    impl HostQuestions for Echo {
        fn host(&self, port: u16) -> Reply {
            Reply::json(format!("{{\"port\":{port}}}").into_bytes())
        }
        fn php_ini(&self, port: Option<u16>) -> Reply {
            Reply::json(format!("{{\"ini\":{}}}", port.unwrap_or(0)).into_bytes())
        }
    }

    #[test]
    fn the_audits_questions_need_the_token_and_a_port() {
        let obs = Observer::start(ObserveConfig {
            every: Duration::from_millis(50),
            ..Default::default()
        })
        .unwrap();
        let tok = b"0123456789abcdef";
        let ask = |raw: String| -> (u16, String) {
            let r = handle(raw.as_bytes(), &obs, tok, Some(&Echo)).unwrap();
            let text = String::from_utf8_lossy(&r).into_owned();
            let status = text[9..12].parse().unwrap();
            let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
            (status, body)
        };
        let auth = "Authorization: Bearer 0123456789abcdef\r\n\r\n";
        assert_eq!(
            ask("GET /host?port=8080 HTTP/1.1\r\n\r\n".into()).0,
            401,
            "no token, no answer"
        );
        assert_eq!(
            ask(format!("GET /host?port=8080 HTTP/1.1\r\n{auth}")),
            (200, "{\"port\":8080}".into())
        );
        assert_eq!(ask(format!("GET /host HTTP/1.1\r\n{auth}")).0, 400);
        assert_eq!(ask(format!("GET /host?port=0 HTTP/1.1\r\n{auth}")).0, 400);
        assert_eq!(ask(format!("GET /host?port=x HTTP/1.1\r\n{auth}")).0, 400);
        assert_eq!(
            ask(format!("GET /php-ini HTTP/1.1\r\n{auth}")),
            (200, "{\"ini\":0}".into())
        );
        assert_eq!(
            ask(format!("GET /php-ini?port=9000 HTTP/1.1\r\n{auth}")),
            (200, "{\"ini\":9000}".into())
        );
        assert_eq!(
            ask(format!("GET /php-ini?port=x HTTP/1.1\r\n{auth}")).0,
            400
        );
        assert_eq!(ask(format!("POST /php-ini HTTP/1.1\r\n{auth}")).0, 405);
        obs.stop();
    }
}
