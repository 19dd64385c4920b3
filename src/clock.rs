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
