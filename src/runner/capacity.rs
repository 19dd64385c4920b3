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
    repeat: usize,
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
    // The capacity probe once more (`repeat` runs in all): its answer comes with a spread, and a
    // repeat that fails means the capacity was luck.
    if let Some(lo) = search.lo {
        let first = stepper.steps.iter().rev().find(|s| s.offered == lo);
        search.repeats = first.map(|s| s.summary.throughput).into_iter().collect();
        for _ in 1..repeat {
            stepper.rest(rest);
            if stepper.stop_asked() {
                return Ok((search, "interrupted".into()));
            }
            let load = Load::Open {
                rate: lo,
                arrival,
                max_connections,
            };
            let r = stepper.step(load)?;
            let met = slo.holds(&r.summary) && !r.flags.iter().any(|f| f == "not-sustained");
            search.repeats.push(r.summary.throughput);
            if stepper.interrupted {
                return Ok((search, "interrupted".into()));
            }
            if !met {
                stepper.notes.push(format!(
                    "the capacity probe at {lo:.1} req/s failed when repeated: the capacity is below it"
                ));
                search.repeats.clear();
                search.repeat_failed(lo);
                break;
            }
        }
    }
    let why = match (search.lo, search.hi) {
        (None, Some(_)) => "the first probe already failed the SLO".to_string(),
        (Some(_), None) => "the SLO held up to --max".to_string(),
        _ => "bracket within the precision".to_string(),
    };
    Ok((search, why))
}
