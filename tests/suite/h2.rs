//! HTTP/2 through the real binary against the embedded target's h2c: every request answered,
//! the protocol counted in the JSON, the stream cap deciding the connections, each HTTP/2
//! fault of the target counted within the run's bound with memory flat, and bad input
//! refused in one line.
use crate::common;
use crate::common::{bin, output_within, run_json, run_measured, Measured, Target};
use std::io::{Read, Write};
use std::time::Duration;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        h2c_answers_every_request_and_counts_them_as_http2,
        http2_times_the_first_byte_of_each_answer,
        users_share_connections_by_the_stream_cap,
        each_http2_fault_is_counted_within_the_bound,
        a_stalled_http2_server_is_counted_as_timeouts_within_the_bound,
        a_server_without_h2c_is_a_protocol_error_with_advice,
        bad_http2_flags_are_usage_errors
    ]
}

/// Generous for a 2-core machine running other builds: the engine itself takes ~5 MB.
const MAX_RSS_KB: u64 = 48 * 1024;

fn protocols(v: &serde_json::Value) -> serde_json::Value {
    v["protocols"].clone()
}

fn h2c_answers_every_request_and_counts_them_as_http2() {
    let t = Target::start(&["--threads", "1"]);
    let url = format!("{}/", t.url);
    for load in [
        &["--users", "20", "--streams", "10"][..],
        &["--rate", "400", "--connections", "2", "--streams", "5"][..],
    ] {
        let mut args = vec![
            "run",
            &url,
            "--http",
            "2",
            "--duration",
            "1s",
            "--threads",
            "1",
        ];
        args.extend_from_slice(load);
        let (_, v) = run_json(&args);
        let sent = v["sent"].as_u64().unwrap();
        assert!(sent > 100, "{args:?}: {v}");
        assert_eq!(v["error_count"], 0, "{args:?}: {v}");
        assert_eq!(
            v["statuses"]["200"].as_u64(),
            Some(v["responses"].as_u64().unwrap())
        );
        assert_eq!(protocols(&v), serde_json::json!({ "2": sent }), "{args:?}");
        assert!(
            v["connections_opened"].as_u64().unwrap() <= 2,
            "{args:?}: {v}"
        );
    }
    // The default stays HTTP/1.1 over cleartext, and says so.
    let (_, v) = run_json(&["run", &url, "--requests", "50", "--users", "2"]);
    assert_eq!(protocols(&v), serde_json::json!({ "1.1": 50 }));
}

fn http2_times_the_first_byte_of_each_answer() {
    // A 40 ms route: the first byte comes after the server's sleep, never at the write.
    let t = Target::start(&["--threads", "1"]);
    let url = format!("{}/sleep?ms=40", t.url);
    let (_, v) = run_json(&[
        "run",
        &url,
        "--http",
        "2",
        "--requests",
        "40",
        "--users",
        "4",
        "--threads",
        "1",
    ]);
    assert_eq!(v["error_count"], 0, "{v}");
    assert_eq!(v["first_byte_ms"]["count"], 40, "{v}");
    let p50 = v["first_byte_ms"]["p50"].as_f64().unwrap();
    assert!(
        p50 >= 35.0,
        "first byte p50 {p50} ms for a 40 ms route: {v}"
    );
    let service = v["service_time_ms"]["p50"].as_f64().unwrap();
    assert!(
        p50 <= service + 0.01,
        "first byte {p50} after service {service}: {v}"
    );
}

fn users_share_connections_by_the_stream_cap() {
    let t = Target::start(&["--threads", "1"]);
    let url = format!("{}/sleep?ms=50", t.url);
    // 20 users, 5 streams each: 4 connections; every user has its stream, so each answer
    // takes about the sleep, not several.
    let (_, v) = run_json(&[
        "run",
        &url,
        "--http",
        "2",
        "--users",
        "20",
        "--streams",
        "5",
        "--duration",
        "1s",
        "--threads",
        "1",
    ]);
    assert_eq!(v["connections_opened"], 4, "{v}");
    assert_eq!(v["error_count"], 0, "{v}");
    assert!(common::f(&v, "service_time_ms.p50") < 45.0 + 50.0, "{v}");
}

/// Runs `url` (mixed with `good`, another server, when given) in HTTP/2 for 2 s with a 2 s
/// timeout, and checks the bound, memory and clean exit.
fn faulty(urls: &[&str], extra: &[&str], code: i32) -> Measured {
    let mut args = vec!["run"];
    args.extend_from_slice(urls);
    args.extend_from_slice(&[
        "--http",
        "2",
        "--users",
        "4",
        "--streams",
        "2",
        "--duration",
        "2s",
        "--timeout",
        "2s",
        "--threads",
        "1",
    ]);
    args.extend_from_slice(extra);
    let bound = Duration::from_secs(2 + 2 + 3);
    let m = run_measured(None, &args, true, bound + Duration::from_secs(20));
    let what = format!("{args:?}");
    m.assert_clean_exit(code, &what);
    assert!(m.elapsed <= bound, "{what}: took {:?}", m.elapsed);
    assert!(
        m.max_rss_kb < MAX_RSS_KB,
        "{what}: peak RSS {} kB",
        m.max_rss_kb
    );
    m
}

fn each_http2_fault_is_counted_within_the_bound() {
    let t = Target::start(&["--threads", "1"]);
    let good = format!("{}/", t.url);
    // RST_STREAM: its requests fail as h2-reset, the good URL on the same connections goes on.
    let m = faulty(&[&format!("{}/fault/h2-reset", t.url), &good], &[], 0);
    assert!(m.errors("h2-reset") > 0 && m.status("200") > 0, "{}", m.v);
    assert_eq!(m.v["error_count"], m.v["errors"]["h2-reset"], "{}", m.v);
    // GOAWAY after the answer: later streams go again on a new connection (GET: idempotent).
    let m = faulty(&[&format!("{}/fault/h2-goaway", t.url), &good], &[], 0);
    assert_eq!(m.v["error_count"], 0, "{}", m.v);
    assert!(m.v["connections_opened"].as_u64().unwrap() > 2, "{}", m.v);
    // The raw-frame faults are server-wide: another target plays them, the good one answers.
    for fault in ["settings-flood", "huge-headers"] {
        let bad = Target::start(&["--threads", "1", "--fault", fault]);
        let m = faulty(&[&format!("{}/", bad.url), &good], &[], 0);
        assert!(
            m.errors("protocol") > 0 && m.status("200") > 0,
            "{fault}: {}",
            m.v
        );
        assert_eq!(
            m.v["error_count"], m.v["errors"]["protocol"],
            "{fault}: {}",
            m.v
        );
        if fault == "settings-flood" {
            assert!(
                m.stdout.contains("flooded") || m.stderr.contains("flooded"),
                "{}",
                m.stderr
            );
        }
    }
}

/// `--stall` over HTTP/2: answers due inside a freeze wait for its end, so with a timeout
/// shorter than the freeze the run counts timeouts (and only those) between its answers,
/// within its bound, memory flat.
fn a_stalled_http2_server_is_counted_as_timeouts_within_the_bound() {
    // Frozen 1.5 s of every 2 s from the target's start: 0.5–2 s, 2.5–4 s, …
    let t = Target::start(&["--threads", "1", "--stall", "1500ms/2s"]);
    let url = format!("{}/", t.url);
    let args = [
        "run",
        &url,
        "--http",
        "2",
        "--users",
        "4",
        "--streams",
        "2",
        "--duration",
        "3s",
        "--timeout",
        "500ms",
        "--threads",
        "1",
    ];
    let bound = Duration::from_secs(3 + 1 + 3);
    let m = run_measured(None, &args, true, bound + Duration::from_secs(20));
    m.assert_clean_exit(0, "stalled h2");
    assert!(m.elapsed <= bound, "took {:?}", m.elapsed);
    assert!(m.max_rss_kb < MAX_RSS_KB, "peak RSS {} kB", m.max_rss_kb);
    assert!(m.errors("timeout") > 0, "{}", m.v);
    assert_eq!(m.v["error_count"], m.v["errors"]["timeout"], "{}", m.v);
    assert!(m.status("200") > 0, "answers between the freezes: {}", m.v);
    assert_eq!(protocols(&m.v)["2"], m.v["requests"], "{}", m.v);
}

fn a_server_without_h2c_is_a_protocol_error_with_advice() {
    // A bare HTTP/1.1 server: whatever it reads, it answers 400 and closes.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { return };
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    let url = format!("http://{addr}/");
    let m = run_measured(
        None,
        &[
            "run",
            &url,
            "--http",
            "2",
            "--requests",
            "5",
            "--users",
            "1",
            "--timeout",
            "2s",
        ],
        true,
        Duration::from_secs(30),
    );
    // Nothing answered: the run fails (exit 1), counted as protocol, with the advice.
    m.assert_clean_exit(1, "h2c against HTTP/1.1");
    assert_eq!(m.errors("protocol"), 5, "{}", m.v);
    let all = format!("{}{}", m.stdout, m.stderr);
    assert!(
        all.contains("does not speak h2c") && all.contains("--http 1.1"),
        "{all}"
    );
}

fn bad_http2_flags_are_usage_errors() {
    for (args, says) in [
        (&["--streams", "0", "--http", "2"][..], "--streams 0"),
        (&["--http", "3"][..], "--http"),
        (&["--http", "2", "--no-keep-alive"][..], "contradict"),
    ] {
        let out = output_within(
            bin()
                .args(["run", "http://127.0.0.1:9/", "--requests", "1"])
                .args(args),
            Duration::from_secs(20),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}
