//! What ab, wrk and hey users type, and what they see: `-n 1000 -c 10`, `overload URL`, a host
//! without `http://`, `--body` without `-X`, `--json -`, ✓/✗ beside each SLO condition, p95,
//! no empty send-lag row in a closed loop, never a colour code into a pipe (the colour on a
//! terminal is tested in tests/suite/live.rs, which needs a pseudo-terminal).
use crate::common::{bin, output_within, Target, QUICK};
use std::time::Duration;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        ab_style_run_sends_n_requests_from_c_users,
        json_to_stdout_keeps_stdout_pure,
        urls_where_a_command_or_a_scheme_belongs_get_a_hint,
        body_without_method_warns_and_stays_get,
        version_names_the_commit
    ]
}

const LOAD: Duration = Duration::from_secs(60);

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// ab's `-n 1000 -c 10 URL`: exactly 1000 requests from 10 concurrent users, then the summary.
fn ab_style_run_sends_n_requests_from_c_users() {
    let t = Target::start(&["--threads", "1"]);
    let out = output_within(
        bin().args([
            "run",
            "-n",
            "1000",
            "-c",
            "10",
            "--slo",
            "p95<500ms,errors<1%",
            &t.url,
        ]),
        LOAD,
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("offered 10 users"), "{stdout}");
    assert!(stdout.contains("1000 answered"), "{stdout}");
    let head = stdout
        .lines()
        .find(|l| l.contains("p50"))
        .expect("percentile header");
    assert!(
        head.contains("p90") && head.contains("p95") && head.contains("p99"),
        "{head}"
    );
    // A closed loop has no schedule to be late against: no send-lag row at all.
    assert!(!stdout.contains("send lag"), "{stdout}");
    assert!(stdout.contains("✓ p95<500ms"), "{stdout}");
    assert!(stdout.contains("✓ errors<1%"), "{stdout}");
    // Standard output is a pipe here: never an escape code.
    assert!(!stdout.contains('\x1b'), "{stdout:?}");
}

/// `--json -`: standard output is the JSON alone (for jq), the summary goes to stderr.
fn json_to_stdout_keeps_stdout_pure() {
    let t = Target::start(&["--threads", "1"]);
    let out = output_within(
        bin().args(["run", "-n", "200", "-c", "4", "--json", "-", "-q", &t.url]),
        LOAD,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON object ({e}): {}", text(&out.stdout)));
    assert_eq!(v["responses"], 200);
    let rt = &v["response_time_ms"];
    let (p90, p95, p99) = (
        rt["p90"].as_f64().unwrap(),
        rt["p95"].as_f64().unwrap(),
        rt["p99"].as_f64().unwrap(),
    );
    assert!(p90 <= p95 && p95 <= p99 && p95 > 0.0, "{rt}");
    assert!(text(&out.stderr).contains("200 answered"));
}

/// `overload URL` and `overload run host:port`: one line saying what to type instead.
fn urls_where_a_command_or_a_scheme_belongs_get_a_hint() {
    for (args, want) in [
        (
            vec!["http://127.0.0.1:9/x"],
            "did you mean 'overload run http://127.0.0.1:9/x'?",
        ),
        (
            vec!["localhost:9"],
            "did you mean 'overload run http://localhost:9'?",
        ),
        (
            vec!["run", "-n", "1", "127.0.0.1:9/x"],
            "did you mean 'http://127.0.0.1:9/x'?",
        ),
    ] {
        let out = output_within(bin().args(&args), QUICK);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// `--body` without `-X`: the run goes on as a GET, with a warning that says how to post.
fn body_without_method_warns_and_stays_get() {
    let t = Target::start(&["--threads", "1"]);
    let out = output_within(
        bin().args(["run", "-n", "10", "-c", "1", "--body", "a=1", &t.url]),
        LOAD,
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("--body without -X") && err.contains("-X POST"),
        "{err}"
    );
    assert!(
        err.contains("GET http://"),
        "the plan line shows GET: {err}"
    );
    let quiet = output_within(
        bin().args([
            "run", "-n", "10", "-c", "1", "-X", "POST", "--body", "a=1", "-q", &t.url,
        ]),
        LOAD,
    );
    assert!(
        !text(&quiet.stderr).contains("warning"),
        "{}",
        text(&quiet.stderr)
    );
}

/// `--version` names the commit (or says it is unknown outside a checkout).
fn version_names_the_commit() {
    let out = output_within(bin().arg("--version"), QUICK);
    let v = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        v.starts_with(&format!("overload {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{v}"
    );
    let commit = v
        .trim_end()
        .trim_end_matches(')')
        .rsplit(' ')
        .next()
        .unwrap();
    assert!(
        commit == "unknown" || (commit.len() >= 7 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "{v}"
    );
}
