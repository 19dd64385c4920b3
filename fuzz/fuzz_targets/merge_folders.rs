//! What `overload merge` reads, crafted: HdrHistogram encodings, and two segments' run.json
//! and steps.jsonl merged. Byte 0 picks the mode: odd, the rest is a histogram's bytes (under
//! the base64 of a results file); even, the rest is text cut at lines `--` into run.json and
//! steps.jsonl of segment 0, then of segment 1 (seeds in seeds/merge_folders). Oracle: no
//! panic and no allocation beyond the bounds; a decoded histogram holds at most
//! `histo::MAX_BINS` counters; a merge that succeeds has no more steps than its shortest
//! segment, and its histograms decode.
#![no_main]
use libfuzzer_sys::fuzz_target;
use overload::merge::merge;
use overload::metrics::histo;
use overload::store::{parse_steps, RunData, RunInfo};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 1 {
        if let Ok(h) = histo::decode_bytes(rest.to_vec()) {
            assert!(h.distinct_values() as u64 <= histo::MAX_BINS);
        }
        return;
    }
    let text = String::from_utf8_lossy(rest);
    let parts: Vec<&str> = text.split("\n--\n").collect();
    let mut runs = Vec::new();
    for (i, pair) in parts.chunks(2).take(2).enumerate() {
        let Ok(info) = serde_json::from_str::<RunInfo>(pair[0]) else {
            return;
        };
        let mut skipped = Vec::new();
        let steps = parse_steps(pair.get(1).copied().unwrap_or(""), "steps.jsonl", &mut skipped);
        runs.push(RunData {
            dir: format!("seg{i}").into(),
            info,
            steps,
            series: Vec::new(),
            events: Vec::new(),
            skipped,
        });
    }
    let shortest = runs.iter().map(|r| r.steps.len()).min().unwrap_or(0);
    if let Ok(m) = merge(&runs) {
        assert!(m.steps.len() <= shortest);
        for (s, _) in &m.steps {
            if s.summary.responses > 0 {
                assert!(histo::decode(&s.response_time_hist).is_some());
            }
        }
    }
});
