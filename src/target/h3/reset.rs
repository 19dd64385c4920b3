//! `quic-reset`: a server that has forgotten a connection answers its packets with a
//! stateless reset (RFC 9000, 10.3). quinn forgets a connection only after closing it, which
//! the client would hear, so the endpoint's UDP socket is wrapped: the connection IDs issued
//! to a forgotten connection are looked for in each datagram received, and such a packet is
//! dropped and answered with a reset whose token is the one quinn announced for that ID
//! (HMAC-SHA-256 of the ID under the endpoint's reset key, first 16 bytes, as quinn-proto's
//! `ResetToken::new` computes it).
use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::io::{self, IoSliceMut};
use std::net::UdpSocket;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use quinn::udp::{RecvMeta, Transmit};
use quinn::{AsyncUdpSocket, ConnectionId, ConnectionIdGenerator, UdpPoller};
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};

/// Length of the connection IDs this endpoint issues.
const CID_LEN: usize = 8;
const TOKEN_LEN: usize = 16;
/// How long a forgotten connection's IDs are answered with resets: longer than any client
/// keeps a connection it hears nothing on.
const FORGET_FOR: Duration = Duration::from_secs(60);
/// Forgotten IDs kept at most (the oldest are dropped first).
const MAX_FORGOTTEN: usize = 65_536;

type Cid = [u8; CID_LEN];

thread_local! {
    /// The IDs issued while `Endpoint::accept` runs on this thread: quinn makes a new
    /// connection's first ID inside `Incoming::accept`, synchronously.
    static ISSUING: RefCell<Option<Vec<Cid>>> = const { RefCell::new(None) };
}

/// The target's QUIC endpoint with its memory of forgotten connections.
#[derive(Clone)]
pub(crate) struct Endpoint {
    pub(crate) quic: quinn::Endpoint,
    forgotten: Arc<Forgotten>,
}

/// The IDs a connection was given at its accept.
pub(crate) struct Issued(Vec<Cid>);

struct Forgotten {
    key: hmac::Key,
    cids: Mutex<HashMap<Cid, Instant>>,
}

impl Forgotten {
    fn holds(&self, cid: &[u8]) -> bool {
        let Ok(cid) = Cid::try_from(cid) else {
            return false;
        };
        let cids = self.cids.lock().unwrap_or_else(|e| e.into_inner());
        cids.get(&cid).is_some_and(|t| t.elapsed() < FORGET_FOR)
    }

    /// A stateless reset for a datagram of `inciting` bytes to `cid`: unpredictable bits
    /// that look like a short-header packet, then the token; shorter than what incited it,
    /// so two endpoints cannot loop (RFC 9000, 10.3.3).
    fn reset_packet(&self, cid: &[u8], inciting: usize) -> Option<Vec<u8>> {
        const MIN_LEN: usize = 1 + 4 + TOKEN_LEN + 1;
        let len = inciting.checked_sub(1)?.min(1 + 20 + 4 + TOKEN_LEN);
        if len < MIN_LEN {
            return None;
        }
        let mut out = vec![0u8; len - TOKEN_LEN];
        SystemRandom::new().fill(&mut out).ok()?;
        out[0] = 0b0100_0000 | (out[0] >> 2);
        let tag = hmac::sign(&self.key, cid);
        out.extend_from_slice(&tag.as_ref()[..TOKEN_LEN]);
        Some(out)
    }
}

/// Issues random IDs of `CID_LEN` bytes and notes them during an accept.
struct Generator;

impl ConnectionIdGenerator for Generator {
    fn generate_cid(&mut self) -> ConnectionId {
        let mut cid = [0u8; CID_LEN];
        if SystemRandom::new().fill(&mut cid).is_err() {
            cid = fastrand::u64(..).to_ne_bytes();
        }
        ISSUING.with(|i| {
            if let Some(v) = i.borrow_mut().as_mut() {
                v.push(cid);
            }
        });
        ConnectionId::new(&cid)
    }

    fn cid_len(&self) -> usize {
        CID_LEN
    }

    fn cid_lifetime(&self) -> Option<Duration> {
        None
    }
}

/// The endpoint over `socket`, its reset key kept for the resets it sends itself.
pub(crate) fn endpoint(server: quinn::ServerConfig, socket: UdpSocket) -> crate::Result<Endpoint> {
    let rng = SystemRandom::new();
    let key = hmac::Key::generate(hmac::HMAC_SHA256, &rng)
        .map_err(|_| crate::Error::runtime("target: HTTP/3: no randomness for the reset key"))?;
    let mut config = quinn::EndpointConfig::new(Arc::new(key.clone()));
    config.cid_generator(|| Box::new(Generator));
    let forgotten = Arc::new(Forgotten {
        key,
        cids: Mutex::new(HashMap::new()),
    });
    let runtime: Arc<dyn quinn::Runtime> = Arc::new(quinn::TokioRuntime);
    let io = |e: io::Error| crate::Error::runtime(format!("target: HTTP/3 socket: {e}"));
    let inner = runtime.wrap_udp_socket(socket).map_err(io)?;
    let socket = Arc::new(Socket {
        inner,
        forgotten: Arc::clone(&forgotten),
    });
    let quic = quinn::Endpoint::new_with_abstract_socket(config, Some(server), socket, runtime)
        .map_err(io)?;
    Ok(Endpoint { quic, forgotten })
}

impl Endpoint {
    /// Accepts `incoming`, noting the IDs issued to it.
    pub(crate) fn accept(
        &self,
        incoming: quinn::Incoming,
    ) -> Result<(quinn::Connecting, Issued), quinn::ConnectionError> {
        ISSUING.with(|i| *i.borrow_mut() = Some(Vec::new()));
        let accepted = incoming.accept();
        let issued = ISSUING.with(|i| i.borrow_mut().take()).unwrap_or_default();
        accepted.map(|c| (c, Issued(issued)))
    }

    /// From now on, the connection given `issued` is answered with stateless resets.
    pub(crate) fn forget(&self, issued: &Issued) {
        let mut cids = self
            .forgotten
            .cids
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if cids.len() + issued.0.len() > MAX_FORGOTTEN {
            cids.retain(|_, t| now.duration_since(*t) < FORGET_FOR);
            if cids.len() + issued.0.len() > MAX_FORGOTTEN {
                cids.clear();
            }
        }
        for cid in &issued.0 {
            cids.insert(*cid, now);
        }
    }
}

struct Socket {
    inner: Arc<dyn AsyncUdpSocket>,
    forgotten: Arc<Forgotten>,
}

impl fmt::Debug for Socket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("target::h3::Socket").finish_non_exhaustive()
    }
}

/// The destination connection ID of a short-header packet of this endpoint.
fn short_dcid(packet: &[u8]) -> Option<&[u8]> {
    if packet.first()? & 0x80 != 0 || packet.len() < 1 + CID_LEN {
        return None;
    }
    Some(&packet[1..1 + CID_LEN])
}

impl AsyncUdpSocket for Socket {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        Arc::clone(&self.inner).create_io_poller()
    }

    fn try_send(&self, transmit: &Transmit) -> io::Result<()> {
        self.inner.try_send(transmit)
    }

    fn poll_recv(
        &self,
        cx: &mut Context,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        loop {
            let n = match self.inner.poll_recv(cx, bufs, meta) {
                Poll::Ready(Ok(n)) => n,
                other => return other,
            };
            let mut kept = 0;
            for i in 0..n {
                if !self.intercepts(&mut bufs[i][..meta[i].len], &meta[i]) {
                    if kept != i {
                        let (head, tail) = bufs.split_at_mut(i);
                        head[kept][..meta[i].len].copy_from_slice(&tail[0][..meta[i].len]);
                        meta[kept] = meta[i];
                    }
                    kept += 1;
                }
            }
            if kept > 0 {
                return Poll::Ready(Ok(kept));
            }
            // Everything received was for forgotten connections: read on.
        }
    }

    fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.inner.local_addr()
    }

    fn max_transmit_segments(&self) -> usize {
        self.inner.max_transmit_segments()
    }

    fn max_receive_segments(&self) -> usize {
        self.inner.max_receive_segments()
    }

    fn may_fragment(&self) -> bool {
        self.inner.may_fragment()
    }
}

impl Socket {
    /// True when the datagram (one, or several of `meta.stride` bytes) was for a forgotten
    /// connection and has been answered with a reset. In a batch of several where only some
    /// are, those get an ID quinn never issued (zeros), so it cannot read them.
    fn intercepts(&self, data: &mut [u8], meta: &RecvMeta) -> bool {
        let stride = meta.stride.max(1);
        let mut all = true;
        let mut any = false;
        for seg in data.chunks_mut(stride) {
            let Some(cid) = short_dcid(seg).filter(|c| self.forgotten.holds(c)) else {
                all = false;
                continue;
            };
            any = true;
            if let Some(packet) = self.forgotten.reset_packet(cid, seg.len()) {
                let t = Transmit {
                    destination: meta.addr,
                    ecn: None,
                    contents: &packet,
                    segment_size: None,
                    src_ip: meta.dst_ip,
                };
                // A reset lost to a full socket buffer is sent again at the client's next packet.
                let _ = self.inner.try_send(&t);
            }
            seg[1..1 + CID_LEN].fill(0);
        }
        any && all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forgotten() -> Forgotten {
        Forgotten {
            key: hmac::Key::new(hmac::HMAC_SHA256, b"key"),
            cids: Mutex::new(HashMap::new()),
        }
    }

    #[test]
    fn reset_token_is_quinns() {
        // quinn-proto's own token for the same key and ID (what the client was told).
        let f = forgotten();
        let cid = [7u8; CID_LEN];
        let ours = f.reset_packet(&cid, 100).unwrap();
        let theirs = quinn::crypto::HmacKey::sign;
        let mut sig = [0u8; 32];
        theirs(&f.key, &cid, &mut sig);
        assert_eq!(&ours[ours.len() - TOKEN_LEN..], &sig[..TOKEN_LEN]);
        assert_eq!(ours[0] & 0xc0, 0x40, "looks like a short-header packet");
        assert!(ours.len() < 100);
        assert!(f.reset_packet(&cid, 20).is_none(), "too small to answer");
    }

    #[test]
    fn only_forgotten_short_header_ids_match() {
        let f = forgotten();
        f.cids.lock().unwrap().insert([1; CID_LEN], Instant::now());
        assert!(f.holds(&[1; CID_LEN]));
        assert!(!f.holds(&[2; CID_LEN]));
        let mut short = vec![0x41u8];
        short.extend_from_slice(&[1; CID_LEN]);
        short.extend_from_slice(&[0; 30]);
        assert_eq!(short_dcid(&short), Some(&[1u8; CID_LEN][..]));
        short[0] = 0xc0;
        assert_eq!(short_dcid(&short), None, "long header");
        f.cids
            .lock()
            .unwrap()
            .insert([3; CID_LEN], Instant::now() - FORGET_FOR);
        assert!(!f.holds(&[3; CID_LEN]), "forgotten long ago");
    }
}
