//! Helpers for integration tests: the real binary, the embedded target in its own process.
#![allow(dead_code)]
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Output, Stdio};

pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_overload"))
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
            .find(|w| w.starts_with("http://"))
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

/// Runs `overload ARGS --json FILE -q` and returns (output, parsed JSON).
pub fn run_json(args: &[&str]) -> (Output, serde_json::Value) {
    let dir = std::env::temp_dir().join(format!(
        "overload-test-{}-{}",
        std::process::id(),
        rand_suffix()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("run.json");
    let out = bin()
        .args(args)
        .arg("--json")
        .arg(&json)
        .arg("-q")
        .output()
        .expect("run overload");
    assert!(
        out.status.success(),
        "overload {args:?} failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (out, v)
}

fn rand_suffix() -> u64 {
    use std::time::{SystemTime, UNIX_EPOCH};
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64
        * 1000
        + N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

pub fn f(v: &serde_json::Value, path: &str) -> f64 {
    let mut cur = v;
    for p in path.split('.') {
        cur = &cur[p];
    }
    cur.as_f64()
        .unwrap_or_else(|| panic!("{path} is not a number in {v}"))
}
