//! TCP on the watched port: /proc/net/tcp{,6} rows tallied by state, the kernel's TCP counters
//! from /proc/net/netstat and /proc/net/snmp, and the LISTEN socket's accept-queue limit from
//! sock_diag (netlink).
//!
//! Why netlink for the limit: for a LISTEN socket /proc/net/tcp prints the accept-queue length
//! as rx_queue, but its tx_queue is `write_seq - snd_una`, always 0 — not the backlog limit
//! (checked against `ss -ltn`, whose Send-Q is the limit: ss asks sock_diag, which reports
//! `sk_max_ack_backlog`). So the limit comes from the same place ss gets it.
use std::collections::BTreeMap;
use std::mem;

use serde::{Deserialize, Serialize};

use super::sample::Sample;
use super::source::{Kind, Source, Tick};
use super::stat::{Acc, Stat};
use super::summary::{SecondObservation, SourceObservation};

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
    let mut visit = |m: &[u8]| {
        if let Some(d) = DiagSock::parse(m) {
            if d.sport == port {
                let f = found.get_or_insert((0, 0));
                f.0 += d.rqueue;
                f.1 += d.wqueue;
            }
        }
    };
    for family in [libc::AF_INET as u8, libc::AF_INET6 as u8] {
        diag_dump(family, 1 << LISTEN, None, &mut visit);
    }
    found
}

/// The whole port from sock_diag: sockets by state and the LISTEN socket's queue and limit.
/// Much cheaper than /proc/net/tcp{,6}, whose generation walks every hash bucket in text
/// (≈ 20 ms of kernel time per read on a 24 GB host, even with few sockets). None if
/// netlink is unavailable (then the sampler reads /proc/net/tcp).
pub fn diag_tally(port: u16) -> Option<(TcpTally, Option<u64>)> {
    let mut t = TcpTally::default();
    let mut limit: Option<u64> = None;
    let mut visit = |m: &[u8]| {
        let Some(d) = DiagSock::parse(m) else {
            return;
        };
        if d.sport != port && d.dport != port {
            return;
        }
        if let Some(n) = t.states.get_mut(d.state as usize) {
            *n += 1;
        }
        if d.state as usize == LISTEN && d.sport == port {
            *t.listen_queue.get_or_insert(0) += d.rqueue;
            *limit.get_or_insert(0) += d.wqueue;
        }
    };
    let mut ok = false;
    for family in [libc::AF_INET as u8, libc::AF_INET6 as u8] {
        // Every state (the kernel adds request sockets when SYN_RECV is asked for), filtered
        // in the kernel to the port.
        ok |= diag_dump(family, u32::MAX, Some(port), &mut visit);
    }
    ok.then_some((t, limit))
}

const SOCK_DIAG_BY_FAMILY: u16 = 20;
const NLMSG_HDR: usize = 16;
/// inet_diag_msg: family, state, timer, retrans, sockid (sport, dport, src, dst, if,
/// cookie: 48 bytes), expires, rqueue, wqueue, uid, inode.
const DIAG_STATE: usize = 1;
const DIAG_SPORT: usize = 4;
const DIAG_DPORT: usize = 6;
const DIAG_RQUEUE: usize = 56;
const DIAG_WQUEUE: usize = 60;
const DIAG_MSG_MIN: usize = 72;

/// The fields of one inet_diag_msg we use. For a LISTEN socket rqueue is the accept-queue
/// length and wqueue its limit (sk_max_ack_backlog).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DiagSock {
    state: u8,
    sport: u16,
    dport: u16,
    rqueue: u64,
    wqueue: u64,
}

impl DiagSock {
    fn parse(m: &[u8]) -> Option<DiagSock> {
        let u32_at = |i: usize| -> Option<u64> {
            Some(u32::from_ne_bytes(m.get(i..i + 4)?.try_into().ok()?) as u64)
        };
        let be16 =
            |i: usize| -> Option<u16> { Some(u16::from_be_bytes([*m.get(i)?, *m.get(i + 1)?])) };
        Some(DiagSock {
            state: *m.get(DIAG_STATE)?,
            sport: be16(DIAG_SPORT)?,
            dport: be16(DIAG_DPORT)?,
            rqueue: u32_at(DIAG_RQUEUE)?,
            wqueue: u32_at(DIAG_WQUEUE)?,
        })
    }
}

const INET_DIAG_REQ_BYTECODE: u16 = 1;
const BC_JMP: u8 = 1;
const BC_S_EQ: u8 = 11;
const BC_D_EQ: u8 = 12;

/// The kernel-side filter "source port = P or destination port = P" (inet_diag bytecode:
/// ops of {code, yes, no}; a port compare carries the port in a second op's `no`; the
/// program accepts when a jump lands exactly on its end, rejects when it jumps past it).
///
/// ```text
///  0: S_EQ P   yes → 8 (JMP)      no → 12 (D_EQ)
///  8: JMP               no → 20 (end: accept)
/// 12: D_EQ P   yes → 20 (accept)  no → 24 (past the end: reject)
/// ```
fn port_filter(port: u16) -> [u8; 20] {
    let op = |code: u8, yes: u8, no: u16| -> [u8; 4] {
        let n = no.to_ne_bytes();
        [code, yes, n[0], n[1]]
    };
    let mut b = [0u8; 20];
    b[0..4].copy_from_slice(&op(BC_S_EQ, 8, 12));
    b[4..8].copy_from_slice(&op(0, 0, port));
    b[8..12].copy_from_slice(&op(BC_JMP, 4, 12));
    b[12..16].copy_from_slice(&op(BC_D_EQ, 8, 12));
    b[16..20].copy_from_slice(&op(0, 0, port));
    b
}

/// One sock_diag dump of the TCP sockets of `family` in `states` (a bit per state),
/// optionally only those with `port` as source or destination; `visit` sees each
/// inet_diag_msg. False if netlink failed.
fn diag_dump(family: u8, states: u32, port: Option<u16>, visit: &mut dyn FnMut(&[u8])) -> bool {
    // SAFETY: plain socket(2); the fd is owned by `Fd` and closed on every path.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            libc::NETLINK_SOCK_DIAG,
        )
    };
    if fd < 0 {
        return false;
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
    // nlmsghdr + inet_diag_req_v2 (family, protocol, ext, pad, states, sockid[48]) and, for
    // a port, the bytecode attribute (nlattr header + 20 bytes).
    let mut req = vec![0u8; NLMSG_HDR + 56];
    if let Some(p) = port {
        let attr_len = 4u16 + 20;
        req.extend_from_slice(&attr_len.to_ne_bytes());
        req.extend_from_slice(&INET_DIAG_REQ_BYTECODE.to_ne_bytes());
        req.extend_from_slice(&port_filter(p));
    }
    let req_len = req.len() as u32;
    req[0..4].copy_from_slice(&req_len.to_ne_bytes());
    req[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    let flags = (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16;
    req[6..8].copy_from_slice(&flags.to_ne_bytes());
    req[8..12].copy_from_slice(&1u32.to_ne_bytes());
    req[16] = family;
    req[17] = libc::IPPROTO_TCP as u8;
    req[20..24].copy_from_slice(&states.to_ne_bytes());
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
        return false;
    }
    let mut buf = vec![0u8; 64 * 1024];
    // Bounded: 100,000 datagrams is far beyond any socket table; stop at DONE, error or
    // timeout.
    for _ in 0..100_000 {
        // SAFETY: buf is valid for buf.len() bytes.
        let n = unsafe { libc::recv(fd.0, buf.as_mut_ptr() as *mut libc::c_void, buf.len(), 0) };
        if n <= 0 {
            return false;
        }
        match parse_diag_datagram(&buf[..n as usize], visit) {
            DiagStep::More => {}
            DiagStep::Done => return true,
            DiagStep::Failed => return false,
        }
    }
    false
}

#[derive(Debug, PartialEq, Eq)]
enum DiagStep {
    More,
    Done,
    Failed,
}

/// Walks the netlink messages of one datagram, handing each inet_diag_msg to `visit`.
fn parse_diag_datagram(mut d: &[u8], visit: &mut dyn FnMut(&[u8])) -> DiagStep {
    while d.len() >= NLMSG_HDR {
        let len = u32::from_ne_bytes([d[0], d[1], d[2], d[3]]) as usize;
        let kind = u16::from_ne_bytes([d[4], d[5]]);
        if len < NLMSG_HDR || len > d.len() {
            return DiagStep::Failed;
        }
        if kind == libc::NLMSG_DONE as u16 {
            return DiagStep::Done;
        }
        if kind == libc::NLMSG_ERROR as u16 {
            return DiagStep::Failed;
        }
        let msg = &d[NLMSG_HDR..len];
        if kind == SOCK_DIAG_BY_FAMILY && msg.len() >= DIAG_MSG_MIN {
            visit(msg);
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

/// The watched port's sockets and the host's TCP counters (the target's port, on its host).
pub struct TcpSource {
    port: u16,
    prev_counters: Option<Counters>,
}

/// Host TCP counters, cumulative: ListenOverflows, ListenDrops, TCPTimeouts, RetransSegs.
type Counters = [u64; 4];

impl TcpSource {
    pub fn new(port: u16) -> TcpSource {
        TcpSource {
            port,
            prev_counters: None,
        }
    }

    fn read(&mut self, tick: &mut Tick) -> TcpSample {
        let port = self.port;
        // sock_diag first (cheap, and gives the listen limit); /proc/net/tcp if netlink is
        // unavailable (e.g. a seccomp profile that forbids it).
        let (tally, limit) = match diag_tally(port) {
            Some(x) => x,
            None => {
                let mut tally = TcpTally::default();
                for path in ["/proc/net/tcp", "/proc/net/tcp6"] {
                    if let Some(text) = tick.read(path) {
                        tally.add(text, port);
                    }
                }
                (tally, None)
            }
        };
        let mut c: Counters = [0; 4];
        if let Some(t) = tick.read("/proc/net/netstat") {
            let v = parse_counters(
                t,
                "TcpExt",
                &["ListenOverflows", "ListenDrops", "TCPTimeouts"],
            );
            c[0] = v[0].unwrap_or(0);
            c[1] = v[1].unwrap_or(0);
            c[2] = v[2].unwrap_or(0);
        }
        if let Some(t) = tick.read("/proc/net/snmp") {
            c[3] = parse_counters(t, "Tcp", &["RetransSegs"])[0].unwrap_or(0);
        }
        let d = match self.prev_counters.replace(c) {
            Some(p) => std::array::from_fn(|i| c[i].saturating_sub(p[i])),
            None => [0; 4],
        };
        let s = tally.states;
        TcpSample {
            port,
            established: s[1],
            syn_sent: s[2],
            // Request sockets print as SYN_RECV; NEW_SYN_RECV is their internal name.
            syn_recv: s[3] + s[12],
            fin_wait1: s[4],
            fin_wait2: s[5],
            time_wait: s[6],
            close: s[7],
            close_wait: s[8],
            last_ack: s[9],
            listen: s[10],
            closing: s[11],
            listen_queue: tally.listen_queue,
            listen_limit: limit,
            listen_overflows: d[0],
            listen_drops: d[1],
            tcp_timeouts: d[2],
            retrans_segs: d[3],
        }
    }
}

impl Source for TcpSource {
    fn sample(&mut self, tick: &mut Tick, into: &mut Sample) {
        into.tcp = Some(self.read(tick));
    }
}

pub const KIND: Kind = Kind {
    name: "tcp",
    flag: "the target's port, on its host",
    summarise,
    second,
    pools: None,
};

fn summarise(samples: &[&Sample], into: &mut SourceObservation) {
    into.tcp = observe(samples);
}

fn observe(samples: &[&Sample]) -> Option<TcpObservation> {
    let mut o = TcpObservation::default();
    let mut states = [Acc::default(); 11];
    let mut queue = Acc::default();
    let mut any = false;
    for t in samples
        .iter()
        .filter_map(|s| s.tcp.as_ref().map(|t| (s.interval_ms, t)))
    {
        let (interval_ms, t) = t;
        any = true;
        o.port = t.port;
        for (a, (_, x)) in states.iter_mut().zip(t.states()) {
            a.add(x as f64);
        }
        if let Some(q) = t.listen_queue {
            queue.add(q as f64);
        }
        if let Some(l) = t.listen_limit {
            o.listen_limit = Some(o.listen_limit.unwrap_or(0).max(l));
        }
        o.listen_overflows += t.listen_overflows;
        o.listen_drops += t.listen_drops;
        o.tcp_timeouts += t.tcp_timeouts;
        o.retrans_segs += t.retrans_segs;
        if interval_ms > 0 {
            let rate = t.listen_overflows as f64 * 1000.0 / interval_ms as f64;
            o.listen_overflows_per_s_max = o.listen_overflows_per_s_max.max(rate);
        }
    }
    if !any {
        return None;
    }
    let names = TcpSample::default().states().map(|(name, _)| name);
    for (name, a) in names.iter().zip(states) {
        if a.max > 0.0 {
            o.states.insert(name.to_string(), a.stat());
        }
    }
    o.listen_queue = queue.opt();
    Some(o)
}

fn second(s: &Sample, o: &mut SecondObservation) {
    if let Some(t) = &s.tcp {
        o.established = Some(t.established);
        o.syn_recv = Some(t.syn_recv);
        o.time_wait = Some(t.time_wait);
        o.close_wait = Some(t.close_wait);
        o.listen_queue = t.listen_queue;
        o.listen_overflows = Some(o.listen_overflows.unwrap_or(0) + t.listen_overflows);
        o.retrans_segs = Some(o.retrans_segs.unwrap_or(0) + t.retrans_segs);
    }
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
        std::array::from_fn(|i| (STATE_NAMES[i + 1], v[i]))
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TcpObservation {
    pub port: u16,
    /// State name (`ESTABLISHED`, `TIME_WAIT`, ...) → sockets; states never seen are left out.
    pub states: BTreeMap<String, Stat>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen_queue: Option<Stat>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen_limit: Option<u64>,
    /// Host-wide counter increases over the step, and their highest per-second rate.
    pub listen_overflows: u64,
    pub listen_overflows_per_s_max: f64,
    pub listen_drops: u64,
    pub tcp_timeouts: u64,
    pub retrans_segs: u64,
}

impl TcpObservation {
    pub fn state(&self, name: &str) -> Stat {
        self.states.get(name).copied().unwrap_or_default()
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
        // One inet_diag message: LISTEN on 8080, queue 3, limit 128.
        let mut msg = vec![0u8; NLMSG_HDR + DIAG_MSG_MIN];
        let len = msg.len() as u32;
        msg[0..4].copy_from_slice(&len.to_ne_bytes());
        msg[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        let m = NLMSG_HDR;
        msg[m + DIAG_STATE] = LISTEN as u8;
        msg[m + DIAG_SPORT..m + DIAG_SPORT + 2].copy_from_slice(&8080u16.to_be_bytes());
        msg[m + DIAG_RQUEUE..m + DIAG_RQUEUE + 4].copy_from_slice(&3u32.to_ne_bytes());
        msg[m + DIAG_WQUEUE..m + DIAG_WQUEUE + 4].copy_from_slice(&128u32.to_ne_bytes());
        let mut seen = Vec::new();
        let step = parse_diag_datagram(&msg, &mut |x| seen.push(DiagSock::parse(x)));
        assert_eq!(step, DiagStep::More);
        assert_eq!(
            seen,
            vec![Some(DiagSock {
                state: 10,
                sport: 8080,
                dport: 0,
                rqueue: 3,
                wqueue: 128
            })]
        );
        // Truncated or lying lengths end the walk without a panic.
        let mut n = 0;
        assert_eq!(
            parse_diag_datagram(&msg[..20], &mut |_| n += 1),
            DiagStep::Failed
        );
        let mut bad = msg.clone();
        bad[0..4].copy_from_slice(&4u32.to_ne_bytes());
        assert_eq!(parse_diag_datagram(&bad, &mut |_| n += 1), DiagStep::Failed);
        assert_eq!(
            parse_diag_datagram(&msg[..10], &mut |_| n += 1),
            DiagStep::More
        );
        assert_eq!(n, 0);
        assert_eq!(DiagSock::parse(&[0u8; 10]), None);
    }
}
#[cfg(test)]
mod cost {
    #[test]
    #[ignore]
    fn diag_cost() {
        let t = std::time::Instant::now();
        for _ in 0..10 {
            super::listen_queue_limits(8080);
        }
        eprintln!("listen only: {:?}", t.elapsed() / 10);
        let t = std::time::Instant::now();
        for _ in 0..10 {
            super::diag_tally(8080);
        }
        eprintln!("all states: {:?}", t.elapsed() / 10);
        let t = std::time::Instant::now();
        for _ in 0..10 {
            let _ = std::fs::read_to_string("/proc/net/tcp");
        }
        eprintln!("/proc/net/tcp: {:?}", t.elapsed() / 10);
        let t = std::time::Instant::now();
        for _ in 0..10 {
            let _ = std::fs::read_to_string("/proc/net/netstat");
            let _ = std::fs::read_to_string("/proc/net/snmp");
        }
        eprintln!("netstat+snmp: {:?}", t.elapsed() / 10);
    }
}
