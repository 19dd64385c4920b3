//! Segments: one plan cut into N exact parts, one per generator host (scale-out).
//!
//! Segment i of N takes arrivals i, i+N, i+2N… of the one global open-loop schedule, and a
//! share of every count of the plan (users, connections, requests) with the remainder spread
//! over the first segments, so the N parts add up to the whole plan exactly. Within a host,
//! thread k of T strides the segment's arrivals the same way (see [`Segment::lane`]), so the
//! schedule is a function of the plan (rate, arrival process, seed) alone: how many hosts and
//! threads share it changes who sends an arrival, never when it is due.
use std::fmt;
use std::time::Duration;

/// Generator `index` (0-based) of `count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    pub index: u32,
    pub count: u32,
}

/// The global arrival indices one schedule owns: `offset`, `offset + stride`, ….
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lane {
    pub offset: u64,
    pub stride: u64,
}

/// Most generators a plan may be cut for: far beyond any fleet, small enough that the
/// strides and shares cannot overflow.
pub const MAX_SEGMENTS: u32 = 10_000;

impl Segment {
    /// The whole plan: one generator.
    pub const WHOLE: Segment = Segment { index: 0, count: 1 };

    pub fn is_whole(&self) -> bool {
        self.count == 1
    }

    /// Parses `I/N` with 0 ≤ I < N (0-based, as Kubernetes' completion index and Slurm's
    /// SLURM_PROCID count).
    pub fn parse(s: &str) -> Result<Segment, String> {
        let bad = |why: &str| format!("--segment '{s}': {why} (expected I/N, 0 <= I < N)");
        let (i, n) = s.split_once('/').ok_or_else(|| bad("no '/'"))?;
        let num = |t: &str| {
            t.trim()
                .parse::<u32>()
                .map_err(|_| bad(&format!("'{t}' is not a whole number")))
        };
        let (index, count) = (num(i)?, num(n)?);
        if count == 0 || count > MAX_SEGMENTS {
            return Err(bad(&format!("N must be 1 to {MAX_SEGMENTS}")));
        }
        if index >= count {
            return Err(bad("I must be below N"));
        }
        Ok(Segment { index, count })
    }

    /// This segment's share of `n` (users, connections, requests): n/N, plus one for the
    /// first n mod N segments. The shares of all segments add up to `n`.
    pub fn share(&self, n: u64) -> u64 {
        let (i, c) = (u64::from(self.index), u64::from(self.count));
        n / c + u64::from(i < n % c)
    }

    /// The arrivals thread `thread` of `threads` on this segment's host owns: global index
    /// `index + count × (thread + threads × j)` for j = 0, 1, ….
    pub fn lane(&self, thread: usize, threads: usize) -> Lane {
        let c = u64::from(self.count);
        Lane {
            offset: u64::from(self.index) + c * thread as u64,
            stride: c * threads.max(1) as u64,
        }
    }
}

/// Parses `--start-at`: Unix time in seconds, a fraction allowed (`1767225600.5`); in ms.
pub fn parse_start_at(s: &str) -> Result<u64, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v > 0.0 && *v < 1e11)
        .ok_or_else(|| format!("--start-at '{s}': expected Unix time in seconds (date +%s)"))?;
    Ok((secs * 1000.0).round() as u64)
}

/// Checks a start time against the clock `now_ms`: at most `late` in the past (a generator
/// started a little after the others still lines up on the same step grid) and at most a day
/// ahead (a typo, not a plan).
pub fn check_start_at(at_ms: u64, now_ms: u64, late: Duration) -> Result<(), String> {
    let late_ms = late.as_millis() as u64;
    if at_ms + late_ms < now_ms {
        return Err(format!(
            "--start-at {}: {:.1} s in the past (more than {} late)",
            at_ms as f64 / 1e3,
            (now_ms - at_ms) as f64 / 1e3,
            crate::units::fmt_duration(late)
        ));
    }
    if at_ms > now_ms + DAY_MS {
        return Err(format!(
            "--start-at {}: more than 24 h ahead",
            at_ms as f64 / 1e3
        ));
    }
    Ok(())
}

const DAY_MS: u64 = 86_400_000;

impl Default for Segment {
    fn default() -> Segment {
        Segment::WHOLE
    }
}

/// `I/N`, as `--segment` takes it.
impl fmt::Display for Segment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_shows_back() {
        assert_eq!(
            Segment::parse("0/1").unwrap(),
            Segment { index: 0, count: 1 }
        );
        let s = Segment::parse("2/3").unwrap();
        assert_eq!(s, Segment { index: 2, count: 3 });
        assert_eq!(Segment::parse(&s.to_string()).unwrap(), s);
        for bad in [
            "", "1", "3/3", "0/0", "-1/2", "a/2", "1/b", "1/20000", "1/2/3",
        ] {
            let e = Segment::parse(bad).unwrap_err();
            assert!(e.starts_with("--segment"), "{bad}: {e}");
        }
    }

    #[test]
    fn start_times_in_range() {
        assert_eq!(parse_start_at("1767225600").unwrap(), 1_767_225_600_000);
        assert_eq!(parse_start_at("1767225600.25").unwrap(), 1_767_225_600_250);
        for bad in ["", "now", "-5", "0", "inf", "1e20"] {
            assert!(parse_start_at(bad).is_err(), "{bad}");
        }
        let now = 1_767_225_600_000;
        let step = Duration::from_secs(30);
        assert!(check_start_at(now + 10_000, now, step).is_ok());
        assert!(check_start_at(now - 29_000, now, step).is_ok());
        let e = check_start_at(now - 31_000, now, step).unwrap_err();
        assert!(e.contains("31.0 s in the past"), "{e}");
        assert!(check_start_at(now + DAY_MS, now, step).is_ok());
        let e = check_start_at(now + DAY_MS + 1, now, step).unwrap_err();
        assert!(e.contains("24 h ahead"), "{e}");
    }

    #[test]
    fn shares_add_up_to_the_whole_and_differ_by_at_most_one() {
        for n in [0u64, 1, 2, 7, 10, 999, 10_001] {
            for count in 1..=7u32 {
                let shares: Vec<u64> = (0..count)
                    .map(|index| Segment { index, count }.share(n))
                    .collect();
                assert_eq!(shares.iter().sum::<u64>(), n, "{n} over {count}");
                let (lo, hi) = (shares.iter().min().unwrap(), shares.iter().max().unwrap());
                assert!(hi - lo <= 1, "{n} over {count}: {shares:?}");
            }
        }
    }

    #[test]
    fn lanes_of_all_segments_and_threads_cover_every_index_once() {
        // 3 hosts with different thread counts: every global index 0..600 owned exactly once.
        let threads = [2usize, 1, 4];
        let mut owners = vec![0u32; 600];
        for (index, &t) in threads.iter().enumerate() {
            let seg = Segment {
                index: index as u32,
                count: 3,
            };
            for k in 0..t {
                let lane = seg.lane(k, t);
                let mut i = lane.offset;
                // Host `index` owns indices ≡ index (mod 3); its threads split those.
                while i < 600 {
                    owners[i as usize] += 1;
                    i += lane.stride;
                }
            }
        }
        // Thread counts differ between hosts, so strides differ: 3×2, 3×1, 3×4.
        assert!(owners.iter().all(|&n| n == 1), "{owners:?}");
    }
}
