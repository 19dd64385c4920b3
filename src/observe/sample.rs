//! One sample: what the sampler read at one instant, with rates over the interval before it.
//! These types travel as JSON (agent → controller), so every field is defaulted: a newer
//! controller reads an older agent's samples and the other way round.
use serde::{Deserialize, Serialize};

pub use super::apache::ApacheSample;
pub use super::fpm::FpmSample;
pub use super::groups::GroupSample;
pub use super::mariadb::MysqlSample;
pub use super::net::TcpSample;
pub use super::proc::HostSample;

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
