//! The workloads of the studies, one route each, and the few response heads they need.
//! Bodies come from static buffers: nothing is allocated per request.
use std::time::Duration;

use super::faults::Fault;
use super::request::parse_decimal;

/// `/`: "OK", padding, a newline: exactly 100 bytes (a small dynamic page).
pub(crate) static ROOT_BODY: &[u8; 100] = b"OK overload target: small body, padded to one hundred bytes so sizes are round.....................\n";
/// `/sleep` and `/cpu` answer like S5's wait1.php: "OK".
pub(crate) static OK_BODY: &[u8] = b"OK\n";
/// Source of every generated body (`/bytes/N`, faults): written in slices, never copied.
pub(crate) static FILL: [u8; 64 * 1024] = [b'x'; 64 * 1024];

/// Largest `/bytes/N`.
pub(crate) const MAX_BYTES: u64 = 1 << 30;
/// Longest `/sleep` (ms) and `/cpu` (µs) honoured; larger values are clamped.
pub(crate) const MAX_SLEEP_MS: u64 = 3_600_000;
pub(crate) const MAX_CPU_US: u64 = 60_000_000;
/// `/sleep` without `ms` sleeps 1 s, as S5's wait1.php; `/cpu` without `us` spins 2 ms, the
/// cost of S1's CPU-bound page.
const DEFAULT_SLEEP_MS: u64 = 1_000;
const DEFAULT_CPU_US: u64 = 2_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    Root,
    Bytes(u64),
    Sleep {
        ms: u64,
        jitter: u64,
    },
    Cpu {
        us: u64,
    },
    Status(u16),
    /// `/pool-status`: the `--workers` pool in PHP-FPM's status JSON (see workers.rs).
    PoolStatus,
    /// `/arrivals`: requests arrived per second (arrivals.rs).
    Arrivals,
    /// `/stats`: the target's own counts, by protocol (`TargetStats` as JSON).
    Stats,
    Fault(Fault),
    NotFound,
    /// A known route with an unusable parameter: 400, connection kept.
    BadParam,
    /// `/app/*`: the login application (app.rs).
    App(super::app::Page),
}

impl Route {
    /// Maps a request target (origin form, or absolute form `http://host/path`) to a route.
    pub(crate) fn parse(target: &str) -> Route {
        let target = strip_authority(target);
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        if path == "/" {
            return Route::Root;
        }
        if let Some(n) = path.strip_prefix("/bytes/") {
            return match parse_decimal(n.as_bytes()) {
                Some(n) if n <= MAX_BYTES => Route::Bytes(n),
                _ => Route::BadParam,
            };
        }
        if let Some(code) = path.strip_prefix("/status/") {
            return match parse_decimal(code.as_bytes()) {
                Some(c @ 200..=599) => Route::Status(c as u16),
                _ => Route::BadParam,
            };
        }
        if let Some(page) = super::app::Page::parse(path) {
            return Route::App(page);
        }
        if let Some(mode) = path.strip_prefix("/fault/") {
            return mode.parse().map_or(Route::NotFound, Route::Fault);
        }
        match path {
            "/pool-status" => Route::PoolStatus,
            "/arrivals" => Route::Arrivals,
            "/stats" => Route::Stats,
            "/sleep" => {
                let (Some(ms), Some(jitter)) = (
                    param(query, "ms", DEFAULT_SLEEP_MS),
                    param(query, "jitter", 0),
                ) else {
                    return Route::BadParam;
                };
                Route::Sleep {
                    ms: ms.min(MAX_SLEEP_MS),
                    jitter: jitter.min(MAX_SLEEP_MS),
                }
            }
            "/cpu" => match param(query, "us", DEFAULT_CPU_US) {
                Some(us) => Route::Cpu {
                    us: us.min(MAX_CPU_US),
                },
                None => Route::BadParam,
            },
            _ => Route::NotFound,
        }
    }
}

fn strip_authority(target: &str) -> &str {
    let rest = target
        .strip_prefix("http://")
        .or_else(|| target.strip_prefix("https://"));
    match rest {
        Some(r) => r.find('/').map_or("/", |i| &r[i..]),
        None => target,
    }
}

/// The value of `key` in a query string; `default` when absent, `None` when not a number.
fn param(query: &str, key: &str, default: u64) -> Option<u64> {
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if k == key {
            return parse_decimal(v.as_bytes());
        }
    }
    Some(default)
}

/// `ms ± jitter`, uniform, never negative.
pub(crate) fn sleep_time(ms: u64, jitter: u64) -> Duration {
    let lo = ms.saturating_sub(jitter);
    let hi = ms.saturating_add(jitter);
    let us = fastrand::u64(lo * 1000..=hi * 1000);
    Duration::from_micros(us)
}

/// Burns the calling thread for `us` microseconds (the CPU-bound page of S1).
pub(crate) fn spin(us: u64) {
    let end = std::time::Instant::now() + Duration::from_micros(us);
    let mut x = 0u64;
    while std::time::Instant::now() < end {
        // Some real work between clock reads, kept alive by black_box.
        for i in 0..64 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
    }
    std::hint::black_box(x);
}

/// How the response tells the client about the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConnHeader {
    /// HTTP/1.1 keep-alive is the default: say nothing.
    None,
    /// A kept-alive HTTP/1.0 connection must be told.
    KeepAlive,
    Close,
}

/// Appends a status line and headers (no body) to `out`. Plain byte pushes: no formatting
/// machinery on the hot path.
pub(crate) fn write_head(
    out: &mut Vec<u8>,
    status: u16,
    content_length: Option<u64>,
    conn: ConnHeader,
) {
    write_head_with(out, status, content_length, conn, b"");
}

/// `write_head` with `extra` header lines (each ending in CRLF): the `Alt-Svc` of a target
/// that also serves HTTP/3.
pub(crate) fn write_head_with(
    out: &mut Vec<u8>,
    status: u16,
    content_length: Option<u64>,
    conn: ConnHeader,
    extra: &[u8],
) {
    out.extend_from_slice(b"HTTP/1.1 ");
    push_decimal(out, u64::from(status));
    out.push(b' ');
    out.extend_from_slice(reason(status).as_bytes());
    out.extend_from_slice(b"\r\nServer: overload-target\r\n");
    out.extend_from_slice(extra);
    if let Some(n) = content_length {
        out.extend_from_slice(b"Content-Length: ");
        push_decimal(out, n);
        out.extend_from_slice(b"\r\n");
    }
    match conn {
        ConnHeader::None => {}
        ConnHeader::KeepAlive => out.extend_from_slice(b"Connection: keep-alive\r\n"),
        ConnHeader::Close => out.extend_from_slice(b"Connection: close\r\n"),
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends a complete small response whose body is `<code> <reason>\n` (e.g. for 404, 503).
pub(crate) fn write_status_response(
    out: &mut Vec<u8>,
    status: u16,
    conn: ConnHeader,
    is_head: bool,
) {
    write_status_response_with(out, status, conn, is_head, b"");
}

/// `write_status_response` with `extra` header lines (see `write_head_with`).
pub(crate) fn write_status_response_with(
    out: &mut Vec<u8>,
    status: u16,
    conn: ConnHeader,
    is_head: bool,
    extra: &[u8],
) {
    // 204 and 304 never carry a body, so they get neither body nor length.
    if status == 204 || status == 304 {
        write_head_with(out, status, None, conn, extra);
        return;
    }
    let reason = reason(status);
    let len = 3 + 1 + reason.len() as u64 + 1;
    write_head_with(out, status, Some(len), conn, extra);
    if !is_head {
        push_decimal(out, u64::from(status));
        out.push(b' ');
        out.extend_from_slice(reason.as_bytes());
        out.push(b'\n');
    }
}

/// The pool's name on its status page (what the findings name).
pub(crate) const POOL_NAME: &str = "overload-target";

/// The body of `/pool-status`: the keys PHP-FPM's `?json` status uses, so one sampler
/// (observe/fpm.rs, `--fpm-status`) reads both.
pub(crate) fn pool_status_json(s: &super::workers::PoolStatus) -> String {
    format!(
        "{{\"pool\":\"{POOL_NAME}\",\"process manager\":\"static\",\"active processes\":{},\
         \"idle processes\":{},\"total processes\":{},\
         \"listen queue\":{},\"max listen queue\":{},\"max children reached\":{}}}\n",
        s.busy, s.idle, s.total, s.waiting, s.max_waiting, s.waited
    )
}

/// Appends the decimal form of `n` (no allocation).
pub(crate) fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(Route::parse("/"), Route::Root);
        assert_eq!(Route::parse("/?a=b"), Route::Root);
        assert_eq!(Route::parse("http://127.0.0.1:8080/"), Route::Root);
        assert_eq!(Route::parse("http://127.0.0.1:8080"), Route::Root);
        assert_eq!(Route::parse("/bytes/22528"), Route::Bytes(22528));
        assert_eq!(Route::parse("/bytes/0"), Route::Bytes(0));
        assert_eq!(Route::parse("/bytes/-1"), Route::BadParam);
        assert_eq!(Route::parse("/bytes/1073741825"), Route::BadParam);
        assert_eq!(
            Route::parse("/sleep?ms=1000&jitter=250"),
            Route::Sleep {
                ms: 1000,
                jitter: 250
            }
        );
        assert_eq!(
            Route::parse("/sleep"),
            Route::Sleep {
                ms: 1000,
                jitter: 0
            }
        );
        assert_eq!(Route::parse("/sleep?ms=x"), Route::BadParam);
        assert_eq!(Route::parse("/cpu?us=500"), Route::Cpu { us: 500 });
        assert_eq!(
            Route::parse("/cpu?us=999999999999"),
            Route::Cpu { us: MAX_CPU_US }
        );
        assert_eq!(Route::parse("/status/503"), Route::Status(503));
        assert_eq!(Route::parse("/status/99"), Route::BadParam);
        assert_eq!(Route::parse("/status/600"), Route::BadParam);
        assert_eq!(Route::parse("/fault/reset"), Route::Fault(Fault::Reset));
        assert_eq!(Route::parse("/fault/nope"), Route::NotFound);
        assert_eq!(Route::parse("/nope"), Route::NotFound);
        assert_eq!(Route::parse("/pool-status?json"), Route::PoolStatus);
        assert_eq!(Route::parse("*"), Route::NotFound);
        assert_eq!(
            Route::parse("/app/login"),
            Route::App(super::super::app::Page::Login)
        );
        assert_eq!(Route::parse("/app/nope"), Route::NotFound);
    }

    /// FPM's keys, as observe/fpm.rs reads them.
    #[test]
    fn pool_status_is_fpm_json() {
        let s = super::super::workers::PoolStatus {
            busy: 8,
            idle: 0,
            total: 8,
            waiting: 57,
            max_waiting: 60,
            waited: 1234,
        };
        let v: serde_json::Value = serde_json::from_str(&pool_status_json(&s)).unwrap();
        assert_eq!(v["pool"], POOL_NAME);
        assert_eq!(v["active processes"], 8);
        assert_eq!(v["idle processes"], 0);
        assert_eq!(v["total processes"], 8);
        assert_eq!(v["listen queue"], 57);
        assert_eq!(v["max listen queue"], 60);
        assert_eq!(v["max children reached"], 1234);
    }

    #[test]
    fn sleep_time_stays_in_range() {
        for _ in 0..1000 {
            let d = sleep_time(100, 20);
            assert!(d >= Duration::from_millis(80) && d <= Duration::from_millis(120));
        }
        // Jitter larger than the mean never goes negative.
        assert!(sleep_time(5, 50) <= Duration::from_millis(55));
        assert_eq!(sleep_time(0, 0), Duration::ZERO);
    }

    #[test]
    fn heads() {
        let mut out = Vec::new();
        write_head(&mut out, 200, Some(100), ConnHeader::None);
        assert_eq!(
            out,
            b"HTTP/1.1 200 OK\r\nServer: overload-target\r\nContent-Length: 100\r\n\r\n"
        );
        out.clear();
        write_status_response(&mut out, 503, ConnHeader::Close, false);
        let text = String::from_utf8_lossy(&out);
        assert!(text.starts_with("HTTP/1.1 503 Service Unavailable\r\n"));
        assert!(text.contains("Connection: close\r\n"));
        assert!(text.ends_with("\r\n\r\n503 Service Unavailable\n"));
        assert!(text.contains("Content-Length: 24\r\n"));
        out.clear();
        push_decimal(&mut out, 0);
        push_decimal(&mut out, u64::MAX);
        assert_eq!(out, b"018446744073709551615");
    }

    #[test]
    fn root_body_is_100_bytes() {
        assert_eq!(ROOT_BODY.len(), 100);
        assert!(ROOT_BODY.starts_with(b"OK"));
    }
}
