//! The one URL type: `http://host[:port]/path?query`, parsed once into the parts every HTTP
//! client of overload needs (the engine, observe's agent and FPM clients, the lab's readiness
//! checks, the experiment's probes). Hand-rolled rather than the `url` crate: the accepted
//! grammar is small, and the usage errors (https, user:password@) say what to do instead.
use std::net::{SocketAddr, ToSocketAddrs};

/// The scheme of a URL. Only plain HTTP is spoken today; `https` is refused at parse time
/// with a message that says so, and gets its variant when TLS arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
}

impl Scheme {
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
        }
    }
}

/// An `http://` URL, split the way the engine (and every other HTTP client here) needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub scheme: Scheme,
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
                crate::units::escape_controls(s)
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
            scheme: Scheme::Http,
            host,
            port,
            target,
            authority,
        })
    }

    /// `scheme://authority`, without path: the base that paths are appended to.
    pub fn origin(&self) -> String {
        format!("{}://{}", self.scheme.as_str(), self.authority)
    }

    /// Whether the host is this machine's loopback (127.0.0.0/8, ::1 or `localhost`), the
    /// only kind whose listening socket this host can observe.
    pub fn is_loopback(&self) -> bool {
        self.host == "localhost"
            || self
                .host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
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
        assert!(Url::parse("http://u:p@a/")
            .unwrap_err()
            .contains("Authorization"));
        let e = Url::parse("http://a/\u{1b}[2J\n").unwrap_err();
        assert!(e.contains("\\x1b[2J\\x0a"), "{e}");
    }

    #[test]
    fn origin_and_loopback() {
        let u = Url::parse("http://127.0.0.2:8080/a?b").unwrap();
        assert_eq!(u.scheme, Scheme::Http);
        assert_eq!(u.origin(), "http://127.0.0.2:8080");
        assert!(u.is_loopback());
        assert_eq!(
            Url::parse("http://[::1]/").unwrap().origin(),
            "http://[::1]"
        );
        assert!(Url::parse("http://[::1]/").unwrap().is_loopback());
        assert!(Url::parse("http://localhost:1/").unwrap().is_loopback());
        assert!(!Url::parse("http://10.0.0.1/").unwrap().is_loopback());
        assert!(!Url::parse("http://example.com/").unwrap().is_loopback());
    }
}
