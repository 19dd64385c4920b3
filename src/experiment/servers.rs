//! The servers of an experiment's runs: a lab stack, or a `setup` command polled on its
//! readiness URL and stopped (with its whole session) after the run; and the one a killed
//! experiment left behind. Everything is bounded in time: readiness and teardown have
//! deadlines.
use super::plan::Run;
use super::resume::{ServerState, State};
use super::runner::Servers;
use super::spec::{Config, Experiment, Server};
use crate::lab::{self, process, LabOptions, PartInfo, Stack, StackSpec};
use crate::Error;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a teardown command may take before it is killed.
const TEARDOWN_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a setup server gets between SIGTERM and SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The impaired path of a run, and this thread inside its load namespace (left first).
type Net = Option<Box<(lab::netem::ns::Entered, lab::netem::NetPath)>>;

/// A server that runs.
enum Started {
    Lab {
        stack: Stack,
        /// MariaDB started for this run (with its own knobs), stopped after it.
        db: bool,
        opts: LabOptions,
        url: String,
        net: Net,
    },
    Command {
        part: PartInfo,
        child: Child,
        url: String,
        net: Net,
    },
}

/// A run's path, made and probed (what it is and what the probe saw, printed).
fn make_path(spec: &lab::netem::PathSpec) -> crate::Result<lab::netem::NetPath> {
    let path = lab::netem::NetPath::create(*spec)?;
    crate::outln!("  network: {}", path.describe());
    let p = path.probe(20)?;
    crate::outln!("  network: {}", p.describe());
    Ok(path)
}

/// A lab stack (on the host's loopback) behind a path: its port relayed to the stack side,
/// this thread moved to the load side; the URL the load uses there.
fn lab_across(spec: &lab::netem::PathSpec, url: &str) -> crate::Result<(String, Net)> {
    let u = crate::url::Url::parse(url).map_err(Error::runtime)?;
    let mut path = make_path(spec)?;
    // From this thread, still in the host's namespace: the relay connects to loopback here.
    path.forward(u.port)?;
    let stack = lab::netem::STACK_ADDR;
    crate::outln!(
        "  network: {stack}:{} relayed to the stack's {}:{} (TCP and UDP)",
        u.port,
        u.host,
        u.port
    );
    let across = format!("{}://{stack}:{}", u.scheme.as_str(), u.port);
    let home = lab::netem::ns::Entered::enter(path.load_ns())?;
    Ok((across, Some(Box::new((home, path)))))
}

/// Back to the host's namespace, then the path goes; what the bridge did is printed (a
/// queue that overflowed is loss the file did not ask for).
fn remove_path(net: Net) -> crate::Result<()> {
    match net {
        Some(b) => {
            let (home, path) = *b;
            drop(home);
            for (port, c) in path.forwarded() {
                crate::outln!("  network: {}", c.describe(port));
            }
            if let Some(c) = path.remove()? {
                crate::outln!("  network: {}", lab::netem::describe_counts(&c));
            }
            Ok(())
        }
        None => Ok(()),
    }
}

impl Started {
    fn url(&self) -> &str {
        match self {
            Started::Lab { url, .. } | Started::Command { url, .. } => url,
        }
    }
}

fn lab_options(exp: &Experiment) -> LabOptions {
    match &exp.lab_prefix {
        Some(p) => LabOptions::new(p),
        None => LabOptions::from_env(),
    }
}

/// The environment variable a setup command is started with, its value recorded in the
/// state: a process later named by the state is stopped only when it carries it (environ
/// is fixed at exec, so editing the state cannot make another process carry it).
const TAG_ENV: &str = "OVERLOAD_SERVER_TAG";

/// `sh -c CMD` in its own session (so the whole group can be stopped), output to `log`,
/// tagged with `tag` ([`TAG_ENV`]).
fn spawn_shell(
    cmd: &str,
    log: &Path,
    run_dir: &Path,
    tag: &str,
    netns: Option<&std::fs::File>,
) -> crate::Result<(Child, PartInfo)> {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| Error::runtime(format!("cannot open {}: {e}", crate::fsutil::shown(log))))?;
    let err = out.try_clone()?;
    let mut c = Command::new("sh");
    c.arg("-c")
        .arg(cmd)
        .env("OVERLOAD_RUN_DIR", run_dir)
        .env(TAG_ENV, tag)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err));
    if let Some(ns) = netns {
        c.env(lab::netem::STACK_ENV, lab::netem::STACK_ADDR);
        lab::netem::ns::command_in(&mut c, ns);
    }
    // SAFETY: setsid() is async-signal-safe and the only thing run between fork and exec.
    unsafe {
        c.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = c
        .spawn()
        .map_err(|e| Error::runtime(format!("cannot run `{cmd}`: {e}")))?;
    let pid = child.id() as i32;
    let start_ticks = process::proc_stat(pid).map_or(0, |s| s.start_ticks);
    Ok((
        child,
        PartInfo {
            name: "setup".into(),
            pid,
            pgid: pid,
            start_ticks,
            command: vec!["sh".into(), "-c".into(), cmd.into()],
            logs: vec![log.to_path_buf()],
        },
    ))
}

/// One GET: `Some(status)` when an HTTP answer came back (the body is not needed).
fn probe(url: &str, timeout: Duration) -> Option<u16> {
    let u = crate::url::Url::parse(url).ok()?;
    crate::http_get::get(&u, &u.target, &[], timeout, 64 << 10)
        .ok()
        .map(|r| r.status)
}

/// Whether the URL's host accepts a TCP connection on its port (from this thread's
/// namespace).
fn accepts(url: &str) -> bool {
    use std::net::ToSocketAddrs;
    let Ok(u) = crate::url::Url::parse(url) else {
        return false;
    };
    (u.host.as_str(), u.port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .is_some_and(|a| {
            std::net::TcpStream::connect_timeout(&a, Duration::from_millis(500)).is_ok()
        })
}

/// The port of a loopback URL (the only kind whose listener this host can watch).
fn local_port(url: &str) -> Option<u16> {
    let u = crate::url::Url::parse(url).ok()?;
    u.is_loopback().then_some(u.port)
}

fn start(
    exp: &Experiment,
    c: &Config,
    run: &Run,
    dir: &Path,
    state: &mut State,
) -> crate::Result<Started> {
    match &c.server {
        Server::Lab { spec, db, network } => {
            let opts = lab_options(exp);
            if let Some(k) = db {
                let dbspec = StackSpec {
                    knobs: k.clone(),
                    port: spec.db_port,
                    ..StackSpec::new(Stack::Mariadb)
                };
                lab::up(&dbspec, &opts)?;
            }
            // `up` restarts a stack that already runs: every run starts from a fresh server.
            let info = match lab::up(spec, &opts) {
                Ok(i) => i,
                Err(e) => {
                    if db.is_some() {
                        let _ = lab::down(Stack::Mariadb, &opts);
                    }
                    return Err(e);
                }
            };
            crate::outln!(
                "  server: lab {} up in {:.2}s at {}",
                spec.stack,
                info.startup_secs,
                info.url
            );
            let (url, net) = match network {
                None => (info.url, None),
                Some(n) => match lab_across(n, &info.url) {
                    Ok(x) => x,
                    Err(e) => {
                        let _ = lab::down(spec.stack, &opts);
                        if db.is_some() {
                            let _ = lab::down(Stack::Mariadb, &opts);
                        }
                        return Err(e);
                    }
                },
            };
            Ok(Started::Lab {
                stack: spec.stack,
                db: db.is_some(),
                opts,
                url,
                net,
            })
        }
        Server::Command {
            setup,
            ready,
            url,
            ready_timeout,
            network,
            ..
        } => {
            // The path first: the server starts in its stack namespace, and this thread
            // (the readiness probe, the load's threads it starts) moves to its load side.
            let net = match network {
                Some(spec) => Some(make_path(spec)?),
                None => None,
            };
            let logs = dir.join("logs");
            std::fs::create_dir_all(&logs)?;
            let log = logs.join(format!("{}.setup.log", run.id));
            let tag = format!(
                "{}-{}-{}",
                std::process::id(),
                crate::clock::unix_ms(),
                run.id
            );
            let (mut child, part) = spawn_shell(
                setup,
                &log,
                &dir.join(&run.id),
                &tag,
                net.as_ref().map(|p| p.stack_ns()),
            )?;
            let net = match net {
                Some(p) => Some(Box::new((lab::netem::ns::Entered::enter(p.load_ns())?, p))),
                None => None,
            };
            state.server = Some(ServerState {
                run: run.id.clone(),
                pid: part.pid,
                start_ticks: part.start_ticks,
                tag,
            });
            state.save(dir)?;
            let t0 = Instant::now();
            let deadline = t0 + *ready_timeout;
            let mut exited_ok = false;
            loop {
                if !exited_ok {
                    if let Some(st) = child.try_wait()? {
                        if !st.success() {
                            let _ = process::stop(&part, STOP_GRACE);
                            return Err(Error::runtime(format!(
                                "{}: setup `{setup}` failed ({st}) before {ready} answered\n{}",
                                run.id,
                                process::log_excerpt(&part.logs, 5)
                            )));
                        }
                        // A script that started a daemon and returned: keep polling.
                        exited_ok = true;
                    }
                }
                // Across a path, the stack's own TLS certificate is the target's, trusted by
                // no one: its port accepting is the readiness.
                let up = match &net {
                    Some(_) => accepts(ready),
                    None => probe(ready, Duration::from_millis(500)).is_some_and(|s| s < 500),
                };
                if up {
                    break;
                }
                if Instant::now() >= deadline || crate::signals::interrupted() {
                    let _ = process::stop(&part, STOP_GRACE);
                    return Err(Error::runtime(format!(
                        "{}: {ready} did not answer within {} of `{setup}`\n{}",
                        run.id,
                        crate::units::fmt_duration(*ready_timeout),
                        process::log_excerpt(&part.logs, 5)
                    )));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            crate::outln!(
                "  server: `{setup}` ready in {:.2}s at {url}",
                t0.elapsed().as_secs_f64()
            );
            Ok(Started::Command {
                part,
                child,
                url: url.clone(),
                net,
            })
        }
    }
}

/// Runs `cmd` with a deadline; kills its group when it overruns.
fn run_bounded(cmd: &str, log: &Path, run_dir: &Path, limit: Duration) -> crate::Result<()> {
    let (mut child, part) = spawn_shell(cmd, log, run_dir, "teardown", None)?;
    let deadline = Instant::now() + limit;
    loop {
        if let Some(st) = child.try_wait()? {
            return if st.success() {
                Ok(())
            } else {
                Err(Error::runtime(format!("teardown `{cmd}` failed ({st})")))
            };
        }
        if Instant::now() >= deadline {
            let _ = process::stop(&part, Duration::ZERO);
            return Err(Error::runtime(format!(
                "teardown `{cmd}` did not finish within {}",
                crate::units::fmt_duration(limit)
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn stop(c: &Config, s: Started, run: &Run, dir: &Path) -> crate::Result<()> {
    match s {
        Started::Lab {
            stack,
            db,
            opts,
            net,
            ..
        } => {
            // The path first: the load's namespace is left, and the relay stops before the
            // stack it relays to.
            let gone = remove_path(net);
            lab::down(stack, &opts)?;
            if db {
                lab::down(Stack::Mariadb, &opts)?;
            }
            gone
        }
        Started::Command {
            part,
            mut child,
            url,
            net,
        } => {
            let mut first = None;
            if let Server::Command {
                teardown: Some(t), ..
            } = &c.server
            {
                let log = dir.join("logs").join(format!("{}.teardown.log", run.id));
                if let Err(e) = run_bounded(t, &log, &dir.join(&run.id), TEARDOWN_TIMEOUT) {
                    first = Some(e);
                }
            }
            // Whatever the setup command left running in its session goes too.
            if let Err(e) = process::stop(&part, STOP_GRACE) {
                first.get_or_insert(e);
            }
            let _ = child.try_wait();
            if let Err(e) = remove_path(net) {
                first.get_or_insert(e);
            }
            // The next configuration may listen on the same port.
            if let Some(port) = local_port(&url) {
                if let Err(e) = process::wait_port_free(port, Duration::from_secs(10)) {
                    first.get_or_insert(e);
                }
            }
            match first {
                Some(e) => Err(e),
                None => Ok(()),
            }
        }
    }
}

/// Whether `pid`'s environment holds `TAG_ENV=tag` (/proc/PID/environ, read capped).
fn carries_tag(pid: i32, tag: &str) -> bool {
    use std::io::Read;
    let want = format!("{TAG_ENV}={tag}");
    let Ok(f) = std::fs::File::open(format!("/proc/{pid}/environ")) else {
        return false;
    };
    let mut env = Vec::new();
    if f.take(1 << 20).read_to_end(&mut env).is_err() {
        return false;
    }
    !tag.is_empty() && env.split(|&b| b == 0).any(|e| e == want.as_bytes())
}

/// A server a killed experiment left behind (recorded in the state), stopped: only when its
/// leader (same pid and start time), or a process still in its group, carries the tag
/// recorded with it. A state file is only a file: one edited to name another process, or
/// written before tags, gets nothing signalled.
fn stop_leftover(state: &mut State, dir: &Path) -> crate::Result<()> {
    if let Some(s) = state.server.take() {
        let part = PartInfo {
            name: "setup".into(),
            pid: s.pid,
            pgid: s.pid,
            start_ticks: s.start_ticks,
            command: Vec::new(),
            logs: Vec::new(),
        };
        let alive = process::proc_stat(s.pid).is_some_and(|p| p.start_ticks == s.start_ticks);
        let ours = (alive && carries_tag(s.pid, &s.tag))
            || process::group_members(&part)
                .into_iter()
                .any(|m| carries_tag(m, &s.tag));
        if ours {
            crate::outln!(
                "stopping the server of {} left by the interrupted experiment (pid {})",
                s.run,
                s.pid
            );
            process::stop(&part, STOP_GRACE)?;
        } else if alive {
            crate::outln!(
                "pid {} recorded for the server of {} is not one this experiment started: left alone",
                s.pid,
                s.run
            );
        }
        state.save(dir)?;
    }
    Ok(())
}

/// The real servers: lab stacks and setup commands.
#[derive(Default)]
pub struct RealServers {
    started: Option<Started>,
}

impl Servers for RealServers {
    fn stop_leftover(&mut self, state: &mut State, dir: &Path) -> crate::Result<()> {
        stop_leftover(state, dir)
    }

    fn start(
        &mut self,
        exp: &Experiment,
        c: &Config,
        run: &Run,
        dir: &Path,
        state: &mut State,
    ) -> crate::Result<String> {
        let s = start(exp, c, run, dir, state)?;
        let url = s.url().to_string();
        self.started = Some(s);
        Ok(url)
    }

    fn stop(&mut self, c: &Config, run: &Run, dir: &Path) -> crate::Result<()> {
        match self.started.take() {
            Some(s) => stop(c, s, run, dir),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sleep 30` in its own session, as an unrelated server would run.
    fn unrelated() -> Child {
        let mut c = Command::new("sleep");
        c.arg("30");
        // SAFETY: setsid() is async-signal-safe and the only thing run between fork and exec.
        unsafe {
            c.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        c.spawn().unwrap()
    }

    /// A setup command's server left behind is found by its tag and stopped.
    #[test]
    fn a_leftover_server_carrying_its_tag_is_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("setup.log");
        let (mut child, part) = spawn_shell("sleep 30", &log, dir.path(), "t-1", None).unwrap();
        let mut state: State = serde_json::from_value(serde_json::json!({
            "format_version": 1, "name": "e", "file": "e.toml", "fingerprint": "f",
            "quick": false, "created_unix_ms": 0, "planned": [], "runs": [],
            "server": {"run": "a-r1", "pid": part.pid, "start_ticks": part.start_ticks, "tag": "t-1"},
            "complete": false
        }))
        .unwrap();
        stop_leftover(&mut state, dir.path()).unwrap();
        assert!(!matches!(child.try_wait(), Ok(None)), "still running");
        assert_eq!(state.server, None);
    }

    /// A tampered `--resume` state naming another process (its pid and start time copied
    /// from /proc) never gets it signalled: only a process carrying the tag this experiment
    /// gave its setup command is stopped.
    #[test]
    fn a_tampered_state_never_stops_an_unrelated_process() {
        let dir = tempfile::tempdir().unwrap();
        let mut victim = unrelated();
        let pid = victim.id() as i32;
        let ticks = process::proc_stat(pid).unwrap().start_ticks;
        let mut state: State = serde_json::from_value(serde_json::json!({
            "format_version": 1, "name": "e", "file": "e.toml", "fingerprint": "f",
            "quick": false, "created_unix_ms": 0, "planned": [], "runs": [],
            "server": {"run": "a-r1", "pid": pid, "start_ticks": ticks, "tag": "forged"},
            "complete": false
        }))
        .unwrap();
        stop_leftover(&mut state, dir.path()).unwrap();
        // Err (ECHILD): the stop reaped it.
        let alive = matches!(victim.try_wait(), Ok(None));
        let _ = victim.kill();
        let _ = victim.wait();
        assert!(alive, "the unrelated process was signalled");
    }

    #[test]
    fn urls_and_ports() {
        assert_eq!(local_port("http://127.0.0.1:8080/x"), Some(8080));
        assert_eq!(local_port("http://localhost/"), Some(80));
        assert_eq!(local_port("http://10.0.0.1:80/"), None);
        assert_eq!(
            probe("http://127.0.0.1:1/", Duration::from_millis(100)),
            None
        );
    }
}
