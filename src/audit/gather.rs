//! Gathers the evidence the rules judge: a few GETs (plain, with Accept-Encoding, a
//! conditional one) and an idle wait on a kept connection; /proc/sys, sock_diag and
//! /proc/PID/limits of the listening process when the host is this machine; the PHP probe
//! page and FPM's status. Read-only, bounded by timeouts; anything that fails becomes the
//! reason its checks are skipped.
use super::db::{DbEvidence, MYISAM_QUERY};
use super::host::{HostEvidence, Listener};
use super::http::{
    is_text_type, sniff, Answer, CompressionCost, HttpEvidence, Idle, ACCEPT_ENCODING, COST_PAIRS,
};
use super::php::PhpIni;
pub use super::reads::{HostReads, Proc};
use super::Probe;
use crate::http_get::{self, KeptConn, Response, Trust};
use crate::observe::agent::Reply;
use crate::observe::client::AgentSpec;
use crate::observe::{net, query_pairs, FpmSource, KernelLimits, MysqlConfig};
use crate::url::{Scheme, Url};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Bodies above this are counted from Content-Length, not read (a probe, not a download).
const MAX_READ: usize = 8 << 20;

fn answer(r: &Response) -> Answer {
    let declared = r
        .header("content-length")
        .and_then(|v| v.trim().parse::<u64>().ok());
    let body_bytes = if r.truncated {
        declared.unwrap_or(r.body.len() as u64)
    } else {
        r.body.len() as u64
    };
    let (text, sniffed) = match r.header("content-type") {
        Some(t) => (is_text_type(t), None),
        // No Content-Type: judge by the bytes, as a browser sniffs.
        None => {
            let (text, what) = sniff(&r.body);
            (text, Some(what.to_string()))
        }
    };
    Answer {
        status: r.status,
        headers: r.headers.clone(),
        body_bytes,
        text,
        sniffed,
    }
}

/// The size of `body` after gzip at level 6 (the usual server default).
pub fn gzip_size(body: &[u8]) -> Option<u64> {
    let mut z = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(6));
    z.write_all(body).ok()?;
    Some(z.finish().ok()?.len() as u64)
}

/// The HTTP evidence (the A/B and ALPN are filled in by the caller, which drives the
/// engine). `idle_wait`: how long the kept connection is left idle. `trust`: whom an
/// https:// certificate must chain to, or why the probes cannot verify it (then skipped).
pub fn http(
    url: &Url,
    timeout: Duration,
    idle_wait: Duration,
    trust: Result<Trust<'_>, String>,
) -> HttpEvidence {
    let target = url.target.clone();
    let mut e = HttpEvidence {
        target: target.clone(),
        https: url.scheme == Scheme::Https,
        plain: Err(String::new()),
        encoded: Err(String::new()),
        gzip_estimate: None,
        compression_cost: Err("the server does not compress this answer".into()),
        conditional: None,
        idle: Err(String::new()),
        ab_compression: Err("not measured".into()),
        ab_keep_alive: Err("not measured".into()),
        alpn: Err("not asked".into()),
    };
    let trust = match trust {
        Ok(t) => t,
        Err(why) => {
            e.plain = Err(why.clone());
            e.encoded = Err(why.clone());
            e.idle = Err(why);
            return e;
        }
    };
    // The plain GET on a connection kept open; the idle wait runs beside the other GETs.
    let (plain, idle) = std::thread::scope(|s| {
        let kept = s.spawn(|| -> (Probe<Response>, Probe<Idle>) {
            let mut c = match KeptConn::open_trusting(url, timeout, trust) {
                Ok(c) => c,
                Err(e) => return (Err(e.clone()), Err(e)),
            };
            let r = c.get(&target, &[], timeout, MAX_READ);
            let idle = match &r {
                Ok(r) if !r.truncated => Ok(Idle {
                    waited_s: idle_wait.as_secs_f64(),
                    closed_after_s: c.closed_within(idle_wait).map(|d| d.as_secs_f64()),
                }),
                Ok(_) => Err(format!("the answer is larger than {} bytes", MAX_READ)),
                Err(e) => Err(e.clone()),
            };
            (r, idle)
        });
        let encoded = http_get::get_trusting(
            url,
            &target,
            &[("Accept-Encoding", ACCEPT_ENCODING)],
            timeout,
            MAX_READ,
            trust,
        );
        e.encoded = encoded.as_ref().map(answer).map_err(Clone::clone);
        // Its cost in time, while the kept connection idles.
        let compressed = e.encoded.as_ref().is_ok_and(|a| {
            a.text
                && a.header("content-encoding")
                    .is_some_and(|c| !c.eq_ignore_ascii_case("identity"))
        });
        if compressed {
            e.compression_cost = compression_cost(url, &target, timeout, trust);
        }
        kept.join()
            .unwrap_or_else(|_| (Err("probe failed".into()), Err("probe failed".into())))
    });
    e.idle = idle;
    let plain = match plain {
        Ok(r) => r,
        Err(why) => {
            e.plain = Err(why);
            return e;
        }
    };
    let a = answer(&plain);
    let uncompressed = e
        .encoded
        .as_ref()
        .is_ok_and(|x| x.header("content-encoding").is_none());
    if a.text && uncompressed && !plain.truncated {
        e.gzip_estimate = gzip_size(&plain.body);
    }
    let validator = a
        .header("etag")
        .map(|v| ("If-None-Match", v.to_string()))
        .or_else(|| {
            a.header("last-modified")
                .map(|v| ("If-Modified-Since", v.to_string()))
        });
    if let Some((name, value)) = validator {
        let sent = format!("GET {target} with {name}: {value}");
        e.conditional = Some(
            http_get::get_trusting(url, &target, &[(name, &value)], timeout, MAX_READ, trust)
                .map(|r| (sent, answer(&r))),
        );
    }
    e.plain = Ok(a);
    e
}

/// The median of some durations, ms.
fn p50_ms(mut v: Vec<Duration>) -> f64 {
    v.sort_unstable();
    v.get(v.len() / 2).map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

/// Time to first byte and to the whole answer, without and with Accept-Encoding: one kept
/// connection, a GET of each first (unmeasured: the page and the connection warm up), then
/// `COST_PAIRS` of each interleaved, the order swapped every pair so neither kind always
/// follows the other.
pub fn compression_cost(
    url: &Url,
    target: &str,
    timeout: Duration,
    trust: Trust<'_>,
) -> Probe<CompressionCost> {
    let mut c = KeptConn::open_trusting(url, timeout, trust)?;
    let enc = [("Accept-Encoding", ACCEPT_ENCODING)];
    let kinds: [&[(&str, &str)]; 2] = [&[], &enc];
    let mut first = [Vec::new(), Vec::new()];
    let mut total = [Vec::new(), Vec::new()];
    for round in 0..=COST_PAIRS {
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for k in order {
            let t = c.get_timed(target, kinds[k], timeout, MAX_READ)?;
            if t.response.truncated {
                return Err(format!("the answer is larger than {MAX_READ} bytes"));
            }
            if round > 0 {
                first[k].push(t.first_byte);
                total[k].push(t.total);
            }
        }
    }
    let [f0, f1] = first;
    let [t0, t1] = total;
    Ok(CompressionCost {
        pairs: COST_PAIRS,
        first_byte_ms: [p50_ms(f0), p50_ms(f1)],
        total_ms: [p50_ms(t0), p50_ms(t1)],
    })
}

/// Whether `url`'s host is this machine: loopback, or an address a socket can bind here.
pub fn local_host(url: &Url) -> Probe<()> {
    if url.is_loopback() {
        return Ok(());
    }
    let addr = url.resolve()?;
    match std::net::TcpListener::bind((addr.ip(), 0)) {
        Ok(_) => Ok(()),
        Err(_) => Err(format!(
            "{} is not this machine: the host checks read /proc here (run the audit on the \
             server)",
            url.host
        )),
    }
}

/// The host's limits, the backlog in use on `port` and the listening process, read here
/// when the URL's host is this machine.
pub fn host(url: &Url) -> HostEvidence {
    let port = url.port;
    let local = local_host(url);
    if let Err(why) = &local {
        return HostEvidence {
            port,
            local: Err(why.clone()),
            kernel: KernelLimits::default(),
            backlog: Err(why.clone()),
            listener: Err(why.clone()),
            read_by: None,
        };
    }
    host_with(&LocalHost, port)
}

/// The host evidence of the machine `r` reads (this one, or the agent's for `/host`).
pub fn host_with(r: &dyn HostReads, port: u16) -> HostEvidence {
    HostEvidence {
        port,
        local: Ok(()),
        kernel: r.kernel(),
        backlog: r.backlog(port),
        listener: r.listener(port),
        read_by: None,
    }
}

/// The agent's answer to `GET /host?port=N`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostReport {
    pub host: HostEvidence,
    pub ram_bytes: Probe<u64>,
}

/// This machine.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalHost;

/// A PHP binary answering `-i` takes well under a second; one that hangs must not hang the
/// audit.
const RUN_LIMIT: Duration = Duration::from_secs(5);

/// Largest PHP or FPM configuration file read (Debian's php.ini is 73 KiB).
const MAX_CONFIG_FILE: u64 = 4 << 20;

impl HostReads for LocalHost {
    fn read(&self, path: &Path) -> Result<String, String> {
        crate::fsutil::read_capped_text(path, MAX_CONFIG_FILE, "PHP configuration")
    }

    fn read_owned(&self, path: &Path, owners: &[u32]) -> Result<String, String> {
        crate::fsutil::read_owned_text(path, MAX_CONFIG_FILE, owners, "PHP configuration")
    }

    fn list(&self, dir: &Path) -> Result<Vec<PathBuf>, String> {
        let d = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(d.flatten().map(|e| e.path()).collect())
    }

    fn processes(&self) -> Vec<Proc> {
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for p in procs.flatten() {
            let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            let Ok(cmd) = std::fs::read(p.path().join("cmdline")) else {
                continue;
            };
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            let uid = std::fs::read_to_string(p.path().join("status"))
                .ok()
                .and_then(|t| status_uid(&t));
            out.push(Proc {
                pid,
                cmd: cmd.trim().to_string(),
                uid,
            });
        }
        out
    }

    fn which(&self, name: &str) -> Option<PathBuf> {
        let path = std::env::var("PATH").unwrap_or_default();
        let dirs = path
            .split(':')
            .chain(["/usr/sbin", "/usr/local/sbin", "/sbin"])
            .filter(|d| !d.is_empty());
        for d in dirs {
            let Ok(entries) = std::fs::read_dir(d) else {
                continue;
            };
            // `php-fpm` or a versioned `php-fpm8.2`; the highest version wins.
            let mut found: Vec<PathBuf> = entries
                .flatten()
                .filter(|e| {
                    let n = e.file_name();
                    let n = n.to_string_lossy();
                    n.strip_prefix(name)
                        .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit() || c == '.'))
                })
                .map(|e| e.path())
                .collect();
            found.sort();
            // Run as root, a program another user could have placed or replaced would run
            // their code: only root's, resolved, so a link cannot be swapped after the check.
            if let Some(p) = found
                .into_iter()
                .rev()
                .find_map(|p| crate::fsutil::root_owned(&p).ok())
            {
                return Some(p);
            }
        }
        None
    }

    fn run(&self, program: &Path, args: &[&str]) -> Result<String, String> {
        let what = format!("{} {}", program.display(), args.join(" "));
        let mut child = std::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("{what}: {e}"))?;
        // Read beside the wait: a long `-i` fills the pipe before the program exits.
        let mut stdout = child.stdout.take().ok_or("no stdout")?;
        let reader = std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = stdout.by_ref().take(4 << 20).read_to_end(&mut s);
            s
        });
        let deadline = Instant::now() + RUN_LIMIT;
        let status = loop {
            match child.try_wait() {
                Ok(Some(st)) => break st,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Ok(None) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("{what}: no answer within {RUN_LIMIT:?}"));
                }
                Err(e) => return Err(format!("{what}: {e}")),
            }
        };
        let out = reader.join().unwrap_or_default();
        if !status.success() {
            return Err(format!("{what}: {status}"));
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    fn kernel(&self) -> KernelLimits {
        KernelLimits::read()
    }

    fn backlog(&self, port: u16) -> Probe<u64> {
        net::listen_queue_limits(port)
            .map(|(_, limit)| limit)
            .ok_or_else(|| format!("sock_diag shows no socket listening on port {port}"))
    }

    fn listener(&self, port: u16) -> Probe<Listener> {
        listener(port)
    }

    fn ram(&self) -> Probe<u64> {
        std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|t| crate::observe::proc::parse_meminfo(&t))
            .map(|m| m.total)
            .ok_or_else(|| "/proc/meminfo is unreadable".to_string())
    }

    fn me(&self) -> u32 {
        // SAFETY: geteuid cannot fail.
        unsafe { libc::geteuid() }
    }
}

/// The user a process runs as, from /proc/PID/status's `Uid:` line (real, effective, saved,
/// filesystem): the first that is not root. A process that made itself undumpable has its
/// /proc entry owned by root, so the entry's owner would lie; these four do not.
fn status_uid(status: &str) -> Option<u32> {
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    let ids: Vec<u32> = line
        .split_whitespace()
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    if ids.is_empty() {
        return None;
    }
    Some(ids.iter().copied().find(|&u| u != 0).unwrap_or(0))
}

/// What the agent answers for the audit (`/host?port=N`, `/php-ini`), from `reads`.
#[derive(Clone)]
pub struct AgentAnswers(pub std::sync::Arc<dyn HostReads>);

impl std::fmt::Debug for AgentAnswers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AgentAnswers")
    }
}

impl crate::observe::agent::HostQuestions for AgentAnswers {
    fn host(&self, port: u16) -> Reply {
        json_reply(&HostReport {
            host: host_with(self.0.as_ref(), port),
            ram_bytes: self.0.ram(),
        })
    }

    fn php_ini(&self, port: Option<u16>) -> Reply {
        json_reply(&super::ini::find(self.0.as_ref(), port, None, None))
    }
}

fn json_reply<T: Serialize>(v: &T) -> Reply {
    match serde_json::to_vec(v) {
        Ok(b) => Reply::json(b),
        Err(e) => Reply::text(500, &format!("encoding failed: {e}")),
    }
}

/// A GET of the agent's `path`, its JSON decoded.
pub fn from_agent<T: serde::de::DeserializeOwned>(
    agent: &AgentSpec,
    path: &str,
    timeout: Duration,
) -> Probe<T> {
    let base = agent.url.target.trim_end_matches('/');
    let base = base.split('?').next().unwrap_or("");
    let auth = format!("Bearer {}", agent.token);
    let r = http_get::get(
        &agent.url,
        &format!("{base}{path}"),
        &[("Authorization", &auth)],
        timeout,
        8 << 20,
    )
    .map_err(|e| format!("agent {}: {e}", agent.name))?;
    match r.status {
        200 => {}
        401 => return Err(format!("agent {}: token rejected (401)", agent.name)),
        404 => {
            return Err(format!(
                "agent {}: no {path} (an agent older than this overload)",
                agent.name
            ))
        }
        s => return Err(format!("agent {}: {path} answered {s}", agent.name)),
    }
    serde_json::from_slice(&r.body)
        .map_err(|e| format!("agent {}: bad {path} JSON: {e}", agent.name))
}

/// The host evidence and RAM of the agent's machine, for the server listening on `port`.
pub fn host_via_agent(
    agent: &AgentSpec,
    port: u16,
    timeout: Duration,
) -> (HostEvidence, Probe<u64>) {
    match from_agent::<HostReport>(agent, &format!("/host?port={port}"), timeout) {
        Ok(mut r) => {
            r.host.port = port;
            r.host.read_by = Some(format!("agent {}", agent.name));
            (r.host, r.ram_bytes)
        }
        Err(why) => (
            HostEvidence {
                port,
                local: Err(why.clone()),
                kernel: KernelLimits::default(),
                backlog: Err(why.clone()),
                listener: Err(why.clone()),
                read_by: Some(format!("agent {}", agent.name)),
            },
            Err(why),
        ),
    }
}

/// The php.ini the agent's machine found.
pub fn php_ini_via_agent(
    agent: &AgentSpec,
    port: u16,
    timeout: Duration,
) -> Probe<super::ini::IniFound> {
    from_agent::<Probe<super::ini::IniFound>>(agent, &format!("/php-ini?port={port}"), timeout)?
}

/// Inodes of the LISTEN sockets on `port` in a /proc/net/tcp{,6} table.
pub fn listen_inodes(table: &str, port: u16) -> Vec<u64> {
    table
        .lines()
        .filter(|l| {
            net::parse_tcp_line(l)
                .is_some_and(|r| r.local_port == port && r.state as usize == net::LISTEN)
        })
        .filter_map(|l| l.split_ascii_whitespace().nth(9)?.parse().ok())
        .collect()
}

/// `Max open files` soft and hard limits from /proc/PID/limits (None: unlimited).
pub fn parse_nofile(limits: &str) -> Option<(Option<u64>, Option<u64>)> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    let mut it = line["Max open files".len()..].split_ascii_whitespace();
    let v = |s: &str| -> Option<Option<u64>> {
        if s == "unlimited" {
            Some(None)
        } else {
            s.parse().ok().map(Some)
        }
    };
    Some((v(it.next()?)?, v(it.next()?)?))
}

/// The processes holding the LISTEN socket of `port`; the one with the lowest open-files
/// limit is the one that runs out first.
fn listener(port: u16) -> Probe<Listener> {
    let mut inodes = Vec::new();
    for f in ["/proc/net/tcp", "/proc/net/tcp6"] {
        if let Ok(t) = std::fs::read_to_string(f) {
            inodes.extend(listen_inodes(&t, port));
        }
    }
    if inodes.is_empty() {
        return Err(format!("no socket listens on port {port} in /proc/net/tcp"));
    }
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    let mut best: Option<Listener> = None;
    let mut denied = false;
    let procs = std::fs::read_dir("/proc").map_err(|e| format!("/proc: {e}"))?;
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let fds = match std::fs::read_dir(p.path().join("fd")) {
            Ok(d) => d,
            Err(_) => {
                denied = true;
                continue;
            }
        };
        let holds = fds.flatten().any(|fd| {
            std::fs::read_link(fd.path())
                .is_ok_and(|l| wanted.iter().any(|w| l.as_os_str() == w.as_str()))
        });
        if !holds {
            continue;
        }
        let Some((soft, hard)) = std::fs::read_to_string(p.path().join("limits"))
            .ok()
            .and_then(|t| parse_nofile(&t))
        else {
            continue;
        };
        let name = std::fs::read_to_string(p.path().join("comm"))
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
        let lower = |b: &Listener| soft.unwrap_or(u64::MAX) < b.nofile_soft.unwrap_or(u64::MAX);
        if best.as_ref().is_none_or(lower) {
            best = Some(Listener {
                pid,
                name,
                nofile_soft: soft,
                nofile_hard: hard,
            });
        }
    }
    best.ok_or_else(|| {
        if denied {
            format!("the process listening on port {port} is not visible (run as root)")
        } else {
            format!("no process holding the socket of port {port} was found")
        }
    })
}

/// The host's RAM from /proc/meminfo (local hosts only).
pub fn ram(local: &Probe<()>) -> Probe<u64> {
    local.as_ref().map_err(Clone::clone)?;
    LocalHost.ram()
}

/// The PHP probe page's JSON.
pub fn php_probe(url: &Url, timeout: Duration) -> Probe<PhpIni> {
    let r = http_get::get(url, &url.target, &[], timeout, 1 << 20)?;
    if r.status != 200 {
        return Err(format!(
            "{}{}: the probe page answered {}",
            url.origin(),
            url.target,
            r.status
        ));
    }
    serde_json::from_slice(&r.body).map_err(|e| {
        format!(
            "{}{}: not the audit probe's JSON ({e})",
            url.origin(),
            url.target
        )
    })
}

/// FPM's status page, once.
pub fn fpm_status(spec: &str, timeout: Duration) -> Probe<crate::observe::FpmSample> {
    let mut src = FpmSource::parse(spec)?;
    let s = src.sample(timeout);
    match s.error {
        Some(e) => Err(format!("{spec}: {e}")),
        None => Ok(s),
    }
}

/// The database's variables, status and MyISAM tables (three read-only queries). A server
/// that does not answer the first is not asked the others.
pub fn db(cfg: &MysqlConfig, workers: Probe<(u64, String)>) -> DbEvidence {
    let q = |sql: &str| query_pairs(cfg, sql).map_err(|e| e.to_string());
    let variables = q("SHOW GLOBAL VARIABLES");
    let (status, myisam) = match &variables {
        Ok(_) => (q("SHOW GLOBAL STATUS"), q(MYISAM_QUERY)),
        Err(why) => (Err(why.clone()), Err(why.clone())),
    };
    DbEvidence {
        target: cfg.raw.clone(),
        variables,
        status,
        myisam,
        workers,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// A host as recorded: files, directories (from the files' paths), processes, the
    /// output of commands (`PROGRAM ARGS`), kernel limits.
    #[derive(Default)]
    pub(crate) struct Scripted {
        pub files: BTreeMap<String, String>,
        /// The owner of a file when not root.
        pub owners: BTreeMap<String, u32>,
        pub procs: Vec<Proc>,
        /// The user the audit runs as (root unless set).
        pub me: u32,
        pub commands: BTreeMap<String, String>,
        pub programs: BTreeMap<String, PathBuf>,
        pub kernel: KernelLimits,
        pub backlog: Option<u64>,
        pub listener: Option<Listener>,
        pub ram: Option<u64>,
    }

    impl HostReads for Scripted {
        fn read(&self, path: &Path) -> Result<String, String> {
            let k = path.display().to_string();
            self.files
                .get(&k)
                .cloned()
                .ok_or_else(|| format!("{k}: No such file or directory"))
        }
        fn read_owned(&self, path: &Path, owners: &[u32]) -> Result<String, String> {
            let uid = self
                .owners
                .get(&path.display().to_string())
                .copied()
                .unwrap_or(0);
            if !owners.contains(&uid) {
                return Err(format!("{}: belongs to uid {uid}", path.display()));
            }
            self.read(path)
        }
        fn list(&self, dir: &Path) -> Result<Vec<PathBuf>, String> {
            Ok(self
                .files
                .keys()
                .map(PathBuf::from)
                .filter(|p| p.parent() == Some(dir))
                .collect())
        }
        fn processes(&self) -> Vec<Proc> {
            self.procs.clone()
        }
        fn me(&self) -> u32 {
            self.me
        }
        fn which(&self, name: &str) -> Option<PathBuf> {
            self.programs.get(name).cloned()
        }
        fn run(&self, program: &Path, args: &[&str]) -> Result<String, String> {
            let k = format!("{} {}", program.display(), args.join(" "));
            self.commands
                .get(&k)
                .cloned()
                .ok_or_else(|| format!("{k}: not found"))
        }
        fn kernel(&self) -> KernelLimits {
            self.kernel
        }
        fn backlog(&self, port: u16) -> Probe<u64> {
            self.backlog
                .ok_or_else(|| format!("sock_diag shows no socket listening on port {port}"))
        }
        fn listener(&self, port: u16) -> Probe<Listener> {
            self.listener
                .clone()
                .ok_or_else(|| format!("no socket listens on port {port}"))
        }
        fn ram(&self) -> Probe<u64> {
            self.ram.ok_or_else(|| "/proc/meminfo is unreadable".into())
        }
    }

    #[test]
    fn the_agents_answers_are_the_scripted_hosts() {
        use crate::observe::agent::HostQuestions;
        let h = Scripted {
            kernel: KernelLimits {
                somaxconn: Some(128),
                ..KernelLimits::default()
            },
            backlog: Some(8),
            ram: Some(2 << 30),
            ..Scripted::default()
        };
        let a = AgentAnswers(std::sync::Arc::new(h));
        let r = a.host(8080);
        assert_eq!(r.status, 200);
        let rep: HostReport = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(rep.host.kernel.somaxconn, Some(128));
        assert_eq!(rep.host.backlog, Ok(8));
        assert_eq!(rep.ram_bytes, Ok(2 << 30));
        assert!(rep.host.listener.unwrap_err().contains("port 8080"));
        let r = a.php_ini(Some(8080));
        let found: Probe<crate::audit::ini::IniFound> = serde_json::from_slice(&r.body).unwrap();
        assert!(found.unwrap_err().contains("no php-fpm master"));
    }

    #[test]
    fn listen_inodes_and_nofile() {
        let t = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4242 1 0 100 0 0 10 0\n   1: 0100007F:1F90 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 777 1 0 100 0 0 10 0\n";
        assert_eq!(listen_inodes(t, 8080), vec![4242]);
        assert!(listen_inodes(t, 80).is_empty());
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max cpu time              unlimited            unlimited            seconds   \n\
                      Max open files            1024                 524288               files     \n";
        assert_eq!(parse_nofile(limits), Some((Some(1024), Some(524288))));
        let unl = "Max open files            unlimited            unlimited            files\n";
        assert_eq!(parse_nofile(unl), Some((None, None)));
        assert_eq!(parse_nofile("garbage"), None);
    }

    #[test]
    fn text_is_known_by_type_or_by_bytes() {
        let r = |ct: Option<&str>, body: &[u8]| {
            let mut headers = vec![];
            if let Some(ct) = ct {
                headers.push(("Content-Type".to_string(), ct.to_string()));
            }
            answer(&Response {
                status: 200,
                headers,
                body: body.to_vec(),
                truncated: false,
            })
        };
        assert!(r(Some("text/html; charset=utf-8"), b"<p>").text);
        assert!(r(Some("application/json"), b"{}").text);
        assert!(!r(Some("image/png"), b"\x89PNG").text);
        assert!(r(None, b"plain words").text);
        assert!(!r(None, b"\x00\x01binary").text);
        assert!(!r(None, b"").text);
        // Bytes that are UTF-8 but hold control characters, or are not UTF-8 at all, are not
        // taken for text; the answer keeps what the sniff found, for the evidence.
        let blob = r(None, b"\x01\x02\x03 ascii after control bytes");
        assert!(!blob.text);
        assert_eq!(blob.sniffed.as_deref(), Some("binary (control bytes)"));
        assert!(!r(None, &[0x80; 2000]).text);
        assert_eq!(r(Some("text/css"), b"p{}").sniffed, None);
    }

    #[test]
    fn gzip_shrinks_repetitive_text() {
        let body = "x".repeat(22528);
        let z = gzip_size(body.as_bytes()).unwrap();
        assert!(z < 200, "{z}");
    }
}
