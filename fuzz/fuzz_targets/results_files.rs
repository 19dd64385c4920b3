//! The results-folder reader on arbitrary text: steps.jsonl and series.jsonl lines, then the
//! analysis of whatever steps parsed (saturation, Little's law, SLO). Oracle: no panic, and
//! every line is either read or reported as skipped. The first line is also tried as an SLO.
#![no_main]
use libfuzzer_sys::fuzz_target;
use overload::analysis::{analyze, slo};
use overload::store::{parse_series, parse_steps};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let lines = text.lines().filter(|l| !l.trim().is_empty()).count();
    let mut skipped = Vec::new();
    let steps = parse_steps(&text, "steps.jsonl", &mut skipped);
    assert_eq!(steps.len() + skipped.len(), lines);
    let mut skipped = Vec::new();
    let (series, events) = parse_series(&text, "series.jsonl", &mut skipped);
    assert_eq!(series.len() + events.len() + skipped.len(), lines);
    // The first line doubles as an SLO expression, to reach the SLO parser too.
    let first = text.lines().next().unwrap_or("");
    let slos = [
        slo::parse(first).ok(),
        slo::parse("p99<100ms,errors<1%").ok(),
    ];
    for mode in ["open", "closed"] {
        let _ = analyze(mode, &steps, None);
        for s in slos.iter().flatten() {
            let _ = analyze(mode, &steps, Some(s));
        }
    }
});
