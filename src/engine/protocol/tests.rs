//! The protocol seam driven through a worker over a scripted transport: the worker starts
//! requests and hands readiness to its `Wire` as its loop does; the test plays the server
//! (bytes queued for reads, a FIN) and reads what each connection was sent. What is checked is
//! what the worker recorded: the same mechanism for both protocols.
use super::http1::H1;
use super::http2::H2;
use super::*;
use crate::engine::h2::frame;
use crate::engine::h2::hpack::{encode_request, RequestParts};
use crate::engine::worker::event_fds;
use crate::engine::{Control, EngineConfig, Load, Prepared};
use crate::metrics::ErrorKind;
use mio::{Registry, Token};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

/// One connection's script: what the server sends (one chunk per read, as a short read
/// drains a socket), whether it closed, and everything the client wrote.
#[derive(Debug, Default)]
struct Pipe {
    reads: VecDeque<Vec<u8>>,
    eof: bool,
    out: Vec<u8>,
    token: Option<Token>,
}

/// Every connection the worker opened, in order.
type Pipes = Rc<RefCell<Vec<Rc<RefCell<Pipe>>>>>;

struct Fake(Rc<RefCell<Pipe>>);

impl Transport for Fake {
    type Setup = Pipes;
    type Poller = crate::engine::io::epoll::Epoll;

    fn connect(pipes: &Pipes, _: SocketAddr, _: Option<std::net::IpAddr>) -> io::Result<Fake> {
        let p = Rc::new(RefCell::new(Pipe::default()));
        pipes.borrow_mut().push(Rc::clone(&p));
        Ok(Fake(p))
    }

    fn register(&mut self, _: &Registry, token: Token) -> io::Result<()> {
        self.0.borrow_mut().token = Some(token);
        Ok(())
    }

    fn deregister(&mut self, _: &Registry) -> io::Result<()> {
        Ok(())
    }

    fn establish(&mut self) -> Result<bool, ErrorKind> {
        Ok(true)
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut p = self.0.borrow_mut();
        match p.reads.pop_front() {
            Some(mut d) => {
                let n = d.len().min(buf.len());
                buf[..n].copy_from_slice(&d[..n]);
                if n < d.len() {
                    p.reads.push_front(d.split_off(n));
                }
                Ok(n)
            }
            None if p.eof => Ok(0),
            None => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().out.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn wants_write(&self) -> bool {
        false
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

const GET: &[u8] = b"GET / HTTP/1.1\r\nHost: t\r\n\r\n";

fn get() -> Prepared {
    Prepared {
        keep_alive: GET.to_vec(),
        close: b"GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n".to_vec(),
        h2_block: encode_request(&RequestParts {
            method: "GET",
            scheme: "http",
            authority: "t",
            path: "/",
            headers: &[],
            body_len: None,
        }),
        ..Prepared::default()
    }
}

/// `users` closed-loop users with no think time, `requests` counted requests in all.
fn config(protocol: Protocol, users: usize, requests: u64) -> EngineConfig {
    EngineConfig {
        addrs: vec!["127.0.0.1:9".parse().unwrap()],
        requests: Arc::new(vec![get()]),
        load: Load::Closed {
            users,
            think: (Duration::ZERO, Duration::ZERO),
        },
        max_requests: Some(requests),
        protocol,
        ..EngineConfig::default()
    }
}

struct Rig<'a, W: Wire<Fake>> {
    w: Worker<'a, Fake, W>,
    pipes: Pipes,
}

impl<'a, W: Wire<Fake>> Rig<'a, W> {
    fn new(cfg: &'a EngineConfig) -> Rig<'a, W> {
        let pipes = Pipes::default();
        // Well in the past: an open loop's schedule has arrivals due at once.
        let origin = Instant::now() - Duration::from_millis(100);
        let ctl = Control::new(1);
        let w = Worker::new(
            cfg,
            0,
            1,
            origin,
            &ctl,
            event_fds(crate::engine::Backend::Epoll).unwrap(),
            pipes.clone(),
        )
        .unwrap();
        Rig { w, pipes }
    }

    fn pipe(&self, i: usize) -> Rc<RefCell<Pipe>> {
        Rc::clone(&self.pipes.borrow()[i])
    }

    /// The server sends `bytes` on connection `i` (one read's worth).
    fn server(&self, i: usize, bytes: &[u8]) {
        self.pipe(i).borrow_mut().reads.push_back(bytes.to_vec());
    }

    /// Readiness on connection `i`, handed to the protocol as the loop hands it.
    fn ready(&mut self, i: usize) {
        let (token, eof) = {
            let p = self.pipe(i);
            let p = p.borrow();
            (p.token.expect("a registered connection"), p.eof)
        };
        let (idx, gen) = (token.0 & 0xFFFF_FFFF, (token.0 >> 32) as u32);
        W::event(&mut self.w, idx, gen, true, true, eof);
        W::flush(&mut self.w);
    }

    fn out(&self, i: usize) -> Vec<u8> {
        self.pipe(i).borrow().out.clone()
    }
}

/// HTTP/1.1 through its `Wire`: a response split across three reads completes; the next
/// request reuses the kept-alive connection; a close in the middle of a body fails that
/// request (not retried: bytes of its answer came) and the user's next one connects afresh.
#[test]
fn http1_split_answers_keep_alive_reuse_and_a_close_mid_body() {
    let cfg = config(Protocol::Http1, 1, 3);
    let mut r = Rig::<H1>::new(&cfg);
    let now = Instant::now();
    r.w.user_send(0, now, now);
    assert_eq!(r.pipes.borrow().len(), 1);
    r.ready(0); // connected: the request goes out
    assert_eq!(r.out(0), GET);
    assert_eq!((r.w.rec.sent, r.w.rec.protocols), (1, [1, 0, 0]));
    assert_eq!(r.w.rec.connections_opened, 1);

    for part in [&b"HTTP/1.1 200 OK\r\nCont"[..], b"ent-Length: 5\r\n\r\nhel"] {
        r.server(0, part);
        r.ready(0);
        assert_eq!(r.w.rec.responses, 0, "answered before its last byte");
    }
    r.server(0, b"lo");
    r.ready(0);
    assert_eq!(r.w.rec.responses, 1);
    // The user's next request went out at once, on the same connection.
    assert_eq!(r.pipes.borrow().len(), 1);
    assert_eq!(r.out(0), [GET, GET].concat());
    assert_eq!(r.w.rec.sent, 2);

    r.server(0, b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
    r.pipe(0).borrow_mut().eof = true;
    r.ready(0);
    assert_eq!(r.w.rec.errors[ErrorKind::Closed.index()], 1);
    assert_eq!((r.w.rec.responses, r.w.rec.retries), (1, 0));
    // The third request: a fresh connection.
    assert_eq!(r.pipes.borrow().len(), 2);
    r.ready(1);
    assert_eq!(r.out(1), GET);
    r.server(1, b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
    r.ready(1);
    assert_eq!(r.w.rec.responses, 2);
    assert_eq!(r.w.rec.statuses[404], 1);
    assert_eq!((r.w.rec.sent, r.w.rec.protocols), (3, [3, 0, 0]));
    assert_eq!(r.w.rec.connections_opened, 2);
}

/// An HTTP/2 response's HEADERS block for `status`.
fn h2_headers(out: &mut Vec<u8>, stream: u32, status: &str, end: bool) {
    let mut enc = httlib_hpack::Encoder::default();
    let block =
        crate::engine::h2::hpack::tests::encode_with(&mut enc, &[(b":status", status.as_bytes())]);
    frame::put_headers(out, stream, &block, end, 16_384);
}

/// The stream ids of the HEADERS frames in `out` (after the preface, if any).
fn h2_streams_opened(out: &[u8]) -> Vec<u32> {
    let mut i = if out.starts_with(frame::PREFACE) {
        frame::PREFACE.len()
    } else {
        0
    };
    let mut got = Vec::new();
    while i + frame::HEAD_LEN <= out.len() {
        let len = u32::from_be_bytes([0, out[i], out[i + 1], out[i + 2]]) as usize;
        let stream = u32::from_be_bytes([out[i + 5], out[i + 6], out[i + 7], out[i + 8]]);
        if out[i + 3] == frame::HEADERS {
            got.push(stream);
        }
        i += frame::HEAD_LEN + len;
    }
    got
}

/// HTTP/2 through its `Wire`: two users share one connection (SETTINGS, then both streams'
/// HEADERS); their answers come interleaved and complete in the server's order; the next
/// requests ride the same connection; a GOAWAY below a stream sends that request again, on a
/// new connection, counted as a retry.
#[test]
fn http2_interleaved_streams_and_a_goaway() {
    let cfg = config(Protocol::Http2(Http2 { streams: 8 }), 2, 5);
    let mut r = Rig::<H2<Fake>>::new(&cfg);
    let now = Instant::now();
    r.w.user_send(0, now, now);
    r.w.user_send(1, now, now);
    assert_eq!(r.pipes.borrow().len(), 1, "the users share a connection");
    r.ready(0);
    assert!(r.out(0).starts_with(frame::PREFACE));
    assert_eq!(h2_streams_opened(&r.out(0)), [1, 3]);
    assert_eq!((r.w.rec.sent, r.w.rec.protocols), (2, [0, 2, 0]));

    let mut s = Vec::new();
    frame::put_settings(&mut s, &[]);
    h2_headers(&mut s, 3, "201", false);
    h2_headers(&mut s, 1, "200", false);
    frame::put_data(&mut s, 3, b"three", true);
    r.server(0, &s);
    r.ready(0);
    // Stream 3 ended first: its user's answer is in, stream 1's is not.
    assert_eq!((r.w.rec.responses, r.w.rec.statuses[201]), (1, 1));
    let mut s = Vec::new();
    frame::put_data(&mut s, 1, b"one", true);
    r.server(0, &s);
    r.ready(0);
    assert_eq!((r.w.rec.responses, r.w.rec.statuses[200]), (2, 1));
    // Both users went on, on the same connection: streams 5 and 7.
    assert_eq!(r.pipes.borrow().len(), 1);
    assert_eq!(h2_streams_opened(&r.out(0)), [1, 3, 5, 7]);
    assert_eq!(r.w.rec.sent, 4);

    // The server leaves: stream 5 is served, 7 was never processed.
    let mut s = Vec::new();
    frame::put_goaway(&mut s, 5, frame::NO_ERROR);
    h2_headers(&mut s, 5, "200", true);
    r.server(0, &s);
    r.ready(0);
    assert_eq!(r.w.rec.responses, 3);
    assert_eq!(r.w.rec.retries, 1);
    // Stream 7's request and the fifth request went to a new connection.
    assert_eq!(r.pipes.borrow().len(), 2);
    r.ready(1);
    assert_eq!(h2_streams_opened(&r.out(1)), [1, 3]);
    let mut s = Vec::new();
    frame::put_settings(&mut s, &[]);
    h2_headers(&mut s, 1, "200", true);
    h2_headers(&mut s, 3, "200", true);
    r.server(1, &s);
    r.ready(1);
    assert_eq!(r.w.rec.responses, 5);
    // Sent counts each request once, its retry aside.
    assert_eq!((r.w.rec.sent, r.w.rec.protocols), (5, [0, 5, 0]));
    assert_eq!(r.w.rec.error_count(), 0);
}

/// Each protocol counts under its own label, and the `Wire`s agree with the value.
#[test]
fn each_protocol_counts_under_its_label() {
    let h2 = Protocol::Http2(Http2 { streams: 8 });
    assert_eq!(
        crate::metrics::recorder::PROTOCOLS[Protocol::Http1.index()],
        "1.1"
    );
    assert_eq!(crate::metrics::recorder::PROTOCOLS[h2.index()], "2");
    assert_eq!(<H1 as Wire<Fake>>::INDEX, Protocol::Http1.index());
    assert_eq!(<H2<Fake> as Wire<Fake>>::INDEX, h2.index());
    assert_eq!(h2.connections_for(17), 3);
    assert_eq!(Protocol::Http1.connections_for(17), 17);
}

/// Each protocol prepares the forms its `Wire` writes, and only those: HTTP/1.1 the
/// kept-alive bytes, the closing ones when a connection's last call sends them; HTTP/2 the
/// header block and the body beside the bytes that say the method may be retried.
#[test]
fn each_protocol_prepares_what_it_sends() {
    let spec = crate::plan::RequestSpec {
        method: "POST".into(),
        url: crate::url::Url::parse("http://t:8080/p?q=1").unwrap(),
        headers: vec![("x-a".into(), "b".into())],
        body: Some(b"data".to_vec()),
    };
    let kept = Reuse {
        keep_alive: true,
        calls_per_connection: None,
    };
    let p = Protocol::Http1.prepare(&spec, kept, 2, 7);
    assert_eq!((p.addr, p.name, p.head_only), (2, 7, false));
    assert!(p.keep_alive.starts_with(b"POST /p?q=1 HTTP/1.1\r\n"));
    assert!(p.keep_alive.ends_with(b"\r\n\r\ndata"));
    assert!(p.close.is_empty() && p.h2_block.is_empty() && p.body.is_empty());
    let every_10th = Reuse {
        calls_per_connection: Some(10),
        ..kept
    };
    let p = Protocol::Http1.prepare(&spec, every_10th, 0, 0);
    assert!(!p.keep_alive.is_empty());
    assert!(p.close.windows(17).any(|w| w == b"Connection: close"));
    let never = Reuse {
        keep_alive: false,
        calls_per_connection: None,
    };
    let p = Protocol::Http1.prepare(&spec, never, 0, 0);
    assert!(p.keep_alive.is_empty() && !p.close.is_empty());

    let p = Protocol::Http2(Http2 { streams: 4 }).prepare(&spec, kept, 0, 0);
    assert!(p.close.is_empty());
    assert_eq!(p.body, b"data");
    assert!(!p.h2_block.is_empty());
    assert!(!p.idempotent(), "POST may not be sent twice");
    let head = crate::plan::RequestSpec {
        method: "HEAD".into(),
        body: None,
        ..spec
    };
    let p = Protocol::Http2(Http2 { streams: 4 }).prepare(&head, kept, 0, 0);
    assert!(p.head_only && p.idempotent() && p.body.is_empty());
}

/// Open loop at 1000/s, due arrivals held back by one allowed connection, under both
/// protocols: the seam says when an arrival may go (HTTP/1.1: the connection is free again;
/// HTTP/2: a stream of it is), the rest wait as pool waits, and answers free the way.
#[test]
fn the_open_loop_waits_for_room_on_either_protocol() {
    fn open(protocol: Protocol) -> EngineConfig {
        EngineConfig {
            load: Load::Open {
                rate: 1000.0,
                arrival: crate::engine::Arrival::Constant,
                max_connections: 1,
            },
            max_requests: Some(1000),
            ..config(protocol, 1, 1000)
        }
    }
    // A hundred arrivals and more are due: far more than one connection takes.
    let cfg = open(Protocol::Http1);
    let mut r = Rig::<H1>::new(&cfg);
    let now = Instant::now() + Duration::from_millis(50);
    r.w.dispatch(now);
    assert_eq!(r.pipes.borrow().len(), 1);
    assert_eq!(r.w.rec.requests, 1);
    assert_eq!(r.w.rec.pool_waits, 1, "the second arrival waits");
    r.ready(0);
    r.server(0, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    r.ready(0);
    // The answer freed the connection: the next arrival went out on it at once.
    assert_eq!((r.w.rec.responses, r.w.rec.requests), (1, 2));
    assert_eq!(r.out(0), [GET, GET].concat());
    assert_eq!(r.pipes.borrow().len(), 1);

    let cfg = open(Protocol::Http2(Http2 { streams: 2 }));
    let mut r = Rig::<H2<Fake>>::new(&cfg);
    r.w.dispatch(now);
    // Two streams on the one connection, the third arrival waits.
    assert_eq!(r.pipes.borrow().len(), 1);
    assert_eq!((r.w.rec.requests, r.w.rec.pool_waits), (2, 1));
    r.ready(0);
    assert_eq!(h2_streams_opened(&r.out(0)), [1, 3]);
    let mut s = Vec::new();
    frame::put_settings(&mut s, &[]);
    h2_headers(&mut s, 1, "200", true);
    r.server(0, &s);
    r.ready(0);
    assert_eq!((r.w.rec.responses, r.w.rec.requests), (1, 3));
    assert_eq!(h2_streams_opened(&r.out(0)), [1, 3, 5]);
    assert_eq!(r.pipes.borrow().len(), 1);
}

/// HTTP/1.1's retry through its `Wire`: the server closed the kept-alive connection as the
/// second request went out (EOF before a byte of answer): the request goes once more on a
/// fresh connection, counted as a retry and not as an error, and its answer counts.
#[test]
fn http1_the_keep_alive_race_is_retried_on_a_fresh_connection() {
    let cfg = config(Protocol::Http1, 1, 2);
    let mut r = Rig::<H1>::new(&cfg);
    let now = Instant::now();
    r.w.user_send(0, now, now);
    r.ready(0);
    r.server(0, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    r.ready(0);
    assert_eq!((r.w.rec.responses, r.w.rec.sent), (1, 2));
    r.pipe(0).borrow_mut().eof = true;
    r.ready(0);
    assert_eq!(r.w.rec.retries, 1);
    assert_eq!(r.w.rec.error_count(), 0);
    assert_eq!(r.pipes.borrow().len(), 2, "retried on a new connection");
    r.ready(1);
    assert_eq!(r.out(1), GET);
    r.server(1, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
    r.ready(1);
    assert_eq!(
        (r.w.rec.responses, r.w.rec.sent, r.w.rec.requests),
        (2, 2, 2)
    );
}

#[test]
fn a_scenario_users_request_is_encoded_from_its_http1_rendering() {
    let mut p = Prepared {
        keep_alive: b"POST /app/login?x=1 HTTP/1.1\r\nHost: example.com:8443\r\nUser-Agent: u\r\n\
                      Accept: */*\r\nCookie: sid=abc\r\nContent-Length: 7\r\n\r\nuser=ab"
            .to_vec(),
        ..Prepared::default()
    };
    <H2<Fake> as Wire<Fake>>::render_own(&mut p, true);
    let mut fields = Vec::new();
    crate::engine::h2::hpack::ResponseDecoder::new()
        .fields(&p.h2_block, |n, v| {
            fields.push(format!(
                "{}={}",
                String::from_utf8_lossy(n),
                String::from_utf8_lossy(v)
            ))
        })
        .unwrap();
    assert_eq!(
        fields,
        [
            ":method=POST",
            ":scheme=https",
            ":authority=example.com:8443",
            ":path=/app/login?x=1",
            "user-agent=u",
            "accept=*/*",
            "cookie=sid=abc",
            "content-length=7",
        ]
    );
    assert_eq!(p.body, b"user=ab");
    // HTTP/3: the same request as a HEADERS frame and the body's DATA frame header.
    let mut q = Prepared {
        keep_alive: p.keep_alive.clone(),
        ..Prepared::default()
    };
    <super::http3::H3 as Wire<Fake>>::render_own(&mut q, true);
    assert!(!q.h3_head.is_empty());
    assert_eq!(q.body, b"user=ab");
}
