//! The engine's HTTP/3 client (`run --http 3`) end to end against the embedded target's
//! `--tls --http3`: open and closed loop with every request answered and counted by the
//! target as HTTP/3, handshakes with and without resumption, the server's stream limit, its
//! QUIC faults as counted errors; bad input as one-line usage errors, and a server that
//! answers only TCP as counted `quic-handshake` errors with the advice to use HTTP/2.
mod common;
use common::h3::H3Target;
use common::{bin, free_port, output_within, run_json, run_measured, Target};
use std::time::Duration;

fn u(v: &serde_json::Value, path: &str) -> u64 {
    common::f(v, path) as u64
}

fn run3(t: &H3Target, path: &str, extra: &[&str]) -> serde_json::Value {
    let url = format!("{}{path}", t.url);
    let ca = t.ca.to_str().unwrap().to_string();
    let mut args = vec!["run", &url, "--http", "3", "--cacert", &ca];
    args.extend_from_slice(extra);
    run_json(&args).1
}

#[test]
fn closed_and_open_loop_answer_everything_and_the_target_counts_http3() {
    let t = H3Target::start(&["--threads", "2"]);
    let closed = run3(
        &t,
        "/",
        &["-n", "400", "-c", "20", "--streams", "10", "--threads", "2"],
    );
    assert_eq!(u(&closed, "responses"), 400, "{closed}");
    assert_eq!(u(&closed, "error_count"), 0, "{closed}");
    assert_eq!(u(&closed, "protocols.3"), 400, "{closed}");
    assert_eq!(closed["protocol"]["version"], "3", "{closed}");
    // 20 users on 10 streams each: 2 connections (one per thread).
    assert_eq!(u(&closed, "connections_opened"), 2, "{closed}");
    assert!(u(&closed, "quic.packets_sent") > 0, "{closed}");
    let open = run3(&t, "/", &["--rate", "200", "-d", "2s", "--streams", "10"]);
    assert_eq!(u(&open, "error_count"), 0, "{open}");
    assert_eq!(u(&open, "responses"), u(&open, "requests"), "{open}");
    let stats = t.stats();
    assert_eq!(
        stats["by_protocol"]["HTTP/3"].as_u64(),
        Some(400 + u(&open, "responses")),
        "{stats}"
    );
}

#[test]
fn resumption_off_is_one_full_handshake_per_connection() {
    let t = H3Target::start(&["--threads", "1"]);
    let base = [
        "-n",
        "100",
        "-c",
        "2",
        "--threads",
        "1",
        "--calls-per-connection",
        "10",
    ];
    let off = run3(&t, "/", &[&base[..], &["--tls-resumption", "off"]].concat());
    assert_eq!(u(&off, "responses"), 100, "{off}");
    assert_eq!(u(&off, "connections_opened"), 10, "{off}");
    assert_eq!(u(&off, "tls.handshakes_full"), 10, "{off}");
    assert_eq!(u(&off, "tls.handshakes_resumed"), 0, "{off}");
    let on = run3(&t, "/", &base);
    assert_eq!(u(&on, "tls.handshakes_full"), 1, "{on}");
    assert_eq!(u(&on, "tls.handshakes_resumed"), 9, "{on}");
}

#[test]
fn the_servers_stream_limit_caps_streams_and_says_so() {
    let t = H3Target::start(&["--fault", "quic-streams-1"]);
    let v = run3(
        &t,
        "/",
        &["-n", "60", "-c", "10", "--streams", "10", "--threads", "1"],
    );
    assert_eq!(u(&v, "responses"), 60, "{v}");
    assert_eq!(u(&v, "error_count"), 0, "{v}");
    let notes = v["warnings"].to_string();
    assert!(notes.contains("--streams 10 was capped"), "{notes}");
}

#[test]
fn quic_faults_are_counted_errors_within_the_runs_bound() {
    let t = H3Target::start(&[]);
    // Closed with H3_INTERNAL_ERROR at the first request: quic-protocol, with the code.
    let m = run_measured(
        None,
        &[
            "run",
            &format!("{}/fault/quic-close", t.url),
            "--http",
            "3",
            "--cacert",
            t.ca.to_str().unwrap(),
            "-n",
            "10",
            "-c",
            "2",
        ],
        true,
        Duration::from_secs(60),
    );
    assert!(!m.stderr.contains("panicked"), "{}", m.stderr);
    assert_eq!(m.errors("quic-protocol"), 10, "{}", m.v);
    assert!(
        m.v["warnings"].to_string().contains("H3_INTERNAL_ERROR"),
        "{}",
        m.v
    );
    // GOAWAY after each answer: every request is answered or, retried 3 times, h3-goaway.
    let v = run3(
        &t,
        "/fault/h3-goaway",
        &["-n", "20", "-c", "2", "--streams", "1"],
    );
    assert_eq!(
        u(&v, "responses") + v["errors"]["h3-goaway"].as_u64().unwrap_or(0),
        20,
        "{v}"
    );
    assert!(u(&v, "responses") > 0, "{v}");
}

#[test]
fn the_targets_goaway_names_the_first_request_it_did_not_process() {
    let t = H3Target::start(&["--threads", "1"]);
    // One request per connection at a time, each answered then GOAWAY: the GOAWAY's id is
    // the next stream (RFC 9114 §5.2), so the answer is below it, nothing is retried and
    // the target receives exactly what the client counts.
    let v = run3(
        &t,
        "/fault/h3-goaway",
        &["-n", "20", "-c", "1", "--streams", "1", "--threads", "1"],
    );
    assert_eq!(u(&v, "responses"), 20, "{v}");
    assert_eq!(u(&v, "error_count"), 0, "{v}");
    let notes = v["warnings"].to_string();
    assert!(!notes.contains("GOAWAY"), "{notes}");
    // The server-wide fault: a GOAWAY at each connection's 100th request, with requests
    // in flight above it that the target rejects and the client sends again elsewhere.
    let g = H3Target::start(&["--threads", "1", "--fault", "h3-goaway"]);
    let v = run3(
        &g,
        "/",
        &["-n", "300", "-c", "20", "--streams", "20", "--threads", "1"],
    );
    assert_eq!(u(&v, "responses"), 300, "{v}");
    assert_eq!(u(&v, "error_count"), 0, "{v}");
    assert!(!v["warnings"].to_string().contains("GOAWAY"), "{v}");
    assert!(u(&v, "connections_opened") >= 3, "{v}");
    let stats = g.stats();
    assert_eq!(
        stats["by_protocol"]["HTTP/3"].as_u64(),
        Some(300),
        "{stats}"
    );
}

#[test]
fn after_a_stateless_reset_every_later_connection_handshakes() {
    // The server forgets each connection at its 100th request and answers its packets with
    // stateless resets: that request is lost, and the next connections (same process, same
    // thread's endpoint) handshake and serve their 99 answers each.
    let t = H3Target::start(&["--threads", "1", "--fault", "quic-reset"]);
    let v = run3(
        &t,
        "/",
        &[
            "-n",
            "400",
            "-c",
            "1",
            "--streams",
            "1",
            "--threads",
            "1",
            "--timeout",
            "3s",
        ],
    );
    assert_eq!(
        v["errors"]["quic-handshake"],
        serde_json::Value::Null,
        "{v}"
    );
    // One request at a time: each connection carries exactly 100 (the last one reset).
    assert_eq!(v["errors"]["reset"], 4, "{v}");
    assert_eq!(u(&v, "error_count"), 4, "{v}");
    assert_eq!(u(&v, "responses"), 396, "{v}");
    assert_eq!(u(&v, "connections_opened"), 4, "{v}");
    assert_eq!(u(&v, "tls.handshakes_started"), 4, "{v}");
}

#[test]
fn alt_svc_follows_the_servers_h3_announcement_and_says_why_not_otherwise() {
    // The target over TLS with HTTP/3 announces `Alt-Svc: h3=":PORT"`: --alt-svc follows it.
    let t = H3Target::start(&["--threads", "1"]);
    let ca = t.ca.to_str().unwrap();
    let url = format!("{}/", t.url);
    let (_, v) = run_json(&[
        "run",
        &url,
        "--alt-svc",
        "--cacert",
        ca,
        "-n",
        "50",
        "-c",
        "5",
    ]);
    assert_eq!(v["protocol"]["version"], "3", "{v}");
    assert_eq!(v["protocol"]["chosen_by"], "alt-svc", "{v}");
    assert_eq!(u(&v, "responses"), 50, "{v}");
    assert_eq!(u(&v, "error_count"), 0, "{v}");
    assert_eq!(u(&v, "protocols.3"), 50, "{v}");
    // The probe's HEAD went over TCP; the load over QUIC.
    let stats = t.stats();
    assert_eq!(stats["by_protocol"]["HTTP/3"].as_u64(), Some(50), "{stats}");
    // Without --alt-svc, auto stays on TCP (h2 by ALPN).
    let (_, v) = run_json(&["run", &url, "--cacert", ca, "-n", "10"]);
    assert_eq!(v["protocol"]["version"], "2", "{v}");
    assert_eq!(v["protocol"]["chosen_by"], "alpn", "{v}");
    // A TLS target without HTTP/3 announces nothing: TCP, and the reason.
    let dir = common::scratch();
    let ca2 = dir.path().join("ca.pem");
    let tcp = Target::start(&["--tls", "--ca-out", ca2.to_str().unwrap()]);
    let (_, v) = run_json(&[
        "run",
        &format!("{}/", tcp.url),
        "--alt-svc",
        "--cacert",
        ca2.to_str().unwrap(),
        "-n",
        "10",
    ]);
    assert_eq!(v["protocol"]["version"], "2", "{v}");
    assert_eq!(v["protocol"]["chosen_by"], "alpn", "{v}");
    let why = v["protocol"]["fallback"].as_str().unwrap_or_default();
    assert!(why.contains("no Alt-Svc"), "{v}");
    assert_eq!(u(&v, "responses"), 10, "{v}");
    // Usage errors: --alt-svc with a fixed --http, or on http://.
    for args in [
        vec!["run", &url, "--alt-svc", "--http", "2", "-n", "1"],
        vec!["run", "http://127.0.0.1:9/", "--alt-svc", "-n", "1"],
    ] {
        let out = output_within(bin().args(&args), Duration::from_secs(20));
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("--alt-svc"), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

#[test]
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

#[test]
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
