//! The capacity search: the highest rate that meets an SLO, found by growing the rate
//! geometrically until a probe fails, then bisecting until the bracket is within the precision.
//! Each probe is a full step; the search needs about log2(C/start) + log2(1/precision) probes
//! where a linear sweep at the same precision needs about 1/precision steps.

#[derive(Debug, Clone, PartialEq)]
pub struct CapacitySearch {
    /// Highest rate known to meet the SLO.
    pub lo: Option<f64>,
    /// Lowest rate known to fail it.
    pub hi: Option<f64>,
    next: f64,
    max: f64,
    precision: f64,
    growth: f64,
    pub probes: Vec<(f64, bool)>,
    /// Throughput of each run of the capacity probe (`--repeat`), once the search ended.
    pub repeats: Vec<f64>,
}

impl CapacitySearch {
    pub fn new(start: f64, max: f64, precision: f64) -> CapacitySearch {
        CapacitySearch {
            lo: None,
            hi: None,
            next: start,
            max,
            precision,
            growth: 2.0,
            probes: Vec::new(),
            repeats: Vec::new(),
        }
    }

    /// The bracket is narrow enough (or cannot narrow further).
    pub fn done(&self) -> bool {
        match (self.lo, self.hi) {
            (Some(lo), Some(hi)) => (hi - lo) <= self.precision * lo,
            // The first probe failed: nothing below `start` is searched.
            (None, Some(_)) => true,
            // Met the SLO at the maximum rate: capacity is at least max.
            (Some(lo), None) => lo >= self.max,
            (None, None) => false,
        }
    }

    /// The rate to probe next, or None when the search is over.
    pub fn next_probe(&self) -> Option<f64> {
        if self.done() {
            None
        } else {
            Some(self.next)
        }
    }

    /// Records the outcome of probing `rate`.
    pub fn record(&mut self, rate: f64, met: bool) {
        self.probes.push((rate, met));
        if met {
            self.lo = Some(self.lo.map_or(rate, |l| l.max(rate)));
        } else {
            self.hi = Some(self.hi.map_or(rate, |h| h.min(rate)));
        }
        self.next = match (self.lo, self.hi) {
            (Some(lo), None) => (lo * self.growth).min(self.max),
            (Some(lo), Some(hi)) => (lo + hi) / 2.0,
            (None, Some(hi)) => hi,
            (None, None) => self.next,
        };
    }

    /// Half the range of the repeated runs' throughput, as a share of their mean (None under
    /// two runs).
    pub fn repeat_spread(&self) -> Option<f64> {
        if self.repeats.len() < 2 {
            return None;
        }
        let max = self.repeats.iter().copied().fold(f64::MIN, f64::max);
        let min = self.repeats.iter().copied().fold(f64::MAX, f64::min);
        let mean = self.repeats.iter().sum::<f64>() / self.repeats.len() as f64;
        (mean > 0.0).then(|| (max - min) / 2.0 / mean)
    }

    /// ", repeat spread ±2% over 2 runs", or empty without repeats.
    pub fn spread_text(&self) -> String {
        self.repeat_spread().map_or(String::new(), |s| {
            format!(
                ", repeat spread ±{:.1}% over {} runs",
                s * 100.0,
                self.repeats.len()
            )
        })
    }

    /// A repeat of the capacity probe failed: the capacity moves below it and the bracket is
    /// that probe (the search does not go on bisecting: the answer is not reproducible there).
    pub fn repeat_failed(&mut self, rate: f64) {
        self.probes.push((rate, false));
        self.hi = Some(self.hi.map_or(rate, |h| h.min(rate)));
        self.lo = self
            .probes
            .iter()
            .filter(|p| p.1 && p.0 < rate)
            .map(|p| p.0)
            .reduce(f64::max);
    }

    /// Steps a linear sweep from `start` would need to reach `capacity` with steps of
    /// `precision × capacity`.
    pub fn linear_steps(start: f64, capacity: f64, precision: f64) -> usize {
        (((capacity - start).max(0.0) / (precision * capacity)).ceil() as usize) + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(capacity: f64, start: f64, precision: f64) -> CapacitySearch {
        let mut s = CapacitySearch::new(start, 1e6, precision);
        while let Some(r) = s.next_probe() {
            s.record(r, r <= capacity);
            assert!(s.probes.len() < 100);
        }
        s
    }

    #[test]
    fn finds_capacity_within_precision() {
        for cap in [37.0, 400.0, 1234.0, 9999.0] {
            let s = search(cap, 10.0, 0.05);
            let (lo, hi) = (s.lo.unwrap(), s.hi.unwrap());
            assert!(lo <= cap && cap < hi, "{cap}: [{lo}, {hi}]");
            assert!((hi - lo) / lo <= 0.05, "{cap}: [{lo}, {hi}]");
            assert!(
                s.probes.len() < CapacitySearch::linear_steps(10.0, cap, 0.05),
                "{cap}: {} probes",
                s.probes.len()
            );
        }
    }

    #[test]
    fn first_probe_failing_ends_the_search() {
        let s = search(5.0, 10.0, 0.05);
        assert_eq!(s.probes.len(), 1);
        assert!(s.lo.is_none());
    }

    #[test]
    fn meeting_the_slo_at_max_ends_the_search() {
        let mut s = CapacitySearch::new(100.0, 400.0, 0.05);
        while let Some(r) = s.next_probe() {
            s.record(r, true);
        }
        assert_eq!(s.lo, Some(400.0));
        assert_eq!(s.probes.len(), 3);
    }
}
