//! `overload compare`: several runs' curves overlaid in one HTML page (throughput and
//! response time against load, S5's chart of response time per configuration) and a terminal
//! table of capacity, saturation, peak throughput and latency at the load levels all runs
//! share, with ratios to the first run.
use super::charts::{ideal_line, load_axis, PALETTE};
use super::html;
use super::model::RunReport;
use super::server;
use super::svg::{esc, Axis, Chart, Line, Series};
use super::table::{align, html_table};
use crate::store::StepRecord;
use crate::units::fmt_ms;
use crate::units::fmt_num;
use crate::Error;
use std::fmt::Write;

/// Runs to compare must all be open loop or all closed loop: their x axes differ.
pub fn check_modes(runs: &[RunReport], names: &[String]) -> crate::Result<()> {
    if let Some(first) = runs.first() {
        if let Some((i, other)) = runs
            .iter()
            .enumerate()
            .find(|(_, r)| r.is_open() != first.is_open())
        {
            return Err(Error::usage(format!(
                "cannot compare an {} loop run ('{}') with a {} loop run ('{}'): their loads are not the same unit",
                first.data.info.mode, names[0], other.data.info.mode, names[i]
            )));
        }
    }
    Ok(())
}

/// The runs' display names: `--names`, else each run's name, made unique.
pub fn names(runs: &[RunReport], given: Option<&[String]>) -> crate::Result<Vec<String>> {
    if let Some(g) = given {
        if g.len() != runs.len() {
            return Err(Error::usage(format!(
                "--names has {} name{} for {} runs",
                g.len(),
                if g.len() == 1 { "" } else { "s" },
                runs.len()
            )));
        }
        return Ok(g.iter().map(|s| s.trim().to_string()).collect());
    }
    let mut out: Vec<String> = Vec::new();
    for r in runs {
        let base = r.name();
        let mut n = base.clone();
        let mut k = 2;
        while out.contains(&n) {
            n = format!("{base} ({k})");
            k += 1;
        }
        out.push(n);
    }
    Ok(out)
}

fn same(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Load levels every run measured, in order.
pub fn common_loads(runs: &[RunReport]) -> Vec<f64> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    let mut out: Vec<f64> = first
        .steps
        .iter()
        .map(|s| s.offered)
        .filter(|&o| {
            runs[1..]
                .iter()
                .all(|r| r.steps.iter().any(|s| same(s.offered, o)))
        })
        .collect();
    out.sort_by(f64::total_cmp);
    out.dedup_by(|a, b| same(*a, *b));
    out
}

fn step_at(r: &RunReport, load: f64) -> Option<&StepRecord> {
    r.steps.iter().find(|s| same(s.offered, load))
}

/// `value (1.25×)` against the first run's value.
fn with_ratio(text: String, v: Option<f64>, base: Option<f64>, first: bool) -> String {
    match (v, base) {
        (Some(v), Some(b)) if !first && b > 0.0 && v.is_finite() && b.is_finite() => {
            format!("{text} ({:.2}×)", v / b)
        }
        _ => text,
    }
}

/// A run's capacity beside the base run's. A capacity that never failed is a lower bound,
/// shown "≥ X". Its ratio against an exact base is a lower bound too ("≥ 1.20×"); against a
/// base that is itself a lower bound no ratio is shown ("n/a"): the quotient is bounded only
/// from above, and "≤ r×" would read as a regression when the base run simply stopped short.
fn capacity_cell(r: &RunReport, base: &RunReport, first: bool) -> String {
    let (a, b) = (&r.analysis, &base.analysis);
    let Some(c) = a.capacity else {
        let none = if r.data.info.slo.is_some() {
            "none"
        } else {
            "no SLO"
        };
        return none.to_string();
    };
    let text = r.capacity_text();
    match b.capacity {
        Some(bc) if !first && bc > 0.0 && c.is_finite() && bc.is_finite() => {
            if b.capacity_lower_bound {
                format!("{text} (n/a×)")
            } else if a.capacity_lower_bound {
                format!("{text} (≥ {:.2}×)", c / bc)
            } else {
                format!("{text} ({:.2}×)", c / bc)
            }
        }
        _ => text,
    }
}

fn latency_ok(s: &StepRecord) -> bool {
    s.summary.responses > 0
}

/// The summary rows: run, status, saturation, capacity, peak throughput.
pub fn summary_rows(runs: &[RunReport], names: &[String]) -> Vec<Vec<String>> {
    let base = &runs[0];
    let mut rows = vec![vec![
        "run".to_string(),
        "steps".to_string(),
        "saturation".to_string(),
        "capacity".to_string(),
        "peak throughput".to_string(),
    ]];
    for (i, (r, n)) in runs.iter().zip(names).enumerate() {
        let a = &r.analysis;
        let sat = a.saturation.as_ref().map(|s| s.offered);
        let bsat = base.analysis.saturation.as_ref().map(|s| s.offered);
        rows.push(vec![
            if r.complete() {
                n.clone()
            } else {
                format!("{n} (incomplete)")
            },
            r.steps.len().to_string(),
            with_ratio(
                sat.map_or("none".to_string(), |v| r.load_text(v)),
                sat,
                bsat,
                i == 0,
            ),
            capacity_cell(r, base, i == 0),
            with_ratio(
                format!("{}/s", fmt_num(a.peak_throughput)),
                Some(a.peak_throughput),
                Some(base.analysis.peak_throughput),
                i == 0,
            ),
        ]);
    }
    rows
}

/// Latency rows at the common load levels: load, then p50 and p99 of each run.
pub fn latency_rows(runs: &[RunReport], names: &[String], loads: &[f64]) -> Vec<Vec<String>> {
    let mut head = vec!["load".to_string()];
    for n in names {
        head.push(format!("{n} p50"));
        head.push(format!("{n} p99"));
    }
    let mut rows = vec![head];
    for &l in loads {
        let mut row = vec![runs[0].load_text(l)];
        let base = step_at(&runs[0], l).filter(|s| latency_ok(s));
        for (i, r) in runs.iter().enumerate() {
            match step_at(r, l).filter(|s| latency_ok(s)) {
                Some(s) => {
                    let rt = &s.summary.response_time_ms;
                    let b = base.map(|b| b.summary.response_time_ms);
                    row.push(with_ratio(
                        fmt_ms(rt.p50),
                        Some(rt.p50),
                        b.map(|b| b.p50),
                        i == 0,
                    ));
                    row.push(with_ratio(
                        fmt_ms(rt.p99),
                        Some(rt.p99),
                        b.map(|b| b.p99),
                        i == 0,
                    ));
                }
                None => {
                    row.push("–".to_string());
                    row.push("–".to_string());
                }
            }
        }
        rows.push(row);
    }
    rows
}

/// The median of some values and their spread: `350/s (340–362, ±3.1%)`, where ± is half
/// the range over the median. One value: just the value.
fn median_spread(mut v: Vec<f64>, fmt: &dyn Fn(f64) -> String) -> String {
    let missing = v.iter().filter(|x| !x.is_finite()).count();
    v.retain(|x| x.is_finite());
    if v.is_empty() {
        return "–".to_string();
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let med = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    if n == 1 {
        return fmt(med);
    }
    let (lo, hi) = (v[0], v[n - 1]);
    let pct = if med > 0.0 {
        format!(", ±{:.1}%", (hi - lo) / 2.0 / med * 100.0)
    } else {
        String::new()
    };
    // The range as bare numbers: the median beside it already carries the unit.
    let none = if missing > 0 {
        format!(", none in {missing}")
    } else {
        String::new()
    };
    format!("{} ({}–{}{pct}{none})", fmt(med), fmt_num(lo), fmt_num(hi))
}

/// The spread across repetitions (experiments run each configuration several times): one
/// row per configuration, `sets[i]` holding its runs, with the median and range of its
/// saturation point, capacity and peak throughput. Kept beside [`summary_rows`], which
/// compares one run per configuration, so `overload compare` itself is unchanged.
pub fn spread_rows(sets: &[Vec<RunReport>], names: &[String]) -> Vec<Vec<String>> {
    let mut rows = vec![vec![
        "configuration".to_string(),
        "runs".to_string(),
        "saturation".to_string(),
        "capacity".to_string(),
        "peak throughput".to_string(),
    ]];
    for (set, n) in sets.iter().zip(names) {
        let Some(first) = set.first() else {
            continue;
        };
        let load = |v: f64| first.load_text(v);
        let sat = set
            .iter()
            .map(|r| {
                r.analysis
                    .saturation
                    .as_ref()
                    .map_or(f64::NAN, |s| s.offered)
            })
            .collect();
        let cap = set
            .iter()
            .map(|r| r.analysis.capacity.unwrap_or(f64::NAN))
            .collect();
        let peak = set.iter().map(|r| r.analysis.peak_throughput).collect();
        rows.push(vec![
            n.clone(),
            set.len().to_string(),
            median_spread(sat, &load),
            // A lower bound in any run makes the median one too (the median only rises when a
            // value does).
            if set.iter().any(|r| r.analysis.capacity_lower_bound) {
                format!("≥ {}", median_spread(cap, &load))
            } else {
                median_spread(cap, &load)
            },
            median_spread(peak, &|v| format!("{}/s", fmt_num(v))),
        ]);
    }
    rows
}

/// The terminal table.
pub fn table(runs: &[RunReport], names: &[String]) -> String {
    if runs.is_empty() {
        return String::new();
    }
    let mut o = align(&summary_rows(runs, names));
    o.push_str(&super::bottleneck::compare_lines(runs, names));
    let loads = common_loads(runs);
    o.push('\n');
    if loads.is_empty() {
        o.push_str("no load level is common to all runs: no latency comparison\n");
    } else {
        let _ = writeln!(
            o,
            "response time at the load levels all runs measured (ratios to {}):",
            names[0]
        );
        o.push_str(&align(&latency_rows(runs, names, &loads)));
    }
    if let Some(rows) = super::tls::compare_rows(runs, names) {
        let _ = writeln!(o, "\n{}", super::tls::COMPARE_NOTE);
        o.push_str(&align(&rows));
    }
    o
}

/// The overlay charts: one colour per run.
pub fn compare_charts(runs: &[RunReport], names: &[String]) -> Vec<Chart> {
    let open = runs.first().is_none_or(RunReport::is_open);
    let all: Vec<f64> = runs
        .iter()
        .flat_map(|r| r.steps.iter().map(|s| s.offered))
        .collect();
    let x = || load_axis(open, &all);
    let color = |i: usize| PALETTE[i % PALETTE.len()];
    let pts = |r: &RunReport, f: &dyn Fn(&StepRecord) -> f64| -> Vec<(f64, f64)> {
        r.steps.iter().map(|s| (s.offered, f(s))).collect()
    };
    let lat = |s: &StepRecord, v: f64| if latency_ok(s) { v } else { f64::NAN };

    let mut thr = Chart::new(
        if open {
            "Throughput vs offered load"
        } else {
            "Throughput vs users"
        },
        x(),
        Axis::linear("responses/s"),
    );
    if open && !all.is_empty() {
        thr.add(ideal_line(&all));
    }
    let mut p = Chart::new(
        "Response time p50 (dashed) and p99 vs load",
        x(),
        Axis::log("response time (ms, log scale)"),
    );
    let mut mean = Chart::new(
        "Mean response time vs load",
        x(),
        Axis::log("response time (ms, log scale)"),
    );
    let mut err = Chart::new(
        "Failed requests vs load",
        x(),
        Axis::linear("% of requests (errors and 4xx/5xx)").with_unit("% of requests"),
    );
    for (i, (r, n)) in runs.iter().zip(names).enumerate() {
        thr.add(Series::new(
            n.clone(),
            color(i),
            pts(r, &|s| s.summary.throughput),
        ));
        if let Some(s) = &r.analysis.saturation {
            thr.vline(s.offered, format!("{n}: saturation"), color(i));
        }
        p.add(Series::new(
            format!("{n} p99"),
            color(i),
            pts(r, &|s| lat(s, s.summary.response_time_ms.p99)),
        ));
        p.add(
            Series::new(
                format!("{n} p50"),
                color(i),
                pts(r, &|s| lat(s, s.summary.response_time_ms.p50)),
            )
            .line(Line::Dashed)
            .width(1.5),
        );
        mean.add(Series::new(
            n.clone(),
            color(i),
            pts(r, &|s| lat(s, s.summary.response_time_ms.mean)),
        ));
        err.add(Series::new(
            n.clone(),
            color(i),
            pts(r, &|s| {
                let sum = &s.summary;
                let non_ok = sum.responses.saturating_sub(sum.ok_count());
                if sum.requests > 0 {
                    (sum.error_count + non_ok) as f64 * 100.0 / sum.requests as f64
                } else {
                    f64::NAN
                }
            }),
        ));
    }
    let mut charts = vec![thr, p, mean, err];
    // Server CPU only when every run was observed: a run without it would just be missing.
    let cpu = |s: &StepRecord| {
        server::server_of(s)
            .and_then(|o| o.host)
            .map(|h| h.cpu_busy_pct.mean)
    };
    if !runs.is_empty()
        && runs
            .iter()
            .all(|r| r.steps.iter().any(|s| cpu(s).is_some()))
    {
        let mut c = Chart::new(
            "Server CPU (busy, mean) vs load",
            x(),
            Axis {
                max: Some(100.0),
                ..Axis::linear("CPU, % of all cores").with_unit("% of all cores")
            },
        );
        for (i, (r, n)) in runs.iter().zip(names).enumerate() {
            c.add(Series::new(
                n.clone(),
                color(i),
                pts(r, &|s| cpu(s).filter(|v| v.is_finite()).unwrap_or(f64::NAN)),
            ));
        }
        charts.push(c);
    }
    charts
}

/// The HTML page.
pub fn html(runs: &[RunReport], names: &[String]) -> String {
    let title = format!("overload compare: {}", names.join(" vs "));
    let mut o = html::page_start(&title);
    let _ = writeln!(
        o,
        "<header>\n<h1>{}</h1>\n<p class=\"sub\">{} runs · {} loop · ratios are to the first run, {}</p>",
        esc(&names.join(" vs ")),
        runs.len(),
        esc(runs.first().map_or("open", |r| r.data.info.mode.as_str())),
        esc(names.first().map_or("", String::as_str))
    );
    let incomplete: Vec<&String> = runs
        .iter()
        .zip(names)
        .filter(|(r, _)| !r.complete())
        .map(|(_, n)| n)
        .collect();
    if !incomplete.is_empty() {
        let _ = writeln!(
            o,
            "<div class=\"banner incomplete\"><strong>Incomplete runs</strong> — {} did not finish; their curves stop where they stopped.</div>",
            esc(&incomplete.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "))
        );
    }
    o.push_str("</header>\n");
    if !runs.is_empty() {
        o.push_str("<h2>Runs</h2>\n");
        html_table(&mut o, &summary_rows(runs, names));
        let lines = super::bottleneck::compare_lines(runs, names);
        let _ = writeln!(o, "<pre>{}</pre>", esc(lines.trim_end()));
    }
    o.push_str("<h2>Charts</h2>\n");
    o.push_str(&super::charts::chart_grid(
        &compare_charts(runs, names),
        "k",
    ));
    let loads = common_loads(runs);
    o.push_str("<h2>Response time at common load levels</h2>\n");
    if loads.is_empty() {
        o.push_str("<p class=\"muted\">no load level is common to all runs</p>\n");
    } else {
        html_table(&mut o, &latency_rows(runs, names, &loads));
    }
    o.push_str(&super::tls::compare_html(runs, names, "h2"));
    o.push_str("<h2>Folders</h2>\n<dl class=\"info\">\n");
    for (r, n) in runs.iter().zip(names) {
        let _ = writeln!(
            o,
            "<dt>{}</dt><dd><code>{}</code><br/><code>{}</code> · started {}</dd>",
            esc(n),
            esc(&r.dir_shown()),
            esc(&crate::units::shell_join(&r.data.info.command_line)),
            esc(&crate::units::fmt_unix_ms(r.data.info.started_unix_ms))
        );
    }
    o.push_str("</dl>\n");
    o.push_str(&html::page_end(&format!(
        "Generated by overload {}",
        env!("CARGO_PKG_VERSION")
    )));
    o
}

#[cfg(test)]
mod tests {
    use super::super::testdata;
    use super::*;
    use crate::store::RunData;

    fn run(name: &str, mode: &str, steps: Vec<StepRecord>) -> RunReport {
        RunReport::from_data(RunData {
            dir: format!("/tmp/{name}").into(),
            info: testdata::info(name, mode, Some("p99<100ms")),
            steps,
            series: vec![],
            events: Vec::new(),
            skipped: vec![],
        })
    }

    fn faster() -> Vec<StepRecord> {
        let mut s = testdata::open_sweep();
        for st in &mut s {
            st.summary.response_time_ms.p50 /= 2.0;
            st.summary.response_time_ms.p99 /= 2.0;
        }
        s.pop();
        s
    }

    #[test]
    fn table_has_ratios_and_common_levels() {
        let runs = vec![
            run("prefork", "open", testdata::open_sweep()),
            run("fpm", "open", faster()),
        ];
        let names = names(&runs, None).unwrap();
        check_modes(&runs, &names).unwrap();
        assert_eq!(common_loads(&runs), vec![100.0, 200.0, 300.0, 400.0]);
        let t = table(&runs, &names);
        assert!(t.contains("prefork") && t.contains("fpm"), "{t}");
        assert!(t.contains("(0.50×)"), "{t}");
        assert!(t.contains("(1.00×)"), "same saturation: {t}");
        let html = html(&runs, &names);
        assert_eq!(html.matches("<svg").count(), 4);
        assert!(html.contains(">fpm p99</text>"));
        assert!(!html.contains("Server CPU"));
        // Both observed: the server CPU overlay; only one: none.
        let mut observed = vec![
            run("prefork", "open", testdata::server_sweep()),
            run("fpm", "open", faster()),
        ];
        assert_eq!(compare_charts(&observed, &names).len(), 4);
        for s in &mut observed[1].steps {
            s.server = Some(testdata::observation(s.offered));
        }
        let c = compare_charts(&observed, &names);
        assert_eq!(c.len(), 5);
        assert_eq!(c[4].series.len(), 2);
        assert!(c[4].title.starts_with("Server CPU"));
    }

    /// A run whose every step met the SLO has a capacity of "≥ X": never a plain value and
    /// never the base of a ratio; its own ratio against an exact base is a lower bound too.
    #[test]
    fn a_capacity_that_never_failed_is_a_lower_bound() {
        let exact = run("prefork", "open", testdata::open_sweep());
        let bound = run("fpm", "open", testdata::open_sweep()[..2].to_vec());
        let (ce, cb) = (
            exact.analysis.capacity.unwrap(),
            bound.analysis.capacity.unwrap(),
        );
        assert!(!exact.analysis.capacity_lower_bound);
        assert!(bound.analysis.capacity_lower_bound);
        let names = vec!["prefork".to_string(), "fpm".to_string()];
        let rows = summary_rows(&[exact.clone(), bound.clone()], &names);
        assert_eq!(rows[0][3], "capacity");
        assert_eq!(rows[1][3], exact.load_text(ce));
        assert_eq!(
            rows[2][3],
            format!("≥ {} (≥ {:.2}×)", bound.load_text(cb), cb / ce)
        );
        let rows = summary_rows(&[bound.clone(), exact.clone()], &names);
        assert_eq!(rows[1][3], format!("≥ {}", bound.load_text(cb)));
        assert_eq!(rows[2][3], format!("{} (n/a×)", exact.load_text(ce)));
        let page = html(&[bound.clone(), exact], &names);
        assert!(page.contains(&format!("≥ {}", bound.load_text(cb))));
        let json = serde_json::to_value(&bound.analysis).unwrap();
        assert_eq!(json["capacity_lower_bound"], true);
        let report = super::super::html_page::render(&bound);
        assert!(report.contains(&format!("≥ {}", esc(&bound.load_text(cb)))));
    }

    #[test]
    fn mixed_modes_and_bad_names_are_usage_errors() {
        let runs = vec![
            run("a", "open", vec![]),
            run("b", "closed", testdata::closed_sweep()),
        ];
        let n = names(&runs, None).unwrap();
        let e = check_modes(&runs, &n).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(!e.to_string().contains('\n'));
        assert!(names(&runs, Some(&["x".to_string()])).is_err());
        let same = vec![run("a", "open", vec![]), run("a", "open", vec![])];
        assert_eq!(names(&same, None).unwrap(), ["a", "a (2)"]);
        // Empty runs: no panic, a note instead of a latency table.
        assert!(table(&same, &["a".into(), "b".into()]).contains("no load level"));
        assert!(html(&same, &["a".into(), "b".into()]).contains("no data"));
    }

    #[test]
    fn spread_across_repetitions() {
        let mut slower = testdata::open_sweep();
        for st in &mut slower {
            st.summary.throughput *= 0.9;
        }
        let a = vec![
            run("a", "open", testdata::open_sweep()),
            run("a", "open", slower),
        ];
        let b = vec![run("b", "open", faster())];
        let rows = spread_rows(&[a, b], &["a".into(), "b".into()]);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1][1], "2");
        assert!(rows[1][4].contains('±'), "{:?}", rows[1]);
        assert!(
            !rows[2][4].contains('±'),
            "one run, no spread: {:?}",
            rows[2]
        );
        assert_eq!(
            median_spread(vec![1.0, 3.0, f64::NAN], &fmt_num),
            "2 (1–3, ±50.0%, none in 1)"
        );
        assert_eq!(median_spread(vec![], &fmt_num), "–");
    }
}
