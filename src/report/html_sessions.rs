//! The report's account of scenario users: the sessions of an open-loop scenario run (how
//! many arrivals started, completed, failed or were dropped at `--max-sessions`), and the
//! load time of each page with a burst (its answer and its resources), step by step. Page
//! loads are kept as percentiles per step, not as histograms, so they are shown per step
//! rather than added over the run.
use super::model::RunReport;
use super::svg::esc;
use crate::units::{fmt_ms, fmt_num};
use std::fmt::Write;

/// The section, or nothing when no step had sessions or page loads.
pub fn section(r: &RunReport) -> String {
    let mut o = String::new();
    sessions(&mut o, r);
    page_loads(&mut o, r);
    o
}

fn sessions(o: &mut String, r: &RunReport) {
    if r.steps.iter().all(|s| s.summary.sessions.is_none()) {
        return;
    }
    o.push_str(
        "<h2>Sessions</h2>\n<div class=\"tablewrap\"><table>\n<thead><tr><th>#</th>\
         <th>offered sessions/s</th><th>started</th><th>completed</th><th>completed /s</th>\
         <th>failed</th><th>dropped</th></tr></thead>\n<tbody>\n",
    );
    for s in &r.steps {
        let Some(x) = &s.summary.sessions else {
            continue;
        };
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            s.step + 1,
            fmt_num(x.offered_per_s),
            x.started,
            x.completed,
            fmt_num(x.completed_per_s),
            x.failed,
            x.dropped
        );
    }
    o.push_str(
        "</tbody></table></div>\n<p class=\"sub\">Dropped: arrivals that found \
         --max-sessions sessions in flight; sessions still going when the step ended are \
         started but neither completed nor failed.</p>\n",
    );
}

fn page_loads(o: &mut String, r: &RunReport) {
    let rows: Vec<_> = r
        .steps
        .iter()
        .flat_map(|s| {
            s.summary.names.iter().filter_map(move |n| {
                let l = n.page_load_ms.as_ref().filter(|l| l.count > 0)?;
                Some((s, n, l))
            })
        })
        .collect();
    if rows.is_empty() {
        return;
    }
    o.push_str(
        "<h2>Page loads</h2>\n<div class=\"tablewrap\"><table>\n<thead><tr><th>#</th>\
         <th class=\"l\">page</th><th>loads</th><th>p50</th><th>p95</th><th>p99</th>\
         <th>max</th><th>its own answer p50</th></tr></thead>\n<tbody>\n",
    );
    for (s, n, l) in rows {
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            s.step + 1,
            esc(&n.name),
            l.count,
            fmt_ms(l.p50),
            fmt_ms(l.p95),
            fmt_ms(l.p99),
            fmt_ms(l.max),
            fmt_ms(n.response_time_ms.p50)
        );
    }
    o.push_str(
        "</tbody></table></div>\n<p class=\"sub\">A page's load: from its request's \
         intended time until its answer and every resource of its burst have arrived.</p>\n",
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{LatencyStats, NameSummary, SessionSummary};

    #[test]
    fn sessions_and_page_loads_per_step_or_nothing() {
        use crate::report::testdata;
        let mut r = RunReport::from_data(crate::store::RunData {
            dir: "/tmp/x".into(),
            info: testdata::info("t", "open", None),
            steps: testdata::open_sweep(),
            series: vec![],
            events: Vec::new(),
            skipped: vec![],
        });
        assert_eq!(
            section(&r),
            "",
            "a run without scenario users has no section"
        );
        r.steps[0].summary.sessions = Some(SessionSummary {
            offered_per_s: 50.0,
            started: 150,
            completed: 143,
            completed_per_s: 47.7,
            failed: 2,
            dropped: 5,
        });
        r.steps[1].summary.names = vec![NameSummary {
            name: "home<&>".into(),
            response_time_ms: LatencyStats {
                p50: 20.5,
                count: 10,
                ..Default::default()
            },
            page_load_ms: Some(LatencyStats {
                p50: 51.2,
                p95: 80.0,
                p99: 95.0,
                max: 99.0,
                count: 10,
                ..Default::default()
            }),
            ..Default::default()
        }];
        let html = section(&r);
        assert!(html.contains("<h2>Sessions</h2>"), "{html}");
        assert!(html.contains(
            "<tr><td>1</td><td>50</td><td>150</td><td>143</td><td>47.7</td><td>2</td><td>5</td></tr>"
        ));
        // Only the step with sessions has a row.
        assert_eq!(html.matches("<tr><td>").count(), 2, "{html}");
        assert!(html.contains("<h2>Page loads</h2>"));
        assert!(html.contains("<td>2</td><td class=\"l\">home&lt;&amp;&gt;</td><td>10</td>"));
        assert!(html.contains(&fmt_ms(51.2)) && html.contains(&fmt_ms(20.5)));
    }
}
