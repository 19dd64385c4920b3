//! Scenario users inside the worker's loop (`--scenario`): each user (a [`Visitor`]) carries
//! its scenario state (step, variables, cookie jar, feeder row) and the connections it holds:
//! its main slot, which its scenario's requests go on and its think time waits on, and the
//! slots it opened for bursts. Its next request is rendered into the slot's own `Prepared`
//! before it is sent; each answer is judged by the user (cookies stored, checks, extraction)
//! before the user fetches the step's burst, thinks and goes on.
//!
//! Closed loop: a thread's users are made at the start and loop their scenario. Open loop
//! (`--rate` with a scenario): each arrival starts a session, one new user's pass through its
//! scenario, unless `--max-sessions` are in flight (the [`Gate`]); the session ends with its
//! scenario (completed) or its first failure (failed), and its connections close.
use super::Worker;
use crate::engine::conn::{Phase, NO_USER};
use crate::engine::protocol::Wire;
use crate::engine::transport::Transport;
use crate::metrics::{ErrorKind, SessionTally};
use crate::scenario::{Plan, User, Verdict};
use std::time::Instant;

/// Unix seconds, for cookie expiry.
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// One scenario user of a worker thread and the connections (slots) it holds.
pub(super) struct Visitor {
    pub user: User,
    /// The slot of its scenario's own requests (a burst may use it too).
    pub main: usize,
    /// Slots opened for its bursts beside `main`, kept for its next bursts as a browser keeps
    /// its connections; closed when the session (or, closed loop, the run) ends.
    extra: Vec<usize>,
    /// The burst under way, after its page's answer.
    burst: Option<Burst>,
    /// Open loop: the session arrived after the warm-up, so its outcome is counted.
    counted: bool,
}

impl Visitor {
    fn new(user: User, main: usize, counted: bool) -> Visitor {
        Visitor {
            user,
            main,
            extra: Vec::new(),
            burst: None,
            counted,
        }
    }
}

/// A page's burst in progress: its members (the current step's `burst`) from `next` on are
/// still to start; `left` have not finished.
#[derive(Debug, Clone, Copy)]
struct Burst {
    next: usize,
    left: usize,
    /// The page's intended time: its load time runs from there to the burst's last answer.
    page_intended: Instant,
    /// The page was counted (after the warm-up): so are its members and its load time.
    counted: bool,
}

/// The users of one closed-loop worker thread: `threads` workers of segment `seg` (index,
/// count), this one being `id`; user `u` (on slot `u`) is the run's user
/// `(u·threads + id)·count + index`, so every user has its own number (its feeder row when
/// rows go per user).
pub(super) fn users(
    plan: &Plan,
    slots: usize,
    id: usize,
    threads: usize,
    seg: (u32, u32),
    rng: &mut fastrand::Rng,
) -> Vec<Visitor> {
    (0..slots)
        .map(|u| {
            let mut user = User::new(plan, user_number(u as u64, id, threads, seg));
            user.begin(plan, rng.f64());
            Visitor::new(user, u, true)
        })
        .collect()
}

/// The run-wide number of a thread's `k`th user (closed loop) or session (open loop).
fn user_number(k: u64, id: usize, threads: usize, seg: (u32, u32)) -> u64 {
    (k * threads as u64 + id as u64) * u64::from(seg.1) + u64::from(seg.0)
}

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SessionEnd {
    /// It went through its scenario.
    Completed,
    /// A request failed, or a check or an extraction.
    Failed,
    /// The run ended first (or `--requests` ran out).
    CutOff,
}

/// Open loop: sessions in flight, at most `cap` (`--max-sessions`, this thread's share). An
/// arrival past the cap is dropped and counted: a queue of sessions would only grow while the
/// server is slower than the offered load, and hide it.
#[derive(Debug)]
pub(super) struct Gate {
    cap: usize,
    active: usize,
}

impl Gate {
    pub fn new(cap: usize) -> Gate {
        Gate {
            cap: cap.max(1),
            active: 0,
        }
    }

    /// An arrival: true when it starts a session. `counted`: it arrived after the warm-up.
    pub fn arrive(&mut self, counted: bool, tally: &mut SessionTally) -> bool {
        let admitted = self.active < self.cap;
        if admitted {
            self.active += 1;
        }
        if counted {
            if admitted {
                tally.started += 1;
            } else {
                tally.dropped += 1;
            }
        }
        admitted
    }

    /// A session ended; `counted` as its arrival was.
    pub fn leave(&mut self, counted: bool, end: SessionEnd, tally: &mut SessionTally) {
        self.active = self.active.saturating_sub(1);
        if counted {
            match end {
                SessionEnd::Completed => tally.completed += 1,
                SessionEnd::Failed => tally.failed += 1,
                SessionEnd::CutOff => {}
            }
        }
    }
}

/// Where a burst's member goes, among the slots its user holds: each as (slot, the server its
/// connection is open to, busy with a request).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SlotChoice {
    /// This slot: idle, and open to the member's server, or to be (re)connected to it.
    Use(usize),
    /// A new slot, for a new connection to the server.
    Open,
}

/// A browser's choice for an embedded resource: an idle connection to its server; else, while
/// fewer than `cap` connections to that server are open, an idle slot (none open first) or a
/// new one; else the member waits for one of the server's connections (None).
pub(super) fn choose_slot(
    held: &[(usize, Option<usize>, bool)],
    server: usize,
    cap: usize,
) -> Option<SlotChoice> {
    let idle = |want: &dyn Fn(Option<usize>) -> bool| {
        held.iter()
            .find(|&&(_, to, busy)| !busy && want(to))
            .map(|&(s, _, _)| SlotChoice::Use(s))
    };
    if let Some(c) = idle(&|to| to == Some(server)) {
        return Some(c);
    }
    if held.iter().filter(|h| h.1 == Some(server)).count() >= cap {
        return None;
    }
    idle(&|to| to.is_none())
        .or_else(|| idle(&|to| to.is_some()))
        .or(Some(SlotChoice::Open))
}

impl<T: Transport, W: Wire<T>> Worker<'_, T, W> {
    /// The user whose connection `slot` is.
    fn visitor_of(&self, slot: usize) -> Option<usize> {
        let u = self.conns.get(slot)?.user;
        (u != NO_USER).then_some(u as usize)
    }

    /// Open loop: a session arrives (intended at `intended`): a new user starts its scenario
    /// on a slot of its own, unless the gate drops it.
    pub(super) fn session_arrival(&mut self, intended: Instant, now: Instant) {
        let cfg = self.cfg;
        let (Some(plan), Some(gate)) = (cfg.scenario.as_deref(), self.gate.as_mut()) else {
            return;
        };
        let counted = intended >= self.warm_end;
        if !gate.arrive(counted, &mut self.rec.sessions) {
            return;
        }
        let n = user_number(
            self.sessions_begun,
            self.id,
            self.threads,
            (self.cfg.segment.index, self.cfg.segment.count),
        );
        self.sessions_begun += 1;
        let mut user = User::new(plan, n);
        user.begin(plan, self.rng.f64());
        let main = self.alloc_slot(now);
        let v = Visitor::new(user, main, counted);
        let v = match self.free_users.pop() {
            Some(i) => {
                // Keep the old one's slot list (its capacity) for the new one.
                let mut extra = std::mem::take(&mut self.users[i].extra);
                extra.clear();
                self.users[i] = Visitor { extra, ..v };
                i
            }
            None => {
                self.users.push(v);
                self.users.len() - 1
            }
        };
        self.conns[main].user = v as u32;
        self.user_send(main, intended, now);
    }

    /// Ends user `v`: its connections close. Open loop: its session is over (`end`), its
    /// slots and itself are free for the next arrivals. Closed loop: the user is done.
    pub(super) fn end_visitor(&mut self, v: usize, end: SessionEnd) {
        let main = self.users[v].main;
        let extra = std::mem::take(&mut self.users[v].extra);
        self.users[v].burst = None;
        for &s in std::iter::once(&main).chain(&extra) {
            if self.conns[s].link.is_some() {
                // A stream still open on the user's connection (the run cut it off): its
                // answer must not reach the slot's next user.
                W::release(self, s);
            }
            self.close_socket(s);
            if self.gate.is_some() {
                self.conns[s].user = NO_USER;
                self.free_slot(s);
            } else {
                self.conns[s].phase = Phase::Free;
            }
        }
        self.users[v].extra = extra;
        // The connections the protocol opened for it (HTTP/2's, HTTP/3's) close with it.
        W::end_user(self, v);
        let counted = self.users[v].counted;
        if let Some(g) = &mut self.gate {
            g.leave(counted, end, &mut self.rec.sessions);
            self.users[v].extra.clear();
            self.free_users.push(v);
        }
    }

    /// Renders `slot`'s next request: its user's current step on its main slot, else the
    /// current step's burst member `member`. The slot's `own` request is what
    /// `start_request` and the connection send.
    pub(super) fn scenario_render(&mut self, slot: usize, member: Option<usize>) {
        let cfg = self.cfg;
        let (Some(plan), Some(v)) = (cfg.scenario.as_deref(), self.visitor_of(slot)) else {
            return;
        };
        let now = unix_now();
        let user = &self.users[v].user;
        let page = user.current(plan);
        let step = member.map_or(page, |k| &page.burst[k]);
        let mut p = self.conns[slot].own.take().unwrap_or_default();
        user.render_step(plan, step, false, now, &mut p.keep_alive);
        user.render_step(plan, step, true, now, &mut p.close);
        p.addr = step.server;
        p.name = step.name_id;
        p.head_only = step.head_only();
        // HTTP/2's and HTTP/3's forms are made from the HTTP/1.1 one.
        W::render_own(&mut p, plan.servers[step.server].https);
        // The head always (cookies, header extraction); the body only when a step reads it.
        let limit = if step.wants_body() { plan.max_body } else { 0 };
        p.capture = Some(limit);
        self.conns[slot].set_capture(Some(limit));
        self.conns[slot].own = Some(p);
    }

    /// `slot`'s answer came (`status`), already measured. A burst member's: its cookies are
    /// kept and the burst goes on. A step's: the user judges it; a failed check or extraction
    /// is counted and the user starts over (open loop: its session fails), else it fetches
    /// the step's burst, or moves to its next step (or next iteration).
    pub(super) fn scenario_complete(&mut self, slot: usize, status: u16, keep: bool, now: Instant) {
        if !keep {
            self.close_socket(slot);
        }
        self.conns[slot].phase = Phase::Idle;
        let cfg = self.cfg;
        let (Some(plan), Some(v)) = (cfg.scenario.as_deref(), self.visitor_of(slot)) else {
            return;
        };
        if let Some(k) = self.member_on(slot) {
            if let Some(c) = self.conns[slot].captured() {
                let member = &self.users[v].user.current(plan).burst[k];
                self.users[v]
                    .user
                    .on_resource(plan, member, &c.head, unix_now());
            }
            self.member_done(v, now);
            return;
        }
        let verdict = match self.conns[slot].captured() {
            Some(c) => self.users[v]
                .user
                .on_response(plan, status, &c.head, &c.body, unix_now()),
            None => Verdict::Ok,
        };
        let user = &mut self.users[v].user;
        let step = user.current(plan);
        user.think = step.think;
        let kind = match verdict {
            Verdict::Ok => {
                if !step.burst.is_empty() && self.may_send(now) {
                    self.users[v].burst = Some(Burst {
                        next: 0,
                        left: step.burst.len(),
                        page_intended: self.conns[slot].intended,
                        counted: self.conns[slot].counted,
                    });
                    self.pump_burst(v, now);
                } else {
                    self.step_done(v, now);
                }
                return;
            }
            Verdict::CheckFailed => ErrorKind::CheckFailed,
            Verdict::ExtractFailed => ErrorKind::ExtractFailed,
        };
        if self.conns[slot].counted {
            self.rec.error(kind, now);
        }
        self.user_failed(v, now);
    }

    /// `slot`'s request failed (transport error), already counted: a burst member's burst
    /// goes on (a browser shows the page without the image); a step's user starts over
    /// (open loop: its session fails).
    pub(super) fn scenario_failed(&mut self, slot: usize, now: Instant) {
        self.close_socket(slot);
        self.conns[slot].phase = Phase::Idle;
        let Some(v) = self.visitor_of(slot) else {
            return;
        };
        if self.member_on(slot).is_some() {
            self.member_done(v, now);
            return;
        }
        self.users[v].user.think = None;
        self.user_failed(v, now);
    }

    /// The burst member `slot` carries, by its index in the page's burst; None for a step's
    /// own request. (A member may ride the main slot too: the slot does not tell.)
    fn member_on(&self, slot: usize) -> Option<usize> {
        self.visitor_of(slot)?;
        self.conns[slot].req.checked_sub(1)
    }

    /// `slot` carries a burst's member.
    pub(super) fn is_member_slot(&self, slot: usize) -> bool {
        self.member_on(slot).is_some()
    }

    /// User `v`'s step is done (answer and burst): its next step, else its next iteration
    /// (closed loop) or the end of its session (open loop).
    fn step_done(&mut self, v: usize, now: Instant) {
        let cfg = self.cfg;
        let Some(plan) = cfg.scenario.as_deref() else {
            return;
        };
        let main = self.users[v].main;
        if !self.users[v].user.advance(plan) {
            if self.gate.is_some() {
                self.end_visitor(v, SessionEnd::Completed);
                return;
            }
            let r = self.rng.f64();
            self.users[v].user.begin(plan, r);
        }
        self.user_next(main, now, false);
    }

    /// User `v` failed (a request, a check, an extraction): it starts its scenario over;
    /// open loop: its session ends, failed.
    fn user_failed(&mut self, v: usize, now: Instant) {
        let cfg = self.cfg;
        let Some(plan) = cfg.scenario.as_deref() else {
            return;
        };
        if self.gate.is_some() {
            self.end_visitor(v, SessionEnd::Failed);
            return;
        }
        let r = self.rng.f64();
        self.users[v].user.begin(plan, r);
        let main = self.users[v].main;
        self.user_next(main, now, false);
    }

    /// One of user `v`'s burst members finished (answered or failed).
    fn member_done(&mut self, v: usize, now: Instant) {
        if let Some(b) = &mut self.users[v].burst {
            b.left -= 1;
        }
        self.pump_burst(v, now);
    }

    /// Starts user `v`'s burst members while it has connections for them; when all have
    /// finished, records the page's load time and the user goes on.
    fn pump_burst(&mut self, v: usize, now: Instant) {
        let cfg = self.cfg;
        let Some(plan) = cfg.scenario.as_deref() else {
            return;
        };
        // Each turn reads the burst afresh: a member that fails at once (a refused connect)
        // finishes inside `start_request` and moves this same burst on.
        while let Some(mut b) = self.users[v].burst {
            let page = self.users[v].user.current(plan);
            let members = page.burst.len();
            if b.next < members && !self.may_send(now) {
                // The run's send window is over: the rest of the burst is not sent.
                b.left -= members - b.next;
                b.next = members;
                self.users[v].burst = Some(b);
            }
            if b.next == members {
                if b.left == 0 {
                    self.users[v].burst = None;
                    if b.counted {
                        let us = now.saturating_duration_since(b.page_intended).as_micros();
                        self.rec
                            .name_page_load(page.name_id, u64::try_from(us).unwrap_or(u64::MAX));
                    }
                    self.step_done(v, now);
                }
                return;
            }
            let Some(slot) = self.member_slot(v, page.burst[b.next].server, now) else {
                return;
            };
            let k = b.next;
            b.next += 1;
            self.users[v].burst = Some(b);
            if !self.take_budget(b.counted) {
                if let Some(b) = &mut self.users[v].burst {
                    b.left -= 1;
                }
                continue;
            }
            self.scenario_render(slot, Some(k));
            // `req` tells a member (1 + its index) from a step's own request (0).
            self.start_request(slot, k + 1, now, b.counted, now);
        }
    }

    /// A slot for user `v`'s next burst member to `server` (see [`choose_slot`]); None: the
    /// user's connections to that server are all busy and at the cap.
    fn member_slot(&mut self, v: usize, server: usize, now: Instant) -> Option<usize> {
        let cfg = self.cfg;
        let plan = cfg.scenario.as_deref()?;
        let mut held = std::mem::take(&mut self.held);
        held.clear();
        // HTTP/1.1: a slot is a connection, open to a server or not. HTTP/2 and HTTP/3: a
        // slot is a stream of the user's connection, "open to" its server while in flight,
        // and the streams bound the burst as the connections per host do over HTTP/1.1.
        let streams = W::user_streams(self);
        let vis = &self.users[v];
        for &s in std::iter::once(&vis.main).chain(&vis.extra) {
            let c = &self.conns[s];
            let to = match streams {
                None => c.stream.is_some(),
                Some(_) => c.in_flight(),
            };
            held.push((s, to.then_some(c.addr), c.in_flight()));
        }
        let cap = streams.unwrap_or(plan.connections_per_host);
        let choice = choose_slot(&held, server, cap);
        self.held = held;
        match choice? {
            SlotChoice::Use(s) => Some(s),
            SlotChoice::Open => {
                let s = self.alloc_slot(now);
                self.conns[s].user = v as u32;
                self.users[v].extra.push(s);
                Some(s)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrivals_past_the_cap_are_dropped_and_counted() {
        let mut tally = SessionTally::default();
        let mut g = Gate::new(2);
        // Two in flight, a third arrival dropped; one ends, the next arrival starts.
        assert!(g.arrive(true, &mut tally));
        assert!(g.arrive(true, &mut tally));
        assert!(!g.arrive(true, &mut tally));
        g.leave(true, SessionEnd::Completed, &mut tally);
        assert!(g.arrive(true, &mut tally));
        g.leave(true, SessionEnd::Failed, &mut tally);
        g.leave(true, SessionEnd::CutOff, &mut tally);
        assert!(g.arrive(true, &mut tally) && g.arrive(true, &mut tally));
        assert_eq!(
            (tally.started, tally.completed, tally.failed, tally.dropped),
            (5, 1, 1, 1)
        );
        // The warm-up's sessions take their place in flight but are not counted.
        let mut warm = SessionTally::default();
        let mut g = Gate::new(1);
        assert!(g.arrive(false, &mut warm));
        assert!(!g.arrive(false, &mut warm));
        assert!(
            !g.arrive(true, &mut warm),
            "the warm-up's session still holds the cap"
        );
        g.leave(false, SessionEnd::Completed, &mut warm);
        assert!(g.arrive(true, &mut warm));
        assert_eq!(
            (warm.started, warm.completed, warm.dropped),
            (1, 0, 1),
            "only the arrivals after the warm-up"
        );
        assert_eq!(Gate::new(0).cap, 1, "a thread's share is at least one");
    }

    #[test]
    fn a_burst_reuses_then_opens_up_to_the_cap_per_server() {
        // (slot, open to server, busy)
        let idle_to_0 = [(7, Some(0), false), (8, Some(0), true)];
        assert_eq!(choose_slot(&idle_to_0, 0, 6), Some(SlotChoice::Use(7)));
        let busy = [(7, Some(0), true), (8, Some(0), true)];
        assert_eq!(choose_slot(&busy, 0, 6), Some(SlotChoice::Open));
        assert_eq!(choose_slot(&busy, 0, 2), None, "at the cap: wait");
        // Another server's connections do not count against this one's cap; an idle slot
        // with no connection is taken before one open elsewhere.
        let mixed = [(1, Some(1), false), (2, None, false), (3, Some(0), true)];
        assert_eq!(choose_slot(&mixed, 0, 2), Some(SlotChoice::Use(2)));
        let elsewhere = [(1, Some(1), false), (3, Some(0), true)];
        assert_eq!(choose_slot(&elsewhere, 0, 2), Some(SlotChoice::Use(1)));
        assert_eq!(choose_slot(&[], 0, 6), Some(SlotChoice::Open));
        // Ten members, one server, six connections: the first six take slots, the rest wait.
        let mut held: Vec<(usize, Option<usize>, bool)> = vec![(0, Some(0), false)];
        let mut started = 0;
        for _ in 0..10 {
            match choose_slot(&held, 0, 6) {
                Some(SlotChoice::Use(s)) => held[s].2 = true,
                Some(SlotChoice::Open) => held.push((held.len(), Some(0), true)),
                None => break,
            }
            started += 1;
        }
        assert_eq!((started, held.len()), (6, 6));
    }
}
