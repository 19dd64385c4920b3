//! MariaDB/MySQL, read-only: `SHOW GLOBAL STATUS` every sample (threads running and
//! connected, lock waits, slow queries) for the bottleneck verdict, and [`query_pairs`] for
//! whoever needs another two-column query (the audit's `SHOW GLOBAL VARIABLES`).
//!
//! Why the `mariadb` (or `mysql`) client binary rather than a crate: the `mysql` crate pulls in
//! a large tree (and TLS, compression, a connection pool) for two queries a second; the lab
//! already needs the client, and a server the user observes has it beside it. Each query is
//! one short process, killed after [`TIMEOUT`], so a hung server never holds the sampler.
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::sample::Sample;
use super::source::{no_second, Kind, Source, Tick};
use super::stat::{Acc, Stat};
use crate::{Error, Result};

/// How long one query may take, connection included.
pub const TIMEOUT: Duration = Duration::from_secs(2);

/// Where and as whom to connect: `--mysql USER@HOST:PORT` with `--mysql-password-file FILE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MysqlConfig {
    pub host: String,
    pub port: u16,
    pub user: String,
    /// The password (the file's first line); empty for none.
    pub password: String,
    /// The flag as given, without the password: what samples and messages name.
    pub raw: String,
}

impl MysqlConfig {
    /// Parses `USER@HOST:PORT` (`HOST` may be `[::1]`); `password_file` holds the password
    /// on its first line (read once, here; it must not be readable by every user).
    pub fn parse(spec: &str, password_file: Option<&Path>) -> std::result::Result<Self, String> {
        let spec = spec.trim();
        let (user, addr) = spec
            .rsplit_once('@')
            .ok_or_else(|| format!("expected USER@HOST:PORT, got '{spec}'"))?;
        if user.is_empty() || user.contains(char::is_whitespace) {
            return Err(format!("expected USER@HOST:PORT, got '{spec}' (no user)"));
        }
        let (host, port) = addr
            .rsplit_once(':')
            .ok_or_else(|| format!("expected USER@HOST:PORT, got '{spec}' (no port)"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if host.is_empty() || host.starts_with('-') || host.contains(char::is_whitespace) {
            return Err(format!("expected USER@HOST:PORT, got '{spec}' (bad host)"));
        }
        let port = match port.parse::<u16>() {
            Ok(p) if p > 0 => p,
            _ => return Err(format!("expected a port 1-65535 in '{spec}', got '{port}'")),
        };
        let password = match password_file {
            Some(f) => read_password(f)?,
            None => String::new(),
        };
        Ok(MysqlConfig {
            host: host.to_string(),
            port,
            user: user.to_string(),
            password,
            raw: spec.to_string(),
        })
    }
}

fn read_password(f: &Path) -> std::result::Result<String, String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(f).map_err(|e| format!("{}: {e}", f.display()))?;
    if meta.mode() & 0o007 != 0 {
        return Err(format!(
            "{}: readable by others (mode {:o}); chmod 600 it",
            f.display(),
            meta.mode() & 0o777
        ));
    }
    let mut text = String::new();
    std::fs::File::open(f)
        .and_then(|h| h.take(4096).read_to_string(&mut text))
        .map_err(|e| format!("{}: {e}", f.display()))?;
    Ok(text.lines().next().unwrap_or("").to_string())
}

/// The client program: `mariadb`, else `mysql` (older packages and MySQL's own client).
fn client() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in ["mariadb", "mysql"] {
        for dir in std::env::split_paths(&path).chain([PathBuf::from("/usr/bin")]) {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Runs `sql` (a statement answering two columns, e.g. `SHOW GLOBAL STATUS`) and returns its
/// rows as (name, value) pairs, in the server's order. At most [`TIMEOUT`].
pub fn query_pairs(cfg: &MysqlConfig, sql: &str) -> Result<Vec<(String, String)>> {
    let out = run(cfg, sql, TIMEOUT)?;
    Ok(parse_pairs(&out))
}

fn run(cfg: &MysqlConfig, sql: &str, timeout: Duration) -> Result<String> {
    let prog = client().ok_or_else(|| {
        Error::runtime(format!(
            "mysql {}: neither the mariadb nor the mysql client is installed",
            cfg.raw
        ))
    })?;
    let mut cmd = Command::new(prog);
    // --no-defaults first: no ~/.my.cnf or /etc/mysql option changes what is asked or where.
    cmd.args([
        "--no-defaults",
        "--protocol=TCP",
        "--batch",
        "--skip-column-names",
    ])
    .arg(format!("--host={}", cfg.host))
    .arg(format!("--port={}", cfg.port))
    .arg(format!("--user={}", cfg.user))
    .arg(format!("--connect-timeout={}", timeout.as_secs().max(1)))
    .arg("--execute")
    .arg(sql)
    .env_remove("MYSQL_PWD")
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    if !cfg.password.is_empty() {
        // In the environment, not argv: /proc/PID/environ is readable by the owner only,
        // the command line by everyone.
        cmd.env("MYSQL_PWD", &cfg.password);
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::runtime(format!("mysql {}: cannot run the client: {e}", cfg.raw)))?;
    // Readers on threads: a large answer (SHOW GLOBAL VARIABLES) must not block on a full pipe.
    let reader = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(r) = r {
                let _ = r.take(4 << 20).read_to_end(&mut v);
            }
            v
        })
    };
    let out = reader(child.stdout.take().map(|r| Box::new(r) as _));
    let err = reader(child.stderr.take().map(|r| Box::new(r) as _));
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(Error::runtime(format!("mysql {}: {e}", cfg.raw))),
        }
    };
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    match status {
        None => Err(Error::runtime(format!(
            "mysql {}: no answer within {} ms",
            cfg.raw,
            timeout.as_millis()
        ))),
        Some(s) if !s.success() => {
            let msg = String::from_utf8_lossy(&err);
            let line = msg.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            Err(Error::runtime(format!(
                "mysql {}: {}",
                cfg.raw,
                if line.is_empty() {
                    format!("the client failed ({s})")
                } else {
                    line.trim().to_string()
                }
            )))
        }
        Some(_) => Ok(String::from_utf8_lossy(&out).into_owned()),
    }
}

/// Batch output: one row a line, columns split by tabs, `\t` `\n` `\\` `\0` escaped.
pub fn parse_pairs(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once('\t')?;
            Some((unescape(k), unescape(v)))
        })
        .collect()
}

fn unescape(s: &str) -> String {
    if !s.contains('\\') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('0') => out.push('\0'),
            Some(o) => out.push(o),
            None => out.push('\\'),
        }
    }
    out
}

/// One `--mysql` server, sampled each period; keeps the previous counters for the deltas.
#[derive(Debug, Clone)]
pub struct MysqlSource {
    pub cfg: MysqlConfig,
    prev: Option<[u64; 4]>,
}

impl MysqlSource {
    pub fn new(cfg: MysqlConfig) -> MysqlSource {
        MysqlSource { cfg, prev: None }
    }

    /// One `SHOW GLOBAL STATUS`, within `timeout` (at most [`TIMEOUT`]).
    pub fn sample(&mut self, timeout: Duration) -> MysqlSample {
        match run(&self.cfg, "SHOW GLOBAL STATUS", timeout.min(TIMEOUT)) {
            Ok(out) => self.from_status(&parse_pairs(&out)),
            Err(e) => MysqlSample {
                target: self.cfg.raw.clone(),
                error: Some(e.to_string()),
                ..Default::default()
            },
        }
    }

    /// The sample of one `SHOW GLOBAL STATUS` answer; counters become deltas since the last.
    pub fn from_status(&mut self, pairs: &[(String, String)]) -> MysqlSample {
        let n = |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(k))
                .and_then(|(_, v)| v.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        let now = [
            n("Table_locks_waited"),
            n("Innodb_row_lock_waits"),
            n("Slow_queries"),
            n("Questions"),
        ];
        let d = match self.prev {
            Some(p) => [0, 1, 2, 3].map(|i| now[i].saturating_sub(p[i])),
            None => [0; 4],
        };
        self.prev = Some(now);
        MysqlSample {
            target: self.cfg.raw.clone(),
            // Less the thread answering this very query.
            threads_running: n("Threads_running").saturating_sub(1),
            threads_connected: n("Threads_connected"),
            table_locks_waited: d[0],
            innodb_row_lock_waits: d[1],
            slow_queries: d[2],
            questions: d[3],
            innodb_row_lock_current_waits: n("Innodb_row_lock_current_waits"),
            error: None,
        }
    }
}

/// One MariaDB/MySQL server over a step: levels as mean and max, counters summed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MysqlObservation {
    pub target: String,
    pub threads_running: Stat,
    pub threads_connected: Stat,
    pub row_lock_current_waits: Stat,
    pub table_locks_waited: u64,
    pub innodb_row_lock_waits: u64,
    pub slow_queries: u64,
    pub questions: u64,
    /// Time the counters cover, ms (the samples' intervals added).
    pub covered_ms: u64,
    /// Samples where the query failed.
    pub errors: u64,
}

impl MysqlObservation {
    /// Lock waits (table and row) per second over the step.
    pub fn lock_waits_per_s(&self) -> f64 {
        let w = self.table_locks_waited + self.innodb_row_lock_waits;
        if self.covered_ms == 0 {
            return 0.0;
        }
        w as f64 * 1000.0 / self.covered_ms as f64
    }
}

impl Source for MysqlSource {
    fn sample(&mut self, tick: &mut Tick, into: &mut Sample) {
        let s = MysqlSource::sample(self, tick.timeout);
        into.mysql.push(s);
    }
}

pub const KIND: Kind = Kind {
    name: "mariadb",
    flag: "--mysql USER@HOST:PORT",
    summarise: |samples, into| into.mysql = observe(samples),
    second: no_second,
    pools: None,
};

/// The step's summary of each server, in the order the servers were given.
fn observe(samples: &[&Sample]) -> Vec<MysqlObservation> {
    let mut out: Vec<(MysqlObservation, [Acc; 3])> = Vec::new();
    for s in samples {
        for m in &s.mysql {
            let i = match out.iter().position(|(o, _)| o.target == m.target) {
                Some(i) => i,
                None => {
                    out.push((
                        MysqlObservation {
                            target: m.target.clone(),
                            ..Default::default()
                        },
                        [Acc::default(); 3],
                    ));
                    out.len() - 1
                }
            };
            let (o, acc) = &mut out[i];
            if m.error.is_some() {
                o.errors += 1;
                continue;
            }
            acc[0].add(m.threads_running as f64);
            acc[1].add(m.threads_connected as f64);
            acc[2].add(m.innodb_row_lock_current_waits as f64);
            o.table_locks_waited += m.table_locks_waited;
            o.innodb_row_lock_waits += m.innodb_row_lock_waits;
            o.slow_queries += m.slow_queries;
            o.questions += m.questions;
            o.covered_ms += s.interval_ms;
        }
    }
    out.into_iter()
        .map(|(mut o, a)| {
            o.threads_running = a[0].stat();
            o.threads_connected = a[1].stat();
            o.row_lock_current_waits = a[2].stat();
            o
        })
        .collect()
}

/// One `SHOW GLOBAL STATUS` of a MariaDB/MySQL server: levels, and counters as increases
/// since the previous sample.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MysqlSample {
    /// `USER@HOST:PORT`.
    pub target: String,
    /// Threads executing a statement, less the one answering `SHOW GLOBAL STATUS`.
    pub threads_running: u64,
    pub threads_connected: u64,
    pub table_locks_waited: u64,
    pub innodb_row_lock_waits: u64,
    pub slow_queries: u64,
    pub questions: u64,
    /// Row locks being waited for at the instant of the sample.
    pub innodb_row_lock_current_waits: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> MysqlConfig {
        MysqlConfig::parse("lab@127.0.0.1:3306", None).unwrap()
    }

    #[test]
    fn parses_the_flag() {
        let c = cfg();
        assert_eq!(
            (c.user.as_str(), c.host.as_str(), c.port),
            ("lab", "127.0.0.1", 3306)
        );
        let c = MysqlConfig::parse("ro@[::1]:3307", None).unwrap();
        assert_eq!((c.host.as_str(), c.port), ("::1", 3307));
        for bad in [
            "127.0.0.1:3306",
            "@h:1",
            "u@h",
            "u@h:0",
            "u@h:x",
            "u@-x:1",
            "u@:1",
        ] {
            assert!(MysqlConfig::parse(bad, None).is_err(), "{bad}");
        }
    }

    #[test]
    fn password_file_must_be_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = std::env::temp_dir().join(format!("overload-mysql-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("pw");
        std::fs::write(&f, "s3cret\nignored\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o604)).unwrap();
        let e = MysqlConfig::parse("u@h:1", Some(&f)).unwrap_err();
        assert!(e.contains("chmod 600"), "{e}");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(
            MysqlConfig::parse("u@h:1", Some(&f)).unwrap().password,
            "s3cret"
        );
        assert!(MysqlConfig::parse("u@h:1", Some(&dir.join("none"))).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn batch_output() {
        let p = parse_pairs("Threads_running\t3\nversion_comment\ta\\tb\\\\c\nno tab\n");
        assert_eq!(
            p,
            vec![
                ("Threads_running".to_string(), "3".to_string()),
                ("version_comment".to_string(), "a\tb\\c".to_string())
            ]
        );
        assert!(parse_pairs("").is_empty());
    }

    #[test]
    fn counters_become_deltas() {
        let mut s = MysqlSource::new(cfg());
        let status = |locks: u64, running: u64| {
            vec![
                ("Threads_running".to_string(), running.to_string()),
                ("Threads_connected".to_string(), "12".to_string()),
                ("Table_locks_waited".to_string(), locks.to_string()),
                ("Innodb_row_lock_waits".to_string(), "5".to_string()),
                ("Slow_queries".to_string(), "x".to_string()),
            ]
        };
        let a = s.from_status(&status(100, 2));
        assert_eq!((a.table_locks_waited, a.threads_running), (0, 1));
        let b = s.from_status(&status(130, 9));
        assert_eq!(b.table_locks_waited, 30);
        assert_eq!((b.threads_running, b.threads_connected), (8, 12));
        assert_eq!((b.innodb_row_lock_waits, b.slow_queries), (0, 0));
        assert_eq!(b.target, "lab@127.0.0.1:3306");
        // A restarted server's counters go down: no wrap-around.
        assert_eq!(s.from_status(&status(4, 1)).table_locks_waited, 0);
    }

    #[test]
    fn a_step_of_samples() {
        let at = |running, locks, error: Option<&str>| Sample {
            interval_ms: 500,
            mysql: vec![MysqlSample {
                target: "t".into(),
                threads_running: running,
                threads_connected: 20,
                table_locks_waited: locks,
                innodb_row_lock_waits: 1,
                error: error.map(String::from),
                ..Default::default()
            }],
            ..Default::default()
        };
        let v = [at(2, 10, None), at(6, 30, None), at(0, 0, Some("gone"))];
        let o = observe(&v.iter().collect::<Vec<_>>());
        assert_eq!(
            o[0].threads_running,
            Stat {
                mean: 4.0,
                max: 6.0
            }
        );
        assert_eq!(
            (o[0].table_locks_waited, o[0].innodb_row_lock_waits),
            (40, 2)
        );
        assert_eq!((o[0].covered_ms, o[0].errors), (1000, 1));
        assert_eq!(o[0].lock_waits_per_s(), 42.0);
        assert_eq!(MysqlObservation::default().lock_waits_per_s(), 0.0);
    }

    #[test]
    fn a_server_that_is_not_there_is_an_error_not_a_hang() {
        if client().is_none() {
            // Without a client the error says so, which is what this checks too.
            let e = query_pairs(&cfg(), "SHOW GLOBAL STATUS").unwrap_err();
            assert!(e.to_string().contains("client"), "{e}");
            return;
        }
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let c = MysqlConfig::parse(&format!("ro@127.0.0.1:{port}"), None).unwrap();
        let t = Instant::now();
        let e = query_pairs(&c, "SHOW GLOBAL STATUS")
            .unwrap_err()
            .to_string();
        assert!(
            t.elapsed() < TIMEOUT + Duration::from_secs(1),
            "{:?}",
            t.elapsed()
        );
        assert!(
            e.starts_with(&format!("mysql ro@127.0.0.1:{port}: ")),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
    }
}
