//! Generator host limits: out of file descriptors, out of local ports. The run counts
//! `fd-unavail` / `addr-unavail`, goes on with what it has, and says what to raise. Port
//! exhaustion needs a private network namespace (unshare --net): where there is none it shows
//! as ignored (tests/common/harness.rs). Also the listen queue as sock_diag reads it, ignored
//! where the kernel offers no sock_diag.
use crate::common;
use crate::common::harness::{self, Need};
use crate::common::{run_measured, Target};
use std::time::Duration;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    vec![
        harness::trial(
            "out_of_fds_open_loop_goes_on_with_the_connections_it_has",
            &[],
            out_of_fds_open_loop_goes_on_with_the_connections_it_has,
        ),
        harness::trial(
            "out_of_fds_closed_loop_stops_the_users_without_a_connection",
            &[],
            out_of_fds_closed_loop_stops_the_users_without_a_connection,
        ),
        harness::trial(
            "out_of_local_ports_counts_addr_unavail",
            &[Need::Root, Need::NetNamespace],
            out_of_local_ports_counts_addr_unavail,
        ),
        harness::trial(
            "sock_diag_listen_limit_matches_the_backlog",
            &[Need::SockDiag],
            sock_diag_listen_limit_matches_the_backlog,
        ),
    ]
}

/// The listen queue and its limit as sock_diag reads them (what `ss -lnt` shows as Recv-Q and
/// Send-Q), checked against /proc/net/tcp: the observer uses whichever the kernel offers.
fn sock_diag_listen_limit_matches_the_backlog() {
    use overload::observe::net::{diag_tally, listen_queue_limits, TcpTally};
    // std listens with backlog 128; the kernel caps it at somaxconn (what ss shows as
    // Send-Q). Two queued connects show up as the accept-queue length.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let somaxconn: u64 = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .map_or(4096, |t| t.trim().parse().unwrap_or(4096));
    assert_eq!(listen_queue_limits(port), Some((0, 128.min(somaxconn))));
    let _a = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let _b = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    assert_eq!(listen_queue_limits(port).map(|x| x.0), Some(2));
    let mut t = TcpTally::default();
    t.add(&std::fs::read_to_string("/proc/net/tcp").unwrap(), port);
    assert_eq!(t.listen_queue, Some(2), "/proc/net/tcp rx_queue agrees");
    assert_eq!(t.states[1], 4, "two connections, both ends");
    let (d, limit) = diag_tally(port).unwrap();
    assert_eq!(d, t, "sock_diag and /proc/net/tcp agree");
    assert_eq!(limit, Some(128.min(somaxconn)));
}

/// `sh -c 'ulimit ...; exec overload ARGS --json F -q'`: the engine raises the soft fd limit
/// to the hard one at start, so the hard limit is what is set.
fn run_with_fd_limit(limit: u32, args: &[&str]) -> common::Measured {
    let bin = env!("CARGO_BIN_EXE_overload");
    let script = format!("ulimit -Sn {limit} && ulimit -Hn {limit} && exec \"$0\" \"$@\"");
    let mut a = vec!["-c", &script, bin];
    a.extend_from_slice(args);
    run_measured(Some("sh"), &a, true, Duration::from_secs(40))
}

/// `code`: the exit status expected (1 where the plan was not carried out: arrivals without
/// an fd to connect on were never sent).
fn check_fd_run(m: &common::Measured, what: &str, code: i32) {
    m.assert_clean_exit(code, what);
    assert!(m.errors("fd-unavail") > 0, "{what}: {}", m.v);
    assert!(
        m.status("200") > 100,
        "{what}: the connections it had were used: {}",
        m.v
    );
    let warnings = m.v["warnings"].to_string();
    assert!(
        warnings.contains("ulimit -Hn") && warnings.contains("fd limit now 256"),
        "{what}: {warnings}"
    );
    assert!(m.stdout.contains("ulimit -Hn"), "{what}: {}", m.stdout);
}

fn out_of_fds_open_loop_goes_on_with_the_connections_it_has() {
    let t = Target::start(&["--threads", "1"]);
    let url = format!("{}/sleep?ms=2000", t.url);
    // 800/s for 2 s each wants 1600 connections; 256 fds allow ~250.
    let m = run_with_fd_limit(
        256,
        &[
            "run",
            &url,
            "--rate",
            "800",
            "--duration",
            "3s",
            "--timeout",
            "3s",
            "--threads",
            "4",
        ],
    );
    check_fd_run(&m, "open loop", 1);
    assert_eq!(m.v["plan_carried_out"], false, "{}", m.v);
    assert!(
        m.elapsed < Duration::from_secs(3 + 3 + 1),
        "{:?}",
        m.elapsed
    );
    assert!(m.v["unsent"].as_u64().unwrap() > 0, "{}", m.v);
    // Each arrival is sent, failed or unsent once: 800/s for 3 s.
    let planned = m.v["requests"].as_u64().unwrap() + m.v["unsent"].as_u64().unwrap();
    assert!(planned <= 2400, "{}", m.v);
}

fn out_of_fds_closed_loop_stops_the_users_without_a_connection() {
    let t = Target::start(&["--threads", "1"]);
    let url = format!("{}/sleep?ms=1000", t.url);
    // Several threads: each must get its epoll before the others' connections use up the
    // fds (the run once failed with "epoll: Too many open files").
    let m = run_with_fd_limit(
        256,
        &[
            "run",
            &url,
            "--threads",
            "4",
            "--users",
            "1000",
            "--duration",
            "3s",
            "--timeout",
            "3s",
        ],
    );
    check_fd_run(&m, "closed loop", 0);
    // Each user without an fd fails once and stops: no storm of errors.
    let fd_errors = m.errors("fd-unavail");
    assert!((700..=1000).contains(&fd_errors), "{}", m.v);
    assert!(
        m.v["warnings"].to_string().contains("users stopped"),
        "{}",
        m.v
    );
}

/// Port exhaustion in a private network namespace (ip_local_port_range is per namespace), so
/// the host is untouched: 101 local ports, a new connection per request, each held 200 ms, at
/// 2000/s: ~400 connections wanted at once. (With instant answers, whether ports run out
/// depends on which side closes first: the one that does keeps the TIME_WAIT.)
fn out_of_local_ports_counts_addr_unavail() {
    let bin = env!("CARGO_BIN_EXE_overload");
    let scratch = common::scratch();
    let dir = scratch.path();
    let json = dir.join("run.json");
    let banner = dir.join("target.out");
    // The target runs inside the namespace too, and is stopped before the shell exits.
    let script = r#"
        set -e
        ip link set lo up
        sysctl -qw net.ipv4.ip_local_port_range="40000 40100"
        sysctl -qw net.ipv4.tcp_tw_reuse=0
        "$0" target --listen 127.0.0.1:8080 --threads 1 > "$2" 2>&1 &
        T=$!
        i=0
        until grep -q listening "$2"; do i=$((i+1)); [ $i -lt 100 ] || exit 99; sleep 0.05; done
        rc=0
        "$0" run "http://127.0.0.1:8080/sleep?ms=200" --no-keep-alive --rate 2000 --duration 2s --threads 1 \
            --json "$1" || rc=$?
        kill $T
        exit $rc
    "#;
    let m = run_measured(
        Some("unshare"),
        &[
            "--net",
            "sh",
            "-c",
            script,
            bin,
            json.to_str().unwrap(),
            banner.to_str().unwrap(),
        ],
        false,
        Duration::from_secs(30),
    );
    m.assert_clean_exit(0, "port exhaustion");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(v["errors"]["addr-unavail"].as_u64().unwrap_or(0) > 0, "{v}");
    // Each arrival failed once: no resend of a failed one (2000/s for 2 s).
    assert!(v["requests"].as_u64().unwrap() <= 4000, "{v}");
    assert!(v["statuses"]["200"].as_u64().unwrap_or(0) > 50, "{v}");
    let warnings = v["warnings"].to_string();
    assert!(
        warnings.contains("ip_local_port_range") && warnings.contains("tcp_tw_reuse"),
        "{warnings}"
    );
    // The setting in force is shown beside the advice.
    assert!(warnings.contains("40000 40100"), "{warnings}");
    assert!(m.stdout.contains("addr-unavail"), "{}", m.stdout);
}
