//! Writing a report: one [`Exporter`] per format (hyperfine's export/ shape), each turning
//! the [`RunReport`] model into the bytes of its file(s); this module only picks the
//! exporter, places the output and writes it. Writers import the model and the trait (both in
//! `model.rs`), never this module.
use super::model::{Exporter, RunReport};
use crate::Error;
use std::path::{Path, PathBuf};

/// The export formats of `overload report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Html,
    Csv,
    Json,
    Gnuplot,
    /// vegeta-like bucket table of each step's response times.
    Hist,
    /// HdrHistogram's interval log, one interval per step.
    HdrLog,
}

impl Format {
    pub fn exporter(self) -> &'static dyn Exporter {
        match self {
            Format::Html => &super::html_page::HtmlExporter,
            Format::Csv => &super::csv::CsvExporter,
            Format::Json => &super::jsonfmt::JsonExporter,
            Format::Gnuplot => &super::gnuplot::GnuplotExporter,
            Format::Hist => &super::hist::HistExporter,
            Format::HdrLog => &super::hist::HdrLogExporter,
        }
    }
}

/// Where a format goes by default, inside the results folder.
pub fn default_path(dir: &Path, format: Format) -> PathBuf {
    dir.join(format.exporter().default_name())
}

/// Writes the report in `format` to `out` (or its default place) and returns the paths
/// written; `--out -` writes it to standard output (and returns no path), when it is one
/// file.
pub fn write(r: &RunReport, format: Format, out: Option<&Path>) -> crate::Result<Vec<PathBuf>> {
    if out.is_some_and(is_stdout) {
        // Rendered as for its default place, so the bytes are the file's.
        let files = format
            .exporter()
            .serialize(r, &default_path(&r.data.dir, format))?;
        if let [(_, bytes)] = &files[..] {
            crate::out!("{}", String::from_utf8_lossy(bytes));
            return Ok(vec![]);
        }
        let names: Vec<String> = files
            .iter()
            .filter_map(|(p, _)| Some(p.file_name()?.to_string_lossy().into_owned()))
            .collect();
        return Err(Error::usage(format!(
            "--out -: this report is {} files ({}), which standard output cannot hold; give a file name",
            files.len(),
            names.join(", ")
        )));
    }
    let path = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| default_path(&r.data.dir, format));
    check_parent(&path)?;
    let files = format.exporter().serialize(r, &path)?;
    for (p, bytes) in &files {
        write_bytes(p, bytes)?;
    }
    Ok(files.into_iter().map(|(p, _)| p).collect())
}

/// An output whose folder does not exist is the user's mistake, said before any work.
pub fn check_parent(p: &Path) -> crate::Result<()> {
    let dir = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(Error::usage(format!(
            "--out {}: directory '{}' does not exist",
            crate::fsutil::shown(p),
            crate::fsutil::shown(dir)
        )));
    }
    if p.is_dir() {
        return Err(Error::usage(format!(
            "--out {}: is a directory; give a file name",
            crate::fsutil::shown(p)
        )));
    }
    // Refused now, not when the report is written after the run.
    crate::fsutil::check_regular_or_absent(p)
        .map_err(|e| Error::usage(format!("--out {}: {e}", crate::fsutil::shown(p))))?;
    if !crate::fsutil::can_create_in(dir) {
        return Err(Error::usage(format!(
            "--out {}: cannot write in '{}'",
            crate::fsutil::shown(p),
            crate::fsutil::shown(dir)
        )));
    }
    Ok(())
}

pub fn write_file(p: &Path, text: &str) -> crate::Result<()> {
    write_bytes(p, text.as_bytes())
}

/// Never through a link or into a FIFO planted where the report goes (see `fsutil`).
fn write_bytes(p: &Path, bytes: &[u8]) -> crate::Result<()> {
    crate::fsutil::write_atomic(p, bytes)
}

/// `-` as an output file (`--json -`, `report --out -`): standard output.
pub fn is_stdout(p: &Path) -> bool {
    p.as_os_str() == "-"
}

#[cfg(test)]
mod tests {
    use super::super::testdata;
    use super::*;
    use crate::store::RunData;

    fn report(dir: &Path) -> RunReport {
        let steps = testdata::open_sweep();
        RunReport::from_data(RunData {
            dir: dir.to_path_buf(),
            info: testdata::info("t", "open", None),
            series: steps.iter().flat_map(testdata::series).collect(),
            steps,
            events: Vec::new(),
            skipped: vec![],
        })
    }

    #[test]
    fn each_format_writes_its_default_files_in_the_folder() {
        let dir = std::env::temp_dir().join(format!("overload-export-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let r = report(&dir);
        let names = |f: Format| -> Vec<String> {
            write(&r, f, None)
                .unwrap()
                .iter()
                .map(|p| {
                    assert!(std::fs::metadata(p).unwrap().len() > 0, "{}", p.display());
                    p.strip_prefix(&dir).unwrap().display().to_string()
                })
                .collect()
        };
        assert_eq!(names(Format::Html), ["report.html"]);
        assert_eq!(names(Format::Csv), ["steps.csv"]);
        assert_eq!(names(Format::Json), ["report.json"]);
        assert_eq!(names(Format::Gnuplot), ["steps.dat", "steps.gp"]);
        // The bytes written are the exporter's, unchanged.
        let csv = std::fs::read_to_string(dir.join("steps.csv")).unwrap();
        assert_eq!(csv, super::super::csv::render(&r));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn gnuplot_out_may_name_the_script_or_the_data() {
        let r = report(Path::new("/nonexistent"));
        let ex = Format::Gnuplot.exporter();
        let files = |out: &str| -> Vec<PathBuf> {
            ex.serialize(&r, Path::new(out))
                .unwrap()
                .into_iter()
                .map(|(p, _)| p)
                .collect()
        };
        assert_eq!(
            files("/o/a.gp"),
            [PathBuf::from("/o/a.dat"), "/o/a.gp".into()]
        );
        assert_eq!(
            files("/o/b.txt"),
            [PathBuf::from("/o/b.txt"), "/o/b.gp".into()]
        );
        // The script plots the data file it is written beside.
        let out = ex.serialize(&r, Path::new("/o/a.gp")).unwrap();
        assert!(String::from_utf8_lossy(&out[1].1).contains("a.dat"));
    }

    #[test]
    fn a_missing_folder_is_a_usage_error_before_any_work() {
        let r = report(Path::new("/nonexistent"));
        let e = write(&r, Format::Html, Some(Path::new("/nonexistent/dir/r.html"))).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        assert!(e.to_string().contains("does not exist"), "{e}");
    }
}
