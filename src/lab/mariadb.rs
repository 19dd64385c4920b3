//! MariaDB with a private datadir: initialised once per prefix, started without
//! mysqld_safe, readiness from the server's greeting, schema and seed data applied at every
//! start (idempotent, and converting the tables when the engine knob changed).
use std::fs;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::launch::Launch;
use super::process::{self, PartInfo, DAEMON_PATH};
use super::render;
use super::resolve::Resolved;
use super::stacks::Stack;
use super::state::{make_dir, write_file, Layout};
use crate::{Error, Result};

/// Written into the datadir once initialisation and seeding succeeded; without it the
/// datadir is a half-done first start and is redone from scratch.
const READY_MARK: &str = ".overload-lab-initialised";

fn defaults_file(l: &Layout) -> String {
    // --defaults-file must be the first option, or /etc/mysql is read too.
    format!("--defaults-file={}", l.conf.join("my.cnf").display())
}

/// Whether the server on `port` answers a connection: with its protocol-10 greeting, or
/// with an error packet (0xff) such as "Host '127.0.0.1' is not allowed", which is what a
/// fresh datadir says before the schema creates 'lab'@'127.0.0.1'. Either way it is up.
pub fn greets(port: u16) -> bool {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let Ok(mut s) = TcpStream::connect_timeout(&addr, Duration::from_millis(500)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    let mut head = [0u8; 5];
    // 3-byte length, 1-byte sequence, then the protocol version (10) or 0xff.
    s.read_exact(&mut head).is_ok() && (head[4] == 10 || head[4] == 0xff)
}

/// Runs SQL as MariaDB's root over the unix socket (socket auth: only OS root gets in).
pub fn run_sql(l: &Layout, sql: &str) -> Result<String> {
    let mut child = Command::new("mariadb")
        .arg(defaults_file(l))
        .args(["-uroot", "--batch", "--skip-column-names"])
        .env_clear()
        .env("PATH", DAEMON_PATH)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::runtime(format!("cannot run the mariadb client: {e}")))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(sql.as_bytes())?;
    }
    let out = child.wait_with_output()?;
    if !out.status.success() {
        return Err(Error::runtime(format!(
            "mariadb client: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Runs one query against the prefix's MariaDB (for experiments and tests), e.g.
/// `SHOW GLOBAL VARIABLES LIKE 'query_cache%'`; rows come back tab-separated.
pub fn query(prefix: &Path, sql: &str) -> Result<String> {
    run_sql(&Layout::new(prefix, Stack::Mariadb), sql)
}

/// Brings MariaDB up in `l` (the caller has checked the port and holds the prefix lock).
pub fn launch(
    cfg: &Resolved,
    l: &Layout,
    timeout: Duration,
    progress: bool,
) -> Result<Vec<PartInfo>> {
    let db = cfg.db.clone().unwrap_or_default();
    for d in [&l.conf, &l.run, &l.logs, &l.tmp] {
        make_dir(d, None)?;
    }
    let engine = db.engine.sql_name();
    write_file(
        l.conf.join("my.cnf"),
        render::my_cnf(l, cfg.port, db.query_cache, engine)?,
    )?;
    // A crashed server leaves its socket file behind; mariadbd would refuse to start.
    let _ = fs::remove_file(l.run.join("mysqld.sock"));
    // Logs describe the current run only, so a failure's excerpt is never an old one.
    for f in ["mariadbd.out", "mariadb-error.log"] {
        let _ = fs::remove_file(l.logs.join(f));
    }

    let fresh = !l.data.join(READY_MARK).exists();
    if fresh {
        if progress {
            crate::eoutln!(
                "mariadb: first start in this prefix: initialising {} (a few seconds)",
                l.data.display()
            );
        }
        if l.data.exists() {
            fs::remove_dir_all(&l.data)?;
        }
        make_dir(&l.data, None)?;
        let log = l.logs.join("install-db.log");
        let out = Command::new("mariadb-install-db")
            .arg(defaults_file(l))
            .args(["--auth-root-authentication-method=socket", "--skip-test-db"])
            .env_clear()
            .env("PATH", DAEMON_PATH)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| {
                Error::runtime(format!(
                    "lab up mariadb: cannot run mariadb-install-db: {e}"
                ))
            })?;
        let mut text = out.stdout;
        text.extend_from_slice(&out.stderr);
        write_file(&log, &text)?;
        if !out.status.success() {
            return Err(Error::runtime(format!(
                "lab up mariadb: mariadb-install-db failed ({}){}",
                out.status,
                process::log_excerpt(&[log], 12)
            )));
        }
    }

    let mut run = Launch::new(Stack::Mariadb, timeout);
    run.spawn(
        "mariadbd",
        "mariadbd",
        vec![defaults_file(l)],
        &l.logs,
        vec![l.logs.join("mariadb-error.log")],
        None,
    )?;
    let port = cfg.port;
    run.wait("mariadb", || greets(port))?;
    if let Err(e) = run_sql(l, &render::schema(engine)?) {
        let logs = vec![l.logs.join("mariadb-error.log")];
        return Err(run.fail("schema", &e.to_string(), &logs));
    }
    if fresh {
        write_file(l.data.join(READY_MARK), "")?;
    }
    Ok(run.finish())
}
