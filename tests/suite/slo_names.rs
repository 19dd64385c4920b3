//! `--slo 'NAME:metric<value'` names a request: a name the run does not have is a typo to
//! refuse before any load, on `run`, `sweep` and `capacity` alike (one line, exit 2). Nothing
//! listens on the URL's port: a refused command never connects, an accepted one would fail.
use crate::common::{bin, output_within, scratch, QUICK};
use std::time::{Duration, Instant};

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        an_unknown_slo_name_is_refused_by_run_sweep_and_capacity,
        a_known_slo_name_passes_the_check
    ]
}

/// A scenario whose requests are named `home` and `account`.
const NAMED: &str = r#"
[[request]]
name = "home"
url = "/"

[[request]]
name = "account"
url = "/account"
"#;

/// Runs `args`; asserts exit 2, one `overload:` line on stderr naming `what`, nothing run.
fn assert_refused(args: &[&str], what: &str) {
    let start = Instant::now();
    let out = output_within(bin().args(args), QUICK);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(err.starts_with("overload: "), "{args:?}: {err}");
    assert!(err.contains(what), "{args:?}: {err} should say {what}");
    assert!(out.stdout.is_empty(), "{args:?}: {:?}", out.stdout);
    // Refused before the first step, not after it.
    assert!(start.elapsed() < Duration::from_secs(5), "{args:?} ran");
}

fn an_unknown_slo_name_is_refused_by_run_sweep_and_capacity() {
    let dir = scratch();
    let file = dir.path().join("named.toml");
    std::fs::write(&file, NAMED).unwrap();
    let file = file.to_str().unwrap();
    let out = dir.path().join("out");
    let out = out.to_str().unwrap();
    let url = "http://127.0.0.1:9";
    let slo = "login:p95<300ms";
    let said = "no request is named 'login' (names: home, account)";
    let scenario = ["--scenario", file, url];
    for cmd in [
        &["run", "--users", "2", "--duration", "2s"][..],
        &["sweep", "--users", "1,2", "--step", "2s", "--out", out][..],
    ] {
        let mut args = cmd.to_vec();
        args.extend(scenario);
        args.extend(["--slo", slo]);
        assert_refused(&args, said);
    }
    // capacity is open loop: its names are the URLs' paths.
    let paths = "no request is named 'login' (names: /, /account)";
    let home = format!("{url}/");
    let account = format!("{url}/account");
    assert_refused(
        &[
            "capacity", &home, &account, "--slo", slo, "--start", "10", "--max", "20", "--out", out,
        ],
        paths,
    );
    // The sweep's results folder was never made: nothing half-written is left.
    assert!(!std::path::Path::new(out).exists());
}

/// The names the scenario does define are accepted by the sweep: it starts, and only then
/// fails for want of a server (exit 1, a step of connection errors), not with a usage error.
fn a_known_slo_name_passes_the_check() {
    let dir = scratch();
    let file = dir.path().join("named.toml");
    std::fs::write(&file, NAMED).unwrap();
    let out = dir.path().join("out");
    let out = output_within(
        bin().args([
            "sweep",
            "--scenario",
            file.to_str().unwrap(),
            "http://127.0.0.1:9",
            "--users",
            "1",
            "--step",
            "1s",
            "--warmup",
            "0s",
            "--slo",
            "account:p95<300ms",
            "--out",
            out.to_str().unwrap(),
            "-q",
        ]),
        Duration::from_secs(30),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("no request is named"), "{err}");
}
