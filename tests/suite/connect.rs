//! Connection attempts counted as what they are, apart from the requests, and the connect
//! backoff that keeps a run against a host that answers nothing (a typo'd port, a certificate
//! the run refuses) from flooding it (docs/security.md).
use crate::common;
use crate::common::{free_port, run_measured, scratch, Target};
use std::time::Duration;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        a_closed_port_gets_a_bounded_number_of_connect_attempts,
        an_untrusted_certificate_counts_handshakes_failed_as_attempts
    ]
}

fn u(v: &serde_json::Value, path: &str) -> u64 {
    common::f(v, path) as u64
}

/// The backoff's bound for a 2 s run: about 9 attempts per worker thread once it holds, the
/// first ones in flight together before it starts, and a wide margin. Without it the same
/// run makes about 10^5 (155,601 in the issue).
const FEW: u64 = 500;

/// Nothing listens: a 2 s run, closed loop and open loop, makes a bounded number of connect
/// attempts, each refused; every request is still counted (the open loop's schedule exact),
/// the ones the backoff held failing at once as the last attempt did.
fn a_closed_port_gets_a_bounded_number_of_connect_attempts() {
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}/");
    let dir = scratch();
    let json = dir.path().join("run.json");
    let json = json.to_str().unwrap();
    // Closed loop (the default 10 users), its terminal summary kept.
    let m = run_measured(
        None,
        &["run", &url, "-d", "2s", "--threads", "2", "--json", json],
        false,
        Duration::from_secs(60),
    );
    m.assert_clean_exit(1, "a run where nothing answered");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap();
    let attempts = u(&v, "connects.attempts");
    assert!((1..FEW).contains(&attempts), "{attempts} attempts: {v}");
    assert_eq!(u(&v, "connects.failed.connect-refused"), attempts, "{v}");
    assert_eq!(u(&v, "connections_opened"), 0, "{v}");
    // Users wait for the backoff (or 10 ms) between held requests: no spin counting them.
    let errors = u(&v, "error_count");
    assert!(errors < 10_000, "{errors} errors: {v}");
    assert_eq!(u(&v, "errors.connect-refused"), errors, "{v}");
    assert_eq!(
        u(&v, "connects.held_by_backoff") + attempts,
        errors,
        "every failed request was an attempt or held: {v}"
    );
    assert!(
        m.stdout.contains(&format!(
            "connects       {attempts} attempts, {attempts} failed (connect-refused: {attempts}); "
        )),
        "{}",
        m.stdout
    );
    assert!(
        m.stdout.contains("the connect backoff holding"),
        "{}",
        m.stdout
    );

    // Open loop at 1000/s: the 2000 arrivals are all counted, as errors, whether an attempt
    // went or the backoff held it.
    let m = run_measured(
        None,
        &["run", &url, "-d", "2s", "--rate", "1000", "--threads", "2"],
        true,
        Duration::from_secs(60),
    );
    m.assert_clean_exit(1, "an open-loop run where nothing answered");
    let v = &m.v;
    let attempts = u(v, "connects.attempts");
    assert!((1..FEW).contains(&attempts), "{attempts} attempts: {v}");
    let requests = u(v, "requests");
    assert!(
        (1990..=2000).contains(&(requests + u(v, "unsent"))),
        "the schedule's 2000 arrivals: {v}"
    );
    assert_eq!(m.errors("connect-refused"), requests, "{v}");
    assert_eq!(u(v, "connects.held_by_backoff") + attempts, requests, "{v}");
}

/// A certificate the run does not trust: every attempt is a handshake started and failed
/// with its reason, counted per connection (not "0 connections opened" alone), and the
/// backoff bounds them as it bounds refusals.
fn an_untrusted_certificate_counts_handshakes_failed_as_attempts() {
    let dir = scratch();
    let ca = dir.path().join("ca.pem");
    let target = Target::start(&["--tls", "--threads", "1", "--ca-out", ca.to_str().unwrap()]);
    let url = format!("{}/", target.url);
    let json = dir.path().join("run.json");
    for http in ["1.1", "2"] {
        let m = run_measured(
            None,
            &[
                "run",
                &url,
                "-d",
                "2s",
                "--threads",
                "2",
                "--http",
                http,
                "--json",
                json.to_str().unwrap(),
            ],
            false,
            Duration::from_secs(60),
        );
        m.assert_clean_exit(1, "a run refusing the certificate");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let attempts = u(&v, "connects.attempts");
        assert!((1..FEW).contains(&attempts), "--http {http}: {v}");
        assert_eq!(
            u(&v, "tls.handshakes_started"),
            attempts,
            "--http {http}: {v}"
        );
        assert_eq!(
            u(&v, "tls.failures.unknown-issuer"),
            attempts,
            "--http {http}: {v}"
        );
        assert_eq!(u(&v, "connections_opened"), 0, "--http {http}: {v}");
        assert!(
            v["connects"]["failed"].as_object().unwrap().is_empty(),
            "{v}"
        );
        assert!(
            m.stdout.contains(&format!(
                "TLS            {attempts} handshakes started: 0 full, 0 resumed, {attempts} failed (unknown-issuer: {attempts})"
            )),
            "--http {http}: {}",
            m.stdout
        );
        assert!(
            m.stdout.contains(&format!(
                "connects       {attempts} attempts, {attempts} failed"
            )),
            "--http {http}: {}",
            m.stdout
        );
    }
}
