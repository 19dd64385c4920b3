//! HTTP/3 (`--http 3`). As HTTP/2's wire does, exchange slots (which keep each request's
//! times, so recording stays one mechanism) ride on streams of a few multiplexed
//! connections; here each connection is QUIC ([`H3Conn`], `h3/`): quinn-proto's state
//! machine over a connected UDP socket of its own, registered with the worker's poller.
//! One quinn-proto `Endpoint` per worker thread routes datagrams to connections and hands
//! out connection ids. QUIC's timers (loss detection, ACK delay, idle) bound the loop's
//! sleep through [`Wire::next_timer`] and run in [`Wire::flush`], before the loop sleeps,
//! which also sends the turn's datagrams: no runtime, no thread besides the worker's.
//!
//! The transport `T` the worker is compiled with (TLS over TCP) is not used: QUIC carries
//! its own TLS, configured from the run's one TLS client (`TlsClient::quic_for_thread`).
use super::mux::{self, Owned, Route};
use super::{Protocol, Reuse, Wire};
use crate::engine::conn::{Phase, Step as ConnStep};
use crate::engine::h2::conn::{Event, Outcome, State};
use crate::engine::h2::hpack::RequestParts;
use crate::engine::h3::conn::{H3Conn, Step};
use crate::engine::h3::{frame, qpack};
use crate::engine::io::Poller;
use crate::engine::tls::QuicSetup;
use crate::engine::transport::{Handshake, Transport};
use crate::engine::worker::{token, SlotRequests, Worker};
use crate::engine::{EngineConfig, Prepared};
use crate::metrics::ErrorKind;
use crate::plan::RequestSpec;
use mio::net::UdpSocket;
use mio::Interest;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

/// Sends of one request the server left unprocessed (GOAWAY, a graceful close) that are
/// retried when idempotent, as for HTTP/2.
const MAX_RETRIES: u8 = 3;

/// HTTP/3's form of the request: its HEADERS frame (QPACK, encoded once) and the header of
/// its DATA frame; the body follows as it is. The kept-alive HTTP/1.1 form tells whether it
/// may be sent again (`Prepared::idempotent`).
pub(super) fn prepare(p: &mut Prepared, spec: &RequestSpec, reuse: Reuse) {
    let section = qpack::encode_request(&RequestParts {
        method: &spec.method,
        scheme: spec.url.scheme.as_str(),
        authority: &spec.url.authority,
        path: &spec.url.target,
        headers: &spec.headers,
        body_len: spec.body.as_ref().map(Vec::len),
    });
    p.body = spec.body.clone().unwrap_or_default();
    p.h3_head = super::http1::exact(frame::request_head(&section, p.body.len()));
    if reuse.keep_alive {
        p.keep_alive = super::http1::exact(spec.render(false));
    }
}

/// HTTP/3's [`Wire`]: the thread's QUIC endpoint and connections.
pub(in crate::engine) struct H3 {
    endpoint: quinn_proto::Endpoint,
    /// The QUIC client of this thread; None when it could not be built (every connect then
    /// fails with the reason in the notes).
    quic: Result<QuicSetup, String>,
    conns: Vec<Option<H3Conn>>,
    /// Generation per index, so a token outlives no connection.
    gens: Vec<u32>,
    free: Vec<usize>,
    /// Swapped with a connection's event list while its events are applied.
    spare: Vec<Event>,
    /// Connections touched this turn, whose datagrams go out in `flush`, as (index, gen).
    dirty: Vec<(usize, u32)>,
    streams: u32,
    /// The server's stream limit was noted once.
    cap_noted: bool,
    /// Scenario users' own connections.
    owned: Owned,
}

impl H3 {
    fn get(&mut self, ci: usize, gen: u32) -> Option<&mut H3Conn> {
        self.conns.get_mut(ci)?.as_mut().filter(|h| h.gen == gen)
    }

    fn touch(&mut self, ci: usize, gen: u32) {
        if !self.dirty.contains(&(ci, gen)) {
            self.dirty.push((ci, gen));
        }
    }
}

impl<T: Transport> Wire<T> for H3 {
    const INDEX: usize = 2;

    fn new(cfg: &EngineConfig) -> H3 {
        let streams = match cfg.protocol {
            Protocol::Http3(h) => h.streams,
            _ => 1,
        };
        let quic = match &cfg.tls {
            Some(t) => t.quic_for_thread(),
            None => Err("HTTP/3 needs an https:// URL".to_string()),
        };
        H3 {
            endpoint: quinn_proto::Endpoint::new(
                Arc::new(quinn_proto::EndpointConfig::default()),
                None,
                false,
                None,
            ),
            quic,
            conns: Vec::new(),
            gens: Vec::new(),
            free: Vec::new(),
            spare: Vec::with_capacity(streams as usize),
            dirty: Vec::new(),
            streams,
            cap_noted: false,
            owned: Owned::default(),
        }
    }

    fn can_dispatch(w: &Worker<'_, T, Self>) -> bool {
        w.h3_room(None)
    }

    fn dispatch_slot(w: &mut Worker<'_, T, Self>, addr: usize, now: Instant) -> Option<usize> {
        w.h3_room(Some(addr)).then(|| w.alloc_slot(now))
    }

    fn pool(_: &mut Worker<'_, T, Self>, _: usize) {}

    fn start(w: &mut Worker<'_, T, Self>, slot: usize, _: usize, now: Instant) {
        w.h3_start(slot, now);
    }

    fn write(_: &mut Worker<'_, T, Self>, _: usize, _: Instant) {}

    fn event(
        w: &mut Worker<'_, T, Self>,
        ci: usize,
        gen: u32,
        readable: bool,
        _writable: bool,
        _read_closed: bool,
    ) {
        if readable {
            w.h3_receive(ci, gen, Instant::now());
        }
    }

    fn read_more(w: &mut Worker<'_, T, Self>, ci: usize, gen: u32, now: Instant) {
        w.h3_receive(ci, gen, now);
    }

    fn flush(w: &mut Worker<'_, T, Self>) {
        w.h3_flush();
    }

    fn next_timer(w: &mut Worker<'_, T, Self>) -> Option<Instant> {
        w.wire
            .conns
            .iter_mut()
            .flatten()
            .filter_map(H3Conn::timeout)
            .min()
    }

    fn release(w: &mut Worker<'_, T, Self>, slot: usize) {
        w.h3_release(slot);
    }

    fn retry(_: &mut Worker<'_, T, Self>, _: usize, _: ErrorKind, _: Instant) -> bool {
        false
    }

    fn scan(w: &mut Worker<'_, T, Self>, now: Instant) {
        w.h3_scan(now);
    }

    fn close_all(w: &mut Worker<'_, T, Self>) {
        w.h3_close_all();
    }

    fn user_streams(w: &Worker<'_, T, Self>) -> Option<usize> {
        Some(w.wire.streams.max(1) as usize)
    }

    fn end_user(w: &mut Worker<'_, T, Self>, user: usize) {
        let mut owned = std::mem::take(&mut w.wire.owned);
        let now = Instant::now();
        owned.release(user, |ci, gen| {
            if w.wire.get(ci, gen).is_some() {
                w.h3_close(ci, now);
            }
        });
        w.wire.owned = owned;
    }

    fn render_own(p: &mut Prepared, https: bool) {
        super::own_parts(&p.keep_alive, https, |parts, body| {
            let section = qpack::encode_request(parts);
            p.h3_head = frame::request_head(&section, body.len());
            p.body.clear();
            p.body.extend_from_slice(body);
        });
    }
}

impl<T: Transport> Worker<'_, T, H3> {
    fn h3_room(&self, addr: Option<usize>) -> bool {
        self.open < self.max_conns
            || self
                .wire
                .conns
                .iter()
                .flatten()
                .any(|h| addr.is_none_or(|a| h.addr == a) && h.has_room())
    }

    /// Puts the slot's request (already begun) on a stream: a scenario user's on its own
    /// connection to the server, the mix's on any of the thread's.
    fn h3_start(&mut self, slot: usize, now: Instant) {
        let addr = self.request_addr(slot);
        self.conns[slot].addr = addr;
        let user = self.conns[slot].user;
        let route = mux::route(user, &self.wire.owned, addr, |ci, gen| {
            self.wire
                .conns
                .get(ci)
                .and_then(Option::as_ref)
                .is_some_and(|h| h.gen == gen && h.usable())
        });
        let ci = match route {
            Route::Own(ci) => ci,
            Route::OpenOwn => match self.h3_connect(addr, now) {
                Ok(i) => {
                    let h = self.wire.conns[i].as_mut().expect("just connected");
                    h.owned = true;
                    let gen = h.gen;
                    self.wire.owned.set(user as usize, addr, i, gen);
                    i
                }
                Err(kind) => return self.connect_failed(slot, kind, now),
            },
            Route::Shared => match self.h3_shared(addr) {
                Some(i) => i,
                None => match self.h3_connect(addr, now) {
                    Ok(i) => i,
                    Err(kind) => return self.connect_failed(slot, kind, now),
                },
            },
        };
        let h = self.wire.conns[ci].as_mut().expect("a live connection");
        let gen = h.gen;
        let c = &mut self.conns[slot];
        c.link = Some((ci, gen));
        c.deadline = c.started + self.cfg.timeout;
        if h.state == State::Connecting {
            c.phase = Phase::Connecting;
            c.deadline = c
                .deadline
                .min(h.deadline.max(c.started + self.cfg.connect_timeout));
        } else {
            c.phase = Phase::Writing;
        }
        let req = c.req;
        let requests = SlotRequests {
            mix: &self.cfg.requests,
            conns: &self.conns,
        };
        h.submit(slot, req, &requests, now);
        self.wire.touch(ci, gen);
        self.h3_drain(ci, now);
    }

    /// A shared connection to `addr` with room, or None: a new one opens.
    fn h3_shared(&self, addr: usize) -> Option<usize> {
        let usable = |h: &H3Conn| h.addr == addr && !h.owned && h.usable();
        let conns = &self.wire.conns;
        let found = conns
            .iter()
            .position(|h| h.as_ref().is_some_and(|h| usable(h) && h.has_room()));
        if found.is_some() || self.open < self.max_conns {
            return found;
        }
        // At the cap (the server allows fewer streams than --streams): wait on the least
        // busy connection to the address, as HTTP/2 does.
        conns
            .iter()
            .enumerate()
            .filter_map(|(i, h)| h.as_ref().filter(|h| usable(h)).map(|h| (i, h)))
            .min_by_key(|(_, h)| h.load())
            .map(|(i, _)| i)
    }

    fn h3_connect(&mut self, addr: usize, now: Instant) -> Result<usize, ErrorKind> {
        let counted = now >= self.warm_end;
        self.may_connect(counted, now)?;
        let remote = self.cfg.addrs[addr];
        let quic = match &self.wire.quic {
            Ok(q) => q,
            Err(e) => {
                let note = e.clone();
                if !self.notes.contains(&note) {
                    self.notes.push(note);
                }
                if counted {
                    self.rec.connect_failure(ErrorKind::QuicHandshake);
                }
                return Err(ErrorKind::QuicHandshake);
            }
        };
        let name = quic
            .names
            .iter()
            .find(|(a, _)| *a == remote)
            .map_or_else(|| remote.ip().to_string(), |(_, n)| n.clone());
        let config = quic.config.clone();
        let from = self.source_for(&remote);
        let socket = match udp_socket(remote, from) {
            Ok(s) => s,
            Err(e) => {
                let kind = ErrorKind::from_io(&e, true);
                self.connect_lost(kind, None, counted, now);
                return Err(kind);
            }
        };
        let mux = &mut self.wire;
        let i = match mux.free.pop() {
            Some(i) => i,
            None => {
                mux.conns.push(None);
                mux.gens.push(0);
                mux.conns.len() - 1
            }
        };
        mux.gens[i] = mux.gens[i].wrapping_add(1);
        let gen = mux.gens[i];
        let mut socket = socket;
        // QUIC's UDP sockets are polled through epoll only: the run picks epoll for HTTP/3
        // (`EngineConfig::backend`).
        let registered = match self.poll.mio_registry() {
            Some(r) => r.register(&mut socket, token(i, gen), Interest::READABLE),
            None => Err(std::io::Error::other("HTTP/3 runs on the epoll backend")),
        };
        if let Err(e) = registered {
            mux.free.push(i);
            return Err(ErrorKind::from_io(&e, true));
        }
        let conn = H3Conn::connect(
            &mut mux.endpoint,
            config,
            socket,
            remote,
            &name,
            addr,
            gen,
            mux.streams,
            self.cfg.calls_per_connection,
            now,
            now + self.cfg.connect_timeout,
        );
        match conn {
            Ok(c) => {
                mux.conns[i] = Some(c);
                mux.touch(i, gen);
                self.open += 1;
                Ok(i)
            }
            Err(e) => {
                mux.free.push(i);
                let note = format!("QUIC connect to {remote}: {e}");
                if !self.notes.contains(&note) {
                    self.notes.push(note);
                }
                if counted {
                    self.rec.connect_failure(ErrorKind::QuicHandshake);
                }
                Err(ErrorKind::QuicHandshake)
            }
        }
    }

    /// Datagrams arrived on connection `ci` (or were left from last turn).
    fn h3_receive(&mut self, ci: usize, gen: u32, now: Instant) {
        let mux = &mut self.wire;
        let Some(h) = mux
            .conns
            .get_mut(ci)
            .and_then(|h| h.as_mut())
            .filter(|h| h.gen == gen)
        else {
            return;
        };
        let requests = SlotRequests {
            mix: &self.cfg.requests,
            conns: &self.conns,
        };
        let step = h.receive(&mut mux.endpoint, &mut self.buf, &requests, now);
        mux.touch(ci, gen);
        self.h3_step(ci, gen, step, now);
    }

    fn h3_step(&mut self, ci: usize, gen: u32, step: Step, now: Instant) {
        match step {
            Step::Wait => {}
            Step::Connected => self.h3_connected(ci, gen, now),
            Step::More => self.more.push((ci, gen)),
        }
        if let Some(h) = self.wire.get(ci, gen) {
            if let Some(kind) = h.failed_with.take() {
                // The handshake failed: one failed attempt, however many requests waited.
                let counted = now >= self.warm_end;
                self.connect_lost(kind, None, counted, now);
            }
        }
        self.h3_drain(ci, now);
    }

    fn h3_connected(&mut self, ci: usize, gen: u32, now: Instant) {
        let counted = now >= self.warm_end;
        let Some(h) = self.wire.get(ci, gen) else {
            return;
        };
        let (start, kind) = (h.connect_start, h.handshake);
        // QUIC has no connect apart from its handshake: the handshake is timed from the
        // first datagram, and the connect time shows as zero.
        let hs = Handshake {
            tcp_connected: Some(start),
            resumed: kind.resumed,
            failure: None,
        };
        self.connection_up(Some(hs), counted, now);
        if counted {
            self.record_connected(Some(hs), start, now);
            if kind.zero_rtt {
                self.rec.quic.zero_rtt_accepted += 1;
            }
        }
    }

    /// Applies the connection's events, then closes it if it is done.
    fn h3_drain(&mut self, ci: usize, now: Instant) {
        loop {
            let mux = &mut self.wire;
            let Some(h) = mux.conns[ci].as_mut() else {
                return;
            };
            if let Some(note) = h.note.take() {
                if !self.notes.contains(&note) {
                    self.notes.push(note);
                }
            }
            if let Some(cap) = h.peer_cap {
                if !mux.cap_noted && cap < mux.streams {
                    mux.cap_noted = true;
                    self.notes.push(format!(
                        "the server allows {cap} concurrent streams per HTTP/3 connection: \
                         --streams {} was capped",
                        mux.streams
                    ));
                }
            }
            if h.events.is_empty() {
                if h.finished() {
                    self.h3_close(ci, now);
                }
                return;
            }
            let gen = h.gen;
            let mut evs = std::mem::take(&mut mux.spare);
            std::mem::swap(&mut evs, &mut h.events);
            for e in evs.drain(..) {
                self.h3_apply(ci, gen, e, now);
            }
            self.wire.spare = evs;
        }
    }

    fn h3_apply(&mut self, ci: usize, gen: u32, e: Event, now: Instant) {
        let slot = e.slot;
        let c = &mut self.conns[slot];
        if c.link != Some((ci, gen)) {
            return;
        }
        match e.outcome {
            Outcome::Sent { len, .. } => {
                if c.phase == Phase::Writing {
                    c.started = now;
                }
                c.phase = Phase::Reading;
                c.written = now;
                c.deliveries += 1;
                self.apply(slot, ConnStep::Sent(len), now);
            }
            Outcome::Done {
                status,
                bytes,
                first_byte,
            } => {
                c.link = None;
                c.bytes = bytes;
                c.first_byte = first_byte.min(now);
                if let (Some(h), Some(dst)) = (self.wire.get(ci, gen), c.capture_mut()) {
                    h.hand_over(slot, dst);
                }
                let counted = self.conns[slot].counted;
                if counted {
                    self.h3_packets(ci, gen);
                }
                self.complete(slot, status, false, now);
            }
            Outcome::Failed(kind) => {
                c.link = None;
                self.fail_after(slot, kind, None, now);
            }
            Outcome::Unprocessed(kind) => {
                c.link = None;
                if c.deliveries == 0 {
                    self.h3_start(slot, now);
                } else if c.resends < MAX_RETRIES && self.may_resend(slot) {
                    let c = &mut self.conns[slot];
                    c.resends += 1;
                    if c.counted {
                        self.rec.retries += 1;
                    }
                    self.h3_start(slot, now);
                } else {
                    self.fail(slot, kind, now);
                }
            }
        }
    }

    /// Adds the QUIC packets connection `ci` exchanged since its last answer to the run's
    /// counts (per request, in the summary: their sum over the answers).
    fn h3_packets(&mut self, ci: usize, gen: u32) {
        let Some(h) = self.wire.get(ci, gen) else {
            return;
        };
        let (sent, received, lost) = h.packets();
        let (s0, r0, l0) = h.counted_packets;
        h.counted_packets = (sent, received, lost);
        let q = &mut self.rec.quic;
        q.packets_sent += sent - s0;
        q.packets_received += received - r0;
        q.packets_lost += lost - l0;
    }

    fn h3_release(&mut self, slot: usize) {
        let Some((ci, gen)) = self.conns[slot].link.take() else {
            return;
        };
        if let Some(h) = self.wire.get(ci, gen) {
            h.cancel(slot);
            self.wire.touch(ci, gen);
        }
    }

    /// Runs the timers that are due and sends every touched connection's datagrams.
    fn h3_flush(&mut self) {
        let now = Instant::now();
        let n = self.wire.conns.len();
        for ci in 0..n {
            let Some(h) = self.wire.conns[ci].as_mut() else {
                continue;
            };
            if h.timeout().is_some_and(|t| t <= now) {
                let gen = h.gen;
                let mux = &mut self.wire;
                let h = mux.conns[ci].as_mut().expect("checked above");
                let requests = SlotRequests {
                    mix: &self.cfg.requests,
                    conns: &self.conns,
                };
                let step = h.on_timeout(&mut mux.endpoint, &requests, now);
                mux.touch(ci, gen);
                self.h3_step(ci, gen, step, now);
            }
        }
        let mut i = 0;
        while let Some(&(ci, gen)) = self.wire.dirty.get(i) {
            i += 1;
            if let Some(h) = self.wire.get(ci, gen) {
                h.transmit(now);
                self.h3_drain(ci, now);
            }
        }
        self.wire.dirty.clear();
    }

    fn h3_close(&mut self, ci: usize, now: Instant) {
        let mux = &mut self.wire;
        if let Some(mut h) = mux.conns[ci].take() {
            h.goodbye(&mut mux.endpoint, now);
            if let Some(mut s) = h.socket.take() {
                if let Some(r) = self.poll.mio_registry() {
                    let _ = r.deregister(&mut s);
                }
            }
            mux.free.push(ci);
            self.open -= 1;
        }
    }

    /// Connections that did not finish their handshake in time fail their requests.
    fn h3_scan(&mut self, now: Instant) {
        let n = self.wire.conns.len();
        for ci in 0..n {
            let Some(h) = self.wire.conns[ci].as_mut() else {
                continue;
            };
            if h.connect_expired(now) {
                let port = self.cfg.addrs[h.addr].port();
                h.note = Some(format!(
                    "no QUIC handshake within --connect-timeout from UDP port {port}: the \
                     server may not serve HTTP/3 there (or a firewall drops UDP); try --http 2"
                ));
                h.fail_all(ErrorKind::QuicHandshake);
                let gen = h.gen;
                self.h3_step(ci, gen, Step::Wait, now);
            }
        }
    }

    fn h3_close_all(&mut self) {
        let now = Instant::now();
        let n = self.wire.conns.len();
        for ci in 0..n {
            if self.wire.conns[ci].is_some() {
                self.h3_close(ci, now);
            }
        }
    }
}

/// A non-blocking UDP socket connected to `remote`, from `from` (`--source`) when given: the
/// kernel then filters other senders' datagrams and reports an ICMP refusal as an error on it.
fn udp_socket(remote: SocketAddr, from: Option<IpAddr>) -> std::io::Result<UdpSocket> {
    let local: SocketAddr = match (from, remote) {
        (Some(ip), _) => (ip, 0).into(),
        (None, SocketAddr::V4(_)) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        (None, SocketAddr::V6(_)) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let s = UdpSocket::bind(local)?;
    s.connect(remote)?;
    Ok(s)
}
