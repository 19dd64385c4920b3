//! `--stall FREEZE/PERIOD`: the whole server freezes its output during the last FREEZE of
//! every PERIOD, counted from server start. A response that would be written inside the frozen
//! window waits for its end. This gives coordinated-omission tests a known truth: with 1s/5s
//! about 20% of requests wait between 0 and 1 s.
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy)]
pub(crate) struct Stall {
    origin: Instant,
    freeze: Duration,
    period: Duration,
}

impl Stall {
    /// Caller guarantees `freeze < period` and `period > 0` (checked in `start`).
    pub(crate) fn new(origin: Instant, freeze: Duration, period: Duration) -> Self {
        Stall {
            origin,
            freeze,
            period,
        }
    }

    /// How long a write at `now` must wait: zero outside the frozen window.
    pub(crate) fn frozen_for(&self, now: Instant) -> Duration {
        let period = self.period.as_nanos();
        if period == 0 {
            return Duration::ZERO;
        }
        let phase = now.saturating_duration_since(self.origin).as_nanos() % period;
        let open = period.saturating_sub(self.freeze.as_nanos());
        if phase >= open {
            // `period - phase` < period, which fits a Duration.
            Duration::from_nanos(u64::try_from(period - phase).unwrap_or(u64::MAX))
        } else {
            Duration::ZERO
        }
    }

    /// Waits until output is allowed again.
    pub(crate) async fn wait_open(&self) {
        let wait = self.frozen_for(Instant::now());
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_is_the_end_of_each_period() {
        let t0 = Instant::now();
        let s = Stall::new(t0, Duration::from_secs(1), Duration::from_secs(5));
        let at = |ms: u64| s.frozen_for(t0 + Duration::from_millis(ms));
        assert_eq!(at(0), Duration::ZERO);
        assert_eq!(at(3_999), Duration::ZERO);
        assert_eq!(at(4_000), Duration::from_secs(1));
        assert_eq!(at(4_750), Duration::from_millis(250));
        assert_eq!(at(5_000), Duration::ZERO);
        assert_eq!(at(9_500), Duration::from_millis(500));
        // Before the origin (clock skew between threads): treated as phase 0, open.
        assert_eq!(s.frozen_for(t0), Duration::ZERO);
    }

    #[test]
    fn zero_freeze_never_waits() {
        let t0 = Instant::now();
        let s = Stall::new(t0, Duration::ZERO, Duration::from_secs(5));
        for ms in [0, 2_500, 4_999, 5_000] {
            assert_eq!(s.frozen_for(t0 + Duration::from_millis(ms)), Duration::ZERO);
        }
    }
}
