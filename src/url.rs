//! The one URL type: `http://host[:port]/path?query`, parsed once into the parts every HTTP
//! client of overload needs (the engine, observe's agent and FPM clients, the lab's readiness
//! checks, the experiment's probes). Hand-rolled rather than the `url` crate: the accepted
//! grammar is small, and the usage errors (https, user:password@) say what to do instead.
use std::net::{SocketAddr, ToSocketAddrs};

/// The scheme of a URL: the engine speaks both; the blocking client (`http_get`) only HTTP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    Http,
    Https,
}

impl Scheme {
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Http => "http",
            Scheme::Https => "https",
        }
    }

    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http => 80,
            Scheme::Https => 443,
        }
    }
}

/// An `http://` or `https://` URL, split the way the engine (and every other HTTP client here) needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub scheme: Scheme,
    pub host: String,
    pub port: u16,
    /// Path and query, always starting with `/`.
    pub target: String,
    /// The `Host` header value (host, plus port when not the scheme's default).
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
        let (scheme, rest) = if let Some(r) = s.strip_prefix("http://") {
            (Scheme::Http, r)
        } else if let Some(r) = s.strip_prefix("https://") {
            (Scheme::Https, r)
        } else if s.contains("://") {
            return Err(format!(
                "'{s}': only http:// and https:// URLs are supported"
            ));
        } else {
            return Err(format!(
                "'{s}' is not a URL (expected http://host[:port]/path)"
            ));
        };
        let default_port = scheme.default_port();
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
                None if after.is_empty() => default_port,
                None => return Err(format!("'{s}': junk after the IPv6 address")),
            };
            (h.to_string(), port)
        } else {
            match auth.rsplit_once(':') {
                Some((h, p)) => (h.to_string(), parse_port(p, s)?),
                None => (auth.to_string(), default_port),
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
        let authority = if port == default_port {
            host_hdr
        } else {
            format!("{host_hdr}:{port}")
        };
        Ok(Url {
            scheme,
            host,
            port,
            target,
            authority,
        })
    }

    /// For the clients that speak only plain HTTP (observe's agent and PHP-FPM status).
    pub fn http_only(self) -> Result<Url, String> {
        match self.scheme {
            Scheme::Http => Ok(self),
            Scheme::Https => Err(format!(
                "'{}': only http:// is supported here",
                self.origin()
            )),
        }
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
            "https://a:0/",
            "http://:80/",
            "http://a:0/",
            "http://a:x/",
            "http://a/b c",
            "http://a/\u{1b}[2J",
        ] {
            assert!(Url::parse(bad).is_err(), "{bad}");
        }
        let u = Url::parse("https://example.com/x").unwrap();
        assert_eq!((u.scheme, u.port), (Scheme::Https, 443));
        assert_eq!(u.origin(), "https://example.com");
        let u = Url::parse("https://[::1]:8443").unwrap();
        assert_eq!((u.port, u.authority.as_str()), (8443, "[::1]:8443"));
        assert_eq!(Url::parse("https://a:80/").unwrap().authority, "a:80");
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
