//! Watching a run: colour on a pseudo-terminal (NO_COLOR respected; needs util-linux `script`,
//! ignored with the reason where it is missing, see tests/common/harness.rs), and the report
//! page that `--live-port` serves while a sweep goes on.
use crate::common;
use crate::common::harness::{self, Need};
use crate::common::{output_within, Target};
use std::time::Duration;

const LOAD: Duration = Duration::from_secs(60);

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

pub fn trials() -> Vec<libtest_mimic::Trial> {
    vec![
        harness::trial(
            "colour_on_a_terminal_unless_no_color",
            &[Need::Script],
            colour_on_a_terminal_unless_no_color,
        ),
        harness::trial(
            "live_port_serves_the_report_as_the_sweep_goes",
            &[],
            live_port_serves_the_report_as_the_sweep_goes,
        ),
    ]
}

/// One HTTP/1.1 request to the live page; returns the status code and the body.
fn http(method: &str, addr: &str, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(addr).expect("connect to the live page");
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(c, "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut resp = String::new();
    c.read_to_string(&mut resp).unwrap();
    let code = resp
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = resp.split_once("\r\n\r\n").map_or("", |x| x.1).to_string();
    (code, body)
}

/// `sweep --live-port 0`: the page is at a secret path printed on stderr, answers only GET
/// there, reloads every second and shows the steps as they are stored; it is gone when the
/// sweep ends. Before its first step is stored, the page already charts that step's seconds.
fn live_port_serves_the_report_as_the_sweep_goes() {
    use std::io::BufReader;
    let t = Target::start(&["--threads", "1"]);
    let d = common::scratch();
    let mut child = common::bin()
        .args(["sweep", "--rates", "50,100,150", "--step", "6s"])
        .args([
            "--warmup",
            "0s",
            "--rest",
            "0s",
            "--live-port",
            "0",
            "--out",
        ])
        .arg(d.path().join("run"))
        .arg(&t.url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let url = common::live_url(&mut err);
    std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::sink()));
    let rest = url.strip_prefix("http://").unwrap();
    let (addr, path) = rest.split_at(rest.find('/').unwrap());
    assert!(addr.starts_with("127.0.0.1:"), "loopback only: {url}");
    assert_eq!(path.len(), 34, "a 128-bit token in the path: {path}");
    let (code, body) = http("GET", addr, path);
    assert_eq!(code, 200);
    assert!(
        body.contains("<meta http-equiv=\"refresh\" content=\"1\"/>"),
        "{body}"
    );
    assert_eq!(http("GET", addr, "/").0, 404, "no page without the token");
    assert_eq!(http("GET", addr, &path[..20]).0, 404);
    assert_eq!(http("POST", addr, path).0, 405);
    // The step in progress is charted second by second before it is stored.
    common::wait_until(
        "the page charts the first step's seconds before it is stored",
        Duration::from_secs(30),
        || {
            let b = http("GET", addr, path).1;
            assert!(
                !b.contains(" · 2 steps · "),
                "the first step's seconds were never shown before it was stored"
            );
            b.contains(" · 0 steps · ") && !b.contains("no per-second data")
        },
    );
    // The figures change as steps are stored. One stored step is drawn as a one-run page;
    // from two on, as a sweep's: the third step leaves 6 s to see it while the page is up (a
    // two-step sweep left only the moment between its last step and its end: CI lost that race).
    common::wait_until(
        "the page shows two stored steps",
        Duration::from_secs(30),
        || {
            let b = http("GET", addr, path).1;
            b.contains(" · 2 steps · ")
        },
    );
    assert!(common::wait_within(&mut child, LOAD).is_some_and(|s| s.success()));
    assert!(
        std::net::TcpStream::connect(addr).is_err(),
        "still served after the sweep"
    );
}

/// On a terminal (util-linux `script` gives the run a pseudo-terminal) the summary is coloured;
/// NO_COLOR turns it off.
fn colour_on_a_terminal_unless_no_color() {
    let t = Target::start(&["--threads", "1"]);
    let exe = env!("CARGO_BIN_EXE_overload");
    let cmd = format!("{exe} run -n 50 -c 2 -q --slo p99\\<5s {}", t.url);
    let under_tty = |no_color: bool| {
        let mut c = std::process::Command::new("script");
        c.args(["-qec", &cmd, "/dev/null"]).env("TERM", "xterm");
        if no_color {
            c.env("NO_COLOR", "1");
        } else {
            c.env_remove("NO_COLOR");
        }
        let out = output_within(&mut c, LOAD);
        assert!(out.status.success(), "{}", text(&out.stdout));
        text(&out.stdout)
    };
    let coloured = under_tty(false);
    assert!(coloured.contains("\x1b[32m✓\x1b[0m"), "{coloured:?}");
    let plain = under_tty(true);
    assert!(
        plain.contains('✓') && !plain.contains("\x1b[3"),
        "{plain:?}"
    );
}
