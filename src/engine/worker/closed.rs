//! The closed loop's side of a worker: each slot is a user who sends, waits for the answer,
//! thinks, and sends again. On `--stages` the users the level asks for run: the others
//! start when it reaches them and stop after their current request when it falls below.
use super::Worker;
use crate::engine::conn::{Phase, NO_USER};
use crate::engine::protocol::Wire;
use crate::engine::transport::Transport;
use std::cmp::Reverse;
use std::time::{Duration, Instant};

/// How often a thread on a users' ramp starts the users the level has reached: 10 ms, finer
/// than anyone reads a users' timeline, cheap beside the requests.
const RAMP_CHECK: Duration = Duration::from_millis(10);

impl<T: Transport, W: Wire<T>> Worker<'_, T, W> {
    /// A user decides what to do next: think, send, or stop. `first`: the user's first
    /// request goes out at once; think time comes after each answer.
    pub(super) fn user_next(&mut self, u: usize, now: Instant, first: bool) {
        if !self.may_send(now) {
            self.end_user(u);
            return;
        }
        if !self.user_wanted(u, now) {
            self.ramp_stop(u);
            return;
        }
        // A scenario's step may set its own think time.
        let (lo, hi) = match self.conns[u].user {
            NO_USER => None,
            v => self.users[v as usize].user.think,
        }
        .unwrap_or(self.think_range);
        if first || hi.is_zero() {
            self.user_send(u, now, now);
            return;
        }
        let think = if hi > lo {
            lo + (hi - lo).mul_f64(self.rng.f64())
        } else {
            lo
        };
        self.conns[u].phase = Phase::Thinking;
        self.think.push(Reverse((now + think, u)));
    }

    pub(in crate::engine) fn user_send(&mut self, u: usize, intended: Instant, now: Instant) {
        let counted = intended >= self.warm_end;
        if !self.take_budget(counted) {
            self.end_user(u);
            return;
        }
        let req = if self.cfg.scenario.is_none() {
            self.pick()
        } else {
            self.scenario_render(u, None);
            0
        };
        self.start_request(u, req, intended, counted, now);
    }

    pub(super) fn end_user(&mut self, u: usize) {
        // A scenario user holds its burst's connections too: all close.
        match self.conns[u].user {
            NO_USER => {}
            v => {
                self.end_visitor(v as usize, super::session::SessionEnd::CutOff);
                return;
            }
        }
        self.close_socket(u);
        self.conns[u].phase = Phase::Free;
    }

    pub(super) fn wake_thinkers(&mut self, now: Instant) {
        while let Some(Reverse((t, u))) = self.think.peek().copied() {
            if t > now {
                break;
            }
            self.think.pop();
            // The user's next request was intended when its think time ended.
            if self.conns[u].phase == Phase::Thinking {
                if self.user_wanted(u, now) {
                    self.user_send(u, t, now);
                } else {
                    self.ramp_stop(u);
                }
            }
        }
    }

    /// How many of this thread's users run now: all, unless on a ramp, whose level (whole
    /// users) runs the global numbers below it; this thread's users are numbered in order
    /// (`offset + u × stride`), so they are its first ones.
    fn users_wanted(&self, now: Instant) -> usize {
        let (Some(lane), Some(p)) = (self.ramp_lane, &self.level) else {
            return usize::MAX;
        };
        // The profile's clock starts with the warm-up.
        let origin = self.warm_end.checked_sub(self.cfg.warmup);
        let t = origin.map_or(0.0, |o| now.saturating_duration_since(o).as_secs_f64());
        let level = (p.level(t) + 1e-9).floor() as u64;
        level.saturating_sub(lane.offset).div_ceil(lane.stride) as usize
    }

    /// A user the ramp no longer wants stops; the next check starts it again from there if
    /// the level is back up by then.
    fn ramp_stop(&mut self, u: usize) {
        self.end_user(u);
        self.ramp_running = self.ramp_running.min(u);
    }

    /// Whether user `u` of this thread runs now (see `users_wanted`).
    pub(super) fn user_wanted(&self, u: usize, now: Instant) -> bool {
        u < self.users_wanted(now)
    }

    /// On a users' ramp: starts the users the level has reached since the last check
    /// (those it left stop on their own, after their current request: `user_next`). A user
    /// still busy from before a fall simply goes on.
    pub(super) fn ramp_users(&mut self, now: Instant) {
        if self.ramp_lane.is_none() || now < self.next_ramp {
            return;
        }
        self.next_ramp = now + RAMP_CHECK;
        let n = self.users_wanted(now).min(self.conns.len());
        for u in self.ramp_running.min(n)..n {
            if self.conns[u].phase == Phase::Free {
                self.user_next(u, now, true);
            }
        }
        self.ramp_running = n;
    }
}
