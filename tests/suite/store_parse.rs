//! The results-file parsers on the fuzz seeds (fuzz/seeds/results_files): well-formed lines
//! are read, a truncated last line is skipped and named.
use overload::store::{parse_series, parse_steps};

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        seeds_parse,
        series_event_lines_are_read_apart_from_the_seconds,
        older_steps_without_retries_still_parse
    ]
}

const SEEDS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fuzz/seeds/results_files");

fn seeds_parse() {
    let text = std::fs::read_to_string(format!("{SEEDS}/steps.jsonl")).unwrap();
    let mut skipped = Vec::new();
    let steps = parse_steps(&text, "steps.jsonl", &mut skipped);
    assert_eq!((steps.len(), skipped.len()), (6, 0), "{skipped:?}");
    assert_eq!(steps[3].summary.retries, 3);
    let a = overload::analysis::analyze("open", &steps, None);
    assert!(a.saturation.is_some());

    let text = std::fs::read_to_string(format!("{SEEDS}/steps-closed.jsonl")).unwrap();
    let mut skipped = Vec::new();
    let steps = parse_steps(&text, "steps-closed.jsonl", &mut skipped);
    // The first line is the SLO expression the fuzz target also tries.
    assert_eq!((steps.len(), skipped.len()), (4, 1), "{skipped:?}");
    assert!(skipped[0].starts_with("steps-closed.jsonl:1: skipped invalid line"));

    let text = std::fs::read_to_string(format!("{SEEDS}/series.jsonl")).unwrap();
    let mut skipped = Vec::new();
    let (series, events) = parse_series(&text, "series.jsonl", &mut skipped);
    assert_eq!((series.len(), events.len()), (30, 0));
    assert_eq!(skipped.len(), 1);
    assert!(skipped[0].contains("series.jsonl:31: skipped truncated last line"));
}

/// Live control's event lines in series.jsonl are read apart from the seconds (an older
/// reader skipped them as lines it did not know); a damaged event line is reported as an
/// event's, not a second's.
fn series_event_lines_are_read_apart_from_the_seconds() {
    let text = std::fs::read_to_string(format!("{SEEDS}/series.jsonl")).unwrap();
    let mut lines: Vec<&str> = text.lines().take(3).collect();
    let event =
        r#"{"event":"control","t":1.25,"step":0,"what":"rate","from":50.0,"to":100.0,"by":"keys"}"#;
    lines.insert(1, event);
    lines.push(r#"{"event":"control","t":"soon"}"#);
    let mut skipped = Vec::new();
    let (series, events) = parse_series(&(lines.join("\n") + "\n"), "series.jsonl", &mut skipped);
    assert_eq!(series.len(), 3);
    assert_eq!(events.len(), 1);
    assert_eq!((events[0].what.as_str(), events[0].to), ("rate", 100.0));
    assert_eq!(events[0].label(), "rate 50→100 (keys)");
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(skipped[0].contains("series.jsonl:5:"), "{skipped:?}");
}

fn older_steps_without_retries_still_parse() {
    let text = std::fs::read_to_string(format!("{SEEDS}/steps.jsonl")).unwrap();
    let line = text.lines().next().unwrap().replace("\"retries\": 0, ", "");
    assert!(!line.contains("retries"));
    let mut skipped = Vec::new();
    let steps = parse_steps(&line, "old", &mut skipped);
    assert_eq!((steps.len(), skipped.len()), (1, 0), "{skipped:?}");
    assert_eq!(steps[0].summary.retries, 0);
}
