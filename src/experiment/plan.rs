//! From a validated experiment to what runs: the matrix expanded into configurations, the
//! runs in order (repetition after repetition, so slow drift of the machine spreads over
//! every configuration instead of biasing one), how long each takes (for --dry-run), the
//! `--quick` scaling, and each run's load plan as the library's configuration (whose
//! `Display` is the equivalent `overload sweep|capacity` command).
use super::spec::{knob_text, Config, Experiment, Kind, Server};
use crate::engine::{Arrival, Pick};
use crate::lab::Stack;
use crate::observe::ObserveArgs;
use crate::units::fmt_duration;
use crate::usecase::{CapacityConfig, ConnConfig, Levels, OpenLoopConfig, Output};
use crate::usecase::{RequestConfig, RunConfig, RunLoad, StepTiming, SweepConfig};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;
use std::time::Duration;

/// One point of a configuration's matrix: the stack and one value per knob.
pub type Point = (Stack, BTreeMap<String, toml::Value>);

/// The most configurations an experiment may have, matrices and [[config]] tables together.
/// Each one brings a server up and runs a load plan, so even this many takes days; a larger
/// count is a typo (a knob list pasted twice), caught before the matrix is built in memory.
pub const MAX_CONFIGS: usize = 1_000;

/// How many points `matrix` would make, computed without building them (saturating, so a
/// huge product cannot overflow).
pub fn matrix_size(stacks: &[Stack], knobs: &BTreeMap<String, toml::Value>) -> usize {
    knobs
        .values()
        .map(|v| match v {
            toml::Value::Array(a) => a.len(),
            _ => 1,
        })
        .fold(stacks.len(), usize::saturating_mul)
}

/// The cartesian product of the stacks and every list-valued knob (scalars are kept as they
/// are). Order: stacks first, then knobs in name order, the last knob varying fastest.
pub fn matrix(stacks: &[Stack], knobs: &BTreeMap<String, toml::Value>) -> Vec<Point> {
    let mut points: Vec<BTreeMap<String, toml::Value>> = vec![BTreeMap::new()];
    for (k, v) in knobs {
        let values: Vec<toml::Value> = match v {
            toml::Value::Array(a) => a.clone(),
            other => vec![other.clone()],
        };
        points = points
            .into_iter()
            .flat_map(|p| {
                values.iter().map(move |val| {
                    let mut q = p.clone();
                    q.insert(k.clone(), val.clone());
                    q
                })
            })
            .collect();
    }
    stacks
        .iter()
        .flat_map(|s| points.iter().map(move |p| (*s, p.clone())))
        .collect()
}

/// The names of the matrix's axes: `stack` when there are several, and list-valued knobs.
pub fn axes(stacks: &[Stack], knobs: &BTreeMap<String, toml::Value>) -> Vec<String> {
    let mut a = Vec::new();
    if stacks.len() > 1 {
        a.push("stack".to_string());
    }
    for (k, v) in knobs {
        if matches!(v, toml::Value::Array(x) if x.len() > 1) {
            a.push(k.clone());
        }
    }
    a
}

/// A point's name: the template with `{stack}` / `{knob}` filled in; without a template, the
/// stack's name. Axes the template does not mention are appended (`-workers8`), so the
/// points of a matrix never share a name.
pub fn point_name(
    template: Option<&str>,
    stack: Stack,
    values: &BTreeMap<String, toml::Value>,
    axes: &[String],
) -> String {
    let mut name = template.unwrap_or("{stack}").to_string();
    let mut missing = Vec::new();
    let has_stack = name.contains("{stack}");
    name = name.replace("{stack}", stack.name());
    for (k, v) in values {
        let ph = format!("{{{k}}}");
        if name.contains(&ph) {
            name = name.replace(&ph, &knob_text(v));
        } else if axes.contains(k) {
            missing.push(format!("-{}{}", k.replace('_', ""), knob_text(v)));
        }
    }
    if axes.iter().any(|a| a == "stack") && !has_stack {
        name.push('-');
        name.push_str(stack.name());
    }
    for m in missing {
        name.push_str(&m);
    }
    name
}

/// One run: a configuration's k-th repetition, stored in `EXPDIR/<id>/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub id: String,
    pub config: usize,
    pub rep: u32,
}

/// Every run: repetition 1 of every configuration, then repetition 2, …
pub fn runs(exp: &Experiment) -> Vec<Run> {
    let mut v = Vec::new();
    for rep in 1..=exp.repetitions {
        for (i, c) in exp.configs.iter().enumerate() {
            v.push(Run {
                id: format!("{}-r{rep}", c.name),
                config: i,
                rep,
            });
        }
    }
    v
}

/// Restart and readiness, as measured on the 2-core test machine (docs/lab.md: a web stack
/// comes up in < 0.1 s, MariaDB's first start up to 2.3 s); rounded up.
fn restart_cost(c: &Config) -> Duration {
    match &c.server {
        Server::Lab { .. } => Duration::from_secs(2),
        Server::Command { .. } => Duration::from_secs(1),
    }
}

/// Steps the load plan runs at most (sweeps may stop earlier, past saturation).
pub fn max_steps(c: &Config) -> usize {
    let l = &c.load;
    match l.kind {
        Kind::Sweep | Kind::Steps => l.levels.len(),
        Kind::Ramp => 1,
        Kind::Capacity => {
            // Doubling from start up to max, then bisecting to the precision.
            let grow = (l.max / l.start).log2().ceil().max(0.0) as usize + 1;
            let bisect = (1.0 / l.precision).log2().ceil().max(1.0) as usize;
            grow + bisect
        }
    }
}

/// Upper bound of one run's length: restart, warm-up round, every step with its warm-up,
/// rests between steps.
pub fn run_duration(c: &Config) -> Duration {
    if let Some(st) = &c.load.stages {
        return restart_cost(c) + c.warmup + c.load.warmup + st.duration();
    }
    let n = max_steps(c) as u32;
    restart_cost(c)
        + c.warmup
        + (c.load.warmup + c.load.step) * n
        + c.load.rest * n.saturating_sub(1)
}

pub fn total_duration(exp: &Experiment) -> Duration {
    runs(exp)
        .iter()
        .map(|r| run_duration(&exp.configs[r.config]))
        .sum()
}

/// `--quick`: the same experiment in about `exp.budget` (60 s). After the file's `[quick]`
/// tables are applied: one repetition, a warm-up round of at most 1 s, step warm-ups of at
/// most 0.5 s and rests of at most 0.25 s; then every step is shortened by the same amount,
/// to what the budget leaves per step, but never below 1 s nor above its own length.
pub fn quick(exp: &mut Experiment) {
    for c in &mut exp.configs {
        c.warmup = c.warmup.min(Duration::from_secs(1));
        c.load.warmup = c.load.warmup.min(Duration::from_millis(500));
        c.load.rest = c.load.rest.min(Duration::from_millis(250));
    }
    let runs = runs(exp);
    let mut fixed = Duration::ZERO;
    let mut steps = 0u32;
    for r in &runs {
        let c = &exp.configs[r.config];
        let n = max_steps(c) as u32;
        fixed += restart_cost(c) + c.warmup + c.load.warmup * n + c.load.rest * n.saturating_sub(1);
        steps += n;
    }
    let per_step = exp
        .budget
        .saturating_sub(fixed)
        .checked_div(steps.max(1))
        .unwrap_or(Duration::ZERO)
        .max(Duration::from_secs(1));
    for c in &mut exp.configs {
        c.load.step = c.load.step.min(per_step);
        // A ramp keeps its shape, its stages shortened in proportion.
        if let Some(st) = &mut c.load.stages {
            let total = st.duration();
            if total > per_step {
                let f = per_step.as_secs_f64() / total.as_secs_f64();
                for s in &mut st.0 {
                    s.duration = s.duration.mul_f64(f);
                }
            }
        }
    }
}

/// The request URLs of a configuration against the server's base URL.
pub fn urls(c: &Config, base: &str) -> Vec<String> {
    c.request
        .paths
        .iter()
        .map(|p| {
            if p.starts_with("http://") || p.starts_with("https://") {
                p.clone()
            } else {
                format!("{}{p}", base.trim_end_matches('/'))
            }
        })
        .collect()
}

/// The server's base URL before it runs (lab stacks have fixed ports).
pub fn base_url(c: &Config) -> String {
    match &c.server {
        Server::Command { url, .. } => url.clone(),
        Server::Lab { spec, .. } => match spec.resolve() {
            Ok(r) => r.base_url(),
            // Validated when the file was read; a default keeps this infallible.
            Err(_) => {
                let port = spec.port.unwrap_or(spec.stack.default_port());
                format!("http://127.0.0.1:{port}")
            }
        },
    }
}

/// What to observe: the file's `watch`, else the lab stack's processes.
pub fn watch(c: &Config) -> Vec<String> {
    if let Some(w) = &c.observe.watch {
        return w.clone();
    }
    match &c.server {
        Server::Lab { spec, .. } => {
            // An app stack's processes are its front's.
            let serves = spec.resolve().map_or(spec.stack, |r| r.web());
            let mut w: Vec<String> = serves.watch().iter().map(|s| s.to_string()).collect();
            if !spec.no_db && spec.stack.uses_db() {
                w.push("db=mariadbd".into());
            }
            w
        }
        Server::Command { .. } => Vec::new(),
    }
}

pub(crate) fn request_config(c: &Config, base: &str) -> RequestConfig {
    let r = &c.request;
    RequestConfig {
        urls: urls(c, base),
        pick: if r.pick == "random" {
            Pick::Random
        } else {
            Pick::Sequence
        },
        method: r.method.clone(),
        headers: r.headers.clone(),
        body: r.body.clone(),
        // The scenario's relative URLs go to the server: its base is the one URL.
        scenario: r
            .scenario
            .clone()
            .map(|file| crate::usecase::config::ScenarioSource {
                file,
                max_body_capture: crate::scenario::DEFAULT_MAX_BODY_CAPTURE,
                format: crate::scenario::Format::Toml,
            }),
        ok_status: r.ok_status,
        ..RequestConfig::default()
    }
}

pub(crate) fn conn_config(c: &Config) -> ConnConfig {
    let r = &c.request;
    ConnConfig {
        keep_alive: r.keep_alive,
        calls_per_connection: r.calls_per_connection,
        timeout: r.timeout,
        connect_timeout: r.connect_timeout,
        threads: r.threads,
        http: r.http,
        alt_svc: r.alt_svc,
        streams: r.streams,
        tls: r.tls.clone(),
        io: r.io,
        ..ConnConfig::default()
    }
}

fn open_config(c: &Config) -> OpenLoopConfig {
    OpenLoopConfig {
        arrival: if c.load.arrival == "poisson" {
            Arrival::Poisson
        } else {
            Arrival::Constant
        },
        connections: c.load.connections,
        ..OpenLoopConfig::default()
    }
}

fn observe_args(c: &Config, base: &str) -> ObserveArgs {
    let mut fpm_status = Vec::new();
    let mut apache_status = Vec::new();
    if let Server::Lab { spec, .. } = &c.server {
        if c.observe.fpm_status && spec.stack.uses_fpm() {
            fpm_status.push(format!("{base}/fpm-status"));
        }
        if c.observe.fpm_status && spec.stack.has_mod_status() {
            apache_status.push(format!("{base}/server-status"));
        }
    }
    ObserveArgs {
        watch: watch(c),
        fpm_status,
        apache_status,
        sample_every: crate::usecase::command::dur(c.observe.sample_every),
        ..ObserveArgs::default()
    }
}

/// The think time, when there is one to speak of.
fn think(c: &Config) -> Option<(Duration, Duration)> {
    c.load.think.filter(|t| !t.1.is_zero())
}

/// A run's load plan as the library's configuration: a sweep or a capacity search.
#[derive(Debug, Clone, PartialEq)]
pub enum Measure {
    Sweep(SweepConfig),
    Capacity(CapacityConfig),
    /// One run on stages (`overload run --stages`).
    Ramp(RunConfig),
}

/// The equivalent `overload sweep|capacity` command line.
impl std::fmt::Display for Measure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Measure::Sweep(s) => s.fmt(f),
            Measure::Capacity(c) => c.fmt(f),
            Measure::Ramp(r) => r.fmt(f),
        }
    }
}

/// The run's load plan against the server at `base`, stored in `out` under `name`.
pub fn measure(c: &Config, base: &str, out: &Path, name: &str, quiet: bool) -> Measure {
    let l = &c.load;
    let timing = StepTiming {
        warmup: l.warmup,
        step: l.step,
        rest: l.rest,
    };
    let output = Output {
        out: Some(out.to_path_buf()),
        name: Some(name.to_string()),
        quiet,
        ..Output::default()
    };
    match l.kind {
        Kind::Ramp => Measure::Ramp(RunConfig {
            request: request_config(c, base),
            // As the command line has it: the stages set the level.
            load: ramp_load(c),
            stages: l.stages.clone(),
            open: open_config(c),
            duration: None,
            warmup: l.warmup,
            conn: conn_config(c),
            // `run` observes only when told what (its sampling period is then shown too).
            observe: Some(observe_args(c, base))
                .filter(|o| {
                    !o.watch.is_empty() || !o.fpm_status.is_empty() || !o.apache_status.is_empty()
                })
                .unwrap_or_default(),
            slo: l.slo.clone(),
            output: output.clone(),
            ..RunConfig::default()
        }),
        Kind::Capacity => Measure::Capacity(CapacityConfig {
            request: request_config(c, base),
            start: l.start,
            max: l.max,
            precision: l.precision,
            // The experiment repeats whole runs itself (its spread is across them).
            repeat: 1,
            open: open_config(c),
            timing,
            slo: l.slo.clone(),
            conn: conn_config(c),
            // An experiment runs on one generator host.
            segment: Default::default(),
            observe: observe_args(c, base),
            output,
        }),
        Kind::Sweep | Kind::Steps => {
            let levels = if l.closed {
                Levels::Users {
                    users: l.levels.iter().map(|&u| u as usize).collect(),
                    think: think(c),
                }
            } else {
                Levels::Rates(l.levels.clone())
            };
            // Fixed steps: every level runs, whatever happens (no stop rule bites).
            let (past_saturation, max_errors, max_p99) = if l.kind == Kind::Steps {
                (1_000_000, 1.0, None)
            } else {
                (l.past_saturation, l.max_errors, l.max_p99)
            };
            Measure::Sweep(SweepConfig {
                request: request_config(c, base),
                levels,
                open: open_config(c),
                past_saturation,
                max_errors,
                max_p99,
                timing,
                slo: l.slo.clone(),
                conn: conn_config(c),
                segment: Default::default(),
                observe: observe_args(c, base),
                output,
                ..SweepConfig::default()
            })
        }
    }
}

/// A ramp's load as `run --stages` / `--user-stages` resolves it: the peak of its stages.
fn ramp_load(c: &Config) -> RunLoad {
    let peak = c.load.stages.as_ref().map_or(0.0, |s| s.peak());
    if c.load.closed {
        RunLoad::Users {
            users: peak as usize,
            think: think(c),
        }
    } else {
        RunLoad::Rate(peak)
    }
}

/// The warm-up round: the plan's first level for the warm-up's length, not stored.
pub fn warm_up(c: &Config, base: &str) -> RunConfig {
    let l = &c.load;
    // A ramp warms up at the first level its stages head for.
    let first = l
        .stages
        .as_ref()
        .and_then(|st| st.0.iter().map(|s| s.target).find(|t| *t > 0.0))
        .unwrap_or(1.0);
    let load = match (l.kind, l.closed) {
        (Kind::Capacity, _) => RunLoad::Rate(l.start),
        (Kind::Ramp, true) => RunLoad::Users {
            users: first.max(1.0) as usize,
            think: think(c),
        },
        (Kind::Ramp, false) => RunLoad::Rate(first),
        (_, true) => RunLoad::Users {
            users: l.levels[0] as usize,
            think: think(c),
        },
        (_, false) => RunLoad::Rate(l.levels[0]),
    };
    RunConfig {
        request: request_config(c, base),
        load,
        open: open_config(c),
        duration: Some(c.warmup),
        conn: conn_config(c),
        output: crate::usecase::Output {
            quiet: true,
            ..Default::default()
        },
        ..RunConfig::default()
    }
}

fn levels_arg(c: &Config) -> String {
    c.load
        .levels
        .iter()
        .map(|v| format!("{v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// A length for humans: `6m28s`, `45s` (whole seconds, rounded up: these are estimates).
pub fn fmt_long(d: Duration) -> String {
    let s = d.as_secs() + u64::from(d.subsec_nanos() > 0);
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// What --dry-run prints.
pub fn describe(exp: &Experiment, dir: &str) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "experiment '{}' from {}{}",
        exp.name,
        crate::fsutil::shown(&exp.file),
        if exp.quick { " (--quick)" } else { "" }
    );
    if !exp.description.is_empty() {
        let _ = writeln!(o, "  {}", exp.description.trim());
    }
    let _ = writeln!(
        o,
        "{} configuration(s) × {} repetition(s); results in {dir}\n",
        exp.configs.len(),
        exp.repetitions
    );
    for c in &exp.configs {
        let server = match &c.server {
            Server::Lab { spec, db, .. } => {
                let mut s = format!("lab {}", spec.stack);
                if let Ok(r) = spec.resolve() {
                    let knobs: Vec<String> = r
                        .describe()
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect();
                    let _ = write!(s, " ({})", knobs.join(" "));
                }
                if let Some(db) = db {
                    let mut parts = Vec::new();
                    if let Some(q) = db.query_cache {
                        parts.push(format!("query-cache={}", if q { "on" } else { "off" }));
                    }
                    if let Some(e) = db.engine {
                        parts.push(format!("engine={}", e.sql_name()));
                    }
                    let _ = write!(s, " + mariadb ({})", parts.join(" "));
                }
                s
            }
            Server::Command { setup, ready, .. } => format!("setup `{setup}`, ready at {ready}"),
        };
        let l = &c.load;
        let levels = match (l.kind, &l.stages) {
            (Kind::Ramp, Some(st)) => format!(
                "ramp of {} '{st}'",
                if l.closed { "users" } else { "req/s" }
            ),
            (Kind::Capacity, _) => format!(
                "capacity search {}..{} req/s under '{}'",
                l.start,
                l.max,
                l.slo.as_deref().unwrap_or("")
            ),
            (_, _) => format!(
                "{} {} {}",
                l.kind.name(),
                if l.closed { "users" } else { "req/s" },
                levels_arg(c)
            ),
        };
        let _ = writeln!(
            o,
            "[{}] {} (group {})\n  server: {server}\n  load:   {levels}; steps {} + {} warm-up, {} rest; warm-up round {}\n  ≤ {} per run (≤ {} steps)",
            c.group,
            c.name,
            c.group,
            fmt_duration(l.step),
            fmt_duration(l.warmup),
            fmt_duration(l.rest),
            fmt_duration(c.warmup),
            fmt_long(run_duration(c)),
            max_steps(c),
        );
        let base = base_url(c);
        let out = format!("{dir}/{}-r1", c.name);
        let _ = writeln!(
            o,
            "  run:    {}",
            measure(c, &base, Path::new(&out), &c.name, false)
        );
    }
    let total = total_duration(exp);
    let _ = writeln!(
        o,
        "\n{} runs, at most {} in all (sweeps stop early past saturation)",
        runs(exp).len(),
        fmt_long(total)
    );
    o
}

#[cfg(test)]
mod tests {
    use super::super::spec::parse;
    use super::*;

    const FILE: &str = r#"
repetitions = 2
warmup = "4s"
[load]
users = [1, 2, 4]
step = "10s"
warmup = "2s"
rest = "1s"
[[config]]
name = "a"
setup = "true"
ready = "http://127.0.0.1:18990/"
[[config]]
stack = ["nginx-fpm", "apache-prefork"]
knobs = { workers = [4, 8], opcache = [true, false], keep_alive = false }
[[config]]
name = "cap"
group = "open"
setup = "true"
ready = "http://127.0.0.1:18990/"
load = { kind = "capacity", slo = "p99<100ms", start = 100, max = 800, precision = "10%" }
"#;

    #[test]
    fn matrix_names_and_order() {
        let x = parse(FILE, Path::new("m.toml"), false).unwrap();
        let names: Vec<&str> = x.configs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "a",
                "nginx-fpm-opcacheon-workers4",
                "nginx-fpm-opcacheon-workers8",
                "nginx-fpm-opcacheoff-workers4",
                "nginx-fpm-opcacheoff-workers8",
                "apache-prefork-opcacheon-workers4",
                "apache-prefork-opcacheon-workers8",
                "apache-prefork-opcacheoff-workers4",
                "apache-prefork-opcacheoff-workers8",
                "cap"
            ]
        );
        let r = runs(&x);
        assert_eq!(r.len(), 20);
        assert_eq!(r[0].id, "a-r1");
        assert_eq!(r[10].id, "a-r2", "repetition-major order");
    }

    #[test]
    fn durations_for_dry_run() {
        let x = parse(FILE, Path::new("m.toml"), false).unwrap();
        // Setup server: 1 s restart + 4 s warm-up round + 3 × (2 + 10) + 2 × 1 = 43 s.
        assert_eq!(run_duration(&x.configs[0]), Duration::from_secs(43));
        // Lab: 2 s restart instead of 1.
        assert_eq!(run_duration(&x.configs[1]), Duration::from_secs(44));
        // Capacity 100..800: 4 growth probes + 4 bisections at 10%.
        assert_eq!(max_steps(&x.configs[9]), 8);
        assert_eq!(
            run_duration(&x.configs[9]),
            Duration::from_secs(1 + 4 + 8 * 12 + 7)
        );
        let total = total_duration(&x);
        assert_eq!(total, Duration::from_secs(2 * (43 + 8 * 44 + 108)));
        let d = describe(&x, "runs/x");
        assert!(d.contains("20 runs, at most 16m46s"), "{d}");
        assert!(d.contains("overload sweep http://127.0.0.1:18081/ "), "{d}");
        assert!(d.contains("--users 1,2,4"), "{d}");
        assert!(d.contains("overload capacity"), "{d}");
    }

    #[test]
    fn quick_fits_the_budget() {
        let mut x = parse(FILE, Path::new("m.toml"), true).unwrap();
        assert_eq!(x.repetitions, 1);
        quick(&mut x);
        let c = &x.configs[0];
        assert_eq!(c.warmup, Duration::from_secs(1));
        assert_eq!(c.load.warmup, Duration::from_millis(500));
        assert_eq!(c.load.rest, Duration::from_millis(250));
        // 10 configs, ~34 steps: the floor of 1 s per step wins over the 60 s budget.
        assert_eq!(c.load.step, Duration::from_secs(1));
        let mut small = parse(
            "[load]\nusers = [1, 2]\nstep = '30s'\n[[config]]\nname = 'a'\nsetup = 'true'\nready = 'http://127.0.0.1:1/'\n",
            Path::new("s.toml"),
            true,
        )
        .unwrap();
        quick(&mut small);
        let t = total_duration(&small);
        assert!(
            t <= Duration::from_secs(61) && t >= Duration::from_secs(55),
            "{t:?}"
        );
    }
}
