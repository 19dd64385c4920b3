//! The closed loop's side of a worker: each slot is a user who sends, waits for the answer,
//! thinks, and sends again.
use super::Worker;
use crate::engine::conn::{Phase, NO_USER};
use crate::engine::protocol::Wire;
use crate::engine::transport::Transport;
use std::cmp::Reverse;
use std::time::Instant;

impl<T: Transport, W: Wire<T>> Worker<'_, T, W> {
    /// A user decides what to do next: think, send, or stop. `first`: the user's first
    /// request goes out at once; think time comes after each answer.
    pub(super) fn user_next(&mut self, u: usize, now: Instant, first: bool) {
        if !self.may_send(now) {
            self.end_user(u);
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
                self.user_send(u, t, now);
            }
        }
    }
}
