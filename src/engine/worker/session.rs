//! Scenario users inside the worker's loop (`--scenario`): each closed-loop slot is a user
//! that carries its scenario state (step, variables, cookie jar, feeder row). Its next request
//! is rendered into the slot's own `Prepared` before it is sent; each answer is judged by the
//! user (cookies stored, checks, extraction) before the user thinks and goes on.
use super::Worker;
use crate::engine::transport::Transport;
use crate::metrics::ErrorKind;
use crate::scenario::{Plan, User, Verdict};
use std::time::Instant;

/// Unix seconds, for cookie expiry.
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The users of one worker thread: `threads` workers of segment `seg` (index, count), this
/// one being `id`; user `u` of it is the run's user `(u·threads + id)·count + index`, so
/// every user has its own number (its feeder row when rows go per user).
pub(super) fn users(
    plan: &Plan,
    slots: usize,
    id: usize,
    threads: usize,
    seg: (u32, u32),
    rng: &mut fastrand::Rng,
) -> Vec<User> {
    (0..slots)
        .map(|u| {
            let n = ((u * threads + id) as u64) * u64::from(seg.1) + u64::from(seg.0);
            let mut user = User::new(plan, n);
            user.begin(plan, rng.f64());
            user
        })
        .collect()
}

impl<T: Transport> Worker<'_, T> {
    /// Renders user `u`'s current request into its slot; returns nothing: the slot's `own`
    /// request is what `start_request` and the connection send.
    pub(super) fn scenario_render(&mut self, u: usize) {
        let Some(plan) = self.cfg.scenario.as_deref() else {
            return;
        };
        let now = unix_now();
        let user = &self.users[u];
        let step = user.current(plan);
        let mut p = self.conns[u].own.take().unwrap_or_default();
        user.render(plan, false, now, &mut p.keep_alive);
        user.render(plan, true, now, &mut p.close);
        p.addr = step.server;
        p.name = step.name_id;
        p.head_only = step.head_only();
        // The head always (cookies, header extraction); the body only when a step reads it.
        let limit = if step.wants_body() { plan.max_body } else { 0 };
        self.conns[u].set_capture(Some(limit));
        self.conns[u].own = Some(p);
    }

    /// User `u`'s answer came (`status`): the user judges it; a failed check or extraction is
    /// counted and the user starts over, else it moves to its next step (or next iteration).
    pub(super) fn scenario_answer(&mut self, u: usize, status: u16, now: Instant) {
        let cfg = self.cfg;
        let Some(plan) = cfg.scenario.as_deref() else {
            return;
        };
        let verdict = match self.conns[u].captured() {
            Some(c) => self.users[u].on_response(plan, status, &c.head, &c.body, unix_now()),
            None => Verdict::Ok,
        };
        let user = &mut self.users[u];
        user.think = user.current(plan).think;
        let kind = match verdict {
            Verdict::Ok => {
                if !user.advance(plan) {
                    user.begin(plan, self.rng.f64());
                }
                return;
            }
            Verdict::CheckFailed => ErrorKind::CheckFailed,
            Verdict::ExtractFailed => ErrorKind::ExtractFailed,
        };
        user.begin(plan, self.rng.f64());
        if self.conns[u].counted {
            self.rec.error(kind, now);
        }
    }

    /// User `u`'s request failed (transport error): the user starts its scenario over.
    pub(super) fn scenario_failed(&mut self, u: usize) {
        let cfg = self.cfg;
        if let (Some(plan), Some(user)) = (cfg.scenario.as_deref(), self.users.get_mut(u)) {
            user.think = None;
            user.begin(plan, self.rng.f64());
        }
    }
}
