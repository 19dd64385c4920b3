//! The PHP rules (S1 ch. 7, S2 ch. 4–7): OPcache on and its memory, the realpath cache
//! against open_basedir, the memory plan (workers × memory_limit against RAM), file sessions
//! (which lock), and FPM's pool reaching max_children. Pure functions of [`PhpEvidence`]: the
//! probe page's JSON (lab/www/audit.php, which the lab installs; docs/audit.md shows it for
//! other servers), FPM's status page, the worker count and the host's RAM.
use super::{num, Check, Level, Probe, S1, S1_S2, S2};
use crate::observe::FpmSample;
use serde::{Deserialize, Serialize};

/// What the probe page prints (lab/www/audit.php). Fields the page leaves out stay empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PhpIni {
    pub sapi: String,
    pub php: String,
    pub opcache_loaded: bool,
    pub opcache_enabled: bool,
    /// opcache.memory_consumption, MB as in php.ini.
    pub opcache_memory_consumption: Option<String>,
    pub opcache_used_memory: Option<u64>,
    pub opcache_free_memory: Option<u64>,
    pub opcache_wasted_memory: Option<u64>,
    pub opcache_cache_full: bool,
    pub realpath_cache_size: String,
    pub open_basedir: String,
    pub memory_limit: String,
    pub session_save_handler: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhpEvidence {
    /// The probe page's URL (for the evidence lines) and what it printed.
    pub probe_url: String,
    pub probe: Probe<PhpIni>,
    /// FPM's pool status, when there is one to ask.
    pub fpm: Probe<FpmSample>,
    /// PHP workers at most (pm.max_children, Apache's MaxRequestWorkers) and where that
    /// figure comes from.
    pub workers: Probe<(u64, String)>,
    /// The host's RAM, bytes (local hosts).
    pub ram_bytes: Probe<u64>,
}

pub fn checks(e: &PhpEvidence) -> Vec<Check> {
    vec![
        opcache(e),
        realpath(e),
        memory_plan(e),
        sessions(e),
        fpm_pool(e),
    ]
}

/// php.ini's shorthand bytes (`128M`, `1G`, `512K`, `1048576`); None for -1 (no limit) or
/// anything unreadable.
pub fn ini_bytes(v: &str) -> Option<u64> {
    let v = v.trim();
    let (digits, mult) = match v.char_indices().last()? {
        (i, 'k' | 'K') => (&v[..i], 1u64 << 10),
        (i, 'm' | 'M') => (&v[..i], 1 << 20),
        (i, 'g' | 'G') => (&v[..i], 1 << 30),
        _ => (v, 1),
    };
    digits.trim().parse::<u64>().ok()?.checked_mul(mult)
}

fn mib(b: u64) -> String {
    format!("{} MiB", num(b >> 20))
}

fn probe<'a>(e: &'a PhpEvidence, rule: &str, source: &str) -> Result<&'a PhpIni, Check> {
    e.probe
        .as_ref()
        .map_err(|why| Check::skipped(rule, why.clone(), source))
}

pub const OPCACHE: &str = "php.opcache";

/// S2: OPcache took 2,509 → 3,973 answers per run (+58%); S3: 5× on Symfony.
pub fn opcache(e: &PhpEvidence) -> Check {
    let p = match probe(e, OPCACHE, S1_S2) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let change_off = "turn OPcache on (opcache.enable=1 in the SAPI's php.ini, or \
                      php_admin_value[opcache.enable] = 1 in the FPM pool): S2 measured +58% \
                      answers with it";
    if !p.opcache_enabled {
        let why = if p.opcache_loaded {
            "the extension is loaded but opcache.enable is off"
        } else {
            "the Zend OPcache extension is not loaded"
        };
        return Check::finding(
            OPCACHE,
            Level::High,
            "OPcache is off",
            format!("{} (PHP {}, {}): {why}", e.probe_url, p.php, p.sapi),
            change_off,
            S1_S2,
        );
    }
    let size = p
        .opcache_memory_consumption
        .as_deref()
        .map_or(String::new(), |m| {
            format!("opcache.memory_consumption = {m}")
        });
    match (p.opcache_used_memory, p.opcache_free_memory) {
        (Some(used), Some(free)) => {
            let wasted = p.opcache_wasted_memory.unwrap_or(0);
            let total = used + free + wasted;
            let seen = format!(
                "{}: OPcache on, {size}: {} used, {} free, {} wasted",
                e.probe_url,
                mib(used),
                mib(free),
                mib(wasted)
            );
            if p.opcache_cache_full || (total > 0 && free * 20 < total) {
                Check::finding(
                    OPCACHE,
                    Level::Medium,
                    "OPcache memory is (nearly) full",
                    format!(
                        "{seen}{}",
                        if p.opcache_cache_full {
                            "; cache_full is set"
                        } else {
                            ""
                        }
                    ),
                    "raise opcache.memory_consumption (and opcache.max_accelerated_files) so \
                     every script stays cached",
                    S1_S2,
                )
            } else {
                Check::ok(OPCACHE, "OPcache on", seen, S1_S2)
            }
        }
        _ => Check::ok(
            OPCACHE,
            "OPcache on",
            format!("{}: OPcache on {size}", e.probe_url),
            S1_S2,
        ),
    }
}

pub const REALPATH: &str = "php.realpath-cache";

/// S2: open_basedir disables the realpath cache (3× the lstat calls per include).
pub fn realpath(e: &PhpEvidence) -> Check {
    let p = match probe(e, REALPATH, S2) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let seen = format!(
        "{}: realpath_cache_size = {}, open_basedir = {}",
        e.probe_url,
        p.realpath_cache_size,
        if p.open_basedir.is_empty() {
            "(unset)"
        } else {
            &p.open_basedir
        }
    );
    if !p.open_basedir.is_empty() {
        Check::finding(
            REALPATH,
            Level::Medium,
            "open_basedir defeats the realpath cache",
            seen,
            "drop open_basedir (isolate sites by user or container instead): with it PHP \
             checks every path of every include again (S2: 3× the lstat calls)",
            S2,
        )
    } else {
        Check::ok(REALPATH, "realpath cache usable", seen, S2)
    }
}

pub const MEMORY_PLAN: &str = "php.memory-plan";

/// S1/S2: workers × memory_limit must fit in RAM, or a burst swaps the host to a halt.
pub fn memory_plan(e: &PhpEvidence) -> Check {
    let p = match probe(e, MEMORY_PLAN, S1_S2) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let (workers, from) = match &e.workers {
        Ok(w) => (w.0, &w.1),
        Err(why) => return Check::skipped(MEMORY_PLAN, why.clone(), S1_S2),
    };
    let ram = match &e.ram_bytes {
        Ok(r) => *r,
        Err(why) => return Check::skipped(MEMORY_PLAN, why.clone(), S1_S2),
    };
    let Some(limit) = ini_bytes(&p.memory_limit) else {
        return Check::finding(
            MEMORY_PLAN,
            Level::Medium,
            "memory_limit does not bound a worker",
            format!(
                "{}: memory_limit = {} with {workers} workers ({from}) on {} of RAM",
                e.probe_url,
                p.memory_limit,
                mib(ram)
            ),
            "set memory_limit so that workers × memory_limit fits in RAM with the rest \
             (database, page cache)",
            S1_S2,
        );
    };
    let plan = limit.saturating_mul(workers);
    let seen = format!(
        "{workers} workers ({from}) × memory_limit {} = {} against {} of RAM",
        p.memory_limit,
        mib(plan),
        mib(ram)
    );
    if plan > ram {
        let fit = ram * 8 / 10 / limit.max(1);
        Check::finding(
            MEMORY_PLAN,
            Level::High,
            "the workers may need more memory than the host has",
            seen,
            format!(
                "size the pool to memory: at most {fit} workers at this memory_limit (80% of \
                 RAM), or lower memory_limit"
            ),
            S1_S2,
        )
    } else {
        Check::ok(MEMORY_PLAN, "workers fit in memory", seen, S1_S2)
    }
}

pub const SESSIONS: &str = "php.sessions";

/// S2: file sessions lock; one slow request blocks the same user's next ones.
pub fn sessions(e: &PhpEvidence) -> Check {
    let p = match probe(e, SESSIONS, S2) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let seen = format!(
        "{}: session.save_handler = {}",
        e.probe_url, p.session_save_handler
    );
    if p.session_save_handler == "files" {
        Check::finding(
            SESSIONS,
            Level::Low,
            "sessions are files, locked per request",
            format!(
                "{seen}: a request holding a user's session blocks that user's next requests, \
                 each holding a worker while it waits"
            ),
            "call session_write_close() as soon as the session has been read, or use a store \
             that does not lock for the whole request",
            S2,
        )
    } else {
        Check::ok(SESSIONS, "sessions", seen, S2)
    }
}

pub const FPM_POOL: &str = "php.fpm-pool";

/// S1/S2/S4: a pool that reached max_children queued requests.
pub fn fpm_pool(e: &PhpEvidence) -> Check {
    let f = match &e.fpm {
        Ok(f) => f,
        Err(why) => return Check::skipped(FPM_POOL, why.clone(), S1),
    };
    let seen = format!(
        "{}: pool {}, {} processes ({} active), max children reached {} times since start, \
         highest listen queue {}, listen queue len {}",
        f.url,
        f.pool,
        f.total,
        f.active,
        num(f.max_children_reached),
        num(f.max_listen_queue),
        num(f.listen_queue_len)
    );
    if f.max_children_reached > 0 {
        Check::finding(
            FPM_POOL,
            Level::Medium,
            "the pool has run out of workers",
            seen,
            "raise pm.max_children as far as the memory plan allows, or cut the service time \
             (OPcache, fewer queries)",
            S1,
        )
    } else {
        Check::ok(FPM_POOL, "the pool has not run out of workers", seen, S1)
    }
}
