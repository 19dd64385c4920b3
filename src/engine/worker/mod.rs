//! One worker thread: a mio event loop owning a slab of connection slots. The loop owns the
//! poller, timers, pools and metrics; each slot's exchange is a [`Conn`] over a
//! [`Transport`], generic so the hot path is statically dispatched. The open loop's dispatch
//! lives in `open.rs`, the closed loop's users in `closed.rs`.
//!
//! How the slots' requests reach connections is the protocol's business (`W`, a
//! [`Wire`]: `protocol/http1.rs` a connection per slot, `protocol/http2.rs` the slots on
//! streams of shared connections); the loop holds no protocol branch.
//!
//! The hot path per request is: pop an idle connection (or connect), one `write` of the
//! pre-rendered request, `read`s into the thread's shared buffer fed to the parser, three
//! histogram records. Nothing on it allocates.
mod closed;
mod open;
mod session;

use super::backoff::Backoff;
use super::conn::{Conn, Phase, Step};
use super::io::{Opened, Poller, Ready};
use super::pacing::Schedule;
use super::protocol::{Reuse, Wire};
use super::transport::{Handshake, Transport};
use super::{Control, EngineConfig, Load, Pick};
use crate::metrics::{ErrorKind, Recorder, TlsReason};
use crate::plan::segment::Lane;
use mio::Token;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::ErrorKind as IoKind;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

const READ_BUF: usize = 64 * 1024;
/// Full reads one connection may do per turn of the loop (1 MiB) before yielding to the others.
pub(in crate::engine) const READS_PER_TURN: usize = 16;

/// The poller's token of a connection: its index (a slot's, or the protocol's own) and its
/// generation, so an event of a closed connection is told from its successor's.
pub(in crate::engine) fn token(idx: usize, gen: u32) -> Token {
    Token(idx | ((gen as usize) << 32))
}

/// The worker's slots as a multiplexed connection (HTTP/2, HTTP/3) reads their requests: a
/// scenario user's own, rendered into its slot, else the mix's `requests[req]`.
pub(in crate::engine) struct SlotRequests<'s, T> {
    pub mix: &'s [super::Prepared],
    pub conns: &'s [Conn<T>],
}

impl<T> super::Requests for SlotRequests<'_, T> {
    fn of(&self, slot: usize, req: usize) -> &super::Prepared {
        match &self.conns[slot].own {
            Some(p) => p,
            None => &self.mix[req],
        }
    }
}

/// The fields and methods the protocols drive are visible to the engine (`pub(in
/// crate::engine)`); the rest is the loop's own.
pub(in crate::engine) struct Worker<'a, T: Transport, W: Wire<T>> {
    pub(in crate::engine) cfg: &'a EngineConfig,
    /// What the transport needs to open a connection.
    pub(in crate::engine) setup: T::Setup,
    pub(in crate::engine) reuse: Reuse,
    ctl: Arc<Control>,
    id: usize,
    /// The I/O backend's poller (epoll or a ring, as the transport's socket says).
    pub(in crate::engine) poll: T::Poller,
    pub(in crate::engine) conns: Vec<Conn<T>>,
    free_slots: Vec<usize>,
    pub(in crate::engine) open: usize,
    pub(in crate::engine) max_conns: usize,
    pub(in crate::engine) rec: Recorder,
    pub(in crate::engine) buf: Box<[u8]>,
    rng: fastrand::Rng,
    schedule: Option<Schedule>,
    /// The URL chosen for the next queued open-loop arrival.
    pending_pick: Option<usize>,
    seq: usize,
    /// Counted requests this thread may still start (None: unlimited).
    budget: Option<u64>,
    think: BinaryHeap<Reverse<(Instant, usize)>>,
    think_range: (Duration, Duration),
    pub(in crate::engine) warm_end: Instant,
    /// No request intended at or after this is sent.
    send_end: Option<Instant>,
    scan_every: Duration,
    next_scan: Instant,
    pub(in crate::engine) notes: Vec<String>,
    fd_note_done: bool,
    /// When the schedule last sent something (pacing slack counts from there).
    last_dispatch: Instant,
    /// Per request of the mix: may it be retried after a stale keep-alive connection?
    pub(in crate::engine) idempotent: Vec<bool>,
    /// Connections with unread data left when they yielded to the others (see `read_response`),
    /// as (slot, gen); `more_next` is the spare list swapped in while they are served.
    pub(in crate::engine) more: Vec<(usize, u32)>,
    more_next: Vec<(usize, u32)>,
    /// The protocol's side: how the slots' requests reach connections.
    pub(in crate::engine) wire: W,
    /// `--scenario`: its users (closed loop: user `u` on slot `u`; open loop: the sessions',
    /// reused as they end); each slot names its user (`Conn::user`). Empty otherwise.
    users: Vec<session::Visitor>,
    /// Open loop with a scenario: users free for the next session.
    free_users: Vec<usize>,
    /// Open loop with a scenario: the sessions in flight, capped by `--max-sessions`.
    gate: Option<session::Gate>,
    /// Open loop with a scenario: sessions this thread began (their users' numbers).
    sessions_begun: u64,
    threads: usize,
    /// Scratch list of a user's slots, for the choice of a burst member's connection.
    held: Vec<(usize, Option<usize>, bool)>,
    /// Spaces connect attempts out while every one of the last second failed.
    backoff: Backoff,
    /// Closed loop on `--stages`: this thread's users' global numbers (user `u` is
    /// `offset + u × stride`, so the threads' users interleave) and when next to start the
    /// users the level has reached (see `closed.rs`).
    ramp_lane: Option<Lane>,
    next_ramp: Instant,
    /// The users the ramp ran at its last check (those below were started then).
    ramp_running: usize,
    /// `--source`: where this thread is in the list of local addresses.
    source: super::source::Cursor,
    /// Slots in flight at the last timeout scan (the progress line's figure).
    in_flight: u64,
    /// The level the closed loop's users follow (`--stages`, or live control's), and the
    /// version of the run's steer it was last taken at.
    level: Option<Arc<crate::plan::stages::Profile>>,
    steer_seen: u64,
}

/// The fds a worker needs besides its connections: its epoll and timer, or its ring. The
/// engine opens them for every thread before any thread connects: otherwise, short of fds,
/// the first threads' connections could leave none for a later thread's poller, failing the
/// whole run.
pub(in crate::engine) fn event_fds(backend: super::io::Backend) -> crate::Result<Opened> {
    Opened::open(backend)
}

impl<'a, T: Transport, W: Wire<T>> Worker<'a, T, W> {
    pub(in crate::engine) fn new(
        cfg: &'a EngineConfig,
        id: usize,
        threads: usize,
        origin: Instant,
        ctl: &Arc<Control>,
        opened: Opened,
        setup: T::Setup,
    ) -> crate::Result<Worker<'a, T, W>> {
        let warm_end = origin + cfg.warmup;
        let send_end = cfg.duration.map(|d| warm_end + d);
        let share = |n: u64| n / threads as u64 + u64::from((id as u64) < n % threads as u64);
        let (slots, max_conns, schedule, think_range) = match cfg.load {
            Load::Open {
                rate,
                arrival,
                max_connections,
            } => {
                let cap = share(max_connections as u64).max(1) as usize;
                let lane = cfg.segment.lane(id, threads);
                let s = match (&cfg.replay, &cfg.ramp) {
                    (Some(r), _) => Schedule::replay(origin, Arc::clone(r), lane),
                    (None, Some(p)) => {
                        Schedule::ramp(origin, Arc::clone(p), arrival, lane, cfg.seed)
                    }
                    (None, None) => Schedule::new(origin, rate, arrival, lane, cfg.seed),
                };
                (0, cap, Some(s), (Duration::ZERO, Duration::ZERO))
            }
            Load::Closed { users, think } => {
                let n = match &cfg.ramp {
                    // Users numbered globally: this thread's are those of its lane.
                    Some(_) => {
                        let lane = cfg.segment.lane(id, threads);
                        (users as u64)
                            .saturating_sub(lane.offset)
                            .div_ceil(lane.stride) as usize
                    }
                    None => share(users as u64) as usize,
                };
                let conns = cfg.protocol.connections_for(n);
                (n, conns, None, think)
            }
        };
        // Pre-sized for a day at most: a `--duration 1000000h` must not reserve gigabytes.
        let expected_secs = cfg
            .max_wall_time()
            .map_or(60, |d| d.as_secs() as usize + 1)
            .min(86_400);
        let scan_every = (cfg.timeout.min(cfg.connect_timeout) / 20)
            .clamp(Duration::from_millis(5), Duration::from_millis(100));
        let mut rec = Recorder::new(origin, warm_end, expected_secs);
        rec.tls = cfg.tls.is_some();
        rec.ok_status = cfg.ok_status;
        rec.keep_names(&cfg.names);
        rec.slot = Arc::clone(&ctl.slots[id]);
        let mut rng = fastrand::Rng::with_seed(cfg.seed.wrapping_add(id as u64 * 7919));
        let gate = match (&cfg.scenario, cfg.load) {
            (Some(_), Load::Open { .. }) => {
                Some(session::Gate::new(share(cfg.max_sessions as u64) as usize))
            }
            _ => None,
        };
        rec.sessions.open = gate.is_some();
        let users = match &cfg.scenario {
            Some(plan) => session::users(
                plan,
                slots,
                id,
                threads,
                (cfg.segment.index, cfg.segment.count),
                &mut rng,
            ),
            None => Vec::new(),
        };
        Ok(Worker {
            cfg,
            setup,
            reuse: cfg.reuse(),
            ctl: Arc::clone(ctl),
            id,
            poll: T::Poller::start(opened)?,
            conns: {
                // Reserved for the pool's most, once: growing by doubling would copy every
                // slot and, for a moment, hold both copies (a peak RSS of 1.5 times the slots).
                // What is reserved and never used costs address space, not memory.
                let mut v = Vec::with_capacity(slots.max(max_conns));
                v.extend((0..slots).map(|u| {
                    let mut c = Conn::new(origin);
                    if cfg.scenario.is_some() {
                        c.user = u as u32;
                    }
                    c
                }));
                v
            },
            free_slots: Vec::new(),
            open: 0,
            max_conns,
            rec,
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            rng,
            schedule,
            pending_pick: None,
            seq: id,
            budget: cfg.max_requests.map(share),
            think: BinaryHeap::with_capacity(slots),
            think_range,
            warm_end,
            send_end,
            scan_every,
            next_scan: origin + scan_every,
            notes: Vec::new(),
            fd_note_done: false,
            last_dispatch: origin,
            idempotent: cfg.requests.iter().map(|p| p.idempotent()).collect(),
            more: Vec::with_capacity(slots.max(16)),
            more_next: Vec::with_capacity(slots.max(16)),
            wire: W::new(cfg),
            users,
            free_users: Vec::new(),
            gate,
            sessions_begun: 0,
            threads,
            held: Vec::new(),
            backoff: Backoff::default(),
            ramp_lane: match (&cfg.ramp, cfg.load) {
                (Some(_), Load::Closed { .. }) => Some(cfg.segment.lane(id, threads)),
                _ => None,
            },
            next_ramp: origin,
            ramp_running: 0,
            source: cfg
                .source
                .as_ref()
                .map(|s| s.cursor(id))
                .unwrap_or_default(),
            in_flight: 0,
            level: cfg.ramp.clone(),
            steer_seen: cfg.steer.as_ref().map_or(0, |s| s.version()),
        })
    }

    /// Runs the loop to the end; returns the measurements and notes.
    pub(in crate::engine) fn run(&mut self) -> crate::Result<(Recorder, Vec<String>)> {
        let mut events: Vec<Ready> = Vec::with_capacity(1024);
        let cpu_start = crate::metrics::recorder::thread_cpu_time();
        let now = Instant::now();
        if self.schedule.is_none() {
            if self.ramp_lane.is_some() {
                self.ramp_users(now);
            } else {
                for u in 0..self.conns.len() {
                    self.user_next(u, now, true);
                }
            }
        }
        let mut stopping = false;
        loop {
            let now = Instant::now();
            if self.ctl.stop.load(Ordering::Relaxed) || crate::signals::interrupted() {
                self.abort_in_flight();
                break;
            }
            self.follow_steer();
            let sending = self.may_send(now);
            if !sending && !stopping {
                stopping = true;
                self.count_unsent();
            }
            if stopping && !self.conns.iter().any(|c| c.in_flight()) {
                break;
            }
            // Closed loop: every user has finished (budget spent, or nothing left to do); on a
            // ramp, users may start later while sending.
            if self.schedule.is_none()
                && !(sending && self.ramp_lane.is_some())
                && self.conns.iter().all(|c| c.phase == Phase::Free)
            {
                break;
            }
            // Output the protocol buffered this turn (HTTP/2: one write per connection;
            // HTTP/3: its datagrams, and its timers that are due).
            W::flush(self);
            // Sleep until the next thing to do: an arrival, a user waking, a timeout scan,
            // the protocol's own timer (QUIC's loss detection, ACK delay, idle timeout).
            let mut wake = self.next_scan;
            if let Some(t) = W::next_timer(self) {
                wake = wake.min(t);
            }
            if sending {
                if let Some(s) = &self.schedule {
                    if self.can_dispatch() {
                        // At most one wake-up per slack period for arrivals: sparse arrivals
                        // still go out on time, dense ones share a wake-up.
                        wake = wake.min(s.next().max(self.last_dispatch + self.cfg.pacing_slack));
                    }
                }
                if let Some(Reverse((t, _))) = self.think.peek() {
                    wake = wake.min(*t);
                }
                if let Some(end) = self.send_end {
                    wake = wake.min(end);
                }
                if self.ramp_lane.is_some() {
                    wake = wake.min(self.next_ramp);
                }
            }
            let wake = if wake <= now || !self.more.is_empty() {
                None
            } else {
                Some(wake)
            };
            if let Err(e) = self.poll.wait(&mut events, wake) {
                if e.kind() != IoKind::Interrupted {
                    return Err(crate::Error::runtime(format!("waiting for I/O: {e}")));
                }
            }
            for ev in &events {
                let idx = ev.token.0 & 0xFFFF_FFFF;
                let gen = (ev.token.0 >> 32) as u32;
                W::event(self, idx, gen, ev.readable, ev.writable, ev.read_closed);
            }
            self.read_more();
            let now = Instant::now();
            if self.may_send(now) {
                self.wake_thinkers(now);
                self.ramp_users(now);
            }
            // Also when the loop woke just after the send window: arrivals intended before its
            // end still go out (dispatch sends nothing intended later), not counted as unsent.
            self.dispatch(now);
            if now >= self.next_scan {
                self.scan_timeouts(now);
                self.rec.roll(now);
                self.publish();
                self.next_scan = now + self.scan_every;
            }
        }
        W::close_all(self);
        self.in_flight = self.conns.iter().filter(|c| c.in_flight()).count() as u64;
        self.publish();
        self.rec.close_seconds();
        self.rec.cpu = crate::metrics::recorder::thread_cpu_time().saturating_sub(cpu_start);
        let rec = std::mem::replace(
            &mut self.rec,
            Recorder::new(Instant::now(), Instant::now(), 0),
        );
        Ok((rec, std::mem::take(&mut self.notes)))
    }

    /// Takes the run's level anew when live control changed it (one atomic load a turn
    /// otherwise): the schedule, or the users, follow it from the change on.
    fn follow_steer(&mut self) {
        let Some(st) = &self.cfg.steer else {
            return;
        };
        let v = st.version();
        if v == self.steer_seen {
            return;
        }
        self.steer_seen = v;
        let Some(p) = st.profile() else {
            return;
        };
        if let Some(s) = &mut self.schedule {
            s.follow(Arc::clone(&p));
        }
        if self.ramp_lane.is_some() {
            self.level = Some(p);
            // Users the new level adds start at the next check.
            self.next_ramp = Instant::now();
        }
    }

    fn may_send(&self, now: Instant) -> bool {
        self.send_end.is_none_or(|e| now < e) && self.budget != Some(0)
    }

    fn can_dispatch(&self) -> bool {
        // Sessions need no connection to arrive: each opens its own, or is dropped.
        if self.gate.is_some() {
            return true;
        }
        W::can_dispatch(self)
    }

    fn publish(&self) {
        let live = &self.ctl.live[self.id];
        live.responses.store(self.rec.responses, Ordering::Relaxed);
        live.errors.store(self.rec.error_count(), Ordering::Relaxed);
        live.bytes_in.store(self.rec.bytes_in, Ordering::Relaxed);
        live.in_flight.store(self.in_flight, Ordering::Relaxed);
        live.ok.store(self.rec.ok, Ordering::Relaxed);
        live.requests.store(self.rec.requests, Ordering::Relaxed);
        live.connections.store(self.open as u64, Ordering::Relaxed);
        for (slot, n) in live.error_kinds.iter().zip(self.rec.errors) {
            slot.store(n, Ordering::Relaxed);
        }
    }

    fn pick(&mut self) -> usize {
        let n = self.cfg.requests.len();
        if n == 1 {
            return 0;
        }
        match self.cfg.pick {
            Pick::Random => self.rng.usize(..n),
            Pick::Sequence => {
                let i = self.seq % n;
                self.seq += 1;
                i
            }
            Pick::Weighted => match self.cfg.weights.last() {
                Some(&total) if total > 0 => {
                    super::weighted_index(&self.cfg.weights, self.rng.u64(..total))
                }
                _ => self.rng.usize(..n),
            },
        }
    }

    /// Takes one request off the budget if it is counted; false when the budget is spent.
    fn take_budget(&mut self, counted: bool) -> bool {
        match (&mut self.budget, counted) {
            (Some(0), true) => false,
            (Some(b), true) => {
                *b -= 1;
                true
            }
            _ => true,
        }
    }

    fn start_request(
        &mut self,
        slot: usize,
        req: usize,
        intended: Instant,
        counted: bool,
        now: Instant,
    ) {
        self.conns[slot].begin(req, intended, counted, now);
        let addr = self.request_addr(slot);
        if counted {
            self.rec.requests += 1;
        }
        W::start(self, slot, addr, now);
    }

    /// The server of the slot's current request: its user's own request's, else the mix's.
    pub(in crate::engine) fn request_addr(&self, slot: usize) -> usize {
        let c = &self.conns[slot];
        match &c.own {
            Some(p) => p.addr,
            None => self.cfg.requests[c.req].addr,
        }
    }

    /// May the slot's current request be sent again (idempotent: RFC 9110 §9.2.2)?
    pub(in crate::engine) fn may_resend(&self, slot: usize) -> bool {
        let c = &self.conns[slot];
        match &c.own {
            Some(p) => p.idempotent(),
            None => self.idempotent[c.req],
        }
    }

    /// A connection that could not even be started: no fd, no local port, refused at once.
    pub(in crate::engine) fn connect_failed(&mut self, slot: usize, kind: ErrorKind, now: Instant) {
        // (Not `self.schedule`: dispatch holds it while it starts requests.) A burst member
        // fails as any request: its burst goes on without it, no retry to recurse into.
        if matches!(self.cfg.load, Load::Open { .. }) || self.is_member_slot(slot) {
            self.fail(slot, kind, now);
            return;
        }
        // Closed loop: `fail` would start the user's next request from inside this call, and
        // while the failure lasts (no fd) recurse until the stack overflows. Count it here.
        if self.conns[slot].counted {
            self.count_error(slot, kind, now);
        }
        if kind == ErrorKind::FdUnavail {
            // Out of fds: this user cannot hold a connection. The run goes on with the users
            // that have one, as the open loop goes on with the connections it has.
            self.rec.users_stopped += 1;
            self.end_user(slot);
            return;
        }
        // Otherwise the user tries again: a run bounded by --requests on the next turn of the
        // loop (a request the backoff holds costs no attempt, and the run must not take the
        // backoff's seconds per request to end); one bounded by time when the backoff allows
        // the next attempt, or 10 ms later if sooner (not a spin counting held requests).
        self.conns[slot].phase = Phase::Thinking;
        let at = match self.budget {
            Some(_) => now,
            None => self
                .backoff
                .next_attempt(now)
                .min(now + super::backoff::FIRST),
        };
        self.think.push(Reverse((at, slot)));
    }

    /// The local address a new connection to `target` is made from (`--source`), if any:
    /// the next of this thread's list (TCP's connections and HTTP/3's UDP sockets alike).
    pub(in crate::engine) fn source_for(
        &mut self,
        target: &std::net::SocketAddr,
    ) -> Option<std::net::IpAddr> {
        match &self.cfg.source {
            Some(s) => s.next(&mut self.source, target),
            None => None,
        }
    }

    /// Starts a connect to address `addr` (both protocols' connections), unless the backoff
    /// holds attempts back: then the request fails as the last attempt did, with no attempt.
    /// `counted`: the attempt is in the measured window.
    pub(in crate::engine) fn open_socket(
        &mut self,
        addr: usize,
        counted: bool,
        now: Instant,
    ) -> Result<T, ErrorKind> {
        self.may_connect(counted, now)?;
        let target = self.cfg.addrs[addr];
        let from = self.source_for(&target);
        T::connect(&self.setup, target, from).map_err(|e| {
            let kind = ErrorKind::from_io(&e, true);
            if kind == ErrorKind::FdUnavail {
                // Our own limit, not the host's answer: its own rule (see below), no backoff.
                self.on_fd_exhausted();
                if counted {
                    self.rec.connect_failure(kind);
                }
            } else {
                self.connect_lost(kind, None, counted, now);
            }
            kind
        })
    }

    /// The backoff's word on a connect attempt (every protocol's: HTTP/3's sockets are its
    /// own): Err when it holds attempts back (the request fails as the last attempt did),
    /// else the attempt is counted.
    pub(in crate::engine) fn may_connect(
        &mut self,
        counted: bool,
        now: Instant,
    ) -> Result<(), ErrorKind> {
        if let Some(kind) = self.backoff.holds(now) {
            if counted {
                self.rec.connects_held += 1;
            }
            return Err(kind);
        }
        self.backoff.attempt(now);
        if counted {
            self.rec.connect_attempts += 1;
        }
        Ok(())
    }

    /// A connect attempt ended before its connection came up: refused, unreachable, timed
    /// out, or its TLS handshake failed (`hs`: the TLS transport's account of it).
    pub(in crate::engine) fn connect_lost(
        &mut self,
        kind: ErrorKind,
        hs: Option<Handshake>,
        counted: bool,
        now: Instant,
    ) {
        let reason = hs.and_then(|h| tls_reason(h, kind));
        // Held requests fail as this one's request counts (a stalled handshake is a
        // `tls-handshake` error, not the connect timeout that caught it).
        self.backoff
            .failed(reason.map_or(kind, TlsReason::kind), now);
        if !counted {
            return;
        }
        if hs.is_some_and(|h| h.tcp_connected.is_some()) {
            self.rec.handshakes_started += 1;
        }
        match reason {
            Some(reason) => self.rec.tls_failure(reason),
            None => self.rec.connect_failure(kind),
        }
    }

    /// A connection came up (TCP connected and, over TLS, its handshake done): the backoff
    /// ends.
    pub(in crate::engine) fn connection_up(
        &mut self,
        hs: Option<Handshake>,
        counted: bool,
        now: Instant,
    ) {
        self.backoff.up(now);
        if counted && hs.is_some() {
            self.rec.handshakes_started += 1;
        }
    }

    /// Out of fds: keep going with the connections we have, and say what to raise.
    fn on_fd_exhausted(&mut self) {
        if self.open > 0 && matches!(self.cfg.load, Load::Open { .. }) {
            self.max_conns = self.open;
        }
        if !self.fd_note_done {
            self.fd_note_done = true;
            // The same words from every thread, so the notes merge into one line.
            self.notes.push(
                "file descriptors ran out; the run went on with the connections already open"
                    .to_string(),
            );
        }
    }

    pub(in crate::engine) fn close_socket(&mut self, slot: usize) {
        if let Some(mut s) = self.conns[slot].detach() {
            let _ = s.deregister(self.poll.registry());
            self.open -= 1;
        }
    }

    /// Does what the connection asked for after an event.
    pub(in crate::engine) fn apply(&mut self, slot: usize, step: Step, now: Instant) {
        match step {
            Step::Wait => {}
            Step::Connected => {
                let c = &self.conns[slot];
                let (hs, start) = (c.stream.as_ref().and_then(T::handshake), c.connect_start);
                let counted = c.counted;
                self.connection_up(hs, counted, now);
                if counted {
                    self.record_connected(hs, start, now);
                }
                let c = &mut self.conns[slot];
                c.deadline = c.started + self.cfg.timeout;
                W::write(self, slot, now);
            }
            Step::Sent(len) => {
                let c = &self.conns[slot];
                if c.counted {
                    self.rec.bytes_out += len as u64;
                    // Sent means its bytes reached the socket, once per request.
                    if c.deliveries == 1 {
                        self.rec.sent += 1;
                        self.rec.protocols[W::INDEX] += 1;
                    }
                }
            }
            Step::Done { status, reusable } => self.complete(slot, status, reusable, now),
            Step::Failed(kind) => self.fail(slot, kind, now),
            Step::More => {
                let gen = self.conns[slot].gen;
                self.more.push((slot, gen));
            }
            Step::Dropped | Step::Stray => {
                // Counted against the request that last used the connection (not a new one).
                if step == Step::Stray && self.conns[slot].counted {
                    self.count_error(slot, ErrorKind::Protocol, now);
                }
                // A scenario user's idle connection stays its slot, to reconnect when needed.
                let was_idle = self.conns[slot].phase == Phase::Idle;
                self.close_socket(slot);
                if was_idle && self.conns[slot].user == super::conn::NO_USER {
                    self.free_slot(slot);
                }
            }
        }
    }

    /// Resumes the reads a connection left for this turn (a big body arriving as fast as we
    /// read it): one fast stream cannot starve the other connections or the timeout scan.
    fn read_more(&mut self) {
        if self.more.is_empty() {
            return;
        }
        std::mem::swap(&mut self.more, &mut self.more_next);
        let now = Instant::now();
        let mut i = 0;
        while i < self.more_next.len() {
            let (slot, gen) = self.more_next[i];
            i += 1;
            W::read_more(self, slot, gen, now);
        }
        self.more_next.clear();
    }

    pub(in crate::engine) fn complete(
        &mut self,
        slot: usize,
        status: u16,
        reusable: bool,
        now: Instant,
    ) {
        let c = &self.conns[slot];
        let forgiven = if self.schedule.is_some() {
            self.cfg.pacing_slack
        } else {
            Duration::ZERO
        };
        if c.counted {
            let rt = self.rec.response(
                status, c.intended, forgiven, c.started, c.written, now, c.bytes,
            );
            let name = self.name_of(slot);
            self.rec.name_response(name, status, rt);
            self.rec
                .first_byte(c.first_byte.saturating_duration_since(c.written));
        } else {
            // The warm-up's answers show in their seconds, not in the figures.
            self.rec
                .warmup_response(status, c.intended, forgiven, c.started, now, c.bytes);
        }
        if self.cfg.scenario.is_some() {
            self.scenario_complete(slot, status, reusable, now);
            return;
        }
        self.after_request(slot, reusable, now);
    }

    pub(in crate::engine) fn fail(&mut self, slot: usize, kind: ErrorKind, now: Instant) {
        let c = &self.conns[slot];
        let hs = c.stream.as_ref().and_then(T::handshake);
        // The slot's own connection (HTTP/1.1's) failed while it connected. A connection the
        // slots share (they hold none) is counted per connection by its protocol; a connect
        // that failed at once, in `open_socket`.
        if c.phase == Phase::Connecting && c.stream.is_some() {
            let counted = c.counted;
            self.connect_lost(kind, hs, counted, now);
        }
        self.fail_after(slot, kind, hs, now);
    }

    /// A failed request, `hs` being the handshake of the connection it was on: the slot's own
    /// (HTTP/1.1), or the HTTP/2 connection its stream rode (the slot holds none).
    pub(in crate::engine) fn fail_after(
        &mut self,
        slot: usize,
        kind: ErrorKind,
        hs: Option<Handshake>,
        now: Instant,
    ) {
        W::release(self, slot);
        if W::retry(self, slot, kind, now) {
            return;
        }
        if self.conns[slot].counted {
            // A refused handshake counts as its reason's kind (its reason is counted per
            // handshake, in `connect_lost`).
            let kind = hs
                .and_then(|hs| tls_reason(hs, kind))
                .map_or(kind, TlsReason::kind);
            self.count_error(slot, kind, now);
        } else {
            self.rec.warmup_error(now);
        }
        if self.cfg.scenario.is_some() {
            self.scenario_failed(slot, now);
            return;
        }
        self.after_request(slot, false, now);
    }

    /// A counted request that ended in `kind`: in the run's errors and its name's.
    fn count_error(&mut self, slot: usize, kind: ErrorKind, now: Instant) {
        self.rec.error(kind, now);
        let name = self.name_of(slot);
        self.rec.name_error(name, kind);
    }

    /// The name the slot's request is counted under: a scenario user's own request, else the
    /// run's `requests[req]` (a scenario run has none of those).
    fn name_of(&self, slot: usize) -> u16 {
        let c = &self.conns[slot];
        match &c.own {
            Some(p) => p.name,
            None => self.cfg.requests.get(c.req).map_or(u16::MAX, |p| p.name),
        }
    }

    /// A connection is up: its TCP connect and, over TLS, the handshake after it, timed apart
    /// (both protocols' connections).
    pub(in crate::engine) fn record_connected(
        &mut self,
        hs: Option<Handshake>,
        connect_start: Instant,
        now: Instant,
    ) {
        self.rec.connections_opened += 1;
        let tcp_at = hs.and_then(|h| h.tcp_connected).unwrap_or(now);
        self.rec
            .connected(tcp_at.saturating_duration_since(connect_start));
        if let Some(h) = hs {
            self.rec
                .handshake(now.saturating_duration_since(tcp_at), h.resumed);
        }
    }

    /// After a response or an error: keep or close the socket, then the slot's next move.
    fn after_request(&mut self, slot: usize, keep: bool, now: Instant) {
        if !keep {
            self.close_socket(slot);
        }
        if matches!(self.cfg.load, Load::Open { .. }) {
            if keep {
                self.conns[slot].phase = Phase::Idle;
                W::pool(self, slot);
            } else {
                self.free_slot(slot);
            }
            // A freed connection may serve a queued arrival right away.
            if self.may_send(now) {
                self.dispatch(now);
            }
        } else {
            self.conns[slot].phase = Phase::Idle;
            self.user_next(slot, now, false);
        }
    }

    /// Fails the requests past their deadline, and counts those in flight for `publish` in
    /// the same pass: at a million slots each pass over them costs milliseconds.
    fn scan_timeouts(&mut self, now: Instant) {
        W::scan(self, now);
        let mut in_flight = 0;
        for i in 0..self.conns.len() {
            if let Some(kind) = self.conns[i].expired(now) {
                self.fail(i, kind, now);
            }
            in_flight += u64::from(self.conns[i].in_flight());
        }
        self.in_flight = in_flight;
    }

    /// Stopped early: in-flight requests are abandoned, counted as interrupted (neither
    /// answered nor failed), and the measured window ends now.
    fn abort_in_flight(&mut self) {
        let now = Instant::now();
        let mut in_flight = 0;
        for i in 0..self.conns.len() {
            if self.conns[i].in_flight() {
                if self.conns[i].counted {
                    in_flight += 1;
                }
                self.close_socket(i);
                self.conns[i].link = None;
                self.conns[i].phase = Phase::Free;
            }
        }
        W::close_all(self);
        self.rec.stopped(in_flight, now);
    }
}

/// A TLS handshake's failure, with its reason: one the transport reported, or a connect
/// timeout that struck after TCP had connected (the handshake stalled).
fn tls_reason(hs: Handshake, kind: ErrorKind) -> Option<TlsReason> {
    match kind {
        ErrorKind::TlsHandshake | ErrorKind::TlsCertificate => hs.failure,
        ErrorKind::ConnectTimeout if hs.tcp_connected.is_some() => Some(TlsReason::Timeout),
        _ => None,
    }
}
