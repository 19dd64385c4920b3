//! `overload run --scenario` against the embedded target's login application (`/app/*`):
//! users log in, keep their cookie, extract the CSRF token and post with it; the target counts
//! what it saw (`/app/stats`). Bounded runs on loopback.
mod common;
use common::{bin, output_within, run_json, scratch, Target, QUICK};
use std::io::{Read, Write};
use std::path::Path;

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

#[test]
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

#[test]
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

#[test]
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

#[test]
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
