//! HTTP/3 (`--http 3`) end to end: bad input as one-line usage errors, and a server that
//! answers only TCP (no QUIC on its UDP port) as counted `quic-handshake` errors with the
//! advice to use HTTP/2, within the run's bound. (Runs against a server that speaks HTTP/3
//! need the embedded target's `--http3`.)
use crate::common::{bin, free_port, output_within, run_measured, Target};
use std::time::Duration;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        http3_on_an_http_url_or_with_tls12_is_a_one_line_usage_error,
        a_server_that_answers_only_tcp_is_a_counted_quic_handshake_error_with_advice
    ]
}

fn http3_on_an_http_url_or_with_tls12_is_a_one_line_usage_error() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/");
    for (args, says) in [
        (
            vec![&url[..], "--http", "3"],
            "--http 3 needs https:// URLs",
        ),
        (
            vec![
                "https://127.0.0.1:1/",
                "--http",
                "3",
                "--tls-version",
                "1.2",
            ],
            "QUIC carries TLS 1.3 only",
        ),
        (
            vec!["https://127.0.0.1:1/", "--0rtt", "on"],
            "--0rtt on is for --http 3",
        ),
        (
            vec!["https://127.0.0.1:1/", "--http", "3", "--no-keep-alive"],
            "--http 3 and --no-keep-alive contradict",
        ),
    ] {
        let out = output_within(
            bin().arg("run").args(&args).args(["-n", "1"]),
            Duration::from_secs(20),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

fn a_server_that_answers_only_tcp_is_a_counted_quic_handshake_error_with_advice() {
    // The embedded target's TLS listens on TCP only: its UDP port answers ICMP unreachable.
    let t = Target::start(&["--tls", "--threads", "1"]);
    let port = t.url.rsplit(':').next().unwrap().to_string();
    let m = run_measured(
        None,
        &[
            "run",
            &t.url,
            "--http",
            "3",
            "--insecure",
            "-n",
            "20",
            "-c",
            "2",
            "--threads",
            "1",
            "--connect-timeout",
            "5s",
        ],
        true,
        Duration::from_secs(60),
    );
    assert!(!m.stderr.contains("panicked"), "{}", m.stderr);
    assert_eq!(m.errors("quic-handshake"), 20, "{}", m.v);
    assert_eq!(m.v["protocol"]["version"], "3", "{}", m.v);
    let notes = m.v["warnings"].to_string();
    assert!(
        notes.contains(&format!("does not answer QUIC on UDP port {port}"))
            && notes.contains("try --http 2"),
        "{notes}"
    );
    // Refused at once (ICMP), not after the connect timeout.
    assert!(m.elapsed < Duration::from_secs(4), "{:?}", m.elapsed);
}
