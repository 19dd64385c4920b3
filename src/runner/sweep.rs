//! The sweep: S1's stepped httperf script and S2/S5's concurrency sweeps as one loop, with
//! stop rules so it does not grind on long past the point of interest.
use super::Stepper;
use crate::engine::Load;

pub struct SweepPlan {
    pub loads: Vec<Load>,
    /// Steps to run after the first saturated one.
    pub past_saturation: usize,
    /// Stop when the share of failed requests in a step exceeds this.
    pub max_errors: Option<f64>,
    /// Stop when a step's response-time p99 exceeds this (ms).
    pub max_p99_ms: Option<f64>,
    pub rest: std::time::Duration,
}

/// Runs the plan; returns why it stopped.
pub fn sweep(stepper: &mut Stepper, plan: &SweepPlan) -> crate::Result<String> {
    let mut saturated_at: Option<usize> = None;
    for (i, load) in plan.loads.iter().enumerate() {
        if i > 0 {
            stepper.rest(plan.rest);
        }
        if stepper.exec.interrupted() {
            return Ok("interrupted".into());
        }
        stepper.step(*load)?;
        if stepper.interrupted {
            return Ok(stepper.interruption(format!("interrupted during step {}", i + 1)));
        }
        let rec = stepper.steps.last().expect("a step was just run");
        if saturated_at.is_none() && rec.flags.iter().any(|f| f == "saturated") {
            saturated_at = Some(i);
        }
        let failed =
            crate::analysis::Slo::measure(crate::analysis::slo::Metric::Errors, &rec.summary);
        if let Some(max) = plan.max_errors {
            if failed > max {
                return Ok(format!(
                    "step {} failed {:.1}% of requests (--max-errors {:.1}%)",
                    i + 1,
                    failed * 100.0,
                    max * 100.0
                ));
            }
        }
        if let Some(max) = plan.max_p99_ms {
            if rec.summary.response_time_ms.p99 > max {
                return Ok(format!(
                    "step {} p99 {:.0} ms is above --max-p99 {:.0} ms",
                    i + 1,
                    rec.summary.response_time_ms.p99,
                    max
                ));
            }
        }
        if let Some(s) = saturated_at {
            if i >= s + plan.past_saturation {
                return Ok(format!("{} step(s) past saturation", plan.past_saturation));
            }
        }
    }
    Ok("all planned steps done".into())
}
