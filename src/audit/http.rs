//! The HTTP rules: keep-alive, compression of text, caching headers and validators, HTTP/2
//! and TLS session resumption, versions in the Server header. Pure functions of
//! [`HttpEvidence`], which `gather::http` records (a few GETs and an idle wait) and
//! `usecase::audit` completes with the engine's short A/B runs.
use super::{num, Check, Level, Probe, LATER, S1_S2, S2};
use serde::{Deserialize, Serialize};

/// One answer as the audit keeps it: status, headers, body size, whether the body is text.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body_bytes: u64,
    /// Text by its Content-Type, or (none given) by its bytes: what compression is for.
    pub text: bool,
    /// No Content-Type was sent: what its bytes look like ([`sniff`]'s words).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sniffed: Option<String>,
}

impl Answer {
    /// First header of that name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The Content-Type for evidence lines; when absent, what the bytes looked like
    /// (`no Content-Type (by its bytes: UTF-8 text)`).
    pub fn content_type(&self) -> String {
        match (self.header("content-type"), &self.sniffed) {
            (Some(t), _) => t.to_string(),
            (None, Some(s)) => format!("no Content-Type (by its bytes: {s})"),
            // Evidence recorded before the sniff was kept.
            (None, None) if self.text => "no Content-Type (text by its bytes)".into(),
            (None, None) => "no Content-Type".into(),
        }
    }
}

/// How many leading bytes [`sniff`] reads, as a browser's MIME sniffing does.
pub const SNIFF_BYTES: usize = 1024;

/// What a body sent without Content-Type is, by its first bytes (WHATWG MIME Sniffing, in
/// short): text only when they are UTF-8 without a control byte; a known signature, or any
/// control byte, is binary; other bytes (a legacy 8-bit charset, or binary) are unknown, and
/// unknown is not text. Returns whether it is text, and the words the evidence says.
pub fn sniff(body: &[u8]) -> (bool, &'static str) {
    const SIGNATURES: [(&[u8], &str); 12] = [
        (b"\x1f\x8b", "a gzip stream"),
        (b"\x28\xb5\x2f\xfd", "a zstd frame"),
        (b"\x89PNG\r\n\x1a\n", "a PNG image"),
        (b"\xff\xd8\xff", "a JPEG image"),
        (b"GIF87a", "a GIF image"),
        (b"GIF89a", "a GIF image"),
        (b"%PDF-", "a PDF document"),
        (b"PK\x03\x04", "a zip archive"),
        (b"wOFF", "a WOFF font"),
        (b"wOF2", "a WOFF2 font"),
        (b"\x00asm", "a WebAssembly module"),
        (b"OggS\x00", "an Ogg stream"),
    ];
    let head = &body[..body.len().min(SNIFF_BYTES)];
    if head.is_empty() {
        return (false, "empty");
    }
    if let Some((_, what)) = SIGNATURES.iter().find(|(sig, _)| head.starts_with(sig)) {
        return (false, what);
    }
    // WHATWG's binary data bytes: C0 controls other than tab, LF, FF, CR and ESC.
    let control = |b: &u8| matches!(b, 0x00..=0x08 | 0x0b | 0x0e..=0x1a | 0x1c..=0x1f);
    if head.iter().any(control) {
        return (false, "binary (control bytes)");
    }
    match std::str::from_utf8(head) {
        Ok(_) => (true, "UTF-8 text"),
        // Cut inside a character where the sniffed bytes end: text up to there.
        Err(e) if e.error_len().is_none() && e.valid_up_to() + 4 > head.len() => {
            (true, "UTF-8 text")
        }
        Err(_) => (false, "unknown (not UTF-8)"),
    }
}

/// Whether a Content-Type names text (what gzip shrinks); `None` when there is no header.
pub fn is_text_type(content_type: &str) -> bool {
    let t = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    t.starts_with("text/")
        || t.ends_with("+json")
        || t.ends_with("+xml")
        || matches!(
            t.as_str(),
            "application/json"
                | "application/javascript"
                | "application/x-javascript"
                | "application/xml"
                | "application/xhtml+xml"
                | "application/wasm"
                | "image/svg+xml"
        )
}

/// The idle wait on a kept connection: how long it stayed open.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Idle {
    /// How long the probe waited at most, seconds.
    pub waited_s: f64,
    /// When the server closed the idle connection; None: still open after `waited_s`.
    pub closed_after_s: Option<f64>,
}

/// One arm of an A/B load run: what the engine counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Arm {
    pub responses: u64,
    pub duration_s: f64,
    pub bytes_in: u64,
    pub connections: u64,
    pub handshakes_full: u64,
    pub handshakes_resumed: u64,
    /// The run spoke HTTP/2 (the server picked h2 by ALPN).
    pub http2: bool,
}

impl Arm {
    fn per_s(&self, n: u64) -> f64 {
        if self.duration_s > 0.0 {
            n as f64 / self.duration_s
        } else {
            0.0
        }
    }

    pub fn req_per_s(&self) -> f64 {
        self.per_s(self.responses)
    }

    pub fn conn_per_s(&self) -> f64 {
        self.per_s(self.connections)
    }

    pub fn bytes_per_s(&self) -> f64 {
        self.per_s(self.bytes_in)
    }

    pub fn bytes_per_response(&self) -> u64 {
        self.bytes_in.checked_div(self.responses).unwrap_or(0)
    }
}

/// What compressing costs the server, measured on one kept connection: GETs without and
/// with Accept-Encoding, interleaved, their medians.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CompressionCost {
    /// GETs of each kind.
    pub pairs: usize,
    /// Time to first byte p50, ms: [without, with] Accept-Encoding.
    pub first_byte_ms: [f64; 2],
    /// Time to the whole answer p50, ms: [without, with].
    pub total_ms: [f64; 2],
}

impl CompressionCost {
    /// What compression adds to the first byte, ms (negative when it is faster).
    pub fn added_ms(&self) -> f64 {
        self.first_byte_ms[1] - self.first_byte_ms[0]
    }
}

/// GETs of each kind the cost is measured over (a probe: a few dozen requests in all).
pub const COST_PAIRS: usize = 10;
/// Compression that adds more than this to the first byte, and more than the answer takes
/// without it, is costly: a lower level keeps most of the saving (S2's level advice).
const COSTLY_MS: f64 = 2.0;

/// The Accept-Encoding the audit offers (and the A/B's compressed arm sends).
pub const ACCEPT_ENCODING: &str = "gzip, br";
/// Below this, compressing a body gains too little to advise (nginx's gzip_min_length
/// advice is of this order).
pub const MIN_COMPRESS_BYTES: u64 = 1024;
/// A kept connection closed sooner than this after an answer is a keep-alive in name only.
const SHORT_KEEP_ALIVE_S: f64 = 1.0;

/// Everything the HTTP rules look at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpEvidence {
    /// The path and query audited (`/`), for the evidence lines.
    pub target: String,
    pub https: bool,
    /// GET without Accept-Encoding.
    pub plain: Probe<Answer>,
    /// GET with `Accept-Encoding: gzip, br`.
    pub encoded: Probe<Answer>,
    /// Bytes of the plain body after gzip -6 here, when the server sent text uncompressed.
    pub gzip_estimate: Option<u64>,
    /// What compression costs the server in time, when it compresses.
    pub compression_cost: Probe<CompressionCost>,
    /// The conditional GET (the header sent, and the answer); None when there was no
    /// validator to send.
    pub conditional: Option<Probe<(String, Answer)>>,
    /// The idle wait on the kept connection of the plain GET.
    pub idle: Probe<Idle>,
    /// A/B: [without, with] Accept-Encoding.
    pub ab_compression: Probe<[Arm; 2]>,
    /// A/B: [kept connections, a new connection per request].
    pub ab_keep_alive: Probe<[Arm; 2]>,
    /// The protocol the server picks by ALPN from `h2, http/1.1` (https only).
    pub alpn: Probe<Option<String>>,
}

pub fn checks(e: &HttpEvidence) -> Vec<Check> {
    vec![
        keep_alive(e),
        compression(e),
        caching(e),
        validators(e),
        server_versions(e),
        http2(e),
        tls_resumption(e),
    ]
}

/// The plain answer, when it is one the header rules can judge (a 2xx).
fn judged(e: &HttpEvidence) -> Result<&Answer, String> {
    let a = e.plain.as_ref().map_err(Clone::clone)?;
    if (200..300).contains(&a.status) {
        Ok(a)
    } else {
        Err(format!(
            "GET {} answered {}; audit a URL that answers 2xx",
            e.target, a.status
        ))
    }
}

/// A share in percent, to one decimal near the ends (99.8%, not 100%).
fn pct(part: f64, whole: f64) -> String {
    let p = if whole > 0.0 {
        100.0 * part / whole
    } else {
        0.0
    };
    if !(1.0..=99.0).contains(&p) {
        format!("{p:.1}%")
    } else {
        format!("{p:.0}%")
    }
}

fn mbps(bytes_per_s: f64) -> String {
    format!("{} MB/s", crate::units::fmt_num(bytes_per_s / 1e6))
}

fn rate(v: f64) -> String {
    num(v.round() as u64)
}

pub const KEEP_ALIVE: &str = "http.keep-alive";

/// Keep-alive offered, and for how long an idle connection stays open.
pub fn keep_alive(e: &HttpEvidence) -> Check {
    let a = match e.plain.as_ref() {
        Ok(a) => a,
        Err(why) => return Check::skipped(KEEP_ALIVE, why.clone(), S1_S2),
    };
    let idle = match e.idle.as_ref() {
        Ok(i) => i,
        Err(why) => return Check::skipped(KEEP_ALIVE, why.clone(), S1_S2),
    };
    let close = a
        .header("connection")
        .is_some_and(|v| v.to_ascii_lowercase().contains("close"));
    let header = match (a.header("connection"), a.header("keep-alive")) {
        (Some(c), Some(k)) => format!("Connection: {c}, Keep-Alive: {k}"),
        (Some(c), None) => format!("Connection: {c}"),
        (None, Some(k)) => format!("Keep-Alive: {k}"),
        (None, None) => "no Connection header".into(),
    };
    let ab = match e.ab_keep_alive.as_ref() {
        Ok([kept, fresh]) => format!(
            "; measured: {} req/s on kept connections ({} connections for {} answers), {} \
             req/s with a new connection per request ({} connections/s)",
            rate(kept.req_per_s()),
            num(kept.connections),
            num(kept.responses),
            rate(fresh.req_per_s()),
            rate(fresh.conn_per_s())
        ),
        Err(_) => String::new(),
    };
    let change = "turn keep-alive on with a timeout of a few seconds (nginx: keepalive_timeout \
                  5s; Apache: KeepAlive On, KeepAliveTimeout 5; on prefork each kept connection \
                  holds a worker, so keep it short)";
    match idle.closed_after_s {
        Some(t) if close || t < SHORT_KEEP_ALIVE_S => {
            let title = if close || t < 0.05 {
                "keep-alive is off"
            } else {
                "keep-alive times out within a second"
            };
            Check::finding(
                KEEP_ALIVE,
                Level::Medium,
                title,
                format!(
                    "GET {} answered with {header}; the server closed the idle connection after \
                     {t:.2} s{ab}",
                    e.target
                ),
                change,
                S1_S2,
            )
        }
        None if close => Check::finding(
            KEEP_ALIVE,
            Level::Medium,
            "keep-alive is off",
            format!("GET {} answered with {header}{ab}", e.target),
            change,
            S1_S2,
        ),
        Some(t) => Check::ok(
            KEEP_ALIVE,
            "keep-alive offered",
            format!("{header}; the idle connection was closed after {t:.1} s{ab}"),
            S1_S2,
        ),
        None => Check::ok(
            KEEP_ALIVE,
            "keep-alive offered",
            format!(
                "{header}; the idle connection was still open after {:.1} s{ab}",
                idle.waited_s
            ),
            S1_S2,
        ),
    }
}

pub const COMPRESSION: &str = "http.compression";

/// Text compressed when the client accepts it; the saving in bytes.
pub fn compression(e: &HttpEvidence) -> Check {
    let a = match judged(e) {
        Ok(a) => a,
        Err(why) => return Check::skipped(COMPRESSION, why, S2),
    };
    if !a.text {
        return Check::ok(
            COMPRESSION,
            "not text",
            format!(
                "GET {} answered {} ({} bytes): compressed formats gain nothing from gzip",
                e.target,
                a.content_type(),
                num(a.body_bytes)
            ),
            S2,
        );
    }
    if a.body_bytes < MIN_COMPRESS_BYTES {
        return Check::ok(
            COMPRESSION,
            "too small to matter",
            format!(
                "GET {} answered {} bytes of text: below {} bytes compression gains little \
                 (audit a larger page to check it)",
                e.target,
                num(a.body_bytes),
                num(MIN_COMPRESS_BYTES)
            ),
            S2,
        );
    }
    let enc = match e.encoded.as_ref() {
        Ok(x) => x,
        Err(why) => return Check::skipped(COMPRESSION, why.clone(), S2),
    };
    let ab = |saved_per_response: Option<u64>| match e.ab_compression.as_ref() {
        Ok([without, with]) => {
            let mut s = format!(
                "; measured: {} without Accept-Encoding and {} with it ({} and {} bytes per \
                 answer)",
                mbps(without.bytes_per_s()),
                mbps(with.bytes_per_s()),
                num(without.bytes_per_response()),
                num(with.bytes_per_response())
            );
            if let Some(saved) = saved_per_response {
                s.push_str(&format!(
                    "; at the {} req/s measured, compression would save {}",
                    rate(without.req_per_s()),
                    mbps(saved as f64 * without.req_per_s())
                ));
            }
            s
        }
        Err(_) => String::new(),
    };
    match enc.header("content-encoding") {
        Some(coding) if !coding.eq_ignore_ascii_case("identity") => {
            let saved = pct(
                a.body_bytes.saturating_sub(enc.body_bytes) as f64,
                a.body_bytes as f64,
            );
            let (title, cost) = match &e.compression_cost {
                Ok(c) => (
                    format!(
                        "{coding} saves {saved} of bytes and costs {:+.2} ms TTFB p50",
                        c.added_ms()
                    ),
                    format!(
                        "; time to first byte p50 {:.2} ms without Accept-Encoding and {:.2} ms \
                         with it ({:+.2} ms), whole answer p50 {:.2} → {:.2} ms, over {} GETs \
                         of each on one connection",
                        c.first_byte_ms[0],
                        c.first_byte_ms[1],
                        c.added_ms(),
                        c.total_ms[0],
                        c.total_ms[1],
                        c.pairs
                    ),
                ),
                Err(_) => (format!("text compressed ({coding})"), String::new()),
            };
            let seen = format!(
                "GET {} with Accept-Encoding: {ACCEPT_ENCODING}: Content-Encoding: {coding}, {} \
                 → {} bytes (−{saved}){cost}{}",
                e.target,
                num(a.body_bytes),
                num(enc.body_bytes),
                ab(None)
            );
            match &e.compression_cost {
                Ok(c) if c.added_ms() > COSTLY_MS && c.added_ms() > c.first_byte_ms[0] => {
                    Check::finding(
                        COMPRESSION,
                        Level::Low,
                        title,
                        seen,
                        "lower the compression level (nginx gzip_comp_level 1–4, Apache \
                         DeflateCompressionLevel 1–4: most of the saving for a fraction of the \
                         CPU), or serve precompressed files (nginx gzip_static on)",
                        S2,
                    )
                }
                _ => Check::ok(COMPRESSION, title, seen, S2),
            }
        }
        _ => {
            let (estimate, saved) = match e.gzip_estimate {
                Some(z) => {
                    let saved = a.body_bytes.saturating_sub(z);
                    (
                        format!(
                            "; gzip -6 makes them {} bytes (−{}, {} bytes saved per answer)",
                            num(z),
                            pct(saved as f64, a.body_bytes as f64),
                            num(saved)
                        ),
                        Some(saved),
                    )
                }
                None => (String::new(), None),
            };
            Check::finding(
                COMPRESSION,
                Level::Medium,
                "text is sent uncompressed",
                format!(
                    "GET {} with Accept-Encoding: {ACCEPT_ENCODING} answered {} bytes {} \
                     without Content-Encoding{estimate}{}",
                    e.target,
                    num(enc.body_bytes),
                    // "of text/html", or "with no Content-Type (by its bytes: UTF-8 text)".
                    match a.header("content-type") {
                        Some(_) => format!("of {}", a.content_type()),
                        None => format!("with {}", a.content_type()),
                    },
                    ab(saved)
                ),
                format!(
                    "{}compress text responses (nginx: gzip on; gzip_types text/css \
                     application/json application/javascript; Apache: mod_deflate, \
                     AddOutputFilterByType DEFLATE text/html text/css application/json)",
                    // Servers choose what to compress by the type: without one, gzip_types
                    // and AddOutputFilterByType never match.
                    if a.header("content-type").is_none() {
                        "send a Content-Type for it (servers pick what to compress by its \
                         type: without one, gzip_types and AddOutputFilterByType never match), \
                         then "
                    } else {
                        ""
                    }
                ),
                S2,
            )
        }
    }
}

pub const CACHING: &str = "http.caching";

/// Caching headers: Cache-Control or Expires.
pub fn caching(e: &HttpEvidence) -> Check {
    let a = match judged(e) {
        Ok(a) => a,
        Err(why) => return Check::skipped(CACHING, why, S2),
    };
    match (a.header("cache-control"), a.header("expires")) {
        (None, None) => Check::finding(
            CACHING,
            Level::Medium,
            "no caching headers",
            format!(
                "GET {} answered {} bytes with neither Cache-Control nor Expires: clients and \
                 proxies fetch it again every time",
                e.target,
                num(a.body_bytes)
            ),
            "send Cache-Control: max-age=N (or Expires) for what can be reused: static files \
             with nginx `expires 1h;` or Apache mod_expires (ExpiresActive On, ExpiresDefault \
             \"access plus 1 hour\"); pages from PHP with header('Cache-Control: max-age=60')",
            S2,
        ),
        (cc, ex) => {
            let seen: Vec<String> = [("Cache-Control", cc), ("Expires", ex)]
                .iter()
                .filter_map(|(k, v)| v.map(|v| format!("{k}: {v}")))
                .collect();
            let uncacheable = cc.is_some_and(|v| {
                let v = v.to_ascii_lowercase();
                v.contains("no-store") || v.contains("no-cache") || v.contains("max-age=0")
            });
            let title = if uncacheable {
                "caching headers present (the answer is declared uncacheable)"
            } else {
                "caching headers present"
            };
            Check::ok(CACHING, title, seen.join(", "), S2)
        }
    }
}

pub const VALIDATORS: &str = "http.validators";

/// ETag or Last-Modified, and a conditional request answered 304.
pub fn validators(e: &HttpEvidence) -> Check {
    let a = match judged(e) {
        Ok(a) => a,
        Err(why) => return Check::skipped(VALIDATORS, why, S2),
    };
    let (etag, lm) = (a.header("etag"), a.header("last-modified"));
    if etag.is_none() && lm.is_none() {
        return Check::finding(
            VALIDATORS,
            Level::Medium,
            "no validators (ETag, Last-Modified)",
            format!(
                "GET {} answered with neither ETag nor Last-Modified: a client cannot revalidate \
                 and gets all {} bytes again",
                e.target,
                num(a.body_bytes)
            ),
            "send ETag or Last-Modified and answer If-None-Match / If-Modified-Since with 304 \
             (nginx and Apache do for static files; PHP pages must set them and compare)",
            S2,
        );
    }
    match e.conditional.as_ref() {
        None => Check::skipped(VALIDATORS, "no conditional request was sent", S2),
        Some(Err(why)) => Check::skipped(VALIDATORS, why.clone(), S2),
        Some(Ok((sent, c))) if c.status == 304 => Check::ok(
            VALIDATORS,
            "validators honoured",
            format!(
                "{sent} answered 304 with {} bytes (the full answer: {} bytes)",
                num(c.body_bytes),
                num(a.body_bytes)
            ),
            S2,
        ),
        Some(Ok((sent, c))) => Check::finding(
            VALIDATORS,
            Level::Medium,
            "conditional requests are not answered 304",
            format!(
                "{sent} (the validator of GET {}) answered {} with {} bytes instead of 304",
                e.target,
                c.status,
                num(c.body_bytes)
            ),
            "answer a request whose If-None-Match / If-Modified-Since matches with 304 Not \
             Modified and no body",
            S2,
        ),
    }
}

pub const SERVER_VERSIONS: &str = "http.server-versions";

/// A header value that carries a version number (`nginx/1.22.1`, `PHP/8.2.7`).
fn has_version(v: &str) -> bool {
    v.split(|c: char| c == '/' || c.is_whitespace())
        .skip(1)
        .any(|part| {
            let mut it = part.chars();
            it.next().is_some_and(|c| c.is_ascii_digit())
        })
}

/// Server and X-Powered-By headers leaking versions.
pub fn server_versions(e: &HttpEvidence) -> Check {
    let a = match e.plain.as_ref() {
        Ok(a) => a,
        Err(why) => return Check::skipped(SERVER_VERSIONS, why.clone(), LATER),
    };
    let leaks: Vec<String> = ["Server", "X-Powered-By"]
        .iter()
        .filter_map(|k| a.header(k).map(|v| (k, v)))
        .filter(|(_, v)| has_version(v))
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    if leaks.is_empty() {
        let shown = a
            .header("server")
            .map_or("no Server header".into(), |v| format!("Server: {v}"));
        return Check::ok(SERVER_VERSIONS, "no versions in the headers", shown, LATER);
    }
    Check::finding(
        SERVER_VERSIONS,
        Level::Low,
        "the headers name software versions",
        format!("GET {} answered with {}", e.target, leaks.join(", ")),
        "hide versions: nginx `server_tokens off;`, Apache `ServerTokens Prod` and \
         `ServerSignature Off`, PHP `expose_php = Off`",
        LATER,
    )
}

pub const HTTP2: &str = "http.http2";

/// HTTP/2 offered by ALPN over https.
pub fn http2(e: &HttpEvidence) -> Check {
    if !e.https {
        return Check::skipped(
            HTTP2,
            "the URL is http://: HTTP/2 is offered by ALPN over https",
            LATER,
        );
    }
    match e.alpn.as_ref() {
        Err(why) => Check::skipped(HTTP2, why.clone(), LATER),
        Ok(Some(p)) if p == "h2" => Check::ok(
            HTTP2,
            "HTTP/2 offered",
            "ALPN: the server picked h2 from h2, http/1.1",
            LATER,
        ),
        Ok(p) => Check::finding(
            HTTP2,
            Level::Low,
            "HTTP/2 not offered",
            format!(
                "offered h2, http/1.1 by ALPN, the server picked {}",
                p.as_deref().unwrap_or("none")
            ),
            "enable HTTP/2 on the TLS listener (nginx: `http2 on;`; Apache: mod_http2 and \
             `Protocols h2 http/1.1`): one connection carries many requests at once",
            LATER,
        ),
    }
}

pub const TLS_RESUMPTION: &str = "http.tls-resumption";

/// TLS sessions resumed on new connections (from the A/B's one-connection-per-request arm).
pub fn tls_resumption(e: &HttpEvidence) -> Check {
    if !e.https {
        return Check::skipped(TLS_RESUMPTION, "the URL is http://: no TLS", LATER);
    }
    let fresh = match e.ab_keep_alive.as_ref() {
        Ok([_, fresh]) => fresh,
        Err(why) => return Check::skipped(TLS_RESUMPTION, why.clone(), LATER),
    };
    let (full, resumed) = (fresh.handshakes_full, fresh.handshakes_resumed);
    if full + resumed < 2 {
        return Check::skipped(
            TLS_RESUMPTION,
            format!("only {} handshake(s) were made", full + resumed),
            LATER,
        );
    }
    let seen = format!(
        "of {} new connections, {} resumed a session and {} made a full handshake",
        num(full + resumed),
        num(resumed),
        num(full)
    );
    if resumed > 0 {
        Check::ok(TLS_RESUMPTION, "TLS sessions resumed", seen, LATER)
    } else {
        Check::finding(
            TLS_RESUMPTION,
            Level::Medium,
            "TLS sessions are not resumed",
            seen,
            "offer session resumption so a returning client skips the key exchange (nginx: \
             `ssl_session_cache shared:SSL:10m; ssl_session_tickets on;`; Apache: \
             `SSLSessionCache shmcb:...` and `SSLSessionTickets on`)",
            LATER,
        )
    }
}

#[cfg(test)]
mod tests;
