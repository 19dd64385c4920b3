//! A port of the host's loopback made reachable on the stack side of a path: the lab's
//! stacks listen on 127.0.0.1 of the host, which the load namespace cannot reach, so a
//! forwarder listens on the stack address (10.77.0.2:PORT, TCP and UDP: HTTP/3 is QUIC on
//! the same port number) inside the stack namespace and relays every connection and every
//! datagram to 127.0.0.1:PORT of the host. The load still crosses the whole impaired path;
//! the relay adds one loopback hop and a user-space copy (a few tens of µs).
//!
//! One thread per forwarded port, one mio poll: a TCP connection is a pair of sockets whose
//! bytes are pumped both ways (a half close passed on as one); a UDP peer (a QUIC
//! connection's address) gets its own socket toward the host's port, so the server sees one
//! peer per client address, dropped after [`UDP_IDLE`] without traffic. The host side is
//! only ever connected to as a client: nothing of the host is configured.
use std::collections::HashMap;
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::net::{Ipv4Addr, Shutdown, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream, UdpSocket};
use mio::{Events, Interest, Poll, Token};

use super::{in_namespace, STACK_ADDR};
use crate::{Error, Result};

/// A UDP peer's relay is dropped after this long without a datagram either way (longer than
/// QUIC's usual idle timeouts of a loaded connection's gaps, short enough that the
/// addresses of closed QUIC connections do not pile up).
pub const UDP_IDLE: Duration = Duration::from_secs(15);
/// At most this many UDP peers at once; datagrams of further new peers are dropped and
/// counted (each peer holds a descriptor).
pub const MAX_UDP_PEERS: usize = 16_384;
/// Bytes read at once from one side of a TCP pair.
const CHUNK: usize = 64 << 10;
/// How often the thread looks at its stop flag and at idle UDP peers.
const WAKE: Duration = Duration::from_millis(100);

const TCP_LISTENER: Token = Token(0);
const UDP_FRONT: Token = Token(1);
/// Tokens from here on: TCP pairs use 2k (the stack side) and 2k+1 (the host side), UDP
/// peers one each; all drawn from one counter, never reused.
const FIRST: usize = 2;

/// What a forwarder relayed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ForwardCounts {
    pub tcp_connections: u64,
    /// Connections the host's port refused (or that broke before their first byte).
    pub tcp_refused: u64,
    pub udp_peers: u64,
    pub udp_datagrams: u64,
    /// Datagrams dropped: too many peers, or a socket buffer full.
    pub udp_dropped: u64,
}

impl ForwardCounts {
    /// `forward 8443: 4 TCP connections (0 refused by 127.0.0.1:8443), 2 UDP peers, …`
    pub fn describe(&self, port: u16) -> String {
        format!(
            "forward {port}: {} TCP connections ({} refused by 127.0.0.1:{port}), {} UDP peers, {} datagrams ({} dropped)",
            self.tcp_connections, self.tcp_refused, self.udp_peers, self.udp_datagrams, self.udp_dropped
        )
    }
}

#[derive(Default)]
struct Shared {
    tcp_connections: AtomicU64,
    tcp_refused: AtomicU64,
    udp_peers: AtomicU64,
    udp_datagrams: AtomicU64,
    udp_dropped: AtomicU64,
}

impl Shared {
    fn counts(&self) -> ForwardCounts {
        ForwardCounts {
            tcp_connections: self.tcp_connections.load(Ordering::Relaxed),
            tcp_refused: self.tcp_refused.load(Ordering::Relaxed),
            udp_peers: self.udp_peers.load(Ordering::Relaxed),
            udp_datagrams: self.udp_datagrams.load(Ordering::Relaxed),
            udp_dropped: self.udp_dropped.load(Ordering::Relaxed),
        }
    }
}

/// One forwarded port; stopped (its sockets closed, so the stack namespace can go) on
/// [`Forward::stop`] or drop.
pub struct Forward {
    pub port: u16,
    stop: Arc<AtomicBool>,
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Forward {
    /// Listens on STACK_ADDR:`port` in `stack_ns` and relays to `to` (the host's
    /// 127.0.0.1:`port`), reached from the calling thread's namespace.
    pub fn start(stack_ns: &File, port: u16, to: SocketAddr) -> Result<Forward> {
        let at: SocketAddr = (STACK_ADDR.parse::<Ipv4Addr>().expect("address"), port).into();
        // Sockets belong to the namespace they were made in, whichever thread uses them.
        let (listener, front) = in_namespace(stack_ns, || {
            let l = std::net::TcpListener::bind(at).map_err(|e| {
                Error::runtime(format!("forward: cannot listen on {at} (TCP): {e}"))
            })?;
            let u = std::net::UdpSocket::bind(at)
                .map_err(|e| Error::runtime(format!("forward: cannot bind {at} (UDP): {e}")))?;
            l.set_nonblocking(true)?;
            u.set_nonblocking(true)?;
            Ok((l, u))
        })?;
        let stop = Arc::new(AtomicBool::new(false));
        let mut relay = Relay::new(listener, front, to)?;
        let shared = relay.shared.clone();
        let s = stop.clone();
        // Spawned from the caller's thread: it is born in the caller's namespace (the
        // host's), where the connections toward `to` are made.
        let thread = std::thread::Builder::new()
            .name(format!("forward-{port}"))
            .spawn(move || relay.run(&s))
            .map_err(|e| Error::runtime(format!("forward: cannot start its thread: {e}")))?;
        Ok(Forward {
            port,
            stop,
            shared,
            thread: Some(thread),
        })
    }

    pub fn counts(&self) -> ForwardCounts {
        self.shared.counts()
    }

    /// Ends the thread and closes every socket; what was relayed.
    pub fn stop(mut self) -> ForwardCounts {
        self.halt();
        self.shared.counts()
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Forward {
    fn drop(&mut self) {
        self.halt();
    }
}

/// One direction of a TCP pair: bytes read from one side, not yet written to the other.
#[derive(Default)]
struct Pending {
    buf: Vec<u8>,
    /// The reading side ended: once `buf` is written, the writing side is shut for writes.
    eof: bool,
    shut: bool,
}

struct Pair {
    /// The load's connection (stack namespace) and ours toward the host's port.
    outer: TcpStream,
    inner: TcpStream,
    /// outer → inner, inner → outer.
    up: Pending,
    down: Pending,
    /// Bytes have come back from the host's port (a refusal shows as an error before).
    answered: bool,
}

struct Peer {
    sock: UdpSocket,
    client: SocketAddr,
    last: Instant,
}

struct Relay {
    poll: Poll,
    listener: TcpListener,
    front: UdpSocket,
    to: SocketAddr,
    next: usize,
    /// By the pair's even token.
    pairs: HashMap<usize, Pair>,
    peers: HashMap<usize, Peer>,
    by_addr: HashMap<SocketAddr, usize>,
    shared: Arc<Shared>,
    buf: Vec<u8>,
}

/// Moves what `from` has toward `to` until either would block; whether anything was read;
/// `Err` when the pair is broken (a reset, a refused connection).
fn pump(
    from: &mut TcpStream,
    to: &mut TcpStream,
    p: &mut Pending,
    buf: &mut [u8],
) -> std::io::Result<bool> {
    let mut read = false;
    loop {
        while !p.buf.is_empty() {
            match to.write(&p.buf) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(n) => {
                    p.buf.drain(..n);
                }
                Err(e) if would_block(&e) => return Ok(read),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        if p.eof {
            if !p.shut {
                p.shut = true;
                let _ = to.shutdown(Shutdown::Write);
            }
            return Ok(read);
        }
        match from.read(buf) {
            Ok(0) => p.eof = true,
            Ok(n) => {
                read = true;
                p.buf.extend_from_slice(&buf[..n]);
            }
            Err(e) if would_block(&e) => return Ok(read),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// A connection still in progress answers writes with NotConnected: as good as WouldBlock.
fn would_block(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::NotConnected)
}

impl Relay {
    /// A relay of the bound, non-blocking `listener` (TCP) and `front` (UDP) to `to`, both
    /// registered with its poller.
    fn new(
        listener: std::net::TcpListener,
        front: std::net::UdpSocket,
        to: SocketAddr,
    ) -> std::io::Result<Relay> {
        let mut relay = Relay {
            poll: Poll::new()?,
            listener: TcpListener::from_std(listener),
            front: UdpSocket::from_std(front),
            to,
            next: FIRST,
            pairs: HashMap::new(),
            peers: HashMap::new(),
            by_addr: HashMap::new(),
            shared: Arc::new(Shared::default()),
            buf: vec![0; CHUNK],
        };
        let reg = relay.poll.registry();
        reg.register(&mut relay.listener, TCP_LISTENER, Interest::READABLE)?;
        reg.register(&mut relay.front, UDP_FRONT, Interest::READABLE)?;
        Ok(relay)
    }

    fn run(&mut self, stop: &AtomicBool) {
        let mut events = Events::with_capacity(256);
        let mut swept = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            if let Err(e) = self.poll.poll(&mut events, Some(WAKE)) {
                if e.kind() == ErrorKind::Interrupted {
                    continue;
                }
                crate::eoutln!("overload: forward: poll failed: {e}");
                return;
            }
            for ev in events.iter() {
                match ev.token() {
                    TCP_LISTENER => self.accept(),
                    UDP_FRONT => self.udp_up(),
                    Token(t) if self.peers.contains_key(&t) => self.udp_down(t),
                    Token(t) => self.tcp(t & !1),
                }
            }
            if swept.elapsed() >= WAKE {
                swept = Instant::now();
                self.sweep_idle();
            }
        }
    }

    fn token(&mut self, n: usize) -> usize {
        let t = self.next;
        self.next += n;
        t
    }

    fn accept(&mut self) {
        loop {
            let (mut outer, _) = match self.listener.accept() {
                Ok(c) => c,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // Out of descriptors and the like: the connection waits in the backlog.
                Err(_) => return,
            };
            self.shared.tcp_connections.fetch_add(1, Ordering::Relaxed);
            let mut inner = match TcpStream::connect(self.to) {
                Ok(s) => s,
                Err(_) => {
                    self.shared.tcp_refused.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            };
            let _ = outer.set_nodelay(true);
            let _ = inner.set_nodelay(true);
            let t = self.token(2);
            let reg = self.poll.registry();
            let both = Interest::READABLE | Interest::WRITABLE;
            if reg.register(&mut outer, Token(t), both).is_err()
                || reg.register(&mut inner, Token(t + 1), both).is_err()
            {
                continue;
            }
            self.pairs.insert(
                t,
                Pair {
                    outer,
                    inner,
                    up: Pending::default(),
                    down: Pending::default(),
                    answered: false,
                },
            );
            // Bytes may already wait (edge-triggered: no event comes for them otherwise).
            self.tcp(t);
        }
    }

    fn tcp(&mut self, t: usize) {
        let Some(p) = self.pairs.get_mut(&t) else {
            return;
        };
        let up = pump(&mut p.outer, &mut p.inner, &mut p.up, &mut self.buf);
        let down = pump(&mut p.inner, &mut p.outer, &mut p.down, &mut self.buf);
        if matches!(down, Ok(true)) || p.down.eof {
            p.answered = true;
        }
        let done = p.up.shut && p.down.shut;
        if up.is_err() || down.is_err() || done {
            let mut p = self.pairs.remove(&t).expect("present");
            // A refused connect may read as an end of stream, not an error: a socket that
            // never got a peer was refused either way.
            let never = p.inner.peer_addr().is_err();
            if never || ((up.is_err() || down.is_err()) && !p.answered) {
                self.shared.tcp_refused.fetch_add(1, Ordering::Relaxed);
            }
            let reg = self.poll.registry();
            let _ = reg.deregister(&mut p.outer);
            let _ = reg.deregister(&mut p.inner);
            // Dropped: both closed (a reset on one side becomes a close on the other).
        }
    }

    fn udp_up(&mut self) {
        loop {
            let (n, client) = match self.front.recv_from(&mut self.buf) {
                Ok(r) => r,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return,
            };
            let t = match self.by_addr.get(&client) {
                Some(&t) => t,
                None => match self.new_peer(client) {
                    Some(t) => t,
                    None => {
                        self.shared.udp_dropped.fetch_add(1, Ordering::Relaxed);
                        continue;
                    }
                },
            };
            let p = self.peers.get_mut(&t).expect("mapped");
            p.last = Instant::now();
            self.shared.udp_datagrams.fetch_add(1, Ordering::Relaxed);
            if p.sock.send(&self.buf[..n]).is_err() {
                self.shared.udp_dropped.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn new_peer(&mut self, client: SocketAddr) -> Option<usize> {
        if self.peers.len() >= MAX_UDP_PEERS {
            return None;
        }
        let local: SocketAddr = match self.to {
            SocketAddr::V4(_) => (Ipv4Addr::LOCALHOST, 0).into(),
            SocketAddr::V6(_) => (std::net::Ipv6Addr::LOCALHOST, 0).into(),
        };
        let mut sock = UdpSocket::bind(local).ok()?;
        sock.connect(self.to).ok()?;
        let t = self.token(1);
        self.poll
            .registry()
            .register(&mut sock, Token(t), Interest::READABLE)
            .ok()?;
        self.shared.udp_peers.fetch_add(1, Ordering::Relaxed);
        self.peers.insert(
            t,
            Peer {
                sock,
                client,
                last: Instant::now(),
            },
        );
        self.by_addr.insert(client, t);
        Some(t)
    }

    fn udp_down(&mut self, t: usize) {
        let Some(p) = self.peers.get_mut(&t) else {
            return;
        };
        loop {
            match p.sock.recv(&mut self.buf) {
                Ok(n) => {
                    p.last = Instant::now();
                    self.shared.udp_datagrams.fetch_add(1, Ordering::Relaxed);
                    if self.front.send_to(&self.buf[..n], p.client).is_err() {
                        self.shared.udp_dropped.fetch_add(1, Ordering::Relaxed);
                    }
                }
                // An ICMP refusal of the host's port is reported once, ahead of datagrams
                // that may still wait: read on (edge-triggered, nothing would wake us for
                // them). The client's own timers handle a server that is gone.
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::Interrupted | ErrorKind::ConnectionRefused
                    ) => {}
                Err(_) => return,
            }
        }
    }

    fn sweep_idle(&mut self) {
        let idle: Vec<usize> = self
            .peers
            .iter()
            .filter(|(_, p)| p.last.elapsed() >= UDP_IDLE)
            .map(|(&t, _)| t)
            .collect();
        for t in idle {
            if let Some(mut p) = self.peers.remove(&t) {
                let _ = self.poll.registry().deregister(&mut p.sock);
                self.by_addr.remove(&p.client);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A connected pair of std streams on loopback: (the side written, the side read).
    fn pair() -> (std::net::TcpStream, std::net::TcpStream) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let a = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        (a, b)
    }

    /// The pump on its own (no namespaces): bytes go through in order, and the reader's end
    /// of stream becomes the writer's half close once everything is written.
    #[test]
    fn pump_passes_bytes_then_the_half_close() {
        let (mut client, server) = pair();
        let (peer, mut sink) = pair();
        server.set_nonblocking(true).unwrap();
        peer.set_nonblocking(true).unwrap();
        let (mut from, mut to) = (TcpStream::from_std(server), TcpStream::from_std(peer));
        let sent: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
        let writer = {
            let sent = sent.clone();
            std::thread::spawn(move || {
                client.write_all(&sent).unwrap();
                client.shutdown(Shutdown::Write).unwrap();
            })
        };
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            sink.set_read_timeout(Some(Duration::from_secs(10)))
                .unwrap();
            sink.read_to_end(&mut got).unwrap();
            got
        });
        let mut p = Pending::default();
        let mut buf = vec![0; 4096];
        let t0 = Instant::now();
        let mut read_any = false;
        while !p.shut && t0.elapsed() < Duration::from_secs(10) {
            read_any |= pump(&mut from, &mut to, &mut p, &mut buf).unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(p.shut, "the half close was passed on");
        assert!(read_any);
        writer.join().unwrap();
        assert_eq!(reader.join().unwrap(), sent);
    }

    /// A host port nobody listens on: the forwarder counts the connection as refused and
    /// closes the load's side (which reads its end), never hangs.
    #[test]
    fn a_refused_host_port_closes_the_loads_connection() {
        let free = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let to = free.local_addr().unwrap();
        drop(free);
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let at = l.local_addr().unwrap();
        l.set_nonblocking(true).unwrap();
        let u = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        u.set_nonblocking(true).unwrap();
        let mut relay = Relay::new(l, u, to).unwrap();
        let shared = relay.shared.clone();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let t = std::thread::spawn(move || relay.run(&s));
        let mut c = std::net::TcpStream::connect(at).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut b = [0u8; 8];
        let r = c.read(&mut b);
        assert!(matches!(r, Ok(0) | Err(_)), "{r:?}");
        stop.store(true, Ordering::Relaxed);
        t.join().unwrap();
        let got = shared.counts();
        assert_eq!((got.tcp_connections, got.tcp_refused), (1, 1), "{got:?}");
    }
}
