//! The target's HTTP/3 side (`--tls --http3`): a QUIC endpoint on the TCP port's number over
//! UDP, run by quinn on the target's runtime, with HTTP/3 and QPACK from the `h3` crate. Same
//! certificate, routes, `--workers` gate, `--stall` and faults as over TCP (where they have an
//! HTTP/3 form), plus QUIC's own faults (`Fault::is_quic`). Bounds (docs/security.md): at most
//! `MAX_CONNECTIONS` connections, `MAX_STREAMS` requests at once on each, a handshake that
//! does not finish within the TLS deadline and an idle connection are dropped.
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use h3::server::RequestStream;
use http::{Response, StatusCode};
use quinn::crypto::rustls::QuicServerConfig;
use quinn::VarInt;

use super::faults::Fault;
use super::routes::{self, Route, FILL, OK_BODY, ROOT_BODY};
use super::{Shared, TargetTls};

mod reset;

/// Requests a client may have open at once on one connection (as over HTTP/2).
const MAX_STREAMS: u32 = 128;
/// Unidirectional streams a client may open: HTTP/3 needs three (control, QPACK encoder and
/// decoder); a few more for the reserved (grease) types clients send.
const MAX_UNI_STREAMS: u32 = 8;
/// Connections at once; more are refused (CONNECTION_REFUSED) until some end.
const MAX_CONNECTIONS: usize = 4096;
/// A connection that hears nothing for this long is dropped (a handshake included, which
/// also has the TLS deadline).
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Server-wide `h3-goaway` and `quic-reset`: requests a connection serves before the fault.
const FAULT_AFTER: u64 = 100;
/// `quic-stall`: how long a client's Initial packets go unanswered.
pub(crate) const STALL: Duration = Duration::from_secs(3);
const DRIP_INTERVAL: Duration = Duration::from_millis(100);
/// Longest `hang` over HTTP/3: the client gives up on the request long before.
const HANG: Duration = Duration::from_secs(3600);
/// HTTP/3 error codes (RFC 9114, 8.1).
const H3_NO_ERROR: u32 = 0x100;
const H3_INTERNAL_ERROR: u32 = 0x102;

type Stream = RequestStream<h3_quinn::BidiStream<Bytes>, Bytes>;

/// The QUIC endpoint on `addr` over UDP (the TCP listener's address, so the same port
/// number), serving `tls`'s certificate. Call inside the target's runtime.
pub(crate) fn endpoint(
    addr: SocketAddr,
    tls: &TargetTls,
    fault: Option<Fault>,
) -> crate::Result<Endpoint> {
    let crypto = tls.quic_config().map_err(crate::Error::usage)?;
    let crypto = QuicServerConfig::try_from(crypto)
        .map_err(|e| crate::Error::runtime(format!("target: HTTP/3: {e}")))?;
    let mut server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let mut transport = quinn::TransportConfig::default();
    let streams = if fault == Some(Fault::QuicStreams1) {
        1
    } else {
        MAX_STREAMS
    };
    transport
        .max_concurrent_bidi_streams(VarInt::from_u32(streams))
        .max_concurrent_uni_streams(VarInt::from_u32(MAX_UNI_STREAMS))
        .max_idle_timeout(Some(
            quinn::IdleTimeout::try_from(IDLE_TIMEOUT).expect("30 s fits QUIC's idle timeout"),
        ));
    server.transport_config(Arc::new(transport));
    let socket = std::net::UdpSocket::bind(addr).map_err(|e| {
        crate::Error::runtime(format!(
            "target: cannot listen on {addr} over UDP (HTTP/3): {e}"
        ))
    })?;
    reset::endpoint(server, socket)
}

pub(crate) use reset::Endpoint;

/// Stops accepting and closes every connection (H3_NO_ERROR).
pub(crate) fn close(ep: &Endpoint) {
    ep.quic
        .close(VarInt::from_u32(H3_NO_ERROR), b"target stopping");
}

/// Accepts QUIC connections until the endpoint is closed.
pub(crate) async fn accept_loop(ep: Endpoint, shared: Arc<Shared>) {
    let mut stalled = Stalled::default();
    while let Some(incoming) = ep.quic.accept().await {
        match (shared.fault, shared.tls.as_ref().and_then(|t| t.1)) {
            (_, Some(super::TlsFault::Stall)) => {
                incoming.ignore();
                continue;
            }
            (_, Some(super::TlsFault::Close)) => {
                incoming.refuse();
                continue;
            }
            (Some(Fault::QuicStall), _) if stalled.holds(incoming.remote_address()) => {
                // Dropped unanswered: the client sends its Initial again after its PTO.
                incoming.ignore();
                continue;
            }
            _ => {}
        }
        if ep.quic.open_connections() >= MAX_CONNECTIONS {
            incoming.refuse();
            continue;
        }
        let Ok((connecting, issued)) = ep.accept(incoming) else {
            continue;
        };
        shared.stats.connections.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(serve(connecting, issued, ep.clone(), Arc::clone(&shared)));
    }
}

/// `quic-stall`: when each client address was first seen; its Initials are ignored for
/// `STALL` from then. Entries older than a minute are forgotten, and the map is capped.
#[derive(Default)]
struct Stalled {
    first: HashMap<SocketAddr, Instant>,
}

impl Stalled {
    const CAP: usize = 4096;

    fn holds(&mut self, from: SocketAddr) -> bool {
        let now = Instant::now();
        if self.first.len() >= Self::CAP {
            self.first
                .retain(|_, t| now.duration_since(*t) < Duration::from_secs(60));
            if self.first.len() >= Self::CAP {
                self.first.clear();
            }
        }
        let first = *self.first.entry(from).or_insert(now);
        if now.duration_since(first) >= Duration::from_secs(60) {
            // A new attempt from an address seen long ago: stall it again.
            self.first.insert(from, now);
            return true;
        }
        now.duration_since(first) < STALL
    }
}

/// One connection: the handshake (bounded by the TLS deadline), then its requests.
async fn serve(
    connecting: quinn::Connecting,
    issued: reset::Issued,
    ep: Endpoint,
    shared: Arc<Shared>,
) {
    let conn = match tokio::time::timeout(super::tls::HANDSHAKE_TIMEOUT, connecting).await {
        Ok(Ok(c)) => c,
        _ => return,
    };
    let Ok(mut h3conn) = h3::server::builder()
        .build::<_, Bytes>(h3_quinn::Connection::new(conn.clone()))
        .await
    else {
        return;
    };
    let mut served = 0u64;
    let mut goaway_sent = false;
    loop {
        let resolver = match h3conn.accept().await {
            Ok(Some(r)) => r,
            _ => break,
        };
        let Ok((req, mut stream)) = resolver.resolve_request().await else {
            continue;
        };
        if goaway_sent {
            // Past our GOAWAY's id: not processed, and said so (the client may send it again
            // elsewhere). h3 rejects only the streams above the id it sent, not the id itself.
            stream.stop_sending(h3::error::Code::H3_REQUEST_REJECTED);
            stream.stop_stream(h3::error::Code::H3_REQUEST_REJECTED);
            continue;
        }
        served += 1;
        // Server-wide, the connection faults leave the routes as they are and play on a
        // connection's every FAULT_AFTER-th request (quic-close at its first); at their
        // `/fault/` route, at once.
        let route = match shared.fault {
            None
            | Some(
                Fault::CloseIdle
                | Fault::QuicStall
                | Fault::QuicStreams1
                | Fault::QuicReset
                | Fault::QuicClose
                | Fault::H3Goaway
                | Fault::H2Goaway,
            ) => Route::parse(req.uri().path_and_query().map_or("/", |p| p.as_str())),
            Some(f) => Route::Fault(f),
        };
        let due = |f: Fault| {
            route == Route::Fault(f)
                || (shared.fault == Some(f) && (f == Fault::QuicClose || served % FAULT_AFTER == 0))
        };
        let is_head = req.method() == http::Method::HEAD;
        if due(Fault::QuicClose) {
            shared.stats.received.fetch_add(1, Ordering::Relaxed);
            shared.stats.answered(super::HTTP3);
            conn.close(
                VarInt::from_u32(H3_INTERNAL_ERROR),
                b"overload target: quic-close",
            );
            break;
        }
        if due(Fault::QuicReset) {
            shared.stats.received.fetch_add(1, Ordering::Relaxed);
            shared.stats.answered(super::HTTP3);
            // From now on this connection's packets are answered with a stateless reset: the
            // server has "forgotten" it. The answer's head is still sent, so the client has
            // something to acknowledge at once (and meets the reset mid-answer).
            ep.forget(&issued);
            let _ = head(&mut stream, 200).await;
            // Kept (h3conn too: dropping it would close) until it times out, silently: a
            // CONNECTION_CLOSE would tell the client.
            let _ = tokio::time::timeout(IDLE_TIMEOUT * 2, conn.closed()).await;
            break;
        }
        let goaway = due(Fault::H3Goaway) || due(Fault::H2Goaway);
        let cookie = super::app::Request::cookie_of(req.headers());
        tokio::spawn(answer(
            route,
            is_head,
            cookie,
            stream,
            conn.clone(),
            Arc::clone(&shared),
        ));
        if goaway {
            // GOAWAY now: requests the client sent after this one are left unprocessed; the
            // ones accepted are answered, then the connection closes. The id is the first
            // request NOT processed (RFC 9114 §5.2), one past this one: h3 counts from the
            // last accepted stream, so 1 (0 would disown the request being answered).
            let _ = h3conn.shutdown(1).await;
            goaway_sent = true;
        }
    }
}

async fn answer(
    route: Route,
    is_head: bool,
    cookie: Option<String>,
    mut stream: Stream,
    conn: quinn::Connection,
    shared: Arc<Shared>,
) {
    shared.stats.received.fetch_add(1, Ordering::Relaxed);
    // The request's body, if any, is read and dropped (as over TCP); the login
    // application's form is kept (up to `app::MAX_FORM`).
    let mut form = super::app::Request {
        cookie,
        body: Vec::new(),
    };
    while let Ok(Some(mut chunk)) = stream.recv_data().await {
        while chunk.has_remaining() {
            let piece = chunk.chunk();
            let n = piece.len();
            if matches!(route, Route::App(_)) {
                let room = (super::app::MAX_FORM as usize).saturating_sub(form.body.len());
                form.body.extend_from_slice(&piece[..n.min(room)]);
            }
            chunk.advance(n);
        }
    }
    // The status pages are not the load: neither counted as arrivals nor queued for a
    // worker (they answer while every worker is busy).
    let _permit = if matches!(route, Route::PoolStatus | Route::Arrivals | Route::Stats) {
        None
    } else {
        shared.arrivals.note();
        shared.gate.enter().await
    };
    // The work first, then `--stall`, as over HTTP/1.1 and HTTP/2.
    match route {
        Route::Sleep { ms, jitter } => shared.timer.sleep(routes::sleep_time(ms, jitter)).await,
        Route::Cpu { us } => tokio::task::block_in_place(|| routes::spin(us)),
        _ => {}
    }
    if let Some(stall) = &shared.stall {
        stall.wait_open().await;
    }
    let s = &mut stream;
    let r = match route {
        Route::Root => small(s, 200, ROOT_BODY, is_head).await,
        Route::Bytes(n) => body(s, n, is_head).await,
        Route::Sleep { .. } | Route::Cpu { .. } => small(s, 200, OK_BODY, is_head).await,
        Route::Status(code) => small(s, code, b"", true).await,
        Route::PoolStatus => match shared.gate.status() {
            Some(st) => owned(s, routes::pool_status_json(&st), is_head).await,
            None => small(s, 404, b"", true).await,
        },
        Route::Arrivals => owned(s, shared.arrivals.json(), is_head).await,
        Route::Stats => owned(s, shared.stats_json(), is_head).await,
        Route::App(page) => app(s, &shared.app.answer(page, &form)).await,
        Route::NotFound => small(s, 404, b"", true).await,
        Route::BadParam => small(s, 400, b"", true).await,
        Route::Fault(f) => fault(f, s, is_head, &conn).await,
    };
    shared.stats.answered(super::HTTP3);
    drop(r);
}

async fn head(s: &mut Stream, status: u16) -> Result<(), h3::error::StreamError> {
    let mut resp = Response::new(());
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    resp.headers_mut().insert(
        http::header::SERVER,
        http::HeaderValue::from_static("overload-target"),
    );
    s.send_response(resp).await
}

async fn small(
    s: &mut Stream,
    status: u16,
    body: &'static [u8],
    is_head: bool,
) -> Result<(), h3::error::StreamError> {
    head(s, status).await?;
    if !is_head && !body.is_empty() {
        s.send_data(Bytes::from_static(body)).await?;
    }
    s.finish().await
}

/// The login application's answer (`/app/*`, as over HTTP/1.1), with its `set-cookie`.
async fn app(s: &mut Stream, a: &super::app::Answer) -> Result<(), h3::error::StreamError> {
    let mut resp = Response::new(());
    *resp.status_mut() = StatusCode::from_u16(a.status).unwrap_or(StatusCode::OK);
    if let Some(c) = a.set_cookie.as_deref().and_then(|c| c.parse().ok()) {
        resp.headers_mut().insert(http::header::SET_COOKIE, c);
    }
    s.send_response(resp).await?;
    s.send_data(Bytes::from(a.body.clone())).await?;
    s.finish().await
}

async fn owned(s: &mut Stream, body: String, is_head: bool) -> Result<(), h3::error::StreamError> {
    head(s, 200).await?;
    if !is_head {
        s.send_data(Bytes::from(body)).await?;
    }
    s.finish().await
}

/// `n` bytes of body in slices of the static buffer; each send waits for the client's flow
/// control, so nothing is buffered whole.
async fn body(s: &mut Stream, n: u64, is_head: bool) -> Result<(), h3::error::StreamError> {
    head(s, 200).await?;
    if !is_head {
        let mut left = n;
        while left > 0 {
            let piece = left.min(FILL.len() as u64) as usize;
            s.send_data(Bytes::from_static(&FILL[..piece])).await?;
            left -= piece as u64;
        }
    }
    s.finish().await
}

async fn fault(
    f: Fault,
    s: &mut Stream,
    is_head: bool,
    conn: &quinn::Connection,
) -> Result<(), h3::error::StreamError> {
    match f {
        Fault::H2Goaway | Fault::H3Goaway | Fault::CloseIdle | Fault::QuicStreams1 => {
            small(s, 200, OK_BODY, is_head).await?;
            if f == Fault::CloseIdle {
                // Answered, then the connection closes, as a server's idle close would.
                conn.close(VarInt::from_u32(H3_NO_ERROR), b"");
            }
            Ok(())
        }
        Fault::Status503 => small(s, 503, b"", true).await,
        Fault::HugeBody => body(s, super::faults::HUGE_BODY, is_head).await,
        Fault::Hang => {
            // Until the client closes the connection (a reset stream is not seen here).
            let _ = tokio::time::timeout(HANG, conn.closed()).await;
            Ok(())
        }
        Fault::Drip => {
            head(s, 200).await?;
            if !is_head {
                for b in OK_BODY {
                    tokio::time::sleep(DRIP_INTERVAL).await;
                    s.send_data(Bytes::copy_from_slice(std::slice::from_ref(b)))
                        .await?;
                }
            }
            s.finish().await
        }
        // HTTP/1.1's broken framings and HTTP/2's frame faults have no HTTP/3 form; a stream
        // reset is their nearest kin (H3_INTERNAL_ERROR). The connection faults are played
        // by `serve`; `quic-stall` acts before any request.
        Fault::H2Reset
        | Fault::Reset
        | Fault::ResetBody
        | Fault::Refuse
        | Fault::CloseAfterRead
        | Fault::BadStatus
        | Fault::BadHeader
        | Fault::BadChunk
        | Fault::ShortBody
        | Fault::SettingsFlood
        | Fault::HugeHeaders
        | Fault::QuicStall
        | Fault::QuicReset
        | Fault::QuicClose => {
            s.stop_stream(h3::error::Code::H3_INTERNAL_ERROR);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stall_holds_an_address_for_its_window_only() {
        let mut s = Stalled::default();
        let a: SocketAddr = "127.0.0.1:5000".parse().unwrap();
        assert!(s.holds(a));
        assert!(s.holds(a), "still inside the window");
        s.first.insert(a, Instant::now() - STALL);
        assert!(!s.holds(a), "the window is over");
        s.first.insert(a, Instant::now() - Duration::from_secs(61));
        assert!(s.holds(a), "a new attempth long after is stalled again");
    }

    #[test]
    fn stall_map_is_capped() {
        let mut s = Stalled::default();
        for port in 0..(Stalled::CAP as u16 + 10) {
            s.holds(SocketAddr::from(([127, 0, 0, 1], port)));
        }
        assert!(s.first.len() <= Stalled::CAP);
    }
}
