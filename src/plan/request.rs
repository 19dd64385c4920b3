//! Requests: URL parsing and the pre-rendered bytes the engine writes. Rendering happens
//! once, before the run, so sending a request is a single `write` of ready bytes.
use std::net::{SocketAddr, ToSocketAddrs};

/// An `http://` URL, split the way the engine needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub host: String,
    pub port: u16,
    /// Path and query, always starting with `/`.
    pub target: String,
    /// The `Host` header value (host, plus port when not 80).
    pub authority: String,
}

impl Url {
    pub fn parse(s: &str) -> Result<Url, String> {
        // Checked first, so no message below echoes raw control characters to a terminal.
        if s.chars().any(char::is_control) {
            return Err(format!(
                "'{}': spaces and control characters must be percent-encoded",
                escape_controls(s)
            ));
        }
        let rest = if let Some(r) = s.strip_prefix("http://") {
            r
        } else if s.starts_with("https://") {
            return Err(format!(
                "'{s}': https is not supported yet (overload speaks plain HTTP/1.1)"
            ));
        } else if s.contains("://") {
            return Err(format!("'{s}': only http:// URLs are supported"));
        } else {
            return Err(format!(
                "'{s}' is not a URL (expected http://host[:port]/path)"
            ));
        };
        let (auth, target) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
            Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
            None => (rest, "/".to_string()),
        };
        let target = match target.find('#') {
            Some(i) => target[..i].to_string(),
            None => target,
        };
        if auth.contains('@') {
            return Err(format!(
                "'{s}': user:password@ in URLs is not supported; use -H 'Authorization: ...'"
            ));
        }
        let (host, port) = if let Some(v6) = auth.strip_prefix('[') {
            let (h, after) = v6
                .split_once(']')
                .ok_or_else(|| format!("'{s}': unterminated IPv6 address"))?;
            let port = match after.strip_prefix(':') {
                Some(p) => parse_port(p, s)?,
                None if after.is_empty() => 80,
                None => return Err(format!("'{s}': junk after the IPv6 address")),
            };
            (h.to_string(), port)
        } else {
            match auth.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), parse_port(p, s)?),
                None => (auth.to_string(), 80),
            }
        };
        if host.is_empty() {
            return Err(format!("'{s}': no host"));
        }
        if target
            .bytes()
            .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
        {
            return Err(format!(
                "'{s}': spaces and control characters must be percent-encoded"
            ));
        }
        let host_hdr = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.clone()
        };
        let authority = if port == 80 {
            host_hdr
        } else {
            format!("{host_hdr}:{port}")
        };
        Ok(Url {
            host,
            port,
            target,
            authority,
        })
    }

    /// Resolves the host once, before the run (no DNS on the hot path).
    pub fn resolve(&self) -> Result<SocketAddr, String> {
        let addrs = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve host '{}': {e}", self.host))?;
        let all: Vec<SocketAddr> = addrs.collect();
        // Prefer IPv4 as curl and ab do for `localhost`.
        all.iter()
            .find(|a| a.is_ipv4())
            .or(all.first())
            .copied()
            .ok_or_else(|| format!("host '{}' has no address", self.host))
    }
}

fn parse_port(p: &str, url: &str) -> Result<u16, String> {
    match p.parse::<u16>() {
        Ok(0) | Err(_) => Err(format!("'{url}': invalid port '{p}'")),
        Ok(v) => Ok(v),
    }
}

/// One request of the mix, as the user described it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSpec {
    pub method: String,
    pub url: Url,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
}

impl RequestSpec {
    /// Renders the request. `close` adds `Connection: close` (last request on a connection).
    pub fn render(&self, close: bool) -> Vec<u8> {
        let has = |name: &str| {
            self.headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case(name))
        };
        let mut out = Vec::with_capacity(128);
        out.extend_from_slice(self.method.as_bytes());
        out.push(b' ');
        out.extend_from_slice(self.url.target.as_bytes());
        out.extend_from_slice(b" HTTP/1.1\r\n");
        let mut header = |n: &str, v: &str| {
            out.extend_from_slice(n.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(v.as_bytes());
            out.extend_from_slice(b"\r\n");
        };
        if !has("host") {
            header("Host", &self.url.authority);
        }
        if !has("user-agent") {
            header(
                "User-Agent",
                concat!("overload/", env!("CARGO_PKG_VERSION")),
            );
        }
        if !has("accept") {
            header("Accept", "*/*");
        }
        for (n, v) in &self.headers {
            // The engine owns connection management.
            if n.eq_ignore_ascii_case("connection") || n.eq_ignore_ascii_case("content-length") {
                continue;
            }
            header(n, v);
        }
        if let Some(b) = &self.body {
            header("Content-Length", &b.len().to_string());
        } else if matches!(self.method.as_str(), "POST" | "PUT" | "PATCH") {
            header("Content-Length", "0");
        }
        if close {
            header("Connection", "close");
        }
        out.extend_from_slice(b"\r\n");
        if let Some(b) = &self.body {
            out.extend_from_slice(b);
        }
        out
    }
}

/// Headers that frame the message or manage the connection: the engine writes them itself
/// (from the body and the keep-alive plan), so a user's copy would desynchronise the framing
/// (request smuggling, a connection closed under the engine's feet).
const FRAMING_HEADERS: [&str; 8] = [
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "te",
    "trailer",
    "upgrade",
];

/// Validates a `-H 'Name: value'` argument.
pub fn parse_header(s: &str) -> Result<(String, String), String> {
    let shown = escape_controls(s);
    let (n, v) = s
        .split_once(':')
        .ok_or_else(|| format!("header '{shown}' must be 'Name: value'"))?;
    let n = n.trim();
    if n.is_empty()
        || !n
            .bytes()
            .all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?={}".contains(&b))
    {
        return Err(format!(
            "header '{shown}': invalid name '{}'",
            escape_controls(n)
        ));
    }
    let v = v.trim();
    // Tab is the one control character a field value may hold (RFC 9110, 5.5).
    if v.chars().any(|c| c != '\t' && c.is_control()) {
        return Err(format!(
            "header '{shown}': the value holds a control character (line break, NUL, ESC...)"
        ));
    }
    let lower = n.to_ascii_lowercase();
    if FRAMING_HEADERS.contains(&lower.as_str()) {
        return Err(format!(
            "header '{shown}': {n} is set by overload itself (message framing and connection \
             reuse); use --body, --keep-alive or the URL instead"
        ));
    }
    if lower == "host" && (v.is_empty() || v.bytes().any(|b| b.is_ascii_whitespace() || b == b'/'))
    {
        return Err(format!("header '{shown}': Host must be a bare host[:port]"));
    }
    Ok((n.to_string(), v.to_string()))
}

/// Validates a list of `-H` arguments: each as [`parse_header`], and at most one `Host` (two
/// would let the server and anything in front of it disagree about the target).
pub fn parse_headers<S: AsRef<str>>(list: &[S]) -> Result<Vec<(String, String)>, String> {
    let headers = list
        .iter()
        .map(|h| parse_header(h.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    let hosts = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("host"))
        .count();
    if hosts > 1 {
        return Err(format!(
            "{hosts} Host headers given; at most one is allowed"
        ));
    }
    Ok(headers)
}

/// `s` with control characters written as `\xNN` (and `\\` doubled), so text from a file, a
/// URL or a results folder cannot move the cursor, clear the screen or forge lines when it
/// reaches a terminal or a data file.
pub fn escape_controls(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() || c == '\\') {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("\\x{b:02x}"));
                }
            }
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Validates an HTTP method token.
pub fn parse_method(s: &str) -> Result<String, String> {
    if s.is_empty()
        || !s
            .bytes()
            .all(|b| b.is_ascii_alphabetic() || b == b'-' || b == b'_')
    {
        return Err(format!("invalid HTTP method '{s}'"));
    }
    Ok(s.to_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = Url::parse("http://127.0.0.1:8080/a/b?x=1#frag").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.target.as_str()),
            ("127.0.0.1", 8080, "/a/b?x=1")
        );
        assert_eq!(u.authority, "127.0.0.1:8080");
        let u = Url::parse("http://localhost").unwrap();
        assert_eq!(
            (u.port, u.target.as_str(), u.authority.as_str()),
            (80, "/", "localhost")
        );
        let u = Url::parse("http://[::1]:9000?q").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.target.as_str()),
            ("::1", 9000, "/?q")
        );
        assert_eq!(u.authority, "[::1]:9000");
        for bad in [
            "127.0.0.1/x",
            "ftp://a/",
            "https://a/",
            "http://:80/",
            "http://a:0/",
            "http://a:x/",
            "http://a/b c",
            "http://a/\u{1b}[2J",
        ] {
            assert!(Url::parse(bad).is_err(), "{bad}");
        }
        assert!(Url::parse("https://a/").unwrap_err().contains("https"));
        let e = Url::parse("http://a/\u{1b}[2J\n").unwrap_err();
        assert!(e.contains("\\x1b[2J\\x0a"), "{e}");
    }

    #[test]
    fn render() {
        let spec = RequestSpec {
            method: "POST".into(),
            url: Url::parse("http://h:81/p").unwrap(),
            headers: vec![
                ("X-A".into(), "1".into()),
                ("Connection".into(), "x".into()),
            ],
            body: Some(b"abc".to_vec()),
        };
        let s = String::from_utf8(spec.render(true)).unwrap();
        assert_eq!(
            s,
            "POST /p HTTP/1.1\r\nHost: h:81\r\nUser-Agent: overload/0.1.0\r\nAccept: */*\r\nX-A: 1\r\n\
             Content-Length: 3\r\nConnection: close\r\n\r\nabc"
        );
        let get = RequestSpec {
            method: "GET".into(),
            body: None,
            headers: vec![("host".into(), "v".into())],
            ..spec
        };
        let s = String::from_utf8(get.render(false)).unwrap();
        assert!(s.starts_with("GET /p HTTP/1.1\r\nUser-Agent"));
        assert!(s.contains("host: v\r\n"));
        assert!(!s.contains("Connection"));
    }

    #[test]
    fn headers_and_methods() {
        assert_eq!(
            parse_header("X-Test:  a b ").unwrap(),
            ("X-Test".into(), "a b".into())
        );
        assert!(parse_header("novalue").is_err());
        assert!(parse_header("Bad Name: x").is_err());
        assert_eq!(
            parse_header("X-Tab: a\tb").unwrap(),
            ("X-Tab".into(), "a\tb".into())
        );
        assert_eq!(
            parse_header("Host: example.com:8080").unwrap().1,
            "example.com:8080"
        );
        assert_eq!(parse_method("get").unwrap(), "GET");
        assert!(parse_method("GE T").is_err());
    }

    #[test]
    fn framing_headers_and_control_characters_are_refused() {
        for bad in [
            "Content-Length: 5",
            "content-length: 0",
            "Transfer-Encoding: chunked",
            "Connection: close",
            "Keep-Alive: timeout=5",
            "TE: trailers",
            "Upgrade: websocket",
            "X-A: a\rb",
            "X-A: a\nX-Injected: 1",
            "X-A: a\u{1b}[2Jb",
            "X-A: \u{7f}",
            "X-A: a\u{0}b",
            "Host: a b",
            "Host: a/b",
            "Host:",
        ] {
            let e = parse_header(bad).expect_err(bad);
            assert!(
                !e.contains('\n') && !e.contains('\r') && !e.contains('\u{1b}'),
                "{e}"
            );
        }
        assert!(parse_header("Transfer-Encoding: chunked")
            .unwrap_err()
            .contains("set by overload"));
        assert!(parse_headers(&["Host: a", "host: b"])
            .unwrap_err()
            .contains("Host"));
        assert_eq!(parse_headers(&["Host: a", "X-B: c"]).unwrap().len(), 2);
    }

    #[test]
    fn escaping() {
        assert_eq!(escape_controls("plain/é"), "plain/é");
        assert_eq!(escape_controls("a\u{1b}[31mb\n"), "a\\x1b[31mb\\x0a");
        assert_eq!(escape_controls("c:\\x1b"), "c:\\\\x1b");
        assert_eq!(escape_controls("\u{9b}"), "\\xc2\\x9b");
    }
}
