//! `overload agent --generate` and the controller (`sweep|capacity --generators FILE`) on
//! loopback: what the agent refuses (each refusal with its message), a step it runs, and
//! controller-driven runs over two local agents. Every load is bounded (seconds, a few
//! hundred requests a second).

use crate::common;
use crate::common::agent::{write_token, Agent, TOKEN};
use crate::common::{bin, output_within, scratch, wait_until, Target, QUICK};
use overload::target::{TargetConfig, TargetHandle};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Stdio;
use std::time::Duration;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        the_agent_refuses_what_its_owner_did_not_allow_and_runs_what_it_did,
        generator_flags_are_checked_at_start,
        a_tls_agent_prints_its_fingerprint_and_speaks_no_plain_http,
        a_controller_over_two_agents_finds_the_single_hosts_saturation_point,
        a_generator_killed_mid_step_marks_the_step_and_stops_or_continues,
        https_targets_from_agents_with_the_cacert_sent_as_text
    ]
}

/// The embedded target in this process (its counters show when load arrives).
fn in_process_target() -> TargetHandle {
    overload::target::start(TargetConfig::default()).expect("the target starts")
}

/// One HTTP/1.1 request; (status, body).
fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    auth: Option<&str>,
    body: &str,
) -> (u16, String) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let auth = auth.map_or(String::new(), |a| format!("Authorization: {a}\r\n"));
    // A server that refuses the request (a TLS agent asked in plain HTTP) may close before the
    // whole request is written: the write's broken pipe is that answer, read below as status 0.
    let _ = write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut resp = String::new();
    let _ = s.read_to_string(&mut resp);
    let status = resp.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = resp
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

fn bearer() -> String {
    format!("Bearer {TOKEN}")
}

/// A step plan as the controller sends it (the wire format, written out).
fn plan(url: &str, rate: f64, duration_ms: u64, users: Option<usize>) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let load = match users {
        None => {
            serde_json::json!({"loop": "open", "rate": rate, "arrival": "constant", "max_connections": 20})
        }
        Some(u) => serde_json::json!({"loop": "closed", "users": u, "think_ms": [0, 0]}),
    };
    serde_json::json!({
        "protocol": 2,
        "requests": [{"method": "GET", "url": url, "headers": []}],
        "pick": "sequence",
        "load": load,
        "conn": {"http": "1.1", "streams": 100, "keep_alive": true, "calls_per_connection": null,
                 "timeout_ms": 2000, "connect_timeout_ms": 1000, "threads": 1,
                 "pacing_slack_us": 1000, "seed": 1,
                 "tls": {"ca_pem": null, "insecure": false, "version": null, "resumption": true}},
        "warmup_ms": 0,
        "duration_ms": duration_ms,
        "index": 0,
        "segment_index": 0,
        "segment_count": 1,
        "start_at_unix_ms": now,
        "run_start_unix_ms": now,
    })
    .to_string()
}

fn the_agent_refuses_what_its_owner_did_not_allow_and_runs_what_it_did() {
    // In this process, so the test sees when the agent's load reaches it.
    let target = in_process_target();
    let target_url = target.url();
    let port = target_url.rsplit(':').next().unwrap().to_string();
    let allowed = format!("127.0.0.1:{port}");
    let agent = Agent::start(&[
        "--allow-target",
        &allowed,
        "--max-rate",
        "500",
        "--max-duration",
        "3s",
        "--max-connections",
        "20",
    ]);
    let ok_plan = plan(&format!("{}/", target_url), 100.0, 500, None);
    let a = agent.addr;

    // No token, a wrong token: refused before anything is read or run.
    let (st, body) = request(a, "POST", "/step", None, &ok_plan);
    assert_eq!((st, body.trim()), (401, "unauthorized"));
    let wrong = format!("Bearer {TOKEN}x");
    let (st, _) = request(a, "POST", "/step", Some(&wrong), &ok_plan);
    assert_eq!(st, 401);

    // Another port of the same host, another loopback address: not on the allow-list.
    for url in [
        format!("http://127.0.0.1:{}/", port.parse::<u16>().unwrap() ^ 1),
        format!("http://127.0.0.2:{port}/"),
    ] {
        let (st, body) = request(
            a,
            "POST",
            "/step",
            Some(&bearer()),
            &plan(&url, 100.0, 500, None),
        );
        assert_eq!(st, 403, "{url}: {body}");
        assert!(
            body.starts_with("refused: target") && body.contains(&format!("allowed: {allowed}")),
            "{url}: {body}"
        );
        assert_eq!(body.trim().lines().count(), 1, "one line: {body}");
    }

    // Beyond each limit, with the limit named.
    let url = format!("{}/", target_url);
    for (p, needle) in [
        (plan(&url, 900.0, 500, None), "--max-rate 500"),
        (plan(&url, 100.0, 5000, None), "--max-duration 3s"),
        (plan(&url, 100.0, 500, Some(21)), "--max-connections 20"),
    ] {
        let (st, body) = request(a, "POST", "/step", Some(&bearer()), &p);
        assert_eq!(st, 422, "{body}");
        assert!(
            body.starts_with("refused: ") && body.contains(needle),
            "{needle}: {body}"
        );
    }
    let (st, body) = request(a, "POST", "/step", Some(&bearer()), "{not json");
    assert_eq!(st, 400, "{body}");

    // What it allows: said before a run, and run (one step at a time).
    let (st, info) = request(a, "GET", "/generator", Some(&bearer()), "");
    assert_eq!(st, 200);
    let info: serde_json::Value = serde_json::from_str(&info).unwrap();
    assert_eq!(info["allowed_targets"][0], allowed.as_str());
    assert_eq!(info["max_rate"], 500.0);
    let long = plan(&url, 100.0, 1500, None);
    let before = target.stats().received;
    let first = std::thread::spawn(move || request(a, "POST", "/step", Some(&bearer()), &long));
    // The second is sent while the first runs: once its requests reach the target.
    wait_until("the first step's load arrives", QUICK, || {
        target.stats().received > before
    });
    let (st, body) = request(a, "POST", "/step", Some(&bearer()), &ok_plan);
    assert_eq!(st, 409, "{body}");
    assert!(body.contains("one at a time"), "{body}");
    let (st, body) = first.join().unwrap();
    assert_eq!(st, 200, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    let responses = answer["record"]["responses"].as_u64().unwrap();
    assert!(
        (140..=160).contains(&responses),
        "1.5 s at 100 req/s: {responses}"
    );
    assert_eq!(
        answer["record"]["statuses"]["200"].as_u64(),
        Some(responses)
    );
    assert!(
        answer["record"]["response_time_hist"]
            .as_str()
            .unwrap()
            .len()
            > 10
    );
}

fn generator_flags_are_checked_at_start() {
    let dir = scratch();
    let tok = dir.path().join("token");
    write_token(&tok);
    let t = tok.to_str().unwrap();
    for (args, needle) in [
        (vec!["--generate"], "--allow-target HOST:PORT"),
        (
            vec!["--allow-target", "127.0.0.1:80"],
            "apply to --generate",
        ),
        (
            vec!["--generate", "--allow-target", "127.0.0.1"],
            "expected HOST:PORT",
        ),
        (
            vec![
                "--generate",
                "--allow-target",
                "127.0.0.1:80",
                "--max-rate",
                "0",
            ],
            "--max-rate",
        ),
        (
            vec![
                "--generate",
                "--allow-target",
                "127.0.0.1:80",
                "--max-duration",
                "soon",
            ],
            "--max-duration",
        ),
    ] {
        let out = output_within(
            bin()
                .args(["agent", "--listen", "127.0.0.1:0", "--token-file", t])
                .args(&args),
            QUICK,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

fn a_tls_agent_prints_its_fingerprint_and_speaks_no_plain_http() {
    let target = Target::start(&[]);
    let allowed = target.url.trim_start_matches("http://").to_string();
    let agent = Agent::start(&["--allow-target", &allowed, "--tls-self-signed"]);
    let fp = agent.fingerprint.clone().expect("a fingerprint line");
    assert!(fp.starts_with("sha256:") && fp.len() == 7 + 95, "{fp}");
    // Plain HTTP to the TLS port gets no HTTP answer (the token never crosses in clear).
    let (st, _) = request(agent.addr, "GET", "/generator", Some(&bearer()), "");
    assert_eq!(st, 0);
}

/// `--generators FILE` listing `agents`.
fn generators_file(dir: &std::path::Path, agents: &[&Agent]) -> std::path::PathBuf {
    let tok = dir.join("controller-token");
    write_token(&tok);
    let list: String = agents
        .iter()
        .map(|a| format!("http://{} token-file={}\n", a.addr, tok.display()))
        .collect();
    let f = dir.join("generators");
    std::fs::write(&f, list).unwrap();
    f
}

fn steps(dir: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("steps.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The offered level of the first step flagged saturated.
fn saturation(dir: &std::path::Path) -> Option<f64> {
    steps(dir)
        .iter()
        .find(|s| {
            s["flags"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f == "saturated")
        })
        .map(|s| s["offered"].as_f64().unwrap())
}

fn a_controller_over_two_agents_finds_the_single_hosts_saturation_point() {
    // 2 workers × 10 ms: the target answers about 200 req/s, whoever sends.
    let target = Target::start(&["--workers", "2"]);
    let allowed = target.url.trim_start_matches("http://").to_string();
    let (a, b) = (
        Agent::start(&["--allow-target", &allowed]),
        Agent::start(&["--allow-target", &allowed]),
    );
    let dir = scratch();
    let gens = generators_file(dir.path(), &[&a, &b]);
    let url = format!("{}/sleep?ms=10", target.url);
    let plan = [
        "sweep",
        &url,
        "--rates",
        "100:350:50",
        "--step",
        "1s",
        "--warmup",
        "0s",
        "--rest",
        "300ms",
        "--past-saturation",
        "1",
        "--threads",
        "1",
        "-q",
    ];
    let single = dir.path().join("single");
    let out = output_within(
        bin().args(plan).arg("--out").arg(&single),
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let merged = dir.path().join("controlled");
    let out = output_within(
        bin()
            .args(plan)
            .arg("--out")
            .arg(&merged)
            .arg("--generators")
            .arg(&gens),
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (s1, s2) = (
        saturation(&single).expect("single saturates"),
        saturation(&merged).expect("controlled saturates"),
    );
    assert!(
        (s1 - s2).abs() <= 50.0 + 1e-9,
        "saturation single {s1}, controlled {s2}: more than one step apart"
    );
    // Every step was sent by both agents, and the merged step holds both parts' requests.
    let log = std::fs::read_to_string(merged.join("generators.jsonl")).unwrap();
    let first = steps(&merged)[0].clone();
    assert_eq!(log.lines().count(), steps(&merged).len());
    assert!(
        log.lines().all(|l| l.matches("\"ok\":true").count() == 2),
        "{log}"
    );
    let responses = first["responses"].as_u64().unwrap();
    assert!(
        (95..=105).contains(&responses),
        "1 s at 100 req/s over 2 agents: {responses}"
    );
    assert_eq!(
        first["generator"]["threads"], 2,
        "two agents of one thread each"
    );
}

fn a_generator_killed_mid_step_marks_the_step_and_stops_or_continues() {
    // In this process, so the test sees when a step's load reaches it.
    let target = in_process_target();
    let allowed = target.url().trim_start_matches("http://").to_string();
    let url = format!("{}/", target.url());
    for policy in ["stop", "continue"] {
        let a = Agent::start(&["--allow-target", &allowed]);
        let mut b = Agent::start(&["--allow-target", &allowed]);
        let dir = scratch();
        let gens = generators_file(dir.path(), &[&a, &b]);
        let out_dir = dir.path().join("run");
        let mut child = bin()
            .args([
                "sweep",
                &url,
                "--rates",
                "100,120,140",
                "--step",
                "2s",
                "--warmup",
                "0s",
            ])
            .args([
                "--rest",
                "200ms",
                "--threads",
                "1",
                "-q",
                "--on-generator-loss",
                policy,
            ])
            .arg("--generators")
            .arg(&gens)
            .arg("--out")
            .arg(&out_dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Into the second step: the first is stored (its load all received, as the agents
        // answered once their steps ended), then the target receives requests again.
        let steps_file = out_dir.join("steps.jsonl");
        wait_until("the first step stored", Duration::from_secs(30), || {
            std::fs::read_to_string(&steps_file).is_ok_and(|t| t.lines().count() >= 1)
        });
        let stored = target.stats().received;
        wait_until(
            "the second step's load arrives",
            Duration::from_secs(30),
            || target.stats().received > stored,
        );
        let _ = b.child.kill();
        let _ = b.child.wait();
        let status =
            common::wait_within(&mut child, Duration::from_secs(60)).expect("the controller ends");
        let mut stdout = String::new();
        child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut stdout)
            .unwrap();
        let st = steps(&out_dir);
        let lost: Vec<usize> = st
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                s["flags"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|f| f == "generator-lost")
            })
            .map(|(i, _)| i)
            .collect();
        assert_eq!(
            lost,
            vec![1],
            "{policy}: the second step is marked: {stdout}"
        );
        assert!(
            stdout.contains("lost") && stdout.contains(&format!("127.0.0.1:{}", b.addr.port())),
            "{policy}: {stdout}"
        );
        let info: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out_dir.join("run.json")).unwrap())
                .unwrap();
        let log = std::fs::read_to_string(out_dir.join("generators.jsonl")).unwrap();
        if policy == "stop" {
            assert_eq!(st.len(), 2, "stopped after the marked step");
            assert_eq!(info["complete"], false);
            assert!(
                info["stop_reason"]
                    .as_str()
                    .unwrap()
                    .contains("generator lost in step 2"),
                "{info}"
            );
            assert_ne!(status.code(), Some(0));
        } else {
            assert_eq!(st.len(), 3, "went on");
            assert!(status.success());
            let last = log.lines().last().unwrap();
            assert!(
                last.contains("\"segment\":\"0/1\"") && last.matches("\"ok\":true").count() == 1,
                "{log}"
            );
            // The last step offered its whole level through the one agent left.
            let r = st[2]["responses"].as_u64().unwrap();
            assert!(
                (270..=290).contains(&r),
                "2 s at 140 req/s from one agent: {r}"
            );
        }
    }
}

/// A controller sweep of one 1 s step at 100 req/s over `gens`; (its output, its step).
fn one_step(
    url: &str,
    gens: &std::path::Path,
    out: &std::path::Path,
    extra: &[&str],
) -> (std::process::Output, Option<serde_json::Value>) {
    let o = output_within(
        bin()
            .args([
                "sweep", url, "--rates", "100", "--step", "1s", "--warmup", "0s",
            ])
            .args(["--rest", "0s", "--threads", "1", "-q", "--generators"])
            .arg(gens)
            .arg("--out")
            .arg(out)
            .args(extra),
        Duration::from_secs(60),
    );
    let step = out
        .join("steps.jsonl")
        .exists()
        .then(|| steps(out)[0].clone());
    (o, step)
}

fn https_targets_from_agents_with_the_cacert_sent_as_text() {
    let dir = scratch();
    let ca = dir.path().join("ca.pem");
    let target = Target::start(&["--tls", "--threads", "2", "--ca-out", ca.to_str().unwrap()]);
    assert!(target.url.starts_with("https://"), "{}", target.url);
    let allowed = target.url.trim_start_matches("https://").to_string();
    let (a, b) = (
        Agent::start(&["--allow-target", &allowed]),
        Agent::start(&["--allow-target", &allowed]),
    );
    let gens = generators_file(dir.path(), &[&a, &b]);
    let url = format!("{}/", target.url);
    let ca_arg = ca.to_str().unwrap();

    // The CA travels in the step as its PEM text: both agents verify the target with it, and
    // the TLS options travel too (1.2 only, no resumption: one full handshake a connection).
    let (o, step) = one_step(
        &url,
        &gens,
        &dir.path().join("verified"),
        &[
            "--cacert",
            ca_arg,
            "--tls-version",
            "1.2",
            "--tls-resumption",
            "off",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = step.unwrap();
    let responses = s["responses"].as_u64().unwrap();
    assert!((95..=105).contains(&responses), "{s}");
    assert_eq!(s["statuses"]["200"].as_u64(), Some(responses), "{s}");
    assert_eq!(s["tls"]["handshakes_resumed"], 0, "{s}");
    assert!(s["tls"]["handshakes_full"].as_u64().unwrap() >= 2, "{s}");
    let log = std::fs::read_to_string(dir.path().join("verified/generators.jsonl")).unwrap();
    assert_eq!(log.matches("\"ok\":true").count(), 2, "{log}");

    // Without --cacert the agents' own roots do not know this CA: every request fails on
    // the certificate, which shows the CA above came with the step.
    let (_, step) = one_step(&url, &gens, &dir.path().join("unverified"), &[]);
    let s = step.expect("the step is stored");
    assert_eq!(s["responses"], 0, "{s}");
    assert!(s["errors"]["tls-certificate"].as_u64().unwrap() > 0, "{s}");

    // A client key never leaves the controller: refused in one line before any agent is asked.
    let key = dir.path().join("client.pem");
    std::fs::write(&key, "x").unwrap();
    let key = key.to_str().unwrap();
    let (o, _) = one_step(
        &url,
        &gens,
        &dir.path().join("client"),
        &["--client-cert", key, "--client-key", key],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("client key is not sent"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
