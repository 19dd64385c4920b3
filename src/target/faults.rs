//! Fault modes: broken servers on purpose, so the generator's error taxonomy can be tested.
//! Each is reachable per request at `/fault/MODE`, or for every request with `--fault MODE`.
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use super::conn::{Conn, Next, Stream};
use super::request::Head;
use super::routes::{write_head, write_status_response, ConnHeader, FILL, OK_BODY};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// Server-wide: nothing listens, connects are refused. Endpoint: close without answering.
    Refuse,
    /// RST instead of an answer (SO_LINGER 0, then close). Server-wide: right after accept.
    Reset,
    /// Headers announcing 100000 bytes, part of the body, then RST.
    ResetBody,
    /// Never answer; keep the socket open until the client goes.
    Hang,
    /// A valid response sent one byte every 100 ms.
    Drip,
    /// A garbage status line.
    BadStatus,
    /// A header line without a colon.
    BadHeader,
    /// Content-Length longer than the body, then close.
    ShortBody,
    /// Transfer-Encoding: chunked with a chunk size that is not hex.
    BadChunk,
    /// A valid 100 MB (100,000,000 bytes) body, streamed.
    HugeBody,
    /// Every answer a 503.
    Status503,
    /// Read the request, close without answering.
    CloseAfterRead,
    /// Answer normally as if keeping alive, then close the connection anyway.
    CloseIdle,
    /// HTTP/2: RST_STREAM (INTERNAL_ERROR) instead of an answer.
    H2Reset,
    /// HTTP/2: the request is answered, then the connection says GOAWAY (server-wide: after
    /// every 100 requests), leaving the streams the client sent meanwhile unprocessed.
    H2Goaway,
    /// HTTP/2, server-wide only: 5000 SETTINGS frames once the first request arrives.
    SettingsFlood,
    /// HTTP/2, server-wide only: a 320 KiB header block (HEADERS + CONTINUATIONs).
    HugeHeaders,
    /// HTTP/3, server-wide only: the client's Initial packets go unanswered for 3 s (per
    /// client address), then the handshake goes on.
    QuicStall,
    /// HTTP/3: the request is read, then the connection is forgotten without a word; the
    /// client's next packets get a stateless reset (server-wide: after every 100 requests).
    QuicReset,
    /// HTTP/3: the request is answered, then GOAWAY (server-wide: after every 100 requests).
    H3Goaway,
    /// HTTP/3, server-wide only: MAX_STREAMS 1, one request at a time per connection.
    QuicStreams1,
    /// HTTP/3: the request is read, then the connection is closed with the application error
    /// H3_INTERNAL_ERROR (0x102) and no answer.
    QuicClose,
}

impl Fault {
    pub const ALL: [Fault; 22] = [
        Fault::Refuse,
        Fault::Reset,
        Fault::ResetBody,
        Fault::Hang,
        Fault::Drip,
        Fault::BadStatus,
        Fault::BadHeader,
        Fault::ShortBody,
        Fault::BadChunk,
        Fault::HugeBody,
        Fault::Status503,
        Fault::CloseAfterRead,
        Fault::CloseIdle,
        Fault::H2Reset,
        Fault::H2Goaway,
        Fault::SettingsFlood,
        Fault::HugeHeaders,
        Fault::QuicStall,
        Fault::QuicReset,
        Fault::H3Goaway,
        Fault::QuicStreams1,
        Fault::QuicClose,
    ];

    /// The name used on the command line and in `/fault/NAME`.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Refuse => "refuse",
            Fault::Reset => "reset",
            Fault::ResetBody => "reset-body",
            Fault::Hang => "hang",
            Fault::Drip => "drip",
            Fault::BadStatus => "bad-status",
            Fault::BadHeader => "bad-header",
            Fault::ShortBody => "short-body",
            Fault::BadChunk => "bad-chunk",
            Fault::HugeBody => "huge-body",
            Fault::Status503 => "503",
            Fault::CloseAfterRead => "close-after-read",
            Fault::CloseIdle => "close-idle",
            Fault::H2Reset => "h2-reset",
            Fault::H2Goaway => "h2-goaway",
            Fault::SettingsFlood => "settings-flood",
            Fault::HugeHeaders => "huge-headers",
            Fault::QuicStall => "quic-stall",
            Fault::QuicReset => "quic-reset",
            Fault::H3Goaway => "h3-goaway",
            Fault::QuicStreams1 => "quic-streams-1",
            Fault::QuicClose => "quic-close",
        }
    }

    /// The faults of the HTTP/3 side only; HTTP/1.1 and HTTP/2 answer them 404 (per request)
    /// and serve normally when one is server-wide, so the same target still answers there.
    pub fn is_quic(self) -> bool {
        matches!(
            self,
            Fault::QuicStall
                | Fault::QuicReset
                | Fault::H3Goaway
                | Fault::QuicStreams1
                | Fault::QuicClose
        )
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Fault {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Fault::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Fault::ALL.iter().map(|f| f.name()).collect();
                format!("unknown fault mode '{s}' (one of: {})", names.join(", "))
            })
    }
}

/// Bytes announced and bytes sent by `reset-body`.
const RESET_BODY_ANNOUNCED: u64 = 100_000;
const RESET_BODY_SENT: usize = 10_000;
/// Bytes announced and sent by `short-body`.
const SHORT_BODY_ANNOUNCED: u64 = 1_000;
const SHORT_BODY_SENT: usize = 100;
pub(crate) const HUGE_BODY: u64 = 100_000_000;
const DRIP_INTERVAL: Duration = Duration::from_millis(100);

const BAD_STATUS: &[u8] = b"XTTP/9.9 ??? Garbage\x01\r\nContent-Length: 3\r\n\r\nOK\n";
const BAD_HEADER: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nthis line is not a header\r\n\r\nOK\n";
const BAD_CHUNK: &[u8] =
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n";

/// Plays fault `f` as the answer to a request whose head (and body) was read.
pub(crate) async fn answer<S: Stream>(
    f: Fault,
    conn: &mut Conn<S>,
    head: &Head,
) -> std::io::Result<Next> {
    let keep = head.keep_alive;
    let conn_header = match (keep, head.http10) {
        (false, _) => ConnHeader::Close,
        (true, true) => ConnHeader::KeepAlive,
        (true, false) => ConnHeader::None,
    };
    let after = if keep { Next::KeepAlive } else { Next::Close };
    // Answers already queued for earlier pipelined requests go out first.
    conn.flush().await?;
    match f {
        Fault::Refuse | Fault::CloseAfterRead => Ok(Next::Drop),
        Fault::Reset => Ok(Next::Abort),
        Fault::ResetBody => {
            write_head(
                &mut conn.wbuf,
                200,
                Some(RESET_BODY_ANNOUNCED),
                ConnHeader::None,
            );
            conn.wbuf.extend_from_slice(&FILL[..RESET_BODY_SENT]);
            conn.flush().await?;
            // Let the partial body reach the client before the RST, which would discard it
            // if it were still in our send queue.
            tokio::time::sleep(Duration::from_millis(50)).await;
            Ok(Next::Abort)
        }
        Fault::Hang => {
            conn.drain_until_eof().await;
            Ok(Next::Drop)
        }
        Fault::Drip => {
            let mut response = Vec::with_capacity(128);
            write_head(&mut response, 200, Some(OK_BODY.len() as u64), conn_header);
            if !head.is_head {
                response.extend_from_slice(OK_BODY);
            }
            for (i, b) in response.iter().enumerate() {
                if i > 0 {
                    tokio::time::sleep(DRIP_INTERVAL).await;
                }
                conn.write_raw(std::slice::from_ref(b)).await?;
            }
            Ok(after)
        }
        Fault::BadStatus | Fault::BadHeader | Fault::BadChunk => {
            let raw = match f {
                Fault::BadStatus => BAD_STATUS,
                Fault::BadHeader => BAD_HEADER,
                _ => BAD_CHUNK,
            };
            conn.write_raw(raw).await?;
            // The client cannot frame what follows, so the connection is over.
            Ok(Next::Close)
        }
        Fault::ShortBody => {
            write_head(
                &mut conn.wbuf,
                200,
                Some(SHORT_BODY_ANNOUNCED),
                ConnHeader::None,
            );
            conn.wbuf.extend_from_slice(&FILL[..SHORT_BODY_SENT]);
            conn.flush().await?;
            Ok(Next::Close)
        }
        Fault::HugeBody => {
            write_head(&mut conn.wbuf, 200, Some(HUGE_BODY), conn_header);
            if !head.is_head {
                conn.write_body(HUGE_BODY).await?;
            }
            Ok(after)
        }
        Fault::Status503 => {
            write_status_response(&mut conn.wbuf, 503, conn_header, head.is_head);
            Ok(after)
        }
        // HTTP/2's and HTTP/3's faults have no HTTP/1.1 form: such a route does not exist here.
        Fault::H2Reset
        | Fault::H2Goaway
        | Fault::SettingsFlood
        | Fault::HugeHeaders
        | Fault::QuicStall
        | Fault::QuicReset
        | Fault::H3Goaway
        | Fault::QuicStreams1
        | Fault::QuicClose => {
            write_status_response(&mut conn.wbuf, 404, conn_header, head.is_head);
            Ok(after)
        }
        Fault::CloseIdle => {
            // Looks like a keep-alive answer (no `Connection: close`), then the server closes.
            write_head(
                &mut conn.wbuf,
                200,
                Some(OK_BODY.len() as u64),
                ConnHeader::None,
            );
            if !head.is_head {
                conn.wbuf.extend_from_slice(OK_BODY);
            }
            Ok(Next::Close)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for f in Fault::ALL {
            assert_eq!(f.name().parse::<Fault>(), Ok(f));
            assert_eq!(f.to_string(), f.name());
        }
        let err = "nope".parse::<Fault>().unwrap_err();
        assert!(err.contains("nope") && err.contains("reset-body"));
    }

    #[test]
    fn canned_answers_are_broken_as_intended() {
        assert!(!BAD_STATUS.starts_with(b"HTTP/"));
        let mut headers = [httparse::EMPTY_HEADER; 8];
        let mut r = httparse::Response::new(&mut headers);
        assert!(r.parse(BAD_HEADER).is_err());
        assert!(BAD_CHUNK.windows(4).any(|w| w == b"zz\r\n"));
    }
}
