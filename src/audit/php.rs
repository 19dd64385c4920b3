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
    /// Where each setting was found (`opcache.enable` → `/etc/php/8.2/fpm/php.ini:1790`)
    /// when the settings come from the php.ini found rather than a probe page.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub origins: std::collections::BTreeMap<String, String>,
}

impl PhpIni {
    /// ` (FILE:LINE)` after a setting in an evidence line; nothing for a probe page's.
    pub fn at(&self, key: &str) -> String {
        self.origins
            .get(key)
            .map_or(String::new(), |o| format!(" ({o})"))
    }
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

/// The probe page's settings, or the check skipped with the reason it could not be read.
fn probe<'a>(e: &'a PhpEvidence, rule: &str, source: &str) -> Result<&'a PhpIni, Box<Check>> {
    e.probe
        .as_ref()
        .map_err(|why| Box::new(Check::skipped(rule, why.clone(), source)))
}

pub const OPCACHE: &str = "php.opcache";

/// S2: OPcache took 2,509 → 3,973 answers per run (+58%); S3: 5× on Symfony.
pub fn opcache(e: &PhpEvidence) -> Check {
    let p = match probe(e, OPCACHE, S1_S2) {
        Ok(p) => p,
        Err(c) => return *c,
    };
    let change_off = "turn OPcache on (opcache.enable=1 in the SAPI's php.ini, or \
                      php_admin_value[opcache.enable] = 1 in the FPM pool): S2 measured +58% \
                      answers with it";
    if !p.opcache_enabled {
        let why = if p.opcache_loaded {
            format!(
                "the extension is loaded but opcache.enable is off{}",
                p.at("opcache.enable")
            )
        } else {
            format!(
                "the Zend OPcache extension is not loaded{}",
                p.at("zend_extension")
            )
        };
        // With the line known, the change is that line.
        let change = match p.origins.get("opcache.enable") {
            Some(o) if p.opcache_loaded && !o.starts_with("PHP's default") => format!(
                "set opcache.enable=1 where it is turned off ({o}): S2 measured +58% answers \
                 with OPcache"
            ),
            _ => change_off.to_string(),
        };
        return Check::finding(
            OPCACHE,
            Level::High,
            "OPcache is off",
            format!("{} (PHP {}, {}): {why}", e.probe_url, p.php, p.sapi),
            change,
            S1_S2,
        );
    }
    let size = p
        .opcache_memory_consumption
        .as_deref()
        .map_or(String::new(), |m| {
            format!(
                "opcache.memory_consumption = {m}{}",
                p.at("opcache.memory_consumption")
            )
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
            format!(
                "{}: OPcache on{}, {size}",
                e.probe_url,
                p.at("opcache.enable")
            ),
            S1_S2,
        ),
    }
}

pub const REALPATH: &str = "php.realpath-cache";

/// S2: open_basedir disables the realpath cache (3× the lstat calls per include).
pub fn realpath(e: &PhpEvidence) -> Check {
    let p = match probe(e, REALPATH, S2) {
        Ok(p) => p,
        Err(c) => return *c,
    };
    let seen = format!(
        "{}: realpath_cache_size = {}{}, open_basedir = {}{}",
        e.probe_url,
        p.realpath_cache_size,
        p.at("realpath_cache_size"),
        if p.open_basedir.is_empty() {
            "(unset)"
        } else {
            &p.open_basedir
        },
        p.at("open_basedir")
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
        Err(c) => return *c,
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
                "{}: memory_limit = {}{} with {workers} workers ({from}) on {} of RAM",
                e.probe_url,
                p.memory_limit,
                p.at("memory_limit"),
                mib(ram)
            ),
            "set memory_limit so that workers × memory_limit fits in RAM with the rest \
             (database, page cache)",
            S1_S2,
        );
    };
    let plan = limit.saturating_mul(workers);
    let seen = format!(
        "{workers} workers ({from}) × memory_limit {}{} = {} against {} of RAM",
        p.memory_limit,
        p.at("memory_limit"),
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
        Err(c) => return *c,
    };
    let seen = format!(
        "{}: session.save_handler = {}{}",
        e.probe_url,
        p.session_save_handler,
        p.at("session.save_handler")
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What lab/www/audit.php prints under PHP-FPM 8.2 with the lab's defaults.
    const FPM_DEFAULTS: &str = r#"{"sapi":"fpm-fcgi","php":"8.2.7","opcache_loaded":true,
        "opcache_enabled":true,"opcache_memory_consumption":"128",
        "opcache_used_memory":9437184,"opcache_free_memory":124780544,
        "opcache_wasted_memory":0,"opcache_cache_full":false,"realpath_cache_size":"4096K",
        "open_basedir":"","memory_limit":"128M","session_save_handler":"files"}"#;

    fn evidence(probe: &str) -> PhpEvidence {
        PhpEvidence {
            probe_url: "http://127.0.0.1:18081/audit.php".into(),
            probe: serde_json::from_str(probe).map_err(|e| e.to_string()),
            fpm: Ok(FpmSample {
                url: "http://127.0.0.1:18081/fpm-status".into(),
                pool: "lab".into(),
                total: 20,
                active: 1,
                idle: 19,
                listen_queue_len: 511,
                ..FpmSample::default()
            }),
            workers: Ok((20, "the lab's pm.max_children".into())),
            ram_bytes: Ok(8 << 30),
        }
    }

    fn level(c: &Check) -> Level {
        assert!(!c.evidence.is_empty(), "{c:?}");
        assert_eq!(c.change.is_some(), c.level.is_finding(), "{c:?}");
        c.level
    }

    #[test]
    fn ini_shorthand_bytes() {
        assert_eq!(ini_bytes("128M"), Some(128 << 20));
        assert_eq!(ini_bytes("1g"), Some(1 << 30));
        assert_eq!(ini_bytes("512K"), Some(512 << 10));
        assert_eq!(ini_bytes("1048576"), Some(1 << 20));
        assert_eq!(ini_bytes("-1"), None);
        assert_eq!(ini_bytes(""), None);
        assert_eq!(ini_bytes("lots"), None);
    }

    #[test]
    fn opcache_off_full_or_on() {
        let e = evidence(FPM_DEFAULTS);
        let c = opcache(&e);
        assert_eq!(level(&c), Level::Ok);
        assert!(
            c.evidence
                .contains("opcache.memory_consumption = 128: 9 MiB used, 119 MiB free"),
            "{c:?}"
        );
        // `lab up nginx-fpm --opcache off`: loaded, opcache.enable=0.
        let off = FPM_DEFAULTS.replace(r#""opcache_enabled":true"#, r#""opcache_enabled":false"#);
        let c = opcache(&evidence(&off));
        assert_eq!(level(&c), Level::High);
        assert_eq!(c.title, "OPcache is off");
        assert!(
            c.evidence.contains(
                "(PHP 8.2.7, fpm-fcgi): the extension is loaded but opcache.enable is off"
            ),
            "{c:?}"
        );
        let unloaded = off.replace(r#""opcache_loaded":true"#, r#""opcache_loaded":false"#);
        assert!(opcache(&evidence(&unloaded))
            .evidence
            .contains("not loaded"));
        let full = FPM_DEFAULTS.replace(
            r#""opcache_cache_full":false"#,
            r#""opcache_cache_full":true"#,
        );
        let c = opcache(&evidence(&full));
        assert_eq!(level(&c), Level::Medium);
        assert!(c.evidence.contains("cache_full is set"), "{c:?}");
        let mut e = evidence(FPM_DEFAULTS);
        e.probe = Err("http://127.0.0.1:18081/audit.php: the probe page answered 404".into());
        let c = opcache(&e);
        assert_eq!(c.level, Level::Skipped);
        assert!(c.evidence.contains("404"), "{c:?}");
    }

    #[test]
    fn open_basedir_defeats_the_realpath_cache() {
        assert_eq!(level(&realpath(&evidence(FPM_DEFAULTS))), Level::Ok);
        let with = FPM_DEFAULTS.replace(r#""open_basedir":"""#, r#""open_basedir":"/srv/www""#);
        let c = realpath(&evidence(&with));
        assert_eq!(level(&c), Level::Medium);
        assert!(
            c.evidence
                .contains("realpath_cache_size = 4096K, open_basedir = /srv/www"),
            "{c:?}"
        );
    }

    #[test]
    fn memory_plan_against_ram() {
        let c = memory_plan(&evidence(FPM_DEFAULTS));
        assert_eq!(level(&c), Level::Ok);
        assert_eq!(
            c.evidence,
            "20 workers (the lab's pm.max_children) × memory_limit 128M = 2,560 MiB against \
             8,192 MiB of RAM"
        );
        let mut e = evidence(FPM_DEFAULTS);
        e.workers = Ok((200, "--workers".into()));
        let c = memory_plan(&e);
        assert_eq!(level(&c), Level::High);
        assert!(
            c.evidence.contains("= 25,600 MiB against 8,192 MiB"),
            "{c:?}"
        );
        assert!(
            c.change.as_deref().unwrap().contains("at most 51 workers"),
            "{c:?}"
        );
        let unbounded = FPM_DEFAULTS.replace(r#""memory_limit":"128M""#, r#""memory_limit":"-1""#);
        let c = memory_plan(&evidence(&unbounded));
        assert_eq!(level(&c), Level::Medium);
        assert!(c.evidence.contains("memory_limit = -1"), "{c:?}");
        let mut e = evidence(FPM_DEFAULTS);
        e.workers = Err("the pool size is unknown (give --workers N)".into());
        assert_eq!(memory_plan(&e).level, Level::Skipped);
        let mut e = evidence(FPM_DEFAULTS);
        e.ram_bytes = Err("db.example is not this machine".into());
        assert!(memory_plan(&e).evidence.contains("not this machine"));
    }

    #[test]
    fn file_sessions_lock() {
        let c = sessions(&evidence(FPM_DEFAULTS));
        assert_eq!(level(&c), Level::Low);
        assert!(c.evidence.contains("session.save_handler = files"), "{c:?}");
        let redis = FPM_DEFAULTS.replace(
            r#""session_save_handler":"files""#,
            r#""session_save_handler":"redis""#,
        );
        assert_eq!(level(&sessions(&evidence(&redis))), Level::Ok);
    }

    #[test]
    fn a_pool_that_reached_max_children() {
        let mut e = evidence(FPM_DEFAULTS);
        assert_eq!(level(&fpm_pool(&e)), Level::Ok);
        if let Ok(f) = e.fpm.as_mut() {
            f.max_children_reached = 3;
            f.max_listen_queue = 180;
        }
        let c = fpm_pool(&e);
        assert_eq!(level(&c), Level::Medium);
        assert!(
            c.evidence.contains(
                "pool lab, 20 processes (1 active), max children reached 3 times since start, \
                 highest listen queue 180"
            ),
            "{c:?}"
        );
        e.fpm = Err("no FPM status page (give --fpm-status URL)".into());
        assert_eq!(fpm_pool(&e).level, Level::Skipped);
    }
}
