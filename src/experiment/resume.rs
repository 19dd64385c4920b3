//! `EXPDIR/experiment.json`: which runs are finished, so `--resume` starts where an
//! interrupted experiment stopped. Written atomically (temporary file, fsync, rename) after
//! every run, so a kill at any moment leaves either the old or the new state, never half.
use super::spec::Experiment;
use crate::Error;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const FILE: &str = "experiment.json";
pub const FORMAT_VERSION: u32 = 1;
/// Largest experiment.json read by `--resume` (a run's record is some 300 bytes).
const MAX_STATE_FILE: u64 = 64 << 20;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    pub format_version: u32,
    pub name: String,
    pub file: String,
    /// Of the experiment file (and --quick): a resume with another file is refused.
    pub fingerprint: String,
    pub quick: bool,
    pub created_unix_ms: u64,
    /// Run ids in the order they run.
    pub planned: Vec<String>,
    /// Finished runs, in the order they finished.
    pub runs: Vec<RunState>,
    /// A server started by a `setup` command while it runs: a killed experiment leaves it
    /// behind, and --resume stops it before anything else.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerState>,
    pub complete: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    pub id: String,
    pub config: String,
    pub rep: u32,
    /// The sweep's or search's exit code: 0, or 3 when it failed its SLO.
    pub exit_code: i32,
    pub started_unix_ms: u64,
    pub finished_unix_ms: u64,
    /// The equivalent `overload sweep|capacity` command.
    pub command: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerState {
    pub run: String,
    pub pid: i32,
    /// /proc/PID/stat start time: a reused pid is never signalled.
    pub start_ticks: u64,
    /// The value of `OVERLOAD_SERVER_TAG` the setup command was started with: a process
    /// is stopped on `--resume` only when it carries it (none in older states: nothing is).
    #[serde(default)]
    pub tag: String,
}

impl State {
    pub fn new(exp: &Experiment) -> State {
        State {
            format_version: FORMAT_VERSION,
            name: exp.name.clone(),
            file: exp.file.display().to_string(),
            fingerprint: exp.fingerprint.clone(),
            quick: exp.quick,
            created_unix_ms: crate::clock::unix_ms(),
            planned: super::plan::runs(exp).into_iter().map(|r| r.id).collect(),
            runs: Vec::new(),
            server: None,
            complete: false,
        }
    }

    pub fn path(dir: &Path) -> PathBuf {
        dir.join(FILE)
    }

    /// Reads DIR/experiment.json (a regular file of at most 64 MiB); missing or unreadable
    /// is a usage error naming it.
    pub fn load(dir: &Path) -> crate::Result<State> {
        let p = State::path(dir);
        let text = crate::fsutil::read_capped_text(&p, MAX_STATE_FILE, "--resume")
            .map_err(|e| Error::usage(format!("{e} (no experiment started there?)")))?;
        let s: State = serde_json::from_str(&text).map_err(|e| {
            Error::usage(format!(
                "--resume: {} is damaged: {e}",
                crate::fsutil::shown(&p)
            ))
        })?;
        if s.format_version != FORMAT_VERSION {
            return Err(Error::usage(format!(
                "--resume: {} has format version {}, this overload reads {FORMAT_VERSION}",
                crate::fsutil::shown(&p),
                s.format_version
            )));
        }
        Ok(s)
    }

    /// Writes atomically (temporary file, fsync, rename; never through a planted link).
    pub fn save(&self, dir: &Path) -> crate::Result<()> {
        let mut text = serde_json::to_string_pretty(self)
            .map_err(|e| Error::runtime(format!("experiment state: {e}")))?;
        text.push('\n');
        crate::fsutil::write_atomic(&State::path(dir), text.as_bytes())
    }

    /// The same experiment file (and --quick) as when it started?
    pub fn check(&self, exp: &Experiment, dir: &Path) -> crate::Result<()> {
        if self.fingerprint != exp.fingerprint || self.quick != exp.quick {
            return Err(Error::usage(format!(
                "--resume: {} changed since the experiment in {} started (or --quick differs); start a new one with another --out",
                crate::fsutil::shown(&exp.file),
                crate::fsutil::shown(dir)
            )));
        }
        Ok(())
    }

    pub fn is_done(&self, id: &str) -> bool {
        self.runs.iter().any(|r| r.id == id)
    }

    pub fn mark_done(&mut self, r: RunState) {
        self.runs.retain(|x| x.id != r.id);
        self.runs.push(r);
        self.complete = self.planned.iter().all(|p| self.is_done(p));
    }
}

/// The newest `PARENT/*-NAME` folder holding an experiment.json (folder names start with a
/// UTC time stamp, so the newest sorts last).
pub fn latest(parent: &Path, name: &str) -> Option<PathBuf> {
    let suffix = format!("-{name}");
    let mut found: Vec<PathBuf> = std::fs::read_dir(parent)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(&suffix))
                && State::path(p).is_file()
        })
        .collect();
    found.sort();
    found.pop()
}

#[cfg(test)]
mod tests {
    use super::super::spec::parse;
    use super::*;

    fn exp(text_extra: &str) -> Experiment {
        let t = format!(
            "repetitions = 2\n[load]\nusers = 1\n[[config]]\nname = 'a'\nsetup = 'true'\nready = 'http://127.0.0.1:1/'\n[[config]]\nname = 'b'\nsetup = 'true'\nready = 'http://127.0.0.1:2/'\n{text_extra}"
        );
        parse(&t, Path::new("e.toml"), false).unwrap()
    }

    fn done(id: &str) -> RunState {
        RunState {
            id: id.into(),
            config: id.split("-r").next().unwrap().into(),
            rep: 1,
            exit_code: 0,
            started_unix_ms: 1,
            finished_unix_ms: 2,
            command: "overload sweep".into(),
        }
    }

    #[test]
    fn state_round_trip_and_resume_checks() {
        let dir = std::env::temp_dir().join(format!("ol-exp-state-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let x = exp("");
        let mut s = State::new(&x);
        assert_eq!(s.planned, ["a-r1", "b-r1", "a-r2", "b-r2"]);
        s.mark_done(done("a-r1"));
        s.server = Some(ServerState {
            run: "b-r1".into(),
            pid: 42,
            start_ticks: 7,
            tag: "t".into(),
        });
        s.save(&dir).unwrap();
        let back = State::load(&dir).unwrap();
        assert_eq!(back, s);
        assert!(back.is_done("a-r1") && !back.is_done("b-r1"));
        assert!(!back.complete);
        back.check(&x, &dir).unwrap();
        // Another file: refused, one line, exit code 2.
        let e = back.check(&exp("# edited\n"), &dir).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("changed"), "{e}");
        let mut s = back;
        for id in ["b-r1", "a-r2", "b-r2"] {
            s.mark_done(done(id));
        }
        assert!(s.complete);
        // Marking twice keeps one record.
        s.mark_done(done("b-r2"));
        assert_eq!(s.runs.len(), 4);
        // The newest folder of that name is found.
        let parent = dir.join("runs");
        for stamp in [
            "20260101T000000Z-e",
            "20260102T000000Z-e",
            "20260103T000000Z-other",
        ] {
            std::fs::create_dir_all(parent.join(stamp)).unwrap();
            s.save(&parent.join(stamp)).unwrap();
        }
        assert_eq!(
            latest(&parent, "e").unwrap(),
            parent.join("20260102T000000Z-e")
        );
        assert!(latest(&parent, "none").is_none());
        // Damaged file: a usage error naming it.
        std::fs::write(State::path(&dir), "{").unwrap();
        let e = State::load(&dir).unwrap_err();
        assert!(e.to_string().contains("damaged"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
