//! The capacity search driver: probes chosen by [`CapacitySearch`], each a full step.
use super::Stepper;
use crate::engine::{Arrival, Load};
use crate::plan::capacity::CapacitySearch;

/// Runs the search; returns it (bracket and probes) and why it stopped.
pub fn search(
    stepper: &mut Stepper,
    mut search: CapacitySearch,
    arrival: Arrival,
    max_connections: usize,
    rest: std::time::Duration,
) -> crate::Result<(CapacitySearch, String)> {
    let slo = stepper
        .slo
        .ok_or_else(|| crate::Error::usage("capacity needs --slo"))?;
    stepper.check_sustained = true;
    while let Some(rate) = search.next_probe() {
        if !search.probes.is_empty() {
            stepper.rest(rest);
        }
        if stepper.exec.interrupted() {
            return Ok((search, "interrupted".into()));
        }
        let load = Load::Open {
            rate,
            arrival,
            max_connections,
        };
        let judge = |r: &crate::store::StepRecord| {
            (
                slo.holds(&r.summary) && !r.flags.iter().any(|f| f == "not-sustained"),
                crate::analysis::generator_bound("open", r).is_some(),
            )
        };
        let (mut met, gen_bound) = judge(stepper.step(load)?);
        // A probe that failed while the generator was the bottleneck says nothing about the
        // server: run it once more before believing it (both runs stay in the results).
        if !met && gen_bound && !stepper.interrupted {
            stepper.notes.push(format!(
                "the probe at {rate:.1} req/s failed while generator-bound: it was run again"
            ));
            stepper.rest(rest);
            met = judge(stepper.step(load)?).0;
        }
        if stepper.interrupted {
            return Ok((search, "interrupted".into()));
        }
        search.record(rate, met);
    }
    let why = match (search.lo, search.hi) {
        (None, Some(_)) => "the first probe already failed the SLO".to_string(),
        (Some(_), None) => "the SLO held up to --max".to_string(),
        _ => "bracket within the precision".to_string(),
    };
    Ok((search, why))
}
