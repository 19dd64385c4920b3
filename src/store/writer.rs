//! Writing the results folder: run.json atomically, steps and series appended and fsync'd.
//! Every file goes through `fsutil`: never through a planted link or into a FIFO.
use super::{RunInfo, SeriesPoint, StepRecord};
use crate::clock::unix_ms;
use crate::fsutil::{self, write_error};
use crate::Error;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The most bytes [`Writer::append_steps`] holds before it writes and syncs them.
pub const BATCH_BYTES: usize = 4 << 20;

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
        self.append_steps([(step, series)])
    }

    /// [`Writer::append_step`] for many steps at once (a merge): written and synced in
    /// batches of about [`BATCH_BYTES`], not one sync per step (a sync each made a merge of
    /// 100,000 steps take many minutes). On a failure the batch's lines are cut off again and
    /// the error says how many steps are safe.
    pub fn append_steps<'a>(
        &mut self,
        steps: impl IntoIterator<Item = (&'a StepRecord, &'a [SeriesPoint])>,
    ) -> crate::Result<()> {
        let (mut lines, mut seconds, mut n) = (Vec::new(), Vec::new(), 0);
        for (step, series) in steps {
            for p in series {
                serde_json::to_writer(&mut seconds, p)
                    .map_err(|e| Error::runtime(format!("series: {e}")))?;
                seconds.push(b'\n');
            }
            serde_json::to_writer(&mut lines, step)
                .map_err(|e| Error::runtime(format!("step: {e}")))?;
            lines.push(b'\n');
            n += 1;
            if lines.len() + seconds.len() >= BATCH_BYTES {
                self.write_batch(&lines, &seconds, n)?;
                lines.clear();
                seconds.clear();
                n = 0;
            }
        }
        if n > 0 {
            self.write_batch(&lines, &seconds, n)?;
        }
        Ok(())
    }

    /// Appends `n` whole steps' lines and their seconds, each file in one write and synced.
    fn write_batch(&mut self, lines: &[u8], seconds: &[u8], n: usize) -> crate::Result<()> {
        let safe = self.steps_written;
        let fail = |p: PathBuf, e: std::io::Error| {
            Error::runtime(format!(
                "{}; the {safe} step(s) before this one are safe in '{}'",
                write_error(&p, &e),
                fsutil::shown(&self.dir)
            ))
        };
        append_all(&mut self.series, seconds)
            .map_err(|e| fail(self.dir.join("series.jsonl"), e))?;
        // One write of the whole lines: a crash leaves at most a truncated last line.
        append_all(&mut self.steps, lines).map_err(|e| fail(self.dir.join("steps.jsonl"), e))?;
        self.steps_written += n;
        Ok(())
    }

    /// Appends the changes of load made during a step (series.jsonl's event lines), on disk
    /// when this returns; written just before the step they belong to.
    pub fn append_events(&mut self, events: &[super::ControlEvent]) -> crate::Result<()> {
        if events.is_empty() {
            return Ok(());
        }
        let mut lines = Vec::new();
        for e in events {
            serde_json::to_writer(&mut lines, e)
                .map_err(|e| Error::runtime(format!("series: {e}")))?;
            lines.push(b'\n');
        }
        append_all(&mut self.series, &lines)
            .map_err(|e| write_error(&self.dir.join("series.jsonl"), &e))
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
    fn steps_appended_in_batches_read_back_as_appended_one_by_one() {
        let d = scratch("batches");
        let mut rec = step(0, 100.0, summary(100.0, 100.0, 5.0, 0));
        // Lines of 1 MiB: a few batches of about 4 MiB, and a last one under it.
        rec.response_time_hist = "h".repeat(1 << 20);
        let steps: Vec<(StepRecord, Vec<SeriesPoint>)> = (0..11)
            .map(|i| {
                let mut r = rec.clone();
                (r.step, r.offered) = (i, 100.0 * (i + 1) as f64);
                let p = (0..3)
                    .map(|j| SeriesPoint {
                        t: (i * 3 + j) as f64,
                        step: i,
                        offered: r.offered,
                        warmup: j == 0,
                        responses: 100,
                        ok: 99,
                        errors: 1,
                        bytes_in: 1000,
                        response_time_mean_ms: 5.0,
                        response_time_max_ms: 9.0,
                        send_lag_mean_ms: 0.1,
                        response_time_p50_ms: None,
                        response_time_p95_ms: None,
                        response_time_p99_ms: None,
                        server: None,
                    })
                    .collect();
                (r, p)
            })
            .collect();
        let (one, many) = (d.join("one"), d.join("many"));
        let mut w = Writer::create(&one, info()).unwrap();
        for (r, p) in &steps {
            w.append_step(r, p).unwrap();
        }
        let mut w = Writer::create(&many, info()).unwrap();
        w.append_steps(steps.iter().map(|(r, p)| (r, p.as_slice())))
            .unwrap();
        assert_eq!(w.steps_written, steps.len());
        for f in ["steps.jsonl", "series.jsonl"] {
            let a = std::fs::read(one.join(f)).unwrap();
            assert!(!a.is_empty());
            assert_eq!(a, std::fs::read(many.join(f)).unwrap(), "{f}");
        }
        std::fs::remove_dir_all(&d).unwrap();
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
