//! One metric's mean and maximum over a window (`Stat`), and its accumulator: shared by the
//! step summary and the sources that summarize their own samples (Apache, MariaDB).
use serde::{Deserialize, Serialize};

/// Mean and maximum of one metric over a window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Stat {
    pub mean: f64,
    pub max: f64,
}

#[derive(Default, Clone, Copy)]
pub(super) struct Acc {
    pub(super) n: u64,
    sum: f64,
    pub(super) max: f64,
}

impl Acc {
    pub(super) fn add(&mut self, x: f64) {
        if !x.is_finite() {
            return;
        }
        self.max = if self.n == 0 { x } else { self.max.max(x) };
        self.n += 1;
        self.sum += x;
    }
    pub(super) fn stat(&self) -> Stat {
        if self.n == 0 {
            return Stat::default();
        }
        Stat {
            mean: self.sum / self.n as f64,
            max: self.max,
        }
    }
    pub(super) fn opt(&self) -> Option<Stat> {
        (self.n > 0).then(|| self.stat())
    }
}
