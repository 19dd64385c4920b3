//! `--control-port`: live control as authenticated requests against a real run of the
//! embedded target. Only the secret path changes anything (a wrong token is 404 and changes
//! nothing), a level above the cap is refused with the reason, a client that does not send
//! its head in time is cut, and a change is recorded (series.jsonl, the run's --json).
use crate::common;
use crate::common::{wait_until, Target};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        the_control_port_takes_authenticated_bounded_changes,
        a_bad_control_port_is_a_usage_error,
        users_of_a_closed_loop_are_steered_too
    ]
}

/// The control URL the run prints on stderr (`overload: live control at URL`).
fn control_url(err: &mut impl BufRead) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "no control URL on stderr"
        );
        if let Some(u) = line.trim().strip_prefix("overload: live control at ") {
            return u.to_string();
        }
    }
}

/// `METHOD URL+path` → (status, body).
fn call(method: &str, base: &str, path: &str) -> (u16, String) {
    let rest = base.strip_prefix("http://").unwrap();
    let (addr, prefix) = rest.split_at(rest.find('/').unwrap());
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        c,
        "{method} {prefix}{path} HTTP/1.1\r\nHost: {addr}\r\n\r\n"
    )
    .unwrap();
    let mut resp = String::new();
    c.read_to_string(&mut resp).unwrap();
    let status = resp
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = resp.split_once("\r\n\r\n").map_or("", |b| b.1).to_string();
    (status, body)
}

fn the_control_port_takes_authenticated_bounded_changes() {
    let target = Target::start(&["--threads", "1"]);
    let d = common::scratch();
    let url = format!("{}/", target.url);
    let mut child = common::bin()
        .current_dir(d.path())
        .args([
            "run",
            "-R",
            "50",
            "-d",
            "8s",
            "--control-port",
            "0",
            "--live-port",
            "0",
            "--out",
            "res",
            "--json",
            "run.json",
            &url,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let page = common::live_url(&mut err);
    let base = control_url(&mut err);
    assert!(base.starts_with("http://127.0.0.1:"), "loopback: {base}");
    let drain = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = err.read_to_string(&mut rest);
        rest
    });
    // The step binds as the load starts.
    wait_until("the state of the step", Duration::from_secs(20), || {
        call("GET", &base, "state").0 == 200
    });
    // A wrong token: 404, nothing changes.
    let bad = format!("{}x/", base.trim_end_matches('/'));
    assert_eq!(call("POST", &bad, "rate?to=100").0, 404);
    assert_eq!(call("POST", &base, "../rate?to=100").0, 404);
    let (_, state) = call("GET", &base, "state");
    let v: serde_json::Value = serde_json::from_str(&state).unwrap();
    assert_eq!(
        (v["level"].as_f64(), v["changes"].as_u64()),
        (Some(50.0), Some(0)),
        "{v}"
    );
    assert_eq!(v["max"].as_f64(), Some(500.0), "10x the planned level: {v}");
    // Above the cap: refused, with the reason.
    let (status, body) = call("POST", &base, "rate?to=5000");
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("above the cap of 500"), "{body}");
    // Users on an open-loop run: refused, naming the right path.
    let (status, body) = call("POST", &base, "users?to=5");
    assert_eq!(status, 409);
    assert!(body.contains("use /rate"), "{body}");
    // A slow client (half a head, then nothing) is cut at the head deadline.
    let rest = base.strip_prefix("http://").unwrap();
    let addr = &rest[..rest.find('/').unwrap()];
    let mut slow = TcpStream::connect(addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(15)))
        .unwrap();
    slow.write_all(b"POST /").unwrap();
    let t0 = Instant::now();
    let mut buf = [0u8; 512];
    let cut = match slow.read(&mut buf) {
        Ok(_) => true,
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
    };
    assert!(cut, "the server closed the slow exchange");
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    // A change that holds.
    let (status, body) = call("POST", &base, "rate?by=+50");
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (v["from"].as_f64(), v["to"].as_f64()),
        (Some(50.0), Some(100.0))
    );
    // The live page marks it while the run goes (its one step is stored only at the end,
    // 6 s or more from here).
    let changed = Instant::now();
    wait_until(
        "the live page marks the change",
        Duration::from_secs(20),
        || {
            let (status, body) = call("GET", &page, "");
            status == 200 && body.contains("rate 50→100 (port)")
        },
    );
    assert!(
        changed.elapsed() < Duration::from_secs(4),
        "marked only after {:?}: not while the run went",
        changed.elapsed()
    );
    let status = common::wait_within(&mut child, Duration::from_secs(60)).expect("the run ends");
    let stderr = drain.join().unwrap();
    assert!(status.success(), "{stderr}");
    let series = std::fs::read_to_string(d.path().join("res/series.jsonl")).unwrap();
    let event: serde_json::Value = series
        .lines()
        .find(|l| l.contains("\"event\""))
        .map(|l| serde_json::from_str(l).unwrap())
        .expect("the change recorded");
    assert_eq!(event["by"], "port");
    assert_eq!(event["to"].as_f64(), Some(100.0));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(d.path().join("run.json")).unwrap()).unwrap();
    assert_eq!(json["steered"][0]["what"], "rate", "{json}");
}

/// `--control-port` takes `[ADDR:]PORT`; anything else is a usage error (exit 2) that says
/// what to give.
fn a_bad_control_port_is_a_usage_error() {
    let out = common::output_within(
        common::bin().args([
            "run",
            "-n",
            "1",
            "--control-port",
            "nowhere",
            "http://127.0.0.1:9/",
        ]),
        common::QUICK,
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("'nowhere': give a port"), "{err}");
}

/// Closed loop: `/users` raises the users of a 2-user run to 6; the seconds after the change
/// offer 6 users and the run ends normally; `/rate` is refused on it; a cap above the most
/// users live control may hold is a usage error before anything runs.
fn users_of_a_closed_loop_are_steered_too() {
    let target = Target::start(&["--threads", "1"]);
    let d = common::scratch();
    let url = format!("{}/sleep?ms=20", target.url);
    let mut child = common::bin()
        .current_dir(d.path())
        .args([
            "run",
            "-c",
            "2",
            "-d",
            "6s",
            "--control-port",
            "0",
            "--out",
            "res",
            &url,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let base = control_url(&mut err);
    let drain = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = err.read_to_string(&mut rest);
        rest
    });
    wait_until("the state of the step", Duration::from_secs(20), || {
        call("GET", &base, "state").0 == 200
    });
    let (status, body) = call("POST", &base, "rate?to=5");
    assert_eq!(status, 409);
    assert!(body.contains("use /users"), "{body}");
    let (status, body) = call("POST", &base, "users?to=6");
    assert_eq!(status, 200, "{body}");
    let status = common::wait_within(&mut child, Duration::from_secs(60)).expect("the run ends");
    let stderr = drain.join().unwrap();
    assert!(status.success(), "{stderr}");
    let series = std::fs::read_to_string(d.path().join("res/series.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = series
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let event = lines
        .iter()
        .find(|l| l["event"].is_string())
        .expect("the change");
    assert_eq!(
        (event["what"].as_str(), event["to"].as_f64()),
        (Some("users"), Some(6.0))
    );
    let t = event["t"].as_f64().unwrap();
    let after: Vec<&serde_json::Value> = lines
        .iter()
        // The seconds of the send window (the drain after it offers nothing).
        .filter(|l| {
            let s = l["t"].as_f64().unwrap();
            l["event"].is_null() && s >= t && s + 1.0 <= 6.5
        })
        .collect();
    assert!(!after.is_empty());
    for p in &after {
        assert!((p["offered"].as_f64().unwrap() - 6.0).abs() < 1e-6, "{p}");
    }
    // Six users at 20 ms answer more than two did: the users really ran.
    let full: Vec<f64> = after
        .iter()
        .filter(|p| p["t"].as_f64().unwrap() + 2.0 <= 6.0)
        .map(|p| p["responses"].as_f64().unwrap())
        .collect();
    let before: Vec<f64> = lines
        .iter()
        .filter(|l| l["event"].is_null() && l["t"].as_f64().unwrap() + 1.0 <= t)
        .map(|p| p["responses"].as_f64().unwrap())
        .collect();
    if let (Some(a), Some(b)) = (full.first(), before.first()) {
        assert!(a > b, "after {full:?} before {before:?}");
    }

    let out = common::output_within(
        common::bin().args([
            "run",
            "-c",
            "2",
            "-d",
            "1s",
            "--control-max",
            "200000",
            &url,
        ]),
        common::QUICK,
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--control-max 200000: at most 100000 users"),
        "{err}"
    );
}
