//! The `Display` of the library's configurations is the equivalent command line: parsed
//! back by this CLI it gives the same configuration (what `experiment --dry-run` shows and
//! experiment.json records is what would run).
use super::{Cli, Command};
use crate::engine::{Arrival, Pick};
use crate::usecase::{CapacityConfig, ConnConfig, Levels, OpenLoopConfig, Output};
use crate::usecase::{RequestConfig, RunConfig, RunLoad, StepTiming, SweepConfig};
use clap::Parser;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Splits a line quoted by `report::folder::shell_join` (plain words and '…' with '\'').
fn split(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    cur.push(q);
                }
            }
            '\\' => {
                in_word = true;
                cur.extend(chars.next());
            }
            other => {
                in_word = true;
                cur.push(other);
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    out
}

fn parse(line: &str) -> Command {
    Cli::try_parse_from(split(line))
        .unwrap_or_else(|e| panic!("{line}\n{e}"))
        .command
}

fn sweep_back(c: &SweepConfig) -> SweepConfig {
    match parse(&c.to_string()) {
        Command::Sweep(a) => a.config().unwrap(),
        _ => panic!("not a sweep: {c}"),
    }
}

fn capacity_back(c: &CapacityConfig) -> CapacityConfig {
    match parse(&c.to_string()) {
        Command::Capacity(a) => a.config().unwrap(),
        _ => panic!("not a capacity search: {c}"),
    }
}

fn request() -> RequestConfig {
    RequestConfig {
        urls: vec!["http://127.0.0.1:8080/sleep?ms=20".into()],
        ..RequestConfig::default()
    }
}

#[test]
fn quoting_splits_back() {
    assert_eq!(split("a 'b c' 'it'\\''s'"), ["a", "b c", "it's"]);
}

#[test]
fn sweep_configs_parse_back_from_their_display() {
    let plain = SweepConfig {
        request: request(),
        levels: Levels::Rates(vec![100.0, 250.5, 1000.0]),
        ..SweepConfig::default()
    };
    assert_eq!(sweep_back(&plain), plain);
    let everything = SweepConfig {
        request: RequestConfig {
            urls: vec!["http://127.0.0.1:1/a".into(), "http://127.0.0.1:1/b".into()],
            urls_file: Some(PathBuf::from("/tmp/urls file.txt")),
            pick: Pick::Random,
            method: "POST".into(),
            headers: vec!["X-A: it's".into(), "Accept: */*".into()],
            body: Some("{\"k\": 1}".into()),
            scenario: Some(crate::usecase::config::ScenarioSource {
                file: PathBuf::from("/tmp/a scenario.toml"),
                max_body_capture: 4096,
                format: crate::scenario::Format::Toml,
            }),
            access_log: None,
            ok_status: crate::metrics::OkStatus::parse("200-399,404").unwrap(),
        },
        levels: Levels::Users {
            users: vec![1, 2, 4],
            think: Some((Duration::from_millis(10), Duration::from_micros(15_500))),
        },
        past_saturation: 7,
        max_errors: 0.035,
        max_p99: Some(Duration::from_millis(250)),
        timing: StepTiming {
            warmup: Duration::ZERO,
            step: Duration::from_millis(1500),
            rest: Duration::from_secs(2),
        },
        slo: Some("p99<500ms,errors<1%".into()),
        conn: ConnConfig {
            keep_alive: false,
            calls_per_connection: Some(1),
            timeout: Duration::from_secs(4),
            connect_timeout: Duration::from_millis(700),
            threads: Some(3),
            pacing_slack: Duration::ZERO,
            seed: 42,
            ..ConnConfig::default()
        },
        observe: crate::observe::ObserveArgs {
            watch: vec!["web=nginx".into()],
            fpm_status: vec!["http://127.0.0.1:1/fpm-status".into()],
            sample_every: "250ms".into(),
            agent: vec!["db=http://127.0.0.1:9090".into()],
            agent_token_file: Some(PathBuf::from("/tmp/token")),
            observe_port: Some("8081".into()),
            apache_status: vec!["http://127.0.0.1:1/server-status".into()],
            mysql: Some("ro@127.0.0.1:3306".into()),
            mysql_password_file: None,
            link_speed: Some("1gbit".into()),
        },
        output: Output {
            out: Some(PathBuf::from("runs/x y")),
            name: Some("x".into()),
            quiet: true,
            live_port: Some(8099),
            hdr_log: Some(PathBuf::from("runs/x.hlog")),
            ..Output::default()
        },
        ..SweepConfig::default()
    };
    assert_eq!(sweep_back(&everything), everything);
    let poisson = SweepConfig {
        open: OpenLoopConfig {
            arrival: Arrival::Poisson,
            connections: 12,
            max_sessions: 40,
        },
        ..plain
    };
    assert_eq!(sweep_back(&poisson), poisson);
}

#[test]
fn capacity_configs_parse_back_from_their_display() {
    let c = CapacityConfig {
        request: request(),
        start: 12.5,
        max: 4000.0,
        precision: 0.02,
        slo: Some("p99<100ms".into()),
        ..CapacityConfig::default()
    };
    assert_eq!(capacity_back(&c), c);
}

#[test]
fn run_configs_parse_back_from_their_display() {
    for c in [
        RunConfig {
            request: request(),
            ..RunConfig::default()
        },
        RunConfig {
            request: request(),
            load: RunLoad::Rate(1500.0),
            duration: None,
            requests: Some(1000),
            warmup: Duration::from_millis(500),
            slo: Some("p99<1s".into()),
            json: Some(PathBuf::from("/tmp/s.json")),
            output: crate::usecase::Output {
                quiet: true,
                out: Some(PathBuf::from("/tmp/run-dir")),
                name: Some("ab".into()),
                title: Some("A/B, keep-alive on".into()),
                live_port: Some(8099),
                hdr_log: Some(PathBuf::from("/tmp/run.hlog")),
                ..Default::default()
            },
            report: true,
            ..RunConfig::default()
        },
    ] {
        match parse(&c.to_string()) {
            Command::Run(a) => assert_eq!(a.config().unwrap(), c),
            _ => panic!("not a run: {c}"),
        }
    }
}

#[test]
fn experiment_runs_are_the_commands_they_show() {
    let text = r#"
warmup = "4s"
[load]
users = [1, 2, 4]
step = "10s"
[[config]]
name = "a"
setup = "true"
ready = "http://127.0.0.1:18990/"
load = { think = "10ms..20ms" }
[[config]]
stack = ["nginx-fpm"]
knobs = { workers = [4, 8] }
[[config]]
name = "steps"
group = "open"
setup = "true"
ready = "http://127.0.0.1:18990/"
load = { kind = "steps", rates = "100:300:100", arrival = "poisson" }
[[config]]
name = "cap"
group = "cap"
setup = "true"
ready = "http://127.0.0.1:18990/"
load = { kind = "capacity", slo = "p99<100ms", start = 100, max = 800, precision = "10%" }
[[config]]
name = "ramp"
group = "ramp"
setup = "true"
ready = "http://127.0.0.1:18990/"
load = { stages = "0s:50, 1m:600", arrival = "poisson", warmup = "2s" }
[[config]]
name = "user-ramp"
group = "user-ramp"
setup = "true"
ready = "http://127.0.0.1:18990/"
load = { user_stages = "30s:20, 10s:0", think = "10ms" }
"#;
    use crate::experiment::plan::{self, Measure};
    let x = crate::experiment::spec::parse(text, Path::new("m.toml"), false).unwrap();
    assert_eq!(x.configs.len(), 7);
    for c in &x.configs {
        let base = plan::base_url(c);
        match plan::measure(c, &base, Path::new("/tmp/x"), "x", true) {
            Measure::Sweep(s) => assert_eq!(sweep_back(&s), s),
            Measure::Capacity(k) => assert_eq!(capacity_back(&k), k),
            Measure::Ramp(r) => match parse(&r.to_string()) {
                Command::Run(a) => assert_eq!(a.config().unwrap(), r),
                _ => panic!("not a run: {r}"),
            },
        }
        let w = plan::warm_up(c, &base);
        match parse(&w.to_string()) {
            Command::Run(a) => assert_eq!(a.config().unwrap(), w),
            _ => panic!("not a run: {w}"),
        }
    }
}

/// `--segment` and `--start-at` survive the equivalent command line of every command that
/// sends load, and bad values are usage errors naming the flag.
#[test]
fn segments_parse_back_from_their_display() {
    use crate::plan::Segment;
    use crate::usecase::SegmentConfig;
    let segment = SegmentConfig {
        segment: Segment { index: 2, count: 3 },
        start_at_ms: Some(1_767_225_600_250),
    };
    let sweep = SweepConfig {
        request: request(),
        levels: Levels::Rates(vec![100.0]),
        segment,
        ..SweepConfig::default()
    };
    assert!(sweep
        .to_string()
        .contains("--segment 2/3 --start-at 1767225600.250"));
    assert_eq!(sweep_back(&sweep), sweep);
    let cap = CapacityConfig {
        request: request(),
        slo: Some("p99<100ms".into()),
        segment,
        ..CapacityConfig::default()
    };
    assert_eq!(capacity_back(&cap), cap);
    let run = RunConfig {
        request: request(),
        segment,
        ..RunConfig::default()
    };
    match parse(&run.to_string()) {
        Command::Run(a) => assert_eq!(a.config().unwrap(), run),
        _ => panic!("not a run: {run}"),
    }
    for bad in ["--segment=3/3", "--segment=x", "--start-at=yesterday"] {
        let e = Cli::try_parse_from(["overload", "run", "http://127.0.0.1:1/", bad]).unwrap_err();
        let flag = bad.split('=').next().unwrap();
        assert!(e.to_string().contains(flag), "{bad}: {e}");
        assert_eq!(e.exit_code(), 2);
    }
}

/// `--prometheus-remote-write` and `--otlp` reach the run's configuration and come back from
/// its command line (OTLP's path added when the URL has none).
#[test]
fn push_flags_round_trip() {
    let c = match parse(
        "overload run --prometheus-remote-write http://prom:9090/api/v1/write --otlp http://collector:4318 http://127.0.0.1:1/",
    ) {
        Command::Run(a) => a.config().unwrap(),
        _ => panic!("not a run"),
    };
    let shown: Vec<String> = c.output.push.iter().map(|t| t.shown()).collect();
    assert_eq!(
        shown,
        [
            "http://prom:9090/api/v1/write",
            "http://collector:4318/v1/metrics"
        ]
    );
    match parse(&c.to_string()) {
        Command::Run(a) => assert_eq!(a.config().unwrap(), c),
        _ => panic!("not a run: {c}"),
    }
}
