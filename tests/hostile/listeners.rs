//! Hostile cases: network peers of what listens (the agent, the live page), with and without the token.
use crate::common::harness::trial;
use crate::common::{self, bin, scratch, wait_within, Target};
use libtest_mimic::Trial;
use std::io::{BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub fn trials() -> Vec<Trial> {
    vec![
        trial(
            "listeners::live_page_dripping_client_does_not_hold_the_run",
            &[],
            live_page_dripping_client_does_not_hold_the_run,
        ),
        trial(
            "listeners::live_page_dripping_client_does_not_hold_sigint",
            &[],
            live_page_dripping_client_does_not_hold_sigint,
        ),
        trial(
            "listeners::live_page_answers_beside_300_slow_connections",
            &[],
            live_page_answers_beside_300_slow_connections,
        ),
        trial(
            "listeners::live_page_is_not_delayed_by_40_slow_clients",
            &[],
            live_page_is_not_delayed_by_40_slow_clients,
        ),
        trial(
            "listeners::agent_answers_its_controller_beside_slow_peers_from_many_addresses",
            &[],
            agent_answers_its_controller_beside_slow_peers_from_many_addresses,
        ),
        trial(
            "listeners::agent_generate_tls_head_deadline_is_2s",
            &[],
            agent_generate_tls_head_deadline_is_2s,
        ),
        trial(
            "listeners::agent_allow_remote_over_plain_http_warns",
            &[],
            agent_allow_remote_over_plain_http_warns,
        ),
    ]
}

/// A run with the live page, its stderr read up to the page's URL (the rest drained).
struct LiveRun {
    child: Child,
    addr: SocketAddr,
    path: String,
    dir: tempfile::TempDir,
    _target: Target,
}

fn live_run(duration: &str) -> LiveRun {
    let target = Target::start(&["--threads", "1"]);
    let dir = scratch();
    let mut child = bin()
        .current_dir(dir.path())
        .args(["run", "-R", "50", "-d", duration, "--no-tui", "-q"])
        .args(["--live-port", "0", &target.url])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn overload run");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let url = common::live_url(&mut err);
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    let rest = url.strip_prefix("http://").unwrap();
    let (addr, path) = rest.split_at(rest.find('/').unwrap());
    LiveRun {
        child,
        addr: addr.parse().unwrap(),
        path: path.to_string(),
        dir,
        _target: target,
    }
}

impl LiveRun {
    /// The run's one results folder holds its step.
    fn assert_results_written(&self) {
        let runs: Vec<_> = std::fs::read_dir(self.dir.path().join("runs"))
            .expect("a runs/ folder")
            .collect();
        assert_eq!(runs.len(), 1, "one results folder");
        let folder = runs[0].as_ref().unwrap().path();
        let steps = std::fs::read_to_string(folder.join("steps.jsonl")).unwrap_or_default();
        assert_eq!(steps.lines().count(), 1, "the run's step is stored");
    }
}

impl Drop for LiveRun {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client that sends a request head one byte every 1.5 s (each byte well inside a
/// per-read timeout) until told to stop or the server closes.
fn dripping_client(
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    sent: Arc<std::sync::atomic::AtomicUsize>,
) -> std::thread::JoinHandle<()> {
    let mut s = TcpStream::connect(addr).expect("connect to the live page");
    std::thread::spawn(move || {
        for b in b"GET /drip HTTP/1.1\r\nHost: x\r\nX-Slow: ".iter().cycle() {
            if stop.load(Ordering::Relaxed) || s.write_all(&[*b]).is_err() {
                return;
            }
            sent.fetch_add(1, Ordering::Relaxed);
            // The hostile peer's pace: one byte, then a pause shorter than 2 s.
            std::thread::sleep(Duration::from_millis(1500));
        }
    })
}

/// Defect 3: a peer dripping a byte every 1.5 s must not keep a 2 s run from ending, with
/// its results written.
fn live_page_dripping_client_does_not_hold_the_run() {
    let mut run = live_run("2s");
    let stop = Arc::new(AtomicBool::new(false));
    let drip = dripping_client(run.addr, Arc::clone(&stop), Arc::default());
    let t0 = Instant::now();
    let status = wait_within(&mut run.child, Duration::from_secs(25));
    eprintln!(
        "2 s run with a dripping client ended {:?} after its page's URL",
        t0.elapsed()
    );
    stop.store(true, Ordering::Relaxed);
    let status = status.expect("a 2 s run still running 25 s later: the dripping client holds it");
    assert!(status.success(), "{status}");
    run.assert_results_written();
    let _ = drip.join();
}

/// Defect 3: the first SIGINT ends a run whose live page has a dripping client.
fn live_page_dripping_client_does_not_hold_sigint() {
    let mut run = live_run("60s");
    // The page answers before the drip starts: the run is under way, its page served.
    let (code, _) = get(run.addr, &run.path, Duration::from_secs(10));
    assert_eq!(code, 200);
    let stop = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let drip = dripping_client(run.addr, Arc::clone(&stop), Arc::clone(&sent));
    // The signal comes once the drip is under way (its second byte sent: the page has
    // long taken the connection in).
    common::wait_until("the drip under way", Duration::from_secs(10), || {
        sent.load(Ordering::Relaxed) >= 2
    });
    unsafe { libc::kill(run.child.id() as libc::pid_t, libc::SIGINT) };
    let t0 = Instant::now();
    let status = wait_within(&mut run.child, Duration::from_secs(15));
    eprintln!(
        "run with a dripping client ended {:?} after SIGINT",
        t0.elapsed()
    );
    stop.store(true, Ordering::Relaxed);
    let status = status.expect("still running 15 s after SIGINT: the dripping client holds it");
    assert!(status.code().is_some(), "ended by its own hand: {status}");
    run.assert_results_written();
    let _ = drip.join();
}

/// Defects 3 and the low one: 300 slow connections (a partial head each, then nothing) do
/// not starve the real GET of the page, which is answered promptly.
fn live_page_answers_beside_300_slow_connections() {
    let run = live_run("60s");
    let mut slow = Vec::new();
    for _ in 0..300 {
        if let Ok(mut s) = TcpStream::connect_timeout(&run.addr, Duration::from_secs(5)) {
            let _ = s.write_all(b"GET / HTTP/1.1\r\n");
            slow.push(s);
        }
    }
    assert!(
        slow.len() >= 250,
        "only {} slow connections opened",
        slow.len()
    );
    let t0 = Instant::now();
    let (code, body) = get(run.addr, &run.path, Duration::from_secs(10));
    let took = t0.elapsed();
    eprintln!(
        "live page GET beside {} slow connections: {took:?}",
        slow.len()
    );
    assert_eq!(code, 200, "{body}");
    assert!(
        took < Duration::from_secs(3),
        "the page took {took:?} beside 300 slow connections"
    );
    drop(slow);
}

/// Low: 40 slow clients (a partial head each, then nothing) do not delay the page's GET.
fn live_page_is_not_delayed_by_40_slow_clients() {
    let run = live_run("60s");
    let slow: Vec<TcpStream> = (0..40)
        .filter_map(|_| {
            let mut s = TcpStream::connect_timeout(&run.addr, Duration::from_secs(5)).ok()?;
            s.write_all(b"GET /").ok()?;
            Some(s)
        })
        .collect();
    assert_eq!(slow.len(), 40);
    let t0 = Instant::now();
    let (code, body) = get(run.addr, &run.path, Duration::from_secs(10));
    let took = t0.elapsed();
    eprintln!("live page GET beside 40 slow clients: {took:?}");
    assert_eq!(code, 200, "{body}");
    assert!(
        took < Duration::from_secs(1),
        "the page took {took:?} beside 40 slow clients"
    );
    drop(slow);
}

/// A GET of `path` on `addr`: (status, body); 0 when no answer came within `limit`.
fn get(addr: SocketAddr, path: &str, limit: Duration) -> (u16, String) {
    get_with(addr, path, "", limit)
}

fn get_with(addr: SocketAddr, path: &str, headers: &str, limit: Duration) -> (u16, String) {
    let Ok(mut s) = TcpStream::connect_timeout(&addr, limit) else {
        return (0, "connect failed".into());
    };
    let _ = s.set_read_timeout(Some(limit));
    let _ = write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Connection: close\r\n\r\n"
    );
    let mut resp = Vec::new();
    let _ = s.read_to_end(&mut resp);
    let resp = String::from_utf8_lossy(&resp).into_owned();
    let code = resp
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, resp)
}

const TOKEN: &str = "0123456789abcdef-hostile";

/// `overload agent` on a free loopback port with a token file; its address and the child.
fn agent(extra: &[&str]) -> (Child, SocketAddr, tempfile::TempDir) {
    let dir = scratch();
    let tok = dir.path().join("token");
    std::fs::write(&tok, TOKEN).unwrap();
    std::fs::set_permissions(&tok, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let mut child = bin()
        .args(["agent", "--listen", "127.0.0.1:0", "--token-file"])
        .arg(&tok)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn overload agent");
    let addr = common::agent_addr(&mut child);
    (child, addr, dir)
}

/// A TCP connection to `to` from the loopback address `from` (127.0.0.2 and up are loopback
/// on Linux without any setup).
fn connect_from(from: [u8; 4], to: SocketAddr) -> std::io::Result<TcpStream> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    s.bind(&SocketAddr::from((from, 0)).into())?;
    s.connect_timeout(&to.into(), Duration::from_secs(5))?;
    Ok(s.into())
}

/// Defect 11: slow unauthenticated peers from five loopback addresses (more than the
/// per-peer cap could stop, more than every slot), reconnecting whenever dropped, do not keep
/// the controller out: its authenticated request is answered promptly.
fn agent_answers_its_controller_beside_slow_peers_from_many_addresses() {
    let (mut child, addr, _dir) = agent(&[]);
    let stop = Arc::new(AtomicBool::new(false));
    let opened = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut attackers = Vec::new();
    for host in 2..=6u8 {
        let (stop, opened) = (Arc::clone(&stop), Arc::clone(&opened));
        attackers.push(std::thread::spawn(move || {
            let from = [127, 0, 0, host];
            let mut conns: Vec<Option<TcpStream>> = (0..24).map(|_| None).collect();
            while !stop.load(Ordering::Relaxed) {
                for c in conns.iter_mut() {
                    let alive = c.as_mut().is_some_and(|s| s.write_all(b"X").is_ok());
                    if !alive {
                        *c = connect_from(from, addr).ok().and_then(|mut s| {
                            s.write_all(b"GET /metrics HTTP/1.1\r\n").ok()?;
                            opened.fetch_add(1, Ordering::Relaxed);
                            Some(s)
                        });
                    }
                }
                // The hostile peers' pace: a byte per connection every 200 ms.
                std::thread::sleep(Duration::from_millis(200));
            }
        }));
    }
    common::wait_until("120 slow connections open", Duration::from_secs(20), || {
        opened.load(Ordering::Relaxed) >= 120
    });
    let auth = format!("Authorization: Bearer {TOKEN}\r\n");
    let t0 = Instant::now();
    let (code, resp) = get_with(addr, "/metrics", &auth, Duration::from_secs(10));
    let took = t0.elapsed();
    stop.store(true, Ordering::Relaxed);
    for a in attackers {
        let _ = a.join();
    }
    let _ = child.kill();
    let _ = child.wait();
    eprintln!("agent controller request beside 120 slow peers: {took:?}");
    assert_eq!(code, 200, "{resp}");
    assert!(
        took < Duration::from_secs(3),
        "the controller waited {took:?} beside slow peers"
    );
}

/// `agent --generate` over TLS: a peer dripping a ClientHello is dropped at the head deadline
/// (2 s from its connection, the handshake included), not after the body's 10 s.
fn agent_generate_tls_head_deadline_is_2s() {
    let dir = scratch();
    let tok = dir.path().join("token");
    std::fs::write(&tok, TOKEN).unwrap();
    std::fs::set_permissions(&tok, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let mut child = bin()
        .args(["agent", "--listen", "127.0.0.1:0", "--generate"])
        .args([
            "--allow-target",
            "127.0.0.1:1",
            "--tls-self-signed",
            "--token-file",
        ])
        .arg(&tok)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn overload agent --generate");
    let mut line = String::new();
    std::io::BufRead::read_line(&mut BufReader::new(child.stdout.take().unwrap()), &mut line)
        .unwrap();
    let addr: SocketAddr = line
        .trim()
        .rsplit("://")
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));
    let mut s = TcpStream::connect(addr).unwrap();
    let t0 = Instant::now();
    // A TLS record header, then a byte every 300 ms (the hostile peer's pace).
    let hello = [
        0x16u8, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03,
    ];
    let mut closed = false;
    for b in hello.iter().chain(std::iter::repeat(&0u8)) {
        if s.write_all(&[*b]).is_err() {
            closed = true;
            break;
        }
        s.set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        match s.read(&mut [0u8; 64]) {
            Ok(_) => {
                closed = true;
                break;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => {
                closed = true;
                break;
            }
        }
        if t0.elapsed() > Duration::from_secs(15) {
            break;
        }
    }
    let took = t0.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    eprintln!("agent --generate over TLS dropped a dripping handshake after {took:?}");
    assert!(closed, "still connected after {took:?}");
    assert!(
        took < Duration::from_secs(6),
        "the dripping handshake was held {took:?}"
    );
}

/// Low: `--allow-remote` on plain HTTP says on stderr that the token travels in clear text.
fn agent_allow_remote_over_plain_http_warns() {
    let dir = scratch();
    let tok = dir.path().join("token");
    std::fs::write(&tok, TOKEN).unwrap();
    std::fs::set_permissions(&tok, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let mut child = bin()
        .args([
            "agent",
            "--listen",
            "0.0.0.0:0",
            "--allow-remote",
            "--token-file",
        ])
        .arg(&tok)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn overload agent");
    let _ = common::agent_addr(&mut child);
    let _ = child.kill();
    let _ = child.wait();
    let mut err = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut err);
    assert!(
        err.contains("clear text") && err.contains("--allow-remote"),
        "no warning on stderr: {err:?}"
    );
}
