//! The one blocking HTTP/1.1 GET client (over TCP, or TLS for https:// URLs through rustls),
//! for everything beside the load itself: observe's
//! agent and PHP-FPM status clients, the lab's readiness checks, the experiment's readiness
//! probes and the audit. One request per connection (`Connection: close` unless the caller
//! sets its own; `KeptConn` keeps one open for the audit's keep-alive probe), a deadline for
//! the whole exchange, and a cap on what is read. The engine has
//! its own non-blocking codec; this is not on the hot path.
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

use crate::url::Url;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// Header names and values as received (values trimmed), in order.
    pub headers: Vec<(String, String)>,
    /// The body, de-chunked. When `truncated`, only the bytes that fit in the cap, as
    /// received (chunk framing included).
    pub body: Vec<u8>,
    /// More than `max_bytes` came: the caller decides whether a partial answer is enough
    /// (a readiness probe needs only the status) or an error (a JSON document).
    pub truncated: bool,
}

impl Response {
    /// First header of that name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// Whom an `https://` URL's certificate must chain to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trust<'a> {
    /// The system's roots (what curl uses).
    System,
    /// The PEM certificates of this file (the lab's CA).
    CaFile(&'a Path),
}

/// GETs `target` (path and query) from the URL's host with extra headers, reading at most
/// `max_bytes` of response (head and body). `https://` is checked against the system's roots.
pub fn get(
    url: &Url,
    target: &str,
    headers: &[(&str, &str)],
    timeout: Duration,
    max_bytes: usize,
) -> Result<Response, String> {
    get_trusting(url, target, headers, timeout, max_bytes, Trust::System)
}

/// [`get`], with `https://` certificates checked against `trust`.
pub fn get_trusting(
    url: &Url,
    target: &str,
    headers: &[(&str, &str)],
    timeout: Duration,
    max_bytes: usize,
    trust: Trust,
) -> Result<Response, String> {
    let deadline = Instant::now() + timeout;
    let mut s = connect(url, timeout, trust)?;
    send(&mut s, url, target, headers, "close", deadline)?;
    receive(&mut s, url, deadline, timeout, max_bytes, &mut None)
}

/// POSTs `body` to `target` with extra headers (a `Content-Length` is added), reading at
/// most `max_bytes` of the answer; one deadline for the whole exchange, as [`get`]'s.
pub fn post(
    url: &Url,
    target: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    timeout: Duration,
    max_bytes: usize,
) -> Result<Response, String> {
    let deadline = Instant::now() + timeout;
    let mut s = connect(url, timeout, Trust::System)?;
    let len = body.len().to_string();
    let mut all: Vec<(&str, &str)> = headers.to_vec();
    all.push(("Content-Length", &len));
    write_request(&mut s, url, "POST", target, &all, "close", deadline)?;
    s.write_all(body)
        .map_err(|e| format!("{}: send: {e}", url.authority))?;
    receive(&mut s, url, deadline, timeout, max_bytes, &mut None)
}

/// An answer with its timings.
pub struct Timed {
    pub response: Response,
    /// Request sent → first byte of the answer.
    pub first_byte: Duration,
    /// Request sent → the answer complete.
    pub total: Duration,
}

/// One connection kept open between requests (the audit's keep-alive probe): each request
/// asks for keep-alive unless the caller sets its own `Connection`, and the connection stays
/// open until dropped or closed by the server.
pub struct KeptConn {
    s: Stream,
    url: Url,
}

impl KeptConn {
    pub fn open(url: &Url, timeout: Duration) -> Result<KeptConn, String> {
        KeptConn::open_trusting(url, timeout, Trust::System)
    }

    /// [`KeptConn::open`], with `https://` certificates checked against `trust`.
    pub fn open_trusting(url: &Url, timeout: Duration, trust: Trust) -> Result<KeptConn, String> {
        Ok(KeptConn {
            s: connect(url, timeout, trust)?,
            url: url.clone(),
        })
    }

    /// GETs `target` on this connection (a closed connection is an error, not a reconnect).
    pub fn get(
        &mut self,
        target: &str,
        headers: &[(&str, &str)],
        timeout: Duration,
        max_bytes: usize,
    ) -> Result<Response, String> {
        self.get_timed(target, headers, timeout, max_bytes)
            .map(|t| t.response)
    }

    /// [`KeptConn::get`], timed: from the request's first byte written to the answer's
    /// first byte read (time to first byte) and to its last.
    pub fn get_timed(
        &mut self,
        target: &str,
        headers: &[(&str, &str)],
        timeout: Duration,
        max_bytes: usize,
    ) -> Result<Timed, String> {
        let t0 = Instant::now();
        let deadline = t0 + timeout;
        send(
            &mut self.s,
            &self.url,
            target,
            headers,
            "keep-alive",
            deadline,
        )?;
        let mut first = None;
        let response = receive(
            &mut self.s,
            &self.url,
            deadline,
            timeout,
            max_bytes,
            &mut first,
        )?;
        let total = t0.elapsed();
        Ok(Timed {
            response,
            first_byte: first.map_or(total, |f| f.duration_since(t0)),
            total,
        })
    }

    /// Waits up to `limit` with the connection idle: `Some(after)` when the server closed it
    /// (or reset it) after that long, `None` when it was still open at the end.
    pub fn closed_within(&mut self, limit: Duration) -> Option<Duration> {
        let t0 = Instant::now();
        let mut b = [0u8; 512];
        loop {
            let left = limit.saturating_sub(t0.elapsed());
            if left.is_zero() {
                return None;
            }
            if self.s.tcp().set_read_timeout(Some(left)).is_err() {
                return Some(t0.elapsed());
            }
            match self.s.read(&mut b) {
                // Stray bytes on an idle connection (a late 408) are not a close: keep waiting.
                Ok(n) if n > 0 => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock
                            | std::io::ErrorKind::TimedOut
                            | std::io::ErrorKind::Interrupted
                    ) => {}
                _ => return Some(t0.elapsed()),
            }
        }
    }
}

/// Connects to the URL's host: plain TCP, or TLS for `https://` checked against `trust`.
fn connect(url: &Url, timeout: Duration, trust: Trust) -> Result<Stream, String> {
    let addr = url.resolve()?;
    let tcp = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| format!("{}: connect: {e}", url.authority))?;
    Ok(match url.scheme {
        crate::url::Scheme::Http => Stream::Plain(tcp),
        crate::url::Scheme::Https => Stream::Tls(Box::new(tls_stream(url, tcp, trust)?)),
    })
}

fn left(d: Instant) -> Duration {
    d.saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1))
}

/// Writes a GET with `Connection: {connection}` unless the caller's headers name one.
fn send(
    s: &mut Stream,
    url: &Url,
    target: &str,
    headers: &[(&str, &str)],
    connection: &str,
    deadline: Instant,
) -> Result<(), String> {
    write_request(s, url, "GET", target, headers, connection, deadline)
}

/// Writes a request head (the body, if any, is the caller's to write).
fn write_request(
    s: &mut Stream,
    url: &Url,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    connection: &str,
    deadline: Instant,
) -> Result<(), String> {
    let mut req = format!(
        "{method} {target} HTTP/1.1\r\nHost: {}\r\nUser-Agent: overload\r\n",
        url.authority
    );
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("connection"))
    {
        req.push_str(&format!("Connection: {connection}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.tcp()
        .set_write_timeout(Some(left(deadline)))
        .map_err(|e| e.to_string())?;
    s.write_all(req.as_bytes())
        .map_err(|e| format!("{}: send: {e}", url.authority))
}

/// Reads one response: complete once framed, or at the close for an unframed body.
fn receive(
    s: &mut Stream,
    url: &Url,
    deadline: Instant,
    timeout: Duration,
    max_bytes: usize,
    first_byte: &mut Option<Instant>,
) -> Result<Response, String> {
    let mut buf = Vec::with_capacity(8192);
    let mut chunk = [0u8; 16 * 1024];
    loop {
        if Instant::now() >= deadline {
            return Err(format!("{}: timed out after {timeout:?}", url.authority));
        }
        s.tcp()
            .set_read_timeout(Some(left(deadline)))
            .map_err(|e| e.to_string())?;
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                first_byte.get_or_insert_with(Instant::now);
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() > max_bytes {
                    buf.truncate(max_bytes);
                    return head_only(&buf).ok_or_else(|| {
                        format!(
                            "{}: response head larger than {max_bytes} bytes",
                            url.authority
                        )
                    });
                }
                // Stop early once a Content-Length body is complete (some servers linger).
                if let Ok(Some(r)) = parse_response(&buf) {
                    return Ok(r);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("{}: receive: {e}", url.authority)),
        }
    }
    match parse_response(&buf) {
        Ok(Some(r)) => Ok(r),
        Ok(None) => {
            parse_until_close(&buf).ok_or_else(|| format!("{}: truncated response", url.authority))
        }
        Err(e) => Err(format!("{}: {e}", url.authority)),
    }
}

/// A plain or TLS connection, read and written alike: `C` is rustls' client connection here,
/// its server connection for the agent's listener (observe/agent.rs).
pub(crate) enum Stream<C = rustls::ClientConnection> {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<C, TcpStream>>),
}

impl<C> Stream<C> {
    pub(crate) fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(t) => &t.sock,
        }
    }
}

impl<C, S> Read for Stream<C>
where
    C: std::ops::DerefMut<Target = rustls::ConnectionCommon<S>>,
    S: rustls::SideData,
{
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(t) => t.read(buf),
        }
    }
}

impl<C, S> Write for Stream<C>
where
    C: std::ops::DerefMut<Target = rustls::ConnectionCommon<S>>,
    S: rustls::SideData,
{
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(t) => t.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(t) => t.flush(),
        }
    }
}

/// A TLS client over `tcp` for the URL's host (the handshake runs on the first write).
fn tls_stream(
    url: &Url,
    tcp: TcpStream,
    trust: Trust,
) -> Result<rustls::StreamOwned<rustls::ClientConnection, TcpStream>, String> {
    let mut roots = rustls::RootCertStore::empty();
    match trust {
        Trust::System => {
            roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        }
        Trust::CaFile(path) => {
            let pem = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
            for c in CertificateDer::pem_slice_iter(&pem) {
                let c =
                    c.map_err(|e| format!("{}: not a PEM certificate ({e})", path.display()))?;
                roots
                    .add(c)
                    .map_err(|e| format!("{}: unusable certificate ({e})", path.display()))?;
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(rustls::DEFAULT_VERSIONS)
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    // One request per connection: HTTP/1.1, whatever else the server offers.
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let name = ServerName::try_from(url.host.clone())
        .map_err(|_| format!("'{}' is not a valid TLS server name", url.host))?;
    let conn = rustls::ClientConnection::new(Arc::new(config), name)
        .map_err(|e| format!("{}: {e}", url.authority))?;
    Ok(rustls::StreamOwned::new(conn, tcp))
}

/// A complete response framed by Content-Length or chunked encoding; Ok(None) if more bytes
/// are needed (or the body runs until close).
pub fn parse_response(buf: &[u8]) -> Result<Option<Response>, String> {
    let mut hs = [httparse::EMPTY_HEADER; 48];
    let mut r = httparse::Response::new(&mut hs);
    let head = match r.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(format!("bad response: {e}")),
    };
    let status = r.code.unwrap_or(0);
    let headers = owned_headers(r.headers);
    let mut len = None;
    let mut chunked = false;
    for h in r.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            len = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok());
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = String::from_utf8_lossy(h.value)
                .to_ascii_lowercase()
                .contains("chunked");
        }
    }
    let rest = &buf[head..];
    if chunked {
        return Ok(dechunk(rest).map(|body| Response {
            status,
            headers,
            body,
            truncated: false,
        }));
    }
    if status == 204 || status == 304 || (100..200).contains(&status) {
        return Ok(Some(Response {
            status,
            headers,
            body: Vec::new(),
            truncated: false,
        }));
    }
    match len {
        Some(n) if rest.len() >= n => Ok(Some(Response {
            status,
            headers,
            body: rest[..n].to_vec(),
            truncated: false,
        })),
        _ => Ok(None),
    }
}

/// After EOF: a head and whatever body followed (no framing headers).
fn parse_until_close(buf: &[u8]) -> Option<Response> {
    let mut hs = [httparse::EMPTY_HEADER; 48];
    let mut r = httparse::Response::new(&mut hs);
    match r.parse(buf) {
        Ok(httparse::Status::Complete(n)) => {
            let framed = r.headers.iter().any(|h| {
                h.name.eq_ignore_ascii_case("content-length")
                    || h.name.eq_ignore_ascii_case("transfer-encoding")
            });
            (!framed).then(|| Response {
                status: r.code.unwrap_or(0),
                headers: owned_headers(r.headers),
                body: buf[n..].to_vec(),
                truncated: false,
            })
        }
        _ => None,
    }
}

/// The cap was reached: the head and the raw bytes after it, marked truncated; None if even
/// the head did not fit.
fn head_only(buf: &[u8]) -> Option<Response> {
    let mut hs = [httparse::EMPTY_HEADER; 48];
    let mut r = httparse::Response::new(&mut hs);
    match r.parse(buf) {
        Ok(httparse::Status::Complete(n)) => Some(Response {
            status: r.code.unwrap_or(0),
            headers: owned_headers(r.headers),
            body: buf[n..].to_vec(),
            truncated: true,
        }),
        _ => None,
    }
}

fn owned_headers(hs: &[httparse::Header]) -> Vec<(String, String)> {
    hs.iter()
        .map(|h| {
            (
                h.name.to_string(),
                String::from_utf8_lossy(h.value).trim().to_string(),
            )
        })
        .collect()
}

/// Decodes a complete chunked body; None if incomplete or malformed.
fn dechunk(mut d: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    loop {
        let eol = d.windows(2).position(|w| w == b"\r\n")?;
        let line = std::str::from_utf8(&d[..eol]).ok()?;
        let size_hex = line.split(';').next()?.trim();
        let size = usize::from_str_radix(size_hex, 16).ok()?;
        d = &d[eol + 2..];
        if size == 0 {
            // Trailers end with an empty line; we don't need them, only completeness.
            return contains_blank_line_start(d).then_some(out);
        }
        if d.len() < size.checked_add(2)? {
            return None;
        }
        out.extend_from_slice(&d[..size]);
        d = &d[size + 2..];
    }
}

fn contains_blank_line_start(d: &[u8]) -> bool {
    d.starts_with(b"\r\n") || d.windows(4).any(|w| w == b"\r\n\r\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_length() {
        let r = parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcX")
            .unwrap()
            .unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"abc"[..]));
        assert_eq!(r.header("content-LENGTH"), Some("3"));
        assert!(!r.truncated);
        assert_eq!(
            parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nab").unwrap(),
            None
        );
        assert_eq!(
            parse_response(b"HTTP/1.1 200 OK\r\nContent-").unwrap(),
            None
        );
        assert!(parse_response(b"garbage\r\n\r\n").is_err());
    }

    #[test]
    fn chunked() {
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        let r = parse_response(raw).unwrap().unwrap();
        assert_eq!(r.body, b"abcde");
        assert_eq!(parse_response(&raw[..raw.len() - 4]).unwrap(), None);
        assert_eq!(
            parse_response(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").unwrap(),
            None
        );
        assert_eq!(
            parse_response(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff\r\n"
            )
            .unwrap(),
            None
        );
    }

    #[test]
    fn until_close() {
        let r = parse_until_close(b"HTTP/1.0 200 OK\r\nX: y\r\n\r\nbody").unwrap();
        assert_eq!(r.body, b"body");
        assert_eq!(
            parse_until_close(b"HTTP/1.0 200 OK\r\nContent-Length: 9\r\n\r\nab"),
            None
        );
    }

    /// Serves one scripted answer on a loopback port and returns the URL.
    fn serve_once(answer: Vec<u8>) -> (Url, std::thread::JoinHandle<String>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = Url::parse(&format!("http://{}/", l.local_addr().unwrap())).unwrap();
        let h = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut req = Vec::new();
            let mut b = [0u8; 1024];
            while !req.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = s.read(&mut b).unwrap();
                if n == 0 {
                    break;
                }
                req.extend_from_slice(&b[..n]);
            }
            let _ = s.write_all(&answer);
            String::from_utf8_lossy(&req).into_owned()
        });
        (url, h)
    }

    #[test]
    fn get_over_loopback() {
        let (url, h) =
            serve_once(b"HTTP/1.1 200 OK\r\nX-A: b\r\nContent-Length: 2\r\n\r\nok".to_vec());
        let r = get(
            &url,
            "/p?q=1",
            &[("X-Token", "t")],
            Duration::from_secs(5),
            1024,
        )
        .unwrap();
        assert_eq!(
            (r.status, r.text(), r.header("x-a")),
            (200, "ok".into(), Some("b"))
        );
        let req = h.join().unwrap();
        assert!(req.starts_with("GET /p?q=1 HTTP/1.1\r\n"), "{req}");
        assert!(req.contains("\r\nConnection: close\r\n"), "{req}");
        assert!(req.contains("\r\nX-Token: t\r\n"), "{req}");
        assert!(
            req.contains(&format!("\r\nHost: {}\r\n", url.authority)),
            "{req}"
        );
    }

    #[test]
    fn a_callers_connection_header_replaces_close() {
        let (url, h) = serve_once(b"HTTP/1.1 204 No Content\r\n\r\n".to_vec());
        let r = get(
            &url,
            "/",
            &[("Connection", "keep-alive")],
            Duration::from_secs(5),
            1024,
        );
        assert_eq!(r.unwrap().status, 204);
        let req = h.join().unwrap();
        assert!(!req.contains("Connection: close"), "{req}");
        assert!(req.contains("Connection: keep-alive"), "{req}");
    }

    #[test]
    fn a_body_over_the_cap_is_truncated_but_the_status_kept() {
        let mut answer = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n".to_vec();
        answer.resize(answer.len() + 100_000, b'x');
        let (url, h) = serve_once(answer);
        let r = get(&url, "/", &[], Duration::from_secs(5), 4096).unwrap();
        assert_eq!(r.status, 200);
        assert!(r.truncated);
        assert!(r.body.len() < 4096 && r.body.iter().all(|&b| b == b'x'));
        h.join().unwrap();
        // A head that alone exceeds the cap is an error, not a guess.
        let (url, h) =
            serve_once(format!("HTTP/1.1 200 OK\r\nX: {}\r\n\r\n", "y".repeat(500)).into_bytes());
        let e = get(&url, "/", &[], Duration::from_secs(5), 100).unwrap_err();
        assert!(e.contains("head larger than 100 bytes"), "{e}");
        h.join().unwrap();
    }

    #[test]
    fn a_silent_server_times_out() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = Url::parse(&format!("http://{}/", l.local_addr().unwrap())).unwrap();
        let e = get(&url, "/", &[], Duration::from_millis(200), 1024).unwrap_err();
        assert!(e.contains("timed out") || e.contains("receive"), "{e}");
        drop(l);
    }
}
