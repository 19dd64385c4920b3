//! The embedded target over HTTP/3 (`target --tls --http3`): routes, counts by protocol, the
//! Alt-Svc of its TCP side, and the QUIC faults with the target's memory held flat.
use crate::common;
use crate::common::h3::{rss_kib, tally, H3Target, Outcome};
use crate::common::{bin, output_within};
use std::time::Duration;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        h3_serves_the_routes_and_counts_them_as_http3,
        tcp_side_announces_h3_with_alt_svc,
        http3_needs_tls_one_line_exit_2,
        quic_faults_do_what_they_say_and_memory_stays_flat,
        quic_stall_delays_the_handshake
    ]
}

fn h3_serves_the_routes_and_counts_them_as_http3() {
    let t = H3Target::start(&[]);
    let c = t.client();
    assert_eq!(
        c.get("/"),
        Outcome::Answer {
            status: 200,
            bytes: 100
        }
    );
    assert_eq!(
        c.get("/bytes/200000"),
        Outcome::Answer {
            status: 200,
            bytes: 200_000
        }
    );
    assert!(matches!(
        c.get("/status/503"),
        Outcome::Answer { status: 503, .. }
    ));
    assert!(matches!(
        c.get("/nope"),
        Outcome::Answer { status: 404, .. }
    ));
    assert!(matches!(
        c.get("/sleep?ms=50"),
        Outcome::Answer {
            status: 200,
            bytes: 3
        }
    ));
    // Many requests at once on one connection.
    let (_, out) = c.load(&["/", "/bytes/1000"], 40, 10);
    assert_eq!(tally(&out).get("200"), Some(&40), "{:?}", tally(&out));
    let stats = match c.get("/stats") {
        Outcome::Answer { status: 200, .. } => t.stats(),
        other => panic!("/stats: {other:?}"),
    };
    // 5 single requests, 40 in the load, then the /stats asked over TCP below (not itself).
    assert_eq!(stats["by_protocol"]["HTTP/3"], 46, "{stats}");
    assert_eq!(stats["by_protocol"]["HTTP/1.1"], 0, "{stats}");
}

fn tcp_side_announces_h3_with_alt_svc() {
    let t = H3Target::start(&[]);
    let (head, _) = t.tcp_get("/");
    let want = format!("Alt-Svc: h3=\":{}\"; ma=86400", t.addr.port());
    assert!(head.contains(&want), "{head}");
    // Without --http3, no Alt-Svc.
    let dir = common::scratch();
    let ca = dir.path().join("ca.pem");
    let plain = common::Target::start(&["--tls", "--ca-out", ca.to_str().unwrap()]);
    let out = output_within(
        bin()
            .args(["run", &plain.url, "-n", "3", "-c", "1", "--cacert"])
            .arg(&ca),
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn http3_needs_tls_one_line_exit_2() {
    let out = output_within(
        bin().args(["target", "--listen", "127.0.0.1:0", "--http3"]),
        Duration::from_secs(20),
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--http3") && err.contains("--tls"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// Each QUIC fault for a few seconds of load: what the client meets, and the target's
/// resident memory after the load against before it (flat: no per-connection leak).
fn quic_faults_do_what_they_say_and_memory_stays_flat() {
    // (fault, kinds the client must see, kinds it may see)
    let cases: [(&str, &[&str], &[&str]); 5] = [
        ("quic-close", &["internal-error"], &[]),
        ("quic-reset", &["stateless-reset"], &["200", "timeout"]),
        ("h3-goaway", &["200"], &["goaway", "closed"]),
        ("quic-streams-1", &["200"], &[]),
        ("hang", &["timeout"], &[]),
    ];
    for (fault, must, may) in cases {
        let t = H3Target::start(&["--fault", fault, "--threads", "2"]);
        let c = t.client().with_timeout(Duration::from_secs(1));
        let n = if fault == "hang" { 8 } else { 300 };
        let conc = if fault == "hang" { 8 } else { 10 };
        // A warm-up round brings the allocator and the runtime to their working size.
        let _ = c.load(&["/"], n, conc);
        let before = rss_kib(t.pid());
        let mut seen = std::collections::BTreeMap::new();
        for _ in 0..3 {
            let (_, out) = c.load(&["/"], n, conc);
            for (k, v) in tally(&out) {
                *seen.entry(k).or_insert(0) += v;
            }
        }
        let after = rss_kib(t.pid());
        for k in must {
            assert!(seen.contains_key(*k), "{fault}: no {k} in {seen:?}");
        }
        for k in seen.keys() {
            assert!(
                must.contains(&k.as_str()) || may.contains(&k.as_str()),
                "{fault}: unexpected {k} in {seen:?}"
            );
        }
        // Generous: the rounds after warm-up may not grow the target by 16 MiB.
        assert!(
            after < before + 16 * 1024,
            "{fault}: RSS grew from {before} KiB to {after} KiB"
        );
    }
}

fn quic_stall_delays_the_handshake() {
    let t = H3Target::start(&["--fault", "quic-stall"]);
    let c = t.client();
    let (took, out) = c.load(&["/"], 1, 1);
    // Answered once the stall (3 s) is over, or the handshake timed out (5 s) on the way.
    assert!(took >= Duration::from_millis(2900), "{took:?} {out:?}");
    assert!(
        matches!(out[0], Outcome::Answer { status: 200, .. })
            || out[0] == Outcome::Failed("handshake timeout".into()),
        "{out:?}"
    );
}
