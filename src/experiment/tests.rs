//! Experiment sequencing and `--resume` on scripted servers and a scripted executor: which
//! runs start, in which order, what is stored, and what a resumed experiment skips.
use super::plan::Run;
use super::resume::{ServerState, State};
use super::runner::{execute, Options, Servers};
use super::spec::{parse, Config, Experiment};
use crate::runner::fake::{self, Scripted};
use std::path::Path;

const FILE: &str = r#"
name = "tiny"
repetitions = 2
warmup = "500ms"
[request]
path = "/sleep?ms=20"
[load]
kind = "steps"
users = [2, 8]
step = "1s"
warmup = "200ms"
rest = "100ms"
[[config]]
name = "w4"
setup = "never run"
ready = "http://127.0.0.1:9/"
[[config]]
name = "w8"
setup = "never run"
ready = "http://127.0.0.1:9/"
"#;

/// Records what the runner asks of the servers; a started server is recorded in the state
/// the way a `setup` command's is.
#[derive(Default)]
struct FakeServers {
    events: Vec<String>,
    /// The run whose teardown fails, if any.
    fail_stop: Option<String>,
}

impl Servers for FakeServers {
    fn stop_leftover(&mut self, state: &mut State, dir: &Path) -> crate::Result<()> {
        if let Some(s) = state.server.take() {
            self.events.push(format!("leftover {}", s.run));
            state.save(dir)?;
        }
        Ok(())
    }

    fn start(
        &mut self,
        _exp: &Experiment,
        _c: &Config,
        run: &Run,
        dir: &Path,
        state: &mut State,
    ) -> crate::Result<String> {
        self.events.push(format!("start {}", run.id));
        state.server = Some(ServerState {
            run: run.id.clone(),
            pid: 0,
            start_ticks: 0,
            tag: String::new(),
        });
        state.save(dir)?;
        Ok("http://127.0.0.1:9".into())
    }

    fn stop(&mut self, _c: &Config, run: &Run, _dir: &Path) -> crate::Result<()> {
        self.events.push(format!("stop {}", run.id));
        if self.fail_stop.as_deref() == Some(run.id.as_str()) {
            return Err(crate::Error::runtime("teardown exited with 1"));
        }
        Ok(())
    }
}

fn experiment() -> Experiment {
    parse(FILE, Path::new("tiny.toml"), false).unwrap()
}

fn fresh(exp: &Experiment, dir: &Path) -> State {
    let s = State::new(exp);
    s.save(dir).unwrap();
    s
}

const QUIET: Options = Options { quiet: true };

#[test]
fn runs_repetition_after_repetition_with_a_fresh_server_each() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let exp = experiment();
    let mut state = fresh(&exp, dir);
    let mut exec = Scripted::new(fake::server(1e9));
    let mut servers = FakeServers::default();
    let code = execute(&exp, dir, &mut state, &QUIET, &mut exec, &mut servers).unwrap();
    assert_eq!(code, 0);
    assert_eq!(
        servers.events,
        [
            "start w4-r1",
            "stop w4-r1",
            "start w8-r1",
            "stop w8-r1",
            "start w4-r2",
            "stop w4-r2",
            "start w8-r2",
            "stop w8-r2"
        ]
    );
    // Each run: the warm-up round at the first level, then both fixed steps.
    assert_eq!(exec.offered, [2.0, 2.0, 8.0].repeat(4));
    let saved = State::load(dir).unwrap();
    assert!(saved.complete);
    assert_eq!(saved.server, None, "no server is left recorded");
    let ids: Vec<&str> = saved.runs.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, ["w4-r1", "w8-r1", "w4-r2", "w8-r2"]);
    let r = &saved.runs[0];
    assert_eq!(r.exit_code, 0);
    assert!(
        r.command
            .starts_with("overload sweep 'http://127.0.0.1:9/sleep?ms=20' --pick sequence "),
        "{}",
        r.command
    );
    assert!(
        r.command
            .contains("--users 2,8 --past-saturation 1000000 --max-errors 1 "),
        "{}",
        r.command
    );
    assert!(
        r.command
            .ends_with(&format!("--out {}/w4-r1 --name w4-r1 -q", dir.display())),
        "{}",
        r.command
    );
    for id in ids {
        let steps = std::fs::read_to_string(dir.join(id).join("steps.jsonl")).unwrap();
        assert_eq!(steps.lines().count(), 2, "{id}");
    }
}

#[test]
fn resume_after_a_crash_skips_finished_runs_and_sets_the_partial_one_aside() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let exp = experiment();
    let mut state = fresh(&exp, dir);
    // SIGINT during the first measured step of the second run (steps: 3 per run, the
    // warm-up round first).
    let mut exec = Scripted::new(fake::server(1e9));
    exec.interrupt_during = Some(4);
    let mut servers = FakeServers::default();
    let code = execute(&exp, dir, &mut state, &QUIET, &mut exec, &mut servers).unwrap();
    assert_eq!(code, 130);
    assert_eq!(
        servers.events.last().map(String::as_str),
        Some("stop w8-r1")
    );
    let before = State::load(dir).unwrap();
    assert_eq!(before.runs.len(), 1);
    assert!(!before.complete);
    assert!(
        dir.join("w8-r1/steps.jsonl").is_file(),
        "the interrupted run left its folder"
    );
    // Then the process is killed with the next server up: the state still names it.
    let mut crashed = before.clone();
    crashed.server = Some(ServerState {
        run: "w8-r1".into(),
        pid: 0,
        start_ticks: 0,
        tag: String::new(),
    });
    crashed.save(dir).unwrap();

    let mut state = State::load(dir).unwrap();
    state.check(&exp, dir).unwrap();
    let mut exec = Scripted::new(fake::server(1e9));
    let mut servers = FakeServers::default();
    let code = execute(&exp, dir, &mut state, &QUIET, &mut exec, &mut servers).unwrap();
    assert_eq!(code, 0);
    assert_eq!(
        servers.events[0], "leftover w8-r1",
        "the left-over server is stopped first"
    );
    assert!(
        !servers.events.contains(&"start w4-r1".to_string()),
        "finished runs are skipped"
    );
    assert_eq!(exec.offered.len(), 3 * 3, "three runs of three steps");
    let after = State::load(dir).unwrap();
    assert!(after.complete);
    assert_eq!(
        after.runs[0], before.runs[0],
        "the finished run's record is kept as it was"
    );
    let aside: Vec<_> = std::fs::read_dir(dir.join(".interrupted"))
        .unwrap()
        .collect();
    assert_eq!(
        aside.len(),
        1,
        "the partial folder was moved aside, not deleted"
    );
    let steps = std::fs::read_to_string(dir.join("w8-r1/steps.jsonl")).unwrap();
    assert_eq!(steps.lines().count(), 2, "w8-r1 ran again from the start");
}

#[test]
fn a_failing_run_stops_its_server_and_the_experiment() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let exp = experiment();
    let mut state = fresh(&exp, dir);
    let mut exec = Scripted::new(fake::server(1e9));
    exec.fail_at = Some(1);
    let mut servers = FakeServers::default();
    let e = execute(&exp, dir, &mut state, &QUIET, &mut exec, &mut servers).unwrap_err();
    assert!(e.to_string().contains("scripted failure"), "{e}");
    assert_eq!(servers.events, ["start w4-r1", "stop w4-r1"]);
    let saved = State::load(dir).unwrap();
    assert!(saved.runs.is_empty() && saved.server.is_none());
}

#[test]
fn a_failed_teardown_keeps_the_run_it_ended() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let exp = experiment();
    let mut state = fresh(&exp, dir);
    let mut exec = Scripted::new(fake::server(1e9));
    let mut servers = FakeServers {
        fail_stop: Some("w4-r1".into()),
        ..FakeServers::default()
    };
    let e = execute(&exp, dir, &mut state, &QUIET, &mut exec, &mut servers).unwrap_err();
    assert!(
        e.to_string().contains("w4-r1: stopping its server failed"),
        "{e}"
    );
    assert_eq!(
        servers.events,
        ["start w4-r1", "stop w4-r1"],
        "no run after"
    );
    let saved = State::load(dir).unwrap();
    assert!(saved.is_done("w4-r1"), "the measured run is recorded");
    assert!(!saved.complete);
}

/// The comparison the experiment prints: each configuration's peak throughput and its ratio
/// to the first, on scripted throughputs (4 workers answer 200/s at 8 users, 8 workers
/// 400/s). The real-engine test (tests/suite/experiment.rs) only checks that the row is there: on a
/// busy machine the generator caps both and the real ratio blurs.
#[test]
fn the_table_compares_each_configuration_with_the_first() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let exp = experiment();
    let mut state = fresh(&exp, dir);
    // Three steps per run (the warm-up round, then 2 and 8 users); runs alternate w4, w8.
    let mut exec = Scripted::new(|n: usize, users: f64| {
        let workers = if (n / 3) % 2 == 0 { 4.0 } else { 8.0 };
        // /sleep?ms=20: 50 answers a second per busy worker.
        let mut s = fake::Shape::ok(50.0 * users.min(workers), 20.0);
        if users > workers {
            s.p99_ms = 20.0 * users / workers;
        }
        s
    });
    let mut servers = FakeServers::default();
    let code = execute(&exp, dir, &mut state, &QUIET, &mut exec, &mut servers).unwrap();
    assert_eq!(code, 0);
    let table = super::report::table(&exp, dir, &state);
    let row = |name: &str| {
        table
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} row: {table}"))
            .to_string()
    };
    let (w4, w8) = (row("w4"), row("w8"));
    assert!(table.contains("peak throughput"), "{table}");
    assert!(w4.contains("200"), "{w4}");
    assert!(w8.contains("400") && w8.contains("(2.00×)"), "{w8}");
}
