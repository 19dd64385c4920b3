//! The seam between the event loop and the byte streams it drives (wrk's `struct sock`).
//!
//! The loop owns sockets' registration, timers and metrics; a [`Transport`] only moves bytes and
//! says when it is ready to carry requests. Plain TCP implements it here; TLS in `tls.rs`:
//! its handshake runs inside [`Transport::establish`] (called again on every readiness event
//! until it says ready), and records it must send while reading (alerts, key updates) are
//! written from inside its `read`, or kept for [`Transport::flush`] when the socket is full. The worker is generic over the transport (static dispatch, nothing per call).
use super::io::{Poller, Socket};
use crate::metrics::{ErrorKind, TlsReason};
use mio::net::TcpStream;
use mio::Token;
use std::io::{self, ErrorKind as IoKind};
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

/// What a TLS transport tells the loop about its handshake, for the metrics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handshake {
    /// When the TCP connect completed (the handshake started); None: still connecting.
    pub tcp_connected: Option<Instant>,
    /// The handshake resumed a session (no full key exchange).
    pub resumed: bool,
    /// Why the handshake failed, when it did.
    pub failure: Option<TlsReason>,
}

/// A non-blocking byte stream to one server, driven by edge-triggered readiness events (the
/// I/O backend's, `io/`: epoll's own, or io_uring's completions translated).
///
/// `read` and `write` follow `std::io`: `Ok(0)` from `read` is the peer's end of stream,
/// `WouldBlock` means "wait for the next event", other errors end the connection (their kind
/// is mapped with [`ErrorKind::from_io`]).
pub trait Transport: Sized {
    /// What opening a connection needs besides the address (TCP: nothing; TLS: the client
    /// configuration and the server name).
    type Setup;

    /// The I/O backend's poller its socket registers with.
    type Poller: Poller;

    /// Starts a non-blocking connect, from the local address `from` when given (`--source`;
    /// else the kernel's choice). An error here means no connection was even attempted (no
    /// fd, no local port, refused at once).
    fn connect(setup: &Self::Setup, addr: SocketAddr, from: Option<IpAddr>) -> io::Result<Self>;

    /// Registers the underlying socket with the loop's poller, for reading and writing.
    fn register(
        &mut self,
        registry: &<Self::Poller as Poller>::Registry,
        token: Token,
    ) -> io::Result<()>;

    fn deregister(&mut self, registry: &<Self::Poller as Poller>::Registry) -> io::Result<()>;

    /// Drives the connection towards carrying requests. `Ok(true)`: ready; `Ok(false)`: not yet,
    /// call again on the next event. TCP: the connect completed. TLS: the handshake too.
    fn establish(&mut self) -> Result<bool, ErrorKind>;

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize>;

    fn write(&mut self, buf: &[u8]) -> io::Result<usize>;

    /// True when the transport holds output of its own that it could not write yet (TLS
    /// records produced while reading); the connection calls [`Transport::flush`] on the next
    /// writable event.
    fn wants_write(&self) -> bool;

    /// Writes what [`Transport::wants_write`] reported; `WouldBlock` keeps it for later.
    fn flush(&mut self) -> io::Result<()>;

    /// The peer ended its stream inside the transport (TLS close_notify) while the socket
    /// stays open: the next read returns EOF at once, and no readiness event will announce
    /// it. Plain TCP's end is the socket's own FIN, which epoll reports.
    fn read_ended(&self) -> bool {
        false
    }

    /// The application protocol the server chose through ALPN, once established.
    fn alpn(&self) -> Option<&[u8]> {
        None
    }

    /// TLS transports: the handshake's timing, kind and failure. None for plain TCP.
    fn handshake(&self) -> Option<Handshake> {
        None
    }
}

/// The TCP socket of every transport: a non-blocking connect to `addr`, bound to `from`
/// when given (see `source.rs`).
pub(super) fn connect_tcp(addr: SocketAddr, from: Option<IpAddr>) -> io::Result<TcpStream> {
    match from {
        None => TcpStream::connect(addr),
        Some(ip) => super::source::connect_from(ip, addr),
    }
}

/// The TCP half of `establish`: Ok(true) once the non-blocking connect completed.
pub(super) fn tcp_established(s: &TcpStream) -> Result<bool, ErrorKind> {
    match s.take_error() {
        Ok(Some(e)) | Err(e) => return Err(ErrorKind::from_io(&e, true)),
        Ok(None) => {}
    }
    // A non-blocking connect is done once the socket has a peer (mio's documented check).
    match s.peer_addr() {
        // TCP self-connect: to a local port nobody listens on, in the ephemeral range, the
        // kernel may pick that very port as ours and connect the socket to itself
        // (simultaneous open). Nothing listens there: it is a refusal, and the request
        // must not be "answered" by its own echo.
        Ok(peer) if s.local_addr().is_ok_and(|local| local == peer) => {
            Err(ErrorKind::ConnectRefused)
        }
        Ok(_) => {
            let _ = s.set_nodelay(true);
            Ok(true)
        }
        Err(e) if e.kind() == IoKind::NotConnected => Ok(false),
        Err(e) => Err(ErrorKind::from_io(&e, true)),
    }
}

/// Plain TCP over a backend's socket (epoll's: a mio stream).
#[derive(Debug)]
pub struct Tcp<S = TcpStream>(S);

impl<S: Socket> Transport for Tcp<S> {
    type Setup = ();
    type Poller = S::Poller;

    fn connect(_: &(), addr: SocketAddr, from: Option<IpAddr>) -> io::Result<Tcp<S>> {
        S::connect(addr, from).map(Tcp)
    }

    fn register(
        &mut self,
        registry: &<S::Poller as Poller>::Registry,
        token: Token,
    ) -> io::Result<()> {
        self.0.register(registry, token)
    }

    fn deregister(&mut self, registry: &<S::Poller as Poller>::Registry) -> io::Result<()> {
        self.0.deregister(registry)
    }

    fn establish(&mut self) -> Result<bool, ErrorKind> {
        self.0.established()
    }

    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }

    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    /// The kernel takes all of TCP's output: nothing is ever held back.
    #[inline]
    fn wants_write(&self) -> bool {
        false
    }

    #[inline]
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};

    /// Polls `establish` until it decides, for at most 5 s (a loaded machine is slow, not stuck).
    fn established(t: &mut Tcp) -> Result<bool, ErrorKind> {
        let end = Instant::now() + Duration::from_secs(5);
        loop {
            match t.establish() {
                Ok(false) if Instant::now() < end => std::thread::sleep(Duration::from_millis(1)),
                r => return r,
            }
        }
    }

    #[test]
    fn tcp_establishes_then_moves_bytes_both_ways() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut t = Tcp::connect(&(), listener.local_addr().unwrap(), None).unwrap();
        assert_eq!(established(&mut t), Ok(true));
        let (mut server, _) = listener.accept().unwrap();
        assert!(!t.wants_write());
        assert_eq!(t.write(b"ping").unwrap(), 4);
        let mut got = [0u8; 4];
        server.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"ping");
        let mut buf = [0u8; 16];
        assert_eq!(t.read(&mut buf).unwrap_err().kind(), IoKind::WouldBlock);
        server.write_all(b"pong").unwrap();
        drop(server);
        // Non-blocking: wait for the bytes, then the FIN reads as 0.
        let end = Instant::now() + Duration::from_secs(5);
        let n = loop {
            match t.read(&mut buf) {
                Err(e) if e.kind() == IoKind::WouldBlock && Instant::now() < end => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                r => break r.unwrap(),
            }
        };
        assert_eq!(&buf[..n], b"pong");
        assert_eq!(t.read(&mut buf).unwrap(), 0);
    }

    /// A socket bound to the port it connects to is what the kernel makes of a connect that
    /// drew the destination as its own ephemeral port: forced here, it must read as refused.
    #[test]
    fn tcp_self_connect_is_refused() {
        use std::os::fd::FromRawFd;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port(); // dropped: nothing listens there now
        let sa = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from(std::net::Ipv4Addr::LOCALHOST).to_be(),
            },
            sin_zero: [0; 8],
        };
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        // SAFETY: plain socket calls on an fd this test owns, with a valid sockaddr_in.
        let fd = unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_NONBLOCK, 0);
            assert!(fd >= 0);
            let p = &sa as *const libc::sockaddr_in as *const libc::sockaddr;
            assert_eq!(libc::bind(fd, p, len), 0, "{}", io::Error::last_os_error());
            let r = libc::connect(fd, p, len);
            let e = io::Error::last_os_error();
            assert!(r == 0 || e.raw_os_error() == Some(libc::EINPROGRESS), "{e}");
            fd
        };
        // SAFETY: `fd` is a connected (or connecting) TCP socket owned by nothing else.
        let std_stream = unsafe { std::net::TcpStream::from_raw_fd(fd) };
        let mut t = Tcp(TcpStream::from_std(std_stream));
        assert_eq!(established(&mut t), Err(ErrorKind::ConnectRefused));
    }

    #[test]
    fn tcp_connect_to_a_closed_port_is_refused() {
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap(); // the listener is dropped: nothing listens there now
        match Tcp::connect(&(), addr, None) {
            Ok(mut t) => assert_eq!(established(&mut t), Err(ErrorKind::ConnectRefused)),
            Err(e) => assert_eq!(ErrorKind::from_io(&e, true), ErrorKind::ConnectRefused),
        }
    }
}
