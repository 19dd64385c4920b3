//! Gathers the evidence the rules judge: a few GETs (plain, with Accept-Encoding, a
//! conditional one) and an idle wait on a kept connection; /proc/sys, sock_diag and
//! /proc/PID/limits of the listening process when the host is this machine; the PHP probe
//! page and FPM's status. Read-only, bounded by timeouts; anything that fails becomes the
//! reason its checks are skipped.
use super::db::{DbEvidence, MYISAM_QUERY};
use super::host::{HostEvidence, Listener};
use super::http::{is_text_type, Answer, HttpEvidence, Idle, ACCEPT_ENCODING};
use super::php::PhpIni;
use super::Probe;
use crate::http_get::{self, KeptConn, Response, Trust};
use crate::observe::{net, query_pairs, FpmSource, KernelLimits, MysqlConfig};
use crate::url::{Scheme, Url};
use std::io::Write;
use std::time::Duration;

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
    let text = match r.header("content-type") {
        Some(t) => is_text_type(t),
        // No Content-Type: judge by the bytes, as a browser sniffs.
        None => {
            let head = &r.body[..r.body.len().min(1024)];
            !head.is_empty()
                && !head.contains(&0)
                && (std::str::from_utf8(head).is_ok() || head.len() == 1024)
        }
    };
    Answer {
        status: r.status,
        headers: r.headers.clone(),
        body_bytes,
        text,
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

/// The host's limits, the backlog in use on `port` and the listening process.
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
        };
    }
    HostEvidence {
        port,
        local,
        kernel: KernelLimits::read(),
        backlog: net::listen_queue_limits(port)
            .map(|(_, limit)| limit)
            .ok_or_else(|| format!("sock_diag shows no socket listening on port {port}")),
        listener: listener(port),
    }
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
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| crate::observe::proc::parse_meminfo(&t))
        .map(|m| m.total)
        .ok_or_else(|| "/proc/meminfo is unreadable".to_string())
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
mod tests {
    use super::*;

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
    }

    #[test]
    fn gzip_shrinks_repetitive_text() {
        let body = "x".repeat(22528);
        let z = gzip_size(body.as_bytes()).unwrap();
        assert!(z < 200, "{z}");
    }
}
