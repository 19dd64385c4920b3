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
