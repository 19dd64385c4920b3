//! The target's HTTP/2 side: h2c with prior knowledge on the same port as HTTP/1.1 (a
//! connection that opens with the preface is HTTP/2), served by the `h2` crate with the same
//! routes. [`serve`] is generic over the byte stream so TLS (ALPN `h2`) can hand its streams
//! here too. The faults the crate cannot produce (a SETTINGS flood, an oversized header
//! block) are written as raw frames.
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use h2::server::SendResponse;
use h2::{Reason, SendStream};
use http::{Response, StatusCode};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::faults::Fault;
use super::routes::{self, Route, FILL, OK_BODY, ROOT_BODY};
use super::Shared;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// Streams a client may open at once (nginx's default is 128).
const MAX_STREAMS: u32 = 128;
/// Server-wide `h2-goaway`: requests a connection serves before its GOAWAY.
const GOAWAY_AFTER: u64 = 100;
/// How long a connection may take to show its first bytes before it is taken as HTTP/1.1.
const PREFACE_WAIT: Duration = Duration::from_millis(500);
const DRIP_INTERVAL: Duration = Duration::from_millis(100);
/// Longest `hang` over HTTP/2: the client resets the stream long before (its timeout).
const HANG: Duration = Duration::from_secs(3600);

/// True when the connection opens with the HTTP/2 preface. Peeks, so an HTTP/1.1 request is
/// left in place; a request line differs from the preface at its first bytes, so HTTP/1.1
/// waits for nothing.
pub(crate) async fn has_preface(stream: &TcpStream) -> bool {
    let mut buf = [0u8; 24];
    let deadline = tokio::time::Instant::now() + PREFACE_WAIT;
    loop {
        let n = match tokio::time::timeout_at(deadline, stream.peek(&mut buf)).await {
            Ok(Ok(n)) => n,
            _ => return false,
        };
        if n == 0 || buf[..n] != PREFACE[..n] {
            return false;
        }
        if n == PREFACE.len() {
            return true;
        }
        // A prefix of the preface: the rest is on its way.
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Serves one HTTP/2 connection until it closes.
pub(crate) async fn serve<S>(io: S, shared: Arc<Shared>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    if let Some(f @ (Fault::SettingsFlood | Fault::HugeHeaders)) = shared.fault {
        return raw_fault(io, f).await;
    }
    let mut builder = h2::server::Builder::new();
    builder.max_concurrent_streams(MAX_STREAMS);
    let Ok(mut conn) = builder.handshake::<_, Bytes>(io).await else {
        return;
    };
    let mut served = 0u64;
    while let Some(accepted) = conn.accept().await {
        let Ok((req, respond)) = accepted else { break };
        // A server-wide HTTP/3 fault leaves this side serving normally.
        let route = match shared.fault.filter(|f| !f.is_quic()) {
            None | Some(Fault::CloseIdle) => {
                Route::parse(req.uri().path_and_query().map_or("/", |p| p.as_str()))
            }
            Some(f) => Route::Fault(f),
        };
        served += 1;
        let goaway = match route {
            Route::Fault(Fault::H2Goaway) => shared.fault.is_none() || served % GOAWAY_AFTER == 0,
            _ => false,
        };
        let is_head = req.method() == http::Method::HEAD;
        if let Route::App(page) = route {
            tokio::spawn(app(page, req, respond, Arc::clone(&shared)));
            continue;
        }
        tokio::spawn(answer(route, is_head, respond, Arc::clone(&shared)));
        if goaway {
            // GOAWAY now: streams the client opened since are left unprocessed; the ones
            // accepted are answered, then the connection closes.
            conn.graceful_shutdown();
        }
    }
}

async fn answer(
    route: Route,
    is_head: bool,
    mut respond: SendResponse<Bytes>,
    shared: Arc<Shared>,
) {
    shared.stats.received.fetch_add(1, Ordering::Relaxed);
    // The status pages are not the load: neither counted as arrivals nor queued for a
    // worker (they answer while every worker is busy).
    let _permit = if matches!(route, Route::PoolStatus | Route::Arrivals | Route::Stats) {
        None
    } else {
        shared.arrivals.note();
        shared.gate.enter().await
    };
    // The work first, then `--stall`: an answer due inside a freeze waits for its end, as
    // over HTTP/1.1 (conn.rs).
    match route {
        Route::Sleep { ms, jitter } => shared.timer.sleep(routes::sleep_time(ms, jitter)).await,
        Route::Cpu { us } => tokio::task::block_in_place(|| routes::spin(us)),
        _ => {}
    }
    if let Some(stall) = &shared.stall {
        stall.wait_open().await;
    }
    let r = match route {
        Route::Root => small_alt(&mut respond, ROOT_BODY, is_head, &shared),
        Route::Bytes(n) => body(&mut respond, n, is_head).await,
        Route::Sleep { .. } | Route::Cpu { .. } => {
            small_alt(&mut respond, OK_BODY, is_head, &shared)
        }
        Route::Status(code) => small(&mut respond, code, b"", true),
        Route::PoolStatus => match shared.gate.status() {
            Some(s) => owned(&mut respond, routes::pool_status_json(&s), is_head),
            // No --workers: no pool to show.
            None => small(&mut respond, 404, b"", true),
        },
        Route::Arrivals => owned(&mut respond, shared.arrivals.json(), is_head),
        Route::Stats => owned(&mut respond, shared.stats_json(), is_head),
        // (The login application is answered by `app`.)
        Route::NotFound | Route::App(_) => small(&mut respond, 404, b"", true),
        Route::BadParam => small(&mut respond, 400, b"", true),
        Route::Fault(f) => fault(f, &mut respond, is_head).await,
    };
    shared.stats.answered(super::HTTP2);
    drop(r);
}

/// The login application (`/app/*`, as over HTTP/1.1): the request's cookies and form body
/// (up to `app::MAX_FORM`, the rest read and dropped), its answer with its `set-cookie`.
async fn app(
    page: super::app::Page,
    req: http::Request<h2::RecvStream>,
    mut respond: SendResponse<Bytes>,
    shared: Arc<Shared>,
) {
    shared.stats.received.fetch_add(1, Ordering::Relaxed);
    let mut r = super::app::Request {
        cookie: super::app::Request::cookie_of(req.headers()),
        body: Vec::new(),
    };
    let mut body = req.into_body();
    while let Some(Ok(chunk)) = body.data().await {
        let _ = body.flow_control().release_capacity(chunk.len());
        let room = (super::app::MAX_FORM as usize).saturating_sub(r.body.len());
        r.body.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
    let a = shared.app.answer(page, &r);
    let mut resp = Response::new(());
    *resp.status_mut() = StatusCode::from_u16(a.status).unwrap_or(StatusCode::OK);
    if let Some(c) = a.set_cookie.as_deref().and_then(|c| c.parse().ok()) {
        resp.headers_mut().insert(http::header::SET_COOKIE, c);
    }
    if let Ok(mut s) = respond.send_response(resp, false) {
        let _ = s.send_data(Bytes::from(a.body), true);
    }
    shared.stats.answered(super::HTTP2);
}

fn head(
    respond: &mut SendResponse<Bytes>,
    status: u16,
    end: bool,
) -> Result<SendStream<Bytes>, h2::Error> {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = Response::new(());
    *resp.status_mut() = status;
    respond.send_response(resp, end)
}

/// A 200 with a body made for this request (the pool's status).
fn owned(respond: &mut SendResponse<Bytes>, body: String, is_head: bool) -> Result<(), h2::Error> {
    let mut s = head(respond, 200, is_head)?;
    if !is_head {
        s.send_data(Bytes::from(body), true)?;
    }
    Ok(())
}

/// A 200 with a static body and, when HTTP/3 is served too, `Alt-Svc`.
fn small_alt(
    respond: &mut SendResponse<Bytes>,
    body: &'static [u8],
    is_head: bool,
    shared: &Shared,
) -> Result<(), h2::Error> {
    let mut resp = Response::new(());
    if let Some(v) = &shared.alt_svc.value {
        resp.headers_mut().insert(http::header::ALT_SVC, v.clone());
    }
    let mut s = respond.send_response(resp, is_head)?;
    if !is_head {
        s.send_data(Bytes::from_static(body), true)?;
    }
    Ok(())
}

fn small(
    respond: &mut SendResponse<Bytes>,
    status: u16,
    body: &'static [u8],
    is_head: bool,
) -> Result<(), h2::Error> {
    let end = is_head || body.is_empty();
    let mut s = head(respond, status, end)?;
    if !end {
        s.send_data(Bytes::from_static(body), true)?;
    }
    Ok(())
}

/// `n` bytes of body, sent as the client's window opens (never buffered whole).
async fn body(respond: &mut SendResponse<Bytes>, n: u64, is_head: bool) -> Result<(), h2::Error> {
    let mut s = head(respond, 200, is_head || n == 0)?;
    if is_head {
        return Ok(());
    }
    let mut left = n;
    while left > 0 {
        let want = left.min(FILL.len() as u64) as usize;
        s.reserve_capacity(want);
        let got = match std::future::poll_fn(|cx| s.poll_capacity(cx)).await {
            Some(Ok(c)) => c.min(want),
            Some(Err(e)) => return Err(e),
            None => return Ok(()),
        };
        if got == 0 {
            continue;
        }
        left -= got as u64;
        s.send_data(Bytes::from_static(&FILL[..got]), left == 0)?;
    }
    Ok(())
}

async fn fault(
    f: Fault,
    respond: &mut SendResponse<Bytes>,
    is_head: bool,
) -> Result<(), h2::Error> {
    match f {
        Fault::H2Goaway | Fault::CloseIdle => small(respond, 200, OK_BODY, is_head),
        Fault::Status503 => small(respond, 503, b"", true),
        // HTTP/3's faults have no HTTP/2 form: such a route does not exist here.
        Fault::QuicStall
        | Fault::QuicReset
        | Fault::H3Goaway
        | Fault::QuicStreams1
        | Fault::QuicClose => small(respond, 404, b"", true),
        Fault::HugeBody => body(respond, super::faults::HUGE_BODY, is_head).await,
        Fault::Hang => {
            // Until the client gives up on the stream (RST_STREAM) or the connection.
            let _ =
                tokio::time::timeout(HANG, std::future::poll_fn(|cx| respond.poll_reset(cx))).await;
            Ok(())
        }
        Fault::Drip => {
            let mut s = head(respond, 200, is_head)?;
            if !is_head {
                for (i, b) in OK_BODY.iter().enumerate() {
                    tokio::time::sleep(DRIP_INTERVAL).await;
                    s.send_data(
                        Bytes::copy_from_slice(std::slice::from_ref(b)),
                        i + 1 == OK_BODY.len(),
                    )?;
                }
            }
            Ok(())
        }
        // HTTP/1.1's broken framings have no HTTP/2 form; a reset is their nearest kin. The
        // raw-frame faults are server-wide only (see `raw_fault`).
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
        | Fault::HugeHeaders => {
            respond.send_reset(if f == Fault::H2Reset {
                Reason::INTERNAL_ERROR
            } else {
                Reason::PROTOCOL_ERROR
            });
            Ok(())
        }
    }
}

fn frame_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    out.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&stream.to_be_bytes());
}

/// The faults the `h2` crate cannot make, as raw frames: read the preface and the client's
/// frames up to its first HEADERS, answer it with the fault, then read until the client goes.
async fn raw_fault<S: AsyncRead + AsyncWrite + Unpin>(mut io: S, f: Fault) {
    const SETTINGS: u8 = 0x4;
    const HEADERS: u8 = 0x1;
    const CONTINUATION: u8 = 0x9;
    const END_HEADERS: u8 = 0x4;
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    let mut pos = PREFACE.len();
    let stream = loop {
        while buf.len() >= pos + 9 {
            let len = u32::from_be_bytes([0, buf[pos], buf[pos + 1], buf[pos + 2]]) as usize;
            if buf[pos + 3] == HEADERS {
                break;
            }
            pos += 9 + len;
        }
        if buf.len() >= pos + 9 && buf[pos + 3] == HEADERS {
            break u32::from_be_bytes([buf[pos + 5], buf[pos + 6], buf[pos + 7], buf[pos + 8]])
                & 0x7fff_ffff;
        }
        match io.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) if buf.len() < 1 << 20 => buf.extend_from_slice(&chunk[..n]),
            Ok(_) => return,
        }
    };
    let mut out = Vec::new();
    frame_head(&mut out, 0, SETTINGS, 0, 0);
    match f {
        Fault::SettingsFlood => {
            for _ in 0..5000 {
                frame_head(&mut out, 0, SETTINGS, 0, 0);
            }
        }
        _ => {
            // 20 frames of 16 KiB: more than any client keeps for one header block.
            let piece = [0x40u8; 16_384];
            for i in 0..20 {
                let kind = if i == 0 { HEADERS } else { CONTINUATION };
                let flags = if i == 19 { END_HEADERS } else { 0 };
                frame_head(&mut out, piece.len(), kind, flags, stream);
                out.extend_from_slice(&piece);
            }
        }
    }
    if io.write_all(&out).await.is_err() {
        return;
    }
    let _ = io.flush().await;
    while matches!(io.read(&mut chunk).await, Ok(n) if n > 0) {}
}
