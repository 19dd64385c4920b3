//! The HTTP rules on recorded answers (headers as nginx, Apache and the embedded target send
//! them), no server.
use super::*;

fn answer(headers: &[(&str, &str)], body_bytes: u64) -> Answer {
    Answer {
        status: 200,
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        body_bytes,
        text: headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            .is_some_and(|(_, v)| is_text_type(v)),
        sniffed: None,
    }
}

/// nginx 1.22 serving S1's 22 KiB static page with its defaults: no gzip, no expires.
fn nginx_static() -> HttpEvidence {
    let a = answer(
        &[
            ("Server", "nginx/1.22.1"),
            ("Content-Type", "text/html"),
            ("Content-Length", "22528"),
            ("Last-Modified", "Mon, 23 Nov 2026 06:00:00 GMT"),
            ("Connection", "keep-alive"),
            ("ETag", "\"655f1a40-5800\""),
        ],
        22528,
    );
    HttpEvidence {
        target: "/static.html".into(),
        https: false,
        plain: Ok(a.clone()),
        encoded: Ok(a.clone()),
        gzip_estimate: Some(5_632),
        compression_cost: Err("the server does not compress this answer".into()),
        conditional: Some(Ok((
            "GET /static.html with If-None-Match: \"655f1a40-5800\"".into(),
            Answer {
                status: 304,
                body_bytes: 0,
                ..a
            },
        ))),
        idle: Ok(Idle {
            waited_s: 2.0,
            closed_after_s: None,
        }),
        ab_compression: Err("not measured (--no-ab)".into()),
        ab_keep_alive: Err("not measured (--no-ab)".into()),
        alpn: Err("not asked".into()),
    }
}

fn arm(responses: u64, connections: u64, bytes_in: u64) -> Arm {
    Arm {
        responses,
        duration_s: 1.0,
        bytes_in,
        connections,
        ..Arm::default()
    }
}

/// Every finding carries evidence and a change; every other check has none to make.
fn level(c: &Check) -> Level {
    assert!(!c.evidence.is_empty(), "{c:?}");
    assert_eq!(c.change.is_some(), c.level.is_finding(), "{c:?}");
    c.level
}

#[test]
fn keep_alive_kept_closed_at_once_or_soon() {
    let mut e = nginx_static();
    let c = keep_alive(&e);
    assert_eq!(level(&c), Level::Ok);
    assert!(c.evidence.contains("Connection: keep-alive"), "{c:?}");
    assert!(c.evidence.contains("still open after 2.0 s"), "{c:?}");
    // Apache with KeepAlive Off: Connection: close, and the socket closes at once.
    if let Ok(a) = e.plain.as_mut() {
        a.headers.retain(|(k, _)| k != "Connection");
        a.headers.push(("Connection".into(), "close".into()));
    }
    e.idle = Ok(Idle {
        waited_s: 2.0,
        closed_after_s: Some(0.001),
    });
    e.ab_keep_alive = Ok([arm(9_000, 4, 0), arm(3_000, 3_000, 0)]);
    let c = keep_alive(&e);
    assert_eq!(level(&c), Level::Medium);
    assert_eq!(c.title, "keep-alive is off");
    assert!(c.evidence.contains("Connection: close"), "{c:?}");
    assert!(
        c.evidence
            .contains("closed the idle connection after 0.00 s"),
        "{c:?}"
    );
    assert!(
        c.evidence.contains(
            "measured: 9,000 req/s on kept connections (4 connections for 9,000 answers), \
             3,000 req/s with a new connection per request (3,000 connections/s)"
        ),
        "{c:?}"
    );
    // A keep-alive that lasts 0.3 s idle.
    if let Ok(a) = e.plain.as_mut() {
        a.headers.retain(|(k, _)| k != "Connection");
    }
    e.idle = Ok(Idle {
        waited_s: 2.0,
        closed_after_s: Some(0.3),
    });
    let c = keep_alive(&e);
    assert_eq!(level(&c), Level::Medium);
    assert_eq!(c.title, "keep-alive times out within a second");
    // Closed after 1.5 s: offered, and the timeout is said.
    e.idle = Ok(Idle {
        waited_s: 2.0,
        closed_after_s: Some(1.5),
    });
    let c = keep_alive(&e);
    assert_eq!(level(&c), Level::Ok);
    assert!(c.evidence.contains("closed after 1.5 s"), "{c:?}");
    e.idle = Err("127.0.0.1:1: connect: refused".into());
    assert_eq!(keep_alive(&e).level, Level::Skipped);
}

#[test]
fn uncompressed_text_is_a_finding_with_the_saving() {
    let mut e = nginx_static();
    let c = compression(&e);
    assert_eq!(level(&c), Level::Medium);
    assert!(
        c.evidence.contains(
            "answered 22,528 bytes of text/html without Content-Encoding; gzip -6 makes them \
             5,632 bytes (−75%, 16,896 bytes saved per answer)"
        ),
        "{c:?}"
    );
    // The A/B's figure: the server ignored Accept-Encoding, so both arms read the same.
    e.ab_compression = Ok([arm(1_000, 4, 22_800_000), arm(1_000, 4, 22_800_000)]);
    let c = compression(&e);
    assert!(
        c.evidence
            .contains("measured: 22.8 MB/s without Accept-Encoding and 22.8 MB/s with it"),
        "{c:?}"
    );
    assert!(
        c.evidence
            .contains("at the 1,000 req/s measured, compression would save 16.9 MB/s"),
        "{c:?}"
    );
}

#[test]
fn compressed_small_or_binary_answers_pass() {
    let mut e = nginx_static();
    if let Ok(x) = e.encoded.as_mut() {
        x.headers.push(("Content-Encoding".into(), "gzip".into()));
        x.body_bytes = 5_700;
    }
    let c = compression(&e);
    assert_eq!(level(&c), Level::Ok);
    assert!(
        c.evidence
            .contains("Content-Encoding: gzip, 22,528 → 5,700 bytes (−75%)"),
        "{c:?}"
    );
    assert_eq!(c.title, "text compressed (gzip)", "not measured: no figure");
    // Measured: both figures in the title, the medians in the evidence.
    e.compression_cost = Ok(CompressionCost {
        pairs: 10,
        first_byte_ms: [0.21, 0.61],
        total_ms: [0.30, 0.66],
    });
    let c = compression(&e);
    assert_eq!(level(&c), Level::Ok);
    assert_eq!(
        c.title,
        "gzip saves 75% of bytes and costs +0.40 ms TTFB p50"
    );
    assert!(
        c.evidence.contains(
            "time to first byte p50 0.21 ms without Accept-Encoding and 0.61 ms with it \
             (+0.40 ms), whole answer p50 0.30 → 0.66 ms, over 10 GETs of each"
        ),
        "{c:?}"
    );
    // A level that costs more than the answer itself: a finding, lower the level.
    e.compression_cost = Ok(CompressionCost {
        pairs: 10,
        first_byte_ms: [1.0, 9.5],
        total_ms: [1.2, 9.6],
    });
    let c = compression(&e);
    assert_eq!(level(&c), Level::Low);
    assert!(c.title.contains("costs +8.50 ms TTFB p50"), "{c:?}");
    assert!(
        c.change.as_deref().unwrap().contains("gzip_comp_level"),
        "{c:?}"
    );
    // +2.5 ms on an answer that takes 40 ms without: not costly.
    e.compression_cost = Ok(CompressionCost {
        pairs: 10,
        first_byte_ms: [40.0, 42.5],
        total_ms: [41.0, 43.0],
    });
    assert_eq!(level(&compression(&e)), Level::Ok);
    let mut e = nginx_static();
    if let Ok(a) = e.plain.as_mut() {
        a.body_bytes = 100;
    }
    assert_eq!(compression(&e).title, "too small to matter");
    let mut e = nginx_static();
    e.plain = Ok(answer(&[("Content-Type", "image/jpeg")], 2_000_000));
    let c = compression(&e);
    assert_eq!(level(&c), Level::Ok);
    assert!(c.evidence.contains("image/jpeg"), "{c:?}");
    // A 404 is not judged.
    let mut e = nginx_static();
    if let Ok(a) = e.plain.as_mut() {
        a.status = 404;
    }
    let c = compression(&e);
    assert_eq!(c.level, Level::Skipped);
    assert!(c.evidence.contains("answered 404"), "{c:?}");
}

#[test]
fn a_body_without_content_type_is_sniffed_never_taken_for_text() {
    assert_eq!(sniff(b"<!doctype html><p>hello</p>"), (true, "UTF-8 text"));
    assert!(sniff("caf\u{e9} ".repeat(300).as_bytes()).0);
    // Cut inside a character at the sniffed length: still text.
    let cut = "é".repeat(600);
    assert!(sniff(&cut.as_bytes()[..1023]).0);
    // Known signatures, control bytes and other bytes are not text.
    assert_eq!(sniff(b"\x1f\x8b\x08\x00abc"), (false, "a gzip stream"));
    assert_eq!(sniff(b"\x89PNG\r\n\x1a\n...."), (false, "a PNG image"));
    assert_eq!(sniff(b"%PDF-1.7 text-like"), (false, "a PDF document"));
    assert_eq!(
        sniff(b"\x01\x02\x03 ascii after control bytes"),
        (false, "binary (control bytes)")
    );
    assert_eq!(sniff(&[0x80; 2000]), (false, "unknown (not UTF-8)"));
    assert_eq!(sniff(b""), (false, "empty"));
}

#[test]
fn compression_says_what_a_body_without_content_type_is() {
    // Text by its bytes: the finding names the missing type and asks for it first, as
    // servers pick what to compress by the type.
    let mut e = nginx_static();
    for a in [e.plain.as_mut(), e.encoded.as_mut()].into_iter().flatten() {
        a.headers.retain(|(k, _)| k != "Content-Type");
        a.text = true;
        a.sniffed = Some("UTF-8 text".into());
    }
    let c = compression(&e);
    assert_eq!(level(&c), Level::Medium);
    assert!(
        c.evidence
            .contains("no Content-Type (by its bytes: UTF-8 text)"),
        "{c:?}"
    );
    assert!(
        c.change
            .as_deref()
            .unwrap_or("")
            .starts_with("send a Content-Type"),
        "{c:?}"
    );
    // Binary by its bytes: nothing to compress, and the evidence says why.
    let mut e = nginx_static();
    e.plain = Ok(Answer {
        sniffed: Some("a gzip stream".into()),
        ..answer(&[], 30_000)
    });
    let c = compression(&e);
    assert_eq!(level(&c), Level::Ok);
    assert_eq!(c.title, "not text");
    assert!(
        c.evidence
            .contains("no Content-Type (by its bytes: a gzip stream)"),
        "{c:?}"
    );
}

#[test]
fn caching_headers_absent_present_or_uncacheable() {
    let e = nginx_static();
    let c = caching(&e);
    assert_eq!(level(&c), Level::Medium);
    assert!(
        c.evidence.contains("neither Cache-Control nor Expires"),
        "{c:?}"
    );
    let mut e = nginx_static();
    if let Ok(a) = e.plain.as_mut() {
        a.headers
            .push(("Cache-Control".into(), "max-age=3600".into()));
        a.headers
            .push(("Expires".into(), "Mon, 23 Nov 2026 07:00:00 GMT".into()));
    }
    let c = caching(&e);
    assert_eq!(level(&c), Level::Ok);
    assert_eq!(
        c.evidence,
        "Cache-Control: max-age=3600, Expires: Mon, 23 Nov 2026 07:00:00 GMT"
    );
    let mut e = nginx_static();
    if let Ok(a) = e.plain.as_mut() {
        a.headers.push(("Cache-Control".into(), "no-store".into()));
    }
    let c = caching(&e);
    assert_eq!(level(&c), Level::Ok);
    assert!(c.title.contains("uncacheable"), "{c:?}");
}

#[test]
fn validators_missing_honoured_or_ignored() {
    let e = nginx_static();
    let c = validators(&e);
    assert_eq!(level(&c), Level::Ok);
    assert!(
        c.evidence.contains(
            "If-None-Match: \"655f1a40-5800\" answered 304 with 0 bytes (the full answer: \
             22,528 bytes)"
        ),
        "{c:?}"
    );
    // A PHP page that sets Last-Modified but never compares it.
    let mut e = nginx_static();
    e.conditional = Some(Ok((
        "GET /page.php with If-Modified-Since: Mon, 23 Nov 2026 06:00:00 GMT".into(),
        answer(&[], 22528),
    )));
    let c = validators(&e);
    assert_eq!(level(&c), Level::Medium);
    assert!(
        c.evidence
            .contains("answered 200 with 22,528 bytes instead of 304"),
        "{c:?}"
    );
    // The embedded target: neither ETag nor Last-Modified.
    let mut e = nginx_static();
    e.plain = Ok(answer(&[("Server", "overload-target")], 100));
    e.conditional = None;
    let c = validators(&e);
    assert_eq!(level(&c), Level::Medium);
    assert!(
        c.evidence.contains("neither ETag nor Last-Modified"),
        "{c:?}"
    );
}

#[test]
fn versions_in_server_and_x_powered_by() {
    let mut e = nginx_static();
    if let Ok(a) = e.plain.as_mut() {
        a.headers.push(("X-Powered-By".into(), "PHP/8.2.7".into()));
    }
    let c = server_versions(&e);
    assert_eq!(level(&c), Level::Low);
    assert!(
        c.evidence
            .contains("Server: nginx/1.22.1, X-Powered-By: PHP/8.2.7"),
        "{c:?}"
    );
    for quiet in ["nginx", "Apache", "overload-target"] {
        e.plain = Ok(answer(&[("Server", quiet)], 1));
        assert_eq!(level(&server_versions(&e)), Level::Ok, "{quiet}");
    }
    e.plain = Ok(answer(&[("Server", "Apache/2.4.57 (Debian)")], 1));
    assert_eq!(server_versions(&e).level, Level::Low);
}

#[test]
fn http2_over_https_only() {
    let mut e = nginx_static();
    let c = http2(&e);
    assert_eq!(c.level, Level::Skipped);
    assert!(c.evidence.contains("http://"), "{c:?}");
    e.https = true;
    e.alpn = Ok(Some("h2".into()));
    assert_eq!(level(&http2(&e)), Level::Ok);
    e.alpn = Ok(Some("http/1.1".into()));
    let c = http2(&e);
    assert_eq!(level(&c), Level::Low);
    assert!(c.evidence.contains("the server picked http/1.1"), "{c:?}");
    e.alpn = Ok(None);
    assert!(http2(&e).evidence.contains("picked none"));
}

#[test]
fn tls_resumption_from_the_fresh_connections_arm() {
    let mut e = nginx_static();
    assert_eq!(tls_resumption(&e).level, Level::Skipped);
    e.https = true;
    assert_eq!(tls_resumption(&e).level, Level::Skipped);
    let mut fresh = arm(500, 500, 0);
    fresh.handshakes_full = 500;
    e.ab_keep_alive = Ok([arm(2_000, 4, 0), fresh]);
    let c = tls_resumption(&e);
    assert_eq!(level(&c), Level::Medium);
    assert!(
        c.evidence
            .contains("of 500 new connections, 0 resumed a session and 500 made a full handshake"),
        "{c:?}"
    );
    fresh.handshakes_full = 1;
    fresh.handshakes_resumed = 499;
    e.ab_keep_alive = Ok([arm(2_000, 4, 0), fresh]);
    assert_eq!(level(&tls_resumption(&e)), Level::Ok);
}

#[test]
fn a_failed_probe_skips_with_its_reason() {
    let mut e = nginx_static();
    e.plain = Err("127.0.0.1:1: connect: Connection refused".into());
    for c in checks(&e) {
        if c.rule == HTTP2 || c.rule == TLS_RESUMPTION {
            continue;
        }
        assert_eq!(c.level, Level::Skipped, "{c:?}");
        assert!(c.evidence.contains("refused"), "{c:?}");
    }
}
