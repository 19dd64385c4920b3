//! One client connection: read heads, skip bodies, answer, keep alive. Requests on a
//! connection are served in order; answers to pipelined requests are batched into one write.
//! Each connection owns two buffers for its whole life, so a request allocates nothing.
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use super::faults::{self, Fault};
use super::request::{self, ChunkedDecoder, Framing, Head, Parsed, Reject, MAX_HEAD};
use super::routes::{
    self, write_head_with, write_status_response, write_status_response_with, ConnHeader, Route,
    FILL, OK_BODY, ROOT_BODY,
};
use super::Shared;

const READ_BUF: usize = 4 * 1024;
/// Room for the largest accepted head plus the start of what follows it.
const READ_BUF_MAX: usize = 2 * MAX_HEAD;
const WRITE_BUF: usize = 4 * 1024;
/// Bodies up to this size go in the same write as their head (S1's 22 KiB page included).
const INLINE_BODY: u64 = 32 * 1024;
/// Queued answers are written once they reach this size, even mid-pipeline.
const WRITE_BATCH: usize = 64 * 1024;
/// After `Connection: close`, how long to wait for the client to close first. Reading until
/// then avoids a reset that could destroy the answer still in flight.
const LINGER: Duration = Duration::from_secs(1);

/// What to do with the connection after an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    KeepAlive,
    /// Write what is queued, send FIN, wait briefly for the client's FIN.
    Close,
    /// Close at once, nothing more written.
    Drop,
    /// Close with RST (SO_LINGER 0).
    Abort,
}

/// Bytes received and not yet parsed; `start..end` is live.
struct ReadBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl ReadBuf {
    fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.end);
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// Free space after the live bytes, compacting or growing (up to the cap) when full.
    fn spare(&mut self) -> &mut [u8] {
        if self.end == self.buf.len() {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            } else if self.buf.len() < READ_BUF_MAX {
                let len = (self.buf.len() * 2).min(READ_BUF_MAX);
                self.buf.resize(len, 0);
            }
        }
        &mut self.buf[self.end..]
    }
}

/// What a connection is served over: TCP, or TLS over it. The TCP socket underneath is what
/// faults act on (nodelay, RST). The h2 handler plugs in over the same streams after ALPN.
pub(crate) trait Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static {
    fn tcp(&self) -> &TcpStream;
    /// Cleartext: where an h2c preface may arrive.
    fn plain(&self) -> bool;
}

impl Stream for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
    fn plain(&self) -> bool {
        true
    }
}

impl Stream for tokio_rustls::server::TlsStream<TcpStream> {
    fn tcp(&self) -> &TcpStream {
        self.get_ref().0
    }
    fn plain(&self) -> bool {
        false
    }
}

pub(crate) struct Conn<S = TcpStream> {
    stream: S,
    rbuf: ReadBuf,
    /// Response bytes queued for the next write.
    pub(crate) wbuf: Vec<u8>,
    shared: Arc<Shared>,
}

/// Serves one accepted connection until it closes. Errors just end the connection: the
/// client went away, or a fault made it go.
pub(crate) async fn serve<S: Stream>(stream: S, shared: Arc<Shared>) {
    // Small answers must leave at once, not wait for Nagle.
    let _ = stream.tcp().set_nodelay(true);
    // h2c with prior knowledge on the plain port; over TLS, HTTP/2 is chosen by ALPN before
    // this handler is reached (server.rs).
    if stream.plain() && super::h2::has_preface(stream.tcp()).await {
        return super::h2::serve(stream, shared).await;
    }
    match shared.fault {
        Some(Fault::Reset) => {
            let _ = stream.tcp().set_zero_linger();
            return;
        }
        Some(Fault::Hang) => {
            let mut conn = Conn::new(stream, shared);
            conn.drain_until_eof().await;
            return;
        }
        _ => {}
    }
    let mut conn = Conn::new(stream, shared);
    let _ = conn.run().await;
}

impl<S: Stream> Conn<S> {
    fn new(stream: S, shared: Arc<Shared>) -> Self {
        Conn {
            stream,
            rbuf: ReadBuf {
                buf: vec![0; READ_BUF],
                start: 0,
                end: 0,
            },
            wbuf: Vec::with_capacity(WRITE_BUF),
            shared,
        }
    }

    async fn run(&mut self) -> io::Result<()> {
        loop {
            let head = match self.read_head().await? {
                Some(Ok(h)) => {
                    self.shared.stats.received.fetch_add(1, Ordering::Relaxed);
                    h
                }
                Some(Err(reject)) => {
                    let status = match reject {
                        Reject::BadRequest => 400,
                        Reject::TooLarge => 431,
                    };
                    write_status_response(&mut self.wbuf, status, ConnHeader::Close, false);
                    return self.finish(Next::Close).await;
                }
                None => return Ok(()),
            };
            // The login application reads its request's cookie and form; nothing else does.
            let mut app_req = match head.route {
                Route::App(_) => Some(super::app::Request::from_head(
                    &self.rbuf.data()[..head.len],
                )),
                _ => None,
            };
            self.rbuf.consume(head.len);
            if head.expect_continue && self.rbuf.is_empty() {
                self.flush().await?;
                self.write_raw(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
            }
            let framing = match (&mut app_req, head.body) {
                (Some(r), Framing::Length(n)) if n <= super::app::MAX_FORM => {
                    match self.read_body(n as usize).await? {
                        Some(b) => r.body = b,
                        None => return Ok(()),
                    }
                    Framing::None
                }
                (_, f) => f,
            };
            match self.skip_body(framing).await? {
                BodyEnd::Complete => {}
                BodyEnd::Eof => return Ok(()),
                BodyEnd::Malformed => {
                    write_status_response(&mut self.wbuf, 400, ConnHeader::Close, false);
                    return self.finish(Next::Close).await;
                }
            }
            let next = self.respond(&head, app_req.as_ref()).await?;
            if next != Next::KeepAlive {
                return self.finish(next).await;
            }
        }
    }

    /// The next request head: `None` at a clean end of stream, `Some(Err)` for a bad head.
    async fn read_head(&mut self) -> io::Result<Option<Result<Head, Reject>>> {
        loop {
            match request::parse(self.rbuf.data()) {
                Parsed::Complete(h) => return Ok(Some(Ok(h))),
                Parsed::Reject(r) => return Ok(Some(Err(r))),
                Parsed::Partial => {
                    // Never sit on queued answers while waiting for the client.
                    self.flush().await?;
                    if self.fill().await? == 0 {
                        return Ok(None);
                    }
                }
            }
        }
    }

    /// Reads more bytes into the read buffer; 0 at end of stream.
    async fn fill(&mut self) -> io::Result<usize> {
        let spare = self.rbuf.spare();
        if spare.is_empty() {
            // Full at the cap: only a head that the parser will reject can do that.
            return Ok(0);
        }
        let n = self.stream.read(spare).await?;
        self.rbuf.end += n;
        Ok(n)
    }

    /// Reads an `n`-byte body; None when the client closed first.
    async fn read_body(&mut self, n: usize) -> io::Result<Option<Vec<u8>>> {
        let mut body = Vec::with_capacity(n);
        while body.len() < n {
            let take = (n - body.len()).min(self.rbuf.data().len());
            body.extend_from_slice(&self.rbuf.data()[..take]);
            self.rbuf.consume(take);
            if body.len() < n && self.fill().await? == 0 {
                return Ok(None);
            }
        }
        Ok(Some(body))
    }

    async fn skip_body(&mut self, framing: Framing) -> io::Result<BodyEnd> {
        match framing {
            Framing::None => Ok(BodyEnd::Complete),
            Framing::Length(mut left) => loop {
                let take = left.min(self.rbuf.data().len() as u64);
                self.rbuf.consume(take as usize);
                left -= take;
                if left == 0 {
                    return Ok(BodyEnd::Complete);
                }
                if self.fill().await? == 0 {
                    return Ok(BodyEnd::Eof);
                }
            },
            Framing::Chunked => {
                let mut decoder = ChunkedDecoder::new();
                loop {
                    match decoder.feed(self.rbuf.data()) {
                        Ok(used) => self.rbuf.consume(used),
                        Err(_) => return Ok(BodyEnd::Malformed),
                    }
                    if decoder.is_done() {
                        return Ok(BodyEnd::Complete);
                    }
                    if self.fill().await? == 0 {
                        return Ok(BodyEnd::Eof);
                    }
                }
            }
        }
    }

    /// Answers one request (its body already skipped), holding a worker permit throughout.
    async fn respond(
        &mut self,
        head: &Head,
        app_req: Option<&super::app::Request>,
    ) -> io::Result<Next> {
        // A server-wide HTTP/3 fault leaves this side serving normally.
        let fault = self.shared.fault.filter(|f| !f.is_quic());
        let route = match fault {
            None | Some(Fault::CloseIdle) => head.route,
            Some(f) => Route::Fault(f),
        };
        // The status pages are not the load: neither counted as arrivals nor queued for a
        // worker (they answer while every worker is busy).
        let status_page = matches!(route, Route::PoolStatus | Route::Arrivals | Route::Stats);
        if !status_page {
            self.shared.arrivals.note();
        }
        let limited = self.shared.gate.is_limited() && !status_page;
        let slow = matches!(route, Route::Sleep { .. } | Route::Cpu { .. });
        if slow || limited {
            // Earlier pipelined answers must not wait behind this one.
            self.flush().await?;
        }
        // The permit borrows the shared state, so hold our own reference to it; only when
        // limited, to keep a refcount bump off the common path.
        let gate_owner = limited.then(|| Arc::clone(&self.shared));
        let _permit = match &gate_owner {
            Some(shared) => shared.gate.enter().await,
            None => None,
        };
        let conn = match (head.keep_alive, head.http10) {
            (false, _) => ConnHeader::Close,
            (true, true) => ConnHeader::KeepAlive,
            (true, false) => ConnHeader::None,
        };
        let mut next = if head.keep_alive {
            Next::KeepAlive
        } else {
            Next::Close
        };
        match route {
            Route::Root => self.small(200, ROOT_BODY, conn, head.is_head),
            Route::Bytes(n) => {
                let alt = &self.shared.alt_svc.line;
                write_head_with(&mut self.wbuf, 200, Some(n), conn, alt);
                if !head.is_head {
                    self.write_body(n).await?;
                }
            }
            Route::Sleep { ms, jitter } => {
                self.shared
                    .timer
                    .sleep(routes::sleep_time(ms, jitter))
                    .await;
                self.small(200, OK_BODY, conn, head.is_head);
            }
            Route::Cpu { us } => {
                // block_in_place burns this worker thread for real while tokio moves the
                // other tasks off it.
                tokio::task::block_in_place(|| routes::spin(us));
                self.small(200, OK_BODY, conn, head.is_head);
            }
            Route::Status(code) => {
                let alt = &self.shared.alt_svc.line;
                write_status_response_with(&mut self.wbuf, code, conn, head.is_head, alt);
            }
            Route::PoolStatus => match self.shared.gate.status() {
                Some(s) => {
                    let body = routes::pool_status_json(&s);
                    self.small(200, body.as_bytes(), conn, head.is_head);
                }
                // No --workers: no pool to show.
                None => write_status_response(&mut self.wbuf, 404, conn, head.is_head),
            },
            Route::Arrivals => {
                let body = self.shared.arrivals.json();
                self.small(200, body.as_bytes(), conn, head.is_head);
            }
            Route::Stats => {
                let body = self.shared.stats_json();
                self.small(200, body.as_bytes(), conn, head.is_head);
            }
            Route::NotFound => write_status_response(&mut self.wbuf, 404, conn, head.is_head),
            Route::BadParam => write_status_response(&mut self.wbuf, 400, conn, head.is_head),
            Route::Fault(f) => next = faults::answer(f, self, head).await?,
            Route::App(page) => {
                let empty = super::app::Request::default();
                let a = self.shared.app.answer(page, app_req.unwrap_or(&empty));
                super::app::write(&mut self.wbuf, &a, conn == ConnHeader::Close, head.is_head);
            }
        }
        if fault == Some(Fault::CloseIdle) && next == Next::KeepAlive {
            next = Next::Close;
        }
        // Counted before the final write, so a client holding the answer sees it counted.
        self.shared.stats.answered(super::HTTP1);
        // Batch answers while more pipelined requests are already here; with a worker
        // limit, write before the permit is released so it covers the whole request.
        if next != Next::KeepAlive
            || self.rbuf.is_empty()
            || limited
            || self.wbuf.len() >= WRITE_BATCH
        {
            self.flush().await?;
        }
        Ok(next)
    }

    fn small(&mut self, status: u16, body: &[u8], conn: ConnHeader, is_head: bool) {
        write_head_with(
            &mut self.wbuf,
            status,
            Some(body.len() as u64),
            conn,
            &self.shared.alt_svc.line,
        );
        if !is_head {
            self.wbuf.extend_from_slice(body);
        }
    }

    /// Queues or streams `n` body bytes from the shared static buffer.
    pub(crate) async fn write_body(&mut self, mut n: u64) -> io::Result<()> {
        if n <= INLINE_BODY {
            self.wbuf.extend_from_slice(&FILL[..n as usize]);
            return Ok(());
        }
        self.flush().await?;
        while n > 0 {
            let k = n.min(FILL.len() as u64) as usize;
            self.write_raw(&FILL[..k]).await?;
            n -= k as u64;
        }
        Ok(())
    }

    /// Writes the queued bytes, waiting out a stall window first.
    pub(crate) async fn flush(&mut self) -> io::Result<()> {
        if self.wbuf.is_empty() {
            return Ok(());
        }
        if let Some(stall) = &self.shared.stall {
            stall.wait_open().await;
        }
        let result = self.stream.write_all(&self.wbuf).await;
        self.wbuf.clear();
        result
    }

    /// Writes `data` directly (after queued bytes), waiting out a stall window first.
    pub(crate) async fn write_raw(&mut self, data: &[u8]) -> io::Result<()> {
        self.flush().await?;
        if let Some(stall) = &self.shared.stall {
            stall.wait_open().await;
        }
        self.stream.write_all(data).await
    }

    /// Reads and discards until the client closes (or errors): the `hang` fault.
    pub(crate) async fn drain_until_eof(&mut self) {
        let mut scratch = [0u8; 1024];
        while let Ok(n) = self.stream.read(&mut scratch).await {
            if n == 0 {
                break;
            }
        }
    }

    async fn finish(&mut self, next: Next) -> io::Result<()> {
        match next {
            Next::KeepAlive => Ok(()),
            Next::Close => {
                self.flush().await?;
                self.stream.shutdown().await?;
                // Wait (bounded) for the client's FIN; unread input at close time would
                // turn our FIN into a RST and could destroy the answer.
                let mut scratch = [0u8; 1024];
                let _ = tokio::time::timeout(LINGER, async {
                    while let Ok(n) = self.stream.read(&mut scratch).await {
                        if n == 0 {
                            break;
                        }
                    }
                })
                .await;
                Ok(())
            }
            Next::Drop => Ok(()),
            Next::Abort => self.stream.tcp().set_zero_linger(),
        }
    }
}

enum BodyEnd {
    Complete,
    Eof,
    Malformed,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_buf_compacts_and_grows() {
        let mut rb = ReadBuf {
            buf: vec![0; 8],
            start: 0,
            end: 0,
        };
        rb.spare()[..8].copy_from_slice(b"abcdefgh");
        rb.end = 8;
        rb.consume(6);
        assert_eq!(rb.data(), b"gh");
        // Full at the end: compacts to the front.
        assert_eq!(rb.spare().len(), 6);
        assert_eq!(rb.data(), b"gh");
        rb.end = 8;
        // Full from the front: grows.
        assert_eq!(rb.spare().len(), 8);
        rb.consume(100);
        assert!(rb.is_empty());
    }
}
