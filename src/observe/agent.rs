//! `overload agent`: serves this host's samples to a controller.
//!
//! A small hand-written HTTP/1.1 server on std threads: one thread blocks in accept, one
//! short-lived thread per connection, one request per connection. Security model: loopback
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
//! Under a slow-connection attack (many connections sending a byte a second) the controller
//! must still get through: a connection has `HEAD_DEADLINE` to send its whole head, one peer
//! address holds at most `MAX_PER_PEER` of the `MAX_CONNS` slots, and a refused connection
//! gets a complete 503 at once.
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::client::SamplesResponse;
use super::sampler::{Sampler, SamplerConfig};
use super::{prom, ObserveConfig, Observer, ObserverHandle, LOCAL};

/// Concurrent connections served; more get 503 at once (a flood can't exhaust threads).
const MAX_CONNS: usize = 32;
/// Connections one peer address may hold at once, so one slow client cannot take every slot.
const MAX_PER_PEER: usize = 8;
/// Longest request head accepted.
const MAX_HEAD: usize = 8 * 1024;
/// Time a client gets to send its whole request head (a controller sends it in one packet).
const HEAD_DEADLINE: Duration = Duration::from_secs(2);
/// Time an answer gets to be written.
const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// Samples per /samples answer (a controller that fell far behind pages through).
const MAX_PER_RESPONSE: usize = 10_000;
/// Time a client gets to send a whole request with a body (an extension's POST).
const BODY_DEADLINE: Duration = Duration::from_secs(10);

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

/// What an extension answers: a status and a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Reply {
    /// A one-line text answer.
    pub fn text(status: u16, line: &str) -> Reply {
        Reply {
            status,
            content_type: "text/plain; charset=utf-8",
            body: format!("{}\n", line.trim_end()).into_bytes(),
        }
    }
    pub fn json(body: Vec<u8>) -> Reply {
        Reply {
            status: 200,
            content_type: "application/json",
            body,
        }
    }
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
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    observer: Arc<ObserverHandle>,
}

impl AgentHandle {
    pub fn stop(mut self) {
        self.shutdown();
    }
    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            // The accept loop blocks in accept: one connection wakes it to see the flag.
            let _ = TcpStream::connect_timeout(&wake_addr(self.addr), Duration::from_secs(1));
            let _ = t.join();
        }
    }
    /// The observer behind the agent (for tests and for an in-process agent).
    pub fn observer(&self) -> &ObserverHandle {
        &self.observer
    }
}

impl Drop for AgentHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Where to connect to reach our own listener (a wildcard address is reached on loopback).
fn wake_addr(addr: SocketAddr) -> SocketAddr {
    let ip = match addr.ip() {
        IpAddr::V4(a) if a.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(a) if a.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, addr.port())
}

/// What every connection thread needs.
struct Ctx {
    obs: Arc<ObserverHandle>,
    token: Vec<u8>,
    /// Answers /metrics before the first periodic sample, so a scrape is never empty.
    scrape: Mutex<Sampler>,
    ext: Option<Arc<dyn Extension>>,
    tls: Option<Arc<rustls::ServerConfig>>,
    host: Option<Arc<dyn HostQuestions>>,
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
    let addr = listener.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let st = Arc::clone(&stop);
    let ctx = Arc::new(Ctx {
        obs: Arc::clone(&observer),
        token: cfg.token.into_bytes(),
        scrape: Mutex::new(scrape),
        ext: cfg.extension,
        tls: cfg.tls,
        host: cfg.host,
    });
    let thread = std::thread::Builder::new()
        .name("agent-accept".into())
        .spawn(move || accept_loop(listener, &st, ctx))
        .map_err(|e| crate::Error::runtime(format!("agent: cannot start a thread: {e}")))?;
    Ok(AgentHandle {
        addr,
        stop,
        thread: Some(thread),
        observer,
    })
}

/// Connections in service, in total and per peer address.
#[derive(Default)]
struct Slots {
    total: usize,
    per_peer: HashMap<IpAddr, usize>,
}

impl Slots {
    /// Takes a slot for `peer`, or says no when the agent or that peer is at its limit.
    fn admit(&mut self, peer: IpAddr) -> bool {
        let mine = self.per_peer.get(&peer).copied().unwrap_or(0);
        if self.total >= MAX_CONNS || mine >= MAX_PER_PEER {
            return false;
        }
        self.total += 1;
        *self.per_peer.entry(peer).or_insert(0) += 1;
        true
    }

    fn release(&mut self, peer: IpAddr) {
        self.total = self.total.saturating_sub(1);
        if let Some(n) = self.per_peer.get_mut(&peer) {
            *n -= 1;
            if *n == 0 {
                self.per_peer.remove(&peer);
            }
        }
    }
}

/// Gives a connection's slot back when its thread ends, however it ends.
struct SlotGuard(Arc<Mutex<Slots>>, IpAddr);

impl Drop for SlotGuard {
    fn drop(&mut self) {
        lock(&self.0).release(self.1);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Blocks in accept (no polling: a controller's probe is answered at once, which keeps its
/// clock-offset estimate tight) until `stop` is set and a wake-up connection arrives.
fn accept_loop(l: TcpListener, stop: &AtomicBool, ctx: Arc<Ctx>) {
    let slots = Arc::new(Mutex::new(Slots::default()));
    loop {
        let accepted = l.accept();
        if stop.load(Ordering::SeqCst) {
            return;
        }
        match accepted {
            Ok((s, peer)) => {
                let ip = peer.ip();
                if !lock(&slots).admit(ip) {
                    refuse(s);
                    continue;
                }
                let guard = SlotGuard(Arc::clone(&slots), ip);
                let c = Arc::clone(&ctx);
                // A failed spawn drops the closure, and with it the guard and the stream.
                let _ = std::thread::Builder::new()
                    .name("agent-conn".into())
                    .spawn(move || {
                        let _slot = guard;
                        serve(s, &c);
                    });
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // EMFILE and the like: back off rather than spin.
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// A complete 503 for a connection over the limits, written without waiting for its head:
/// what already arrived is read first, so closing does not turn into a reset that would
/// destroy the answer.
fn refuse(mut s: TcpStream) {
    if s.set_nonblocking(true).is_ok() {
        let mut scratch = [0u8; 4096];
        while matches!(s.read(&mut scratch), Ok(n) if n > 0) {}
    }
    let _ = s.set_nonblocking(false);
    let _ = s.set_write_timeout(Some(Duration::from_millis(200)));
    let _ = s.write_all(&response(
        503,
        "text/plain",
        b"busy: too many connections\n",
        &[("Retry-After", "1")],
    ));
    let _ = s.shutdown(std::net::Shutdown::Write);
}

/// A connection's byte stream: plain TCP, or TLS over it (rustls, blocking).
type Stream = crate::http_get::Stream<rustls::ServerConnection>;

fn serve(tcp: TcpStream, ctx: &Ctx) {
    let _ = tcp.set_write_timeout(Some(WRITE_TIMEOUT));
    let mut s = match &ctx.tls {
        None => Stream::Plain(tcp),
        Some(cfg) => match rustls::ServerConnection::new(Arc::clone(cfg)) {
            Ok(c) => Stream::Tls(Box::new(rustls::StreamOwned::new(c, tcp))),
            Err(_) => return,
        },
    };
    let max_body = ctx.ext.as_ref().map_or(0, |e| e.max_body());
    let deadline = Instant::now()
        + if max_body > 0 {
            BODY_DEADLINE
        } else {
            HEAD_DEADLINE
        };
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 16 * 1024];
    let reply = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break response(408, "text/plain", b"request timeout\n", &[]);
        }
        let _ = s.tcp().set_read_timeout(Some(left));
        match s.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(_) => return,
        }
        if let Some(r) = answer(&buf, ctx) {
            break r;
        }
        if buf.len() > MAX_HEAD + max_body {
            break response(431, "text/plain", b"request head too large\n", &[]);
        }
    };
    let _ = s.write_all(&reply);
    let _ = s.flush();
    if let Stream::Tls(t) = &mut s {
        // close_notify, so the client reads the answer's end as an end, not a truncation.
        t.conn.send_close_notify();
        let _ = t.flush();
    }
}

fn answer(buf: &[u8], ctx: &Ctx) -> Option<Vec<u8>> {
    handle_with(
        buf,
        &ctx.obs,
        &ctx.token,
        ctx.ext.as_deref(),
        ctx.host.as_deref(),
        || lock(&ctx.scrape).sample(),
    )
}

/// The answer to a request head in `buf`, or None if the head is incomplete.
pub fn handle(
    buf: &[u8],
    obs: &ObserverHandle,
    token: &[u8],
    host: Option<&dyn HostQuestions>,
) -> Option<Vec<u8>> {
    handle_with(buf, obs, token, None, host, || {
        Sampler::new(SamplerConfig {
            source: LOCAL.to_string(),
            groups: Vec::new(),
            fpm: Vec::new(),
            port: None,
            this_process: true,
            fpm_timeout: Duration::from_secs(1),
            apache: Vec::new(),
            mysql: Vec::new(),
        })
        .sample()
    })
}

/// As [`handle`], with the extension if any; `sample_now` answers /metrics while the
/// observer has no sample yet. None: the request (head, or the body it announces) is
/// incomplete.
fn handle_with(
    buf: &[u8],
    obs: &ObserverHandle,
    token: &[u8],
    ext: Option<&dyn Extension>,
    host: Option<&dyn HostQuestions>,
    sample_now: impl FnOnce() -> super::Sample,
) -> Option<Vec<u8>> {
    let mut hs = [httparse::EMPTY_HEADER; 32];
    let mut req = httparse::Request::new(&mut hs);
    let head_len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return None,
        Err(_) => return Some(response(400, "text/plain", b"bad request\n", &[])),
    };
    let auth = req
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("authorization"))
        .map(|h| h.value);
    if !authorized(auth, token) {
        return Some(response(
            401,
            "text/plain",
            b"unauthorized\n",
            &[("WWW-Authenticate", "Bearer")],
        ));
    }
    let path = req.path.unwrap_or("/");
    if let (Some(ext), Some("POST")) = (ext, req.method) {
        let declared = req
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("content-length"))
            .map(|h| {
                std::str::from_utf8(h.value)
                    .ok()
                    .and_then(|v| v.trim().parse::<usize>().ok())
            });
        let len = match declared {
            None => 0,
            Some(Some(n)) => n,
            Some(None) => return Some(response(400, "text/plain", b"bad Content-Length\n", &[])),
        };
        if len > ext.max_body() {
            return Some(response(
                413,
                "text/plain",
                b"request body too large\n",
                &[],
            ));
        }
        let body = buf.get(head_len..head_len + len)?;
        let r = ext.post(path, body);
        return Some(response(r.status, r.content_type, &r.body, &[]));
    }
    if req.method != Some("GET") {
        return Some(response(
            405,
            "text/plain",
            b"GET only\n",
            &[("Allow", "GET")],
        ));
    }
    let (route, query) = path.split_once('?').unwrap_or((path, ""));
    Some(match route {
        "/samples" => {
            let since = query
                .split('&')
                .find_map(|kv| kv.strip_prefix("since="))
                .map(|v| v.parse::<u64>());
            let since = match since {
                None => 0,
                Some(Ok(v)) => v,
                Some(Err(_)) => {
                    return Some(response(
                        400,
                        "text/plain",
                        b"since: expected Unix ms\n",
                        &[],
                    ))
                }
            };
            let mut samples = obs.samples_between(since, u64::MAX);
            samples.truncate(MAX_PER_RESPONSE);
            let body = SamplesResponse {
                now_unix_ms: crate::clock::unix_ms(),
                source: LOCAL.to_string(),
                samples,
            };
            match serde_json::to_vec(&body) {
                Ok(b) => response(200, "application/json", &b, &[]),
                Err(_) => response(500, "text/plain", b"encoding failed\n", &[]),
            }
        }
        "/metrics" => {
            let latest = vec![obs.latest(LOCAL).unwrap_or_else(sample_now)];
            response(
                200,
                "text/plain; version=0.0.4; charset=utf-8",
                prom::render(&latest).as_bytes(),
                &[],
            )
        }
        "/host" | "/php-ini" if host.is_some() => {
            let h = host.expect("checked");
            let given = query.split('&').find_map(|kv| kv.strip_prefix("port="));
            let port = given.and_then(|v| v.parse::<u16>().ok()).filter(|p| *p > 0);
            let r = match (route, given, port) {
                (_, Some(_), None) | ("/host", None, _) => {
                    Reply::text(400, "port: expected ?port=N, N in 1-65535")
                }
                ("/php-ini", _, p) => h.php_ini(p),
                (_, _, p) => h.host(p.expect("matched above")),
            };
            response(r.status, r.content_type, &r.body, &[])
        }
        other => match ext.and_then(|e| e.get(other)) {
            Some(r) => response(r.status, r.content_type, &r.body, &[]),
            None => response(
                404,
                "text/plain",
                b"not found (try /samples or /metrics)\n",
                &[],
            ),
        },
    })
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

fn response(status: u16, ctype: &str, body: &[u8], extra: &[(&str, &str)]) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        422 => "Unprocessable Content",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        _ => "Service Unavailable",
    };
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\n\
         Connection: close\r\nCache-Control: no-store\r\n",
        body.len()
    );
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(body);
    out
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
    fn peers_share_the_slots_fairly() {
        let (a, b): (IpAddr, IpAddr) = ("127.0.0.2".parse().unwrap(), "127.0.0.1".parse().unwrap());
        let mut s = Slots::default();
        for _ in 0..MAX_PER_PEER {
            assert!(s.admit(a));
        }
        assert!(!s.admit(a), "one peer holds at most MAX_PER_PEER");
        assert!(s.admit(b), "another peer still gets in");
        s.release(a);
        assert!(s.admit(a));
        let mut full = Slots::default();
        for i in 0..MAX_CONNS {
            assert!(full.admit(IpAddr::from([10, 0, (i / 256) as u8, (i % 256) as u8])));
        }
        assert!(!full.admit(b), "the total is capped too");
        for i in 0..MAX_CONNS {
            full.release(IpAddr::from([10, 0, (i / 256) as u8, (i % 256) as u8]));
        }
        assert!(full.per_peer.is_empty() && full.total == 0);
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
