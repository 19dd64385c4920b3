//! The checks that turn a stack and its knobs into a runnable config: pool sizes checked
//! against PHP-FPM's and Apache's own rules, so the daemons never refuse what we render.
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use super::stacks::{Engine, Knob, Knobs, Pm, Size, Stack, StackSpec};
use crate::{Error, Result};

/// PHP-FPM pool sizing, checked against FPM's own rules so FPM never refuses it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FpmConfig {
    pub pm: Pm,
    pub max_children: u32,
    /// Only for pm = dynamic.
    pub start_servers: u32,
    pub min_spare: u32,
    pub max_spare: u32,
}

/// Apache prefork sizing.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreforkConfig {
    /// MaxRequestWorkers (and ServerLimit).
    pub workers: u32,
    pub start_servers: u32,
    pub min_spare: u32,
    pub max_spare: u32,
}

/// MariaDB settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DbConfig {
    pub query_cache: bool,
    pub engine: Engine,
}

impl Default for DbConfig {
    /// MariaDB's own defaults: query cache off, InnoDB.
    fn default() -> Self {
        DbConfig {
            query_cache: false,
            engine: Engine::Innodb,
        }
    }
}

/// A spec with every default filled in and every rule checked.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolved {
    pub stack: Stack,
    pub port: u16,
    pub fpm: Option<FpmConfig>,
    pub prefork: Option<PreforkConfig>,
    /// php-persistent worker processes.
    pub workers: Option<u32>,
    pub opcache: bool,
    pub keep_alive: bool,
    pub db: Option<DbConfig>,
    /// For web stacks: use (or start) MariaDB, and on which port if it must be started.
    pub use_db: bool,
    pub db_port: u16,
    /// HTTPS on `port` with the prefix's certificate (`tls.rs`).
    #[serde(default)]
    pub tls: bool,
    /// HTTP/2 offered through ALPN (only with `tls`).
    #[serde(default)]
    pub http2: bool,
    /// App stacks: the web stack serving the app.
    #[serde(default)]
    pub front: Option<Stack>,
    /// App stacks: the generated content's size.
    #[serde(default)]
    pub size: Option<Size>,
    /// The front server's listen backlog (web stacks).
    #[serde(default = "default_backlog")]
    pub backlog: u32,
}

/// The templates' backlog before the knob existed: nginx's and Apache's usual 511.
pub const DEFAULT_BACKLOG: u32 = 511;

fn default_backlog() -> u32 {
    DEFAULT_BACKLOG
}

/// Default pool size: lab-probe's 20, enough to show queueing on wait.php.
pub const DEFAULT_MAX_CHILDREN: u32 = 20;
pub const DEFAULT_PREFORK_WORKERS: u32 = 20;
pub const DEFAULT_PERSISTENT_WORKERS: u32 = 4;
const MAX_PROCESSES: u32 = 4096;

fn check_count(flag: &str, v: u32, max: u32) -> Result<u32> {
    if v == 0 || v > max {
        return Err(Error::usage(format!("{flag} must be 1..{max}, got {v}")));
    }
    Ok(v)
}

impl StackSpec {
    /// Fills defaults and checks every rule; errors are one-line usage errors.
    pub fn resolve(&self) -> Result<Resolved> {
        let stack = self.stack;
        let k = &self.knobs;
        let front = match (stack.is_app(), k.web) {
            (true, Some(w)) if !stack.fronts().contains(&w) => {
                let names: Vec<&str> = stack.fronts().iter().map(|s| s.name()).collect();
                return Err(Error::usage(format!(
                    "--web {w}: {stack} runs on {}",
                    names.join(", ")
                )));
            }
            (true, w) => Some(w.unwrap_or(stack.fronts()[0])),
            (false, _) => None,
        };
        // The stack that actually serves: an app's front, else the stack itself.
        let web = front.unwrap_or(stack);
        let mut allowed = stack.knobs().to_vec();
        if web != stack {
            allowed.extend_from_slice(web.knobs());
        }
        if web == Stack::ApachePrefork && k.http2 == Some(true) {
            return Err(Error::usage(
                "--http2 does not apply to apache-prefork: mod_http2 stays inactive under mpm_prefork, which mod_php needs (apache-event-fpm speaks HTTP/2)",
            ));
        }
        for knob in k.given() {
            if knob == Knob::Http2 && k.http2 == Some(false) && stack.is_web() {
                continue;
            }
            if !allowed.contains(&knob) {
                let takes: Vec<&str> = allowed.iter().map(|a| a.flag()).collect();
                return Err(Error::usage(format!(
                    "{} does not apply to {stack} (its knobs: {})",
                    knob.flag(),
                    takes.join(", ")
                )));
            }
        }
        if !stack.is_web() && (self.db_port.is_some() || self.no_db) {
            return Err(Error::usage(format!(
                "--db-port and --no-db apply to web stacks, not {stack} (use --port)"
            )));
        }
        if stack == Stack::Wordpress && self.no_db {
            return Err(Error::usage(format!("--no-db: {stack} needs its database")));
        }
        if self.no_db && self.db_port.is_some() {
            return Err(Error::usage("--db-port and --no-db exclude each other"));
        }
        if self.port == Some(0) || self.db_port == Some(0) {
            return Err(Error::usage("ports must be 1..65535"));
        }
        let port = self.port.unwrap_or(stack.default_port());
        let db_port = self.db_port.unwrap_or(Stack::Mariadb.default_port());
        if stack.is_web() && !self.no_db && db_port == port {
            return Err(Error::usage(format!(
                "--port {port} collides with the database port; pick another --port or --db-port"
            )));
        }

        let fpm = if web.uses_fpm() {
            Some(resolve_fpm(k)?)
        } else {
            None
        };
        let prefork = if web == Stack::ApachePrefork {
            Some(resolve_prefork(k)?)
        } else {
            None
        };
        let workers = if web == Stack::PhpPersistent {
            Some(check_count(
                "--workers",
                k.workers.unwrap_or(DEFAULT_PERSISTENT_WORKERS),
                1024,
            )?)
        } else {
            None
        };
        let tls = k.tls.unwrap_or(false);
        let http2 = k.http2.unwrap_or(false);
        if http2 && !tls {
            // nginx and Apache offer h2 through TLS's ALPN; a cleartext h2-only port would
            // refuse the HTTP/1.1 clients (and readiness checks) the lab serves.
            return Err(Error::usage(
                "--http2 needs --tls (HTTP/2 is negotiated through TLS's ALPN)",
            ));
        }
        let db = if stack == Stack::Mariadb {
            let d = DbConfig::default();
            Some(DbConfig {
                query_cache: k.query_cache.unwrap_or(d.query_cache),
                engine: k.engine.unwrap_or(d.engine),
            })
        } else {
            None
        };
        Ok(Resolved {
            stack,
            port,
            fpm,
            prefork,
            workers,
            opcache: k.opcache.unwrap_or(true),
            keep_alive: k.keep_alive.unwrap_or(true),
            db,
            use_db: stack.uses_db() && !self.no_db,
            db_port,
            tls,
            http2,
            front,
            size: stack
                .knobs()
                .contains(&Knob::Size)
                .then(|| k.size.unwrap_or_default()),
            backlog: check_count("--backlog", k.backlog.unwrap_or(DEFAULT_BACKLOG), 65_535)?,
        })
    }
}

fn resolve_fpm(k: &Knobs) -> Result<FpmConfig> {
    let pm = k.pm.unwrap_or(Pm::Static);
    let n = check_count(
        "--max-children",
        k.max_children.unwrap_or(DEFAULT_MAX_CHILDREN),
        MAX_PROCESSES,
    )?;
    if pm != Pm::Dynamic {
        // FPM ignores the spare settings outside dynamic; silently ignoring a flag would
        // make an experiment measure something other than what it says.
        for (set, knob) in [
            (k.start_servers.is_some(), Knob::StartServers),
            (k.min_spare.is_some(), Knob::MinSpare),
            (k.max_spare.is_some(), Knob::MaxSpare),
        ] {
            if set {
                return Err(Error::usage(format!(
                    "{} applies only with --pm dynamic (pm is {})",
                    knob.flag(),
                    pm.name()
                )));
            }
        }
    }
    // lab-probe's defaults: start = min spare = N/4, max spare = N/2.
    let min = k.min_spare.unwrap_or((n / 4).max(1));
    let max = k.max_spare.unwrap_or((n / 2).max(min).min(n));
    let start = k.start_servers.unwrap_or(min.max(1));
    if pm == Pm::Dynamic {
        // The same rules FPM enforces at start, reported before anything runs.
        if min == 0 || max == 0 {
            return Err(Error::usage(
                "--min-spare and --max-spare must be at least 1",
            ));
        }
        if max > n {
            return Err(Error::usage(format!(
                "--max-spare {max} is above --max-children {n}"
            )));
        }
        if min > max {
            return Err(Error::usage(format!(
                "--min-spare {min} is above --max-spare {max}"
            )));
        }
        if start < min || start > max {
            return Err(Error::usage(format!(
                "--start-servers {start} must lie between --min-spare {min} and --max-spare {max}"
            )));
        }
    }
    Ok(FpmConfig {
        pm,
        max_children: n,
        start_servers: start,
        min_spare: min,
        max_spare: max,
    })
}

fn resolve_prefork(k: &Knobs) -> Result<PreforkConfig> {
    let w = check_count(
        "--workers",
        k.workers.unwrap_or(DEFAULT_PREFORK_WORKERS),
        MAX_PROCESSES,
    )?;
    // Pre-spawn every child (StartServers = MaxRequestWorkers) as static FPM does, so a
    // comparison is not skewed by Apache's spawn ramp (lab-probe §3, §8).
    let start = k.start_servers.unwrap_or(w);
    let min = k.min_spare.unwrap_or(5.min(w));
    let max = k.max_spare.unwrap_or(w.max(min + 1));
    if start == 0 || start > w {
        return Err(Error::usage(format!(
            "--start-servers must be 1..{w} (--workers), got {start}"
        )));
    }
    if min == 0 {
        return Err(Error::usage("--min-spare must be at least 1"));
    }
    if min >= max {
        // Apache would quietly raise MaxSpareServers to MinSpareServers + 1.
        return Err(Error::usage(format!(
            "--min-spare {min} must be below --max-spare {max}"
        )));
    }
    Ok(PreforkConfig {
        workers: w,
        start_servers: start,
        min_spare: min,
        max_spare: max,
    })
}

fn on_off(b: bool) -> String {
    if b { "on" } else { "off" }.to_string()
}

impl Resolved {
    /// Where a web stack answers: `http://` or, with `--tls`, `https://127.0.0.1:PORT`.
    pub fn base_url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// The web stack whose processes serve this one: an app's front, else the stack itself.
    pub fn web(&self) -> Stack {
        self.front.unwrap_or(self.stack)
    }

    /// The effective knob values, for the state file and for `up`/`status` output.
    pub fn describe(&self) -> BTreeMap<String, String> {
        let mut m = BTreeMap::new();
        if let Some(f) = &self.fpm {
            m.insert("pm".into(), f.pm.name().into());
            m.insert("max-children".into(), f.max_children.to_string());
            if f.pm == Pm::Dynamic {
                m.insert("start-servers".into(), f.start_servers.to_string());
                m.insert("min-spare".into(), f.min_spare.to_string());
                m.insert("max-spare".into(), f.max_spare.to_string());
            }
        }
        if let Some(p) = &self.prefork {
            m.insert("workers".into(), p.workers.to_string());
            m.insert("start-servers".into(), p.start_servers.to_string());
            m.insert("min-spare".into(), p.min_spare.to_string());
            m.insert("max-spare".into(), p.max_spare.to_string());
        }
        if let Some(w) = self.workers {
            m.insert("workers".into(), w.to_string());
        }
        if let Some(f) = self.front {
            m.insert("web".into(), f.name().into());
        }
        if let Some(s) = self.size {
            m.insert("size".into(), s.name().into());
        }
        if let Some(d) = &self.db {
            m.insert("query-cache".into(), on_off(d.query_cache));
            m.insert("engine".into(), d.engine.sql_name().to_lowercase());
        } else {
            m.insert("opcache".into(), on_off(self.opcache));
            m.insert("keep-alive".into(), on_off(self.keep_alive));
            // Only when on: the knobs of plain stacks read as they always did.
            if self.tls {
                m.insert("tls".into(), on_off(true));
                m.insert("http2".into(), on_off(self.http2));
            }
            m.insert("backlog".into(), self.backlog.to_string());
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::stacks::Knobs;

    fn spec(stack: Stack, knobs: Knobs) -> StackSpec {
        StackSpec {
            knobs,
            ..StackSpec::new(stack)
        }
    }

    #[test]
    fn defaults() {
        let r = StackSpec::new(Stack::NginxFpm).resolve().unwrap();
        assert_eq!(r.port, 18081);
        let f = r.fpm.unwrap();
        assert_eq!((f.pm, f.max_children), (Pm::Static, 20));
        assert!(r.opcache && r.keep_alive && r.use_db);
        let p = StackSpec::new(Stack::ApachePrefork)
            .resolve()
            .unwrap()
            .prefork
            .unwrap();
        assert_eq!(
            (p.workers, p.start_servers, p.min_spare, p.max_spare),
            (20, 20, 5, 20)
        );
        let d = StackSpec::new(Stack::Mariadb).resolve().unwrap();
        assert_eq!(d.port, 13306);
        assert!(!d.use_db);
    }

    #[test]
    fn knob_must_apply() {
        let e = spec(
            Stack::ApachePrefork,
            Knobs {
                pm: Some(Pm::Static),
                ..Knobs::default()
            },
        )
        .resolve()
        .unwrap_err();
        assert!(matches!(e, Error::Usage(_)));
        assert!(e
            .to_string()
            .contains("--pm does not apply to apache-prefork"));
        let e = spec(
            Stack::Mariadb,
            Knobs {
                opcache: Some(false),
                ..Knobs::default()
            },
        )
        .resolve()
        .unwrap_err();
        assert!(e.to_string().contains("--opcache"));
    }

    #[test]
    fn fpm_dynamic_rules() {
        let k = |pm, n, start, min, max| Knobs {
            pm: Some(pm),
            max_children: Some(n),
            start_servers: start,
            min_spare: min,
            max_spare: max,
            ..Knobs::default()
        };
        let f = spec(Stack::NginxFpm, k(Pm::Dynamic, 8, None, None, None))
            .resolve()
            .unwrap()
            .fpm
            .unwrap();
        assert_eq!((f.start_servers, f.min_spare, f.max_spare), (2, 2, 4));
        let f = spec(Stack::NginxFpm, k(Pm::Dynamic, 1, None, None, None))
            .resolve()
            .unwrap()
            .fpm
            .unwrap();
        assert_eq!((f.start_servers, f.min_spare, f.max_spare), (1, 1, 1));
        for bad in [
            k(Pm::Dynamic, 8, Some(9), None, None),
            k(Pm::Dynamic, 8, None, Some(5), Some(4)),
            k(Pm::Dynamic, 8, None, None, Some(9)),
            k(Pm::Static, 8, None, Some(2), None),
            k(Pm::Ondemand, 8, Some(2), None, None),
            k(Pm::Static, 0, None, None, None),
        ] {
            let e = spec(Stack::NginxFpm, bad).resolve().unwrap_err();
            assert!(matches!(e, Error::Usage(_)), "{e}");
        }
    }

    #[test]
    fn prefork_rules() {
        let p = spec(
            Stack::ApachePrefork,
            Knobs {
                workers: Some(8),
                ..Knobs::default()
            },
        )
        .resolve()
        .unwrap()
        .prefork
        .unwrap();
        assert_eq!(
            (p.workers, p.start_servers, p.min_spare, p.max_spare),
            (8, 8, 5, 8)
        );
        let p = spec(
            Stack::ApachePrefork,
            Knobs {
                workers: Some(1),
                ..Knobs::default()
            },
        )
        .resolve()
        .unwrap()
        .prefork
        .unwrap();
        assert_eq!((p.min_spare, p.max_spare), (1, 2));
        assert!(spec(
            Stack::ApachePrefork,
            Knobs {
                workers: Some(8),
                start_servers: Some(9),
                ..Knobs::default()
            }
        )
        .resolve()
        .is_err());
    }

    #[test]
    fn tls_and_http2_rules() {
        let knobs = |tls, http2| Knobs {
            tls,
            http2,
            ..Knobs::default()
        };
        let r = spec(Stack::NginxFpm, knobs(Some(true), Some(true)))
            .resolve()
            .unwrap();
        assert!(r.tls && r.http2);
        assert_eq!(r.base_url(), "https://127.0.0.1:18081");
        assert_eq!(r.describe()["http2"], "on");
        let plain = StackSpec::new(Stack::NginxFpm).resolve().unwrap();
        assert_eq!(plain.base_url(), "http://127.0.0.1:18081");
        assert!(!plain.describe().contains_key("tls"));
        // HTTP/2 is negotiated through ALPN: no --http2 without --tls.
        let e = spec(Stack::NginxFpm, knobs(None, Some(true)))
            .resolve()
            .unwrap_err();
        assert!(e.to_string().contains("--http2 needs --tls"), "{e}");
        // Prefork takes TLS but says why it cannot take HTTP/2.
        assert!(
            spec(Stack::ApachePrefork, knobs(Some(true), None))
                .resolve()
                .unwrap()
                .tls
        );
        let e = spec(Stack::ApachePrefork, knobs(Some(true), Some(true)))
            .resolve()
            .unwrap_err();
        assert!(matches!(e, Error::Usage(_)));
        assert!(e.to_string().contains("mpm_prefork"), "{e}");
        // An experiment's `http2 = false` on prefork is what it has anyway.
        assert!(spec(Stack::ApachePrefork, knobs(Some(true), Some(false)))
            .resolve()
            .is_ok());
        let e = spec(Stack::Mariadb, knobs(Some(true), None))
            .resolve()
            .unwrap_err();
        assert!(
            e.to_string().contains("--tls does not apply to mariadb"),
            "{e}"
        );
    }

    #[test]
    fn app_stacks_take_their_fronts_knobs() {
        let r = StackSpec::new(Stack::Wordpress).resolve().unwrap();
        assert_eq!(
            (r.web(), r.size, r.port),
            (Stack::NginxFpm, Some(Size::Small), 18086)
        );
        assert_eq!(r.fpm.unwrap().max_children, DEFAULT_MAX_CHILDREN);
        assert!(r.use_db && r.prefork.is_none());
        let r = spec(
            Stack::Wordpress,
            Knobs {
                web: Some(Stack::ApachePrefork),
                workers: Some(8),
                size: Some(Size::Medium),
                ..Knobs::default()
            },
        )
        .resolve()
        .unwrap();
        assert_eq!(
            (r.web(), r.prefork.as_ref().unwrap().workers),
            (Stack::ApachePrefork, 8)
        );
        assert_eq!(r.describe()["web"], "apache-prefork");
        assert_eq!(r.describe()["size"], "medium");
        let g = StackSpec::new(Stack::Gallery).resolve().unwrap();
        assert!(
            !g.use_db && g.size.is_none(),
            "the gallery has no database, no size"
        );
        for bad in [
            Knobs {
                web: Some(Stack::PhpPersistent),
                ..Knobs::default()
            },
            Knobs {
                size: Some(Size::Small),
                ..Knobs::default()
            },
            Knobs {
                web: Some(Stack::NginxFpm),
                workers: Some(2),
                ..Knobs::default()
            },
        ] {
            let e = spec(Stack::Gallery, bad).resolve().unwrap_err();
            assert!(matches!(e, Error::Usage(_)), "{e}");
        }
        // Symfony: booted per request on nginx-fpm, once per worker on php-persistent.
        let r = StackSpec::new(Stack::Symfony).resolve().unwrap();
        assert_eq!((r.web(), r.port), (Stack::NginxFpm, 18088));
        assert!(r.use_db && r.fpm.is_some() && r.workers.is_none());
        let r = spec(
            Stack::Symfony,
            Knobs {
                web: Some(Stack::PhpPersistent),
                workers: Some(3),
                opcache: Some(false),
                ..Knobs::default()
            },
        )
        .resolve()
        .unwrap();
        assert_eq!((r.workers, r.opcache), (Some(3), false));
        assert!(r.fpm.is_none());
        let e = spec(
            Stack::Symfony,
            Knobs {
                web: Some(Stack::PhpPersistent),
                max_children: Some(3),
                ..Knobs::default()
            },
        )
        .resolve()
        .unwrap_err();
        assert!(matches!(e, Error::Usage(_)), "{e}");
        let e = spec(
            Stack::NginxFpm,
            Knobs {
                web: Some(Stack::NginxFpm),
                ..Knobs::default()
            },
        )
        .resolve()
        .unwrap_err();
        assert!(
            e.to_string().contains("--web does not apply to nginx-fpm"),
            "{e}"
        );
    }

    #[test]
    fn ports_and_db_flags() {
        let mut s = StackSpec::new(Stack::Mariadb);
        s.no_db = true;
        assert!(s.resolve().is_err());
        let mut s = StackSpec::new(Stack::NginxFpm);
        s.port = Some(13306);
        assert!(s.resolve().is_err());
        s.no_db = true;
        assert!(s.resolve().is_ok());
        s.port = Some(0);
        assert!(s.resolve().is_err());
    }
}
