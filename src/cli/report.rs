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
}

#[derive(Args, Debug, Clone)]
pub struct ReportArgs {
    /// Results folder written by `overload sweep` or `overload capacity`.
    pub dir: PathBuf,
    #[arg(long, value_enum, default_value = "html")]
    pub format: FormatArg,
    /// Where to write [default: inside DIR]. For gnuplot: the .dat file (the .gp goes beside it).
    #[arg(long, value_name = "PATH")]
    pub out: Option<PathBuf>,
}

pub fn run(a: ReportArgs) -> crate::Result<i32> {
    let r = RunReport::load(&a.dir)?;
    let format = match a.format {
        FormatArg::Html => Format::Html,
        FormatArg::Csv => Format::Csv,
        FormatArg::Json => Format::Json,
        FormatArg::Gnuplot => Format::Gnuplot,
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
