//! Writing the results folder: run.json atomically, steps and series appended and fsync'd.
//! Every file goes through `fsutil`: never through a planted link or into a FIFO.
use super::{RunInfo, SeriesPoint, StepRecord};
use crate::clock::unix_ms;
use crate::fsutil::{self, write_error};
use crate::Error;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

pub struct Writer {
    dir: PathBuf,
    steps: File,
    series: File,
    info: RunInfo,
    /// Steps on disk so far, for the error that says what a failure left safe.
    steps_written: usize,
}

impl Writer {
    /// Creates the folder (refusing one that already holds results) and writes run.json.
    pub fn create(dir: &Path, info: RunInfo) -> crate::Result<Writer> {
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::usage(format!(
                "--out: cannot create '{}': {e}",
                fsutil::shown(dir)
            ))
        })?;
        let steps_path = dir.join("steps.jsonl");
        if std::fs::symlink_metadata(&steps_path).is_ok_and(|m| m.is_file() && m.len() > 0) {
            return Err(Error::usage(format!(
                "--out: '{}' already holds results; choose another folder",
                fsutil::shown(dir)
            )));
        }
        let w = Writer {
            dir: dir.to_path_buf(),
            steps: fsutil::open_append(&steps_path)?,
            series: fsutil::open_append(&dir.join("series.jsonl"))?,
            info,
            steps_written: 0,
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
        let mut text = serde_json::to_string_pretty(&self.info)
            .map_err(|e| Error::runtime(format!("run.json: {e}")))?;
        text.push('\n');
        fsutil::write_atomic(&self.dir.join("run.json"), text.as_bytes())
    }

    /// Appends a finished step and its seconds; both are on disk when this returns. On a
    /// failure (a full disk) the partial lines are cut off again and the error says how many
    /// steps are safe.
    pub fn append_step(&mut self, step: &StepRecord, series: &[SeriesPoint]) -> crate::Result<()> {
        let mut buf = String::new();
        for p in series {
            buf.push_str(
                &serde_json::to_string(p).map_err(|e| Error::runtime(format!("series: {e}")))?,
            );
            buf.push('\n');
        }
        let mut line =
            serde_json::to_string(step).map_err(|e| Error::runtime(format!("step: {e}")))?;
        line.push('\n');
        let safe = self.steps_written;
        let fail = |p: PathBuf, e: std::io::Error| {
            Error::runtime(format!(
                "{}; the {safe} step(s) before this one are safe in '{}'",
                write_error(&p, &e),
                fsutil::shown(&self.dir)
            ))
        };
        append_all(&mut self.series, buf.as_bytes())
            .map_err(|e| fail(self.dir.join("series.jsonl"), e))?;
        // One write of the whole line: a crash leaves at most a truncated last line.
        append_all(&mut self.steps, line.as_bytes())
            .map_err(|e| fail(self.dir.join("steps.jsonl"), e))?;
        self.steps_written += 1;
        Ok(())
    }

    /// Marks the run finished (or not) and records why it stopped.
    pub fn finish(&mut self, complete: bool, stop_reason: &str) -> crate::Result<()> {
        self.finish_at(complete, stop_reason, unix_ms())
    }

    /// As [`Writer::finish`], with the time it finished (a merged run: its last generator's).
    pub fn finish_at(
        &mut self,
        complete: bool,
        stop_reason: &str,
        finished_unix_ms: u64,
    ) -> crate::Result<()> {
        self.info.complete = complete;
        self.info.finished_unix_ms = Some(finished_unix_ms);
        self.info.stop_reason = Some(stop_reason.to_string());
        self.write_info()
    }
}

/// Appends and syncs `data`; on failure cuts the file back to its old length, so what a
/// full disk interrupted leaves no partial line for the reader to skip.
fn append_all(f: &mut File, data: &[u8]) -> std::io::Result<()> {
    let before = f.metadata()?.len();
    let r = f.write_all(data).and_then(|_| f.sync_data());
    if r.is_err() {
        let _ = f.set_len(before);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::tests::{step, summary};

    fn info() -> RunInfo {
        RunInfo {
            format_version: super::super::FORMAT_VERSION,
            overload_version: "test".into(),
            name: "t".into(),
            kind: "sweep".into(),
            command_line: vec![],
            mode: "open".into(),
            urls: vec![],
            config: serde_json::Value::Null,
            host: Default::default(),
            started_unix_ms: 0,
            finished_unix_ms: None,
            complete: false,
            stop_reason: None,
            slo: None,
        }
    }

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("overload-writer-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn planted_links_and_fifos_in_the_results_folder_are_refused() {
        let d = scratch("planted");
        let victim = d.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let out = d.join("out");
        std::fs::create_dir(&out).unwrap();
        std::os::unix::fs::symlink(&victim, out.join("series.jsonl")).unwrap();
        let e = Writer::create(&out, info())
            .err()
            .expect("refused")
            .to_string();
        assert!(
            e.contains("series.jsonl") && e.contains("symbolic link"),
            "{e}"
        );
        assert!(!e.contains('\n'));
        std::fs::remove_file(out.join("series.jsonl")).unwrap();
        std::os::unix::fs::symlink(&victim, out.join("run.json")).unwrap();
        let e = Writer::create(&out, info())
            .err()
            .expect("refused")
            .to_string();
        assert!(e.contains("run.json") && e.contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// Disk full: a 64 KiB tmpfs fills up after a few steps. The error names the file and
    /// how many steps are safe, the folder holds exactly those steps (no partial line) and
    /// no temporary is left.
    #[test]
    #[ignore = "mounts a 64 KiB tmpfs, which needs root: run with --ignored as root"]
    fn disk_full_names_the_file_and_the_safe_steps() {
        let d = scratch("full");
        let c = std::ffi::CString::new(d.to_str().unwrap()).unwrap();
        let opts = c"size=64k";
        // SAFETY: plain syscall with valid C strings.
        let rc = unsafe {
            libc::mount(
                c"tmpfs".as_ptr(),
                c.as_ptr(),
                c"tmpfs".as_ptr(),
                0,
                opts.as_ptr().cast(),
            )
        };
        assert_eq!(rc, 0, "mount tmpfs: {}", std::io::Error::last_os_error());
        let result = std::panic::catch_unwind(|| {
            let out = d.join("run");
            let mut w = Writer::create(&out, info()).unwrap();
            let mut rec = step(0, 100.0, summary(100.0, 100.0, 5.0, 0));
            // A bulky histogram field fills the disk in a few steps.
            rec.response_time_hist = "h".repeat(9000);
            let mut ok = 0;
            let err = loop {
                rec.step = ok;
                match w.append_step(&rec, &[]) {
                    Ok(()) => ok += 1,
                    Err(e) => break e.to_string(),
                }
                assert!(ok < 100, "a 64 KiB disk never filled");
            };
            assert!(ok > 0);
            assert!(
                err.contains("steps.jsonl") && err.contains("disk is full"),
                "{err}"
            );
            assert!(
                err.contains(&format!("the {ok} step(s) before this one are safe")),
                "{err}"
            );
            let back = super::super::load(&out).unwrap();
            assert_eq!(back.steps.len(), ok);
            assert!(back.skipped.is_empty(), "{:?}", back.skipped);
            // Finishing on a full disk fails with the file's name and leaves no temporary.
            if let Err(e) = w.finish(false, "disk full") {
                assert!(e.to_string().contains("run.json"), "{e}");
            }
            let names: Vec<String> = std::fs::read_dir(&out)
                .unwrap()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
        });
        // SAFETY: unmounting what we mounted above.
        unsafe { libc::umount(c.as_ptr()) };
        let _ = std::fs::remove_dir_all(&d);
        if let Err(p) = result {
            std::panic::resume_unwind(p);
        }
    }
}
