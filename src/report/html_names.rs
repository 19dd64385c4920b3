//! The report's statistics per request name: a table over the whole run (every step added:
//! counts summed, the names' response-time histograms added, so percentiles stay exact), most
//! time spent first, and for a sweep "slowest names over load": the p95 of the names that
//! cost the most time, step by step, to see which request gives way first.
use super::charts::{chart_grid, load_axis, mark_load, PALETTE};
use super::model::RunReport;
use super::svg::{esc, Axis, Chart, Series};
use crate::metrics::histo;
use crate::metrics::names::{sort_names, NameSummary};
use crate::units::{fmt_ms, fmt_num};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Names drawn in "slowest names over load": more lines would be a tangle.
pub const TOP_NAMES: usize = 5;

/// The section, or nothing when the run had fewer than two names (the page says it all):
/// the table of `r`'s names over every step, the chart of the steps `drawn` (html::drawn).
pub fn section(r: &RunReport, drawn: &RunReport) -> String {
    let names = run_names(r);
    if names.len() < 2 {
        return String::new();
    }
    let mut o = String::from("<h2>Requests by name</h2>\n");
    table(&mut o, &names, r.steps.len() > 1);
    if r.steps.len() > 1 {
        let top: Vec<&str> = names
            .iter()
            .take(TOP_NAMES)
            .map(|n| n.name.as_str())
            .collect();
        o.push_str(&chart_grid(&[slowest_chart(drawn, &top)], "n"));
    }
    o
}

/// Each name over the run: one step's names as they are; several steps' added.
pub fn run_names(r: &RunReport) -> Vec<NameSummary> {
    if let [one] = r.steps.as_slice() {
        return one.summary.names.clone();
    }
    struct Acc {
        responses: u64,
        ok: u64,
        errors: BTreeMap<String, u64>,
        hist: Option<Histogram<u64>>,
        /// A step answered this name but kept no histogram (older results): no percentiles.
        missing: bool,
        spent: f64,
    }
    let mut acc: BTreeMap<&str, Acc> = BTreeMap::new();
    let mut secs = 0.0;
    for s in &r.steps {
        secs += s.summary.duration_s;
        for n in &s.summary.names {
            let a = acc.entry(&n.name).or_insert(Acc {
                responses: 0,
                ok: 0,
                errors: BTreeMap::new(),
                hist: None,
                missing: false,
                spent: 0.0,
            });
            a.responses += n.responses;
            a.ok += n.ok;
            a.spent += n.time_spent_s;
            for (k, c) in &n.errors {
                *a.errors.entry(k.clone()).or_insert(0) += c;
            }
            if n.response_time_ms.count == 0 {
                continue;
            }
            let h = s
                .hists
                .as_ref()
                .and_then(|h| h.names.get(&n.name))
                .and_then(|t| histo::decode(t));
            match (h, &mut a.hist) {
                (Some(h), Some(m)) => a.missing |= m.add(&h).is_err(),
                (Some(h), None) => a.hist = Some(h),
                (None, _) => a.missing = true,
            }
        }
    }
    let empty = crate::metrics::names::new_name_hist();
    let mut names: Vec<NameSummary> = acc
        .into_iter()
        .map(|(name, a)| {
            let hist = a.hist.as_ref().filter(|_| !a.missing).unwrap_or(&empty);
            let mut n = NameSummary::from_parts(name, a.responses, a.ok, a.errors, hist, secs);
            n.time_spent_s = a.spent;
            n
        })
        .collect();
    sort_names(&mut names);
    names
}

fn table(o: &mut String, names: &[NameSummary], several_steps: bool) {
    let checks = names.iter().any(|n| n.checks_failed().is_some());
    let _ = writeln!(
        o,
        "<p class=\"muted\">Most time spent first{}.</p>",
        if several_steps {
            "; every step added"
        } else {
            ""
        }
    );
    o.push_str("<div class=\"tablewrap fit\"><table>\n<thead><tr><th class=\"l\">name</th>");
    o.push_str("<th>count</th><th>req/s</th><th>failed</th>");
    if checks {
        o.push_str("<th>checks failed</th>");
    }
    o.push_str("<th>p50</th><th>p95</th><th>p99</th><th>total time</th></tr></thead>\n<tbody>\n");
    for n in names {
        let failed = n.checks_failed().unwrap_or(0);
        let errors = n.failed();
        let bad = |v: u64| {
            if v > 0 {
                format!("<td class=\"bad\">{v}</td>")
            } else {
                format!("<td>{v}</td>")
            }
        };
        let _ = write!(
            o,
            "<tr><td class=\"l\"><code>{}</code></td><td>{}</td><td>{}</td>{}",
            esc(&n.name),
            n.requests,
            fmt_num(n.throughput),
            bad(errors)
        );
        if checks {
            o.push_str(&bad(failed));
        }
        let l = &n.response_time_ms;
        for v in [l.p50, l.p95, l.p99] {
            let cell = if l.count > 0 && v.is_finite() {
                fmt_ms(v)
            } else {
                "–".to_string()
            };
            let _ = write!(o, "<td>{cell}</td>");
        }
        let _ = writeln!(o, "<td>{}</td></tr>", fmt_ms(n.time_spent_s * 1e3));
    }
    o.push_str("</tbody></table></div>\n");
}

/// The p95 of each of `top` per step; a step where a name had no answer leaves a gap.
pub fn slowest_chart(r: &RunReport, top: &[&str]) -> Chart {
    let offered: Vec<f64> = r.steps.iter().map(|s| s.offered).collect();
    let mut c = Chart::new(
        "Slowest names over load (p95)",
        load_axis(r.is_open(), &offered),
        Axis::log("p95 response time (ms, log scale)"),
    );
    c.empty_note = "no name answered in two steps".to_string();
    for (i, name) in top.iter().enumerate() {
        let points = r
            .steps
            .iter()
            .map(|s| {
                let p95 = s
                    .summary
                    .names
                    .iter()
                    .find(|n| n.name == *name)
                    .filter(|n| n.response_time_ms.count > 0)
                    .map_or(f64::NAN, |n| n.response_time_ms.p95);
                (s.offered, p95)
            })
            .collect();
        c.add(Series::new(*name, PALETTE[i % PALETTE.len()], points));
    }
    mark_load(&mut c, r);
    c
}

#[cfg(test)]
mod tests {
    use super::super::testdata;
    use super::*;
    use crate::metrics::LatencyStats;
    use crate::store::{RunData, StepHists};

    /// A name whose `n` responses took `ms` each, with its histogram in the step.
    fn put(s: &mut crate::store::StepRecord, name: &str, n: u64, ms: u64, checks: u64) {
        let mut h = crate::metrics::names::new_name_hist();
        h.record_n(ms * 1000, n).unwrap();
        let mut errors = BTreeMap::new();
        if checks > 0 {
            errors.insert("check-failed".to_string(), checks);
        }
        let summary = NameSummary::from_parts(name, n, n, errors, &h, s.summary.duration_s);
        s.summary.names.push(summary);
        s.hists
            .get_or_insert_with(StepHists::default)
            .names
            .insert(name.to_string(), histo::encode(&h));
    }

    fn report(steps: Vec<crate::store::StepRecord>) -> RunReport {
        RunReport::from_data(RunData {
            dir: "/tmp/x".into(),
            info: testdata::info("t", "open", None),
            steps,
            series: vec![],
            events: Vec::new(),
            skipped: vec![],
        })
    }

    #[test]
    fn steps_add_up_exactly_and_sort_by_time_spent() {
        let mut steps = testdata::open_sweep();
        steps.truncate(2);
        put(&mut steps[0], "/fast", 100, 2, 0);
        put(&mut steps[0], "login", 10, 50, 3);
        put(&mut steps[1], "/fast", 100, 4, 0);
        put(&mut steps[1], "login", 10, 100, 0);
        let r = report(steps);
        let names = run_names(&r);
        assert_eq!(names[0].name, "login", "1.5 s spent against 0.6 s");
        let login = &names[0];
        assert_eq!((login.responses, login.checks_failed()), (20, Some(3)));
        assert!(
            (login.time_spent_s - 1.5).abs() < 0.02,
            "{}",
            login.time_spent_s
        );
        // Half its answers took 50 ms, half 100 ms: the p95 is the slow half's, to 1%.
        let p95 = login.response_time_ms.p95;
        assert!((p95 - 100.0).abs() <= 1.0, "{p95}");
        assert!((names[1].response_time_ms.p50 - 2.0).abs() <= 0.05);
        let html = section(&r, &r);
        assert!(html.contains("<h2>Requests by name</h2>"));
        assert!(html.contains("<th>checks failed</th>"));
        let login_row = html.find("<code>login</code>").unwrap();
        assert!(login_row < html.find("<code>/fast</code>").unwrap());
        assert!(html.contains("Slowest names over load (p95)"), "{html}");
        assert!(html.contains("<svg"));
    }

    #[test]
    fn a_step_without_histograms_leaves_no_made_up_percentile() {
        let mut steps = testdata::open_sweep();
        steps.truncate(2);
        put(&mut steps[0], "/a", 10, 5, 0);
        put(&mut steps[0], "/b", 10, 5, 0);
        put(&mut steps[1], "/a", 10, 5, 0);
        steps[1].hists = None;
        let names = run_names(&report(steps));
        let a = names.iter().find(|n| n.name == "/a").unwrap();
        assert_eq!(a.responses, 20);
        assert_eq!(a.response_time_ms, LatencyStats::default());
        let b = names.iter().find(|n| n.name == "/b").unwrap();
        assert!((b.response_time_ms.p50 - 5.0).abs() < 0.1);
    }

    #[test]
    fn one_name_or_one_step() {
        let mut steps = testdata::open_sweep();
        steps.truncate(1);
        put(&mut steps[0], "/only", 10, 5, 0);
        assert_eq!(
            {
                let r = report(steps.clone());
                section(&r, &r)
            },
            "",
            "one name: nothing to tell apart"
        );
        put(&mut steps[0], "/other", 10, 5, 0);
        let r = report(steps);
        let html = section(&r, &r);
        assert!(html.contains("<code>/other</code>"));
        assert!(!html.contains("<svg"), "one step: no chart over load");
        assert!(!html.contains("checks failed"));
    }
}
