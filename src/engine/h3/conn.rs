//! One HTTP/3 connection: quinn-proto's QUIC state machine over a connected UDP socket of
//! its own, the requests on its bidirectional streams, our control stream and the server's
//! unidirectional ones. Sans I/O as far as the loop is concerned, as `h2/conn.rs` is: the
//! worker hands it readiness, timer expiries and requests; it answers with the same
//! [`Event`]s naming the worker's slots (sent, done, failed, not processed), so timing and
//! recording stay the worker's one mechanism for every protocol.
use super::frame::{self, Frame, FrameError};
use super::qpack::{self, SectionError};
use crate::engine::h2::conn::{Event, Outcome, State};
use crate::engine::http::{field_line, Capture, Captures};
use crate::engine::Requests;
use crate::metrics::ErrorKind;
use bytes::BytesMut;
use mio::net::UdpSocket;
use quinn_proto::{
    ClientConfig, ConnectionError, ConnectionHandle, DatagramEvent, Dir, Endpoint, ReadError,
    StreamEvent, StreamId, VarInt, WriteError,
};
use std::collections::VecDeque;
use std::io::ErrorKind as IoKind;
use std::net::SocketAddr;
use std::time::Instant;

/// Largest response field section we accept (SETTINGS_MAX_FIELD_SECTION_SIZE), as HTTP/1.1's
/// head and HTTP/2's header list.
pub const MAX_FIELD_SECTION: usize = crate::engine::http::MAX_HEAD;
/// Largest frame kept whole on the server's control stream (SETTINGS, GOAWAY).
const MAX_CONTROL_FRAME: usize = 16 * 1024;
/// Datagrams read from one socket per turn before yielding to the other connections.
const DATAGRAMS_PER_TURN: usize = 64;
/// Datagrams one `poll_transmit` may batch into one `sendmsg` (UDP GSO, where the kernel
/// offers it): a burst of a large answer's ACKs or a window of requests goes out at once.
const TRANSMIT_BATCH: usize = 10;

/// One request on a bidirectional stream.
#[derive(Debug)]
struct Stream {
    id: StreamId,
    slot: usize,
    req: usize,
    /// Bytes of the request (its HEADERS frame and DATA) written so far.
    written: usize,
    status: u16,
    bytes: u64,
    first_byte: Option<Instant>,
    /// The response's content-length, which its DATA must match (RFC 9114 §4.1.2).
    length: Option<u64>,
    data: u64,
    head: bool,
    /// Its answer is kept for the slot ([`crate::engine::Prepared::capture`]: a scenario user's).
    capture: bool,
    decoder: frame::Decoder,
    live: bool,
    /// The server's GOAWAY left it out: not processed unless it is answered anyway.
    beyond_goaway: bool,
}

/// A unidirectional stream the server opened: its type once read, and its frames.
#[derive(Debug)]
struct Uni {
    id: StreamId,
    kind: Option<u64>,
    decoder: frame::Decoder,
    /// The control stream's first frame was its SETTINGS (§6.2.1).
    settled: bool,
}

/// What the worker must do after an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Wait,
    /// The handshake completed on this input (count it; events follow).
    Connected,
    /// The read budget is spent and datagrams are likely left: read again next turn.
    More,
}

/// How the handshake went, for the metrics (full, resumed, or with 0-RTT accepted).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HandshakeKind {
    pub resumed: bool,
    pub zero_rtt: bool,
}

pub struct H3Conn {
    pub socket: Option<UdpSocket>,
    /// quinn-udp's sender over `socket` (GSO batches); None: one `send` per datagram.
    udp: Option<quinn_udp::UdpSocketState>,
    pub gen: u32,
    pub addr: usize,
    pub state: State,
    pub connect_start: Instant,
    /// When a connection still connecting gives up.
    pub deadline: Instant,
    pub events: Vec<Event>,
    /// A line worth the summary's notes (the server's error code, no UDP answer).
    pub note: Option<String>,
    /// How the handshake went, once it is done.
    pub handshake: HandshakeKind,
    /// The handshake failed: the kind the worker counts the attempt under.
    pub failed_with: Option<ErrorKind>,
    /// The server refused more streams than this (its MAX_STREAMS), below `--streams`.
    pub peer_cap: Option<u32>,
    handle: ConnectionHandle,
    quic: quinn_proto::Connection,
    remote: SocketAddr,
    streams: Vec<Stream>,
    active: u32,
    queued: VecDeque<(usize, usize)>,
    max_streams: u32,
    calls_left: Option<u32>,
    decoder: qpack::Decoder,
    uni: Vec<Uni>,
    /// The server's GOAWAY: streams at or above it will not be processed.
    goaway: Option<u64>,
    /// A certificate was verified during this connection's handshake (a full handshake;
    /// a resumed one sends none).
    pub verified: bool,
    /// Requests went out as 0-RTT data.
    early: bool,
    /// `--calls-per-connection` is reached: it takes no new request and closes when empty.
    last_call: bool,
    tx: Vec<u8>,
    /// The packet counts (sent, received, lost) already added to the run's.
    pub counted_packets: (u64, u64, u64),
    /// quinn-proto told the endpoint itself that this connection is drained (a stateless
    /// reset, an idle timeout): its handle may already belong to a newer connection.
    drained: bool,
    /// A scenario user's own connection, which the thread's other requests never ride.
    pub owned: bool,
    /// The answers kept for scenario users' slots, and the room their head's lines are
    /// written in while a section is decoded.
    captures: Captures,
    lines: Vec<u8>,
}

impl H3Conn {
    /// Starts a connection to `remote` over `socket` (connected to it), through the thread's
    /// endpoint. `early`: 0-RTT is allowed (idempotent requests only go then).
    #[allow(clippy::too_many_arguments)]
    pub fn connect(
        ep: &mut Endpoint,
        config: ClientConfig,
        socket: UdpSocket,
        remote: SocketAddr,
        server_name: &str,
        addr: usize,
        gen: u32,
        max_streams: u32,
        calls_per_connection: Option<u32>,
        now: Instant,
        deadline: Instant,
    ) -> Result<H3Conn, String> {
        let (handle, quic) = ep
            .connect(now, config, remote, server_name)
            .map_err(|e| e.to_string())?;
        let udp = gso_sender(&socket);
        let mut c = H3Conn {
            socket: Some(socket),
            udp,
            gen,
            addr,
            state: State::Connecting,
            connect_start: now,
            deadline,
            events: Vec::new(),
            note: None,
            handshake: HandshakeKind::default(),
            failed_with: None,
            peer_cap: None,
            handle,
            quic,
            remote,
            streams: Vec::with_capacity(max_streams.min(1024) as usize),
            active: 0,
            queued: VecDeque::new(),
            max_streams,
            calls_left: calls_per_connection,
            decoder: qpack::Decoder::default(),
            uni: Vec::new(),
            goaway: None,
            verified: false,
            early: false,
            last_call: false,
            // Grown to a batch by the first one: most transmits are a single packet.
            tx: Vec::with_capacity(1500),
            counted_packets: (0, 0, 0),
            drained: false,
            owned: false,
            captures: Captures::default(),
            lines: Vec::new(),
        };
        // Our control stream, with SETTINGS, goes out first (0-RTT too when it is on).
        c.open_control();
        Ok(c)
    }

    /// Requests on streams and waiting for one.
    pub fn load(&self) -> u32 {
        self.active + self.queued.len() as u32
    }

    /// Could it take one more request now?
    pub fn has_room(&self) -> bool {
        matches!(self.state, State::Open | State::Connecting)
            && !self.last_call
            && self.load() < self.max_streams.min(self.peer_cap.unwrap_or(u32::MAX))
            && self.calls_left.is_none_or(|n| n > self.load())
    }

    /// Nothing in flight and no more to send: the worker may close it.
    pub fn finished(&self) -> bool {
        match self.state {
            State::Dead => true,
            State::Draining => self.load() == 0,
            State::Open => self.last_call && self.load() == 0,
            State::Connecting => false,
        }
    }

    /// The answer kept for `slot` (its request asked, [`crate::engine::Prepared::capture`]) goes to `dst`.
    pub fn hand_over(&mut self, slot: usize, dst: &mut Capture) {
        self.captures.hand_over(slot, dst);
    }

    /// May carry new requests (not past its last call, no GOAWAY).
    pub fn usable(&self) -> bool {
        matches!(self.state, State::Open | State::Connecting) && !self.last_call
    }

    /// When quinn-proto next needs [`H3Conn::on_timeout`].
    pub fn timeout(&mut self) -> Option<Instant> {
        if self.state == State::Dead {
            return None;
        }
        self.quic.poll_timeout()
    }

    /// The connection's QUIC statistics: (packets sent, received, lost).
    pub fn packets(&self) -> (u64, u64, u64) {
        let s = self.quic.stats();
        (s.path.sent_packets, s.udp_rx.datagrams, s.path.lost_packets)
    }

    fn open_control(&mut self) {
        // Three unidirectional streams are the least a peer must allow (§6.2): ours opens at
        // once, or after the handshake tells the server's limit (Available).
        if let Some(id) = self.quic.streams().open(Dir::Uni) {
            let ctl = frame::control_stream(MAX_FIELD_SECTION as u64);
            let _ = self.quic.send_stream(id).write(&ctl);
        }
    }

    /// Takes the slot's request: on a stream now, or when one is free.
    pub fn submit<R: Requests + ?Sized>(
        &mut self,
        slot: usize,
        req: usize,
        requests: &R,
        now: Instant,
    ) {
        if let Some(n) = self.calls_left.as_mut() {
            *n = n.saturating_sub(1);
        }
        self.queued.push_back((slot, req));
        if self.calls_left == Some(0) {
            // Its last call (--calls-per-connection): no new request; it closes when done.
            self.state = match self.state {
                State::Open | State::Connecting if self.goaway.is_none() => {
                    self.last_call = true;
                    self.state
                }
                s => s,
            };
        }
        self.open_streams(requests, now);
    }

    /// Withdraws a slot's request (its timeout): its stream is reset.
    pub fn cancel(&mut self, slot: usize) {
        if let Some(i) = self.queued.iter().position(|&(s, _)| s == slot) {
            self.queued.remove(i);
            return;
        }
        if let Some(i) = self.streams.iter().position(|s| s.live && s.slot == slot) {
            let id = self.streams[i].id;
            let code = VarInt::from_u64(frame::H3_REQUEST_CANCELLED).unwrap_or(VarInt::MAX);
            let _ = self.quic.send_stream(id).reset(code);
            let _ = self.quic.recv_stream(id).stop(code);
            self.end_stream(i);
        }
    }

    /// Puts queued requests on streams while the connection and the server allow.
    fn open_streams<R: Requests + ?Sized>(&mut self, requests: &R, now: Instant) {
        if !matches!(self.state, State::Open | State::Connecting) {
            return;
        }
        while let Some(&(slot, req)) = self.queued.front() {
            if self.active >= self.max_streams {
                break;
            }
            // 0-RTT data may be replayed by an attacker: only idempotent requests go early.
            if self.state == State::Connecting && !requests.of(slot, req).idempotent() {
                break;
            }
            let Some(id) = self.quic.streams().open(Dir::Bi) else {
                if self.state == State::Open && self.active < self.max_streams && self.active > 0 {
                    // The server's MAX_STREAMS holds us below --streams.
                    self.peer_cap = Some(self.peer_cap.map_or(self.active, |c| c.max(self.active)));
                }
                break;
            };
            self.queued.pop_front();
            if self.peer_cap.is_some_and(|c| self.active >= c) {
                // The server raised its limit past what it allowed when we noted it.
                self.peer_cap = None;
            }
            if self.state == State::Connecting {
                self.early = true;
            }
            let i = match self.streams.iter().position(|s| !s.live) {
                Some(i) => i,
                None => {
                    self.streams.push(Stream {
                        id,
                        slot,
                        req,
                        written: 0,
                        status: 0,
                        bytes: 0,
                        first_byte: None,
                        length: None,
                        data: 0,
                        head: false,
                        capture: false,
                        decoder: frame::Decoder::new(MAX_FIELD_SECTION),
                        live: false,
                        beyond_goaway: false,
                    });
                    self.streams.len() - 1
                }
            };
            let s = &mut self.streams[i];
            s.id = id;
            s.slot = slot;
            s.req = req;
            s.written = 0;
            s.status = 0;
            s.bytes = 0;
            s.first_byte = None;
            s.length = None;
            s.data = 0;
            let p = requests.of(slot, req);
            s.head = p.head_only;
            s.capture = p.capture.is_some();
            if let Some(limit) = p.capture {
                self.captures.start(slot, limit);
            }
            s.decoder.reset();
            s.live = true;
            s.beyond_goaway = false;
            self.active += 1;
            self.write_stream(i, requests);
        }
        let _ = now;
    }

    /// Writes what the flow control allows of stream `i`'s request; when all is written,
    /// finishes the stream and reports it sent.
    fn write_stream<R: Requests + ?Sized>(&mut self, i: usize, requests: &R) {
        let s = &mut self.streams[i];
        let p = requests.of(s.slot, s.req);
        let total = p.h3_head.len() + p.body.len();
        let mut send = self.quic.send_stream(s.id);
        let mut refused = false;
        while s.written < total {
            let piece = if s.written < p.h3_head.len() {
                &p.h3_head[s.written..]
            } else {
                &p.body[s.written - p.h3_head.len()..]
            };
            match send.write(piece) {
                Ok(n) => s.written += n,
                Err(WriteError::Blocked) => return,
                Err(WriteError::Stopped(_)) | Err(WriteError::ClosedStream) => {
                    refused = true;
                    break;
                }
            }
        }
        let slot = s.slot;
        if refused {
            self.events.push(Event {
                slot,
                outcome: Outcome::Failed(ErrorKind::H3Reset),
            });
            self.end_stream(i);
            return;
        }
        let _ = send.finish();
        let stream = s.id.index() as u32;
        self.events.push(Event {
            slot,
            outcome: Outcome::Sent { stream, len: total },
        });
    }

    fn end_stream(&mut self, i: usize) {
        if self.streams[i].live {
            self.streams[i].live = false;
            self.active -= 1;
        }
    }

    /// Reads the socket's datagrams (a readiness event, or the rest left last turn) and
    /// processes what they brought.
    pub fn receive<R: Requests + ?Sized>(
        &mut self,
        ep: &mut Endpoint,
        buf: &mut [u8],
        requests: &R,
        now: Instant,
    ) -> Step {
        let was_connecting = self.state == State::Connecting;
        let mut step = Step::Wait;
        let mut n = 0;
        while let Some(sock) = self.socket.as_ref() {
            if n == DATAGRAMS_PER_TURN {
                step = Step::More;
                break;
            }
            match sock.recv(buf) {
                Ok(len) => {
                    n += 1;
                    let data = BytesMut::from(&buf[..len]);
                    self.tx.clear();
                    match ep.handle(now, self.remote, None, None, data, &mut self.tx) {
                        Some(DatagramEvent::ConnectionEvent(h, ev)) if h == self.handle => {
                            crate::engine::tls::watch_verified(
                                || self.quic.handle_event(ev),
                                &mut self.verified,
                            );
                        }
                        Some(DatagramEvent::Response(t)) => {
                            let _ = sock.send(&self.tx[..t.size]);
                        }
                        _ => {}
                    }
                }
                Err(e) if e.kind() == IoKind::WouldBlock => break,
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(e) => {
                    // A connected UDP socket reports the ICMP answer to our datagrams:
                    // nothing listens on the server's UDP port (a TCP-only server).
                    self.socket_failed(&e);
                    break;
                }
            }
        }
        self.process(ep, requests, now);
        if was_connecting && self.state == State::Open {
            return Step::Connected;
        }
        step
    }

    /// quinn-proto's timer expired.
    pub fn on_timeout<R: Requests + ?Sized>(
        &mut self,
        ep: &mut Endpoint,
        requests: &R,
        now: Instant,
    ) -> Step {
        let was_connecting = self.state == State::Connecting;
        self.quic.handle_timeout(now);
        self.process(ep, requests, now);
        if was_connecting && self.state == State::Open {
            return Step::Connected;
        }
        Step::Wait
    }

    /// Sends what quinn-proto has to send (requests written this turn, ACKs).
    pub fn transmit(&mut self, now: Instant) {
        let Some(sock) = self.socket.as_ref() else {
            return;
        };
        if self.state == State::Dead && self.quic.is_drained() {
            return;
        }
        loop {
            self.tx.clear();
            let batch = self
                .udp
                .as_ref()
                .map_or(1, |u| u.max_gso_segments().min(TRANSMIT_BATCH));
            let Some(t) = self.quic.poll_transmit(now, batch, &mut self.tx) else {
                break;
            };
            let sent = match &self.udp {
                Some(u) => u.send(
                    sock.into(),
                    &quinn_udp::Transmit {
                        destination: self.remote,
                        ecn: None,
                        contents: &self.tx[..t.size],
                        segment_size: t.segment_size,
                        src_ip: None,
                    },
                ),
                None => sock.send(&self.tx[..t.size]).map(|_| ()),
            };
            match sent {
                Ok(()) => {}
                // A full socket buffer drops the datagram: QUIC's loss recovery sends it
                // again, as a router's drop would.
                Err(e) if e.kind() == IoKind::WouldBlock => {}
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(e) => {
                    self.socket_failed(&e);
                    break;
                }
            }
        }
    }

    fn socket_failed(&mut self, e: &std::io::Error) {
        let connecting = self.state == State::Connecting;
        if e.kind() == IoKind::ConnectionRefused {
            self.note = Some(format!(
                "the server does not answer QUIC on UDP port {} (ICMP port unreachable); try --http 2",
                self.remote.port()
            ));
            self.fail_all(if connecting {
                ErrorKind::QuicHandshake
            } else {
                ErrorKind::QuicProtocol
            });
        } else {
            self.fail_all(ErrorKind::from_io(e, connecting));
        }
    }

    /// Applies what quinn-proto has for the endpoint and for us: handshake, streams, loss.
    fn process<R: Requests + ?Sized>(&mut self, ep: &mut Endpoint, requests: &R, now: Instant) {
        loop {
            while let Some(ev) = self.quic.poll_endpoint_events() {
                self.drained |= ev.is_drained();
                if let Some(back) = ep.handle_event(self.handle, ev) {
                    self.quic.handle_event(back);
                }
            }
            let Some(ev) = self.quic.poll() else {
                break;
            };
            match ev {
                quinn_proto::Event::Connected => self.on_connected(requests, now),
                quinn_proto::Event::ConnectionLost { reason } => self.lost(reason),
                quinn_proto::Event::Stream(s) => self.on_stream(s, requests, now),
                quinn_proto::Event::HandshakeDataReady
                | quinn_proto::Event::DatagramReceived
                | quinn_proto::Event::DatagramsUnblocked => {}
            }
        }
        if self.state != State::Dead {
            self.open_streams(requests, now);
        }
    }

    fn on_connected<R: Requests + ?Sized>(&mut self, requests: &R, now: Instant) {
        if self.state != State::Connecting {
            return;
        }
        self.state = State::Open;
        let alpn = self
            .quic
            .crypto_session()
            .handshake_data()
            .and_then(|d| {
                d.downcast::<quinn_proto::crypto::rustls::HandshakeData>()
                    .ok()
            })
            .and_then(|d| d.protocol);
        if alpn.as_deref() != Some(b"h3".as_slice()) {
            self.note = Some(
                "the server did not negotiate h3 in the QUIC handshake (ALPN); try --http 2".into(),
            );
            self.close_with(frame::H3_GENERAL_PROTOCOL_ERROR, now);
            self.fail_all(ErrorKind::QuicHandshake);
            return;
        }
        self.handshake = HandshakeKind {
            resumed: !self.verified,
            zero_rtt: self.early && self.quic.accepted_0rtt(),
        };
        if self.early && !self.quic.accepted_0rtt() {
            // The server refused our early data: quinn-proto dropped those streams' data,
            // so their requests go again, now on 1-RTT streams.
            let mut again: Vec<(usize, usize)> = Vec::new();
            for i in 0..self.streams.len() {
                if self.streams[i].live {
                    again.push((self.streams[i].slot, self.streams[i].req));
                    self.end_stream(i);
                }
            }
            for (slot, req) in again.into_iter().rev() {
                self.queued.push_front((slot, req));
            }
            self.open_control();
        }
        self.open_streams(requests, now);
    }

    fn on_stream<R: Requests + ?Sized>(&mut self, ev: StreamEvent, requests: &R, now: Instant) {
        match ev {
            StreamEvent::Readable { id } => self.read(id, now),
            StreamEvent::Writable { id } => {
                if let Some(i) = self.streams.iter().position(|s| s.live && s.id == id) {
                    self.write_stream(i, requests);
                }
            }
            StreamEvent::Opened { dir: Dir::Uni } => {
                while let Some(id) = self.quic.streams().accept(Dir::Uni) {
                    self.uni.push(Uni {
                        id,
                        kind: None,
                        decoder: frame::Decoder::new(MAX_CONTROL_FRAME),
                        settled: false,
                    });
                    self.read(id, now);
                }
            }
            StreamEvent::Opened { dir: Dir::Bi } => {
                // Servers open no request streams (§6.1): refuse it.
                while let Some(id) = self.quic.streams().accept(Dir::Bi) {
                    let code =
                        VarInt::from_u64(frame::H3_STREAM_CREATION_ERROR).unwrap_or(VarInt::MAX);
                    let _ = self.quic.recv_stream(id).stop(code);
                    let _ = self.quic.send_stream(id).reset(code);
                }
            }
            StreamEvent::Stopped { id, .. } => {
                if let Some(i) = self.streams.iter().position(|s| s.live && s.id == id) {
                    // The server stopped reading our request: it will not answer it whole.
                    // (A response already complete was reported as it completed.)
                    let slot = self.streams[i].slot;
                    self.events.push(Event {
                        slot,
                        outcome: Outcome::Failed(ErrorKind::H3Reset),
                    });
                    self.end_stream(i);
                }
            }
            StreamEvent::Available { dir: Dir::Bi } => self.open_streams(requests, now),
            StreamEvent::Available { dir: Dir::Uni } | StreamEvent::Finished { .. } => {}
        }
    }

    /// Reads what stream `id` has.
    fn read(&mut self, id: StreamId, now: Instant) {
        if let Some(u) = self.uni.iter().position(|u| u.id == id) {
            return self.read_uni(u, now);
        }
        let Some(i) = self.streams.iter().position(|s| s.live && s.id == id) else {
            return;
        };
        let mut recv = self.quic.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            return;
        };
        let mut failure: Option<ErrorKind> = None;
        let mut fin = false;
        let mut conn_error: Option<u64> = None;
        // Reset by the server before it processed the request: it may go again.
        let mut rejected = false;
        let s = &mut self.streams[i];
        let decoder = &mut self.decoder;
        // A scenario user's answer: its head's lines and its body are kept for the slot.
        let mut kept = if s.capture {
            self.captures.get(s.slot)
        } else {
            None
        };
        let lines = &mut self.lines;
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => {
                    if failure.is_some() || conn_error.is_some() {
                        continue;
                    }
                    let r = s.decoder.feed(&chunk.bytes, |f| match f {
                        Frame::Headers(section) => {
                            s.bytes += section.len() as u64;
                            lines.clear();
                            let head = match kept.is_some() && s.status == 0 {
                                true => decoder.head_with(section, MAX_FIELD_SECTION, |n, v| {
                                    field_line(lines, n, v)
                                }),
                                false => decoder.head(section, MAX_FIELD_SECTION),
                            };
                            match head {
                                Ok(h) if h.status >= 200 && s.status == 0 => {
                                    s.status = h.status;
                                    if let Some(c) = kept.as_deref_mut() {
                                        c.set_head(h.status, lines);
                                    }
                                    s.first_byte.get_or_insert(now);
                                    s.length = if s.head || h.status == 204 || h.status == 304 {
                                        None
                                    } else {
                                        h.length
                                    };
                                    true
                                }
                                // 1xx: informational, the final answer follows.
                                Ok(h) if (100..200).contains(&h.status) && s.status == 0 => {
                                    s.first_byte.get_or_insert(now);
                                    true
                                }
                                // Trailers: after the answer, without a status.
                                Ok(h) if h.status == 0 && s.status != 0 => true,
                                Ok(_) => {
                                    failure = Some(ErrorKind::Protocol);
                                    false
                                }
                                Err(SectionError::Decompression) => {
                                    conn_error = Some(frame::QPACK_DECOMPRESSION_FAILED);
                                    false
                                }
                                Err(_) => {
                                    failure = Some(ErrorKind::Protocol);
                                    false
                                }
                            }
                        }
                        Frame::Data(d) => {
                            if s.status == 0 {
                                failure = Some(ErrorKind::Protocol); // DATA before HEADERS
                                return false;
                            }
                            s.data += d.len() as u64;
                            s.bytes += d.len() as u64;
                            if let Some(c) = kept.as_deref_mut() {
                                c.body(d);
                            }
                            true
                        }
                        // SETTINGS and GOAWAY belong to the control stream (§7.2.4, §7.2.6).
                        Frame::Settings(_) | Frame::Goaway(_) => {
                            conn_error = Some(frame::H3_FRAME_UNEXPECTED);
                            false
                        }
                        Frame::Skipped(_) => true,
                    });
                    if let Err(FrameError(code)) = r {
                        if code == frame::H3_MESSAGE_ERROR {
                            failure = Some(ErrorKind::Protocol);
                        } else {
                            conn_error = Some(code);
                        }
                    }
                }
                Ok(None) => {
                    fin = true;
                    break;
                }
                Err(ReadError::Blocked) => break,
                Err(ReadError::Reset(code)) => {
                    let code = code.into_inner();
                    rejected = code == frame::H3_REQUEST_REJECTED
                        || (s.beyond_goaway && code == frame::H3_REQUEST_CANCELLED);
                    failure.get_or_insert(ErrorKind::H3Reset);
                    break;
                }
            }
        }
        let _ = chunks.finalize();
        if let Some(code) = conn_error {
            self.protocol_error(code, now);
            return;
        }
        let s = &mut self.streams[i];
        let slot = s.slot;
        let outcome = if rejected && s.status == 0 {
            Some(Outcome::Unprocessed(if s.beyond_goaway {
                ErrorKind::H3Goaway
            } else {
                ErrorKind::H3Reset
            }))
        } else if let Some(kind) = failure {
            Some(Outcome::Failed(kind))
        } else if fin {
            if s.status == 0 || !s.decoder.at_boundary() || s.length.is_some_and(|l| l != s.data) {
                Some(Outcome::Failed(ErrorKind::Protocol))
            } else {
                Some(Outcome::Done {
                    status: s.status,
                    bytes: s.bytes,
                    first_byte: s.first_byte.unwrap_or(now),
                })
            }
        } else {
            None
        };
        if let Some(outcome) = outcome {
            if matches!(outcome, Outcome::Done { .. }) && self.streams[i].beyond_goaway {
                // Taken, but the server broke its word: a client that trusts the GOAWAY would
                // have sent this request again (processed twice).
                self.note = Some(
                    "an HTTP/3 server answered a request at or above its GOAWAY's stream id \
                     (RFC 9114 §5.2: the id is the first request it did not process)"
                        .into(),
                );
            }
            if !fin {
                let code = VarInt::from_u64(frame::H3_REQUEST_CANCELLED).unwrap_or(VarInt::MAX);
                let _ = self.quic.recv_stream(id).stop(code);
            }
            self.events.push(Event { slot, outcome });
            self.end_stream(i);
        }
    }

    /// Reads a server's unidirectional stream: its type, then (control stream) its frames.
    fn read_uni(&mut self, u: usize, now: Instant) {
        let id = self.uni[u].id;
        let mut recv = self.quic.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            return;
        };
        let mut error: Option<u64> = None;
        let mut goaway: Option<u64> = None;
        let mut fin = false;
        let mut ignore = false;
        let uni = &mut self.uni[u];
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(chunk)) => {
                    if error.is_some() || ignore {
                        continue;
                    }
                    let mut data: &[u8] = &chunk.bytes;
                    if uni.kind.is_none() {
                        // The stream type is one varint; its bytes may straddle chunks only
                        // in theory (it is the first byte or few of the stream): a cut one is
                        // kept in the decoder's head room by reading it whole here.
                        match frame::varint(data) {
                            Some((kind, n)) => {
                                uni.kind = Some(kind);
                                data = &data[n..];
                            }
                            None => {
                                error = Some(frame::H3_STREAM_CREATION_ERROR);
                                continue;
                            }
                        }
                    }
                    match uni.kind {
                        Some(frame::STREAM_CONTROL) => {
                            let settled = &mut uni.settled;
                            let r = uni.decoder.feed(data, |f| {
                                match f {
                                    Frame::Settings(p) if !*settled => {
                                        *settled = true;
                                        if let Err(FrameError(c)) = frame::check_settings(p) {
                                            error = Some(c);
                                            return false;
                                        }
                                    }
                                    _ if !*settled => {
                                        error = Some(frame::H3_MISSING_SETTINGS);
                                        return false;
                                    }
                                    Frame::Goaway(id) => goaway = Some(id),
                                    Frame::Skipped(_) => {}
                                    // DATA, HEADERS or a second SETTINGS on the control stream.
                                    _ => {
                                        error = Some(frame::H3_FRAME_UNEXPECTED);
                                        return false;
                                    }
                                }
                                true
                            });
                            if let Err(FrameError(c)) = r {
                                error = Some(c);
                            }
                        }
                        // QPACK's streams: with a table capacity of 0 the server's encoder
                        // may only set that capacity to 0; anything is read and dropped
                        // (an insert would show as a decompression failure on a request).
                        Some(frame::STREAM_QPACK_ENCODER | frame::STREAM_QPACK_DECODER) => {}
                        // Push streams (we allow none) and unknown types: stop reading.
                        _ => ignore = true,
                    }
                }
                Ok(None) => {
                    fin = true;
                    break;
                }
                Err(ReadError::Blocked) => break,
                Err(ReadError::Reset(_)) => {
                    fin = true;
                    break;
                }
            }
        }
        let _ = chunks.finalize();
        let kind = self.uni[u].kind;
        if ignore {
            let code = VarInt::from_u64(frame::H3_STREAM_CREATION_ERROR).unwrap_or(VarInt::MAX);
            let _ = self.quic.recv_stream(id).stop(code);
        }
        if let Some(code) = error {
            return self.protocol_error(code, now);
        }
        if fin
            && matches!(
                kind,
                Some(
                    frame::STREAM_CONTROL
                        | frame::STREAM_QPACK_ENCODER
                        | frame::STREAM_QPACK_DECODER
                )
            )
        {
            return self.protocol_error(frame::H3_CLOSED_CRITICAL_STREAM, now);
        }
        if let Some(last) = goaway {
            self.on_goaway(last);
        }
    }

    /// The server's GOAWAY: requests on streams at or above `last` were not processed and
    /// may go elsewhere; no new stream opens here.
    fn on_goaway(&mut self, last: u64) {
        if self.goaway.is_some_and(|g| last > g) {
            // A GOAWAY may only lower the id (§5.2).
            return;
        }
        self.goaway = Some(last);
        if self.state == State::Open || self.state == State::Connecting {
            self.state = State::Draining;
        }
        // Streams at or above `last` are left unprocessed, but an answer that comes anyway
        // is taken (a server may count from the stream it is answering): they end when
        // answered, reset (H3_REQUEST_REJECTED) or when the connection closes.
        for s in self.streams.iter_mut().filter(|s| s.live) {
            s.beyond_goaway |= u64::from(s.id) >= last;
        }
        for (slot, _) in std::mem::take(&mut self.queued) {
            self.events.push(Event {
                slot,
                outcome: Outcome::Unprocessed(ErrorKind::H3Goaway),
            });
        }
    }

    /// We close the connection for a violation of HTTP/3 (or QPACK) by the server.
    fn protocol_error(&mut self, code: u64, now: Instant) {
        self.note = Some(format!(
            "an HTTP/3 server broke the protocol ({}); overload closed the connection",
            frame::FrameError(code)
        ));
        self.close_with(code, now);
        self.fail_all(ErrorKind::QuicProtocol);
    }

    fn close_with(&mut self, code: u64, now: Instant) {
        let code = VarInt::from_u64(code).unwrap_or(VarInt::MAX);
        self.quic.close(now, code, bytes::Bytes::new());
        self.transmit(now);
    }

    /// The connection is gone (quinn-proto's account of why).
    fn lost(&mut self, reason: ConnectionError) {
        let connecting = self.state == State::Connecting;
        let kind = match &reason {
            ConnectionError::LocallyClosed => ErrorKind::Closed,
            ConnectionError::TimedOut if connecting => ErrorKind::QuicHandshake,
            ConnectionError::TimedOut => ErrorKind::QuicIdleTimeout,
            ConnectionError::Reset => ErrorKind::Reset,
            ConnectionError::VersionMismatch => ErrorKind::QuicHandshake,
            ConnectionError::ApplicationClosed(c) => {
                let code = c.error_code.into_inner();
                if code == frame::H3_NO_ERROR {
                    // A graceful close: what was in flight was not processed.
                    return self.unprocessed_all(ErrorKind::H3Goaway);
                }
                self.note = Some(format!(
                    "an HTTP/3 server closed a connection with {}{}",
                    frame::FrameError(code),
                    reason_text(&c.reason)
                ));
                ErrorKind::QuicProtocol
            }
            ConnectionError::ConnectionClosed(c) => {
                let code = u64::from(c.error_code);
                self.note = Some(format!(
                    "a QUIC server closed a connection with transport error 0x{code:x}{}{}",
                    tls_alert(code),
                    reason_text(&c.reason)
                ));
                // 0x100..=0x1ff: a TLS alert (RFC 9001 §4.8).
                if connecting || (0x100..0x200).contains(&code) {
                    ErrorKind::QuicHandshake
                } else {
                    ErrorKind::QuicProtocol
                }
            }
            ConnectionError::TransportError(e) => {
                let code = u64::from(e.code);
                if connecting && (0x100..0x200).contains(&code) {
                    // Our TLS refused the server (its certificate, as `tls-certificate`).
                    let alert = (code & 0xff) as u8;
                    self.note = Some(format!("QUIC handshake refused: {}", e.reason));
                    if matches!(alert, 42..=46 | 48) {
                        ErrorKind::TlsCertificate
                    } else {
                        ErrorKind::QuicHandshake
                    }
                } else {
                    self.note = Some(format!("QUIC error: {e}"));
                    if connecting {
                        ErrorKind::QuicHandshake
                    } else {
                        ErrorKind::QuicProtocol
                    }
                }
            }
            ConnectionError::CidsExhausted => ErrorKind::Other,
        };
        self.fail_all(kind);
    }

    /// Everything in flight or waiting fails with `kind`; the connection is dead.
    pub fn fail_all(&mut self, kind: ErrorKind) {
        if self.state == State::Connecting {
            self.failed_with = Some(kind);
        }
        self.state = State::Dead;
        for i in 0..self.streams.len() {
            if self.streams[i].live {
                let slot = self.streams[i].slot;
                self.events.push(Event {
                    slot,
                    outcome: Outcome::Failed(kind),
                });
                self.end_stream(i);
            }
        }
        for (slot, _) in std::mem::take(&mut self.queued) {
            self.events.push(Event {
                slot,
                outcome: Outcome::Failed(kind),
            });
        }
    }

    fn unprocessed_all(&mut self, kind: ErrorKind) {
        self.state = State::Dead;
        for i in 0..self.streams.len() {
            if self.streams[i].live {
                let slot = self.streams[i].slot;
                self.events.push(Event {
                    slot,
                    outcome: Outcome::Unprocessed(kind),
                });
                self.end_stream(i);
            }
        }
        for (slot, _) in std::mem::take(&mut self.queued) {
            self.events.push(Event {
                slot,
                outcome: Outcome::Unprocessed(kind),
            });
        }
    }

    /// Still connecting past its deadline?
    pub fn connect_expired(&self, now: Instant) -> bool {
        self.state == State::Connecting && now >= self.deadline
    }

    /// The end of the run (or of the connection): a polite close, then the endpoint forgets
    /// it.
    pub fn goodbye(&mut self, ep: &mut Endpoint, now: Instant) {
        if !self.quic.is_closed() {
            self.close_with(frame::H3_NO_ERROR, now);
        }
        // Once only: the endpoint frees the handle at the first, and a second would drop
        // whichever connection was given it since (its packets then met stateless resets and
        // its handshake never finished).
        if !self.drained {
            self.drained = true;
            ep.handle_event(self.handle, quinn_proto::EndpointEvent::drained());
        }
    }
}

/// quinn-udp's sender for `socket`, with UDP GRO off again (quinn-udp turns it on, and the
/// receive path reads one datagram per `recv`); None where either fails: plain sends then.
fn gso_sender(socket: &UdpSocket) -> Option<quinn_udp::UdpSocketState> {
    use std::os::fd::AsRawFd;
    let state = quinn_udp::UdpSocketState::new(socket.into()).ok()?;
    let off: libc::c_int = 0;
    // SAFETY: a valid socket descriptor, and an int option of the size given.
    let r = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_UDP,
            libc::UDP_GRO,
            std::ptr::addr_of!(off).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    // ENOPROTOOPT: a kernel without GRO, so nothing to turn off.
    (r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOPROTOOPT))
        .then_some(state)
}

/// A transport error in 0x100..=0x1ff is a TLS alert (RFC 9001 §4.8): its name, for a note.
fn tls_alert(code: u64) -> String {
    if !(0x100..0x200).contains(&code) {
        return String::new();
    }
    let alert = code - 0x100;
    let name = match alert {
        40 => "handshake_failure",
        42 => "bad_certificate",
        46 => "certificate_unknown",
        48 => "unknown_ca",
        80 => "internal_error",
        109 => "missing_extension",
        112 => "unrecognized_name",
        120 => "no_application_protocol",
        _ => "",
    };
    format!(" (TLS alert {alert} {name})").replace(" )", ")")
}

/// The peer's reason phrase, if any, for a note.
fn reason_text(r: &[u8]) -> String {
    if r.is_empty() {
        return String::new();
    }
    let text: String = String::from_utf8_lossy(&r[..r.len().min(120)])
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    format!(": {text}")
}

#[cfg(test)]
#[path = "conn_tests.rs"]
mod tests;
