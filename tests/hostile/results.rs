//! Hostile cases: a hostile results folder (merge, report, compare). Each test crafts the
//! folder's files by hand (run.json, steps.jsonl, histograms) the way someone sending a
//! folder could, and drives the real binary on it.
use crate::common::harness::trial;
use crate::common::{bin, output_within, scratch, QUICK};
use hdrhistogram::Histogram;
use libtest_mimic::Trial;
use overload::metrics::histo;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Command, Output};

pub fn trials() -> Vec<Trial> {
    vec![
        trial(
            "results_hdr_log_of_huge_step_times",
            &[],
            hdr_log_of_huge_step_times,
        ),
        trial(
            "results_merge_crafted_names_stays_small",
            &[],
            merge_crafted_names_stays_small,
        ),
        trial(
            "results_merge_histogram_header_claims_are_bounded",
            &[],
            merge_histogram_header_claims_are_bounded,
        ),
        trial("results_merge_refuses_a_fifo", &[], merge_refuses_a_fifo),
        trial(
            "results_merge_negative_count_names_file_and_line",
            &[],
            merge_negative_count_names_file_and_line,
        ),
        trial(
            "results_merge_of_no_step_is_an_error",
            &[],
            merge_of_no_step_is_an_error,
        ),
        trial(
            "results_report_of_many_steps_is_bounded",
            &[],
            report_of_many_steps_is_bounded,
        ),
    ]
}

/// A histogram of response times (µs) as overload records them.
fn hist(values: &[u64]) -> Histogram<u64> {
    let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
    for &v in values {
        h.record(v).unwrap();
    }
    h
}

/// One name's line of a step's `names`: one response of 1 ms.
fn name_row(name: &str) -> Value {
    json!({"name": name, "requests": 1, "responses": 1, "ok": 1, "throughput": 0.1,
           "errors": {}, "error_count": 0, "response_time_ms": latency(&hist(&[1000])),
           "time_spent_s": 0.001})
}

fn latency(h: &Histogram<u64>) -> Value {
    serde_json::to_value(overload::metrics::LatencyStats::from_hist(h)).unwrap()
}

/// One line of steps.jsonl: step `k` of a 1000 req/s share, `n` responses of 1 ms.
fn step(k: usize, n: u64) -> Value {
    let h = hist(&vec![1000; n as usize]);
    let enc = histo::encode(&h);
    json!({
        "step": k, "offered": 500.0,
        "start_unix_ms": 1_700_000_000_000u64 + 20_000 * k as u64,
        "end_unix_ms": 1_700_000_010_000u64 + 20_000 * k as u64,
        "start_s": 20.0 * k as f64, "end_s": 20.0 * k as f64 + 10.0, "think_ms": 0.0,
        "mode": "open", "offered_rate": 500.0, "users": null,
        "throughput": n as f64 / 10.0, "goodput": n as f64 / 10.0,
        "requests": n, "sent": n, "responses": n, "unsent": 0, "retries": 0,
        "duration_s": 10.0, "connections_opened": 1, "errors": {}, "error_count": 0,
        "error_ratio": 0.0, "statuses": {"200": n}, "bytes_in": 100 * n, "bytes_out": 50 * n,
        "bytes_in_per_s": 10.0 * n as f64,
        "response_time_ms": latency(&h), "service_time_ms": latency(&h),
        "send_lag_ms": latency(&hist(&[])), "connect_time_ms": latency(&h),
        "first_byte_ms": latency(&h), "names": [],
        "generator": {"cpu_pct": 1.0, "cpu_us_per_response": 1.0, "threads": 1, "pool_waits": 0},
        "response_time_hist": enc,
        "hists": {"service_time": enc, "send_lag": histo::encode(&hist(&[])),
                  "connect_time": enc, "first_byte": enc},
        "flags": [], "slo_ok": null,
    })
}

/// run.json of segment `index` of 2 (or of a whole run when `index` is None).
fn run_json(index: Option<u32>) -> Value {
    let mut config = json!({"threads": 1, "levels": [1000.0, 2000.0]});
    if let Some(i) = index {
        config["segment"] =
            json!({"index": i, "count": 2, "start_at_unix_ms": 1_700_000_000_000u64});
    }
    json!({
        "format_version": 1, "overload_version": "test", "name": "crafted", "kind": "sweep",
        "command_line": [], "mode": "open", "urls": ["GET http://127.0.0.1:1/"],
        "config": config,
        "host": {"hostname": "gen", "cores": 1, "kernel": "", "fd_limit_soft": 0,
                 "fd_limit_hard": 0, "sysctls": {}},
        "started_unix_ms": 1_700_000_000_000u64, "finished_unix_ms": 1_700_000_100_000u64,
        "complete": true, "stop_reason": "all planned steps done", "slo": null,
    })
}

/// Writes a results folder: run.json and one steps.jsonl line per step.
fn folder(dir: &Path, index: Option<u32>, steps: &[Value]) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("run.json"), run_json(index).to_string()).unwrap();
    let lines: String = steps.iter().map(|s| format!("{s}\n")).collect();
    std::fs::write(dir.join("steps.jsonl"), lines).unwrap();
}

/// Two segment folders `seg0`, `seg1` under `root`, each with `steps`, each step adjusted by
/// `craft(segment, step)`.
fn segments(
    root: &Path,
    n_steps: usize,
    craft: impl Fn(u32, &mut Value),
) -> [std::path::PathBuf; 2] {
    [0u32, 1].map(|i| {
        let dir = root.join(format!("seg{i}"));
        let steps: Vec<Value> = (0..n_steps)
            .map(|k| {
                let mut s = step(k, 10);
                craft(i, &mut s);
                s
            })
            .collect();
        folder(&dir, Some(i), &steps);
        dir
    })
}

/// Caps the child's address space at `bytes`: an input whose cost is not bounded by a small
/// multiple of its size then fails its allocation (an abort, not an exit code) instead of
/// taking the machine's memory.
fn limit_memory(cmd: &mut Command, bytes: u64) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        })
    }
}

/// The address space a merge or report of a small crafted folder gets: generous for the
/// binary itself (its threads' stacks, the allocator's arenas), far below what the defects
/// took (7.8 GB).
const SMALL_INPUT_MEMORY: u64 = 512 << 20;

fn merge(dirs: &[&Path], out: &Path) -> Output {
    let mut cmd = bin();
    cmd.arg("merge").args(dirs).arg("--out").arg(out);
    output_within(limit_memory(&mut cmd, SMALL_INPUT_MEMORY), QUICK)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Ended by itself with an exit code (no panic: 101, no abort: a signal) and `code`.
fn exited(out: &Output, code: i32) {
    let err = stderr(out);
    assert_eq!(out.status.code(), Some(code), "{:?}: {err}", out.status);
}

/// A refusal: exit `code` and one line on stderr containing each of `want`.
fn one_line_error(out: &Output, code: i32, want: &[&str]) {
    exited(out, code);
    let err = stderr(out);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    for w in want {
        assert!(err.contains(w), "want '{w}' in: {err}");
    }
}

/// Defect 9: a step whose start and end seconds are ±1e308 made `report --format hdr-log`
/// panic converting them to a Duration.
fn hdr_log_of_huge_step_times() {
    let s = scratch();
    let dir = s.path().join("run");
    let mut a = step(0, 10);
    a["start_s"] = json!(-1e308);
    a["end_s"] = json!(1e308);
    let mut b = step(1, 10);
    b["start_s"] = json!(1e308);
    b["end_s"] = json!(-1e308);
    folder(&dir, None, &[a, b]);
    let out_file = s.path().join("latency.hlog");
    let out = output_within(
        bin()
            .args(["report", "--format", "hdr-log", "--out"])
            .arg(&out_file)
            .arg(&dir),
        QUICK,
    );
    one_line_error(&out, 2, &["steps.jsonl", "step 1", "start"]);
    assert!(!out_file.exists(), "no half-written log");
}

/// Defect 7: a small steps.jsonl of many per-name histograms (each a few bytes of deflate
/// claiming the widest range HdrHistogram allows) took merge to 7.8 GB and an abort. Now each
/// histogram's claimed range is bounded before anything is allocated, and the merge holds
/// one name's histograms at a time.
fn merge_crafted_names_stays_small() {
    let s = scratch();
    // Valid histograms of the widest range overload records, many names: what a real run with
    // many request names writes, only more names. The merge keeps its cost per name small.
    let names = 6000;
    let per_name = histo::encode(&hist(&[1000]));
    let dirs = segments(s.path(), 1, |_, step| {
        let mut rows = Vec::new();
        let mut hists = serde_json::Map::new();
        for i in 0..names {
            let name = format!("n{i}");
            rows.push(name_row(&name));
            hists.insert(name, json!(per_name));
        }
        step["names"] = json!(rows);
        step["hists"]["names"] = Value::Object(hists);
    });
    let size = std::fs::metadata(dirs[0].join("steps.jsonl"))
        .unwrap()
        .len();
    let out = merge(&[&dirs[0], &dirs[1]], &s.path().join("merged"));
    exited(&out, 0);
    let merged = std::fs::metadata(s.path().join("merged/steps.jsonl"))
        .unwrap()
        .len();
    assert!(
        merged < 4 * size,
        "merged {merged} B from two inputs of {size} B"
    );
}

/// Defect 7: a histogram header claiming the widest range and most digits HdrHistogram
/// allows (tens of MB of counts each, from a few bytes) is refused before it is allocated,
/// naming the step and the file.
fn merge_histogram_header_claims_are_bounded() {
    let s = scratch();
    let mut wide = Histogram::<u64>::new_with_bounds(1, u64::MAX / 2, 5).unwrap();
    wide.record(1000).unwrap();
    let wide = histo::encode(&wide);
    let names = 40;
    let dirs = segments(s.path(), 1, |_, step| {
        let mut rows = Vec::new();
        let mut hists = serde_json::Map::new();
        for i in 0..names {
            let name = format!("n{i}");
            rows.push(name_row(&name));
            hists.insert(name, json!(wide));
        }
        step["names"] = json!(rows);
        step["hists"]["names"] = Value::Object(hists);
    });
    let out = merge(&[&dirs[0], &dirs[1]], &s.path().join("merged"));
    one_line_error(&out, 2, &["step 1", "seg0", "per-name", "histogram"]);
}

/// Defect 17: a FIFO planted as steps.jsonl made merge block for ever on its open.
fn merge_refuses_a_fifo() {
    let s = scratch();
    let dirs = segments(s.path(), 2, |_, _| {});
    let fifo = dirs[1].join("steps.jsonl");
    std::fs::remove_file(&fifo).unwrap();
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: plain syscall on a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let out = merge(&[&dirs[0], &dirs[1]], &s.path().join("merged"));
    one_line_error(&out, 2, &["seg1/steps.jsonl", "FIFO"]);
    assert!(!s.path().join("merged").exists());
}

/// Defect 17: a step whose count is negative did not parse and was skipped, so the merge
/// silently lost that segment's step; it is an error naming the file and the line.
fn merge_negative_count_names_file_and_line() {
    let s = scratch();
    let dirs = segments(s.path(), 2, |i, step| {
        if i == 1 && step["step"] == 1 {
            step["responses"] = json!(-5);
        }
    });
    let out = merge(&[&dirs[0], &dirs[1]], &s.path().join("merged"));
    one_line_error(&out, 2, &["seg1/steps.jsonl:2:", "invalid"]);
    assert!(!s.path().join("merged").exists());
}

/// Defect 17: a segment whose steps.jsonl holds no readable step (here only a cut-off line)
/// "merged" into a folder of 0 steps with exit 0.
fn merge_of_no_step_is_an_error() {
    let s = scratch();
    let dirs = segments(s.path(), 1, |_, _| {});
    let line = std::fs::read_to_string(dirs[1].join("steps.jsonl")).unwrap();
    std::fs::write(dirs[1].join("steps.jsonl"), &line[..line.len() / 2]).unwrap();
    let out = merge(&[&dirs[0], &dirs[1]], &s.path().join("merged"));
    one_line_error(&out, 2, &["seg1/steps.jsonl", "no step"]);
    assert!(!s.path().join("merged").exists());
}

/// Defect 18: the HTML report cost ~200 KB of memory per step (20,000 steps: 4.1 GB) and a
/// 100,000-step folder did not finish in a minute. The page now draws a bounded number of
/// steps and seconds and says so; its size no longer grows with the folder.
fn report_of_many_steps_is_bounded() {
    let s = scratch();
    let dir = s.path().join("run");
    let steps = 20_000;
    let template = step(0, 10);
    let mut lines = String::new();
    let mut seconds = String::new();
    for k in 0..steps {
        let mut st = template.clone();
        st["step"] = json!(k);
        st["offered"] = json!(100.0 + k as f64);
        st["offered_rate"] = json!(100.0 + k as f64);
        st["start_s"] = json!(2.0 * k as f64);
        st["end_s"] = json!(2.0 * k as f64 + 2.0);
        lines.push_str(&format!("{st}\n"));
        for j in 0..2 {
            let p = json!({"t": 2.0 * k as f64 + f64::from(j), "step": k, "offered": 100.0,
                "warmup": false, "responses": 5, "ok": 5, "errors": 0, "bytes_in": 500,
                "response_time_mean_ms": 1.0, "response_time_max_ms": 2.0});
            seconds.push_str(&format!("{p}\n"));
        }
    }
    folder(&dir, None, &[]);
    std::fs::write(dir.join("steps.jsonl"), lines).unwrap();
    std::fs::write(dir.join("series.jsonl"), seconds).unwrap();
    let mut cmd = bin();
    cmd.args(["report", "--format", "html"]).arg(&dir);
    let out = output_within(
        limit_memory(&mut cmd, SMALL_INPUT_MEMORY),
        std::time::Duration::from_secs(120),
    );
    exited(&out, 0);
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(page.len() < 4 << 20, "a page of {} bytes", page.len());
    assert!(
        page.contains("this page draws 200 of the 20000 steps"),
        "the page says what it drew"
    );
}
