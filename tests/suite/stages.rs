//! `run --stages` / `--user-stages`: load that moves, through the real binary against the
//! embedded target. The schedule's exact counts and the knee's arithmetic are unit-tested on
//! scripted inputs (engine/pacing.rs, plan/stages.rs, analysis/ramp.rs); here: the wiring,
//! what the server saw, and the verdict on a real saturating server.
use crate::common::{bin, output_within, scratch, Target};
use std::io::{Read, Write};
use std::time::Duration;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        a_ramp_finds_the_knee_and_names_the_pool,
        user_stages_start_and_stop_users_along_the_ramp,
        stages_errors_say_what_and_where
    ]
}

/// GET `url` (http://127.0.0.1:PORT/path) with a plain socket: the body.
fn get(url: &str) -> String {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut s = std::net::TcpStream::connect(host).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out.split_once("\r\n\r\n").unwrap().1.to_string()
}

fn lines(p: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// 50 → 600 req/s over 12 s against 4 workers × 10 ms (400 req/s), observed through the
/// pool's status page as the demo does: the knee within 10% of 400, the worker pool named,
/// the offered line moving in series.jsonl, and the server's own arrivals per second
/// following the ramp.
fn a_ramp_finds_the_knee_and_names_the_pool() {
    let t = Target::start(&["--workers", "4"]);
    let dir = scratch();
    let out = dir.path().join("r");
    let json = dir.path().join("run.json");
    let url = format!("{}/sleep?ms=10", t.url);
    let pool = format!("{}/pool-status", t.url);
    let o = output_within(
        bin()
            .args([
                "run",
                &url,
                "--stages",
                "0s:50, 12s:600",
                "--fpm-status",
                &pool,
            ])
            .arg("--out")
            .arg(&out)
            .arg("--json")
            .arg(&json)
            .arg("-q"),
        Duration::from_secs(90),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // The whole schedule went out: ∫ = 12 s × (50 + 600) / 2.
    assert_eq!(v["sent"].as_f64(), Some(3900.0), "{}", v["sent"]);
    let ramp = &v["ramp"];
    let knee = ramp["knee"]["level"].as_f64().expect("a knee");
    assert!((knee - 400.0).abs() <= 40.0, "knee {knee}: {ramp}");
    let b = &ramp["bottleneck"];
    assert_eq!(b["candidates"][0]["limit"], "worker-pool", "{b}");
    let verdict = b["verdict"].as_str().unwrap();
    assert!(verdict.contains("the worker pool"), "{verdict}");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("ramp: knee at "), "{text}");
    // The results folder keeps it, and each second's offered level moves with the ramp.
    assert!(out.join("ramp.json").is_file());
    let series = lines(&out.join("series.jsonl"));
    let offered: Vec<f64> = series
        .iter()
        .map(|p| p["offered"].as_f64().unwrap())
        .collect();
    assert!((offered[0] - 72.9).abs() < 1.0, "{offered:?}");
    assert!((offered[11] - 577.1).abs() < 1.0, "{offered:?}");
    // The server's arrivals per wall-clock second against the ramp's integral over that
    // second (the engine's start from the step's clock): the seconds wholly inside the ramp,
    // within 10% (a loaded 2-core machine delays some sends by a few ms), and all of them.
    let steps = lines(&out.join("steps.jsonl"));
    let origin_ms =
        steps[0]["start_unix_ms"].as_f64().unwrap() + series[0]["t"].as_f64().unwrap() * 1e3;
    let lambda = |t: f64| {
        let t = t.clamp(0.0, 12.0);
        50.0 * t + 550.0 / 24.0 * t * t
    };
    let arrivals: serde_json::Value =
        serde_json::from_str(&get(&format!("{}/arrivals", t.url))).unwrap();
    let per_second = arrivals["per_second"].as_array().unwrap();
    let total: f64 = per_second.iter().map(|p| p[1].as_f64().unwrap()).sum();
    assert_eq!(total, 3900.0, "{arrivals}");
    let mut checked = 0;
    for p in per_second {
        let (s, n) = (p[0].as_f64().unwrap(), p[1].as_f64().unwrap());
        let t0 = s - origin_ms / 1e3;
        if t0 < 0.0 || t0 + 1.0 > 12.0 {
            continue;
        }
        let want = lambda(t0 + 1.0) - lambda(t0);
        assert!(
            (n - want).abs() <= 0.1 * want + 5.0,
            "second {t0:.2}..: {n} arrivals, the ramp says {want:.1}: {arrivals}"
        );
        checked += 1;
    }
    assert!(checked >= 10, "{checked} seconds checked: {arrivals}");
}

/// Users ramp up, hold and ramp down: the closed loop's users start along the ramp and stop
/// after their current request, the offered level per second moves, and throughput follows
/// the users (an unlimited target: each user gets ~20 answers a second at 50 ms).
fn user_stages_start_and_stop_users_along_the_ramp() {
    let t = Target::start(&[]);
    let dir = scratch();
    let out = dir.path().join("r");
    let url = format!("{}/sleep?ms=50", t.url);
    let o = output_within(
        bin()
            .args(["run", &url, "--user-stages", "0s:2, 3s:10, 2s:10, 2s:0"])
            .arg("--out")
            .arg(&out)
            .arg("-q"),
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let series = lines(&out.join("series.jsonl"));
    let at = |i: usize, k: &str| series[i][k].as_f64().unwrap();
    // Levels: 3.33, 6, 8.67 users, then 10, 10, then 7.5, 2.5.
    assert!((at(0, "offered") - 10.0 / 3.0).abs() < 0.01, "{series:?}");
    assert!((at(4, "offered") - 10.0).abs() < 0.01);
    assert!((at(6, "offered") - 2.5).abs() < 0.01);
    // Throughput with 10 users is well above that of ~3, and falls again as they stop.
    let (first, full, last) = (at(0, "responses"), at(4, "responses"), at(6, "responses"));
    assert!(full > 2.0 * first, "{first} then {full}");
    assert!(last < 0.6 * full, "{full} then {last}");
    // Users' numbers are whole on the ramp down too: ⌊level⌋ users run, none after the end.
    assert!(series.len() <= 8, "{}", series.len());
}

fn stages_errors_say_what_and_where() {
    let url = "http://127.0.0.1:9/";
    let cases: &[(&[&str], &str)] = &[
        (
            &["--stages", "30s:100, 2m"],
            "stage 2 '2m': expected DURATION:TARGET",
        ),
        (
            &["--stages", "30s:abc"],
            "stage 1 '30s:abc': the target 'abc' is not a number",
        ),
        (
            &["--stages", "10s:100", "--rate", "50"],
            "--stages sets the rate along the ramp; leave out --rate",
        ),
        (
            &["--stages", "10s:100", "-d", "5s"],
            "--stages sets the run's length (the sum of its stages); leave out --duration",
        ),
        (
            &["--user-stages", "10s:5", "-c", "4"],
            "--user-stages sets the users along the ramp; leave out -c/--concurrency",
        ),
        (
            &["--user-stages", "10s:2.5"],
            "stage 1 '10s:2.5': users are whole, not 2.5",
        ),
        (&["--stages", "10s:5", "--user-stages", "10s:5"], "give one"),
        (
            &["--stages", "10s:5", "--think", "1s"],
            "--think applies to the closed loop",
        ),
        (
            &["--user-stages", "10s:2M"],
            "--user-stages: the stages reach 2000000 users; at most 1000000",
        ),
        (
            &["--stages", "10s:5, 5s:x"],
            "stage 2 '5s:x': the target 'x' is not a number",
        ),
    ];
    for (args, want) in cases {
        let o = output_within(
            bin().arg("run").arg(url).args(*args).arg("-q"),
            Duration::from_secs(20),
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}
