//! Reading a results folder back, also one whose run was interrupted or killed.
use super::{RunInfo, SeriesPoint, StepRecord};
use crate::fsutil;
use crate::Error;
use serde::de::DeserializeOwned;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct RunData {
    pub dir: PathBuf,
    pub info: RunInfo,
    pub steps: Vec<StepRecord>,
    pub series: Vec<SeriesPoint>,
    /// What was skipped while reading (a truncated last line…), one message each.
    pub skipped: Vec<String>,
}

impl RunData {
    /// The run ended normally; otherwise reports mark it incomplete.
    pub fn complete(&self) -> bool {
        self.info.complete
    }
}

/// Reads DIR/run.json, steps.jsonl and series.jsonl.
pub fn load(dir: &Path) -> crate::Result<RunData> {
    if !dir.is_dir() {
        return Err(Error::usage(format!(
            "'{}' is not a results folder (no such directory)",
            fsutil::shown(dir)
        )));
    }
    let info_path = dir.join("run.json");
    let text = fsutil::read_capped(&info_path, fsutil::MAX_RESULTS_LINE as u64, "run.json")
        .map_err(|e| Error::usage(format!("'{}': {e}", fsutil::shown(dir))))?;
    let text = String::from_utf8_lossy(&text);
    let info: RunInfo = serde_json::from_str(&text).map_err(|e| {
        Error::usage(format!(
            "'{}': invalid run.json: {e}",
            fsutil::shown(&info_path)
        ))
    })?;
    if info.format_version > super::FORMAT_VERSION {
        return Err(Error::usage(format!(
            "'{}' was written by a newer overload (format {}; this one reads up to {})",
            fsutil::shown(dir),
            info.format_version,
            super::FORMAT_VERSION
        )));
    }
    let mut skipped = Vec::new();
    let steps = read_lines::<StepRecord>(&dir.join("steps.jsonl"), &mut skipped)?;
    let series = read_lines::<SeriesPoint>(&dir.join("series.jsonl"), &mut skipped)?;
    Ok(RunData {
        dir: dir.to_path_buf(),
        info,
        steps,
        series,
        skipped,
    })
}

/// Reads a JSON-lines file; lines that do not parse are skipped and reported.
fn read_lines<T: DeserializeOwned>(
    path: &Path,
    skipped: &mut Vec<String>,
) -> crate::Result<Vec<T>> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let bytes =
        fsutil::read_capped(path, fsutil::MAX_RESULTS_FILE, "results").map_err(Error::runtime)?;
    let text = String::from_utf8_lossy(&bytes);
    Ok(parse_lines(&text, &path.display().to_string(), skipped))
}

/// Parses the text of a `steps.jsonl` file; lines that do not parse are skipped and reported
/// in `skipped` as `NAME:LINE: ...`. Never fails: a damaged file yields what can be read.
pub fn parse_steps(text: &str, name: &str, skipped: &mut Vec<String>) -> Vec<StepRecord> {
    parse_lines(text, name, skipped)
}

/// Parses the text of a `series.jsonl` file, as [`parse_steps`] does.
pub fn parse_series(text: &str, name: &str, skipped: &mut Vec<String>) -> Vec<SeriesPoint> {
    parse_lines(text, name, skipped)
}

fn parse_lines<T: DeserializeOwned>(text: &str, name: &str, skipped: &mut Vec<String>) -> Vec<T> {
    let ends_with_newline = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if line.len() > fsutil::MAX_RESULTS_LINE {
            skipped.push(format!(
                "{name}:{}: skipped a line of {} MiB (the limit is {} MiB)",
                i + 1,
                line.len() >> 20,
                fsutil::MAX_RESULTS_LINE >> 20
            ));
            continue;
        }
        match serde_json::from_str::<T>(line) {
            Ok(v) => out.push(v),
            Err(e) => {
                let last = i + 1 == lines.len();
                let why = if last && !ends_with_newline {
                    "truncated last line (the run was cut off while writing it)"
                } else {
                    "invalid line"
                };
                let name = crate::units::escape_controls(name);
                skipped.push(format!("{name}:{}: skipped {why}: {e}", i + 1));
            }
        }
    }
    out
}
