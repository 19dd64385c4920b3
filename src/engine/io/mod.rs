//! The I/O backend seam: how a worker's loop waits for its connections and moves their bytes.
//!
//! Two backends, picked once per run (`--io auto|epoll|uring`) and per thread compiled into the
//! loop (the worker is generic over its transport, whose [`Socket`] names its [`Poller`]):
//!
//! - `epoll.rs`: readiness. mio's edge-triggered epoll and a timerfd for sub-millisecond
//!   wake-ups; the transports read and write the sockets themselves.
//! - `uring.rs`: completions. One io_uring per thread; each connection is a registered (fixed)
//!   file with a multishot receive into a provided-buffer ring, and its writes become send
//!   submissions; the loop submits and waits once per turn, with the wake-up time as the
//!   wait's own timeout. Completions are turned into the same readiness events epoll gives
//!   (`Ready`), so the protocols (`Wire`) and transports (TCP, TLS) run unchanged on both.
use crate::metrics::ErrorKind;
use mio::Token;
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

pub mod epoll;
pub mod uring;

/// What the user asked for (`--io`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoChoice {
    /// io_uring where the kernel allows it, else epoll.
    #[default]
    Auto,
    Epoll,
    Uring,
}

impl IoChoice {
    pub fn parse(s: &str) -> Result<IoChoice, String> {
        match s {
            "auto" => Ok(IoChoice::Auto),
            "epoll" => Ok(IoChoice::Epoll),
            "uring" | "io_uring" => Ok(IoChoice::Uring),
            _ => Err(format!("--io: '{s}' is not one of auto, epoll, uring")),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            IoChoice::Auto => "auto",
            IoChoice::Epoll => "epoll",
            IoChoice::Uring => "uring",
        }
    }

    /// The backend this choice runs on here for a closed loop: `Auto` probes the kernel
    /// (once per process); an explicit `uring` the kernel refuses is a usage error naming why.
    pub fn resolve(self) -> crate::Result<Backend> {
        self.resolve_for(false, false)
    }

    /// [`IoChoice::resolve`] for a run that speaks HTTP/3 (`quic`) or not, in the open loop
    /// (`open`) or not. QUIC's UDP sockets are polled through epoll only, so auto picks it,
    /// and `--io uring` is refused. Auto also picks epoll for the open loop: measured there
    /// (bench/uring.py, scenario o: 20,000 req/s over 50 connections), io_uring costs about
    /// 1.05× epoll's CPU per request on a quiet machine (1.6× on a busy 2-core one: arrivals
    /// come one by one, and each answer is a sleep and a wake-up on either backend, which
    /// io_uring's fewer syscalls do not make up for), while in the closed loop it costs about
    /// 0.88–0.93× (scenario k).
    pub fn resolve_for(self, quic: bool, open: bool) -> crate::Result<Backend> {
        if quic {
            return match self {
                IoChoice::Uring => Err(crate::Error::usage(
                    "--io uring: HTTP/3 runs on epoll only (its UDP sockets); use --io auto or epoll",
                )),
                _ => Ok(Backend::Epoll),
            };
        }
        match self {
            IoChoice::Epoll => Ok(Backend::Epoll),
            IoChoice::Auto if open => Ok(Backend::Epoll),
            IoChoice::Auto => Ok(match uring::probe() {
                Ok(()) => Backend::Uring,
                Err(_) => Backend::Epoll,
            }),
            IoChoice::Uring => match uring::probe() {
                Ok(()) => Ok(Backend::Uring),
                Err(why) => Err(crate::Error::usage(format!(
                    "--io uring: io_uring is not usable here ({why}); use --io epoll or auto"
                ))),
            },
        }
    }
}

/// The backend a run uses (a metrics type: the results name it).
pub use crate::metrics::IoBackend as Backend;

/// How the plan line and the summary name the backend that runs: its name, and how it was
/// chosen (auto falling back to epoll says why).
pub fn describe(backend: Backend, choice: IoChoice, open: bool) -> String {
    match (choice, backend) {
        (IoChoice::Auto, Backend::Epoll) => match uring::probe() {
            Err(why) => format!("epoll (auto: io_uring refused: {why})"),
            Ok(()) if open => "epoll (auto: the open loop costs less on epoll)".to_string(),
            Ok(()) => "epoll (auto)".to_string(),
        },
        (IoChoice::Auto, b) => format!("{} (auto)", b.name()),
        (_, b) => b.name().to_string(),
    }
}

/// Why `--io uring` cannot run here, or None when it can (tests skip on it).
pub fn uring_refused() -> Option<String> {
    uring::probe().err()
}

/// One connection's readiness this turn, as epoll reports it (io_uring's completions are
/// translated into the same).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ready {
    pub token: Token,
    pub readable: bool,
    pub writable: bool,
    pub read_closed: bool,
}

/// A thread's poller as opened before the threads start (every thread's fds are taken
/// before any connection, see `worker::event_fds`), to be started on its own thread.
pub enum Opened {
    Epoll(epoll::Opened),
    Uring(Box<uring::Opened>),
}

impl Opened {
    pub fn open(backend: Backend) -> crate::Result<Opened> {
        Ok(match backend {
            Backend::Epoll => Opened::Epoll(epoll::Opened::open()?),
            Backend::Uring => Opened::Uring(Box::new(uring::Opened::open()?)),
        })
    }
}

/// A worker's event source.
pub trait Poller: Sized {
    /// What a socket registers with.
    type Registry;

    /// Starts the poller on its worker thread.
    fn start(opened: Opened) -> crate::Result<Self>;

    fn registry(&self) -> &Self::Registry;

    /// mio's registry, for sockets other than the transports' (HTTP/3's UDP): epoll's only.
    fn mio_registry(&self) -> Option<&mio::Registry> {
        None
    }

    /// Submits what the turn queued and waits for readiness until `wake` (None: do not
    /// wait). `events` is refilled with this turn's readiness, one entry per connection.
    fn wait(&mut self, events: &mut Vec<Ready>, wake: Option<Instant>) -> io::Result<()>;
}

/// A non-blocking TCP byte stream of one backend, under a [`super::transport::Transport`]
/// (plain TCP, or TLS on top). `read` and `write` follow `std::io` as a non-blocking socket
/// does: `WouldBlock` until the next readiness event; a short read means drained.
pub trait Socket: Read + Write + Sized {
    type Poller: Poller;

    /// A non-blocking connect, from the local address `from` when given (`--source`).
    fn connect(addr: SocketAddr, from: Option<IpAddr>) -> io::Result<Self>;

    fn register(
        &mut self,
        registry: &<Self::Poller as Poller>::Registry,
        token: Token,
    ) -> io::Result<()>;

    fn deregister(&mut self, registry: &<Self::Poller as Poller>::Registry) -> io::Result<()>;

    /// Ok(true) once the non-blocking connect completed (see `transport::tcp_established`).
    fn established(&mut self) -> Result<bool, ErrorKind>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_choice_parses_and_http3_runs_on_epoll() {
        assert_eq!(IoChoice::parse("uring"), Ok(IoChoice::Uring));
        assert_eq!(IoChoice::parse("io_uring"), Ok(IoChoice::Uring));
        assert_eq!(IoChoice::parse("epoll"), Ok(IoChoice::Epoll));
        assert!(IoChoice::parse("kqueue")
            .unwrap_err()
            .contains("auto, epoll, uring"));
        // QUIC's UDP sockets are epoll's: auto and epoll run there, uring is refused.
        assert_eq!(
            IoChoice::Auto.resolve_for(true, false).unwrap(),
            Backend::Epoll
        );
        assert_eq!(
            IoChoice::Epoll.resolve_for(true, false).unwrap(),
            Backend::Epoll
        );
        let e = IoChoice::Uring
            .resolve_for(true, false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("HTTP/3"), "{e}");
        assert_eq!(IoChoice::Epoll.resolve().unwrap(), Backend::Epoll);
        // Auto is io_uring exactly where the probe allows it.
        let auto = IoChoice::Auto.resolve().unwrap();
        assert_eq!(auto == Backend::Uring, uring_refused().is_none());
        // The open loop: auto is epoll, saying why; an explicit uring is kept.
        assert_eq!(
            IoChoice::Auto.resolve_for(false, true).unwrap(),
            Backend::Epoll
        );
        if uring_refused().is_none() {
            assert_eq!(
                IoChoice::Uring.resolve_for(false, true).unwrap(),
                Backend::Uring
            );
            assert_eq!(
                describe(Backend::Epoll, IoChoice::Auto, true),
                "epoll (auto: the open loop costs less on epoll)"
            );
        }
        assert_eq!(describe(Backend::Epoll, IoChoice::Epoll, false), "epoll");
        assert_eq!(
            describe(Backend::Uring, IoChoice::Auto, false),
            "io_uring (auto)"
        );
    }
}
