//! From a validated experiment to what runs: the matrix expanded into configurations, the
//! runs in order (repetition after repetition, so slow drift of the machine spreads over
//! every configuration instead of biasing one), how long each takes (for --dry-run), the
//! `--quick` scaling, and the equivalent `overload sweep|capacity` command of each run.
use super::spec::{knob_text, Config, Experiment, Kind, Server};
use crate::lab::Stack;
use crate::units::fmt_duration;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

/// One point of a configuration's matrix: the stack and one value per knob.
pub type Point = (Stack, BTreeMap<String, toml::Value>);

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
    }
}

/// A duration as a command-line value that parses back exactly.
fn arg_dur(d: Duration) -> String {
    if d.subsec_nanos() % 1_000_000 == 0 {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}us", d.as_micros())
    }
}

/// The request URLs of a configuration against the server's base URL.
pub fn urls(c: &Config, base: &str) -> Vec<String> {
    c.request
        .paths
        .iter()
        .map(|p| {
            if p.starts_with("http://") {
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
        Server::Lab { spec, .. } => {
            let port = spec.port.unwrap_or(spec.stack.default_port());
            format!("http://127.0.0.1:{port}")
        }
    }
}

/// What to observe: the file's `watch`, else the lab stack's processes.
pub fn watch(c: &Config) -> Vec<String> {
    if let Some(w) = &c.observe.watch {
        return w.clone();
    }
    match &c.server {
        Server::Lab { spec, .. } => {
            let mut w: Vec<String> = spec.stack.watch().iter().map(|s| s.to_string()).collect();
            if !spec.no_db {
                w.push("db=mariadbd".into());
            }
            w
        }
        Server::Command { .. } => Vec::new(),
    }
}

/// Request, connection and observation flags shared by the warm-up round and the run.
fn common_args(c: &Config, base: &str, observe: bool) -> Vec<String> {
    let r = &c.request;
    let mut a = urls(c, base);
    a.extend(["--pick".into(), r.pick.clone()]);
    if r.method != "GET" {
        a.extend(["-X".into(), r.method.clone()]);
    }
    for h in &r.headers {
        a.extend(["-H".into(), h.clone()]);
    }
    if let Some(b) = &r.body {
        a.extend(["--body".into(), b.clone()]);
    }
    if !r.keep_alive {
        a.push("--no-keep-alive".into());
    }
    if let Some(k) = r.calls_per_connection {
        a.extend(["--calls-per-connection".into(), k.to_string()]);
    }
    a.extend(["--timeout".into(), arg_dur(r.timeout)]);
    a.extend(["--connect-timeout".into(), arg_dur(r.connect_timeout)]);
    if let Some(t) = r.threads {
        a.extend(["--threads".into(), t.to_string()]);
    }
    if c.load.think.is_some_and(|t| !t.1.is_zero()) {
        let (lo, hi) = c.load.think.unwrap_or_default();
        a.extend([
            "--think".into(),
            format!("{}..{}", arg_dur(lo), arg_dur(hi)),
        ]);
    }
    if !c.load.closed {
        a.extend(["--arrival".into(), c.load.arrival.clone()]);
        a.extend(["--connections".into(), c.load.connections.to_string()]);
    }
    if observe {
        for w in watch(c) {
            a.extend(["--watch".into(), w]);
        }
        if let Server::Lab { spec, .. } = &c.server {
            if c.observe.fpm_status && spec.stack.uses_fpm() {
                a.extend(["--fpm-status".into(), format!("{base}/fpm-status")]);
            }
        }
        a.extend(["--sample-every".into(), arg_dur(c.observe.sample_every)]);
    }
    a
}

fn levels_arg(c: &Config) -> String {
    c.load
        .levels
        .iter()
        .map(|v| format!("{v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The run as an `overload sweep|capacity` command line (without the program name).
pub fn run_args(c: &Config, base: &str, out: &str, name: &str, quiet: bool) -> Vec<String> {
    let l = &c.load;
    let mut a: Vec<String> = vec![match l.kind {
        Kind::Capacity => "capacity".into(),
        _ => "sweep".into(),
    }];
    a.extend(common_args(c, base, true));
    match l.kind {
        Kind::Capacity => {
            a.extend(["--start".into(), format!("{}", l.start)]);
            a.extend(["--max".into(), format!("{}", l.max)]);
            a.extend(["--precision".into(), format!("{}", l.precision)]);
        }
        Kind::Sweep | Kind::Steps => {
            let flag = if l.closed { "--users" } else { "--rates" };
            a.extend([flag.into(), levels_arg(c)]);
            if l.kind == Kind::Steps {
                // Fixed steps: every level runs, whatever happens (no stop rule).
                a.extend(["--past-saturation".into(), "1000000".into()]);
                a.extend(["--max-errors".into(), "100%".into()]);
            } else {
                a.extend(["--past-saturation".into(), l.past_saturation.to_string()]);
                a.extend(["--max-errors".into(), format!("{}", l.max_errors)]);
                if let Some(m) = l.max_p99 {
                    a.extend(["--max-p99".into(), arg_dur(m)]);
                }
            }
        }
    }
    a.extend(["--warmup".into(), arg_dur(l.warmup)]);
    a.extend(["--step".into(), arg_dur(l.step)]);
    a.extend(["--rest".into(), arg_dur(l.rest)]);
    if let Some(s) = &l.slo {
        a.extend(["--slo".into(), s.clone()]);
    }
    a.extend(["--out".into(), out.into(), "--name".into(), name.into()]);
    if quiet {
        a.push("-q".into());
    }
    a
}

/// The warm-up round as an `overload run` command line: the plan's first level for the
/// warm-up's length, not stored.
pub fn warmup_args(c: &Config, base: &str) -> Vec<String> {
    let l = &c.load;
    let mut a: Vec<String> = vec!["run".into()];
    a.extend(common_args(c, base, false));
    match (l.kind, l.closed) {
        (Kind::Capacity, _) => a.extend(["--rate".into(), format!("{}", l.start)]),
        (_, true) => a.extend(["--users".into(), format!("{}", l.levels[0])]),
        (_, false) => a.extend(["--rate".into(), format!("{}", l.levels[0])]),
    }
    a.extend(["--duration".into(), arg_dur(c.warmup), "-q".into()]);
    a
}

/// Shell-quoted command for display.
pub fn shell(args: &[String]) -> String {
    let mut v = vec!["overload".to_string()];
    v.extend(args.iter().cloned());
    crate::units::shell_join(&v)
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
        exp.file.display(),
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
            Server::Lab { spec, db } => {
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
        let levels = match l.kind {
            Kind::Capacity => format!(
                "capacity search {}..{} req/s under '{}'",
                l.start,
                l.max,
                l.slo.as_deref().unwrap_or("")
            ),
            _ => format!(
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
        let _ = writeln!(
            o,
            "  run:    {}",
            shell(&run_args(
                c,
                &base,
                &format!("{dir}/{}-r1", c.name),
                &c.name,
                false
            ))
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
    use std::path::Path;

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

    #[test]
    fn args_round_trip_through_the_cli() {
        use clap::Parser;
        #[derive(Parser)]
        #[command(no_binary_name = true)]
        struct W {
            #[command(subcommand)]
            c: crate::cli::Command,
        }
        let x = parse(FILE, Path::new("m.toml"), false).unwrap();
        for c in &x.configs {
            let base = base_url(c);
            W::try_parse_from(run_args(c, &base, "/tmp/x", "x", true)).unwrap();
            W::try_parse_from(warmup_args(c, &base)).unwrap();
        }
    }
}
