//! Every fault mode of the embedded target, through the real binary: the right error kind is
//! counted, the run ends within duration + timeout + 3 s, the generator's memory stays small
//! (bodies are counted, never buffered), nothing panics, and the good URL of the same run is
//! still measured. Each run mixes the fault with a good URL (`--pick sequence`), in the closed
//! loop and in the open loop. Fault kinds are documented in docs/results.md.
use crate::common::{run_measured, Measured, Target};
use std::time::Duration;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        refuse,
        reset,
        reset_body,
        hang,
        drip,
        bad_status_header_chunk,
        short_body,
        huge_body_is_counted_not_buffered,
        status_503_is_an_answer,
        close_after_read,
        close_idle_is_not_an_error,
        stale_keep_alive_is_retried_once_for_idempotent_methods,
        endless_fast_body_times_out_and_starves_nobody,
        answers_nobody_asked_for_are_protocol_errors
    ]
}

/// Duration of each run; with the timeout below, the bound on its wall time.
const RUN_S: u64 = 2;
/// Generous for a 2-core machine running other builds: the engine itself takes ~5 MB.
const MAX_RSS_KB: u64 = 48 * 1024;

/// Runs FAULT_URL + GOOD_URL under `load` (closed or open loop) and checks what every run
/// must satisfy; returns the run for the mode's own checks.
fn run_one(fault_url: &str, good_url: &str, timeout_s: u64, load: &[&str]) -> Measured {
    let timeout = format!("{timeout_s}s");
    let duration = format!("{RUN_S}s");
    // A run that waited on the fault instead of timing it out would be killed at the limit
    // below; the 3 s over duration + timeout are for a busy machine.
    let bound = Duration::from_secs(RUN_S + timeout_s + 3);
    let mut args = vec![
        "run",
        fault_url,
        good_url,
        "--duration",
        &duration,
        "--timeout",
        &timeout,
        "--threads",
        "1",
    ];
    args.extend_from_slice(load);
    let m = run_measured(None, &args, true, bound + Duration::from_secs(20));
    let what = format!("{args:?}");
    eprintln!("{what}: {:?}, peak RSS {} kB", m.elapsed, m.max_rss_kb);
    m.assert_clean_exit(0, &what);
    assert!(
        m.elapsed <= bound,
        "{what}: took {:?}, more than duration + timeout + 3 s",
        m.elapsed
    );
    assert!(
        m.max_rss_kb < MAX_RSS_KB,
        "{what}: peak RSS {} kB",
        m.max_rss_kb
    );
    // The good URL kept being measured beside the fault.
    assert!(m.status("200") > 0, "{what}: no good answer: {}", m.v);
    m
}

/// `run(load)` for the closed loop (2 users) and for the open loop (`rate`) at once: a fault
/// run mostly waits on its timeout, so the two overlap instead of queueing. Each run has its
/// own targets (started by `run`), so neither shares a server thread with the other.
fn both_loops(rate: &str, run: impl Fn(&[&str]) -> Measured + Sync) -> [Measured; 2] {
    let (closed, open): (&[&str], &[&str]) = (&["--users", "2"], &["--rate", rate]);
    std::thread::scope(|s| {
        let other = s.spawn(|| run(open));
        let first = run(closed);
        let second = other
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        [first, second]
    })
}

/// The errors of a run are all of `kind`, and there are some.
fn assert_only(m: &Measured, kind: &str) {
    let errors = m.v["errors"].as_object().expect("errors object");
    assert!(m.errors(kind) > 0, "no {kind}: {}", m.v);
    assert_eq!(errors.len(), 1, "only {kind} expected: {}", m.v["errors"]);
}

/// `/fault/MODE` on a normal target, beside its `/`.
fn endpoint(mode: &str, timeout_s: u64, kind: Option<&str>) -> [Measured; 2] {
    // 100/s; 4/s for huge-body, whose 100 MB bodies would otherwise need 5 GB/s.
    let rate = if mode == "huge-body" { "4" } else { "100" };
    both_loops(rate, |load| {
        let t = Target::start(&["--threads", "1"]);
        let m = run_one(
            &format!("{}/fault/{mode}", t.url),
            &format!("{}/", t.url),
            timeout_s,
            load,
        );
        match kind {
            Some(k) => assert_only(&m, k),
            None => assert_eq!(m.v["error_count"], 0, "{mode}: {}", m.v),
        }
        m
    })
}

/// `--fault MODE` on one target, the good URL on another.
fn server_wide(mode: &str, timeout_s: u64, kind: Option<&str>) -> [Measured; 2] {
    both_loops("100", |load| {
        let bad = Target::start(&["--threads", "1", "--fault", mode]);
        let good = Target::start(&["--threads", "1"]);
        let m = run_one(
            &format!("{}/", bad.url),
            &format!("{}/", good.url),
            timeout_s,
            load,
        );
        match kind {
            Some(k) => assert_only(&m, k),
            None => assert_eq!(m.v["error_count"], 0, "{mode}: {}", m.v),
        }
        m
    })
}

fn refuse() {
    server_wide("refuse", 1, Some("connect-refused"));
    // Per request: the connection is closed without an answer.
    endpoint("refuse", 1, Some("closed"));
}

fn reset() {
    // Server-wide the RST comes right after accept, often before the connect is seen to
    // complete: still a reset, not a refusal.
    server_wide("reset", 1, Some("reset"));
    endpoint("reset", 1, Some("reset"));
}

fn reset_body() {
    endpoint("reset-body", 1, Some("reset"));
}

fn hang() {
    server_wide("hang", 1, Some("timeout"));
    endpoint("hang", 1, Some("timeout"));
}

fn drip() {
    // About 6 s for the whole answer: past a 1 s timeout.
    endpoint("drip", 1, Some("timeout"));
}

fn bad_status_header_chunk() {
    server_wide("bad-status", 1, Some("protocol"));
    for mode in ["bad-status", "bad-header", "bad-chunk"] {
        endpoint(mode, 1, Some("protocol"));
    }
}

fn short_body() {
    // The FIN comes with the last bytes; the engine must not wait for another event.
    endpoint("short-body", 1, Some("closed"));
}

fn huge_body_is_counted_not_buffered() {
    let runs = endpoint("huge-body", 5, None);
    for m in &runs {
        // At least one 100 MB body went through a generator that stayed under MAX_RSS_KB.
        assert!(
            m.v["bytes_in"].as_f64().unwrap() > 100e6,
            "{}",
            m.v["bytes_in"]
        );
        assert!(m.status("200") >= 2, "{}", m.v["statuses"]);
    }
}

fn status_503_is_an_answer() {
    for m in server_wide("503", 1, None)
        .iter()
        .chain(endpoint("503", 1, None).iter())
    {
        assert!(m.status("503") > 0, "{}", m.v["statuses"]);
    }
}

fn close_after_read() {
    endpoint("close-after-read", 1, Some("closed"));
}

fn close_idle_is_not_an_error() {
    // Each connection is closed after one answer that did not say so. The engine sees the FIN
    // and opens a new connection; a request already sent when the FIN came is retried.
    for m in server_wide("close-idle", 1, None)
        .iter()
        .chain(endpoint("close-idle", 1, None).iter())
    {
        assert_eq!(m.v["responses"], m.v["requests"], "{}", m.v);
    }
}

/// The stale-connection retry, exactly: `/` then `/fault/close-after-read`, one user. Each
/// fault request goes out on the connection `/` left open, meets EOF before a byte of answer,
/// is retried once on a fresh connection, meets EOF again and counts as `closed`.
fn stale_keep_alive_is_retried_once_for_idempotent_methods() {
    let t = Target::start(&["--threads", "1"]);
    let good = format!("{}/", t.url);
    let bad = format!("{}/fault/close-after-read", t.url);
    let base = [
        "run",
        good.as_str(),
        bad.as_str(),
        "--users",
        "1",
        "--requests",
        "20",
        "--threads",
        "1",
        "--timeout",
        "2s",
    ];
    let m = run_measured(None, &base, true, Duration::from_secs(30));
    m.assert_clean_exit(0, "GET");
    assert_eq!(m.status("200"), 10, "{}", m.v);
    assert_eq!(m.errors("closed"), 10, "{}", m.v);
    assert_eq!(m.v["retries"], 10, "{}", m.v);
    // 10 for `/`, 10 first tries sharing them, 10 retries: 20 connections.
    assert_eq!(m.v["connections_opened"], 20, "{}", m.v);
    assert!(m.stdout.is_empty() || m.stdout.contains("retried"));

    // POST is not idempotent: never sent twice.
    let mut post = base.to_vec();
    post.extend(["-X", "POST"]);
    let m = run_measured(None, &post, true, Duration::from_secs(30));
    m.assert_clean_exit(0, "POST");
    assert_eq!(m.errors("closed"), 10, "{}", m.v);
    assert_eq!(m.v["retries"], 0, "{}", m.v);

    // Without keep-alive nothing is reused, so nothing is retried.
    let mut nka = base.to_vec();
    nka.push("--no-keep-alive");
    let m = run_measured(None, &nka, true, Duration::from_secs(30));
    assert_eq!(m.errors("closed"), 10, "{}", m.v);
    assert_eq!(m.v["retries"], 0, "{}", m.v);
}

/// A body that never ends, arriving as fast as it is read, must not keep the event loop to
/// itself: the timeout still fires, and the other connection is still served.
fn endless_fast_body_times_out_and_starves_nobody() {
    let t = Target::start(&["--threads", "1"]);
    let big = format!("{}/bytes/1073741824", t.url);
    let good = format!("{}/", t.url);
    let m = run_measured(
        None,
        &[
            "run",
            &big,
            &good,
            "--users",
            "2",
            "--duration",
            "2s",
            "--timeout",
            "200ms",
            "--threads",
            "1",
        ],
        true,
        Duration::from_secs(30),
    );
    m.assert_clean_exit(0, "1 GiB body");
    // 2 s + 200 ms timeout, with room for a busy machine; a starved loop would run to 30 s.
    assert!(m.elapsed <= Duration::from_secs(6), "{:?}", m.elapsed);
    assert!(m.errors("timeout") > 0, "{}", m.v);
    assert!(m.status("200") > 10, "{}", m.v["statuses"]);
    assert!(m.max_rss_kb < MAX_RSS_KB, "peak RSS {} kB", m.max_rss_kb);
}

/// A raw server that answers each request twice: both answers in one write, or the second
/// `late` (after the first has been read). Serves until the test ends.
fn double_answerer(late: Option<Duration>) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            std::thread::spawn(move || {
                const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
                let mut buf = [0u8; 4096];
                let mut head = Vec::new();
                while let Ok(n) = conn.read(&mut buf) {
                    if n == 0 {
                        return;
                    }
                    head.extend_from_slice(&buf[..n]);
                    // One answer pair per complete request head received.
                    while let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
                        head.drain(..end + 4);
                        let sent = match late {
                            None => conn.write_all(&[OK, OK].concat()),
                            Some(after) => conn.write_all(OK).and_then(|()| {
                                // The server's behaviour: its second answer comes late.
                                std::thread::sleep(after);
                                conn.write_all(OK)
                            }),
                        };
                        if sent.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    url
}

/// Bytes a server sends with no request outstanding are a protocol error, never the next
/// request's answer (the old engine took a second answer in the same read as a 200, and
/// dropped one arriving on an idle connection without a word).
fn answers_nobody_asked_for_are_protocol_errors() {
    // Both answers together: every request gets two, so none is trusted; nothing answered,
    // and the run fails naming `protocol`.
    let url = double_answerer(None);
    let args = [
        "run",
        &url,
        "--users",
        "1",
        "--requests",
        "20",
        "--timeout",
        "2s",
    ];
    let m = run_measured(None, &args, true, Duration::from_secs(60));
    m.assert_clean_exit(1, "double answers");
    assert!(m.stderr.contains("20 protocol"), "{}", m.stderr);
    assert_eq!(m.v["responses"], 0, "{}", m.v);
    assert_eq!(m.errors("protocol"), 20, "{}", m.v["errors"]);
    // The second answer 10 ms late, on a connection idle until the next arrival 100 ms on:
    // each request is answered, then the stray answer is counted and its connection dropped
    // (each of the 10 requests got a fresh one). The last one's may come after the run ends.
    let url = double_answerer(Some(Duration::from_millis(10)));
    let args = [
        "run",
        &url,
        "--rate",
        "10",
        "--requests",
        "10",
        "--duration",
        "5s",
        "--timeout",
        "2s",
    ];
    let m = run_measured(None, &args, true, Duration::from_secs(60));
    m.assert_clean_exit(0, "late double answers");
    assert_eq!(m.status("200"), 10, "{}", m.v);
    assert!(
        (5..=10).contains(&m.errors("protocol")),
        "{}",
        m.v["errors"]
    );
    assert_eq!(m.v["connections_opened"], 10, "{}", m.v);
    assert_eq!(m.v["sent"], 10, "{}", m.v);
}
