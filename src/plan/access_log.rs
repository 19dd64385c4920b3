//! Access logs (`--access-log FILE`) in nginx's and Apache's combined and common formats, as a
//! weighted URL mix or a schedule to replay on the log's own clock (`--replay-speed`).
//!
//! ```text
//! common:   host ident user [10/Oct/2000:13:55:36 -0700] "GET /a.gif HTTP/1.0" 200 2326
//! combined: common + "referer" "user agent"
//! ```
//! Lines that do not parse, and methods other than GET and HEAD (unless allowed), are skipped
//! and counted, the first few named (`file:line: why`): a log with one odd line still replays.
//! Times have one-second resolution; the lines of one second are spread evenly over it.
use crate::fsutil::shown;
use std::collections::HashMap;
use std::path::Path;

/// Largest access log read (streamed; to replay, 12 bytes a line are kept).
pub const MAX_ACCESS_LOG: u64 = 1 << 30;
/// Skipped lines named in the note; the rest are only counted.
const NAMED_SKIPS: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Combined,
    Common,
}

impl LogFormat {
    pub fn parse(s: &str) -> Result<LogFormat, String> {
        match s {
            "combined" => Ok(LogFormat::Combined),
            "common" => Ok(LogFormat::Common),
            _ => Err(format!("'{s}': use combined or common")),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            LogFormat::Combined => "combined",
            LogFormat::Common => "common",
        }
    }
}

/// One distinct request of the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedRequest {
    /// Shared by the requests of a method: a log has a handful.
    pub method: std::sync::Arc<str>,
    /// Origin form: `/path?query`.
    pub target: Box<str>,
    /// Lines that asked for it.
    pub count: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AccessLog {
    /// Distinct requests, most frequent first (ties in order of first appearance).
    pub requests: Vec<LoggedRequest>,
    /// Replay only (else empty): every parsed line in time order, as ns since the log's
    /// first second ...
    pub at_ns: Vec<u64>,
    /// ... and its request (an index into `requests`).
    pub order: Vec<u32>,
    /// From the first line's second to the end of the last line's second.
    pub span_ns: u64,
    /// Lines read (parsed or not).
    pub lines: u64,
    pub skipped: u64,
    /// Of the skipped lines, those whose method was unsafe (and not allowed).
    pub skipped_unsafe: u64,
    /// The first skipped lines, as `file:line: why`.
    pub skips_named: Vec<String>,
}

impl AccessLog {
    /// What was skipped, for the run's notes; None when every line was read.
    pub fn skipped_note(&self) -> Option<String> {
        (self.skipped > 0).then(|| {
            format!(
                "access log: {} line(s) skipped ({})",
                self.skipped,
                self.skips_named.join("; ")
            )
        })
    }
}

/// Whether to keep each line's time (`--replay-speed`) or only each request's count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    Counts,
    Arrivals,
}

/// Longest line read; a longer one is skipped (a URL of 64 KiB is beyond any server's limit).
const MAX_LINE: usize = 64 << 10;

/// Reads a log file, a line at a time: memory grows with its distinct requests (and, to
/// replay, 12 bytes a line), never with the text. A file with no usable line is an error
/// naming it.
pub fn read_access_log(
    path: &Path,
    format: Option<LogFormat>,
    allow_unsafe: bool,
    keep: Keep,
) -> Result<AccessLog, String> {
    use std::io::{BufRead, Read};
    let file = shown(path);
    let cant = |e: std::io::Error| format!("access log: cannot read '{file}': {e}");
    let f = std::fs::File::open(path).map_err(cant)?;
    let mut r = std::io::BufReader::with_capacity(1 << 16, f.take(MAX_ACCESS_LOG + 1));
    let mut p = Parser::new(&file, format, allow_unsafe, keep);
    let (mut buf, mut total) = (Vec::new(), 0u64);
    loop {
        buf.clear();
        // A line at most MAX_LINE + 1 bytes long is read; the rest of a longer one is skipped.
        let n = (&mut r)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .map_err(cant)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if buf.len() > MAX_LINE && buf.last() != Some(&b'\n') {
            let mut rest = 0;
            loop {
                let chunk = r.fill_buf().map_err(cant)?;
                if chunk.is_empty() {
                    break;
                }
                let (used, done) = match chunk.iter().position(|&c| c == b'\n') {
                    Some(i) => (i + 1, true),
                    None => (chunk.len(), false),
                };
                r.consume(used);
                rest += used;
                if done {
                    break;
                }
            }
            total += rest as u64;
            p.skip(format!("longer than {} KiB", MAX_LINE >> 10));
            continue;
        }
        if total > MAX_ACCESS_LOG {
            break;
        }
        p.line(&String::from_utf8_lossy(&buf));
    }
    if total > MAX_ACCESS_LOG {
        return Err(format!(
            "access log: '{file}' is larger than the {} MiB limit",
            MAX_ACCESS_LOG >> 20
        ));
    }
    p.finish()
}

/// Parses log text; `file` names it in messages.
pub fn parse_access_log(
    text: &str,
    file: &str,
    format: Option<LogFormat>,
    allow_unsafe: bool,
) -> Result<AccessLog, String> {
    let mut p = Parser::new(file, format, allow_unsafe, Keep::Arrivals);
    for line in text.lines() {
        p.line(line);
    }
    p.finish()
}

/// A log being read, line by line.
struct Parser<'a> {
    file: &'a str,
    format: Option<LogFormat>,
    allow_unsafe: bool,
    keep: Keep,
    /// Distinct methods (a handful): requests name theirs by index.
    methods: Vec<String>,
    /// Distinct requests: (method, target, count).
    requests: Vec<(u16, Box<str>, u64)>,
    /// The request of each (method, target) hash; collisions chain through `same_hash`.
    by_hash: HashMap<u64, u32>,
    /// Keyed per run: a crafted log cannot aim at the chains.
    seed: std::collections::hash_map::RandomState,
    same_hash: Vec<u32>,
    /// Arrivals only: per line, (its second − the first line's + 2³¹) << 32 | its request:
    /// 8 bytes a line, sorted by the high half.
    lines: Vec<u64>,
    first_sec: Option<i64>,
    line_no: u64,
    skipped: u64,
    skipped_unsafe: u64,
    skips_named: Vec<String>,
}

/// No next request with the same hash.
const END: u32 = u32::MAX;

impl<'a> Parser<'a> {
    fn new(file: &'a str, format: Option<LogFormat>, allow_unsafe: bool, keep: Keep) -> Self {
        Parser {
            file,
            format,
            allow_unsafe,
            keep,
            methods: Vec::new(),
            requests: Vec::new(),
            by_hash: HashMap::new(),
            seed: Default::default(),
            same_hash: Vec::new(),
            lines: Vec::new(),
            first_sec: None,
            line_no: 0,
            skipped: 0,
            skipped_unsafe: 0,
            skips_named: Vec::new(),
        }
    }

    fn skip(&mut self, why: String) {
        self.line_no += 1;
        self.skipped += 1;
        if self.skips_named.len() < NAMED_SKIPS {
            self.skips_named
                .push(format!("{}:{}: {why}", self.file, self.line_no));
        }
    }

    fn line(&mut self, raw: &str) {
        if raw.trim().is_empty() {
            self.line_no += 1;
            return;
        }
        let (t, method, target) = match parse_line(raw, self.format) {
            Ok(l) => l,
            Err(why) => return self.skip(why),
        };
        if !self.allow_unsafe && !matches!(method, "GET" | "HEAD") {
            self.skipped_unsafe += 1;
            return self.skip(format!(
                "method {method} skipped (GET and HEAD only unless --allow-unsafe-methods)"
            ));
        }
        // Seconds relative to the first line's, biased so that the earlier ones sort first;
        // a log spanning more than 68 years is not a log.
        let first = *self.first_sec.get_or_insert(t);
        let rel = t - first + (1 << 31);
        if !(0..1 << 32).contains(&rel) {
            return self.skip("time more than 68 years from line 1's".to_string());
        }
        self.line_no += 1;
        let r = self.intern(method, &target);
        self.requests[r as usize].2 += 1;
        if self.keep == Keep::Arrivals {
            self.lines.push(((rel as u64) << 32) | r as u64);
        }
    }

    fn intern(&mut self, method: &str, target: &str) -> u32 {
        let m = match self.methods.iter().position(|x| x == method) {
            Some(m) => m as u16,
            None => {
                self.methods.push(method.to_string());
                (self.methods.len() - 1) as u16
            }
        };
        let h = std::hash::BuildHasher::hash_one(&self.seed, (m, target));
        let new = self.requests.len() as u32;
        let mut at = *self.by_hash.entry(h).or_insert(new);
        if at != new {
            loop {
                let (rm, rt, _) = &self.requests[at as usize];
                if *rm == m && &**rt == target {
                    return at;
                }
                match self.same_hash[at as usize] {
                    END => {
                        self.same_hash[at as usize] = new;
                        break;
                    }
                    next => at = next,
                }
            }
        }
        self.requests.push((m, target.into(), 0));
        self.same_hash.push(END);
        new
    }

    fn finish(self) -> Result<AccessLog, String> {
        let file = self.file;
        if self.requests.is_empty() {
            if self.skipped > 0 && self.skipped_unsafe == self.skipped {
                return Err(format!(
                    "access log '{file}': all its {} lines ask for methods other than GET and \
                     HEAD ({}); --allow-unsafe-methods sends them",
                    self.skipped, self.skips_named[0]
                ));
            }
            let first = self
                .skips_named
                .first()
                .map_or_else(|| format!("{file}: empty"), String::clone);
            return Err(format!(
                "access log '{file}' has no line in combined or common format ({first})"
            ));
        }
        drop(self.by_hash);
        drop(self.same_hash);
        // Most frequent first (the names table keeps the 200 most asked for), then remap.
        let mut order: Vec<u32> = (0..self.requests.len() as u32).collect();
        order.sort_by_key(|&r| std::cmp::Reverse(self.requests[r as usize].2));
        let mut new_index = vec![0u32; self.requests.len()];
        for (new, &old) in order.iter().enumerate() {
            new_index[old as usize] = new as u32;
        }
        drop(order);
        let methods: Vec<std::sync::Arc<str>> = self.methods.into_iter().map(Into::into).collect();
        let mut requests: Vec<LoggedRequest> = self
            .requests
            .into_iter()
            .map(|(m, target, count)| LoggedRequest {
                method: methods[m as usize].clone(),
                target,
                count,
            })
            .collect();
        // The same stable sort as `order`'s.
        requests.sort_by_key(|r| std::cmp::Reverse(r.count));
        // Logs are written at completion, so times may step back: replay them in time order
        // (stable: a second's lines keep the log's order).
        let mut lines = self.lines;
        lines.sort_by_key(|&l| l >> 32);
        let (at_ns, order, span_ns) = match (lines.first(), lines.last()) {
            (Some(&first), Some(&last)) => {
                let (first, last) = (first >> 32, last >> 32);
                let mut order = Vec::with_capacity(lines.len());
                let mut k = 0;
                // Each second's lines spread evenly over it; `lines` becomes the times.
                while k < lines.len() {
                    let sec = lines[k] >> 32;
                    let n = lines[k..].iter().take_while(|&&l| l >> 32 == sec).count();
                    let base = (sec - first) * 1_000_000_000;
                    for j in 0..n {
                        order.push(new_index[(lines[k + j] & 0xffff_ffff) as usize]);
                        lines[k + j] = base + j as u64 * 1_000_000_000 / n as u64;
                    }
                    k += n;
                }
                (lines, order, (last - first + 1) * 1_000_000_000)
            }
            // Counts only: the span is not known (nor needed).
            _ => (Vec::new(), Vec::new(), 0),
        };
        Ok(AccessLog {
            requests,
            at_ns,
            order,
            span_ns,
            lines: self.line_no,
            skipped: self.skipped,
            skipped_unsafe: self.skipped_unsafe,
            skips_named: self.skips_named,
        })
    }
}

/// One line: (Unix second, method, origin-form target).
fn parse_line(line: &str, format: Option<LogFormat>) -> Result<(i64, &str, String), String> {
    // host ident user
    let mut rest = line.trim_end_matches(['\r', '\n']);
    for what in ["host", "ident", "user"] {
        let (_, r) = rest
            .split_once(' ')
            .ok_or_else(|| format!("no {what} field"))?;
        rest = r;
    }
    let rest = rest
        .strip_prefix('[')
        .ok_or("no [time] after host, ident and user")?;
    let (time, rest) = rest.split_once("] ").ok_or("unterminated [time]")?;
    let t = parse_time(time)?;
    let (request, rest) = quoted(rest).ok_or("no quoted request line")?;
    let mut parts = request.split(' ');
    let method = parts.next().unwrap_or("");
    let target = parts.next().ok_or("request line without a target")?;
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(format!("'{method}' is not a method"));
    }
    let target = origin_form(target)?;
    // status and size
    let mut fields = rest.trim_start().splitn(3, ' ');
    let status = fields.next().unwrap_or("");
    if status.len() != 3 || !status.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("status '{status}' is not 3 digits"));
    }
    let size = fields.next().ok_or("no size field")?;
    if size != "-" && !size.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("size '{size}' is not a number or -"));
    }
    let tail = fields.next().unwrap_or("").trim();
    let combined = match quoted(tail) {
        Some((_referer, r)) => quoted(r.trim_start()).is_some(),
        None => false,
    };
    match format {
        Some(LogFormat::Combined) if !combined => {
            return Err("no \"referer\" \"user agent\" (not the combined format)".into())
        }
        Some(LogFormat::Common) if !tail.is_empty() => {
            return Err("fields after the size (not the common format)".into())
        }
        None if !combined && !tail.is_empty() => {
            return Err("fields after the size are not \"referer\" \"user agent\"".into())
        }
        _ => {}
    }
    Ok((t, method, target))
}

/// A `"…"` field (backslash escapes kept as they are) and what follows it.
fn quoted(s: &str) -> Option<(&str, &str)> {
    let s = s.strip_prefix('"')?;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            '"' if !escaped => return Some((&s[..i], &s[i + 1..])),
            _ => escaped = false,
        }
    }
    None
}

/// `/path?q`, or the path of an absolute `http://host/path` (a proxy's log).
fn origin_form(target: &str) -> Result<String, String> {
    let t = match target
        .strip_prefix("http://")
        .or_else(|| target.strip_prefix("https://"))
    {
        Some(r) => r.find('/').map_or("/", |i| &r[i..]),
        None => target,
    };
    // A fragment is the browser's, never sent (as `Url::parse` drops it).
    let t = t.split('#').next().unwrap_or(t);
    if !t.starts_with('/') || t.bytes().any(|b| b.is_ascii_control() || b == b' ') {
        return Err(format!(
            "target '{}' is not a path",
            crate::units::escape_controls(target)
        ));
    }
    Ok(t.to_string())
}

/// `10/Oct/2000:13:55:36 -0700` → Unix seconds.
fn parse_time(s: &str) -> Result<i64, String> {
    let bad = || format!("time '{s}' is not dd/Mon/yyyy:hh:mm:ss ±hhmm");
    let (dt, zone) = s.split_once(' ').ok_or_else(bad)?;
    let b = dt.as_bytes();
    if b.len() != 20 || b[2] != b'/' || b[6] != b'/' || b[11] != b':' {
        return Err(bad());
    }
    let num = |r: std::ops::Range<usize>| dt.get(r).and_then(|x| x.parse::<i64>().ok());
    let day = num(0..2).ok_or_else(bad)?;
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS
        .iter()
        .position(|m| Some(*m) == dt.get(3..6))
        .ok_or_else(bad)? as i64
        + 1;
    let year = num(7..11).ok_or_else(bad)?;
    let (h, m, sec) = (
        num(12..14).ok_or_else(bad)?,
        num(15..17).ok_or_else(bad)?,
        num(18..20).ok_or_else(bad)?,
    );
    if !(1..=31).contains(&day) || h > 23 || m > 59 || sec > 60 {
        return Err(bad());
    }
    let zb = zone.as_bytes();
    if zb.len() != 5 || !matches!(zb[0], b'+' | b'-') {
        return Err(bad());
    }
    let zh: i64 = zone[1..3].parse().map_err(|_| bad())?;
    let zm: i64 = zone[3..5].parse().map_err(|_| bad())?;
    let offset = (zh * 3600 + zm * 60) * if zb[0] == b'-' { -1 } else { 1 };
    Ok(crate::units::days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + sec - offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMBINED: &str = r#"127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif?x=1 HTTP/1.0" 200 2326 "http://www.example.com/start.html" "Mozilla/4.08 [en] (Win98; I ;Nav)""#;
    const COMMON: &str = r#"::1 - - [10/Oct/2000:20:55:37 +0000] "HEAD / HTTP/1.1" 304 -"#;

    #[test]
    fn both_formats_parse_and_times_are_utc() {
        let (t, m, target) = parse_line(COMBINED, None).unwrap();
        assert_eq!((m, target.as_str()), ("GET", "/apache_pb.gif?x=1"));
        // 2000-10-10 20:55:36 UTC.
        assert_eq!(t, 971_211_336);
        let (t2, m, target) = parse_line(COMMON, None).unwrap();
        assert_eq!((t2 - t, m, target.as_str()), (1, "HEAD", "/"));
        assert!(parse_line(COMMON, Some(LogFormat::Combined)).is_err());
        assert!(parse_line(COMBINED, Some(LogFormat::Common)).is_err());
        assert_eq!(crate::units::days_from_civil(1970, 1, 1), 0);
        assert_eq!(crate::units::days_from_civil(2024, 3, 1), 19_783);
    }

    #[test]
    fn bad_lines_are_counted_and_named_never_fatal() {
        let text = format!(
            "{COMBINED}\ngarbage\n{}\n\n1.2.3.4 - - [99/Foo/2000:00:00:00 +0000] \"GET / HTTP/1.1\" 200 1\n{COMMON}\n",
            COMMON.replace("HEAD", "POST")
        );
        let log = parse_access_log(&text, "a.log", None, false).unwrap();
        assert_eq!(log.order.len(), 2);
        assert_eq!(log.skipped, 3);
        assert_eq!(log.skips_named.len(), 3);
        assert!(
            log.skips_named[0].starts_with("a.log:2: "),
            "{:?}",
            log.skips_named
        );
        assert!(
            log.skips_named[1].contains("a.log:3: method POST"),
            "{:?}",
            log.skips_named
        );
        assert!(
            log.skips_named[2].starts_with("a.log:5: time"),
            "{:?}",
            log.skips_named
        );
        assert!(log.skipped_note().unwrap().contains("3 line(s) skipped"));
        // With --allow-unsafe-methods the POST counts.
        let log = parse_access_log(&text, "a.log", None, true).unwrap();
        assert_eq!(log.order.len(), 3);
        // Nothing usable: one error naming the file and the first bad line.
        let e = parse_access_log("garbage\n", "b.log", None, false).unwrap_err();
        assert!(e.contains("'b.log'") && e.contains("b.log:1: "), "{e}");
        assert!(parse_access_log("", "c.log", None, false).is_err());
    }

    #[test]
    fn arrivals_follow_the_log_clock_and_requests_its_frequencies() {
        let line = |s: u32, path: &str| {
            format!("h - - [01/Jan/2020:00:00:{s:02} +0000] \"GET {path} HTTP/1.1\" 200 1")
        };
        // Out of order by a second, as logs written at completion are.
        let text = [
            line(0, "/a"),
            line(2, "/b"),
            line(0, "/b"),
            line(1, "/b"),
            line(0, "/a"),
        ]
        .join("\n");
        let log = parse_access_log(&text, "x", None, false).unwrap();
        assert_eq!(&*log.requests[0].target, "/b");
        assert_eq!(log.requests[0].count, 3);
        assert_eq!(log.span_ns, 3_000_000_000);
        let times: Vec<u64> = log.at_ns.iter().map(|t| t / 1_000_000).collect();
        // Second 0's three lines spread over it; then 1 s and 2 s.
        assert_eq!(times, [0, 333, 666, 1000, 2000]);
        let b = 0;
        assert_eq!(log.order[3], b);
        assert_eq!(log.order[4], b);
    }
}
