//! A user's cookie jar, as a browser keeps one (RFC 6265): `Set-Cookie` stored with its
//! domain, path, expiry and flags; the `Cookie` header of a request made from the cookies that
//! match its host, path and scheme.
//!
//! Written here rather than with the `cookie` crate: that crate parses one header but keeps no
//! jar (the matching rules below are most of the work anyway) and brings the `time` crate for
//! its dates; `Expires` needs the few lines of RFC 6265 §5.1.1 below.
//! `HttpOnly` hides a cookie from page scripts only: an HTTP client sends it like any other.

/// At most this many cookies per user (RFC 6265 §6.1's minimum per domain): the oldest go.
const MAX_COOKIES: usize = 50;
/// Longest `name=value` kept (RFC 6265 §6.1's minimum).
const MAX_COOKIE_LEN: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Cookie {
    name: String,
    value: String,
    /// Lower case, without a leading dot.
    domain: String,
    /// No `Domain` attribute: sent to exactly the host that set it.
    host_only: bool,
    path: String,
    /// Unix seconds; None: a session cookie (lives as long as the user).
    expires: Option<u64>,
    secure: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Jar {
    cookies: Vec<Cookie>,
}

/// Where a request goes, as the jar sees it.
#[derive(Debug, Clone, Copy)]
pub struct Origin<'a> {
    /// Lower-case host name or address, without port or brackets.
    pub host: &'a str,
    /// The request target's path (query ignored).
    pub path: &'a str,
    pub https: bool,
}

impl Jar {
    pub fn len(&self) -> usize {
        self.cookies.len()
    }

    pub fn is_empty(&self) -> bool {
        self.cookies.is_empty()
    }

    pub fn clear(&mut self) {
        self.cookies.clear();
    }

    /// Stores one `Set-Cookie` value received from `from`, at `now` (Unix seconds). A cookie
    /// the origin may not set (another domain, `Secure` over http) is ignored, as browsers do.
    pub fn store(&mut self, header: &str, from: Origin<'_>, now: u64) {
        let Some(c) = parse_set_cookie(header, from, now) else {
            return;
        };
        self.cookies
            .retain(|o| !(o.name == c.name && o.domain == c.domain && o.path == c.path));
        if c.expires.is_some_and(|e| e <= now) {
            return; // an expiry in the past deletes the cookie
        }
        if self.cookies.len() >= MAX_COOKIES {
            self.cookies.remove(0);
        }
        // Longer paths first: the order browsers send them in (RFC 6265 §5.4).
        let at = self
            .cookies
            .iter()
            .position(|o| o.path.len() < c.path.len())
            .unwrap_or(self.cookies.len());
        self.cookies.insert(at, c);
    }

    /// Appends `name=value; …` of the cookies due to `to` at `now`; false when none is.
    pub fn header_into(&self, to: Origin<'_>, now: u64, out: &mut Vec<u8>) -> bool {
        let mut any = false;
        for c in &self.cookies {
            if c.expires.is_some_and(|e| e <= now)
                || (c.secure && !to.https)
                || !domain_matches(c, to.host)
                || !path_matches(&c.path, to.path)
            {
                continue;
            }
            if any {
                out.extend_from_slice(b"; ");
            }
            out.extend_from_slice(c.name.as_bytes());
            out.push(b'=');
            out.extend_from_slice(c.value.as_bytes());
            any = true;
        }
        any
    }

    /// Bytes the jar holds on the heap (for the memory estimate of many users).
    pub fn heap_bytes(&self) -> usize {
        self.cookies.capacity() * std::mem::size_of::<Cookie>()
            + self
                .cookies
                .iter()
                .map(|c| {
                    c.name.capacity() + c.value.capacity() + c.domain.capacity() + c.path.capacity()
                })
                .sum::<usize>()
    }
}

fn domain_matches(c: &Cookie, host: &str) -> bool {
    if c.host_only {
        return host == c.domain;
    }
    host == c.domain
        || (host.len() > c.domain.len()
            && host.ends_with(&c.domain)
            && host.as_bytes()[host.len() - c.domain.len() - 1] == b'.'
            && host.parse::<std::net::IpAddr>().is_err())
}

fn path_matches(cookie: &str, path: &str) -> bool {
    path == cookie
        || (path.starts_with(cookie)
            && (cookie.ends_with('/') || path.as_bytes().get(cookie.len()) == Some(&b'/')))
}

/// The directory of a request path (RFC 6265 §5.1.4): up to, not including, the last `/`.
fn default_path(path: &str) -> String {
    match path.rfind('/') {
        Some(0) | None => "/".to_string(),
        Some(i) => path[..i].to_string(),
    }
}

fn parse_set_cookie(header: &str, from: Origin<'_>, now: u64) -> Option<Cookie> {
    let mut parts = header.split(';');
    let (name, value) = parts.next()?.split_once('=')?;
    let (name, value) = (name.trim(), value.trim());
    if name.is_empty() || name.len() + value.len() > MAX_COOKIE_LEN {
        return None;
    }
    let mut c = Cookie {
        name: name.to_string(),
        value: value.to_string(),
        domain: from.host.to_string(),
        host_only: true,
        path: default_path(from.path),
        expires: None,
        secure: false,
    };
    let mut max_age: Option<i64> = None;
    for attr in parts {
        let (k, v) = attr.split_once('=').unwrap_or((attr, ""));
        let (k, v) = (k.trim(), v.trim());
        if k.eq_ignore_ascii_case("expires") {
            if let Some(t) = parse_cookie_date(v) {
                c.expires = Some(t);
            }
        } else if k.eq_ignore_ascii_case("max-age") {
            if let Ok(n) = v.parse::<i64>() {
                max_age = Some(n);
            }
        } else if k.eq_ignore_ascii_case("domain") {
            let d = v.trim_start_matches('.').to_ascii_lowercase();
            if !d.is_empty() {
                c.domain = d;
                c.host_only = false;
            }
        } else if k.eq_ignore_ascii_case("path") {
            if v.starts_with('/') {
                c.path = v.to_string();
            }
        } else if k.eq_ignore_ascii_case("secure") {
            c.secure = true;
        }
    }
    // Max-Age wins over Expires (RFC 6265 §5.3 step 3); zero or less expires at once.
    if let Some(n) = max_age {
        c.expires = Some(if n <= 0 {
            0
        } else {
            now.saturating_add(n as u64)
        });
    }
    // A host may set a cookie for itself or a parent domain, never for another one.
    if !c.host_only && !domain_matches(&c, from.host) {
        return None;
    }
    // Only a secure origin may set a Secure cookie (RFC 6265bis §5.6).
    if c.secure && !from.https {
        return None;
    }
    Some(c)
}

/// A cookie date (RFC 6265 §5.1.1: the tolerant parse browsers use) as Unix seconds. Accepts
/// `Wed, 21 Oct 2015 07:28:00 GMT`, `Wednesday, 21-Oct-15 07:28:00 GMT`, asctime's form.
pub fn parse_cookie_date(s: &str) -> Option<u64> {
    const MONTHS: [&str; 12] = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    let (mut time, mut day, mut month, mut year) = (None, None, None, None);
    for tok in s
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == ':'))
        .filter(|t| !t.is_empty())
    {
        let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
        if time.is_none() && tok.contains(':') {
            let f: Vec<&str> = tok.split(':').collect();
            if f.len() == 3 && f.iter().all(|x| !x.is_empty() && x.len() <= 2 && digits(x)) {
                let n: Vec<u64> = f.iter().filter_map(|x| x.parse().ok()).collect();
                time = Some((n[0], n[1], n[2]));
                continue;
            }
        }
        if day.is_none() && tok.len() <= 2 && digits(tok) {
            day = tok.parse::<u64>().ok();
        } else if month.is_none() && tok.len() >= 3 {
            let p = tok[..3].to_ascii_lowercase();
            if let Some(m) = MONTHS.iter().position(|x| *x == p) {
                month = Some(m as u64 + 1);
            } else if year.is_none() && tok.len() <= 4 && digits(tok) {
                year = tok.parse::<u64>().ok();
            }
        } else if year.is_none() && (2..=4).contains(&tok.len()) && digits(tok) {
            year = tok.parse::<u64>().ok();
        }
    }
    let (h, mi, sec) = time?;
    let (d, m, mut y) = (day?, month?, year?);
    if y < 70 {
        y += 2000;
    } else if y < 100 {
        y += 1900;
    }
    if !(1..=31).contains(&d) || y < 1601 || h > 23 || mi > 59 || sec > 59 {
        return None;
    }
    let days = crate::units::days_from_civil(y as i64, m as i64, d as i64);
    if days < 0 {
        return Some(0);
    }
    Some(days as u64 * 86_400 + h * 3600 + mi * 60 + sec)
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: u64 = 1_700_000_000;

    fn at<'a>(host: &'a str, path: &'a str, https: bool) -> Origin<'a> {
        Origin { host, path, https }
    }

    fn header(jar: &Jar, to: Origin<'_>) -> String {
        let mut out = Vec::new();
        jar.header_into(to, NOW, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn dates_in_the_forms_servers_send() {
        // 2015-10-21 07:28:00 UTC
        let t = 1_445_412_480;
        assert_eq!(parse_cookie_date("Wed, 21 Oct 2015 07:28:00 GMT"), Some(t));
        assert_eq!(
            parse_cookie_date("Wednesday, 21-Oct-15 07:28:00 GMT"),
            Some(t)
        );
        assert_eq!(parse_cookie_date("Wed Oct 21 07:28:00 2015"), Some(t));
        assert_eq!(parse_cookie_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(parse_cookie_date("tomorrow"), None);
        assert_eq!(parse_cookie_date("Wed, 32 Oct 2015 07:28:00 GMT"), None);
        let (y, m, d, h, mi, s) = crate::units::utc_fields(t);
        assert_eq!((y, m, d, h, mi, s), (2015, 10, 21, 7, 28, 0));
    }

    #[test]
    fn host_only_cookies_go_back_to_their_host_and_path() {
        let mut jar = Jar::default();
        jar.store(
            "sid=abc; Path=/app; HttpOnly",
            at("shop.test", "/login", false),
            NOW,
        );
        jar.store("theme=dark", at("shop.test", "/prefs/page", false), NOW);
        assert_eq!(
            header(&jar, at("shop.test", "/app/account", false)),
            "sid=abc"
        );
        assert_eq!(header(&jar, at("shop.test", "/app", false)), "sid=abc");
        assert_eq!(header(&jar, at("shop.test", "/application", false)), "");
        // Default path: the directory of the request that set it.
        assert_eq!(
            header(&jar, at("shop.test", "/prefs/x", false)),
            "theme=dark"
        );
        assert_eq!(header(&jar, at("shop.test", "/", false)), "");
        // Another host, even a subdomain, gets nothing of a host-only cookie.
        assert_eq!(header(&jar, at("www.shop.test", "/app/x", false)), "");
        // Longer paths first.
        jar.store("a=1; Path=/", at("shop.test", "/", false), NOW);
        assert_eq!(
            header(&jar, at("shop.test", "/app/x", false)),
            "sid=abc; a=1"
        );
    }

    #[test]
    fn domain_cookies_reach_subdomains_but_not_other_domains() {
        let mut jar = Jar::default();
        jar.store(
            "d=1; Domain=.shop.test; Path=/",
            at("www.shop.test", "/", false),
            NOW,
        );
        assert_eq!(header(&jar, at("api.shop.test", "/", false)), "d=1");
        assert_eq!(header(&jar, at("shop.test", "/", false)), "d=1");
        assert_eq!(header(&jar, at("evilshop.test", "/", false)), "");
        // A host cannot set a cookie for a domain it is not in.
        jar.store(
            "x=1; Domain=other.test; Path=/",
            at("www.shop.test", "/", false),
            NOW,
        );
        assert_eq!(header(&jar, at("other.test", "/", false)), "");
        assert_eq!(jar.len(), 1);
    }

    #[test]
    fn secure_cookies_only_over_https_and_only_from_https() {
        let mut jar = Jar::default();
        jar.store("s=1; Secure; Path=/", at("h", "/", false), NOW);
        assert!(jar.is_empty(), "http may not set a Secure cookie");
        jar.store("s=1; Secure; Path=/", at("h", "/", true), NOW);
        assert_eq!(header(&jar, at("h", "/", true)), "s=1");
        assert_eq!(header(&jar, at("h", "/", false)), "");
    }

    #[test]
    fn expiry_replacement_and_deletion() {
        let mut jar = Jar::default();
        let o = at("h", "/", false);
        jar.store("a=1; Max-Age=60", o, NOW);
        jar.store("b=1; Expires=Wed, 21 Oct 2015 07:28:00 GMT", o, NOW); // past: not kept
        jar.store("c=1; Expires=Wed, 21 Oct 2065 07:28:00 GMT", o, NOW);
        assert_eq!(header(&jar, o), "a=1; c=1");
        let mut later = Vec::new();
        jar.header_into(o, NOW + 61, &mut later);
        assert_eq!(later, b"c=1", "a expired after its Max-Age");
        // Max-Age wins over Expires; the same name, domain and path replaces.
        jar.store(
            "c=2; Max-Age=10; Expires=Wed, 21 Oct 2015 07:28:00 GMT",
            o,
            NOW,
        );
        assert_eq!(header(&jar, o), "a=1; c=2");
        jar.store("a=gone; Max-Age=0", o, NOW);
        assert_eq!(header(&jar, o), "c=2");
        // Garbage is ignored.
        jar.store("no-equals-sign", o, NOW);
        jar.store("=novalue", o, NOW);
        assert_eq!(jar.len(), 1);
    }

    #[test]
    fn a_jar_holds_a_bounded_number_of_cookies() {
        let mut jar = Jar::default();
        for i in 0..(MAX_COOKIES + 10) {
            jar.store(&format!("c{i}=v"), at("h", "/", false), NOW);
        }
        assert_eq!(jar.len(), MAX_COOKIES);
        assert!(header(&jar, at("h", "/", false)).contains(&format!("c{}=v", MAX_COOKIES + 9)));
        assert!(!header(&jar, at("h", "/", false)).contains("c0=v"));
    }
}
