//! The think time a plan's users wait after their answers, as a fact of the configuration:
//! the run's `--think` (closed loop), or a scenario step's own where it sets one (either loop:
//! a session's steps think in the open loop too). The plan line, the results folder's
//! Little's-law check and anything else that states the think time read it from here.
use super::{EngineConfig, Load};
use std::time::Duration;

/// The think times of a plan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Think {
    /// The shortest and longest think time any request may be followed by.
    pub lo: Duration,
    pub hi: Duration,
    /// The mean think time per request (each step's midpoint, scenarios by their weight).
    pub mean: Duration,
    /// Some scenario step sets its own think time (so the run's `--think` is not the whole
    /// story).
    pub from_scenario: bool,
}

impl Think {
    pub fn none(&self) -> bool {
        self.hi.is_zero()
    }
}

impl EngineConfig {
    /// The think times the users of this plan wait after their answers.
    pub fn think(&self) -> Think {
        let run = match self.load {
            Load::Closed { think, .. } => think,
            Load::Open { .. } => (Duration::ZERO, Duration::ZERO),
        };
        let Some(plan) = &self.scenario else {
            return Think {
                lo: run.0,
                hi: run.1,
                mean: (run.0 + run.1) / 2,
                from_scenario: false,
            };
        };
        let (mut lo, mut hi) = (Duration::MAX, Duration::ZERO);
        let (mut sum_s, mut weight) = (0.0, 0.0);
        let mut from_scenario = false;
        for sc in &plan.scenarios {
            let w = f64::from(sc.weight.max(1));
            for step in &sc.steps {
                from_scenario |= step.think.is_some();
                let t = step.think.unwrap_or(run);
                lo = lo.min(t.0);
                hi = hi.max(t.1);
                sum_s += w * (t.0 + t.1).as_secs_f64() / 2.0;
                weight += w;
            }
        }
        if weight == 0.0 {
            lo = run.0;
            hi = run.1;
        }
        Think {
            lo,
            hi,
            mean: if weight > 0.0 {
                Duration::from_secs_f64(sum_s / weight)
            } else {
                (run.0 + run.1) / 2
            },
            from_scenario,
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::engine::Arrival;
    use std::sync::Arc;

    /// A configuration for the unit tests of what states the plan: `scenario` is a TOML
    /// scenario's text.
    pub(crate) fn config(load: Load, scenario: Option<&str>) -> EngineConfig {
        let scenario = scenario.map(|text| {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("s.toml");
            std::fs::write(&path, text).unwrap();
            let (plan, _) = crate::scenario::load_as(
                &path,
                crate::scenario::Format::Toml,
                Some("http://127.0.0.1:1"),
                1024,
            )
            .unwrap();
            Arc::new(plan)
        });
        EngineConfig {
            load,
            max_requests: Some(1),
            timeout: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(1),
            scenario,
            max_sessions: 1,
            ..EngineConfig::default()
        }
    }

    const MS: fn(u64) -> Duration = Duration::from_millis;

    fn closed(lo: u64, hi: u64) -> Load {
        Load::Closed {
            users: 2,
            think: (MS(lo), MS(hi)),
        }
    }

    #[test]
    fn the_runs_think_time_without_a_scenario() {
        let t = config(closed(0, 0), None).think();
        assert!(t.none() && !t.from_scenario);
        let t = config(closed(100, 300), None).think();
        assert_eq!((t.lo, t.hi, t.mean), (MS(100), MS(300), MS(200)));
    }

    /// A scenario's steps think on their own; a step without one takes the run's --think.
    #[test]
    fn a_scenarios_steps_set_their_own() {
        let text = "[[request]]\nurl = \"/\"\nthink = \"100ms\"\n\
                    [[request]]\nurl = \"/b\"\nthink = \"50ms..150ms\"\n\
                    [[request]]\nurl = \"/c\"\n";
        let t = config(closed(0, 0), Some(text)).think();
        assert!(t.from_scenario && !t.none());
        assert_eq!((t.lo, t.hi), (MS(0), MS(150)));
        assert_eq!(t.mean.as_millis(), 66, "(100 + 100 + 0) / 3");
        // The open loop's sessions think too.
        let open = Load::Open {
            rate: 5.0,
            arrival: Arrival::Constant,
            max_connections: 1,
        };
        assert_eq!(config(open, Some(text)).think().hi, MS(150));
        // Without a think time of its own, the scenario's steps take the run's.
        let t = config(closed(20, 20), Some("[[request]]\nurl = \"/\"\n")).think();
        assert!(!t.from_scenario);
        assert_eq!((t.lo, t.hi, t.mean), (MS(20), MS(20), MS(20)));
    }
}
