//! Recordings as scenarios, through the real binary against the embedded target: a browser's
//! HAR (`--har`) and httperf's session log (`--wsesslog`). Each user keeps its own cookie jar,
//! so the target's login application (`/app/*`) answers the account page only to a user whose
//! recorded login went through. Bounded runs on loopback.
use crate::common::{bin, name_row, output_within, run_json, scratch, Target};
use std::time::Duration;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        a_har_recording_replays_through_each_users_jar,
        wsesslog_sessions_run_with_their_bursts_and_bodies,
        bad_recordings_are_usage_errors
    ]
}

fn names(v: &serde_json::Value) -> Vec<String> {
    let mut n: Vec<String> = v["names"]
        .as_array()
        .expect("names")
        .iter()
        .map(|n| n["name"].as_str().unwrap().to_string())
        .collect();
    n.sort();
    n
}

/// Every request of every name answered 2xx/3xx.
fn all_ok(v: &serde_json::Value) {
    assert_eq!(v["error_count"].as_u64(), Some(0), "{v}");
    for n in v["names"].as_array().unwrap() {
        assert!(n["responses"].as_u64().unwrap() > 0, "{n}");
        assert_eq!(n["ok"], n["responses"], "{n}");
    }
}

fn entry(at_ms: u64, method: &str, path: &str, mime: &str, extra: &str) -> String {
    format!(
        r#"{{"startedDateTime": "2024-03-05T10:00:00.{at_ms:03}Z", "time": 5,
            "request": {{"method": "{method}", "url": "https://shop.example{path}",
                         "headers": [{{"name": ":path", "value": "{path}"}},
                                     {{"name": "cookie", "value": "sid=recorded-elsewhere"}},
                                     {{"name": "accept", "value": "text/html"}}]{extra}}},
            "response": {{"status": 200, "content": {{"mimeType": "{mime}"}}}}}}"#
    )
}

/// A recording of a login: the URL argument replaces its origin, its stale cookie stays
/// behind (the user's jar sends the session's), its image is an asset and its POST unsafe,
/// both left out unless asked for.
fn a_har_recording_replays_through_each_users_jar() {
    let t = Target::start(&[]);
    let dir = scratch();
    let login = r#", "postData": {"mimeType": "application/x-www-form-urlencoded",
                                  "text": "user=ann&password=pw-ann"}"#;
    let entries = [
        entry(0, "GET", "/sleep?ms=5", "text/html", ""),
        entry(10, "GET", "/bytes/2000", "image/png", ""),
        entry(20, "POST", "/app/login", "text/html", login),
        entry(30, "GET", "/app/account", "text/html", ""),
    ];
    let har = dir.path().join("login.har");
    std::fs::write(
        &har,
        format!(r#"{{"log": {{"entries": [{}]}}}}"#, entries.join(",")),
    )
    .unwrap();
    let har = har.to_str().unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "--har",
            har,
            &t.url,
            "--users",
            "2",
            "--duration",
            "2s",
        ];
        args.extend(extra);
        run_json(&args)
    };
    // Without its POST, the account page is refused: the recorded cookie is not replayed.
    let (out, safe) = run(&[]);
    assert_eq!(
        names(&safe),
        ["GET /app/account", "GET /sleep?ms=*"],
        "{}",
        safe["names"]
    );
    assert_eq!(name_row(&safe, "GET /app/account")["ok"].as_u64(), Some(0));
    let note = String::from_utf8_lossy(&out.stderr);
    assert!(
        note.contains("1 static asset(s) left out") && note.contains("1 POST request(s)"),
        "{note}"
    );
    let (_, all) = run(&["--har-assets", "--allow-unsafe-methods"]);
    assert_eq!(
        names(&all),
        [
            "GET /app/account",
            "GET /bytes/2000",
            "GET /sleep?ms=*",
            "POST /app/login"
        ]
    );
    all_ok(&all);
}

/// httperf's sessions: a burst's members after their page, a POST with its contents, the
/// login's cookie kept for the account page; two sessions, equally weighted.
fn wsesslog_sessions_run_with_their_bursts_and_bodies() {
    let t = Target::start(&[]);
    let dir = scratch();
    let log = dir.path().join("s.log");
    std::fs::write(
        &log,
        "# two sessions\n\
         /sleep?ms=5 think=0.01\n\
         \t/bytes/100\n\
         \t/bytes/200\n\
         /app/login method=POST contents='user=bob&password=pw-bob'\n\
         /app/account\n\
         \n\
         /cpu?us=100\n",
    )
    .unwrap();
    let log = log.to_str().unwrap();
    let (_, v) = run_json(&[
        "run",
        "--wsesslog",
        log,
        &t.url,
        "--allow-unsafe-methods",
        "--users",
        "2",
        "--duration",
        "2s",
    ]);
    assert_eq!(
        names(&v),
        [
            "GET /app/account",
            "GET /bytes/100",
            "GET /bytes/200",
            "GET /cpu?us=*",
            "GET /sleep?ms=*",
            "POST /app/login"
        ]
    );
    all_ok(&v);
    // Equal weights: each session picked about as often as the other (iterations of the
    // second are one request, of the first five).
    let first = name_row(&v, "GET /sleep?ms=*")["responses"]
        .as_f64()
        .unwrap();
    let second = name_row(&v, "GET /cpu?us=*")["responses"].as_f64().unwrap();
    assert!(
        (first / second) > 0.5 && (first / second) < 2.0,
        "{first} vs {second}"
    );
}

/// Bad recordings: one line naming the file and the entry or line, exit 2, nothing sent.
fn bad_recordings_are_usage_errors() {
    let t = Target::start(&[]);
    let dir = scratch();
    let bad_har = dir.path().join("bad.har");
    std::fs::write(&bad_har, "<html>not json</html>").unwrap();
    let bad_log = dir.path().join("bad.log");
    std::fs::write(&bad_log, "/a\n/b colour=red\n").unwrap();
    let post_log = dir.path().join("post.log");
    std::fs::write(&post_log, "/a method=POST\n").unwrap();
    let cases = [
        ("--har", &bad_har, "bad.har: not a HAR file (JSON)"),
        (
            "--wsesslog",
            &bad_log,
            "bad.log:2: unknown attribute 'colour'",
        ),
        (
            "--wsesslog",
            &post_log,
            "post.log:1: method POST: GET and HEAD only unless --allow-unsafe-methods",
        ),
    ];
    for (flag, file, want) in cases {
        let out = output_within(
            bin().args([
                "run",
                flag,
                file.to_str().unwrap(),
                &t.url,
                "--requests",
                "5",
            ]),
            Duration::from_secs(30),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {err}");
        assert!(err.contains(want), "{flag}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}
