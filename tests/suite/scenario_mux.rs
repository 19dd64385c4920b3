//! Scenarios over HTTP/2 and HTTP/3 (`--scenario` with `--http 2` / `--http 3`) against the
//! embedded target's login application served over TLS (ALPN h2) and QUIC: each user keeps
//! its cookie, extracts its token, fetches its page's burst as streams on its own connection
//! and posts, exactly as over HTTP/1.1; an open loop's session opens its connection and closes
//! it; a server's GOAWAY, reset or close mid-session is retried or fails the session as over
//! HTTP/1.1, within the run's time.
use crate::common::h3::H3Target;
use crate::common::{name_row, run_json, scratch};
use std::time::{Duration, Instant};

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        http2_users_keep_their_cookies_tokens_and_bursts_on_their_own_connection,
        http3_users_keep_their_cookies_tokens_and_bursts_on_their_own_connection,
        each_open_loop_session_is_one_connection_and_one_full_handshake,
        a_goaway_mid_session_moves_the_user_to_a_new_connection,
        a_reset_or_a_closed_connection_mid_session_fails_the_session_on_time
    ]
}

/// Logs in, reads the account page (its token) with a burst of three resources, posts.
const SESSION: &str = r#"
[[request]]
name = "login"
method = "POST"
url = "/app/login"
headers = ["Content-Type: application/x-www-form-urlencoded"]
body = "user=ann&password=pw-ann"
status = 200

[[request]]
name = "account"
url = "/app/account"
status = 200
contains = "user: ann</p>"
burst = [{ name = "r1", url = "/" }, { name = "r2", url = "/" }, { name = "r3", url = "/" }]
[[request.extract]]
var = "csrf"
regex = 'name="csrf" value="([^"]+)"'

[[request]]
name = "post"
method = "POST"
url = "/app/post"
body = "csrf=${csrf}&user=ann"
status = 200
contains = "posted by ann"
"#;

fn u(v: &serde_json::Value, path: &str) -> u64 {
    crate::common::f(v, path) as u64
}

fn scenario(text: &str) -> (tempfile::TempDir, String) {
    let dir = scratch();
    let file = dir.path().join("s.toml");
    std::fs::write(&file, text).unwrap();
    let path = file.to_str().unwrap().to_string();
    (dir, path)
}

/// `run --scenario FILE URL --http VERSION --cacert CA ARGS`, its `--json`.
fn run(t: &H3Target, file: &str, version: &str, extra: &[&str]) -> serde_json::Value {
    let ca = t.ca.to_str().unwrap().to_string();
    let mut args = vec![
        "run",
        "--scenario",
        file,
        &t.url,
        "--http",
        version,
        "--cacert",
        &ca,
    ];
    args.extend_from_slice(extra);
    let (out, v) = run_json(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    v
}

/// The login application's counters (`/app/stats`, over HTTPS/1.1).
fn app_stats(t: &H3Target) -> serde_json::Value {
    let (_, body) = t.tcp_get("/app/stats");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

fn users_keep_their_sessions(version: &str, label: &str) {
    let t = H3Target::start(&["--threads", "2"]);
    let (_dir, file) = scenario(SESSION);
    // Closed loop: 4 users, each on its own connection for the whole run.
    let closed = run(
        &t,
        &file,
        version,
        &["--users", "4", "--threads", "2", "-d", "2s"],
    );
    let responses = u(&closed, "responses");
    assert!(responses >= 12, "{closed}");
    assert_eq!(u(&closed, "error_count"), 0, "{closed}");
    assert_eq!(
        u(&closed, &format!("protocols.{version}")),
        responses,
        "{closed}"
    );
    assert_eq!(
        u(&closed, "connections_opened"),
        4,
        "one per user: {closed}"
    );
    let page = name_row(&closed, "account");
    assert!(page["page_load_ms"].is_object(), "{page}");
    // Every page's burst (a page answered as the run ended has none: not sent).
    for r in ["r1", "r2", "r3"] {
        assert_eq!(
            name_row(&closed, r)["responses"],
            page["page_load_ms"]["count"],
            "{closed}"
        );
    }
    // Open loop: every session goes through, on a connection of its own.
    let open = run(&t, &file, version, &["--rate", "10", "-d", "2s"]);
    let s = &open["sessions"];
    let started = s["started"].as_u64().unwrap();
    assert!(started >= 15, "{open}");
    assert_eq!(s["completed"].as_u64(), Some(started), "{open}");
    assert_eq!(u(&open, "error_count"), 0, "{open}");
    assert_eq!(u(&open, "connections_opened"), started, "{open}");
    assert_eq!(u(&open, "responses"), 6 * started, "{open}");
    // The target saw it all over this protocol, logged in and never mixed users up.
    let stats = t.stats();
    assert_eq!(
        stats["by_protocol"][label].as_u64(),
        Some(responses + u(&open, "responses")),
        "{stats}"
    );
    let app = app_stats(&t);
    assert!(app["posts"].as_u64().unwrap() >= started, "{app}");
    for k in ["unauthenticated", "csrf_failures", "mismatches"] {
        assert_eq!(app[k], 0, "{k}: {app}");
    }
}

fn http2_users_keep_their_cookies_tokens_and_bursts_on_their_own_connection() {
    users_keep_their_sessions("2", "HTTP/2");
}

fn http3_users_keep_their_cookies_tokens_and_bursts_on_their_own_connection() {
    users_keep_their_sessions("3", "HTTP/3");
}

fn each_open_loop_session_is_one_connection_and_one_full_handshake() {
    let t = H3Target::start(&["--threads", "1"]);
    let (_dir, file) = scenario(SESSION);
    for version in ["2", "3"] {
        let off = run(
            &t,
            &file,
            version,
            &["--rate", "10", "-d", "2s", "--tls-resumption", "off"],
        );
        let started = u(&off, "sessions.started");
        assert!(started >= 15, "{off}");
        assert_eq!(u(&off, "sessions.completed"), started, "{off}");
        assert_eq!(u(&off, "connections_opened"), started, "{off}");
        assert_eq!(u(&off, "tls.handshakes_full"), started, "{off}");
        assert_eq!(u(&off, "tls.handshakes_resumed"), 0, "{off}");
        // With resumption, the later sessions resume (the first ones may race the ticket).
        let on = run(&t, &file, version, &["--rate", "10", "-d", "2s"]);
        let started = u(&on, "sessions.started");
        assert_eq!(u(&on, "connections_opened"), started, "{on}");
        assert!(
            u(&on, "tls.handshakes_resumed") >= started - 3,
            "HTTP/{version}: {on}"
        );
    }
}

/// The session's second step is the target's fault route `/fault/FAULT`.
fn faulty(fault: &str) -> String {
    format!(
        r#"
[[request]]
name = "login"
method = "POST"
url = "/app/login"
headers = ["Content-Type: application/x-www-form-urlencoded"]
body = "user=ann&password=pw-ann"
status = 200

[[request]]
name = "fault"
url = "/fault/{fault}"

[[request]]
name = "account"
url = "/app/account"
status = 200
contains = "user: ann</p>"
"#
    )
}

fn a_goaway_mid_session_moves_the_user_to_a_new_connection() {
    let t = H3Target::start(&["--threads", "1"]);
    for (version, fault) in [("2", "h2-goaway"), ("3", "h3-goaway")] {
        let (_dir, file) = scenario(&faulty(fault));
        let v = run(&t, &file, version, &["--rate", "10", "-d", "2s"]);
        let started = u(&v, "sessions.started");
        assert!(started >= 15, "{v}");
        // The GOAWAY came with the fault's answer: the account page goes on a new
        // connection of the user's own, and its cookie goes with it.
        assert_eq!(u(&v, "sessions.completed"), started, "{fault}: {v}");
        assert_eq!(u(&v, "error_count"), 0, "{fault}: {v}");
        assert_eq!(u(&v, "connections_opened"), 2 * started, "{fault}: {v}");
    }
    let app = app_stats(&t);
    assert_eq!(app["unauthenticated"], 0, "{app}");
}

fn a_reset_or_a_closed_connection_mid_session_fails_the_session_on_time() {
    let t = H3Target::start(&["--threads", "1"]);
    for (version, fault, kind) in [
        ("1.1", "reset", "reset"),
        ("2", "h2-reset", "h2-reset"),
        ("3", "quic-close", "quic-protocol"),
    ] {
        let (_dir, file) = scenario(&faulty(fault));
        let began = Instant::now();
        let v = run(&t, &file, version, &["--rate", "10", "-d", "2s"]);
        // Bounded: no session waits on a dead connection past the run.
        assert!(began.elapsed() < Duration::from_secs(60), "{v}");
        let started = u(&v, "sessions.started");
        assert!(started >= 15, "{v}");
        assert_eq!(u(&v, "sessions.failed"), started, "{fault}: {v}");
        assert_eq!(u(&v, "sessions.completed"), 0, "{fault}: {v}");
        assert_eq!(v["errors"][kind].as_u64(), Some(started), "{fault}: {v}");
        assert_eq!(name_row(&v, "login")["responses"].as_u64(), Some(started));
    }
}
