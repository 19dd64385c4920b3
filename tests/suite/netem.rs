//! `overload lab netem`: namespaces made and removed (on success, on error, on SIGINT),
//! nothing left on the host; the bridge's delay and loss measured across it; a load run
//! across it; `--cleanup` of a killed run's namespaces. Root and network namespaces needed:
//! elsewhere the tests show as ignored with the reason (tests/common/harness.rs).
use crate::common;
use crate::common::harness::{self, Need};
use crate::common::{bin, output_within, wait_until, wait_within};
use std::process::{Command, Stdio};
use std::time::Duration;

const NS: &[Need] = &[Need::Root, Need::NetNamespace];

pub fn trials() -> Vec<libtest_mimic::Trial> {
    vec![
        harness::trial(
            "namespaces_are_made_and_removed_on_success",
            NS,
            namespaces_are_made_and_removed_on_success,
        ),
        harness::trial(
            "namespaces_are_removed_when_the_stack_fails",
            NS,
            namespaces_are_removed_when_the_stack_fails,
        ),
        harness::trial(
            "namespaces_are_removed_on_sigint",
            NS,
            namespaces_are_removed_on_sigint,
        ),
        harness::trial(
            "bridge_delay_is_the_rtt_asked",
            NS,
            bridge_delay_is_the_rtt_asked,
        ),
        harness::trial(
            "bridge_loses_the_share_asked",
            NS,
            bridge_loses_the_share_asked,
        ),
        harness::trial(
            "a_load_run_across_the_bridge",
            NS,
            a_load_run_across_the_bridge,
        ),
        harness::trial(
            "a_host_port_forwarded_across_the_path_in_tcp_and_quic",
            NS,
            a_host_port_forwarded_across_the_path_in_tcp_and_quic,
        ),
        harness::trial(
            "cleanup_removes_only_dead_runs_namespaces",
            NS,
            cleanup_removes_only_dead_runs_namespaces,
        ),
        harness::trial(
            "bad_values_are_one_line_usage_errors",
            &[],
            bad_values_are_one_line_usage_errors,
        ),
        harness::trial(
            "a_new_path_removes_what_killed_runs_left",
            NS,
            a_new_path_removes_what_killed_runs_left,
        ),
        harness::trial(
            "without_root_it_is_a_one_line_usage_error",
            &[Need::Root],
            without_root_it_is_a_one_line_usage_error,
        ),
        harness::trial(
            "protocols_experiment_quick_runs_every_row_across_the_path",
            NS,
            protocols_experiment_quick_runs_every_row_across_the_path,
        ),
        harness::trial(
            "protocols_capacity_experiment_quick_searches_every_row",
            NS,
            protocols_capacity_experiment_quick_searches_every_row,
        ),
    ]
}

const LIMIT: Duration = Duration::from_secs(60);

/// Every path made removes what dead runs left: the tests that plant such leftovers hold
/// this for writing, the ones that make paths for reading, so that no other test's path
/// removes a planted leftover before the test has seen it go.
static PATHS: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn making_paths() -> std::sync::RwLockReadGuard<'static, ()> {
    PATHS.read().unwrap_or_else(|e| e.into_inner())
}

fn planting_leftovers() -> std::sync::RwLockWriteGuard<'static, ()> {
    PATHS.write().unwrap_or_else(|e| e.into_inner())
}

/// The namespaces named after `pid`.
fn namespaces_of(pid: u32) -> Vec<String> {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&format!("ovl-{pid}-")))
        .map(String::from)
        .collect()
}

/// The host's interfaces never carry the path's links.
fn assert_host_links_untouched() {
    let out = Command::new("ip").args(["-o", "link"]).output().unwrap();
    let links = String::from_utf8_lossy(&out.stdout);
    for name in ["toload", "tostack"] {
        assert!(
            !links.contains(name),
            "{name} in the host's links:\n{links}"
        );
    }
}

/// Runs `lab netem ARGS` to its end; its pid, status and output.
fn netem(args: &[&str]) -> (u32, std::process::Output) {
    common::output_within_pid(bin().args(["lab", "netem"]).args(args), LIMIT)
}

fn text(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn namespaces_are_made_and_removed_on_success() {
    let _paths = making_paths();
    // The command sees the load side's address and lists the namespaces that exist while
    // it runs; its exit code is lab netem's.
    let (pid, o) = netem(&[
        "--probe",
        "0",
        "--",
        "sh",
        "-c",
        "ip -o addr show eth0; ip netns list; echo to=$OVERLOAD_NETEM_STACK; exit 7",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(7), "{t}");
    assert!(t.contains("inet 10.77.0.1/24"), "{t}");
    assert!(t.contains("to=10.77.0.2"), "{t}");
    for side in ["load", "stack"] {
        assert!(t.contains(&format!("ovl-{pid}-{side}")), "{t}");
    }
    assert!(
        namespaces_of(pid).is_empty(),
        "left: {:?}",
        namespaces_of(pid)
    );
    assert_host_links_untouched();
}

fn namespaces_are_removed_when_the_stack_fails() {
    let _paths = making_paths();
    let (pid, o) = netem(&[
        "--impair",
        "bridge",
        "--stack-cmd",
        "echo no server here >&2; exit 3",
        "--stack-port",
        "8080",
        "--",
        "true",
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("--stack-cmd exited"), "{t}");
    assert!(
        t.contains("ovl-") && t.contains("-path"),
        "the bridge's namespace was made: {t}"
    );
    assert!(
        namespaces_of(pid).is_empty(),
        "left: {:?}",
        namespaces_of(pid)
    );
    assert_host_links_untouched();
}

fn namespaces_are_removed_on_sigint() {
    let _paths = making_paths();
    let mut child = bin()
        .args(["lab", "netem", "--impair", "bridge", "--probe", "0"])
        .args(["--stack-cmd", "sleep 60", "--", "sleep", "60"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Up once the command runs inside the load namespace.
    wait_until("the command runs in the load namespace", LIMIT, || {
        let out = Command::new("ip")
            .args(["netns", "pids", &format!("ovl-{pid}-load")])
            .output()
            .unwrap();
        !out.stdout.is_empty()
    });
    assert_eq!(namespaces_of(pid).len(), 3);
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let st = wait_within(&mut child, Duration::from_secs(20)).expect("ended after SIGINT");
    assert_eq!(st.code(), Some(130));
    assert!(
        namespaces_of(pid).is_empty(),
        "left: {:?}",
        namespaces_of(pid)
    );
    assert_host_links_untouched();
}

/// The number after `label` in `t`.
fn number_after(t: &str, label: &str) -> f64 {
    let at = t
        .find(label)
        .unwrap_or_else(|| panic!("no '{label}' in {t}"));
    t[at + label.len()..]
        .trim_start()
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

fn bridge_delay_is_the_rtt_asked() {
    let _paths = making_paths();
    let (_, o) = netem(&[
        "--impair", "bridge", "--delay", "40ms", "--probe", "50", "--", "true",
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let median = number_after(&t, "RTT median");
    let min = number_after(&t, "(min");
    // Never shorter than asked; the margin is what a loaded 2-core host adds.
    assert!(min >= 40.0, "{t}");
    assert!(median <= 40.0 + 15.0, "{t}");
}

fn bridge_loses_the_share_asked() {
    let _paths = making_paths();
    let (_, o) = netem(&[
        "--impair", "bridge", "--loss", "10%", "--probe", "1000", "--", "true",
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let toward = number_after(&t, "datagrams,");
    assert!(
        (50.0..=150.0).contains(&toward),
        "{toward} of 1000 lost at 10%: {t}"
    );
    // The bridge's own count (the warm-up's and ARP's frames too) is of the same share.
    let counted = number_after(&t, "forwarded,");
    assert!((50.0..=160.0).contains(&counted), "{counted} counted: {t}");
}

fn a_load_run_across_the_bridge() {
    let _paths = making_paths();
    let target = format!(
        "{} target --listen 10.77.0.2:8080 --allow-remote",
        env!("CARGO_BIN_EXE_overload")
    );
    let (_, o) = netem(&[
        "--impair",
        "bridge",
        "--delay",
        "40ms",
        "--probe",
        "0",
        "--stack-cmd",
        &target,
        "--stack-port",
        "8080",
        "--",
        env!("CARGO_BIN_EXE_overload"),
        "run",
        "http://{stack}:8080/",
        "-d",
        "2s",
        "-c",
        "4",
        "--json",
        "-",
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("the run's JSON");
    let ok = common::f(&v, "responses");
    assert!(ok > 10.0, "{t}");
    // Every answer took a round trip of the path at least.
    let p50 = common::f(&v, "response_time_ms.p50");
    assert!(p50 >= 40.0, "p50 {p50}: {t}");
}

/// `--forward PORT`: a server on the host's loopback (the embedded target, TLS and HTTP/3,
/// as a lab stack would be) is reached from the load namespace at {stack}:PORT across a
/// 30 ms path, over TCP (HTTP/2) and QUIC (HTTP/3): every answer took the round trip, the
/// relay counts what it carried, and the namespaces go. A port nobody listens on is counted
/// as refused, the run's requests failed, never a hang.
fn a_host_port_forwarded_across_the_path_in_tcp_and_quic() {
    let _paths = making_paths();
    let target = common::Target::start(&["--tls", "--http3"]);
    let port = target.url.rsplit(':').next().unwrap().to_string();
    let url = format!("https://{{stack}}:{port}/");
    for (http, carried) in [("2", "1 TCP connections"), ("3", "0 TCP connections")] {
        let (pid, o) = netem(&[
            "--delay",
            "30ms",
            "--probe",
            "0",
            "--forward",
            &port,
            "--",
            env!("CARGO_BIN_EXE_overload"),
            "run",
            &url,
            "--http",
            http,
            "--insecure",
            "-n",
            "40",
            "-c",
            "4",
            "--threads",
            "1",
            "--json",
            "-",
        ]);
        let t = text(&o);
        assert!(o.status.success(), "--http {http}: {t}");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("the run's JSON");
        assert_eq!(common::f(&v, "responses"), 40.0, "{t}");
        assert_eq!(v["protocol"]["version"], http, "{t}");
        let p50 = common::f(&v, "response_time_ms.p50");
        assert!(p50 >= 30.0, "--http {http}: p50 {p50} ms: {t}");
        assert!(t.contains(&format!("forward {port}: {carried}")), "{t}");
        if http == "3" {
            assert!(!t.contains("0 UDP peers"), "{t}");
        }
        assert!(namespaces_of(pid).is_empty(), "{:?}", namespaces_of(pid));
    }
    drop(target);
    let free = common::free_port().to_string();
    let (pid, o) = netem(&[
        "--probe",
        "0",
        "--forward",
        &free,
        "--",
        env!("CARGO_BIN_EXE_overload"),
        "run",
        &format!("http://{{stack}}:{free}/"),
        "-n",
        "3",
        "-c",
        "1",
        "--connect-timeout",
        "2s",
    ]);
    let t = text(&o);
    assert!(t.contains("refused by 127.0.0.1"), "{t}");
    assert!(
        !t.contains(&format!("(0 refused by 127.0.0.1:{free})")),
        "nothing counted as refused: {t}"
    );
    assert!(namespaces_of(pid).is_empty(), "{:?}", namespaces_of(pid));
}

fn cleanup_removes_only_dead_runs_namespaces() {
    let _paths = planting_leftovers();
    // A pid that no longer runs, and one that does (this test's).
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let live = std::process::id();
    let dead_ns = format!("ovl-{dead}-load");
    let live_ns = format!("ovl-{live}-stack");
    for n in [&dead_ns, &live_ns] {
        assert!(Command::new("ip")
            .args(["netns", "add", n])
            .status()
            .unwrap()
            .success());
    }
    let o = output_within(bin().args(["lab", "netem", "--cleanup"]), LIMIT);
    let t = text(&o);
    let _ = Command::new("ip").args(["netns", "del", &live_ns]).status();
    assert!(o.status.success(), "{t}");
    assert!(t.contains(&dead_ns), "{t}");
    assert!(
        !t.contains(&live_ns),
        "a live run's namespace was removed: {t}"
    );
    assert!(namespaces_of(dead).is_empty());
}

fn bad_values_are_one_line_usage_errors() {
    for (args, what) in [
        (&["--loss", "120%"][..], "120%"),
        (&["--delay", "-1"][..], "-1"),
        (&["--delay", "10ms", "--jitter", "20ms"][..], "--jitter"),
    ] {
        let o = output_within(
            bin().args(["lab", "netem"]).args(args).args(["--", "true"]),
            LIMIT,
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(what), "{args:?}: {err}");
    }
}

/// `overload experiment FILE --quick --out OUT` with this build's `overload` first in PATH
/// (the rows' setup commands start it); its pid, status and output.
fn experiment_quick(file: &str, out: &std::path::Path) -> (u32, bool, String) {
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_overload"))
        .parent()
        .unwrap();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let (pid, o) = common::output_within_pid(
        bin()
            .args(["experiment", file, "--quick", "--out"])
            .arg(out)
            .env("PATH", path),
        Duration::from_secs(300),
    );
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    (pid, o.status.success(), text)
}

/// The first step of a run folder's steps.jsonl.
fn first_step(run: &std::path::Path) -> serde_json::Value {
    let steps = std::fs::read_to_string(run.join("steps.jsonl"))
        .unwrap_or_else(|e| panic!("{}: {e}", run.display()));
    let line = steps.lines().next().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{}: {e}", run.display()))
}

/// experiments/protocols.toml in `--quick` (about a minute): every row (3 protocols × 4
/// paths × resumption on/off, and the Alt-Svc row) runs across its path, answered, and the
/// namespaces go. The Alt-Svc row speaks HTTP/3 because the target announced it.
fn protocols_experiment_quick_runs_every_row_across_the_path() {
    let _paths = making_paths();
    let dir = common::scratch();
    let out = dir.path().join("protocols");
    let file = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/protocols.toml");
    let (pid, ok, text) = experiment_quick(file, &out);
    let o = (ok, text);
    assert!(o.0, "{}", o.1);
    assert!(
        o.1.contains("network: bridge") || o.1.contains("network: netem"),
        "{}",
        o.1
    );
    // Under the bridge, each run says what it did to the traffic (overflows included).
    if o.1.contains("network: bridge") {
        assert!(o.1.contains("network: bridge: toward the stack"), "{}", o.1);
    }
    let mut rows = 0;
    for proto in ["h1", "h2", "h3"] {
        for net in ["rtt0-loss0", "rtt0-loss1", "rtt50-loss0", "rtt50-loss1"] {
            for res in ["resumed", "full"] {
                let run = out.join(format!("{proto}-{net}-{res}-r1"));
                let steps = std::fs::read_to_string(run.join("steps.jsonl"))
                    .unwrap_or_else(|e| panic!("{}: {e}", run.display()));
                assert!(steps.contains("\"responses\""), "{}", run.display());
                rows += 1;
            }
        }
    }
    assert_eq!(rows, 24);
    let alt = first_step(&out.join("altsvc-rtt50-loss0-r1"));
    assert_eq!(alt["protocol"]["version"], "3", "{alt}");
    assert_eq!(alt["protocol"]["chosen_by"], "alt-svc", "{alt}");
    assert!(common::f(&alt, "responses") > 0.0, "{alt}");
    assert!(
        namespaces_of(pid).is_empty(),
        "left: {:?}",
        namespaces_of(pid)
    );
}

/// experiments/protocols-capacity.toml in `--quick` (about a minute): every row's capacity
/// search runs across its path (open loop, its rates probed) to a verdict, and the
/// namespaces go.
fn protocols_capacity_experiment_quick_searches_every_row() {
    let _paths = making_paths();
    let dir = common::scratch();
    let out = dir.path().join("capacity");
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/experiments/protocols-capacity.toml"
    );
    let (pid, ok, text) = experiment_quick(file, &out);
    assert!(ok, "{text}");
    let mut rows = 0;
    for proto in ["h1", "h2", "h3"] {
        for net in ["rtt0-loss0", "rtt0-loss1", "rtt50-loss0", "rtt50-loss1"] {
            for res in ["resumed", "full"] {
                let run = out.join(format!("cap-{proto}-{net}-{res}-r1"));
                let step = first_step(&run);
                assert_eq!(step["mode"], "open", "{}", run.display());
                assert_eq!(common::f(&step, "offered_rate"), 200.0, "{}", run.display());
                assert!(common::f(&step, "responses") > 0.0, "{}", run.display());
                let meta: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap())
                        .unwrap();
                assert_eq!(meta["kind"], "capacity", "{}", run.display());
                assert_eq!(meta["complete"], true, "{}", run.display());
                rows += 1;
            }
        }
    }
    assert_eq!(rows, 24);
    assert!(
        namespaces_of(pid).is_empty(),
        "left: {:?}",
        namespaces_of(pid)
    );
}

/// Run as nobody (setpriv drops root): one line, exit 2, nothing made.
fn without_root_it_is_a_one_line_usage_error() {
    for args in [&["--", "true"][..], &["--cleanup"][..]] {
        let o = output_within(
            Command::new("setpriv")
                .args(["--reuid", "65534", "--regid", "65534", "--clear-groups"])
                .arg(env!("CARGO_BIN_EXE_overload"))
                .args(["lab", "netem"])
                .args(args),
            LIMIT,
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("needs root"), "{err}");
    }
}

/// A run killed with SIGKILL leaves its namespaces; the next path (a `lab netem` or an
/// experiment's run) removes them first, and says so.
fn a_new_path_removes_what_killed_runs_left() {
    let _paths = planting_leftovers();
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let left = format!("ovl-{dead}-path");
    assert!(Command::new("ip")
        .args(["netns", "add", &left])
        .status()
        .unwrap()
        .success());
    let (_, o) = netem(&["--probe", "0", "--", "true"]);
    let t = text(&o);
    let still = !namespaces_of(dead).is_empty();
    let _ = Command::new("ip").args(["netns", "del", &left]).status();
    assert!(o.status.success(), "{t}");
    assert!(!still, "{left} left: {t}");
    assert!(t.contains(&format!("removed {left}")), "{t}");
}
