//! `overload agent`: serves this host's samples to a controller.
//!
//! A small hand-written HTTP/1.1 server on std threads: one thread accepts, one short-lived
//! thread per connection (at most `MAX_CONNS`), one request per connection. Security model:
//! loopback unless allowed otherwise; every request must carry `Authorization: Bearer TOKEN`
//! (compared in constant time); read-only — GET of two fixed paths, no file serving, no
//! command execution, nothing in a request changes what is sampled.
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::client::SamplesResponse;
use super::{prom, ObserveConfig, Observer, ObserverHandle, LOCAL};

/// Concurrent connections served; more get 503 at once (a flood can't exhaust threads).
const MAX_CONNS: usize = 32;
/// Longest request head accepted.
const MAX_HEAD: usize = 8 * 1024;
/// Time a client gets to send its request head.
const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Samples per /samples answer (a controller that fell far behind pages through).
const MAX_PER_RESPONSE: usize = 10_000;

#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub listen: SocketAddr,
    pub token: String,
    /// What to sample here; `agents` must be empty (an agent does not chain).
    pub observe: ObserveConfig,
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

/// Starts sampling and serving; returns once the socket listens.
pub fn start(cfg: AgentConfig) -> crate::Result<AgentHandle> {
    check_token(&cfg.token)?;
    let mut observe = cfg.observe;
    observe.agents.clear();
    observe.local = true;
    let observer = Arc::new(Observer::start(observe)?);
    let listener = TcpListener::bind(cfg.listen).map_err(|e| {
        crate::Error::runtime(format!("agent: cannot listen on {}: {e}", cfg.listen))
    })?;
    // Non-blocking accept polled every 20 ms: the loop can notice `stop` without a wake-up
    // connection.
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let st = Arc::clone(&stop);
    let obs = Arc::clone(&observer);
    let token = Arc::new(cfg.token.into_bytes());
    let thread = std::thread::Builder::new()
        .name("agent-accept".into())
        .spawn(move || accept_loop(listener, &st, obs, token))
        .map_err(|e| crate::Error::runtime(format!("agent: cannot start a thread: {e}")))?;
    Ok(AgentHandle {
        addr,
        stop,
        thread: Some(thread),
        observer,
    })
}

fn accept_loop(l: TcpListener, stop: &AtomicBool, obs: Arc<ObserverHandle>, token: Arc<Vec<u8>>) {
    let active = Arc::new(AtomicUsize::new(0));
    while !stop.load(Ordering::SeqCst) {
        match l.accept() {
            Ok((mut s, _)) => {
                let _ = s.set_nonblocking(false);
                if active.load(Ordering::SeqCst) >= MAX_CONNS {
                    let _ = s.set_write_timeout(Some(Duration::from_millis(200)));
                    let _ = s.write_all(&response(503, "text/plain", b"busy\n", &[]));
                    continue;
                }
                active.fetch_add(1, Ordering::SeqCst);
                let (a, o, t) = (Arc::clone(&active), Arc::clone(&obs), Arc::clone(&token));
                let spawned =
                    std::thread::Builder::new()
                        .name("agent-conn".into())
                        .spawn(move || {
                            serve(s, &o, &t);
                            a.fetch_sub(1, Ordering::SeqCst);
                        });
                if spawned.is_err() {
                    active.fetch_sub(1, Ordering::SeqCst);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(20));
            }
            // EMFILE and the like: back off rather than spin.
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// Reads one request head (bounded in size and time) and answers it.
fn serve(mut s: TcpStream, obs: &ObserverHandle, token: &[u8]) {
    let _ = s.set_write_timeout(Some(READ_TIMEOUT));
    let deadline = Instant::now() + READ_TIMEOUT;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    let reply = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break response(408, "text/plain", b"request timeout\n", &[]);
        }
        let _ = s.set_read_timeout(Some(left));
        match s.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        }
        if let Some(r) = handle(&buf, obs, token) {
            break r;
        }
        if buf.len() > MAX_HEAD {
            break response(431, "text/plain", b"request head too large\n", &[]);
        }
    };
    let _ = s.write_all(&reply);
    let _ = s.flush();
}

/// The answer to a request head in `buf`, or None if the head is incomplete.
pub fn handle(buf: &[u8], obs: &ObserverHandle, token: &[u8]) -> Option<Vec<u8>> {
    let mut hs = [httparse::EMPTY_HEADER; 32];
    let mut req = httparse::Request::new(&mut hs);
    match req.parse(buf) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return None,
        Err(_) => return Some(response(400, "text/plain", b"bad request\n", &[])),
    }
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
    if req.method != Some("GET") {
        return Some(response(
            405,
            "text/plain",
            b"GET only\n",
            &[("Allow", "GET")],
        ));
    }
    let path = req.path.unwrap_or("/");
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
            let latest: Vec<_> = obs.latest(LOCAL).into_iter().collect();
            response(
                200,
                "text/plain; version=0.0.4; charset=utf-8",
                prom::render(&latest).as_bytes(),
                &[],
            )
        }
        _ => response(
            404,
            "text/plain",
            b"not found (try /samples or /metrics)\n",
            &[],
        ),
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

/// Reads a token file (surrounding whitespace trimmed).
pub fn read_token(path: &std::path::Path) -> crate::Result<String> {
    let t = std::fs::read_to_string(path).map_err(|e| {
        crate::Error::usage(format!("--token-file: cannot read {}: {e}", path.display()))
    })?;
    let t = t.trim().to_string();
    check_token(&t)?;
    Ok(t)
}

fn response(status: u16, ctype: &str, body: &[u8], extra: &[(&str, &str)]) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
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
            let r = handle(raw, &obs, tok)?;
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
        obs.stop();
    }
}
