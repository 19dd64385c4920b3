//! One HTTP/3 connection against a scripted server: a quinn-proto server endpoint in the
//! test's own thread, on a loopback UDP socket, answering each request stream as the test
//! says (an answer, a reset, GOAWAY, an error code, bytes that break QPACK). Both ends are
//! sans I/O, so the test pumps datagrams between them until the client reports outcomes.
use super::*;
use crate::engine::h2::hpack::RequestParts;
use crate::engine::tls::{TlsClient, TlsClientOptions};
use crate::engine::Prepared;
use quinn_proto::{ServerConfig, StreamEvent as SE};
use std::net::UdpSocket as StdUdp;
use std::sync::Arc;
use std::time::Duration;

/// What the server does with a request stream once the request has ended.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Answer {
    /// HEADERS (:status 200, content-length 5) and DATA "hello".
    Ok,
    /// HEADERS saying content-length 9, then 5 bytes.
    ShortBody,
    /// RESET_STREAM with H3_INTERNAL_ERROR.
    Reset,
    /// RESET_STREAM with H3_REQUEST_REJECTED: not processed.
    Reject,
    /// A field line that refers to the dynamic table.
    DynamicRef,
    /// Closes the connection with H3_INTERNAL_ERROR and a reason.
    CloseWithError,
    /// Nothing (the test sends a GOAWAY instead).
    Nothing,
}

struct Server {
    sock: StdUdp,
    ep: Endpoint,
    conn: Option<(ConnectionHandle, quinn_proto::Connection)>,
    answer: Answer,
    /// Request streams whose request ended, answered or not.
    seen: Vec<StreamId>,
    /// A GOAWAY to send on the control stream, once.
    goaway: Option<u64>,
    control: Option<StreamId>,
    buf: Vec<u8>,
}

fn server(answer: Answer) -> Server {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let cert = ck.cert.der().clone();
    let key = rustls::pki_types::PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der());
    let mut tls = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[&rustls::version::TLS13])
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert], key.into())
    .unwrap();
    tls.alpn_protocols = vec![b"h3".to_vec()];
    tls.max_early_data_size = u32::MAX;
    let crypto = quinn_proto::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
    let config = ServerConfig::with_crypto(Arc::new(crypto));
    let sock = StdUdp::bind("127.0.0.1:0").unwrap();
    sock.set_nonblocking(true).unwrap();
    Server {
        sock,
        ep: Endpoint::new(
            Arc::new(quinn_proto::EndpointConfig::default()),
            Some(Arc::new(config)),
            false,
            None,
        ),
        conn: None,
        answer,
        seen: Vec::new(),
        goaway: None,
        control: None,
        buf: Vec::new(),
    }
}

impl Server {
    fn addr(&self) -> SocketAddr {
        self.sock.local_addr().unwrap()
    }

    /// Reads its datagrams, answers what it has, sends what quinn-proto has to send.
    fn turn(&mut self, now: Instant) {
        let mut b = [0u8; 65536];
        while let Ok((n, from)) = self.sock.recv_from(&mut b) {
            self.buf.clear();
            match self.ep.handle(
                now,
                from,
                None,
                None,
                BytesMut::from(&b[..n]),
                &mut self.buf,
            ) {
                Some(DatagramEvent::NewConnection(inc)) => {
                    let (h, c) = self.ep.accept(inc, now, &mut self.buf, None).unwrap();
                    self.conn = Some((h, c));
                }
                Some(DatagramEvent::ConnectionEvent(_, ev)) => {
                    if let Some((_, c)) = self.conn.as_mut() {
                        c.handle_event(ev);
                    }
                }
                Some(DatagramEvent::Response(t)) => {
                    let _ = self.sock.send_to(&self.buf[..t.size], from);
                }
                None => {}
            }
        }
        let Some((h, mut c)) = self.conn.take() else {
            return;
        };
        loop {
            while let Some(ev) = c.poll_endpoint_events() {
                if let Some(back) = self.ep.handle_event(h, ev) {
                    c.handle_event(back);
                }
            }
            let Some(ev) = c.poll() else { break };
            match ev {
                quinn_proto::Event::Connected => {
                    let id = c.streams().open(Dir::Uni).unwrap();
                    let _ = c.send_stream(id).write(&frame::control_stream(65536));
                    self.control = Some(id);
                }
                quinn_proto::Event::Stream(SE::Opened { .. }) => {
                    // Data that came with the opening is read now: no Readable follows.
                    while let Some(id) = c.streams().accept(Dir::Bi) {
                        if self.drain(&mut c, id) {
                            self.seen.push(id);
                            self.respond(&mut c, id, now);
                        }
                    }
                    while let Some(id) = c.streams().accept(Dir::Uni) {
                        self.drain(&mut c, id);
                    }
                }
                quinn_proto::Event::Stream(SE::Readable { id }) => {
                    if id.dir() == Dir::Uni {
                        self.drain(&mut c, id);
                    } else if self.drain(&mut c, id) {
                        self.seen.push(id);
                        self.respond(&mut c, id, now);
                    }
                }
                _ => {}
            }
        }
        if let (Some(last), Some(ctl)) = (self.goaway.take(), self.control) {
            let mut f = Vec::new();
            let mut p = Vec::new();
            frame::put_varint(&mut p, last);
            frame::put_frame(&mut f, frame::GOAWAY, &p);
            let _ = c.send_stream(ctl).write(&f);
        }
        if let Some(t) = c.poll_timeout() {
            if t <= now {
                c.handle_timeout(now);
            }
        }
        loop {
            self.buf.clear();
            let Some(t) = c.poll_transmit(now, 1, &mut self.buf) else {
                break;
            };
            let _ = self.sock.send_to(&self.buf[..t.size], t.destination);
        }
        self.conn = Some((h, c));
    }

    /// Reads a stream to its end as far as it has come: true once it has ended.
    fn drain(&mut self, c: &mut quinn_proto::Connection, id: StreamId) -> bool {
        let mut recv = c.recv_stream(id);
        let Ok(mut chunks) = recv.read(true) else {
            return false;
        };
        let mut fin = false;
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(_)) => {}
                Ok(None) => {
                    fin = true;
                    break;
                }
                Err(_) => break,
            }
        }
        let _ = chunks.finalize();
        fin
    }

    fn respond(&mut self, c: &mut quinn_proto::Connection, id: StreamId, now: Instant) {
        let mut out = Vec::new();
        let ok_head = |length: &[u8]| {
            let mut s = vec![0, 0, 0xc0 | 25, 0x54, length.len() as u8];
            s.extend_from_slice(length);
            s
        };
        match self.answer {
            Answer::Ok => {
                frame::put_frame(&mut out, frame::HEADERS, &ok_head(b"5"));
                frame::put_frame(&mut out, frame::DATA, b"hello");
            }
            Answer::ShortBody => {
                frame::put_frame(&mut out, frame::HEADERS, &ok_head(b"9"));
                frame::put_frame(&mut out, frame::DATA, b"hello");
            }
            Answer::DynamicRef => frame::put_frame(&mut out, frame::HEADERS, &[0, 0, 0x80]),
            Answer::Reset | Answer::Reject => {
                let code = if self.answer == Answer::Reset {
                    0x102
                } else {
                    0x10b
                };
                let _ = c.send_stream(id).reset(VarInt::from_u32(code));
                return;
            }
            Answer::CloseWithError => {
                c.close(
                    now,
                    VarInt::from_u32(0x102),
                    bytes::Bytes::from_static(b"scripted failure"),
                );
                return;
            }
            Answer::Nothing => return,
        }
        let mut send = c.send_stream(id);
        let _ = send.write(&out);
        let _ = send.finish();
    }
}

struct Client {
    ep: Endpoint,
    conn: H3Conn,
    requests: Vec<Prepared>,
    buf: Vec<u8>,
}

fn client(server: &Server, streams: u32) -> Client {
    let tls = TlsClient::new(
        &TlsClientOptions {
            insecure: true,
            resumption: true,
            alpn: vec![b"h3".to_vec()],
            ..TlsClientOptions::default()
        },
        &[(server.addr(), "localhost".into())],
    )
    .unwrap();
    let quic = tls.quic_for_thread().unwrap();
    let mut ep = Endpoint::new(
        Arc::new(quinn_proto::EndpointConfig::default()),
        None,
        false,
        None,
    );
    let sock = mio::net::UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    sock.connect(server.addr()).unwrap();
    let now = Instant::now();
    let conn = H3Conn::connect(
        &mut ep,
        quic.config,
        sock,
        server.addr(),
        "localhost",
        0,
        1,
        streams,
        None,
        now,
        now + Duration::from_secs(5),
    )
    .unwrap();
    let section = qpack::encode_request(&RequestParts {
        method: "GET",
        scheme: "https",
        authority: "localhost",
        path: "/",
        headers: &[],
        body_len: None,
    });
    let requests = vec![Prepared {
        keep_alive: b"GET / HTTP/1.1\r\n\r\n".to_vec(),
        h3_head: frame::request_head(&section, 0),
        ..Prepared::default()
    }];
    Client {
        ep,
        conn,
        requests,
        buf: vec![0; 65536],
    }
}

/// Pumps datagrams both ways until `done` holds for the client's outcomes (at most 5 s).
fn pump(s: &mut Server, c: &mut Client, mut done: impl FnMut(&[Event]) -> bool) -> Vec<Event> {
    let mut events = Vec::new();
    let end = Instant::now() + Duration::from_secs(5);
    while Instant::now() < end {
        let now = Instant::now();
        c.conn.transmit(now);
        s.turn(now);
        c.conn.receive(&mut c.ep, &mut c.buf, &c.requests, now);
        if c.conn.timeout().is_some_and(|t| t <= now) {
            c.conn.on_timeout(&mut c.ep, &c.requests, now);
        }
        events.append(&mut c.conn.events);
        if done(&events) {
            return events;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    panic!("no end in 5 s: {events:?}");
}

fn ended(events: &[Event]) -> Vec<(usize, Outcome)> {
    events
        .iter()
        .filter(|e| !matches!(e.outcome, Outcome::Sent { .. }))
        .map(|e| (e.slot, e.outcome))
        .collect()
}

fn ends(n: usize) -> impl FnMut(&[Event]) -> bool {
    move |e| ended(e).len() >= n
}

#[test]
fn requests_on_streams_are_answered_and_the_full_handshake_is_known() {
    let mut s = server(Answer::Ok);
    let mut c = client(&s, 10);
    for slot in 0..3 {
        c.conn.submit(slot, 0, &c.requests.clone(), Instant::now());
    }
    let ev = pump(&mut s, &mut c, ends(3));
    let done = ended(&ev);
    assert_eq!(done.len(), 3, "{ev:?}");
    for (_, o) in &done {
        assert!(
            matches!(o, Outcome::Done { status: 200, bytes, .. } if *bytes > 5),
            "{o:?}"
        );
    }
    assert_eq!(c.conn.state, State::Open);
    assert!(c.conn.verified, "a full handshake shows the certificate");
    assert!(!c.conn.handshake.resumed);
    let (sent, received, _) = c.conn.packets();
    assert!(sent > 0 && received > 0);
    assert_eq!(c.conn.load(), 0);
}

#[test]
fn a_reset_stream_is_h3_reset_and_a_short_body_is_a_protocol_error() {
    for (answer, kind) in [
        (Answer::Reset, Outcome::Failed(ErrorKind::H3Reset)),
        (Answer::Reject, Outcome::Unprocessed(ErrorKind::H3Reset)),
        (Answer::ShortBody, Outcome::Failed(ErrorKind::Protocol)),
    ] {
        let mut s = server(answer);
        let mut c = client(&s, 10);
        c.conn.submit(7, 0, &c.requests.clone(), Instant::now());
        let ev = pump(&mut s, &mut c, ends(1));
        assert_eq!(ended(&ev), [(7, kind)], "{answer:?}");
        // The connection goes on carrying requests.
        assert!(c.conn.has_room(), "{answer:?}");
    }
}

#[test]
fn the_servers_error_code_fails_the_connection_with_a_note() {
    let mut s = server(Answer::CloseWithError);
    let mut c = client(&s, 10);
    c.conn.submit(1, 0, &c.requests.clone(), Instant::now());
    c.conn.submit(2, 0, &c.requests.clone(), Instant::now());
    let ev = pump(&mut s, &mut c, ends(2));
    assert_eq!(
        ended(&ev),
        [
            (1, Outcome::Failed(ErrorKind::QuicProtocol)),
            (2, Outcome::Failed(ErrorKind::QuicProtocol))
        ]
    );
    let note = c.conn.note.clone().unwrap_or_default();
    assert!(
        note.contains("H3_INTERNAL_ERROR") && note.contains("scripted failure"),
        "{note}"
    );
    assert!(c.conn.finished());
}

#[test]
fn a_dynamic_table_reference_closes_with_qpack_decompression_failed() {
    let mut s = server(Answer::DynamicRef);
    let mut c = client(&s, 10);
    c.conn.submit(0, 0, &c.requests.clone(), Instant::now());
    let ev = pump(&mut s, &mut c, ends(1));
    assert_eq!(ended(&ev), [(0, Outcome::Failed(ErrorKind::QuicProtocol))]);
    let note = c.conn.note.clone().unwrap_or_default();
    assert!(note.contains("QPACK_DECOMPRESSION_FAILED"), "{note}");
    assert_eq!(c.conn.state, State::Dead);
}

#[test]
fn goaway_leaves_the_streams_above_it_unprocessed_and_takes_no_more() {
    let mut s = server(Answer::Nothing);
    let mut c = client(&s, 10);
    for slot in 0..3 {
        c.conn.submit(slot, 0, &c.requests.clone(), Instant::now());
    }
    // Wait until the server has the three requests (streams 0, 4, 8).
    let end = Instant::now() + Duration::from_secs(5);
    while s.seen.len() < 3 && Instant::now() < end {
        let now = Instant::now();
        c.conn.transmit(now);
        s.turn(now);
        c.conn.receive(&mut c.ep, &mut c.buf, &c.requests, now);
        std::thread::sleep(Duration::from_micros(200));
    }
    assert_eq!(s.seen.len(), 3);
    // GOAWAY(4) first: stream 0 is processed, 4 and 8 are not.
    s.goaway = Some(4);
    let now = Instant::now();
    s.turn(now);
    c.conn.receive(&mut c.ep, &mut c.buf, &c.requests, now);
    assert_eq!(c.conn.state, State::Draining);
    assert!(!c.conn.has_room());
    assert!(ended(&c.conn.events).is_empty(), "{:?}", c.conn.events);
    // Then stream 0 is answered and the others are rejected.
    let (h, mut conn) = s.conn.take().unwrap();
    let seen = s.seen.clone();
    s.answer = Answer::Ok;
    s.respond(&mut conn, seen[0], now);
    for id in &seen[1..] {
        let _ = conn.send_stream(*id).reset(VarInt::from_u32(0x10b));
    }
    s.conn = Some((h, conn));
    let ev = pump(&mut s, &mut c, ends(3));
    let mut got = ended(&ev);
    got.sort_by_key(|(slot, _)| *slot);
    assert!(
        matches!(got[0], (0, Outcome::Done { status: 200, .. })),
        "{got:?}"
    );
    assert_eq!(
        got[1..],
        [
            (1, Outcome::Unprocessed(ErrorKind::H3Goaway)),
            (2, Outcome::Unprocessed(ErrorKind::H3Goaway))
        ]
    );
    assert!(c.conn.finished());
    assert_eq!(
        c.conn.note, None,
        "an answer below the GOAWAY is no violation"
    );
}

#[test]
fn an_answer_at_or_above_the_goaway_is_taken_with_a_note() {
    let mut s = server(Answer::Nothing);
    let mut c = client(&s, 10);
    c.conn.submit(0, 0, &c.requests.clone(), Instant::now());
    let end = Instant::now() + Duration::from_secs(5);
    while s.seen.is_empty() && Instant::now() < end {
        let now = Instant::now();
        c.conn.transmit(now);
        s.turn(now);
        c.conn.receive(&mut c.ep, &mut c.buf, &c.requests, now);
        std::thread::sleep(Duration::from_micros(200));
    }
    assert_eq!(s.seen.len(), 1);
    // GOAWAY(0) says stream 0 was not processed; the server answers it all the same.
    s.goaway = Some(0);
    let now = Instant::now();
    s.turn(now);
    c.conn.receive(&mut c.ep, &mut c.buf, &c.requests, now);
    let (h, mut conn) = s.conn.take().unwrap();
    s.answer = Answer::Ok;
    s.respond(&mut conn, s.seen[0], now);
    s.conn = Some((h, conn));
    let ev = pump(&mut s, &mut c, ends(1));
    assert!(
        matches!(ended(&ev)[..], [(0, Outcome::Done { status: 200, .. })]),
        "{ev:?}"
    );
    let note = c.conn.note.clone().unwrap_or_default();
    assert!(note.contains("at or above its GOAWAY"), "{note:?}");
}

#[test]
fn a_port_without_quic_is_a_handshake_failure_with_advice() {
    // Bound and dropped: nothing listens there, and loopback answers ICMP unreachable.
    let s = server(Answer::Ok);
    let port = s.addr().port();
    drop(s);
    let tls = TlsClient::new(
        &TlsClientOptions {
            insecure: true,
            alpn: vec![b"h3".to_vec()],
            ..TlsClientOptions::default()
        },
        &[],
    )
    .unwrap();
    let quic = tls.quic_for_thread().unwrap();
    let mut ep = Endpoint::new(
        Arc::new(quinn_proto::EndpointConfig::default()),
        None,
        false,
        None,
    );
    let remote: SocketAddr = ([127, 0, 0, 1], port).into();
    let sock = mio::net::UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
    sock.connect(remote).unwrap();
    let now = Instant::now();
    let mut conn = H3Conn::connect(
        &mut ep,
        quic.config,
        sock,
        remote,
        "localhost",
        0,
        1,
        10,
        None,
        now,
        now + Duration::from_secs(5),
    )
    .unwrap();
    let requests = vec![Prepared::default()];
    conn.submit(3, 0, &requests, now);
    let mut buf = vec![0; 2048];
    let end = Instant::now() + Duration::from_secs(5);
    while conn.state != State::Dead && Instant::now() < end {
        conn.transmit(Instant::now());
        std::thread::sleep(Duration::from_millis(2));
        conn.receive(&mut ep, &mut buf, &requests, Instant::now());
    }
    assert_eq!(
        conn.events,
        [Event {
            slot: 3,
            outcome: Outcome::Failed(ErrorKind::QuicHandshake)
        }]
    );
    assert_eq!(conn.failed_with, Some(ErrorKind::QuicHandshake));
    let note = conn.note.unwrap_or_default();
    assert!(
        note.contains(&format!("UDP port {port}")) && note.contains("try --http 2"),
        "{note}"
    );
}

#[test]
fn a_crypto_error_names_its_tls_alert() {
    assert_eq!(super::tls_alert(0x150), " (TLS alert 80 internal_error)");
    assert_eq!(super::tls_alert(0x1ff), " (TLS alert 255)");
    assert_eq!(super::tls_alert(0x0a), "");
}
