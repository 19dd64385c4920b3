//! Starting a stack's processes in order and waiting for each to be ready. Any failure
//! stops everything this launch started and reports which part failed, why, and the last
//! lines of its logs: a failed `up` leaves nothing running.
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::thread::sleep;
use std::time::{Duration, Instant};

use super::process::{self, PartInfo};
use super::stacks::Stack;
use crate::{Error, Result};

/// How long a part gets to stop on SIGTERM before its group is SIGKILLed.
pub const STOP_GRACE: Duration = Duration::from_secs(10);

pub struct Launch {
    /// Whether to give up waiting: the signal layer's flag (a test scripts its own).
    stop: fn() -> bool,
    stack: Stack,
    started: Vec<(Child, PartInfo)>,
    deadline: Instant,
    timeout: Duration,
}

impl Launch {
    pub fn new(stack: Stack, timeout: Duration) -> Launch {
        Launch {
            stop: crate::signals::interrupted,
            stack,
            started: Vec::new(),
            deadline: Instant::now() + timeout,
            timeout,
        }
    }

    /// Starts one part (see process::spawn); its stdout/stderr go to `logs/<name>.out`.
    pub fn spawn(
        &mut self,
        name: &str,
        program: &str,
        args: Vec<String>,
        logs_dir: &Path,
        extra_logs: Vec<PathBuf>,
        user: Option<(u32, u32)>,
    ) -> Result<()> {
        self.spawn_env(name, program, args, logs_dir, extra_logs, user, &[])
    }

    /// [`Launch::spawn`] with variables added to the part's (otherwise cleared)
    /// environment: directories a server writes to when it has no HOME of its own.
    #[allow(clippy::too_many_arguments)]
    pub fn spawn_env(
        &mut self,
        name: &str,
        program: &str,
        args: Vec<String>,
        logs_dir: &Path,
        extra_logs: Vec<PathBuf>,
        user: Option<(u32, u32)>,
        env: &[(&str, &Path)],
    ) -> Result<()> {
        let out = logs_dir.join(format!("{name}.out"));
        match process::spawn(name, program, &args, &out, &extra_logs, user, env) {
            Ok(p) => {
                self.started.push(p);
                Ok(())
            }
            Err(e) => Err(self.fail(name, &e.to_string(), &[])),
        }
    }

    /// Polls `ready` every 10 ms until it holds; fails at once if a started part exits,
    /// and after the launch's overall timeout.
    pub fn wait(&mut self, what: &str, mut ready: impl FnMut() -> bool) -> Result<()> {
        loop {
            for i in 0..self.started.len() {
                let (child, part) = &mut self.started[i];
                if let Ok(Some(status)) = child.try_wait() {
                    let name = part.name.clone();
                    let logs = part.logs.clone();
                    return Err(self.fail(
                        &name,
                        &format!("exited ({status}) before {what} was ready"),
                        &logs,
                    ));
                }
            }
            if (self.stop)() {
                let name = self
                    .started
                    .last()
                    .map(|(_, p)| p.name.clone())
                    .unwrap_or_default();
                return Err(self.fail(
                    &name,
                    &format!("interrupted while waiting for {what}"),
                    &[],
                ));
            }
            if ready() {
                return Ok(());
            }
            if Instant::now() >= self.deadline {
                let logs: Vec<PathBuf> = self
                    .started
                    .iter()
                    .flat_map(|(_, p)| p.logs.clone())
                    .collect();
                let name = self
                    .started
                    .last()
                    .map(|(_, p)| p.name.clone())
                    .unwrap_or_default();
                return Err(self.fail(
                    &name,
                    &format!("{what} not ready after {:.0?}", self.timeout),
                    &logs,
                ));
            }
            sleep(Duration::from_millis(10));
        }
    }

    /// Stops every part started so far (newest first) and builds the error.
    pub fn fail(&mut self, part: &str, why: &str, logs: &[PathBuf]) -> Error {
        let mut cleanup = String::new();
        while let Some((mut child, p)) = self.started.pop() {
            if let Err(e) = process::stop(&p, STOP_GRACE) {
                cleanup.push_str(&format!("\n  cleanup: {e}"));
            }
            let _ = child.try_wait();
        }
        Error::runtime(format!(
            "lab up {}: {part} failed: {why}{}{cleanup}",
            self.stack,
            process::log_excerpt(logs, 12)
        ))
    }

    /// Hands over the started parts once everything is ready. The Child handles are
    /// dropped (not killed): the daemons outlive this process by design.
    pub fn finish(self) -> Vec<PartInfo> {
        self.started.into_iter().map(|(_, p)| p).collect()
    }
}

/// True once a unix socket accepts connections.
pub fn unix_ready(path: &Path) -> bool {
    UnixStream::connect(path).is_ok()
}

/// True once GET `path` of the stack at `base` (its URL; `ca` for https) answers `status`
/// with a body starting with `body_prefix`.
pub fn http_ready(
    base: &str,
    ca: Option<&Path>,
    path: &str,
    status: u16,
    body_prefix: &str,
) -> bool {
    matches!(get_at(base, ca, path, &[], Duration::from_secs(2), 1 << 20),
        Ok(r) if r.status == status && r.text().starts_with(body_prefix))
}

/// GET `path` from a lab stack on 127.0.0.1:`port` over plain HTTP (readiness checks and
/// the lab tests).
pub fn get_local(
    port: u16,
    path: &str,
    headers: &[(&str, &str)],
    timeout: Duration,
    max_bytes: usize,
) -> std::result::Result<crate::http_get::Response, String> {
    get_at(
        &format!("http://127.0.0.1:{port}"),
        None,
        path,
        headers,
        timeout,
        max_bytes,
    )
}

/// GET `path` from the stack whose base URL is `base`; an https stack's certificate is
/// checked against `ca` (the prefix's CA, see `tls.rs`), or the system's roots.
pub fn get_at(
    base: &str,
    ca: Option<&Path>,
    path: &str,
    headers: &[(&str, &str)],
    timeout: Duration,
    max_bytes: usize,
) -> std::result::Result<crate::http_get::Response, String> {
    use crate::http_get::{get_trusting, Trust};
    let url = crate::url::Url::parse(&format!("{base}/"))?;
    let trust = ca.map_or(Trust::System, Trust::CaFile);
    get_trusting(&url, path, headers, timeout, max_bytes, trust)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn a_failing_part_stops_the_others_and_shows_its_log() {
        let dir = std::env::temp_dir().join(format!("overload-launch-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let mut run = Launch::new(Stack::NginxFpm, Duration::from_secs(10));
        run.spawn("first", "/bin/sleep", vec!["30".into()], &dir, vec![], None)
            .unwrap();
        let first = run.started[0].1.clone();
        run.spawn(
            "second",
            "/bin/sh",
            vec![
                "-c".into(),
                "echo 'bind() failed: address in use' >&2; exit 3".into(),
            ],
            &dir,
            vec![],
            None,
        )
        .unwrap();
        let err = run.wait("second", || false).unwrap_err().to_string();
        assert!(err.contains("second failed: exited"), "{err}");
        assert!(err.contains("exit status: 3"), "{err}");
        assert!(err.contains("bind() failed: address in use"), "{err}");
        assert!(!process::is_alive(&first), "the first part must be stopped");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_interrupt_ends_a_readiness_wait_at_once_and_stops_what_started() {
        let dir =
            std::env::temp_dir().join(format!("overload-launch-test3-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        // A 60 s launch timeout: only the interrupt can end this wait before the test's end.
        let mut run = Launch::new(Stack::NginxFpm, Duration::from_secs(60));
        run.stop = || true;
        run.spawn("web", "/bin/sleep", vec!["60".into()], &dir, vec![], None)
            .unwrap();
        let web = run.started[0].1.clone();
        let err = run.wait("web", || false).unwrap_err().to_string();
        assert!(err.contains("interrupted while waiting for web"), "{err}");
        assert!(!process::is_alive(&web), "the started part must be stopped");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_program_is_named() {
        let dir =
            std::env::temp_dir().join(format!("overload-launch-test2-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let mut run = Launch::new(Stack::Mariadb, Duration::from_secs(1));
        let err = run
            .spawn("db", "/nonexistent/mariadbd", vec![], &dir, vec![], None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("lab up mariadb: db failed"), "{err}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
