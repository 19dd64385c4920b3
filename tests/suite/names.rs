//! Statistics per request name, through the real binary against the embedded target.
use crate::common::{bin, f, name_row, output_within, run_json, scratch, Target};
use std::time::Duration;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        three_urls_of_different_speeds_keep_their_own_medians,
        the_terminal_table_lists_the_names,
        the_results_folder_keeps_a_histogram_per_name
    ]
}

/// Three URLs of different speeds in one run show as three rows, each with the median its URL
/// has alone: the mix does not blur them. The sleeps are long (50/100/200 ms) so a loaded
/// machine's few milliseconds stay inside the 10% margin. The three targets differ by their
/// query's keys (a name replaces values by `*`, so `ms=50` and `ms=100` alone would be one).
fn three_urls_of_different_speeds_keep_their_own_medians() {
    let t = Target::start(&[]);
    let urls = [
        (format!("{}/sleep?ms=50", t.url), "/sleep?ms=*"),
        (
            format!("{}/sleep?jitter=0&ms=100", t.url),
            "/sleep?jitter=*&ms=*",
        ),
        (
            format!("{}/sleep?ms=200&jitter=0", t.url),
            "/sleep?ms=*&jitter=*",
        ),
    ];
    let mut args = vec!["run"];
    args.extend(urls.iter().map(|(u, _)| u.as_str()));
    args.extend(["--users", "6", "--duration", "3s", "--pick", "random"]);
    let (_, mixed) = run_json(&args);
    let rows = mixed["names"].as_array().expect("names");
    assert_eq!(rows.len(), 3, "{}", mixed["names"]);
    // Sorted by time spent: the 200 ms URL first.
    assert_eq!(rows[0]["name"], urls[2].1, "{}", mixed["names"]);
    let counted: f64 = rows.iter().map(|r| r["requests"].as_f64().unwrap()).sum();
    assert_eq!(counted, f(&mixed, "responses") + f(&mixed, "error_count"));
    for (url, n) in &urls {
        let (_, alone) = run_json(&["run", url, "--users", "2", "--duration", "2s"]);
        let single = f(&alone, "response_time_ms.p50");
        let row = name_row(&mixed, n);
        let p50 = f(row, "response_time_ms.p50");
        assert!(
            (p50 - single).abs() <= 0.1 * single,
            "{n}: p50 {p50} ms in the mix, {single} ms alone"
        );
        assert!(f(row, "response_time_ms.p95") >= p50);
        assert_eq!(f(row, "error_count"), 0.0);
        // A single URL has one name, and it is the whole run.
        assert_eq!(alone["names"].as_array().map(Vec::len), Some(1));
        assert_eq!(f(&alone["names"][0], "responses"), f(&alone, "responses"));
    }
}

/// The terminal shows the table when there are two names or more, slowest first.
fn the_terminal_table_lists_the_names() {
    let t = Target::start(&[]);
    let a = format!("{}/sleep?ms=30", t.url);
    let b = format!("{}/bytes/10?x=1", t.url);
    let out = output_within(
        bin().args(["run", &a, &b, "--users", "2", "--requests", "20"]),
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let table = text
        .split("per name (2 names")
        .nth(1)
        .unwrap_or_else(|| panic!("no per-name table in {text}"));
    let slow = table.find("/sleep?ms=*").expect("the slow row");
    let fast = table.find("/bytes/10?x=*").expect("the fast row");
    assert!(slow < fast, "{table}");
    // One URL: no table.
    let out = output_within(
        bin().args(["run", &a, "--users", "1", "--requests", "3"]),
        Duration::from_secs(60),
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("per name"));
}

/// steps.jsonl keeps a histogram per name per step, so reports and `merge` read names back.
fn the_results_folder_keeps_a_histogram_per_name() {
    let t = Target::start(&[]);
    let dir = scratch();
    let out_dir = dir.path().join("r");
    let a = format!("{}/", t.url);
    let b = format!("{}/bytes/100", t.url);
    let out = output_within(
        bin()
            .args([
                "run",
                &a,
                &b,
                "--users",
                "2",
                "--requests",
                "40",
                "-q",
                "--out",
            ])
            .arg(&out_dir),
        Duration::from_secs(60),
    );
    assert!(out.status.success(), "{out:?}");
    let steps = std::fs::read_to_string(out_dir.join("steps.jsonl")).unwrap();
    let step: serde_json::Value = serde_json::from_str(steps.lines().next().unwrap()).unwrap();
    let hists = &step["hists"]["names"];
    for n in ["/", "/bytes/100"] {
        assert!(
            hists[n].as_str().is_some_and(|h| !h.is_empty()),
            "no histogram for {n}: {hists}"
        );
        assert!(f(name_row(&step, n), "requests") > 0.0);
    }
}
