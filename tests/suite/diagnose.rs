//! The bottleneck verdict end to end on the embedded target (always runs): a pool of 4
//! workers on a 50 ms route is swept past its 80 req/s, with the pool's status page and the
//! target's process observed; the terminal, the report's JSON and its HTML name the worker
//! pool, with its numbers, and not the CPU. The lab's stacks are proved in tests/lab.rs.

use std::time::Duration;

use crate::common::{bin, output_within, scratch, Target};

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![a_slow_route_on_four_workers_is_the_worker_pool]
}

fn a_slow_route_on_four_workers_is_the_worker_pool() {
    let t = Target::start(&["--workers", "4"]);
    let pid = t.child.id().to_string();
    let dir = scratch();
    let out_dir = dir.path().join("out");
    let out = output_within(
        bin()
            .args(["sweep", &format!("{}/sleep?ms=50", t.url)])
            // 4 workers × 50 ms: 80 req/s. 40 and 60 fit; 120 is half again beyond.
            .args([
                "--rates",
                "40,60,120,160",
                "--warmup",
                "500ms",
                "--step",
                "2s",
            ])
            .args([
                "--rest",
                "0s",
                "--past-saturation",
                "0",
                "--sample-every",
                "250ms",
            ])
            .args(["--fpm-status", &format!("{}/pool-status", t.url)])
            .args(["--watch", &format!("target=pid:{pid}")])
            .arg("--out")
            .arg(&out_dir),
        Duration::from_secs(60),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // The verdict comes first, before the findings.
    let verdict = stdout
        .lines()
        .find(|l| l.starts_with("  ▶ bottleneck: knee at "))
        .unwrap_or_else(|| panic!("no verdict:\n{stdout}"));
    assert!(
        verdict.contains("all 4 workers busy from step"),
        "{verdict}"
    );
    assert!(
        verdict.contains("→ the worker pool; raise the pool"),
        "{verdict}"
    );
    let first_finding = stdout.find("  • ").unwrap_or(usize::MAX);
    assert!(
        stdout.find("  ▶ bottleneck").unwrap() < first_finding,
        "{stdout}"
    );

    // The report's JSON carries the ranked list with its evidence; the HTML shows the card.
    let json = dir.path().join("report.json");
    let r = output_within(
        bin()
            .args(["report"])
            .arg(&out_dir)
            .args(["--format", "json", "--out"])
            .arg(&json),
        Duration::from_secs(30),
    );
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let b = &v["analysis"]["bottleneck"];
    assert_eq!(b["outcome"], "limit", "{b:#}");
    let c = &b["candidates"];
    assert_eq!(c[0]["limit"], "worker-pool", "{b:#}");
    assert_eq!(c[0]["evidence"], "at-limit", "{b:#}");
    assert_eq!(c[0]["numbers"]["workers"], 4.0, "{b:#}");
    let cpu = c
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["limit"] == "cpu")
        .expect("the CPU is a candidate (the target is watched)");
    assert_ne!(cpu["evidence"], "at-limit", "{b:#}");
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    assert!(html.contains("Bottleneck: the worker pool"), "no card");
}
