//! The report model: a results folder read back and re-analysed (steps in load order,
//! their series, the analysis and the server's findings). Every format is written from it;
//! it knows no format. [`Exporter`] is the interface every format's writer implements.
use crate::analysis::{self, Analysis};
use crate::store::{self, RunData, StepRecord};
use crate::units::fmt_num;
use std::path::{Path, PathBuf};

/// A results folder and its analysis, recomputed from the steps (never trusted from disk, so
/// a report of an interrupted run says the same as one of a finished run would have).
#[derive(Debug, Clone)]
pub struct RunReport {
    /// The folder as read, less its steps: those are moved to [`RunReport::steps`] (one copy
    /// of a folder of 100,000 steps is enough), so `data.steps` is empty.
    pub data: RunData,
    /// The steps in order of load (a capacity search probes out of order).
    pub steps: Vec<StepRecord>,
    pub analysis: Analysis,
    /// What the reader must know about this report: lines skipped, an SLO that did not parse.
    pub notes: Vec<String>,
    /// A run on stages: the knee found on its ramp and its verdict (`ramp.json`).
    pub ramp: Option<crate::analysis::ramp::RampAnalysis>,
}

impl RunReport {
    /// Reads DIR and analyses it; a missing or foreign folder is a usage error.
    pub fn load(dir: &Path) -> crate::Result<RunReport> {
        Ok(RunReport::from_data(store::load(dir)?))
    }

    pub fn from_data(mut data: RunData) -> RunReport {
        // Escaped once here, where the folder is read back: every format and every terminal
        // line below is written from these fields, never from the raw file.
        let mut scratch = Vec::new();
        escape_strings(&mut data.info, &mut scratch);
        data.steps
            .iter_mut()
            .for_each(|s| escape_strings(s, &mut scratch));
        let mut notes: Vec<String> = data.skipped.clone();
        let slo = match data.info.slo.as_deref() {
            Some(text) => match analysis::slo::parse(text) {
                Ok(s) => Some(s),
                Err(e) => {
                    notes.push(format!(
                        "the run's SLO '{text}' does not parse ({e}); analysed without it"
                    ));
                    None
                }
            },
            None => None,
        };
        let mut steps = std::mem::take(&mut data.steps);
        if steps.windows(2).any(|w| w[1].offered < w[0].offered) {
            // Stable: probes at the same load keep their order.
            steps.sort_by(|a, b| a.offered.total_cmp(&b.offered));
            notes.push("steps were re-ordered by load for the analysis and charts".to_string());
        }
        let cx = analysis::bottleneck::Context::from_config(&data.info.config);
        let mut analysis = analysis::analyze_with(&data.info.mode, &steps, slo.as_ref(), cx);
        // The server's findings, unless the analysis already carries them: every format
        // written from this report (HTML, JSON) then says what the observed hosts showed.
        let observed: Vec<(f64, &crate::observe::StepObservation)> = steps
            .iter()
            .filter_map(|s| s.server.as_ref().map(|o| (s.offered, o)))
            .collect();
        let mut known: std::collections::HashSet<String> =
            analysis.findings.iter().cloned().collect();
        for f in crate::observe::findings(&observed, &data.info.mode) {
            if known.insert(f.clone()) {
                analysis.findings.push(f);
            }
        }
        // A folder of stages without ramp.json (a merge of segments' parts): the knee from
        // its series, without the server's verdict (the raw samples are not kept).
        let ramp = read_ramp(&data.dir).or_else(|| {
            data.info.config.get("stages")?.as_str()?;
            Some(crate::analysis::ramp::analyze(
                &data.info.mode,
                &data.series,
            ))
        });
        RunReport {
            data,
            steps,
            analysis,
            notes,
            ramp,
        }
    }

    /// The run's name: run.json's, else the folder's.
    pub fn name(&self) -> String {
        // `--title`, when the run was given one: the words it was meant to be known by.
        if let Some(t) = self.data.info.config["title"].as_str() {
            if !t.trim().is_empty() {
                return t.to_string();
            }
        }
        let n = self.data.info.name.trim();
        if !n.is_empty() {
            return n.to_string();
        }
        self.data
            .dir
            .file_name()
            .map(|f| crate::units::escape_controls(&f.to_string_lossy()).into_owned())
            .unwrap_or_else(|| "run".to_string())
    }

    /// The results folder, for humans (control characters escaped).
    pub fn dir_shown(&self) -> String {
        crate::fsutil::shown(&self.data.dir)
    }

    pub fn is_open(&self) -> bool {
        self.data.info.mode != "closed"
    }

    pub fn complete(&self) -> bool {
        self.data.complete()
    }

    /// The unit of the load levels.
    pub fn unit(&self) -> &'static str {
        if self.is_open() {
            "req/s"
        } else {
            "users"
        }
    }

    /// A load level with its unit: "400 req/s", "8 users".
    pub fn load_text(&self, v: f64) -> String {
        format!("{} {}", fmt_num(v), self.unit())
    }

    /// The capacity as every page words it: "300 req/s", "≥ 300 req/s" when no probe ever
    /// failed (a lower bound), "–" without an SLO.
    pub fn capacity_text(&self) -> String {
        let a = &self.analysis;
        match a.capacity {
            Some(c) if a.capacity_lower_bound => format!("≥ {}", self.load_text(c)),
            Some(c) => self.load_text(c),
            None => "–".to_string(),
        }
    }
}

/// One export format.
pub trait Exporter {
    /// The file name inside the results folder when no `--out` is given.
    fn default_name(&self) -> &'static str;

    /// The file(s) to write for the output path `out`, with their bytes: one for most
    /// formats; gnuplot writes its data and, beside it, the script that plots it.
    fn serialize(&self, r: &RunReport, out: &Path) -> crate::Result<Vec<(PathBuf, Vec<u8>)>>;
}

/// Escapes control characters in every string of `v` (names, URLs, the command line, server
/// headers and pool names, map keys too): a results folder is input like any other, and what
/// it holds reaches terminals and data files. Left as is when nothing needs escaping.
/// `scratch` is a buffer the caller keeps across calls.
fn escape_strings<T: serde::Serialize + serde::de::DeserializeOwned>(
    v: &mut T,
    scratch: &mut Vec<u8>,
) {
    // Most records hold nothing to escape: written out as JSON (into a reused buffer, far
    // cheaper than a tree of values), a string with a C0 control or a backslash shows as a
    // backslash, DEL and a C1 control (U+0080..U+009F) raw. None of those: nothing to do.
    scratch.clear();
    if serde_json::to_writer(&mut *scratch, &*v).is_ok() && !escapable(scratch) {
        return;
    }
    let Ok(mut json) = serde_json::to_value(&*v) else {
        return;
    };
    if escape_value(&mut json) {
        if let Ok(back) = serde_json::from_value(json) {
            *v = back;
        }
    }
}

/// Whether JSON text `b` may hold a string [`crate::units::escape_controls`] changes: a
/// backslash (every escape, a C0 control's too), DEL, or a C1 control's UTF-8 (C2 80..C2 9F).
fn escapable(b: &[u8]) -> bool {
    b.iter().enumerate().any(|(i, &c)| {
        c == b'\\'
            || c == 0x7f
            || (c == 0xc2 && b.get(i + 1).is_some_and(|n| (0x80..=0x9f).contains(n)))
    })
}

/// Escapes the strings of `v` in place; true when one changed.
fn escape_value(v: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match v {
        Value::String(s) => match crate::units::escape_controls(s) {
            std::borrow::Cow::Owned(e) => {
                *s = e;
                true
            }
            std::borrow::Cow::Borrowed(_) => false,
        },
        Value::Array(a) => a.iter_mut().fold(false, |ch, x| escape_value(x) | ch),
        Value::Object(m) => {
            let mut changed = m.values_mut().fold(false, |ch, x| escape_value(x) | ch);
            if m.keys()
                .any(|k| crate::units::escape_controls(k) != k.as_str())
            {
                let old = std::mem::take(m);
                for (k, x) in old {
                    m.insert(crate::units::escape_controls(&k).into_owned(), x);
                }
                changed = true;
            }
            changed
        }
        _ => false,
    }
}

/// The folder's `ramp.json`; None when absent or unreadable (a folder of a run without
/// stages, or of a version before them). A few kilobytes: the cap keeps a planted huge file
/// from filling memory.
fn read_ramp(dir: &Path) -> Option<crate::analysis::ramp::RampAnalysis> {
    let name = crate::analysis::ramp::RAMP_FILE;
    let raw = crate::fsutil::read_capped(&dir.join(name), 4 << 20, name).ok()?;
    serde_json::from_slice(&raw).ok()
}

#[cfg(test)]
mod tests {
    use super::super::testdata;
    use super::*;

    #[test]
    fn every_control_and_backslash_is_escaped_and_plain_records_are_left_alone() {
        let mut steps = testdata::open_sweep();
        let first = steps[0].clone();
        steps.resize(6, first);
        for (i, s) in steps.iter_mut().enumerate() {
            (s.step, s.offered) = (i, 100.0 * (i + 1) as f64);
        }
        let plain = steps[0].clone();
        let hostile = [
            "a\u{1b}[2J",
            "del\u{7f}",
            "c1\u{85}x",
            "back\\slash",
            "tab\tnl\n",
        ];
        for (s, name) in steps.iter_mut().skip(1).zip(hostile) {
            s.flags.push(name.to_string());
            s.summary.statuses.insert(name.to_string(), 1);
        }
        let r = RunReport::from_data(RunData {
            dir: PathBuf::from("t"),
            info: testdata::info("t", "open", None),
            steps,
            series: Vec::new(),
            events: Vec::new(),
            skipped: Vec::new(),
        });
        assert_eq!(r.steps[0], plain, "nothing to escape: unchanged");
        for (s, name) in r.steps.iter().skip(1).zip(hostile) {
            let want = crate::units::escape_controls(name).into_owned();
            assert_ne!(want, name);
            assert!(s.flags.contains(&want), "{name:?}: {:?}", s.flags);
            assert!(s.summary.statuses.contains_key(&want), "{name:?} as a key");
        }
    }
}
