//! `report --format gnuplot`: S1's per-step table (`steps.dat`) and a script (`steps.gp`)
//! that draws its charts — reply rate and response time against demanded rate, and errors
//! against demanded rate — as SVG (or PNG) files next to it. Columns: docs/report.md.
use super::charts::{CAPACITY_COLOR, SATURATION_COLOR};
use super::model::Exporter;
use super::model::RunReport;
use crate::metrics::ErrorKind;
use crate::store::StepRecord;
use crate::units::fmt_num;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// The fixed columns before and after the error kinds (1-based in gnuplot).
pub const LEAD_COLUMNS: [&str; 10] = [
    "step",
    "start_s",
    "demanded_rate",
    "request_rate",
    "reply_rate_avg",
    "reply_rate_max",
    "reply_rate_min",
    "reply_rate_stddev",
    "reply_time_ms",
    "connect_time_ms",
];
pub const TAIL_COLUMNS: [&str; 5] = [
    "http_non_2xx_3xx",
    "throughput",
    "goodput",
    "reply_time_p50_ms",
    "reply_time_p99_ms",
];

/// All column names in order.
pub fn columns() -> Vec<String> {
    let mut c: Vec<String> = LEAD_COLUMNS.iter().map(|s| s.to_string()).collect();
    c.extend(ErrorKind::ALL.iter().map(|k| k.name().to_string()));
    c.extend(TAIL_COLUMNS.iter().map(|s| s.to_string()));
    c
}

/// gnuplot reads `NaN` as a missing point.
fn num(v: f64) -> String {
    if v.is_finite() {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        "NaN".to_string()
    }
}

/// Reply rate avg / max / min / stddev over the measured seconds of a step (S1's httperf
/// figures). Without per-second data the step's throughput stands for all of them.
pub fn reply_rate_stats(r: &RunReport, s: &StepRecord) -> (f64, f64, f64, f64) {
    let v: Vec<f64> = r
        .data
        .series
        .iter()
        .filter(|p| p.step == s.step && !p.warmup)
        .map(|p| p.responses as f64)
        .collect();
    if v.is_empty() {
        let x = s.summary.throughput;
        return (x, x, x, f64::NAN);
    }
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let sd = if v.len() > 1 {
        (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    (mean, max, min, sd)
}

/// The data file.
pub fn data(r: &RunReport) -> String {
    let cols = columns();
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# overload {}: run '{}' ({} loop{}), one line per step; NaN = no value.",
        env!("CARGO_PKG_VERSION"),
        r.name(),
        r.data.info.mode,
        if r.complete() { "" } else { ", INCOMPLETE run" }
    );
    let _ = writeln!(
        o,
        "# demanded_rate is the offered load: requests/s (open loop) or users (closed loop)."
    );
    o.push_str(
        "# request_rate = requests / measured seconds; reply_rate_* over the step's measured\n",
    );
    o.push_str("# seconds; times in ms (means); error kinds and http_non_2xx_3xx are counts in the step.\n");
    for (i, c) in cols.iter().enumerate() {
        let _ = writeln!(o, "#   {:>2} {c}", i + 1);
    }
    let _ = writeln!(o, "# {}", cols.join(" "));
    for s in &r.steps {
        let m = &s.summary;
        let (avg, max, min, sd) = reply_rate_stats(r, s);
        let req_rate = if m.duration_s > 0.0 {
            m.requests as f64 / m.duration_s
        } else {
            f64::NAN
        };
        let mut row = vec![
            (s.step + 1).to_string(),
            num(s.start_s),
            num(s.offered),
            num(req_rate),
            num(avg),
            num(max),
            num(min),
            num(sd),
            num(if m.responses > 0 {
                m.response_time_ms.mean
            } else {
                f64::NAN
            }),
            num(m.connect_time_ms.mean),
        ];
        row.extend(ErrorKind::ALL.iter().map(|k| m.errors_of(*k).to_string()));
        let non_ok = m.not_ok_count();
        let lat = |v: f64| num(if m.responses > 0 { v } else { f64::NAN });
        row.extend([
            non_ok.to_string(),
            num(m.throughput),
            num(m.goodput),
            lat(m.response_time_ms.p50),
            lat(m.response_time_ms.p99),
        ]);
        let _ = writeln!(o, "{}", row.join(" "));
    }
    o
}

/// Quotes a string for gnuplot (double quotes, backslash escapes).
fn q(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The script; `dat` is the data file's name, `gp` the script's own (both live in one
/// folder): its header names the file written, whatever the data file's extension.
pub fn script(r: &RunReport, dat: &str, gp: &str) -> String {
    let stem = gp.strip_suffix(".gp").unwrap_or(gp);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "# overload {}: charts of {dat} (run '{}'). Run it from this folder:\n\
         #   gnuplot {gp}                   -> {stem}-rate.svg, {stem}-time.svg, {stem}-errors.svg\n\
         #   gnuplot -e \"fmt='png'\" {stem}.gp    -> the same as PNG (needs the pngcairo terminal)",
        env!("CARGO_PKG_VERSION"),
        r.name().replace('\n', " ")
    );
    if r.steps.is_empty() {
        let _ = writeln!(
            o,
            "print {}",
            q(&format!("{dat} holds no step: nothing to plot"))
        );
        return o;
    }
    let errs = ErrorKind::ALL.len();
    let first_err = LEAD_COLUMNS.len() + 1;
    let col = |name: &str| {
        columns()
            .iter()
            .position(|c| c == name)
            .map_or(0, |i| i + 1)
    };
    let _ = writeln!(
        o,
        "if (!exists(\"fmt\")) fmt = \"svg\"\n\
         dat = {}\nout = {}\n\
         if (fmt eq \"png\") {{\n  set terminal pngcairo size 960,600 font \",11\"\n}} else {{\n  \
         set terminal svg size 960,600 font \"Helvetica,13\" background \"#ffffff\"\n}}\n\
         set grid lc rgb \"#dddddd\"\nset key top left box opaque\nset border 3\nset tics nomirror\n\
         set xlabel {}\nset xrange [0:*]",
        q(dat),
        q(stem),
        q(if r.is_open() {
            "demanded rate (requests/s)"
        } else {
            "users"
        }),
    );
    let mut n = 1;
    if let Some(s) = &r.analysis.saturation {
        let _ = writeln!(
            o,
            "set arrow {n} from {x}, graph 0 to {x}, graph 1 nohead dt 2 lw 1.5 lc rgb \"{SATURATION_COLOR}\"\n\
             set label {n} {} at {x}, graph 0.97 offset 0.5,0 tc rgb \"{SATURATION_COLOR}\"",
            q(&format!("saturation {}", fmt_num(s.offered))),
            x = num(s.offered)
        );
        n += 1;
    }
    if let Some(c) = r.analysis.capacity {
        let _ = writeln!(
            o,
            "set arrow {n} from {x}, graph 0 to {x}, graph 1 nohead dt 2 lw 1.5 lc rgb \"{CAPACITY_COLOR}\"\n\
             set label {n} {} at {x}, graph 0.91 offset 0.5,0 tc rgb \"{CAPACITY_COLOR}\"",
            q(&format!(
                "capacity {}{}",
                if r.analysis.capacity_lower_bound {
                    "at least "
                } else {
                    ""
                },
                fmt_num(c)
            )),
            x = num(c)
        );
    }
    // Reply rate vs demanded rate (S1), with min..max bars and the y = x line.
    let ideal = if r.is_open() {
        ", \\\n     dat using 3:3 with lines dt 2 lc rgb \"#999999\" title \"reply rate = demanded rate\""
    } else {
        ""
    };
    let _ = writeln!(
        o,
        "\nset output out.\"-rate.\".fmt\nset title \"Reply rate vs demanded rate\"\n\
         set ylabel \"replies/s\"\nset yrange [0:*]\n\
         plot dat using 3:5:7:6 with yerrorbars lc rgb \"#2563eb\" pt 7 ps 0.6 title \"reply rate (avg, min..max)\", \\\n     \
         dat using 3:5 with lines lw 2 lc rgb \"#2563eb\" notitle, \\\n     \
         dat using 3:{} with linespoints lw 1.5 dt 3 lc rgb \"#16a34a\" pt 6 title \"goodput (2xx/3xx)\"{ideal}",
        col("goodput")
    );
    // Response time: log scale unless nothing is positive (gnuplot stops on an empty plot).
    let any_rt = r
        .steps
        .iter()
        .any(|s| s.summary.responses > 0 && s.summary.response_time_ms.mean > 0.0);
    let _ = writeln!(
        o,
        "\nset output out.\"-time.\".fmt\nset title \"Response time vs demanded rate\"\n\
         set ylabel \"ms\"\nset yrange [*:*]\n{}\
         plot dat using 3:($9 > 0 ? $9 : NaN) with linespoints lw 2 lc rgb \"#2563eb\" pt 7 title \"reply time (mean)\", \\\n     \
         dat using 3:(${p99} > 0 ? ${p99} : NaN) with linespoints lw 1.5 lc rgb \"#1e3a8a\" pt 5 title \"reply time p99\", \\\n     \
         dat using 3:($10 > 0 ? $10 : NaN) with linespoints lw 1.5 lc rgb \"#ea580c\" pt 9 title \"connection time (mean)\"\n\
         unset logscale y",
        if any_rt { "set logscale y\n" } else { "" },
        p99 = col("reply_time_p99_ms")
    );
    let names: Vec<&str> = ErrorKind::ALL.iter().map(|k| k.name()).collect();
    let _ = writeln!(
        o,
        "\nset output out.\"-errors.\".fmt\nset title \"Errors vs demanded rate\"\n\
         set ylabel \"errors in the step\"\nset yrange [0:*]\nerrnames = {}\n\
         plot for [i={first_err}:{last}] dat using 3:i with linespoints lw 1.5 title word(errnames, i-{off}), \\\n     \
         dat using 3:{http} with linespoints lw 1.5 dt 2 title \"HTTP 4xx/5xx\"\nset output",
        q(&names.join(" ")),
        last = first_err + errs - 1,
        off = first_err - 1,
        http = col("http_non_2xx_3xx")
    );
    o
}

/// `overload report --format gnuplot`: the data, and beside it the script that plots it.
pub struct GnuplotExporter;

impl Exporter for GnuplotExporter {
    fn default_name(&self) -> &'static str {
        "steps.dat"
    }

    fn serialize(&self, r: &RunReport, out: &Path) -> crate::Result<Vec<(PathBuf, Vec<u8>)>> {
        // --out names the data file; a .gp path names the script instead.
        let (dat, gp) = if out.extension().is_some_and(|e| e == "gp") {
            (out.with_extension("dat"), out.to_path_buf())
        } else {
            (out.to_path_buf(), out.with_extension("gp"))
        };
        let name = |p: &Path, default: &str| {
            p.file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_else(|| default.to_string())
        };
        let script = script(r, &name(&dat, "steps.dat"), &name(&gp, "steps.gp"));
        Ok(vec![(dat, data(r).into_bytes()), (gp, script.into_bytes())])
    }
}

#[cfg(test)]
mod tests {
    use super::super::testdata;
    use super::*;
    use crate::store::RunData;

    fn report(steps: Vec<StepRecord>, with_series: bool) -> RunReport {
        let series = if with_series {
            steps.iter().flat_map(testdata::series).collect()
        } else {
            vec![]
        };
        RunReport::from_data(RunData {
            dir: "/tmp/x".into(),
            info: testdata::info("t", "open", Some("p99<100ms")),
            steps,
            series,
            events: Vec::new(),
            skipped: vec![],
        })
    }

    #[test]
    fn data_has_named_columns_and_s1_figures() {
        let r = report(testdata::open_sweep(), true);
        let d = data(&r);
        let cols = columns();
        assert_eq!(cols.len(), 10 + ErrorKind::COUNT + 5);
        assert!(d.contains("#   11 connect-refused"));
        let rows: Vec<Vec<&str>> = d
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| l.split(' ').collect())
            .collect();
        assert_eq!(rows.len(), 5);
        assert!(rows.iter().all(|r| r.len() == cols.len()));
        // Step 1: 100/s demanded, series 95/100/105 around it.
        assert_eq!(rows[0][2], "100");
        assert_eq!(rows[0][5], "105");
        assert_eq!(rows[0][6], "95");
        let sd: f64 = rows[0][7].parse().unwrap();
        assert!(sd > 3.0 && sd < 5.0, "{sd}");
        assert_eq!(rows[3][13], "30", "timeouts of step 4 (column 14)");
    }

    #[test]
    fn script_plots_three_charts_and_marks_saturation() {
        let r = report(testdata::open_sweep(), false);
        let s = script(&r, "steps.dat", "steps.gp");
        assert!(s.contains("dat = \"steps.dat\""));
        assert_eq!(s.matches("set output out.").count(), 3);
        assert!(s.contains("saturation 400"));
        assert!(s.contains("capacity 300"));
        assert!(s.contains("using 3:3 with lines"), "y = x in open loop");
        assert!(data(&r).contains(" NaN "), "no per-second data: no stddev");
        let empty = report(vec![], false);
        assert!(script(&empty, "steps.dat", "steps.gp").contains("nothing to plot"));
    }

    #[test]
    fn script_header_names_the_files_written() {
        let r = report(testdata::open_sweep(), false);
        for (out, dat, gp) in [
            ("/r/plot.txt", "plot.txt", "plot.gp"),
            ("/r/plot", "plot", "plot.gp"),
            ("/r/plot.gp", "plot.dat", "plot.gp"),
            ("/r/steps.dat", "steps.dat", "steps.gp"),
        ] {
            let files = GnuplotExporter.serialize(&r, Path::new(out)).unwrap();
            let names: Vec<String> = files
                .iter()
                .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect();
            assert_eq!(names, [dat, gp], "{out}");
            let script = String::from_utf8_lossy(&files[1].1);
            assert!(
                script.contains(&format!("#   gnuplot {gp} ")),
                "{out}: {script}"
            );
            assert!(script.contains(&format!("dat = \"{dat}\"")), "{out}");
        }
    }
}
