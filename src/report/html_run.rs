//! The page of a one-step results folder (`overload run --out DIR`): a run has no load axis,
//! so instead of a sweep's charts against load (one dot each) it shows the run's headline
//! figures, its seconds (rate, response-time percentiles, send lag), its response-time
//! histogram and percentile distribution, and the server side second by second. The sweep's
//! words (saturation, capacity, "vs offered") have no meaning for one load level and are
//! left out; what the analysis found wrong with the step is said in the run's own words.
use super::charts::{self, chart_grid};
use super::html::{
    capitalized, card, fmt_span, lasted, notes_list, page_end, page_start, run_info,
};
use super::model::RunReport;
use super::server;
use super::svg::esc;
use crate::metrics::LatencyStats;
use crate::units::{fmt_ms, fmt_num, fmt_unix_ms};
use std::fmt::Write;

/// The page of `r`, which holds exactly one step.
pub fn render(r: &RunReport) -> String {
    let d = super::html::drawn(r);
    let info = &r.data.info;
    let s = &r.steps[0];
    let m = &s.summary;
    let name = r.name();
    let mut o = page_start(&format!("overload report: {name}"));

    let _ = writeln!(o, "<header>\n<h1>{}</h1>", esc(&name));
    let span = lasted(info);
    let _ = writeln!(
        o,
        "<p class=\"sub\">{} · {} loop at {} · started {}{} · {}</p>",
        esc(&info.kind),
        esc(&info.mode),
        esc(&load_words(r)),
        esc(&fmt_unix_ms(info.started_unix_ms)),
        span,
        info.urls
            .iter()
            .map(|u| format!("<code>{}</code>", esc(u)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if !r.complete() {
        let _ = writeln!(
            o,
            "<div class=\"banner incomplete\"><strong>Incomplete run</strong> — the run did not finish{}. \
             The figures cover what was measured before it stopped.",
            info.stop_reason
                .as_deref()
                .map(|s| format!(" (stopped: {})", esc(s)))
                .unwrap_or_default(),
        );
        notes_list(&mut o, &d.notes);
        o.push_str("</div>\n");
    } else if !d.notes.is_empty() {
        o.push_str("<div class=\"banner note\"><strong>Notes</strong>");
        notes_list(&mut o, &d.notes);
        o.push_str("</div>\n");
    }
    let _ = writeln!(o, "<p class=\"verdict\">{}</p>", esc(&verdict(r)));
    // On a ramp the knee and its verdict are the ramp's (one level's verdict means little).
    match &r.ramp {
        Some(ramp) => {
            let _ = writeln!(
                o,
                "<p class=\"verdict\">{}</p>",
                esc(&capitalized(&ramp.describe()))
            );
            if let Some(b) = &ramp.bottleneck {
                o.push_str(&super::bottleneck::html(b));
            }
        }
        None => {
            if let Some(b) = &r.analysis.bottleneck {
                o.push_str(&super::bottleneck::html(b));
            }
        }
    }

    o.push_str("<div class=\"cards\">\n");
    let answered = m.responses > 0;
    let kept_up = !r.is_open() || s.offered <= 0.0 || m.throughput >= 0.95 * s.offered;
    card(
        &mut o,
        if kept_up { "info" } else { "bad" },
        "Throughput",
        &format!("{} /s", fmt_num(m.throughput)),
        &format!(
            "responses per second{}; goodput {} /s",
            if r.is_open() {
                format!(" of {} req/s offered", fmt_num(s.offered))
            } else {
                String::new()
            },
            fmt_num(m.goodput)
        ),
    );
    card(
        &mut o,
        "info",
        "Response time p99",
        &if answered {
            fmt_ms(m.response_time_ms.p99)
        } else {
            "–".to_string()
        },
        &if answered {
            format!(
                "p50 {}, p99.9 {}, max {}",
                fmt_ms(m.response_time_ms.p50),
                fmt_ms(m.response_time_ms.p999),
                fmt_ms(m.response_time_ms.max)
            )
        } else {
            "no responses".to_string()
        },
    );
    let non_ok = m.not_ok_count();
    card(
        &mut o,
        if m.error_count > 0 || non_ok > 0 {
            "bad"
        } else {
            "good"
        },
        "Errors",
        &pct(m.error_count, m.requests),
        &format!(
            "{} transport errors of {} requests; {} non-2xx/3xx answers",
            fmt_num(m.error_count as f64),
            fmt_num(m.requests as f64),
            fmt_num(non_ok as f64)
        ),
    );
    match &info.slo {
        Some(slo) => card(
            &mut o,
            if s.slo_ok == Some(false) || r.analysis.capacity.is_none() {
                "bad"
            } else {
                "good"
            },
            "SLO",
            if r.analysis.capacity.is_some() {
                "met"
            } else {
                "missed"
            },
            slo,
        ),
        None if r.analysis.generator_bound.is_empty() => card(
            &mut o,
            "good",
            "Generator",
            "OK",
            &format!(
                "send lag p99 {}: overload kept to its schedule",
                fmt_ms(m.send_lag_ms.p99)
            ),
        ),
        None => card(
            &mut o,
            "warn",
            "Generator",
            "suspect",
            &format!(
                "send lag p99 {}: these figures are about overload, not the server",
                fmt_ms(m.send_lag_ms.p99)
            ),
        ),
    }
    o.push_str("</div>\n</header>\n");

    o.push_str("<h2>Timeline</h2>\n");
    o.push_str(&chart_grid(&charts::run_charts(&d), "t"));
    let server = server::run_server_charts(&d);
    if !server.is_empty() {
        o.push_str("<h2>Server</h2>\n");
        o.push_str(&chart_grid(&server, "s"));
    }

    o.push_str("<h2>Response times</h2>\n");
    times_table(&mut o, r);
    o.push_str(&chart_grid(&super::hist::charts(&d), "d"));
    o.push_str(&super::html_names::section(r, &d));
    o.push_str(&super::html_sessions::section(&d));
    o.push_str(&super::tls::section(&d));
    o.push_str(&super::audit::section(r));

    o.push_str("<h2>Findings</h2>\n<ul class=\"findings\">\n");
    let found = findings(r);
    if found.is_empty() {
        o.push_str("<li class=\"muted\">nothing to report: no errors, no finding</li>\n");
    }
    for f in &found {
        let _ = writeln!(o, "<li>{}</li>", esc(f));
    }
    o.push_str("</ul>\n");

    o.push_str("<h2>Run</h2>\n");
    run_info(&mut o, r);
    o.push_str(&page_end(&format!(
        "Generated by overload {} from {}",
        env!("CARGO_PKG_VERSION"),
        r.dir_shown()
    )));
    o
}

/// "200 req/s offered" or "16 users"; on stages, the stages and the mean (or peak) level.
fn load_words(r: &RunReport) -> String {
    let s = &r.steps[0];
    if let Some(st) = r.data.info.config.get("stages").and_then(|v| v.as_str()) {
        return if r.is_open() {
            format!(
                "stages {st} ({} offered on average)",
                r.load_text(s.offered)
            )
        } else {
            format!("stages {st} (at most {})", r.load_text(s.offered))
        };
    }
    if r.is_open() {
        format!("{} offered", r.load_text(s.offered))
    } else {
        r.load_text(s.offered)
    }
}

fn pct(n: u64, of: u64) -> String {
    if of == 0 {
        "–".to_string()
    } else {
        format!("{:.2}%", n as f64 * 100.0 / of as f64)
    }
}

/// One sentence: what the run measured, and what went wrong if anything did.
pub fn verdict(r: &RunReport) -> String {
    let s = &r.steps[0];
    let m = &s.summary;
    let mut v = format!(
        "{} responses in {}: {} responses/s at {}",
        fmt_num(m.responses as f64),
        fmt_span(m.duration_s),
        fmt_num(m.throughput),
        load_words(r)
    );
    if m.responses > 0 {
        let _ = write!(
            v,
            ", response time p50 {} and p99 {}",
            fmt_ms(m.response_time_ms.p50),
            fmt_ms(m.response_time_ms.p99)
        );
    }
    v.push('.');
    // The analysis's reasons for this step (throughput short of the offered rate, failed
    // requests, SLO failures) read as they are for one run.
    if let Some(sat) = &r.analysis.saturation {
        let _ = write!(
            v,
            " The server did not keep up: {}.",
            sat.reasons.join("; ")
        );
    }
    if !r.analysis.generator_bound.is_empty() {
        v.push_str(" Warning: the generator limited this run; its figures are about overload.");
    }
    capitalized(&v)
}

/// The analysis's findings that mean something for one run: not the sweep's saturation
/// point and capacity (the verdict says the same of one step in its words); "step 1: "
/// dropped, as there is no other.
fn findings(r: &RunReport) -> Vec<String> {
    const SWEEP_ONLY: [&str; 4] = [
        "no saturation up to",
        "saturation at ",
        "capacity under SLO",
        "no step met the SLO",
    ];
    let mut out: Vec<String> = r
        .analysis
        .findings
        .iter()
        .filter(|f| !SWEEP_ONLY.iter().any(|p| f.starts_with(p)))
        .map(|f| {
            let f = f.strip_prefix("step 1: ").unwrap_or(f);
            f.replace("this step", "this run")
        })
        .collect();
    if !r.data.events.is_empty() {
        let changes: Vec<String> = r
            .data
            .events
            .iter()
            .map(|e| format!("{} at {:.1} s", e.label(), e.t))
            .collect();
        out.push(format!(
            "steered by live control: {} (marked on the timelines); the load was not one \
             fixed level, so these figures are no capacity",
            changes.join(", ")
        ));
    }
    out
}

/// Response time, service time, send lag and the rest: p50 to max, one row each.
fn times_table(o: &mut String, r: &RunReport) {
    let m = &r.steps[0].summary;
    o.push_str(
        "<div class=\"tablewrap fit\"><table>\n<thead><tr><th class=\"l\"></th><th>mean</th>\
         <th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>p99.9</th><th>max</th></tr></thead>\n<tbody>\n",
    );
    let mut row = |name: &str, title: &str, l: &LatencyStats| {
        if l.count == 0 && l.max == 0.0 {
            return;
        }
        let _ = writeln!(
            o,
            "<tr><td class=\"l\" title=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(title),
            esc(name),
            fmt_ms(l.mean),
            fmt_ms(l.p50),
            fmt_ms(l.p90),
            fmt_ms(l.p95),
            fmt_ms(l.p99),
            fmt_ms(l.p999),
            fmt_ms(l.max)
        );
    };
    row(
        "response time",
        "completion − intended send time: what a user feels",
        &m.response_time_ms,
    );
    row(
        "service time",
        "completion − actual send",
        &m.service_time_ms,
    );
    row(
        "send lag",
        "actual send − intended send time: the generator or its connections behind",
        &m.send_lag_ms,
    );
    row(
        "connect",
        "TCP connect of each new connection",
        &m.connect_time_ms,
    );
    row(
        "first byte",
        "write of the request to the first byte of its answer",
        &m.first_byte_ms,
    );
    o.push_str("</tbody></table></div>\n");
}

#[cfg(test)]
mod tests {
    use super::super::testdata;
    use super::*;
    use crate::store::RunData;

    /// The first step of the open sweep fixture, as `run --out` stores a run.
    fn one_run(steps: Vec<crate::store::StepRecord>) -> RunReport {
        let mut info = testdata::info("one", "open", None);
        info.kind = "run".into();
        let series = steps.iter().flat_map(testdata::series).collect();
        RunReport::from_data(RunData {
            dir: "/tmp/one".into(),
            info,
            steps,
            series,
            events: Vec::new(),
            skipped: vec![],
        })
    }

    /// A run on stages: its stages in the headline, its knee and verdict said, and the knee
    /// marked on the timelines where throughput left the offered line.
    #[test]
    fn a_ramp_shows_its_stages_and_its_knee() {
        let mut steps = testdata::open_sweep();
        steps.truncate(1);
        let mut r = one_run(steps);
        r.data.info.config["stages"] = "0s:50, 12s:600".into();
        let series: Vec<crate::store::SeriesPoint> = r.data.series.clone();
        r.ramp = Some(crate::analysis::ramp::RampAnalysis {
            mode: "open".into(),
            peak_offered: 577.0,
            peak_throughput: 401.0,
            knee: Some(crate::analysis::ramp::RampKnee {
                level: 398.0,
                uncertainty: 137.5,
                slope: 45.8,
                at_s: series.first().map_or(0.0, |p| p.t),
                second: 0,
            }),
            latency_rise: None,
            bottleneck: None,
        });
        // Without ramp.json (a merged folder), the knee is found on the series.
        let mut again = testdata::open_sweep();
        again.truncate(1);
        let mut info = testdata::info("one", "open", None);
        info.kind = "run".into();
        info.config["stages"] = "0s:50, 12s:600".into();
        let series = again.iter().flat_map(testdata::series).collect();
        let again = RunReport::from_data(RunData {
            dir: "/nonexistent/one".into(),
            info,
            steps: again,
            series,
            events: Vec::new(),
            skipped: vec![],
        });
        assert!(again.ramp.is_some(), "analysed from series.jsonl");
        assert!(super::super::html_page::render(&again).contains("Ramp: "));
        let html = super::super::html_page::render(&r);
        assert!(
            html.contains("stages 0s:50, 12s:600"),
            "the stages in the headline"
        );
        assert!(
            html.contains("Ramp: knee at 398 ± 138 req/s"),
            "the knee said"
        );
        assert!(html.contains("knee 398 req/s ± 138"), "the knee marked");
    }

    /// A steered run: each change of live control marked with its label on the timelines,
    /// and said in the findings (its figures are no capacity); the sweep page marks them too.
    #[test]
    fn a_steered_run_marks_its_changes_and_says_so() {
        let mut steps = testdata::open_sweep();
        steps.truncate(1);
        let mut r = one_run(steps);
        let plain = super::super::html_page::render(&r);
        assert!(
            !plain.contains("steered"),
            "an unsteered run says nothing of it"
        );
        r.data.events = vec![crate::store::ControlEvent {
            event: "control".into(),
            t: 4.25,
            step: 0,
            what: "rate".into(),
            from: 100.0,
            to: 150.0,
            by: "keys".into(),
        }];
        let html = super::super::html_page::render(&r);
        assert_eq!(
            html.matches("rate 100→150 (keys)").count(),
            4,
            "3 timelines + findings"
        );
        assert!(html.contains("steered by live control: rate 100→150 (keys) at 4.2 s"));
        let sweep = super::super::html::render_sweep(&r);
        assert!(
            sweep.contains("rate 100→150 (keys)"),
            "the sweep page's timelines"
        );
    }

    #[test]
    fn a_one_step_folder_gets_the_page_of_one_run() {
        let mut steps = testdata::open_sweep();
        steps.truncate(1);
        let r = one_run(steps);
        let html = super::super::html_page::render(&r);
        for section in [
            "<h2>Timeline</h2>",
            "Timeline: responses per second",
            "Timeline: response time",
            "Timeline: send lag",
            "<h2>Response times</h2>",
            "Response-time histogram",
            "Percentile distribution",
            ">p99.9</th>",
            "<h2>Findings</h2>",
        ] {
            assert!(html.contains(section), "{section} missing");
        }
        // Percentiles per second, and the warm-up shaded and keyed.
        assert!(html.contains(">p95</text>"), "per-second p95 in the legend");
        assert!(html.contains("warm-up (not in the step"), "warm-up key");
        for word in [
            "vs offered",
            "vs load",
            "kept up with every step",
            "Saturation",
            "saturation",
            "Capacity",
            "<h2>Steps</h2>",
        ] {
            assert!(!html.contains(word), "sweep-only '{word}' on a run's page");
        }
        assert!(html.contains("responses/s at 100 req/s offered"), "verdict");
    }

    #[test]
    fn a_run_that_fell_behind_says_so_in_its_own_words() {
        let mut steps = testdata::open_sweep();
        // The fixture's saturated step (400 req/s offered), alone.
        let s = steps.remove(3);
        let r = one_run(vec![s]);
        assert!(r.analysis.saturation.is_some(), "the fixture falls behind");
        let v = verdict(&r);
        assert!(v.contains("The server did not keep up: "), "{v}");
        assert!(!v.contains("aturation"), "{v}");
        let html = render(&r);
        assert!(
            !html.contains("saturation at"),
            "findings without the sweep's"
        );
        // Empty series and no histogram: lines, never an empty frame or a NaN.
        let mut r = r;
        r.data.series.clear();
        let html = render(&r);
        assert!(html.contains("no per-second data"));
        assert!(!html.contains("NaN"));
    }
}
