//! HTTP/2 (`--http 2`). Exchange slots (the `Conn`s, which keep each request's
//! intended/started/written times, so recording stays one mechanism for both protocols) ride
//! on streams of a few multiplexed connections ([`H2Conn`], `h2/`). A slot is linked to its
//! connection while its request waits for or holds a stream; the connection answers with
//! events naming slots.
//!
//! Open loop: an arrival goes out only when a connection has a free stream (or one more
//! connection may open), otherwise it stays queued and its wait shows as send lag. Closed
//! loop: each user takes one stream; a thread's users share ⌈users / streams⌉ connections
//! ([`Protocol::connections_for`]).
use super::mux::{self, Owned, Route};
use super::{Protocol, Reuse, Wire};
use crate::engine::conn::{Phase, Step as ConnStep};
use crate::engine::h2::conn::{Event, H2Conn, Outcome, State, Step};
use crate::engine::h2::hpack::{encode_request, RequestParts};
use crate::engine::io::Poller;
use crate::engine::transport::Transport;
use crate::engine::worker::{token, SlotRequests, Worker, READS_PER_TURN};
use crate::engine::{EngineConfig, Prepared};
use crate::metrics::ErrorKind;
use crate::plan::RequestSpec;
use std::time::Instant;

/// Sends of one request left unprocessed by the server (GOAWAY above its last stream,
/// REFUSED_STREAM, the keep-alive race) that are retried, when idempotent. More than HTTP/1.1's
/// one: servers close connections after a number of requests (nginx: 1000), all connections
/// of a run at about the same time, so a retried request can meet the next GOAWAY too.
const MAX_RETRIES: u8 = 3;

/// HTTP/2's form of the request: its header block (HPACK, encoded once) and body, sent in
/// DATA frames. The kept-alive HTTP/1.1 form stays beside them: it tells whether the request
/// may be sent again (`Prepared::idempotent`).
pub(super) fn prepare(p: &mut Prepared, spec: &RequestSpec, reuse: Reuse) {
    p.h2_block = super::http1::exact(encode_request(&RequestParts {
        method: &spec.method,
        scheme: spec.url.scheme.as_str(),
        authority: &spec.url.authority,
        path: &spec.url.target,
        headers: &spec.headers,
        body_len: spec.body.as_ref().map(Vec::len),
    }));
    p.body = spec.body.clone().unwrap_or_default();
    if reuse.keep_alive {
        p.keep_alive = super::http1::exact(spec.render(false));
    }
}

/// HTTP/2's [`Wire`]: the thread's multiplexed connections.
pub(in crate::engine) struct H2<T> {
    conns: Vec<Option<H2Conn<T>>>,
    /// Generation per index, so a token outlives no connection.
    gens: Vec<u32>,
    free: Vec<usize>,
    /// Swapped with a connection's event list while its events are applied.
    spare: Vec<Event>,
    /// Connections with requests written but not flushed this turn, as (index, gen).
    dirty: Vec<(usize, u32)>,
    streams: u32,
    /// Scenario users' own connections.
    owned: Owned,
}

impl<T: Transport> H2<T> {
    /// Connection `ci` if it is still generation `gen`.
    fn get(&mut self, ci: usize, gen: u32) -> Option<&mut H2Conn<T>> {
        self.conns.get_mut(ci)?.as_mut().filter(|h| h.gen == gen)
    }

    /// Connection (`ci`, `gen`) is there and takes one more request (on a stream, or
    /// queued for one).
    fn takes(&self, ci: usize, gen: u32) -> bool {
        self.conns
            .get(ci)
            .and_then(Option::as_ref)
            .is_some_and(|h| h.gen == gen && h.takes_more())
    }
}

impl<T: Transport> Wire<T> for H2<T> {
    const INDEX: usize = 1;

    fn new(cfg: &EngineConfig) -> H2<T> {
        let streams = match cfg.protocol {
            Protocol::Http2(h) => h.streams,
            _ => 1,
        };
        H2 {
            conns: Vec::new(),
            gens: Vec::new(),
            free: Vec::new(),
            spare: Vec::with_capacity(streams as usize),
            dirty: Vec::new(),
            streams,
            owned: Owned::default(),
        }
    }

    fn can_dispatch(w: &Worker<'_, T, Self>) -> bool {
        w.h2_room(None)
    }

    /// A slot per request, sent when a stream is free.
    fn dispatch_slot(w: &mut Worker<'_, T, Self>, addr: usize, now: Instant) -> Option<usize> {
        w.h2_room(Some(addr)).then(|| w.alloc_slot(now))
    }

    // Its answers never leave a slot holding a connection: the slots' requests share them.
    fn pool(_: &mut Worker<'_, T, Self>, _: usize) {}

    fn start(w: &mut Worker<'_, T, Self>, slot: usize, _: usize, now: Instant) {
        w.h2_start(slot, now);
    }

    // Requests are written by their connection (`H2Conn::submit`, flushed once per turn).
    fn write(_: &mut Worker<'_, T, Self>, _: usize, _: Instant) {}

    fn event(
        w: &mut Worker<'_, T, Self>,
        ci: usize,
        gen: u32,
        readable: bool,
        writable: bool,
        read_closed: bool,
    ) {
        w.h2_event(ci, gen, readable, writable, read_closed);
    }

    fn read_more(w: &mut Worker<'_, T, Self>, ci: usize, gen: u32, now: Instant) {
        w.h2_read_more(ci, gen, now);
    }

    fn flush(w: &mut Worker<'_, T, Self>) {
        w.h2_flush();
    }

    fn release(w: &mut Worker<'_, T, Self>, slot: usize) {
        w.h2_release(slot);
    }

    // Unprocessed requests are retried as their connection reports them (`h2_apply`).
    fn retry(_: &mut Worker<'_, T, Self>, _: usize, _: ErrorKind, _: Instant) -> bool {
        false
    }

    fn scan(w: &mut Worker<'_, T, Self>, now: Instant) {
        w.h2_scan(now);
    }

    fn close_all(w: &mut Worker<'_, T, Self>) {
        w.h2_close_all();
    }

    fn user_streams(w: &Worker<'_, T, Self>) -> Option<usize> {
        Some(w.wire.streams.max(1) as usize)
    }

    fn end_user(w: &mut Worker<'_, T, Self>, user: usize) {
        let mut owned = std::mem::take(&mut w.wire.owned);
        owned.release(user, |ci, gen| {
            if let Some(h) = w.wire.get(ci, gen) {
                h.goodbye();
                w.h2_close(ci);
            }
        });
        w.wire.owned = owned;
    }

    fn render_own(p: &mut Prepared, https: bool) {
        super::own_parts(&p.keep_alive, https, |parts, body| {
            p.h2_block = encode_request(parts);
            p.body.clear();
            p.body.extend_from_slice(body);
        });
    }
}

impl<T: Transport> Worker<'_, T, H2<T>> {
    /// Could a request to `addr` get a stream now, or on a connection still allowed to open?
    fn h2_room(&self, addr: Option<usize>) -> bool {
        let mux = &self.wire;
        self.open < self.max_conns
            || mux
                .conns
                .iter()
                .flatten()
                .any(|h| addr.is_none_or(|a| h.addr == a) && h.has_room())
    }

    /// Puts the slot's request (already begun) on a stream: a scenario user's on its own
    /// connection to the server, the mix's on any of the thread's.
    fn h2_start(&mut self, slot: usize, now: Instant) {
        let addr = self.request_addr(slot);
        self.conns[slot].addr = addr;
        let user = self.conns[slot].user;
        let ci = match mux::route(user, &self.wire.owned, addr, |ci, gen| {
            self.wire.takes(ci, gen)
        }) {
            Route::Own(ci) => ci,
            Route::OpenOwn => match self.h2_connect(addr, now) {
                Ok(i) => {
                    let gen = self.wire.gens[i];
                    if let Some(h) = self.wire.conns[i].as_mut() {
                        h.owned = true;
                    }
                    self.wire.owned.set(user as usize, addr, i, gen);
                    i
                }
                Err(kind) => return self.connect_failed(slot, kind, now),
            },
            Route::Shared => match self.h2_shared(slot, addr) {
                Some(i) => i,
                None => match self.h2_connect(addr, now) {
                    Ok(i) => i,
                    Err(kind) => return self.connect_failed(slot, kind, now),
                },
            },
        };
        let mux = &mut self.wire;
        let h = mux.conns[ci].as_mut().expect("a live connection");
        let c = &mut self.conns[slot];
        c.link = Some((ci, h.gen));
        c.deadline = c.started + self.cfg.timeout;
        if h.state == State::Connecting {
            c.phase = Phase::Connecting;
            c.deadline = c.deadline.min(h.deadline);
        } else {
            c.phase = Phase::Writing;
        }
        let req = c.req;
        let was_dirty = h.unflushed();
        let requests = SlotRequests {
            mix: &self.cfg.requests,
            conns: &self.conns,
        };
        h.submit(slot, req, &requests);
        if !was_dirty && h.unflushed() {
            let gen = h.gen;
            mux.dirty.push((ci, gen));
        }
        self.h2_drain(ci, now);
    }

    /// A shared connection to `addr` for the slot's request, or None: a new one opens.
    fn h2_shared(&self, slot: usize, addr: usize) -> Option<usize> {
        let mux = &self.wire;
        let usable = |h: &H2Conn<T>| {
            h.addr == addr && !h.owned && matches!(h.state, State::Open | State::Connecting)
        };
        let with_room = mux.conns.iter().enumerate().filter_map(|(i, h)| {
            h.as_ref()
                .filter(|h| usable(h) && h.has_room())
                .map(|h| (i, h))
        });
        let found = if self.conns[slot].resends > 0 {
            // A retry after a GOAWAY goes to the youngest connection: the others of the run
            // may be as close to the server's per-connection limit as the one that went away.
            with_room.min_by_key(|(_, h)| h.opened()).map(|(i, _)| i)
        } else {
            with_room.map(|(i, _)| i).next()
        };
        if found.is_some() || self.open < self.max_conns {
            return found;
        }
        // At the cap (the server allows fewer streams than --streams): wait on the least
        // busy connection to the address. None to it (a URL mix filled the cap with other
        // addresses): one more connection, beyond the cap, rather than a request stuck.
        mux.conns
            .iter()
            .enumerate()
            .filter_map(|(i, h)| h.as_ref().filter(|h| usable(h)).map(|h| (i, h)))
            .min_by_key(|(_, h)| h.active() + h.queued())
            .map(|(i, _)| i)
    }

    fn h2_connect(&mut self, addr: usize, now: Instant) -> Result<usize, ErrorKind> {
        let mut stream = self.open_socket(addr, now >= self.warm_end, now)?;
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
        if let Err(e) = stream.register(self.poll.registry(), token(i, gen)) {
            mux.free.push(i);
            return Err(ErrorKind::from_io(&e, true));
        }
        mux.conns[i] = Some(H2Conn::new(
            stream,
            addr,
            gen,
            mux.streams,
            self.cfg.calls_per_connection,
            now,
            now + self.cfg.connect_timeout,
        ));
        self.open += 1;
        Ok(i)
    }

    /// Writes what this turn's requests left in the connections' buffers: one write per
    /// connection per turn, however many streams it opened.
    fn h2_flush(&mut self) {
        if self.wire.dirty.is_empty() {
            return;
        }
        let now = Instant::now();
        let mut i = 0;
        while let Some(&(ci, gen)) = self.wire.dirty.get(i) {
            i += 1;
            if let Some(h) = self.wire.get(ci, gen) {
                h.flush();
                self.h2_drain(ci, now);
            }
        }
        self.wire.dirty.clear();
    }

    /// A readiness event for connection `ci`.
    fn h2_event(&mut self, ci: usize, gen: u32, readable: bool, writable: bool, read_closed: bool) {
        let now = Instant::now();
        let Some(h) = self.wire.get(ci, gen) else {
            return;
        };
        let connecting = h.state == State::Connecting;
        let requests = SlotRequests {
            mix: &self.cfg.requests,
            conns: &self.conns,
        };
        let step = h.on_event(
            readable,
            writable,
            read_closed,
            &requests,
            &mut self.buf,
            READS_PER_TURN,
        );
        if connecting && h.state == State::Dead {
            self.h2_connect_lost(ci, now);
        }
        self.h2_step(ci, gen, step, now);
    }

    /// Resumes the reads connection `ci` left for this turn.
    fn h2_read_more(&mut self, ci: usize, gen: u32, now: Instant) {
        let Some(h) = self.wire.get(ci, gen) else {
            return;
        };
        if h.state == State::Dead {
            return;
        }
        let requests = SlotRequests {
            mix: &self.cfg.requests,
            conns: &self.conns,
        };
        let step = h.receive(&mut self.buf, READS_PER_TURN, &requests);
        self.h2_step(ci, gen, step, now);
    }

    fn h2_step(&mut self, ci: usize, gen: u32, step: Step, now: Instant) {
        match step {
            Step::Wait => {}
            // Counted as HTTP/1.1 counts them: outside the warm-up.
            Step::Connected => {
                let counted = now >= self.warm_end;
                let conn = self.wire.get(ci, gen);
                match conn.map(|h| (h.stream.as_ref().and_then(T::handshake), h.connect_start)) {
                    Some((hs, start)) => {
                        self.connection_up(hs, counted, now);
                        if counted {
                            self.record_connected(hs, start, now);
                        }
                    }
                    None if counted => self.rec.connections_opened += 1,
                    None => {}
                }
            }
            Step::More => self.more.push((ci, gen)),
        }
        self.h2_drain(ci, now);
    }

    /// Applies the connection's events, then closes it if it is done.
    fn h2_drain(&mut self, ci: usize, now: Instant) {
        loop {
            let mux = &mut self.wire;
            let Some(h) = mux.conns[ci].as_mut() else {
                return;
            };
            if let Some(note) = h.note.take() {
                if !self.notes.iter().any(|n| n == note) {
                    self.notes.push(note.to_string());
                }
            }
            if h.events.is_empty() {
                if h.finished() {
                    self.h2_close(ci);
                }
                return;
            }
            let gen = h.gen;
            let mut evs = std::mem::take(&mut mux.spare);
            std::mem::swap(&mut evs, &mut h.events);
            for e in evs.drain(..) {
                self.h2_apply(ci, gen, e, now);
            }
            self.wire.spare = evs;
        }
    }

    fn h2_apply(&mut self, ci: usize, gen: u32, e: Event, now: Instant) {
        let slot = e.slot;
        let c = &mut self.conns[slot];
        if c.link != Some((ci, gen)) {
            return; // the slot moved on (its request was withdrawn)
        }
        match e.outcome {
            Outcome::Sent { len, .. } => {
                // A request that waited for a stream on an open connection: the wait is send
                // lag, as an HTTP/1.1 request's wait for a free connection is.
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
                // The loop's `now` was read before the frames were decoded: never later than done.
                c.first_byte = first_byte.min(now);
                if let (Some(h), Some(dst)) = (self.wire.get(ci, gen), c.capture_mut()) {
                    h.hand_over(slot, dst);
                }
                self.complete(slot, status, false, now);
            }
            Outcome::Failed(kind) => {
                c.link = None;
                let hs = self
                    .wire
                    .get(ci, gen)
                    .and_then(|h| h.stream.as_ref().and_then(T::handshake));
                self.fail_after(slot, kind, hs, now);
            }
            Outcome::Unprocessed(kind) => {
                c.link = None;
                if c.deliveries == 0 {
                    // Never sent: it simply goes to another connection.
                    self.h2_start(slot, now);
                } else if c.resends < MAX_RETRIES && self.may_resend(slot) {
                    let c = &mut self.conns[slot];
                    c.resends += 1;
                    if c.counted {
                        self.rec.retries += 1;
                    }
                    self.h2_start(slot, now);
                } else {
                    self.fail(slot, kind, now);
                }
            }
        }
    }

    /// The slot's request ends without its connection's word (timeout): withdraw it.
    fn h2_release(&mut self, slot: usize) {
        let Some((ci, gen)) = self.conns[slot].link.take() else {
            return;
        };
        if let Some(h) = self.wire.get(ci, gen) {
            let requests = SlotRequests {
                mix: &self.cfg.requests,
                conns: &self.conns,
            };
            h.cancel(slot, &requests);
            // Waiting requests it let through, or a write that failed.
            self.h2_drain(ci, Instant::now());
        }
    }

    fn h2_close(&mut self, ci: usize) {
        let mux = &mut self.wire;
        if let Some(mut h) = mux.conns[ci].take() {
            if let Some(mut s) = h.stream.take() {
                let _ = s.deregister(self.poll.registry());
            }
            mux.free.push(ci);
            self.open -= 1;
        }
    }

    /// Connections that did not connect in time fail their waiting requests.
    fn h2_scan(&mut self, now: Instant) {
        let n = self.wire.conns.len();
        for ci in 0..n {
            let Some(h) = self.wire.conns[ci].as_mut() else {
                continue;
            };
            if h.connect_expired(now) {
                h.fail_all(ErrorKind::ConnectTimeout);
                self.h2_connect_lost(ci, now);
                self.h2_drain(ci, now);
            }
        }
    }

    /// Connection `ci` died while it connected: one failed attempt, whatever number of
    /// requests waited on it (their errors are counted as their events are applied).
    fn h2_connect_lost(&mut self, ci: usize, now: Instant) {
        let Some(h) = self.wire.conns[ci].as_ref() else {
            return;
        };
        let kind = h
            .events
            .iter()
            .find_map(|e| match e.outcome {
                Outcome::Failed(k) => Some(k),
                _ => None,
            })
            .unwrap_or(ErrorKind::Other);
        let hs = h.stream.as_ref().and_then(T::handshake);
        self.connect_lost(kind, hs, now >= self.warm_end, now);
    }

    /// The end of the run: every connection says GOAWAY and closes.
    fn h2_close_all(&mut self) {
        let n = self.wire.conns.len();
        for ci in 0..n {
            if let Some(h) = self.wire.conns[ci].as_mut() {
                h.goodbye();
                self.h2_close(ci);
            }
        }
    }
}
