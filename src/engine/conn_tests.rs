//! The connection state machine driven by a scripted transport: every read, write and connect
//! result is chosen by the test, so partial writes, EAGAIN, FIN and resets land exactly where
//! the case needs them.
use super::*;
use crate::engine::protocol::Reuse;
use mio::{Registry, Token};
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;

#[derive(Debug)]
enum Rd {
    Data(Vec<u8>),
    Block,
    Eof,
    Err(i32),
    Intr,
}

#[derive(Debug)]
enum Wr {
    Take(usize),
    Block,
    Zero,
    Err(i32),
}

/// A transport that plays a script. Reading past the script panics (the state machine read
/// when it should have waited); writes past it accept everything.
#[derive(Debug, Default)]
struct Scripted {
    connect: VecDeque<Result<bool, ErrorKind>>,
    reads: VecDeque<Rd>,
    writes: VecDeque<Wr>,
    /// Every byte accepted by `write`.
    out: Vec<u8>,
    /// Output of the transport's own (a TLS record) waiting for `flush`.
    pending: usize,
    flush_result: Option<i32>,
    flushes: usize,
}

impl Transport for Scripted {
    type Setup = ();
    type Poller = crate::engine::io::epoll::Epoll;

    fn connect(_: &(), _: SocketAddr, _: Option<std::net::IpAddr>) -> io::Result<Scripted> {
        Ok(Scripted::default())
    }

    fn register(&mut self, _: &Registry, _: Token) -> io::Result<()> {
        Ok(())
    }

    fn deregister(&mut self, _: &Registry) -> io::Result<()> {
        Ok(())
    }

    fn establish(&mut self) -> Result<bool, ErrorKind> {
        self.connect.pop_front().expect("establish past the script")
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.reads.pop_front().expect("read past the script") {
            Rd::Data(mut d) => {
                let n = d.len().min(buf.len());
                buf[..n].copy_from_slice(&d[..n]);
                if n < d.len() {
                    self.reads.push_front(Rd::Data(d.split_off(n)));
                }
                Ok(n)
            }
            Rd::Block => Err(io::ErrorKind::WouldBlock.into()),
            Rd::Eof => Ok(0),
            Rd::Err(code) => Err(io::Error::from_raw_os_error(code)),
            Rd::Intr => Err(io::ErrorKind::Interrupted.into()),
        }
    }

    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self.writes.pop_front() {
            None => {
                self.out.extend_from_slice(buf);
                Ok(buf.len())
            }
            Some(Wr::Take(n)) => {
                let n = n.min(buf.len());
                self.out.extend_from_slice(&buf[..n]);
                Ok(n)
            }
            Some(Wr::Block) => Err(io::ErrorKind::WouldBlock.into()),
            Some(Wr::Zero) => Ok(0),
            Some(Wr::Err(code)) => Err(io::Error::from_raw_os_error(code)),
        }
    }

    fn wants_write(&self) -> bool {
        self.pending > 0
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flushes += 1;
        match self.flush_result {
            Some(code) => Err(io::Error::from_raw_os_error(code)),
            None => {
                self.pending = 0;
                Ok(())
            }
        }
    }
}

const KA: Reuse = Reuse {
    keep_alive: true,
    calls_per_connection: None,
};
const TIMEOUT: Duration = Duration::from_secs(10);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
const OK_5: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
const CHUNKED: &[u8] =
    b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n";

fn get() -> Prepared {
    Prepared {
        addr: 0,
        keep_alive: b"GET / HTTP/1.1\r\nHost: t\r\n\r\n".to_vec(),
        close: b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".to_vec(),
        head_only: false,
        h3_head: Vec::new(),
        h2_block: Vec::new(),
        body: Vec::new(),
        name: 0,
        capture: None,
    }
}

/// A test's connection with its clock, request and read buffer.
struct Rig {
    c: Conn<Scripted>,
    reqs: Vec<Prepared>,
    reuse: Reuse,
    buf: Vec<u8>,
    t0: Instant,
}

impl Rig {
    fn new(reuse: Reuse) -> Rig {
        let t0 = Instant::now();
        Rig {
            c: Conn::new(t0),
            reqs: vec![get()],
            reuse,
            buf: vec![0; 64 * 1024],
            t0,
        }
    }

    /// A socket attached for a new request, connect still pending.
    fn connecting(reuse: Reuse) -> Rig {
        let mut r = Rig::new(reuse);
        r.c.begin(0, r.t0, true, r.t0);
        r.c.attach(Scripted::default(), r.t0, TIMEOUT, CONNECT_TIMEOUT);
        r
    }

    /// Connected, the request written in full: waiting for the response.
    fn reading(reuse: Reuse) -> Rig {
        let mut r = Rig::connecting(reuse);
        r.io().connect.push_back(Ok(true));
        assert_eq!(r.event(false, true, false), Step::Connected);
        let len = r.reqs[0].keep_alive.len().min(r.reqs[0].close.len());
        assert!(matches!(r.send(), Step::Sent(n) if n >= len));
        r
    }

    fn io(&mut self) -> &mut Scripted {
        self.c.stream.as_mut().expect("a socket")
    }

    fn event(&mut self, readable: bool, writable: bool, read_closed: bool) -> Step {
        let (reqs, reuse, t0) = (&self.reqs, self.reuse, self.t0);
        self.c.on_event(
            readable,
            writable,
            read_closed,
            reqs,
            reuse,
            &mut self.buf,
            16,
            t0,
        )
    }

    fn send(&mut self) -> Step {
        self.c.send(&self.reqs[0], self.reuse, self.t0)
    }

    /// The next request on the same (kept-alive) socket.
    fn next_request(&mut self) -> Step {
        self.c.begin(0, self.t0, true, self.t0);
        self.send()
    }
}

fn done(status: u16, reusable: bool) -> Step {
    Step::Done { status, reusable }
}

#[test]
fn connect_pending_then_ready_then_request_written() {
    let mut r = Rig::connecting(KA);
    r.io().connect.extend([Ok(false), Ok(true)]);
    assert_eq!(r.event(false, true, false), Step::Wait);
    assert_eq!(r.c.phase, Phase::Connecting);
    assert_eq!(r.event(false, true, false), Step::Connected);
    let want = get().keep_alive;
    assert_eq!(r.send(), Step::Sent(want.len()));
    assert_eq!(r.io().out, want);
    assert_eq!(r.c.phase, Phase::Reading);
}

#[test]
fn connect_refused_or_reset_after_accept_fails_with_its_kind() {
    let mut r = Rig::connecting(KA);
    r.io().connect.push_back(Err(ErrorKind::ConnectRefused));
    assert_eq!(
        r.event(false, true, false),
        Step::Failed(ErrorKind::ConnectRefused)
    );
    // Accepted, then reset before the response: a reset, and no retry on a fresh socket.
    let mut r = Rig::reading(KA);
    r.io().reads.push_back(Rd::Err(libc::ECONNRESET));
    assert_eq!(r.event(true, false, false), Step::Failed(ErrorKind::Reset));
    assert!(!r.c.stale_race(ErrorKind::Reset, true));
    // Reset while the request is still being written.
    let mut r = Rig::connecting(KA);
    r.io().connect.push_back(Ok(true));
    r.event(false, true, false);
    r.io().writes.push_back(Wr::Err(libc::ECONNRESET));
    assert_eq!(r.send(), Step::Failed(ErrorKind::Reset));
}

#[test]
fn partial_writes_resume_where_they_stopped() {
    let mut r = Rig::connecting(KA);
    r.io().connect.push_back(Ok(true));
    r.event(false, true, false);
    r.io().writes.extend([Wr::Take(3), Wr::Take(5), Wr::Block]);
    assert_eq!(r.send(), Step::Wait);
    assert_eq!(r.c.phase, Phase::Writing);
    assert_eq!(r.io().out.len(), 8);
    r.io().writes.extend([Wr::Take(1), Wr::Block]);
    assert_eq!(r.event(false, true, false), Step::Wait);
    let want = get().keep_alive;
    assert_eq!(r.event(false, true, false), Step::Sent(want.len()));
    assert_eq!(r.io().out, want, "every byte once, in order");
    r.io().reads.push_back(Rd::Data(OK_5.to_vec()));
    assert_eq!(r.event(true, false, false), done(200, true));
}

#[test]
fn a_resumed_write_keeps_the_rendering_chosen_at_its_start() {
    // With 2 calls per connection the first request goes out kept-alive; its resumed write
    // must not switch to the `Connection: close` bytes when `calls` has moved on.
    let reuse = Reuse {
        keep_alive: true,
        calls_per_connection: Some(2),
    };
    let mut r = Rig::connecting(reuse);
    r.io().connect.push_back(Ok(true));
    r.event(false, true, false);
    r.io().writes.extend([Wr::Take(4), Wr::Block]);
    assert_eq!(r.send(), Step::Wait);
    assert!(matches!(r.event(false, true, false), Step::Sent(_)));
    assert_eq!(r.io().out, get().keep_alive);
}

#[test]
fn a_write_of_zero_bytes_is_a_closed_connection() {
    let mut r = Rig::connecting(KA);
    r.io().connect.push_back(Ok(true));
    r.event(false, true, false);
    r.io().writes.push_back(Wr::Zero);
    assert_eq!(r.send(), Step::Failed(ErrorKind::Closed));
}

#[test]
fn eagain_and_eintr_on_read_wait_or_retry() {
    let mut r = Rig::reading(KA);
    r.io().reads.push_back(Rd::Block);
    assert_eq!(r.event(true, false, false), Step::Wait);
    r.io().reads.extend([Rd::Intr, Rd::Data(OK_5.to_vec())]);
    assert_eq!(r.event(true, false, false), done(200, true));
    assert_eq!(r.c.bytes, OK_5.len() as u64);
}

#[test]
fn a_response_split_at_every_byte_completes_once() {
    for resp in [OK_5, CHUNKED] {
        let status = if resp == OK_5 { 200 } else { 201 };
        for k in 1..resp.len() {
            let mut r = Rig::reading(KA);
            r.io().reads.push_back(Rd::Data(resp[..k].to_vec()));
            assert_eq!(r.event(true, false, false), Step::Wait, "split at {k}");
            r.io().reads.push_back(Rd::Data(resp[k..].to_vec()));
            assert_eq!(
                r.event(true, false, false),
                done(status, true),
                "split at {k}"
            );
            assert_eq!(r.c.bytes, resp.len() as u64);
        }
    }
}

#[test]
fn fin_with_the_last_bytes_completes_and_retires_the_socket() {
    // The same answer without FIN: the socket stays in the pool (the control case).
    let mut r = Rig::reading(KA);
    r.io().reads.push_back(Rd::Data(OK_5.to_vec()));
    assert_eq!(r.event(true, false, false), done(200, true));
    // With FIN in the same event: the answer counts, the socket is not reused.
    let mut r = Rig::reading(KA);
    r.io().reads.push_back(Rd::Data(OK_5.to_vec()));
    assert_eq!(r.event(true, false, true), done(200, false));
    // FIN first, the answer's tail later (reported once): still not reused.
    let mut r = Rig::reading(KA);
    r.io().reads.push_back(Rd::Data(OK_5[..10].to_vec()));
    r.io().reads.push_back(Rd::Block);
    assert_eq!(r.event(true, false, true), Step::Wait);
    r.io().reads.push_back(Rd::Data(OK_5[10..].to_vec()));
    assert_eq!(r.event(true, false, false), done(200, false));
}

#[test]
fn an_until_close_body_ends_with_the_fin_that_came_with_it() {
    let resp = b"HTTP/1.1 200 OK\r\n\r\nbody until close";
    // FIN reported with the data: read on past the short read to the EOF, in this event.
    let mut r = Rig::reading(KA);
    r.io().reads.extend([Rd::Data(resp.to_vec()), Rd::Eof]);
    assert_eq!(r.event(true, false, true), done(200, false));
    assert_eq!(r.c.bytes, resp.len() as u64);
    // Without FIN the short read waits; the EOF comes with a later event.
    let mut r = Rig::reading(KA);
    r.io().reads.push_back(Rd::Data(resp.to_vec()));
    assert_eq!(r.event(true, false, false), Step::Wait);
    r.io().reads.push_back(Rd::Eof);
    assert_eq!(r.event(true, false, true), done(200, false));
}

#[test]
fn eof_inside_a_framed_body_is_a_closed_error() {
    let mut r = Rig::reading(KA);
    r.io().reads.push_back(Rd::Data(OK_5.to_vec()));
    assert_eq!(r.event(true, false, false), done(200, true));
    assert!(matches!(r.next_request(), Step::Sent(_)));
    r.io()
        .reads
        .extend([Rd::Data(OK_5[..OK_5.len() - 1].to_vec()), Rd::Eof]);
    assert_eq!(r.event(true, false, true), Step::Failed(ErrorKind::Closed));
    // Some bytes had come: not the keep-alive race, though the socket had served before.
    assert!(!r.c.stale_race(ErrorKind::Closed, true));
}

#[test]
fn keep_alive_race_is_retried_once_for_idempotent_requests() {
    let mut r = Rig::reading(KA);
    r.io().reads.push_back(Rd::Data(OK_5.to_vec()));
    assert_eq!(r.event(true, false, false), done(200, true));
    // The second request on the socket meets EOF before any byte: the race.
    assert!(matches!(r.next_request(), Step::Sent(_)));
    r.io().reads.push_back(Rd::Eof);
    assert_eq!(r.event(true, false, true), Step::Failed(ErrorKind::Closed));
    assert!(r.c.stale_race(ErrorKind::Closed, true));
    assert!(r.c.stale_race(ErrorKind::Reset, true));
    assert!(
        !r.c.stale_race(ErrorKind::Closed, false),
        "POST is not resent"
    );
    assert!(!r.c.stale_race(ErrorKind::Timeout, true), "only EOF or RST");
    // The retry goes out on a fresh socket; if that one fails too, no second retry.
    r.c.restart();
    assert!(!r.c.stale_race(ErrorKind::Closed, true), "retried already");
    r.c.detach();
    r.c.attach(Scripted::default(), r.t0, TIMEOUT, CONNECT_TIMEOUT);
    r.io().connect.push_back(Ok(true));
    assert_eq!(r.event(false, true, false), Step::Connected);
    assert!(matches!(r.send(), Step::Sent(_)));
    r.io().reads.push_back(Rd::Eof);
    assert_eq!(r.event(true, false, true), Step::Failed(ErrorKind::Closed));
    assert!(!r.c.stale_race(ErrorKind::Closed, true));
}

#[test]
fn the_first_request_on_a_socket_is_never_a_race() {
    let mut r = Rig::reading(KA);
    r.io().reads.push_back(Rd::Eof);
    assert_eq!(r.event(true, false, true), Step::Failed(ErrorKind::Closed));
    assert!(!r.c.stale_race(ErrorKind::Closed, true));
}

#[test]
fn reuse_follows_the_response_and_the_run_options() {
    // The server says close.
    let mut r = Rig::reading(KA);
    let close = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n";
    r.io().reads.push_back(Rd::Data(close.to_vec()));
    assert_eq!(r.event(true, false, false), done(200, false));
    // Bytes nobody asked for after the answer (a server answering twice): a protocol error,
    // not an answer, and the connection is not reused; the extra bytes are not counted.
    for extra in [&b"HTTP/1.1"[..], OK_5] {
        let mut r = Rig::reading(KA);
        r.io().reads.push_back(Rd::Data([OK_5, extra].concat()));
        assert_eq!(
            r.event(true, false, false),
            Step::Failed(ErrorKind::Protocol)
        );
        assert_eq!(r.c.bytes, OK_5.len() as u64);
    }
    // No keep-alive: `Connection: close` goes out and the socket is not kept.
    let no_ka = Reuse {
        keep_alive: false,
        calls_per_connection: None,
    };
    let mut r = Rig::reading(no_ka);
    assert_eq!(r.io().out, get().close);
    r.io().reads.push_back(Rd::Data(OK_5.to_vec()));
    assert_eq!(r.event(true, false, false), done(200, false));
}

#[test]
fn calls_per_connection_closes_on_the_last_call() {
    let reuse = Reuse {
        keep_alive: true,
        calls_per_connection: Some(2),
    };
    let mut r = Rig::reading(reuse);
    assert_eq!(r.io().out, get().keep_alive);
    r.io().reads.push_back(Rd::Data(OK_5.to_vec()));
    assert_eq!(r.event(true, false, false), done(200, true));
    r.io().out.clear();
    assert!(matches!(r.next_request(), Step::Sent(_)));
    assert_eq!(r.io().out, get().close, "the second call says close");
    r.io().reads.push_back(Rd::Data(OK_5.to_vec()));
    assert_eq!(r.event(true, false, false), done(200, false));
}

#[test]
fn head_responses_have_no_body_and_garbage_is_a_protocol_error() {
    let mut r = Rig::connecting(KA);
    r.reqs[0].head_only = true;
    r.io().connect.push_back(Ok(true));
    r.event(false, true, false);
    r.send();
    let head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n";
    r.io().reads.push_back(Rd::Data(head.to_vec()));
    assert_eq!(r.event(true, false, false), done(200, true));

    let mut r = Rig::reading(KA);
    r.io()
        .reads
        .push_back(Rd::Data(b"SMTP ready\r\n\r\n".to_vec()));
    assert_eq!(
        r.event(true, false, false),
        Step::Failed(ErrorKind::Protocol)
    );
}

#[test]
fn a_fast_long_body_yields_after_the_read_budget() {
    let mut r = Rig::reading(KA);
    r.buf = vec![0; 8];
    let resp = [
        &b"HTTP/1.1 200 OK\r\nContent-Length: 200\r\n\r\n"[..],
        &[b'x'; 200],
    ]
    .concat();
    r.io().reads.push_back(Rd::Data(resp.clone()));
    // 16 full reads of 8 bytes, data still there: come back next turn.
    assert_eq!(r.event(true, false, false), Step::More);
    assert_eq!(r.c.bytes, 16 * 8);
    let mut steps = 0;
    let last = loop {
        steps += 1;
        match r.c.receive(&mut r.buf, 16, KA) {
            Step::More => continue,
            s => break s,
        }
    };
    assert_eq!(last, done(200, true));
    assert_eq!(steps, resp.len().div_ceil(8 * 16) - 1);
    assert_eq!(r.c.bytes, resp.len() as u64);
}

#[test]
fn an_idle_socket_that_turns_readable_is_dropped() {
    for phase in [Phase::Idle, Phase::Thinking] {
        let mut r = Rig::reading(KA);
        r.c.phase = phase;
        assert_eq!(
            r.event(false, true, false),
            Step::Wait,
            "{phase:?}: writable only"
        );
        // Readable with nothing to read: spurious, the connection stays.
        r.io().reads.push_back(Rd::Block);
        assert_eq!(r.event(true, false, false), Step::Wait, "{phase:?}");
        // The server's idle close: FIN, or a reset.
        r.io().reads.push_back(Rd::Eof);
        assert_eq!(r.event(true, false, false), Step::Dropped, "{phase:?}");
        r.io().reads.push_back(Rd::Eof);
        assert_eq!(r.event(false, false, true), Step::Dropped, "{phase:?}: FIN");
        r.io().reads.push_back(Rd::Err(libc::ECONNRESET));
        assert_eq!(r.event(true, false, false), Step::Dropped, "{phase:?}: RST");
    }
}

/// A server that answers every request twice, the second answer arriving once the first was
/// taken: with no request outstanding it is a protocol error, and the connection is dropped
/// before it can carry the next request (whose "answer" it would otherwise be).
#[test]
fn an_answer_nobody_asked_for_is_a_protocol_error() {
    for phase in [Phase::Idle, Phase::Thinking] {
        let mut r = Rig::reading(KA);
        r.io().reads.push_back(Rd::Data(OK_5.to_vec()));
        assert_eq!(r.event(true, false, false), done(200, true));
        r.c.phase = phase;
        r.io().reads.push_back(Rd::Data(OK_5.to_vec()));
        assert_eq!(r.event(true, false, false), Step::Stray, "{phase:?}");
        // With its FIN in the same event: the bytes still come first.
        let mut r = Rig::reading(KA);
        r.c.phase = phase;
        r.io().reads.push_back(Rd::Data(OK_5.to_vec()));
        assert_eq!(r.event(true, false, true), Step::Stray, "{phase:?} + FIN");
    }
}

#[test]
fn deadlines_name_the_phase_that_overran() {
    let mut r = Rig::connecting(KA);
    // The connect timeout is shorter than the request's: it sets the deadline.
    assert_eq!(r.c.deadline, r.t0 + CONNECT_TIMEOUT);
    assert_eq!(r.c.expired(r.t0 + CONNECT_TIMEOUT / 2), None);
    let late = r.t0 + CONNECT_TIMEOUT;
    assert_eq!(r.c.expired(late), Some(ErrorKind::ConnectTimeout));
    r.c.phase = Phase::Reading;
    assert_eq!(r.c.expired(late), Some(ErrorKind::Timeout));
    for idle in [Phase::Idle, Phase::Thinking, Phase::Free] {
        r.c.phase = idle;
        assert_eq!(r.c.expired(late), None, "{idle:?} has nothing in flight");
    }
}

#[test]
fn transport_output_is_flushed_on_writable_while_reading() {
    let mut r = Rig::reading(KA);
    assert_eq!(r.event(false, true, false), Step::Wait);
    assert_eq!(r.io().flushes, 0, "nothing pending, nothing flushed");
    r.io().pending = 37;
    assert_eq!(r.event(false, true, false), Step::Wait);
    assert_eq!((r.io().flushes, r.io().pending), (1, 0));
    r.io().pending = 37;
    r.io().flush_result = Some(libc::EPIPE);
    assert_eq!(r.event(false, true, false), Step::Failed(ErrorKind::Reset));
}

/// A slot's memory, as the engine holds one per connection (and one per closed-loop user
/// from the start): at a million connections each byte of it is a megabyte. Printed for the
/// record (`cargo test --lib slot_sizes -- --nocapture`), bounded so that a field that grows
/// it shows. TLS's rustls state is boxed, allocated per connection, not per slot.
#[test]
fn slot_sizes_stay_small() {
    use crate::engine::tls::Tls;
    use crate::engine::transport::Tcp;
    let tcp = std::mem::size_of::<Conn<Tcp>>();
    let tls = std::mem::size_of::<Conn<Tls>>();
    let client = std::mem::size_of::<rustls::ClientConnection>();
    println!("Conn<Tcp> {tcp} B, Conn<Tls> {tls} B (+ rustls ClientConnection {client} B per connection)");
    assert!(tcp <= 320, "Conn<Tcp> is {tcp} bytes");
    assert!(tls <= 384, "Conn<Tls> is {tls} bytes");
}
