//! When nothing answers, a worker slows its connect attempts down instead of flooding the
//! host (a typo'd port, a server that is down, a certificate the run refuses): once every
//! attempt of the last second failed, attempts are spaced `FIRST`, then twice as far, up to
//! `CAP`; the first connection that comes up ends it. A pure decision on the times and
//! outcomes it is told, so it is unit-tested on scripted inputs (below); the worker keeps one.
//!
//! A request that needs a new connection while the backoff holds fails at once, as the last
//! attempt did, without touching the network: the open loop's schedule and its accounting
//! stay exact (the arrival is counted as the error it would have met), the closed loop's
//! users wait for the next allowed attempt.
use crate::metrics::ErrorKind;
use std::time::{Duration, Instant};

/// The first spacing between attempts once the backoff starts.
pub const FIRST: Duration = Duration::from_millis(10);
/// The longest spacing: with it, a worker makes at most about one attempt a second.
pub const CAP: Duration = Duration::from_secs(1);
/// A connection that came up within this long keeps the backoff off.
pub const WINDOW: Duration = Duration::from_secs(1);

#[derive(Debug, Clone)]
pub struct Backoff {
    /// When a connection last came up (None: none yet in this run).
    last_up: Option<Instant>,
    /// The current spacing between attempts; zero while not backing off.
    delay: Duration,
    /// No attempt before this, while backing off.
    until: Option<Instant>,
    /// The last failure's kind: what a held request counts as.
    kind: ErrorKind,
    /// An attempt went while backing off and has not failed yet: its failure doubles the
    /// spacing (the failures of attempts made before the spacing began do not).
    probing: bool,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            last_up: None,
            delay: Duration::ZERO,
            until: None,
            kind: ErrorKind::ConnectRefused,
            probing: false,
        }
    }
}

impl Backoff {
    /// Some(kind) when an attempt may not go at `now`: the request fails as `kind`.
    pub fn holds(&self, now: Instant) -> Option<ErrorKind> {
        self.until.filter(|&u| now < u).map(|_| self.kind)
    }

    /// An attempt goes at `now`: while backing off it takes the whole spacing, so the
    /// attempts of one turn of the loop (several users waking together) are one, not many.
    pub fn attempt(&mut self, now: Instant) {
        if !self.delay.is_zero() {
            self.until = Some(now + self.delay);
            self.probing = true;
        }
    }

    /// An attempt failed at `now` before its connection came up (refused, unreachable,
    /// timed out, TLS handshake refused).
    pub fn failed(&mut self, kind: ErrorKind, now: Instant) {
        self.kind = kind;
        if self
            .last_up
            .is_some_and(|t| now.saturating_duration_since(t) < WINDOW)
        {
            // A connection came up within the last second: not every attempt failed.
            return;
        }
        if self.delay.is_zero() {
            self.delay = FIRST;
        } else if self.probing {
            self.delay = (self.delay * 2).min(CAP);
        } else {
            // An attempt made before the spacing began (several connects were in flight at
            // once): one doubling for them all, not one each.
            return;
        }
        self.probing = false;
        self.until = Some(now + self.delay);
    }

    /// A connection came up at `now`: the backoff ends.
    pub fn up(&mut self, now: Instant) {
        self.last_up = Some(now);
        self.delay = Duration::ZERO;
        self.until = None;
        self.probing = false;
    }

    /// When the next attempt may go (now, when not backing off).
    pub fn next_attempt(&self, now: Instant) -> Instant {
        self.until.map_or(now, |u| u.max(now))
    }

    /// The spacing in force (zero: not backing off).
    #[cfg(test)]
    pub fn delay(&self) -> Duration {
        self.delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Nothing listening: the spacing doubles from 10 ms to 1 s, and a refusal while it
    /// holds fails the request as the last attempt did, without an attempt.
    #[test]
    fn refusals_space_attempts_from_10_ms_doubling_to_1_s() {
        let t0 = Instant::now();
        let mut b = Backoff::default();
        assert_eq!(b.holds(t0), None, "the first attempt goes");
        b.attempt(t0);
        b.failed(ErrorKind::ConnectRefused, t0);
        assert_eq!(b.delay(), FIRST);
        assert_eq!(b.holds(t0 + ms(9)), Some(ErrorKind::ConnectRefused));
        assert_eq!(b.holds(t0 + ms(10)), None);
        let mut now = t0;
        let mut delays = Vec::new();
        for _ in 0..9 {
            now = b.next_attempt(now);
            assert_eq!(b.holds(now), None);
            b.attempt(now);
            b.failed(ErrorKind::ConnectRefused, now);
            delays.push(b.delay().as_millis());
        }
        assert_eq!(delays, [20, 40, 80, 160, 320, 640, 1000, 1000, 1000]);
        // Attempts in two seconds: a bounded handful, not 10^5.
        let mut b = Backoff::default();
        let (mut now, mut attempts) = (t0, 0);
        while now < t0 + Duration::from_secs(2) {
            if b.holds(now).is_none() {
                attempts += 1;
                b.attempt(now);
                b.failed(ErrorKind::ConnectRefused, now);
            }
            now += Duration::from_micros(100);
        }
        assert!((8..=10).contains(&attempts), "{attempts}");
    }

    /// The first connection that comes up ends the backoff at once.
    #[test]
    fn a_connection_up_resets_it() {
        let t0 = Instant::now();
        let mut b = Backoff::default();
        for i in 0..5 {
            let now = b.next_attempt(t0 + ms(i));
            b.attempt(now);
            b.failed(ErrorKind::TlsCertificate, now);
        }
        assert!(b.delay() > FIRST);
        let now = b.next_attempt(t0);
        assert_eq!(b.holds(now - ms(1)), Some(ErrorKind::TlsCertificate));
        b.attempt(now);
        b.up(now);
        assert_eq!(b.delay(), Duration::ZERO);
        assert_eq!(b.holds(now), None);
        assert_eq!(b.next_attempt(now), now);
    }

    /// A refusal within a second of a connection that came up (a server shedding some
    /// connections, or a backlog overflowing) does not hold anyone back: not every attempt
    /// of the last second failed.
    #[test]
    fn a_failure_beside_recent_success_does_not_back_off() {
        let t0 = Instant::now();
        let mut b = Backoff::default();
        b.attempt(t0);
        b.up(t0);
        b.attempt(t0 + ms(500));
        b.failed(ErrorKind::ConnectRefused, t0 + ms(500));
        assert_eq!(b.holds(t0 + ms(500)), None);
        b.failed(ErrorKind::ConnectRefused, t0 + ms(999));
        assert_eq!(b.holds(t0 + ms(999)), None);
        // A second without success: now it does.
        b.failed(ErrorKind::ConnectRefused, t0 + ms(1000));
        assert_eq!(b.holds(t0 + ms(1000)), Some(ErrorKind::ConnectRefused));
        assert_eq!(b.delay(), FIRST);
    }

    /// Many attempts in flight at once that all fail: one doubling, not one per failure;
    /// while it holds, an attempt that goes takes the whole spacing for itself.
    #[test]
    fn failures_in_flight_together_double_once_and_attempts_take_turns() {
        let t0 = Instant::now();
        let mut b = Backoff::default();
        for _ in 0..100 {
            b.attempt(t0);
        }
        for i in 0..100 {
            b.failed(ErrorKind::ConnectTimeout, t0 + Duration::from_micros(i));
        }
        assert_eq!(b.delay(), FIRST);
        let now = t0 + ms(10);
        assert_eq!(b.holds(now), None);
        b.attempt(now);
        assert_eq!(
            b.holds(now),
            Some(ErrorKind::ConnectTimeout),
            "one goes, the rest wait"
        );
        assert_eq!(b.next_attempt(now), now + FIRST);
    }
}
