//! What the results record about the generator host (S2's kernel chapter).
use super::HostInfo;
use std::collections::BTreeMap;

/// Kernel limits that decide how a busy server (or generator) behaves under overload.
pub const SYSCTLS: [&str; 10] = [
    "fs.file-max",
    "net.core.somaxconn",
    "net.core.netdev_max_backlog",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_max_syn_backlog",
    "net.ipv4.tcp_syn_retries",
    "net.ipv4.tcp_synack_retries",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_tw_reuse",
    "net.ipv4.tcp_max_tw_buckets",
];

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.split_whitespace().collect::<Vec<_>>().join(" "))
}

/// Reads a sysctl from /proc/sys (`net.core.somaxconn` → /proc/sys/net/core/somaxconn).
pub fn sysctl(name: &str) -> Option<String> {
    read(&format!("/proc/sys/{}", name.replace('.', "/")))
}

pub fn host_info() -> HostInfo {
    let mut rl = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit with a valid pointer.
    unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) };
    let sysctls: BTreeMap<String, String> = SYSCTLS
        .iter()
        .filter_map(|n| sysctl(n).map(|v| (n.to_string(), v)))
        .collect();
    HostInfo {
        hostname: read("/proc/sys/kernel/hostname").unwrap_or_default(),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        kernel: read("/proc/sys/kernel/osrelease").unwrap_or_default(),
        fd_limit_soft: rl.rlim_cur,
        fd_limit_hard: rl.rlim_max,
        sysctls,
    }
}
