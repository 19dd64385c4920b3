//! Hostile cases: hostile input files (feeder, access log, HAR, wsesslog, scenario).
use crate::common::harness::trial;
use crate::common::{run_measured, scratch, Measured, Target};
use libtest_mimic::Trial;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

pub fn trials() -> Vec<Trial> {
    vec![
        trial(
            "feeder_memory_is_a_small_multiple_of_its_size",
            &[],
            feeder_memory,
        ),
        trial(
            "access_log_memory_is_a_small_multiple_of_its_size",
            &[],
            access_log_memory,
        ),
        trial(
            "access_log_of_distinct_requests_costs_a_small_multiple_of_its_size",
            &[],
            distinct_log_memory,
        ),
        trial(
            "har_memory_is_a_small_multiple_of_its_size",
            &[],
            har_memory,
        ),
        trial(
            "replay_memory_is_a_small_multiple_of_the_log_size",
            &[],
            replay_memory,
        ),
        trial(
            "wsesslog_sends_nothing_to_a_foreign_origin",
            &[],
            wsesslog_foreign_origin,
        ),
        trial(
            "har_sends_nothing_to_a_foreign_origin",
            &[],
            har_foreign_origin,
        ),
        trial(
            "replay_above_the_rate_cap_is_refused_up_front",
            &[],
            replay_above_cap,
        ),
        trial(
            "replay_speed_errors_speak_of_a_speed",
            &[],
            replay_speed_errors,
        ),
        trial(
            "access_log_of_unsafe_methods_names_the_flag",
            &[],
            unsafe_only_log,
        ),
        trial("feeder_of_100k_columns_starts_quickly", &[], wide_feeder),
    ]
}

/// Bound on each load (a few seconds of run plus the file's parsing in the dev profile).
const LIMIT: Duration = Duration::from_secs(60);
/// The input sizes these tests generate: big enough that a per-row allocation shows, small
/// enough to stay fast on a loaded machine.
const BIG: usize = 4 << 20;

/// A short closed-loop run against `target` with `input_args`: long enough (1 s of load) for
/// its peak RSS to be sampled after the file was loaded.
fn run_with(target: &Target, input_args: &[&str]) -> Measured {
    let mut args = vec!["run", &target.url, "--users", "1", "-d", "1s"];
    args.extend_from_slice(input_args);
    let m = run_measured(None, &args, false, LIMIT);
    assert!(
        m.code.is_some_and(|c| c <= 1) && !m.stderr.contains("panicked"),
        "{args:?}: {:?} {}",
        m.code,
        m.stderr
    );
    m
}

/// Asserts that the run with the big file used at most `multiple` × its size more RSS than
/// the run with the small one (the binary's own baseline, measured here, not guessed).
fn assert_within(what: &str, small: &Measured, big: &Measured, size: usize, multiple: u64) {
    let extra_kb = big.max_rss_kb.saturating_sub(small.max_rss_kb);
    let bound_kb = multiple * size as u64 / 1024;
    eprintln!(
        "{what}: {} kB file, peak RSS {} kB vs {} kB baseline: {extra_kb} kB more (bound {bound_kb} kB)",
        size / 1024,
        big.max_rss_kb,
        small.max_rss_kb
    );
    assert!(
        extra_kb <= bound_kb,
        "{what}: a {} kB file cost {extra_kb} kB of RSS, more than {multiple}× its size",
        size / 1024
    );
}

/// A CSV of one-byte cells, the worst case for a per-cell allocation.
fn write_feeder(dir: &Path, name: &str, bytes: usize) -> usize {
    let mut s = String::from("a,b,c,d,e,f,g,h\n");
    while s.len() < bytes {
        s.push_str("1,2,3,4,5,6,7,8\n");
    }
    std::fs::write(dir.join(name), &s).unwrap();
    std::fs::write(
        dir.join(format!("{name}.toml")),
        format!("[feeder]\nfile = \"{name}\"\n[[request]]\nurl = \"/u/${{a}}${{h}}\"\n"),
    )
    .unwrap();
    s.len()
}

fn feeder_memory() {
    let t = Target::start(&[]);
    let dir = scratch();
    write_feeder(dir.path(), "small.csv", 100);
    let size = write_feeder(dir.path(), "big.csv", BIG);
    let scenario = |n: &str| dir.path().join(n).to_str().unwrap().to_string();
    let small = run_with(&t, &["--scenario", &scenario("small.csv.toml")]);
    let big = run_with(&t, &["--scenario", &scenario("big.csv.toml")]);
    assert_within("feeder", &small, &big, size, 6);
}

/// An access log of many lines asking for 100 URLs: what it costs is the reading, not the
/// distinct requests (each of which the engine renders ahead, at about 1.5 kB apiece).
fn write_log(path: &Path, bytes: usize) -> usize {
    let mut s = String::new();
    let mut i = 0u64;
    while s.len() < bytes {
        let _ = writeln!(
            s,
            "10.0.0.1 - - [10/Oct/2000:13:55:{:02} -0700] \"GET /p/{} HTTP/1.1\" 200 12",
            i % 60,
            i % 100
        );
        i += 1;
    }
    std::fs::write(path, &s).unwrap();
    s.len()
}

fn access_log_memory() {
    let t = Target::start(&[]);
    let dir = scratch();
    let (small_log, big_log) = (dir.path().join("small.log"), dir.path().join("big.log"));
    // Its 100 requests in the baseline too: each name's statistics are the run's, not the file's.
    write_log(&small_log, 8 << 10);
    let size = write_log(&big_log, BIG);
    let small = run_with(&t, &["--access-log", small_log.to_str().unwrap()]);
    let big = run_with(&t, &["--access-log", big_log.to_str().unwrap()]);
    assert_within("access log", &small, &big, size, 1);
}

/// An access log whose every line asks for another URL: the worst case for what the run
/// keeps per distinct request (the shortest lines for the most requests).
fn write_distinct_log(path: &Path, bytes: usize) -> usize {
    let mut s = String::new();
    let mut i = 0u64;
    while s.len() < bytes {
        let _ = writeln!(
            s,
            "10.0.0.1 - - [10/Oct/2000:13:55:{:02} -0700] \"GET /p/{i} HTTP/1.1\" 200 12",
            i % 60
        );
        i += 1;
    }
    std::fs::write(path, &s).unwrap();
    s.len()
}

fn distinct_log_memory() {
    let t = Target::start(&[]);
    let dir = scratch();
    let (small_log, big_log) = (dir.path().join("small.log"), dir.path().join("big.log"));
    // Past the 200 names kept in the baseline too: their statistics are the run's.
    write_distinct_log(&small_log, 16 << 10);
    let size = write_distinct_log(&big_log, BIG);
    let small = run_with(&t, &["--access-log", small_log.to_str().unwrap()]);
    let big = run_with(&t, &["--access-log", big_log.to_str().unwrap()]);
    assert_within("access log of distinct requests", &small, &big, size, 6);
    // Connections closed after 2 calls: both renderings of each request are kept.
    let args = |log: &Path| {
        [
            "--access-log",
            log.to_str().unwrap(),
            "--calls-per-connection",
            "2",
        ]
        .map(str::to_string)
    };
    let (a, b) = (args(&small_log), args(&big_log));
    let small = run_with(&t, &a.iter().map(String::as_str).collect::<Vec<_>>());
    let big = run_with(&t, &b.iter().map(String::as_str).collect::<Vec<_>>());
    assert_within(
        "access log of distinct requests, closing connections",
        &small,
        &big,
        size,
        6,
    );
}

/// A HAR of small entries, each with a few headers: what a recording costs per entry, with
/// little of the text (response bodies) that is skipped.
fn write_har(path: &Path, bytes: usize) -> usize {
    let mut s = String::from("{\"log\": {\"version\": \"1.2\", \"entries\": [\n");
    let mut i = 0u64;
    while s.len() < bytes || i == 0 {
        if i > 0 {
            s.push_str(",\n");
        }
        let _ = write!(
            s,
            r#"{{"startedDateTime": "2024-03-05T10:11:12.345Z", "time": 5, "request": {{"method": "GET", "url": "http://shop.example/p/{i}", "httpVersion": "HTTP/1.1", "headers": [{{"name": "Accept", "value": "text/html"}}, {{"name": "X-Id", "value": "{i}"}}], "cookies": [], "queryString": [], "headersSize": -1, "bodySize": 0}}, "response": {{"status": 200, "content": {{"mimeType": "text/html", "text": "<p>item {i}</p>"}}}}, "timings": {{"send": 0, "wait": 5, "receive": 0}}}}"#
        );
        i += 1;
    }
    s.push_str("\n]}}\n");
    std::fs::write(path, &s).unwrap();
    s.len()
}

fn har_memory() {
    let t = Target::start(&[]);
    let dir = scratch();
    let (small_har, big_har) = (dir.path().join("small.har"), dir.path().join("big.har"));
    write_har(&small_har, 100);
    let size = write_har(&big_har, BIG);
    let small = run_with(&t, &["--har", small_har.to_str().unwrap()]);
    let big = run_with(&t, &["--har", big_har.to_str().unwrap()]);
    assert_within("HAR", &small, &big, size, 6);
}

fn replay_memory() {
    let t = Target::start(&[]);
    let dir = scratch();
    let (small_log, big_log) = (dir.path().join("small.log"), dir.path().join("big.log"));
    write_log(&small_log, 100);
    let size = write_log(&big_log, BIG);
    // The log spans a minute: 60 × faster is about a second of replay, cut at 1 s anyway.
    let replay = |log: &Path| {
        let args = [
            "run",
            &t.url,
            "--access-log",
            log.to_str().unwrap(),
            "--replay-speed",
            "60",
            "-d",
            "1s",
            "--connections",
            "50",
        ];
        let m = run_measured(None, &args, false, LIMIT);
        assert!(
            m.code.is_some_and(|c| c <= 1) && !m.stderr.contains("panicked"),
            "{:?} {}",
            m.code,
            m.stderr
        );
        m
    };
    let small = replay(&small_log);
    let big = replay(&big_log);
    assert_within("replayed access log", &small, &big, size, 3);
}

/// A listener on 127.0.0.2 (another loopback address than the target's) that counts the
/// connections it accepts, from a thread, until the returned flag is set.
struct Foreign {
    port: u16,
    accepted: std::sync::Arc<std::sync::atomic::AtomicU64>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Foreign {
    fn start() -> Foreign {
        use std::sync::atomic::Ordering;
        let l = std::net::TcpListener::bind("127.0.0.2:0").expect("bind 127.0.0.2");
        l.set_nonblocking(true).unwrap();
        let port = l.local_addr().unwrap().port();
        let accepted = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (a, s) = (accepted.clone(), stop.clone());
        std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                match l.accept() {
                    Ok(_) => {
                        a.fetch_add(1, Ordering::Relaxed);
                    }
                    // Polling a non-blocking listener: the pause is the poll's period.
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Foreign {
            port,
            accepted,
            stop,
        }
    }

    fn accepted(&self) -> u64 {
        self.accepted.load(std::sync::atomic::Ordering::Relaxed)
    }
}

impl Drop for Foreign {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

fn wsesslog_foreign_origin() {
    let t = Target::start(&[]);
    let foreign = Foreign::start();
    let dir = scratch();
    let log = dir.path().join("s.wsesslog");
    std::fs::write(
        &log,
        format!(
            "/a\nhttp://127.0.0.2:{p}/x\n    http://127.0.0.2:{p}/img.png\n/b\n\nhttp://127.0.0.2:{p}/y\n",
            p = foreign.port
        ),
    )
    .unwrap();
    let m = run_measured(
        None,
        &[
            "run",
            &t.url,
            "--wsesslog",
            log.to_str().unwrap(),
            "--users",
            "2",
            "-d",
            "1s",
        ],
        false,
        LIMIT,
    );
    m.assert_clean_exit(0, "wsesslog run");
    assert_eq!(foreign.accepted(), 0, "127.0.0.2 was reached: {}", m.stderr);
    assert!(
        m.stderr
            .contains(&format!("http://127.0.0.2:{} left out", foreign.port)),
        "the note names the origin left out: {}",
        m.stderr
    );
}

fn har_foreign_origin() {
    let t = Target::start(&[]);
    let foreign = Foreign::start();
    let dir = scratch();
    let har = dir.path().join("r.har");
    let entry = |url: String| {
        format!(
            r#"{{"startedDateTime": "2024-03-05T10:11:12.345Z", "request": {{"method": "GET", "url": "{url}"}}}}"#
        )
    };
    std::fs::write(
        &har,
        format!(
            "{{\"log\": {{\"entries\": [{}, {}, {}]}}}}",
            entry("http://shop.example/".into()),
            entry(format!("http://127.0.0.2:{}/beacon", foreign.port)),
            entry("http://shop.example/next".into()),
        ),
    )
    .unwrap();
    let m = run_measured(
        None,
        &[
            "run",
            &t.url,
            "--har",
            har.to_str().unwrap(),
            "--users",
            "2",
            "-d",
            "1s",
        ],
        false,
        LIMIT,
    );
    m.assert_clean_exit(0, "HAR run");
    assert_eq!(foreign.accepted(), 0, "127.0.0.2 was reached: {}", m.stderr);
}

fn replay_above_cap() {
    let dir = scratch();
    let log = dir.path().join("burst.log");
    // 100k lines in one second: at 1000 × the log's speed, 100M requests/s.
    let line = "10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"GET /p HTTP/1.1\" 200 12\n";
    std::fs::write(&log, line.repeat(100_000)).unwrap();
    let url = format!("http://127.0.0.1:{}/", crate::common::free_port());
    let m = run_measured(
        None,
        &[
            "run",
            &url,
            "--access-log",
            log.to_str().unwrap(),
            "--replay-speed",
            "1000",
        ],
        false,
        LIMIT,
    );
    m.assert_clean_exit(2, "replay above the cap");
    let err = m.stderr.trim();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(
        err.contains("--replay-speed 1000") && err.contains("100M") && err.contains("10M"),
        "names the speed, the rate and the cap: {err}"
    );
}

fn replay_speed_errors() {
    let url = format!("http://127.0.0.1:{}/", crate::common::free_port());
    for bad in ["0", "abc", "1e400"] {
        let m = run_measured(
            None,
            &[
                "run",
                &url,
                "--access-log",
                "/nonexistent.log",
                "--replay-speed",
                bad,
            ],
            false,
            LIMIT,
        );
        m.assert_clean_exit(2, "bad --replay-speed");
        assert!(
            !m.stderr.contains("req/s") && !m.stderr.contains("requests per second"),
            "--replay-speed is a factor, not a rate: {}",
            m.stderr
        );
        assert!(m.stderr.contains("speed"), "{}", m.stderr);
    }
}

fn unsafe_only_log() {
    let dir = scratch();
    let log = dir.path().join("post.log");
    let line = "10.0.0.1 - - [10/Oct/2000:13:55:36 -0700] \"POST /p HTTP/1.1\" 200 12\n";
    std::fs::write(&log, line.repeat(10)).unwrap();
    let url = format!("http://127.0.0.1:{}/", crate::common::free_port());
    let m = run_measured(
        None,
        &[
            "run",
            &url,
            "--access-log",
            log.to_str().unwrap(),
            "-n",
            "1",
        ],
        false,
        LIMIT,
    );
    m.assert_clean_exit(2, "all-POST log");
    assert!(
        !m.stderr.contains("no line in combined"),
        "the lines are in combined format: {}",
        m.stderr
    );
    assert!(
        m.stderr.contains("--allow-unsafe-methods") && m.stderr.contains("10 lines"),
        "{}",
        m.stderr
    );
}

fn wide_feeder() {
    let t = Target::start(&[]);
    let dir = scratch();
    let cols: Vec<String> = (0..100_000).map(|i| format!("c{i}")).collect();
    let row: Vec<&str> = vec!["x"; cols.len()];
    std::fs::write(
        dir.path().join("wide.csv"),
        format!("{}\n{}\n", cols.join(","), row.join(",")),
    )
    .unwrap();
    let toml = dir.path().join("s.toml");
    std::fs::write(
        &toml,
        "[feeder]\nfile = \"wide.csv\"\n[[request]]\nurl = \"/u/${c99999}\"\n",
    )
    .unwrap();
    let m = run_measured(
        None,
        &[
            "run",
            &t.url,
            "--scenario",
            toml.to_str().unwrap(),
            "--users",
            "1",
            "-n",
            "5",
        ],
        false,
        LIMIT,
    );
    m.assert_clean_exit(0, "wide feeder");
    // 100k columns: quadratic work would take minutes here; the run itself is a blink.
    assert!(
        m.elapsed < Duration::from_secs(10),
        "took {:?} to run 5 requests",
        m.elapsed
    );
}
