//! One worker thread: a mio event loop owning a slab of connection slots. The loop owns the
//! poller, timers, pools and metrics; each slot's exchange is a [`Conn`] over a
//! [`Transport`], generic so the hot path is statically dispatched. The open loop's dispatch
//! lives in `open.rs`, the closed loop's users in `closed.rs`.
//!
//! HTTP/2's multiplexing (`mux.rs`) puts the same slots on streams of shared connections.
//!
//! The hot path per request is: pop an idle connection (or connect), one `write` of the
//! pre-rendered request, `read`s into the thread's shared buffer fed to the parser, three
//! histogram records. Nothing on it allocates.
mod closed;
mod mux;
mod open;
mod session;

use super::backoff::Backoff;
use super::conn::{Conn, Phase, Reuse, Step};
use super::pacing::{Schedule, TimerFd};
use super::transport::{Handshake, Transport};
use super::{Control, EngineConfig, Load, Pick};
use crate::metrics::{ErrorKind, Recorder, TlsReason};
use crate::plan::segment::Lane;
use mio::{Events, Interest, Poll, Token};
use mux::{Mux, H2_FLAG};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io::ErrorKind as IoKind;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

const TIMER: Token = Token(usize::MAX);
const READ_BUF: usize = 64 * 1024;
/// Full reads one connection may do per turn of the loop (1 MiB) before yielding to the others.
const READS_PER_TURN: usize = 16;

fn token(idx: usize, gen: u32) -> Token {
    Token(idx | ((gen as usize) << 32))
}

pub(super) struct Worker<'a, T: Transport> {
    cfg: &'a EngineConfig,
    /// What the transport needs to open a connection.
    setup: T::Setup,
    reuse: Reuse,
    ctl: Arc<Control>,
    id: usize,
    poll: Poll,
    conns: Vec<Conn<T>>,
    free_slots: Vec<usize>,
    /// Idle kept-alive connections per address, as (slot, gen); stale entries are skipped.
    idle: Vec<Vec<(usize, u32)>>,
    open: usize,
    max_conns: usize,
    rec: Recorder,
    buf: Box<[u8]>,
    rng: fastrand::Rng,
    timer: TimerFd,
    schedule: Option<Schedule>,
    /// The URL chosen for the next queued open-loop arrival.
    pending_pick: Option<usize>,
    seq: usize,
    /// Counted requests this thread may still start (None: unlimited).
    budget: Option<u64>,
    think: BinaryHeap<Reverse<(Instant, usize)>>,
    think_range: (Duration, Duration),
    warm_end: Instant,
    /// No request intended at or after this is sent.
    send_end: Option<Instant>,
    scan_every: Duration,
    next_scan: Instant,
    notes: Vec<String>,
    fd_note_done: bool,
    /// When the schedule last sent something (pacing slack counts from there).
    last_dispatch: Instant,
    /// Per request of the mix: may it be retried after a stale keep-alive connection?
    idempotent: Vec<bool>,
    /// Connections with unread data left when they yielded to the others (see `read_response`),
    /// as (slot, gen); `more_next` is the spare list swapped in while they are served.
    more: Vec<(usize, u32)>,
    more_next: Vec<(usize, u32)>,
    /// HTTP/2 (`--http 2`): the multiplexed connections the slots' requests ride on.
    mux: Option<Mux<T>>,
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
}

/// The fds a worker needs besides its connections: its epoll and its timer. The engine opens
/// them for every thread before any thread connects: otherwise, short of fds, the first
/// threads' connections could leave none for a later thread's epoll, failing the whole run.
pub(super) fn event_fds() -> crate::Result<(Poll, TimerFd)> {
    let poll = Poll::new().map_err(|e| crate::Error::runtime(format!("epoll: {e}")))?;
    let timer = TimerFd::new(poll.registry(), TIMER)
        .map_err(|e| crate::Error::runtime(format!("timerfd: {e}")))?;
    Ok((poll, timer))
}

impl<'a, T: Transport> Worker<'a, T> {
    pub(super) fn new(
        cfg: &'a EngineConfig,
        id: usize,
        threads: usize,
        origin: Instant,
        ctl: &Arc<Control>,
        (poll, timer): (Poll, TimerFd),
        setup: T::Setup,
    ) -> crate::Result<Worker<'a, T>> {
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
                // HTTP/2: each user takes a stream; the thread's users share connections.
                let conns = cfg
                    .http2
                    .map_or(n, |h| n.div_ceil(h.streams.max(1) as usize).max(1));
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
            reuse: Reuse {
                keep_alive: cfg.keep_alive,
                calls_per_connection: cfg.calls_per_connection,
            },
            ctl: Arc::clone(ctl),
            id,
            poll,
            conns: (0..slots)
                .map(|u| {
                    let mut c = Conn::new(origin);
                    if cfg.scenario.is_some() {
                        c.user = u as u32;
                    }
                    c
                })
                .collect(),
            free_slots: Vec::new(),
            idle: vec![Vec::new(); cfg.addrs.len()],
            open: 0,
            max_conns,
            rec,
            buf: vec![0u8; READ_BUF].into_boxed_slice(),
            rng,
            timer,
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
            mux: cfg.http2.map(|h| Mux::<T>::new(h.streams)),
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
        })
    }

    /// Runs the loop to the end; returns the measurements and notes.
    pub(super) fn run(&mut self) -> crate::Result<(Recorder, Vec<String>)> {
        let mut events = Events::with_capacity(1024);
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
            // Sleep until the next thing to do: an arrival, a user waking, a timeout scan.
            let mut wake = self.next_scan;
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
            let timeout = if wake <= now || !self.more.is_empty() {
                Some(Duration::ZERO)
            } else if wake - now < Duration::from_millis(2) {
                self.timer.arm(wake, now);
                None
            } else {
                // epoll rounds up to whole milliseconds: wake a little early rather than late.
                Some((wake - now).saturating_sub(Duration::from_micros(900)))
            };
            // HTTP/2: the streams opened this turn go out, one write per connection.
            self.h2_flush();
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() != IoKind::Interrupted {
                    return Err(crate::Error::runtime(format!("epoll_wait: {e}")));
                }
            }
            for ev in events.iter() {
                if ev.token() == TIMER {
                    self.timer.clear();
                    continue;
                }
                let idx = ev.token().0 & 0xFFFF_FFFF;
                let gen = (ev.token().0 >> 32) as u32;
                if idx & H2_FLAG != 0 {
                    self.h2_event(
                        idx & !H2_FLAG,
                        gen,
                        ev.is_readable() || ev.is_error(),
                        ev.is_writable(),
                        ev.is_read_closed(),
                    );
                    continue;
                }
                if idx >= self.conns.len() || self.conns[idx].gen != gen {
                    continue;
                }
                self.on_event(
                    idx,
                    ev.is_readable() || ev.is_error(),
                    ev.is_writable(),
                    ev.is_read_closed(),
                );
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
        if self.mux.is_some() {
            self.h2_close_all();
        }
        self.publish();
        self.rec.close_seconds();
        self.rec.cpu = crate::metrics::recorder::thread_cpu_time().saturating_sub(cpu_start);
        let rec = std::mem::replace(
            &mut self.rec,
            Recorder::new(Instant::now(), Instant::now(), 0),
        );
        Ok((rec, std::mem::take(&mut self.notes)))
    }

    fn may_send(&self, now: Instant) -> bool {
        self.send_end.is_none_or(|e| now < e) && self.budget != Some(0)
    }

    fn can_dispatch(&self) -> bool {
        // Sessions need no connection to arrive: each opens its own, or is dropped.
        if self.gate.is_some() {
            return true;
        }
        if self.mux.is_some() {
            return self.h2_room(None);
        }
        self.open < self.max_conns || self.idle.iter().any(|v| !v.is_empty())
    }

    fn publish(&self) {
        let live = &self.ctl.live[self.id];
        live.responses.store(self.rec.responses, Ordering::Relaxed);
        live.errors.store(self.rec.error_count(), Ordering::Relaxed);
        live.bytes_in.store(self.rec.bytes_in, Ordering::Relaxed);
        let inflight = self.conns.iter().filter(|c| c.in_flight()).count();
        live.in_flight.store(inflight as u64, Ordering::Relaxed);
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
        let addr = match &self.conns[slot].own {
            Some(p) => p.addr,
            None => self.cfg.requests[req].addr,
        };
        self.conns[slot].begin(req, intended, counted, now);
        if counted {
            self.rec.requests += 1;
        }
        if self.mux.is_some() {
            self.h2_start(slot, now);
            return;
        }
        let c = &self.conns[slot];
        if c.stream.is_some() && c.addr == addr && self.cfg.keep_alive {
            self.conns[slot].deadline = now + self.cfg.timeout;
            self.send(slot, now);
            return;
        }
        self.close_socket(slot);
        self.conns[slot].addr = addr;
        if let Err(kind) = self.connect(slot, now) {
            self.connect_failed(slot, kind, now);
        }
    }

    /// A connection that could not even be started: no fd, no local port, refused at once.
    fn connect_failed(&mut self, slot: usize, kind: ErrorKind, now: Instant) {
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

    fn connect(&mut self, slot: usize, now: Instant) -> Result<(), ErrorKind> {
        let counted = self.conns[slot].counted;
        let mut stream = self.open_socket(self.conns[slot].addr, counted, now)?;
        let c = &mut self.conns[slot];
        c.gen = c.gen.wrapping_add(1);
        if let Err(e) = stream.register(
            self.poll.registry(),
            token(slot, c.gen),
            Interest::READABLE | Interest::WRITABLE,
        ) {
            return Err(ErrorKind::from_io(&e, true));
        }
        c.attach(stream, now, self.cfg.timeout, self.cfg.connect_timeout);
        self.open += 1;
        Ok(())
    }

    /// Starts a connect to address `addr` (both protocols' connections), unless the backoff
    /// holds attempts back: then the request fails as the last attempt did, with no attempt.
    /// `counted`: the attempt is in the measured window.
    fn open_socket(&mut self, addr: usize, counted: bool, now: Instant) -> Result<T, ErrorKind> {
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
        T::connect(&self.setup, self.cfg.addrs[addr]).map_err(|e| {
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

    /// A connect attempt ended before its connection came up: refused, unreachable, timed
    /// out, or its TLS handshake failed (`hs`: the TLS transport's account of it).
    fn connect_lost(
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
    fn connection_up(&mut self, hs: Option<Handshake>, counted: bool, now: Instant) {
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

    fn close_socket(&mut self, slot: usize) {
        if let Some(mut s) = self.conns[slot].detach() {
            let _ = s.deregister(self.poll.registry());
            self.open -= 1;
        }
    }

    fn on_event(&mut self, slot: usize, readable: bool, writable: bool, read_closed: bool) {
        let now = Instant::now();
        let step = self.conns[slot].on_event(
            readable,
            writable,
            read_closed,
            &self.cfg.requests,
            self.reuse,
            &mut self.buf,
            READS_PER_TURN,
            now,
        );
        self.apply(slot, step, now);
    }

    /// Writes (the rest of) the slot's request.
    fn send(&mut self, slot: usize, now: Instant) {
        let step = self.conns[slot].send_current(&self.cfg.requests, self.reuse, now);
        self.apply(slot, step, now);
    }

    /// Does what the connection asked for after an event.
    fn apply(&mut self, slot: usize, step: Step, now: Instant) {
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
                self.send(slot, now);
            }
            Step::Sent(len) => {
                let c = &self.conns[slot];
                if c.counted {
                    self.rec.bytes_out += len as u64;
                    // Sent means its bytes reached the socket, once per request.
                    if c.deliveries == 1 {
                        self.rec.sent += 1;
                        self.rec.protocols[usize::from(self.mux.is_some())] += 1;
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
            if slot & H2_FLAG != 0 {
                self.h2_read_more(slot & !H2_FLAG, gen, now);
                continue;
            }
            let c = &mut self.conns[slot];
            if c.gen == gen && matches!(c.phase, Phase::Writing | Phase::Reading) {
                let step = c.receive(&mut self.buf, READS_PER_TURN, self.reuse);
                self.apply(slot, step, now);
            }
        }
        self.more_next.clear();
    }

    fn complete(&mut self, slot: usize, status: u16, reusable: bool, now: Instant) {
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

    fn fail(&mut self, slot: usize, kind: ErrorKind, now: Instant) {
        let c = &self.conns[slot];
        let hs = c.stream.as_ref().and_then(T::handshake);
        // HTTP/1.1's own connection failed while it connected (HTTP/2's are counted per
        // connection in mux.rs; a connect that failed at once, in `open_socket`).
        if c.phase == Phase::Connecting && c.stream.is_some() && c.link.is_none() {
            let counted = c.counted;
            self.connect_lost(kind, hs, counted, now);
        }
        self.fail_after(slot, kind, hs, now);
    }

    /// A failed request, `hs` being the handshake of the connection it was on: the slot's own
    /// (HTTP/1.1), or the HTTP/2 connection its stream rode (the slot holds none).
    fn fail_after(&mut self, slot: usize, kind: ErrorKind, hs: Option<Handshake>, now: Instant) {
        self.h2_release(slot);
        if self.retry_stale(slot, kind, now) {
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
    fn record_connected(&mut self, hs: Option<Handshake>, connect_start: Instant, now: Instant) {
        self.rec.connections_opened += 1;
        let tcp_at = hs.and_then(|h| h.tcp_connected).unwrap_or(now);
        self.rec
            .connected(tcp_at.saturating_duration_since(connect_start));
        if let Some(h) = hs {
            self.rec
                .handshake(now.saturating_duration_since(tcp_at), h.resumed);
        }
    }

    /// The keep-alive race (see [`Conn::stale_race`]): the request goes once more on a fresh
    /// connection; `retries` counts it. Returns true when the retry is under way.
    fn retry_stale(&mut self, slot: usize, kind: ErrorKind, now: Instant) -> bool {
        let c = &self.conns[slot];
        let idempotent = match &c.own {
            Some(p) => p.idempotent(),
            None => self.idempotent[c.req],
        };
        if !c.stale_race(kind, idempotent) {
            return false;
        }
        if c.counted {
            self.rec.retries += 1;
        }
        self.close_socket(slot);
        self.conns[slot].restart();
        // The deadline stays the request's own (connect keeps it): the retry adds no time.
        if let Err(kind) = self.connect(slot, now) {
            self.connect_failed(slot, kind, now);
        }
        true
    }

    /// After a response or an error: keep or close the socket, then the slot's next move.
    fn after_request(&mut self, slot: usize, keep: bool, now: Instant) {
        if !keep {
            self.close_socket(slot);
        }
        if matches!(self.cfg.load, Load::Open { .. }) {
            if keep {
                let c = &mut self.conns[slot];
                c.phase = Phase::Idle;
                let entry = (slot, c.gen);
                let addr = c.addr;
                self.idle[addr].push(entry);
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

    fn scan_timeouts(&mut self, now: Instant) {
        self.h2_scan(now);
        for i in 0..self.conns.len() {
            if let Some(kind) = self.conns[i].expired(now) {
                self.fail(i, kind, now);
            }
        }
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
        if self.mux.is_some() {
            self.h2_close_all();
        }
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
