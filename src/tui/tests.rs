//! The view's data model on scripted ticks and steps, drawn on ratatui's `TestBackend`: what
//! each panel shows, without a terminal.
use super::model::{Model, Setup, StepRow, HISTORY};
use super::term::{keys, Key};
use super::{key, view, Shared};
use crate::engine::{Arrival, Load};
use crate::liverun::progress::{SecondLatency, Tick};
use crate::observe::{FpmSample, GroupSample, HostSample, Sample, TcpSample};
use crate::runner::fake::{record, Shape};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

fn sweep_setup() -> Setup {
    Setup {
        command: "sweep",
        target: "GET http://127.0.0.1:8080/".into(),
        unit: "req/s",
        planned: Some(3),
        step_len: Some(Duration::from_secs(12)),
        per_step: Duration::from_secs(14),
        end_step_key: true,
        steer_keys: false,
    }
}

fn run_setup() -> Setup {
    Setup {
        command: "run",
        planned: None,
        end_step_key: false,
        steer_keys: false,
        ..sweep_setup()
    }
}

fn tick(secs: u64, rate: f64, errors: f64, in_flight: u64) -> Tick {
    Tick {
        elapsed: Duration::from_secs(secs),
        responses: (rate * secs as f64) as u64,
        errors: 0,
        in_flight,
        rate,
        error_rate: errors,
        cpu_pct: 12.0,
        latency: None,
    }
}

/// A tick whose newest closed second is `second`, with p99 `p99_ms` (p50 a tenth, p95 half).
fn tick_at(secs: u64, second: usize, p99_ms: f64) -> Tick {
    Tick {
        latency: Some(SecondLatency {
            second,
            p50_ms: p99_ms / 10.0,
            p95_ms: p99_ms / 2.0,
            p99_ms,
        }),
        ..tick(secs, 100.0, 0.0, 2)
    }
}

fn open(rate: f64) -> Load {
    Load::Open {
        rate,
        arrival: Arrival::Constant,
        max_connections: 100,
    }
}

/// The screen as text, one string per row.
fn screen(m: &Model) -> Vec<String> {
    screen_of(m, 120, 40)
}

/// The screen of `w`×`h` as text, one string per row.
fn screen_of(m: &Model, w: u16, h: u16) -> Vec<String> {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| view::draw(f, m)).unwrap();
    let buf = t.backend().buffer().clone();
    buf.content
        .chunks(buf.area.width as usize)
        .map(|row| row.iter().map(|c| c.symbol()).collect())
        .collect()
}

fn shows(rows: &[String], text: &str) -> bool {
    rows.iter().any(|r| r.contains(text))
}

/// A sweep of three steps, scripted: the header follows the step in progress, the table
/// fills as steps end, and the saturation mark appears once a step is flagged saturated —
/// not before.
#[test]
fn a_scripted_sweep_shows_its_steps_and_the_saturation_mark() {
    let mut m = Model::new(sweep_setup());
    let s = screen(&m);
    assert!(shows(&s, "starting"), "{s:#?}");
    for t in 1..=2 {
        m.tick(Some(0), 100.0, &tick(t, 100.0, 0.0, 2));
    }
    let s = screen(&m);
    assert!(
        shows(&s, "2 in flight · p50 - p95 - p99 - ·"),
        "none closed yet: {s:#?}"
    );
    m.tick(Some(0), 100.0, &tick_at(3, 2, 40.0));
    let s = screen(&m);
    assert!(shows(&s, "step 1/3 · 100 req/s · 3s of 12s"), "{s:#?}");
    // Two steps of 14 s to come, and 9 s left of this one.
    assert!(shows(&s, "sweep ETA ≤ 37s"), "{s:#?}");
    assert!(shows(
        &s,
        "now: 100/s achieved · 0 errors/s · 2 in flight · p50 4.00ms p95 20.00ms p99 40.00ms · gen CPU 12%"
    ), "{s:#?}");
    assert!(shows(&s, "p99 per second: 40.00ms"), "{s:#?}");
    assert!(!shows(&s, "≈"), "no estimate: the percentiles are measured");

    m.step_done(&record(0, &open(100.0), Shape::ok(100.0, 5.0), 10.0));
    let s = screen(&m);
    assert!(shows(&s, "step 1 done, resting"), "{s:#?}");
    assert!(m.saturation().is_none());

    m.tick(Some(1), 200.0, &tick(1, 150.0, 4.0, 40));
    assert!(!m.ending_step);
    let mut rec = record(1, &open(200.0), Shape::ok(150.0, 80.0), 10.0);
    let s = screen(&m);
    assert!(
        !shows(&s, "saturation at"),
        "no mark before the analysis finds it"
    );
    assert!(shows(&s, "errors/s: 4"), "{s:#?}");
    rec.flags.push("saturated".into());
    m.step_done(&rec);
    assert_eq!(m.saturation().map(|r| r.step), Some(1));
    let s = screen(&m);
    assert!(shows(&s, "throughput · saturation 200"), "{s:#?}");
    let row = s
        .iter()
        .find(|r| r.contains("◆ saturated"))
        .expect("the saturated step's row is marked");
    assert!(row.contains("│2 "), "{row}");
    assert!(row.contains("150"), "{row}");
    assert!(row.contains("80.00ms"), "{row}");
    assert!(shows(&s, "n  end this step, go on to the next"));
}

/// The charts keep the last HISTORY seconds; the percentiles shown are the newest closed
/// second's, and a tick without one (no response in it) shows none.
#[test]
fn seconds_are_kept_for_the_charts_with_the_last_seconds_percentiles() {
    let mut m = Model::new(sweep_setup());
    for t in 0..(HISTORY as u64 + 5) {
        let mut k = tick_at(t, t as usize, t as f64);
        k.rate = t as f64;
        m.tick(Some(0), 100.0, &k);
    }
    assert_eq!(m.seconds.len(), HISTORY);
    assert_eq!(m.seconds.front().unwrap().achieved, 5.0, "oldest dropped");
    let last = m.seconds.back().unwrap();
    assert_eq!(last.achieved, (HISTORY + 4) as f64);
    assert_eq!(last.latency.unwrap().p99_ms, (HISTORY + 4) as f64);
    assert_eq!(m.p99.len(), HISTORY, "the sparkline rolls too");
    assert_eq!(m.p99.front(), Some(&5.0));
    m.tick(Some(0), 100.0, &tick(200, 0.0, 0.0, 7));
    assert_eq!(m.seconds.back().unwrap().latency, None);
    assert!(shows(&screen(&m), "p50 - p95 - p99 -"));
}

/// The p99 sparkline has one point per closed second: a tick that reads the same second
/// again adds none, a skipped second (no response in it) is a zero, and a new step starts
/// from its own seconds.
#[test]
fn the_p99_sparkline_has_one_point_per_second() {
    let mut m = Model::new(sweep_setup());
    m.tick(Some(0), 100.0, &tick_at(2, 1, 10.0));
    m.tick(Some(0), 100.0, &tick_at(3, 1, 10.0));
    m.tick(Some(0), 100.0, &tick_at(4, 3, 30.0));
    assert_eq!(Vec::from(m.p99.clone()), [10.0, 0.0, 30.0]);
    // The next step's seconds count from its own start.
    m.tick(Some(1), 200.0, &tick_at(1, 0, 50.0));
    m.tick(Some(1), 200.0, &tick_at(2, 1, 60.0));
    assert_eq!(Vec::from(m.p99.clone()), [10.0, 0.0, 30.0, 50.0, 60.0]);
    let s = screen(&m);
    assert!(shows(&s, "p99 per second: 60.00ms"), "{s:#?}");
    assert!(shows(&s, "p50 6.00ms p95 30.00ms p99 60.00ms"), "{s:#?}");
}

/// A single run: no step table, no `n` key; the header counts the run's own time.
#[test]
fn a_single_run_shows_no_steps_and_no_end_step_key() {
    let mut m = Model::new(run_setup());
    m.tick(None, 300.0, &tick(2, 290.0, 0.0, 1));
    let s = screen(&m);
    assert!(shows(&s, "300 req/s · 2s of 12s"), "{s:#?}");
    assert!(!shows(&s, "run so far"), "{s:#?}");
    assert!(!shows(&s, "end this step"));
    assert!(shows(&s, "q  quit as Ctrl-C does"));
    assert_eq!(m.eta(), None);
}

/// A sweep of eight steps with the widest figures the cells take, at 80×24 (the terminal's
/// default), 100×30 and 120×40: every step shown has each of its figures whole (a token of its
/// own), the header's and the server's figures too; at 80 columns the throughput chart is
/// dropped for the table's room, at 100 it is there.
#[test]
fn every_figure_is_whole_at_80x24_panels_are_dropped_instead() {
    let mut m = Model::new(Setup {
        planned: Some(8),
        ..sweep_setup()
    });
    for i in 0..8 {
        m.steps.push(StepRow {
            step: i,
            offered: 1500.0 + i as f64,
            throughput: 98.5,
            ok_pct: 99.95,
            p50_ms: 0.193,
            p95_ms: 20.21,
            p99_ms: 2500.0,
            lag_p99_ms: 0.5,
            gen_cpu_pct: 87.0,
            flags: if i == 7 {
                vec!["saturated".into(), "errors".into()]
            } else {
                Vec::new()
            },
        });
    }
    m.server = vec![
        "local: host CPU 73% busy of 4 cores (softirq 5%), load 2.5".into(),
        "local: pool www: 8 of 8 workers busy, 12 waiting, and a long tail of words 4242".into(),
    ];
    m.tick(Some(8), 1600.0, &tick_at(3, 2, 20.21));
    let figures = [
        "98.5", "100.0%", "193µs", "20.21ms", "2500ms", "500µs", "87%",
    ];
    for (w, h) in [(80, 24), (100, 30), (120, 40)] {
        let s = screen_of(&m, w, h);
        let rows: Vec<&String> = s.iter().filter(|r| r.contains(" 98.5 ")).collect();
        assert!(rows.len() >= 3, "{w}x{h}: the steps are listed: {s:#?}");
        for r in &rows {
            let cells: Vec<&str> = r.split(['│', ' ']).collect();
            for f in figures {
                assert!(cells.contains(&f), "{w}x{h}: {f} whole in {r:?}: {s:#?}");
            }
        }
        assert!(shows(&s, "◆ saturated"), "{w}x{h}: {s:#?}");
        assert!(shows(&s, "p99 20.21ms "), "{w}x{h}: {s:#?}");
        assert!(
            s.iter().any(|r| r.split(['│', ' ']).any(|c| c == "4242")),
            "{w}x{h}: the server line wrapped, not cut: {s:#?}"
        );
        assert!(shows(&s, " q "), "{w}x{h}: {s:#?}");
        assert_eq!(
            shows(&s, "saturation 1507"),
            w >= 100,
            "{w}x{h}: the throughput chart where there is room: {s:#?}"
        );
    }
    // Closed loop: no send-lag column (no schedule to lag behind).
    m.setup.unit = "users";
    let s = screen_of(&m, 80, 24);
    assert!(!shows(&s, "lag p99"), "{s:#?}");
    assert!(!shows(&s, "500µs"), "{s:#?}");
}

/// What the server panel says, from each source's newest sample.
#[test]
fn the_server_panel_reads_cpu_pools_and_the_accept_queue() {
    let mut m = Model::new(sweep_setup());
    let local = Sample {
        source: "local".into(),
        host: Some(HostSample {
            cores: 4,
            cpu_busy_pct: 73.4,
            cpu_softirq_pct: 5.0,
            load1: 2.5,
            ..Default::default()
        }),
        groups: vec![GroupSample {
            name: "web".into(),
            processes: 3,
            cpu_pct: 180.0,
            ..Default::default()
        }],
        fpm: vec![
            FpmSample {
                pool: "www".into(),
                active: 8,
                total: 8,
                listen_queue: 12,
                ..Default::default()
            },
            FpmSample {
                url: "http://127.0.0.1:9/status".into(),
                error: Some("connection refused".into()),
                ..Default::default()
            },
        ],
        tcp: Some(TcpSample {
            port: 8080,
            established: 40,
            listen_queue: Some(3),
            listen_limit: Some(128),
            ..Default::default()
        }),
        ..Default::default()
    };
    let db = Sample {
        source: "db".into(),
        host: Some(HostSample {
            cores: 2,
            cpu_busy_pct: 12.0,
            ..Default::default()
        }),
        ..Default::default()
    };
    m.server_samples(&[local, db]);
    assert_eq!(
        m.server,
        [
            "local: host CPU 73% busy of 4 cores (softirq 5%), load 2.5",
            "local: web CPU 180% of a core, 3 processes",
            "local: pool www: 8 of 8 workers busy, 12 waiting",
            "local: pool http://127.0.0.1:9/status: connection refused",
            "local: port 8080 accept queue 3/128, 40 established",
            "db: host CPU 12% busy of 2 cores (softirq 0%), load 0.0",
        ]
    );
    let s = screen(&m);
    assert!(
        shows(&s, "pool www: 8 of 8 workers busy, 12 waiting"),
        "{s:#?}"
    );
}

fn shared(setup: Setup) -> Shared {
    Shared {
        model: Mutex::new(Model::new(setup)),
        dirty: AtomicBool::new(false),
        end_step: AtomicBool::new(false),
        stop: AtomicBool::new(false),
        steer: None,
    }
}

/// The keys of live control: `+`/`=`/Up raise, `-`/Down lower, `p` pauses (escape
/// sequences other than the arrows still give nothing); each change goes to the run's steer
/// and the footer's note says what it did, or why not.
#[test]
fn steer_keys_change_the_load_and_say_so() {
    use crate::engine::steer::{Settings, Steer, Unit};
    assert_eq!(keys(b"+=\x1b[A"), vec![Key::Raise; 3]);
    assert_eq!(keys(b"-\x1b[B\x1bOB"), vec![Key::Lower; 3]);
    assert_eq!(keys(b"p\x1b[C\x1b[1;5D"), vec![Key::Pause]);
    let steer = Steer::new(Settings::default());
    let mut sh = shared(run_setup());
    sh.steer = Some(std::sync::Arc::clone(&steer));
    press('+', &sh);
    assert!(
        sh.model()
            .control_note
            .as_deref()
            .unwrap()
            .contains("no step in progress"),
        "{:?}",
        sh.model().control_note
    );
    steer.bind(
        std::time::Instant::now(),
        Unit::Rate,
        50.0,
        None,
        Some(60.0),
    );
    press('+', &sh);
    press('+', &sh);
    assert_eq!(
        sh.model().control_note.as_deref(),
        Some("rate 55→60 req/s"),
        "the second step starts from the first's level"
    );
    press('p', &sh);
    assert!(sh.model().paused);
    press('p', &sh);
    assert!(!sh.model().paused);
    assert_eq!(
        sh.model().control_note.as_deref(),
        Some("resumed at 60 req/s")
    );
    assert_eq!(steer.log().len(), 4);
}

fn press(c: char, sh: &Shared) {
    for k in keys(&[c as u8]) {
        key(k, sh);
    }
}

/// Keys from raw terminal bytes: `q`, `Q` and Ctrl-C quit, `n` ends the step; the letters of
/// escape sequences (arrows, F-keys, Alt+q) are no keys.
#[test]
fn keys_are_read_from_raw_bytes_escape_sequences_skipped() {
    assert_eq!(keys(b"q"), [Key::Quit]);
    assert_eq!(keys(b"Q\x03"), [Key::Quit, Key::Quit]);
    assert_eq!(keys(b"nxN"), [Key::EndStep, Key::EndStep]);
    // F1, F5 (CSI 15~), a device status answer ending in `n`, Alt+q: nothing; the Up and
    // Down arrows steer the load (live control), their letters are no keys.
    assert_eq!(keys(b"\x1bOP\x1b[15~\x1b[0n\x1bq"), []);
    assert_eq!(keys(b"\x1b[A"), [Key::Raise]);
    assert_eq!(keys(b"\x1b[Bn"), [Key::Lower, Key::EndStep]);
    assert_eq!(keys(b"\x1b"), []);
}

/// A terminal that hung up is `Gone` at once (no busy loop, no block): here a pseudo-terminal
/// whose master side is closed, as tmux and sshd do.
#[test]
fn a_hung_up_terminal_is_gone() {
    // SAFETY: openpty fills two descriptors this test owns and closes.
    unsafe {
        let (mut master, mut slave) = (0, 0);
        let rc = libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        );
        assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
        // Raw mode, as the view sets it: a key is readable without a newline.
        let mut t: libc::termios = std::mem::zeroed();
        assert_eq!(libc::tcgetattr(slave, &mut t), 0);
        libc::cfmakeraw(&mut t);
        assert_eq!(libc::tcsetattr(slave, libc::TCSANOW, &t), 0);
        assert_eq!(
            super::term::read_keys(slave, Duration::from_millis(10)),
            super::term::Input::Keys(vec![])
        );
        assert_eq!(libc::write(master, b"q".as_ptr().cast(), 1), 1);
        let mut got = vec![];
        let end = std::time::Instant::now() + Duration::from_secs(10);
        while got.is_empty() && std::time::Instant::now() < end {
            if let super::term::Input::Keys(k) =
                super::term::read_keys(slave, Duration::from_millis(50))
            {
                got = k;
            }
        }
        assert_eq!(got, [Key::Quit]);
        libc::close(master);
        let t = std::time::Instant::now();
        assert_eq!(
            super::term::read_keys(slave, Duration::from_secs(5)),
            super::term::Input::Gone
        );
        assert!(
            t.elapsed() < Duration::from_secs(4),
            "at once, not at the timeout"
        );
        libc::close(slave);
    }
}

/// `n` ends the step in progress of a stepped run, and only then: not between steps, not in
/// a single run, not once the run is stopping. (`q` raises SIGINT: the tmux test drives it.)
#[test]
fn n_asks_to_end_the_step_in_progress_only() {
    let sh = shared(sweep_setup());
    press('n', &sh);
    assert!(
        !sh.end_step.load(Ordering::Acquire),
        "no step in progress yet"
    );
    sh.model().tick(Some(0), 100.0, &tick(1, 100.0, 0.0, 1));
    press('x', &sh);
    assert!(!sh.end_step.load(Ordering::Acquire));
    press('n', &sh);
    assert!(sh.end_step.load(Ordering::Acquire));
    assert!(sh.model().ending_step);
    assert!(shows(&screen(&sh.model()), "ending this step…"));
    // The step ends: the next one starts with nothing asked.
    sh.end_step.store(false, Ordering::Release);
    sh.model()
        .step_done(&record(0, &open(100.0), Shape::ok(100.0, 5.0), 2.0));
    sh.model().tick(Some(1), 200.0, &tick(1, 200.0, 0.0, 1));
    assert!(!sh.model().ending_step);
    sh.model().stopping = true;
    press('n', &sh);
    assert!(
        !sh.end_step.load(Ordering::Acquire),
        "stopping: n does nothing"
    );
    assert!(shows(&screen(&sh.model()), "stopping"));

    let one = shared(run_setup());
    one.model().tick(None, 100.0, &tick(1, 100.0, 0.0, 1));
    press('n', &one);
    assert!(
        !one.end_step.load(Ordering::Acquire),
        "a single run has no next step"
    );
}
