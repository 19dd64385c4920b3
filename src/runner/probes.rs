//! The capacity search driver: probes chosen by [`CapacitySearch`], each a full step; then both
//! ends of the final bracket are run `repeat` times in all, so the answer is reproducible.
use super::Stepper;
use crate::analysis::Slo;
use crate::engine::{Arrival, Load};
use crate::plan::bracket::CapacitySearch;
use crate::store::StepRecord;

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
    let load = |rate| Load::Open {
        rate,
        arrival,
        max_connections,
    };
    while let Some(rate) = search.next_probe() {
        if !search.probes.is_empty() {
            stepper.rest(rest);
        }
        if stepper.exec.interrupted() {
            return Ok((search, "interrupted".into()));
        }
        let r = stepper.step(load(rate))?;
        let (mut met, gen_bound) = (
            meets(slo, r),
            crate::analysis::generator_bound("open", r).is_some(),
        );
        // A probe that failed while the generator was the bottleneck says nothing about the
        // server: run it once more before believing it (both runs stay in the results).
        if !met && gen_bound && !stepper.interrupted {
            stepper.notes.push(format!(
                "the probe at {rate:.1} req/s failed while generator-bound: it was run again"
            ));
            stepper.rest(rest);
            met = meets(slo, stepper.step(load(rate))?);
        }
        if stepper.interrupted {
            return Ok((search, stepper.interruption("interrupted".into())));
        }
        search.record(rate, met);
    }
    let mut ends = Ends {
        stepper,
        slo,
        rest,
        repeat,
        load: &load,
    };
    if !ends.confirm_lo(&mut search)? || !ends.confirm_hi(&search)? {
        return Ok((search, "interrupted".into()));
    }
    let why = match (search.lo, search.hi) {
        (None, Some(_)) => "the first probe already failed the SLO".to_string(),
        (Some(_), None) => "the SLO held up to --max".to_string(),
        _ => "bracket within the precision".to_string(),
    };
    Ok((search, why))
}

/// A probe meets the SLO only if it held and the server kept up over the whole step.
fn meets(slo: &Slo, r: &StepRecord) -> bool {
    slo.holds(&r.summary) && !r.flags.iter().any(|f| f == "not-sustained")
}

/// Repeats the ends of the final bracket: the capacity (last passing rate) and the first
/// failing rate each run `repeat` times in all, the search's own run included.
struct Ends<'s, 'a, L: Fn(f64) -> Load> {
    stepper: &'s mut Stepper<'a>,
    slo: &'a Slo,
    rest: std::time::Duration,
    repeat: usize,
    load: &'s L,
}

impl<L: Fn(f64) -> Load> Ends<'_, '_, L> {
    /// The runs stored so far at `rate` (the search's, a generator-bound re-run, repeats).
    fn runs_at(&self, rate: f64) -> Vec<&StepRecord> {
        let s = &self.stepper.steps;
        s.iter().filter(|s| s.offered == rate).collect()
    }

    /// The runs at `rate` that met the SLO.
    fn met_at(&self, rate: f64) -> Vec<&StepRecord> {
        let mut runs = self.runs_at(rate);
        runs.retain(|r| meets(self.slo, r));
        runs
    }

    /// One more run at `rate`, after a rest; None when a stop was asked for.
    fn run_again(&mut self, rate: f64) -> crate::Result<Option<bool>> {
        self.stepper.rest(self.rest);
        if self.stepper.stop_asked() {
            return Ok(None);
        }
        let met = meets(self.slo, self.stepper.step((self.load)(rate))?);
        Ok((!self.stepper.interrupted).then_some(met))
    }

    /// Runs the capacity probe until it has `repeat` runs; every run must meet the SLO. One
    /// that fails moves the capacity down to the next lower rate that met it, which is then
    /// repeated in turn (the search does not bisect again: the answer was not reproducible
    /// there, and the bracket says so). Fills `search.repeats` with the kept runs' throughput.
    /// False when interrupted.
    fn confirm_lo(&mut self, search: &mut CapacitySearch) -> crate::Result<bool> {
        while let Some(lo) = search.lo {
            let mut all_met = true;
            // A generator-bound failure that was run again does not count as a run of it.
            while self.met_at(lo).len() < self.repeat {
                match self.run_again(lo)? {
                    None => return Ok(false),
                    Some(true) => {}
                    Some(false) => {
                        all_met = false;
                        break;
                    }
                }
            }
            if all_met {
                search.repeats = self
                    .met_at(lo)
                    .iter()
                    .map(|s| s.summary.throughput)
                    .collect();
                return Ok(true);
            }
            self.stepper.notes.push(format!(
                "the capacity probe at {lo:.1} req/s failed when repeated: the capacity is below it"
            ));
            search.repeats.clear();
            search.repeat_failed(lo);
        }
        Ok(true)
    }

    /// Runs the first failing rate until it has `repeat` runs. A repeat that meets the SLO does
    /// not raise the capacity: a rate that fails one run in K is not one the server sustains,
    /// so the capacity stays the highest rate that met it every time, and a note says the
    /// boundary is noisy. False when interrupted.
    /// Without a passing end (the first probe failed) there is no bracket to confirm: the
    /// answer is "below the start" either way.
    fn confirm_hi(&mut self, search: &CapacitySearch) -> crate::Result<bool> {
        let (Some(_), Some(hi)) = (search.lo, search.hi) else {
            return Ok(true);
        };
        while self.runs_at(hi).len() < self.repeat {
            if self.run_again(hi)?.is_none() {
                return Ok(false);
            }
        }
        let runs = self.runs_at(hi);
        let met = runs.iter().filter(|r| meets(self.slo, r)).count();
        if met > 0 {
            self.stepper.notes.push(format!(
                "the first failing probe, {hi:.1} req/s, met the SLO in {met} of {} runs: the \
                 boundary is noisy; the capacity is the highest rate that met it in every run",
                runs.len()
            ));
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fake::{self, Scripted, Shape};
    use super::*;
    use std::time::Duration;

    /// The search from 100 req/s (max 1600, 5% precision) with `repeat` runs at each end, on
    /// `exec`; returns (search, reason, notes).
    fn run<F: FnMut(usize, f64) -> Shape>(
        exec: &mut Scripted<F>,
        repeat: usize,
    ) -> (CapacitySearch, String, Vec<String>) {
        let slo = crate::analysis::slo::parse("p99<100ms").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let load = Load::Open {
            rate: 100.0,
            arrival: Arrival::Constant,
            max_connections: 100,
        };
        let base = fake::base(load);
        let mut writer = fake::writer(dir.path(), "open");
        let z = Duration::ZERO;
        let mut silent = super::super::Silent;
        let mut stepper = Stepper::new(
            &base,
            "open",
            Some(&slo),
            Some(&mut writer),
            &mut silent,
            exec,
        );
        let s = CapacitySearch::new(100.0, 1600.0, 0.05);
        let (s, why) = search(&mut stepper, s, Arrival::Constant, 100, z, repeat).unwrap();
        (s, why, stepper.notes)
    }

    fn runs(exec: &Scripted<impl FnMut(usize, f64) -> Shape>, rate: Option<f64>) -> usize {
        exec.offered.iter().filter(|&&r| Some(r) == rate).count()
    }

    #[test]
    fn both_ends_of_the_bracket_run_repeat_times() {
        for repeat in [1, 2, 3] {
            let mut exec = Scripted::new(fake::server(1000.0));
            let (s, why, notes) = run(&mut exec, repeat);
            // 100, 200, 400, 800 pass; 1600, 1200 fail; 1000 passes; 1100 fails (p99 105 ms);
            // 1050 passes (p99 55 ms, throughput 95.2% of the offer).
            assert_eq!((s.lo, s.hi), (Some(1050.0), Some(1100.0)));
            assert_eq!(runs(&exec, s.lo), repeat, "capacity probe");
            assert_eq!(runs(&exec, s.hi), repeat, "first failing probe");
            assert_eq!(s.repeats.len(), repeat);
            assert_eq!(why, "bracket within the precision");
            assert!(
                !notes
                    .iter()
                    .any(|n| n.contains("repeated") || n.contains("noisy")),
                "{notes:?}"
            );
        }
    }

    /// The first failing rate meets the SLO on its second run: the capacity stays the rate that
    /// met it every time, and the note says the boundary is noisy.
    #[test]
    fn a_failing_end_that_passes_when_repeated_keeps_the_capacity() {
        let mut at_1100 = 0;
        let mut server = fake::server(1000.0);
        let mut exec = Scripted::new(move |n, offered| {
            if offered == 1100.0 {
                at_1100 += 1;
                if at_1100 == 2 {
                    return Shape::ok(1100.0, 5.0);
                }
            }
            server(n, offered)
        });
        let (s, _, notes) = run(&mut exec, 2);
        assert_eq!((s.lo, s.hi), (Some(1050.0), Some(1100.0)));
        assert_eq!(runs(&exec, Some(1100.0)), 2);
        assert!(
            notes
                .iter()
                .any(|n| n.contains("met the SLO in 1 of 2 runs")),
            "{notes:?}"
        );
    }

    /// The capacity probe fails when repeated: the capacity moves to the next lower rate that
    /// met the SLO, which is repeated in turn; the rate that flipped is the new failing end and
    /// already has its runs.
    #[test]
    fn a_passing_end_that_fails_when_repeated_moves_the_capacity_down() {
        let mut at_1050 = 0;
        let mut server = fake::server(1000.0);
        let mut exec = Scripted::new(move |n, offered| {
            if offered == 1050.0 {
                at_1050 += 1;
                if at_1050 == 2 {
                    return Shape::ok(1050.0, 500.0);
                }
            }
            server(n, offered)
        });
        let (s, _, notes) = run(&mut exec, 2);
        assert_eq!((s.lo, s.hi), (Some(1000.0), Some(1050.0)));
        assert_eq!(runs(&exec, Some(1000.0)), 2, "the new capacity is repeated");
        assert_eq!(
            runs(&exec, Some(1050.0)),
            2,
            "no third run of the flipped rate"
        );
        assert_eq!(
            runs(&exec, Some(1100.0)),
            1,
            "the old failing end is no end now"
        );
        assert_eq!(s.repeats.len(), 2);
        assert!(notes
            .iter()
            .any(|n| n.contains("1050.0 req/s failed when repeated")));
        assert!(
            notes
                .iter()
                .any(|n| n.contains("met the SLO in 1 of 2 runs")),
            "the flipped rate is a noisy failing end: {notes:?}"
        );
    }

    /// A generator-bound failure that was run again and passed is not a run of the capacity.
    #[test]
    fn a_generator_bound_failure_is_not_a_repeat() {
        let mut at_1050 = 0;
        let mut server = fake::server(1000.0);
        let mut exec = Scripted::new(move |n, offered| {
            if offered == 1050.0 {
                at_1050 += 1;
                if at_1050 == 1 {
                    return Shape {
                        generator_cpu_pct: 99.0,
                        ..Shape::ok(900.0, 500.0)
                    };
                }
            }
            server(n, offered)
        });
        let (s, _, _) = run(&mut exec, 2);
        assert_eq!(s.lo, Some(1050.0));
        assert_eq!(runs(&exec, Some(1050.0)), 3, "failed, re-run, repeated");
        // The fake server answers 1000/s above its capacity.
        assert_eq!(s.repeats, [1000.0, 1000.0]);
    }

    #[test]
    fn interrupted_while_repeating_stops_there() {
        let mut exec = Scripted::new(fake::server(1000.0));
        // The search itself takes 9 steps from 100 req/s; the first repeat is the 10th.
        exec.interrupt_during = Some(9);
        let (_, why, _) = run(&mut exec, 3);
        assert_eq!(why, "interrupted");
        assert_eq!(exec.offered.len(), 10);
    }
}
