//! The local addresses connections are made from (`--source`): one source address gives a
//! destination about 28,000 (at most 64,000) local ports, so a million connections to one
//! server need many. Each thread binds its connections to the next address of the list,
//! round-robin, with `IP_BIND_ADDRESS_NO_PORT` so the port is picked at connect, per
//! four-tuple, not reserved at bind.
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// Most addresses one `--source` may name: 65,536 × 28,000 ports is far past any count of
/// connections one process can hold, and the list stays a few hundred kilobytes.
pub const MAX_SOURCES: usize = 65_536;

/// The source addresses of a run, split by family: a connection takes one of its target's.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sources {
    v4: Vec<Ipv4Addr>,
    v6: Vec<Ipv6Addr>,
    /// As the user wrote it, for messages.
    given: String,
}

impl Sources {
    /// Parses a comma-separated list of addresses, ranges (`127.0.0.1-127.0.0.250`) and CIDR
    /// blocks (`127.0.0.0/24`: an IPv4 block of more than two addresses leaves out its
    /// network and broadcast addresses), IPv4 or IPv6. Repeated addresses count once.
    pub fn parse(s: &str) -> Result<Sources, String> {
        let mut out = Sources {
            given: s.to_string(),
            ..Sources::default()
        };
        let mut seen = std::collections::HashSet::new();
        for item in s.split(',').map(str::trim) {
            if item.is_empty() {
                return Err(format!("'{s}': an empty item in the list"));
            }
            let (first, count) = item_span(item)?;
            if out.len() as u128 + count > MAX_SOURCES as u128 {
                return Err(format!(
                    "'{s}': more than {MAX_SOURCES} addresses (at '{item}')"
                ));
            }
            for k in 0..count {
                let ip = offset(first, k);
                if seen.insert(ip) {
                    match ip {
                        IpAddr::V4(a) => out.v4.push(a),
                        IpAddr::V6(a) => out.v6.push(a),
                    }
                }
            }
        }
        Ok(out)
    }

    pub fn len(&self) -> usize {
        self.v4.len() + self.v6.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// As given on the command line.
    pub fn given(&self) -> &str {
        &self.given
    }

    /// Every target must have source addresses of its family.
    pub fn check_families(&self, targets: &[SocketAddr]) -> Result<(), String> {
        for t in targets {
            let (have, want) = match t {
                SocketAddr::V4(_) => (!self.v4.is_empty(), "IPv4"),
                SocketAddr::V6(_) => (!self.v6.is_empty(), "IPv6"),
            };
            if !have {
                return Err(format!(
                    "--source {}: no {want} address, but the target {t} is {want}",
                    self.given
                ));
            }
        }
        Ok(())
    }

    /// Binds a socket to each address once, as connections will (port left to the connect):
    /// an address this host does not have fails here, in one line, not on every connect.
    pub fn probe(&self) -> Result<(), String> {
        let all = self
            .v4
            .iter()
            .map(|&a| IpAddr::V4(a))
            .chain(self.v6.iter().map(|&a| IpAddr::V6(a)));
        for ip in all {
            bound_socket(ip).map_err(|e| {
                let why = if e.raw_os_error() == Some(libc::EADDRNOTAVAIL) {
                    "not an address of this host".to_string()
                } else {
                    format!("cannot bind to it: {e}")
                };
                format!("--source {}: {ip}: {why}", self.given)
            })?;
        }
        Ok(())
    }

    /// The cursor of worker thread `id`: threads start at different places of the list, so
    /// that few connections spread over all the addresses too.
    pub fn cursor(&self, id: usize) -> Cursor {
        Cursor {
            v4: id % self.v4.len().max(1),
            v6: id % self.v6.len().max(1),
        }
    }

    /// The next source address for a connection to `target`, advancing `cur`; None when the
    /// list has none of its family (a run checks families first: see [`Sources::check_families`]).
    pub fn next(&self, cur: &mut Cursor, target: &SocketAddr) -> Option<IpAddr> {
        fn take<A: Copy>(list: &[A], at: &mut usize) -> Option<A> {
            let a = *list.get(*at)?;
            *at = (*at + 1) % list.len();
            Some(a)
        }
        match target {
            SocketAddr::V4(_) => take(&self.v4, &mut cur.v4).map(IpAddr::V4),
            SocketAddr::V6(_) => take(&self.v6, &mut cur.v6).map(IpAddr::V6),
        }
    }
}

/// Where a thread is in the lists of [`Sources`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Cursor {
    v4: usize,
    v6: usize,
}

/// One item of the list: its first address and how many follow it.
fn item_span(item: &str) -> Result<(IpAddr, u128), String> {
    let bad = |why: &str| Err(format!("'{item}': {why}"));
    if let Some((a, b)) = item.split_once('-') {
        let (Ok(a), Ok(b)) = (a.trim().parse::<IpAddr>(), b.trim().parse::<IpAddr>()) else {
            return bad("not a range of IP addresses (FIRST-LAST)");
        };
        if a.is_ipv4() != b.is_ipv4() {
            return bad("the range's ends are of different families");
        }
        let (x, y) = (as_u128(a), as_u128(b));
        if y < x {
            return bad("the range ends before it starts");
        }
        return Ok((a, (y - x).saturating_add(1)));
    }
    if let Some((a, p)) = item.split_once('/') {
        let Ok(a) = a.trim().parse::<IpAddr>() else {
            return bad("not a CIDR block (ADDRESS/PREFIX)");
        };
        let bits = if a.is_ipv4() { 32 } else { 128 };
        let prefix = match p.trim().parse::<u32>() {
            Ok(p) if p <= bits => p,
            _ => return bad(&format!("the prefix length must be 0 to {bits}")),
        };
        let host_bits = bits - prefix;
        if host_bits > 64 {
            return bad("a block of more than 65536 addresses");
        }
        let size = 1u128 << host_bits;
        let first = as_u128(a) & !(size - 1);
        let ip = |v: u128| offset(if a.is_ipv4() { ip4(0) } else { ip6(0) }, v);
        // IPv4 blocks keep their network and broadcast addresses out, as hosts do.
        return Ok(if a.is_ipv4() && host_bits >= 2 {
            (ip(first + 1), size - 2)
        } else {
            (ip(first), size)
        });
    }
    match item.parse::<IpAddr>() {
        Ok(a) => Ok((a, 1)),
        Err(_) => bad("not an IP address, range (FIRST-LAST) or CIDR block (ADDRESS/PREFIX)"),
    }
}

fn ip4(v: u32) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(v))
}

fn ip6(v: u128) -> IpAddr {
    IpAddr::V6(Ipv6Addr::from(v))
}

fn as_u128(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

/// The address `k` after `first`, in its family (callers stay inside the family's space).
fn offset(first: IpAddr, k: u128) -> IpAddr {
    match first {
        IpAddr::V4(a) => ip4((u128::from(u32::from(a)) + k) as u32),
        IpAddr::V6(a) => ip6(u128::from(a) + k),
    }
}

/// A TCP socket bound to `ip` with its port left to the connect (`IP_BIND_ADDRESS_NO_PORT`:
/// without it, bind would reserve a port for this address alone, and 28,000 binds would use
/// every port whatever the destinations).
pub(super) fn bound_socket(ip: IpAddr) -> std::io::Result<socket2::Socket> {
    use socket2::{Domain, Protocol, Socket, Type};
    use std::os::fd::AsRawFd;
    let domain = if ip.is_ipv4() {
        Domain::IPV4
    } else {
        Domain::IPV6
    };
    let socket = Socket::new(domain, Type::STREAM, Some(Protocol::TCP))?;
    let on: libc::c_int = 1;
    // SAFETY: setsockopt on a socket this function owns, with a valid int option.
    let r = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    socket.bind(&SocketAddr::new(ip, 0).into())?;
    Ok(socket)
}

/// A non-blocking connect to `addr` from `ip` (the connect in progress, as mio's own).
pub(super) fn connect_from(ip: IpAddr, addr: SocketAddr) -> std::io::Result<mio::net::TcpStream> {
    let socket = bound_socket(ip)?;
    socket.set_nonblocking(true)?;
    match socket.connect(&addr.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(mio::net::TcpStream::from_std(socket.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4s(s: &Sources) -> Vec<String> {
        s.v4.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn lists_ranges_and_blocks_expand_to_their_addresses() {
        let s = Sources::parse("127.0.0.1-127.0.0.4").unwrap();
        assert_eq!(
            v4s(&s),
            ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"]
        );
        let s = Sources::parse("10.0.0.5, 10.0.0.6,10.0.0.5").unwrap();
        assert_eq!(v4s(&s), ["10.0.0.5", "10.0.0.6"], "repeats count once");
        // An IPv4 block leaves out its network and broadcast addresses; /31 and /32 keep all.
        let s = Sources::parse("127.0.0.0/24").unwrap();
        assert_eq!(s.len(), 254);
        assert_eq!(s.v4[0], Ipv4Addr::new(127, 0, 0, 1));
        assert_eq!(s.v4[253], Ipv4Addr::new(127, 0, 0, 254));
        assert_eq!(
            v4s(&Sources::parse("10.1.2.3/31").unwrap()),
            ["10.1.2.2", "10.1.2.3"]
        );
        assert_eq!(v4s(&Sources::parse("10.1.2.3/32").unwrap()), ["10.1.2.3"]);
        // A range across an octet, and IPv6 beside IPv4.
        let s = Sources::parse("10.0.0.255-10.0.1.1,::1,fd00::fe-fd00::101").unwrap();
        assert_eq!(v4s(&s), ["10.0.0.255", "10.0.1.0", "10.0.1.1"]);
        assert_eq!(s.v6.len(), 5);
        assert_eq!(s.v6[1], "fd00::fe".parse::<Ipv6Addr>().unwrap());
        assert_eq!(s.v6[4], "fd00::101".parse::<Ipv6Addr>().unwrap());
        assert_eq!(Sources::parse("fd00::/120").unwrap().len(), 256);
        // The limit itself is allowed.
        assert_eq!(Sources::parse("10.0.0.0/16").unwrap().len(), 65_534);
        assert_eq!(Sources::parse("fd00::/112").unwrap().len(), MAX_SOURCES);
    }

    #[test]
    fn bad_lists_say_what_and_where() {
        for (given, says) in [
            ("", "empty item"),
            ("10.0.0.1,", "empty item"),
            ("10.0.0.9-10.0.0.1", "ends before it starts"),
            ("10.0.0.1-::1", "different families"),
            ("10.0.0.1-x", "not a range"),
            ("10.0.0.0/33", "0 to 32"),
            ("fd00::/129", "0 to 128"),
            ("10.0.0.0/8", "more than 65536"),
            ("fd00::/64", "more than 65536"),
            ("fd00::/8", "more than 65536"),
            ("10.0.0.0/16,10.1.0.1-10.1.0.3", "more than 65536"),
            ("localhost", "not an IP address"),
            ("10.0.0.256", "not an IP address"),
        ] {
            let e = Sources::parse(given).unwrap_err();
            assert!(e.contains(says), "{given}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
        let e = Sources::parse("10.0.0.0/16,10.1.0.1-10.1.0.3").unwrap_err();
        assert!(e.contains("at '10.1.0.1-10.1.0.3'"), "{e}");
    }

    #[test]
    fn each_thread_goes_round_the_list_from_its_own_place() {
        let s = Sources::parse("127.0.0.1-127.0.0.3,::1").unwrap();
        let v4: SocketAddr = "127.0.0.1:80".parse().unwrap();
        let v6: SocketAddr = "[::1]:80".parse().unwrap();
        let mut c = s.cursor(1);
        let got: Vec<String> = (0..4)
            .map(|_| s.next(&mut c, &v4).unwrap().to_string())
            .collect();
        assert_eq!(got, ["127.0.0.2", "127.0.0.3", "127.0.0.1", "127.0.0.2"]);
        assert_eq!(s.next(&mut c, &v6), Some("::1".parse().unwrap()));
        assert_eq!(s.next(&mut c, &v6), Some("::1".parse().unwrap()));
        // A family the list lacks: refused before the run, nothing to pick during it.
        let only4 = Sources::parse("127.0.0.1").unwrap();
        assert_eq!(only4.next(&mut only4.cursor(0), &v6), None);
        let e = only4.check_families(&[v4, v6]).unwrap_err();
        assert!(
            e.contains("no IPv6 address") && e.contains("[::1]:80"),
            "{e}"
        );
        assert!(only4.check_families(&[v4]).is_ok());
    }

    #[test]
    fn the_probe_refuses_an_address_this_host_lacks() {
        assert_eq!(
            Sources::parse("127.0.0.1-127.0.0.3").unwrap().probe(),
            Ok(())
        );
        // TEST-NET-1 (RFC 5737): on no host.
        let e = Sources::parse("127.0.0.1,192.0.2.7")
            .unwrap()
            .probe()
            .unwrap_err();
        assert!(e.contains("192.0.2.7: not an address of this host"), "{e}");
    }

    #[test]
    fn a_bound_connect_comes_from_its_address() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let ip: IpAddr = "127.0.0.3".parse().unwrap();
        let _client = connect_from(ip, listener.local_addr().unwrap()).unwrap();
        let (_server, peer) = listener.accept().unwrap();
        assert_eq!(peer.ip(), ip);
    }
}
