//! The configuration of `overload demo`: the embedded target's size and the step length.
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq)]
pub struct DemoConfig {
    /// Target workers (each request holds one for its whole service time).
    pub workers: usize,
    /// Service time of each request, in ms (the target's /sleep?ms=).
    pub service_ms: u64,
    /// Measured length of each step.
    pub step: Duration,
    /// Results folder; `None`: runs/<UTC time>-demo.
    pub out: Option<PathBuf>,
    pub quiet: bool,
}

impl Default for DemoConfig {
    fn default() -> Self {
        DemoConfig {
            workers: 8,
            service_ms: 20,
            step: Duration::from_secs(3),
            out: None,
            quiet: false,
        }
    }
}
