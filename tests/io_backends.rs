//! The engine on both I/O backends (`--io epoll`, `--io uring`): each case runs once per
//! backend, through the real binary, against the embedded target; io_uring's runs show as
//! ignored, with the kernel's reason, where it refuses io_uring. Then what must agree between
//! the two: the target's faults counted the same, and the coordinated-omission check's p90 and
//! p99 at the analytic truth on both. Last, a kernel that refuses io_uring (a seccomp filter
//! here): `--io uring` is a one-line usage error, `--io auto` falls back to epoll and says why.
//!
//! The rest of the engine's integration tests (tests/suite/) run on the default backend
//! (auto): epoll for the open loop, io_uring for the closed loop where the kernel allows it.
mod common;
use common::harness::{self, Need};
use common::{bin, output_within, run_json, scratch, Target};
use libtest_mimic::{Completion, Trial};
use serde_json::Value;
use std::time::Duration;

/// `--io` values and the name the results give the backend.
const BACKENDS: [(&str, &str); 2] = [("epoll", "epoll"), ("uring", "io_uring")];

/// A case run once per backend, given the `--io` value.
type Case = (&'static str, fn(&str));

fn main() {
    let cases: [Case; 8] = [
        ("keep_alive_closed_loop", keep_alive_closed_loop),
        ("new_connection_per_request", new_connection_per_request),
        ("open_loop_on_time", open_loop_on_time),
        ("https", https),
        ("http2_over_tls", http2_over_tls),
        ("h2c", h2c),
        ("scenario", scenario),
        ("big_bodies_and_posts", big_bodies_and_posts),
    ];
    let mut trials = Vec::new();
    for (name, case) in cases {
        for (io, _) in BACKENDS {
            let needs: &'static [Need] = if io == "uring" { &[Need::IoUring] } else { &[] };
            trials.push(Trial::ignorable_test(format!("{name}::{io}"), move || {
                if let Some(why) = needs.iter().find_map(|n| n.missing()) {
                    return Ok(Completion::ignored_with(why));
                }
                let _shared = ALONE.read().unwrap_or_else(|e| e.into_inner());
                case(io);
                Ok(Completion::Completed)
            }));
        }
    }
    trials.push(harness::trial(
        "faults_are_counted_the_same_on_both",
        &[Need::IoUring],
        faults_are_counted_the_same_on_both,
    ));
    trials.push(harness::trial_or_ignored(
        "the_co_check_gives_the_truth_on_both",
        &[Need::IoUring],
        the_co_check_gives_the_truth_on_both,
    ));
    trials.push(harness::trial(
        "a_kernel_that_refuses_io_uring",
        &[],
        a_kernel_that_refuses_io_uring,
    ));
    harness::main(trials)
}

/// `overload ARGS --io IO` with its JSON, which must name the backend it asked for.
fn run_on(io: &str, args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.extend(["--io", io]);
    let (_, v) = run_json(&a);
    let name = BACKENDS.iter().find(|(k, _)| *k == io).unwrap().1;
    assert_eq!(v["io"], name, "{v}");
    v
}

fn u(v: &Value, path: &str) -> u64 {
    common::f(v, path) as u64
}

fn keep_alive_closed_loop(io: &str) {
    let t = Target::start(&["--threads", "1"]);
    let url = format!("{}/", t.url);
    let v = run_on(
        io,
        &["run", &url, "--users", "4", "--threads", "1", "-n", "400"],
    );
    assert_eq!(u(&v, "responses"), 400, "{v}");
    assert_eq!(u(&v, "statuses.200"), 400, "{v}");
    assert_eq!(u(&v, "error_count"), 0, "{v}");
    // Kept alive: one connection per user.
    assert_eq!(u(&v, "connections_opened"), 4, "{v}");
}

fn new_connection_per_request(io: &str) {
    let t = Target::start(&["--threads", "1"]);
    let url = format!("{}/", t.url);
    let args = ["run", &url, "--users", "2", "--threads", "1", "-n", "100"];
    let v = run_on(io, &[&args[..], &["--no-keep-alive"]].concat());
    assert_eq!(u(&v, "responses"), 100, "{v}");
    assert_eq!(u(&v, "error_count"), 0, "{v}");
    assert_eq!(u(&v, "connections_opened"), 100, "{v}");
    // Closed after every third request: 100 requests on 34 connections, a few more where a
    // user's last connection was cut short by the count.
    let v = run_on(io, &[&args[..], &["--calls-per-connection", "3"]].concat());
    assert_eq!(u(&v, "responses"), 100, "{v}");
    assert_eq!(u(&v, "error_count"), 0, "{v}");
    let opened = u(&v, "connections_opened");
    assert!((34..=36).contains(&opened), "{opened}: {v}");
}

/// The intended-send clock: 400/s for 2 s are 800 arrivals, all sent about on time.
fn open_loop_on_time(io: &str) {
    let t = Target::start(&["--threads", "1"]);
    let url = format!("{}/", t.url);
    let v = run_on(
        io,
        &["run", &url, "--rate", "400", "-d", "2s", "--threads", "1"],
    );
    let sent = u(&v, "requests");
    assert!((780..=820).contains(&sent), "{sent}: {v}");
    assert_eq!(u(&v, "responses"), sent, "{v}");
    assert_eq!(u(&v, "error_count"), 0, "{v}");
    // Generous for a loaded 2-core machine; a backend that lost wake-ups would be seconds late.
    let lag = common::f(&v, "send_lag_ms.p99");
    assert!(lag < 50.0, "send lag p99 {lag} ms: {}", v["send_lag_ms"]);
}

/// A `target --tls` and the path of its CA certificate.
fn tls_target(dir: &std::path::Path) -> (Target, String) {
    let ca = dir.join("ca.pem");
    let ca = ca.to_str().unwrap().to_string();
    let t = Target::start(&["--tls", "--threads", "1", "--ca-out", &ca]);
    (t, ca)
}

fn https(io: &str) {
    let dir = scratch();
    let (t, ca) = tls_target(dir.path());
    let url = format!("{}/", t.url);
    let args = ["run", &url, "--users", "4", "--threads", "1", "-n", "200"];
    let v = run_on(io, &[&args[..], &["--cacert", &ca]].concat());
    assert_eq!(u(&v, "responses"), 200, "{v}");
    assert_eq!(u(&v, "error_count"), 0, "{v}");
    let hs = u(&v, "tls.handshakes_full") + u(&v, "tls.handshakes_resumed");
    assert_eq!(hs, u(&v, "connections_opened"), "{v}");
    // New connections: a handshake each, resumed after the first.
    let v = run_on(
        io,
        &[&args[..], &["--cacert", &ca, "--no-keep-alive"]].concat(),
    );
    assert_eq!(u(&v, "responses"), 200, "{v}");
    assert_eq!(u(&v, "error_count"), 0, "{v}");
    assert_eq!(
        u(&v, "tls.handshakes_full") + u(&v, "tls.handshakes_resumed"),
        200
    );
    assert!(u(&v, "tls.handshakes_resumed") >= 190, "{v}");
}

fn http2_over_tls(io: &str) {
    let dir = scratch();
    let (t, ca) = tls_target(dir.path());
    let url = format!("{}/", t.url);
    let v = run_on(
        io,
        &[
            "run",
            &url,
            "--http",
            "2",
            "--users",
            "8",
            "--threads",
            "1",
            "-n",
            "300",
            "--cacert",
            &ca,
        ],
    );
    assert_eq!(v["protocols"], serde_json::json!({ "2": 300 }), "{v}");
    assert_eq!(u(&v, "responses"), 300, "{v}");
    assert_eq!(u(&v, "error_count"), 0, "{v}");
}

fn h2c(io: &str) {
    let t = Target::start(&["--threads", "1"]);
    let url = format!("{}/", t.url);
    let v = run_on(
        io,
        &[
            "run",
            &url,
            "--http",
            "2",
            "--users",
            "8",
            "--threads",
            "1",
            "-n",
            "300",
        ],
    );
    assert_eq!(v["protocols"], serde_json::json!({ "2": 300 }), "{v}");
    assert_eq!(u(&v, "responses"), 300, "{v}");
    assert_eq!(u(&v, "error_count"), 0, "{v}");
}

fn scenario(io: &str) {
    let t = Target::start(&["--threads", "1"]);
    let dir = scratch();
    let file = dir.path().join("s.toml");
    std::fs::write(
        &file,
        "[[request]]\nname = \"home\"\nurl = \"/\"\nstatus = 200\n\n\
         [[request]]\nname = \"page\"\nurl = \"/bytes/5000\"\nstatus = 200\n",
    )
    .unwrap();
    let v = run_on(
        io,
        &[
            "run",
            "--scenario",
            file.to_str().unwrap(),
            &t.url,
            "--users",
            "2",
            "--threads",
            "1",
            "-d",
            "1s",
        ],
    );
    let responses = u(&v, "responses");
    assert!(responses >= 20, "{v}");
    assert_eq!(u(&v, "error_count"), 0, "{v}");
    let names = common::name_row(&v, "page");
    assert!(names["responses"].as_u64().unwrap() >= 10, "{names}");
}

/// Answers larger than a provided buffer (16 KiB) and bodies sent with the requests.
fn big_bodies_and_posts(io: &str) {
    let t = Target::start(&["--threads", "1"]);
    let url = format!("{}/bytes/1000000", t.url);
    let v = run_on(
        io,
        &["run", &url, "--users", "2", "--threads", "1", "-n", "40"],
    );
    assert_eq!(u(&v, "responses"), 40, "{v}");
    assert_eq!(u(&v, "error_count"), 0, "{v}");
    assert!(u(&v, "bytes_in") >= 40_000_000, "{v}");
    let dir = scratch();
    let body = dir.path().join("body");
    std::fs::write(&body, vec![b'x'; 300_000]).unwrap();
    let url = format!("{}/", t.url);
    let v = run_on(
        io,
        &[
            "run",
            &url,
            "--method",
            "POST",
            "--body",
            &format!("@{}", body.to_str().unwrap()),
            "--users",
            "2",
            "--threads",
            "1",
            "-n",
            "20",
        ],
    );
    assert_eq!(u(&v, "responses"), 20, "{v}");
    assert_eq!(u(&v, "error_count"), 0, "{v}");
    assert!(u(&v, "bytes_out") >= 20 * 300_000, "{v}");
}

/// Every fault mode of the target with a count that does not depend on timing: the same
/// errors, statuses and retries on both backends.
fn faults_are_counted_the_same_on_both() {
    let _shared = ALONE.read().unwrap_or_else(|e| e.into_inner());
    let t = Target::start(&["--threads", "1"]);
    let modes = [
        ("reset", "10"),
        ("reset-body", "10"),
        ("bad-status", "10"),
        ("bad-header", "10"),
        ("bad-chunk", "10"),
        ("short-body", "10"),
        ("close-after-read", "10"),
        ("refuse", "10"),
        ("503", "10"),
        ("close-idle", "10"),
        ("hang", "3"),
    ];
    for (mode, n) in modes {
        let url = format!("{}/fault/{mode}", t.url);
        let args = [
            "run",
            &url,
            "--users",
            "1",
            "--threads",
            "1",
            "-n",
            n,
            "--timeout",
            "300ms",
        ];
        let [e, r] = ["epoll", "uring"].map(|io| {
            // A run where no request succeeded exits 1; its JSON is written all the same.
            let m = common::run_measured(
                None,
                &[&args[..], &["--io", io]].concat(),
                true,
                Duration::from_secs(60),
            );
            assert!(matches!(m.code, Some(0 | 1)), "{mode} {io}: {}", m.stderr);
            m.v
        });
        for key in ["errors", "statuses", "responses", "requests", "retries"] {
            // Whether a connection's FIN comes before its next request goes out is a race
            // on either backend: which of the two close-idle's requests meet is theirs.
            if mode == "close-idle" && key == "retries" {
                continue;
            }
            assert_eq!(e[key], r[key], "{mode} {key}: epoll {e}\nuring {r}");
        }
        assert!(
            u(&e, "error_count") > 0 || mode == "503" || mode == "close-idle",
            "{mode}: {e}"
        );
    }
}

/// The CO check: the server freezes 1 s of every 5 s, 1000 req/s arrive on a constant
/// clock for two whole periods. 20% of the arrivals come during a freeze and wait for its
/// end, 0 to 1 s: P(response time > x) = 0.2 (1 − x), so p90 = 500 ms and p99 = 950 ms.
/// Both backends measure p99 within 2% of it, and p90 within 3%: the target (a debug build
/// here) takes some 10 ms to flush the answers it held, its time, not the generator's. And
/// the two agree within 2%. It runs alone (the other cases wait): on a host busy beside it
/// the target's freezes run long, which the test can only tell afterwards; it then says so
/// (ignored, with the figures), never passes.
fn the_co_check_gives_the_truth_on_both() -> Option<String> {
    let _alone = ALONE.write().unwrap_or_else(|e| e.into_inner());
    let t = Target::start(&["--stall", "1s/5s", "--threads", "1"]);
    let url = format!("{}/", t.url);
    let before = harness::cpu_totals();
    let [(e90, e99), (u90, u99)] = BACKENDS.map(|(io, _)| {
        let v = run_on(
            io,
            &[
                "run",
                &url,
                "--rate",
                "1000",
                "--arrival",
                "constant",
                "-d",
                "10s",
            ],
        );
        assert_eq!(u(&v, "error_count"), 0, "{io}: {v}");
        let p = |q| common::f(&v, &format!("response_time_ms.{q}"));
        (p("p90"), p("p99"))
    });
    let figures = format!("p90 {e90}/{u90} ms, p99 {e99}/{u99} ms (epoll/uring)");
    let truth = (490.0..=515.0).contains(&e90)
        && (490.0..=515.0).contains(&u90)
        && (931.0..=969.0).contains(&e99)
        && (931.0..=969.0).contains(&u99);
    if !truth {
        let busy = before
            .zip(harness::cpu_totals())
            .map(|((t0, i0), (t1, i1))| 1.0 - (i1 - i0) as f64 / (t1 - t0).max(1) as f64);
        // The generator and the target take about a quarter of two cores here.
        if let Some(b) = busy.filter(|b| *b > 0.6) {
            return Some(format!(
                "the host was busy ({:.0}% CPU) and the target's freezes ran long: {figures}",
                b * 100.0
            ));
        }
        panic!("not the analytic p90 500 ms, p99 950 ms: {figures}");
    }
    assert!((e90 - u90).abs() <= 0.02 * e90, "{figures}");
    assert!((e99 - u99).abs() <= 0.02 * e99, "{figures}");
    None
}

/// Held for reading by every case, for writing by the one that must run alone.
static ALONE: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// A seccomp filter makes io_uring_setup fail with ENOSYS in the child, as a kernel without
/// io_uring (or with it disabled) does.
fn a_kernel_that_refuses_io_uring() {
    let t = Target::start(&["--threads", "1"]);
    let url = format!("{}/", t.url);
    let refused = |args: &[&str]| {
        let mut cmd = bin();
        cmd.args(args);
        refuse_io_uring(&mut cmd);
        output_within(&mut cmd, Duration::from_secs(60))
    };
    let out = refused(&["run", &url, "-n", "10", "--io", "uring"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("--io uring") && err.contains("io_uring"),
        "{err}"
    );
    // auto: epoll, and the summary says why.
    let out = refused(&["run", &url, "-n", "10", "--io", "auto"]);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("I/O epoll (auto: io_uring refused: "),
        "{text}"
    );
    assert!(text.contains("10 answered"), "{text}");
}

fn refuse_io_uring(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt;
    // BPF: load the syscall number; io_uring_setup (425 on every architecture since 5.1)
    // fails with ENOSYS, everything else is allowed.
    const LD_W_ABS: u16 = 0x20;
    const JEQ_K: u16 = 0x15;
    const RET_K: u16 = 0x06;
    let filter = [
        libc::sock_filter {
            code: LD_W_ABS,
            jt: 0,
            jf: 0,
            k: 0,
        },
        libc::sock_filter {
            code: JEQ_K,
            jt: 0,
            jf: 1,
            k: 425,
        },
        libc::sock_filter {
            code: RET_K,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32,
        },
        libc::sock_filter {
            code: RET_K,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ALLOW,
        },
    ];
    // SAFETY: only async-signal-safe prctl calls between fork and exec, on a filter that
    // lives in this (copied) address space until exec.
    unsafe {
        cmd.pre_exec(move || {
            let prog = libc::sock_fprog {
                len: filter.len() as u16,
                filter: filter.as_ptr().cast_mut(),
            };
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                || libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &prog as *const libc::sock_fprog,
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
