//! `--har FILE`: a browser's recording (HAR 1.2, the developer tools' "Save all as HAR") as a
//! scenario: its entries in order, each with its method, URL, headers and body; the pause
//! after each answer is the recording's gap to the next request, at most [`MAX_THINK`].
//!
//! Left out, and said so in one note: static assets (images, CSS, scripts, fonts, by response
//! type or extension) unless `--har-assets`; methods other than GET and HEAD unless
//! `--allow-unsafe-methods`; with a URL argument, entries on another origin than the first
//! entry's (analytics, CDNs), since the URL argument replaces that origin. Dropped from every
//! request: HTTP/2 pseudo-headers, `Cookie` (each user's jar sends its own), `Host` and the
//! headers that frame the message (the engine writes them).
use super::import::{is_safe, Recorded};
use crate::url::Url;
use serde::Deserialize;
use std::borrow::Cow;
use std::time::Duration;

/// Longest pause taken from the recording: a user who left the tab for lunch should not stall
/// a load test.
pub const MAX_THINK: Duration = Duration::from_secs(10);

/// Largest HAR read (recordings with response bodies run to tens of megabytes).
pub const MAX_HAR: u64 = 256 << 20;

/// What to keep of a recording.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Send static assets too (`--har-assets`).
    pub assets: bool,
    /// Send methods other than GET and HEAD (`--allow-unsafe-methods`).
    pub allow_unsafe_methods: bool,
}

// Parsed straight into the fields used, borrowing the file's strings where they need no
// unescaping; the rest of each entry (response bodies, timings, cookies) is skipped unread.
#[derive(Deserialize)]
struct Har<'a> {
    #[serde(borrow)]
    log: Log<'a>,
}

#[derive(Deserialize)]
struct Log<'a> {
    #[serde(borrow)]
    entries: Option<Entries<'a>>,
}

/// The entries, each parsed in place; the first that fails is named (see [`FAILED_ENTRY`]).
struct Entries<'a>(Vec<Entry<'a>>);

thread_local! {
    /// The index of the entry whose parse failed: a serde error carries its position in the
    /// file, not the entry's index, and wrapping it would repeat the position.
    static FAILED_ENTRY: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

impl<'de: 'a, 'a> Deserialize<'de> for Entries<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Seq<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Seq<'a> {
            type Value = Entries<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array of entries")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::new();
                loop {
                    match seq.next_element::<Entry<'a>>() {
                        Ok(Some(e)) => entries.push(e),
                        Ok(None) => return Ok(Entries(entries)),
                        Err(e) => {
                            FAILED_ENTRY.with(|f| f.set(Some(entries.len())));
                            return Err(e);
                        }
                    }
                }
            }
        }
        d.deserialize_seq(Seq(std::marker::PhantomData))
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Entry<'a> {
    #[serde(borrow)]
    started_date_time: Cow<'a, str>,
    /// The whole exchange, ms (HAR says -1 is never used here, but tools write it).
    time: Option<f64>,
    #[serde(borrow)]
    request: Request<'a>,
    #[serde(borrow)]
    response: Option<Response<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request<'a> {
    #[serde(borrow)]
    method: Cow<'a, str>,
    #[serde(borrow)]
    url: Cow<'a, str>,
    #[serde(default, borrow)]
    headers: Vec<NameValue<'a>>,
    #[serde(borrow)]
    post_data: Option<PostData<'a>>,
}

#[derive(Deserialize)]
struct NameValue<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(default, borrow)]
    value: Cow<'a, str>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PostData<'a> {
    #[serde(borrow)]
    mime_type: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    params: Vec<NameValue<'a>>,
}

#[derive(Deserialize)]
struct Response<'a> {
    #[serde(borrow)]
    content: Option<Content<'a>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Content<'a> {
    #[serde(borrow)]
    mime_type: Option<Cow<'a, str>>,
}

/// The requests to send, and a note on what was left out (None: nothing).
#[derive(Debug)]
pub struct Imported {
    pub requests: Vec<Recorded>,
    pub note: Option<String>,
}

/// Reads a HAR file. `base`: the URL argument, whose origin replaces the first entry's.
pub fn read(path: &std::path::Path, base: Option<&Url>, opts: Options) -> Result<Imported, String> {
    let bytes = crate::fsutil::read_capped(path, MAX_HAR, "--har")?;
    parse(&bytes, &crate::fsutil::shown(path), base, opts)
}

/// Parses HAR text; `file` names it in messages (`rec.har: log.entries[3].request.url: …`,
/// entries counted from 0 as `jq '.log.entries[3]'` does).
pub fn parse(
    bytes: &[u8],
    file: &str,
    base: Option<&Url>,
    opts: Options,
) -> Result<Imported, String> {
    FAILED_ENTRY.with(|f| f.set(None));
    let har: Har = serde_json::from_slice(bytes).map_err(|e| {
        let msg = e.to_string();
        match FAILED_ENTRY.with(|f| f.take()) {
            Some(i) if e.is_data() => format!("{file}: log.entries[{i}]: {msg}"),
            _ if e.is_data() => format!("{file}: not a HAR file (no log object): {msg}"),
            _ => format!("{file}: not a HAR file (JSON): {msg}"),
        }
    })?;
    let raw = har.log.entries.map(|e| e.0).unwrap_or_default();
    if raw.is_empty() {
        return Err(format!("{file}: log.entries: no entries to send"));
    }
    // (entry, its start and end in ms since the epoch)
    let mut kept: Vec<(Recorded, f64, f64)> = Vec::new();
    let (mut assets, mut unsafe_methods) = (0usize, Vec::new());
    let mut origins = crate::plan::origin::Origins::new(base);
    for (i, e) in raw.into_iter().enumerate() {
        let at = format!("{file}: log.entries[{i}]");
        let method = crate::plan::parse_method(&e.request.method)
            .map_err(|m| format!("{at}.request.method: {m}"))?;
        let start = parse_time(&e.started_date_time).ok_or_else(|| {
            format!(
                "{at}.startedDateTime: '{}': expected a time like 2024-03-05T10:11:12.345Z",
                crate::units::escape_controls(&e.started_date_time)
            )
        })?;
        // A HAR's URLs are absolute: a path in one is not a recording.
        if e.request.url.starts_with('/') {
            return Err(format!(
                "{at}.request.url: '{}': not an absolute URL",
                crate::units::escape_controls(&e.request.url)
            ));
        }
        let Some(url) = origins
            .place(&e.request.url)
            .map_err(|m| format!("{at}.request.url: {m}"))?
        else {
            continue;
        };
        let mime = e
            .response
            .and_then(|r| r.content)
            .and_then(|c| c.mime_type)
            .unwrap_or_default();
        if !opts.assets && is_asset(&mime, &url.target) {
            assets += 1;
            continue;
        }
        if !opts.allow_unsafe_methods && !is_safe(&method) {
            unsafe_methods.push(method);
            continue;
        }
        let (headers, body) = headers_and_body(e.request.headers, e.request.post_data);
        let end = start + e.time.unwrap_or(0.0).max(0.0);
        kept.push((
            Recorded {
                method,
                url,
                headers,
                body,
                think: None,
                burst: Vec::new(),
            },
            start,
            end,
        ));
    }
    let note = note(assets, &unsafe_methods, origins.note());
    if kept.is_empty() {
        return Err(format!(
            "{file}: none of its entries is left to send ({})",
            note.unwrap_or_default()
        ));
    }
    // The pause after an answer: from its end to the next request's start.
    let starts: Vec<f64> = kept.iter().map(|k| k.1).collect();
    let mut requests = Vec::with_capacity(kept.len());
    for (i, (mut r, _, end)) in kept.into_iter().enumerate() {
        if let Some(next) = starts.get(i + 1) {
            // The recording has millisecond resolution.
            let gap_ms = (next - end).clamp(0.0, MAX_THINK.as_millis() as f64);
            r.think = Some(Duration::from_millis(gap_ms.round() as u64));
        }
        requests.push(r);
    }
    Ok(Imported {
        requests,
        note: note.map(|n| format!("{file}: {n}")),
    })
}

/// The request's own headers, less those a replay must not copy, and its body (with a
/// Content-Type from the body's type when the headers lack one).
fn headers_and_body(
    recorded: Vec<NameValue>,
    post: Option<PostData>,
) -> (Vec<(String, String)>, Option<String>) {
    let mut headers = Vec::new();
    for h in recorded {
        let lower = h.name.to_ascii_lowercase();
        if lower.starts_with(':') || lower == "cookie" || lower == "host" {
            continue;
        }
        // Framing and connection headers, and names or values that are not valid HTTP.
        if let Ok(pair) = crate::plan::parse_header(&format!("{}: {}", h.name, h.value)) {
            headers.push(pair);
        }
    }
    let body = post.and_then(|p| {
        let text = match p.text {
            Some(t) => t.into_owned(),
            None if !p.params.is_empty() => p
                .params
                .iter()
                .map(|kv| format!("{}={}", kv.name, kv.value))
                .collect::<Vec<_>>()
                .join("&"),
            None => return None,
        };
        let typed = headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("content-type"));
        if let (false, Some(m)) = (typed, p.mime_type.filter(|m| !m.is_empty())) {
            if let Ok(pair) = crate::plan::parse_header(&format!("Content-Type: {m}")) {
                headers.push(pair);
            }
        }
        Some(text)
    });
    (headers, body)
}

/// Static assets: what a page embeds rather than what a user asks for.
fn is_asset(mime: &str, target: &str) -> bool {
    let mime = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let by_type = ["image/", "font/", "video/", "audio/"]
        .iter()
        .any(|p| mime.starts_with(p))
        || matches!(
            mime.as_str(),
            "text/css"
                | "text/javascript"
                | "application/javascript"
                | "application/x-javascript"
                | "application/font-woff"
                | "application/font-woff2"
                | "application/vnd.ms-fontobject"
                | "application/x-font-ttf"
        );
    let path = target.split('?').next().unwrap_or("");
    let ext = path
        .rsplit_once('.')
        .filter(|(_, e)| !e.contains('/'))
        .map(|(_, e)| e.to_ascii_lowercase());
    let by_ext = ext.is_some_and(|e| {
        matches!(
            e.as_str(),
            "css"
                | "js"
                | "mjs"
                | "map"
                | "png"
                | "jpg"
                | "jpeg"
                | "gif"
                | "svg"
                | "ico"
                | "webp"
                | "avif"
                | "bmp"
                | "woff"
                | "woff2"
                | "ttf"
                | "otf"
                | "eot"
                | "mp4"
                | "webm"
                | "mp3"
                | "wav"
        )
    });
    by_type || by_ext
}

fn note(assets: usize, unsafe_methods: &[String], elsewhere: Option<String>) -> Option<String> {
    let mut parts = Vec::new();
    if assets > 0 {
        parts.push(format!(
            "{assets} static asset(s) left out (--har-assets sends them)"
        ));
    }
    if !unsafe_methods.is_empty() {
        let mut kinds: Vec<&str> = unsafe_methods.iter().map(String::as_str).collect();
        kinds.sort_unstable();
        kinds.dedup();
        parts.push(format!(
            "{} {} request(s) left out (GET and HEAD only unless --allow-unsafe-methods)",
            unsafe_methods.len(),
            kinds.join("/")
        ));
    }
    parts.extend(elsewhere);
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// ms since the epoch of an ISO 8601 time as HAR writes it: `2024-03-05T10:11:12.345Z`, or
/// with an offset (`+01:00`); fractions of any length.
fn parse_time(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut rest = &s[19..];
    let mut frac = 0.0;
    if let Some(r) = rest.strip_prefix('.') {
        let n = r.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        frac = format!("0.{}", &r[..n]).parse::<f64>().ok()?;
        rest = &r[n..];
    }
    let offset_min = match rest {
        "Z" | "z" | "" => 0,
        _ => {
            let sign = match rest.as_bytes()[0] {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let t = rest[1..].replace(':', "");
            if t.len() != 4 || !t.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            sign * (t[..2].parse::<i64>().ok()? * 60 + t[2..].parse::<i64>().ok()?)
        }
    };
    let days = crate::units::days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset_min * 60;
    Some((secs as f64 + frac) * 1e3)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHOP: &[u8] = include_bytes!("../../tests/data/shop.har");

    fn urls(i: &Imported) -> Vec<String> {
        i.requests
            .iter()
            .map(|r| format!("{} {}{}", r.method, r.url.origin(), r.url.target))
            .collect()
    }

    #[test]
    fn a_recording_becomes_its_requests_in_order() {
        let i = parse(SHOP, "shop.har", None, Options::default()).unwrap();
        assert_eq!(
            urls(&i),
            [
                "GET http://127.0.0.1:8080/",
                "GET http://127.0.0.1:8080/products?page=2",
                "HEAD http://127.0.0.1:8080/products/7",
                "GET http://analytics.example/beacon?id=1"
            ]
        );
        let note = i.note.unwrap();
        assert!(
            note.starts_with("shop.har: 3 static asset(s) left out"),
            "{note}"
        );
        assert!(note.contains("1 POST request(s) left out"), "{note}");
        // Pseudo-headers, the cookie and the framing headers stay behind; the rest are sent.
        let first = &i.requests[0];
        assert_eq!(
            first.headers,
            [
                ("accept".to_string(), "text/html".to_string()),
                (
                    "user-agent".to_string(),
                    "Mozilla/5.0 (recorded)".to_string()
                )
            ]
        );
        // From the end of / (t=0, 120 ms) to the next page start (t=1.620 s): 1.5 s, the
        // assets' time in between included; 30 s of reading is capped.
        assert_eq!(first.think, Some(Duration::from_millis(1500)));
        assert_eq!(i.requests[1].think, Some(MAX_THINK));
        assert_eq!(i.requests[2].think, Some(Duration::from_millis(490)));
        assert_eq!(i.requests[3].think, None, "the last: the run's --think");
    }

    #[test]
    fn options_keep_assets_and_posts_and_a_url_argument_rebases() {
        let all = Options {
            assets: true,
            allow_unsafe_methods: true,
        };
        let base = Url::parse("http://127.0.0.1:9999/x").unwrap();
        let i = parse(SHOP, "shop.har", Some(&base), all).unwrap();
        let u = urls(&i);
        assert_eq!(u.len(), 7, "{u:?}");
        assert!(u.iter().all(|u| u.contains("127.0.0.1:9999")), "{u:?}");
        assert!(u.contains(&"GET http://127.0.0.1:9999/static/app.css".to_string()));
        let post = i.requests.iter().find(|r| r.method == "POST").unwrap();
        assert_eq!(post.body.as_deref(), Some("item=7&qty=1"));
        assert!(post.headers.contains(&(
            "Content-Type".to_string(),
            "application/x-www-form-urlencoded".to_string()
        )));
        // The analytics beacon is on another origin: not sent to the server under test.
        let note = i.note.unwrap();
        assert!(note.contains("http://analytics.example left out"), "{note}");
        // Without a URL argument it goes where it was recorded.
        let asis = parse(SHOP, "shop.har", None, all).unwrap();
        assert!(urls(&asis).contains(&"GET http://analytics.example/beacon?id=1".to_string()));
    }

    #[test]
    fn bad_recordings_name_the_file_and_the_entry() {
        let e = |text: &str| parse(text.as_bytes(), "r.har", None, Options::default()).unwrap_err();
        assert!(e("<html>").starts_with("r.har: not a HAR file (JSON): expected value"));
        assert!(e("{\"a\": 1}").starts_with("r.har: not a HAR file (no log object)"));
        assert_eq!(
            e("{\"log\": {\"entries\": []}}"),
            "r.har: log.entries: no entries to send"
        );
        let entry = |url: &str, t: &str| {
            format!(
                r#"{{"log": {{"entries": [{{"startedDateTime": "2024-01-01T00:00:00Z", "request": {{"method": "GET", "url": "http://127.0.0.1/"}}}}, {{"startedDateTime": "{t}", "request": {{"method": "GET", "url": "{url}"}}}}]}}}}"#
            )
        };
        let msg = e(&entry("ftp://x/", "2024-01-01T00:00:01Z"));
        assert_eq!(
            msg,
            "r.har: log.entries[1].request.url: 'ftp://x/': only http:// and https:// URLs are supported"
        );
        let msg = e(&entry("http://127.0.0.1/", "yesterday"));
        assert!(
            msg.starts_with("r.har: log.entries[1].startedDateTime: 'yesterday'"),
            "{msg}"
        );
        let msg = e(
            r#"{"log": {"entries": [{"startedDateTime": "2024-01-01T00:00:00Z", "request": {"url": "http://127.0.0.1/"}}]}}"#,
        );
        assert!(
            msg.starts_with("r.har: log.entries[0]: missing field `method`"),
            "{msg}"
        );
        assert!(!msg.contains('\n'));
        let only_post = r#"{"log": {"entries": [{"startedDateTime": "2024-01-01T00:00:00Z", "request": {"method": "POST", "url": "http://127.0.0.1/"}}]}}"#;
        let msg = e(only_post);
        assert!(
            msg.contains("none of its entries is left to send (1 POST"),
            "{msg}"
        );
    }

    #[test]
    fn times_as_har_writes_them() {
        let z = parse_time("2024-03-05T10:11:12.345Z").unwrap();
        assert_eq!(parse_time("2024-03-05T11:11:12.345+01:00"), Some(z));
        let near = |a: Option<f64>, b: f64| a.is_some_and(|a| (a - b).abs() < 0.01);
        assert!(near(parse_time("2024-03-05T10:11:12.345123Z"), z + 0.123));
        assert!(near(parse_time("2024-03-05T10:11:13Z"), z + 655.0));
        assert_eq!(
            parse_time("1970-01-02T00:00:00Z"),
            Some(86_400_000.0),
            "days from 1970"
        );
        for bad in [
            "2024-13-05T10:11:12Z",
            "2024-03-05",
            "2024-03-05T10:11:12.Z",
            "2024-03-05T10:11:12+1",
        ] {
            assert_eq!(parse_time(bad), None, "{bad}");
        }
    }

    #[test]
    fn assets_by_type_or_extension() {
        assert!(is_asset("image/png", "/x"));
        assert!(is_asset("text/css; charset=utf-8", "/x"));
        assert!(is_asset("", "/static/app.JS?v=3"));
        assert!(!is_asset("text/html", "/products"));
        assert!(!is_asset("application/json", "/api/v1.2/items"));
    }
}
