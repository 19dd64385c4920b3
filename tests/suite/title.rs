//! `--title TEXT`: one option that names the run on every run kind (run, sweep, capacity,
//! demo), wired once in the run lifecycle: the banner, run.json's config, the terminal view's
//! header and the report's title all say it.
use crate::common::{bin, output_within, scratch, Target};
use std::time::Duration;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        a_title_names_the_run_in_its_banner_record_and_report,
        a_title_with_control_characters_is_a_usage_error,
        every_run_kind_takes_a_title
    ]
}

const LOAD: Duration = Duration::from_secs(60);

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn run_json(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap()
}

/// A run and a sweep with `--title`: the banner says it, run.json keeps it, the report is
/// titled by it.
fn a_title_names_the_run_in_its_banner_record_and_report() {
    let t = Target::start(&[]);
    let url = format!("{}/", t.url);
    let d = scratch();
    let title = "checkout, after the FPM change";
    for (kind, extra) in [
        ("run", &["-R", "50", "-d", "1s"][..]),
        (
            "sweep",
            &["--rates", "50", "--step", "1s", "--warmup", "0s"][..],
        ),
    ] {
        let dir = d.path().join(kind);
        let out = output_within(
            bin()
                .arg(kind)
                .args(extra)
                .args(["--title", title, "--out"])
                .arg(&dir)
                .arg(&url),
            LOAD,
        );
        let err = text(&out.stderr);
        assert!(out.status.success(), "{kind}: {err}");
        assert!(
            err.contains(title),
            "{kind}: the banner names the run:\n{err}"
        );
        assert_eq!(run_json(&dir)["config"]["title"], title, "{kind}");
        let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
        assert!(
            html.contains("<title>overload report: checkout, after the FPM change</title>"),
            "{kind}: the report's title"
        );
        assert!(
            html.contains("<h1>checkout, after the FPM change</h1>"),
            "{kind}"
        );
    }
}

/// A title with a control character (an escape sequence that would reach every terminal line
/// and report) is refused before anything runs: one line naming the option, exit code 2, no
/// folder written.
fn a_title_with_control_characters_is_a_usage_error() {
    let d = scratch();
    let dir = d.path().join("res");
    let out = output_within(
        bin()
            .args(["sweep", "--rates", "50", "--step", "1s"])
            .args(["--title", "a\u{1b}[2Jb", "--out"])
            .arg(&dir)
            .arg("http://127.0.0.1:9/"),
        LOAD,
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--title"), "{err}");
    assert!(err.contains("control characters"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line:\n{err}");
    assert!(!dir.exists(), "nothing written");
}

/// Every run kind takes it (`--help-all` of each, the list of every option, names it).
fn every_run_kind_takes_a_title() {
    for kind in ["run", "sweep", "capacity", "demo"] {
        let out = output_within(bin().args([kind, "--help-all"]), LOAD);
        assert!(text(&out.stdout).contains("--title"), "{kind} --help-all");
    }
}
