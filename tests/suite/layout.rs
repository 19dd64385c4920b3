//! The HTML reports read at a laptop's width and at a phone's: scripts/check-report-layout.sh
//! renders a sweep's report, a single run's and an experiment's in headless Chromium at 1300 and 400 px and
//! fails on sideways overflow. Ignored, with the reason, where Chromium is missing.
use crate::common::harness::{self, Need};
use crate::common::{bin, free_port, output_within, scratch, Target};
use std::path::Path;
use std::time::Duration;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    vec![harness::trial(
        "sweep_and_experiment_reports_fit_1300_and_400_px",
        &[Need::Chromium],
        sweep_and_experiment_reports_fit_1300_and_400_px,
    )]
}

fn sweep_and_experiment_reports_fit_1300_and_400_px() {
    let d = scratch();
    let t = Target::start(&["--workers", "4"]);
    let sweep = d.path().join("sweep");
    let o = output_within(
        bin()
            .args([
                "sweep",
                &format!("{}/sleep?ms=10", t.url),
                "--rates",
                "100,300,500",
            ])
            .args([
                "--warmup", "0s", "--step", "1s", "--rest", "0s", "-q", "--out",
            ])
            .arg(&sweep),
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // A single run's page (its own layout: timelines, histogram, percentile distribution).
    let run = d.path().join("run");
    let o = output_within(
        bin()
            .args(["run", &format!("{}/sleep?ms=10", t.url)])
            .args(["--rate", "100", "-d", "2s", "--warmup", "1s", "-q", "--out"])
            .arg(&run),
        Duration::from_secs(60),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    drop(t);
    let experiment = experiment_report(d.path());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/check-report-layout.sh");
    let o = output_within(
        std::process::Command::new("bash")
            .arg(script)
            .arg(sweep.join("report.html"))
            .arg(run.join("report.html"))
            .arg(&experiment),
        Duration::from_secs(120),
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        out.matches("ok ").count(),
        6,
        "three pages at two widths: {out}"
    );
}

/// Two configurations of the embedded target, one short step each.
fn experiment_report(dir: &Path) -> std::path::PathBuf {
    let exe = env!("CARGO_BIN_EXE_overload");
    let port = free_port();
    let text = format!(
        r#"
name = "layout"
[request]
path = "/sleep?ms=10"
[load]
kind = "steps"
users = [2, 8]
step = "1s"
warmup = "0s"
rest = "0s"
[[config]]
name = "a-configuration-with-a-long-name-to-stretch-the-tables"
setup = "exec {exe} target --listen 127.0.0.1:{port} --workers 4"
ready = "http://127.0.0.1:{port}/"
[[config]]
name = "w8"
setup = "exec {exe} target --listen 127.0.0.1:{port} --workers 8"
ready = "http://127.0.0.1:{port}/"
"#
    );
    let f = dir.join("layout.toml");
    std::fs::write(&f, text).unwrap();
    let out = dir.join("exp");
    let o = output_within(
        bin()
            .arg("experiment")
            .arg(&f)
            .args(["-q", "--out"])
            .arg(&out),
        Duration::from_secs(90),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report = out.join("report.html");
    assert!(
        report.is_file(),
        "no experiment report in {}",
        out.display()
    );
    report
}
