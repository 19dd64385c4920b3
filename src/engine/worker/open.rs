//! The open loop's side of a worker: arrivals from the schedule go out on idle kept-alive
//! connections or new ones, up to the thread's share of `--connections`.
use super::Worker;
use crate::engine::conn::{Conn, Phase};
use crate::engine::protocol::Wire;
use crate::engine::transport::Transport;
use std::time::Instant;

impl<T: Transport, W: Wire<T>> Worker<'_, T, W> {
    /// Sends every arrival that is due, as long as connections allow; the rest stay queued
    /// (implicitly: the schedule does not advance) and their wait shows as send lag.
    pub(in crate::engine) fn dispatch(&mut self, now: Instant) {
        let Some(mut sched) = self.schedule.take() else {
            return;
        };
        if self.gate.is_some() {
            // Sessions: every arrival due starts one, or is dropped at the cap.
            while sched.next() <= now && self.send_end.is_none_or(|e| sched.next() < e) {
                let intended = sched.next();
                if intended >= self.warm_end && self.budget == Some(0) {
                    break;
                }
                sched.advance();
                self.session_arrival(intended, now);
                self.last_dispatch = now;
            }
            self.schedule = Some(sched);
            return;
        }
        while sched.next() <= now && self.send_end.is_none_or(|e| sched.next() < e) {
            let intended = sched.next();
            let counted = intended >= self.warm_end;
            if counted && self.budget == Some(0) {
                break;
            }
            let req = match self.pending_pick {
                Some(r) => r,
                None => {
                    let r = sched.request().unwrap_or_else(|| self.pick());
                    self.pending_pick = Some(r);
                    r
                }
            };
            let addr = self.cfg.requests[req].addr;
            let slot = W::dispatch_slot(self, addr, now);
            let Some(slot) = slot else {
                self.rec.pool_waits += 1;
                break;
            };
            self.pending_pick = None;
            sched.advance();
            self.take_budget(counted);
            self.start_request(slot, req, intended, counted, now);
            self.last_dispatch = now;
        }
        self.schedule = Some(sched);
    }

    pub(in crate::engine) fn alloc_slot(&mut self, now: Instant) -> usize {
        match self.free_slots.pop() {
            Some(s) => s,
            None => {
                self.conns.push(Conn::new(now));
                self.conns.len() - 1
            }
        }
    }

    pub(in crate::engine) fn free_slot(&mut self, slot: usize) {
        self.conns[slot].phase = Phase::Free;
        self.free_slots.push(slot);
    }

    /// At the end of the send window: arrivals that were due but never got a connection.
    pub(super) fn count_unsent(&mut self) {
        let Some(mut sched) = self.schedule.take() else {
            return;
        };
        let end = self
            .send_end
            .unwrap_or_else(Instant::now)
            .min(Instant::now());
        let mut n = 0u64;
        while sched.next() < end && self.budget.is_none_or(|b| n < b) {
            if sched.next() >= self.warm_end {
                n += 1;
            }
            sched.advance();
        }
        self.rec.unsent += n;
        self.schedule = Some(sched);
    }
}
