//! The merge on scripted segments: exactness of the added histograms and counters, and every
//! refusal with its one-line reason.
use super::*;
use crate::analysis::tests::{step, summary};
use crate::store::HostInfo;
use std::path::PathBuf;

fn hist(values: &[u64]) -> Histogram<u64> {
    let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
    for &v in values {
        h.record(v).unwrap();
    }
    h
}

/// Segment `index` of `count` of a 2-step open-loop sweep at 1000 then 2000 req/s; its
/// requests' response times are `values[k]` in step k.
fn segment(index: u32, count: u32, values: &[Vec<u64>; 2]) -> RunData {
    let config = serde_json::json!({
        "levels": [1000.0, 2000.0],
        "threads": index + 1,
        "segment": {"index": index, "count": count, "start_at_unix_ms": 5_000},
    });
    let steps = (0..2)
        .map(|k| {
            let share = [1000.0, 2000.0][k] / f64::from(count);
            let n = values[k].len() as u64;
            let mut s = summary(share, n as f64 / 10.0, 5.0, index as u64);
            let h = hist(&values[k]);
            s.response_time_ms = LatencyStats::from_hist(&h);
            let mut rec = step(k, share, s);
            rec.start_unix_ms = 5_000 + 12_000 * k as u64 + u64::from(index) * 7;
            rec.response_time_hist = histo::encode(&h);
            rec.hists = Some(StepHists {
                service_time: histo::encode(&h),
                send_lag: histo::encode(&hist(&[1, 2])),
                connect_time: histo::encode(&hist(&[100])),
                first_byte: histo::encode(&hist(&[50 + u64::from(index)])),
                tls_handshake: None,
                ..Default::default()
            });
            rec.generator.threads = index as usize + 1;
            rec
        })
        .collect();
    let series = (0..2)
        .flat_map(|k| {
            (0..3).map(move |j| SeriesPoint {
                t: (k * 12 + j) as f64,
                step: k,
                offered: 1000.0 / f64::from(count),
                warmup: false,
                responses: 10 + u64::from(index),
                ok: 10,
                errors: u64::from(index),
                bytes_in: 100,
                response_time_mean_ms: 1.0 + f64::from(index),
                response_time_max_ms: 3.0 * f64::from(index + 1),
                send_lag_mean_ms: 0.5 * f64::from(index),
                response_time_p50_ms: None,
                response_time_p95_ms: None,
                response_time_p99_ms: None,
                server: None,
            })
        })
        .collect();
    RunData {
        dir: PathBuf::from(format!("seg{index}")),
        info: RunInfo {
            format_version: crate::store::FORMAT_VERSION,
            overload_version: "test".into(),
            name: "t".into(),
            kind: "sweep".into(),
            command_line: Vec::new(),
            mode: "open".into(),
            urls: vec!["GET http://127.0.0.1:1/".into()],
            config,
            host: HostInfo {
                hostname: format!("gen{index}"),
                ..HostInfo::default()
            },
            started_unix_ms: 5_000 + u64::from(index),
            finished_unix_ms: Some(30_000 + u64::from(index)),
            complete: true,
            stop_reason: Some("all planned steps done".into()),
            slo: Some("p99<100ms".into()),
        },
        steps,
        series,
        events: Vec::new(),
        skipped: Vec::new(),
    }
}

/// Pseudo-random response times spread over four orders of magnitude, different per seed.
fn values(seed: u64, n: usize) -> Vec<u64> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n)
        .map(|_| 10u64.pow(rng.u32(1..6)) + rng.u64(0..1000))
        .collect()
}

#[test]
fn merged_histograms_are_those_of_all_requests_added() {
    let parts: Vec<[Vec<u64>; 2]> = (0..3)
        .map(|i| [values(i, 2000 + i as usize * 37), values(10 + i, 500)])
        .collect();
    // Given in another order than their indices: the merge sorts them.
    let runs: Vec<RunData> = [2u32, 0, 1]
        .iter()
        .map(|&i| segment(i, 3, &parts[i as usize]))
        .collect();
    let m = merge(&runs).unwrap();
    assert_eq!(m.steps.len(), 2);
    for k in 0..2 {
        let all: Vec<u64> = parts.iter().flat_map(|p| p[k].iter().copied()).collect();
        let whole = hist(&all);
        let (rec, series) = &m.steps[k];
        let merged = histo::decode(&rec.response_time_hist).unwrap();
        assert_eq!(merged.len(), all.len() as u64, "counts equal");
        for q in 0..=1000 {
            let q = f64::from(q) / 1000.0;
            assert_eq!(
                merged.value_at_quantile(q),
                whole.value_at_quantile(q),
                "q {q}"
            );
        }
        assert_eq!(merged.max(), whole.max());
        assert_eq!(merged.min(), whole.min());
        assert_eq!(
            rec.summary.response_time_ms,
            LatencyStats::from_hist(&whole)
        );
        // Counters add up; the level is the plan's, not 999.9999….
        assert_eq!(rec.offered, [1000.0, 2000.0][k]);
        assert_eq!(rec.summary.offered_rate, Some(rec.offered));
        assert_eq!(rec.summary.responses, all.len() as u64);
        assert_eq!(rec.summary.error_count, 3, "0 + 1 + 2");
        assert_eq!(rec.summary.errors["timeout"], 3);
        assert_eq!(rec.summary.statuses["200"], all.len() as u64);
        assert_eq!(rec.generator.threads, 6);
        // First byte: one sample per part (50, 51, 52 µs), added like the others.
        assert_eq!(rec.summary.first_byte_ms.count, 3);
        assert!((rec.summary.first_byte_ms.max - 0.052).abs() < 0.001);
        assert!(rec.summary.tls.is_none());
        assert_eq!(rec.start_unix_ms, 5_000 + 12_000 * k as u64);
        // Per second: counts summed, mean weighted by responses, max of maxes.
        assert_eq!(series.len(), 3);
        assert_eq!(series[0].responses, 10 + 11 + 12);
        assert_eq!(series[0].errors, 3);
        let mean = (10.0 * 1.0 + 11.0 * 2.0 + 12.0 * 3.0) / 33.0;
        assert!((series[0].response_time_mean_ms - mean).abs() < 1e-12);
        let lag = (10.0 * 0.0 + 11.0 * 0.5 + 12.0 * 1.0) / 33.0;
        assert!((series[0].send_lag_mean_ms - lag).abs() < 1e-12);
        assert_eq!(series[0].response_time_max_ms, 9.0);
        assert_eq!(series[0].offered, 1000.0);
    }
    // The SLO is judged on the merged step: p99 of all requests is far above 100 ms.
    assert_eq!(m.steps[0].0.slo_ok, Some(false));
    assert!(m.steps[0].0.flags.contains(&"slo-failed".to_string()));
    assert!(m.info.complete);
    assert_eq!(m.info.started_unix_ms, 5_000);
    assert_eq!(m.info.finished_unix_ms, Some(30_002));
    assert_eq!(m.info.config["segment"]["count"], 3);
    assert_eq!(m.info.config["segment"]["hosts"][1], "gen1");
    assert!(
        segment_of(&m.info).is_none(),
        "a merged folder is not a segment"
    );
}

#[test]
fn refuses_what_is_not_one_split_plan() {
    let v = [values(1, 50), values(2, 50)];
    let e = |runs: &[RunData]| merge(runs).err().expect("refused");
    let (a, b) = (segment(0, 2, &v), segment(1, 2, &v));

    let mut whole = segment(0, 2, &v);
    whole.info.config.as_object_mut().unwrap().remove("segment");
    assert!(e(&[whole, b.clone()]).contains("'seg0' is not a segment"));

    assert!(e(std::slice::from_ref(&a)).contains("segment 1/2 missing"));
    assert!(e(&[a.clone(), a.clone()]).contains("'seg0' and 'seg0' are both segment 0/2"));
    assert!(e(&[a.clone(), segment(1, 3, &v)]).contains("different splits"));

    let mut other = b.clone();
    other.info.config["levels"] = serde_json::json!([1000.0, 3000.0]);
    let why = e(&[a.clone(), other]);
    assert!(
        why.contains("another plan") && why.contains("config 'levels' differs"),
        "{why}"
    );
    let mut other = b.clone();
    other.info.config["segment"]["start_at_unix_ms"] = 6_000.into();
    assert!(e(&[a.clone(), other]).contains("config 'segment' differs"));
    let mut other = b.clone();
    other.info.urls = vec!["GET http://127.0.0.1:2/".into()];
    assert!(e(&[a.clone(), other]).contains("urls differs"));

    let mut late = b.clone();
    late.steps[1].start_unix_ms += 1_500;
    let why = e(&[a.clone(), late]);
    assert!(
        why.starts_with("step 2: 'seg1' started 1507 ms apart"),
        "{why}"
    );
    let mut other_load = b.clone();
    other_load.steps[0].offered = 250.0;
    assert!(e(&[a.clone(), other_load]).contains("did not run the same step"));

    let mut old = b.clone();
    old.steps[0].hists = None;
    assert!(e(&[a.clone(), old]).contains("no service-time histogram"));

    for why in [e(std::slice::from_ref(&a)), e(&[])] {
        assert!(!why.contains('\n'), "{why}");
    }
}

#[test]
fn segments_that_stopped_apart_merge_the_steps_all_ran() {
    let v = [values(1, 50), values(2, 50)];
    let a = segment(0, 2, &v);
    let mut b = segment(1, 2, &v);
    b.steps.truncate(1);
    b.info.stop_reason = Some("step 1 failed".into());
    let m = merge(&[a, b]).unwrap();
    assert_eq!(m.steps.len(), 1);
    assert!(!m.info.complete);
    assert!(
        m.notes[0].contains("merged the 1 steps all ran"),
        "{:?}",
        m.notes
    );
    assert!(m
        .info
        .stop_reason
        .unwrap()
        .starts_with("the segments stopped differently"));
}

#[test]
fn counts_beyond_u64_are_refused_not_wrapped() {
    let v = [values(1, 50), values(2, 50)];
    let mut a = segment(0, 2, &v);
    let b = segment(1, 2, &v);
    // u64::MAX + 25 would wrap to 24 and be reported as if it were a count.
    a.steps[0].summary.requests = u64::MAX - b.steps[0].summary.requests + 25;
    let e = merge(&[a.clone(), b.clone()]).err().unwrap();
    assert!(
        e.starts_with("step 1 of 'seg1': requests") && e.contains("overflows"),
        "{e}"
    );
    let mut a = segment(0, 2, &v);
    a.steps[1].summary.statuses.insert("200".into(), u64::MAX);
    let e = merge(&[a, b.clone()]).err().unwrap();
    assert!(e.contains("step 2 of 'seg1': statuses"), "{e}");
    let mut a = segment(0, 2, &v);
    a.series[0].responses = u64::MAX;
    let e = merge(&[a, b]).err().unwrap();
    assert!(e.contains("second 1's responses"), "{e}");
}

#[test]
fn a_segment_of_no_step_is_refused() {
    let v = [values(1, 50), values(2, 50)];
    let a = segment(0, 2, &v);
    let mut b = segment(1, 2, &v);
    b.steps.clear();
    let e = merge(&[a, b]).err().unwrap();
    assert_eq!(e, "'seg1/steps.jsonl' holds no step to merge");
}

/// Connection attempts add up across parts; a part written before they were counted leaves
/// the merged figure unknown (absent), never a sum that silently leaves its attempts out.
#[test]
fn connect_attempts_add_up_and_older_parts_leave_them_unknown() {
    let parts: Vec<[Vec<u64>; 2]> = (0..2).map(|i| [values(i, 10), values(i, 10)]).collect();
    let mut runs: Vec<RunData> = (0..2u32)
        .map(|i| segment(i, 2, &parts[i as usize]))
        .collect();
    for (i, r) in runs.iter_mut().enumerate() {
        for s in &mut r.steps {
            s.summary.connects = Some(crate::metrics::ConnectSummary {
                attempts: 10 + i as u64,
                failed: [("connect-refused".to_string(), 3 + i as u64)].into(),
                held_by_backoff: 100,
            });
        }
    }
    let m = merge(&runs).unwrap();
    let c = m.steps[0].0.summary.connects.clone().unwrap();
    assert_eq!(c.attempts, 21);
    assert_eq!(c.failed["connect-refused"], 7);
    assert_eq!(c.held_by_backoff, 200);
    // An older part (no `connects` in its JSON) still reads and merges.
    let mut old = serde_json::to_value(&runs[1].steps[0].summary).unwrap();
    old.as_object_mut().unwrap().remove("connects");
    runs[1].steps[0].summary = serde_json::from_value(old).unwrap();
    assert!(runs[1].steps[0].summary.connects.is_none());
    let m = merge(&runs).unwrap();
    assert!(m.steps[0].0.summary.connects.is_none());
    assert!(m.steps[1].0.summary.connects.is_some());
}

/// Live control's changes in a part are kept by the merge (a part steered alone changed
/// its share: said in the notes, the step flagged), in time order, and written back with the
/// merged seconds.
#[test]
fn a_steered_parts_changes_are_kept() {
    let v = [values(1, 50), values(2, 50)];
    let event = |t: f64, step: usize| crate::store::ControlEvent {
        event: "control".into(),
        t,
        step,
        what: "rate".into(),
        from: 50.0,
        to: 100.0,
        by: "port".into(),
    };
    let a = segment(0, 2, &v);
    let mut b = segment(1, 2, &v);
    b.events = vec![event(7.5, 1), event(2.5, 0), event(99.0, 9)];
    b.steps[0].flags.push("steered".into());
    let m = merge(&[a, b]).unwrap();
    let ts: Vec<f64> = m.events.iter().map(|e| e.t).collect();
    assert_eq!(
        ts,
        [2.5, 7.5],
        "sorted; a step not merged leaves its change out"
    );
    assert!(m
        .notes
        .iter()
        .any(|n| n.contains("steered by live control (2 change(s))")));
    assert!(m.steps[0].0.flags.contains(&"steered".to_string()));
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("merged");
    write(&out, &m).unwrap();
    let back = crate::store::load(&out).unwrap();
    assert_eq!(back.events, m.events);
    assert_eq!(
        back.series.len(),
        m.steps.iter().map(|s| s.1.len()).sum::<usize>()
    );
}
