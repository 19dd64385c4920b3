//! Process control without an init system: spawn a daemon in its own session, tell whether
//! it lives (zombies count as dead), stop it with its whole process group, and watch ports.
//!
//! Why sessions: every daemon is started with setsid(), so its pid is also its process group
//! id and every worker it forks stays in that group. `down` can then find and stop all of
//! them, and a Ctrl-C in the terminal that ran `overload lab up` never reaches them.
use serde::{Deserialize, Serialize};
use std::fs;
use std::io::{self, Read, Seek, SeekFrom};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use crate::{Error, Result};

/// PATH for the daemons: the environment is cleared so nothing from the caller leaks in.
pub const DAEMON_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// One started process (a master) and everything needed to stop it from another process.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartInfo {
    /// What it is: "php-fpm", "nginx", "apache2", "mariadbd", "php-server".
    pub name: String,
    pub pid: i32,
    /// Process group (= pid: started with setsid).
    pub pgid: i32,
    /// Start time in clock ticks since boot (/proc/PID/stat field 22): a reused pid has
    /// another, so `down` never signals a stranger.
    pub start_ticks: u64,
    pub command: Vec<String>,
    /// Logs worth showing when it fails: its stdout/stderr and its own error log.
    pub logs: Vec<PathBuf>,
}

/// What /proc/PID/stat says about a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcStat {
    pub state: char,
    pub pgrp: i32,
    pub start_ticks: u64,
}

/// Parses /proc/PID/stat; the command name may hold spaces and parentheses, so fields are
/// counted after the last ')'.
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(3) ppid(4) pgrp(5) ... starttime(22) → indexes 0, 2, 19.
    Some(ProcStat {
        state: f.first()?.chars().next()?,
        pgrp: f.get(2)?.parse().ok()?,
        start_ticks: f.get(19)?.parse().ok()?,
    })
}

pub fn proc_stat(pid: i32) -> Option<ProcStat> {
    if pid <= 0 {
        return None;
    }
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// A zombie (Z) or dead (X) process holds no resources but a pid: `kill -0` still
/// succeeds on it, which is why liveness is read from /proc instead.
fn is_running_state(c: char) -> bool {
    c != 'Z' && c != 'X'
}

/// True if the part's master process still runs and is the process we started: same pid,
/// same start time, and (when the part records its command) the same executable and a
/// command line that matches what was launched. A state file naming some other process
/// (edited, or stale after a reboot) never gets it signalled.
pub fn is_alive(p: &PartInfo) -> bool {
    matches!(proc_stat(p.pid), Some(s) if is_running_state(s.state) && s.start_ticks == p.start_ticks)
        && runs_launched_program(p.pid, &p.command)
}

/// Whether `pid` runs the program of `command` (as launched by `spawn`), judged from
/// /proc/PID/exe and /proc/PID/cmdline. An empty `command` (a record that kept none) cannot
/// be checked and passes.
fn runs_launched_program(pid: i32, command: &[String]) -> bool {
    if !checkable(command) {
        return true;
    }
    let Some(program) = command.first() else {
        return true;
    };
    let Some(exe) = proc_exe(pid) else {
        return false;
    };
    let Some(expected) = resolve_program(program) else {
        return false;
    };
    if exe != expected {
        return false;
    }
    let Ok(raw) = fs::read(format!("/proc/{pid}/cmdline")) else {
        return false;
    };
    let live: Vec<String> = raw
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    cmdline_matches(&live, command)
}

/// Whether a command names the program that will run: not when it is empty, nor a shell
/// script (`sh -c '... exec server'`, the experiments' setup), whose process may become
/// anything; those are matched by pid, start time and group alone.
fn checkable(command: &[String]) -> bool {
    match command {
        [] => false,
        [sh, flag, ..] if flag == "-c" => !matches!(
            Path::new(sh).file_name().and_then(|n| n.to_str()),
            Some("sh" | "bash" | "dash")
        ),
        _ => true,
    }
}

/// The executable of `pid`; a binary replaced by a package upgrade while running still
/// counts as itself.
fn proc_exe(pid: i32) -> Option<PathBuf> {
    let link = fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let text = link.to_string_lossy();
    Some(match text.strip_suffix(" (deleted)") {
        Some(t) => PathBuf::from(t),
        None => link,
    })
}

/// The canonical path `spawn` runs for `program`: itself when it holds a `/`, otherwise the
/// first match on the daemons' PATH.
fn resolve_program(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return fs::canonicalize(program).ok();
    }
    DAEMON_PATH
        .split(':')
        .map(|d| Path::new(d).join(program))
        .find(|p| p.is_file())
        .and_then(|p| fs::canonicalize(p).ok())
}

/// A live command line matches the launched one when it is the same, or when the daemon
/// rewrote it into a title (`nginx: master process ...`, `php-fpm: master process (...)`)
/// that still names the program.
fn cmdline_matches(live: &[String], launched: &[String]) -> bool {
    if live == launched {
        return true;
    }
    let Some(name) = launched
        .first()
        .and_then(|p| Path::new(p).file_name())
        .map(|n| n.to_string_lossy().into_owned())
    else {
        return false;
    };
    match live {
        // A title replaced the arguments; `php-fpm8.2` calls itself `php-fpm: master
        // process`, so the version suffix goes.
        [title] if title.contains(' ') => {
            let stem = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
            let stem = if stem.is_empty() { name.as_str() } else { stem };
            title.starts_with(stem)
        }
        // Arguments intact: the same ones, after the program however it was spelled.
        [program, args @ ..] => {
            Path::new(program)
                .file_name()
                .is_some_and(|n| n.to_string_lossy() == name)
                && args == &launched[1..]
        }
        [] => false,
    }
}

/// Living members of the part's process group started no earlier than the part itself
/// (so a recycled group id cannot pull in unrelated processes). Once the master is gone,
/// its group id could be a stranger's: then only members running the launched program count;
/// while a process that is not what was launched sits at the master's pid, none do.
pub fn group_members(p: &PartInfo) -> Vec<i32> {
    let leader_there = matches!(proc_stat(p.pid),
        Some(s) if is_running_state(s.state) && s.start_ticks == p.start_ticks);
    let leader_ours = leader_there && runs_launched_program(p.pid, &p.command);
    if leader_there && !leader_ours {
        // The recorded master is alive but runs something else: nothing here is ours.
        return Vec::new();
    }
    let mut out = Vec::new();
    let Ok(dir) = fs::read_dir("/proc") else {
        return out;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if let Some(s) = proc_stat(pid) {
            if s.pgrp == p.pgid
                && is_running_state(s.state)
                && s.start_ticks >= p.start_ticks
                && (leader_ours || same_exe(pid, &p.command))
            {
                out.push(pid);
            }
        }
    }
    out
}

/// Whether `pid` runs the executable of `command` (workers fork without exec, so they
/// share their master's executable but not its command line).
fn same_exe(pid: i32, command: &[String]) -> bool {
    match command.first() {
        Some(program) if checkable(command) => {
            proc_exe(pid).is_some_and(|e| Some(e) == resolve_program(program))
        }
        _ => true,
    }
}

/// Starts `program args` in a new session with stdin from /dev/null and stdout+stderr
/// appended to `out_log`, optionally as another user. The caller keeps the Child to notice
/// an early exit while waiting for readiness.
pub fn spawn(
    name: &str,
    program: &str,
    args: &[String],
    out_log: &Path,
    extra_logs: &[PathBuf],
    user: Option<(u32, u32)>,
    env: &[(&str, &Path)],
) -> Result<(Child, PartInfo)> {
    let log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(out_log)
        .map_err(|e| Error::runtime(format!("cannot open {}: {e}", out_log.display())))?;
    let log2 = log.try_clone()?;
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env_clear()
        .env("PATH", DAEMON_PATH)
        .env("LANG", "C")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log2));
    if let Some((uid, gid)) = user {
        cmd.uid(uid).gid(gid);
    } else if let Some(dir) = out_log.parent() {
        // A daemon that writes beside its working directory (Caddy's caddy/autosave.json,
        // with $HOME unset) writes into the prefix, not into the caller's folder. Not for
        // another user, who may not be allowed into it.
        cmd.current_dir(dir);
    }
    // SAFETY: setsid() is async-signal-safe and touches no memory of the parent; it is
    // the only thing run between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|e| {
        Error::runtime(format!(
            "{name}: cannot run {program}: {e} (is it installed? see `overload lab doctor`)"
        ))
    })?;
    let pid = child.id() as i32;
    // The child is ours until it execs, so its stat exists; a zero start time would only
    // make a later stale-pid check less strict.
    let start_ticks = proc_stat(pid).map(|s| s.start_ticks).unwrap_or(0);
    let mut command = vec![program.to_string()];
    command.extend(args.iter().cloned());
    let mut logs = vec![out_log.to_path_buf()];
    logs.extend(extra_logs.iter().cloned());
    Ok((
        child,
        PartInfo {
            name: name.to_string(),
            pid,
            pgid: pid,
            start_ticks,
            command,
            logs,
        },
    ))
}

/// Reaps `pid` if it is our child (a library caller's long-lived process would otherwise
/// collect zombies); harmless ECHILD otherwise.
fn reap(pid: i32) {
    let mut status = 0;
    // SAFETY: plain syscall with a valid out-pointer; WNOHANG never blocks.
    unsafe {
        libc::waitpid(pid, &mut status, libc::WNOHANG);
    }
}

fn signal(pid: i32, sig: i32) {
    // SAFETY: plain syscall; a failure (ESRCH) means it is gone already.
    unsafe {
        libc::kill(pid, sig);
    }
}

/// Stops a part: SIGTERM to the master (which stops its workers the way it knows best),
/// then, if anything of the group is left after `grace`, SIGKILL to the whole group.
/// Returns once no member of the group runs (zombies do not count).
pub fn stop(p: &PartInfo, grace: Duration) -> Result<()> {
    let leader_alive = is_alive(p);
    if !leader_alive && group_members(p).is_empty() {
        reap(p.pid);
        return Ok(());
    }
    if leader_alive {
        signal(p.pid, libc::SIGTERM);
    }
    let deadline = Instant::now() + grace;
    loop {
        reap(p.pid);
        if !is_alive(p) && group_members(p).is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            break;
        }
        sleep(Duration::from_millis(10));
    }
    if is_alive(p) {
        signal(p.pid, libc::SIGKILL);
    }
    for pid in group_members(p) {
        signal(pid, libc::SIGKILL);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        reap(p.pid);
        let left = group_members(p);
        if !is_alive(p) && left.is_empty() {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Error::runtime(format!(
                "{} (pid {}) did not stop: processes {left:?} still run",
                p.name, p.pid
            )));
        }
        sleep(Duration::from_millis(10));
    }
}

/// Whether anything listens on TCP `port` (any address, IPv4 or IPv6), from /proc/net.
pub fn listening(port: u16) -> bool {
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        fs::read_to_string(f)
            .map(|t| listening_in(&t, port))
            .unwrap_or(false)
    })
}

/// Parses a /proc/net/tcp table: `sl local_address rem_address st ...`, hex port, state 0A.
pub fn listening_in(table: &str, port: u16) -> bool {
    table.lines().skip(1).any(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (Some(local), Some(state)) = (f.get(1), f.get(3)) else {
            return false;
        };
        let p = local
            .rsplit(':')
            .next()
            .and_then(|h| u16::from_str_radix(h, 16).ok());
        *state == "0A" && p == Some(port)
    })
}

/// Fails if `port` is taken: someone listens on it, or binding 127.0.0.1:port fails.
pub fn check_port_free(port: u16, what: &str) -> Result<()> {
    let busy = listening(port) || TcpListener::bind(("127.0.0.1", port)).is_err();
    if busy {
        return Err(Error::runtime(format!(
            "{what}: port {port} is already in use (see `ss -ltnp 'sport = :{port}'`); pick another with --port"
        )));
    }
    Ok(())
}

/// Waits until nothing listens on `port`: lingering Apache children hold the listening
/// socket for a moment after the master has gone, and a quick restart would fail.
pub fn wait_port_free(port: u16, timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    while listening(port) {
        if Instant::now() >= deadline {
            return Err(Error::runtime(format!(
                "port {port} is still listening {:.0?} after the stop",
                timeout
            )));
        }
        sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// The last `n` lines of a log file (reads at most its last 64 KiB).
pub fn tail(path: &Path, n: usize) -> String {
    let Ok(mut f) = fs::File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(65536)));
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The last lines of every non-empty log of a part, indented, for error messages.
pub fn log_excerpt(logs: &[PathBuf], n: usize) -> String {
    let mut out = String::new();
    for log in logs {
        let t = tail(log, n);
        if t.is_empty() {
            continue;
        }
        out.push_str(&format!("\n  last lines of {}:", log.display()));
        for line in t.lines() {
            out.push_str("\n    ");
            out.push_str(line);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_parsing() {
        let s = "1234 (php-fpm: pool (lab)) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 98765 1000 10 18446744073709551615";
        let p = parse_stat(s).unwrap();
        assert_eq!(p.state, 'S');
        assert_eq!(p.pgrp, 1234);
        assert_eq!(p.start_ticks, 98765);
        assert!(parse_stat("garbage").is_none());
        assert!(!is_running_state('Z'));
        assert!(is_running_state('S'));
    }

    #[test]
    fn own_process_is_alive() {
        let me = std::process::id() as i32;
        let s = proc_stat(me).unwrap();
        let p = PartInfo {
            name: "me".into(),
            pid: me,
            pgid: s.pgrp,
            start_ticks: s.start_ticks,
            command: vec![],
            logs: vec![],
        };
        assert!(is_alive(&p));
        let stale = PartInfo {
            start_ticks: s.start_ticks + 1,
            ..p
        };
        assert!(
            !is_alive(&stale),
            "a different start time means a reused pid"
        );
    }

    #[test]
    fn proc_net_tcp() {
        let t = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:46A1 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0\n   1: 0100007F:46A2 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0\n";
        assert!(listening_in(t, 0x46A1));
        assert!(!listening_in(t, 0x46A2), "established, not listening");
        assert!(!listening_in(t, 80));
    }

    #[test]
    fn listener_detected() {
        let l = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        assert!(listening(port));
        assert!(check_port_free(port, "test").is_err());
        drop(l);
        wait_port_free(port, Duration::from_secs(2)).unwrap();
    }

    #[test]
    fn spawn_and_stop_a_group() {
        let dir = std::env::temp_dir().join(format!("overload-proc-test-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let log = dir.join("out.log");
        // A parent that forks a child which ignores nothing: TERM to the leader kills only
        // the leader, so the group pass must catch the child.
        let (_child, part) = spawn(
            "sh",
            "/bin/sh",
            &["-c".into(), "sleep 30 & echo started; wait".into()],
            &log,
            &[],
            None,
            &[],
        )
        .unwrap();
        let t0 = Instant::now();
        while group_members(&part).len() < 2 && t0.elapsed() < Duration::from_secs(5) {
            sleep(Duration::from_millis(10));
        }
        assert!(is_alive(&part));
        assert_eq!(part.pgid, part.pid);
        stop(&part, Duration::from_millis(300)).unwrap();
        assert!(!is_alive(&part));
        assert!(group_members(&part).is_empty());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn command_lines_match_what_was_launched() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let nginx = v(&["/usr/sbin/nginx", "-c", "/p/nginx.conf"]);
        assert!(cmdline_matches(&nginx, &nginx));
        assert!(cmdline_matches(
            &v(&["nginx: master process /usr/sbin/nginx -c /p/nginx.conf"]),
            &nginx
        ));
        let fpm = v(&["php-fpm8.2", "--fpm-config", "/p/fpm.conf"]);
        assert!(cmdline_matches(
            &v(&["php-fpm: master process (/p/fpm.conf)"]),
            &fpm
        ));
        assert!(cmdline_matches(
            &v(&["/usr/sbin/apache2", "-d", "/p"]),
            &v(&["apache2", "-d", "/p"])
        ));
        assert!(!cmdline_matches(&v(&["/usr/sbin/sshd", "-D"]), &nginx));
        assert!(!cmdline_matches(&v(&["bash"]), &fpm));
        assert!(!cmdline_matches(&v(&["/usr/bin/php8.2", "-S", "x"]), &fpm));
        assert!(!cmdline_matches(&[], &nginx));
        assert!(!checkable(&v(&["sh", "-c", "exec overload target"])));
        assert!(checkable(&nginx));
        assert!(!cmdline_matches(
            &v(&["/usr/sbin/nginx", "-c", "/other.conf"]),
            &nginx
        ));
    }

    /// A record naming a live process by pid and start time, but not the program the lab
    /// launched there (an edited or confused state file), never gets it signalled.
    #[test]
    fn a_part_gets_the_variables_given_and_nothing_of_the_callers() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("out.log");
        let home = dir.path().join("home");
        std::env::set_var("OVERLOAD_LEAK_CHECK", "leaked");
        let (mut child, _) = spawn(
            "sh",
            "/bin/sh",
            &[
                "-c".into(),
                "echo home=$HOME leak=$OVERLOAD_LEAK_CHECK".into(),
            ],
            &log,
            &[],
            None,
            &[("HOME", &home)],
        )
        .unwrap();
        child.wait().unwrap();
        let out = fs::read_to_string(&log).unwrap();
        assert_eq!(out.trim(), format!("home={} leak=", home.display()));
    }

    #[test]
    fn a_process_is_signalled_only_if_it_runs_what_was_launched() {
        let dir = std::env::temp_dir().join(format!("overload-proc-match-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let (_child, real) = spawn(
            "sleep",
            "/bin/sleep",
            &["30".into()],
            &dir.join("out.log"),
            &[],
            None,
            &[],
        )
        .unwrap();
        assert!(is_alive(&real));
        for command in [
            vec!["/bin/sh".to_string(), "-e".into(), "sleep 30".into()],
            vec!["/bin/sleep".to_string(), "31".into()],
        ] {
            let forged = PartInfo {
                command,
                ..real.clone()
            };
            assert!(!is_alive(&forged), "{:?}", forged.command);
            stop(&forged, Duration::from_millis(100)).unwrap();
            sleep(Duration::from_millis(50));
            assert!(
                is_alive(&real),
                "{:?} got the real process signalled",
                forged.command
            );
        }
        stop(&real, Duration::from_millis(300)).unwrap();
        assert!(!is_alive(&real));
        fs::remove_dir_all(&dir).unwrap();
    }
}
