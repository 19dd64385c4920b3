//! The host rules (S2 ch. 4–7: kernel limits for busy servers): somaxconn and the listen
//! backlog in use on the port, tcp_max_syn_backlog, ip_local_port_range, tcp_tw_reuse,
//! fs.file-max and the server process's open-files limit. Pure functions of
//! [`HostEvidence`], which `gather::host` reads from /proc and sock_diag when the URL's host
//! is this machine.
use super::{num, Check, Level, Probe, S2};
use crate::observe::KernelLimits;
use serde::{Deserialize, Serialize};

/// The process listening on the port, and its open-files limit (/proc/PID/limits).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Listener {
    pub pid: u32,
    pub name: String,
    /// Soft and hard `Max open files`; None for "unlimited".
    pub nofile_soft: Option<u64>,
    pub nofile_hard: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostEvidence {
    pub port: u16,
    /// Err: the host is not this machine (or /proc is unreadable): every rule is skipped.
    pub local: Probe<()>,
    pub kernel: KernelLimits,
    /// The LISTEN socket's backlog limit as the kernel holds it (sock_diag, what `ss -lt`
    /// shows as Send-Q).
    pub backlog: Probe<u64>,
    pub listener: Probe<Listener>,
    /// Who read these figures when not this machine (`agent 10.0.0.5:9090`): the evidence
    /// then says so, since they describe the server's host, not the generator's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_by: Option<String>,
}

/// somaxconn below this caps the backlogs servers ask for (nginx and FPM ask 511).
const SOMAXCONN_MIN: u64 = 1024;
/// A listen backlog below this overflows on the first burst of new connections.
const BACKLOG_MIN: u64 = 128;
const SYN_BACKLOG_MIN: u64 = 1024;
/// Ports per destination below this run out under connection churn (60 s of TIME_WAIT).
const PORTS_MIN: u64 = 16_384;
const FILE_MAX_MIN: u64 = 65_536;
/// Below this a server runs out of descriptors near that many connections.
const NOFILE_MIN: u64 = 4096;

pub fn checks(e: &HostEvidence) -> Vec<Check> {
    let mut all = vec![
        somaxconn(e),
        listen_backlog(e),
        syn_backlog(e),
        port_range(e),
        tw_reuse(e),
        file_max(e),
        nofile(e),
    ];
    if let Some(by) = &e.read_by {
        for c in &mut all {
            c.evidence.push_str(&format!(" (read by {by})"));
        }
    }
    all
}

/// The host is local and the kernel value could be read.
fn value(e: &HostEvidence, v: Option<u64>, file: &str) -> Result<u64, String> {
    e.local.as_ref().map_err(Clone::clone)?;
    v.ok_or_else(|| format!("/proc/sys/{file} is unreadable"))
}

pub const SOMAXCONN: &str = "host.somaxconn";

pub fn somaxconn(e: &HostEvidence) -> Check {
    let v = match value(e, e.kernel.somaxconn, "net/core/somaxconn") {
        Ok(v) => v,
        Err(why) => return Check::skipped(SOMAXCONN, why, S2),
    };
    if v < SOMAXCONN_MIN {
        Check::finding(
            SOMAXCONN,
            Level::Medium,
            "net.core.somaxconn caps every listen backlog",
            format!(
                "net.core.somaxconn = {}: a server asking for a backlog of 511 gets {}",
                num(v),
                num(v.min(511))
            ),
            "sysctl -w net.core.somaxconn=4096 (and in /etc/sysctl.d/ to keep it)",
            S2,
        )
    } else {
        Check::ok(
            SOMAXCONN,
            "somaxconn leaves room",
            format!("net.core.somaxconn = {}", num(v)),
            S2,
        )
    }
}

pub const LISTEN_BACKLOG: &str = "host.listen-backlog";

pub fn listen_backlog(e: &HostEvidence) -> Check {
    if let Err(why) = &e.local {
        return Check::skipped(LISTEN_BACKLOG, why.clone(), S2);
    }
    let b = match &e.backlog {
        Ok(b) => *b,
        Err(why) => return Check::skipped(LISTEN_BACKLOG, why.clone(), S2),
    };
    let capped = e.kernel.somaxconn.is_some_and(|m| b == m && m < 511);
    if b < BACKLOG_MIN {
        let why = if capped {
            format!(
                " (net.core.somaxconn = {} caps it)",
                num(e.kernel.somaxconn.unwrap_or(0))
            )
        } else {
            String::new()
        };
        Check::finding(
            LISTEN_BACKLOG,
            Level::High,
            "the listen backlog in use is small",
            format!(
                "the socket listening on port {} has a backlog of {}{why}: a burst of more \
                 new connections than that is dropped (SYNs retried after 1 s, 3 s, …)",
                e.port,
                num(b)
            ),
            "raise the server's backlog (nginx: `listen … backlog=511`; Apache: \
             ListenBacklog 511; PHP-FPM: listen.backlog) and net.core.somaxconn with it",
            S2,
        )
    } else {
        Check::ok(
            LISTEN_BACKLOG,
            "listen backlog",
            format!(
                "the socket listening on port {} has a backlog of {}",
                e.port,
                num(b)
            ),
            S2,
        )
    }
}

pub const SYN_BACKLOG: &str = "host.tcp-max-syn-backlog";

pub fn syn_backlog(e: &HostEvidence) -> Check {
    let v = match value(
        e,
        e.kernel.tcp_max_syn_backlog,
        "net/ipv4/tcp_max_syn_backlog",
    ) {
        Ok(v) => v,
        Err(why) => return Check::skipped(SYN_BACKLOG, why, S2),
    };
    if v < SYN_BACKLOG_MIN {
        Check::finding(
            SYN_BACKLOG,
            Level::Low,
            "few half-open connections are kept",
            format!("net.ipv4.tcp_max_syn_backlog = {}", num(v)),
            "sysctl -w net.ipv4.tcp_max_syn_backlog=4096",
            S2,
        )
    } else {
        Check::ok(
            SYN_BACKLOG,
            "SYN backlog",
            format!("net.ipv4.tcp_max_syn_backlog = {}", num(v)),
            S2,
        )
    }
}

pub const PORT_RANGE: &str = "host.ip-local-port-range";

pub fn port_range(e: &HostEvidence) -> Check {
    if let Err(why) = &e.local {
        return Check::skipped(PORT_RANGE, why.clone(), S2);
    }
    let Some((lo, hi)) = e.kernel.port_range else {
        return Check::skipped(
            PORT_RANGE,
            "/proc/sys/net/ipv4/ip_local_port_range is unreadable",
            S2,
        );
    };
    let ports = hi.saturating_sub(lo) + 1;
    let seen = format!(
        "net.ipv4.ip_local_port_range = {lo} {hi}: {} ports per destination",
        num(ports)
    );
    if ports < PORTS_MIN {
        Check::finding(
            PORT_RANGE,
            Level::Low,
            "few local ports for outgoing connections",
            format!(
                "{seen}; each closed connection holds its port 60 s in TIME_WAIT, so about {} \
                 new connections/s to one backend (FPM over TCP, the database) exhaust them",
                num(ports / 60)
            ),
            "sysctl -w net.ipv4.ip_local_port_range=\"15000 64999\", and keep connections to \
             backends alive",
            S2,
        )
    } else {
        Check::ok(PORT_RANGE, "local port range", seen, S2)
    }
}

pub const TW_REUSE: &str = "host.tcp-tw-reuse";

pub fn tw_reuse(e: &HostEvidence) -> Check {
    let v = match value(e, e.kernel.tcp_tw_reuse, "net/ipv4/tcp_tw_reuse") {
        Ok(v) => v,
        Err(why) => return Check::skipped(TW_REUSE, why, S2),
    };
    let meaning = match v {
        0 => "off",
        1 => "on",
        2 => "on for loopback only",
        _ => "unknown value",
    };
    let seen = format!("net.ipv4.tcp_tw_reuse = {v} ({meaning})");
    if v == 0 {
        Check::finding(
            TW_REUSE,
            Level::Low,
            "TIME_WAIT ports are not reused for outgoing connections",
            seen,
            "sysctl -w net.ipv4.tcp_tw_reuse=1 where this host opens many connections to \
             backends (it only affects outgoing connections)",
            S2,
        )
    } else {
        Check::ok(TW_REUSE, "TIME_WAIT reuse", seen, S2)
    }
}

pub const FILE_MAX: &str = "host.file-max";

pub fn file_max(e: &HostEvidence) -> Check {
    let v = match value(e, e.kernel.file_max, "fs/file-max") {
        Ok(v) => v,
        Err(why) => return Check::skipped(FILE_MAX, why, S2),
    };
    if v < FILE_MAX_MIN {
        Check::finding(
            FILE_MAX,
            Level::Medium,
            "few open files system-wide",
            format!(
                "fs.file-max = {}: every connection, on both sides of a proxy, holds one",
                num(v)
            ),
            "sysctl -w fs.file-max=1000000",
            S2,
        )
    } else {
        Check::ok(
            FILE_MAX,
            "system-wide open files",
            format!("fs.file-max = {}", num(v)),
            S2,
        )
    }
}

pub const NOFILE: &str = "host.nofile";

pub fn nofile(e: &HostEvidence) -> Check {
    if let Err(why) = &e.local {
        return Check::skipped(NOFILE, why.clone(), S2);
    }
    let l = match &e.listener {
        Ok(l) => l,
        Err(why) => return Check::skipped(NOFILE, why.clone(), S2),
    };
    let lim = |v: Option<u64>| v.map_or("unlimited".to_string(), num);
    let seen = format!(
        "{} (pid {}) listening on port {}: Max open files {} (soft), {} (hard)",
        l.name,
        l.pid,
        e.port,
        lim(l.nofile_soft),
        lim(l.nofile_hard)
    );
    match l.nofile_soft {
        Some(soft) if soft < NOFILE_MIN => Check::finding(
            NOFILE,
            Level::Medium,
            "the server may run out of file descriptors",
            format!("{seen}: each connection takes one, so it fails near that many"),
            "raise the server's open-files limit (systemd: LimitNOFILE=65536; nginx: \
             worker_rlimit_nofile 65536; or ulimit -n before starting it)",
            S2,
        ),
        _ => Check::ok(NOFILE, "server's open-files limit", seen, S2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local() -> HostEvidence {
        HostEvidence {
            port: 8080,
            local: Ok(()),
            kernel: KernelLimits {
                somaxconn: Some(4096),
                tcp_max_syn_backlog: Some(4096),
                port_range: Some((32768, 60999)),
                tcp_fin_timeout: Some(60),
                tcp_tw_reuse: Some(2),
                file_max: Some(9_223_372_036_854_775_807),
            },
            backlog: Ok(511),
            listener: Ok(Listener {
                pid: 42,
                name: "nginx".into(),
                nofile_soft: Some(65536),
                nofile_hard: Some(65536),
            }),
            read_by: None,
        }
    }

    fn level(c: &Check) -> Level {
        assert!(!c.evidence.is_empty(), "{c:?}");
        assert_eq!(c.change.is_some(), c.level.is_finding(), "{c:?}");
        c.level
    }

    #[test]
    fn a_tuned_host_passes_every_rule() {
        let all = checks(&local());
        assert_eq!(all.len(), 7);
        for c in &all {
            assert_eq!(level(c), Level::Ok, "{c:?}");
        }
    }

    #[test]
    fn a_remote_host_skips_every_rule_with_the_reason() {
        let mut e = local();
        e.local = Err("example.com is not this machine".into());
        for c in checks(&e) {
            assert_eq!(c.level, Level::Skipped);
            assert!(c.evidence.contains("not this machine"), "{c:?}");
        }
    }

    #[test]
    fn figures_read_by_the_agent_say_so() {
        let mut e = local();
        e.read_by = Some("agent 10.0.0.5:9090".into());
        e.kernel.somaxconn = Some(128);
        let c = somaxconn(&e);
        assert_eq!(c.level, Level::Medium);
        let all = checks(&e);
        for c in &all {
            assert!(
                c.evidence.ends_with("(read by agent 10.0.0.5:9090)"),
                "{c:?}"
            );
        }
        assert!(local().read_by.is_none());
        assert!(checks(&local())
            .iter()
            .all(|c| !c.evidence.contains("read by")));
    }

    #[test]
    fn somaxconn_128() {
        let mut e = local();
        e.kernel.somaxconn = Some(128);
        let c = somaxconn(&e);
        assert_eq!(level(&c), Level::Medium);
        assert!(c.evidence.contains("somaxconn = 128"), "{c:?}");
        assert!(c.evidence.contains("gets 128"), "{c:?}");
        e.kernel.somaxconn = None;
        assert_eq!(somaxconn(&e).level, Level::Skipped);
    }

    #[test]
    fn a_backlog_of_8_is_named_and_its_cap_when_somaxconn_is_it() {
        let mut e = local();
        e.backlog = Ok(8);
        let c = listen_backlog(&e);
        assert_eq!(level(&c), Level::High);
        assert!(c.evidence.contains("backlog of 8"), "{c:?}");
        assert!(!c.evidence.contains("caps it"), "{c:?}");
        e.kernel.somaxconn = Some(64);
        e.backlog = Ok(64);
        let c = listen_backlog(&e);
        assert_eq!(level(&c), Level::High);
        assert!(c.evidence.contains("somaxconn = 64 caps it"), "{c:?}");
        e.backlog = Err("nothing listens on port 8080".into());
        let c = listen_backlog(&e);
        assert_eq!(c.level, Level::Skipped);
        assert!(c.evidence.contains("nothing listens"), "{c:?}");
    }

    #[test]
    fn syn_backlog_port_range_tw_reuse_file_max() {
        let mut e = local();
        e.kernel.tcp_max_syn_backlog = Some(256);
        assert_eq!(level(&syn_backlog(&e)), Level::Low);
        e.kernel.port_range = Some((50000, 55000));
        let c = port_range(&e);
        assert_eq!(level(&c), Level::Low);
        assert!(c.evidence.contains("5,001 ports"), "{c:?}");
        assert!(c.evidence.contains("about 83 new connections/s"), "{c:?}");
        e.kernel.tcp_tw_reuse = Some(0);
        let c = tw_reuse(&e);
        assert_eq!(level(&c), Level::Low);
        assert!(c.evidence.contains("= 0 (off)"), "{c:?}");
        e.kernel.tcp_tw_reuse = Some(2);
        assert!(tw_reuse(&e).evidence.contains("loopback only"));
        e.kernel.file_max = Some(8192);
        let c = file_max(&e);
        assert_eq!(level(&c), Level::Medium);
        assert!(c.evidence.contains("fs.file-max = 8,192"), "{c:?}");
    }

    #[test]
    fn nofile_1024_is_a_finding_unlimited_is_not() {
        let mut e = local();
        if let Ok(l) = e.listener.as_mut() {
            l.nofile_soft = Some(1024);
            l.nofile_hard = Some(4096);
        }
        let c = nofile(&e);
        assert_eq!(level(&c), Level::Medium);
        assert!(
            c.evidence
                .contains("nginx (pid 42) listening on port 8080: Max open files 1,024 (soft)"),
            "{c:?}"
        );
        if let Ok(l) = e.listener.as_mut() {
            l.nofile_soft = None;
        }
        assert_eq!(level(&nofile(&e)), Level::Ok);
        e.listener = Err("/proc/1/limits: permission denied".into());
        assert_eq!(nofile(&e).level, Level::Skipped);
    }
}
