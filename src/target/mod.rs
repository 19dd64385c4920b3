//! The embedded target server: the studies' workloads and faults, for demo, tests, benchmarks.
//!
//! A minimal HTTP/1.1 server hand-written over tokio's `TcpStream` (httparse for request
//! heads) rather than hyper, because the fault modes must be able to put broken HTTP on the
//! wire. It runs on its own multi-threaded tokio runtime, so callers need no runtime:
//!
//! ```no_run
//! let handle = overload::target::start(overload::target::TargetConfig::default())?;
//! println!("serving on http://{}", handle.addr);
//! handle.stop();
//! # Ok::<(), overload::Error>(())
//! ```
//!
//! Files: `server` (listener, accept loop), `conn` (one connection: keep-alive, pipelining),
//! `request` (head and body framing), `routes` (the workloads), `workers` (the `--workers`
//! gate), `stall` (the `--stall` freeze), `timer` (precise `/sleep`), `faults` (broken answers),
//! `tls` (HTTPS: certificates, TLS faults), `h2` (HTTP/2: h2c with prior knowledge on the
//! same port, h2 over TLS by ALPN; the `h2` crate's server), `h3` (HTTP/3 over QUIC on the
//! same port number over UDP with `--tls --http3`: quinn and the `h3` crate, and the QUIC
//! faults). See docs/target.md.
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

mod app;
mod arrivals;
mod conn;
mod faults;
mod h2;
mod h3;
mod request;
mod routes;
mod server;
mod stall;
mod timer;
mod tls;
mod workers;

pub use faults::Fault;
pub use tls::{TargetTls, TlsFault, NAMES as CERT_NAMES};

/// How to run the target. `Default` listens on 127.0.0.1 on a free port, unlimited workers,
/// no stall, no fault, one runtime thread per core, backlog 1024.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetConfig {
    /// Address to bind; port 0 picks a free port (see `TargetHandle::addr`).
    pub listen: SocketAddr,
    /// At most this many requests in service at once; the rest wait in FIFO order.
    pub workers: Option<usize>,
    /// `(freeze, period)`: output freezes during the last `freeze` of every `period`.
    pub stall: Option<(Duration, Duration)>,
    /// Runtime worker threads; 0 means one per available core.
    pub threads: usize,
    /// Listen backlog (capped by the kernel at net.core.somaxconn).
    pub backlog: u32,
    /// A fault played for every connection or request.
    pub fault: Option<Fault>,
    /// Serve HTTPS with this identity (and TLS fault).
    pub tls: Option<TargetTls>,
    /// With `tls`: serve HTTP/3 too, over QUIC on the same port number over UDP, and announce
    /// it on the TCP side (`Alt-Svc`).
    pub http3: bool,
}

impl Default for TargetConfig {
    fn default() -> Self {
        TargetConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            workers: None,
            stall: None,
            threads: 0,
            backlog: 1024,
            fault: None,
            tls: None,
            http3: false,
        }
    }
}

/// Counters since start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TargetStats {
    /// Requests read and answered (or faulted).
    pub requests: u64,
    /// Requests whose head was read, answered or not yet (a hanging fault never is).
    pub received: u64,
    /// Connections accepted (TCP, and QUIC connections whose handshake began).
    pub connections: u64,
    /// `requests` by protocol: HTTP/1.x, HTTP/2, HTTP/3 (indexes `HTTP1`, `HTTP2`, `HTTP3`).
    pub by_protocol: [u64; 3],
}

/// Indexes of `TargetStats::by_protocol`.
pub const HTTP1: usize = 0;
pub const HTTP2: usize = 1;
pub const HTTP3: usize = 2;

#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) requests: AtomicU64,
    pub(crate) received: AtomicU64,
    pub(crate) connections: AtomicU64,
    pub(crate) by_protocol: [AtomicU64; 3],
}

impl Counters {
    /// One request answered (or faulted) over `protocol` (`HTTP1`, `HTTP2`, `HTTP3`).
    pub(crate) fn answered(&self, protocol: usize) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.by_protocol[protocol].fetch_add(1, Ordering::Relaxed);
    }
}

/// The `Alt-Svc` a TCP answer carries when HTTP/3 is served too (empty otherwise): the header
/// line for HTTP/1.1, the value for HTTP/2, made once.
#[derive(Default)]
pub(crate) struct AltSvc {
    pub(crate) line: Vec<u8>,
    pub(crate) value: Option<http::HeaderValue>,
}

impl AltSvc {
    fn h3(port: u16) -> AltSvc {
        // A day, as Caddy and Cloudflare announce it.
        let value = format!("h3=\":{port}\"; ma=86400");
        AltSvc {
            line: format!("Alt-Svc: {value}\r\n").into_bytes(),
            value: http::HeaderValue::from_str(&value).ok(),
        }
    }
}

/// State shared by every connection.
pub(crate) struct Shared {
    pub(crate) stats: Counters,
    pub(crate) gate: workers::Gate,
    pub(crate) stall: Option<stall::Stall>,
    pub(crate) fault: Option<Fault>,
    /// Precise sleeps for `/sleep` (tokio's millisecond timer would stretch them).
    pub(crate) timer: timer::Timer,
    /// HTTPS: the handshake's acceptor, and the TLS fault to play.
    pub(crate) tls: Option<(tokio_rustls::TlsAcceptor, Option<TlsFault>)>,
    /// `/app/*`: the login application's sessions and counters.
    pub(crate) app: app::App,
    /// Requests arrived per second (`/arrivals`).
    pub(crate) arrivals: arrivals::Arrivals,
    pub(crate) alt_svc: AltSvc,
}

impl Shared {
    fn stats(&self) -> TargetStats {
        let c = &self.stats;
        TargetStats {
            requests: c.requests.load(Ordering::Relaxed),
            received: c.received.load(Ordering::Relaxed),
            connections: c.connections.load(Ordering::Relaxed),
            by_protocol: c.by_protocol.each_ref().map(|n| n.load(Ordering::Relaxed)),
        }
    }

    /// `/stats`: the counts so far (the asking request not yet among them).
    pub(crate) fn stats_json(&self) -> String {
        let s = self.stats();
        format!(
            "{{\"requests\":{},\"received\":{},\"connections\":{},\"by_protocol\":{{\"HTTP/1.1\":{},\"HTTP/2\":{},\"HTTP/3\":{}}}}}\n",
            s.requests, s.received, s.connections, s.by_protocol[HTTP1], s.by_protocol[HTTP2], s.by_protocol[HTTP3]
        )
    }
}

/// A running target. Dropping it stops the server, as `stop` does.
pub struct TargetHandle {
    /// The bound address (the real port when the config asked for port 0).
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    /// With the `refuse` fault: the bound, non-listening socket that keeps the port ours.
    _refusing: Option<socket2::Socket>,
}

impl std::fmt::Debug for TargetHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TargetHandle")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

/// Time `stop` gives connections (and `/cpu` spins) to end before abandoning them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(1);

/// Starts the target on its own threads and returns once it is listening.
pub fn start(cfg: TargetConfig) -> crate::Result<TargetHandle> {
    validate(&cfg)?;
    let tls = match &cfg.tls {
        Some(t) => Some((
            tokio_rustls::TlsAcceptor::from(t.server_config().map_err(crate::Error::usage)?),
            t.fault,
        )),
        None => None,
    };
    let refuse = cfg.fault == Some(Fault::Refuse);
    let socket = server::bind(cfg.listen, cfg.backlog, !refuse).map_err(|e| {
        crate::Error::runtime(format!("target: cannot listen on {}: {e}", cfg.listen))
    })?;
    let addr = socket
        .local_addr()?
        .as_socket()
        .ok_or_else(|| crate::Error::runtime("target: bound socket has no IP address"))?;
    let shared = Arc::new(Shared {
        stats: Counters::default(),
        gate: workers::Gate::new(cfg.workers),
        // Aligned to start: the first window is the last `freeze` of the first period.
        stall: cfg
            .stall
            .map(|(freeze, period)| stall::Stall::new(Instant::now(), freeze, period)),
        fault: cfg.fault,
        timer: timer::Timer::start()
            .map_err(|e| crate::Error::runtime(format!("target: cannot spawn thread: {e}")))?,
        tls,
        app: app::App::default(),
        arrivals: arrivals::Arrivals::default(),
        alt_svc: if cfg.http3 {
            AltSvc::h3(addr.port())
        } else {
            AltSvc::default()
        },
    });
    if refuse {
        return Ok(TargetHandle {
            addr,
            shared,
            stop: None,
            thread: None,
            _refusing: Some(socket),
        });
    }

    let threads = match cfg.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("overload-target")
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| crate::Error::runtime(format!("target: cannot start runtime: {e}")))?;
    let (listener, quic) = {
        let _guard = runtime.enter();
        let listener = tokio::net::TcpListener::from_std(socket.into())?;
        let quic = match (&cfg.tls, cfg.http3) {
            (Some(tls), true) => Some(h3::endpoint(addr, tls, cfg.fault)?),
            _ => None,
        };
        (listener, quic)
    };
    let (stop_tx, stop_rx) = oneshot::channel();
    let accept_shared = Arc::clone(&shared);
    // The runtime lives on its own thread so `stop` can shut it down from any context,
    // including from inside a caller's own async runtime.
    let thread = std::thread::Builder::new()
        .name("overload-target-main".into())
        .spawn(move || {
            runtime.block_on(async move {
                // Both sides stop together: the QUIC side when the TCP accept loop returns.
                let quic_loop = quic
                    .clone()
                    .map(|ep| tokio::spawn(h3::accept_loop(ep, Arc::clone(&accept_shared))));
                server::accept_loop(listener, accept_shared, stop_rx).await;
                if let Some(ep) = quic {
                    h3::close(&ep);
                }
                if let Some(l) = quic_loop {
                    let _ = tokio::time::timeout(SHUTDOWN_GRACE, l).await;
                }
            });
            runtime.shutdown_timeout(SHUTDOWN_GRACE);
        })
        .map_err(|e| crate::Error::runtime(format!("target: cannot spawn thread: {e}")))?;
    Ok(TargetHandle {
        addr,
        shared,
        stop: Some(stop_tx),
        thread: Some(thread),
        _refusing: None,
    })
}

fn validate(cfg: &TargetConfig) -> crate::Result<()> {
    if let Some(w) = cfg.workers {
        if w == 0 || w > tokio::sync::Semaphore::MAX_PERMITS {
            return Err(crate::Error::usage(format!(
                "target: workers must be between 1 and {}, got {w}",
                tokio::sync::Semaphore::MAX_PERMITS
            )));
        }
    }
    if let Some((freeze, period)) = cfg.stall {
        if period.is_zero() || freeze >= period {
            return Err(crate::Error::usage(format!(
                "target: stall freeze ({freeze:?}) must be shorter than its period ({period:?})"
            )));
        }
    }
    if cfg.http3 && cfg.tls.is_none() {
        return Err(crate::Error::usage(
            "target: HTTP/3 needs TLS (QUIC always encrypts): add --tls",
        ));
    }
    if cfg.backlog == 0 {
        return Err(crate::Error::usage("target: backlog must be at least 1"));
    }
    Ok(())
}

impl TargetHandle {
    /// `http://ADDR` (`https://` with TLS), for building request URLs.
    pub fn url(&self) -> String {
        let scheme = if self.shared.tls.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.addr)
    }

    pub fn stats(&self) -> TargetStats {
        self.shared.stats()
    }

    /// Stops accepting, closes every connection, and waits (about a second at most) for the
    /// server's threads to end.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // Connections the grace period abandoned may still hold the shared state.
        self.shared.timer.stop();
        self._refusing = None;
    }
}

impl Drop for TargetHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_validation() {
        assert!(validate(&TargetConfig::default()).is_ok());
        let bad = [
            TargetConfig {
                workers: Some(0),
                ..TargetConfig::default()
            },
            TargetConfig {
                stall: Some((Duration::from_secs(5), Duration::from_secs(5))),
                ..TargetConfig::default()
            },
            TargetConfig {
                stall: Some((Duration::ZERO, Duration::ZERO)),
                ..TargetConfig::default()
            },
            TargetConfig {
                backlog: 0,
                ..TargetConfig::default()
            },
        ];
        for cfg in bad {
            assert!(
                matches!(validate(&cfg), Err(crate::Error::Usage(_))),
                "{cfg:?}"
            );
        }
    }

    #[test]
    fn start_stop_on_free_port() {
        let h = start(TargetConfig {
            threads: 1,
            ..TargetConfig::default()
        })
        .expect("start");
        assert_ne!(h.addr.port(), 0);
        assert_eq!(h.stats(), TargetStats::default());
        let addr = h.addr;
        h.stop();
        // Once stopped, nothing listens there.
        assert!(std::net::TcpStream::connect(addr).is_err());
    }

    #[test]
    fn refuse_fault_refuses_connects() {
        let h = start(TargetConfig {
            fault: Some(Fault::Refuse),
            ..TargetConfig::default()
        })
        .expect("start");
        let err = std::net::TcpStream::connect(h.addr).expect_err("refused");
        assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
    }
}
