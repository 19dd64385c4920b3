//! The live view on a real terminal: `overload sweep` under tmux (ignored with the reason where
//! tmux is missing, see tests/common/harness.rs) against the embedded target. The view updates
//! each second, `q` ends the sweep as SIGINT does (the step in progress recorded, the report
//! written) and gives the terminal back, `n` ends a step early and the sweep goes on; with
//! `--no-tui` the plain lines come instead. Also the run's other live outputs: `--hdr-log` on
//! `run` and `sweep` (the same bytes as `report --hdr-log`), `--live-listen`.
use crate::common;
use crate::common::harness::{self, Need};
use crate::common::tmux::Tmux;
use crate::common::{output_within, wait_until, Target, QUICK};
use std::path::Path;
use std::time::Duration;

/// Bound on a load run here (its steps are a few seconds).
const LOAD: Duration = Duration::from_secs(60);
/// Bound on a change the view should show within a few seconds on a loaded machine.
const SEEN: Duration = Duration::from_secs(20);

pub fn trials() -> Vec<libtest_mimic::Trial> {
    vec![
        harness::trial(
            "the_view_updates_and_q_ends_the_sweep_as_sigint_does",
            &[Need::Tmux],
            the_view_updates_and_q_ends_the_sweep_as_sigint_does,
        ),
        harness::trial(
            "n_ends_the_step_in_progress_and_the_sweep_goes_on",
            &[Need::Tmux],
            n_ends_the_step_in_progress_and_the_sweep_goes_on,
        ),
        harness::trial(
            "no_tui_and_quiet_keep_the_plain_lines",
            &[Need::Tmux],
            no_tui_and_quiet_keep_the_plain_lines,
        ),
        harness::trial(
            "two_sigterms_under_the_view_give_the_terminal_back",
            &[Need::Tmux],
            two_sigterms_under_the_view_give_the_terminal_back,
        ),
        harness::trial(
            "at_80x24_every_figure_on_the_view_is_whole",
            &[Need::Tmux],
            at_80x24_every_figure_on_the_view_is_whole,
        ),
        harness::trial(
            "keys_raise_the_rate_twice_and_the_run_records_it",
            &[Need::Tmux],
            keys_raise_the_rate_twice_and_the_run_records_it,
        ),
        harness::trial(
            "hdr_log_on_run_and_sweep_is_the_reports_log",
            &[],
            hdr_log_on_run_and_sweep_is_the_reports_log,
        ),
        harness::trial(
            "run_live_listen_shows_the_seconds_as_they_come",
            &[],
            run_live_listen_shows_the_seconds_as_they_come,
        ),
        harness::trial(
            "live_listen_serves_the_page_on_the_address_given",
            &[],
            live_listen_serves_the_page_on_the_address_given,
        ),
    ]
}

/// The view's running count: `· N responses so far`.
fn responses(screen: &str) -> Option<u64> {
    let before = screen.split(" responses so far").next()?;
    before.rsplit(' ').next()?.parse().ok()
}

fn steps(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("steps.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn run_json(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap()
}

fn flags(step: &serde_json::Value) -> Vec<String> {
    step["flags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect()
}

/// Under tmux the sweep shows the live view; two captures 1.5 s apart show different
/// figures; `q` ends the sweep with SIGINT's exit code (130), the step in progress recorded
/// as interrupted, the report written, and the terminal back as it was (main screen, not raw).
fn the_view_updates_and_q_ends_the_sweep_as_sigint_does() {
    let target = Target::start(&["--threads", "1"]);
    let d = common::scratch();
    let url = format!("{}/", target.url);
    let args = [
        "sweep",
        "--rates",
        "100,150,200,250",
        "--step",
        "4s",
        "--warmup",
        "0s",
        "--rest",
        "0s",
        "--out",
        "res",
        &url,
    ];
    let t = Tmux::start(d.path(), "q", &args);
    let first = t.wait_for("responses so far", SEEN);
    assert!(first.contains("overload sweep"), "{first}");
    assert!(first.contains("step 1/4 · 100 req/s"), "{first}");
    assert!(first.contains(" q  quit as Ctrl-C does"), "{first}");
    assert!(t.alternate_screen(), "the view is on the alternate screen");
    let a = responses(&first).expect("a response count");
    let mut second = String::new();
    wait_until("the figures move", SEEN, || {
        second = t.capture();
        responses(&second).is_some_and(|b| b > a)
    });
    assert_ne!(first, second);

    t.keys("q");
    let end = t.wait_for("tty:", LOAD);
    assert!(end.contains("overload-exited-130"), "SIGINT's code:\n{end}");
    assert!(end.contains("tty:icanon"), "raw mode is off again:\n{end}");
    assert!(!t.alternate_screen(), "the alternate screen is left");
    assert!(end.contains("sweep ended: interrupted"), "{end}");
    assert!(end.contains("report:"), "{end}");
    let res = d.path().join("res");
    assert!(res.join("report.html").is_file(), "the report is written");
    let info = run_json(&res);
    assert_eq!(info["complete"], false);
    assert!(
        info["stop_reason"]
            .as_str()
            .unwrap()
            .starts_with("interrupted"),
        "{info}"
    );
    let steps = steps(&res);
    assert!(!steps.is_empty(), "the step in progress is recorded");
    assert!(flags(steps.last().unwrap()).contains(&"interrupted".to_string()));
}

/// `n` during step 1 (of 8 s planned) ends it after a few seconds: it is stored `ended-early`,
/// shorter than planned, and the sweep goes on to step 2 (which `q` then ends).
fn n_ends_the_step_in_progress_and_the_sweep_goes_on() {
    let target = Target::start(&["--threads", "1"]);
    let d = common::scratch();
    let url = format!("{}/", target.url);
    let args = [
        "sweep", "--rates", "100,150", "--step", "30s", "--warmup", "0s", "--rest", "0s", "--out",
        "res", &url,
    ];
    // 30 s steps: `q` must land inside step 2 however slowly a loaded machine redraws (CI, load
    // 17: the 8 s step 2 had ended before the view showed step 1's flag, so `q` found the
    // sweep done and step 2 was not interrupted). Step 1 is ended by `n` after about 1 s.
    let t = Tmux::start(d.path(), "n", &args);
    t.wait_for("step 1/2 · 100 req/s · 1s", SEEN);
    t.keys("n");
    t.wait_for("step 2/2", SEEN);
    // The step table shows it: the header may say step 2 a redraw before the table's row
    // of step 1 carries its flag, so wait for the flag itself.
    t.wait_for("ended-early", SEEN);
    t.keys("q");
    let end = t.wait_for("tty:", LOAD);
    assert!(
        end.contains("step 1: ended early from the live view"),
        "{end}"
    );
    let steps = steps(&d.path().join("res"));
    assert_eq!(steps.len(), 2, "the sweep went on to step 2");
    // Its flag; a machine busy beside the test may add "saturated" to a 100 req/s step.
    assert!(
        flags(&steps[0]).contains(&"ended-early".to_string()),
        "{:?}",
        flags(&steps[0])
    );
    let secs = steps[0]["end_s"].as_f64().unwrap() - steps[0]["start_s"].as_f64().unwrap();
    assert!(secs < 7.0, "step 1 ended early: {secs:.1} s of 30 s");
    assert!(
        flags(&steps[1]).contains(&"interrupted".to_string()),
        "{:?}",
        steps[1]
    );
}

/// Two SIGTERMs from outside while the view is up: the second exits at once (130), and the
/// terminal is still given back (the handler restores the saved mode and leaves the alternate
/// screen), so the shell after it reads lines and echoes again.
fn two_sigterms_under_the_view_give_the_terminal_back() {
    let target = Target::start(&["--threads", "1"]);
    let d = common::scratch();
    let url = format!("{}/", target.url);
    let t = Tmux::start(d.path(), "term", &["run", "-R", "50", "-d", "30s", &url]);
    t.wait_for("responses so far", SEEN);
    assert!(t.alternate_screen());
    let pid = t.child_pid();
    // Back to back: the second lands while the first's graceful stop is still under way (the
    // engine notices the flag within 100 ms), so the view is up when the handler exits.
    for _ in 0..2 {
        // SAFETY: kill with a pid this test's tmux started.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    }
    let end = t.wait_for("tty:", LOAD);
    assert!(end.contains("overload-exited-130"), "{end}");
    assert!(
        end.contains("tty:icanon echo"),
        "line mode and echo are back:\n{end}"
    );
    assert!(!t.alternate_screen(), "the alternate screen is left");
}

/// A token on the screen that starts with a digit is a whole figure as the view formats them:
/// a count or a level (`300`, `1.5`, `0.250`), a time (`4.00ms`, `193µs`, `12s`, `1.5s`), a
/// share (`100.0%`, `12%`). A cut one (`100.`, `20.21`, `193µ`) is none of these.
fn whole_figure(t: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (num, unit) = match t.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => t.split_at(i),
        None => (t, ""),
    };
    let decimals = match num.split_once('.') {
        None if digits(num) => Some(0),
        Some((i, f)) if digits(i) && digits(f) => Some(f.len()),
        _ => None,
    };
    matches!(
        (decimals, unit),
        (Some(0 | 1 | 3), "") | (Some(0 | 2), "ms") | (Some(0), "µs") | (Some(0 | 1), "s" | "%")
    )
}

/// fmt_ms of src/units.rs: how the view shows a time.
fn ms(v: f64) -> String {
    if v < 1.0 {
        format!("{:.0}µs", v * 1e3)
    } else if v < 100.0 {
        format!("{v:.2}ms")
    } else if v < 10_000.0 {
        format!("{v:.0}ms")
    } else {
        format!("{:.1}s", v / 1e3)
    }
}

/// At 80×24, the terminal's default size, the view cuts no figure: while step 3 runs, every
/// token that starts with a digit is a whole figure, and the rows of steps 1 and 2 show the
/// percentiles and send lag that steps.jsonl holds for them, whole.
fn at_80x24_every_figure_on_the_view_is_whole() {
    let target = Target::start(&["--threads", "1"]);
    let d = common::scratch();
    let url = format!("{}/", target.url);
    let args = [
        "sweep",
        "--rates",
        "100,150,200",
        "--step",
        "2s",
        "--warmup",
        "0s",
        "--rest",
        "0s",
        "--out",
        "res",
        &url,
    ];
    let t = Tmux::start_sized(d.path(), "small", (80, 24), &[], &args);
    let screen = t.wait_for("step 3/3", LOAD);
    let end = t.wait_for("tty:", LOAD);
    assert!(end.contains("overload-exited-0"), "{end}");
    let cut: Vec<&str> = screen
        .split(|c: char| {
            c.is_whitespace() || c == '│' || c == '·' || c == '/' || c == ':' || c == ','
        })
        .map(|w| w.trim_start_matches(['-', '(', '─', '┌', '└', '├']))
        .filter(|w| w.starts_with(|c: char| c.is_ascii_digit()) && !w.contains("127.0.0.1"))
        .filter(|w| !whole_figure(w.trim_end_matches([')', '─', '┐', '┘', '┤'])))
        .collect();
    assert!(cut.is_empty(), "cut figures {cut:?} on:\n{screen}");
    for s in &steps(&d.path().join("res"))[..2] {
        let n = s["step"].as_u64().unwrap() + 1;
        let row = screen
            .lines()
            .skip_while(|l| !l.contains("so far"))
            .find(|l| l.trim_start_matches('│').starts_with(&format!("{n} ")))
            .unwrap_or_else(|| panic!("no row for step {n}:\n{screen}"));
        let rt = &s["response_time_ms"];
        for v in [&rt["p50"], &rt["p95"], &rt["p99"], &s["send_lag_ms"]["p99"]] {
            let shown = ms(v.as_f64().unwrap());
            assert!(
                row.split_whitespace().any(|w| w == shown),
                "step {n}: {shown} whole in {row:?}\n{screen}"
            );
        }
    }
}

/// `--no-tui` and `--quiet` on a terminal: no alternate screen; `--no-tui` prints the
/// progress line, `--quiet` nothing until the summary.
fn no_tui_and_quiet_keep_the_plain_lines() {
    let target = Target::start(&["--threads", "1"]);
    let d = common::scratch();
    let url = format!("{}/", target.url);
    let t = Tmux::start(
        d.path(),
        "plain",
        &["run", "-R", "50", "-d", "3s", "--no-tui", &url],
    );
    // The per-second rate varies on a loaded machine (49/s): the line itself is the point.
    let s = t.wait_for(" responses, ", SEEN);
    assert!(!t.alternate_screen(), "{s}");
    let end = t.wait_for("tty:", LOAD);
    assert!(end.contains("overload-exited-0"), "{end}");
    drop(t);
    let t = Tmux::start(
        d.path(),
        "quiet",
        &["run", "-R", "50", "-d", "2s", "-q", &url],
    );
    // While the run sends its load (a view would be up by then).
    let port: u16 = target.url.rsplit(':').next().unwrap().parse().unwrap();
    wait_until("the quiet run sends its load", SEEN, || {
        common::procs::clients_of(port) > 0
    });
    assert!(!t.alternate_screen(), "--quiet shows no view");
    let end = t.wait_for("tty:", LOAD);
    assert!(end.contains("overload-exited-0"), "{end}");
    assert!(!end.contains("responses so far"), "{end}");
}

/// `run --hdr-log` and `sweep --hdr-log` write the same bytes as `report DIR --hdr-log` on the
/// results folder they leave (one exporter); `run --hdr-log` alone writes that folder; a
/// log in a folder that does not exist is refused before any load (exit 2).
fn hdr_log_on_run_and_sweep_is_the_reports_log() {
    let target = Target::start(&["--threads", "1"]);
    let d = common::scratch();
    let p = |n: &str| d.path().join(n);
    let url = format!("{}/", target.url);
    let o = output_within(
        common::bin().current_dir(d.path()).args([
            "run",
            "-R",
            "100",
            "-d",
            "1s",
            "--hdr-log",
            "run.hlog",
            &url,
        ]),
        LOAD,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let runs: Vec<_> = std::fs::read_dir(p("runs")).unwrap().collect();
    assert_eq!(runs.len(), 1, "run --hdr-log writes its results folder");
    let folder = runs[0].as_ref().unwrap().path();
    let again = |dir: &Path, out: &Path| {
        let o = output_within(
            common::bin()
                .arg("report")
                .arg(dir)
                .arg("--hdr-log")
                .arg(out),
            QUICK,
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    again(&folder, &p("report-run.hlog"));
    let log = std::fs::read(p("run.hlog")).unwrap();
    assert!(log.starts_with(b"#"), "an interval log");
    assert_eq!(log, std::fs::read(p("report-run.hlog")).unwrap());

    let o = output_within(
        common::bin()
            .args([
                "sweep", "--rates", "50,100", "--step", "1s", "--warmup", "0s",
            ])
            .args(["--rest", "0s", "-q", "--out"])
            .arg(p("sweep"))
            .arg("--hdr-log")
            .arg(p("sweep.hlog"))
            .arg(&url),
        LOAD,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    again(&p("sweep"), &p("report-sweep.hlog"));
    let log = std::fs::read(p("sweep.hlog")).unwrap();
    assert_eq!(log, std::fs::read(p("report-sweep.hlog")).unwrap());

    let o = output_within(
        common::bin()
            .args(["sweep", "--rates", "50", "--step", "1s", "--out"])
            .arg(p("never"))
            .arg("--hdr-log")
            .arg(p("no/such/dir/x.hlog"))
            .arg(&url),
        QUICK,
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--hdr-log"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(!p("never").exists(), "refused before the run");
}

/// `--live-listen ADDR` serves the live page on exactly that address (loopback here, IPv4
/// and, where the host has it, IPv6); a malformed address or one given with `--live-port` is
/// a usage error.
fn live_listen_serves_the_page_on_the_address_given() {
    use std::io::{BufReader, Read, Write};
    let target = Target::start(&["--threads", "1"]);
    let d = common::scratch();
    let url = format!("{}/", target.url);
    let ipv6 = std::net::TcpListener::bind("[::1]:0").is_ok();
    let addrs: &[&str] = if ipv6 {
        &["127.0.0.1:0", "[::1]:0"]
    } else {
        &["127.0.0.1:0"]
    };
    for (i, listen) in addrs.iter().enumerate() {
        let mut child = common::bin()
            .args([
                "sweep", "--rates", "50,60", "--step", "1s", "--warmup", "0s",
            ])
            .args(["--rest", "0s", "--live-listen", listen, "--out"])
            .arg(d.path().join(format!("run{i}")))
            .arg(&url)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut err = BufReader::new(child.stderr.take().unwrap());
        let page = common::live_url(&mut err);
        let rest = page.strip_prefix("http://").unwrap();
        let (addr, path) = rest.split_at(rest.find('/').unwrap());
        let host = &listen[..listen.rfind(':').unwrap()];
        assert!(addr.starts_with(host), "{page} is on {listen}");
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(c, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
        let mut resp = String::new();
        c.read_to_string(&mut resp).unwrap();
        assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
        let drain = std::thread::spawn(move || {
            let mut rest = String::new();
            let _ = err.read_to_string(&mut rest);
        });
        let status = common::wait_within(&mut child, LOAD).expect("the sweep ends");
        drain.join().unwrap();
        assert!(status.success());
    }
    for bad in [
        vec!["--live-listen", "localhost"],
        vec!["--live-listen", "127.0.0.1:0", "--live-port", "0"],
    ] {
        let o = output_within(
            common::bin()
                .args(["sweep", "--rates", "50", "--step", "1s"])
                .args(&bad)
                .arg(&url),
            QUICK,
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {err}");
        assert!(err.contains("--live-"), "{err}");
    }
}

/// GET of a live page URL (`http://ADDR/PATH`): its status line and body.
fn get_page(page: &str) -> (String, String) {
    use std::io::{Read, Write};
    let rest = page.strip_prefix("http://").unwrap();
    let (addr, path) = rest.split_at(rest.find('/').unwrap());
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(c, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut resp = String::new();
    c.read_to_string(&mut resp).unwrap();
    let (head, body) = resp.split_once("\r\n\r\n").unwrap_or((&resp, ""));
    (
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    )
}

/// `run --live-listen`: a single run stores its one step only when it ends, yet its page
/// charts the seconds while it goes (the timeline has data, and more a moment later), then
/// shows the stored run; the results folder is written as with --report.
fn run_live_listen_shows_the_seconds_as_they_come() {
    use std::io::{BufReader, Read};
    let target = Target::start(&["--threads", "1"]);
    let d = common::scratch();
    let url = format!("{}/", target.url);
    let mut child = common::bin()
        .current_dir(d.path())
        .args([
            "run",
            "-R",
            "100",
            "-d",
            "8s",
            "--live-listen",
            "127.0.0.1:0",
            &url,
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let page = common::live_url(&mut err);
    let drain = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = err.read_to_string(&mut rest);
    });
    // The line segments drawn on the responses-per-second timeline (its SVG paths' `L`s).
    let charted = |body: &str| -> Option<usize> {
        let at = body.find("Timeline: responses per second")?;
        let chart = &body[at..];
        let end = chart.find("</svg>")?;
        Some(chart[..end].matches(" L").count())
    };
    let mut first = String::new();
    wait_until("the timeline gets data while the run goes", SEEN, || {
        let (status, body) = get_page(&page);
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        first = body;
        !first.contains("no per-second data")
    });
    assert!(
        child.try_wait().unwrap().is_none(),
        "still running: shown as it comes"
    );
    let a = charted(&first);
    assert!(a.is_some(), "a timeline: {first}");
    let mut b = None;
    wait_until("more seconds charted a moment later", SEEN, || {
        b = charted(&get_page(&page).1);
        b > a
    });
    assert!(child.try_wait().unwrap().is_none(), "still running");
    let status = common::wait_within(&mut child, LOAD).expect("the run ends");
    drain.join().unwrap();
    assert!(status.success());
    let runs: Vec<_> = std::fs::read_dir(d.path().join("runs")).unwrap().collect();
    assert_eq!(runs.len(), 1, "the results folder is written");
    let folder = runs[0].as_ref().unwrap().path();
    assert_eq!(steps(&folder).len(), 1);
    assert!(folder.join("report.html").is_file());
}

/// Live control from the keys: a run at 50 req/s, `+` twice (steps of 50) raises it to 100,
/// then 150. series.jsonl holds the two changes at the seconds they took effect, by keys, and
/// its seconds move there: offered and answered near 50 before the first, near 150 after the
/// second; the report marks both on its timelines; the summary says the run was steered.
fn keys_raise_the_rate_twice_and_the_run_records_it() {
    let target = Target::start(&["--threads", "1"]);
    let d = common::scratch();
    let url = format!("{}/", target.url);
    let args = [
        "run",
        "-R",
        "50",
        "-d",
        "12s",
        "--control-step",
        "50",
        "--out",
        "res",
        &url,
    ];
    let t = Tmux::start(d.path(), "steer", &args);
    t.wait_for("responses so far", SEEN);
    assert!(t.capture().contains(" +/- "), "the footer names the keys");
    // About 3 s at 50 req/s, then the first raise; about 3 s at 100, then the second.
    wait_until("150 responses", SEEN, || {
        responses(&t.capture()).is_some_and(|n| n >= 150)
    });
    t.keys("+");
    t.wait_for("rate 50→100 req/s", SEEN);
    wait_until("450 responses", SEEN, || {
        responses(&t.capture()).is_some_and(|n| n >= 450)
    });
    t.keys("+");
    t.wait_for("rate 100→150 req/s", SEEN);
    let end = t.wait_for("tty:", LOAD);
    assert!(end.contains("overload-exited-0"), "{end}");
    assert!(end.contains("steered: rate 50→100 (keys) at"), "{end}");

    let res = d.path().join("res");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(res.join("series.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let events: Vec<&serde_json::Value> = lines.iter().filter(|l| l["event"].is_string()).collect();
    assert_eq!(events.len(), 2, "{events:?}");
    for (e, (from, to)) in events.iter().zip([(50.0, 100.0), (100.0, 150.0)]) {
        assert_eq!(e["event"], "control");
        assert_eq!(e["what"], "rate");
        assert_eq!(e["by"], "keys");
        assert_eq!(
            (e["from"].as_f64(), e["to"].as_f64()),
            (Some(from), Some(to))
        );
    }
    let (t1, t2) = (
        events[0]["t"].as_f64().unwrap(),
        events[1]["t"].as_f64().unwrap(),
    );
    assert!(1.0 < t1 && t1 + 1.0 < t2 && t2 < 12.0, "{t1} {t2}");
    // The seconds wholly before the first change, and wholly after the second (the last
    // one, drained at the end, left out).
    let seconds: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["t"].is_f64() && l["event"].is_null())
        .collect();
    let at = |p: &serde_json::Value, k: &str| p[k].as_f64().unwrap();
    let before: Vec<_> = seconds.iter().filter(|p| at(p, "t") + 1.0 <= t1).collect();
    let after: Vec<_> = seconds
        .iter()
        .filter(|p| at(p, "t") >= t2 && at(p, "t") + 2.0 <= 12.0)
        .collect();
    assert!(!before.is_empty() && !after.is_empty(), "{seconds:?}");
    for p in &before {
        assert_eq!(at(p, "offered"), 50.0, "{p}");
        let n = at(p, "responses");
        assert!((25.0..=75.0).contains(&n), "before the raises: {p}");
    }
    for p in &after {
        assert!((at(p, "offered") - 150.0).abs() < 1e-6, "{p}");
        let n = at(p, "responses");
        assert!((110.0..=190.0).contains(&n), "after the second raise: {p}");
    }
    // The second the change fell in offers between the levels it joins.
    let straddling = seconds
        .iter()
        .find(|p| at(p, "t") < t1 && t1 < at(p, "t") + 1.0)
        .expect("the second of the first change");
    let o = at(straddling, "offered");
    assert!((50.0..=100.0).contains(&o), "{straddling}");
    let html = std::fs::read_to_string(res.join("report.html")).unwrap();
    assert!(
        html.contains("rate 50→100 (keys)"),
        "the first change marked"
    );
    assert!(
        html.contains("rate 100→150 (keys)"),
        "the second change marked"
    );
    assert!(html.contains("steered by live control"), "the page says so");
    let steps = steps(&res);
    assert!(
        flags(&steps[0]).contains(&"steered".to_string()),
        "{:?}",
        steps[0]
    );
}
