//! The controller's decisions on scripted agents: how a step is cut, what a lost generator
//! does to the step and to the next ones, and that a refusal fails the run.
use super::*;
use crate::engine::Arrival;
use crate::metrics::histo;
use crate::store::{SeriesPoint, StepHists};
use std::sync::Mutex;

/// Scripted agents: each answers its part (responses = rate share × 1 s, all at 5 ms), or
/// fails as told for a given step.
/// How a lying agent changes its answer.
type Doctor = fn(&mut StepAnswer);

struct Script {
    fail: Vec<(usize, usize, Failure)>,
    /// Generator g doctors its answer so.
    lie: Option<(usize, Doctor)>,
    seen: Mutex<Vec<(usize, StepPlan)>>,
    names: Vec<String>,
}

impl Channel for Script {
    fn len(&self) -> usize {
        self.names.len()
    }
    fn name(&self, g: usize) -> &str {
        &self.names[g]
    }
    fn step(&self, g: usize, plan: &StepPlan, _wait: Duration) -> Result<StepAnswer, Failure> {
        self.seen.lock().unwrap().push((g, plan.clone()));
        if let Some((_, _, f)) = self
            .fail
            .iter()
            .find(|(s, x, _)| *s == plan.index && *x == g)
        {
            return Err(f.clone());
        }
        let rate = match plan.load {
            WireLoad::Open { rate, .. } => rate / f64::from(plan.segment_count),
            WireLoad::Closed { .. } => 0.0,
        };
        let mut a = answer(plan.index, rate);
        if let Some((_, doctor)) = self.lie.filter(|(x, _)| *x == g) {
            doctor(&mut a);
        }
        Ok(a)
    }
    fn stop(&self, _g: usize, _plan: &StepPlan) {}
}

fn answer(index: usize, rate: f64) -> StepAnswer {
    let n = rate.round() as u64;
    let mut h = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    h.record_n(5000, n.max(1)).unwrap();
    let enc = histo::encode(&h);
    let mut record = crate::runner::fake::record(
        index,
        &open(rate),
        crate::runner::fake::Shape::ok(rate, 5.0),
        1.0,
    );
    record.response_time_hist = enc.clone();
    record.hists = Some(StepHists {
        service_time: enc.clone(),
        send_lag: enc.clone(),
        connect_time: enc.clone(),
        first_byte: enc,
        tls_handshake: None,
        names: Default::default(),
    });
    StepAnswer {
        protocol: PROTOCOL,
        host: "h".into(),
        record,
        series: vec![SeriesPoint {
            t: 0.0,
            step: index,
            offered: rate,
            warmup: false,
            responses: n,
            ok: n,
            errors: 0,
            bytes_in: 0,
            response_time_mean_ms: 5.0,
            response_time_max_ms: 5.0,
            send_lag_mean_ms: 0.0,
            response_time_p50_ms: None,
            response_time_p95_ms: None,
            response_time_p99_ms: None,
            server: None,
        }],
        notes: Vec::new(),
        interrupted: false,
    }
}

fn controller(n: usize, fail: Vec<(usize, usize, Failure)>, on_loss: OnLoss) -> Controller<Script> {
    let script = Script {
        fail,
        lie: None,
        seen: Mutex::new(Vec::new()),
        names: (0..n).map(|i| format!("http://gen{i}:9090")).collect(),
    };
    let mix = Mixture {
        requests: Vec::new(),
        pick: WirePick::Sequence,
        conn: WireConn::of(&Default::default()).unwrap(),
        ok_status: Default::default(),
    };
    Controller::new(script, mix, on_loss)
}

fn open(rate: f64) -> Load {
    Load::Open {
        rate,
        arrival: Arrival::Constant,
        max_connections: 100,
    }
}

fn step(c: &mut Controller<Script>, index: usize, rate: f64) -> crate::Result<StepResult> {
    let base = crate::runner::fake::base(open(rate));
    c.run_step(
        &base,
        open(rate),
        index,
        &RunClock::now(),
        None,
        &mut |_, _| {},
    )
}

#[test]
fn each_step_is_cut_into_one_segment_per_agent_with_one_start_and_added_back() {
    let mut c = controller(3, Vec::new(), OnLoss::Stop);
    let r = step(&mut c, 0, 300.0).unwrap();
    let seen = c.channel.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    let mut segs: Vec<(u32, u32)> = seen
        .iter()
        .map(|(_, p)| (p.segment_index, p.segment_count))
        .collect();
    segs.sort();
    assert_eq!(segs, vec![(0, 3), (1, 3), (2, 3)]);
    assert!(seen
        .iter()
        .all(|(_, p)| p.start_at_unix_ms == seen[0].1.start_at_unix_ms));
    assert!(
        seen.iter()
            .all(|(_, p)| p.load == WireLoad::of(open(300.0))),
        "the whole plan's load, cut by the agent"
    );
    assert_eq!(r.record.summary.responses, 300);
    assert_eq!(r.record.offered, 300.0);
    assert_eq!(r.record.generator.threads, 3);
    assert!(r.record.flags.is_empty() && !r.interrupted);
}

#[test]
fn a_lost_generator_under_stop_marks_the_step_and_stops_the_run() {
    let mut c = controller(
        2,
        vec![(1, 1, Failure::Lost("connection broken".into()))],
        OnLoss::Stop,
    );
    step(&mut c, 0, 200.0).unwrap();
    assert!(!c.interrupted());
    let r = step(&mut c, 1, 200.0).unwrap();
    assert!(r.interrupted && c.interrupted());
    assert_eq!(r.record.flags, vec!["generator-lost".to_string()]);
    assert_eq!(r.record.summary.responses, 100, "the surviving half only");
    let note = r.notes.iter().find(|n| n.contains("lost")).unwrap();
    assert!(
        note.contains("http://gen1:9090")
            && note.contains("connection broken")
            && note.contains("1/2 (100.0 req/s)"),
        "{note}"
    );
    assert_eq!(
        c.stop_reason().unwrap(),
        "generator lost in step 2 (--on-generator-loss stop)"
    );
}

#[test]
fn a_lost_generator_under_continue_leaves_the_others_to_share_the_next_steps() {
    let mut c = controller(
        3,
        vec![(0, 2, Failure::Lost("no answer within 12s".into()))],
        OnLoss::Continue,
    );
    let r = step(&mut c, 0, 300.0).unwrap();
    assert!(!r.interrupted && !c.interrupted());
    assert!(r.record.flags.contains(&"generator-lost".to_string()));
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("going on with 2 generator(s)")),
        "{:?}",
        r.notes
    );
    assert_eq!(c.alive(), &[0, 1]);
    c.channel.seen.lock().unwrap().clear();
    let r = step(&mut c, 1, 300.0).unwrap();
    // The parts go out in parallel: the order they reach the channel is not the point.
    let mut seen: Vec<_> = c
        .channel
        .seen
        .lock()
        .unwrap()
        .iter()
        .map(|(g, p)| (*g, p.segment_index, p.segment_count))
        .collect();
    seen.sort_unstable();
    assert_eq!(seen, vec![(0, 0, 2), (1, 1, 2)]);
    assert_eq!(
        r.record.summary.responses, 300,
        "the whole level through the two left"
    );
    assert!(r.record.flags.is_empty());
}

fn failed(r: crate::Result<StepResult>) -> String {
    match r {
        Ok(_) => panic!("the step should have failed"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_refusal_fails_the_run_and_losing_every_generator_is_an_error() {
    let mut c = controller(
        2,
        vec![(
            0,
            1,
            Failure::Refused("422 refused: rate above --max-rate 50".into()),
        )],
        OnLoss::Continue,
    );
    let e = failed(step(&mut c, 0, 200.0));
    assert!(
        e.contains("step 1: generator http://gen1:9090 refused it") && e.contains("--max-rate 50"),
        "{e}"
    );
    let lost = |g| (0, g, Failure::Lost("gone".into()));
    let mut c = controller(2, vec![lost(0), lost(1)], OnLoss::Continue);
    let e = failed(step(&mut c, 0, 200.0));
    assert!(e.contains("every generator was lost"), "{e}");
}

/// Defect 15: an agent's answer states its offered rate and mode; the controller knows what
/// it sent that agent, so a part that claims another load is that agent's failure (lost,
/// named), and the merged step carries the controller's numbers, never the claim.
#[test]
fn a_generator_that_misstates_its_part_is_lost_and_the_step_keeps_the_plans_numbers() {
    let mut c = controller(2, Vec::new(), OnLoss::Continue);
    c.channel.lie = Some((1, |a| {
        a.record.offered = 12345.0;
        a.record.summary.offered_rate = Some(12345.0);
        for p in &mut a.series {
            p.offered = 12345.0;
        }
    }));
    let r = step(&mut c, 0, 200.0).unwrap();
    assert_eq!(r.record.offered, 100.0, "the honest half, as planned");
    assert_eq!(r.record.summary.offered_rate, Some(100.0));
    assert!(r.series.iter().all(|p| p.offered == 100.0));
    assert!(r.record.flags.contains(&"generator-lost".to_string()));
    let note = r.notes.iter().find(|n| n.contains("lost")).unwrap();
    assert!(
        note.contains("http://gen1:9090") && note.contains("12345") && note.contains("100"),
        "{note}"
    );
    assert_eq!(c.alive(), &[0]);

    // Another mode than the one sent.
    let mut c = controller(2, Vec::new(), OnLoss::Continue);
    c.channel.lie = Some((0, |a| {
        a.record.summary.mode = "closed".into();
        a.record.summary.offered_rate = None;
        a.record.summary.users = Some(100);
    }));
    let r = step(&mut c, 0, 200.0).unwrap();
    let note = r.notes.iter().find(|n| n.contains("lost")).unwrap();
    assert!(
        note.contains("http://gen0:9090") && note.contains("closed"),
        "{note}"
    );
    assert_eq!(r.record.summary.mode, "open");
    assert_eq!(r.record.offered, 100.0);
}
