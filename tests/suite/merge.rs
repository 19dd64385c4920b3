//! Scale-out through the real binary: two generators run the segments of one sweep
//! (`--segment I/2 --start-at T`), `overload merge` adds their folders, and the merged folder
//! is the plan's: exact histograms, the whole schedule, readable by report. Then every
//! refusal of merge, each one line with exit code 2, and the output written only through
//! fsutil.
use crate::common;
use crate::common::{bin, output_within, scratch, Target, QUICK};
use overload::metrics::histo;
use std::path::Path;
use std::time::Duration;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        two_segments_merge_into_the_plan_exactly,
        segment_flags_refuse_bad_values_in_one_line
    ]
}

/// Bound on one segment's sweep (2 s of waiting for the start, 2 short steps).
const SWEEP_LIMIT: Duration = Duration::from_secs(60);

fn merge(dirs: &[&Path], out: &Path) -> std::process::Output {
    let mut cmd = bin();
    cmd.arg("merge");
    for d in dirs {
        cmd.arg(d);
    }
    output_within(cmd.arg("--out").arg(out), QUICK)
}

fn one_line_usage_error(out: &std::process::Output, want: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains(want), "want '{want}' in: {err}");
}

fn two_segments_merge_into_the_plan_exactly() {
    // 4 workers x 2 ms: far above the 400 req/s of the plan, so no arrival waits.
    let t = Target::start(&["--workers", "4"]);
    let url = format!("{}/sleep?ms=2", t.url);
    let scratch = scratch();
    let dir = |name: &str| scratch.path().join(name);
    let start_at = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        + 2.0)
        .to_string();
    let segments: Vec<_> = (0..2)
        .map(|i| {
            let out = dir(&format!("seg{i}"));
            let child = bin()
                .args(["sweep", &url, "--rates", "200,400", "--warmup", "200ms"])
                .args(["--step", "1s", "--rest", "300ms", "--threads", "1"])
                .args(["--segment", &format!("{i}/2"), "--start-at", &start_at])
                .arg("--out")
                .arg(&out)
                .arg("-q")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("spawn a segment");
            (child, out)
        })
        .collect();
    let mut dirs = Vec::new();
    for (mut child, out) in segments {
        let status = common::wait_within(&mut child, SWEEP_LIMIT).expect("segment ended");
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert!(status.success(), "{err}");
        dirs.push(out);
    }
    let merged = dir("merged");
    let out = merge(&[&dirs[1], &dirs[0]], &merged);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("merged 2 segments: 2 step(s)"), "{stdout}");
    assert!(merged.join("report.html").is_file());

    let parts: Vec<_> = dirs
        .iter()
        .map(|d| overload::store::load(d).unwrap())
        .collect();
    let m = overload::store::load(&merged).unwrap();
    assert!(m.info.complete);
    assert_eq!(m.steps.len(), 2);
    for (k, level) in [200.0, 400.0].into_iter().enumerate() {
        let step = &m.steps[k];
        let mut sum = histo::decode(&parts[0].steps[k].response_time_hist).unwrap();
        sum.add(histo::decode(&parts[1].steps[k].response_time_hist).unwrap())
            .unwrap();
        let h = histo::decode(&step.response_time_hist).unwrap();
        assert_eq!(h.len(), sum.len(), "step {k}: counts");
        for q in 0..=1000 {
            let q = f64::from(q) / 1000.0;
            assert_eq!(
                h.value_at_quantile(q),
                sum.value_at_quantile(q),
                "step {k} q {q}"
            );
        }
        // Each segment offered half; the merged step is the plan's level.
        assert_eq!(parts[0].steps[k].offered, level / 2.0);
        assert_eq!(step.offered, level);
        assert_eq!(step.summary.offered_rate, Some(level));
        let s = &step.summary;
        // The constant schedule's arrivals in the 1 s window are level exactly: the two
        // halves (i, i+2, …) lost none and doubled none.
        assert_eq!(s.requests + s.unsent, level as u64, "step {k}: {s:?}");
        assert_eq!(
            s.responses,
            parts[0].steps[k].summary.responses + parts[1].steps[k].summary.responses
        );
        // The segments started the step together (--start-at grid).
        let apart = parts[0].steps[k]
            .start_unix_ms
            .abs_diff(parts[1].steps[k].start_unix_ms);
        assert!(apart < 100, "step {k}: {apart} ms apart");
    }
    // The merged folder reads as any run: report exports it.
    let out = output_within(
        bin()
            .args(["report", "--format", "json"])
            .arg(&merged)
            .arg("--out")
            .arg(dir("merged.json")),
        QUICK,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Refusals: a missing segment, a doubled one, a folder that holds results already.
    one_line_usage_error(
        &merge(&[&dirs[0]], &dir("x1")),
        "merge: segment 1/2 missing",
    );
    one_line_usage_error(
        &merge(&[&dirs[0], &dirs[0]], &dir("x2")),
        "are both segment 0/2",
    );
    one_line_usage_error(
        &merge(&[&dirs[0], &dirs[1]], &dirs[0]),
        "already holds results",
    );
    one_line_usage_error(&merge(&[&merged, &dirs[1]], &dir("x3")), "is not a segment");
    one_line_usage_error(
        &merge(&[&dir("nowhere"), &dirs[1]], &dir("x4")),
        "no such directory",
    );

    // A link planted where the merged steps go is not followed.
    let victim = dir("victim");
    std::fs::write(&victim, "precious").unwrap();
    let planted = dir("planted");
    std::fs::create_dir(&planted).unwrap();
    std::os::unix::fs::symlink(&victim, planted.join("series.jsonl")).unwrap();
    let out = merge(&[&dirs[0], &dirs[1]], &planted);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("symbolic link"));
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
}

fn segment_flags_refuse_bad_values_in_one_line() {
    for (args, want) in [
        (
            vec!["--segment", "2/2"],
            "--segment '2/2': I must be below N",
        ),
        (vec!["--segment", "1"], "--segment '1': no '/'"),
        (vec!["--start-at", "soon"], "--start-at 'soon'"),
        (vec!["--start-at", "1000000000"], "in the past"),
        (
            vec!["--users", "1", "--segment", "1/2"],
            "1 users leave this segment none",
        ),
    ] {
        let out = output_within(
            bin()
                .args(["run", "http://127.0.0.1:9/", "--duration", "1s"])
                .args(&args),
            QUICK,
        );
        one_line_usage_error(&out, want);
    }
}
