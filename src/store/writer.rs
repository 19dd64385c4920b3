//! Writing the results folder: run.json atomically, steps and series appended and fsync'd.
use super::{RunInfo, SeriesPoint, StepRecord};
use crate::clock::unix_ms;
use crate::Error;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

pub struct Writer {
    dir: PathBuf,
    steps: File,
    series: File,
    info: RunInfo,
}

fn io_err(what: &str, p: &Path, e: std::io::Error) -> Error {
    Error::runtime(format!("{what} '{}': {e}", p.display()))
}

impl Writer {
    /// Creates the folder (refusing one that already holds results) and writes run.json.
    pub fn create(dir: &Path, info: RunInfo) -> crate::Result<Writer> {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::usage(format!("--out: cannot create '{}': {e}", dir.display())))?;
        let steps_path = dir.join("steps.jsonl");
        if steps_path.metadata().is_ok_and(|m| m.len() > 0) {
            return Err(Error::usage(format!(
                "--out: '{}' already holds results; choose another folder",
                dir.display()
            )));
        }
        let open = |p: &Path| {
            OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .map_err(|e| io_err("cannot open", p, e))
        };
        let w = Writer {
            dir: dir.to_path_buf(),
            steps: open(&steps_path)?,
            series: open(&dir.join("series.jsonl"))?,
            info,
        };
        w.write_info()?;
        Ok(w)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn info(&self) -> &RunInfo {
        &self.info
    }

    /// run.json via a temporary file and rename, so a reader never sees half of it.
    fn write_info(&self) -> crate::Result<()> {
        let tmp = self.dir.join(".run.json.tmp");
        let dst = self.dir.join("run.json");
        let text = serde_json::to_string_pretty(&self.info)
            .map_err(|e| Error::runtime(format!("run.json: {e}")))?;
        let mut f = File::create(&tmp).map_err(|e| io_err("cannot write", &tmp, e))?;
        f.write_all(text.as_bytes())
            .and_then(|_| f.write_all(b"\n"))
            .and_then(|_| f.sync_all())
            .map_err(|e| io_err("cannot write", &tmp, e))?;
        std::fs::rename(&tmp, &dst).map_err(|e| io_err("cannot write", &dst, e))?;
        if let Ok(d) = File::open(&self.dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// Appends a finished step and its seconds; both are on disk when this returns.
    pub fn append_step(&mut self, step: &StepRecord, series: &[SeriesPoint]) -> crate::Result<()> {
        let mut buf = String::new();
        for p in series {
            buf.push_str(
                &serde_json::to_string(p).map_err(|e| Error::runtime(format!("series: {e}")))?,
            );
            buf.push('\n');
        }
        let sp = self.dir.join("series.jsonl");
        self.series
            .write_all(buf.as_bytes())
            .and_then(|_| self.series.sync_data())
            .map_err(|e| io_err("cannot append to", &sp, e))?;
        let mut line =
            serde_json::to_string(step).map_err(|e| Error::runtime(format!("step: {e}")))?;
        line.push('\n');
        let p = self.dir.join("steps.jsonl");
        // One write of the whole line: a crash leaves at most a truncated last line.
        self.steps
            .write_all(line.as_bytes())
            .and_then(|_| self.steps.sync_data())
            .map_err(|e| io_err("cannot append to", &p, e))
    }

    /// Marks the run finished (or not) and records why it stopped.
    pub fn finish(&mut self, complete: bool, stop_reason: &str) -> crate::Result<()> {
        self.info.complete = complete;
        self.info.finished_unix_ms = Some(unix_ms());
        self.info.stop_reason = Some(stop_reason.to_string());
        self.write_info()
    }
}
