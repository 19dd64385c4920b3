//! `report --format html`: one self-contained page — verdict, charts (inline SVG), the steps
//! table, findings and run info. No script, no network: styles are inline and fonts are the
//! system's. The markup is XHTML-compatible (closed empty tags, numeric entities only) so
//! any XML parser can check it.
use super::charts::{self, chart_grid};

use super::model::RunReport;
use super::server;
use super::svg::esc;
use crate::units::fmt_ms;
use crate::units::{fmt_num, fmt_unix_ms, shell_join};
use std::fmt::Write;

/// The page's style sheet, shared with `compare`.
pub const CSS: &str = r#"
:root { --ink: #111827; --muted: #6b7280; --line: #e5e7eb; --bg: #f6f7f9; --card: #ffffff;
  --bad: #dc2626; --warn: #b45309; --good: #15803d; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink); line-height: 1.5;
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  -webkit-font-smoothing: antialiased; }
main { max-width: 1340px; margin: 0 auto; padding: 32px 28px 64px; }
h1 { font-size: 28px; line-height: 1.2; margin: 0 0 6px; letter-spacing: -0.015em; }
h2 { font-size: 19px; margin: 44px 0 14px; letter-spacing: -0.01em; }
.sub { color: var(--muted); margin: 0; }
.sub code { color: var(--ink); }
.verdict { font-size: 17px; margin: 18px 0 0; max-width: 70em; }
.banner { border-radius: 10px; padding: 14px 18px; margin: 20px 0 0; border: 1px solid; }
.banner.incomplete { background: #fff7ed; border-color: #fdba74; }
.banner.incomplete strong { color: #9a3412; font-size: 16px; }
.banner.note { background: #f8fafc; border-color: var(--line); }
.banner ul { margin: 6px 0 0; padding-left: 20px; }
.banner li { font-size: 13px; color: #374151; word-break: break-word; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(230px, 1fr)); gap: 14px; margin: 22px 0 0; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 12px; padding: 14px 18px 16px;
  border-top: 4px solid #cbd5e1; }
.card.bad { border-top-color: var(--bad); }
.card.good { border-top-color: var(--good); }
.card.warn { border-top-color: #f59e0b; }
.card.info { border-top-color: #2563eb; }
.card .k { font-size: 12px; text-transform: uppercase; letter-spacing: 0.07em; color: var(--muted); font-weight: 600; }
.card .v { font-size: 28px; font-weight: 650; letter-spacing: -0.02em; font-variant-numeric: tabular-nums; margin-top: 2px; }
.card .d { font-size: 13px; color: var(--muted); margin-top: 2px; }
.charts { display: grid; grid-template-columns: repeat(auto-fit, minmax(min(540px, 100%), 1fr)); gap: 16px; }
.charts > figure { min-width: 0; }
/* A timeline squeezed to a phone's width is unreadable: it keeps 720 px and scrolls instead. */
figure.wide { overflow-x: auto; }
figure.wide svg.chart { min-width: 720px; }
p.empty-chart { color: var(--muted); margin: 10px 0 0; }
p.empty-chart strong { color: var(--ink); font-weight: 600; }
figure.wide { grid-column: 1 / -1; }
figure { margin: 0; background: var(--card); border: 1px solid var(--line); border-radius: 12px; padding: 6px 8px 2px; }
svg.chart { width: 100%; height: auto; display: block; }
.tablewrap.fit { display: inline-block; max-width: 100%; vertical-align: top; }
.tablewrap.fit table { width: auto; }
.tablewrap { overflow-x: auto; background: var(--card); border: 1px solid var(--line); border-radius: 12px; }
table { border-collapse: collapse; width: 100%; font-size: 13px; font-variant-numeric: tabular-nums; }
th, td { padding: 7px 12px; text-align: right; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { background: #f8fafc; font-weight: 600; color: #374151; font-size: 12px; }
th.l, td.l { text-align: left; }
tbody tr:last-child td { border-bottom: none; }
tbody tr:hover td { background: #f9fafb; }
table.dense th, table.dense td { padding: 7px 7px; }
th.grp, td.grp { border-left: 2px solid var(--line); }
tr.grp th { border-bottom: none; padding-bottom: 0; color: var(--muted); text-transform: uppercase;
  letter-spacing: 0.07em; font-size: 11px; }
tr.grp th.grp { text-align: center; }
tr.sat td { background: #fef2f2; }
tr.sat td:first-child { box-shadow: inset 3px 0 0 var(--bad); }
.flag { display: inline-block; padding: 1px 8px; border-radius: 999px; font-size: 11px; margin-right: 4px;
  background: #eef2ff; color: #3730a3; font-weight: 600; }
.flag.saturated { background: #fee2e2; color: #991b1b; }
.flag.slo-failed { background: #ffedd5; color: #9a3412; }
.flag.generator-bound { background: #fef3c7; color: #92400e; }
.flag.interrupted { background: #e5e7eb; color: #374151; }
.bad { color: var(--bad); }
.muted { color: var(--muted); }
section.bottleneck { margin: 22px 0 0; }
section.bottleneck.b-limit { border-top-color: var(--bad); }
section.bottleneck.b-tie { border-top-color: #f59e0b; }
section.bottleneck p { margin: 6px 0 10px; max-width: 75em; font-size: 15px; }
td.wrap { white-space: normal; min-width: 14em; }
ul.findings { padding-left: 20px; max-width: 75em; }
ul.findings li { margin: 4px 0; }
dl.info { display: grid; grid-template-columns: max-content 1fr; gap: 6px 22px; background: var(--card);
  border: 1px solid var(--line); border-radius: 12px; padding: 16px 20px; margin: 0; }
dl.info dt { color: var(--muted); }
dl.info dd { margin: 0; word-break: break-word; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, "Liberation Mono", monospace; font-size: 12.5px; }
pre { background: #f3f4f6; padding: 10px 12px; border-radius: 8px; margin: 0; white-space: pre-wrap; word-break: break-all; }
footer { margin-top: 48px; color: var(--muted); font-size: 12px; }
td.flags { white-space: normal; min-width: 9em; }
@media (max-width: 640px) { main { padding: 20px 12px 40px; } h1 { font-size: 23px; }
  dl.info { grid-template-columns: 1fr; gap: 2px; } dl.info dd { margin-bottom: 8px; } }
@media print { body { background: #ffffff; } figure, .card, .tablewrap, dl.info { break-inside: avoid; } }
"#;

/// Opens a page: doctype, head with the inline style sheet, body and main.
pub fn page_start(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n\
         <meta name=\"generator\" content=\"overload {}\"/>\n<title>{}</title>\n<style>{CSS}</style>\n\
         </head>\n<body>\n<main>\n",
        env!("CARGO_PKG_VERSION"),
        esc(title)
    )
}

pub fn page_end(footer: &str) -> String {
    format!(
        "<footer>{}</footer>\n</main>\n</body>\n</html>\n",
        esc(footer)
    )
}

pub(super) fn card(o: &mut String, class: &str, k: &str, v: &str, d: &str) {
    let _ = writeln!(
        o,
        "<div class=\"card {class}\"><div class=\"k\">{}</div><div class=\"v\">{}</div><div class=\"d\">{}</div></div>",
        esc(k),
        esc(v),
        esc(d)
    );
}

/// The page.
/// The most steps the page draws (charts, tables, latency distributions): a page's cost grows
/// with each step drawn (its histogram decoded, its rows and lines), so a folder of 100,000
/// steps would take minutes and gigabytes. Beyond this, steps evenly spread over the run are
/// drawn, the first and last among them, and the page says so.
pub const MAX_DRAWN_STEPS: usize = 200;
/// The most seconds the timelines draw: beyond this, every k-th second of the drawn steps.
pub const MAX_DRAWN_SECONDS: usize = 4000;

/// What the page draws of `r`: `r` itself when it is small enough, else its drawn steps and
/// seconds, with a note saying how many of how many. The verdict, cards and findings are
/// `r`'s own (analysed on every step).
pub fn drawn(r: &RunReport) -> std::borrow::Cow<'_, RunReport> {
    use std::borrow::Cow;
    let (steps, series) = (r.steps.len(), r.data.series.len());
    if steps <= MAX_DRAWN_STEPS && series <= MAX_DRAWN_SECONDS {
        return Cow::Borrowed(r);
    }
    let picked: Vec<usize> = if steps <= MAX_DRAWN_STEPS {
        (0..steps).collect()
    } else {
        let mut v: Vec<usize> = (0..MAX_DRAWN_STEPS)
            .map(|i| i * (steps - 1) / (MAX_DRAWN_STEPS - 1))
            .collect();
        v.dedup();
        v
    };
    let kept: Vec<crate::store::StepRecord> = picked.iter().map(|&i| r.steps[i].clone()).collect();
    let ids: std::collections::BTreeSet<usize> = kept.iter().map(|s| s.step).collect();
    let of_kept: Vec<&crate::store::SeriesPoint> = r
        .data
        .series
        .iter()
        .filter(|p| ids.contains(&p.step))
        .collect();
    let stride = of_kept.len().div_ceil(MAX_DRAWN_SECONDS).max(1);
    let seconds: Vec<crate::store::SeriesPoint> =
        of_kept.iter().step_by(stride).map(|p| **p).collect();
    let mut notes = r.notes.clone();
    let mut said = Vec::new();
    if kept.len() < steps {
        said.push(format!(
            "{} of the {steps} steps (evenly spread, the first and the last among them)",
            kept.len()
        ));
    }
    if seconds.len() < series {
        said.push(format!("{} of the {series} seconds", seconds.len()));
    }
    notes.push(format!(
        "this page draws {}; steps.csv and report.json (overload report --format csv, json) hold them all",
        said.join(" and ")
    ));
    Cow::Owned(RunReport {
        data: crate::store::RunData {
            dir: r.data.dir.clone(),
            info: r.data.info.clone(),
            steps: Vec::new(),
            series: seconds,
            events: r.data.events.clone(),
            skipped: r.data.skipped.clone(),
        },
        steps: kept,
        analysis: r.analysis.clone(),
        notes,
        ramp: r.ramp.clone(),
    })
}

/// A sweep's page (a one-step folder gets `html_run`'s; `html_page` picks).
pub(super) fn render_sweep(r: &RunReport) -> String {
    let d = drawn(r);
    let info = &r.data.info;
    let a = &r.analysis;
    let name = r.name();
    let mut o = page_start(&format!("overload report: {name}"));

    // Header.
    let _ = writeln!(o, "<header>\n<h1>{}</h1>", esc(&name));
    let span = lasted(info);
    let _ = writeln!(
        o,
        "<p class=\"sub\">{} · {} loop · {} step{} · started {}{} · {}</p>",
        esc(&info.kind),
        esc(&info.mode),
        r.steps.len(),
        if r.steps.len() == 1 { "" } else { "s" },
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
             The figures cover the {} step{} saved before it stopped.",
            info.stop_reason
                .as_deref()
                .map(|s| format!(" (stopped: {})", esc(s)))
                .unwrap_or_default(),
            r.steps.len(),
            if r.steps.len() == 1 { "" } else { "s" }
        );
        notes_list(&mut o, &d.notes);
        o.push_str("</div>\n");
    } else if !d.notes.is_empty() {
        o.push_str("<div class=\"banner note\"><strong>Notes</strong>");
        notes_list(&mut o, &d.notes);
        o.push_str("</div>\n");
    }
    let _ = writeln!(o, "<p class=\"verdict\">{}</p>", esc(&verdict(r)));
    if let Some(b) = &a.bottleneck {
        o.push_str(&super::bottleneck::html(b));
    }

    // Verdict cards.
    o.push_str("<div class=\"cards\">\n");
    match &a.saturation {
        Some(s) => card(
            &mut o,
            "bad",
            "Saturation point",
            &r.load_text(s.offered),
            &format!(
                "offered load of step {} (peak sustained throughput {} responses/s at step {}): {}",
                s.step + 1,
                fmt_num(s.peak_throughput),
                s.peak_step + 1,
                s.reasons.first().cloned().unwrap_or_default()
            ),
        ),
        None if r.steps.is_empty() => card(&mut o, "", "Saturation point", "–", "no steps"),
        None => card(
            &mut o,
            "good",
            "Saturation point",
            "not reached",
            &format!(
                "kept up up to {}",
                r.load_text(r.steps.last().map_or(0.0, |s| s.offered))
            ),
        ),
    }
    match (&info.slo, a.capacity) {
        (Some(slo), Some(_)) if a.capacity_lower_bound => card(
            &mut o,
            "good",
            "Capacity",
            &r.capacity_text(),
            &format!("every step met the SLO {slo}: the highest load tried"),
        ),
        (Some(slo), Some(_)) => card(
            &mut o,
            "good",
            "Capacity",
            &r.capacity_text(),
            &format!("highest load meeting the SLO {slo}"),
        ),
        (Some(slo), None) => card(
            &mut o,
            "bad",
            "Capacity",
            "none",
            &format!("no step met the SLO {slo}"),
        ),
        (None, _) => card(&mut o, "", "Capacity", "–", "no SLO given (--slo)"),
    }
    let peak_good = r
        .steps
        .iter()
        .map(|s| s.summary.goodput)
        .fold(0.0, f64::max);
    card(
        &mut o,
        "info",
        "Peak throughput",
        &format!("{} /s", fmt_num(a.peak_throughput)),
        &format!(
            "responses per second{}; goodput peak {} /s",
            // Named by its step: past the saturation point it may differ from the sustained
            // peak the headline gives.
            a.peak_step
                .map_or(String::new(), |i| format!(", at step {}", i + 1)),
            fmt_num(peak_good)
        ),
    );
    if a.generator_bound.is_empty() {
        card(
            &mut o,
            "good",
            "Generator",
            "OK",
            "no step was limited by overload itself",
        );
    } else {
        let list: Vec<String> = a
            .generator_bound
            .iter()
            .map(|s| (s + 1).to_string())
            .collect();
        card(
            &mut o,
            "warn",
            "Generator",
            &format!(
                "{} step{} suspect",
                list.len(),
                if list.len() == 1 { "" } else { "s" }
            ),
            &format!(
                "generator-bound: step {}; those figures are about overload, not the server",
                list.join(", ")
            ),
        );
    }
    o.push_str("</div>\n</header>\n");

    o.push_str("<h2>Charts</h2>\n");
    o.push_str(&chart_grid(&charts::sweep_charts(&d), "c"));
    // Only when something was observed: older folders render as they always did.
    let server = server::server_charts(&d);
    if !server.is_empty() {
        o.push_str("<h2>Server</h2>\n");
        o.push_str(&chart_grid(&server, "s"));
    }

    o.push_str("<h2>Latency distribution</h2>\n");
    o.push_str(&chart_grid(&super::hist::charts(&d), "d"));

    o.push_str("<h2>Steps</h2>\n");
    steps_table(&mut o, &d);
    o.push_str(&super::html_names::section(r, &d));
    o.push_str(&super::html_sessions::section(&d));
    o.push_str(&super::tls::section(&d));

    o.push_str(&super::audit::section(r));

    o.push_str("<h2>Findings</h2>\n<ul class=\"findings\">\n");
    if a.findings.is_empty() {
        o.push_str("<li class=\"muted\">no steps to analyse</li>\n");
    }
    for f in &a.findings {
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

/// A duration for people: 45 s, 12 min, 3.5 h, 2 days.
pub(super) fn fmt_span(s: f64) -> String {
    if s < 120.0 {
        format!("{s:.0} s")
    } else if s < 7200.0 {
        format!("{:.0} min", s / 60.0)
    } else if s < 172_800.0 {
        format!("{:.1} h", s / 3600.0)
    } else {
        format!("{:.0} days", s / 86_400.0)
    }
}

pub(super) fn notes_list(o: &mut String, notes: &[String]) {
    if notes.is_empty() {
        return;
    }
    o.push_str("<ul>");
    for n in notes {
        let _ = write!(o, "<li>{}</li>", esc(n));
    }
    o.push_str("</ul>");
}

/// One sentence: what happened.
pub fn verdict(r: &RunReport) -> String {
    let a = &r.analysis;
    if r.steps.is_empty() {
        return "No finished step in this folder: nothing to report yet.".to_string();
    }
    let mut v = match &a.saturation {
        Some(s) => format!("{}.", capitalized(&s.describe(r.unit()))),
        None => format!(
            "No saturation up to {}: the server kept up with every step (peak {} responses/s).",
            r.load_text(r.steps.last().map_or(0.0, |s| s.offered)),
            fmt_num(a.peak_throughput)
        ),
    };
    if a.capacity.is_some() {
        let _ = write!(v, " Capacity under the SLO: {}.", r.capacity_text());
    }
    if !a.generator_bound.is_empty() {
        v.push_str(" Warning: the generator limited some steps.");
    }
    v
}

fn steps_table(o: &mut String, r: &RunReport) {
    if r.steps.is_empty() {
        o.push_str("<p class=\"muted\">no data: no step finished</p>\n");
        return;
    }
    let load = if r.is_open() {
        "offered req/s"
    } else {
        "users"
    };
    // A "server" column group when the run was observed.
    let observed = r.steps.iter().any(|s| server::server_of(s).is_some());
    // Dense when the server columns are there, so the table still fits a laptop screen.
    o.push_str(if observed {
        "<div class=\"tablewrap\"><table class=\"dense\">\n<thead>"
    } else {
        "<div class=\"tablewrap\"><table>\n<thead>"
    });
    if observed {
        o.push_str(
            "<tr class=\"grp\"><th colspan=\"12\"></th><th colspan=\"3\" class=\"grp\">server</th>\
             <th></th></tr>",
        );
    }
    let server_heads = if observed {
        "<th class=\"grp\" title=\"server host CPU busy, mean over the step\">CPU</th>\
         <th title=\"most sockets in TIME_WAIT on the port\">TIME_WAIT</th>\
         <th title=\"listen queue overflows in the step (host-wide)\">overflows</th>"
    } else {
        ""
    };
    let _ = writeln!(
        o,
        "<tr><th>#</th><th>{load}</th><th>throughput /s</th>\
         <th>goodput /s</th><th>errors</th><th>non-2xx</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>max</th>\
         <th>send lag p99</th><th>gen CPU</th>{server_heads}<th class=\"l\">flags</th></tr></thead>\n<tbody>"
    );
    let sat = r.analysis.saturation.as_ref().map(|s| s.offered);
    for s in &r.steps {
        let m = &s.summary;
        let non_ok = m.not_ok_count();
        let pct = |n: u64, of: u64| {
            if of == 0 {
                "–".to_string()
            } else {
                format!("{:.2}%", n as f64 * 100.0 / of as f64)
            }
        };
        let lat = |v: f64| {
            if m.responses == 0 {
                "–".to_string()
            } else {
                fmt_ms(v)
            }
        };
        let flags: String = s
            .flags
            .iter()
            .map(|f| format!("<span class=\"flag {}\">{}</span>", esc(f), esc(f)))
            .collect();
        let err_class = if m.error_count > 0 {
            " class=\"bad\""
        } else {
            ""
        };
        let server_cells = if observed {
            server_cells(s)
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td{err_class}>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{server_cells}<td class=\"l flags\">{flags}</td></tr>",
            if sat == Some(s.offered) { " class=\"sat\"" } else { "" },
            s.step + 1,
            fmt_num(s.offered),
            fmt_num(m.throughput),
            fmt_num(m.goodput),
            pct(m.error_count, m.requests),
            pct(non_ok, m.responses),
            lat(m.response_time_ms.p50),
            lat(m.response_time_ms.p90),
            lat(m.response_time_ms.p95),
            lat(m.response_time_ms.p99),
            lat(m.response_time_ms.max),
            // A closed loop has no schedule to lag behind: no figure, not "0µs".
            if r.is_open() {
                fmt_ms(m.send_lag_ms.p99)
            } else {
                "–".to_string()
            },
            if s.generator.cpu_pct.is_finite() {
                format!("{:.0}%", s.generator.cpu_pct)
            } else {
                "–".to_string()
            },
        );
    }
    o.push_str("</tbody></table></div>\n");
}

/// The server columns of a step: host CPU busy (mean), TIME_WAIT (max) and listen
/// overflows (host-wide count); "–" where the step has no such figure.
fn server_cells(s: &crate::store::StepRecord) -> String {
    let src = server::server_of(s);
    let cpu = src
        .and_then(|o| o.host)
        .map(|h| h.cpu_busy_pct.mean)
        .filter(|v| v.is_finite())
        .map_or("–".to_string(), |v| format!("{v:.0}%"));
    let tcp = src.and_then(|o| o.tcp.as_ref());
    let tw = tcp.map_or("–".to_string(), |t| {
        fmt_num(t.state("TIME_WAIT").max.round())
    });
    let (ovf, class) = match tcp {
        Some(t) if t.listen_overflows > 0 => (t.listen_overflows.to_string(), " class=\"bad\""),
        Some(t) => (t.listen_overflows.to_string(), ""),
        None => ("–".to_string(), ""),
    };
    format!("<td class=\"grp\">{cpu}</td><td>{tw}</td><td{class}>{ovf}</td>")
}

pub(super) fn run_info(o: &mut String, r: &RunReport) {
    let i = &r.data.info;
    let h = &i.host;
    o.push_str("<dl class=\"info\">\n");
    let mut row = |k: &str, v: String| {
        let _ = writeln!(o, "<dt>{}</dt><dd>{v}</dd>", esc(k));
    };
    row("name", esc(&i.name));
    row("folder", format!("<code>{}</code>", esc(&r.dir_shown())));
    row("kind", format!("{} ({} loop)", esc(&i.kind), esc(&i.mode)));
    row(
        "command line",
        format!("<pre>{}</pre>", esc(&shell_join(&i.command_line))),
    );
    row(
        "requests",
        i.urls
            .iter()
            .map(|u| format!("<code>{}</code>", esc(u)))
            .collect::<Vec<_>>()
            .join("<br/>"),
    );
    row("SLO", esc(i.slo.as_deref().unwrap_or("none")));
    row("started", esc(&fmt_unix_ms(i.started_unix_ms)));
    row(
        "finished",
        esc(&i
            .finished_unix_ms
            .map_or("not recorded".to_string(), fmt_unix_ms)),
    );
    row(
        "status",
        format!(
            "{}{}",
            if i.complete {
                "complete".to_string()
            } else {
                "<strong class=\"bad\">incomplete</strong>".to_string()
            },
            i.stop_reason
                .as_deref()
                .map(|s| format!(" — {}", esc(s)))
                .unwrap_or_default()
        ),
    );
    row(
        "generator host",
        esc(&format!(
            "{} · {} cores · kernel {} · fd limit {} (hard {})",
            h.hostname, h.cores, h.kernel, h.fd_limit_soft, h.fd_limit_hard
        )),
    );
    if !h.sysctls.is_empty() {
        row(
            "sysctls",
            h.sysctls
                .iter()
                .map(|(k, v)| format!("<code>{} = {}</code>", esc(k), esc(v)))
                .collect::<Vec<_>>()
                .join("<br/>"),
        );
    }
    row(
        "overload",
        esc(&format!(
            "{} (results format {})",
            i.overload_version, i.format_version
        )),
    );
    if !i.config.is_null() {
        let cfg = serde_json::to_string_pretty(&i.config).unwrap_or_default();
        row("config", format!("<pre>{}</pre>", esc(&cfg)));
    }
    o.push_str("</dl>\n");
}

/// ", lasted 1 min 2 s" for a finished run's page header; nothing while it runs.
pub(super) fn lasted(info: &crate::store::RunInfo) -> String {
    match info.finished_unix_ms {
        Some(f) if f >= info.started_unix_ms => {
            format!(
                ", lasted {}",
                fmt_span((f - info.started_unix_ms) as f64 / 1000.0)
            )
        }
        _ => String::new(),
    }
}

/// "saturation at …" as a sentence.
pub(super) fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map_or(String::new(), |f| f.to_uppercase().chain(c).collect())
}

#[cfg(test)]
mod tests {
    use super::super::testdata;
    use super::*;
    use crate::store::RunData;

    fn report(steps: Vec<crate::store::StepRecord>, complete: bool) -> RunReport {
        let mut info = testdata::info("prefork", "open", Some("p99<100ms"));
        info.complete = complete;
        let series = steps.iter().flat_map(testdata::series).collect();
        RunReport::from_data(RunData {
            dir: "/tmp/r".into(),
            info,
            steps,
            series,
            events: Vec::new(),
            skipped: vec!["steps.jsonl:6: skipped truncated last line".into()],
        })
    }

    /// A closed loop's step table shows no send lag ("–"), not a "0µs" for a schedule that
    /// does not exist.
    #[test]
    fn a_closed_loops_step_table_shows_no_send_lag() {
        let mut steps = testdata::closed_sweep();
        for s in &mut steps {
            s.summary.send_lag_ms.p99 = 0.0;
        }
        let mut r = report(steps, true);
        r.data.info.mode = "closed".into();
        let mut o = String::new();
        steps_table(&mut o, &r);
        assert!(!o.contains("<td>0µs</td>"), "{o}");
        let mut open = report(testdata::open_sweep(), true);
        for s in &mut open.steps {
            s.summary.send_lag_ms.p99 = 0.0;
        }
        let mut o = String::new();
        steps_table(&mut o, &open);
        assert!(o.contains("<td>0µs</td>"), "{o}");
    }

    #[test]
    fn page_has_verdict_charts_table_and_no_external_refs() {
        let r = report(testdata::open_sweep(), true);
        let html = render_sweep(&r);
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("Saturation at 400 req/s offered (step"));
        // The verdict and the findings word the saturation point the same way.
        let words = r.analysis.saturation.as_ref().unwrap().describe("req/s");
        assert!(html.contains(&capitalized(&words)), "verdict");
        assert!(html.contains(&format!("<li>{words}")), "findings");
        // Six charts of the sweep; the fixture stores no histogram, so the latency
        // distribution's two charts are lines saying so.
        assert_eq!(html.matches("<svg").count(), 6);
        assert_eq!(html.matches("<p class=\"empty-chart\">").count(), 2);
        assert!(html.contains("no response-time histogram stored"));
        assert!(html.contains("<table>"));
        assert!(html.contains("skipped truncated"), "notes shown");
        assert!(!html.contains("Incomplete run"));
        assert!(!html.contains("<script"));
        assert!(!html.contains("src="));
        // The run's URL appears as text only.
        assert!(!html.contains("href="));
    }

    #[test]
    fn incomplete_and_empty_runs() {
        let html = render_sweep(&report(vec![], false));
        assert!(html.contains("Incomplete run"));
        assert!(html.contains("no data"));
        assert!(html.contains("nothing to report yet"));
    }
}
