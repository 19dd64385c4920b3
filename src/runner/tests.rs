//! The sweep's stop rules on the scripted executor: every rule, on numbers chosen so that
//! exactly that rule ends the sweep, with the steps it ran and the reason it recorded.
use super::fake::{self, Scripted, Shape};
use super::sweep::{sweep, SweepPlan};
use super::Stepper;
use crate::analysis::Slo;
use crate::engine::{Arrival, Load};
use std::time::Duration;

fn rates(v: &[f64]) -> Vec<Load> {
    v.iter()
        .map(|&rate| Load::Open {
            rate,
            arrival: Arrival::Constant,
            max_connections: 100,
        })
        .collect()
}

fn plan(loads: Vec<Load>) -> SweepPlan {
    SweepPlan {
        loads,
        past_saturation: 2,
        max_errors: Some(0.2),
        max_p99_ms: None,
        rest: Duration::from_secs(5),
    }
}

/// Runs `plan` on `exec`; returns (reason, complete, run.json's stop_reason).
fn run<F: FnMut(usize, f64) -> Shape>(
    exec: &mut Scripted<F>,
    plan: &SweepPlan,
    mode: &'static str,
    slo: Option<&Slo>,
) -> (String, bool, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let base = fake::base(plan.loads[0]);
    let mut writer = fake::writer(dir.path(), mode);
    let mut silent = super::Silent;
    let mut stepper = Stepper::new(&base, mode, slo, Some(&mut writer), &mut silent, exec);
    let result = sweep(&mut stepper, plan);
    let done = stepper.finish(&result, String::clone).unwrap();
    assert_eq!(done.reason, result.unwrap());
    let steps = std::fs::read_to_string(dir.path().join("steps.jsonl")).unwrap();
    assert_eq!(
        steps.lines().count(),
        done.steps.len(),
        "every step is stored"
    );
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("run.json")).unwrap())
            .unwrap();
    assert_eq!(info["complete"], done.complete);
    (done.reason, done.complete, info["stop_reason"].clone())
}

const LEVELS: [f64; 10] = [
    500.0, 750.0, 1000.0, 1250.0, 1500.0, 1750.0, 2000.0, 2250.0, 2500.0, 2750.0,
];

#[test]
fn stops_past_saturation() {
    let mut exec = Scripted::new(fake::server(1000.0));
    let (reason, complete, stored) = run(&mut exec, &plan(rates(&LEVELS)), "open", None);
    // Saturated at 1250 (throughput 1000 < 95% of it); two more steps, then stop.
    assert_eq!(reason, "2 step(s) past saturation");
    assert_eq!(exec.offered, [500.0, 750.0, 1000.0, 1250.0, 1500.0, 1750.0]);
    assert_eq!(stored, reason.as_str());
    assert!(complete);
    assert_eq!(
        exec.rests,
        vec![Duration::from_secs(5); 5],
        "a rest between steps only"
    );
}

#[test]
fn stops_when_a_step_fails_too_many_requests() {
    let mut p = plan(rates(&LEVELS));
    p.past_saturation = 100;
    p.max_errors = Some(0.1);
    let mut exec = Scripted::new(fake::server(1000.0));
    let (reason, complete, _) = run(&mut exec, &p, "open", None);
    // 1750 is 1.75× capacity: (1.75 - 1.5) / 1.75 = 14.3% failed, above 10%.
    assert_eq!(exec.offered.last(), Some(&1750.0));
    assert_eq!(
        reason,
        "step 6 failed 14.3% of requests (--max-errors 10.0%)"
    );
    assert!(complete, "a stop rule is a normal end");
}

#[test]
fn stops_when_p99_is_above_max_p99() {
    let mut p = plan(rates(&LEVELS));
    p.past_saturation = 100;
    p.max_p99_ms = Some(100.0);
    let mut exec = Scripted::new(fake::server(1000.0));
    let (reason, _, _) = run(&mut exec, &p, "open", None);
    assert_eq!(exec.offered, [500.0, 750.0, 1000.0, 1250.0]);
    assert_eq!(reason, "step 4 p99 255 ms is above --max-p99 100 ms");
}

#[test]
fn runs_every_step_when_no_rule_bites() {
    let mut exec = Scripted::new(fake::server(1e9));
    let (reason, complete, _) = run(&mut exec, &plan(rates(&LEVELS)), "open", None);
    assert_eq!(exec.offered, LEVELS);
    assert_eq!(reason, "all planned steps done");
    assert!(complete);
}

#[test]
fn sigint_during_a_step_ends_the_sweep_incomplete() {
    let mut exec = Scripted::new(fake::server(1e9));
    exec.interrupt_during = Some(1);
    let (reason, complete, stored) = run(&mut exec, &plan(rates(&LEVELS)), "open", None);
    assert_eq!(
        exec.offered.len(),
        2,
        "the interrupted step is kept, no step after it"
    );
    assert_eq!(reason, "interrupted during step 2");
    assert_eq!(stored, reason.as_str());
    assert!(!complete);
}

#[test]
fn sigint_during_a_rest_ends_the_sweep_before_the_next_step() {
    let mut exec = Scripted::new(fake::server(1e9));
    exec.interrupt_in_rest = Some(2);
    let (reason, complete, _) = run(&mut exec, &plan(rates(&LEVELS)), "open", None);
    assert_eq!(exec.offered.len(), 3);
    assert_eq!(reason, "interrupted");
    assert!(!complete);
}

#[test]
fn an_engine_error_is_recorded_and_returned() {
    let dir = tempfile::tempdir().unwrap();
    let p = plan(rates(&LEVELS));
    let mut exec = Scripted::new(fake::server(1e9));
    exec.fail_at = Some(2);
    let base = fake::base(p.loads[0]);
    let mut writer = fake::writer(dir.path(), "open");
    let mut silent = super::Silent;
    let mut stepper = Stepper::new(
        &base,
        "open",
        None,
        Some(&mut writer),
        &mut silent,
        &mut exec,
    );
    let result = sweep(&mut stepper, &p);
    let done = stepper.finish(&result, String::clone).unwrap();
    assert!(result.is_err());
    assert_eq!(done.steps.len(), 2, "the steps before the failure are kept");
    assert!(!done.complete);
    assert_eq!(done.reason, "failed: scripted failure at step 2");
}

#[test]
fn closed_loop_saturates_when_throughput_stops_rising() {
    // Each user does 100 responses/s until 800/s is reached.
    let users: Vec<Load> = [1usize, 2, 4, 8, 16, 32, 64, 128]
        .iter()
        .map(|&users| Load::Closed {
            users,
            think: (Duration::ZERO, Duration::ZERO),
        })
        .collect();
    let mut exec = Scripted::new(|_, u: f64| {
        let t = (u * 100.0).min(800.0);
        Shape::ok(t, u * 1000.0 / t)
    });
    let (reason, _, _) = run(&mut exec, &plan(users), "closed", None);
    // 16 users gain nothing over 8 while response time doubles: saturated; 32, 64 follow.
    assert_eq!(exec.offered, [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0]);
    assert_eq!(reason, "2 step(s) past saturation");
}

#[test]
fn slo_failures_mark_the_step_without_stopping_the_sweep() {
    let slo = crate::analysis::slo::parse("p99<100ms").unwrap();
    let mut p = plan(rates(&LEVELS[..5]));
    p.past_saturation = 100;
    let mut exec = Scripted::new(fake::server(1000.0));
    let dir = tempfile::tempdir().unwrap();
    let base = fake::base(p.loads[0]);
    let mut writer = fake::writer(dir.path(), "open");
    let mut silent = super::Silent;
    let mut stepper = Stepper::new(
        &base,
        "open",
        Some(&slo),
        Some(&mut writer),
        &mut silent,
        &mut exec,
    );
    let result = sweep(&mut stepper, &p);
    let done = stepper.finish(&result, String::clone).unwrap();
    let ok: Vec<Option<bool>> = done.steps.iter().map(|s| s.slo_ok).collect();
    assert_eq!(
        ok,
        [Some(true), Some(true), Some(true), Some(false), Some(false)]
    );
    assert!(done.steps[3].flags.iter().any(|f| f == "slo-failed"));
}

/// `--start-at`: the rests end on the grid counted from the common start, whatever the step
/// took, so generators sharing a plan start each step together; a step that starts past its
/// slot says so.
#[test]
fn steps_start_on_the_start_at_grid() {
    let dir = tempfile::tempdir().unwrap();
    let p = plan(rates(&[100.0, 200.0, 300.0]));
    let base = fake::base(p.loads[0]);
    let mut writer = fake::writer(dir.path(), "open");
    let mut exec = Scripted::new(fake::server(1e9));
    let grid = Duration::from_secs(10);
    let start = crate::clock::unix_ms() + 60_000;
    let mut silent = super::Silent;
    let mut stepper = Stepper::new(
        &base,
        "open",
        None,
        Some(&mut writer),
        &mut silent,
        &mut exec,
    );
    stepper.clock = super::step::RunClock::at(start);
    stepper.grid = Some(grid);
    sweep(&mut stepper, &p).unwrap();
    let notes = std::mem::take(&mut stepper.notes);
    drop(stepper);
    // Scripted steps take no time: step k waits until start + k × 10 s, 70 s then 80 s away
    // (the 5 s rest of the plan is replaced by the grid).
    assert_eq!(exec.rests.len(), 2);
    for (k, r) in exec.rests.iter().enumerate() {
        let want = 60.0 + 10.0 * (k + 1) as f64;
        assert!((r.as_secs_f64() - want).abs() < 1.0, "rest {k}: {r:?}");
    }
    assert!(notes.is_empty(), "{notes:?}");

    // A start 25 s ago: step 2's slot (10 s) and step 3's (20 s) are past; no wait, and a
    // note for each.
    let mut writer = fake::writer(&dir.path().join("late"), "open");
    let mut exec = Scripted::new(fake::server(1e9));
    let mut silent = super::Silent;
    let mut stepper = Stepper::new(
        &base,
        "open",
        None,
        Some(&mut writer),
        &mut silent,
        &mut exec,
    );
    stepper.clock = super::step::RunClock::at(crate::clock::unix_ms() - 25_000);
    stepper.grid = Some(grid);
    sweep(&mut stepper, &p).unwrap();
    let notes = std::mem::take(&mut stepper.notes);
    drop(stepper);
    assert_eq!(exec.rests, vec![Duration::ZERO; 2]);
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[0].starts_with("step 2 started 15."), "{notes:?}");
}

/// The live view's `n` on step 2: that step stops early and is stored `ended-early` (not
/// `interrupted`), a note says so, and the sweep goes on to its end, complete.
#[test]
fn a_step_ended_from_the_live_view_is_kept_and_the_sweep_goes_on() {
    /// Ends step 2 as the live view's `n` does: through the step's stop flag, once.
    struct EndSecond(Option<usize>);
    impl super::Sink for EndSecond {
        fn tick(&mut self, t: &super::StepTick) {
            if t.index == 1 {
                t.ctl.stop.store(true, std::sync::atomic::Ordering::Relaxed);
                self.0 = Some(1);
            }
        }
        fn take_ended_early(&mut self, index: usize) -> bool {
            self.0.take_if(|i| *i == index).is_some()
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let p = plan(rates(&LEVELS[..4]));
    let mut exec = Scripted::new(fake::server(1e9));
    let base = fake::base(p.loads[0]);
    let mut writer = fake::writer(dir.path(), "open");
    let mut sink = EndSecond(None);
    let mut stepper = Stepper::new(&base, "open", None, Some(&mut writer), &mut sink, &mut exec);
    let result = sweep(&mut stepper, &p);
    let done = stepper.finish(&result, String::clone).unwrap();
    assert_eq!(result.unwrap(), "all planned steps done");
    assert!(done.complete);
    assert_eq!(done.steps.len(), 4);
    let flags: Vec<&[String]> = done.steps.iter().map(|s| &s.flags[..]).collect();
    assert_eq!(flags[1], ["ended-early"]);
    for f in [flags[0], flags[2], flags[3]] {
        assert!(!f.iter().any(|f| f == "ended-early" || f == "interrupted"));
    }
    assert!(done
        .notes
        .iter()
        .any(|n| n == "step 2: ended early from the live view"));
}

/// The sink is fed every tick of every step (with its index and level), every stored step
/// in order, and is closed once when the run ends.
#[test]
fn the_sink_gets_each_tick_and_each_step() {
    #[derive(Default)]
    struct Record {
        ticks: Vec<(usize, f64)>,
        done: Vec<usize>,
        closed: usize,
    }
    impl super::Sink for Record {
        fn tick(&mut self, t: &super::StepTick) {
            self.ticks.push((t.index, t.offered()));
        }
        fn step_done(
            &mut self,
            rec: &crate::store::StepRecord,
            _series: &[crate::store::SeriesPoint],
            mode: &str,
        ) {
            assert_eq!(mode, "open");
            self.done.push(rec.step);
        }
        fn close(&mut self) {
            self.closed += 1;
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let p = plan(rates(&LEVELS[..3]));
    let mut exec = Scripted::new(fake::server(1e9));
    let base = fake::base(p.loads[0]);
    let mut writer = fake::writer(dir.path(), "open");
    let mut sink = Record::default();
    let mut stepper = Stepper::new(&base, "open", None, Some(&mut writer), &mut sink, &mut exec);
    let result = sweep(&mut stepper, &p);
    stepper.finish(&result, String::clone).unwrap();
    // The scripted engine ticks once per step.
    assert_eq!(sink.ticks, [(0, LEVELS[0]), (1, LEVELS[1]), (2, LEVELS[2])]);
    assert_eq!(sink.done, [0, 1, 2]);
    assert_eq!(sink.closed, 1);
}

/// "Offered now" has one source for the progress, the view and the push: a tick on a ramp
/// reads the ramp's level at its second; steered by live control, the level set; else the
/// step's level (this generator's share of it).
#[test]
fn a_ticks_offered_level_follows_the_ramp_and_live_control() {
    use crate::engine::steer::{By, Change, Settings, Steer};
    use crate::engine::Control;
    use crate::plan::stages::Profile;
    use std::sync::Arc;
    let load = rates(&[600.0])[0];
    let ramp = Profile::from_points(&[(0.0, 100.0), (10.0, 1100.0)]);
    let mut base = fake::base(load);
    base.ramp = Some(Arc::new(ramp));
    let ctl = Control::new(1);
    let clock = super::step::RunClock::now();
    let tick = |base: &crate::engine::EngineConfig, secs: u64| {
        super::StepTick {
            index: 0,
            load,
            ctl: &ctl,
            elapsed: Duration::from_secs(secs),
            observer: None,
            base,
            clock: &clock,
        }
        .offered()
    };
    assert!((tick(&base, 2) - 300.0).abs() < 1e-9, "{}", tick(&base, 2));
    assert!((tick(&base, 8) - 900.0).abs() < 1e-9);
    // No ramp: the step's level; steered: the level live control set, from its change on.
    let steer = Steer::new(Settings::default());
    let mut plain = fake::base(load);
    plain.steer = Some(Arc::clone(&steer));
    assert_eq!(tick(&plain, 3), 600.0);
    let t = super::step::RunClock::now();
    steer.step_starts(0);
    // What the engine does at the step's start.
    steer.bind(
        t.start,
        crate::engine::steer::Unit::Rate,
        600.0,
        None,
        Some(10.0),
    );
    steer
        .apply_at(Change::To(150.0), By::Port, t.start)
        .unwrap();
    assert_eq!(tick(&plain, 3), 150.0);
}
