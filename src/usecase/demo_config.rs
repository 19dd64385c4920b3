//! The configuration of `overload demo`: the embedded target's size and the step length.
use super::config::Output;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq)]
pub struct DemoConfig {
    /// Target workers (each request holds one for its whole service time).
    pub workers: usize,
    /// Service time of each request, in ms (the target's /sleep?ms=).
    pub service_ms: u64,
    /// Measured length of each step.
    pub step: Duration,
    /// The results folder (`None`: runs/<UTC time>-demo) and how the run is shown.
    pub output: Output,
}

impl Default for DemoConfig {
    fn default() -> Self {
        DemoConfig {
            workers: 8,
            service_ms: 20,
            step: Duration::from_secs(3),
            output: Output::default(),
        }
    }
}

impl DemoConfig {
    pub fn validate(&self) -> crate::Result<()> {
        let (w, s) = (self.workers, self.service_ms);
        if w == 0 || w > 10_000 || s == 0 || s > 10_000 {
            return Err(crate::Error::usage(
                "demo: --workers must be 1..10000 and --service-ms 1..10000",
            ));
        }
        if self.step.is_zero() {
            return Err(crate::Error::usage("demo: --step must be above zero"));
        }
        Ok(())
    }
}

/// The sweep's shape: 40% to 160% of the capacity in steps of 10%, short warm-ups and
/// rests, stopping 2 steps past saturation (the sweep's own default).
const TENTHS: std::ops::RangeInclusive<u32> = 4..=16;
pub const WARMUP: Duration = Duration::from_secs(1);
pub const REST: Duration = Duration::from_millis(500);

/// The rates the demo steps through, req/s: 40% to 160% of the capacity in steps of 10%.
pub fn rates(capacity: f64) -> Vec<f64> {
    TENTHS
        .map(|tenth| capacity * f64::from(tenth) / 10.0)
        .collect()
}

/// How long the demo takes, from its plan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DemoTime {
    /// Steps run when the target saturates where it should: at the first step past its
    /// capacity (throughput below the sweep's 95% of the offered load).
    pub steps: usize,
    /// Their time: each a warm-up and a measured step, the rests between, and for each step
    /// past the capacity the time the queue it left at the target takes to drain once its
    /// time is up ((offered / capacity − 1) × (warm-up + step)).
    pub typical: Duration,
    /// The same when no step saturates and every step runs.
    pub longest: Duration,
}

pub fn expected_time(cfg: &DemoConfig) -> DemoTime {
    let capacity = cfg.workers as f64 * 1000.0 / cfg.service_ms as f64;
    let rates = rates(capacity);
    let past = super::SweepConfig::default().past_saturation;
    // The first step the target cannot answer at the sweep's saturation share: at its
    // capacity it still answers ~399 of 400 req/s, so the step after it saturates.
    let knee = rates
        .iter()
        .position(|&r| capacity < crate::analysis::THROUGHPUT_SHARE * r)
        .unwrap_or(rates.len() - 1);
    let steps = (knee + 1 + past).min(rates.len());
    let per_step = (WARMUP + cfg.step).as_secs_f64();
    let time = |rates: &[f64]| {
        let drain: f64 = rates
            .iter()
            .map(|r| (r / capacity - 1.0).max(0.0) * per_step)
            .sum();
        let n = rates.len() as f64;
        Duration::from_secs_f64(n * per_step + (n - 1.0) * REST.as_secs_f64() + drain)
    };
    DemoTime {
        steps,
        typical: time(&rates[..steps]),
        longest: time(&rates),
    }
}

/// A time as the demo announces it: rounded up to 5 s ("about 45 s"), the start and the
/// report on top of the plan's time.
pub fn about(d: Duration) -> String {
    let s = d.as_secs_f64();
    let rounded = ((s / 5.0).ceil() * 5.0).max(5.0);
    format!("about {rounded:.0} s")
}

/// The line `demo --help` ends with: what the defaults take.
pub fn help_note() -> String {
    let cfg = DemoConfig::default();
    let t = expected_time(&cfg);
    format!(
        "With the defaults it takes {} ({} steps of {} warm-up + {}, {} apart; {} if no step \
         saturated); --step changes it.",
        about(t.typical),
        t.steps,
        crate::units::fmt_duration(WARMUP),
        crate::units::fmt_duration(cfg.step),
        crate::units::fmt_duration(REST),
        about(t.longest),
    )
}
