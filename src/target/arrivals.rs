//! `/arrivals`: the requests that arrived in each wall-clock second of the last
//! [`SLOTS`] seconds, as JSON, so the generator's schedule can be checked from the server's
//! side (a ramp's arrivals follow its stages). One atomic per second, no lock: each slot
//! packs the second (low 32 bits of Unix time) and its count.
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Seconds kept.
pub(crate) const SLOTS: usize = 128;

pub(crate) struct Arrivals {
    slots: Vec<AtomicU64>,
}

impl Default for Arrivals {
    fn default() -> Self {
        Arrivals {
            slots: (0..SLOTS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

fn unix_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Arrivals {
    /// Counts one arrival in the current second.
    pub(crate) fn note(&self) {
        self.note_at(unix_s());
    }

    fn note_at(&self, s: u64) {
        let tag = s & 0xFFFF_FFFF;
        let slot = &self.slots[s as usize % SLOTS];
        let mut v = slot.load(Ordering::Relaxed);
        loop {
            // A slot still holding an older second starts over for this one.
            let next = if v >> 32 == tag { v + 1 } else { tag << 32 | 1 };
            match slot.compare_exchange_weak(v, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return,
                Err(now) => v = now,
            }
        }
    }

    /// `{"per_second":[[UNIX_S,COUNT],…]}`, oldest first, seconds without arrivals left out.
    pub(crate) fn json(&self) -> String {
        self.json_at(unix_s())
    }

    fn json_at(&self, now: u64) -> String {
        let oldest = now.saturating_sub(SLOTS as u64 - 1);
        let mut seen: Vec<(u64, u64)> = (oldest..=now)
            .filter_map(|s| {
                let v = self.slots[s as usize % SLOTS].load(Ordering::Relaxed);
                (v >> 32 == s & 0xFFFF_FFFF).then_some((s, v & 0xFFFF_FFFF))
            })
            .collect();
        seen.sort_unstable();
        let parts: Vec<String> = seen.iter().map(|(s, n)| format!("[{s},{n}]")).collect();
        format!("{{\"per_second\":[{}]}}\n", parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_second_and_forgets_the_old() {
        let a = Arrivals::default();
        for _ in 0..3 {
            a.note_at(1000);
        }
        a.note_at(1001);
        assert_eq!(a.json_at(1001), "{\"per_second\":[[1000,3],[1001,1]]}\n");
        // The slot of 1000 serves 1000 + SLOTS: it starts over; 1001 is still in the window.
        let later = 1000 + SLOTS as u64;
        a.note_at(later);
        assert_eq!(
            a.json_at(later),
            format!("{{\"per_second\":[[1001,1],[{later},1]]}}\n")
        );
    }
}
