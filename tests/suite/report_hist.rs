//! A single run as a results folder (`run --out`), and its histograms out: vegeta-like
//! buckets, the percentile distribution, and HdrHistogram's interval log read back by
//! HdrHistogram's own Python package (`hdrh`; ignored with the reason where it is missing),
//! and the gnuplot export drawn by gnuplot itself (ignored where gnuplot is missing).
use crate::common::harness::{self, Need};
use crate::common::{bin, output_within, scratch, Target, QUICK};
use std::path::Path;
use std::time::Duration;

const LOAD: Duration = Duration::from_secs(60);

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub fn trials() -> Vec<libtest_mimic::Trial> {
    vec![
        harness::trial("run_out_writes_a_one_step_results_folder", &[], run_out),
        harness::trial(
            "hdr_log_is_read_by_hdrhistogram_python",
            &[Need::PythonHdrh],
            hdr_log_read_by_python,
        ),
        harness::trial(
            "gnuplot_draws_the_exported_script",
            &[Need::Gnuplot],
            gnuplot_draws_the_exported_script,
        ),
    ]
}

/// `run --out DIR --json FILE` against the target: returns the run's JSON.
fn stored_run(t: &Target, dir: &Path) -> serde_json::Value {
    let json = dir.join("run-summary.json");
    let out_dir = dir.join("run");
    let out = output_within(
        bin()
            .args(["run", "-d", "2s", "-c", "4", "-q", "--out"])
            .arg(&out_dir)
            .arg("--json")
            .arg(&json)
            .arg(format!("{}/sleep?ms=2", t.url)),
        LOAD,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("report:") && stdout.contains("results:"),
        "{stdout}"
    );
    serde_json::from_slice(&std::fs::read(json).unwrap()).unwrap()
}

/// `report --format gnuplot` writes a script and its data that gnuplot itself draws: the
/// three charts it names exist after `gnuplot steps.gp`, and gnuplot says nothing is wrong.
fn gnuplot_draws_the_exported_script() {
    let t = Target::start(&["--threads", "1"]);
    let d = scratch();
    stored_run(&t, d.path());
    let dir = d.path().join("run");
    let out = output_within(
        bin().args(["report", "--format", "gnuplot"]).arg(&dir),
        QUICK,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let o = output_within(
        std::process::Command::new("gnuplot")
            .arg("steps.gp")
            .current_dir(&dir),
        QUICK,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    // A chart of a quantity that stayed 0 (errors) draws with gnuplot's "empty y range"
    // warning; anything it calls an error fails.
    let err = text(&o.stderr).to_lowercase();
    assert!(!err.contains("error"), "gnuplot: {err}");
    for f in ["steps-rate.svg", "steps-time.svg", "steps-errors.svg"] {
        let svg = std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}"));
        assert!(svg.contains("<svg"), "{f} is an SVG");
    }
}

fn run_out() {
    let t = Target::start(&["--threads", "1"]);
    let d = scratch();
    let summary = stored_run(&t, d.path());
    let dir = d.path().join("run");
    let info: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(info["kind"], "run");
    assert_eq!(info["complete"], true);
    let steps = std::fs::read_to_string(dir.join("steps.jsonl")).unwrap();
    assert_eq!(steps.lines().count(), 1, "one step");
    let step: serde_json::Value = serde_json::from_str(steps.trim()).unwrap();
    assert_eq!(
        step["responses"], summary["responses"],
        "the step is the run"
    );
    let series = std::fs::read_to_string(dir.join("series.jsonl")).unwrap();
    assert!(series.lines().count() >= 2, "per-second series: {series}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(
        html.contains("Timeline: response time"),
        "latency over time"
    );
    assert!(
        html.contains("Response-time histogram"),
        "a latency histogram"
    );
    assert!(
        html.contains("Percentile distribution"),
        "the percentile distribution"
    );
    // A page made for one run: its seconds, none of a sweep's words.
    assert!(html.contains("Timeline: send lag"), "send lag per second");
    for word in ["vs offered", "kept up with every step", "aturation"] {
        assert!(!html.contains(word), "sweep-only '{word}' on a run's page");
    }

    // vegeta's buckets: every response falls into one of them.
    let responses = summary["responses"].as_u64().unwrap();
    assert!(responses > 0);
    let hist = output_within(
        bin()
            .args(["report", "--format", "hist", "--buckets", "[0,1ms,2ms,5ms]"])
            .arg(&dir),
        QUICK,
    );
    let h = text(&hist.stdout);
    assert_eq!(hist.status.code(), Some(0), "{}", text(&hist.stderr));
    let counted: u64 = h
        .lines()
        .skip(1)
        .map(|l| {
            l.split(']')
                .nth(1)
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap()
        })
        .map(|n| n.parse::<u64>().unwrap())
        .sum();
    assert_eq!(counted, responses, "{h}");
    assert!(
        h.lines().nth(4).unwrap().starts_with("[5.00ms,  +Inf]"),
        "{h}"
    );
    // The percentile distribution ends at 100% with every response.
    let p = output_within(
        bin().args(["report", "--format", "percentiles"]).arg(&dir),
        QUICK,
    );
    let pt = text(&p.stdout);
    let last = pt
        .lines()
        .rfind(|l| l.contains(" 1.000000 "))
        .unwrap_or_else(|| panic!("{pt}"));
    assert_eq!(
        last.split_whitespace().nth(2),
        Some(responses.to_string().as_str()),
        "{pt}"
    );
}

const READ_LOG: &str = r#"
import sys
from hdrh.histogram import HdrHistogram
from hdrh.log import HistogramLogReader
new = lambda: HdrHistogram(1, 3600 * 1000 * 1000, 3)
reader = HistogramLogReader(sys.argv[1], new())
total, intervals = new(), 0
while True:
    h = reader.get_next_interval_histogram()
    if h is None:
        break
    total.add(h)
    intervals += 1
n = total.get_total_count()
# p99 at the rank either side too: the two libraries round 0.99 * n to a rank differently
# (ceil of a float product against round-half-up of a percentage).
r = -(-99 * n // 100)
print(intervals, n, *(total.get_value_at_percentile(100.0 * k / n) for k in (r - 1, r, r + 1)))
"#;

fn hdr_log_read_by_python() {
    let t = Target::start(&["--threads", "1"]);
    let d = scratch();
    let summary = stored_run(&t, d.path());
    let log = d.path().join("latency.hlog");
    let out = output_within(
        bin()
            .args(["report"])
            .arg(d.path().join("run"))
            .arg("--hdr-log")
            .arg(&log),
        QUICK,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let py = output_within(
        std::process::Command::new("python3")
            .args(["-c", READ_LOG])
            .arg(&log),
        QUICK,
    );
    let line = text(&py.stdout);
    assert!(py.status.success(), "{line}{}", text(&py.stderr));
    let f: Vec<f64> = line
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    assert_eq!(f[0], 1.0, "one interval per step: {line}");
    assert_eq!(f[1], summary["responses"].as_f64().unwrap(), "{line}");
    // Same histogram, same precision (3 significant digits): the JSON's p99 is Python's value
    // at the p99 rank (or a neighbour rank, see READ_LOG) within 0.1%, in µs.
    let p99_us = summary["response_time_ms"]["p99"].as_f64().unwrap() * 1000.0;
    assert!(
        f[2..]
            .iter()
            .any(|v| (v - p99_us).abs() <= p99_us * 0.001 + 1.0),
        "python p99 at ranks r-1, r, r+1: {:?} µs, JSON {p99_us} µs",
        &f[2..]
    );
}
