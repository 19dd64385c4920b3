//! Statistics per request name: which URL (or scenario request) was slow or failed. The
//! engine's names table (`EngineConfig::names`) is fixed before the run, so each worker
//! thread keeps one [`NameStats`] per name and the hot loop only indexes it.
//!
//! Memory: a name's histogram is allocated on its first response (a thread that never sees
//! a name pays for its counters only), with 2 significant digits instead of the run's 3:
//! about 26 KB instead of 190 KB, 1% resolution on a name's percentiles. Every name's
//! histogram has the same bounds and precision, so adding threads, steps and segments stays
//! exact.
use super::histo::LatencyStats;
use super::ErrorKind;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One name's counters and response-time histogram, in one thread (or merged).
#[derive(Debug, Clone)]
pub struct NameStats {
    pub name: String,
    pub responses: u64,
    /// 2xx and 3xx responses.
    pub ok: u64,
    pub errors: [u64; ErrorKind::COUNT],
    /// Response time (µs), from the intended time as the run's own histogram; None until
    /// the first response (see the module's note on memory).
    pub response_time: Option<Histogram<u64>>,
    /// A scenario page's load time (µs): its response and its burst's resources, from the
    /// page's intended time to the burst's last answer; None for names without a burst.
    pub page_load: Option<Histogram<u64>>,
}

/// Significant digits of a name's histogram (the run's own keeps 3).
pub const NAME_SIGFIG: u8 = 2;

/// An empty histogram of a name's precision.
pub fn new_name_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, super::histo::MAX_US, NAME_SIGFIG)
        .expect("static histogram bounds are valid")
}

impl NameStats {
    pub fn new(name: &str) -> NameStats {
        NameStats {
            name: name.to_string(),
            responses: 0,
            ok: 0,
            errors: [0; ErrorKind::COUNT],
            response_time: None,
            page_load: None,
        }
    }

    /// Records a response time (µs), allocating the histogram on the first.
    #[inline]
    pub fn record(&mut self, us: u64) {
        let _ = self
            .response_time
            .get_or_insert_with(new_name_hist)
            .record(us.max(1));
    }

    pub fn error_count(&self) -> u64 {
        self.errors.iter().sum()
    }

    pub fn merge(&mut self, o: &NameStats) {
        self.responses += o.responses;
        self.ok += o.ok;
        for (a, b) in self.errors.iter_mut().zip(o.errors.iter()) {
            *a += b;
        }
        for (mine, theirs) in [
            (&mut self.response_time, &o.response_time),
            (&mut self.page_load, &o.page_load),
        ] {
            if let Some(h) = theirs {
                match mine {
                    Some(m) => {
                        let _ = m.add(h);
                    }
                    None => *mine = Some(h.clone()),
                }
            }
        }
    }
}

/// One name's line of the summary (`names` in `--json` and steps.jsonl).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NameSummary {
    pub name: String,
    /// Requests of this name that completed: answered (any status) or failed.
    pub requests: u64,
    pub responses: u64,
    /// Successful responses (2xx/3xx, or the statuses of `--ok-status`).
    pub ok: u64,
    /// Responses per second over the run's measured window.
    pub throughput: f64,
    /// Failed requests by kind (as the summary's `errors`).
    pub errors: BTreeMap<String, u64>,
    pub error_count: u64,
    pub response_time_ms: LatencyStats,
    /// The sum of this name's response times, seconds: what the table is sorted by.
    pub time_spent_s: f64,
    /// A scenario page with a burst: its load time (the page's response and its burst's
    /// resources); absent for other names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_load_ms: Option<LatencyStats>,
}

impl NameSummary {
    /// From a name's counters (errors by kind name) and response-time histogram (µs), over a
    /// window of `secs`.
    pub fn from_parts(
        name: &str,
        responses: u64,
        ok: u64,
        errors: BTreeMap<String, u64>,
        hist: &Histogram<u64>,
        secs: f64,
    ) -> NameSummary {
        let error_count = errors.values().sum();
        let response_time_ms = LatencyStats::from_hist(hist);
        NameSummary {
            name: name.to_string(),
            requests: responses + error_count,
            responses,
            ok,
            throughput: if secs > 0.0 {
                responses as f64 / secs
            } else {
                0.0
            },
            errors,
            error_count,
            time_spent_s: response_time_ms.mean * response_time_ms.count as f64 / 1e3,
            response_time_ms,
            page_load_ms: None,
        }
    }

    pub fn of(s: &NameStats, secs: f64) -> NameSummary {
        let errors = ErrorKind::ALL
            .iter()
            .filter(|k| s.errors[k.index()] > 0)
            .map(|k| (k.name().to_string(), s.errors[k.index()]))
            .collect();
        let mut n = match &s.response_time {
            Some(h) => NameSummary::from_parts(&s.name, s.responses, s.ok, errors, h, secs),
            None => {
                NameSummary::from_parts(&s.name, s.responses, s.ok, errors, &new_name_hist(), secs)
            }
        };
        n.page_load_ms = s.page_load.as_ref().map(LatencyStats::from_hist);
        n
    }

    /// Requests of this name that failed by the summary's rule, failed checks apart (they
    /// have their own column): transport errors and answers outside `--ok-status` (2xx/3xx
    /// by default), so a name answered only 404 failed every request.
    pub fn failed(&self) -> u64 {
        let transport = self.error_count - self.checks_failed().unwrap_or(0);
        transport + self.responses.saturating_sub(self.ok)
    }

    /// Failed checks (`check-failed`, counted by scenarios), when the kind exists at all.
    pub fn checks_failed(&self) -> Option<u64> {
        self.errors.get("check-failed").copied()
    }
}

/// The names of a summary: those that completed any request, most time spent first (ties by
/// name, so the order is stable).
pub fn sort_names(names: &mut [NameSummary]) {
    names.sort_by(|a, b| {
        b.time_spent_s
            .total_cmp(&a.time_spent_s)
            .then_with(|| a.name.cmp(&b.name))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_and_summarises_one_name() {
        let mut a = NameStats::new("/a");
        let mut b = NameStats::new("/a");
        assert!(a.response_time.is_none(), "allocated on the first response");
        for v in [10_000u64, 20_000, 30_000] {
            a.record(v);
        }
        a.responses = 3;
        a.ok = 2;
        b.record(40_000);
        b.responses = 1;
        b.ok = 1;
        b.errors[ErrorKind::Timeout.index()] = 2;
        a.merge(&b);
        let s = NameSummary::of(&a, 2.0);
        assert_eq!((s.requests, s.responses, s.ok, s.error_count), (6, 4, 3, 2));
        assert_eq!(s.errors.get("timeout"), Some(&2));
        assert_eq!(s.throughput, 2.0);
        assert_eq!(s.response_time_ms.count, 4);
        // 10+20+30+40 ms spent in all, to the histogram's precision.
        assert!((s.time_spent_s - 0.1).abs() < 1e-3, "{}", s.time_spent_s);
        assert_eq!(s.checks_failed(), None);
    }

    #[test]
    fn names_sort_by_time_spent() {
        let n = |name: &str, t: f64| NameSummary {
            name: name.into(),
            time_spent_s: t,
            ..Default::default()
        };
        let mut v = vec![n("/fast", 1.0), n("/b", 5.0), n("/a", 5.0), n("/slow", 9.0)];
        sort_names(&mut v);
        let order: Vec<_> = v.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(order, ["/slow", "/a", "/b", "/fast"]);
    }
}
