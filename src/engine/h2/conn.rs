//! One HTTP/2 connection carrying many exchanges: the stream table, SETTINGS, PING, flow
//! control both ways, RST_STREAM and GOAWAY. Sans I/O as far as the loop is concerned: the
//! worker hands it readiness events and requests; it answers with [`Event`]s naming the
//! worker's exchange slots (sent, done, failed, not processed), so timing and recording stay
//! the worker's one mechanism for both protocols.
use super::frame::{self, Frame};
use super::hpack::{BlockError, ResponseDecoder};
use crate::engine::http::{field_line, Captures};
use crate::engine::transport::Transport;
use crate::engine::{Prepared, Requests};
use crate::metrics::ErrorKind;
use std::collections::VecDeque;
use std::io::ErrorKind as IoKind;
use std::time::Instant;

/// Our per-stream receive window (SETTINGS_INITIAL_WINDOW_SIZE): large, so one response's
/// body never waits for a WINDOW_UPDATE round trip on a fast network.
pub const STREAM_WINDOW: u32 = 16 << 20;
/// The connection's receive window, raised at once from the protocol's 64 KiB.
pub const CONN_WINDOW: u32 = 1 << 30;
/// Largest response header list accepted (SETTINGS_MAX_HEADER_LIST_SIZE), as for HTTP/1.1.
pub const MAX_HEADER_LIST: usize = crate::engine::http::MAX_HEAD;
/// Largest encoded header block (HEADERS plus CONTINUATIONs) kept for decoding; beyond it
/// the block cannot be decoded, the header table is lost, and so is the connection.
const MAX_BLOCK: usize = 256 * 1024;
/// Frames that cost a server nothing and carry no answer, accepted between two completed
/// responses: SETTINGS and its ACK, PING and its ACK, GOAWAY, WINDOW_UPDATE while no request
/// body waits for window, RST_STREAM and empty frames for streams no longer open, empty
/// CONTINUATION and DATA frames, 1xx (informational) header blocks, unknown frame types. More is a flood (CVE-2019-9512/9515/
/// 9518, CVE-2023-44487's cousins, the 2024 CONTINUATION flood) and ends the connection.
pub const MAX_CONTROL_FRAMES: u32 = 1000;
/// Streams the server ended lately, remembered so that a frame on one of them is known for
/// the connection error it is (RFC 9113 §5.1, closed); an older one's frames are dropped.
const ENDED_KEPT: usize = 64;
/// Output we hold for a server that does not read (its ACKs and ours): beyond it, the
/// connection is given up instead of growing without bound.
const MAX_OUT: usize = 1 << 20;
/// The initial window of both directions before SETTINGS says otherwise.
const DEFAULT_WINDOW: i64 = 65_535;

/// What the connection tells the worker about an exchange slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The request (HEADERS, and DATA as far as the windows allowed) went out: `len` bytes.
    Sent {
        stream: u32,
        len: usize,
    },
    /// The response ended (END_STREAM); `bytes`: header block and DATA payload bytes;
    /// `first_byte`: when its first header block was read.
    Done {
        status: u16,
        bytes: u64,
        first_byte: Instant,
    },
    Failed(ErrorKind),
    /// The server did not process the request (GOAWAY above its last stream, REFUSED_STREAM,
    /// a kept-alive connection closed before any answer): it may go once more elsewhere if
    /// idempotent, else it counts as this kind.
    Unprocessed(ErrorKind),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub slot: usize,
    pub outcome: Outcome,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Connecting,
    Open,
    /// GOAWAY received (or our call limit reached): no new streams; closes when empty.
    Draining,
    /// Failed or closed: the worker closes the socket.
    Dead,
}

/// What the worker must do after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Wait,
    /// The connection was established on this event (count it; events follow).
    Connected,
    /// The read budget is spent and data is likely left: call [`H2Conn::receive`] next turn.
    More,
}

#[derive(Debug)]
struct Stream {
    id: u32,
    slot: usize,
    req: usize,
    status: u16,
    bytes: u64,
    /// Received DATA not yet given back with a WINDOW_UPDATE.
    unacked: u32,
    send_window: i64,
    /// Request body bytes sent so far.
    body_sent: usize,
    /// At least one frame of the response arrived.
    answered: bool,
    /// When the response's first header block was read (its time to first byte).
    first_byte: Option<Instant>,
    /// The response's content-length, which its DATA must match (RFC 9113 §8.1.1); None
    /// also when it does not apply (HEAD, 204, 304).
    length: Option<u64>,
    /// DATA bytes received, padding aside.
    data: u64,
    /// The request was a HEAD: its answer's content-length describes no body.
    head: bool,
    /// Its answer is kept for the slot ([`Prepared::capture`]: a scenario user's).
    capture: bool,
}

/// Why a connection failed, for the worker's notes.
pub const NOT_H2C: &str =
    "the server does not speak h2c (its first answer was not HTTP/2's SETTINGS: HTTP/1.x, a \
     page, or a close without a frame); try --http 1.1";
pub const NO_ALPN_H2: &str =
    "the server did not negotiate h2 in the TLS handshake (ALPN); try --http 1.1 or auto";
pub const NOT_READING: &str =
    "an HTTP/2 server stopped reading while overload had over 1 MiB to send it; the connection was closed";
pub const FLOOD: &str =
    "an HTTP/2 server flooded a connection with frames that carry no answer (SETTINGS, PING, \
     WINDOW_UPDATE, GOAWAY, empty CONTINUATION or DATA); it was closed";

pub struct H2Conn<T> {
    pub stream: Option<T>,
    /// A scenario user's own connection, which the thread's other requests never ride.
    pub owned: bool,
    /// Bumped whenever the socket changes, so stale events are ignored.
    pub gen: u32,
    pub addr: usize,
    pub state: State,
    pub connect_start: Instant,
    /// When a connection still connecting gives up.
    pub deadline: Instant,
    /// Outcomes for the worker to apply; it drains them after every call.
    pub events: Vec<Event>,
    /// Set when the connection failed in a way worth a note in the summary.
    pub note: Option<&'static str>,
    /// Streams this connection may open in all (`--calls-per-connection`); None: unlimited.
    calls_left: Option<u32>,
    /// Our `--streams`.
    max_streams: u32,
    peer_max_streams: u32,
    peer_max_frame: usize,
    peer_initial_window: i64,
    conn_send_window: i64,
    conn_unacked: u32,
    out: Vec<u8>,
    out_pos: usize,
    dec: frame::Decoder,
    hpack: ResponseDecoder,
    streams: Vec<Stream>,
    /// Slots (and their requests) waiting for a stream: until connected, or over the limit.
    waiting: VecDeque<(usize, usize)>,
    next_id: u32,
    /// A header block cut into CONTINUATIONs so far, for `block_stream`.
    block: Vec<u8>,
    block_stream: u32,
    block_end_stream: bool,
    /// No frame received yet: the first must be SETTINGS (RFC 9113 §3.4).
    first: bool,
    control_frames: u32,
    /// Streams completed on this connection (an EOF before any answer on a connection that
    /// served before is the keep-alive race, not the server failing the request).
    completed: u64,
    peer_closed: bool,
    /// The last [`ENDED_KEPT`] streams the server ended (END_STREAM or its RST_STREAM), a ring.
    ended: [u32; ENDED_KEPT],
    ended_next: usize,
    /// The answers kept for scenario users' slots, and the room their head's lines are
    /// written in while a block is decoded.
    captures: Captures,
    lines: Vec<u8>,
}

impl<T: Transport> H2Conn<T> {
    pub fn new(
        stream: T,
        addr: usize,
        gen: u32,
        max_streams: u32,
        calls: Option<u32>,
        now: Instant,
        deadline: Instant,
    ) -> H2Conn<T> {
        H2Conn {
            stream: Some(stream),
            owned: false,
            gen,
            addr,
            state: State::Connecting,
            connect_start: now,
            deadline,
            events: Vec::with_capacity(max_streams as usize),
            note: None,
            calls_left: calls,
            max_streams: max_streams.max(1),
            // Unlimited until the server's SETTINGS say otherwise (RFC 9113 §6.5.2).
            peer_max_streams: u32::MAX,
            peer_max_frame: frame::MAX_FRAME as usize,
            peer_initial_window: DEFAULT_WINDOW,
            conn_send_window: DEFAULT_WINDOW,
            conn_unacked: 0,
            out: Vec::with_capacity(4096),
            out_pos: 0,
            dec: frame::Decoder::new(),
            hpack: ResponseDecoder::new(),
            streams: Vec::with_capacity(max_streams as usize),
            waiting: VecDeque::new(),
            next_id: 1,
            block: Vec::new(),
            block_stream: 0,
            block_end_stream: false,
            first: true,
            control_frames: 0,
            completed: 0,
            peer_closed: false,
            ended: [0; ENDED_KEPT],
            ended_next: 0,
            captures: Captures::default(),
            lines: Vec::new(),
        }
    }

    /// Streams open now.
    pub fn active(&self) -> usize {
        self.streams.len()
    }

    fn limit(&self) -> usize {
        self.max_streams.min(self.peer_max_streams) as usize
    }

    /// May this connection take one more request (now or as soon as it is connected)?
    pub fn has_room(&self) -> bool {
        matches!(self.state, State::Connecting | State::Open)
            && self
                .calls_left
                .is_none_or(|k| k as usize > self.waiting.len())
            && self.streams.len() + self.waiting.len() < self.limit()
    }

    /// May it take one more request, on a stream or queued for one (a scenario user's own
    /// connection, whose burst waits there for the server's stream limit)?
    pub fn takes_more(&self) -> bool {
        matches!(self.state, State::Connecting | State::Open)
            && self
                .calls_left
                .is_none_or(|k| k as usize > self.waiting.len())
    }

    /// Streams opened so far: a connection's age, as servers that close after N requests
    /// count it.
    pub fn opened(&self) -> u32 {
        self.next_id / 2
    }

    /// Requests queued on it (over the limit, or while connecting).
    pub fn queued(&self) -> usize {
        self.waiting.len()
    }

    /// Nothing left to do on a connection that takes no new streams: the worker closes it.
    pub fn finished(&self) -> bool {
        self.state == State::Dead
            || (self.state == State::Draining && self.streams.is_empty() && self.waiting.is_empty())
    }

    /// Queues the request of `slot`; its frames are written at once if the connection can
    /// carry it, sent by the next [`H2Conn::flush`] (the worker flushes once per turn of its
    /// loop, so the requests started in one turn share one write).
    pub fn submit<R: Requests + ?Sized>(&mut self, slot: usize, req: usize, requests: &R) {
        self.waiting.push_back((slot, req));
        if self.state == State::Open {
            self.start_waiting(requests);
        }
    }

    /// The answer kept for `slot` (its request asked, [`Prepared::capture`]) goes to `dst`.
    pub fn hand_over(&mut self, slot: usize, dst: &mut crate::engine::http::Capture) {
        self.captures.hand_over(slot, dst);
    }

    /// Output waits for [`H2Conn::flush`].
    pub fn unflushed(&self) -> bool {
        self.out.len() > self.out_pos
    }

    /// Withdraws the slot's request (its deadline passed): RST_STREAM if it went out.
    pub fn cancel<R: Requests + ?Sized>(&mut self, slot: usize, requests: &R) {
        if let Some(i) = self.streams.iter().position(|s| s.slot == slot) {
            let s = self.streams.swap_remove(i);
            frame::put_rst_stream(&mut self.out, s.id, frame::CANCEL);
            self.start_waiting(requests);
            self.flush();
        } else if let Some(i) = self.waiting.iter().position(|&(s, _)| s == slot) {
            self.waiting.remove(i);
        }
    }

    /// Handles one readiness event.
    #[allow(clippy::too_many_arguments)]
    pub fn on_event<R: Requests + ?Sized>(
        &mut self,
        readable: bool,
        writable: bool,
        read_closed: bool,
        requests: &R,
        buf: &mut [u8],
        reads: usize,
    ) -> Step {
        if read_closed {
            self.peer_closed = true;
        }
        match self.state {
            State::Dead => Step::Wait,
            State::Connecting => match self.stream.as_mut().map(T::establish) {
                Some(Ok(true)) => {
                    // Over TLS, HTTP/2 needs ALPN to have said so (RFC 9113 §3.2).
                    if self
                        .stream
                        .as_ref()
                        .and_then(T::alpn)
                        .is_some_and(|p| p != b"h2")
                    {
                        self.note = Some(NO_ALPN_H2);
                        self.fail_all(ErrorKind::Protocol);
                        return Step::Connected;
                    }
                    self.state = State::Open;
                    frame::put_settings(
                        &mut self.out,
                        &[
                            (frame::SETTINGS_ENABLE_PUSH, 0),
                            (frame::SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW),
                            (frame::SETTINGS_MAX_HEADER_LIST_SIZE, MAX_HEADER_LIST as u32),
                        ],
                    );
                    frame::put_window_update(&mut self.out, 0, CONN_WINDOW - DEFAULT_WINDOW as u32);
                    // The preface goes first: the buffer was empty until now.
                    self.out.splice(0..0, frame::PREFACE.iter().copied());
                    self.start_waiting(requests);
                    self.flush();
                    Step::Connected
                }
                Some(Ok(false)) => Step::Wait,
                Some(Err(kind)) => {
                    self.fail_all(kind);
                    Step::Wait
                }
                None => {
                    self.fail_all(ErrorKind::Other);
                    Step::Wait
                }
            },
            State::Open | State::Draining => {
                if writable {
                    if self.stream.as_ref().is_some_and(T::wants_write) {
                        if let Some(Err(e)) = self.stream.as_mut().map(T::flush) {
                            if e.kind() != IoKind::WouldBlock {
                                self.fail_all(ErrorKind::from_io(&e, false));
                                return Step::Wait;
                            }
                        }
                    }
                    self.flush();
                }
                if (readable || read_closed) && self.state != State::Dead {
                    return self.receive(buf, reads, requests);
                }
                Step::Wait
            }
        }
    }

    /// Reads at most `reads` buffers this turn and handles the frames in them.
    pub fn receive<R: Requests + ?Sized>(
        &mut self,
        buf: &mut [u8],
        reads: usize,
        requests: &R,
    ) -> Step {
        for _ in 0..reads {
            if self.state == State::Dead {
                return Step::Wait;
            }
            let Some(stream) = self.stream.as_mut() else {
                return Step::Wait;
            };
            let n = match stream.read(buf) {
                Ok(0) => {
                    self.on_eof();
                    return Step::Wait;
                }
                Ok(n) => n,
                Err(e) if e.kind() == IoKind::WouldBlock => return Step::Wait,
                Err(e) if e.kind() == IoKind::Interrupted => continue,
                Err(e) => {
                    self.fail_all(ErrorKind::from_io(&e, false));
                    return Step::Wait;
                }
            };
            self.input(&buf[..n], requests);
            self.flush();
            if n < buf.len() && !self.peer_closed {
                return Step::Wait;
            }
        }
        Step::More
    }

    /// Feeds received bytes to the decoder and handles the frames (public for tests and the
    /// fuzz target, which drive the connection without a socket).
    pub fn input<R: Requests + ?Sized>(&mut self, bytes: &[u8], requests: &R) {
        let mut dec = std::mem::take(&mut self.dec);
        let r = dec.feed(bytes, |f| {
            self.on_frame(f, requests);
            self.state != State::Dead
        });
        self.dec = dec;
        if let Err(e) = r {
            // Not even one frame made sense: whatever it speaks, it is not HTTP/2.
            if self.first {
                self.not_h2c();
            }
            return self.connection_error(e.code());
        }
        // Streams that ended make room for requests waiting over the limit.
        self.start_waiting(requests);
    }

    fn on_frame<R: Requests + ?Sized>(&mut self, f: Frame<'_>, requests: &R) {
        if self.first {
            self.first = false;
            if !matches!(f, Frame::Settings { ack: false, .. }) {
                self.not_h2c();
                return self.connection_error(frame::PROTOCOL_ERROR);
            }
        }
        // Nothing but the rest of a header block may come while one is open (§6.10).
        if self.block_stream != 0 && !matches!(f, Frame::Continuation { .. }) {
            return self.connection_error(frame::PROTOCOL_ERROR);
        }
        match f {
            Frame::Data {
                stream,
                len,
                end_stream,
                padding,
                data,
            } => self.on_data(stream, len, padding, data, end_stream),
            Frame::Headers {
                stream,
                end_stream,
                end_headers,
                block,
            } => {
                if end_headers {
                    self.on_block(stream, block, end_stream);
                } else {
                    if block.is_empty() && self.flood() {
                        return;
                    }
                    self.block.clear();
                    self.block.extend_from_slice(block);
                    self.block_stream = stream;
                    self.block_end_stream = end_stream;
                }
            }
            Frame::Continuation {
                stream,
                end_headers,
                block,
            } => {
                if stream != self.block_stream {
                    return self.connection_error(frame::PROTOCOL_ERROR);
                }
                if self.block.len() + block.len() > MAX_BLOCK {
                    return self.connection_error(frame::ENHANCE_YOUR_CALM);
                }
                // Empty pieces add nothing to the block, so MAX_BLOCK never stops them.
                if block.is_empty() && !end_headers && self.flood() {
                    return;
                }
                self.block.extend_from_slice(block);
                if end_headers {
                    let b = std::mem::take(&mut self.block);
                    self.block_stream = 0;
                    self.on_block(stream, &b, self.block_end_stream);
                    self.block = b;
                    self.block.clear();
                }
            }
            Frame::RstStream { stream, code } => {
                let Some(i) = self.find(stream) else {
                    // Ours reset already, or ended: harmless once, a flood without end.
                    if !self.idle(stream) {
                        self.flood();
                    }
                    return;
                };
                {
                    let s = self.streams.swap_remove(i);
                    self.remember_ended(s.id);
                    let outcome = if code == frame::REFUSED_STREAM {
                        Outcome::Unprocessed(ErrorKind::H2Reset)
                    } else {
                        Outcome::Failed(ErrorKind::H2Reset)
                    };
                    self.events.push(Event {
                        slot: s.slot,
                        outcome,
                    });
                    self.start_waiting(requests);
                }
            }
            Frame::Settings { ack: true, .. } => {
                self.flood();
            }
            Frame::Settings { ack: false, params } => {
                if self.flood() {
                    return;
                }
                for (id, v) in frame::settings(params) {
                    match id {
                        frame::SETTINGS_MAX_CONCURRENT_STREAMS => self.peer_max_streams = v,
                        frame::SETTINGS_INITIAL_WINDOW_SIZE => {
                            if v > frame::MAX_WINDOW {
                                return self.connection_error(frame::FLOW_CONTROL_ERROR);
                            }
                            let delta = i64::from(v) - self.peer_initial_window;
                            self.peer_initial_window = i64::from(v);
                            for s in &mut self.streams {
                                s.send_window += delta;
                            }
                        }
                        frame::SETTINGS_MAX_FRAME_SIZE => {
                            if !(frame::MAX_FRAME..=0xff_ffff).contains(&v) {
                                return self.connection_error(frame::PROTOCOL_ERROR);
                            }
                            self.peer_max_frame = v as usize;
                        }
                        frame::SETTINGS_ENABLE_PUSH if v > 1 => {
                            return self.connection_error(frame::PROTOCOL_ERROR);
                        }
                        // HEADER_TABLE_SIZE is for our encoder, which never indexes; unknown
                        // settings are ignored (§6.5.2).
                        _ => {}
                    }
                }
                frame::put_settings_ack(&mut self.out);
                self.pump_bodies(requests);
                self.start_waiting(requests);
            }
            Frame::Ping { ack: true, .. } => {
                self.flood();
            }
            Frame::Ping { ack: false, data } => {
                if !self.flood() {
                    frame::put_ping_ack(&mut self.out, data);
                }
            }
            Frame::Goaway { last_stream, .. } => {
                if self.flood() {
                    return;
                }
                self.state = State::Draining;
                let mut i = 0;
                while i < self.streams.len() {
                    if self.streams[i].id > last_stream {
                        let s = self.streams.swap_remove(i);
                        self.events.push(Event {
                            slot: s.slot,
                            outcome: Outcome::Unprocessed(ErrorKind::H2Goaway),
                        });
                    } else {
                        i += 1;
                    }
                }
                self.requeue_waiting(ErrorKind::H2Goaway);
            }
            Frame::WindowUpdate { stream, increment } => {
                // Useful while a request body waits for window; otherwise it carries nothing.
                let waiting_body = self
                    .streams
                    .iter()
                    .any(|s| s.body_sent < requests.of(s.slot, s.req).body.len());
                if !waiting_body && self.flood() {
                    return;
                }
                let inc = i64::from(increment);
                if stream == 0 {
                    self.conn_send_window += inc;
                    if self.conn_send_window > i64::from(frame::MAX_WINDOW) {
                        return self.connection_error(frame::FLOW_CONTROL_ERROR);
                    }
                } else if let Some(i) = self.find(stream) {
                    self.streams[i].send_window += inc;
                } else if self.idle(stream) {
                    return;
                }
                self.pump_bodies(requests);
            }
            // We disabled push: a promise is a protocol error (§8.4).
            Frame::PushPromise { .. } => self.connection_error(frame::PROTOCOL_ERROR),
            Frame::Ignored => {
                self.flood();
            }
        }
    }

    /// The server's first answer shows it does not speak HTTP/2: worth the h2c note on a plain
    /// connection (over TLS, ALPN already said h2, and the server is merely broken).
    fn not_h2c(&mut self) {
        if self.stream.as_ref().and_then(T::alpn).is_none() {
            self.note = Some(NOT_H2C);
        }
    }

    /// Counts a control frame; true (and the connection failed) when they flood.
    fn flood(&mut self) -> bool {
        self.control_frames += 1;
        if self.control_frames > MAX_CONTROL_FRAMES {
            self.note = Some(FLOOD);
            self.connection_error(frame::ENHANCE_YOUR_CALM);
            return true;
        }
        false
    }

    fn find(&self, id: u32) -> Option<usize> {
        self.streams.iter().position(|s| s.id == id)
    }

    /// A frame for stream `id`, which is not open: true (and the connection failed) when
    /// the stream is idle, one we never opened (RFC 9113 §5.1: PROTOCOL_ERROR; push is off,
    /// so no even id is the server's either).
    fn idle(&mut self, id: u32) -> bool {
        if id % 2 == 0 || id >= self.next_id {
            self.connection_error(frame::PROTOCOL_ERROR);
            return true;
        }
        false
    }

    /// A frame that only an open stream may carry (DATA, HEADERS) for stream `id`, which is
    /// not open: idle is a PROTOCOL_ERROR, ended by the server a STREAM_CLOSED connection
    /// error (§5.1); one we reset is expected for a while and dropped (an empty one counts
    /// towards the flood). True when the connection failed.
    fn not_open(&mut self, id: u32, empty: bool) -> bool {
        if self.idle(id) {
            return true;
        }
        if self.ended.contains(&id) {
            self.connection_error(frame::STREAM_CLOSED);
            return true;
        }
        empty && self.flood()
    }

    fn remember_ended(&mut self, id: u32) {
        self.ended[self.ended_next] = id;
        self.ended_next = (self.ended_next + 1) % ENDED_KEPT;
    }

    fn on_data(&mut self, id: u32, len: u32, padding: u32, data: &[u8], end_stream: bool) {
        // Flow control counts every DATA byte, even for a stream we cancelled.
        self.conn_unacked += len;
        if self.conn_unacked >= CONN_WINDOW / 2 {
            frame::put_window_update(&mut self.out, 0, self.conn_unacked);
            self.conn_unacked = 0;
        }
        let Some(i) = self.find(id) else {
            self.not_open(id, len == 0);
            return;
        };
        // An empty DATA frame that does not end the stream carries nothing.
        if len == 0 && !end_stream && self.flood() {
            return;
        }
        let s = &mut self.streams[i];
        if s.status == 0 {
            // DATA before the response's HEADERS: a malformed response (§8.1).
            return self.stream_error(i, frame::PROTOCOL_ERROR);
        }
        s.answered = true;
        s.bytes += u64::from(len);
        s.unacked += len;
        // The pad length byte and padding arrive with the frame's first piece (the padding
        // itself maybe later): counted off at once, the data total is right at the end.
        s.data = (s.data + u64::from(len)).saturating_sub(u64::from(padding));
        if s.length.is_some_and(|l| s.data > l) {
            // More than content-length said: malformed (§8.1.1), known before the end.
            return self.stream_error(i, frame::PROTOCOL_ERROR);
        }
        if s.capture {
            if let Some(c) = self.captures.get(s.slot) {
                c.body(data);
            }
        }
        if end_stream {
            return self.finish(i);
        }
        if s.unacked >= STREAM_WINDOW / 2 {
            frame::put_window_update(&mut self.out, s.id, s.unacked);
            s.unacked = 0;
        }
    }

    fn on_block(&mut self, id: u32, block: &[u8], end_stream: bool) {
        // Decoded whatever becomes of the stream: the dynamic table must stay in step. A
        // scenario user's answer keeps its lines too.
        let keep = self
            .find(id)
            .filter(|&i| self.streams[i].capture && self.streams[i].status == 0);
        self.lines.clear();
        let r = match keep {
            Some(_) => {
                let lines = &mut self.lines;
                self.hpack
                    .decode_head_with(block, MAX_HEADER_LIST, |n, v| field_line(lines, n, v))
            }
            None => self.hpack.decode_head(block, MAX_HEADER_LIST),
        };
        if r == Err(BlockError::Compression) {
            return self.connection_error(frame::PROTOCOL_ERROR);
        }
        let Some(i) = self.find(id) else {
            self.not_open(id, true);
            return;
        };
        let s = &mut self.streams[i];
        s.answered = true;
        // As HTTP/1.1 times it: when the parser first sees the answer's bytes.
        s.first_byte.get_or_insert_with(Instant::now);
        s.bytes += block.len() as u64;
        match r {
            // 1xx: informational, the final answer follows (101 is not allowed in HTTP/2). It
            // carries no answer: without end, a flood.
            Ok((status, _)) if (100..200).contains(&status) && status != 101 && !end_stream => {
                self.flood();
            }
            // Trailers (no :status) after the response's headers.
            Ok((0, _)) if s.status != 0 && end_stream => self.finish(i),
            Ok((status, length)) if status >= 200 && s.status == 0 => {
                s.status = status;
                if keep.is_some() {
                    if let Some(c) = self.captures.get(s.slot) {
                        c.set_head(status, &self.lines);
                    }
                }
                // A HEAD's, a 204's or a 304's content-length describes no body here.
                s.length = length.filter(|_| !s.head && status != 204 && status != 304);
                if end_stream {
                    self.finish(i);
                }
            }
            _ => self.stream_error(i, frame::PROTOCOL_ERROR),
        }
    }

    /// The response of stream `i` is complete (the server ended the stream), unless its
    /// DATA fell short of its content-length (§8.1.1).
    fn finish(&mut self, i: usize) {
        if self.streams[i]
            .length
            .is_some_and(|l| l != self.streams[i].data)
        {
            return self.stream_error(i, frame::PROTOCOL_ERROR);
        }
        let s = self.streams.swap_remove(i);
        self.remember_ended(s.id);
        self.completed += 1;
        self.control_frames = 0;
        self.events.push(Event {
            slot: s.slot,
            outcome: Outcome::Done {
                status: s.status,
                bytes: s.bytes,
                first_byte: s.first_byte.unwrap_or_else(Instant::now),
            },
        });
    }

    /// One stream is malformed: reset it, fail its request; the connection goes on.
    fn stream_error(&mut self, i: usize, code: u32) {
        let s = self.streams.swap_remove(i);
        frame::put_rst_stream(&mut self.out, s.id, code);
        self.events.push(Event {
            slot: s.slot,
            outcome: Outcome::Failed(ErrorKind::Protocol),
        });
    }

    /// The connection is unusable (RFC 9113 §5.4.1): GOAWAY, every request fails as `protocol`.
    fn connection_error(&mut self, code: u32) {
        frame::put_goaway(&mut self.out, 0, code);
        self.flush();
        self.fail_all(ErrorKind::Protocol);
    }

    /// Every request on the connection fails with `kind`; the connection is dead.
    pub fn fail_all(&mut self, kind: ErrorKind) {
        for s in self.streams.drain(..) {
            self.events.push(Event {
                slot: s.slot,
                outcome: Outcome::Failed(kind),
            });
        }
        for (slot, _) in self.waiting.drain(..) {
            self.events.push(Event {
                slot,
                outcome: Outcome::Failed(kind),
            });
        }
        self.state = State::Dead;
    }

    /// Requests not yet sent go elsewhere (the worker resubmits them, uncounted as retries).
    fn requeue_waiting(&mut self, kind: ErrorKind) {
        for (slot, _) in self.waiting.drain(..) {
            self.events.push(Event {
                slot,
                outcome: Outcome::Unprocessed(kind),
            });
        }
    }

    fn on_eof(&mut self) {
        if self.first {
            // Not one frame after our preface: whatever it speaks, it is not HTTP/2.
            self.not_h2c();
            return self.fail_all(ErrorKind::Protocol);
        }
        // The server closed: a connection that served before and closed with requests that
        // saw no answer is the keep-alive race (its idle timeout), not a refusal of them.
        let served = self.completed > 0;
        for s in self.streams.drain(..) {
            let outcome = if served && !s.answered {
                Outcome::Unprocessed(ErrorKind::Closed)
            } else {
                Outcome::Failed(ErrorKind::Closed)
            };
            self.events.push(Event {
                slot: s.slot,
                outcome,
            });
        }
        self.requeue_waiting(ErrorKind::Closed);
        self.state = State::Dead;
    }

    /// Opens streams for waiting requests while the limits allow.
    fn start_waiting<R: Requests + ?Sized>(&mut self, requests: &R) {
        while self.state == State::Open && self.streams.len() < self.limit() {
            let Some((slot, req)) = self.waiting.pop_front() else {
                break;
            };
            self.open_stream(slot, req, requests);
        }
    }

    fn open_stream<R: Requests + ?Sized>(&mut self, slot: usize, req: usize, requests: &R) {
        let p = requests.of(slot, req);
        if let Some(limit) = p.capture {
            self.captures.start(slot, limit);
        }
        let id = self.next_id;
        // Client stream ids are odd and grow; at the end of the space, a new connection.
        self.next_id = self.next_id.saturating_add(2).min(frame::MAX_WINDOW);
        if self.next_id >= frame::MAX_WINDOW - 2 {
            self.state = State::Draining;
        }
        if let Some(k) = &mut self.calls_left {
            *k = k.saturating_sub(1);
            if *k == 0 {
                self.state = State::Draining;
            }
        }
        let before = self.out.len();
        frame::put_headers(
            &mut self.out,
            id,
            &p.h2_block,
            p.body.is_empty(),
            self.peer_max_frame,
        );
        let mut s = Stream {
            id,
            slot,
            req,
            status: 0,
            bytes: 0,
            unacked: 0,
            send_window: self.peer_initial_window,
            body_sent: 0,
            answered: false,
            first_byte: None,
            length: None,
            data: 0,
            head: p.head_only,
            capture: p.capture.is_some(),
        };
        send_body(
            &mut s,
            p,
            &mut self.out,
            &mut self.conn_send_window,
            self.peer_max_frame,
        );
        let len = self.out.len() - before;
        self.streams.push(s);
        self.events.push(Event {
            slot,
            outcome: Outcome::Sent { stream: id, len },
        });
    }

    /// After a window grew: bodies held back go on.
    fn pump_bodies<R: Requests + ?Sized>(&mut self, requests: &R) {
        for s in &mut self.streams {
            let p = requests.of(s.slot, s.req);
            if s.body_sent < p.body.len() {
                send_body(
                    s,
                    p,
                    &mut self.out,
                    &mut self.conn_send_window,
                    self.peer_max_frame,
                );
            }
        }
    }

    /// Writes what is buffered; what the socket does not take waits for the next writable
    /// event. A server that never reads makes the buffer grow: past [`MAX_OUT`], it is dropped.
    pub fn flush(&mut self) {
        let Some(stream) = self.stream.as_mut() else {
            return;
        };
        while self.out_pos < self.out.len() {
            match stream.write(&self.out[self.out_pos..]) {
                Ok(0) => return self.fail_all(ErrorKind::Closed),
                Ok(n) => self.out_pos += n,
                Err(e) if e.kind() == IoKind::WouldBlock => {
                    if self.out.len() - self.out_pos > MAX_OUT {
                        self.note = Some(NOT_READING);
                        self.fail_all(ErrorKind::Protocol);
                    }
                    return;
                }
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(e) => return self.fail_all(ErrorKind::from_io(&e, false)),
            }
        }
        self.out.clear();
        self.out_pos = 0;
    }

    /// Still connecting past its deadline?
    pub fn connect_expired(&self, now: Instant) -> bool {
        self.state == State::Connecting && now >= self.deadline
    }

    /// Closes politely: GOAWAY (best effort), then the worker drops the socket.
    pub fn goodbye(&mut self) {
        if matches!(self.state, State::Open | State::Draining) {
            frame::put_goaway(&mut self.out, 0, frame::NO_ERROR);
            self.flush();
        }
        self.state = State::Dead;
    }
}

/// Sends as much of the stream's body as the windows allow.
fn send_body(
    s: &mut Stream,
    p: &Prepared,
    out: &mut Vec<u8>,
    conn_window: &mut i64,
    max_frame: usize,
) {
    while s.body_sent < p.body.len() {
        let room = s.send_window.min(*conn_window).max(0) as usize;
        let n = (p.body.len() - s.body_sent).min(max_frame).min(room);
        if n == 0 {
            return;
        }
        let end = s.body_sent + n == p.body.len();
        frame::put_data(out, s.id, &p.body[s.body_sent..s.body_sent + n], end);
        s.body_sent += n;
        s.send_window -= n as i64;
        *conn_window -= n as i64;
    }
}

#[cfg(test)]
#[path = "conn_tests.rs"]
mod tests;
