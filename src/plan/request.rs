//! Requests: URL parsing and the pre-rendered bytes the engine writes. Rendering happens
//! once, before the run, so sending a request is a single `write` of ready bytes.
pub use crate::url::Url;

/// The `User-Agent` every request carries unless the user gives one.
pub const USER_AGENT: &str = concat!("overload/", env!("CARGO_PKG_VERSION"));

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
            header("User-Agent", USER_AGENT);
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
    let shown = crate::units::escape_controls(s);
    let (n, v) = s
        .split_once(':')
        .ok_or_else(|| format!("header '{shown}' must be 'Name: value'"))?;
    check_header(n.trim(), v, &shown)
}

/// Validates one header as a name and a value (its surrounding whitespace dropped), `shown`
/// naming it in errors: the one set of header rules, for `-H`, files and a controller's steps.
fn check_header(n: &str, v: &str, shown: &str) -> Result<(String, String), String> {
    if n.is_empty()
        || !n
            .bytes()
            .all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?={}".contains(&b))
    {
        return Err(format!(
            "header '{shown}': invalid name '{}'",
            crate::units::escape_controls(n)
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
    one_host(&headers)?;
    Ok(headers)
}

/// Validates headers that arrive as (name, value) pairs (a generator agent's step): the
/// rules of [`parse_headers`], the names as given (no whitespace around them).
pub fn check_headers(pairs: &[(String, String)]) -> Result<Vec<(String, String)>, String> {
    let headers = pairs
        .iter()
        .map(|(n, v)| check_header(n, v, &crate::units::escape_controls(&format!("{n}: {v}"))))
        .collect::<Result<Vec<_>, _>>()?;
    one_host(&headers)?;
    Ok(headers)
}

fn one_host(headers: &[(String, String)]) -> Result<(), String> {
    let hosts = headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("host"))
        .count();
    if hosts > 1 {
        return Err(format!(
            "{hosts} Host headers given; at most one is allowed"
        ));
    }
    Ok(())
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
}
