//! The engine's HTTP/3 client (`run --http 3`) end to end against the embedded target's
//! `--tls --http3`: open and closed loop with every request answered and counted by the
//! target as HTTP/3, handshakes with and without resumption, the server's stream limit, its
//! QUIC faults as counted errors; bad input as one-line usage errors, and a server that
//! answers only TCP as counted `quic-handshake` errors with the advice to use HTTP/2.
use crate::common;
use crate::common::h3::H3Target;
use crate::common::{bin, free_port, output_within, run_json, run_measured, Target};
use std::time::Duration;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        closed_and_open_loop_answer_everything_and_the_target_counts_http3,
        resumption_off_is_one_full_handshake_per_connection,
        the_servers_stream_limit_caps_streams_and_says_so,
        quic_faults_are_counted_errors_within_the_runs_bound,
        http3_on_an_http_url_or_with_tls12_is_a_one_line_usage_error,
        a_server_that_answers_only_tcp_is_a_counted_quic_handshake_error_with_advice,
        the_targets_goaway_names_the_first_request_it_did_not_process,
        after_a_stateless_reset_every_later_connection_handshakes,
        alt_svc_follows_the_servers_h3_announcement_and_says_why_not_otherwise,
        sweep_capacity_and_merge_speak_http3_end_to_end,
        large_bodies_go_out_in_batched_sends_and_arrive_whole
    ]
}

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

/// A sweep's and a capacity search's results folders over HTTP/3: every step speaks 3 and
/// carries its QUIC figures; two `--http 3` segments merge with those figures summed.
fn sweep_capacity_and_merge_speak_http3_end_to_end() {
    let t = H3Target::start(&["--threads", "2"]);
    let url = format!("{}/", t.url);
    let ca = t.ca.to_str().unwrap();
    let scratch = common::scratch();
    let dir = |name: &str| scratch.path().join(name);
    let h3 = ["--http", "3", "--cacert", ca, "--threads", "1", "-q"];
    let limit = Duration::from_secs(60);
    let ok = |out: std::process::Output| {
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let steps_are_h3 = |folder: &std::path::Path, want: usize| {
        let data = overload::store::load(folder).unwrap();
        assert_eq!(data.steps.len(), want, "{folder:?}");
        for s in &data.steps {
            let sum = &s.summary;
            assert_eq!(
                sum.protocols.get("3").copied(),
                Some(sum.requests),
                "{sum:?}"
            );
            assert_eq!(sum.protocol.as_ref().unwrap().version, "3");
            assert!(sum.responses > 0 && sum.errors.is_empty(), "{sum:?}");
            assert!(sum.quic.as_ref().unwrap().packets_sent > 0, "{sum:?}");
        }
        data
    };
    // A sweep of two short steps.
    let sweep = dir("sweep");
    ok(output_within(
        bin()
            .args(["sweep", &url, "--rates", "50,100", "--warmup", "200ms"])
            .args(["--step", "1s", "--rest", "100ms"])
            .args(h3)
            .arg("--out")
            .arg(&sweep),
        limit,
    ));
    steps_are_h3(&sweep, 2);
    let html = std::fs::read_to_string(sweep.join("report.html")).unwrap();
    assert!(html.contains("HTTP/3"), "the report names the protocol");
    // A short capacity search (the target answers far above its range).
    let cap = dir("capacity");
    ok(output_within(
        bin()
            .args(["capacity", &url, "--start", "50", "--max", "100"])
            .args(["--precision", "0.5", "--warmup", "200ms", "--step", "1s"])
            .args(["--rest", "100ms", "--slo", "p99<1s"])
            .args(h3)
            .arg("--out")
            .arg(&cap),
        limit,
    ));
    let data = overload::store::load(&cap).unwrap();
    assert!(!data.steps.is_empty());
    steps_are_h3(&cap, data.steps.len());
    // Two segments of one plan, merged: the QUIC figures add up.
    let start_at = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        + 2.0)
        .to_string();
    let segs: Vec<_> = (0..2)
        .map(|i| {
            let out = dir(&format!("seg{i}"));
            let child = bin()
                .args(["sweep", &url, "--rates", "100", "--warmup", "200ms"])
                .args(["--step", "1s", "--rest", "100ms"])
                .args(["--segment", &format!("{i}/2"), "--start-at", &start_at])
                .args(h3)
                .arg("--out")
                .arg(&out)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn a segment");
            (child, out)
        })
        .collect();
    let mut parts = Vec::new();
    for (mut child, out) in segs {
        let status = common::wait_within(&mut child, limit).expect("segment ended");
        assert!(status.success());
        parts.push(steps_are_h3(&out, 1));
    }
    let merged = dir("merged");
    ok(output_within(
        bin()
            .arg("merge")
            .arg(dir("seg0"))
            .arg(dir("seg1"))
            .arg("--out")
            .arg(&merged),
        limit,
    ));
    let m = steps_are_h3(&merged, 1);
    let q = |d: &overload::store::RunData| d.steps[0].summary.quic.clone().unwrap();
    let (a, b, sum) = (q(&parts[0]), q(&parts[1]), q(&m));
    assert_eq!(sum.packets_sent, a.packets_sent + b.packets_sent);
    assert_eq!(
        sum.packets_received,
        a.packets_received + b.packets_received
    );
    assert_eq!(sum.packets_lost, a.packets_lost + b.packets_lost);
    let s = &m.steps[0].summary;
    assert_eq!(s.protocols.get("3").copied(), Some(s.requests));
}

/// 64 KiB request bodies: each goes out as ~55 packets, sent in GSO batches (several
/// datagrams per `sendmsg`); every request arrives whole and is answered.
fn large_bodies_go_out_in_batched_sends_and_arrive_whole() {
    let t = H3Target::start(&["--threads", "1"]);
    let scratch = common::scratch();
    let body = scratch.path().join("body.bin");
    let bytes: Vec<u8> = (0..65_536u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&body, &bytes).unwrap();
    let at = format!("@{}", body.display());
    let v = run3(
        &t,
        "/",
        &[
            "-X",
            "POST",
            "--body",
            &at,
            "-n",
            "40",
            "-c",
            "4",
            "--threads",
            "1",
        ],
    );
    assert_eq!(u(&v, "responses"), 40, "{v}");
    assert_eq!(u(&v, "error_count"), 0, "{v}");
    // 40 bodies of 65,536 bytes in packets of at most 1,200: over 2,000 packets sent.
    assert!(u(&v, "quic.packets_sent") >= 40 * 65_536 / 1_200, "{v}");
    assert!(u(&v, "bytes_out") >= 40 * 65_536, "{v}");
}
