//! SIGINT and SIGTERM end `overload run` gracefully: in-flight requests are counted as interrupted, the
//! summary is printed, --json is written with `interrupted: true`, and the exit code is 130.
//! The target runs in this process, so the test sees when the load has reached it.
use crate::common;
use crate::common::{bin, procs, scratch, wait_until, wait_within};
use overload::target::{self, TargetConfig, TargetHandle};
use std::process::Stdio;
use std::time::{Duration, Instant};

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        sigint_and_sigterm_end_the_run_with_its_summary,
        sighup_ends_a_sweep_with_its_folder_marked_stopped,
        a_closed_stdout_or_stderr_loses_nothing_and_does_not_panic,
        a_signal_ends_a_run_stuck_on_a_hanging_server,
        a_signal_ends_an_experiments_readiness_wait_at_once
    ]
}

fn serve() -> TargetHandle {
    target::start(TargetConfig {
        threads: 1,
        ..TargetConfig::default()
    })
    .expect("target starts")
}

/// `seen`: how many requests must reach the target before the signal (more than the run's
/// concurrency, so that some were answered).
fn interrupt_run(signal: libc::c_int, t: &TargetHandle, url: &str, extra: &[&str], seen: u64) {
    let dir = scratch();
    let json = dir.path().join("run.json");
    let before = t.stats().requests;
    let mut child = bin()
        .args(["run", url, "--duration", "60s", "--json"])
        .arg(&json)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // Signal once the run has read answers: `seen` requests answered, and more requests
    // received than connections opened, so that a connection carried a second request, which
    // a client sends only once it has read the first one's answer.
    let (received, conns) = (t.stats().received, t.stats().connections);
    wait_until(
        "the run reads the target's answers",
        Duration::from_secs(15),
        || {
            let s = t.stats();
            s.requests >= before + seen && s.received - received > s.connections - conns
        },
    );
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, signal) };
    let sent = Instant::now();
    let status = wait_within(&mut child, Duration::from_secs(15))
        .unwrap_or_else(|| panic!("still running 15 s after signal {signal}"));
    let took = sent.elapsed();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(status.code(), Some(130), "signal {signal}: {stderr}");
    // Promptly: not after the 60 s duration nor the 60 s timeout of a hanging request.
    assert!(took < Duration::from_secs(5), "took {took:?} to stop");
    assert!(stdout.contains("interrupted"), "{stdout}");
    assert!(stdout.contains("throughput"), "the summary: {stdout}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("--json written")).unwrap();
    assert_eq!(v["interrupted"], true);
    assert!(v["responses"].as_u64().unwrap() > 0, "{v}");
    // Every counted request is answered, failed, or was in flight at the signal.
    assert_eq!(
        v["requests"].as_u64().unwrap(),
        v["responses"].as_u64().unwrap()
            + v["error_count"].as_u64().unwrap()
            + v["interrupted_requests"].as_u64().unwrap_or(0),
        "{v}"
    );
}

fn sigint_and_sigterm_end_the_run_with_its_summary() {
    let t = serve();
    let url = format!("{}/sleep?ms=100", t.url());
    interrupt_run(libc::SIGINT, &t, &url, &["--rate", "200"], 11);
    interrupt_run(libc::SIGTERM, &t, &url, &["--users", "10"], 11);
    // A closed terminal (SIGHUP) keeps the results like SIGTERM does.
    interrupt_run(libc::SIGHUP, &t, &url, &["--rate", "200"], 11);
}

fn sighup_ends_a_sweep_with_its_folder_marked_stopped() {
    let t = serve();
    let dir = scratch();
    let out = dir.path().join("out");
    let mut child = bin()
        .args(["sweep", &format!("{}/", t.url()), "--rates", "100:1000:100"])
        .args([
            "--warmup", "0s", "--step", "1s", "--rest", "0s", "-q", "--out",
        ])
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let steps = out.join("steps.jsonl");
    wait_until("a step on disk", Duration::from_secs(30), || {
        std::fs::read_to_string(&steps).map_or(0, |s| s.lines().count()) >= 1
    });
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGHUP) };
    let status = common::wait_within(&mut child, Duration::from_secs(15))
        .expect("the sweep ends after SIGHUP");
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let data = overload::store::load(&out).unwrap();
    assert!(!data.info.complete);
    let reason = data.info.stop_reason.unwrap_or_default();
    assert!(reason.contains("interrupted"), "{reason}");
}

/// Runs `overload run` with its stdout (and maybe stderr) closed before it prints, as
/// `overload run ... | head -1` does: the --json file is written, no panic, exit 0.
fn run_with_closed_pipes(close_stderr: bool) {
    let t = serve();
    let dir = scratch();
    let json = dir.path().join("run.json");
    let mut child = bin()
        .args([
            "run",
            &format!("{}/", t.url()),
            "--requests",
            "50",
            "--users",
            "2",
        ])
        .arg("--json")
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // Close the read ends at once: every later write of the child gets EPIPE.
    drop(child.stdout.take());
    if close_stderr {
        drop(child.stderr.take());
    }
    let status = common::wait_within(&mut child, Duration::from_secs(30)).expect("the run ends");
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    // 101 is Rust's panic exit code; 0 is the documented one for a run that went well.
    assert_eq!(status.code(), Some(0), "{stderr}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("--json written")).unwrap();
    assert_eq!(v["responses"].as_u64(), Some(50), "{v}");
}

fn a_closed_stdout_or_stderr_loses_nothing_and_does_not_panic() {
    run_with_closed_pipes(false);
    run_with_closed_pipes(true);
}

fn a_signal_ends_a_run_stuck_on_a_hanging_server() {
    let t = serve();
    let good = format!("{}/", t.url());
    let hang = format!("{}/fault/hang", t.url());
    // Requests hang with a 60 s timeout: only the signal can end this run early.
    interrupt_run(
        libc::SIGTERM,
        &t,
        &good,
        &[&hang, "--users", "4", "--timeout", "60s", "-q"],
        // The instant answers of `/` come before the users get stuck on the hanging URL.
        1,
    );
}

fn a_signal_ends_an_experiments_readiness_wait_at_once() {
    let dir = std::env::temp_dir().join(format!("overload-signal-exp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // A port nothing listens on: the server never gets ready, and the readiness wait would
    // last the 60 s ready_timeout unless the signal ends it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let file = dir.join("never-ready.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"never-ready\"\n[load]\nusers = 1\n[[config]]\nname = \"a\"\n\
             setup = \"exec sleep 60\"\nready = \"http://127.0.0.1:{port}/\"\n\
             ready_timeout = \"60s\"\n"
        ),
    )
    .unwrap();
    let mut child = bin()
        .arg("experiment")
        .arg(&file)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // Signal once the setup's server runs (`sleep`, the experiment's child): the experiment
    // is then waiting for it to be ready.
    wait_until("the setup command runs", Duration::from_secs(15), || {
        procs::children_of(child.id())
            .iter()
            .any(|(_, comm)| comm == "sleep")
    });
    assert!(
        child.try_wait().unwrap().is_none(),
        "still waiting for the server"
    );
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let sent = Instant::now();
    let status =
        wait_within(&mut child, Duration::from_secs(15)).expect("still waiting 15 s after SIGINT");
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The setup command's server is stopped with a grace period; far below the 60 s wait.
    assert!(
        sent.elapsed() < Duration::from_secs(8),
        "took {:?}",
        sent.elapsed()
    );
    assert_ne!(status.code(), Some(0), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}
