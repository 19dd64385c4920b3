//! `report --format csv`: one row per step, for spreadsheets; and, when the run kept
//! statistics per request name, a second file beside it with one row per step and name (long
//! format: a pivot table or a filter on `name` gives any view). Columns are documented in
//! docs/report.md; error kinds follow [`ErrorKind::ALL`] so the layout never depends on data.
use super::model::Exporter;
use super::model::RunReport;
use crate::metrics::ErrorKind;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Quotes a field when it holds a separator, a quote or a line break (RFC 4180).
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A number as CSV: empty for NaN/infinite (spreadsheets read that as missing).
fn num(v: f64) -> String {
    if v.is_finite() {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        String::new()
    }
}

/// A header: `lead`, one `err_<kind>` column per [`ErrorKind::ALL`], then `tail`.
fn columns(lead: &[&str], tail: &[&str]) -> Vec<String> {
    let errors = ErrorKind::ALL
        .iter()
        .map(|k| format!("err_{}", k.name().replace('-', "_")));
    lead.iter()
        .map(|s| s.to_string())
        .chain(errors)
        .chain(tail.iter().map(|s| s.to_string()))
        .collect()
}

/// One line of fields, quoted where they need it.
fn write_row(o: &mut String, row: &[String]) {
    let _ = writeln!(
        o,
        "{}",
        row.iter().map(|f| field(f)).collect::<Vec<_>>().join(",")
    );
}

pub fn header() -> Vec<String> {
    columns(
        &[
            "step",
            "offered",
            "start_s",
            "end_s",
            "duration_s",
            "requests",
            "responses",
            "throughput",
            "goodput",
            "error_count",
            "error_ratio",
            "non_2xx_3xx",
        ],
        &[
            "rt_mean_ms",
            "rt_p50_ms",
            "rt_p90_ms",
            "rt_p95_ms",
            "rt_p99_ms",
            "rt_p999_ms",
            "rt_max_ms",
            "service_p50_ms",
            "service_p99_ms",
            "send_lag_p50_ms",
            "send_lag_p99_ms",
            "send_lag_max_ms",
            "connect_mean_ms",
            "connections_opened",
            "bytes_in_per_s",
            "gen_cpu_pct",
            "gen_threads",
            "gen_pool_waits",
            "sessions_started",
            "sessions_completed",
            "sessions_failed",
            "sessions_dropped",
            "slo_ok",
            "flags",
        ],
    )
}

pub fn render(r: &RunReport) -> String {
    let mut o = header().join(",");
    o.push('\n');
    for s in &r.steps {
        let m = &s.summary;
        let non_ok = m.not_ok_count();
        let mut row: Vec<String> = vec![
            (s.step + 1).to_string(),
            num(s.offered),
            num(s.start_s),
            num(s.end_s),
            num(m.duration_s),
            m.requests.to_string(),
            m.responses.to_string(),
            num(m.throughput),
            num(m.goodput),
            m.error_count.to_string(),
            num(m.error_ratio),
            non_ok.to_string(),
        ];
        row.extend(ErrorKind::ALL.iter().map(|k| m.errors_of(*k).to_string()));
        let (rt, sv, sl) = (&m.response_time_ms, &m.service_time_ms, &m.send_lag_ms);
        row.extend([
            num(rt.mean),
            num(rt.p50),
            num(rt.p90),
            num(rt.p95),
            num(rt.p99),
            num(rt.p999),
            num(rt.max),
            num(sv.p50),
            num(sv.p99),
            num(sl.p50),
            num(sl.p99),
            num(sl.max),
            num(m.connect_time_ms.mean),
            m.connections_opened.to_string(),
            num(m.bytes_in_per_s),
            num(s.generator.cpu_pct),
            s.generator.threads.to_string(),
            s.generator.pool_waits.to_string(),
        ]);
        // Open-loop scenario steps only; empty cells elsewhere.
        let ss = m.sessions.as_ref();
        let session = |f: fn(&crate::metrics::SessionSummary) -> u64| {
            ss.map_or(String::new(), |x| f(x).to_string())
        };
        row.extend([
            session(|x| x.started),
            session(|x| x.completed),
            session(|x| x.failed),
            session(|x| x.dropped),
            s.slo_ok.map_or(String::new(), |b| b.to_string()),
            s.flags.join(";"),
        ]);
        write_row(&mut o, &row);
    }
    o
}

pub fn names_header() -> Vec<String> {
    columns(
        &[
            "step",
            "offered",
            "name",
            "requests",
            "responses",
            "ok",
            "throughput",
            "error_count",
        ],
        &[
            "rt_mean_ms",
            "rt_p50_ms",
            "rt_p90_ms",
            "rt_p95_ms",
            "rt_p99_ms",
            "rt_max_ms",
            "time_spent_s",
            "page_load_p50_ms",
            "page_load_p95_ms",
            "page_load_p99_ms",
        ],
    )
}

/// One row per step and name (names in each step's order: most time spent first); None
/// when no step kept names (results written before they were kept).
pub fn render_names(r: &RunReport) -> Option<String> {
    if r.steps.iter().all(|s| s.summary.names.is_empty()) {
        return None;
    }
    let mut o = names_header().join(",");
    o.push('\n');
    for s in &r.steps {
        for n in &s.summary.names {
            let rt = &n.response_time_ms;
            // No response, no response time: empty cells, not zeros.
            let ms = |v: f64| if rt.count > 0 { num(v) } else { String::new() };
            let mut row = vec![
                (s.step + 1).to_string(),
                num(s.offered),
                n.name.clone(),
                n.requests.to_string(),
                n.responses.to_string(),
                n.ok.to_string(),
                num(n.throughput),
                n.error_count.to_string(),
            ];
            row.extend(
                ErrorKind::ALL
                    .iter()
                    .map(|k| n.errors.get(k.name()).copied().unwrap_or(0).to_string()),
            );
            row.extend([
                ms(rt.mean),
                ms(rt.p50),
                ms(rt.p90),
                ms(rt.p95),
                ms(rt.p99),
                ms(rt.max),
                num(n.time_spent_s),
            ]);
            // Pages with a burst only.
            let pl = n.page_load_ms.as_ref().filter(|l| l.count > 0);
            row.extend([
                pl.map_or(String::new(), |l| num(l.p50)),
                pl.map_or(String::new(), |l| num(l.p95)),
                pl.map_or(String::new(), |l| num(l.p99)),
            ]);
            write_row(&mut o, &row);
        }
    }
    Some(o)
}

/// Where the per-name rows go: beside `out`, its stem and `-names.csv` (`steps-names.csv`).
pub fn names_path(out: &Path) -> PathBuf {
    let stem = out
        .file_stem()
        .map_or("steps".into(), |s| s.to_string_lossy().into_owned());
    out.with_file_name(format!("{stem}-names.csv"))
}

/// `overload report --format csv`.
pub struct CsvExporter;

impl Exporter for CsvExporter {
    fn default_name(&self) -> &'static str {
        "steps.csv"
    }

    fn serialize(&self, r: &RunReport, out: &Path) -> crate::Result<Vec<(PathBuf, Vec<u8>)>> {
        let mut files = vec![(out.to_path_buf(), render(r).into_bytes())];
        if let Some(names) = render_names(r) {
            files.push((names_path(out), names.into_bytes()));
        }
        Ok(files)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testdata;
    use super::*;
    use crate::store::{RunData, StepRecord};

    fn report(steps: Vec<StepRecord>) -> RunReport {
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
    fn one_row_per_step_with_fixed_columns() {
        let mut steps = testdata::open_sweep();
        steps[0].flags = vec!["a".into(), "b,c".into()];
        steps[1].summary.throughput = f64::NAN;
        steps[3].summary.sessions = Some(crate::metrics::SessionSummary {
            started: 150,
            completed: 143,
            dropped: 5,
            ..Default::default()
        });
        let r = report(steps);
        let csv = render(&r);
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 6);
        let cols = header().len();
        assert!(lines[0].starts_with("step,offered,"));
        assert!(lines[0].contains("err_connect_refused"));
        assert!(lines[1].ends_with("\"a;b,c\""), "{}", lines[1]);
        assert_eq!(lines[2].split(',').count(), cols);
        assert!(
            lines[2].starts_with("2,200,12,24,10,1990,1990,,"),
            "{}",
            lines[2]
        );
        // Step 4: 30 timeouts, 20 503s.
        let row4: Vec<&str> = lines[4].split(',').collect();
        let h = header();
        let at = |name: &str| row4[h.iter().position(|c| c == name).unwrap()];
        assert_eq!(at("err_timeout"), "30");
        assert_eq!(at("non_2xx_3xx"), "20");
        assert_eq!(
            (at("sessions_started"), at("sessions_dropped")),
            ("150", "5")
        );
        let row2: Vec<&str> = lines[2].split(',').collect();
        let i = h.iter().position(|c| c == "sessions_started").unwrap();
        assert_eq!(row2[i], "", "no scenario sessions: empty");
        assert_eq!(field("x\"y"), "\"x\"\"y\"");
        assert!(render_names(&r).is_none(), "no names kept, no second file");
    }

    #[test]
    fn one_row_per_step_and_name_beside_the_steps() {
        use crate::metrics::names::NameSummary;
        use crate::metrics::LatencyStats;
        let mut steps = testdata::open_sweep();
        steps.truncate(2);
        let name = |n: &str, count: u64, p95: f64| NameSummary {
            name: n.into(),
            requests: count + 2,
            responses: count,
            ok: count,
            throughput: count as f64 / 10.0,
            errors: [("check-failed".to_string(), 2)].into(),
            error_count: 2,
            response_time_ms: LatencyStats {
                p95,
                count,
                ..Default::default()
            },
            time_spent_s: 1.5,
            page_load_ms: None,
        };
        steps[0].summary.names = vec![name("GET /a,b", 10, 40.0), name("/x", 0, 0.0)];
        steps[1].summary.names = vec![name("GET /a,b", 20, 80.0)];
        // A page with a burst in step 2: its load time.
        steps[1].summary.names[0].page_load_ms = Some(LatencyStats {
            p50: 90.0,
            p95: 120.0,
            p99: 150.5,
            count: 20,
            ..Default::default()
        });
        let r = report(steps);
        let csv = render_names(&r).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 4, "{csv}");
        let h = names_header();
        let cell = |line: usize, col: &str| -> String {
            // The name holds a comma: quoted, one field.
            let f: Vec<String> = lines[line]
                .replace("\"GET /a,b\"", "GET /a;b")
                .split(',')
                .map(String::from)
                .collect();
            assert_eq!(f.len(), h.len(), "{}", lines[line]);
            f[h.iter().position(|c| c == col).unwrap()].clone()
        };
        assert!(
            lines[1].starts_with("1,100,\"GET /a,b\",12,10,10,1,2,"),
            "{}",
            lines[1]
        );
        assert_eq!(cell(1, "err_check_failed"), "2");
        assert_eq!(cell(1, "rt_p95_ms"), "40");
        assert_eq!(cell(2, "name"), "/x");
        assert_eq!(cell(2, "rt_p95_ms"), "", "no response: no percentile");
        assert_eq!(
            (cell(3, "step"), cell(3, "rt_p95_ms")),
            ("2".into(), "80".into())
        );
        assert_eq!(cell(1, "page_load_p50_ms"), "", "no burst: no page load");
        assert_eq!(
            (cell(3, "page_load_p50_ms"), cell(3, "page_load_p99_ms")),
            ("90".into(), "150.5".into())
        );
        assert_eq!(
            names_path(Path::new("/o/steps.csv")),
            Path::new("/o/steps-names.csv")
        );
        let files = CsvExporter.serialize(&r, Path::new("/o/run.csv")).unwrap();
        assert_eq!(files[1].0, Path::new("/o/run-names.csv"));
    }
}
