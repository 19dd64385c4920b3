//! `overload report DIR`: regenerate a results folder's report (HTML, CSV, JSON, gnuplot),
//! also for a run that was interrupted.
use crate::report::{export, Format, RunReport};
use clap::{Args, ValueEnum};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// One self-contained page with SVG charts (default: DIR/report.html).
    Html,
    /// One row per step (default: DIR/steps.csv).
    Csv,
    /// Run info, analysis and steps (default: DIR/report.json).
    Json,
    /// S1's table and a gnuplot script (default: DIR/steps.dat and DIR/steps.gp).
    Gnuplot,
    /// Response-time buckets per step, as vegeta's `report -type=hist` (default: standard output).
    Hist,
    /// The percentile distribution per step, as wrk2's `--latency` (default: standard output).
    Percentiles,
    /// HdrHistogram interval log, one interval per step (default: DIR/latency.hlog).
    HdrLog,
}

#[derive(Args, Debug, Clone)]
pub struct ReportArgs {
    /// Results folder written by `overload sweep` or `overload capacity`.
    pub dir: PathBuf,
    #[arg(long, value_enum, default_value = "html")]
    pub format: FormatArg,
    /// Where to write [default: inside DIR]; `-` is standard output (a report of one file).
    /// For gnuplot: the .dat file (the .gp goes beside it).
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
    /// Bucket bounds for --format hist, e.g. '[0,1ms,10ms,100ms]' [default: 30 log-spaced
    /// bounds from each step's p0.1 to its p99.9].
    #[arg(long, value_parser = parse_buckets)]
    pub buckets: Option<Buckets>,
    /// Write HdrHistogram's interval log to FILE (same as --format hdr-log --out FILE).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["format", "out"])]
    pub hdr_log: Option<PathBuf>,
}

/// `--buckets`' bounds in µs (one value for clap, not a list of values).
#[derive(Debug, Clone)]
pub struct Buckets(pub Vec<u64>);

fn parse_buckets(s: &str) -> Result<Buckets, String> {
    crate::report::hist::parse_buckets(s).map(Buckets)
}

pub fn run(mut a: ReportArgs) -> crate::Result<i32> {
    if a.buckets.is_some() && a.format != FormatArg::Hist {
        return Err(crate::Error::usage("--buckets applies to --format hist"));
    }
    if let Some(f) = a.hdr_log.take() {
        a.format = FormatArg::HdrLog;
        a.out = Some(f);
    }
    let r = RunReport::load(&a.dir)?;
    let format = match a.format {
        FormatArg::Html => Format::Html,
        FormatArg::Csv => Format::Csv,
        FormatArg::Json => Format::Json,
        FormatArg::Gnuplot => Format::Gnuplot,
        FormatArg::HdrLog => Format::HdrLog,
        FormatArg::Hist => {
            let text = crate::report::hist::hist_text(&r, a.buckets.as_ref().map(|b| &b.0[..]));
            return text_out(&text, a.out.as_deref());
        }
        FormatArg::Percentiles => {
            return text_out(
                &crate::report::hist::distributions_text(&r),
                a.out.as_deref(),
            )
        }
    };
    let paths = export::write(&r, format, a.out.as_deref())?;
    if !r.complete() {
        crate::eoutln!(
            "overload: note: '{}' is an incomplete run ({} step{} saved); the report says so",
            crate::fsutil::shown(&a.dir),
            r.steps.len(),
            if r.steps.len() == 1 { "" } else { "s" }
        );
    }
    for n in &r.notes {
        crate::eoutln!("overload: note: {n}");
    }
    for p in &paths {
        crate::outln!("{}", crate::fsutil::shown(p));
    }
    if format == Format::Gnuplot {
        if let (Some(gp), Some(dir)) = (paths.last(), paths.last().and_then(|p| p.parent())) {
            let dir = if dir.as_os_str().is_empty() {
                ".".into()
            } else {
                crate::fsutil::shown(dir)
            };
            crate::eoutln!(
                "overload: draw the charts with: cd {dir} && gnuplot {}",
                gp.file_name()
                    .map(|f| crate::units::escape_controls(&f.to_string_lossy()).into_owned())
                    .unwrap_or_default()
            );
        }
    }
    Ok(0)
}

/// The text tables go to standard output unless --out names a file (as vegeta and wrk2 print).
fn text_out(text: &str, out: Option<&std::path::Path>) -> crate::Result<i32> {
    match out {
        Some(p) if !crate::report::export::is_stdout(p) => {
            export::check_parent(p)?;
            export::write_file(p, text)?;
            crate::outln!("{}", p.display());
        }
        _ => crate::out!("{text}"),
    }
    Ok(0)
}
