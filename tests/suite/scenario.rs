//! `overload run --scenario` against the embedded target's login application (`/app/*`):
//! users log in, keep their cookie, extract the CSRF token and post with it; the target counts
//! what it saw (`/app/stats`). Bounded runs on loopback.
use crate::common::{bin, name_row, output_within, run_json, scratch, Target, QUICK};
use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        a_logged_in_user_extracts_the_token_and_posts,
        without_the_cookie_jar_the_checks_fail_and_are_counted,
        users_from_a_feeder_keep_their_sessions_apart,
        bad_scenarios_are_one_line_usage_errors_naming_file_line_and_key,
        open_loop_sessions_go_through_the_scenario_once_each,
        sessions_past_the_cap_are_dropped,
        a_burst_of_ten_resources_opens_at_most_six_connections,
        wsesslog_bursts_are_fetched_in_parallel,
        the_plan_line_states_the_scenarios_think_times
    ]
}

/// The target's `/app/stats` counters.
fn app_stats(t: &Target) -> serde_json::Value {
    let hostport = t.url.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(hostport).unwrap();
    s.set_read_timeout(Some(QUICK)).unwrap();
    write!(
        s,
        "GET /app/stats HTTP/1.1\r\nHost: {hostport}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Logs in as `${user}`, reads the account page (its CSRF token), posts with it.
const SESSION: &str = r#"
[[request]]
name = "login"
method = "POST"
url = "/app/login"
headers = ["Content-Type: application/x-www-form-urlencoded"]
body = "user=${user}&password=pw-${user}"
status = 200

[[request]]
name = "account"
url = "/app/account"
status = 200
contains = "user: ${user}</p>"
[[request.extract]]
var = "csrf"
regex = 'name="csrf" value="([^"]+)"'

[[request]]
name = "post"
method = "POST"
url = "/app/post"
body = "csrf=${csrf}&user=${user}"
status = 200
contains = "posted by ${user}"
"#;

fn write_scenario(dir: &Path, head: &str) -> String {
    let file = dir.join("session.toml");
    std::fs::write(&file, format!("{head}\n{SESSION}")).unwrap();
    file.to_str().unwrap().to_string()
}

fn errors(v: &serde_json::Value, kind: &str) -> u64 {
    v["errors"][kind].as_u64().unwrap_or(0)
}

fn a_logged_in_user_extracts_the_token_and_posts() {
    let t = Target::start(&[]);
    let dir = scratch();
    let file = write_scenario(dir.path(), "[vars]\nuser = \"ann\"");
    let (_, v) = run_json(&[
        "run",
        "--scenario",
        &file,
        &t.url,
        "--users",
        "4",
        "--duration",
        "2s",
    ]);
    let responses = v["responses"].as_u64().unwrap();
    assert!(responses >= 30, "{v}");
    assert_eq!(v["error_count"].as_u64(), Some(0), "{v}");
    assert_eq!(v["statuses"]["200"].as_u64(), Some(responses), "{v}");
    let s = app_stats(&t);
    assert!(s["posts"].as_u64().unwrap() >= responses / 3 - 4, "{s} {v}");
    assert_eq!(s["csrf_failures"], 0, "{s}");
    assert_eq!(s["unauthenticated"], 0, "{s}");
    assert_eq!(s["mismatches"], 0, "{s}");
}

fn without_the_cookie_jar_the_checks_fail_and_are_counted() {
    let t = Target::start(&[]);
    let dir = scratch();
    let file = write_scenario(dir.path(), "cookies = false\n[vars]\nuser = \"ann\"");
    let (_, v) = run_json(&[
        "run",
        "--scenario",
        &file,
        &t.url,
        "--users",
        "2",
        "--duration",
        "1s",
    ]);
    // Every login succeeds; every account page is refused (no cookie): a failed check, and
    // the user starts over, so no post is ever sent.
    let failed = errors(&v, "check-failed");
    assert!(failed >= 5, "{v}");
    assert_eq!(v["statuses"]["401"].as_u64(), Some(failed), "{v}");
    assert_eq!(errors(&v, "extract-failed"), 0, "{v}");
    let s = app_stats(&t);
    assert_eq!(s["posts"], 0, "{s}");
    assert!(s["unauthenticated"].as_u64().unwrap() >= failed, "{s}");
}

fn users_from_a_feeder_keep_their_sessions_apart() {
    let t = Target::start(&[]);
    let dir = scratch();
    std::fs::write(dir.path().join("users.csv"), "user\nann\nbob\n").unwrap();
    let file = write_scenario(dir.path(), "[feeder]\nfile = \"users.csv\"\nper = \"user\"");
    let (_, v) = run_json(&[
        "run",
        "--scenario",
        &file,
        &t.url,
        "--users",
        "2",
        "--threads",
        "1",
        "--duration",
        "2s",
    ]);
    assert_eq!(v["error_count"].as_u64(), Some(0), "{v}");
    let s = app_stats(&t);
    // Each post named the user whose page gave the token; the server saw no other session.
    assert_eq!(s["mismatches"], 0, "{s}");
    assert!(s["posts"].as_u64().unwrap() >= 10, "{s}");
}

fn bad_scenarios_are_one_line_usage_errors_naming_file_line_and_key() {
    let dir = scratch();
    std::fs::write(dir.path().join("users.csv"), "login\nann\n").unwrap();
    let cases = [
        (
            "[[request]]\nurl = \"/a\"\nbody = \"x=${nope}\"\n",
            "s.toml:3: request[1].body: unknown variable '${nope}'",
        ),
        (
            "[[request]]\nurl = \"/a\"\n[[request.extract]]\nvar = \"t\"\nregex = \"(unclosed\"\n",
            "s.toml:5: request[1].extract[1].regex: bad regex",
        ),
        (
            "[feeder]\nfile = \"users.csv\"\n[[request]]\nurl = \"/u/${user}\"\n",
            "s.toml:4: request[1].url: unknown variable '${user}'",
        ),
        ("[[request]]\nurl = 3\n", "s.toml:2"),
    ];
    for (text, want) in cases {
        let file = dir.path().join("s.toml");
        std::fs::write(&file, text).unwrap();
        let out = output_within(
            bin().args([
                "run",
                "--scenario",
                file.to_str().unwrap(),
                "http://127.0.0.1:1",
            ]),
            QUICK,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {err}");
        assert!(err.contains(want), "{text}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// Open loop: `--rate` counts sessions; each goes once through the login scenario, and the
/// counts add up: every session's first request is its login, its last its post.
fn open_loop_sessions_go_through_the_scenario_once_each() {
    let t = Target::start(&[]);
    let dir = scratch();
    let file = write_scenario(dir.path(), "[vars]\nuser = \"ann\"");
    let out = dir.path().join("results");
    let (_, v) = run_json(&[
        "run",
        "--scenario",
        &file,
        &t.url,
        "--rate",
        "20",
        "--duration",
        "2s",
        "--out",
        out.to_str().unwrap(),
    ]);
    let s = &v["sessions"];
    let n = |k: &str| {
        s[k].as_u64()
            .unwrap_or_else(|| panic!("sessions.{k} in {v}"))
    };
    assert_eq!(s["offered_per_s"].as_f64(), Some(20.0), "{v}");
    // 2 s at 20/s: 40 arrivals, give or take the one on the window's edge.
    assert!((38..=41).contains(&n("started")), "{v}");
    assert_eq!((n("failed"), n("dropped")), (0, 0), "{v}");
    assert_eq!(n("completed"), n("started"), "all done by the drain: {v}");
    let count = |name: &str| name_row(&v, name)["responses"].as_u64().unwrap();
    assert_eq!(count("login"), n("started"), "{v}");
    assert_eq!(count("post"), n("completed"), "{v}");
    assert_eq!(v["responses"].as_u64(), Some(3 * n("completed")), "{v}");
    assert_eq!(v["error_count"].as_u64(), Some(0), "{v}");
    let app = app_stats(&t);
    assert_eq!(app["posts"].as_u64(), Some(n("completed")), "{app}");
    assert_eq!(app["mismatches"].as_u64(), Some(0), "{app}");
    // The report shows the sessions and the CSV counts them.
    for format in ["html", "csv"] {
        let r = output_within(
            bin().args(["report", out.to_str().unwrap(), "--format", format]),
            Duration::from_secs(30),
        );
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    let row = format!("<td>{}</td><td>{}</td><td>", n("started"), n("completed"));
    assert!(
        html.contains("<h2>Sessions</h2>") && html.contains(&row),
        "{html}"
    );
    let csv = std::fs::read_to_string(out.join("steps.csv")).unwrap();
    let (head, line) = (csv.lines().next().unwrap(), csv.lines().nth(1).unwrap());
    let i = head
        .split(',')
        .position(|c| c == "sessions_started")
        .unwrap();
    assert_eq!(
        line.split(',').nth(i),
        Some(n("started").to_string().as_str())
    );
}

/// Past `--max-sessions` in flight, arrivals are dropped and counted, not queued.
fn sessions_past_the_cap_are_dropped() {
    let t = Target::start(&[]);
    let dir = scratch();
    let file = dir.path().join("slow.toml");
    std::fs::write(
        &file,
        "[[request]]\nname = \"slow\"\nurl = \"/sleep?ms=300\"\n",
    )
    .unwrap();
    let (_, v) = run_json(&[
        "run",
        "--scenario",
        file.to_str().unwrap(),
        &t.url,
        "--rate",
        "20",
        "--duration",
        "2s",
        "--max-sessions",
        "1",
        "--threads",
        "1",
    ]);
    let s = &v["sessions"];
    let n = |k: &str| s[k].as_u64().unwrap();
    assert!((38..=41).contains(&(n("started") + n("dropped"))), "{v}");
    // One session at a time, 300 ms each: at most 7 in 2 s (and the drain's).
    assert!((2..=8).contains(&n("started")), "{v}");
    assert!(n("dropped") >= 30, "{v}");
    assert_eq!(n("completed"), n("started"), "{v}");
}

/// A loopback HTTP/1.1 server for bursts: counts the connections it accepts and the most
/// requests it had in flight at once; `/r…` answers after 40 ms, anything else at once.
struct Counting {
    url: String,
    accepted: std::sync::Arc<std::sync::atomic::AtomicU64>,
    most: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

fn counting_server() -> Counting {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let accepted = Arc::new(AtomicU64::new(0));
    let most = Arc::new(AtomicU64::new(0));
    let now = Arc::new(AtomicU64::new(0));
    let (a, m) = (Arc::clone(&accepted), Arc::clone(&most));
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut c) = conn else { return };
            a.fetch_add(1, Ordering::SeqCst);
            let (m, now) = (Arc::clone(&m), Arc::clone(&now));
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                        match c.read(&mut chunk) {
                            Ok(0) | Err(_) => return,
                            Ok(k) => buf.extend_from_slice(&chunk[..k]),
                        }
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).to_string();
                    buf.drain(..end + 4);
                    let path = head.split(' ').nth(1).unwrap_or("/").to_string();
                    let inflight = now.fetch_add(1, Ordering::SeqCst) + 1;
                    m.fetch_max(inflight, Ordering::SeqCst);
                    if path.starts_with("/r") {
                        // The server's behaviour: a slow handler, so requests overlap.
                        std::thread::sleep(std::time::Duration::from_millis(40));
                    }
                    now.fetch_sub(1, Ordering::SeqCst);
                    if c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    Counting {
        url,
        accepted,
        most,
    }
}

/// A page and a burst of 10 resources: one user opens at most 6 connections (the page's
/// included) and fetches on them in parallel; each resource counts under its own name; the
/// page's load time holds its burst's.
fn a_burst_of_ten_resources_opens_at_most_six_connections() {
    use std::sync::atomic::Ordering;
    let server = counting_server();
    let dir = scratch();
    let members: Vec<String> = (0..10)
        .map(|i| format!("{{ name = \"r{i}\", url = \"/r{i}\" }}"))
        .collect();
    let file = dir.path().join("page.toml");
    std::fs::write(
        &file,
        format!(
            "[[request]]\nname = \"page\"\nurl = \"/page\"\nburst = [{}]\n",
            members.join(", ")
        ),
    )
    .unwrap();
    let (_, v) = run_json(&[
        "run",
        "--scenario",
        file.to_str().unwrap(),
        &server.url,
        "--users",
        "1",
        "--duration",
        "1s",
    ]);
    let accepted = server.accepted.load(Ordering::SeqCst);
    let most = server.most.load(Ordering::SeqCst);
    assert!(accepted <= 6, "{accepted} connections: {v}");
    assert!((2..=6).contains(&most), "{most} requests at once: {v}");
    assert_eq!(v["connections_opened"].as_u64(), Some(accepted), "{v}");
    assert_eq!(v["error_count"].as_u64(), Some(0), "{v}");
    let page = name_row(&v, "page");
    let pages = page["responses"].as_u64().unwrap();
    assert!(pages >= 2, "{v}");
    for i in 0..10 {
        let r = name_row(&v, &format!("r{i}"));
        let k = r["responses"].as_u64().unwrap();
        // The run's end may cut the last burst short.
        assert!(
            k == pages || k + 1 == pages,
            "r{i}: {k} of {pages} pages: {v}"
        );
    }
    // Ten 40 ms resources on six connections: two rounds after the page's answer (1%
    // histogram precision aside).
    let load = &page["page_load_ms"];
    let own = page["response_time_ms"]["p50"].as_f64().unwrap();
    assert!(
        load["p50"].as_f64().unwrap() >= own + 0.98 * 80.0,
        "page load {load} against the page's own {own} ms"
    );
    assert!(load["count"].as_u64().unwrap() >= pages - 1, "{v}");
}

/// httperf's session log's bursts run in parallel too.
fn wsesslog_bursts_are_fetched_in_parallel() {
    use std::sync::atomic::Ordering;
    let server = counting_server();
    let dir = scratch();
    let log = dir.path().join("s.log");
    std::fs::write(&log, "/page think=0.01\n\t/r1\n\t/r2\n\t/r3\n").unwrap();
    let (_, v) = run_json(&[
        "run",
        "--wsesslog",
        log.to_str().unwrap(),
        &server.url,
        "--users",
        "1",
        "--duration",
        "1s",
    ]);
    let most = server.most.load(Ordering::SeqCst);
    assert!(most >= 2, "{most} requests at once: {v}");
    assert!(server.accepted.load(Ordering::SeqCst) <= 4, "{v}");
    assert!(
        name_row(&v, "GET /page")["page_load_ms"]["count"].as_u64() >= Some(1),
        "{v}"
    );
}

/// The plan line states the scenario's own think times, not the run's absent `--think`.
fn the_plan_line_states_the_scenarios_think_times() {
    let t = Target::start(&["--threads", "1"]);
    let dir = scratch();
    let path = dir.path().join("think.toml");
    std::fs::write(
        &path,
        "[[request]]\nurl = \"/\"\nthink = \"10ms\"\n[[request]]\nurl = \"/sleep?ms=1\"\nthink = \"20ms..40ms\"\n",
    )
    .unwrap();
    let out = output_within(
        bin()
            .args(["run", "--scenario"])
            .arg(&path)
            .args(["-c", "2", "-n", "20", &t.url]),
        Duration::from_secs(60),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let plan = err
        .lines()
        .find(|l| l.starts_with("overload: closed loop"))
        .unwrap_or_else(|| panic!("no plan line: {err}"));
    assert!(
        plan.contains("2 users, think 10ms..40ms (the scenario's, mean 20ms);"),
        "{plan}"
    );
}
