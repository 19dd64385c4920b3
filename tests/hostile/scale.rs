//! Hostile cases: a hostile generator agent seen by the controller, and a hostile controller
//! seen by `agent --generate`. The hostile agent is a loopback listener in the test that
//! answers `GET /generator` as an agent would and then misbehaves on `POST /step`; the honest
//! side is the real binary.
use crate::common::harness::trial;
use crate::common::{bin, scratch, wait_until, wait_within, Target};
use libtest_mimic::Trial;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub fn trials() -> Vec<Trial> {
    vec![
        trial(
            "scale_a_dripping_generator_is_lost_by_the_step_deadline",
            &[],
            a_dripping_generator_is_lost_by_the_step_deadline,
        ),
        trial(
            "scale_sigint_ends_a_controller_run_promptly_keeping_the_step",
            &[],
            sigint_ends_a_controller_run_promptly_keeping_the_step,
        ),
        trial(
            "scale_silent_generators_stop_the_run_at_the_check_in_one_deadline",
            &[],
            silent_generators_stop_the_run_at_the_check_in_one_deadline,
        ),
        trial(
            "scale_a_hostile_controllers_step_is_checked_as_the_command_line",
            &[],
            a_hostile_controllers_step_is_checked_as_the_command_line,
        ),
    ]
}

use crate::common::agent::{write_token, Agent, TOKEN};

/// A real generator agent allowed to load `target` (tests/common/agent.rs).
fn agent_for(target: &Target) -> Agent {
    Agent::start(&["--allow-target", target.url.trim_start_matches("http://")])
}

/// How the hostile agent answers `POST /step`.
#[derive(Clone, Copy)]
enum Hostile {
    /// A 4 KB answer, one byte every 200 ms (about 14 minutes in all): every read gets a
    /// byte long before any per-read timeout, so only a deadline on the whole answer ends it.
    Drip,
    /// The same drip from the first request on: the check before the run (`GET /generator`).
    DripFromTheStart,
}

/// A hostile generator agent: a loopback listener that passes the controller's check
/// (`GET /generator`) and then misbehaves on every step. The step plans it receives come out
/// of `steps`.
struct Fake {
    addr: SocketAddr,
    steps: mpsc::Receiver<serde_json::Value>,
}

fn fake_agent(how: Hostile) -> Fake {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let tx = tx.clone();
            std::thread::spawn(move || serve_fake(s, how, &tx));
        }
    });
    Fake { addr, steps: rx }
}

/// One request: its head and body (Content-Length), or None when the peer went away.
fn read_request(s: &mut TcpStream) -> Option<(String, Vec<u8>)> {
    s.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = s.read(&mut chunk).ok().filter(|n| *n > 0)?;
        buf.extend_from_slice(&chunk[..n]);
        let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_string();
        let len: usize = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().ok())?
            })
            .unwrap_or(0);
        while buf.len() < end + 4 + len {
            let n = s.read(&mut chunk).ok().filter(|n| *n > 0)?;
            buf.extend_from_slice(&chunk[..n]);
        }
        return Some((head, buf[end + 4..end + 4 + len].to_vec()));
    }
}

fn reply(s: &mut TcpStream, status: &str, body: &[u8]) {
    let _ = write!(
        s,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = s.write_all(body);
}

fn serve_fake(mut s: TcpStream, how: Hostile, steps: &mpsc::Sender<serde_json::Value>) {
    let Some((head, body)) = read_request(&mut s) else {
        return;
    };
    if matches!(how, Hostile::DripFromTheStart) {
        drip(&mut s);
        return;
    }
    if head.starts_with("GET /generator ") {
        let info = serde_json::json!({
            "protocol": 2, "host": "hostile", "allowed_targets": ["127.0.0.1:1"],
            "max_rate": 1e9, "max_duration_ms": 3_600_000u64, "max_connections": 1_000_000,
            "cores": 1,
        });
        reply(&mut s, "200 OK", info.to_string().as_bytes());
        return;
    }
    if !head.starts_with("POST /step ") {
        // `POST /stop` and anything else: not this agent's business.
        reply(&mut s, "404 Not Found", b"not found\n");
        return;
    }
    let plan: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let _ = steps.send(plan);
    drip(&mut s);
}

fn drip(s: &mut TcpStream) {
    let mut answer =
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4096\r\nConnection: close\r\n\r\n{"
            .to_vec();
    answer.resize(answer.len() + 4095, b' ');
    for b in answer {
        if s.write_all(&[b]).is_err() {
            return;
        }
        // The hostile peer's behaviour: one byte, then a pause.
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A generators file listing `addrs` (plain http, the test's token).
fn generators_file(dir: &std::path::Path, addrs: &[SocketAddr]) -> std::path::PathBuf {
    let tok = dir.join("controller-token");
    write_token(&tok);
    let list: String = addrs
        .iter()
        .map(|a| format!("http://{a} token-file={}\n", tok.display()))
        .collect();
    let f = dir.join("generators");
    std::fs::write(&f, list).unwrap();
    f
}

/// A controller's sweep over `gens`: one level of 40 req/s, `step` long, no warm-up, 1 s
/// request timeout; its stdout and stderr go to files in `dir`.
fn controller(target: &Target, gens: &std::path::Path, step: &str, dir: &std::path::Path) -> Child {
    bin()
        .args(["sweep", &format!("{}/", target.url), "--rates", "40"])
        .args(["--step", step, "--warmup", "0s", "--rest", "0s"])
        .args(["--timeout", "1s", "--threads", "1", "-q"])
        .arg("--generators")
        .arg(gens)
        .arg("--out")
        .arg(dir.join("run"))
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(dir.join("stdout")).unwrap())
        .stderr(std::fs::File::create(dir.join("stderr")).unwrap())
        .spawn()
        .expect("spawn the controller")
}

fn read(dir: &std::path::Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_default()
}

fn steps(dir: &std::path::Path) -> Vec<serde_json::Value> {
    read(dir, "run/steps.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn flags(step: &serde_json::Value) -> Vec<String> {
    step["flags"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Defect 5: a generator that drips its answer is lost once the step's length + 10 s
/// (plus the lead and the request timeout) have passed, by name, and the step keeps the
/// honest generator's part.
fn a_dripping_generator_is_lost_by_the_step_deadline() {
    let target = Target::start(&[]);
    let honest = agent_for(&target);
    let fake = fake_agent(Hostile::Drip);
    let dir = scratch();
    let gens = generators_file(dir.path(), &[honest.addr, fake.addr]);
    let started = Instant::now();
    let mut child = controller(&target, &gens, "2s", dir.path());
    // The deadline: 0.5 s lead + 2 s step + 1 s timeout + 10 s = 13.5 s; the margin is for
    // a loaded machine (start-up, the check, storing the step).
    let status = wait_within(&mut child, Duration::from_secs(40));
    let (out, err) = (read(dir.path(), "stdout"), read(dir.path(), "stderr"));
    let status = status.unwrap_or_else(|| {
        panic!("the controller still waits on the dripping generator after 40 s: {out}\n{err}")
    });
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(30),
        "ended {took:?} after start: {out}\n{err}"
    );
    let fake_name = format!("127.0.0.1:{}", fake.addr.port());
    let text = format!("{out}\n{err}");
    assert!(
        text.contains("lost") && text.contains(&fake_name) && text.contains("no answer within"),
        "the dripping generator is named as lost: {text}"
    );
    assert!(!status.success(), "--on-generator-loss stop: {text}");
    let st = steps(dir.path());
    assert_eq!(st.len(), 1, "{text}");
    assert!(
        flags(&st[0]).contains(&"generator-lost".to_string()),
        "{:?}",
        flags(&st[0])
    );
    assert!(
        st[0]["responses"].as_u64().unwrap_or(0) > 0,
        "the honest part is kept: {}",
        st[0]["responses"]
    );
    let log = read(dir.path(), "run/generators.jsonl");
    assert!(
        log.contains(&fake_name) && log.contains("\"lost\""),
        "generators.jsonl: {log}"
    );
}

/// Defect 5 and the low item: SIGINT during a controller's step ends the run within a few
/// seconds, although one generator drips its answer; the step in progress is kept, with the
/// honest generator's part measured up to the interruption, and marked interrupted.
fn sigint_ends_a_controller_run_promptly_keeping_the_step() {
    let target = Target::start(&[]);
    let honest = agent_for(&target);
    let fake = fake_agent(Hostile::Drip);
    let dir = scratch();
    let gens = generators_file(dir.path(), &[honest.addr, fake.addr]);
    let mut child = controller(&target, &gens, "60s", dir.path());
    let plan = fake
        .steps
        .recv_timeout(Duration::from_secs(30))
        .expect("the controller sends its first step");
    // Into the step: its common start plus 1.5 s, so the honest part has measured something.
    let start_at = plan["start_at_unix_ms"].as_u64().expect("start_at_unix_ms");
    wait_until("1.5 s into the step", Duration::from_secs(30), || {
        unix_ms() > start_at + 1500
    });
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let signalled = Instant::now();
    let status = wait_within(&mut child, Duration::from_secs(30));
    let (out, err) = (read(dir.path(), "stdout"), read(dir.path(), "stderr"));
    let text = format!("{out}\n{err}");
    assert!(status.is_some(), "still running 30 s after SIGINT: {text}");
    let took = signalled.elapsed();
    assert!(
        took < Duration::from_secs(15),
        "ended {took:?} after SIGINT: {text}"
    );
    let st = steps(dir.path());
    assert_eq!(st.len(), 1, "the step in progress is kept: {text}");
    let f = flags(&st[0]);
    assert!(f.contains(&"interrupted".to_string()), "{f:?}");
    // 40 req/s over two generators: the honest one's 20 req/s for the ~1.5 s to the signal
    // (and up to its next tick), far from the 60 s step's 1,200.
    let responses = st[0]["responses"].as_u64().unwrap_or(0);
    assert!(
        responses > 0 && responses < 400,
        "what was measured up to the interruption: {responses} responses"
    );
    let info: serde_json::Value =
        serde_json::from_str(&read(dir.path(), "run/run.json")).expect("run.json");
    assert_eq!(info["complete"], false, "{info}");
}

fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Defect 16: a controller holding the token sends steps the command line would refuse: a
/// header that smuggles a second request, a framing header without its framing, no user, a
/// reversed think range. The agent refuses each in one line (422), before any load.
fn a_hostile_controllers_step_is_checked_as_the_command_line() {
    let target = Target::start(&[]);
    let agent = agent_for(&target);
    let url = format!("{}/", target.url);
    let now = unix_ms();
    let plan = |headers: serde_json::Value, load: serde_json::Value| {
        serde_json::json!({
            "protocol": 2,
            "requests": [{"method": "GET", "url": url, "headers": headers}],
            "pick": "sequence",
            "load": load,
            "conn": {"http": "1.1", "streams": 100, "keep_alive": true,
                     "calls_per_connection": null, "timeout_ms": 1000,
                     "connect_timeout_ms": 1000, "threads": 1, "pacing_slack_us": 1000,
                     "seed": 1,
                     "tls": {"ca_pem": null, "insecure": false, "version": null,
                             "resumption": true}},
            "warmup_ms": 0, "duration_ms": 500, "index": 0,
            "segment_index": 0, "segment_count": 1,
            "start_at_unix_ms": now, "run_start_unix_ms": now,
        })
        .to_string()
    };
    let open = serde_json::json!({"loop": "open", "rate": 20.0, "arrival": "constant",
                                  "max_connections": 5});
    let cases = [
        (
            plan(
                serde_json::json!([["X-A", "1\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: x"]]),
                open.clone(),
            ),
            "control character",
        ),
        (
            plan(
                serde_json::json!([["Transfer-Encoding", "chunked"]]),
                open.clone(),
            ),
            "set by overload",
        ),
        (
            plan(
                serde_json::json!([]),
                serde_json::json!({"loop": "closed", "users": 0, "think_ms": [0, 0]}),
            ),
            "--users 0",
        ),
        (
            plan(
                serde_json::json!([]),
                serde_json::json!({"loop": "closed", "users": 2, "think_ms": [500, 10]}),
            ),
            "--think 500ms..10ms",
        ),
    ];
    for (body, needle) in cases {
        let mut s = TcpStream::connect(agent.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        write!(
            s,
            "POST /step HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        let (head, text) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        assert!(head.starts_with("HTTP/1.1 422"), "{needle}: {answer}");
        assert!(
            text.starts_with("refused: ") && text.contains(needle),
            "{needle}: {text}"
        );
        assert_eq!(text.trim_end().lines().count(), 1, "one line: {text:?}");
    }
}

/// Defect 5, before the first step: agents that drip their `GET /generator` answer stop the
/// run in one line, exit 2, once their 10 s deadline has passed: all asked at once, so
/// three of them cost 10 s, not 30.
fn silent_generators_stop_the_run_at_the_check_in_one_deadline() {
    let target = Target::start(&[]);
    let fakes: Vec<Fake> = (0..3)
        .map(|_| fake_agent(Hostile::DripFromTheStart))
        .collect();
    let dir = scratch();
    let addrs: Vec<SocketAddr> = fakes.iter().map(|f| f.addr).collect();
    let gens = generators_file(dir.path(), &addrs);
    let started = Instant::now();
    let mut child = controller(&target, &gens, "2s", dir.path());
    let status = wait_within(&mut child, Duration::from_secs(60));
    let err = read(dir.path(), "stderr");
    let status = status.unwrap_or_else(|| panic!("still checking after 60 s: {err}"));
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(25),
        "ended after {took:?}: {err}"
    );
    assert_eq!(status.code(), Some(2), "{err}");
    let first = format!(
        "generator http://127.0.0.1:{}: no answer within 10s",
        fakes[0].addr.port()
    );
    assert!(err.contains(&first), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
}
