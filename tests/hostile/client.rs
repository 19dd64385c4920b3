//! Hostile cases: a hostile HTTP, TLS or HTTP/2 server, seen by the load engine.
use crate::common::harness::trial;
use crate::common::{bin, output_within};
use libtest_mimic::Trial;
use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub fn trials() -> Vec<Trial> {
    vec![trial(
        "client_alpn_probe_has_a_deadline",
        &[],
        alpn_probe_has_a_deadline,
    )]
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
