//! Bad input, for every command: one line on stderr naming the input, exit code 2, no panic,
//! and nothing run. clap's own errors (unknown flag, missing value) are one line too, while
//! --help and --version print as clap renders them.
use crate::common;
use crate::common::{bin, output_within, scratch};
use std::process::Output;
use std::time::{Duration, Instant};

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        run_rejects_bad_values,
        run_rejects_bad_files,
        run_rejects_framing_headers_and_endless_bodies,
        target_rejects_bad_values,
        lab_rejects_bad_values,
        help_and_version_are_clap_output
    ]
}

fn run(args: &[&str]) -> Output {
    let start = Instant::now();
    let out = output_within(bin().args(args), common::QUICK);
    // Refused before any load: under the 10 s a default run would take.
    assert!(start.elapsed() < Duration::from_secs(8), "{args:?} ran");
    out
}

/// Exit 2, one line `overload: ...` containing `names`.
fn assert_usage(args: &[&str], names: &str) {
    let out = run(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(err.starts_with("overload: "), "{args:?}: {err}");
    assert!(err.contains(names), "{args:?}: {err} should name {names}");
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?}: stdout {:?}", out.stdout);
}

fn run_rejects_bad_values() {
    let u = "http://127.0.0.1:9/";
    let table: &[(&[&str], &str)] = &[
        // durations
        (&["run", u, "--duration", "10x"], "--duration"),
        (&["run", u, "--duration", "0s"], "--duration"),
        (&["run", u, "--duration", ""], "--duration"),
        (&["run", u, "--warmup", "soon"], "--warmup"),
        (&["run", u, "--timeout", "0"], "--timeout"),
        (&["run", u, "--timeout", "1e9"], "--timeout"),
        (&["run", u, "--connect-timeout", "0ms"], "--connect-timeout"),
        // rates
        (&["run", u, "--rate", "abc"], "--rate"),
        (&["run", u, "--rate", "0"], "--rate"),
        (&["run", u, "--rate", "-5"], "-5"),
        (&["run", u, "--rate", "nan"], "--rate"),
        (&["run", u, "--rate", "inf"], "--rate"),
        (&["run", u, "--rate", "20M"], "--rate"),
        // ranges and counts
        (&["run", u, "--think", "1s..10ms"], "--think"),
        (&["run", u, "--think", "1s.."], "--think"),
        (&["run", u, "--rate", "10", "--think", "1s"], "--think"),
        (&["run", u, "--users", "0"], "--users"),
        (&["run", u, "--users", "2000000"], "--users"),
        (&["run", u, "--users", "many"], "--users"),
        (
            &["run", u, "--rate", "10", "--connections", "0"],
            "--connections",
        ),
        (
            &["run", u, "--rate", "10", "--connections", "99999999999"],
            "--connections",
        ),
        (&["run", u, "--requests", "0"], "--requests"),
        (&["run", u, "--threads", "0"], "--threads"),
        (&["run", u, "--threads", "5000"], "--threads"),
        (
            &["run", u, "--calls-per-connection", "0"],
            "--calls-per-connection",
        ),
        (
            &["run", u, "--no-keep-alive", "--calls-per-connection", "5"],
            "--no-keep-alive",
        ),
        (&["run", u, "--seed", "-1"], "-1"),
        (&["run", u, "--arrival", "bursty"], "--arrival"),
        (&["run", u, "--pick", "best"], "--pick"),
        (&["run", u, "--rate", "10", "--users", "5"], "--users"),
        // request
        (&["run", u, "-X", "GE T"], "-X"),
        (&["run", u, "-H", "no colon"], "-H"),
        (
            &["run", u, "--body", "@/nonexistent/body"],
            "/nonexistent/body",
        ),
        // URLs and hosts
        (&["run"], "no URL"),
        (&["run", "ftp://127.0.0.1/"], "ftp://127.0.0.1/"),
        (&["run", "http://127.0.0.1:99999/"], "99999"),
        (&["run", "http://:80/"], "http://:80/"),
        (&["run", "not a url"], "not a url"),
        (
            &["run", "http://no-such-host.invalid/"],
            "no-such-host.invalid",
        ),
        // files
        (
            &["run", "--urls", "/nonexistent/urls.txt"],
            "/nonexistent/urls.txt",
        ),
        (&["run", u, "--json", "/nonexistent/dir/out.json"], "--json"),
        (&["run", u, "--json", "/proc/out.json"], "--json"),
        // clap's own
        (&["run", u, "--bogus"], "--bogus"),
        (&["run", u, "--durtion", "1s"], "--duration"),
        (&["run", u, "--rate"], "--rate"),
        (&["rn"], "rn"),
    ];
    for (args, names) in table {
        assert_usage(args, names);
    }
}

fn run_rejects_bad_files() {
    let scratch = scratch();
    let d = scratch.path();
    let urls = d.join("urls.txt");
    std::fs::write(&urls, "# comment\nhttp://127.0.0.1:9/\n\nftp://nope/\n").unwrap();
    assert_usage(&["run", "--urls", urls.to_str().unwrap()], "urls.txt:4");
    std::fs::write(&urls, "http://127.0.0.1:9/ BR3W x\n").unwrap();
    assert_usage(&["run", "--urls", urls.to_str().unwrap()], "urls.txt:1");
    std::fs::write(&urls, "http://127.0.0.1:9/ POST <missing-body.txt\n").unwrap();
    assert_usage(
        &["run", "--urls", urls.to_str().unwrap()],
        "missing-body.txt",
    );
    std::fs::write(&urls, "# only comments\n\n").unwrap();
    assert_usage(&["run", "--urls", urls.to_str().unwrap()], "urls.txt");
    // A folder where a file is expected.
    assert_usage(&["run", "--urls", d.to_str().unwrap()], d.to_str().unwrap());
    assert_usage(
        &["run", "http://127.0.0.1:9/", "--json", d.to_str().unwrap()],
        "--json",
    );
}

/// `-H` cannot set the framing the engine owns nor smuggle control characters, and
/// `--body @FILE` is a regular file read with a cap: `/dev/zero` is refused, not read without end.
fn run_rejects_framing_headers_and_endless_bodies() {
    let u = "http://127.0.0.1:9/";
    for h in [
        "Content-Length: 5",
        "Transfer-Encoding: chunked",
        "Connection: close",
        "X-A: a\x1b[2Jb",
        "X-A: a\rX-B: c",
    ] {
        assert_usage(&["run", u, "-H", h], "-H");
    }
    assert_usage(&["run", u, "-H", "Host: a", "-H", "Host: b"], "Host");
    assert_usage(
        &["run", u, "--body", "@/dev/zero"],
        "a device, not a regular file",
    );
    // Nothing of an escape sequence reaches the terminal.
    let out = run(&["run", u, "-H", "X-A: \x1b[2J"]);
    assert!(
        !out.stderr.contains(&0x1b),
        "{:?}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn target_rejects_bad_values() {
    let table: &[(&[&str], &str)] = &[
        (&["target", "--listen", "nope"], "--listen"),
        (&["target", "--listen", "127.0.0.1:99999"], "--listen"),
        (&["target", "--listen", "10.1.2.3:80"], "--listen"),
        (&["target", "--workers", "0"], "--workers"),
        (&["target", "--workers", "-3"], "--workers"),
        (&["target", "--stall", "5s/1s"], "--stall"),
        (&["target", "--stall", "1s"], "--stall"),
        (&["target", "--stall", "1x/5s"], "--stall"),
        (&["target", "--threads", "0"], "--threads"),
        (&["target", "--threads", "100000"], "--threads"),
        (&["target", "--backlog", "0"], "--backlog"),
        (&["target", "--backlog", "99999999999"], "--backlog"),
        (&["target", "--fault", "explode"], "--fault"),
        (&["target", "--bogus"], "--bogus"),
        (&["target", "--listen"], "--listen"),
    ];
    for (args, names) in table {
        assert_usage(args, names);
    }
}

fn lab_rejects_bad_values() {
    // Only what is refused before anything is started (no stack needs to be installed).
    let scratch = scratch();
    let d = scratch.path();
    let prefix = d.to_str().unwrap();
    let table: &[(&[&str], &str)] = &[
        (&["lab", "up", "nosuch"], "nosuch"),
        (&["lab", "up"], "<STACK>"),
        (&["lab", "down"], "<STACK>"),
        (&["lab", "up", "nginx-fpm", "--pm", "eager"], "--pm"),
        (&["lab", "up", "nginx-fpm", "--port", "70000"], "--port"),
        (&["lab", "up", "nginx-fpm", "--port", "0"], "port"),
        (&["lab", "up", "nginx-fpm", "--timeout", "0s"], "--timeout"),
        (
            &["lab", "up", "nginx-fpm", "--timeout", "later"],
            "--timeout",
        ),
        (
            &["lab", "up", "apache-prefork", "--workers", "0"],
            "--workers",
        ),
        (&["lab", "up", "mariadb", "--opcache", "off"], "--opcache"),
        (
            &["lab", "up", "nginx-fpm", "--max-children", "many"],
            "--max-children",
        ),
        (&["lab", "--bogus", "status"], "--bogus"),
    ];
    for (args, names) in table {
        let mut a = vec!["lab", "--prefix", prefix];
        a.extend_from_slice(&args[1..]);
        assert_usage(&a, names);
    }
}

fn help_and_version_are_clap_output() {
    let out = run(&["--version"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("overload "));
    for args in [&["--help"][..], &["run", "--help"], &["target", "-h"]] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("Usage: overload"), "{args:?}: {text}");
        assert!(text.lines().count() > 5, "{args:?}");
    }
    // No subcommand: the help, on stderr, as a usage error.
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Usage: overload"));
}
