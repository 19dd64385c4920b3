//! The lab: the studies' real web stacks (nginx, Apache, PHP-FPM, mod_php, persistent PHP
//! workers, MariaDB) rendered from templates into a private prefix and run on loopback.
//!
//! - `stacks`: the catalogue and the knobs; `render`: templates; `launch`/`web`/`mariadb`:
//!   start sequences; `process`: spawn, stop, liveness, ports; `state`: the prefix on disk;
//!   `doctor`: packages; `tls`: the prefix's certificate for `--tls`.
//! - Nothing in /etc or the system services is changed; no systemd, service or apache2ctl.
//!
//! Library use (experiments): `up(&spec, &opts)` → [`StackInfo`] (URL, ports, pids),
//! `down(stack, &opts)`, `down_all(&opts)`, `status(&opts)`, `url(stack, &opts)`.
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub mod apps;
pub mod caddy_log;
pub mod doctor;
pub mod gallery;
pub mod launch;
mod login;
pub mod mariadb;
pub mod process;
pub mod render;
pub mod resolve;
pub mod stacks;
pub mod state;
pub mod symfony;
pub mod tls;
mod web;
pub mod wordpress;

pub use process::PartInfo;
pub use resolve::{DbConfig, FpmConfig, PreforkConfig, Resolved};
pub use stacks::{Engine, Knobs, Pm, Size, Stack, StackSpec};
pub use state::{Layout, StackInfo};

use crate::{Error, Result};

pub const DEFAULT_PREFIX: &str = "/tmp/overload-lab";
/// Environment variable overriding the default prefix.
pub const PREFIX_ENV: &str = "OVERLOAD_LAB_DIR";
/// Unix socket paths are limited to 107 bytes; the longest one under a stack directory
/// (`php-persistent/run/workers/w1023.sock`) adds this much to the prefix.
const LONGEST_SOCKET_SUFFIX: usize = 40;

/// Where the lab lives and how long a start may take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LabOptions {
    pub prefix: PathBuf,
    /// Per stack, from the first spawn to readiness (MariaDB's first start included).
    pub ready_timeout: Duration,
    /// Print progress notes (e.g. MariaDB's first initialisation) to stderr.
    pub progress: bool,
}

impl LabOptions {
    pub fn new(prefix: impl Into<PathBuf>) -> LabOptions {
        LabOptions {
            prefix: prefix.into(),
            ready_timeout: Duration::from_secs(60),
            progress: false,
        }
    }

    /// `$OVERLOAD_LAB_DIR`, or /tmp/overload-lab.
    pub fn from_env() -> LabOptions {
        match std::env::var_os(PREFIX_ENV) {
            Some(p) if !p.is_empty() => LabOptions::new(p),
            _ => LabOptions::new(DEFAULT_PREFIX),
        }
    }
}

impl Default for LabOptions {
    fn default() -> Self {
        LabOptions::from_env()
    }
}

/// How a recorded stack is doing now.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Health {
    /// Every started process runs.
    Up,
    /// Some processes died (named); `down` cleans up the rest, `up` restarts it.
    Degraded(Vec<String>),
    /// Nothing of it runs any more.
    Dead,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StackStatus {
    pub info: StackInfo,
    pub health: Health,
}

fn health(info: &StackInfo) -> Health {
    let dead: Vec<String> = info
        .parts
        .iter()
        .filter(|p| !process::is_alive(p))
        .map(|p| p.name.clone())
        .collect();
    if dead.is_empty() {
        Health::Up
    } else if dead.len() == info.parts.len() {
        Health::Dead
    } else {
        Health::Degraded(dead)
    }
}

/// The prefix as an absolute path (the configs need absolute paths).
fn prefix_of(opts: &LabOptions) -> Result<PathBuf> {
    let p = std::path::absolute(&opts.prefix)
        .map_err(|e| Error::usage(format!("bad prefix {}: {e}", opts.prefix.display())))?;
    let len = p.as_os_str().len() + LONGEST_SOCKET_SUFFIX;
    if len > 107 {
        return Err(Error::usage(format!(
            "prefix {} is too long for unix socket paths (keep it under {} bytes)",
            p.display(),
            107 - LONGEST_SOCKET_SUFFIX
        )));
    }
    Ok(p)
}

/// Why `prefix` cannot hold a lab, or None. `up` makes its prefix private (mode 0710,
/// group www-data): the root directory, or an existing directory with other contents and
/// no lab in it (no `.lock`), such as /tmp or /etc, would be locked away from its users.
pub fn check_prefix(prefix: &Path) -> std::result::Result<(), String> {
    let p = std::path::absolute(prefix).map_err(|e| format!("{}: {e}", prefix.display()))?;
    if p.parent().is_none() {
        return Err(format!(
            "prefix {} is the root directory; name a directory of its own",
            p.display()
        ));
    }
    let foreign = std::fs::read_dir(&p).is_ok_and(|mut d| d.next().is_some())
        && std::fs::symlink_metadata(p.join(".lock")).is_err();
    if foreign {
        return Err(format!(
            "prefix {} already holds other files and no lab (no .lock); lab up makes its prefix private (mode 0710): name a new or empty directory",
            p.display()
        ));
    }
    Ok(())
}

/// Root, www-data and a traversable prefix: checked before anything starts.
fn prepare_prefix(opts: &LabOptions) -> Result<(PathBuf, (u32, u32))> {
    let prefix = prefix_of(opts)?;
    check_prefix(&prefix).map_err(Error::usage)?;
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err(Error::runtime(
            "lab up needs root: the masters run as root and their workers as www-data, as in the studies",
        ));
    }
    let www = state::www_data()?;
    state::check_traversable(&prefix, www)?;
    state::make_prefix(&prefix, www.1)?;
    Ok((prefix, www))
}

fn make_info(
    cfg: &Resolved,
    prefix: &Path,
    parts: Vec<PartInfo>,
    db_port: Option<u16>,
    startup: Duration,
) -> StackInfo {
    let stack = cfg.stack;
    let l = Layout::new(prefix, stack);
    let url = if stack.is_web() {
        cfg.base_url()
    } else {
        format!("mysql://lab:labpass@127.0.0.1:{}/lab", cfg.port)
    };
    let mut watch: Vec<String> = cfg.web().watch().iter().map(|w| w.to_string()).collect();
    if db_port.is_some() {
        watch.push("db=mariadbd".to_string());
    }
    StackInfo {
        stack,
        url,
        port: cfg.port,
        docroot: stack.is_web().then(|| l.www.clone()),
        dir: l.dir,
        knobs: cfg.describe(),
        config: cfg.clone(),
        parts,
        watch,
        db_port,
        startup_secs: startup.as_secs_f64(),
        started_unix: crate::clock::unix_secs(),
        auto_started: false,
        held_by: Vec::new(),
        ca_file: cfg.tls.then(|| tls::TlsFiles::new(prefix).ca),
    }
}

/// Stops every part (newest first), then waits until the port is free. Tries all parts
/// even if one fails and reports the first failure.
fn stop_parts(info: &StackInfo) -> Result<()> {
    let mut first_err = None;
    for p in info.parts.iter().rev() {
        if let Err(e) = process::stop(p, launch::STOP_GRACE) {
            first_err.get_or_insert(e);
        }
    }
    if let Err(e) = process::wait_port_free(info.port, Duration::from_secs(5)) {
        first_err.get_or_insert(e);
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Brings a stack up (restarting it if it already runs in this prefix) and waits until
/// it answers. Web stacks start the prefix's MariaDB if it is not running (unless
/// `no_db`), and `down` of the last such stack stops it again. On failure nothing that
/// this call started is left running.
pub fn up(spec: &StackSpec, opts: &LabOptions) -> Result<StackInfo> {
    let cfg = spec.resolve()?;
    let (prefix, www) = prepare_prefix(opts)?;
    let _lock = state::lock(&prefix)?;
    let stack = cfg.stack;
    let l = Layout::new(&prefix, stack);

    let mut held_by = Vec::new();
    if let Some(old) = state::read_state(&prefix, stack)? {
        if opts.progress {
            crate::eoutln!("{stack}: already up in {}, restarting it", prefix.display());
        }
        stop_parts(&old)?;
        state::remove_state(&prefix, stack)?;
        held_by = old.held_by;
    }
    process::check_port_free(cfg.port, &format!("lab up {stack}"))?;
    state::make_dir(&l.dir, None)?;

    if stack == Stack::Mariadb {
        let t0 = Instant::now();
        let parts = mariadb::launch(&cfg, &l, opts.ready_timeout, opts.progress)?;
        let mut info = make_info(&cfg, &prefix, parts, None, t0.elapsed());
        info.held_by = held_by;
        state::write_state(&prefix, &info)?;
        return Ok(info);
    }

    if cfg.tls {
        // Before the database: a failure here leaves nothing to stop.
        tls::ensure(&prefix)?;
    }
    let mut cfg = cfg;
    let db_port = if cfg.use_db {
        let port = ensure_db(stack, spec.db_port, cfg.db_port, &prefix, opts)?;
        // db.php must point at the MariaDB that actually runs in this prefix.
        cfg.db_port = port;
        Some(port)
    } else {
        None
    };
    let t0 = Instant::now();
    match web::launch(&cfg, &l, www, opts.ready_timeout) {
        Ok(parts) => {
            let info = make_info(&cfg, &prefix, parts, db_port, t0.elapsed());
            if let Err(e) = state::write_state(&prefix, &info) {
                let _ = stop_parts(&info);
                return Err(e);
            }
            Ok(info)
        }
        Err(e) => {
            if db_port.is_some() {
                let _ = release_db(stack, &prefix);
            }
            Err(e)
        }
    }
}

/// Makes sure the prefix's MariaDB runs, recording `stack` as a user of it; returns its
/// port. Started here, it is marked auto-started so the last user's `down` stops it.
fn ensure_db(
    stack: Stack,
    explicit_port: Option<u16>,
    port: u16,
    prefix: &Path,
    opts: &LabOptions,
) -> Result<u16> {
    if let Some(mut db) = state::read_state(prefix, Stack::Mariadb)? {
        if health(&db) == Health::Up {
            if let Some(p) = explicit_port.filter(|p| *p != db.port) {
                return Err(Error::usage(format!(
                    "--db-port {p}: this prefix's mariadb already runs on port {}",
                    db.port
                )));
            }
            if !db.held_by.contains(&stack) {
                db.held_by.push(stack);
                state::write_state(prefix, &db)?;
            }
            return Ok(db.port);
        }
        // Recorded but (partly) dead: clean up what is left before starting afresh.
        stop_parts(&db)?;
        state::remove_state(prefix, Stack::Mariadb)?;
    }
    let spec = StackSpec {
        port: Some(port),
        ..StackSpec::new(Stack::Mariadb)
    };
    let cfg = spec.resolve()?;
    process::check_port_free(cfg.port, &format!("lab up {stack}: mariadb"))?;
    if opts.progress {
        crate::eoutln!(
            "{stack}: starting mariadb on 127.0.0.1:{} for db.php",
            cfg.port
        );
    }
    let l = Layout::new(prefix, Stack::Mariadb);
    state::make_dir(&l.dir, None)?;
    let t0 = Instant::now();
    let parts = mariadb::launch(&cfg, &l, opts.ready_timeout, opts.progress).map_err(|e| {
        Error::runtime(format!(
            "{e}\n  (needed by {stack} for db.php; --no-db skips it)"
        ))
    })?;
    let mut info = make_info(&cfg, prefix, parts, None, t0.elapsed());
    info.auto_started = true;
    info.held_by = vec![stack];
    state::write_state(prefix, &info)?;
    Ok(cfg.port)
}

/// Drops `stack` from MariaDB's users; stops MariaDB if it was auto-started and nobody
/// uses it any more. Returns whether it was stopped.
fn release_db(stack: Stack, prefix: &Path) -> Result<bool> {
    let Some(mut db) = state::read_state(prefix, Stack::Mariadb)? else {
        return Ok(false);
    };
    db.held_by.retain(|s| *s != stack);
    if db.auto_started && db.held_by.is_empty() {
        stop_parts(&db)?;
        state::remove_state(prefix, Stack::Mariadb)?;
        return Ok(true);
    }
    state::write_state(prefix, &db)?;
    Ok(false)
}

fn down_locked(stack: Stack, prefix: &Path) -> Result<Vec<Stack>> {
    let Some(info) = state::read_state(prefix, stack)? else {
        return Ok(Vec::new());
    };
    stop_parts(&info)?;
    state::remove_state(prefix, stack)?;
    let mut stopped = vec![stack];
    if stack.is_web() && info.db_port.is_some() && release_db(stack, prefix)? {
        stopped.push(Stack::Mariadb);
    }
    Ok(stopped)
}

/// Stops exactly what `up` started for `stack` (and the MariaDB it auto-started, if no
/// other stack uses it), waiting until its processes are gone and its port is free.
/// Returns the stacks stopped; empty if it was not up.
pub fn down(stack: Stack, opts: &LabOptions) -> Result<Vec<Stack>> {
    let prefix = prefix_of(opts)?;
    if !prefix.exists() {
        return Ok(Vec::new());
    }
    let _lock = state::lock(&prefix)?;
    down_locked(stack, &prefix)
}

/// Stops every stack of the prefix (web stacks first, MariaDB last).
pub fn down_all(opts: &LabOptions) -> Result<Vec<Stack>> {
    let prefix = prefix_of(opts)?;
    if !prefix.exists() {
        return Ok(Vec::new());
    }
    let _lock = state::lock(&prefix)?;
    let mut stopped = Vec::new();
    let mut first_err = None;
    for stack in Stack::ALL {
        if stopped.contains(&stack) {
            continue;
        }
        match down_locked(stack, &prefix) {
            Ok(s) => stopped.extend(s),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(stopped),
    }
}

/// Every stack recorded in the prefix, with whether its processes still run.
pub fn status(opts: &LabOptions) -> Result<Vec<StackStatus>> {
    let prefix = prefix_of(opts)?;
    let mut out = Vec::new();
    for stack in Stack::ALL {
        if let Some(info) = state::read_state(&prefix, stack)? {
            let health = health(&info);
            out.push(StackStatus { info, health });
        }
    }
    Ok(out)
}

/// The recorded state of one stack, if it is recorded.
pub fn info(stack: Stack, opts: &LabOptions) -> Result<Option<StackInfo>> {
    state::read_state(&prefix_of(opts)?, stack)
}

/// The base URL of a running stack (e.g. `http://127.0.0.1:18081`).
pub fn url(stack: Stack, opts: &LabOptions) -> Result<String> {
    let prefix = prefix_of(opts)?;
    match state::read_state(&prefix, stack)? {
        Some(info) if health(&info) == Health::Up => Ok(info.url),
        Some(_) => Err(Error::runtime(format!(
            "{stack} is recorded in {} but not running; restart it with `overload lab up {stack}`",
            prefix.display()
        ))),
        None => Err(Error::runtime(format!(
            "{stack} is not up in {}; start it with `overload lab up {stack}`",
            prefix.display()
        ))),
    }
}

/// The URL file (siege's format) of a running app stack, written by its `up`.
pub fn urls_file(stack: Stack, opts: &LabOptions) -> Result<PathBuf> {
    if !stack.is_app() {
        return Err(Error::usage(format!(
            "{stack} has no URL file (app stacks have one: wordpress, gallery, symfony)"
        )));
    }
    url(stack, opts)?;
    let path = apps::urls_path(&Layout::new(&prefix_of(opts)?, stack));
    if !path.exists() {
        return Err(Error::runtime(format!(
            "{} is missing; restart the stack",
            path.display()
        )));
    }
    Ok(path)
}
