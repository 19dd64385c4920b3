//! Hostile cases: a hostile HTTP, TLS or HTTP/2 server, seen by the load engine.
use crate::common::harness::trial;
use crate::common::{
    bin, output_within, run_measured, scratch, wait_until, wait_within, Target, QUICK,
};
use libtest_mimic::Trial;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub fn trials() -> Vec<Trial> {
    vec![
        trial(
            "client_alpn_probe_has_a_deadline",
            &[],
            alpn_probe_has_a_deadline,
        ),
        trial(
            "client_cacert_self_signed_ca_true_is_accepted",
            &[],
            cacert_self_signed_ca_true_is_accepted,
        ),
        trial(
            "client_certificate_refusals_name_their_reason",
            &[],
            certificate_refusals_name_their_reason,
        ),
        trial(
            "client_interrupt_counts_requests_in_flight",
            &[],
            interrupt_counts_requests_in_flight,
        ),
        trial(
            "client_tls_close_notify_ends_a_body_read_to_close",
            &[],
            tls_close_notify_ends_a_body_read_to_close,
        ),
        trial(
            "client_tls_garbage_after_the_handshake_is_protocol",
            &[],
            tls_garbage_after_the_handshake_is_protocol,
        ),
    ]
}

/// A server that accepts every connection and sends `bytes` on each, one byte at a time with
/// `gap` between them: a handshake that never ends yet never lets a per-read timeout fire.
/// Stops when dropped.
struct Dripper {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl Dripper {
    fn start(bytes: &'static [u8], gap: Duration) -> Dripper {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((s, _)) => {
                        let stopped = Arc::clone(&stopped);
                        std::thread::spawn(move || drip(s, bytes, gap, &stopped));
                    }
                    // Polled so that the thread sees `stop` (accept cannot be interrupted).
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        Dripper { addr, stop }
    }
}

impl Drop for Dripper {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn drip(mut s: TcpStream, bytes: &[u8], gap: Duration, stop: &AtomicBool) {
    let _ = s.set_nonblocking(false);
    for b in bytes.iter().cycle() {
        if stop.load(Ordering::Relaxed) || s.write_all(&[*b]).is_err() {
            return;
        }
        // The hostile peer's pace: one byte per gap, shorter than any per-read timeout.
        std::thread::sleep(gap);
    }
}

/// The start of a TLS handshake record announcing 16 KiB, then its payload forever.
const TLS_RECORD_HEAD: &[u8] = &[0x16, 0x03, 0x03, 0x40, 0x00, 0, 0, 0, 0, 0, 0, 0, 0];

/// Defect 6: `--http auto` over https probes ALPN with one handshake before the load; a
/// server dripping that handshake must not hold the run past `--connect-timeout`.
fn alpn_probe_has_a_deadline() {
    let server = Dripper::start(TLS_RECORD_HEAD, Duration::from_millis(200));
    let url = format!("https://127.0.0.1:{}/", server.addr.port());
    let start = Instant::now();
    let out = output_within(
        bin().args([
            "run",
            &url,
            "--insecure",
            "--connect-timeout",
            "1s",
            "-d",
            "1s",
            "-q",
        ]),
        Duration::from_secs(60),
    );
    let took = start.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    // 1 s probe + 1 s load + the last connect timeout + start-up: 10 s is a loaded machine's margin.
    assert!(
        took < Duration::from_secs(10),
        "the run took {took:?}: {err}"
    );
}

/// A self-signed certificate as `openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=NAME`
/// makes it: CA:TRUE, the name in the subject's CN only, no subjectAltName. (cert, key) PEM.
fn openssl_style_cert(cn: &str, expired: bool) -> (String, String) {
    use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, cn);
    if expired {
        p.not_before = rcgen::date_time_ymd(2000, 1, 1);
        p.not_after = rcgen::date_time_ymd(2001, 1, 1);
    }
    (p.self_signed(&key).unwrap().pem(), key.serialize_pem())
}

/// `overload target --tls` serving `cert`; the PEM files live in `dir`.
fn target_with(dir: &std::path::Path, cert: &(String, String)) -> (Target, String) {
    let c = dir.join("cert.pem");
    let k = dir.join("key.pem");
    std::fs::write(&c, &cert.0).unwrap();
    std::fs::write(&k, &cert.1).unwrap();
    let t = Target::start(&[
        "--tls",
        "--cert",
        c.to_str().unwrap(),
        "--key",
        k.to_str().unwrap(),
    ]);
    let port = t.url.rsplit(':').next().unwrap().to_string();
    (t, port)
}

/// Section 3: the certificate a user makes first (openssl's self-signed, CA:TRUE), passed
/// with `--cacert`, is trusted as curl trusts it: the server's certificate is itself one of
/// the `--cacert` certificates. Both the ALPN probe and the load's handshakes take it.
fn cacert_self_signed_ca_true_is_accepted() {
    let dir = scratch();
    let cert = openssl_style_cert("localhost", false);
    let (_t, port) = target_with(dir.path(), &cert);
    let url = format!("https://localhost:{port}/");
    let m = run_measured(
        None,
        &[
            "run",
            &url,
            "-n",
            "20",
            "--users",
            "2",
            "--cacert",
            dir.path().join("cert.pem").to_str().unwrap(),
        ],
        true,
        QUICK,
    );
    m.assert_clean_exit(0, "self-signed CA:TRUE certificate given with --cacert");
    assert_eq!(m.v["responses"], 20, "{}", m.v);
    assert_eq!(m.v["error_count"], 0, "{}", m.v);
}

/// Section 3 and the lows: a refused certificate names its real reason (not
/// `bad-certificate`), and the advice fits it: never "pass its CA with --cacert" when the
/// CA was passed and is not what is wrong.
fn certificate_refusals_name_their_reason() {
    let dir = scratch();
    let cert = openssl_style_cert("localhost", false);
    let (_t, port) = target_with(dir.path(), &cert);
    let pinned = dir.path().join("cert.pem");
    // Another CA:TRUE certificate as --cacert: the server's is a CA used as its own.
    let other = dir.path().join("other.pem");
    std::fs::write(&other, openssl_style_cert("localhost", false).0).unwrap();
    let exp_dir = scratch();
    let expired = openssl_style_cert("localhost", true);
    let (_e, exp_port) = target_with(exp_dir.path(), &expired);
    let exp_pinned = exp_dir.path().join("cert.pem");
    for (host_port, cacert, reason) in [
        (format!("127.0.0.1:{port}"), &pinned, "name-mismatch"),
        (format!("localhost:{port}"), &other, "ca-used-as-end-entity"),
        (format!("localhost:{exp_port}"), &exp_pinned, "expired"),
    ] {
        let url = format!("https://{host_port}/");
        let m = run_measured(
            None,
            &[
                "run",
                &url,
                "-n",
                "5",
                "--users",
                "1",
                "--cacert",
                cacert.to_str().unwrap(),
            ],
            true,
            QUICK,
        );
        assert!(!m.stderr.contains("panicked"), "{reason}: {}", m.stderr);
        assert_eq!(m.errors("tls-certificate"), 5, "{reason}: {}", m.v);
        // One reason per refused handshake (the connect backoff holds the others back).
        let attempts = m.v["connects"]["attempts"].as_u64().unwrap_or(0);
        assert!(attempts >= 1, "{reason}: {}", m.v);
        assert_eq!(
            m.v["tls"]["failures"][reason], attempts,
            "{reason}: {}",
            m.v
        );
        let warnings = m.v["warnings"].to_string();
        assert!(warnings.contains(reason), "{reason}: {warnings}");
        assert!(
            !warnings.contains("pass its CA with --cacert"),
            "{reason}: advice that does not fit: {warnings}"
        );
    }
}

/// A server that reads requests and never answers; counts the request heads it received.
/// Stops accepting when dropped (its connections end with the test process).
struct Silent {
    addr: SocketAddr,
    heads: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Silent {
    fn start() -> Silent {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        listener.set_nonblocking(true).unwrap();
        let heads = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (h, stopped) = (Arc::clone(&heads), Arc::clone(&stop));
        std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((mut s, _)) => {
                        let h = Arc::clone(&h);
                        std::thread::spawn(move || {
                            let _ = s.set_nonblocking(false);
                            let mut buf = [0u8; 4096];
                            while let Ok(n @ 1..) = s.read(&mut buf) {
                                if buf[..n].windows(4).any(|w| w == b"\r\n\r\n") {
                                    h.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                        });
                    }
                    // Polled so that the thread sees `stop` (accept cannot be interrupted).
                    Err(_) => std::thread::sleep(Duration::from_millis(20)),
                }
            }
        });
        Silent { addr, heads, stop }
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Defect 12: requests in flight when SIGINT comes are counted (as interrupted, not
/// dropped), and the window measured is the run's real one, start to interrupt.
fn interrupt_counts_requests_in_flight() {
    let server = Silent::start();
    let dir = scratch();
    let json = dir.path().join("run.json");
    let url = format!("http://{}/", server.addr);
    let mut child = bin()
        .args(["run", &url, "--users", "4", "-d", "60s", "--timeout", "60s"])
        .arg("--json")
        .arg(&json)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    wait_until(
        "4 requests reach the server",
        Duration::from_secs(20),
        || server.heads.load(Ordering::Relaxed) >= 4,
    );
    // The operator's pace: the signal comes 0.5 s after the requests arrived, so that the
    // window measured grows well past zero (a window of 0 s cannot pass for it).
    std::thread::sleep(Duration::from_millis(500));
    let before_signal = start.elapsed();
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let status = wait_within(&mut child, Duration::from_secs(15)).expect("ends after SIGINT");
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(status.code(), Some(130), "{stdout}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("--json written")).unwrap();
    assert_eq!(v["interrupted"], true, "{v}");
    assert_eq!(v["sent"], 4, "{v}");
    assert_eq!(v["requests"], 4, "{v}");
    assert_eq!(v["interrupted_requests"], 4, "{v}");
    assert_eq!(v["responses"], 0, "{v}");
    let secs = v["duration_s"].as_f64().unwrap();
    assert!(
        secs >= 0.4 && secs <= before_signal.as_secs_f64() + 10.0,
        "window {secs} s, signal after {before_signal:?}: {v}"
    );
    // None of the four got an answer: the summary must not say that nothing failed.
    assert!(
        stdout.contains("failed         100.00%"),
        "summary: {stdout}"
    );
    assert!(
        stdout.contains("4 in flight at the interrupt"),
        "summary: {stdout}"
    );
}

/// A TLS server (a fresh self-signed certificate, for --insecure) that serves each connection
/// with `serve` on its own thread, after the handshake.
fn tls_server(serve: fn(rustls::ServerConnection, TcpStream)) -> SocketAddr {
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()]).unwrap();
    let cert = params.self_signed(&key).unwrap();
    let cfg = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![cert.der().clone()],
        rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
    )
    .unwrap();
    let cfg = Arc::new(cfg);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for sock in listener.incoming().flatten() {
            let cfg = Arc::clone(&cfg);
            std::thread::spawn(move || {
                let mut sock = sock;
                let _ = sock.set_read_timeout(Some(Duration::from_secs(20)));
                let mut conn = rustls::ServerConnection::new(cfg).unwrap();
                while conn.is_handshaking() {
                    if conn.complete_io(&mut sock).is_err() {
                        return;
                    }
                }
                serve(conn, sock);
            });
        }
    });
    addr
}

/// Reads a request head through `conn`; false when the client went away first.
fn read_head(conn: &mut rustls::ServerConnection, sock: &mut TcpStream) -> bool {
    let mut got = Vec::new();
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        if conn.complete_io(&mut *sock).is_err() {
            return false;
        }
        let mut buf = [0u8; 4096];
        match conn.reader().read(&mut buf) {
            Ok(0) => return false,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return false,
        }
    }
    true
}

/// Defect 13: a body delimited by the end of the connection, ended by the server's
/// close_notify while it keeps TCP open waiting for the client's: the answer is complete.
fn tls_close_notify_ends_a_body_read_to_close() {
    let addr = tls_server(|mut conn, mut sock| {
        if !read_head(&mut conn, &mut sock) {
            return;
        }
        let _ = conn
            .writer()
            .write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close");
        conn.send_close_notify();
        while conn.wants_write() {
            if conn.write_tls(&mut sock).is_err() {
                return;
            }
        }
        // TCP stays open until the client closes it (or the read timeout).
        let mut buf = [0u8; 1024];
        while let Ok(1..) = sock.read(&mut buf) {}
    });
    let url = format!("https://{addr}/");
    let m = run_measured(
        None,
        &[
            "run",
            &url,
            "-n",
            "3",
            "--users",
            "1",
            "--insecure",
            "--timeout",
            "5s",
        ],
        true,
        QUICK,
    );
    m.assert_clean_exit(0, "close_notify ends the body");
    assert_eq!(m.status("200"), 3, "{}", m.v);
    assert_eq!(m.v["error_count"], 0, "{}", m.v);
    assert!(m.elapsed < Duration::from_secs(5), "took {:?}", m.elapsed);
}

/// Low: bytes that are not TLS records, after the handshake, are a `protocol` error (the
/// server broke TLS), not `closed`; with the socket left open or closed after them.
fn tls_garbage_after_the_handshake_is_protocol() {
    for close in [false, true] {
        let serve: fn(rustls::ServerConnection, TcpStream) = if close {
            |mut conn, mut sock| {
                if read_head(&mut conn, &mut sock) {
                    let _ = sock.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
                }
            }
        } else {
            |mut conn, mut sock| {
                if read_head(&mut conn, &mut sock) {
                    let _ = sock.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
                    let mut buf = [0u8; 1024];
                    while let Ok(1..) = sock.read(&mut buf) {}
                }
            }
        };
        let addr = tls_server(serve);
        let url = format!("https://{addr}/");
        let m = run_measured(
            None,
            &[
                "run",
                &url,
                "-n",
                "3",
                "--users",
                "1",
                "--insecure",
                "--timeout",
                "5s",
            ],
            true,
            QUICK,
        );
        assert!(!m.stderr.contains("panicked"), "{}", m.stderr);
        assert_eq!(m.errors("protocol"), 3, "close {close}: {}", m.v);
        assert!(m.elapsed < Duration::from_secs(5), "took {:?}", m.elapsed);
    }
}
