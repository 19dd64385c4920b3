//! The wall clock: milliseconds since the Unix epoch. Steps, per-second series, server
//! samples and agent replies are all stamped with it, so they line up on one axis; the
//! engine's own timing uses `Instant` (monotonic) and never this.
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch (0 if the system clock is set before 1970).
pub fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Whole seconds since the Unix epoch.
pub fn unix_secs() -> u64 {
    unix_ms() / 1000
}

/// CPU time used by this process so far, µs (all threads): the generator's own effort, for
/// the progress line, the live view and the pushed metrics.
pub fn process_cpu_us() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    if unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_after_2020_and_consistent() {
        // 2020-01-01T00:00:00Z: a clock reading before that means the conversion is wrong.
        let ms = unix_ms();
        assert!(ms > 1_577_836_800_000, "{ms}");
        assert!(unix_secs() >= ms / 1000);
    }
}
