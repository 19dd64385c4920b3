//! `Alt-Svc` (RFC 7838), as `--alt-svc` reads it from the probe's answer: the alternatives a
//! server announces for its origin (`h3=":443"; ma=86400, h3-29=":8443"`), or `clear`.
//! Bounded: a header value longer than `MAX_VALUE` or with more than `MAX_ENTRIES`
//! alternatives is read no further; a malformed alternative is skipped, not guessed at.

/// Longest header value read (longer ones are cut here: the alternatives before count).
const MAX_VALUE: usize = 4096;
/// Alternatives kept at most.
const MAX_ENTRIES: usize = 16;

/// One announced alternative.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alternative {
    /// The ALPN protocol id, percent-decoded (`h3`).
    pub protocol: String,
    /// Another host, when it names one (empty: the origin's).
    pub host: String,
    pub port: u16,
    /// `ma`: seconds the announcement holds (24 hours when not given).
    pub max_age: u64,
}

/// What an `Alt-Svc` value says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AltSvc {
    /// `clear`: forget the alternatives.
    Clear,
    Alternatives(Vec<Alternative>),
}

impl AltSvc {
    /// The first HTTP/3 alternative on the origin's own host (the one `--alt-svc` can use:
    /// another host would need its own address and certificate check).
    pub fn h3(&self, origin_host: &str) -> Option<&Alternative> {
        match self {
            AltSvc::Clear => None,
            AltSvc::Alternatives(a) => a.iter().find(|a| {
                a.protocol == "h3"
                    && a.max_age > 0
                    && (a.host.is_empty() || a.host.eq_ignore_ascii_case(origin_host))
            }),
        }
    }
}

/// The `Alt-Svc` header of a response head (`HTTP/1.1 200 OK\r\n…\r\n\r\n`), several
/// header lines joined as one list; None when there is none.
pub fn from_head(head: &[u8]) -> Option<AltSvc> {
    let text = String::from_utf8_lossy(head);
    let values: Vec<&str> = text
        .split("\r\n")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .filter(|(name, _)| name.trim().eq_ignore_ascii_case("alt-svc"))
        .map(|(_, v)| v.trim())
        .collect();
    if values.is_empty() {
        return None;
    }
    Some(parse(&values.join(", ")))
}

/// Parses one `Alt-Svc` value.
pub fn parse(value: &str) -> AltSvc {
    let value = cut(value.trim(), MAX_VALUE);
    if value.eq_ignore_ascii_case("clear") {
        return AltSvc::Clear;
    }
    let mut out = Vec::new();
    for entry in split_outside_quotes(value, ',') {
        if out.len() == MAX_ENTRIES {
            break;
        }
        if let Some(a) = alternative(entry) {
            out.push(a);
        }
    }
    AltSvc::Alternatives(out)
}

/// `protocol-id="[host]:port" *( ";" param )`, or None when malformed.
fn alternative(entry: &str) -> Option<Alternative> {
    let mut parts = split_outside_quotes(entry, ';').into_iter();
    let (id, authority) = parts.next()?.split_once('=')?;
    let protocol = percent_decode(id.trim())?;
    if protocol.is_empty() || !protocol.bytes().all(|b| b.is_ascii_graphic()) {
        return None;
    }
    let authority = unquote(authority.trim())?;
    let (host, port) = authority.rsplit_once(':')?;
    // A literal IPv6 host is bracketed; anything else with a ':' is not a host.
    let host = match host.strip_prefix('[') {
        Some(h) => h.strip_suffix(']')?,
        None if host.contains(':') => return None,
        None => host,
    };
    if port.is_empty() || !port.bytes().all(|b| b.is_ascii_digit()) || port.len() > 5 {
        return None;
    }
    let port: u16 = port.parse().ok().filter(|p| *p != 0)?;
    let mut max_age = 86_400;
    for param in parts {
        let Some((name, v)) = param.split_once('=') else {
            continue;
        };
        if name.trim().eq_ignore_ascii_case("ma") {
            let v = unquote(v.trim())?;
            // Digits only; a huge number saturates (it only says "long").
            if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            max_age = v.parse().unwrap_or(u64::MAX);
        }
    }
    Some(Alternative {
        protocol,
        host: host.to_string(),
        port,
        max_age,
    })
}

/// `s` split at `sep` where it is not inside a quoted string.
fn split_outside_quotes(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut quoted, mut escaped) = (0, false, false);
    for (i, c) in s.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            c if c == sep && !quoted => {
                out.push(s[start..i].trim());
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(s[start..].trim());
    out
}

/// A token as is, or a quoted string's content (with `\x` escapes undone); None when a
/// quote is not closed.
fn unquote(s: &str) -> Option<String> {
    let Some(inner) = s.strip_prefix('"') else {
        return (!s.contains('"')).then(|| s.to_string());
    };
    let inner = inner.strip_suffix('"')?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        out.push(if c == '\\' { chars.next()? } else { c });
    }
    Some(out)
}

/// A protocol id's `%XX` escapes undone (RFC 7838 §3); None when one is broken.
fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// `s` cut to at most `max` bytes, at a character boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alt(protocol: &str, host: &str, port: u16, max_age: u64) -> Alternative {
        Alternative {
            protocol: protocol.into(),
            host: host.into(),
            port,
            max_age,
        }
    }

    #[test]
    fn the_rfcs_forms() {
        assert_eq!(
            parse(r#"h3=":443"; ma=86400"#),
            AltSvc::Alternatives(vec![alt("h3", "", 443, 86400)])
        );
        assert_eq!(
            parse(r#"h3-29=":8443", h3=":8444"; ma=60; persist=1, h2="alt.example:443""#),
            AltSvc::Alternatives(vec![
                alt("h3-29", "", 8443, 86400),
                alt("h3", "", 8444, 60),
                alt("h2", "alt.example", 443, 86400),
            ])
        );
        assert_eq!(parse(" clear "), AltSvc::Clear);
        assert_eq!(parse("CLEAR"), AltSvc::Clear);
        // Percent-encoded id, IPv6 host, quoted ma.
        assert_eq!(
            parse(r#"w%3Dx=":1"; ma="5", h3="[::1]:9443""#),
            AltSvc::Alternatives(vec![alt("w=x", "", 1, 5), alt("h3", "::1", 9443, 86400)])
        );
    }

    #[test]
    fn h3_on_the_origins_host_is_picked() {
        let a = parse(r#"h3-29=":1", h3="other.example:2", h3=":3"; ma=0, h3="Host.Example:4""#);
        assert_eq!(a.h3("host.example").map(|a| a.port), Some(4));
        assert_eq!(a.h3("x.example"), None, "another host, or ma=0");
        assert_eq!(parse("clear").h3("x"), None);
        assert_eq!(parse(r#"h2=":443""#).h3("x"), None);
    }

    #[test]
    fn malformed_alternatives_are_skipped_not_guessed() {
        for bad in [
            r#"h3=":443"#,         // unclosed quote
            r#"h3=":0""#,          // port 0
            r#"h3=":65536""#,      // port too large
            r#"h3=":44x""#,        // not a number
            r#"h3="""#,            // no authority
            r#"h3=":443"; ma=-1"#, // bad ma
            r#"h3="::1:443""#,     // IPv6 without brackets
            r#"=":443""#,          // no protocol id
            r#"h3%zz=":443""#,     // broken escape
            "h3",
            ";;;,,,",
        ] {
            assert_eq!(parse(bad), AltSvc::Alternatives(vec![]), "{bad}");
        }
        // One bad alternative does not spoil the next.
        assert_eq!(
            parse(r#"h3=":x", h3=":443""#).h3("h").map(|a| a.port),
            Some(443)
        );
    }

    #[test]
    fn hostile_values_are_bounded() {
        // Very long: read up to MAX_VALUE; many entries: MAX_ENTRIES kept.
        let many = vec![r#"h3=":443""#; 10_000].join(", ");
        match parse(&many) {
            AltSvc::Alternatives(a) => assert_eq!(a.len(), MAX_ENTRIES),
            other => panic!("{other:?}"),
        }
        // Past the cut: an alternative after a long first one is not read.
        let long = format!(r#"x={}, h3=":443""#, "a".repeat(100_000));
        assert_eq!(parse(&long), AltSvc::Alternatives(vec![]));
        let huge_ma = format!(r#"h3=":443"; ma={}"#, "9".repeat(40));
        assert_eq!(parse(&huge_ma).h3("h").map(|a| a.max_age), Some(u64::MAX));
        // Multibyte characters at the cut, control bytes, unbalanced quotes.
        let _ = parse(&"é".repeat(5000));
        let _ = parse("\u{0}\u{7f}\"\\");
        assert_eq!(parse(r#"h3=":443\"#), AltSvc::Alternatives(vec![]));
    }

    #[test]
    fn the_header_is_found_in_a_head() {
        let head = b"HTTP/1.1 200 OK\r\nServer: x\r\nalt-svc: h3=\":8443\"\r\nALT-SVC: h3=\":9\"\r\n\r\nbody: h3";
        assert_eq!(
            from_head(head),
            Some(AltSvc::Alternatives(vec![
                alt("h3", "", 8443, 86400),
                alt("h3", "", 9, 86400)
            ]))
        );
        assert_eq!(from_head(b"HTTP/1.1 200 OK\r\nServer: x\r\n\r\n"), None);
        assert_eq!(from_head(b""), None);
        assert_eq!(
            from_head(b"HTTP/1.1 200 OK\r\nAlt-Svc: clear\r\n\r\n"),
            Some(AltSvc::Clear)
        );
    }
}
