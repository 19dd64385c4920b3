//! Hostile cases: a terminal or standard output that goes away or fails; file-size limits.
//! The terminal is tmux (its own server per test; ignored with the reason where tmux is
//! missing): a session killed is a terminal that hangs up, as an ssh connection that drops.
use crate::common::harness::{trial, Need};
use crate::common::tmux::Tmux;
use crate::common::{bin, output_within, scratch, wait_until, wait_within, Target, QUICK};
use libtest_mimic::Trial;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Bound on a load run here (its steps are a few seconds).
const LOAD: Duration = Duration::from_secs(60);
/// Bound on the end of a run after its terminal went away: the step in progress stops at
/// once, the report of a few steps takes well under a second, even unoptimised and loaded.
const HANGUP: Duration = Duration::from_secs(20);

pub fn trials() -> Vec<Trial> {
    vec![
        trial(
            "a_lost_terminal_ends_the_sweep_with_its_report",
            &[Need::Tmux],
            a_lost_terminal_ends_the_sweep_with_its_report,
        ),
        trial(
            "a_background_process_group_gets_the_plain_lines",
            &[Need::Tmux],
            a_background_process_group_gets_the_plain_lines,
        ),
        trial(
            "a_sighup_ignored_at_start_stays_ignored",
            &[],
            a_sighup_ignored_at_start_stays_ignored,
        ),
        trial(
            "a_full_standard_output_is_an_error",
            &[],
            a_full_standard_output_is_an_error,
        ),
        trial(
            "a_closed_pipe_on_standard_output_is_quiet",
            &[],
            a_closed_pipe_on_standard_output_is_quiet,
        ),
        trial(
            "report_out_dash_is_standard_output",
            &[],
            report_out_dash_is_standard_output,
        ),
        trial(
            "a_file_size_limit_is_an_error_not_a_kill",
            &[],
            a_file_size_limit_is_an_error_not_a_kill,
        ),
    ]
}

/// Gone: no such process, or a zombie nobody reaped yet (its parent, the pane's shell, died
/// with the terminal).
fn gone(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(st) => {
            st.rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next())
                == Some("Z")
        }
    }
}

/// Kills the process left behind by a failed test (its terminal is gone; nobody else will).
struct KillOnDrop(i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if !gone(self.0) {
            // SAFETY: kill on the pid this test's tmux pane started.
            unsafe { libc::kill(self.0, libc::SIGKILL) };
        }
    }
}

/// The sweep shows the live view in a tmux pane; the session is killed (the terminal hangs
/// up). The process ends within [`HANGUP`] and its results folder has the interrupted step
/// and the report.
fn a_lost_terminal_ends_the_sweep_with_its_report() {
    let target = Target::start(&["--threads", "1"]);
    let d = scratch();
    let url = format!("{}/", target.url);
    let args = [
        "sweep",
        "--rates",
        "100,200,300",
        "--step",
        "3s",
        "--warmup",
        "0s",
        "--rest",
        "0s",
        "--out",
        "res",
        &url,
    ];
    let t = Tmux::start(d.path(), "hup", &args);
    t.wait_for("responses so far", Duration::from_secs(20));
    let pid = t.child_pid();
    let _reap = KillOnDrop(pid);
    t.kill_session();
    wait_until("overload ends once its terminal is gone", HANGUP, || {
        gone(pid)
    });
    let res = d.path().join("res");
    assert!(res.join("report.html").is_file(), "the report is written");
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(res.join("run.json")).unwrap()).unwrap();
    assert_eq!(info["complete"], false, "{info}");
    assert!(
        info["stop_reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("interrupted")),
        "{info}"
    );
    let steps = std::fs::read_to_string(res.join("steps.jsonl")).unwrap();
    assert!(steps.lines().count() >= 1, "the step in progress is kept");
}

/// `timeout 20 overload run …` in a pane: timeout runs it in a process group of its own, not
/// the terminal's foreground group. It gets the plain progress lines (no full-screen view,
/// which would stop it on SIGTTOU) and ends at its time with exit 0.
fn a_background_process_group_gets_the_plain_lines() {
    let target = Target::start(&["--threads", "1"]);
    let d = scratch();
    let url = format!("{}/", target.url);
    let t = Tmux::start_under(
        d.path(),
        "bg",
        &["timeout", "20"],
        &["run", "-R", "100", "-d", "3s", &url],
    );
    // The plain progress line is rewritten in place and cleared at the end, so what is
    // checked while it runs is the screen mode: never the alternate (full-screen) one.
    let mut end = String::new();
    wait_until("the run in its own process group ends", LOAD, || {
        assert!(!t.alternate_screen(), "no full-screen view");
        end = t.capture();
        end.contains("tty:")
    });
    assert!(
        end.contains("overload-exited-0"),
        "ends at its time, not stopped then killed by timeout (124):\n{end}"
    );
    assert!(
        end.contains("tty:icanon echo"),
        "terminal untouched:\n{end}"
    );
}

/// Started as `nohup` starts it (SIGHUP ignored), a run is not stopped by hang-ups: three
/// SIGHUPs during a 2 s run, and it completes (exit 0, not interrupted).
fn a_sighup_ignored_at_start_stays_ignored() {
    use std::io::BufRead;
    use std::os::unix::process::CommandExt;
    let target = Target::start(&["--threads", "1"]);
    let d = scratch();
    let json = d.path().join("run.json");
    let mut cmd = bin();
    cmd.args(["run", "-R", "50", "-d", "2s", "--json"])
        .arg(&json)
        .arg(format!("{}/", target.url))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: signal is async-signal-safe; this runs in the child before exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("spawn");
    // The first line comes once the load is set up (signal handlers installed).
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let drain = std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    for _ in 0..3 {
        // SAFETY: kill on the child this test started.
        unsafe { libc::kill(child.id() as i32, libc::SIGHUP) };
    }
    let status = wait_within(&mut child, LOAD).expect("ends in time");
    let _ = drain.join();
    assert_eq!(status.code(), Some(0), "{status:?}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["interrupted"], false);
}

/// Runs `cmd` with standard output on `stdout` and returns its status and standard error.
fn run_with_stdout(cmd: &mut Command, stdout: Stdio, limit: Duration) -> (i32, String) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut err = child.stderr.take().unwrap();
    let drain = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let status = wait_within(&mut child, limit).expect("ends in time");
    let err = drain.join().unwrap();
    let code = status
        .code()
        .unwrap_or_else(|| panic!("killed by signal {:?}; stderr: {err}", status.signal()));
    (code, err)
}

fn dev_full() -> Stdio {
    std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full")
        .into()
}

/// A results folder of one short step, for the report commands.
fn results_folder(dir: &Path, url: &str) -> std::path::PathBuf {
    let res = dir.join("res");
    let o = output_within(
        bin()
            .args(["sweep", "--rates", "50", "--step", "1s", "--warmup", "0s"])
            .args(["-q", "--out"])
            .arg(&res)
            .arg(url),
        LOAD,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    res
}

/// Standard output on a full device (ENOSPC) for each command whose product is its standard
/// output: exit 1 and one line on standard error that says so, never exit 0 with the output
/// lost.
fn a_full_standard_output_is_an_error() {
    let target = Target::start(&["--threads", "1"]);
    let d = scratch();
    let url = format!("{}/", target.url);
    let res = results_folder(d.path(), &url);
    let exp = d.path().join("e.toml");
    std::fs::write(
        &exp,
        "[load]\nusers = [1]\n[[config]]\nname = 'a'\nsetup = 'true'\nready = 'http://127.0.0.1:9/'\n",
    )
    .unwrap();
    let res_s = res.to_str().unwrap();
    let cases: Vec<(&str, Vec<&str>)> = vec![
        (
            "run --json -",
            vec!["run", "-R", "50", "-d", "1s", "--json", "-", &url],
        ),
        (
            "report --format percentiles",
            vec!["report", res_s, "--format", "percentiles"],
        ),
        (
            "report --format json --out -",
            vec!["report", res_s, "--format", "json", "--out", "-"],
        ),
        ("generate bash", vec!["generate", "bash"]),
        (
            "experiment --dry-run",
            vec!["experiment", exp.to_str().unwrap(), "--dry-run"],
        ),
    ];
    for (what, args) in cases {
        let (code, err) =
            run_with_stdout(bin().args(&args).current_dir(d.path()), dev_full(), LOAD);
        assert_eq!(
            code, 1,
            "{what}: exit 1 when standard output fails; stderr: {err}"
        );
        let line = err
            .lines()
            .find(|l| l.contains("standard output"))
            .unwrap_or_else(|| panic!("{what}: no word of standard output on stderr: {err}"));
        assert!(line.contains("No space left on device"), "{what}: {line}");
    }
    assert!(!d.path().join("-").exists(), "no file named '-'");
}

/// A reader that went away (`| head -1`, here a pipe closed before the first write) is no
/// error: exit 0 and nothing on standard error.
fn a_closed_pipe_on_standard_output_is_quiet() {
    let mut fds = [0; 2];
    // SAFETY: pipe fills two descriptors this test then owns.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: each descriptor is owned once; the read end is closed at once.
    let (r, w) = unsafe {
        use std::os::fd::FromRawFd;
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    };
    drop(r);
    let (code, err) = run_with_stdout(bin().args(["generate", "bash"]), w.into(), QUICK);
    assert_eq!(code, 0, "{err}");
    assert_eq!(err, "");
}

/// `report --out -` writes a report of one file (JSON here) to standard output, not to a file
/// named `-`; a report of several files (CSV with its per-name table, gnuplot's data and
/// script) cannot go there: a one-line usage error (exit 2), nothing written.
fn report_out_dash_is_standard_output() {
    let target = Target::start(&["--threads", "1"]);
    let d = scratch();
    let res = results_folder(d.path(), &format!("{}/", target.url));
    let report = |format: &str| {
        output_within(
            bin()
                .current_dir(d.path())
                .arg("report")
                .arg(&res)
                .args(["--format", format, "--out", "-"]),
            QUICK,
        )
    };
    let o = report("json");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("the JSON itself");
    assert!(json.is_object());
    assert!(
        !res.join("report.json").exists(),
        "nothing written into the folder"
    );
    for format in ["csv", "gnuplot"] {
        let o = report(format);
        assert_eq!(o.status.code(), Some(2), "{format}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("--out -") && err.contains("2 files"), "{err}");
        assert!(o.stdout.is_empty());
    }
    assert!(!d.path().join("-").exists(), "no file named '-'");
}

/// Files named `*.tmp` in `dir`: what an interrupted atomic write would leave.
fn temporaries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect()
}

/// RLIMIT_FSIZE of 16 blocks (8 KiB under dash, 16 KiB under bash): a sweep whose steps.jsonl
/// outgrows it, then a report (60 KiB of HTML) under it. Each ends with a one-line error
/// naming the file and the limit, never killed by SIGXFSZ; steps.jsonl ends with a whole line
/// and no temporary file is left.
fn a_file_size_limit_is_an_error_not_a_kill() {
    let target = Target::start(&["--threads", "1"]);
    let d = scratch();
    let url = format!("{}/", target.url);
    let res = d.path().join("res");
    let limited = |args: &[&str]| {
        let mut c = Command::new("sh");
        c.args([
            "-c",
            "ulimit -f 16; exec \"$0\" \"$@\"",
            env!("CARGO_BIN_EXE_overload"),
        ])
        .args(args)
        .current_dir(d.path());
        c
    };
    let (code, err) = run_with_stdout(
        &mut limited(&[
            "sweep",
            "--rates",
            "20,30,40,50,60,70",
            "--step",
            "1s",
            "--warmup",
            "0s",
            "--rest",
            "0s",
            "-q",
            "--out",
            "res",
            &url,
        ]),
        Stdio::null(),
        LOAD,
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("steps.jsonl") && err.contains("file size limit"),
        "{err}"
    );
    let steps = std::fs::read_to_string(res.join("steps.jsonl")).unwrap();
    assert!(
        steps.is_empty() || steps.ends_with('\n'),
        "a whole last line"
    );
    for l in steps.lines() {
        serde_json::from_str::<serde_json::Value>(l).expect("each line whole");
    }
    assert!(temporaries(&res).is_empty(), "{:?}", temporaries(&res));

    let (code, err) = run_with_stdout(&mut limited(&["report", "res"]), Stdio::null(), QUICK);
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("report.html") && err.contains("file size limit"),
        "{err}"
    );
    assert!(temporaries(&res).is_empty(), "{:?}", temporaries(&res));
    assert!(!res.join("report.html").exists());
}
