//! TCP on the watched port: /proc/net/tcp{,6} rows tallied by state, the kernel's TCP counters
//! from /proc/net/netstat and /proc/net/snmp, and the LISTEN socket's accept-queue limit from
//! sock_diag (netlink).
//!
//! Why netlink for the limit: for a LISTEN socket /proc/net/tcp prints the accept-queue length
//! as rx_queue, but its tx_queue is `write_seq - snd_una`, always 0 — not the backlog limit
//! (checked against `ss -ltn`, whose Send-Q is the limit: ss asks sock_diag, which reports
//! `sk_max_ack_backlog`). So the limit comes from the same place ss gets it.
use std::mem;

/// TCP states as numbered by the kernel (include/net/tcp_states.h), index = state code.
pub const STATE_NAMES: [&str; 13] = [
    "UNKNOWN",
    "ESTABLISHED",
    "SYN_SENT",
    "SYN_RECV",
    "FIN_WAIT1",
    "FIN_WAIT2",
    "TIME_WAIT",
    "CLOSE",
    "CLOSE_WAIT",
    "LAST_ACK",
    "LISTEN",
    "CLOSING",
    "NEW_SYN_RECV",
];
pub const LISTEN: usize = 10;

/// One row of /proc/net/tcp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpRow {
    pub local_port: u16,
    pub remote_port: u16,
    pub state: u8,
    pub tx_queue: u64,
    pub rx_queue: u64,
}

/// Parses `  sl  local_address rem_address   st tx_queue:rx_queue ...`; None for the header
/// or a malformed line.
pub fn parse_tcp_line(line: &str) -> Option<TcpRow> {
    let mut it = line.split_ascii_whitespace();
    it.next()?.strip_suffix(':')?;
    let port = |a: &str| -> Option<u16> {
        let (_, p) = a.rsplit_once(':')?;
        u16::from_str_radix(p, 16).ok()
    };
    let local_port = port(it.next()?)?;
    let remote_port = port(it.next()?)?;
    let state = u8::from_str_radix(it.next()?, 16).ok()?;
    let (tx, rx) = it.next()?.split_once(':')?;
    Some(TcpRow {
        local_port,
        remote_port,
        state,
        tx_queue: u64::from_str_radix(tx, 16).ok()?,
        rx_queue: u64::from_str_radix(rx, 16).ok()?,
    })
}

/// Connections touching one port, by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpTally {
    /// Sockets whose local or remote port is the watched one, indexed by state code. On
    /// loopback both ends of a connection are counted.
    pub states: [u64; STATE_NAMES.len()],
    /// Sum of the accept-queue lengths of the LISTEN sockets on the port.
    pub listen_queue: Option<u64>,
}

impl TcpTally {
    /// Adds the rows of one /proc/net/tcp or tcp6 file.
    pub fn add(&mut self, text: &str, port: u16) {
        for row in text.lines().filter_map(parse_tcp_line) {
            if row.local_port != port && row.remote_port != port {
                continue;
            }
            if let Some(n) = self.states.get_mut(row.state as usize) {
                *n += 1;
            }
            if row.state as usize == LISTEN && row.local_port == port {
                *self.listen_queue.get_or_insert(0) += row.rx_queue;
            }
        }
    }
}

/// Reads named counters from /proc/net/netstat or /proc/net/snmp, whose sections come as a
/// line of names and a line of values with the same prefix (`TcpExt:`, `Tcp:`).
pub fn parse_counters(text: &str, section: &str, names: &[&str]) -> Vec<Option<u64>> {
    let mut out = vec![None; names.len()];
    let mut lines = text.lines();
    while let Some(head) = lines.next() {
        let Some(h) = head.strip_prefix(section).and_then(|r| r.strip_prefix(':')) else {
            continue;
        };
        let Some(vals) = lines
            .next()
            .and_then(|v| v.strip_prefix(section))
            .and_then(|r| r.strip_prefix(':'))
        else {
            break;
        };
        for (k, v) in h
            .split_ascii_whitespace()
            .zip(vals.split_ascii_whitespace())
        {
            if let Some(i) = names.iter().position(|n| *n == k) {
                // Tcp: MaxConn is -1; parse as signed and keep what fits.
                out[i] = v.parse::<i64>().ok().and_then(|x| u64::try_from(x).ok());
            }
        }
        break;
    }
    out
}

/// Accept-queue length and limit of the LISTEN sockets on `port` (IPv4 and IPv6 summed, as
/// SO_REUSEPORT listeners each have their own queue). None if netlink is unavailable or
/// nothing listens there.
pub fn listen_queue_limits(port: u16) -> Option<(u64, u64)> {
    let mut found = None;
    for family in [libc::AF_INET as u8, libc::AF_INET6 as u8] {
        if let Some((q, l)) = diag_listen(family, port) {
            let (fq, fl) = found.get_or_insert((0, 0));
            *fq += q;
            *fl += l;
        }
    }
    found
}

const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_HDR: usize = 16;
/// inet_diag_msg: family, state, timer, retrans, sockid (48 bytes), expires, rqueue, wqueue...
const DIAG_SPORT: usize = 4;
const DIAG_RQUEUE: usize = 56;
const DIAG_WQUEUE: usize = 60;
const DIAG_MSG_MIN: usize = 72;

/// One sock_diag dump of the LISTEN TCP sockets of one address family.
fn diag_listen(family: u8, port: u16) -> Option<(u64, u64)> {
    // SAFETY: plain socket(2); the fd is owned by `Fd` and closed on every path.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            libc::NETLINK_SOCK_DIAG,
        )
    };
    if fd < 0 {
        return None;
    }
    let fd = Fd(fd);
    let tv = libc::timeval {
        tv_sec: 1,
        tv_usec: 0,
    };
    // SAFETY: tv is a valid timeval of the size passed. A receive timeout means a kernel that
    // never answers cannot hang the sampler.
    unsafe {
        libc::setsockopt(
            fd.0,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            &tv as *const _ as *const libc::c_void,
            mem::size_of::<libc::timeval>() as libc::socklen_t,
        );
    }
    // nlmsghdr + inet_diag_req_v2 (family, protocol, ext, pad, states, sockid[48]).
    let mut req = [0u8; NLMSG_HDR + 56];
    let req_len = req.len() as u32;
    req[0..4].copy_from_slice(&req_len.to_ne_bytes());
    req[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    let flags = (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16;
    req[6..8].copy_from_slice(&flags.to_ne_bytes());
    req[8..12].copy_from_slice(&1u32.to_ne_bytes());
    req[16] = family;
    req[17] = libc::IPPROTO_TCP as u8;
    req[20..24].copy_from_slice(&(1u32 << LISTEN).to_ne_bytes());
    // SAFETY: zeroed sockaddr_nl is valid; pid 0 addresses the kernel.
    let mut addr: libc::sockaddr_nl = unsafe { mem::zeroed() };
    addr.nl_family = libc::AF_NETLINK as u16;
    // SAFETY: req and addr are valid for the lengths passed.
    let sent = unsafe {
        libc::sendto(
            fd.0,
            req.as_ptr() as *const libc::c_void,
            req.len(),
            0,
            &addr as *const _ as *const libc::sockaddr,
            mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
        )
    };
    if sent != req.len() as isize {
        return None;
    }
    let mut buf = vec![0u8; 32 * 1024];
    let mut found: Option<(u64, u64)> = None;
    // Bounded: a dump of listeners is a handful of datagrams; stop at DONE, error or timeout.
    for _ in 0..1000 {
        // SAFETY: buf is valid for buf.len() bytes.
        let n = unsafe { libc::recv(fd.0, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0) };
        if n <= 0 {
            return found;
        }
        match parse_diag_datagram(&buf[..n as usize], port, &mut found) {
            DiagStep::More => {}
            DiagStep::Done => return found,
        }
    }
    found
}

enum DiagStep {
    More,
    Done,
}

/// Walks the netlink messages of one datagram, adding LISTEN sockets on `port`.
fn parse_diag_datagram(mut d: &[u8], port: u16, found: &mut Option<(u64, u64)>) -> DiagStep {
    let u32_at = |b: &[u8], i: usize| -> Option<u32> {
        Some(u32::from_ne_bytes(b.get(i..i + 4)?.try_into().ok()?))
    };
    while d.len() >= NLMSG_HDR {
        let Some(len) = u32_at(d, 0).map(|l| l as usize) else {
            return DiagStep::Done;
        };
        let kind = u16::from_ne_bytes([d[4], d[5]]);
        if len < NLMSG_HDR || len > d.len() {
            return DiagStep::Done;
        }
        if kind == libc::NLMSG_DONE as u16 || kind == libc::NLMSG_ERROR as u16 {
            return DiagStep::Done;
        }
        let msg = &d[NLMSG_HDR..len];
        if kind == SOCK_DIAG_BY_FAMILY && msg.len() >= DIAG_MSG_MIN {
            let sport = u16::from_be_bytes([msg[DIAG_SPORT], msg[DIAG_SPORT + 1]]);
            if sport == port {
                let q = u32_at(msg, DIAG_RQUEUE).unwrap_or(0) as u64;
                let l = u32_at(msg, DIAG_WQUEUE).unwrap_or(0) as u64;
                let f = found.get_or_insert((0, 0));
                f.0 += q;
                f.1 += l;
            }
        }
        // Messages are padded to 4 bytes.
        let next = (len + 3) & !3;
        d = d.get(next..).unwrap_or(&[]);
    }
    DiagStep::More
}

struct Fd(libc::c_int);

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: we own this fd.
        unsafe { libc::close(self.0) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000002 00:00000000 00000000     0        0 25829 1 0000 100 0 0 10 0\n\
   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 1 1 0000 20 4 30 10 -1\n\
   2: 0100007F:C350 0100007F:1F90 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000 20 4 30 10 -1\n\
   3: 0100007F:1F90 0100007F:C351 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000\n\
   4: 0100007F:0050 0100007F:C352 06 00000000:00000000 03:00001770 00000000     0        0 0 3 0000\n\
   5: garbage line\n";

    #[test]
    fn tcp_line() {
        let r = parse_tcp_line(TCP.lines().nth(1).unwrap()).unwrap();
        assert_eq!(
            r,
            TcpRow {
                local_port: 8080,
                remote_port: 0,
                state: 10,
                tx_queue: 0,
                rx_queue: 2
            }
        );
        assert_eq!(parse_tcp_line(TCP.lines().next().unwrap()), None);
        assert_eq!(parse_tcp_line("5: garbage line"), None);
        assert_eq!(parse_tcp_line("0: 0:ZZ 0:0 01 0:0"), None);
    }

    #[test]
    fn tcp6_line() {
        let l = "   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0";
        let r = parse_tcp_line(l).unwrap();
        assert_eq!((r.local_port, r.state), (8080, 10));
    }

    #[test]
    fn tally() {
        let mut t = TcpTally::default();
        t.add(TCP, 8080);
        assert_eq!(t.states[1], 2, "both ends of the loopback connection");
        assert_eq!(t.states[6], 1, "TIME_WAIT on port 80 not counted");
        assert_eq!(t.states[LISTEN], 1);
        assert_eq!(t.listen_queue, Some(2));
        let mut none = TcpTally::default();
        none.add(TCP, 9999);
        assert_eq!(none.states.iter().sum::<u64>(), 0);
        assert_eq!(none.listen_queue, None);
        // Out-of-range states are skipped, not a panic.
        let mut odd = TcpTally::default();
        odd.add("0: 0:1F90 0:0 FF 0:0", 8080);
        assert_eq!(odd.states.iter().sum::<u64>(), 0);
    }

    #[test]
    fn counters() {
        let netstat = "TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPTimeouts\n\
                       TcpExt: 0 12 14 7\n\
                       IpExt: InNoRoutes ListenOverflows\nIpExt: 1 999\n";
        assert_eq!(
            parse_counters(
                netstat,
                "TcpExt",
                &["ListenOverflows", "ListenDrops", "TCPTimeouts", "Nope"]
            ),
            vec![Some(12), Some(14), Some(7), None]
        );
        let snmp =
            "Tcp: RtoAlgorithm MaxConn RetransSegs\nTcp: 1 -1 86\nUdp: InDatagrams\nUdp: 5\n";
        assert_eq!(
            parse_counters(snmp, "Tcp", &["RetransSegs", "MaxConn"]),
            vec![Some(86), None]
        );
        assert_eq!(
            parse_counters("TcpExt: A B\n", "TcpExt", &["A"]),
            vec![None]
        );
        assert_eq!(
            parse_counters("TcpExt: A\nTcpExt: x\n", "TcpExt", &["A"]),
            vec![None]
        );
        assert_eq!(parse_counters("", "Tcp", &["A"]), vec![None]);
    }

    #[test]
    fn diag_datagram() {
        // One inet_diag message for port 8080 with queue 3 / limit 128, then DONE.
        let mut msg = vec![0u8; NLMSG_HDR + DIAG_MSG_MIN];
        let len = msg.len() as u32;
        msg[0..4].copy_from_slice(&len.to_ne_bytes());
        msg[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        msg[NLMSG_HDR + DIAG_SPORT..NLMSG_HDR + DIAG_SPORT + 2]
            .copy_from_slice(&8080u16.to_be_bytes());
        msg[NLMSG_HDR + DIAG_RQUEUE..NLMSG_HDR + DIAG_RQUEUE + 4]
            .copy_from_slice(&3u32.to_ne_bytes());
        msg[NLMSG_HDR + DIAG_WQUEUE..NLMSG_HDR + DIAG_WQUEUE + 4]
            .copy_from_slice(&128u32.to_ne_bytes());
        let mut found = None;
        assert!(matches!(
            parse_diag_datagram(&msg, 8080, &mut found),
            DiagStep::More
        ));
        assert_eq!(found, Some((3, 128)));
        let mut other = None;
        parse_diag_datagram(&msg, 80, &mut other);
        assert_eq!(other, None);
        // Truncated or lying lengths end the walk without a panic.
        let mut f = None;
        assert!(matches!(
            parse_diag_datagram(&msg[..20], 8080, &mut f),
            DiagStep::Done
        ));
        let mut bad = msg.clone();
        bad[0..4].copy_from_slice(&4u32.to_ne_bytes());
        assert!(matches!(
            parse_diag_datagram(&bad, 8080, &mut f),
            DiagStep::Done
        ));
        assert_eq!(f, None);
    }
}
