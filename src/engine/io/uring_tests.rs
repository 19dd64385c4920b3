//! The completion → readiness translation on scripted completions: no kernel involved (the
//! state queues its submissions; here they are only counted and inspected).
use super::*;

/// `IORING_CQE_F_BUFFER`, `IORING_CQE_F_MORE`, and where the buffer id sits in the flags.
const F_BUFFER: u32 = 1;
const F_MORE: u32 = 2;
fn buf_flags(bid: u16, more: bool) -> u32 {
    F_BUFFER | (u32::from(bid) << 16) | if more { F_MORE } else { 0 }
}

fn state() -> State {
    State::new(BufRing::new(8, 64).unwrap(), 4)
}

/// A connected slot with its receive armed, as token 7; the turn's submissions cleared.
fn connected(st: &mut State) -> u32 {
    let idx = st.take_slot().unwrap();
    st.open(idx, Token(7));
    let mut ev = Vec::new();
    st.complete(&mut ev, user_data(idx, OP_CONNECT), libc::POLLOUT as i32, 0);
    assert_eq!(ev.len(), 1);
    assert!(ev[0].writable && !ev[0].readable, "{ev:?}");
    st.arm_recv(idx);
    assert_eq!(st.sqes.len(), 2, "the connect's poll, then the receive");
    assert_eq!(st.sqes[1].get_user_data(), user_data(idx, OP_RECV));
    st.sqes.clear();
    st.new_turn();
    idx
}

/// The kernel's part of a receive: `data` lands in buffer `bid`.
fn land(st: &mut State, bid: u16, data: &[u8]) -> i32 {
    let at = bid as usize * st.bufs.size;
    st.bufs.bufs[at..at + data.len()].copy_from_slice(data);
    data.len() as i32
}

#[test]
fn a_connect_completion_is_writable_and_a_refused_one_readable_too() {
    let mut st = state();
    let idx = st.take_slot().unwrap();
    st.open(idx, Token(3));
    let mut ev = Vec::new();
    let res = (libc::POLLOUT | libc::POLLERR | libc::POLLHUP) as i32;
    st.complete(&mut ev, user_data(idx, OP_CONNECT), res, 0);
    assert_eq!(
        ev,
        [Ready {
            token: Token(3),
            readable: true,
            writable: true,
            read_closed: false
        }]
    );
}

#[test]
fn received_data_is_one_readable_event_per_turn_read_short_then_would_block() {
    let mut st = state();
    let idx = connected(&mut st);
    let mut ev = Vec::new();
    let n = land(&mut st, 2, b"HTTP/1.1 200 OK\r\n");
    st.complete(&mut ev, user_data(idx, OP_RECV), n, buf_flags(2, true));
    let m = land(&mut st, 5, b"content-length: 0\r\n\r\n");
    st.complete(&mut ev, user_data(idx, OP_RECV), m, buf_flags(5, true));
    // Two completions of one connection in one turn: one event, as epoll gives.
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert!(ev[0].readable && !ev[0].read_closed && ev[0].token == Token(7));
    let mut buf = [0u8; 256];
    let got = st.read(idx, &mut buf).unwrap();
    // Short: drained (the next bytes come with a new event).
    assert_eq!(&buf[..got], b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n");
    let e = st.read(idx, &mut buf).unwrap_err();
    assert_eq!(e.kind(), IoKind::WouldBlock);
    // Both buffers went back to the kernel's ring.
    assert_eq!(st.bufs.tail, 8 + 2);
    // Still armed (the completions said more): nothing to re-arm.
    st.new_turn();
    assert!(st.sqes.is_empty());
}

#[test]
fn a_read_smaller_than_the_data_keeps_the_rest_for_the_next_read() {
    let mut st = state();
    let idx = connected(&mut st);
    let mut ev = Vec::new();
    let n = land(&mut st, 0, b"0123456789");
    st.complete(&mut ev, user_data(idx, OP_RECV), n, buf_flags(0, true));
    let mut small = [0u8; 4];
    assert_eq!(st.read(idx, &mut small).unwrap(), 4);
    assert_eq!(&small, b"0123");
    assert_eq!(st.bufs.tail, 8, "the buffer is kept while partly read");
    let mut rest = [0u8; 16];
    assert_eq!(st.read(idx, &mut rest).unwrap(), 6);
    assert_eq!(&rest[..6], b"456789");
    assert_eq!(st.bufs.tail, 9);
}

#[test]
fn the_peer_end_is_read_closed_and_reads_as_eof_after_the_data() {
    let mut st = state();
    let idx = connected(&mut st);
    let mut ev = Vec::new();
    let n = land(&mut st, 1, b"bye");
    st.complete(&mut ev, user_data(idx, OP_RECV), n, buf_flags(1, true));
    st.complete(&mut ev, user_data(idx, OP_RECV), 0, 0);
    assert_eq!(ev.len(), 1);
    assert!(ev[0].readable && ev[0].read_closed, "{ev:?}");
    let mut buf = [0u8; 16];
    assert_eq!(st.read(idx, &mut buf).unwrap(), 3);
    assert_eq!(st.read(idx, &mut buf).unwrap(), 0);
    // Ended: not armed again.
    st.new_turn();
    assert!(st.sqes.is_empty());
}

#[test]
fn a_receive_out_of_buffers_is_armed_again_next_turn() {
    let mut st = state();
    let idx = connected(&mut st);
    let mut ev = Vec::new();
    st.complete(&mut ev, user_data(idx, OP_RECV), -libc::ENOBUFS, 0);
    assert!(ev.is_empty(), "no data, no event: {ev:?}");
    // Data with the multishot ended (no F_MORE): also armed again.
    let idx2 = connected(&mut st);
    let n = land(&mut st, 4, b"x");
    st.complete(&mut ev, user_data(idx2, OP_RECV), n, buf_flags(4, false));
    assert_eq!(ev.len(), 1);
    st.new_turn();
    let armed: Vec<u64> = st.sqes.iter().map(|e| e.get_user_data()).collect();
    assert_eq!(armed.len(), 2, "{armed:?}");
    assert!(armed.contains(&user_data(idx, OP_RECV)) && armed.contains(&user_data(idx2, OP_RECV)));
}

#[test]
fn writes_queue_behind_the_send_in_flight_and_a_short_send_goes_on() {
    let mut st = state();
    let idx = connected(&mut st);
    assert_eq!(st.write(idx, b"GET / HTTP/1.1\r\n\r\n").unwrap(), 18);
    assert_eq!(st.sqes.len(), 1);
    // The caller's bytes were copied: the send points at the slot's own buffer.
    assert_eq!(
        &st.slots[idx as usize].inflight[..],
        b"GET / HTTP/1.1\r\n\r\n"
    );
    assert_eq!(st.write(idx, b"more").unwrap(), 4);
    assert_eq!(st.sqes.len(), 1, "one send in flight per connection");
    let mut ev = Vec::new();
    // The kernel took 10 bytes: the rest goes at once.
    st.complete(&mut ev, user_data(idx, OP_SEND), 10, 0);
    assert_eq!(st.sqes.len(), 2);
    assert_eq!(st.slots[idx as usize].sent, 10);
    st.complete(&mut ev, user_data(idx, OP_SEND), 8, 0);
    // Done: the queued output is the next send.
    assert_eq!(st.sqes.len(), 3);
    assert_eq!(&st.slots[idx as usize].inflight[..], b"more");
    st.complete(&mut ev, user_data(idx, OP_SEND), 4, 0);
    assert_eq!(st.sqes.len(), 3);
    assert!(ev.is_empty(), "no writer waited: no event: {ev:?}");
    assert_eq!(st.slots[idx as usize].ops, 1, "only the receive");
}

#[test]
fn a_full_output_says_would_block_then_writable_when_it_drains() {
    let mut st = state();
    let idx = connected(&mut st);
    let big = vec![b'a'; OUT_CAP];
    assert_eq!(st.write(idx, &big).unwrap(), OUT_CAP);
    assert_eq!(st.write(idx, b"b").unwrap_err().kind(), IoKind::WouldBlock);
    let mut ev = Vec::new();
    st.complete(&mut ev, user_data(idx, OP_SEND), OUT_CAP as i32, 0);
    assert_eq!(ev.len(), 1);
    assert!(ev[0].writable && !ev[0].readable, "{ev:?}");
    assert_eq!(st.write(idx, b"b").unwrap(), 1);
}

#[test]
fn a_failed_send_shows_on_the_next_read_and_write() {
    let mut st = state();
    let idx = connected(&mut st);
    st.write(idx, b"GET /").unwrap();
    let mut ev = Vec::new();
    st.complete(&mut ev, user_data(idx, OP_SEND), -libc::ECONNRESET, 0);
    assert_eq!(ev.len(), 1);
    assert!(ev[0].readable && ev[0].writable);
    let mut buf = [0u8; 8];
    assert_eq!(
        st.read(idx, &mut buf).unwrap_err().kind(),
        IoKind::ConnectionReset
    );
    assert_eq!(
        st.write(idx, b"x").unwrap_err().kind(),
        IoKind::ConnectionReset
    );
}

#[test]
fn a_closed_connection_cancels_its_operations_and_frees_its_slot_after_them() {
    let mut st = state();
    let idx = connected(&mut st);
    let mut ev = Vec::new();
    let n = land(&mut st, 6, b"unread");
    st.complete(&mut ev, user_data(idx, OP_RECV), n, buf_flags(6, true));
    st.write(idx, b"GET /").unwrap();
    st.sqes.clear();
    st.new_turn();
    ev.clear();
    st.close(idx);
    // The unread buffer went back; one cancel for the receive and the send.
    assert_eq!(st.bufs.tail, 8 + 1);
    assert_eq!(st.sqes.len(), 1);
    assert_eq!(st.sqes[0].get_user_data(), user_data(idx, OP_CANCEL));
    // Late completions of the closed connection: no event, buffers returned.
    let n = land(&mut st, 7, b"late");
    st.complete(&mut ev, user_data(idx, OP_RECV), n, buf_flags(7, true));
    st.complete(&mut ev, user_data(idx, OP_SEND), -libc::ECANCELED, 0);
    st.complete(&mut ev, user_data(idx, OP_RECV), -libc::ECANCELED, 0);
    assert!(st.closed.is_empty(), "the cancel is still in flight");
    st.complete(&mut ev, user_data(idx, OP_CANCEL), 2, 0);
    assert!(ev.is_empty(), "{ev:?}");
    assert_eq!(st.bufs.tail, 8 + 2);
    assert_eq!(st.closed, [idx]);
    // A connection closed with nothing in flight is released at once.
    let other = st.take_slot().unwrap();
    st.open(other, Token(9));
    st.complete(
        &mut ev,
        user_data(other, OP_CONNECT),
        libc::POLLOUT as i32,
        0,
    );
    st.close(other);
    assert_eq!(st.closed, [idx, other]);
}

#[test]
fn slots_run_out_at_the_fixed_file_table_size() {
    let mut st = state();
    for _ in 0..4 {
        st.take_slot().unwrap();
    }
    assert_eq!(
        st.take_slot().unwrap_err().raw_os_error(),
        Some(libc::EMFILE)
    );
}

#[test]
fn the_kernel_is_given_buffers_as_it_runs_low_not_all_at_once() {
    let mut b = BufRing::new(256, 64).unwrap();
    // Only BUFS_AHEAD of them: the others are never touched by a thread that does not need
    // them (100,000 idle connections would otherwise keep 8 MiB a thread resident).
    assert_eq!(b.tail, BUFS_AHEAD);
    // The kernel fills 10 buffers; two come back read: the next turn gives 8 new ones.
    for _ in 0..10 {
        b.taken();
    }
    b.give(0);
    b.give(1);
    b.publish();
    assert_eq!(b.held, BUFS_AHEAD);
    assert_eq!(b.fresh, BUFS_AHEAD + 8);
    assert_eq!(b.published, b.tail);
    // Read back as they come (the steady state): nothing new is handed over.
    for bid in 2..10 {
        b.taken();
        b.give(bid);
    }
    b.publish();
    assert_eq!(b.fresh, BUFS_AHEAD + 8);
    // Under a backlog it grows to all of them, and no further.
    for _ in 0..300 {
        b.taken();
        b.publish();
    }
    assert_eq!(b.fresh, 256);
    assert_eq!(b.held, 0);
}

#[test]
fn buffers_written_together_go_out_in_one_send() {
    let mut st = state();
    let idx = connected(&mut st);
    let n = st
        .write_vectored(
            idx,
            &[
                io::IoSlice::new(b"record one,"),
                io::IoSlice::new(b""),
                io::IoSlice::new(b"record two"),
            ],
        )
        .unwrap();
    assert_eq!(n, 21);
    assert_eq!(st.sqes.len(), 1, "one send");
    assert_eq!(
        &st.slots[idx as usize].inflight[..],
        b"record one,record two"
    );
    // Past the output's cap: what fits, then WouldBlock.
    let big = vec![b'a'; OUT_CAP];
    let n = st
        .write_vectored(idx, &[io::IoSlice::new(&big), io::IoSlice::new(b"b")])
        .unwrap();
    assert_eq!(n, OUT_CAP - 21);
    assert_eq!(
        st.write_vectored(idx, &[io::IoSlice::new(b"c")])
            .unwrap_err()
            .kind(),
        IoKind::WouldBlock
    );
}

/// On a real ring: connect, a request out and its answer back, through the registered ring
/// index each enter names (and `NO_IOWAIT` where the kernel has it: a flag it refused would
/// fail every wait).
#[test]
fn a_round_trip_on_a_real_ring_entered_by_its_registered_index() {
    if let Err(why) = probe() {
        eprintln!("skipped: io_uring refused: {why}");
        return;
    }
    use std::time::Duration;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let opened = super::super::Opened::open(crate::metrics::IoBackend::Uring).unwrap();
    let mut poller = Uring::start(opened).unwrap();
    // 5.18+ (every kernel with the single-issuer rings the backend asks for first).
    assert!(poller.shared.borrow().enter.registered);
    let mut sock = UringSocket::connect(addr, None).unwrap();
    sock.register(poller.registry(), Token(5)).unwrap();
    let (mut server, _) = listener.accept().unwrap();
    let mut ev = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(5);
    let turn = |poller: &mut Uring, ev: &mut Vec<Ready>| {
        assert!(Instant::now() < deadline, "no progress in 5 s");
        let wake = Instant::now() + Duration::from_millis(50);
        poller.wait(ev, Some(wake)).unwrap();
    };
    while !sock.established().unwrap() {
        turn(&mut poller, &mut ev);
    }
    assert_eq!(sock.write(b"ping").unwrap(), 4);
    turn(&mut poller, &mut ev);
    let mut got = [0u8; 4];
    server.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"ping");
    server.write_all(b"pong").unwrap();
    let mut buf = [0u8; 16];
    loop {
        turn(&mut poller, &mut ev);
        if ev.iter().any(|e| e.token == Token(5) && e.readable) {
            break;
        }
    }
    assert_eq!(sock.read(&mut buf).unwrap(), 4);
    assert_eq!(&buf[..4], b"pong");
}
