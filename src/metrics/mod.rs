//! Metrics: what the engine records per request, per thread, without allocating; merged
//! across threads at the end into a [`Summary`] that reports and the results folder use.
pub mod histo;
pub mod names;
pub mod recorder;
pub mod second;
pub mod status;
pub mod summary;

pub use histo::LatencyStats;
pub use names::{NameStats, NameSummary};
pub use recorder::{Recorder, SessionTally};
pub use second::{SecondBucket, SecondLog, SecondSlot};
pub use status::OkStatus;
pub use summary::{
    ConnectSummary, IoBackend, ProtocolChoice, QuicSummary, SessionSummary, Summary, TlsSummary,
};

/// Transport-level failures. HTTP statuses (4xx, 5xx) are answers, counted apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ErrorKind {
    /// The server refused the connection (nothing listening, or the backlog overflowed).
    ConnectRefused,
    /// The connection was not established within --connect-timeout.
    ConnectTimeout,
    /// The server reset the connection (RST) while a request was in flight: before or during
    /// the answer, or right after accepting it (even if seen as the connect completes).
    Reset,
    /// No complete response within --timeout.
    Timeout,
    /// The server closed the connection (FIN) before a complete response: before any byte of
    /// it, or mid-body (shorter than its Content-Length, chunked body cut off). A request that
    /// met this (or a reset) on a reused keep-alive connection before any byte is retried once
    /// first (idempotent methods; see `Recorder::retries`).
    Closed,
    /// The response was not valid HTTP/1.1 or HTTP/2 (HTTP/2: a malformed frame or header
    /// block, a server that does not speak it, a flood of control frames), (status line, headers, framing, head > 64 KiB),
    /// HTTPS records after the handshake that do not decrypt or parse, or
    /// the server sent bytes no request asked for: more than one answer in the same read (the
    /// request fails), or bytes on an idle connection (counted against the request it last
    /// carried, which was already answered; the connection is dropped either way).
    Protocol,
    /// No file descriptor left for a new connection (RLIMIT_NOFILE). Open loop: the thread
    /// goes on with the connections it has; closed loop: the user stops.
    FdUnavail,
    /// No local address/port left for a new connection (ephemeral ports in TIME_WAIT).
    AddrUnavail,
    /// Any other socket error (e.g. network unreachable).
    Other,
    /// The TLS handshake failed for a reason other than the server's certificate: the server
    /// sent an alert (no common version or cipher, a client certificate it wants), closed or
    /// stalled mid-handshake. The reason is counted in `Recorder::tls_failures`.
    TlsHandshake,
    /// The server's certificate was refused (expired, unknown issuer, name mismatch, ...; the
    /// reason is counted in `Recorder::tls_failures`).
    TlsCertificate,
    /// HTTP/2: the server reset the request's stream (RST_STREAM; REFUSED_STREAM is retried
    /// once first when idempotent).
    H2Reset,
    /// HTTP/2: the server's GOAWAY left the request out (a stream above its last stream id)
    /// and it could not be retried (not idempotent, or retried once already).
    H2Goaway,
    /// Scenarios: an answer that failed a check of its request (expected status, body text).
    /// Counted beside the response, which is measured as any other; the user starts over.
    CheckFailed,
    /// Scenarios: a value to extract (regex, JSON pointer, header) was not in the answer.
    /// Counted beside the response; the user starts its scenario over.
    ExtractFailed,
    /// HTTP/3: the QUIC handshake failed (no answer on UDP, the handshake timed out, a
    /// TLS alert inside QUIC, no common version); a refused certificate is `tls-certificate`.
    QuicHandshake,
    /// HTTP/3: the QUIC connection went silent past its idle timeout after its handshake.
    QuicIdleTimeout,
    /// HTTP/3: the server reset the request's stream (RESET_STREAM or STOP_SENDING).
    H3Reset,
    /// HTTP/3: the server's GOAWAY (or its closing with H3_NO_ERROR) left the request out,
    /// and it could not be retried.
    H3Goaway,
    /// HTTP/3: the server closed the QUIC connection with an error code (transport or
    /// HTTP/3; the code is in the run's notes), or broke QUIC's or HTTP/3's rules.
    QuicProtocol,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 20] = [
        ErrorKind::ConnectRefused,
        ErrorKind::ConnectTimeout,
        ErrorKind::Reset,
        ErrorKind::Timeout,
        ErrorKind::Closed,
        ErrorKind::Protocol,
        ErrorKind::FdUnavail,
        ErrorKind::AddrUnavail,
        ErrorKind::Other,
        ErrorKind::TlsHandshake,
        ErrorKind::TlsCertificate,
        ErrorKind::H2Reset,
        ErrorKind::H2Goaway,
        ErrorKind::CheckFailed,
        ErrorKind::ExtractFailed,
        ErrorKind::QuicHandshake,
        ErrorKind::QuicIdleTimeout,
        ErrorKind::H3Reset,
        ErrorKind::H3Goaway,
        ErrorKind::QuicProtocol,
    ];
    pub const COUNT: usize = Self::ALL.len();

    /// The name used in the CLI output, JSON and docs.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::ConnectRefused => "connect-refused",
            ErrorKind::ConnectTimeout => "connect-timeout",
            ErrorKind::Reset => "reset",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Closed => "closed",
            ErrorKind::Protocol => "protocol",
            ErrorKind::FdUnavail => "fd-unavail",
            ErrorKind::AddrUnavail => "addr-unavail",
            ErrorKind::Other => "other",
            ErrorKind::TlsHandshake => "tls-handshake",
            ErrorKind::TlsCertificate => "tls-certificate",
            ErrorKind::H2Reset => "h2-reset",
            ErrorKind::H2Goaway => "h2-goaway",
            ErrorKind::CheckFailed => "check-failed",
            ErrorKind::ExtractFailed => "extract-failed",
            ErrorKind::QuicHandshake => "quic-handshake",
            ErrorKind::QuicIdleTimeout => "quic-idle-timeout",
            ErrorKind::H3Reset => "h3-reset",
            ErrorKind::H3Goaway => "h3-goaway",
            ErrorKind::QuicProtocol => "quic-protocol",
        }
    }

    pub fn from_name(s: &str) -> Option<ErrorKind> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }

    pub fn index(self) -> usize {
        self as usize
    }

    /// A scenario's verdict on an answer (`check-failed`, `extract-failed`), not a transport
    /// failure: the terminal shows them apart.
    pub fn is_check(self) -> bool {
        matches!(self, ErrorKind::CheckFailed | ErrorKind::ExtractFailed)
    }

    /// Classifies an OS error from connect/read/write.
    pub fn from_io(e: &std::io::Error, connecting: bool) -> ErrorKind {
        use std::io::ErrorKind as K;
        match e.raw_os_error() {
            Some(libc::EMFILE) | Some(libc::ENFILE) | Some(libc::ENOBUFS) | Some(libc::ENOMEM) => {
                return ErrorKind::FdUnavail
            }
            Some(libc::EADDRNOTAVAIL) | Some(libc::EADDRINUSE) => return ErrorKind::AddrUnavail,
            Some(libc::ETIMEDOUT) if connecting => return ErrorKind::ConnectTimeout,
            _ => {}
        }
        match e.kind() {
            K::ConnectionRefused => ErrorKind::ConnectRefused,
            // Also while connecting: a refusal is ECONNREFUSED (RST to the SYN); ECONNRESET
            // means the handshake had completed (the server accepted) and the server then
            // reset it, which is a reset whether it shows at connect, write or read.
            K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => ErrorKind::Reset,
            K::TimedOut => {
                if connecting {
                    ErrorKind::ConnectTimeout
                } else {
                    ErrorKind::Timeout
                }
            }
            K::UnexpectedEof => ErrorKind::Closed,
            // No socket call fails so: it is the TLS layer refusing what the server sent after
            // the handshake (records that do not decrypt or parse), a protocol error.
            K::InvalidData => ErrorKind::Protocol,
            _ => ErrorKind::Other,
        }
    }

    /// In plain words, as other tools and the OS say it, for one-line messages.
    pub fn describe(self) -> &'static str {
        match self {
            ErrorKind::ConnectRefused => "connection refused",
            ErrorKind::ConnectTimeout => "connection timed out",
            ErrorKind::Reset => "connection reset by peer",
            ErrorKind::Timeout => "no answer within --timeout",
            ErrorKind::Closed => "connection closed before a complete answer",
            ErrorKind::Protocol => "not a valid HTTP answer",
            ErrorKind::FdUnavail => "no file descriptor left",
            ErrorKind::AddrUnavail => "no local port left",
            ErrorKind::Other => "other socket error",
            ErrorKind::TlsHandshake => "TLS handshake failed",
            ErrorKind::TlsCertificate => "server certificate refused",
            ErrorKind::H2Reset => "HTTP/2 stream reset by the server",
            ErrorKind::H2Goaway => "left out by the server's HTTP/2 GOAWAY",
            ErrorKind::CheckFailed => "an answer failed a scenario's check",
            ErrorKind::ExtractFailed => "a scenario's value to extract was missing",
            ErrorKind::QuicHandshake => "QUIC handshake failed",
            ErrorKind::QuicIdleTimeout => "QUIC connection idle past its timeout",
            ErrorKind::H3Reset => "HTTP/3 stream reset by the server",
            ErrorKind::H3Goaway => "left out by the server's HTTP/3 GOAWAY",
            ErrorKind::QuicProtocol => "QUIC or HTTP/3 protocol error",
        }
    }

    /// What the user should change when this error shows up, if it is about the generator host.
    pub fn advice(self) -> Option<&'static str> {
        match self {
            ErrorKind::FdUnavail => Some(
                "ran out of file descriptors: raise the hard limit (ulimit -Hn, or nofile in \
                 /etc/security/limits.conf) and fs.file-max, or lower --connections (--users)",
            ),
            ErrorKind::AddrUnavail => Some(
                "ran out of local ports: spread the connections over more source addresses \
                 (--source 127.0.0.1-127.0.0.250 on loopback, or this host's addresses), widen \
                 net.ipv4.ip_local_port_range, set net.ipv4.tcp_tw_reuse=1, or use keep-alive \
                 instead of --no-keep-alive",
            ),
            _ => None,
        }
    }
}

/// Why a TLS handshake failed: the reason beside the `tls-handshake` and `tls-certificate`
/// error kinds, counted per reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TlsReason {
    Expired,
    NotYetValid,
    UnknownIssuer,
    NameMismatch,
    BadSignature,
    Revoked,
    /// The server's certificate is a CA's (basicConstraints CA:TRUE), and not itself one of
    /// the trusted ones: what `openssl req -x509` makes, passed to the wrong place.
    CaUsedAsEndEntity,
    /// Any other refusal of the server's certificate.
    BadCertificate,
    /// The server sent a fatal alert (no common version or cipher, wants a client certificate).
    Alert,
    /// The server closed or reset the connection mid-handshake.
    Closed,
    /// The handshake did not finish within the connect timeout (TCP had connected).
    Timeout,
    /// The server's handshake messages were malformed or unexpected.
    Protocol,
}

impl TlsReason {
    pub const ALL: [TlsReason; 12] = [
        TlsReason::Expired,
        TlsReason::NotYetValid,
        TlsReason::UnknownIssuer,
        TlsReason::NameMismatch,
        TlsReason::BadSignature,
        TlsReason::Revoked,
        TlsReason::CaUsedAsEndEntity,
        TlsReason::BadCertificate,
        TlsReason::Alert,
        TlsReason::Closed,
        TlsReason::Timeout,
        TlsReason::Protocol,
    ];
    pub const COUNT: usize = Self::ALL.len();

    pub fn name(self) -> &'static str {
        match self {
            TlsReason::Expired => "expired",
            TlsReason::NotYetValid => "not-yet-valid",
            TlsReason::UnknownIssuer => "unknown-issuer",
            TlsReason::NameMismatch => "name-mismatch",
            TlsReason::BadSignature => "bad-signature",
            TlsReason::Revoked => "revoked",
            TlsReason::CaUsedAsEndEntity => "ca-used-as-end-entity",
            TlsReason::BadCertificate => "bad-certificate",
            TlsReason::Alert => "alert",
            TlsReason::Closed => "closed",
            TlsReason::Timeout => "timeout",
            TlsReason::Protocol => "protocol",
        }
    }

    pub fn index(self) -> usize {
        self as usize
    }

    /// What to change when certificates are refused for this reason; `cacert`: the run
    /// trusted `--cacert` certificates rather than the system's. None for handshake failures
    /// (the server's side, not a choice of the user's).
    pub fn advice(self, cacert: bool) -> Option<&'static str> {
        Some(match self {
            TlsReason::UnknownIssuer if cacert => {
                "no certificate of --cacert issued the server's: pass the CA that signed it (or \
                 the server's certificate itself), or --insecure to measure without verifying it"
            }
            TlsReason::UnknownIssuer => {
                "the server's certificate was refused: pass its CA with --cacert FILE, or \
                 --insecure to measure without verifying it"
            }
            TlsReason::CaUsedAsEndEntity => {
                "the server's certificate is a CA certificate (CA:TRUE), trusted only when \
                 --cacert holds that very certificate: pass it with --cacert FILE, or \
                 --insecure to measure without verifying it"
            }
            TlsReason::Expired | TlsReason::NotYetValid => {
                "the server's certificate is outside its validity dates (check the server's \
                 certificate and this host's clock); --insecure measures without verifying it"
            }
            TlsReason::NameMismatch => {
                "the server's certificate does not name the URL's host: use a host name the \
                 certificate was made for in the URL, or --insecure to measure without \
                 verifying it"
            }
            TlsReason::BadSignature | TlsReason::Revoked | TlsReason::BadCertificate => {
                "the server's certificate was refused: --insecure measures without verifying it"
            }
            TlsReason::Alert | TlsReason::Closed | TlsReason::Timeout | TlsReason::Protocol => {
                return None
            }
        })
    }

    /// The error kind this reason is counted under.
    pub fn kind(self) -> ErrorKind {
        match self {
            TlsReason::Alert | TlsReason::Closed | TlsReason::Timeout | TlsReason::Protocol => {
                ErrorKind::TlsHandshake
            }
            _ => ErrorKind::TlsCertificate,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in ErrorKind::ALL {
            assert_eq!(ErrorKind::from_name(k.name()), Some(k));
            assert_eq!(ErrorKind::ALL[k.index()], k);
        }
        for r in TlsReason::ALL {
            assert_eq!(TlsReason::ALL[r.index()], r);
        }
        assert_eq!(TlsReason::Expired.kind(), ErrorKind::TlsCertificate);
        assert_eq!(TlsReason::Timeout.kind(), ErrorKind::TlsHandshake);
    }

    /// Local ports run out per source address: the advice names the flag that adds addresses.
    #[test]
    fn running_out_of_local_ports_advises_more_source_addresses() {
        let a = ErrorKind::AddrUnavail.advice().unwrap();
        assert!(a.contains("--source"), "{a}");
        assert_eq!(ErrorKind::AddrUnavail.describe(), "no local port left");
    }

    #[test]
    fn io_classification() {
        let e = std::io::Error::from_raw_os_error(libc::EMFILE);
        assert_eq!(ErrorKind::from_io(&e, true), ErrorKind::FdUnavail);
        let e = std::io::Error::from_raw_os_error(libc::EADDRNOTAVAIL);
        assert_eq!(ErrorKind::from_io(&e, true), ErrorKind::AddrUnavail);
        let e = std::io::Error::from_raw_os_error(libc::ECONNREFUSED);
        assert_eq!(ErrorKind::from_io(&e, true), ErrorKind::ConnectRefused);
        let e = std::io::Error::from_raw_os_error(libc::ECONNRESET);
        assert_eq!(ErrorKind::from_io(&e, false), ErrorKind::Reset);
        // Reset right after accept, seen when the connect completes: still a reset.
        assert_eq!(ErrorKind::from_io(&e, true), ErrorKind::Reset);
        let e = std::io::Error::from_raw_os_error(libc::ETIMEDOUT);
        assert_eq!(ErrorKind::from_io(&e, true), ErrorKind::ConnectTimeout);
        let e = std::io::Error::new(std::io::ErrorKind::InvalidData, "bad record");
        assert_eq!(ErrorKind::from_io(&e, false), ErrorKind::Protocol);
    }
}
