//! The experiment file (TOML): what it may say ([`RawFile`]), and its validation into an
//! [`Experiment`] whose every value is checked. Errors are one line naming the file and the
//! key (`s5.toml:12:8: [load] step: …` for what TOML itself rejects, `s5.toml: config
//! 'fpm' knobs.pm: …` for values checked afterwards), with exit code 2.
use super::plan;
use crate::lab::{Engine, Knobs, Pm, Stack, StackSpec};
use crate::units::{parse_duration, parse_duration_range};
use crate::Error;
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A value written as a string or a number (`step = "10s"` or `step = 10`), or a list of
/// numbers (`users = [1, 2, 4]`, kept as `"1,2,4"`): parsed later by the units parsers, so
/// the file accepts exactly what the command line accepts.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Text(pub String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, a number or a list of numbers")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Text, A::Error> {
                let mut parts = Vec::new();
                while let Some(Text(t)) = seq.next_element::<Text>()? {
                    parts.push(t);
                }
                Ok(Text(parts.join(",")))
            }
        }
        d.deserialize_any(V)
    }
}

/// One string or a list of strings (`path = "/a"` or `path = ["/a", "/b"]`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct List(pub Vec<String>);

impl<'de> Deserialize<'de> for List {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<List, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = List;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a list of strings")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<List, E> {
                Ok(List(vec![v.to_string()]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<List, A::Error> {
                let mut v = Vec::new();
                while let Some(s) = seq.next_element::<String>()? {
                    v.push(s);
                }
                Ok(List(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// The file as written.
#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct RawFile {
    pub name: Option<String>,
    pub description: Option<String>,
    /// Runs of every configuration (the spread across them is reported).
    pub repetitions: Option<u32>,
    /// Warm-up round before every run, after the (re)start: load at the plan's first level,
    /// not stored (S2). "0s" turns it off.
    pub warmup: Option<Text>,
    /// The lab's directory (default: $OVERLOAD_LAB_DIR or /tmp/overload-lab).
    pub lab_prefix: Option<String>,
    #[serde(default)]
    pub request: RawRequest,
    #[serde(default)]
    pub load: RawLoad,
    #[serde(default)]
    pub observe: RawObserve,
    pub quick: Option<RawQuick>,
    #[serde(default)]
    pub config: Vec<RawConfig>,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct RawRequest {
    /// Path(s) appended to the server's base URL, or full http:// URLs.
    pub path: Option<List>,
    pub pick: Option<String>,
    pub method: Option<String>,
    pub headers: Option<Vec<String>>,
    pub body: Option<String>,
    pub keep_alive: Option<bool>,
    pub calls_per_connection: Option<u32>,
    pub timeout: Option<Text>,
    pub connect_timeout: Option<Text>,
    pub threads: Option<usize>,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct RawLoad {
    /// sweep (stop rules apply), steps (every level, no stop rule) or capacity.
    pub kind: Option<String>,
    pub users: Option<Text>,
    pub rates: Option<Text>,
    pub think: Option<Text>,
    pub step: Option<Text>,
    pub warmup: Option<Text>,
    pub rest: Option<Text>,
    pub past_saturation: Option<usize>,
    pub max_errors: Option<Text>,
    pub max_p99: Option<Text>,
    pub slo: Option<String>,
    pub start: Option<f64>,
    pub max: Option<f64>,
    pub precision: Option<Text>,
    pub arrival: Option<String>,
    pub connections: Option<usize>,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct RawObserve {
    pub watch: Option<Vec<String>>,
    pub fpm_status: Option<bool>,
    pub sample_every: Option<Text>,
}

/// What `--quick` changes before the automatic scaling (plan::quick).
#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct RawQuick {
    /// Target length of the whole quick run (default 60s).
    pub budget: Option<Text>,
    pub repetitions: Option<u32>,
    pub warmup: Option<Text>,
    #[serde(default)]
    pub load: RawLoad,
    #[serde(default)]
    pub request: RawRequest,
}

/// A configuration's own `--quick` overrides.
#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct RawConfigQuick {
    pub warmup: Option<Text>,
    #[serde(default)]
    pub load: RawLoad,
    #[serde(default)]
    pub request: RawRequest,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    /// Run folder name; with matrix axes, may hold `{stack}` and `{knob}` placeholders.
    pub name: Option<String>,
    /// Configurations of one group are compared together (one section of the report).
    pub group: Option<String>,
    /// A lab stack, or a list of them (a matrix axis).
    pub stack: Option<List>,
    /// Lab knobs; a list value is a matrix axis.
    pub knobs: Option<BTreeMap<String, toml::Value>>,
    pub port: Option<u16>,
    pub no_db: Option<bool>,
    /// Any server: a shell command that starts it (it may stay in the foreground).
    pub setup: Option<String>,
    pub teardown: Option<String>,
    /// URL that answers once the server is ready.
    pub ready: Option<String>,
    /// Base URL the request paths are appended to (default: the ready URL's origin).
    pub url: Option<String>,
    pub ready_timeout: Option<Text>,
    pub warmup: Option<Text>,
    #[serde(default)]
    pub request: RawRequest,
    #[serde(default)]
    pub load: RawLoad,
    pub observe: Option<RawObserve>,
    pub quick: Option<RawConfigQuick>,
}

/// `self` with every field that `over` sets replaced.
trait Merge {
    fn merge(&self, over: &Self) -> Self;
}

macro_rules! merge_fields {
    ($t:ty, $($f:ident),*) => {
        impl Merge for $t {
            fn merge(&self, over: &Self) -> Self {
                Self { $($f: over.$f.clone().or_else(|| self.$f.clone()),)* }
            }
        }
    };
}

merge_fields!(
    RawRequest,
    path,
    pick,
    method,
    headers,
    body,
    keep_alive,
    calls_per_connection,
    timeout,
    connect_timeout,
    threads
);
merge_fields!(RawObserve, watch, fpm_status, sample_every);

impl Merge for RawLoad {
    fn merge(&self, over: &Self) -> Self {
        let pick = |a: &Option<Text>, b: &Option<Text>| b.clone().or_else(|| a.clone());
        // Levels come as a pair: an override that names users or rates replaces both, so a
        // configuration can switch between open and closed loop.
        // A capacity search finds its own rates: inherited levels do not apply to it.
        let to_capacity = over.kind.as_deref() == Some("capacity");
        let (users, rates) = if over.users.is_some() || over.rates.is_some() || to_capacity {
            (over.users.clone(), over.rates.clone())
        } else {
            (self.users.clone(), self.rates.clone())
        };
        RawLoad {
            kind: over.kind.clone().or_else(|| self.kind.clone()),
            users,
            rates,
            think: pick(&self.think, &over.think),
            step: pick(&self.step, &over.step),
            warmup: pick(&self.warmup, &over.warmup),
            rest: pick(&self.rest, &over.rest),
            past_saturation: over.past_saturation.or(self.past_saturation),
            max_errors: pick(&self.max_errors, &over.max_errors),
            max_p99: pick(&self.max_p99, &over.max_p99),
            slo: over.slo.clone().or_else(|| self.slo.clone()),
            start: over.start.or(self.start),
            max: over.max.or(self.max),
            precision: pick(&self.precision, &over.precision),
            arrival: over.arrival.clone().or_else(|| self.arrival.clone()),
            connections: over.connections.or(self.connections),
        }
    }
}

// ---------------------------------------------------------------------------------------
// The validated experiment.

#[derive(Debug, Clone, PartialEq)]
pub struct Experiment {
    pub file: PathBuf,
    pub name: String,
    pub description: String,
    pub repetitions: u32,
    pub lab_prefix: Option<PathBuf>,
    pub configs: Vec<Config>,
    /// FNV-1a of the file's bytes and the --quick flag: --resume refuses a changed file.
    pub fingerprint: String,
    pub quick: bool,
    /// --quick: the whole experiment's target length.
    pub budget: Duration,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub name: String,
    pub group: String,
    pub server: Server,
    pub request: Request,
    pub load: LoadPlan,
    pub observe: Observe,
    /// Warm-up round before each run (zero: none).
    pub warmup: Duration,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Server {
    /// A lab stack; `db` is MariaDB's own knobs when the configuration sets them.
    Lab { spec: StackSpec, db: Option<Knobs> },
    Command {
        setup: String,
        teardown: Option<String>,
        ready: String,
        url: String,
        ready_timeout: Duration,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub paths: Vec<String>,
    pub pick: String,
    pub method: String,
    pub headers: Vec<String>,
    pub body: Option<String>,
    pub keep_alive: bool,
    pub calls_per_connection: Option<u32>,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub threads: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sweep,
    Steps,
    Capacity,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Sweep => "sweep",
            Kind::Steps => "steps",
            Kind::Capacity => "capacity",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct LoadPlan {
    pub kind: Kind,
    /// Closed loop (users) or open loop (rates).
    pub closed: bool,
    /// Users or rates; for capacity, empty.
    pub levels: Vec<f64>,
    pub think: Option<(Duration, Duration)>,
    pub step: Duration,
    pub warmup: Duration,
    pub rest: Duration,
    pub past_saturation: usize,
    pub max_errors: f64,
    pub max_p99: Option<Duration>,
    pub slo: Option<String>,
    pub start: f64,
    pub max: f64,
    pub precision: f64,
    pub arrival: String,
    pub connections: usize,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Observe {
    /// `None`: the lab stack's own watch list.
    pub watch: Option<Vec<String>>,
    pub fpm_status: bool,
    pub sample_every: Duration,
}

/// Reads, parses and validates FILE; `quick` applies the `[quick]` tables and scales the
/// durations (plan::quick).
pub fn load(file: &Path, quick: bool) -> crate::Result<Experiment> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| Error::usage(format!("{}: cannot read: {e}", file.display())))?;
    let mut exp = parse(&text, file, quick)?;
    if quick {
        plan::quick(&mut exp);
    }
    Ok(exp)
}

/// FNV-1a, 64 bits: stable across builds (std's hasher is not), enough to notice an edit.
fn fnv1a(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// 1-based line and column of a byte offset.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// `[table] key` for the line holding a byte offset: the nearest table header above and the
/// key before `=` on that line, so a TOML error names the key as the user wrote it.
fn key_at(text: &str, at: usize) -> String {
    let at = at.min(text.len());
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next().unwrap_or("");
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim().to_string())
        .filter(|k| !k.is_empty() && !k.starts_with('['));
    let table = text[..start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|l| l.split('#').next().unwrap_or(l).trim().to_string());
    match (table, key) {
        (Some(t), Some(k)) => format!("{t} {k}"),
        (None, Some(k)) => k,
        (Some(t), None) => t,
        (None, None) => String::new(),
    }
}

/// Parses and validates the text of FILE.
pub fn parse(text: &str, file: &Path, quick: bool) -> crate::Result<Experiment> {
    let f = file.display().to_string();
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let msg = e.message().replace('\n', " ");
        let msg = msg.trim();
        match e.span() {
            Some(span) => {
                let (l, c) = line_col(text, span.start);
                let key = key_at(text, span.start);
                if key.is_empty() {
                    Error::usage(format!("{f}:{l}:{c}: {msg}"))
                } else {
                    Error::usage(format!("{f}:{l}:{c}: {key}: {msg}"))
                }
            }
            None => Error::usage(format!("{f}: {msg}")),
        }
    })?;
    let mut fp = text.as_bytes().to_vec();
    fp.push(u8::from(quick));
    validate(raw, file, quick, fnv1a(&fp))
}

fn err(file: &Path, key: &str, msg: impl fmt::Display) -> Error {
    Error::usage(format!("{}: {key}: {msg}", file.display()))
}

fn dur(file: &Path, key: &str, t: &Option<Text>, default: Duration) -> crate::Result<Duration> {
    match t {
        None => Ok(default),
        Some(Text(s)) => parse_duration(s).map_err(|e| err(file, key, e)),
    }
}

/// `20%` or `0.2`.
fn share(file: &Path, key: &str, t: &Option<Text>, default: f64) -> crate::Result<f64> {
    match t {
        None => Ok(default),
        Some(Text(s)) => crate::units::parse_share(s).map_err(|e| err(file, key, e)),
    }
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 80
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !s.starts_with('.')
}

fn validate(
    raw: RawFile,
    file: &Path,
    quick: bool,
    fingerprint: String,
) -> crate::Result<Experiment> {
    let name = match &raw.name {
        Some(n) if !is_name(n) => {
            return Err(err(
                file,
                "name",
                format!("'{n}' must be letters, digits, '-', '_' or '.'"),
            ))
        }
        Some(n) => n.clone(),
        None => {
            let stem = file
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("experiment");
            let s: String = stem
                .chars()
                .map(|c| if is_name(&c.to_string()) { c } else { '-' })
                .collect();
            if s.is_empty() {
                "experiment".into()
            } else {
                s
            }
        }
    };
    let q = raw.quick.clone().filter(|_| quick).unwrap_or_default();
    let mut repetitions = raw.repetitions.unwrap_or(1);
    if repetitions == 0 || repetitions > 100 {
        return Err(err(
            file,
            "repetitions",
            format!("{repetitions}: use 1 to 100"),
        ));
    }
    if quick {
        repetitions = q.repetitions.unwrap_or(1).clamp(1, 100);
    }
    let budget = dur(file, "[quick] budget", &q.budget, Duration::from_secs(60))?;
    if budget.is_zero() {
        return Err(err(file, "[quick] budget", "must be above zero"));
    }
    let warmup_text = if quick {
        q.warmup.clone().or(raw.warmup.clone())
    } else {
        raw.warmup.clone()
    };
    let load = if quick {
        raw.load.merge(&q.load)
    } else {
        raw.load.clone()
    };
    let request = if quick {
        raw.request.merge(&q.request)
    } else {
        raw.request.clone()
    };
    if raw.config.is_empty() {
        return Err(err(
            file,
            "config",
            "no configuration: add at least one [[config]] table",
        ));
    }
    let mut configs: Vec<Config> = Vec::new();
    for (i, c) in raw.config.iter().enumerate() {
        let label = match &c.name {
            Some(n) => format!("config '{n}'"),
            None => format!("config[{}]", i + 1),
        };
        let cq = c.quick.clone().filter(|_| quick).unwrap_or_default();
        let cload = load.merge(&c.load).merge(&cq.load);
        let creq = request.merge(&c.request).merge(&cq.request);
        let cobs = raw.observe.merge(&c.observe.clone().unwrap_or_default());
        let cwarm = cq
            .warmup
            .clone()
            .or(c.warmup.clone())
            .or(warmup_text.clone());
        let plan = load_plan(file, &label, &cload)?;
        let req = request_of(file, &label, &creq)?;
        let observe = Observe {
            watch: cobs.watch.clone(),
            fpm_status: cobs.fpm_status.unwrap_or(false),
            sample_every: dur(
                file,
                &format!("{label} observe.sample_every"),
                &cobs.sample_every,
                Duration::from_secs(1),
            )?,
        };
        let warmup = dur(
            file,
            &format!("{label} warmup"),
            &cwarm,
            Duration::from_secs(5),
        )?;
        let group = c.group.clone().unwrap_or_else(|| "main".into());
        for (cname, server) in servers(file, &label, c)? {
            if let Some(o) = configs.iter().find(|o| o.name == cname) {
                return Err(err(
                    file,
                    &format!("{label} name"),
                    format!(
                        "'{}' is used twice (configuration names name the run folders)",
                        o.name
                    ),
                ));
            }
            configs.push(Config {
                name: cname,
                group: group.clone(),
                server,
                request: req.clone(),
                load: plan.clone(),
                observe: observe.clone(),
                warmup,
            });
        }
    }
    // A group is one comparison: its loads must share a unit (compare::check_modes).
    for c in &configs {
        if let Some(o) = configs
            .iter()
            .find(|o| o.group == c.group && o.load.closed != c.load.closed)
        {
            return Err(err(
                file,
                &format!("config '{}' load", c.name),
                format!(
                    "group '{}' mixes closed loop (users) and open loop (rates) with '{}'; give them different `group`s",
                    c.group, o.name
                ),
            ));
        }
    }
    Ok(Experiment {
        file: file.to_path_buf(),
        name,
        description: raw.description.clone().unwrap_or_default(),
        repetitions,
        lab_prefix: raw.lab_prefix.as_ref().map(PathBuf::from),
        configs,
        fingerprint,
        quick,
        budget,
    })
}

fn load_plan(file: &Path, label: &str, l: &RawLoad) -> crate::Result<LoadPlan> {
    let key = |k: &str| format!("{label} load.{k}");
    let kind = match l.kind.as_deref().unwrap_or("sweep") {
        "sweep" => Kind::Sweep,
        "steps" => Kind::Steps,
        "capacity" => Kind::Capacity,
        other => {
            return Err(err(
                file,
                &key("kind"),
                format!("'{other}' is not one of sweep, steps, capacity"),
            ))
        }
    };
    let (closed, levels) = match (&l.users, &l.rates, kind) {
        (Some(_), _, Kind::Capacity) => {
            return Err(err(
                file,
                &key("users"),
                "a capacity search steps the request rate: use start/max, not users",
            ))
        }
        (None, _, Kind::Capacity) => (false, Vec::new()),
        (Some(_), Some(_), _) => {
            return Err(err(file, &key("rates"), "give users or rates, not both"))
        }
        (Some(Text(u)), None, _) => (
            true,
            crate::plan::steps::parse_users(u)
                .map_err(|e| err(file, &key("users"), e.replace("--users ", "")))?
                .into_iter()
                .map(|v| v as f64)
                .collect(),
        ),
        (None, Some(Text(r)), _) => (
            false,
            crate::plan::steps::parse_levels(r, "rates")
                .map_err(|e| err(file, &key("rates"), e))?,
        ),
        (None, None, _) => {
            return Err(err(
                file,
                &key("users"),
                "no load levels: give users (closed loop) or rates (open loop)",
            ))
        }
    };
    let think = match &l.think {
        None => None,
        Some(_) if !closed => {
            return Err(err(
                file,
                &key("think"),
                "think time applies to users (closed loop), not to rates",
            ))
        }
        Some(Text(t)) => Some(parse_duration_range(t).map_err(|e| err(file, &key("think"), e))?),
    };
    let step = dur(file, &key("step"), &l.step, Duration::from_secs(30))?;
    if step.is_zero() {
        return Err(err(file, &key("step"), "must be above zero"));
    }
    let max_p99 = match &l.max_p99 {
        None => None,
        Some(Text(t)) => Some(parse_duration(t).map_err(|e| err(file, &key("max_p99"), e))?),
    };
    if let Some(s) = &l.slo {
        crate::analysis::slo::parse(s).map_err(|e| err(file, &key("slo"), e))?;
    }
    if kind == Kind::Capacity && l.slo.is_none() {
        return Err(err(
            file,
            &key("slo"),
            "a capacity search needs an SLO, e.g. slo = \"p99<500ms,errors<1%\"",
        ));
    }
    let start = l.start.unwrap_or(50.0);
    let max = l.max.unwrap_or(100_000.0);
    if !(start.is_finite() && start > 0.0) {
        return Err(err(file, &key("start"), "must be a rate above zero"));
    }
    if !(max.is_finite() && max >= start) {
        return Err(err(file, &key("max"), "must be at least start"));
    }
    let precision = share(file, &key("precision"), &l.precision, 0.05)?;
    if precision <= 0.0 {
        return Err(err(file, &key("precision"), "must be above 0%"));
    }
    let arrival = l.arrival.clone().unwrap_or_else(|| "constant".into());
    if !matches!(arrival.as_str(), "constant" | "poisson") {
        return Err(err(
            file,
            &key("arrival"),
            format!("'{arrival}' is not one of constant, poisson"),
        ));
    }
    let connections = l.connections.unwrap_or(10_000);
    if connections == 0 {
        return Err(err(file, &key("connections"), "must be at least 1"));
    }
    Ok(LoadPlan {
        kind,
        closed,
        levels,
        think,
        step,
        warmup: dur(file, &key("warmup"), &l.warmup, Duration::from_secs(5))?,
        rest: dur(file, &key("rest"), &l.rest, Duration::from_secs(5))?,
        past_saturation: l.past_saturation.unwrap_or(2),
        max_errors: share(file, &key("max_errors"), &l.max_errors, 0.2)?,
        max_p99,
        slo: l.slo.clone(),
        start,
        max,
        precision,
        arrival,
        connections,
    })
}

fn request_of(file: &Path, label: &str, r: &RawRequest) -> crate::Result<Request> {
    let key = |k: &str| format!("{label} request.{k}");
    let paths = r
        .path
        .clone()
        .map(|l| l.0)
        .unwrap_or_else(|| vec!["/".into()]);
    if paths.is_empty() {
        return Err(err(file, &key("path"), "empty list"));
    }
    for p in &paths {
        if !(p.starts_with('/') || p.starts_with("http://")) {
            return Err(err(
                file,
                &key("path"),
                format!("'{p}' must start with '/' (or be a full http:// URL)"),
            ));
        }
    }
    let pick = r.pick.clone().unwrap_or_else(|| "sequence".into());
    if !matches!(pick.as_str(), "sequence" | "random") {
        return Err(err(
            file,
            &key("pick"),
            format!("'{pick}' is not one of sequence, random"),
        ));
    }
    let method = r.method.clone().unwrap_or_else(|| "GET".into());
    crate::plan::parse_method(&method).map_err(|e| err(file, &key("method"), e))?;
    let headers = r.headers.clone().unwrap_or_default();
    for h in &headers {
        crate::plan::parse_header(h).map_err(|e| err(file, &key("headers"), e))?;
    }
    let keep_alive = r.keep_alive.unwrap_or(true);
    if r.calls_per_connection == Some(0) {
        return Err(err(
            file,
            &key("calls_per_connection"),
            "must be at least 1",
        ));
    }
    if !keep_alive && r.calls_per_connection.is_some_and(|k| k > 1) {
        return Err(err(
            file,
            &key("calls_per_connection"),
            "contradicts keep_alive = false",
        ));
    }
    if r.threads.is_some_and(|t| t == 0 || t > 1024) {
        return Err(err(file, &key("threads"), "use 1 to 1024"));
    }
    let timeout = dur(file, &key("timeout"), &r.timeout, Duration::from_secs(10))?;
    let connect_timeout = dur(
        file,
        &key("connect_timeout"),
        &r.connect_timeout,
        Duration::from_secs(3),
    )?;
    if timeout.is_zero() || connect_timeout.is_zero() {
        return Err(err(file, &key("timeout"), "timeouts must be above zero"));
    }
    Ok(Request {
        paths,
        pick,
        method,
        headers,
        body: r.body.clone(),
        keep_alive,
        calls_per_connection: r.calls_per_connection,
        timeout,
        connect_timeout,
        threads: r.threads,
    })
}

/// `on`/`off`, `true`/`false`.
fn knob_bool(v: &toml::Value) -> Option<bool> {
    match v {
        toml::Value::Boolean(b) => Some(*b),
        toml::Value::String(s) => match s.as_str() {
            "on" | "true" | "yes" => Some(true),
            "off" | "false" | "no" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

fn knob_count(v: &toml::Value) -> Option<u32> {
    match v {
        toml::Value::Integer(i) => u32::try_from(*i).ok(),
        _ => None,
    }
}

/// Display of one knob value in generated names: `8`, `on`, `dynamic`.
pub fn knob_text(v: &toml::Value) -> String {
    match v {
        toml::Value::Boolean(b) => if *b { "on" } else { "off" }.into(),
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The configuration's server(s): one, or one per point of its matrix.
fn servers(file: &Path, label: &str, c: &RawConfig) -> crate::Result<Vec<(String, Server)>> {
    let key = |k: &str| format!("{label} {k}");
    match (&c.stack, &c.setup) {
        (Some(_), Some(_)) => Err(err(
            file,
            &key("setup"),
            "give a lab `stack` or a `setup` command, not both",
        )),
        (None, None) => Err(err(
            file,
            &key("stack"),
            "say which server: a lab `stack` (e.g. \"nginx-fpm\") or a `setup` command with a `ready` URL",
        )),
        (None, Some(setup)) => {
            if c.knobs.is_some() || c.port.is_some() || c.no_db.is_some() {
                return Err(err(
                    file,
                    &key("knobs"),
                    "knobs, port and no_db apply to lab stacks; a setup command configures its server itself",
                ));
            }
            let name = c
                .name
                .clone()
                .ok_or_else(|| err(file, &key("name"), "a setup configuration needs a name"))?;
            if !is_name(&name) {
                return Err(err(
                    file,
                    &key("name"),
                    format!("'{name}' must be letters, digits, '-', '_' or '.'"),
                ));
            }
            let ready = c
                .ready
                .clone()
                .ok_or_else(|| err(file, &key("ready"), "a setup command needs a `ready` URL that answers once the server is up"))?;
            let base = origin(&ready).ok_or_else(|| {
                err(file, &key("ready"), format!("'{ready}' is not an http:// URL"))
            })?;
            let url = c.url.clone().unwrap_or(base);
            if origin(&url).is_none() {
                return Err(err(file, &key("url"), format!("'{url}' is not an http:// URL")));
            }
            Ok(vec![(
                name,
                Server::Command {
                    setup: setup.clone(),
                    teardown: c.teardown.clone(),
                    ready,
                    url: url.trim_end_matches('/').to_string(),
                    ready_timeout: dur(file, &key("ready_timeout"), &c.ready_timeout, Duration::from_secs(30))?,
                },
            )])
        }
        (Some(stacks), None) => {
            if c.teardown.is_some() || c.ready.is_some() || c.url.is_some() {
                return Err(err(
                    file,
                    &key("ready"),
                    "teardown, ready and url go with a setup command; the lab knows its stacks",
                ));
            }
            lab_servers(file, label, c, stacks)
        }
    }
}

/// `http://host:port` of an http:// URL.
pub fn origin(url: &str) -> Option<String> {
    let rest = url.strip_prefix("http://")?;
    let auth = rest.split('/').next()?;
    (!auth.is_empty()).then(|| format!("http://{auth}"))
}

fn lab_servers(
    file: &Path,
    label: &str,
    c: &RawConfig,
    stacks: &List,
) -> crate::Result<Vec<(String, Server)>> {
    let key = |k: &str| format!("{label} {k}");
    if stacks.0.is_empty() {
        return Err(err(file, &key("stack"), "empty list"));
    }
    let mut parsed = Vec::new();
    for s in &stacks.0 {
        let st: Stack = s.parse().map_err(|e: Error| err(file, &key("stack"), e))?;
        if !st.is_web() {
            return Err(err(
                file,
                &key("stack"),
                format!("'{s}' is not a web stack; set MariaDB's query_cache/engine as knobs of a web stack"),
            ));
        }
        parsed.push(st);
    }
    let knobs = c.knobs.clone().unwrap_or_default();
    let points = plan::matrix(&parsed, &knobs);
    let axes = plan::axes(&parsed, &knobs);
    let mut out = Vec::new();
    for (stack, values) in points {
        let name = plan::point_name(c.name.as_deref(), stack, &values, &axes);
        if !is_name(&name) {
            return Err(err(
                file,
                &key("name"),
                format!("'{name}' must be letters, digits, '-', '_' or '.' (placeholders: {{stack}} and the knobs)"),
            ));
        }
        let (k, db) = knobs_of(file, &format!("config '{name}'"), stack, &values)?;
        let spec = StackSpec {
            knobs: k,
            port: c.port,
            no_db: c.no_db.unwrap_or(false),
            ..StackSpec::new(stack)
        };
        // Every rule the lab checks at `up`, checked now: a typo fails before the first run.
        spec.resolve()
            .map_err(|e| err(file, &format!("config '{name}' knobs"), e))?;
        if db.is_some() && spec.no_db {
            return Err(err(
                file,
                &format!("config '{name}' knobs"),
                "query_cache/engine configure MariaDB, which no_db turns off",
            ));
        }
        out.push((name, Server::Lab { spec, db }));
    }
    Ok(out)
}

/// Lab knobs from the file's values. `workers` means worker processes on every stack
/// (max_children for PHP-FPM) so one matrix axis spans stacks (S2); query_cache and engine
/// go to the MariaDB the stack uses.
fn knobs_of(
    file: &Path,
    label: &str,
    stack: Stack,
    values: &BTreeMap<String, toml::Value>,
) -> crate::Result<(Knobs, Option<Knobs>)> {
    let mut k = Knobs::default();
    let mut db = Knobs::default();
    for (name, v) in values {
        let key = format!("{label} knobs.{name}");
        let bad = |want: &str| err(file, &key, format!("{} is not {want}", knob_text(v)));
        match name.as_str() {
            "pm" => {
                k.pm = Some(match v.as_str() {
                    Some("static") => Pm::Static,
                    Some("dynamic") => Pm::Dynamic,
                    Some("ondemand") => Pm::Ondemand,
                    _ => return Err(bad("one of static, dynamic, ondemand")),
                })
            }
            "engine" => {
                db.engine = Some(match v.as_str() {
                    Some("innodb") => Engine::Innodb,
                    Some("myisam") => Engine::Myisam,
                    _ => return Err(bad("one of innodb, myisam")),
                })
            }
            "opcache" => k.opcache = Some(knob_bool(v).ok_or_else(|| bad("on or off"))?),
            "keep_alive" => k.keep_alive = Some(knob_bool(v).ok_or_else(|| bad("on or off"))?),
            "query_cache" => {
                db.query_cache = Some(knob_bool(v).ok_or_else(|| bad("on or off"))?)
            }
            "workers" | "max_children" | "start_servers" | "min_spare" | "max_spare" => {
                let n = knob_count(v).ok_or_else(|| bad("a whole number"))?;
                let slot = match name.as_str() {
                    "workers" if stack.uses_fpm() => {
                        if values.contains_key("max_children") {
                            return Err(err(
                                file,
                                &key,
                                "give workers or max_children, not both (workers is max_children on PHP-FPM)",
                            ));
                        }
                        &mut k.max_children
                    }
                    "workers" => &mut k.workers,
                    "max_children" => &mut k.max_children,
                    "start_servers" => &mut k.start_servers,
                    "min_spare" => &mut k.min_spare,
                    _ => &mut k.max_spare,
                };
                *slot = Some(n);
            }
            other => {
                return Err(err(
                    file,
                    &key,
                    format!("unknown knob '{other}' (knobs: pm, workers, max_children, start_servers, min_spare, max_spare, opcache, keep_alive, query_cache, engine)"),
                ))
            }
        }
    }
    let db = (db != Knobs::default()).then_some(db);
    Ok((k, db))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "demo"
repetitions = 2
warmup = "2s"

[request]
path = "/sleep?ms=20"

[load]
users = [1, 2, 4]
step = "3s"
warmup = "1s"
rest = 1

[[config]]
name = "w4"
setup = "overload target --listen 127.0.0.1:18991 --workers 4"
ready = "http://127.0.0.1:18991/"

[[config]]
name = "{stack}-w{workers}"
stack = ["nginx-fpm", "apache-prefork"]
knobs = { workers = [4, 8], opcache = true, query_cache = "on" }
load = { users = "1:9:4", step = "2s" }
"#;

    fn p(text: &str) -> crate::Result<Experiment> {
        parse(text, Path::new("x.toml"), false)
    }

    fn e(text: &str) -> String {
        let e = p(text).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        let s = e.to_string();
        assert!(!s.contains('\n'), "one line: {s}");
        assert!(s.starts_with("x.toml"), "names the file: {s}");
        s
    }

    #[test]
    fn good_file() {
        let x = p(GOOD).unwrap();
        assert_eq!(x.name, "demo");
        assert_eq!(x.repetitions, 2);
        let names: Vec<&str> = x.configs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "w4",
                "nginx-fpm-w4",
                "nginx-fpm-w8",
                "apache-prefork-w4",
                "apache-prefork-w8"
            ]
        );
        let w4 = &x.configs[0];
        assert_eq!(w4.warmup, Duration::from_secs(2));
        assert_eq!(w4.load.levels, [1.0, 2.0, 4.0]);
        assert!(w4.load.closed);
        assert_eq!(w4.load.rest, Duration::from_secs(1));
        assert_eq!(w4.request.paths, ["/sleep?ms=20"]);
        match &w4.server {
            Server::Command { url, .. } => assert_eq!(url, "http://127.0.0.1:18991"),
            s => panic!("{s:?}"),
        }
        let fpm = &x.configs[2];
        assert_eq!(fpm.load.levels, [1.0, 5.0, 9.0]);
        assert_eq!(fpm.load.step, Duration::from_secs(2));
        assert_eq!(fpm.load.warmup, Duration::from_secs(1), "inherited");
        match &fpm.server {
            Server::Lab { spec, db } => {
                assert_eq!(
                    spec.knobs.max_children,
                    Some(8),
                    "workers = max_children on FPM"
                );
                assert_eq!(db.as_ref().unwrap().query_cache, Some(true));
            }
            s => panic!("{s:?}"),
        }
        match &x.configs[4].server {
            Server::Lab { spec, .. } => assert_eq!(spec.knobs.workers, Some(8)),
            s => panic!("{s:?}"),
        }
        // The same text gives the same fingerprint; --quick another.
        assert_eq!(p(GOOD).unwrap().fingerprint, x.fingerprint);
        let q = parse(GOOD, Path::new("x.toml"), true).unwrap();
        assert_ne!(q.fingerprint, x.fingerprint);
        assert_eq!(q.repetitions, 1);
    }

    #[test]
    fn toml_errors_name_line_and_key() {
        let s = e("[load]\nusers = [1, 2]\nstep = true\n[[config]]\nname='a'\nsetup='x'\nready='http://127.0.0.1:1/'\n");
        assert!(s.starts_with("x.toml:3:"), "{s}");
        assert!(s.contains("[load] step"), "{s}");
        let s = e("[load]\nusers = 1\nsteps = '3s'\n");
        assert!(
            s.contains("[load] steps") && s.contains("unknown field"),
            "{s}"
        );
        let s = e("[[config]]\nname = 'a'\nstack = 'nginx-fpm'\nknobs = { pm = 3 \n");
        assert!(s.starts_with("x.toml:"), "syntax: {s}");
    }

    #[test]
    fn value_errors_name_the_key() {
        let base = "[load]\nusers = [1, 2]\n";
        let cfg = "[[config]]\nname = 'a'\nsetup = 'true'\nready = 'http://127.0.0.1:9/'\n";
        let cases: Vec<(String, &str)> = vec![
            (format!("{base}step = '3 parsecs'\n{cfg}"), "config 'a' load.step"),
            (format!("[load]\nrates = '10:5:1'\n{cfg}"), "config 'a' load.rates"),
            (format!("[load]\nkind = 'bisect'\nusers = 1\n{cfg}"), "load.kind"),
            (format!("[load]\nusers = 1\nmax_errors = '120%'\n{cfg}"), "load.max_errors"),
            (format!("[load]\nkind = 'capacity'\n{cfg}"), "load.slo"),
            (format!("[load]\nrates = 10\nthink = '1s'\n{cfg}"), "load.think"),
            (format!("{base}[request]\npath = 'sleep'\n{cfg}"), "request.path"),
            (format!("{base}repetitions = 0\n{cfg}"), "repetitions"),
            (base.to_string(), "config"),
            (format!("{base}[[config]]\nname = 'a'\nsetup = 'x'\n"), "config 'a' ready"),
            (format!("{base}[[config]]\nname = 'a'\nstack = 'nginx-fpm'\nsetup = 'x'\n"), "config 'a' setup"),
            (format!("{base}[[config]]\nstack = 'nginx-fpn'\n"), "config[1] stack"),
            (format!("{base}[[config]]\nstack = 'mariadb'\n"), "config[1] stack"),
            (format!("{base}[[config]]\nstack = 'nginx-fpm'\nknobs = {{ pm = 'dyn' }}\n"), "knobs.pm"),
            (format!("{base}[[config]]\nstack = 'nginx-fpm'\nknobs = {{ colour = 1 }}\n"), "knobs.colour"),
            (format!("{base}[[config]]\nstack = 'apache-prefork'\nknobs = {{ pm = 'static' }}\n"), "config 'apache-prefork' knobs"),
            (format!("{base}{cfg}{cfg}"), "config 'a' name"),
            (format!("{base}{cfg}[[config]]\nname = 'b'\nsetup = 'true'\nready = 'http://127.0.0.1:9/'\nload = {{ rates = 5 }}\n"), "mixes closed loop"),
        ];
        for (text, want) in cases {
            let s = e(&text);
            assert!(s.contains(want), "expected '{want}' in: {s}");
        }
    }

    #[test]
    fn key_lookup() {
        let t = "a = 1\n[load]\n# c\nstep = true\n";
        assert_eq!(key_at(t, t.find("true").unwrap()), "[load] step");
        assert_eq!(key_at(t, 0), "a");
        assert_eq!(line_col(t, t.find("true").unwrap()), (4, 8));
    }
}
