//! The harness of every integration test binary (tests/suite/, tests/lab.rs,
//! tests/lab_apps.rs, tests/hostile.rs): some tests need something of the machine beyond the
//! crate (the lab packages, root, a private network namespace, Chromium...). libtest's
//! `#[ignore]` is fixed when the test is compiled, so these binaries use libtest-mimic
//! (`harness = false` in Cargo.toml) and decide when a test runs: a test whose needs are
//! missing shows as **ignored**, with the reason, in cargo's summary; it never passes without
//! running. A test whose needs are met runs, and a panic in it is a failure. After the
//! summary, the slowest tests that ran are named.
use super::bin;
use libtest_mimic::{Arguments, Completion, Trial};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Something a test needs from the machine.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Need {
    /// Root: the lab's masters run as root and drop their workers to www-data.
    Root,
    /// The lab packages (nginx, Apache, PHP-FPM, MariaDB): `overload lab doctor` succeeds.
    LabPackages,
    /// `unshare --net` works: a private network namespace whose sysctls the test may change.
    NetNamespace,
    /// Headless Chromium (`apt-get install chromium`), for the reports' layout check.
    Chromium,
    /// util-linux `script`: runs a command on a pseudo-terminal (colour, the live view).
    Script,
    /// Python with HdrHistogram's package (`pip install hdrhistogram`, imported as `hdrh`).
    PythonHdrh,
    /// tmux (`apt-get install tmux`): a terminal the live view test can type into and read.
    Tmux,
    /// The cores mostly idle when the test starts (under 20% busy over a second): a test
    /// whose verdict is the server's CPU cannot show it while other processes take the cores
    /// (the verdict rightly refuses to blame the server for them).
    QuietHost,
    /// gnuplot (`apt-get install gnuplot-nox`): draws the script `report --format gnuplot` writes.
    Gnuplot,
    /// The kernel's sock_diag netlink interface (a container may lack it; the observer then
    /// reads /proc/net/tcp).
    SockDiag,
    /// Prometheus (`apt-get install prometheus`): the remote-write receiver the metrics push
    /// is checked against.
    Prometheus,
    /// A kernel that lets `--io uring` run (io_uring_setup, the opcodes, multishot receive):
    /// the engine's own probe.
    IoUring,
}

impl Need {
    /// Why it is missing here, or None when the machine has it. Probed once per process.
    pub fn missing(self) -> Option<String> {
        static ROOT: OnceLock<Option<String>> = OnceLock::new();
        static LAB: OnceLock<Option<String>> = OnceLock::new();
        static NETNS: OnceLock<Option<String>> = OnceLock::new();
        static CHROMIUM: OnceLock<Option<String>> = OnceLock::new();
        static SCRIPT: OnceLock<Option<String>> = OnceLock::new();
        static HDRH: OnceLock<Option<String>> = OnceLock::new();
        static TMUX: OnceLock<Option<String>> = OnceLock::new();
        static QUIET: OnceLock<Option<String>> = OnceLock::new();
        static GNUPLOT: OnceLock<Option<String>> = OnceLock::new();
        static SOCK_DIAG: OnceLock<Option<String>> = OnceLock::new();
        static PROMETHEUS: OnceLock<Option<String>> = OnceLock::new();
        static IO_URING: OnceLock<Option<String>> = OnceLock::new();
        match self {
            Need::Root => ROOT.get_or_init(probe_root),
            Need::LabPackages => LAB.get_or_init(probe_lab),
            Need::NetNamespace => NETNS.get_or_init(probe_netns),
            Need::Chromium => CHROMIUM.get_or_init(probe_chromium),
            Need::Script => SCRIPT.get_or_init(|| {
                probe_cmd(
                    "script",
                    &["-qec", "true", "/dev/null"],
                    "util-linux `script`",
                )
            }),
            Need::PythonHdrh => HDRH.get_or_init(|| {
                probe_cmd(
                    "python3",
                    &["-c", "import hdrh.log"],
                    "python3 with hdrh (pip install hdrhistogram)",
                )
            }),
            Need::Tmux => TMUX.get_or_init(|| probe_cmd("tmux", &["-V"], "tmux")),
            Need::QuietHost => QUIET.get_or_init(probe_quiet),
            Need::Gnuplot => {
                GNUPLOT.get_or_init(|| probe_cmd("gnuplot", &["--version"], "gnuplot"))
            }
            Need::SockDiag => SOCK_DIAG.get_or_init(probe_sock_diag),
            Need::IoUring => IO_URING.get_or_init(|| {
                overload::engine::io::uring_refused()
                    .map(|why| format!("the kernel refuses io_uring: {why}"))
            }),
            Need::Prometheus => PROMETHEUS.get_or_init(|| {
                probe_cmd(
                    "prometheus",
                    &["--version"],
                    "prometheus (apt-get install prometheus)",
                )
            }),
        }
        .clone()
    }
}

/// None when `prog args` runs and succeeds; else why `what` is missing.
fn probe_cmd(prog: &str, args: &[&str], what: &str) -> Option<String> {
    let ok = std::process::Command::new(prog)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success());
    (!ok).then(|| format!("{what} is not installed"))
}

fn probe_sock_diag() -> Option<String> {
    let l = std::net::TcpListener::bind("127.0.0.1:0").ok()?;
    let port = l.local_addr().ok()?.port();
    overload::observe::net::listen_queue_limits(port)
        .is_none()
        .then(|| "sock_diag netlink is unavailable here (the observer reads /proc/net/tcp)".into())
}

/// Busy share of all cores over one second, from /proc/stat's first line.
/// The host's CPU time so far, all cores, and the idle part of it (clock ticks of /proc/stat).
pub fn cpu_totals() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let v: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    // user nice system idle iowait …: idle and iowait are the idle time.
    let idle = v.get(3)? + v.get(4).copied().unwrap_or(0);
    Some((v.iter().sum(), idle))
}

fn probe_quiet() -> Option<String> {
    let totals = cpu_totals;
    let Some((t0, i0)) = totals() else {
        return Some("/proc/stat unreadable: cannot tell whether the host is quiet".into());
    };
    // The interval the host's busy share is measured over, not a wait for a condition.
    std::thread::sleep(std::time::Duration::from_secs(1));
    let (t1, i1) = totals()?;
    let busy = 1.0 - (i1 - i0) as f64 / (t1 - t0).max(1) as f64;
    (busy > 0.2).then(|| {
        format!(
            "the host is busy ({:.0}% of its CPU in use by other processes): the CPU verdict needs the cores to itself",
            busy * 100.0
        )
    })
}

fn probe_root() -> Option<String> {
    // SAFETY: geteuid cannot fail.
    (unsafe { libc::geteuid() } != 0).then(|| "needs root".to_string())
}

fn probe_lab() -> Option<String> {
    match bin().args(["lab", "doctor"]).output() {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "lab packages missing (sudo bash scripts/install-lab.sh): {}",
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .find(|l| l.starts_with("missing"))
                .unwrap_or("")
                .trim()
        )),
        Err(e) => Some(format!("cannot run overload lab doctor: {e}")),
    }
}

fn probe_netns() -> Option<String> {
    let ok = std::process::Command::new("unshare")
        .args(["--net", "true"])
        .output()
        .is_ok_and(|o| o.status.success());
    (!ok).then(|| "unshare --net is not permitted here (needs root or user namespaces)".into())
}

fn probe_chromium() -> Option<String> {
    let ok = std::process::Command::new("chromium")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    (!ok).then(|| "no chromium on PATH (apt-get install chromium)".into())
}

/// The module of tests/suite/ whose tests are being listed ("" in the binaries of one file):
/// its trials are named `module::test`, as libtest names a test in a module, so that
/// `cargo test --test suite sweep::` runs one module. Set only while the list is made.
static MODULE: Mutex<&str> = Mutex::new("");

/// How long each finished test ran, for the slowest ones printed after the summary.
static TIMES: Mutex<Vec<(String, Duration)>> = Mutex::new(Vec::new());

/// The trials of one module of tests/suite/, named `module::test` (tests/suite/main.rs).
pub fn module_trials(module: &'static str, trials: fn() -> Vec<Trial>) -> Vec<Trial> {
    *MODULE.lock().unwrap() = module;
    let list = trials();
    *MODULE.lock().unwrap() = "";
    list
}

fn full_name(name: &str) -> String {
    match *MODULE.lock().unwrap() {
        "" => name.to_string(),
        module => format!("{module}::{name}"),
    }
}

/// Records how long the test named `name` ran when dropped, a panic included.
struct Timer(String, Instant);

impl Drop for Timer {
    fn drop(&mut self) {
        let took = self.1.elapsed();
        let mut times = TIMES.lock().unwrap_or_else(|e| e.into_inner());
        times.push((std::mem::take(&mut self.0), took));
    }
}

/// A test that runs only where every one of `needs` is met; elsewhere it is ignored with the
/// first missing need as the reason.
pub fn trial(name: &str, needs: &'static [Need], test: fn()) -> Trial {
    let name = full_name(name);
    Trial::ignorable_test(name.clone(), move || {
        if let Some(why) = needs.iter().find_map(|n| n.missing()) {
            return Ok(Completion::ignored_with(why));
        }
        let _timer = Timer(name, Instant::now());
        test();
        Ok(Completion::Completed)
    })
}

/// [`trial`] for a test that can tell only once it has run that it could not measure what it
/// checks (the host got busy under it): `Some(why)` reports it ignored with that reason,
/// never passed.
#[allow(dead_code)] // not every test binary that includes this module has such a test
pub fn trial_or_ignored(name: &str, needs: &'static [Need], test: fn() -> Option<String>) -> Trial {
    let name = full_name(name);
    Trial::ignorable_test(name.clone(), move || {
        if let Some(why) = needs.iter().find_map(|n| n.missing()) {
            return Ok(Completion::ignored_with(why));
        }
        let _timer = Timer(name, Instant::now());
        Ok(match test() {
            Some(why) => Completion::ignored_with(why),
            None => Completion::Completed,
        })
    })
}

/// How many of the slowest tests the summary names.
const SLOWEST: usize = 10;

/// Runs the trials like libtest does (same flags, same summary line), names the slowest
/// tests that ran (where CI's time goes), and exits.
pub fn main(trials: Vec<Trial>) -> ! {
    let conclusion = libtest_mimic::run(&Arguments::from_args(), trials);
    let mut times = std::mem::take(&mut *TIMES.lock().unwrap_or_else(|e| e.into_inner()));
    times.sort_by_key(|t| std::cmp::Reverse(t.1));
    if times.len() > 1 {
        // Their sum against the wall time says how well the test threads were kept busy.
        let sum: Duration = times.iter().map(|t| t.1).sum();
        println!(
            "slowest tests (of {} that ran for {:.0} s in all):",
            times.len(),
            sum.as_secs_f64()
        );
        for (name, took) in times.iter().take(SLOWEST) {
            println!("{:8.1} s  {name}", took.as_secs_f64());
        }
    }
    conclusion.exit()
}
