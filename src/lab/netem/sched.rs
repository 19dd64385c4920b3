//! The impairment bridge's decisions, on a clock it is handed (nanoseconds from any origin):
//! which frame is lost, which overflows the queue, when each one leaves. No I/O, so the unit
//! tests drive it on a scripted clock; `bridge.rs` feeds it frames and the monotonic clock.
//!
//! Per direction: a frame is lost with probability `loss` (a seeded RNG, so a run repeats);
//! otherwise it waits `delay ± jitter` (uniform, like netem without a distribution table),
//! but never leaves before the frame ahead of it: the order on the wire is kept (netem
//! reorders when jitter exceeds the gap between packets, which TCP reads as loss and answers
//! with duplicate ACKs; a path that keeps order measures the delay and loss asked for and
//! nothing else). So each direction's queue is a FIFO whose release times never decrease,
//! and the next frame due is always at its head. A queue holds at most `queue` frames, as a
//! router's buffer: one beyond is dropped and counted apart from the random loss.
use std::collections::VecDeque;
use std::time::Duration;

/// One direction's impairment (the bridge applies the same to both).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Impairment {
    /// One-way delay.
    pub delay: Duration,
    /// One-way jitter: the delay is drawn uniformly in `delay ± jitter`.
    pub jitter: Duration,
    /// Probability that a frame is dropped, 0..=1.
    pub loss: f64,
    /// Frames a direction holds at most.
    pub queue: usize,
}

/// What became of an offered frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Queued; it leaves at this time (ns).
    Queued(u64),
    /// Dropped by the loss probability.
    Lost,
    /// Dropped: the queue was full.
    Overflow,
}

/// A direction's counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub forwarded: u64,
    pub lost: u64,
    pub overflow: u64,
}

#[derive(Default)]
struct Direction {
    queue: VecDeque<(u64, Vec<u8>)>,
    /// Release time of the last frame queued: no later frame leaves before it.
    last: u64,
    counts: Counts,
}

pub struct Scheduler {
    imp: Impairment,
    rng: fastrand::Rng,
    dirs: [Direction; 2],
}

impl Scheduler {
    pub fn new(imp: Impairment, seed: u64) -> Scheduler {
        Scheduler {
            imp,
            rng: fastrand::Rng::with_seed(seed),
            dirs: [Direction::default(), Direction::default()],
        }
    }

    /// A frame arrived at `now` going `dir` (0 or 1).
    pub fn offer(&mut self, dir: usize, now: u64, frame: Vec<u8>) -> Verdict {
        let imp = self.imp;
        // The draws happen for every frame, in arrival order, so a seed gives the same
        // verdicts whatever the queue's state.
        let lost = imp.loss > 0.0 && self.rng.f64() < imp.loss;
        let spread = imp.jitter.as_nanos() as u64;
        let delay = imp.delay.as_nanos() as u64;
        let wait = if spread == 0 {
            delay
        } else {
            // Uniform in [delay - jitter, delay + jitter], never below zero.
            (delay + self.rng.u64(0..=2 * spread)).saturating_sub(spread)
        };
        let d = &mut self.dirs[dir];
        if lost {
            d.counts.lost += 1;
            return Verdict::Lost;
        }
        if d.queue.len() >= imp.queue {
            d.counts.overflow += 1;
            return Verdict::Overflow;
        }
        let at = (now + wait).max(d.last);
        d.last = at;
        d.queue.push_back((at, frame));
        Verdict::Queued(at)
    }

    /// When the earliest queued frame is due, if any.
    pub fn next_due(&self) -> Option<u64> {
        self.dirs
            .iter()
            .filter_map(|d| d.queue.front().map(|(t, _)| *t))
            .min()
    }

    /// The next frame of `dir` due at `now`, if any.
    pub fn pop_due(&mut self, dir: usize, now: u64) -> Option<Vec<u8>> {
        let d = &mut self.dirs[dir];
        match d.queue.front() {
            Some((t, _)) if *t <= now => {
                d.counts.forwarded += 1;
                d.queue.pop_front().map(|(_, f)| f)
            }
            _ => None,
        }
    }

    pub fn counts(&self, dir: usize) -> Counts {
        self.dirs[dir].counts
    }

    /// Frames waiting in `dir`.
    pub fn queued(&self, dir: usize) -> usize {
        self.dirs[dir].queue.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn imp(delay_ms: u64, jitter_ms: u64, loss: f64, queue: usize) -> Impairment {
        Impairment {
            delay: Duration::from_millis(delay_ms),
            jitter: Duration::from_millis(jitter_ms),
            loss,
            queue,
        }
    }

    #[test]
    fn a_frame_leaves_after_the_delay_and_not_before() {
        let mut s = Scheduler::new(imp(20, 0, 0.0, 10), 1);
        assert_eq!(s.offer(0, 5 * MS, vec![1]), Verdict::Queued(25 * MS));
        assert_eq!(s.next_due(), Some(25 * MS));
        assert_eq!(s.pop_due(0, 25 * MS - 1), None);
        assert_eq!(s.pop_due(1, 30 * MS), None, "the other direction is empty");
        assert_eq!(s.pop_due(0, 25 * MS), Some(vec![1]));
        assert_eq!(s.next_due(), None);
        assert_eq!(s.counts(0).forwarded, 1);
    }

    #[test]
    fn jitter_spreads_the_delay_but_keeps_the_order() {
        let mut s = Scheduler::new(imp(20, 5, 0.0, 10_000), 7);
        let mut last = 0;
        let mut waits = Vec::new();
        for i in 0..2000u64 {
            // One frame every 0.1 ms: far closer than the jitter's spread.
            let now = i * MS / 10;
            let Verdict::Queued(at) = s.offer(0, now, i.to_le_bytes().to_vec()) else {
                panic!("nothing is lost at 0%")
            };
            assert!(at >= last, "frame {i} would overtake the one before it");
            last = at;
            waits.push(at - now);
        }
        // Order may push a wait later, never below delay - jitter.
        assert!(
            waits.iter().all(|w| *w >= 15 * MS),
            "{:?}",
            waits.iter().min()
        );
        // Frames leave in the order they came.
        let mut n = 0u64;
        while let Some(f) = s.pop_due(0, u64::MAX) {
            assert_eq!(f, n.to_le_bytes().to_vec());
            n += 1;
        }
        assert_eq!(n, 2000);
    }

    #[test]
    fn frames_farther_apart_than_the_jitter_draw_across_its_whole_range() {
        let mut s = Scheduler::new(imp(20, 5, 0.0, 10), 3);
        let mut waits = Vec::new();
        for i in 0..500u64 {
            let now = i * 30 * MS;
            let Verdict::Queued(at) = s.offer(0, now, vec![]) else {
                panic!()
            };
            waits.push(at - now);
            s.pop_due(0, at);
        }
        assert!(waits.iter().all(|w| (15 * MS..=25 * MS).contains(w)));
        assert!(
            waits.iter().any(|w| *w < 16 * MS),
            "{:?}",
            waits.iter().min()
        );
        assert!(
            waits.iter().any(|w| *w > 24 * MS),
            "{:?}",
            waits.iter().max()
        );
    }

    #[test]
    fn loss_follows_the_rate_and_the_seed_repeats_it() {
        let run = |seed| {
            let mut s = Scheduler::new(imp(0, 0, 0.1, 100_000), seed);
            (0..10_000)
                .map(|i| s.offer(i % 2, i as u64, Vec::new()) == Verdict::Lost)
                .collect::<Vec<bool>>()
        };
        let a = run(42);
        let lost = a.iter().filter(|l| **l).count();
        assert!((800..1200).contains(&lost), "{lost} of 10000 lost at 10%");
        assert_eq!(a, run(42), "the same seed gives the same losses");
        assert_ne!(a, run(43));
    }

    #[test]
    fn a_full_queue_drops_and_counts_apart_from_loss() {
        let mut s = Scheduler::new(imp(50, 0, 0.0, 3), 1);
        for i in 0..5 {
            s.offer(1, i, vec![i as u8]);
        }
        assert_eq!(s.queued(1), 3);
        assert_eq!(
            s.counts(1),
            Counts {
                forwarded: 0,
                lost: 0,
                overflow: 2
            }
        );
        // Once one leaves, there is room again.
        assert!(s.pop_due(1, 50 * MS).is_some());
        assert!(matches!(s.offer(1, 50 * MS, vec![9]), Verdict::Queued(_)));
        assert_eq!(s.queued(0), 0, "directions are apart");
    }

    #[test]
    fn no_delay_means_due_at_once() {
        let mut s = Scheduler::new(imp(0, 0, 0.0, 1), 1);
        assert_eq!(s.offer(0, 77, vec![]), Verdict::Queued(77));
        assert_eq!(s.pop_due(0, 77), Some(vec![]));
    }
}
