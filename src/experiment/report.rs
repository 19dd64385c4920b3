//! The experiment's comparison: one section per group of configurations, built from
//! src/report/compare.rs (overlaid curves, the summary and latency tables with ratios to the
//! first configuration) plus the spread across repetitions and, when the server was
//! watched, its processes over time (S5's spawn test). Written to EXPDIR/report.html; the
//! same tables go to the terminal.
use super::plan;
use super::resume::State;
use super::spec::{Config, Experiment, Server};
use crate::report::charts::PALETTE;
use crate::report::compare;
use crate::report::html;
use crate::report::svg::{esc, Axis, Chart, Series};
use crate::report::table;
use crate::report::{export, RunReport};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// One group's finished runs: per configuration, its repetitions.
struct Group<'a> {
    name: String,
    configs: Vec<&'a Config>,
    sets: Vec<Vec<RunReport>>,
}

/// The repetition shown in the overlaid curves: the one with the median peak throughput
/// (a real run, not an average of curves that saturate at different loads).
fn representative(set: &[RunReport]) -> &RunReport {
    let mut idx: Vec<usize> = (0..set.len()).collect();
    idx.sort_by(|&a, &b| {
        set[a]
            .analysis
            .peak_throughput
            .total_cmp(&set[b].analysis.peak_throughput)
    });
    &set[idx[(idx.len() - 1) / 2]]
}

fn groups<'a>(exp: &'a Experiment, dir: &Path, state: &State) -> Vec<Group<'a>> {
    let mut out: Vec<Group> = Vec::new();
    for c in &exp.configs {
        let mut set = Vec::new();
        for rep in 1..=exp.repetitions {
            let id = format!("{}-r{rep}", c.name);
            if !state.is_done(&id) {
                continue;
            }
            match RunReport::load(&dir.join(&id)) {
                Ok(r) => set.push(r),
                Err(e) => crate::eoutln!("overload: note: {id}: {e}"),
            }
        }
        if set.is_empty() {
            continue;
        }
        match out.iter_mut().find(|g| g.name == c.group) {
            Some(g) => {
                g.configs.push(c);
                g.sets.push(set);
            }
            None => out.push(Group {
                name: c.group.clone(),
                configs: vec![c],
                sets: vec![set],
            }),
        }
    }
    out
}

/// What the configuration's server is, in a few words.
pub fn server_text(c: &Config) -> String {
    match &c.server {
        Server::Lab { spec, db, .. } => {
            let mut s = spec.stack.name().to_string();
            if let Ok(r) = spec.resolve() {
                for (k, v) in r.describe() {
                    let _ = write!(s, " {k}={v}");
                }
            }
            if let Some(db) = db {
                if let Some(q) = db.query_cache {
                    let _ = write!(s, " query-cache={}", if q { "on" } else { "off" });
                }
                if let Some(e) = db.engine {
                    let _ = write!(s, " engine={}", e.sql_name());
                }
            }
            if !c.request.keep_alive {
                s.push_str(" (client: no keep-alive)");
            }
            s
        }
        Server::Command { setup, .. } => format!("`{setup}`"),
    }
}

/// Server processes (the --watch groups) per second of each run, overlaid: how fast worker
/// pools grow under a burst (S5's spawn test). `None` when no run has the data.
fn processes_chart(g: &Group) -> Option<Chart> {
    let mut c = Chart::new(
        "Server processes over time (the --watch groups, per second)",
        Axis::fitted("seconds since the run started").with_unit("s"),
        Axis::linear("processes"),
    );
    let mut any = false;
    for (i, (cfg, set)) in g.configs.iter().zip(&g.sets).enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        for (k, r) in set.iter().enumerate() {
            let pts: Vec<(f64, f64)> = r
                .data
                .series
                .iter()
                .filter_map(|p| Some((p.t, p.server.as_ref()?.processes? as f64)))
                .collect();
            any |= !pts.is_empty();
            let name = if set.len() > 1 {
                format!("{} r{}", cfg.name, k + 1)
            } else {
                cfg.name.clone()
            };
            let mut s = Series::new(name, color, pts);
            if k > 0 {
                s.in_legend = false;
            }
            c.add(s);
        }
    }
    any.then_some(c)
}

/// Per-second mean response time of each run, overlaid: for groups of one-step runs (a
/// burst), where the load axis has a single point and the story is in time.
fn response_time_chart(g: &Group) -> Option<Chart> {
    if !g.sets.iter().flatten().all(|r| r.steps.len() == 1) {
        return None;
    }
    let mut c = Chart::new(
        "Mean response time per second",
        Axis::fitted("seconds since the run started").with_unit("s"),
        Axis::log("response time (ms, log scale)"),
    );
    for (i, (cfg, set)) in g.configs.iter().zip(&g.sets).enumerate() {
        let r = representative(set);
        let pts = r
            .data
            .series
            .iter()
            .filter(|p| p.responses > 0)
            .map(|p| (p.t, p.response_time_mean_ms))
            .collect();
        c.add(Series::new(
            cfg.name.clone(),
            PALETTE[i % PALETTE.len()],
            pts,
        ));
    }
    Some(c)
}

/// The highest per-second 1-minute load average seen during a run, if the host was sampled.
fn max_load1(r: &RunReport) -> Option<f64> {
    r.data
        .series
        .iter()
        .filter_map(|p| p.server.as_ref()?.load1)
        .reduce(f64::max)
}

/// Rows describing each configuration: its server, its runs, and the host's load average.
fn config_rows(g: &Group) -> Vec<Vec<String>> {
    let mut rows = vec![vec![
        "configuration".to_string(),
        "server".to_string(),
        "load plan".to_string(),
        "runs".to_string(),
        "max load1".to_string(),
    ]];
    // Ramps: where each run's throughput left the offered line.
    let ramps = g.sets.iter().flatten().any(|r| r.ramp.is_some());
    if ramps {
        rows[0].push("knee on the ramp".to_string());
    }
    for (c, set) in g.configs.iter().zip(&g.sets) {
        let load1 = set
            .iter()
            .filter_map(max_load1)
            .reduce(f64::max)
            .map_or("–".to_string(), |v| format!("{v:.1}"));
        let l = &c.load;
        let plan_text = match &l.stages {
            Some(st) => format!("ramp of {} {st}", if l.closed { "users" } else { "req/s" }),
            None => format!(
                "{} {} × {}",
                l.kind.name(),
                plan::max_steps(c),
                crate::units::fmt_duration(l.step)
            ),
        };
        let mut row = vec![
            c.name.clone(),
            server_text(c),
            plan_text,
            set.iter()
                .map(|r| {
                    r.data
                        .dir
                        .file_name()
                        .map_or(String::new(), |n| n.to_string_lossy().into_owned())
                })
                .collect::<Vec<_>>()
                .join(" "),
            load1,
        ];
        if ramps {
            let knees: Vec<String> = set
                .iter()
                .map(|r| match r.ramp.as_ref().map(|a| (a, &a.knee)) {
                    Some((_, Some(k))) => {
                        let unit = if l.closed { "users" } else { "req/s" };
                        format!(
                            "{} ± {} {unit}",
                            crate::units::fmt_num(k.level),
                            crate::units::fmt_num(k.uncertainty)
                        )
                    }
                    Some((a, None)) => {
                        format!("none up to {}", crate::units::fmt_num(a.peak_offered))
                    }
                    None => "–".to_string(),
                })
                .collect();
            row.push(knees.join("; "));
        }
        rows.push(row);
    }
    rows
}

/// Share of requests that failed (transport errors and 4xx/5xx answers) in a step.
fn failed_share(s: &crate::store::StepRecord) -> Option<f64> {
    let sum = &s.summary;
    let non_ok = sum.responses.saturating_sub(sum.ok_count());
    (sum.requests > 0).then(|| (sum.error_count + non_ok) as f64 / sum.requests as f64)
}

/// Failed requests and mean response time at the load levels every configuration measured:
/// a configuration that answers the lucky few fast and times out the rest must not look
/// better than one that answers everyone late (prefork's keep-alive pinning, S5).
fn failure_rows(reps: &[RunReport], names: &[String], loads: &[f64]) -> Vec<Vec<String>> {
    let mut head = vec!["load".to_string()];
    for n in names {
        head.push(format!("{n} failed"));
        head.push(format!("{n} mean"));
    }
    let mut rows = vec![head];
    for &l in loads {
        let mut row = vec![reps[0].load_text(l)];
        for r in reps {
            match r.steps.iter().find(|s| (s.offered - l).abs() < 1e-9) {
                Some(s) => {
                    row.push(failed_share(s).map_or("–".into(), |f| {
                        let errs: Vec<String> = s
                            .summary
                            .errors
                            .iter()
                            .map(|(k, v)| format!("{v} {k}"))
                            .collect();
                        if errs.is_empty() {
                            format!("{:.1}%", f * 100.0)
                        } else {
                            format!("{:.1}% ({})", f * 100.0, errs.join(", "))
                        }
                    }));
                    row.push(if s.summary.responses > 0 {
                        crate::units::fmt_ms(s.summary.response_time_ms.mean)
                    } else {
                        "–".into()
                    });
                }
                None => {
                    row.push("–".into());
                    row.push("–".into());
                }
            }
        }
        rows.push(row);
    }
    rows
}

/// The terminal tables of every group.
pub fn table(exp: &Experiment, dir: &Path, state: &State) -> String {
    let mut o = String::new();
    for g in groups(exp, dir, state) {
        let names: Vec<String> = g.configs.iter().map(|c| c.name.clone()).collect();
        let reps: Vec<RunReport> = g.sets.iter().map(|s| representative(s).clone()).collect();
        let _ = writeln!(o, "\n== {} ==", g.name);
        o.push_str(&compare::table(&reps, &names));
        let loads = compare::common_loads(&reps);
        if !loads.is_empty() {
            o.push_str("\nfailed requests and mean response time:\n");
            o.push_str(&table::align(&failure_rows(&reps, &names, &loads)));
        }
        if g.sets.iter().any(|s| s.len() > 1) {
            o.push_str("\nspread across repetitions (median (min–max, ±half-range)):\n");
            o.push_str(&table::align(&compare::spread_rows(&g.sets, &names)));
        }
    }
    o
}

/// Writes DIR/report.html and returns its path.
pub fn write(exp: &Experiment, dir: &Path, state: &State) -> crate::Result<PathBuf> {
    let gs = groups(exp, dir, state);
    let mut o = html::page_start(&format!("overload experiment: {}", exp.name));
    let _ = writeln!(
        o,
        "<header>\n<h1>{}</h1>\n<p class=\"sub\">experiment {} · {} of {} runs finished · {} configuration(s) × {} repetition(s){}</p>",
        esc(&exp.name),
        esc(&crate::fsutil::shown(&exp.file)),
        state.runs.len(),
        state.planned.len(),
        exp.configs.len(),
        exp.repetitions,
        if exp.quick { " · --quick (scaled down: figures are a smoke test, not results)" } else { "" }
    );
    if !exp.description.is_empty() {
        let _ = writeln!(o, "<p>{}</p>", esc(exp.description.trim()));
    }
    if !state.complete {
        let _ = writeln!(
            o,
            "<div class=\"banner incomplete\"><strong>Incomplete experiment</strong> — {} run(s) not finished; `overload experiment {} --resume` goes on.</div>",
            state.planned.len() - state.runs.len(),
            esc(&crate::fsutil::shown(&exp.file))
        );
    }
    o.push_str("</header>\n");
    for (gi, g) in gs.iter().enumerate() {
        let names: Vec<String> = g.configs.iter().map(|c| c.name.clone()).collect();
        let reps: Vec<RunReport> = g.sets.iter().map(|s| representative(s).clone()).collect();
        let _ = writeln!(o, "<h2>{}</h2>", esc(&g.name));
        table::html_table(&mut o, &config_rows(g));
        o.push_str("<h3>Runs (ratios to the first configuration)</h3>\n");
        table::html_table(&mut o, &compare::summary_rows(&reps, &names));
        if g.sets.iter().any(|s| s.len() > 1) {
            o.push_str("<h3>Spread across repetitions</h3>\n<p class=\"muted\">median (min–max, ± half the range over the median); the curves show the repetition with the median peak throughput</p>\n");
            table::html_table(&mut o, &compare::spread_rows(&g.sets, &names));
        }
        // A burst (one step per run) is a story in time: its time charts come first.
        let mut charts: Vec<Chart> = Vec::new();
        let burst = response_time_chart(g);
        let burst_group = burst.is_some();
        charts.extend(burst);
        if burst_group {
            charts.extend(processes_chart(g));
        }
        charts.extend(compare::compare_charts(&reps, &names));
        if !burst_group {
            charts.extend(processes_chart(g));
        }
        o.push_str(&crate::report::charts::chart_grid(
            &charts,
            &format!("g{gi}c"),
        ));
        let loads = compare::common_loads(&reps);
        o.push_str("<h3>Response time at common load levels</h3>\n");
        if loads.is_empty() {
            o.push_str("<p class=\"muted\">no load level is common to all runs</p>\n");
        } else {
            table::html_table(&mut o, &compare::latency_rows(&reps, &names, &loads));
            o.push_str("<h3>Failed requests and mean response time</h3>\n<p class=\"muted\">response times count answered requests only: read them with the failures beside them</p>\n");
            table::html_table(&mut o, &failure_rows(&reps, &names, &loads));
        }
        o.push_str(&crate::report::tls::compare_html(&reps, &names, "h3"));
        o.push_str("<p>Reports of each run: ");
        for set in &g.sets {
            for r in set {
                let id = r
                    .data
                    .dir
                    .file_name()
                    .map_or(String::new(), |n| n.to_string_lossy().into_owned());
                let _ = write!(o, "<a href=\"{}/report.html\">{}</a> ", esc(&id), esc(&id));
            }
        }
        o.push_str("</p>\n");
    }
    if gs.is_empty() {
        o.push_str("<p class=\"muted\">no finished run yet</p>\n");
    }
    o.push_str("<h2>Runs</h2>\n<dl class=\"info\">\n");
    for r in &state.runs {
        let _ = writeln!(
            o,
            "<dt>{}</dt><dd><code>{}</code> · {} · exit code {}</dd>",
            esc(&r.id),
            esc(&r.command),
            esc(&crate::units::fmt_unix_ms(r.started_unix_ms)),
            r.exit_code
        );
    }
    o.push_str("</dl>\n");
    o.push_str(&html::page_end(&format!(
        "Generated by overload {}",
        env!("CARGO_PKG_VERSION")
    )));
    let path = dir.join("report.html");
    export::write_file(&path, &o)?;
    Ok(path)
}
