//! Helpers shared by the integration tests, once: the real binary, scratch folders, free
//! loopback ports, spawning with a time limit, the embedded target in its own process, and the
//! harness of the tests that need the machine's help (lab packages, root, unshare).
#![allow(dead_code)]
pub mod agent;
pub mod h3;
pub mod harness;
pub mod procs;
pub mod study;
pub mod tmux;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_overload"))
}

/// A scratch folder, removed when dropped (even after a failed assertion).
pub fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("overload-test-")
        .tempdir()
        .expect("create a scratch folder")
}

/// A loopback port nobody listens on now: the OS picks it (bind :0), the listener is dropped.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0")
        .port()
}

/// The address an `overload agent` spawned with `--listen 127.0.0.1:0` and a piped stdout
/// prints on its first line ("agent listening on http://ADDR").
pub fn agent_addr(child: &mut Child) -> std::net::SocketAddr {
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("the agent's stdout, piped"))
        .read_line(&mut line)
        .expect("agent banner");
    line.trim()
        .rsplit("http://")
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
}

/// The live report's URL, from the line "overload: live report at URL" that a run or sweep
/// with `--live-port`/`--live-listen` prints on stderr (`err`, its piped stderr, stays
/// readable for the lines after).
pub fn live_url(err: &mut impl BufRead) -> String {
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            err.read_line(&mut line).unwrap() > 0,
            "no live URL on stderr"
        );
        if let Some(u) = line.trim().strip_prefix("overload: live report at ") {
            return u.to_string();
        }
    }
}

/// The `names` row called `name` of a `--json` summary (or a steps.jsonl line).
pub fn name_row<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["names"]
        .as_array()
        .expect("names")
        .iter()
        .find(|n| n["name"] == name)
        .unwrap_or_else(|| panic!("no name {name} in {}", v["names"]))
}

/// Bound on a command that runs no load (usage errors, reports, dry runs).
pub const QUICK: Duration = Duration::from_secs(30);

/// Runs `cmd` to its end like `Command::output`, but kills it and panics if it outlives
/// `limit`: a hung binary fails its test instead of hanging the suite.
pub fn output_within(cmd: &mut Command, limit: Duration) -> Output {
    output_within_pid(cmd, limit).1
}

/// [`output_within`], with the child's pid (to look for what it left behind: its
/// namespaces, its files).
pub fn output_within_pid(cmd: &mut Command, limit: Duration) -> (u32, Output) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // Drain both pipes beside the wait, so a chatty child never blocks on a full pipe.
    let drain = |p: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = p {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    };
    let out = drain(child.stdout.take().map(|p| Box::new(p) as _));
    let err = drain(child.stderr.take().map(|p| Box::new(p) as _));
    let pid = child.id();
    let status = wait_within(&mut child, limit)
        .unwrap_or_else(|| panic!("{cmd:?} still running after {limit:?}, killed"));
    let output = Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    (pid, output)
}

/// Waits for `child` at most `limit`; on overrun kills it, reaps it and returns None.
pub fn wait_within(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let end = Instant::now() + limit;
    loop {
        if let Some(s) = child.try_wait().expect("wait") {
            return Some(s);
        }
        if Instant::now() >= end {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        // The helper's polling period.
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Polls `done` every 20 ms until it holds; panics with `what` after `limit`.
pub fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let end = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < end, "{what}: not after {limit:?}");
        // The helper's polling period.
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `overload target` on a free loopback port; killed on drop.
pub struct Target {
    pub child: Child,
    pub url: String,
}

impl Target {
    pub fn start(args: &[&str]) -> Target {
        let mut child = bin()
            .args(["target", "--listen", "127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn overload target");
        let stdout = child.stdout.take().expect("stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .expect("read target banner");
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://") || w.starts_with("https://"))
            .unwrap_or_else(|| panic!("no URL in target banner: {line:?}"))
            .trim_end_matches('/')
            .to_string();
        Target { child, url }
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `overload ARGS --json FILE -q` (killed after 2 minutes) and returns (output, parsed
/// JSON).
pub fn run_json(args: &[&str]) -> (Output, serde_json::Value) {
    let dir = scratch();
    let json = dir.path().join("run.json");
    let out = output_within(
        bin().args(args).arg("--json").arg(&json).arg("-q"),
        Duration::from_secs(120),
    );
    assert!(
        out.status.success(),
        "overload {args:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    (out, v)
}

pub fn f(v: &serde_json::Value, path: &str) -> f64 {
    let mut cur = v;
    for p in path.split('.') {
        cur = &cur[p];
    }
    cur.as_f64()
        .unwrap_or_else(|| panic!("{path} is not a number in {v}"))
}

/// What a run of the binary measured from the outside.
pub struct Measured {
    /// The `--json` output (Null when the file was not written).
    pub v: serde_json::Value,
    /// Exit code, or None when a signal ended the process.
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub elapsed: Duration,
    /// Peak resident set of the program, in kB: the highest VmHWM of /proc/PID/status seen
    /// while it ran (sampled every 10 ms; VmHWM is the peak so far, so little is missed). Not
    /// wait4's ru_maxrss, which also counts the address space the child had before exec (the
    /// test process's own, shared by vfork).
    pub max_rss_kb: u64,
    pub stdout: String,
    pub stderr: String,
}

impl Measured {
    /// Count of one error kind (0 when absent).
    pub fn errors(&self, kind: &str) -> u64 {
        self.v["errors"][kind].as_u64().unwrap_or(0)
    }

    pub fn status(&self, code: &str) -> u64 {
        self.v["statuses"][code].as_u64().unwrap_or(0)
    }

    /// Exited 0 (or `code`), no panic, no abort.
    pub fn assert_clean_exit(&self, code: i32, what: &str) {
        assert!(
            !self.stderr.contains("panicked") && !self.stderr.contains("overflow"),
            "{what}: {}",
            self.stderr
        );
        assert_eq!(
            (self.code, self.signal),
            (Some(code), None),
            "{what}: stderr {}",
            self.stderr
        );
    }
}

/// Runs `prog ARGS` (with `--json FILE -q` appended when `json`), kills it if it outlives
/// `limit` (then panics), and returns what it did, its peak RSS included. `prog` None is the
/// overload binary.
pub fn run_measured(prog: Option<&str>, args: &[&str], json: bool, limit: Duration) -> Measured {
    let dir = scratch();
    let dir = dir.path();
    let json_path = dir.join("run.json");
    let out_path = dir.join("stdout");
    let err_path = dir.join("stderr");
    let mut cmd = match prog {
        Some(p) => Command::new(p),
        None => bin(),
    };
    cmd.args(args);
    if json {
        cmd.arg("--json").arg(&json_path).arg("-q");
    }
    let start = Instant::now();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("spawn");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value to be overwritten by wait4.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let mut killed = false;
    let mut hwm_kb = 0u64;
    let status_path = format!("/proc/{pid}/status");
    loop {
        if let Ok(s) = std::fs::read_to_string(&status_path) {
            let hwm = s
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok());
            hwm_kb = hwm_kb.max(hwm.unwrap_or(0));
        }
        // SAFETY: wait4 on our own child with valid pointers; WNOHANG never blocks.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut ru) };
        if r == pid {
            break;
        }
        assert!(r == 0, "wait4: {}", std::io::Error::last_os_error());
        if !killed && start.elapsed() > limit {
            // SAFETY: kill(2) on our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            killed = true;
        }
        // The helper's polling period.
        std::thread::sleep(Duration::from_millis(10));
    }
    let elapsed = start.elapsed();
    // The child was reaped by wait4: std must not wait for it again.
    std::mem::forget(child);
    let read = |p: &std::path::Path| {
        String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned()
    };
    let m = Measured {
        v: std::fs::read_to_string(&json_path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(serde_json::Value::Null),
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        signal: libc::WIFSIGNALED(status).then(|| libc::WTERMSIG(status)),
        elapsed,
        max_rss_kb: hwm_kb,
        stdout: read(&out_path),
        stderr: read(&err_path),
    };
    assert!(
        !killed,
        "{args:?} still running after {limit:?}, killed; stderr: {}",
        m.stderr
    );
    m
}
