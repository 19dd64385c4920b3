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
    while let Some(rate) = search.next_probe() {
        if !search.probes.is_empty() {
            stepper.rest(rest);
        }
        if crate::signals::interrupted() {
            return Ok((search, "interrupted".into()));
        }
        let met = slo.holds(
            &stepper
                .step(Load::Open {
                    rate,
                    arrival,
                    max_connections,
                })?
                .summary,
        );
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
