//! The statistics per request name in the terminal: one row per name, most time spent first,
//! so the URL that costs the users most is on top.
use crate::metrics::{NameSummary, Summary};
use crate::units::{fmt_ms, fmt_num};
use std::fmt::Write;

/// Widest name column; longer names are cut in the middle (their start and end tell them apart).
const NAME_WIDTH: usize = 40;

/// The table, or nothing when the run had fewer than two names (the summary above says it all).
pub fn table(s: &Summary) -> String {
    if s.names.len() < 2 {
        return String::new();
    }
    // The column shows once scenarios count failed checks; a plain URL mix has none to count.
    let checks = s.names.iter().any(|n| n.checks_failed().is_some());
    let width = s
        .names
        .iter()
        .map(|n| n.name.chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, NAME_WIDTH);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "\n  per name ({} names, most time spent first)",
        s.names.len()
    );
    let _ = write!(
        o,
        "  {:<width$} {:>9} {:>10} {:>8}",
        "name", "count", "req/s", "failed"
    );
    if checks {
        let _ = write!(o, " {:>8}", "checks");
    }
    let _ = writeln!(o, " {:>9} {:>9} {:>9}", "p50", "p95", "p99");
    for n in &s.names {
        row(&mut o, n, width, checks);
    }
    o.push_str(&page_loads(s, width));
    o
}

/// Pages with a burst: their load time (the page's answer and its burst's), beside their
/// own response time above.
fn page_loads(s: &Summary, width: usize) -> String {
    let mut o = String::new();
    for n in &s.names {
        let Some(l) = n.page_load_ms.as_ref().filter(|l| l.count > 0) else {
            continue;
        };
        if o.is_empty() {
            let _ = writeln!(
                o,
                "\n  page load: a page and its burst of resources\n  {:<width$} {:>9} {:>9} {:>9} {:>9}",
                "name", "count", "p50", "p95", "p99"
            );
        }
        let _ = writeln!(
            o,
            "  {:<width$} {:>9} {:>9} {:>9} {:>9}",
            shorten(&n.name, width),
            l.count,
            fmt_ms(l.p50),
            fmt_ms(l.p95),
            fmt_ms(l.p99)
        );
    }
    o
}

fn row(o: &mut String, n: &NameSummary, width: usize, checks: bool) {
    let _ = write!(
        o,
        "  {:<width$} {:>9} {:>10} {:>8}",
        shorten(&n.name, width),
        n.requests,
        fmt_num(n.throughput),
        n.failed(),
    );
    if checks {
        let _ = write!(o, " {:>8}", n.checks_failed().unwrap_or(0));
    }
    let l = &n.response_time_ms;
    if l.count == 0 {
        let _ = writeln!(o, " {:>9} {:>9} {:>9}", "-", "-", "-");
    } else {
        let _ = writeln!(
            o,
            " {:>9} {:>9} {:>9}",
            fmt_ms(l.p50),
            fmt_ms(l.p95),
            fmt_ms(l.p99)
        );
    }
}

/// `name` in at most `width` characters: its start and end around an ellipsis.
fn shorten(name: &str, width: usize) -> String {
    let n = name.chars().count();
    if n <= width {
        return name.to_string();
    }
    let head = (width - 1) / 2;
    let tail = width - 1 - head;
    let start: String = name.chars().take(head).collect();
    let end: String = name.chars().skip(n - tail).collect();
    format!("{start}…{end}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::LatencyStats;

    fn name(n: &str, count: u64, p50: f64) -> NameSummary {
        NameSummary {
            name: n.into(),
            requests: count,
            responses: count,
            ok: count,
            throughput: count as f64 / 10.0,
            response_time_ms: LatencyStats {
                p50,
                p95: p50 * 2.0,
                p99: p50 * 3.0,
                count,
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[test]
    fn one_row_per_name_in_summary_order_and_none_for_one_name() {
        let mut s = crate::analysis::tests::summary(100.0, 100.0, 5.0, 0);
        s.names = vec![name("/slow", 100, 100.0), name("/fast", 900, 2.0)];
        let t = table(&s);
        let lines: Vec<&str> = t.lines().filter(|l| !l.is_empty()).collect();
        assert!(lines[0].contains("per name (2 names"), "{t}");
        assert!(lines[1].contains("name") && lines[1].contains("p95"), "{t}");
        assert!(!lines[1].contains("checks"), "{t}");
        assert!(
            lines[2].starts_with("  /slow") && lines[2].contains("100ms"),
            "{t}"
        );
        assert!(
            lines[3].starts_with("  /fast") && lines[3].contains("900"),
            "{t}"
        );
        s.names.truncate(1);
        assert_eq!(table(&s), "");
    }

    #[test]
    fn failed_checks_get_their_column_once_counted() {
        let mut s = crate::analysis::tests::summary(100.0, 100.0, 5.0, 0);
        let mut a = name("/login", 10, 5.0);
        a.errors = [("check-failed".to_string(), 3), ("timeout".to_string(), 1)].into();
        a.error_count = 4;
        s.names = vec![a, name("/home", 10, 1.0)];
        let t = table(&s);
        assert!(t.contains("checks"), "{t}");
        let login = t.lines().find(|l| l.contains("/login")).unwrap();
        let cols: Vec<&str> = login.split_whitespace().collect();
        // name, count, req/s, failed (transport), checks, p50, p95, p99
        assert_eq!(cols[3..5], ["1", "3"], "{login}");
    }

    /// A name whose answers were all 404 failed every request, as the summary counts it
    /// (`--ok-status`, 2xx/3xx by default): its row says so, transport errors added.
    #[test]
    fn answers_outside_ok_status_are_failures_of_their_name() {
        let mut s = crate::analysis::tests::summary(100.0, 100.0, 5.0, 0);
        let mut missing = name("/status/404", 127, 1.0);
        missing.ok = 0;
        let mut css = name("/style.css", 14, 1.0);
        (css.ok, css.requests) = (2, 16);
        css.errors = [("timeout".to_string(), 2)].into();
        css.error_count = 2;
        s.names = vec![missing, css, name("/", 10, 1.0)];
        let cols = |n: &str| -> Vec<String> {
            let t = table(&s);
            let l = t.lines().find(|l| l.contains(n)).unwrap().to_string();
            l.split_whitespace().map(String::from).collect()
        };
        assert!(table(&s).lines().nth(2).unwrap().contains("failed"));
        assert_eq!(cols("/status/404")[3], "127");
        assert_eq!(
            cols("/style.css")[3],
            "14",
            "12 answers outside 2xx/3xx, 2 timeouts"
        );
        assert_eq!(cols("/ ")[3], "0");
    }

    #[test]
    fn long_names_keep_their_ends() {
        let long = format!("/a{}z", "b".repeat(100));
        let s = shorten(&long, 11);
        assert_eq!(s.chars().count(), 11);
        assert!(
            s.starts_with("/abbb") && s.ends_with("bbz") && s.contains('…'),
            "{s}"
        );
        assert_eq!(shorten("/x", 11), "/x");
    }
}
