//! The HTTP/2 connection driven by a scripted server: every frame it receives is written here,
//! and what it sends is decoded back, so multiplexing, limits, flow control, resets, GOAWAY
//! and floods are checked without a socket.
use super::*;
use crate::engine::h2::hpack::{encode_request, RequestParts};
use mio::{Registry, Token};
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

/// A transport whose reads are the script (then WouldBlock, or EOF once `eof` is set) and
/// whose writes are all kept.
#[derive(Debug, Default)]
struct Script {
    reads: VecDeque<Vec<u8>>,
    eof: bool,
    out: Vec<u8>,
    /// The server reads nothing: every write would block.
    full: bool,
}

impl Transport for Script {
    type Setup = ();
    type Poller = crate::engine::io::epoll::Epoll;
    fn connect(_: &(), _: SocketAddr, _: Option<std::net::IpAddr>) -> io::Result<Script> {
        Ok(Script::default())
    }
    fn register(&mut self, _: &Registry, _: Token) -> io::Result<()> {
        Ok(())
    }
    fn deregister(&mut self, _: &Registry) -> io::Result<()> {
        Ok(())
    }
    fn establish(&mut self) -> Result<bool, ErrorKind> {
        Ok(true)
    }
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.reads.pop_front() {
            Some(mut d) => {
                let n = d.len().min(buf.len());
                buf[..n].copy_from_slice(&d[..n]);
                if n < d.len() {
                    self.reads.push_front(d.split_off(n));
                }
                Ok(n)
            }
            None if self.eof => Ok(0),
            None => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.full {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn wants_write(&self) -> bool {
        false
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn request(method: &str, body: &[u8]) -> Prepared {
    Prepared {
        addr: 0,
        keep_alive: Vec::new(),
        close: Vec::new(),
        head_only: false,
        h3_head: Vec::new(),
        h2_block: encode_request(&RequestParts {
            method,
            scheme: "http",
            authority: "t",
            path: "/",
            headers: &[],
            body_len: (!body.is_empty()).then_some(body.len()),
        }),
        body: body.to_vec(),
        name: 0,
        capture: None,
    }
}

struct Rig {
    h: H2Conn<Script>,
    reqs: Vec<Prepared>,
    buf: Vec<u8>,
    enc: httlib_hpack::Encoder<'static>,
    /// How far `out` was already decoded by [`Rig::sent`].
    seen: usize,
}

impl Rig {
    fn new(max_streams: u32, reqs: Vec<Prepared>) -> Rig {
        let now = Instant::now();
        let h = H2Conn::new(
            Script::default(),
            0,
            1,
            max_streams,
            None,
            now,
            now + Duration::from_secs(1),
        );
        Rig {
            h,
            reqs,
            buf: vec![0; 64 * 1024],
            enc: httlib_hpack::Encoder::default(),
            seen: 0,
        }
    }

    /// Connects and reads the server's (empty) SETTINGS.
    fn open(max_streams: u32, reqs: Vec<Prepared>) -> Rig {
        let mut r = Rig::new(max_streams, reqs);
        let step = r.event();
        assert_eq!(step, Step::Connected);
        assert!(r.h.stream.as_ref().unwrap().out.starts_with(frame::PREFACE));
        r.seen = frame::PREFACE.len();
        r.server(|o| frame::put_settings(o, &[]));
        r.event();
        r
    }

    fn submit(&mut self, slot: usize) {
        self.h.submit(slot, 0, &self.reqs);
        self.h.flush();
    }

    fn event(&mut self) -> Step {
        self.h
            .on_event(true, true, false, &self.reqs, &mut self.buf, 16)
    }

    fn server(&mut self, f: impl FnOnce(&mut Vec<u8>)) {
        // One queued chunk: a short read means "drained" to the connection, as to epoll users.
        let reads = &mut self.h.stream.as_mut().unwrap().reads;
        if reads.is_empty() {
            reads.push_back(Vec::new());
        }
        f(reads.back_mut().unwrap());
    }

    fn headers(&mut self, stream: u32, status: &str, end: bool) {
        let block = crate::engine::h2::hpack::tests::encode_with(
            &mut self.enc,
            &[(b":status", status.as_bytes()), (b"server", b"test")],
        );
        self.server(|o| frame::put_headers(o, stream, &block, end, 16_384));
    }

    fn events(&mut self) -> Vec<Event> {
        std::mem::take(&mut self.h.events)
    }

    /// The frames the connection wrote since the last call, as (type, flags, stream).
    fn sent(&mut self) -> Vec<(u8, u32)> {
        let out = self.h.stream.as_ref().unwrap().out[self.seen..].to_vec();
        self.seen += out.len();
        let mut got = Vec::new();
        let mut i = 0;
        while i + frame::HEAD_LEN <= out.len() {
            let len = u32::from_be_bytes([0, out[i], out[i + 1], out[i + 2]]) as usize;
            let stream = u32::from_be_bytes([out[i + 5], out[i + 6], out[i + 7], out[i + 8]]);
            got.push((out[i + 3], stream));
            i += frame::HEAD_LEN + len;
        }
        got
    }
}

fn done(slot: usize, status: u16) -> impl Fn(&Event) -> bool {
    move |e| e.slot == slot && matches!(e.outcome, Outcome::Done { status: s, .. } if s == status)
}

#[test]
fn requests_wait_for_the_connection_then_go_out_as_streams_and_complete_in_any_order() {
    let mut r = Rig::new(10, vec![request("GET", b"")]);
    r.submit(7);
    r.submit(8);
    assert!(
        r.events().is_empty(),
        "nothing goes out before the connection is up"
    );
    assert_eq!(r.event(), Step::Connected);
    let ev = r.events();
    assert_eq!(ev.len(), 2);
    assert!(matches!(ev[0].outcome, Outcome::Sent { stream: 1, .. }) && ev[0].slot == 7);
    assert!(matches!(ev[1].outcome, Outcome::Sent { stream: 3, .. }) && ev[1].slot == 8);
    r.seen = frame::PREFACE.len();
    assert_eq!(
        r.sent(),
        vec![
            (frame::SETTINGS, 0),
            (frame::WINDOW_UPDATE, 0),
            (frame::HEADERS, 1),
            (frame::HEADERS, 3)
        ]
    );
    // The server's SETTINGS, then stream 3's answer before stream 1's, its body split.
    r.server(|o| frame::put_settings(o, &[]));
    r.headers(3, "404", true);
    r.headers(1, "200", false);
    r.server(|o| frame::put_data(o, 1, b"hel", false));
    r.server(|o| frame::put_data(o, 1, b"lo", true));
    r.event();
    let ev = r.events();
    assert!(ev.iter().any(done(8, 404)));
    assert!(ev.iter().any(done(7, 200)));
    let body = ev.iter().find(|e| e.slot == 7).unwrap();
    assert!(matches!(body.outcome, Outcome::Done { bytes, .. } if bytes > 5));
    assert_eq!(r.sent(), vec![(frame::SETTINGS, 0)], "the SETTINGS ACK");
    assert_eq!(r.h.active(), 0);
}

#[test]
fn the_servers_stream_limit_holds_requests_back_until_a_stream_ends() {
    let mut r = Rig::open(100, vec![request("GET", b"")]);
    r.server(|o| frame::put_settings(o, &[(frame::SETTINGS_MAX_CONCURRENT_STREAMS, 1)]));
    r.event();
    r.events();
    r.submit(1);
    r.submit(2);
    assert!(!r.h.has_room());
    let ev = r.events();
    assert_eq!(ev.len(), 1, "one stream at a time: {ev:?}");
    r.headers(1, "200", true);
    r.event();
    let ev = r.events();
    assert!(ev.iter().any(done(1, 200)));
    assert!(ev
        .iter()
        .any(|e| e.slot == 2 && matches!(e.outcome, Outcome::Sent { stream: 3, .. })));
}

#[test]
fn our_own_stream_cap_is_the_room_we_offer() {
    let mut r = Rig::open(2, vec![request("GET", b"")]);
    assert!(r.h.has_room());
    r.submit(1);
    r.submit(2);
    assert!(!r.h.has_room());
    assert_eq!(r.h.active(), 2);
}

#[test]
fn goaway_sends_the_streams_above_its_last_id_back_and_lets_the_others_finish() {
    let mut r = Rig::open(10, vec![request("GET", b"")]);
    for slot in 0..3 {
        r.submit(slot);
    }
    r.events();
    r.server(|o| frame::put_goaway(o, 1, frame::NO_ERROR));
    r.headers(1, "200", true);
    r.event();
    let ev = r.events();
    let unprocessed: Vec<usize> = ev
        .iter()
        .filter(|e| e.outcome == Outcome::Unprocessed(ErrorKind::H2Goaway))
        .map(|e| e.slot)
        .collect();
    assert_eq!(unprocessed.len(), 2);
    assert!(unprocessed.contains(&1) && unprocessed.contains(&2));
    assert!(ev.iter().any(done(0, 200)));
    assert!(!r.h.has_room());
    assert!(r.h.finished());
}

#[test]
fn resets_fail_their_stream_only_and_refused_streams_may_go_again() {
    let mut r = Rig::open(10, vec![request("GET", b"")]);
    for slot in 0..3 {
        r.submit(slot);
    }
    r.events();
    r.server(|o| frame::put_rst_stream(o, 1, frame::CANCEL));
    r.server(|o| frame::put_rst_stream(o, 3, frame::REFUSED_STREAM));
    r.headers(5, "200", true);
    r.event();
    let ev = r.events();
    assert!(ev.contains(&Event {
        slot: 0,
        outcome: Outcome::Failed(ErrorKind::H2Reset)
    }));
    assert!(ev.contains(&Event {
        slot: 1,
        outcome: Outcome::Unprocessed(ErrorKind::H2Reset)
    }));
    assert!(ev.iter().any(done(2, 200)));
    assert_eq!(r.h.state, State::Open);
}

#[test]
fn an_http1_answer_is_a_protocol_error_with_advice() {
    let mut r = Rig::new(10, vec![request("GET", b"")]);
    r.submit(0);
    r.event();
    r.events();
    r.server(|o| o.extend_from_slice(b"HTTP/1.1 400 Bad Request\r\n\r\n"));
    r.event();
    assert_eq!(
        r.events(),
        vec![Event {
            slot: 0,
            outcome: Outcome::Failed(ErrorKind::Protocol)
        }]
    );
    assert_eq!(r.h.note, Some(NOT_H2C));
    assert_eq!(r.h.state, State::Dead);
}

#[test]
fn a_close_without_a_single_frame_is_not_http2_either() {
    let mut r = Rig::new(10, vec![request("GET", b"")]);
    r.submit(0);
    r.event();
    r.events();
    r.h.stream.as_mut().unwrap().eof = true;
    r.event();
    assert_eq!(r.events()[0].outcome, Outcome::Failed(ErrorKind::Protocol));
    assert_eq!(r.h.note, Some(NOT_H2C));
}

#[test]
fn an_eof_after_answers_leaves_the_unanswered_unprocessed() {
    let mut r = Rig::open(10, vec![request("GET", b"")]);
    r.submit(0);
    r.headers(1, "200", true);
    r.event();
    r.submit(1);
    r.submit(2);
    r.headers(5, "200", false); // stream 5 (slot 2) started answering
    r.h.stream.as_mut().unwrap().eof = true;
    // The FIN comes with the data (EPOLLRDHUP): read on to it.
    r.h.on_event(true, false, true, &r.reqs, &mut r.buf, 16);
    let ev = r.events();
    assert!(ev.contains(&Event {
        slot: 1,
        outcome: Outcome::Unprocessed(ErrorKind::Closed)
    }));
    assert!(ev.contains(&Event {
        slot: 2,
        outcome: Outcome::Failed(ErrorKind::Closed)
    }));
}

#[test]
fn pings_are_answered_and_a_flood_of_them_ends_the_connection() {
    let mut r = Rig::open(10, vec![request("GET", b"")]);
    r.submit(0);
    r.events();
    r.sent();
    r.server(|o| {
        o.extend_from_slice(&[0, 0, 8, frame::PING, 0, 0, 0, 0, 0]);
        o.extend_from_slice(&[9; 8]);
    });
    r.event();
    assert_eq!(r.sent(), vec![(frame::PING, 0)]);
    r.server(|o| {
        for _ in 0..2000 {
            frame::put_settings(o, &[]);
        }
    });
    r.event();
    assert_eq!(
        r.events(),
        vec![Event {
            slot: 0,
            outcome: Outcome::Failed(ErrorKind::Protocol)
        }]
    );
    assert_eq!(r.h.note, Some(FLOOD));
    assert_eq!(r.sent().last(), Some(&(frame::GOAWAY, 0)));
}

#[test]
fn big_bodies_give_the_windows_back() {
    let mut r = Rig::open(10, vec![request("GET", b"")]);
    r.submit(0);
    r.headers(1, "200", false);
    r.sent();
    let chunk = vec![0u8; 16_384];
    let frames = (STREAM_WINDOW as usize / 2) / chunk.len() + 1;
    r.server(|o| {
        for _ in 0..frames {
            frame::put_data(o, 1, &chunk, false);
        }
        frame::put_data(o, 1, b"", true);
    });
    while r.event() == Step::More {}
    assert!(r.events().iter().any(done(0, 200)));
    assert!(
        r.sent().contains(&(frame::WINDOW_UPDATE, 1)),
        "the stream's window was given back past half of it"
    );
}

#[test]
fn huge_header_blocks_end_the_connection_and_oversized_lists_fail_their_stream() {
    let mut r = Rig::open(10, vec![request("GET", b"")]);
    r.submit(0);
    r.submit(1);
    r.events();
    // A header list over 64 KiB: that stream fails, the connection goes on.
    let big = vec![b'v'; 70_000];
    let block = crate::engine::h2::hpack::tests::encode_with(
        &mut r.enc,
        &[(b":status", b"200"), (b"x-big", &big)],
    );
    r.server(|o| frame::put_headers(o, 1, &block, true, 16_384));
    r.event();
    assert_eq!(
        r.events(),
        vec![Event {
            slot: 0,
            outcome: Outcome::Failed(ErrorKind::Protocol)
        }]
    );
    assert_eq!(r.h.state, State::Open);
    // CONTINUATIONs past 256 KiB: the block cannot be kept, nor the connection.
    r.server(|o| {
        frame::put_head(o, 16_384, frame::HEADERS, 0, 3);
        o.extend_from_slice(&[0u8; 16_384]);
        for _ in 0..20 {
            frame::put_head(o, 16_384, frame::CONTINUATION, 0, 3);
            o.extend_from_slice(&[0u8; 16_384]);
        }
    });
    while r.event() == Step::More {}
    assert_eq!(
        r.events(),
        vec![Event {
            slot: 1,
            outcome: Outcome::Failed(ErrorKind::Protocol)
        }]
    );
    assert_eq!(r.h.state, State::Dead);
}

#[test]
fn request_bodies_wait_for_the_servers_window() {
    let body = vec![b'b'; 70_000];
    let mut r = Rig::open(10, vec![request("POST", &body)]);
    r.sent();
    r.submit(0);
    let frames = r.sent();
    let data = frames.iter().filter(|f| f.0 == frame::DATA).count();
    // 65,535 bytes of window: four 16 KiB frames (the last one short), then nothing.
    assert_eq!(data, 4, "{frames:?}");
    r.server(|o| {
        frame::put_window_update(o, 0, 10_000);
        frame::put_window_update(o, 1, 10_000);
    });
    r.event();
    assert_eq!(
        r.sent().iter().filter(|f| f.0 == frame::DATA).count(),
        1,
        "the rest once both windows grew"
    );
}

#[test]
fn a_cancelled_stream_is_reset_and_frees_its_place() {
    let mut r = Rig::open(1, vec![request("GET", b"")]);
    r.submit(0);
    r.submit(1);
    r.events();
    r.sent();
    r.h.cancel(0, &r.reqs);
    assert_eq!(r.sent(), vec![(frame::RST_STREAM, 1), (frame::HEADERS, 3)]);
    // Late frames for the cancelled stream are read and dropped.
    r.headers(1, "200", true);
    r.headers(3, "200", true);
    r.event();
    let ev = r.events();
    assert!(ev.iter().any(done(1, 200)));
    assert!(!ev
        .iter()
        .any(|e| e.slot == 0 && matches!(e.outcome, Outcome::Done { .. })));
}

#[test]
fn push_promises_are_refused_since_push_is_off() {
    let mut r = Rig::open(10, vec![request("GET", b"")]);
    r.submit(0);
    r.events();
    r.server(|o| {
        frame::put_head(o, 4, frame::PUSH_PROMISE, frame::END_HEADERS, 1);
        o.extend_from_slice(&2u32.to_be_bytes());
    });
    r.event();
    assert_eq!(r.events()[0].outcome, Outcome::Failed(ErrorKind::Protocol));
}

/// The connection failed as a whole: slot 0's request is a `protocol` error, GOAWAY went out.
fn assert_connection_error(r: &mut Rig, what: &str) {
    let ev = r.events();
    assert!(
        ev.contains(&Event {
            slot: 0,
            outcome: Outcome::Failed(ErrorKind::Protocol)
        }),
        "{what}: {ev:?}"
    );
    assert_eq!(r.h.state, State::Dead, "{what}");
    assert_eq!(r.sent().last(), Some(&(frame::GOAWAY, 0)), "{what}");
}

/// Frames that cost the server nothing and the client a turn each, sent without end: each is
/// a flood past MAX_CONTROL_FRAMES between two answers (CVE-2019-9512/9515/9518, CVE-2024's
/// CONTINUATION flood), and the connection ends instead of spinning until --timeout.
#[test]
fn every_kind_of_control_frame_flood_ends_the_connection() {
    type Writes = fn(&mut Vec<u8>);
    let floods: [(&str, Writes); 8] = [
        ("endless 1xx answers", |o| {
            // 0x89: :status 204 would end it; 103 (Early Hints) as a literal, indexed name 8.
            for _ in 0..2000 {
                frame::put_headers(o, 1, &[0x08, 0x03, b'1', b'0', b'3'], false, 16_384);
            }
        }),
        ("empty CONTINUATION", |o| {
            frame::put_head(o, 0, frame::HEADERS, 0, 1);
            for _ in 0..2000 {
                frame::put_head(o, 0, frame::CONTINUATION, 0, 1);
            }
        }),
        ("SETTINGS ACK", |o| {
            for _ in 0..2000 {
                frame::put_settings_ack(o);
            }
        }),
        ("WINDOW_UPDATE(1)", |o| {
            for _ in 0..2000 {
                frame::put_window_update(o, 0, 1);
            }
        }),
        ("GOAWAY", |o| {
            for _ in 0..2000 {
                frame::put_goaway(o, 1, frame::NO_ERROR);
            }
        }),
        ("PING ACK", |o| {
            for _ in 0..2000 {
                frame::put_head(o, 8, frame::PING, frame::ACK, 0);
                o.extend_from_slice(&[0; 8]);
            }
        }),
        ("empty DATA", |o| {
            for _ in 0..2000 {
                frame::put_data(o, 1, b"", false);
            }
        }),
        ("RST_STREAM on a closed stream", |o| {
            for _ in 0..2000 {
                frame::put_rst_stream(o, 1, frame::CANCEL);
            }
        }),
    ];
    for (what, flood) in floods {
        let mut r = Rig::open(10, vec![request("GET", b"")]);
        r.submit(0);
        r.events();
        r.sent();
        if what == "empty DATA" {
            r.headers(1, "200", false);
        }
        if what == "RST_STREAM on a closed stream" {
            // Slot 1's stream 1 answered; slot 0 waits on stream 3.
            r.submit(1);
            r.headers(1, "200", true);
            r.event();
            r.events();
            r.sent();
            r.h.events.clear();
            // The flood's requests: slot 0 on stream 3 fails with the connection.
        }
        r.server(flood);
        while r.event() == Step::More {}
        if what == "RST_STREAM on a closed stream" {
            let ev = r.events();
            assert!(
                ev.iter()
                    .any(|e| e.outcome == Outcome::Failed(ErrorKind::Protocol)),
                "{what}: {ev:?}"
            );
            assert_eq!(r.h.state, State::Dead, "{what}");
            continue;
        }
        assert_connection_error(&mut r, what);
        assert_eq!(r.h.note, Some(FLOOD), "{what}");
    }
}

/// A padded DATA frame whose pad length is not shorter than its payload (RFC 9113 §6.1) is a
/// connection error, not an answer.
#[test]
fn data_padding_longer_than_the_frame_is_a_connection_error() {
    for (len, pad) in [(5usize, 10u8), (5, 5), (0, 0)] {
        let mut r = Rig::open(10, vec![request("GET", b"")]);
        r.submit(0);
        r.headers(1, "200", false);
        r.events();
        r.sent();
        r.server(|o| {
            frame::put_head(o, len, frame::DATA, frame::PADDED | frame::END_STREAM, 1);
            if len > 0 {
                o.push(pad);
                o.extend_from_slice(&vec![0; len - 1]);
            }
        });
        r.event();
        assert_connection_error(&mut r, &format!("len {len} pad {pad}"));
    }
    // Padding within the frame is fine, and not counted as body (content-length 2).
    let mut r = Rig::open(10, vec![request("GET", b"")]);
    r.submit(0);
    let block = crate::engine::h2::hpack::tests::encode_with(
        &mut r.enc,
        &[(b":status", b"200"), (b"content-length", b"2")],
    );
    r.server(|o| {
        frame::put_headers(o, 1, &block, false, 16_384);
        frame::put_head(
            o,
            1 + 2 + 3,
            frame::DATA,
            frame::PADDED | frame::END_STREAM,
            1,
        );
        o.extend_from_slice(&[3, b'h', b'i', 0, 0, 0]);
    });
    r.event();
    assert!(r.events().iter().any(done(0, 200)));
}

/// A content-length that the DATA frames contradict makes the response malformed (RFC 9113
/// §8.1.1): the stream fails as `protocol`, the connection goes on.
#[test]
fn a_content_length_the_data_contradicts_fails_its_stream() {
    for (cl, body, end) in [
        ("10", &b"hello"[..], true),
        ("3", b"hello", false),
        ("x", b"", true),
    ] {
        let mut r = Rig::open(10, vec![request("GET", b"")]);
        r.submit(0);
        r.events();
        let block = crate::engine::h2::hpack::tests::encode_with(
            &mut r.enc,
            &[(b":status", b"200"), (b"content-length", cl.as_bytes())],
        );
        r.server(|o| {
            frame::put_headers(o, 1, &block, body.is_empty() && end, 16_384);
            if !body.is_empty() {
                frame::put_data(o, 1, body, end);
            }
        });
        r.event();
        assert_eq!(
            r.events(),
            vec![Event {
                slot: 0,
                outcome: Outcome::Failed(ErrorKind::Protocol)
            }],
            "content-length {cl}, {} bytes",
            body.len()
        );
        assert_eq!(r.h.state, State::Open);
    }
    // Agreeing, or a HEAD's answer (no body whatever its content-length): answers.
    for (method, body) in [("GET", &b"hello"[..]), ("HEAD", b"")] {
        let mut req = request(method, b"");
        req.head_only = method == "HEAD";
        let mut r = Rig::open(10, vec![req]);
        r.submit(0);
        let block = crate::engine::h2::hpack::tests::encode_with(
            &mut r.enc,
            &[(b":status", b"200"), (b"content-length", b"5")],
        );
        r.server(|o| {
            frame::put_headers(o, 1, &block, body.is_empty(), 16_384);
            if !body.is_empty() {
                frame::put_data(o, 1, body, true);
            }
        });
        r.event();
        assert!(r.events().iter().any(done(0, 200)), "{method}");
    }
}

/// DATA on a stream the client never opened (idle) or that the server already ended
/// (closed) is a connection error (RFC 9113 §5.1), not bytes to ignore; on a stream the
/// client reset itself, late frames are expected and dropped.
#[test]
fn data_on_idle_or_closed_streams_is_a_connection_error() {
    for (what, stream) in [("idle", 7u32), ("server-initiated", 2), ("closed", 1)] {
        let mut r = Rig::open(10, vec![request("GET", b"")]);
        r.submit(1);
        r.headers(1, "200", true);
        r.event();
        r.submit(0); // stream 3, in flight
        r.events();
        r.sent();
        r.server(|o| frame::put_data(o, stream, b"stray", false));
        r.event();
        assert_connection_error(&mut r, what);
    }
    let mut r = Rig::open(10, vec![request("GET", b"")]);
    r.submit(1);
    r.submit(0);
    r.events();
    r.h.cancel(1, &r.reqs);
    r.sent();
    r.server(|o| frame::put_data(o, 1, b"late", true));
    r.headers(3, "200", true);
    r.event();
    assert!(r.events().iter().any(done(0, 200)));
    assert_eq!(r.h.state, State::Open);
}

/// Low: whatever a plain-HTTP server answers the h2c preface with (an HTTP/1.0 status line,
/// an HTTP/0.9-style page without one, a frame other than SETTINGS), the note says h2c is
/// not spoken.
#[test]
fn any_first_answer_that_is_not_http2_gets_the_h2c_note() {
    let answers: [&[u8]; 3] = [
        b"HTTP/1.0 505 HTTP Version Not Supported\r\n\r\n",
        b"<!DOCTYPE HTML>\n<html><body>Error code: 505</body></html>\n",
        &[0, 0, 4, frame::WINDOW_UPDATE, 0, 0, 0, 0, 0, 0, 0, 0, 1],
    ];
    for answer in answers {
        let mut r = Rig::new(10, vec![request("GET", b"")]);
        r.submit(0);
        r.event();
        r.events();
        r.server(|o| o.extend_from_slice(answer));
        r.event();
        assert_eq!(
            r.events(),
            vec![Event {
                slot: 0,
                outcome: Outcome::Failed(ErrorKind::Protocol)
            }],
            "{answer:?}"
        );
        assert_eq!(r.h.note, Some(NOT_H2C), "{answer:?}");
        assert_eq!(r.h.state, State::Dead);
    }
}

/// A server that opens its windows wide and then reads nothing: the output held for it stops
/// at MAX_OUT (1 MiB), and the connection is given up with the note.
#[test]
fn a_server_that_does_not_read_is_given_up_past_the_output_cap() {
    let body = vec![b'b'; 2 << 20];
    let mut r = Rig::open(10, vec![request("POST", &body)]);
    r.server(|o| {
        frame::put_settings(o, &[(frame::SETTINGS_INITIAL_WINDOW_SIZE, 1 << 30)]);
        frame::put_window_update(o, 0, 1 << 30);
    });
    r.event();
    r.events();
    r.h.stream.as_mut().unwrap().full = true;
    r.submit(0);
    let ev = r.events();
    assert!(
        ev.contains(&Event {
            slot: 0,
            outcome: Outcome::Failed(ErrorKind::Protocol)
        }),
        "{ev:?}"
    );
    assert_eq!(r.h.note, Some(NOT_READING));
    assert_eq!(r.h.state, State::Dead);
}

#[test]
fn a_scenario_users_answer_is_kept_in_http1s_form_and_handed_to_its_slot() {
    // Slot 7's request asks for its answer (a scenario user's, 4 body bytes at most);
    // slot 8's is the plain path's, which keeps nothing.
    let mut kept = request("GET", b"");
    kept.capture = Some(4);
    let plain = request("GET", b"");
    struct Two(Prepared, Prepared);
    impl Requests for Two {
        fn of(&self, slot: usize, _: usize) -> &Prepared {
            if slot == 7 {
                &self.0
            } else {
                &self.1
            }
        }
    }
    let two = Two(kept, plain);
    let mut r = Rig::open(10, vec![]);
    r.h.submit(7, 0, &two);
    r.h.submit(8, 0, &two);
    r.h.flush();
    r.events();
    for stream in [1, 3] {
        let block = crate::engine::h2::hpack::tests::encode_with(
            &mut r.enc,
            &[
                (b":status", b"200"),
                (b"set-cookie", b"sid=abc; Path=/"),
                (b"set-cookie", b"x=1"),
            ],
        );
        r.server(|o| {
            frame::put_headers(o, stream, &block, false, 16_384);
            frame::put_data(o, stream, b"hello", true);
        });
    }
    r.h.on_event(true, false, false, &two, &mut r.buf, 16);
    let ev = r.events();
    assert!(
        ev.iter().any(done(7, 200)) && ev.iter().any(done(8, 200)),
        "{ev:?}"
    );
    let mut dst = crate::engine::http::Capture::default();
    r.h.hand_over(7, &mut dst);
    assert_eq!(
        String::from_utf8_lossy(&dst.head),
        "HTTP/1.1 200 \r\nset-cookie: sid=abc; Path=/\r\nset-cookie: x=1\r\n\r\n"
    );
    assert_eq!(dst.body, b"hell", "the body up to the limit");
    // What a user reads it with.
    let mut headers = [httparse::EMPTY_HEADER; 8];
    let mut resp = httparse::Response::new(&mut headers);
    assert!(resp.parse(&dst.head).unwrap().is_complete());
    assert_eq!((resp.code, resp.headers.len()), (Some(200), 2));
    let mut none = crate::engine::http::Capture::default();
    r.h.hand_over(8, &mut none);
    assert!(none.head.is_empty() && none.body.is_empty(), "nothing kept");
}
