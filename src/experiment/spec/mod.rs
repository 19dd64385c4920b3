//! The experiment file (TOML): what it may say ([`RawFile`]), and its validation into an
//! [`Experiment`] whose every value is checked. Errors are one line naming the file and the
//! key (`s5.toml:12:8: [load] step: …` for what TOML itself rejects, `s5.toml: config
//! 'fpm' knobs.pm: …` for values checked afterwards), with exit code 2.
//!
//! - `raw`: the file as serde reads it, and how tables override each other;
//! - `load`: the `[load]` and `[request]` tables;
//! - `server`: lab stacks with their knob matrices, or setup commands.
mod load;
mod raw;
mod server;

pub use raw::*;
pub use server::{knob_text, origin};

use super::plan;
use crate::lab::{Knobs, LabOptions, StackSpec};
use crate::units::parse_duration;
use crate::usecase::config::{HttpVersion, TlsConfig};
use crate::Error;
use load::{load_plan, request_of};
use server::servers;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    Lab {
        spec: StackSpec,
        db: Option<Knobs>,
        /// Set: the stack (on the host's loopback) is reached from the load namespace of an
        /// impaired path, through its port relayed to the stack side (`lab netem --forward`).
        network: Option<crate::lab::netem::PathSpec>,
    },
    Command {
        setup: String,
        teardown: Option<String>,
        ready: String,
        url: String,
        ready_timeout: Duration,
        /// Set: the setup command runs in the stack namespace of an impaired path, the
        /// load (and the readiness probe) in its load namespace.
        network: Option<crate::lab::netem::PathSpec>,
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
    /// The command line's types: `--http`, `--streams`, and the TLS options.
    pub http: HttpVersion,
    /// `--alt-svc`: under `http = "auto"`, HTTP/3 when the server's Alt-Svc announces it.
    pub alt_svc: bool,
    pub streams: u32,
    pub tls: TlsConfig,
    /// `--scenario`: users follow this file's requests against the server (paths unused).
    pub scenario: Option<PathBuf>,
    /// `--ok-status`: the statuses that count as success.
    pub ok_status: crate::metrics::OkStatus,
    /// `--io`: the I/O backend.
    pub io: crate::engine::IoChoice,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sweep,
    Steps,
    Capacity,
    /// One run on stages (`stages` / `user_stages`): the load moves along them.
    Ramp,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Sweep => "sweep",
            Kind::Steps => "steps",
            Kind::Capacity => "capacity",
            Kind::Ramp => "ramp",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct LoadPlan {
    pub kind: Kind,
    /// Closed loop (users) or open loop (rates).
    pub closed: bool,
    /// Users or rates; for capacity and ramps, empty.
    pub levels: Vec<f64>,
    /// A ramp's stages (of users when `closed`).
    pub stages: Option<crate::plan::stages::Stages>,
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
    /// Sample the lab stack's worker-pool status pages: /fpm-status, /server-status.
    pub fpm_status: bool,
    pub sample_every: Duration,
}

/// Largest experiment file (a study's is a few KiB).
const MAX_FILE: u64 = 4 << 20;

/// Reads, parses and validates FILE; `quick` applies the `[quick]` tables and scales the
/// durations (plan::quick).
pub fn load(file: &Path, quick: bool) -> crate::Result<Experiment> {
    let text =
        crate::fsutil::read_capped_text(file, MAX_FILE, "experiment file").map_err(Error::usage)?;
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
    name_error(s).is_none()
}

/// Longest experiment name: it ends the folder's name (`<UTC time>-<name>`), well under a
/// file name's 255 bytes.
const MAX_NAME: usize = 80;

/// Why `s` cannot name an experiment (it becomes part of a folder's name), or None.
fn name_error(s: &str) -> Option<String> {
    if s.is_empty() {
        Some("must not be empty".into())
    } else if !s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        Some("must be letters, digits, '-', '_' or '.'".into())
    } else if s.starts_with('.') {
        Some("must not start with '.'".into())
    } else if s.len() > MAX_NAME {
        Some(format!(
            "is {} characters long; at most {MAX_NAME}",
            s.len()
        ))
    } else {
        None
    }
}

/// A lab stack with `tls` is verified against the lab's own CA unless the file says
/// otherwise (`cacert`, `insecure`); TLS keys without an https:// server are an error, as
/// on the command line.
fn tls_for_server(
    file: &Path,
    name: &str,
    req: &Request,
    server: &Server,
    lab_prefix: Option<&str>,
) -> crate::Result<Request> {
    let mut req = req.clone();
    let https = match server {
        Server::Lab { spec, .. } => spec.knobs.tls == Some(true),
        Server::Command { url, .. } => url.starts_with("https://"),
    } || req.paths.iter().any(|p| p.starts_with("https://"));
    if !https && req.alt_svc {
        return Err(err(
            file,
            &format!("config '{name}' request"),
            "alt_svc = true needs an https:// server (the Alt-Svc it follows leads to HTTP/3, which is QUIC, always encrypted)",
        ));
    }
    if !https && req.http == HttpVersion::V3 {
        return Err(err(
            file,
            &format!("config '{name}' request"),
            "http = \"3\" needs an https:// server (HTTP/3 is QUIC, always encrypted; knobs.tls = true for a lab stack)",
        ));
    }
    let d = TlsConfig::default();
    if !https && (req.tls != d) {
        return Err(err(
            file,
            &format!("config '{name}' request"),
            "cacert, insecure, tls_resumption, tls_version and zero_rtt need an https:// server (knobs.tls = true for a lab stack)",
        ));
    }
    if let Server::Lab { .. } = server {
        if https && req.tls.cacert.is_none() && !req.tls.insecure {
            let opts = match lab_prefix {
                Some(p) => LabOptions::new(p),
                None => LabOptions::from_env(),
            };
            req.tls.cacert = Some(crate::lab::tls::TlsFiles::new(&opts.prefix).ca);
        }
    }
    Ok(req)
}

fn validate(
    raw: RawFile,
    file: &Path,
    quick: bool,
    fingerprint: String,
) -> crate::Result<Experiment> {
    let name = match &raw.name {
        Some(n) if !is_name(n) => {
            let shown: String = n.chars().take(MAX_NAME).collect();
            let more = if n.chars().count() > MAX_NAME {
                "…"
            } else {
                ""
            };
            return Err(err(
                file,
                "name",
                format!(
                    "'{}{more}' {}",
                    crate::units::escape_controls(&shown),
                    name_error(n).unwrap_or_default()
                ),
            ));
        }
        Some(n) => n.clone(),
        None => {
            let stem = file
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("experiment");
            let s: String = stem
                .chars()
                .take(MAX_NAME)
                .map(|c| if is_name(&c.to_string()) { c } else { '-' })
                .collect();
            if s.is_empty() {
                "experiment".into()
            } else {
                s
            }
        }
    };
    if let Some(p) = &raw.lab_prefix {
        crate::lab::check_prefix(Path::new(p)).map_err(|e| err(file, "lab_prefix", e))?;
    }
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
        let observe =
            Observe {
                watch: cobs.watch.clone(),
                fpm_status: cobs.fpm_status.unwrap_or(false),
                // Unset: the command line's default (a text, like the file's).
                sample_every: dur(
                    file,
                    &format!("{label} observe.sample_every"),
                    &Some(cobs.sample_every.clone().unwrap_or_else(|| {
                        Text(crate::observe::ObserveArgs::default().sample_every)
                    })),
                    Duration::ZERO,
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
            if configs.len() >= plan::MAX_CONFIGS {
                return Err(err(
                    file,
                    &label,
                    format!("more than {} configurations in all", plan::MAX_CONFIGS),
                ));
            }
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
            let request = tls_for_server(file, &cname, &req, &server, raw.lab_prefix.as_deref())?;
            configs.push(Config {
                name: cname,
                group: group.clone(),
                server,
                request,
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
            Server::Lab { spec, db, .. } => {
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

    /// A name too long is refused for its length, not its letters; a file stem too long is
    /// cut to the longest name.
    #[test]
    fn names_are_refused_for_the_right_reason() {
        let body = "[load]\nusers = 1\n[[config]]\nname = 'a'\nsetup = 'true'\nready = 'http://127.0.0.1:1/'\n";
        let long = "a".repeat(300);
        let e = parse(
            &format!("name = '{long}'\n{body}"),
            Path::new("e.toml"),
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("300 characters long; at most 80"), "{e}");
        assert!(!e.contains("must be letters"), "{e}");
        assert!(e.len() < 200, "{e}");
        let e = parse(
            &format!("name = '../x'\n{body}"),
            Path::new("e.toml"),
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("must be letters"), "{e}");
        let e = parse(&format!("name = '.x'\n{body}"), Path::new("e.toml"), false)
            .unwrap_err()
            .to_string();
        assert!(e.contains("must not start with '.'"), "{e}");
        let x = parse(body, Path::new(&format!("{long}.toml")), false).unwrap();
        assert_eq!(x.name.len(), 80);
        // lab_prefix = "/" would have `lab up` make / private.
        let e = parse(
            &format!("lab_prefix = '/'\n{body}"),
            Path::new("e.toml"),
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("lab_prefix") && e.contains("root directory"),
            "{e}"
        );
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
            // 10^12 points: refused before a single one is built.
            (format!("{base}[[config]]\nstack = 'nginx-fpm'\nknobs = {{ workers = [{l}], max_clients = [{l}], keepalive = [{l}], pm_max_requests = [{l}] }}\n", l = (1..=1000).map(|i| i.to_string()).collect::<Vec<_>>().join(",")), "config[1] knobs"),
            (format!("{base}{cfg}[[config]]\nname = 'b'\nsetup = 'true'\nready = 'http://127.0.0.1:9/'\nload = {{ rates = 5 }}\n"), "mixes closed loop"),
            // Stages: the key, the stage and what is wrong.
            (format!("[load]\nstages = '10s:100, 5m'\n{cfg}"), "config 'a' load.stages: stage 2 '5m': expected DURATION:TARGET"),
            (format!("[load]\nstages = '10s:100'\nrates = 5\n{cfg}"), "load.stages: stages set the levels: leave out users and rates"),
            (format!("[load]\nkind = 'sweep'\nstages = '10s:100'\n{cfg}"), "stages make a ramp, not a sweep"),
            (format!("[load]\nkind = 'ramp'\nusers = 2\n{cfg}"), "a ramp needs stages"),
            (format!("[load]\nuser_stages = '10s:2.5'\n{cfg}"), "load.user_stages: stage 1 '10s:2.5': users are whole"),
            (format!("[load]\nstages = '10s:100'\nuser_stages = '10s:2'\n{cfg}"), "give one"),
            (format!("[load]\nstages = '10s:100'\nthink = '1s'\n{cfg}"), "load.think"),
        ];
        for (text, want) in cases {
            let s = e(&text);
            assert!(s.contains(want), "expected '{want}' in: {s}");
        }
    }

    /// A ramp: its stages replace inherited levels, and the run lasts their sum.
    #[test]
    fn stages_make_a_ramp() {
        let text = "[load]\nusers = [1, 2]\n[[config]]\nname = 'a'\nsetup = 'true'\n\
                    ready = 'http://127.0.0.1:9/'\nload = { user_stages = '0s:2, 10s:20, 5s:0' }\n";
        let x = parse(text, Path::new("e.toml"), false).unwrap();
        let l = &x.configs[0].load;
        assert_eq!(l.kind, Kind::Ramp);
        assert!(l.closed && l.levels.is_empty());
        assert_eq!(l.stages.as_ref().unwrap().to_string(), "0s:2, 10s:20, 5s:0");
        assert_eq!(
            crate::experiment::plan::run_duration(&x.configs[0]),
            Duration::from_secs(1) + x.configs[0].warmup + l.warmup + Duration::from_secs(15)
        );
    }

    #[test]
    fn key_lookup() {
        let t = "a = 1\n[load]\n# c\nstep = true\n";
        assert_eq!(key_at(t, t.find("true").unwrap()), "[load] step");
        assert_eq!(key_at(t, 0), "a");
        assert_eq!(line_col(t, t.find("true").unwrap()), (4, 8));
    }

    /// `request.scenario` is read and checked with the file; its requests replace the paths,
    /// so both together are refused, as is a scenario that does not load.
    #[test]
    fn scenario_key() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.toml");
        std::fs::write(&file, "[[request]]\nname = \"home\"\nurl = \"/\"\n").unwrap();
        let f = file.display();
        let base = "[load]\nusers = [1]\n[[config]]\nstack = \"nginx-fpm\"\n";
        let x = p(&format!("{base}request = {{ scenario = \"{f}\" }}\n")).unwrap();
        assert_eq!(
            x.configs[0].request.scenario.as_deref(),
            Some(file.as_path())
        );
        let c = &x.configs[0];
        let rc = crate::experiment::plan::request_config(c, &crate::experiment::plan::base_url(c));
        assert_eq!(rc.scenario.map(|s| s.file), Some(file.clone()));
        assert_eq!(rc.urls, ["http://127.0.0.1:18081/"]);
        let both = e(&format!(
            "{base}request = {{ scenario = \"{f}\", path = \"/x\" }}\n"
        ));
        assert!(
            both.contains("request.scenario: the scenario's requests replace"),
            "{both}"
        );
        std::fs::write(&file, "[[request]]\nurl = \"/${nope}\"\n").unwrap();
        let bad = e(&format!("{base}request = {{ scenario = \"{f}\" }}\n"));
        assert!(
            bad.contains("request.scenario") && bad.contains("nope"),
            "{bad}"
        );
        assert!(
            p("[load]\nusers = [1]\n[[config]]\nstack = \"nginx-fpm\"\n")
                .unwrap()
                .configs[0]
                .request
                .scenario
                .is_none()
        );
    }

    /// A configuration's `network` table: read into the setup server's path; bad values and
    /// a lab stack refused in one line that names the key.
    #[test]
    fn network_table() {
        let setup = "[load]\nusers = [1]\n[[config]]\nname = \"a\"\nsetup = \"true\"\nready = \"http://10.77.0.2:80/\"\n";
        let x = p(&format!(
            "{setup}network = {{ delay = \"50ms\", jitter = \"4ms\", loss = \"1%\", impair = \"bridge\" }}\n"
        ))
        .unwrap();
        match &x.configs[0].server {
            Server::Command {
                network: Some(n), ..
            } => {
                assert_eq!(n.rtt, Duration::from_millis(50));
                assert_eq!(n.jitter, Duration::from_millis(4));
                assert_eq!(n.loss, 0.01);
                assert_eq!(n.way, crate::lab::netem::Way::Bridge);
            }
            other => panic!("{other:?}"),
        }
        for (extra, want) in [
            ("network = { loss = \"120%\" }", "network.loss"),
            ("network = { delay = \"-1\" }", "network.delay"),
            ("network = { impair = \"tc\" }", "network.impair"),
            (
                "network = { delay = \"10ms\", jitter = \"20ms\" }",
                "--jitter",
            ),
            ("network = { lag = \"1s\" }", "lag"),
        ] {
            let got = e(&format!("{setup}{extra}\n"));
            assert!(got.contains(want), "{extra}: {got}");
        }
        // A lab stack across a path: every point of its matrix is reached through it.
        let x = p("[request]\npath = \"/\"\n[load]\nusers = [1]\n[[config]]\nstack = [\"nginx-fpm\", \"caddy-fpm\"]\nnetwork = { delay = \"50ms\", loss = \"1%\" }\n").unwrap();
        assert_eq!(x.configs.len(), 2);
        for c in &x.configs {
            match &c.server {
                Server::Lab {
                    network: Some(n), ..
                } => assert_eq!((n.rtt, n.loss), (Duration::from_millis(50), 0.01)),
                other => panic!("{other:?}"),
            }
        }
        let got = e(
            "[load]\nusers = [1]\n[[config]]\nstack = \"nginx-fpm\"\nnetwork = { loss = \"2\" }\n",
        );
        assert!(got.contains("network.loss"), "{got}");
    }

    #[test]
    fn protocol_and_tls_keys() {
        let x = p(r#"
lab_prefix = "/tmp/ol-x"
[request]
path = "/static.html"
[load]
users = [1]
[[config]]
name = "h2"
stack = "nginx-fpm"
knobs = { tls = true, http2 = "on" }
request = { http = "2", streams = 10, tls_version = 1.3, tls_resumption = "off" }
[[config]]
name = "own-ca"
setup = "true"
ready = "https://127.0.0.1:18991/"
request = { cacert = "certs/ca.pem", http = "auto", ok_status = "200-399,404", io = "epoll" }
[[config]]
name = "plain"
stack = "nginx-fpm"
"#)
        .unwrap();
        let h2 = &x.configs[0].request;
        assert_eq!((h2.http, h2.streams), (HttpVersion::V2, 10));
        assert!(!h2.tls.resumption);
        assert_eq!(h2.tls.version, Some(crate::engine::tls::TlsVersion::V13));
        // A lab stack with TLS is checked against the lab's CA.
        assert_eq!(
            h2.tls.cacert.as_deref(),
            Some(Path::new("/tmp/ol-x/tls/ca.pem"))
        );
        match &x.configs[0].server {
            Server::Lab { spec, .. } => {
                assert_eq!((spec.knobs.tls, spec.knobs.http2), (Some(true), Some(true)))
            }
            s => panic!("{s:?}"),
        }
        assert_eq!(x.configs[1].request.ok_status.to_string(), "200-399,404");
        assert_eq!(x.configs[1].request.io, crate::engine::IoChoice::Epoll);
        assert_eq!(x.configs[0].request.io, crate::engine::IoChoice::Auto);
        // A file's cacert is relative to the file.
        assert_eq!(
            x.configs[1].request.tls.cacert.as_deref(),
            Some(Path::new("certs/ca.pem"))
        );
        // Nothing set: the command line's defaults, no TLS, 2xx and 3xx are successes.
        let plain = &x.configs[2].request;
        assert_eq!(plain.http, crate::usecase::ConnConfig::default().http);
        assert!(plain.ok_status.is_default());
        assert_eq!(plain.tls, TlsConfig::default());

        let base =
            "[request]\npath = \"/\"\n[load]\nusers = [1]\n[[config]]\nstack = \"nginx-fpm\"\n";
        for (extra, want) in [
            ("request = { http = \"4\" }", "request.http: '4'"),
            (
                "request = { http = \"3\" }",
                "http = \"3\" needs an https:// server",
            ),
            (
                "request = { http = \"2\", keep_alive = false }",
                "contradicts keep_alive",
            ),
            ("request = { streams = 0 }", "--streams 0"),
            (
                "request = { io = \"kqueue\" }",
                "request.io: --io: 'kqueue' is not one of auto, epoll, uring",
            ),
            ("request = { tls_version = \"1.1\" }", "request.tls_version"),
            (
                "request = { ok_status = \"2xx\" }",
                "request.ok_status: '2xx' is not an HTTP status",
            ),
            (
                "request = { tls_resumption = \"maybe\" }",
                "request.tls_resumption: maybe",
            ),
            (
                "knobs = { tls = true }\nrequest = { insecure = true, cacert = \"x.pem\" }",
                "contradict",
            ),
            ("request = { insecure = true }", "need an https:// server"),
            ("knobs = { http2 = true }", "--http2 needs --tls"),
            (
                "knobs = { tls = \"sometimes\" }",
                "knobs.tls: sometimes is not on or off",
            ),
        ] {
            let got = e(&format!("{base}{extra}\n"));
            assert!(got.contains(want), "{extra}: {got}");
        }
    }
    /// `alt_svc = true` is `--alt-svc`, `zero_rtt = "on"` is `--0rtt on`: checked at parse as
    /// on the command line (alt_svc with http = "auto" over https only; 0-RTT on HTTP/3 with
    /// resumption).
    #[test]
    fn alt_svc_and_zero_rtt_keys() {
        let x = p(r#"
[request]
path = "/"
insecure = true
[load]
users = [1]
[[config]]
name = "alt"
setup = "true"
ready = "https://127.0.0.1:18991/"
request = { http = "auto", alt_svc = true }
[[config]]
name = "early"
setup = "true"
ready = "https://127.0.0.1:18991/"
request = { http = "3", zero_rtt = "on" }
[[config]]
name = "plain"
setup = "true"
ready = "https://127.0.0.1:18991/"
"#)
        .unwrap();
        assert!(x.configs[0].request.alt_svc);
        assert!(!x.configs[0].request.tls.early_data);
        assert!(x.configs[1].request.tls.early_data);
        assert!(!x.configs[2].request.alt_svc);
        let conn = super::super::plan::conn_config(&x.configs[0]);
        assert!(conn.alt_svc, "the run is given --alt-svc");

        let tls = "setup = \"true\"\nname = \"c\"\nready = \"https://127.0.0.1:18991/\"\n";
        let plain = "setup = \"true\"\nname = \"c\"\nready = \"http://127.0.0.1:18991/\"\n";
        for (server, extra, want) in [
            (
                tls,
                "request = { http = \"2\", alt_svc = true }",
                "request: --alt-svc follows the server's Alt-Svc under --http auto",
            ),
            (
                plain,
                "request = { alt_svc = true }",
                "alt_svc = true needs an https:// server",
            ),
            (
                tls,
                "request = { alt_svc = \"yes\" }",
                "request: invalid type: string \"yes\", expected a boolean",
            ),
            (
                tls,
                "request = { http = \"2\", zero_rtt = \"on\" }",
                "--0rtt on is for --http 3",
            ),
            (
                tls,
                "request = { http = \"3\", zero_rtt = \"on\", tls_resumption = \"off\" }",
                "--0rtt on needs --tls-resumption on",
            ),
            (
                tls,
                "request = { zero_rtt = \"maybe\" }",
                "request.zero_rtt: maybe is not on or off",
            ),
        ] {
            let got = e(&format!(
                "[request]\npath = \"/\"\n[load]\nusers = [1]\n[[config]]\n{server}{extra}\n"
            ));
            assert!(got.contains(want), "{extra}: {got}");
            assert!(!got.contains('\n'), "one line: {got}");
        }
    }
}
