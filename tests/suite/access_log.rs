//! `--access-log`: an nginx/Apache log as a weighted URL mix, and replayed on its own clock,
//! through the real binary against the embedded target.
use crate::common::{bin, f, output_within, run_json, scratch, Target, QUICK};
use std::path::Path;
use std::time::Duration;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        replay_follows_the_log_clock,
        the_mix_follows_the_log_frequencies,
        bad_logs_and_flags_are_usage_errors,
        skipped_lines_are_counted_and_named
    ]
}

const PATHS: [(&str, f64); 4] = [
    ("/", 0.5),
    ("/bytes/10?a=1", 0.25),
    ("/bytes/100", 0.15),
    ("/status/204", 0.10),
];

/// Lines per second of the generated log: 10,000 lines over 60 s, the rate swinging between
/// 0.2× and 1.8× its mean (a sine of period ~38 s), so the shape is worth reproducing.
fn per_second() -> Vec<u64> {
    let w: Vec<f64> = (0..60)
        .map(|s| 1.0 + 0.8 * (f64::from(s) / 6.0).sin())
        .collect();
    let total: f64 = w.iter().sum();
    let mut counts: Vec<u64> = w
        .iter()
        .map(|x| (10_000.0 * x / total).round() as u64)
        .collect();
    let sum: u64 = counts.iter().sum();
    counts[59] = counts[59] + 10_000 - sum;
    counts
}

/// Writes the log in combined format; each path's share of every second as in `PATHS`.
fn write_log(path: &Path) {
    let mut text = String::new();
    let mut rng = fastrand::Rng::with_seed(3);
    for (s, n) in per_second().iter().enumerate() {
        for _ in 0..*n {
            let x = rng.f64();
            let mut acc = 0.0;
            let p = PATHS
                .iter()
                .find(|(_, w)| {
                    acc += w;
                    x < acc
                })
                .map_or("/", |p| p.0);
            text.push_str(&format!(
                "10.0.0.{} - - [01/Jan/2026:10:00:{:02} +0100] \"GET {p} HTTP/1.1\" 200 12 \"-\" \"curl/8.5\"\n",
                s % 250,
                s
            ));
        }
    }
    std::fs::write(path, text).unwrap();
}

fn correlation(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len() as f64;
    let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
    let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = a.iter().map(|x| (x - ma).powi(2)).sum();
    let vb: f64 = b.iter().map(|y| (y - mb).powi(2)).sum();
    cov / (va * vb).sqrt()
}

/// 60 s of log at speed 6: 10 s of load whose per-second counts follow the log's (six of its
/// seconds per second of the run).
fn replay_follows_the_log_clock() {
    let t = Target::start(&[]);
    let dir = scratch();
    let log = dir.path().join("access.log");
    write_log(&log);
    let out_dir = dir.path().join("r");
    let out = output_within(
        bin()
            .args(["run", &format!("{}/", t.url), "--access-log"])
            .arg(&log)
            .args(["--replay-speed", "6", "--warmup", "0s", "-q", "--out"])
            .arg(&out_dir),
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "{out:?}");
    let series = std::fs::read_to_string(out_dir.join("series.jsonl")).unwrap();
    let got: Vec<f64> = series
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|p| p["responses"].as_f64().unwrap() + p["errors"].as_f64().unwrap())
        .collect();
    let want: Vec<f64> = per_second()
        .chunks(6)
        .map(|c| c.iter().sum::<u64>() as f64)
        .collect();
    assert!(got.len() >= 10, "{got:?}");
    // A completion can fall into the second after its arrival: compare the first ten.
    let r = correlation(&got[..10], &want);
    assert!(r >= 0.9, "correlation {r}: run {got:?}, log {want:?}");
    assert_eq!(got.iter().sum::<f64>(), 10_000.0);
}

/// Without --replay-speed the log is a weighted mix: each URL's share of the requests is its
/// share of the log's lines (within 2 points over 20,000 draws: 5 standard deviations).
fn the_mix_follows_the_log_frequencies() {
    let t = Target::start(&[]);
    let dir = scratch();
    let log = dir.path().join("access.log");
    write_log(&log);
    let text = std::fs::read_to_string(&log).unwrap();
    let url = format!("{}/", t.url);
    let log_s = log.to_str().unwrap();
    let (_, v) = run_json(&[
        "run",
        &url,
        "--access-log",
        log_s,
        "--users",
        "8",
        "--requests",
        "20000",
    ]);
    let total = f(&v, "responses");
    assert_eq!(total, 20_000.0);
    for (path, _) in PATHS {
        let name = overload::plan::naming::name_of_target(path);
        let in_log = text.matches(&format!(" {path} HTTP")).count() as f64 / 10_000.0;
        let row = v["names"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == name.as_str())
            .unwrap_or_else(|| panic!("no {name} in {}", v["names"]));
        let share = f(row, "requests") / total;
        assert!(
            (share - in_log).abs() <= 0.02,
            "{path}: {share} of the run, {in_log} of the log"
        );
    }
}

fn bad_logs_and_flags_are_usage_errors() {
    let dir = scratch();
    let junk = dir.path().join("junk.log");
    std::fs::write(&junk, "not a log line\nnor this\n").unwrap();
    let junk = junk.to_str().unwrap();
    let url = "http://127.0.0.1:1/";
    for (args, says) in [
        (vec!["run", url, "--access-log", junk], "junk.log:1: "),
        (
            vec!["run", url, "--access-log", "/nonexistent/a.log"],
            "a.log",
        ),
        (vec!["run", url, url, "--access-log", junk], "the one URL"),
        (vec!["run", url, "--replay-speed", "2"], "--access-log"),
        (
            vec!["run", url, "--access-log", junk, "--log-format", "xml"],
            "combined or common",
        ),
        (
            vec![
                "run",
                url,
                "--access-log",
                junk,
                "--replay-speed",
                "2",
                "--users",
                "3",
            ],
            "--users",
        ),
    ] {
        let out = output_within(bin().args(&args), QUICK);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// A log whose odd lines are skipped still runs, and says how many it skipped and where.
fn skipped_lines_are_counted_and_named() {
    let t = Target::start(&[]);
    let dir = scratch();
    let log = dir.path().join("mixed.log");
    std::fs::write(
        &log,
        "1.2.3.4 - - [01/Jan/2026:10:00:00 +0000] \"GET / HTTP/1.1\" 200 1\n\
         garbage\n\
         1.2.3.4 - - [01/Jan/2026:10:00:00 +0000] \"POST /login HTTP/1.1\" 200 1\n",
    )
    .unwrap();
    let out = output_within(
        bin()
            .args(["run", &format!("{}/", t.url), "--access-log"])
            .arg(&log)
            .args(["--requests", "5", "--users", "1", "-q"]),
        Duration::from_secs(30),
    );
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("2 line(s) skipped"), "{err}");
    assert!(
        err.contains("mixed.log:2: ") && err.contains("mixed.log:3: method POST"),
        "{err}"
    );
}
