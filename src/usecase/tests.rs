//! The use cases end to end on the scripted executor: configuration in, results folder and
//! printed outcome out, with no socket opened and no sleep.
use super::{capacity, CapacityConfig};
use super::{sweep, Levels, SweepConfig};
use super::{Output, RequestConfig, StepTiming};
use crate::runner::fake::{self, Scripted, Shape};
use std::path::Path;
use std::time::Duration;

fn request() -> RequestConfig {
    RequestConfig {
        // Resolved, never connected to: the scripted executor sends nothing.
        urls: vec!["http://127.0.0.1:9/x".into()],
        ..RequestConfig::default()
    }
}

fn output(dir: &Path) -> Output {
    Output {
        out: Some(dir.join("run")),
        name: Some("t".into()),
        quiet: true,
        ..Output::default()
    }
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn capacity_search_end_to_end_reruns_a_generator_bound_probe_once() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = CapacityConfig {
        // One run of the capacity probe: this test is about the search's own steps.
        repeat: 1,
        request: request(),
        slo: Some("p99<100ms".into()),
        output: output(tmp.path()),
        ..CapacityConfig::default()
    };
    // A server of 1000 req/s whose p99 passes 100 ms above 1095 req/s; the first probe at
    // 200 req/s fails because the generator ran out of CPU (the server was fine).
    let mut server = fake::server(1000.0);
    let mut seen_200 = 0;
    let mut exec = Scripted::new(move |n, offered| {
        if offered == 200.0 {
            seen_200 += 1;
            if seen_200 == 1 {
                return Shape {
                    throughput: 150.0,
                    p99_ms: 400.0,
                    errors: 0.0,
                    generator_cpu_pct: 99.0,
                };
            }
        }
        server(n, offered)
    });
    let o = capacity::run(&cfg, &mut exec).unwrap();
    assert_eq!(
        exec.offered,
        [50.0, 100.0, 200.0, 200.0, 400.0, 800.0, 1600.0, 1200.0, 1000.0, 1100.0, 1050.0]
    );
    assert_eq!((o.search.lo, o.search.hi), (Some(1050.0), Some(1100.0)));
    assert_eq!(
        o.search.probes.len(),
        10,
        "the re-run is a step, not a probe"
    );
    assert_eq!(o.steps.len(), 11);
    assert!(o.steps[2].flags.iter().any(|f| f == "generator-bound"));
    assert!(o
        .notes
        .iter()
        .any(|n| n.contains("200.0 req/s failed while generator-bound: it was run again")));
    assert_eq!(o.reason, "bracket within the precision");
    assert_eq!(o.exit_code(), 0);
    // Rests between steps, the re-run included; none before the first.
    assert_eq!(exec.rests, vec![StepTiming::default().rest; 10]);
    let text = o.to_string();
    assert!(
        text.contains("capacity: 1050.0 req/s under 'p99<100ms' (bracket [1050.0, 1100.0))"),
        "{text}"
    );
    assert_eq!(text.matches("(generator-bound)").count(), 1, "{text}");
    let dir = tmp.path().join("run");
    let steps = std::fs::read_to_string(dir.join("steps.jsonl")).unwrap();
    assert_eq!(
        steps.lines().count(),
        11,
        "both runs of the probe are stored"
    );
    let info = json(&dir.join("run.json"));
    assert_eq!(info["complete"], true);
    assert_eq!(info["kind"], "capacity");
    assert_eq!(info["config"]["start"], 50.0);
    assert_eq!(info["config"]["precision"], 0.05);
    assert!(dir.join("report.html").is_file());
}

#[test]
fn capacity_search_believes_a_probe_that_fails_twice() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = CapacityConfig {
        // One run of the capacity probe: this test is about the search's own steps.
        repeat: 1,
        request: request(),
        slo: Some("p99<100ms".into()),
        output: output(tmp.path()),
        start: 100.0,
        ..CapacityConfig::default()
    };
    let mut exec = Scripted::new(|_, offered: f64| Shape {
        throughput: offered,
        p99_ms: if offered > 150.0 { 500.0 } else { 5.0 },
        errors: 0.0,
        generator_cpu_pct: 99.0,
    });
    let o = capacity::run(&cfg, &mut exec).unwrap();
    // Every failure is generator-bound, so each failing probe runs twice and, failing again,
    // counts as failed; the passing ones run once.
    assert_eq!(
        exec.offered,
        [100.0, 200.0, 200.0, 150.0, 175.0, 175.0, 162.5, 162.5, 156.25, 156.25]
    );
    assert_eq!((o.search.lo, o.search.hi), (Some(150.0), Some(156.25)));
    assert_eq!(o.notes.len(), 4);
}

#[test]
fn capacity_first_probe_failing_exits_3() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = CapacityConfig {
        request: request(),
        slo: Some("p99<1ms".into()),
        output: output(tmp.path()),
        ..CapacityConfig::default()
    };
    let mut exec = Scripted::new(fake::server(1000.0));
    let o = capacity::run(&cfg, &mut exec).unwrap();
    assert_eq!(exec.offered, [50.0]);
    assert_eq!(o.exit_code(), 3);
    assert!(o.to_string().contains("capacity: below 50.0 req/s"));
}

#[test]
fn capacity_without_slo_is_a_usage_error_before_anything_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = CapacityConfig {
        request: request(),
        output: output(tmp.path()),
        ..CapacityConfig::default()
    };
    let mut exec = Scripted::new(fake::server(1000.0));
    let e = capacity::run(&cfg, &mut exec).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(exec.offered.is_empty());
    assert!(
        !tmp.path().join("run").exists(),
        "no results folder for a usage error"
    );
}

#[test]
fn sweep_end_to_end_stores_its_configuration_and_exit_code() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = SweepConfig {
        request: request(),
        levels: Levels::Rates(vec![500.0, 1000.0, 1500.0, 2000.0, 2500.0, 3000.0]),
        slo: Some("p99<100ms".into()),
        output: output(tmp.path()),
        ..SweepConfig::default()
    };
    let mut exec = Scripted::new(fake::server(1000.0));
    let o = sweep::run(&cfg, &mut exec).unwrap();
    assert_eq!(exec.offered, [500.0, 1000.0, 1500.0, 2000.0]);
    assert_eq!(
        o.reason,
        "step 4 failed 25.0% of requests (--max-errors 20.0%)"
    );
    assert_eq!(o.exit_code(), 3, "a step failed the SLO");
    assert!(o.to_string().starts_with("sweep ended: step 4 failed"));
    let info = json(&tmp.path().join("run/run.json"));
    let c = &info["config"];
    assert_eq!(
        c["levels"],
        serde_json::json!([500.0, 1000.0, 1500.0, 2000.0, 2500.0, 3000.0])
    );
    assert_eq!(
        (
            c["warmup_s"].as_f64(),
            c["step_s"].as_f64(),
            c["rest_s"].as_f64()
        ),
        (Some(5.0), Some(30.0), Some(5.0))
    );
    assert_eq!(c["past_saturation"], 2);
    assert_eq!(c["max_errors"], 0.2);
    assert_eq!(c["connections"], 10_000);
    assert_eq!(c["think_s"], serde_json::Value::Null);
    assert_eq!(info["slo"], "p99<100ms");
    assert_eq!(info["mode"], "open");
}

#[test]
fn sweep_interrupted_exits_130() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = SweepConfig {
        request: request(),
        levels: Levels::Users {
            users: vec![1, 2, 4],
            think: Some((Duration::from_millis(10), Duration::from_millis(30))),
        },
        output: output(tmp.path()),
        ..SweepConfig::default()
    };
    let mut exec = Scripted::new(|_, u: f64| Shape::ok(u * 10.0, 5.0));
    exec.interrupt_during = Some(0);
    let o = sweep::run(&cfg, &mut exec).unwrap();
    assert_eq!(o.exit_code(), 130);
    let info = json(&tmp.path().join("run/run.json"));
    assert_eq!(info["complete"], false);
    assert_eq!(info["config"]["think_s"], serde_json::json!([0.01, 0.03]));
}

/// The demo's closing line says what the findings and the report say about saturation: the
/// offered load of the first saturated step, not the throughput (it used to print "~372").
#[test]
fn demo_names_saturation_as_the_analysis_does() {
    use crate::analysis::tests::{step, summary};
    let steps: Vec<_> = [(360.0, 358.0), (400.0, 372.0), (440.0, 371.0)]
        .iter()
        .enumerate()
        .map(|(i, &(o, x))| step(i, o, summary(o, x, 20.0, 0)))
        .collect();
    let analysis = crate::analysis::analyze("open", &steps, None);
    let words = analysis.saturation.as_ref().unwrap().describe("req/s");
    let outcome = super::DemoOutcome {
        capacity: 400.0,
        dir: "runs/x".into(),
        report: "runs/x/report.html".into(),
        notes: vec![],
        complete: true,
        analysis,
    };
    let text = outcome.to_string();
    assert!(
        text.contains(
            "saturation at 400 req/s offered (step 2); peak sustained throughput 372 responses/s"
        ),
        "{text}"
    );
    assert!(text.contains(&words), "{text}");
    assert!(!text.contains('~'), "{text}");
}

/// The case: the server answers 180/s whatever is offered, in a steady 50 ms, so a
/// short probe above 180/s meets `p99<200ms` while the queue grows. Such a probe did not keep
/// up: it fails, and the capacity lands where throughput still matched the offer.
#[test]
fn capacity_probes_the_server_did_not_keep_up_with_fail() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = CapacityConfig {
        request: request(),
        slo: Some("p99<200ms".into()),
        max: 400.0,
        output: output(tmp.path()),
        ..CapacityConfig::default()
    };
    let mut exec = Scripted::new(|_, offered: f64| Shape::ok(offered.min(180.0), 50.0));
    let o = capacity::run(&cfg, &mut exec).unwrap();
    let (lo, hi) = (o.search.lo.unwrap(), o.search.hi.expect("a probe failed"));
    assert!((170.0..=180.0 / 0.95).contains(&lo), "[{lo}, {hi}]");
    assert!(hi <= 200.0, "[{lo}, {hi}]");
    let failed = o.steps.iter().find(|s| s.offered == 200.0).unwrap();
    assert!(failed.flags.iter().any(|f| f == "not-sustained"));
    let text = o.to_string();
    assert!(text.contains("200.0 req/s  FAILED"), "{text}");
    assert!(
        o.notes.iter().any(|n| n.contains("not sustained")),
        "{:?}",
        o.notes
    );
}

/// `--repeat 3`: the capacity probe runs twice more once the bracket is found; the answer
/// carries the spread of its throughput. A repeat that fails moves the capacity below it.
#[test]
fn capacity_probe_is_repeated_and_carries_its_spread() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = CapacityConfig {
        request: request(),
        slo: Some("p99<100ms".into()),
        repeat: 3,
        output: output(tmp.path()),
        ..CapacityConfig::default()
    };
    let mut exec = Scripted::new(fake::server(1000.0));
    let o = capacity::run(&cfg, &mut exec).unwrap();
    let lo = o.search.lo.unwrap();
    assert_eq!(o.steps.iter().filter(|s| s.offered == lo).count(), 3);
    assert_eq!(o.search.repeats.len(), 3);
    assert!(o.to_string().contains("repeat spread ±"), "{o}");

    // The same server, but the second run of 800 req/s fails: the capacity is below 800.
    let tmp = tempfile::tempdir().unwrap();
    let cfg = CapacityConfig {
        output: output(tmp.path()),
        max: 800.0,
        ..cfg
    };
    let mut runs_at_800 = 0;
    let mut server = fake::server(1000.0);
    let mut exec = Scripted::new(move |n, offered| {
        if offered == 800.0 {
            runs_at_800 += 1;
            if runs_at_800 == 2 {
                return Shape::ok(800.0, 500.0);
            }
        }
        server(n, offered)
    });
    let o = capacity::run(&cfg, &mut exec).unwrap();
    assert_eq!((o.search.lo, o.search.hi), (Some(400.0), Some(800.0)));
    assert!(
        o.notes.iter().any(|n| n.contains("failed when repeated")),
        "{:?}",
        o.notes
    );
}

/// A split plan refuses what it cannot do before anything runs: a level that leaves a
/// segment without users, and a start time far in the past or more than a day ahead.
#[test]
fn segments_refuse_empty_shares_and_start_times_out_of_range() {
    use crate::plan::Segment;
    use crate::usecase::SegmentConfig;
    let tmp = tempfile::tempdir().unwrap();
    let seg = |start_at_ms| SegmentConfig {
        segment: Segment { index: 3, count: 4 },
        start_at_ms,
    };
    let users = |segment| SweepConfig {
        request: request(),
        levels: Levels::Users {
            users: vec![3, 8],
            think: None,
        },
        segment,
        output: output(tmp.path()),
        ..SweepConfig::default()
    };
    let mut exec = Scripted::new(fake::server(1e9));
    let e = crate::usecase::sweep::run(&users(seg(None)), &mut exec).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(
        e.to_string()
            .contains("--segment 3/4: 3 users leave this segment none"),
        "{e}"
    );
    let now = crate::clock::unix_ms();
    let rates = |start_at_ms| SweepConfig {
        levels: Levels::Rates(vec![100.0]),
        ..users(seg(Some(start_at_ms)))
    };
    for (at, why) in [
        (now - 31_000 - 5_000, "in the past"),
        (now + 86_400_000 + 60_000, "24 h ahead"),
    ] {
        let e = crate::usecase::sweep::run(&rates(at), &mut exec).unwrap_err();
        assert!(e.to_string().contains(why), "{e}");
        assert_eq!(e.exit_code(), 2);
    }
    assert!(exec.offered.is_empty(), "nothing ran");
    assert!(
        !tmp.path().join("run").exists(),
        "no results folder for a refused plan"
    );
}

/// The demo says how long it takes, and the README and `demo --help` say the same: its plan's
/// steps (up to the target's capacity, where it saturates, and 2 more), each a warm-up and a
/// measured step, the rests between, and the queue a step past the capacity leaves to drain.
#[test]
fn demo_announces_the_time_its_plan_takes() {
    use super::demo_config::{self as demo, DemoConfig};
    let cfg = DemoConfig::default();
    let capacity = cfg.workers as f64 * 1000.0 / cfg.service_ms as f64;
    let rates = demo::rates(capacity);
    assert_eq!(rates.len(), 13);
    // The first step past the capacity saturates (the target answers ~399 of 400 req/s at
    // its capacity: above 95%); the sweep stops 2 steps later.
    let knee = rates.iter().position(|&r| r > capacity / 0.95).unwrap();
    let run = &rates[..=knee + 2];
    let per_step = (demo::WARMUP + cfg.step).as_secs_f64();
    let drain: f64 = run
        .iter()
        .map(|r| (r / capacity - 1.0).max(0.0) * per_step)
        .sum();
    let want =
        run.len() as f64 * per_step + (run.len() - 1) as f64 * demo::REST.as_secs_f64() + drain;
    let time = demo::expected_time(&cfg);
    assert_eq!(time.steps, 10);
    assert!(
        (time.typical.as_secs_f64() - want).abs() < 1e-6,
        "{time:?} vs {want}"
    );
    assert!(time.longest > time.typical, "{time:?}");
    // Measured: 47.4 s, release build, clean clone, quiet 2-core machine (10 steps).
    let about = demo::about(time.typical);
    assert_eq!(about, "about 50 s");
    let target = super::DemoTarget {
        url: "http://127.0.0.1:1".into(),
        workers: cfg.workers,
        service_ms: cfg.service_ms,
        capacity,
        time,
    };
    assert!(target.to_string().contains(&about), "{target}");
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let demo_line = readme
        .lines()
        .find(|l| l.contains("-- demo"))
        .expect("the demo command");
    assert!(demo_line.contains(&about), "README says: {demo_line}");
}

/// The demo runs the steps it announces: against a server that answers up to its
/// theoretical capacity (the target gives 399 of 400 req/s there), it saturates at the first
/// step past the capacity and stops 2 steps later, with the rests between.
#[test]
fn demo_runs_the_steps_it_announces() {
    use super::demo_config::{self as demo, DemoConfig};
    let tmp = tempfile::tempdir().unwrap();
    let cfg = DemoConfig {
        output: Output {
            out: Some(tmp.path().join("demo")),
            quiet: true,
            ..Output::default()
        },
        ..DemoConfig::default()
    };
    let capacity = cfg.workers as f64 * 1000.0 / cfg.service_ms as f64;
    let mut exec = Scripted::new(|_, offered: f64| {
        let served = offered.min(capacity);
        Shape::ok(served, if served < offered { 800.0 } else { 25.0 })
    });
    let mut announced = None;
    let outcome = super::demo::run(&cfg, &mut exec, |t| announced = Some(t.time)).unwrap();
    assert!(outcome.complete);
    let time = announced.expect("announced");
    assert_eq!(exec.offered.len(), time.steps, "{:?}", exec.offered);
    assert_eq!(exec.offered, demo::rates(capacity)[..time.steps].to_vec());
    assert_eq!(exec.rests, vec![demo::REST; time.steps - 1]);
}
