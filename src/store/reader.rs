//! Reading a results folder back, also one whose run was interrupted or killed.
use super::{ControlEvent, RunInfo, SeriesPoint, StepRecord};
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
    /// The changes made to the load while it ran (series.jsonl's event lines), in order.
    pub events: Vec<ControlEvent>,
    /// What was skipped while reading (a truncated last line…), one message each.
    pub skipped: Vec<String>,
}

impl RunData {
    /// The run ended normally; otherwise reports mark it incomplete.
    pub fn complete(&self) -> bool {
        self.info.complete
    }
}

/// Reads DIR/run.json, steps.jsonl and series.jsonl; a line that does not parse is skipped
/// and said in [`RunData::skipped`].
pub fn load(dir: &Path) -> crate::Result<RunData> {
    load_with(dir, false)
}

/// [`load`] for a reader that writes what it read as exact (merge): a line that does not
/// parse is an error naming the file and the line, except a truncated last line (a run cut
/// off while writing it), which is skipped as [`load`] does.
pub fn load_strict(dir: &Path) -> crate::Result<RunData> {
    load_with(dir, true)
}

fn load_with(dir: &Path, strict: bool) -> crate::Result<RunData> {
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
    let steps = read_lines::<StepRecord>(&dir.join("steps.jsonl"), strict, &mut skipped)?;
    let lines = read_lines::<SeriesLine>(&dir.join("series.jsonl"), strict, &mut skipped)?;
    let (series, events) = split_series(lines);
    Ok(RunData {
        dir: dir.to_path_buf(),
        info,
        steps,
        series,
        events,
        skipped,
    })
}

/// Reads a JSON-lines file; lines that do not parse are skipped and reported (or, `strict`,
/// refused unless it is the truncated last line). A FIFO or device under the name is refused.
fn read_lines<T: DeserializeOwned>(
    path: &Path,
    strict: bool,
    skipped: &mut Vec<String>,
) -> crate::Result<Vec<T>> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(Vec::new());
    }
    let bytes =
        fsutil::read_capped(path, fsutil::MAX_RESULTS_FILE, "results").map_err(Error::usage)?;
    let text = String::from_utf8_lossy(&bytes);
    let name = fsutil::shown(path);
    let mut found = Vec::new();
    let out = parse_lines(&text, &name, &mut found);
    if strict {
        if let Some(bad) = found.iter().find(|b| !b.cut) {
            return Err(Error::usage(format!("{}: {}", bad.at, bad.what)));
        }
    }
    skipped.extend(found.iter().map(Bad::skipped));
    Ok(out)
}

/// Parses the text of a `steps.jsonl` file; lines that do not parse are skipped and reported
/// in `skipped` as `NAME:LINE: ...`. Never fails: a damaged file yields what can be read.
pub fn parse_steps(text: &str, name: &str, skipped: &mut Vec<String>) -> Vec<StepRecord> {
    parse_into(text, name, skipped)
}

/// Parses the text of a `series.jsonl` file, as [`parse_steps`] does: its seconds, and the
/// changes of load (event lines) apart.
pub fn parse_series(
    text: &str,
    name: &str,
    skipped: &mut Vec<String>,
) -> (Vec<SeriesPoint>, Vec<ControlEvent>) {
    split_series(parse_into(text, name, skipped))
}

/// A line of `series.jsonl`: a second, or an event (told apart by its first key, so a
/// damaged line is reported with the error of what it claims to be).
enum SeriesLine {
    Point(Box<SeriesPoint>),
    Event(ControlEvent),
}

impl<'de> serde::Deserialize<'de> for SeriesLine {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let v = serde_json::Value::deserialize(d)?;
        if v.get("event").is_some() {
            serde_json::from_value(v)
                .map(SeriesLine::Event)
                .map_err(D::Error::custom)
        } else {
            serde_json::from_value(v)
                .map(|p| SeriesLine::Point(Box::new(p)))
                .map_err(D::Error::custom)
        }
    }
}

fn split_series(lines: Vec<SeriesLine>) -> (Vec<SeriesPoint>, Vec<ControlEvent>) {
    let (mut points, mut events) = (Vec::with_capacity(lines.len()), Vec::new());
    for l in lines {
        match l {
            SeriesLine::Point(p) => points.push(*p),
            SeriesLine::Event(e) => events.push(e),
        }
    }
    (points, events)
}

fn parse_into<T: DeserializeOwned>(text: &str, name: &str, skipped: &mut Vec<String>) -> Vec<T> {
    let mut found = Vec::new();
    let out = parse_lines(text, name, &mut found);
    skipped.extend(found.iter().map(Bad::skipped));
    out
}

/// A line that did not parse.
struct Bad {
    /// The truncated last line of a run cut off while writing it.
    cut: bool,
    /// `NAME:LINE`.
    at: String,
    what: String,
}

impl Bad {
    /// The note of a reader that skips it: `NAME:LINE: skipped ...`.
    fn skipped(&self) -> String {
        format!("{}: skipped {}", self.at, self.what)
    }
}

/// The lines of `text` that parse; each one that does not is in `skipped`.
fn parse_lines<T: DeserializeOwned>(text: &str, name: &str, skipped: &mut Vec<Bad>) -> Vec<T> {
    let ends_with_newline = text.ends_with('\n');
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::with_capacity(lines.len());
    let name = crate::units::escape_controls(name);
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let cut = i + 1 == lines.len() && !ends_with_newline;
        if line.len() > fsutil::MAX_RESULTS_LINE {
            skipped.push(Bad {
                cut,
                at: format!("{name}:{}", i + 1),
                what: format!(
                    "a line of {} MiB (the limit is {} MiB)",
                    line.len() >> 20,
                    fsutil::MAX_RESULTS_LINE >> 20
                ),
            });
            continue;
        }
        match serde_json::from_str::<T>(line) {
            Ok(v) => out.push(v),
            Err(e) => {
                let why = if cut {
                    "truncated last line (the run was cut off while writing it)"
                } else {
                    "invalid line"
                };
                skipped.push(Bad {
                    cut,
                    at: format!("{name}:{}", i + 1),
                    what: format!("{why}: {e}"),
                });
            }
        }
    }
    out
}
