//! The per-second series, one mechanism for the live view, the live page and the results
//! folder: each worker fills the second in progress (its [`SecondBucket`] and a histogram of
//! its response times) and, when the next second starts (a completion in it, or the worker's
//! scan of its timers), hands both to its [`SecondSlot`]: one lock a second, nothing more per
//! request than one histogram record. The reader ([`SecondLog`]: the engine's tick, once a
//! second, and the end of the run) adds the threads' seconds together and, once every thread
//! has moved past a second, closes it with its percentiles.
use super::histo::new_hist;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

/// Counters for one second of the run (by completion time), for timelines.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SecondBucket {
    pub responses: u64,
    /// 2xx and 3xx responses.
    pub ok: u64,
    pub errors: u64,
    pub bytes_in: u64,
    pub response_time_sum_us: u64,
    pub response_time_max_us: u64,
    /// Send lag of the responses counted here (a trend within a step is a queue growing
    /// in front of the server or a generator falling behind).
    #[serde(default)]
    pub send_lag_sum_us: u64,
    /// Response-time percentiles of the second, from its histogram over all threads (set
    /// when the second is closed, see `second.rs`).
    #[serde(default)]
    pub p50_us: u64,
    #[serde(default)]
    pub p95_us: u64,
    #[serde(default)]
    pub p99_us: u64,
}

impl SecondBucket {
    pub fn add(&mut self, o: &SecondBucket) {
        self.responses += o.responses;
        self.ok += o.ok;
        self.errors += o.errors;
        self.bytes_in += o.bytes_in;
        self.response_time_sum_us += o.response_time_sum_us;
        self.response_time_max_us = self.response_time_max_us.max(o.response_time_max_us);
        self.send_lag_sum_us += o.send_lag_sum_us;
        // Percentiles do not add: seconds are added before they are closed (see `second.rs`),
        // so this only bounds them from above when closed seconds meet.
        self.p50_us = self.p50_us.max(o.p50_us);
        self.p95_us = self.p95_us.max(o.p95_us);
        self.p99_us = self.p99_us.max(o.p99_us);
    }

    /// Sets the percentiles from the second's response times.
    pub fn percentiles_from(&mut self, h: &Histogram<u64>) {
        if !h.is_empty() {
            self.p50_us = h.value_at_quantile(0.50);
            self.p95_us = h.value_at_quantile(0.95);
            self.p99_us = h.value_at_quantile(0.99);
        }
    }
}

/// One worker's finished seconds, waiting for the reader.
#[derive(Debug)]
pub struct SecondSlot(Mutex<Handed>);

#[derive(Debug)]
struct Handed {
    /// (second since the origin, its counters, its response times).
    done: Vec<(usize, SecondBucket, Histogram<u64>)>,
    /// Emptied histograms the reader gave back, for the worker's next seconds.
    spare: Vec<Histogram<u64>>,
    /// Every second before this one has been handed over (`usize::MAX`: the worker ended).
    through: usize,
}

impl Default for SecondSlot {
    fn default() -> Self {
        // One spare up front: the worker's first hand-over does not allocate.
        SecondSlot(Mutex::new(Handed {
            done: Vec::with_capacity(4),
            spare: vec![new_hist()],
            through: 0,
        }))
    }
}

impl SecondSlot {
    fn lock(&self) -> MutexGuard<'_, Handed> {
        // Plain data: a panic while holding the lock leaves it usable.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The worker hands over second `sec` (`bucket`, and `hist`, which it gets back empty)
    /// and moves on to second `next` (`usize::MAX`: it ended). An empty second is not handed,
    /// only passed.
    pub fn hand_over(
        &self,
        sec: usize,
        bucket: SecondBucket,
        hist: &mut Histogram<u64>,
        next: usize,
    ) {
        let mut h = self.lock();
        if bucket != SecondBucket::default() {
            let fresh = h.spare.pop().unwrap_or_else(new_hist);
            h.done.push((sec, bucket, std::mem::replace(hist, fresh)));
        }
        h.through = h.through.max(next);
    }
}

/// The seconds of one engine run, added over its threads.
#[derive(Debug, Default)]
pub struct SecondLog {
    /// Closed seconds, by index since the origin, with their percentiles.
    closed: Vec<SecondBucket>,
    /// Seconds some thread may still hand over: their sums so far.
    open: BTreeMap<usize, (SecondBucket, Histogram<u64>)>,
    /// Histograms of closed seconds, for the next open ones.
    pool: Vec<Histogram<u64>>,
}

impl SecondLog {
    /// Takes what the workers handed over since the last call (their histograms go back to
    /// them emptied) and closes the seconds every worker has moved past.
    pub fn collect(&mut self, slots: &[impl AsRef<SecondSlot>]) {
        let mut through = usize::MAX;
        for slot in slots {
            let mut h = slot.as_ref().lock();
            let Handed { done, spare, .. } = &mut *h;
            for (sec, bucket, mut hist) in done.drain(..) {
                let pool = &mut self.pool;
                let (b, sum) = self.open.entry(sec).or_insert_with(|| {
                    (SecondBucket::default(), pool.pop().unwrap_or_else(new_hist))
                });
                b.add(&bucket);
                let _ = sum.add(&hist);
                hist.reset();
                spare.push(hist);
            }
            through = through.min(h.through);
        }
        while let Some(entry) = self.open.first_entry() {
            if *entry.key() >= through {
                break;
            }
            let (sec, (mut b, mut hist)) = entry.remove_entry();
            b.percentiles_from(&hist);
            if self.closed.len() <= sec {
                self.closed.resize(sec + 1, SecondBucket::default());
            }
            self.closed[sec] = b;
            hist.reset();
            self.pool.push(hist);
        }
        // Seconds nobody answered in are closed too (empty), up to where all threads are.
        if through != usize::MAX && self.closed.len() < through {
            self.closed.resize(through, SecondBucket::default());
        }
    }

    /// The closed seconds, oldest first (index: seconds since the origin).
    pub fn closed(&self) -> &[SecondBucket] {
        &self.closed
    }

    /// The closed seconds, for the run's results (the log is spent).
    pub fn take(&mut self) -> Vec<SecondBucket> {
        std::mem::take(&mut self.closed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(responses: u64, rts_us: &[u64]) -> (SecondBucket, Histogram<u64>) {
        let mut h = new_hist();
        for &v in rts_us {
            h.record(v).unwrap();
        }
        let b = SecondBucket {
            responses,
            ok: responses,
            response_time_sum_us: rts_us.iter().sum(),
            response_time_max_us: rts_us.iter().copied().max().unwrap_or(0),
            ..SecondBucket::default()
        };
        (b, h)
    }

    /// Two threads' seconds add up; a second closes only when both have moved past it, with
    /// the percentiles of the merged response times (not of either thread); an empty second
    /// between is closed empty; the histograms go back to the workers emptied.
    #[test]
    fn seconds_close_when_every_thread_is_past_them() {
        let (a, b) = (SecondSlot::default(), SecondSlot::default());
        let slots = [&a, &b].map(Wrapper);
        let mut log = SecondLog::default();
        // Thread a: second 0 with ten fast answers; it is in second 1 now.
        let (bk, mut h) = second(10, &[1_000; 10]);
        a.hand_over(0, bk, &mut h, 1);
        assert!(h.is_empty(), "the worker gets an empty histogram back");
        log.collect(&slots);
        assert!(log.closed().is_empty(), "b has not moved past second 0");
        // Thread b: second 0 with ten slow answers, then nothing until second 3.
        let (bk, mut h) = second(10, &[100_000; 10]);
        b.hand_over(0, bk, &mut h, 3);
        let (bk, mut h) = second(5, &[2_000; 5]);
        a.hand_over(1, bk, &mut h, 3);
        log.collect(&slots);
        let c = log.closed();
        assert_eq!(c.len(), 3, "seconds 0..3 are closed: {c:?}");
        assert_eq!(c[0].responses, 20);
        assert_eq!(c[0].p50_us / 1000, 1, "{:?}", c[0]);
        assert_eq!(c[0].p99_us / 1000, 100, "{:?}", c[0]);
        assert_eq!(c[1].responses, 5);
        assert_eq!(c[1].p99_us / 100, 20);
        assert_eq!(c[2], SecondBucket::default(), "nobody answered in second 2");
        // The reader gave the histograms back: the slots hold spares, nothing handed.
        for s in [&a, &b] {
            let h = s.lock();
            assert!(h.done.is_empty());
            assert!(h.spare.iter().all(|h| h.is_empty()));
        }
        // Both end: everything handed is closed.
        let (bk, mut h) = second(1, &[7_000]);
        a.hand_over(3, bk, &mut h, usize::MAX);
        let (bk, mut h) = second(1, &[9_000]);
        b.hand_over(4, bk, &mut h, usize::MAX);
        log.collect(&slots);
        let c = log.take();
        assert_eq!(c.len(), 5);
        assert_eq!((c[3].responses, c[4].responses), (1, 1));
        assert_eq!(c[4].p50_us / 1000, 9);
    }

    struct Wrapper<'a>(&'a SecondSlot);
    impl AsRef<SecondSlot> for Wrapper<'_> {
        fn as_ref(&self) -> &SecondSlot {
            self.0
        }
    }
}
