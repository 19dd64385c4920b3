//! A tiny blocking HTTP/1.1 GET client (FPM status, agent client): one request per
//! connection, `Connection: close`, a deadline for the whole exchange and a size cap.
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::plan::request::Url;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

/// GETs `target` (path and query) from the URL's host with extra headers.
pub fn get(
    url: &Url,
    target: &str,
    headers: &[(&str, &str)],
    timeout: Duration,
    max_bytes: usize,
) -> Result<Response, String> {
    let deadline = Instant::now() + timeout;
    let addr = url.resolve()?;
    let mut s = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| format!("{}: connect: {e}", url.authority))?;
    let mut req = format!(
        "GET {target} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nUser-Agent: overload-observe\r\n",
        url.authority
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    let left = |d: Instant| {
        d.saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1))
    };
    s.set_write_timeout(Some(left(deadline)))
        .map_err(|e| e.to_string())?;
    s.write_all(req.as_bytes())
        .map_err(|e| format!("{}: send: {e}", url.authority))?;
    let mut buf = Vec::with_capacity(8192);
    let mut chunk = [0u8; 16 * 1024];
    loop {
        if Instant::now() >= deadline {
            return Err(format!("{}: timed out after {timeout:?}", url.authority));
        }
        s.set_read_timeout(Some(left(deadline)))
            .map_err(|e| e.to_string())?;
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if buf.len() > max_bytes {
                    return Err(format!(
                        "{}: response larger than {max_bytes} bytes",
                        url.authority
                    ));
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
        return Ok(dechunk(rest).map(|body| Response { status, body }));
    }
    if status == 204 || status == 304 || (100..200).contains(&status) {
        return Ok(Some(Response {
            status,
            body: Vec::new(),
        }));
    }
    match len {
        Some(n) if rest.len() >= n => Ok(Some(Response {
            status,
            body: rest[..n].to_vec(),
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
                body: buf[n..].to_vec(),
            })
        }
        _ => None,
    }
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
}
