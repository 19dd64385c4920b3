//! HTTPS end to end against the embedded target's `--tls`: verification (the CA, --insecure),
//! handshake counts with and without resumption, the TLS faults as counted errors within the
//! run's bound, and bad TLS input as one-line usage errors.
use crate::common;
use crate::common::{bin, output_within, run_json, run_measured, scratch, Target, QUICK};
use std::path::PathBuf;
use std::time::Duration;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        https_with_the_targets_ca_answers_everything_and_times_handshakes_apart,
        an_unknown_ca_is_a_tls_certificate_error_and_insecure_passes_it_saying_so,
        resumption_off_is_one_full_handshake_per_request_on_resumes_after_the_first,
        every_tls_fault_is_a_counted_error_within_the_bound,
        bad_tls_input_is_a_usage_error,
        https_negotiates_h2_by_alpn_and_counts_handshakes_and_reasons_under_both,
        the_plan_line_summary_and_json_name_the_protocol_and_how_it_was_chosen
    ]
}

/// A `target --tls` whose CA certificate is written into a scratch folder.
struct TlsTarget {
    target: Target,
    ca: PathBuf,
    _dir: tempfile::TempDir,
}

fn tls_target(extra: &[&str]) -> TlsTarget {
    let dir = scratch();
    let ca = dir.path().join("ca.pem");
    let mut args = vec!["--tls", "--threads", "2", "--ca-out", ca.to_str().unwrap()];
    args.extend_from_slice(extra);
    let target = Target::start(&args);
    assert!(target.url.starts_with("https://"), "{}", target.url);
    TlsTarget {
        target,
        ca,
        _dir: dir,
    }
}

fn u(v: &serde_json::Value, path: &str) -> u64 {
    common::f(v, path) as u64
}

fn https_with_the_targets_ca_answers_everything_and_times_handshakes_apart() {
    let t = tls_target(&[]);
    let url = format!("{}/", t.target.url);
    let ca = t.ca.to_str().unwrap();
    let (_, v) = run_json(&[
        "run",
        &url,
        "--users",
        "4",
        "--threads",
        "2",
        "--requests",
        "400",
        "--cacert",
        ca,
    ]);
    assert_eq!(u(&v, "responses"), 400, "{v}");
    assert_eq!(u(&v, "error_count"), 0, "{v}");
    // Every connection opened did one handshake, full or resumed, timed apart from connect.
    let hs = u(&v, "tls.handshakes_full") + u(&v, "tls.handshakes_resumed");
    assert_eq!(hs, u(&v, "connections_opened"), "{v}");
    assert!(hs >= 1, "{v}");
    assert_eq!(u(&v, "tls.handshake_time_ms.count"), hs, "{v}");
    assert!(common::f(&v, "tls.handshake_time_ms.mean") > 0.0, "{v}");
    assert_eq!(u(&v, "first_byte_ms.count"), 400, "{v}");
    assert!(v["urls"][0].as_str().unwrap().contains("https://"), "{v}");
}

fn an_unknown_ca_is_a_tls_certificate_error_and_insecure_passes_it_saying_so() {
    let t = tls_target(&[]);
    let url = format!("{}/", t.target.url);
    let m = run_measured(
        None,
        &["run", &url, "--users", "2", "--requests", "20"],
        true,
        QUICK,
    );
    assert!(!m.stderr.contains("panicked"), "{}", m.stderr);
    assert_eq!(m.errors("tls-certificate"), 20, "{}", m.v);
    // One failure per handshake, not per request: the connect backoff failed the rest at
    // once, without an attempt (tests/suite/connect.rs).
    let attempts = u(&m.v, "connects.attempts");
    assert!((1..=20).contains(&attempts), "{}", m.v);
    assert_eq!(u(&m.v, "tls.failures.unknown-issuer"), attempts, "{}", m.v);
    assert_eq!(u(&m.v, "responses"), 0, "{}", m.v);
    assert!(m.stderr.contains("tls-certificate"), "{}", m.stderr);

    let (_, v) = run_json(&[
        "run",
        &url,
        "--users",
        "2",
        "--requests",
        "20",
        "--insecure",
    ]);
    assert_eq!(u(&v, "responses"), 20, "{v}");
    assert_eq!(u(&v, "error_count"), 0, "{v}");
    let warnings = v["warnings"].to_string();
    assert!(warnings.contains("--insecure"), "{v}");
}

/// One user on one thread, a new connection per request: with resumption off every handshake
/// is full; on, only the first is.
fn resumption_off_is_one_full_handshake_per_request_on_resumes_after_the_first() {
    let t = tls_target(&[]);
    let url = format!("{}/", t.target.url);
    let ca = t.ca.to_str().unwrap();
    let base = [
        "run",
        &url,
        "--users",
        "1",
        "--threads",
        "1",
        "--requests",
        "60",
        "--no-keep-alive",
        "--cacert",
        ca,
    ];
    let (_, off) = run_json(&[&base[..], &["--tls-resumption", "off"]].concat());
    assert_eq!(u(&off, "responses"), 60, "{off}");
    assert_eq!(u(&off, "tls.handshakes_full"), 60, "{off}");
    assert_eq!(u(&off, "tls.handshakes_resumed"), 0, "{off}");
    let (_, on) = run_json(&base);
    assert_eq!(u(&on, "responses"), 60, "{on}");
    assert_eq!(u(&on, "tls.handshakes_full"), 1, "{on}");
    assert_eq!(u(&on, "tls.handshakes_resumed"), 59, "{on}");
    // TLS 1.2 resumes too (session tickets or ids).
    let (_, v12) = run_json(&[&base[..], &["--tls-version", "1.2"]].concat());
    assert_eq!(u(&v12, "tls.handshakes_full"), 1, "{v12}");
    assert_eq!(u(&v12, "tls.handshakes_resumed"), 59, "{v12}");
}

/// Each TLS fault ends as counted errors of the right kind and reason, within the run's bound
/// (2 s + --timeout + 1 s of drain), the generator's memory staying small.
fn every_tls_fault_is_a_counted_error_within_the_bound() {
    for (fault, kind, reason) in [
        ("stall", "tls-handshake", "timeout"),
        ("close", "tls-handshake", "closed"),
        ("expired", "tls-certificate", "expired"),
        ("wrong-name", "tls-certificate", "name-mismatch"),
    ] {
        let t = tls_target(&["--tls-fault", fault]);
        let url = format!("{}/", t.target.url);
        let ca = t.ca.to_str().unwrap();
        let m = run_measured(
            None,
            &[
                "run",
                &url,
                "--users",
                "4",
                "--threads",
                "2",
                "--duration",
                "2s",
                "--timeout",
                "2s",
                "--connect-timeout",
                "300ms",
                "--cacert",
                ca,
            ],
            true,
            QUICK,
        );
        assert!(!m.stderr.contains("panicked"), "{fault}: {}", m.stderr);
        assert!(m.errors(kind) > 0, "{fault}: {}", m.v);
        assert_eq!(u(&m.v, "error_count"), m.errors(kind), "{fault}: {}", m.v);
        // One reason per failed handshake; the requests the connect backoff held failed at
        // once as the same kind, without a handshake.
        let attempts = u(&m.v, "connects.attempts");
        assert_eq!(
            attempts + u(&m.v, "connects.held_by_backoff"),
            m.errors(kind),
            "{fault}: {}",
            m.v
        );
        assert_eq!(
            u(&m.v, &format!("tls.failures.{reason}")),
            attempts,
            "{fault}: {}",
            m.v
        );
        assert_eq!(u(&m.v, "responses"), 0, "{fault}: {}", m.v);
        assert!(
            m.elapsed < Duration::from_secs(15),
            "{fault}: {:?}",
            m.elapsed
        );
        // Thousands of failed handshakes (close, certificates) must not pile up memory.
        assert!(m.max_rss_kb < 64 * 1024, "{fault}: {} kB", m.max_rss_kb);
    }
}

/// Exit 2 with one line naming the problem, before any load.
fn assert_usage(args: &[&str], names: &str) {
    let out = output_within(bin().args(args), QUICK);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(names), "{args:?}: {err} should name {names}");
}

fn bad_tls_input_is_a_usage_error() {
    let dir = scratch();
    let junk = dir.path().join("junk.pem");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    let junk = junk.to_str().unwrap();
    let missing = dir.path().join("missing.pem");
    let missing = missing.to_str().unwrap();
    // The port is never reached: every case is refused before the run.
    let url = "https://127.0.0.1:9/";
    fn run<'a>(url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        [&["run", url, "--requests", "1"][..], extra].concat()
    }
    assert_usage(&run(url, &["--cacert", junk]), "--cacert");
    assert_usage(&run(url, &["--cacert", missing]), "--cacert");
    assert_usage(&run(url, &["--client-cert", junk]), "--client-key");
    assert_usage(
        &run(url, &["--client-cert", junk, "--client-key", junk]),
        "--client-cert",
    );
    assert_usage(&run(url, &["--tls-version", "1.1"]), "1.1");
    assert_usage(&run(url, &["--insecure", "--cacert", junk]), "--insecure");
    assert_usage(
        &[
            "run",
            "http://127.0.0.1:9/",
            "--requests",
            "1",
            "--insecure",
        ],
        "https://",
    );
    assert_usage(
        &["target", "--tls", "--cert", junk, "--key", junk],
        "--cert",
    );
    assert_usage(&["target", "--cert", junk, "--key", junk], "--tls");
    assert_usage(&["target", "--tls", "--tls-fault", "nope"], "--tls-fault");
}

/// `--http auto` over https speaks what the server picks by ALPN (the target offers h2 first),
/// `--http 1.1` keeps HTTP/1.1; both count the handshakes of their connections, and a
/// refused certificate under HTTP/2 is counted with its reason as under HTTP/1.1.
fn https_negotiates_h2_by_alpn_and_counts_handshakes_and_reasons_under_both() {
    let t = tls_target(&[]);
    let url = format!("{}/", t.target.url);
    let ca = t.ca.to_str().unwrap();
    for (http, proto) in [("auto", "2"), ("1.1", "1.1"), ("2", "2")] {
        let (_, v) = run_json(&[
            "run",
            &url,
            "--users",
            "4",
            "--threads",
            "2",
            "--requests",
            "300",
            "--cacert",
            ca,
            "--http",
            http,
        ]);
        assert_eq!(u(&v, "error_count"), 0, "--http {http}: {v}");
        assert_eq!(
            v["protocols"][proto].as_u64(),
            Some(300),
            "--http {http}: {v}"
        );
        let hs = u(&v, "tls.handshakes_full") + u(&v, "tls.handshakes_resumed");
        assert!(hs >= 1, "--http {http}: {v}");
        assert_eq!(hs, u(&v, "connections_opened"), "--http {http}: {v}");
        assert_eq!(u(&v, "first_byte_ms.count"), 300, "--http {http}: {v}");
    }
    let m = run_measured(
        None,
        &[
            "run",
            &url,
            "--users",
            "2",
            "--threads",
            "1",
            "--requests",
            "10",
            "--http",
            "2",
        ],
        true,
        QUICK,
    );
    assert_eq!(m.errors("tls-certificate"), 10, "{}", m.v);
    // Per handshake: an HTTP/2 connection's failure counts once for the requests it carried.
    let attempts = u(&m.v, "connects.attempts");
    assert!((1..=10).contains(&attempts), "{}", m.v);
    assert_eq!(u(&m.v, "tls.failures.unknown-issuer"), attempts, "{}", m.v);
}

/// Item 8 of issue 27: an https:// run says which protocol ALPN chose and how to compare with
/// http://, in the plan line, the terminal summary and the JSON; `--http 1.1` says it was
/// asked for.
fn the_plan_line_summary_and_json_name_the_protocol_and_how_it_was_chosen() {
    let t = tls_target(&[]);
    let url = format!("{}/", t.target.url);
    let ca = t.ca.to_str().unwrap();
    let dir = scratch();
    let json = dir.path().join("run.json");
    for (http, version, by, says) in [
        (
            "auto",
            "2",
            "alpn",
            "HTTP/2, negotiated by ALPN; --http 1.1 to compare with http://",
        ),
        ("1.1", "1.1", "http-flag", "HTTP/1.1, asked with --http 1.1"),
    ] {
        let m = common::run_measured(
            None,
            &[
                "run",
                &url,
                "--users",
                "2",
                "--requests",
                "20",
                "--cacert",
                ca,
                "--http",
                http,
                "--json",
                json.to_str().unwrap(),
            ],
            false,
            QUICK,
        );
        m.assert_clean_exit(0, http);
        let plan = m
            .stderr
            .lines()
            .find(|l| l.starts_with("overload: "))
            .unwrap_or("");
        assert!(plan.contains(says), "--http {http}: {}", m.stderr);
        assert!(
            m.stdout
                .contains(&format!("  protocol       {says} (sent {version}: 20)")),
            "--http {http}: {}",
            m.stdout
        );
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(v["protocol"]["version"], version, "{v}");
        assert_eq!(v["protocol"]["chosen_by"], by, "{v}");
    }
}
