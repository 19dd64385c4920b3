//! `overload run` against the embedded target, through the real binary. Margins are generous:
//! the machine is shared and noisy; what is asserted is behaviour, not speed. The exact
//! figures (throughput of a paced run, percentiles, Little's law) are unit-tested on scripted
//! recordings in src/metrics/summary.rs.
use crate::common::{
    bin, f, free_port, output_within, run_json, run_measured, scratch, Target, QUICK,
};
use std::time::Duration;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        open_loop_holds_the_offered_rate,
        sleep_50ms_median_is_50ms_and_a_little,
        closed_loop_obeys_littles_law,
        think_time_slows_users_down,
        no_keep_alive_opens_a_connection_per_request,
        calls_per_connection_recycles_connections,
        stalls_are_measured_from_the_intended_time,
        queueing_for_connections_shows_as_send_lag,
        a_rate_never_sent_is_not_carried_out_and_exits_1,
        requests_limit_and_several_urls_in_sequence,
        requests_reached_before_the_duration_are_measured_over_their_own_time,
        urls_file_and_post_bodies,
        statuses_are_answers_not_errors,
        ok_status_makes_a_meant_404_a_success,
        head_requests_expect_no_body,
        refused_connections_are_counted,
        a_down_local_port_is_refused_even_when_a_connect_meets_itself,
        timeouts_are_counted_and_the_run_ends,
        bad_input_is_a_usage_error,
        bad_line_in_urls_file_names_file_and_line,
        slo_decides_the_exit_code
    ]
}

fn open_loop_holds_the_offered_rate() {
    let t = Target::start(&[]);
    let url = format!("{}/", t.url);
    let (_, v) = run_json(&["run", &url, "--rate", "2000", "--duration", "5s"]);
    // 10% catches a pacer that is off (a 1 ms timer tick, a burst per wake-up lost) and
    // still holds when the two cores are shared with a build.
    let thr = f(&v, "throughput");
    assert!(
        (thr - 2000.0).abs() <= 200.0,
        "throughput {thr} not within 10% of 2000"
    );
    assert_eq!(f(&v, "error_count"), 0.0);
    assert_eq!(f(&v, "offered_rate"), 2000.0);
    // 10,000 requests scheduled in 5 s: never more, and nearly all of them answered.
    let responses = f(&v, "responses");
    assert!(
        (9000.0..=10_002.0).contains(&responses),
        "{}",
        v["responses"]
    );
    assert_eq!(v["statuses"]["200"].as_f64(), v["responses"].as_f64());
}

fn sleep_50ms_median_is_50ms_and_a_little() {
    let t = Target::start(&[]);
    let url = format!("{}/sleep?ms=50", t.url);
    let (_, v) = run_json(&["run", &url, "--rate", "100", "--duration", "3s"]);
    // Never below the sleep; above it only by what a busy machine adds (not 2 × 50 ms).
    let p50 = f(&v, "response_time_ms.p50");
    assert!((50.0..=80.0).contains(&p50), "p50 {p50}");
    assert!(f(&v, "service_time_ms.p50") >= 50.0);
}

fn closed_loop_obeys_littles_law() {
    let t = Target::start(&[]);
    let url = format!("{}/sleep?ms=20", t.url);
    let (_, v) = run_json(&["run", &url, "--users", "4", "--duration", "4s"]);
    // At most 4 / 20 ms = 200/s; a busy machine only slows the users down. Whatever the
    // pace, throughput × mean response time is the number of users.
    let thr = f(&v, "throughput");
    assert!(
        (140.0..=210.0).contains(&thr),
        "4 users / 20 ms should give ~200/s, got {thr}"
    );
    let users = thr * f(&v, "response_time_ms.mean") / 1000.0;
    assert!((3.6..=4.2).contains(&users), "Little's law: {users} users");
    assert_eq!(v["mode"], "closed");
    assert_eq!(f(&v, "users"), 4.0);
    assert_eq!(f(&v, "connections_opened"), 4.0);
}

fn think_time_slows_users_down() {
    let t = Target::start(&[]);
    let url = format!("{}/", t.url);
    // Each user: ~0 ms service + 100..200 ms think → ~6.7 requests/s per user.
    let (_, v) = run_json(&[
        "run",
        &url,
        "--users",
        "5",
        "--think",
        "100ms..200ms",
        "--duration",
        "3s",
    ]);
    let thr = f(&v, "throughput");
    // Without the think time it would be thousands per second.
    assert!(
        (20.0..=40.0).contains(&thr),
        "5 users thinking 150 ms on average: ~33/s, got {thr}"
    );
}

fn no_keep_alive_opens_a_connection_per_request() {
    let t = Target::start(&[]);
    let url = format!("{}/", t.url);
    let (_, v) = run_json(&[
        "run",
        &url,
        "--rate",
        "300",
        "--duration",
        "2s",
        "--no-keep-alive",
    ]);
    assert!(f(&v, "responses") > 500.0);
    assert_eq!(f(&v, "connections_opened"), f(&v, "responses"));
    // With keep-alive, a capped pool serves everything (uncapped, a generator delayed by a
    // busy machine may legitimately open a few more).
    let (_, v) = run_json(&[
        "run",
        &url,
        "--rate",
        "300",
        "--duration",
        "2s",
        "--connections",
        "4",
    ]);
    assert!(
        f(&v, "connections_opened") <= 4.0,
        "{}",
        v["connections_opened"]
    );
    assert!(f(&v, "responses") > 500.0);
}

fn calls_per_connection_recycles_connections() {
    let t = Target::start(&[]);
    let url = format!("{}/", t.url);
    let (_, v) = run_json(&[
        "run",
        &url,
        "--users",
        "2",
        "--requests",
        "100",
        "--calls-per-connection",
        "10",
    ]);
    assert_eq!(f(&v, "responses"), 100.0);
    assert_eq!(f(&v, "connections_opened"), 10.0);
    assert_eq!(f(&v, "error_count"), 0.0);
}

/// The coordinated-omission check: the server freezes 1 s of every 5 s. About 20% of the
/// requests are due while it is frozen and wait 0–1 s, so p90 ≈ 0.5 s and p99 ≈ 0.95 s.
fn stalls_are_measured_from_the_intended_time() {
    let t = Target::start(&["--stall", "1s/5s"]);
    let url = format!("{}/", t.url);
    let (_, v) = run_json(&["run", &url, "--rate", "500", "--duration", "10s"]);
    let p90 = f(&v, "response_time_ms.p90");
    let p99 = f(&v, "response_time_ms.p99");
    // Measured from the send instead, p90 and p99 would be a few ms.
    assert!((300.0..=700.0).contains(&p90), "p90 {p90} ms");
    assert!(p99 >= 800.0, "p99 {p99} ms");
    assert!(f(&v, "response_time_ms.p50") < 100.0);
    assert!(v["service_time_ms"]["p90"].is_number());
    assert_eq!(f(&v, "error_count"), 0.0);
}

/// With too few connections the requests queue in the generator; response time counts the
/// wait (from the intended time) and the wait shows as send lag. Over 1% of the arrivals were
/// never sent: the plan was not carried out (exit 1), said in the summary and the JSON.
fn queueing_for_connections_shows_as_send_lag() {
    let t = Target::start(&[]);
    let url = format!("{}/sleep?ms=20", t.url);
    let dir = scratch();
    let json = dir.path().join("run.json");
    // One connection serves at most 50/s; 80/s are offered.
    let out = output_within(
        bin()
            .args(["run", &url, "--rate", "80", "--connections", "1"])
            .args(["--threads", "1", "--duration", "3s", "--json"])
            .arg(&json),
        Duration::from_secs(120),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(f(&v, "send_lag_ms.p99") > 100.0, "{}", v["send_lag_ms"]);
    assert!(f(&v, "response_time_ms.p99") > f(&v, "service_time_ms.p99") + 100.0);
    assert!(f(&v, "throughput") < 55.0);
    assert!(f(&v, "unsent") > 0.0);
    assert!(stdout.contains("send lag"));
    // Not sent, not failed: the server answered every request it was sent.
    assert_eq!(v["plan_carried_out"], false, "{v}");
    assert_eq!(v["not_sent"]["count"], v["unsent"], "{v}");
    let why = v["not_sent"]["why"].as_str().unwrap_or_default();
    assert!(
        why.contains("every connection it may open was busy"),
        "{why}"
    );
    assert!(stdout.contains("  not sent       "), "{stdout}");
    assert!(
        stdout.contains("0.00% of requests got no 2xx/3xx answer"),
        "{stdout}"
    );
    assert!(
        stderr.contains("overload: the plan was not carried out: "),
        "{stderr}"
    );
}

/// `-R` beyond what the generator may send (a 50 ms answer, one connection, 200/s): the
/// arrivals never sent are named apart from the server's answers, the failed share counts
/// what was sent, and the run exits 1: the plan was not carried out.
fn a_rate_never_sent_is_not_carried_out_and_exits_1() {
    let t = Target::start(&["--threads", "1"]);
    let url = format!("{}/sleep?ms=50", t.url);
    let dir = scratch();
    let json = dir.path().join("run.json");
    let out = output_within(
        bin()
            .args(["run", &url, "-R", "200", "-c", "1", "-d", "2s", "--json"])
            .arg(&json),
        Duration::from_secs(120),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("transport      no errors"), "{stdout}");
    assert!(
        stdout.contains("failed         0.00% of requests got no 2xx/3xx answer;"),
        "{stdout}"
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("  not sent"))
        .unwrap_or_else(|| panic!("no 'not sent' line: {stdout}"));
    assert!(line.contains("intended arrivals"), "{line}");
    assert!(line.contains("the plan was not carried out"), "{line}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["plan_carried_out"], false, "{v}");
    // At most 20/s answered of 200/s: far more than 1% never sent.
    assert!(f(&v, "not_sent.share") > 0.5, "{v}");
    assert_eq!(
        f(&v, "not_sent.intended"),
        f(&v, "requests") + f(&v, "unsent"),
        "{v}"
    );
}

fn requests_limit_and_several_urls_in_sequence() {
    let t = Target::start(&[]);
    let a = format!("{}/bytes/10", t.url);
    let b = format!("{}/bytes/1000", t.url);
    let (_, v) = run_json(&["run", &a, &b, "--users", "1", "--requests", "10"]);
    assert_eq!(f(&v, "responses"), 10.0);
    // Five of each, alternating: 5 × 10 + 5 × 1000 body bytes, plus heads.
    let bytes = f(&v, "bytes_in");
    assert!(
        bytes > 5050.0 && bytes < 5050.0 + 10.0 * 300.0,
        "bytes_in {bytes}"
    );
}

/// With both `--requests` and `--duration`, a run that starts all its requests early ended by
/// count: its throughput is over the time they took, not over the planned 10 s (which would
/// read 100 / 10 s = 10/s, and before the fix did).
fn requests_reached_before_the_duration_are_measured_over_their_own_time() {
    let t = Target::start(&[]);
    let url = format!("{}/", t.url);
    for load in [["--users", "2"], ["--rate", "1000"]] {
        let mut args = vec!["run", &url, "--requests", "100", "--duration", "10s"];
        args.extend(load);
        let (_, v) = run_json(&args);
        assert_eq!(f(&v, "responses"), 100.0, "{load:?}");
        // 100 requests at 1000/s take 0.1 s; closed loop, far less. Even at a tenth of that
        // pace on a busy machine the window is under 2 s: nowhere near the planned 10 s.
        let secs = f(&v, "duration_s");
        assert!(secs < 2.0, "{load:?}: measured over {secs} s");
        let thr = f(&v, "throughput");
        assert!(thr > 50.0, "{load:?}: throughput {thr}/s");
    }
}

fn urls_file_and_post_bodies() {
    let t = Target::start(&[]);
    let dir = scratch();
    let file = dir.path().join("urls.txt");
    std::fs::write(
        &file,
        format!("# siege format\n{0}/\n{0}/bytes/5 POST a=1&b=2\n", t.url),
    )
    .unwrap();
    let (_, v) = run_json(&[
        "run",
        "--urls",
        file.to_str().unwrap(),
        "--pick",
        "random",
        "--users",
        "2",
        "--requests",
        "50",
    ]);
    assert_eq!(f(&v, "responses"), 50.0);
    assert_eq!(f(&v, "error_count"), 0.0);
}

fn statuses_are_answers_not_errors() {
    let t = Target::start(&[]);
    let url = format!("{}/status/503", t.url);
    let (_, v) = run_json(&["run", &url, "--users", "2", "--requests", "20"]);
    assert_eq!(f(&v, "error_count"), 0.0);
    assert_eq!(v["statuses"]["503"].as_f64(), Some(20.0));
    assert_eq!(f(&v, "goodput"), 0.0);
}

fn ok_status_makes_a_meant_404_a_success() {
    let t = Target::start(&[]);
    let (ok, missing) = (format!("{}/", t.url), format!("{}/status/404", t.url));
    let run = |extra: &[&str]| {
        let dir = scratch();
        let json = dir.path().join("run.json");
        let out = output_within(
            bin()
                .args(["run", &ok, &missing, "--users", "2", "--requests", "40"])
                .args(["--slo", "errors<1%", "--json"])
                .arg(&json)
                .args(extra),
            Duration::from_secs(60),
        );
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap_or_else(|_| "null".into()))
                .unwrap();
        (out, v)
    };
    // By default a 404 is an answer but not a success: half the requests failed the SLO.
    let (out, v) = run(&[]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(v["statuses"]["404"].as_f64(), Some(20.0));
    assert!(v.get("ok_status").is_none(), "{v}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("20 non-2xx/3xx answers"));
    // Told the 404 is meant: every answer is a success and the SLO holds.
    let (out, v) = run(&["--ok-status", "200-399,404"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(v["statuses"]["404"].as_f64(), Some(20.0));
    assert_eq!(v["ok_status"].as_str(), Some("200-399,404"));
    assert!((f(&v, "goodput") - f(&v, "throughput")).abs() < 1e-9, "{v}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("0 answers outside --ok-status 200-399,404")
    );
    // A list that is not one: a usage error naming the flag.
    let (out, _) = run(&["--ok-status", "2xx"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--ok-status") && err.contains("'2xx'"),
        "{err}"
    );
}

fn head_requests_expect_no_body() {
    let t = Target::start(&[]);
    let url = format!("{}/bytes/5000", t.url);
    let (_, v) = run_json(&[
        "run",
        &url,
        "-X",
        "HEAD",
        "--users",
        "1",
        "--requests",
        "5",
        "--timeout",
        "2s",
    ]);
    assert_eq!(f(&v, "responses"), 5.0);
    assert_eq!(f(&v, "error_count"), 0.0);
    assert!(f(&v, "bytes_in") < 5.0 * 1000.0);
}

fn refused_connections_are_counted() {
    // Bind then drop a listener: nothing listens on that port any more.
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/");
    let m = run_measured(
        None,
        &["run", &url, "--rate", "50", "--duration", "1s"],
        true,
        Duration::from_secs(60),
    );
    // Nothing answered: the run failed, in one line naming the dominant error and the target,
    // and its results are still written.
    m.assert_clean_exit(1, "a run where nothing answered");
    let line = m.stderr.trim();
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(
        line.contains("no request succeeded")
            && line.contains("connect-refused (connection refused)")
            && line.contains(&format!("127.0.0.1:{port}")),
        "{line}"
    );
    let v = &m.v;
    assert_eq!(f(v, "responses"), 0.0);
    assert!(
        v["errors"]["connect-refused"].as_f64().unwrap_or(0.0) >= 45.0,
        "{}",
        v["errors"]
    );
    // Started, refused: never sent, and no connection opened.
    assert_eq!(f(v, "sent"), 0.0, "{v}");
    assert_eq!(f(v, "connections_opened"), 0.0, "{v}");
    assert!(f(v, "requests") >= 45.0, "{v}");
}

/// Connects to a local port nobody listens on, in the ephemeral range, many times over: some
/// connect draws that very port as its own and the kernel connects the socket to itself. It
/// must read as refused, never as an exchange (old code sent the request to itself and counted
/// a `protocol` error, or an answer from a server that would echo). The unit test
/// `tcp_self_connect_is_refused` forces the case. Since the connect backoff (tests/suite/connect.rs)
/// this run makes a handful of attempts, not 40,000, so it rarely meets the case any more: it
/// holds that every request of a `--requests` run to a down port is counted refused, fast.
fn a_down_local_port_is_refused_even_when_a_connect_meets_itself() {
    // Linux gives bind(:0) odd ports and connect() even ones: the even neighbour of a port the
    // kernel chose is in connect's range (here 1 in ~15,000 connects met itself, within
    // 20,000 every time), and free once we could bind and drop it.
    let port = (0..100)
        .map(|_| free_port() & !1)
        .find(|&p| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok())
        .expect("a free even port");
    let url = format!("http://127.0.0.1:{port}/");
    let m = run_measured(
        None,
        &[
            "run",
            &url,
            "--users",
            "4",
            "--requests",
            "40000",
            "--timeout",
            "2s",
        ],
        true,
        Duration::from_secs(120),
    );
    m.assert_clean_exit(1, "a down local port");
    assert_eq!(f(&m.v, "responses"), 0.0, "{}", m.v);
    assert_eq!(f(&m.v, "sent"), 0.0, "{}", m.v);
    assert_eq!(f(&m.v, "connections_opened"), 0.0, "{}", m.v);
    assert_eq!(m.errors("connect-refused"), 40_000, "{}", m.v["errors"]);
}

fn timeouts_are_counted_and_the_run_ends() {
    let t = Target::start(&[]);
    // An answer after 30 s: a run that waited for it instead of timing out would take 30 s.
    let url = format!("{}/sleep?ms=30000", t.url);
    let m = run_measured(
        None,
        &[
            "run",
            &url,
            "--users",
            "2",
            "--duration",
            "1s",
            "--timeout",
            "500ms",
        ],
        true,
        Duration::from_secs(60),
    );
    assert!(
        m.elapsed.as_secs_f64() < 10.0,
        "the run must end after duration + timeout, took {:?}",
        m.elapsed
    );
    // Every request timed out: nothing answered, so the run failed, naming the timeouts.
    m.assert_clean_exit(1, "only timeouts");
    assert!(m.stderr.contains("timeout"), "{}", m.stderr);
    // Sent, then timed out.
    assert!(f(&m.v, "sent") >= 2.0, "{}", m.v);
    let v = m.v;
    assert!(
        v["errors"]["timeout"].as_f64().unwrap_or(0.0) >= 2.0,
        "{}",
        v["errors"]
    );
}

fn bad_input_is_a_usage_error() {
    for args in [
        vec!["run", "http://127.0.0.1:1/", "--rate", "abc"],
        vec!["run", "http://127.0.0.1:1/", "--duration", "10x"],
        vec!["run", "ftp://127.0.0.1/"],
        vec!["run", "http://127.0.0.1:1/", "--rate", "10", "--users", "5"],
        vec!["run", "http://127.0.0.1:1/", "-H", "no colon"],
        vec!["run", "--urls", "/nonexistent/urls.txt"],
        vec!["run", "http://no-such-host.invalid/"],
        vec!["run", "http://127.0.0.1:1/", "--think", "1s..10ms"],
        vec!["run"],
    ] {
        let out = output_within(bin().args(&args), QUICK);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(
            err.lines().filter(|l| !l.trim().is_empty()).count() <= 4,
            "{args:?}: {err}"
        );
    }
}

fn bad_line_in_urls_file_names_file_and_line() {
    let dir = scratch();
    let file = dir.path().join("u.txt");
    std::fs::write(&file, "http://127.0.0.1:1/\n\nnot-a-url\n").unwrap();
    let out = output_within(bin().args(["run", "--urls", file.to_str().unwrap()]), QUICK);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("u.txt:3"), "{err}");
}

fn slo_decides_the_exit_code() {
    let t = Target::start(&[]);
    let url = format!("{}/sleep?ms=20", t.url);
    let ok = output_within(
        bin().args([
            "run",
            &url,
            "--rate",
            "50",
            "--duration",
            "1s",
            "-q",
            "--slo",
            "p99<500ms,errors<1%",
        ]),
        QUICK,
    );
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );
    assert!(String::from_utf8_lossy(&ok.stdout).contains("met"));
    let bad = output_within(
        bin().args([
            "run",
            &url,
            "--rate",
            "50",
            "--duration",
            "1s",
            "-q",
            "--slo",
            "p50<5ms",
        ]),
        QUICK,
    );
    assert_eq!(bad.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&bad.stdout).contains("FAILED"));
}
