//! One sample: what the sampler read at one instant, with rates over the interval before it.
//! These types travel as JSON (agent → controller), so every field is defaulted: a newer
//! controller reads an older agent's samples and the other way round.
use serde::{Deserialize, Serialize};

/// The name of the samples taken by this process on this host.
pub const LOCAL: &str = "local";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Sample {
    /// `local`, or the agent's name.
    pub source: String,
    /// When the sample was taken, Unix ms on the controller's clock (agent samples are
    /// shifted by the estimated clock offset).
    pub unix_ms: u64,
    /// The sampler's monotonic clock, ms since it started (not shifted; for ordering).
    pub mono_ms: u64,
    /// Length of the interval the rates and deltas cover, ms.
    pub interval_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<HostSample>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupSample>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fpm: Vec<FpmSample>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpSample>,
    /// The process that took the sample (the load generator, for `local`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generator: Option<ProcSample>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelLimits>,
    /// CPU time the sampler spent taking this sample, µs.
    pub cost_us: u64,
    /// Apache's mod_status pages (`--apache-status URL`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub apache: Vec<ApacheSample>,
    /// MariaDB/MySQL servers (`--mysql USER@HOST:PORT`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mysql: Vec<MysqlSample>,
}

/// Host-wide figures. CPU percentages are of all cores (100 = every core busy).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostSample {
    pub cores: u32,
    /// user + nice.
    pub cpu_user_pct: f64,
    pub cpu_system_pct: f64,
    pub cpu_iowait_pct: f64,
    /// hard + soft interrupts are apart: softirq is where the network stack runs.
    pub cpu_irq_pct: f64,
    pub cpu_softirq_pct: f64,
    pub cpu_steal_pct: f64,
    /// 100 − idle − iowait.
    pub cpu_busy_pct: f64,
    pub load1: f64,
    pub load5: f64,
    pub load15: f64,
    /// Runnable tasks at the instant of the sample.
    pub runnable: u64,
    pub mem_total_bytes: u64,
    /// total − available.
    pub mem_used_bytes: u64,
    pub mem_available_bytes: u64,
    pub ctx_switches_per_s: f64,
    /// SwapTotal − SwapFree.
    pub swap_used_bytes: u64,
}

/// A `--watch NAME=...` process group.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GroupSample {
    pub name: String,
    pub processes: u64,
    pub threads: u64,
    /// Percent of one core (as top shows it): 250 = two and a half cores.
    pub cpu_pct: f64,
    pub rss_bytes: u64,
    /// Open file descriptors; None when /proc/PID/fd is not readable (another user's).
    pub open_fds: Option<u64>,
}

/// PHP-FPM's pool status (`--fpm-status URL`, fetched as `URL?json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FpmSample {
    pub url: String,
    pub pool: String,
    pub active: u64,
    pub idle: u64,
    pub total: u64,
    /// Connections waiting for a free worker.
    pub listen_queue: u64,
    /// Highest listen queue since FPM started.
    pub max_listen_queue: u64,
    /// The FPM socket's backlog limit.
    pub listen_queue_len: u64,
    /// Times pm.max_children was hit since FPM started, and during this interval.
    pub max_children_reached: u64,
    pub max_children_reached_delta: u64,
    /// Set when the status could not be fetched; the numbers are then zero.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Apache's mod_status (`URL?auto`): its workers and the scoreboard, one letter per slot.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ApacheSample {
    pub url: String,
    pub busy: u64,
    pub idle: u64,
    /// Scoreboard slots: ServerLimit × ThreadsPerChild (prefork: ServerLimit, which the lab
    /// sets to MaxRequestWorkers).
    pub slots: u64,
    /// Slots with no process behind them (`.`): room to spawn more workers.
    pub open_slots: u64,
    /// Workers reading a request (`R`): many of them under load is slow clients or a full pool.
    pub reading: u64,
    /// Set when the page could not be fetched or read; the numbers are then zero.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
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

/// TCP on the watched port and the host's TCP counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TcpSample {
    pub port: u16,
    /// Sockets whose local or remote port is `port`, by state (both ends on loopback).
    pub established: u64,
    pub syn_sent: u64,
    pub syn_recv: u64,
    pub fin_wait1: u64,
    pub fin_wait2: u64,
    pub time_wait: u64,
    pub close: u64,
    pub close_wait: u64,
    pub last_ack: u64,
    pub listen: u64,
    pub closing: u64,
    /// Connections accepted by the kernel but not yet by the server (LISTEN socket).
    pub listen_queue: Option<u64>,
    /// The accept-queue limit: min(backlog asked, net.core.somaxconn).
    pub listen_limit: Option<u64>,
    /// Host-wide counter increases during the interval (not per port: the kernel keeps no
    /// per-port counters).
    pub listen_overflows: u64,
    pub listen_drops: u64,
    pub tcp_timeouts: u64,
    pub retrans_segs: u64,
}

impl TcpSample {
    /// Each state a sample keeps, named from `net::STATE_NAMES` (the one table of names), in
    /// the kernel's order: what the step summary, `/metrics` and the report call them.
    pub fn states(&self) -> [(&'static str, u64); 11] {
        let v = [
            self.established,
            self.syn_sent,
            self.syn_recv,
            self.fin_wait1,
            self.fin_wait2,
            self.time_wait,
            self.close,
            self.close_wait,
            self.last_ack,
            self.listen,
            self.closing,
        ];
        // Codes 1..=11; UNKNOWN (0) is no state, NEW_SYN_RECV (12) is counted as SYN_RECV.
        std::array::from_fn(|i| (super::net::STATE_NAMES[i + 1], v[i]))
    }
}

/// One process: the generator itself (or the agent).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProcSample {
    pub pid: u32,
    /// Percent of one core.
    pub cpu_pct: f64,
    pub rss_bytes: u64,
    pub threads: u64,
}

/// Kernel limits that matter under overload, read once from /proc/sys when sampling starts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct KernelLimits {
    pub somaxconn: Option<u64>,
    pub tcp_max_syn_backlog: Option<u64>,
    pub port_range: Option<(u64, u64)>,
    pub tcp_fin_timeout: Option<u64>,
    pub tcp_tw_reuse: Option<u64>,
    pub file_max: Option<u64>,
}

impl KernelLimits {
    /// Reads /proc/sys; a missing or odd file leaves its field None.
    pub fn read() -> KernelLimits {
        let num = |p: &str| -> Option<u64> {
            std::fs::read_to_string(format!("/proc/sys/{p}"))
                .ok()?
                .trim()
                .parse()
                .ok()
        };
        KernelLimits {
            somaxconn: num("net/core/somaxconn"),
            tcp_max_syn_backlog: num("net/ipv4/tcp_max_syn_backlog"),
            port_range: std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
                .ok()
                .and_then(|t| parse_port_range(&t)),
            tcp_fin_timeout: num("net/ipv4/tcp_fin_timeout"),
            tcp_tw_reuse: num("net/ipv4/tcp_tw_reuse"),
            file_max: num("fs/file-max"),
        }
    }

    /// Local ports available to outgoing connections.
    pub fn ports(&self) -> Option<u64> {
        self.port_range.map(|(lo, hi)| hi.saturating_sub(lo) + 1)
    }
}

pub fn parse_port_range(t: &str) -> Option<(u64, u64)> {
    let mut it = t.split_ascii_whitespace();
    let lo = it.next()?.parse().ok()?;
    let hi = it.next()?.parse().ok()?;
    (lo <= hi).then_some((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_range() {
        assert_eq!(parse_port_range("32768\t60999\n"), Some((32768, 60999)));
        assert_eq!(parse_port_range("9 1"), None);
        assert_eq!(parse_port_range("x"), None);
        let k = KernelLimits {
            port_range: Some((32768, 60999)),
            ..Default::default()
        };
        assert_eq!(k.ports(), Some(28232));
    }

    #[test]
    fn old_and_partial_json_parses() {
        let s: Sample = serde_json::from_str(r#"{"unix_ms": 5, "future_field": 1}"#).unwrap();
        assert_eq!(s.unix_ms, 5);
        assert!(s.host.is_none());
        let t: TcpSample = serde_json::from_str(r#"{"time_wait": 9}"#).unwrap();
        assert_eq!(t.time_wait, 9);
        assert!(t.states().contains(&("TIME_WAIT", 9)));
    }
}
