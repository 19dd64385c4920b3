//! Conditions on processes and sockets that tests wait on instead of sleeping: a child a
//! program started, a process sending load now, a listener that has taken its connections in.
//! Read from /proc (the tests run on Linux).

/// The processes whose parent is `parent`, with their names (comm).
pub fn children_of(parent: u32) -> Vec<(u32, String)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            // /proc/PID/stat: "pid (comm) state ppid ..."; comm may hold spaces and parens.
            let st = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (head, rest) = st.rsplit_once(')')?;
            let comm = head.split_once('(')?.1.to_string();
            let ppid: u32 = rest.split_whitespace().nth(1)?.parse().ok()?;
            (ppid == parent).then_some((pid, comm))
        })
        .collect()
}

/// Rows of /proc/net/tcp and tcp6: (local port, remote port, state, rx_queue, inode).
fn tcp_rows() -> Vec<(u16, u16, u8, u64, u64)> {
    let mut rows = Vec::new();
    for path in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let port = |a: &str| u16::from_str_radix(a.rsplit_once(':')?.1, 16).ok();
            let row = (|| {
                Some((
                    port(f.get(1)?)?,
                    port(f.get(2)?)?,
                    u8::from_str_radix(f.get(3)?, 16).ok()?,
                    u64::from_str_radix(f.get(4)?.split_once(':')?.1, 16).ok()?,
                    f.get(9)?.parse().ok()?,
                ))
            })();
            rows.extend(row);
        }
    }
    rows
}

const ESTABLISHED: u8 = 1;
const LISTEN: u8 = 10;

/// Established TCP connections that process `pid` holds to `port` (its socket fds matched
/// with /proc/net/tcp by inode): whether it is sending load there now.
pub fn connections_to(pid: u32, port: u16) -> usize {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    let inodes: Vec<u64> = fds
        .filter_map(|e| {
            let link = std::fs::read_link(e.ok()?.path()).ok()?;
            let l = link.to_str()?;
            l.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
        })
        .collect();
    tcp_rows()
        .iter()
        .filter(|r| r.1 == port && r.2 == ESTABLISHED && inodes.contains(&r.4))
        .count()
}

/// Connections waiting in the accept queue of the listener on `port`; None if none listens.
pub fn accept_queue(port: u16) -> Option<u64> {
    tcp_rows()
        .iter()
        .filter(|r| r.0 == port && r.2 == LISTEN)
        .map(|r| r.3)
        .reduce(|a, b| a + b)
}

/// Established TCP connections of any process on this host to `port`: some client sends
/// load there now.
pub fn clients_of(port: u16) -> usize {
    tcp_rows()
        .iter()
        .filter(|r| r.1 == port && r.2 == ESTABLISHED)
        .count()
}
