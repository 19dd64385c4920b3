//! The io_uring backend: one ring per worker thread.
//!
//! Each connection's socket is a registered (fixed) file. Once connected it has a multishot
//! receive armed, which lands the server's bytes in buffers of the thread's provided-buffer
//! ring (handed to the kernel as it runs low, so that only the buffers a thread's traffic
//! needs are ever touched); `read` copies them out and hands the buffer back. `write` queues
//! the bytes (copied into the connection's own output buffer, which stays put until the send
//! completes: the caller's may not, TLS records and HTTP/2 frames are built in buffers that
//! are reused) and a send submission. Nothing reaches the kernel until the loop's `wait`: one
//! `io_uring_enter` per turn (naming the ring by its registered index) submits every queued
//! send and re-armed receive and waits for completions, with the loop's wake-up time as its
//! timeout (no timerfd, no millisecond rounding).
//!
//! Completions become the readiness epoll would report ([`Ready`]): data, end of stream or an
//! error on a connection make it readable; a completed connect, or a send completing while a
//! write waited for room, make it writable. The protocols and transports above do not know
//! which backend runs (see `io/mod.rs`).
use super::{Poller, Ready, Socket};
use crate::engine::transport::{connect_tcp, tcp_established};
use crate::metrics::ErrorKind;
use io_uring::{cqueue, opcode, squeue, types, IoUring};
use mio::net::TcpStream;
use mio::Token;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{self, ErrorKind as IoKind, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::rc::Rc;
use std::sync::OnceLock;
use std::time::Instant;

/// Submission queue size; the completion queue is 4× (a turn's receives, sends and connects).
const SQ_ENTRIES: u32 = 1024;
/// Provided buffers per thread, and their size: up to 8 MiB a thread, so that a thousand
/// connections can each have an answer waiting; a small answer fits one buffer whole. (Out of
/// buffers, a connection's receive ends and is armed again once some are read.)
const BUFS: u16 = 1024;
const BUF_SIZE: usize = 8 * 1024;
/// Buffers the kernel is kept supplied with: more are handed over (from those never used
/// yet) only when it holds fewer. The kernel takes buffers round the ring, so every buffer
/// ever given ends up touched (resident): a thread whose answers are read as they come
/// (100,000 idle connections, a closed loop of 50) keeps 64 × 8 KiB, not 8 MiB.
const BUFS_AHEAD: u16 = 64;
const BGID: u16 = 0;
/// Output a connection may queue before `write` says WouldBlock (a large request body).
const OUT_CAP: usize = 1 << 20;
/// Fixed-file slots per ring (connections a thread may hold), capped by the fd limit: the
/// kernel's own maximum (8 bytes of kernel memory a slot).
const MAX_FILES: u32 = 1 << 20;

/// The operation a completion belongs to (the low byte of its user data; the slot above).
const OP_RECV: u64 = 1;
const OP_SEND: u64 = 2;
const OP_CONNECT: u64 = 3;
const OP_CANCEL: u64 = 4;
/// `IORING_ENTER_*` and `IORING_(UN)REGISTER_RING_FDS` (the crate keeps its `sys` private).
const ENTER_GETEVENTS: u32 = 1;
const ENTER_EXT_ARG: u32 = 1 << 3;
const ENTER_REGISTERED_RING: u32 = 1 << 4;
const ENTER_NO_IOWAIT: u32 = 1 << 7;
const REGISTER_RING_FDS: u32 = 20;
const UNREGISTER_RING_FDS: u32 = 21;

fn user_data(idx: u32, op: u64) -> u64 {
    (u64::from(idx) << 8) | op
}

/// Why io_uring cannot run here, probed once per process: the ring, the opcodes the backend
/// uses, the provided-buffer ring and a multishot receive that really stays armed (a kernel
/// may know the opcode but not the flag).
pub(super) fn probe() -> Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE.get_or_init(probe_now).clone()
}

fn probe_now() -> Result<(), String> {
    let (mut ring, _) = new_ring(8, false).map_err(|e| format!("io_uring_setup: {e}"))?;
    let mut p = io_uring::Probe::new();
    ring.submitter()
        .register_probe(&mut p)
        .map_err(|e| format!("opcode probe: {e}"))?;
    for (code, name) in [
        (opcode::RecvMulti::CODE, "recv"),
        (opcode::Send::CODE, "send"),
        (opcode::PollAdd::CODE, "poll"),
        (opcode::AsyncCancel2::CODE, "cancel"),
    ] {
        if !p.is_supported(code) {
            return Err(format!("the kernel lacks the {name} opcode"));
        }
    }
    ring.submitter()
        .register_files_sparse(4)
        .map_err(|e| format!("fixed files: {e}"))?;
    let mut bufs = BufRing::new(4, 64).map_err(|e| format!("buffer ring: {e}"))?;
    bufs.register(&ring)
        .map_err(|e| format!("buffer ring: {e}"))?;
    // A socket pair: arm a multishot receive, send twice, expect two completions that say
    // "more to come".
    let mut fds = [0; 2];
    // SAFETY: plain syscall filling a 2-int array.
    if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, fds.as_mut_ptr()) } != 0 {
        return Err(format!("socketpair: {}", io::Error::last_os_error()));
    }
    // SAFETY: both fds were just created and are owned here alone.
    let (a, b) = unsafe {
        use std::os::fd::FromRawFd;
        (
            std::os::unix::net::UnixStream::from_raw_fd(fds[0]),
            std::os::unix::net::UnixStream::from_raw_fd(fds[1]),
        )
    };
    ring.submitter()
        .register_files_update(0, &[a.as_raw_fd()])
        .map_err(|e| format!("fixed files: {e}"))?;
    let recv = opcode::RecvMulti::new(types::Fixed(0), 0)
        .build()
        .user_data(1);
    // SAFETY: the entry refers to no memory of ours (the buffers are the registered ring's).
    unsafe { ring.submission().push(&recv) }.map_err(|_| "submission queue full".to_string())?;
    let mut got = 0;
    for _ in 0..2 {
        (&b).write_all(b"x").map_err(|e| e.to_string())?;
        ring.submit_and_wait(1)
            .map_err(|e| format!("io_uring_enter: {e}"))?;
        for c in ring.completion() {
            if c.result() != 1 || !cqueue::more(c.flags()) {
                return Err(format!(
                    "multishot receive unsupported (result {})",
                    c.result()
                ));
            }
            got += 1;
        }
    }
    drop((a, b));
    drop(ring);
    drop(bufs);
    if got == 0 {
        return Err("multishot receive gave no completion".to_string());
    }
    Ok(())
}

/// A ring with the cheapest completion handling the kernel offers: task work deferred to our
/// own `io_uring_enter` (6.1+) on a single issuer, else cooperative (5.19+), else plain.
/// `disabled`: the single-issuer ring is enabled later, on the thread that will use it; the
/// flag returned says whether it must be.
fn new_ring(entries: u32, disabled: bool) -> io::Result<(IoUring, bool)> {
    let mut b = IoUring::builder();
    b.setup_cqsize(entries * 4)
        .setup_single_issuer()
        .setup_defer_taskrun();
    if disabled {
        b.setup_r_disabled();
    }
    if let Ok(r) = b.build(entries) {
        return Ok((r, disabled));
    }
    let mut b = IoUring::builder();
    b.setup_cqsize(entries * 4).setup_coop_taskrun();
    if let Ok(r) = b.build(entries) {
        return Ok((r, false));
    }
    let r = IoUring::builder()
        .setup_cqsize(entries * 4)
        .build(entries)?;
    Ok((r, false))
}

/// The provided-buffer ring: the ring of buffer descriptors the kernel picks from (page
/// aligned, shared with the kernel) and the buffers themselves.
struct BufRing {
    ring: *mut types::BufRingEntry,
    layout: std::alloc::Layout,
    bufs: Box<[u8]>,
    count: u16,
    size: usize,
    /// The tail as we advanced it; published to the kernel once per turn.
    tail: u16,
    published: u16,
    /// Buffers the kernel has (given, their completion not yet seen).
    held: u16,
    /// Buffers `fresh..count` were never given: the reserve `top_up` draws on.
    fresh: u16,
}

impl BufRing {
    fn new(count: u16, size: usize) -> io::Result<BufRing> {
        let layout = std::alloc::Layout::from_size_align(count as usize * 16, 4096)
            .map_err(io::Error::other)?;
        // SAFETY: a non-zero layout; the memory is freed in Drop with the same layout.
        let ring = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<types::BufRingEntry>();
        if ring.is_null() {
            return Err(io::Error::from(IoKind::OutOfMemory));
        }
        let mut r = BufRing {
            ring,
            layout,
            bufs: vec![0u8; count as usize * size].into_boxed_slice(),
            count,
            size,
            tail: 0,
            published: 0,
            held: 0,
            fresh: 0,
        };
        r.top_up();
        r.publish();
        Ok(r)
    }

    /// Gives the kernel buffers never used yet while it holds fewer than `BUFS_AHEAD`.
    fn top_up(&mut self) {
        while self.held < BUFS_AHEAD && self.fresh < self.count {
            self.give(self.fresh);
            self.fresh += 1;
        }
    }

    /// A completion carried buffer `bid`: the kernel no longer has it.
    fn taken(&mut self) {
        self.held = self.held.saturating_sub(1);
    }

    fn register(&mut self, ring: &IoUring) -> io::Result<()> {
        // SAFETY: the descriptor ring lives as long as `self`, which its owner drops after
        // the io_uring (the `Ring` field order).
        unsafe {
            ring.submitter()
                .register_buf_ring_with_flags(self.ring as u64, self.count, BGID, 0)
        }
    }

    /// Hands buffer `bid` back to the kernel (seen once published).
    fn give(&mut self, bid: u16) {
        let i = (self.tail & (self.count - 1)) as usize;
        // SAFETY: `i` < count, within the allocation; the kernel reads entries only up to
        // the published tail, which does not cover this one yet.
        let e = unsafe { &mut *self.ring.add(i) };
        e.set_addr(self.bufs[bid as usize * self.size..].as_ptr() as u64);
        e.set_len(self.size as u32);
        e.set_bid(bid);
        self.tail = self.tail.wrapping_add(1);
        self.held += 1;
    }

    /// Shows the kernel the buffers given since the last turn, topped up first.
    fn publish(&mut self) {
        self.top_up();
        if self.tail == self.published {
            return;
        }
        // SAFETY: the tail field of the first entry, as the kernel's ABI places it; the
        // release store makes the entries written before it visible first.
        unsafe {
            let tail = types::BufRingEntry::tail(self.ring).cast_mut();
            (*tail.cast::<std::sync::atomic::AtomicU16>())
                .store(self.tail, std::sync::atomic::Ordering::Release);
        }
        self.published = self.tail;
    }

    fn bytes(&self, bid: u16, from: usize, to: usize) -> &[u8] {
        &self.bufs[bid as usize * self.size + from..bid as usize * self.size + to]
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ring.cast(), self.layout) };
    }
}

/// One fixed-file slot: a connection's state between the kernel's completions and its
/// transport's reads and writes.
#[derive(Default)]
struct Slot {
    token: usize,
    /// The socket is still its owner's (not closed).
    live: bool,
    /// Submissions of this slot the kernel has not completed (the slot is reused only at 0).
    ops: u32,
    recv_armed: bool,
    /// Received bytes not yet read: (buffer id, length), and how much of the first is read.
    rx: VecDeque<(u16, u32)>,
    rx_off: u32,
    eof: bool,
    err: Option<i32>,
    /// Output queued since the send in flight, and the send in flight (its bytes stay here,
    /// unmoved, until its completion).
    out: Vec<u8>,
    inflight: Vec<u8>,
    sent: usize,
    sending: bool,
    /// A write found the output full: say writable when it drains.
    want_write: bool,
    /// 1 + its index in this turn's events, 0 when it has none.
    event: u32,
}

/// The connections' side of a thread's ring, apart from the kernel: what completions do to
/// the slots and which readiness they make, what reads and writes take and queue. It only
/// queues submissions (`sqes`); [`Ring`] hands them to the kernel. (Unit-tested on scripted
/// completions, `uring_tests.rs`.)
struct State {
    bufs: BufRing,
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Fixed-file slots the ring has (connections this thread may hold).
    files: u32,
    /// Slots whose multishot receive ended (out of buffers) and must be armed again.
    rearm: Vec<u32>,
    /// Slots with an event this turn (their `event` marks are reset on the next turn).
    marked: Vec<u32>,
    /// Slots whose last operation completed after they were closed: unregistered next turn.
    closed: Vec<u32>,
    /// Submissions queued this turn.
    sqes: Vec<squeue::Entry>,
}

impl State {
    fn new(bufs: BufRing, files: u32) -> State {
        State {
            bufs,
            slots: Vec::new(),
            free: Vec::new(),
            files,
            rearm: Vec::new(),
            marked: Vec::new(),
            closed: Vec::new(),
            sqes: Vec::with_capacity(SQ_ENTRIES as usize),
        }
    }

    fn take_slot(&mut self) -> io::Result<u32> {
        if let Some(i) = self.free.pop() {
            return Ok(i);
        }
        if (self.slots.len() as u32) < self.files {
            self.slots.push(Slot::default());
            return Ok(self.slots.len() as u32 - 1);
        }
        Err(io::Error::from_raw_os_error(libc::EMFILE))
    }

    /// A connecting socket registered in slot `idx` as `token`: its connect's end is asked
    /// for (a one-shot poll for writability, as epoll would report it).
    fn open(&mut self, idx: u32, token: Token) {
        let s = &mut self.slots[idx as usize];
        debug_assert!(s.rx.is_empty() && s.out.is_empty());
        s.token = token.0;
        s.live = true;
        s.ops = 1;
        s.recv_armed = false;
        s.eof = false;
        s.err = None;
        s.rx_off = 0;
        s.inflight.clear();
        s.sending = false;
        s.want_write = false;
        s.event = 0;
        self.sqes.push(
            opcode::PollAdd::new(types::Fixed(idx), libc::POLLOUT as u32)
                .build()
                .user_data(user_data(idx, OP_CONNECT)),
        );
    }

    fn arm_recv(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        if s.recv_armed || !s.live || s.eof || s.err.is_some() {
            return;
        }
        s.recv_armed = true;
        s.ops += 1;
        self.sqes.push(
            opcode::RecvMulti::new(types::Fixed(idx), BGID)
                .build()
                .user_data(user_data(idx, OP_RECV)),
        );
    }

    /// Submits the queued output of `idx` when no send is in flight.
    fn start_send(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        if s.sending || s.out.is_empty() || !s.live {
            return;
        }
        std::mem::swap(&mut s.out, &mut s.inflight);
        s.sent = 0;
        self.send_rest(idx);
    }

    /// A send of what `inflight` holds past `sent`.
    fn send_rest(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        s.sending = true;
        s.ops += 1;
        let rest = &s.inflight[s.sent..];
        self.sqes.push(
            opcode::Send::new(types::Fixed(idx), rest.as_ptr(), rest.len() as u32)
                .build()
                .user_data(user_data(idx, OP_SEND)),
        );
    }

    /// Notes readiness of slot `idx` in this turn's events (one entry per connection).
    fn mark(
        &mut self,
        events: &mut Vec<Ready>,
        idx: u32,
        readable: bool,
        writable: bool,
        closed: bool,
    ) {
        let s = &mut self.slots[idx as usize];
        if !s.live {
            return;
        }
        if s.event == 0 {
            events.push(Ready {
                token: Token(s.token),
                readable: false,
                writable: false,
                read_closed: false,
            });
            s.event = events.len() as u32;
            self.marked.push(idx);
        }
        let r = &mut events[s.event as usize - 1];
        r.readable |= readable;
        r.writable |= writable;
        r.read_closed |= closed;
    }

    /// A new turn: last turn's event marks are cleared.
    fn new_turn(&mut self) {
        for idx in self.marked.drain(..) {
            self.slots[idx as usize].event = 0;
        }
        while let Some(idx) = self.rearm.pop() {
            self.arm_recv(idx);
        }
    }

    /// Turns one completion into the slot's state and readiness.
    fn complete(&mut self, events: &mut Vec<Ready>, ud: u64, res: i32, flags: u32) {
        let idx = (ud >> 8) as u32;
        let op = ud & 0xFF;
        let Some(s) = self.slots.get_mut(idx as usize) else {
            return;
        };
        match op {
            OP_RECV => {
                let more = cqueue::more(flags);
                if !more {
                    s.ops -= 1;
                    s.recv_armed = false;
                }
                if let Some(bid) = cqueue::buffer_select(flags) {
                    self.bufs.taken();
                    if res > 0 && s.live {
                        s.rx.push_back((bid, res as u32));
                    } else {
                        self.bufs.give(bid);
                    }
                }
                let s = &mut self.slots[idx as usize];
                match res {
                    n if n > 0 => {
                        // A multishot receive may end while the stream goes on (its
                        // buffers ran out): armed again next turn.
                        if !more {
                            self.rearm.push(idx);
                        }
                        self.mark(events, idx, true, false, false);
                    }
                    0 => {
                        s.eof = true;
                        self.mark(events, idx, true, false, true);
                    }
                    e if e == -libc::ENOBUFS => self.rearm.push(idx),
                    e if e == -libc::ECANCELED => {}
                    e => {
                        s.err = Some(-e);
                        self.mark(events, idx, true, true, false);
                    }
                }
            }
            OP_SEND => {
                s.ops -= 1;
                s.sending = false;
                if !s.live || res == -libc::ECANCELED {
                    // Closed meanwhile: nothing to say.
                } else if res < 0 {
                    s.err = Some(-res);
                    self.mark(events, idx, true, true, false);
                } else {
                    s.sent += res as usize;
                    if res > 0 && s.sent < s.inflight.len() {
                        self.send_rest(idx);
                    } else {
                        s.inflight.clear();
                        let waiting = std::mem::take(&mut s.want_write);
                        self.start_send(idx);
                        if waiting {
                            self.mark(events, idx, false, true, false);
                        }
                    }
                }
            }
            OP_CONNECT => {
                s.ops -= 1;
                let bad = res < 0 || (res as i16 & (libc::POLLERR | libc::POLLHUP)) != 0;
                self.mark(events, idx, bad, true, false);
            }
            _ => s.ops -= 1, // OP_CANCEL
        }
        let s = &self.slots[idx as usize];
        if !s.live && s.ops == 0 && !self.closed.contains(&idx) {
            self.closed.push(idx);
        }
    }

    /// The socket's owner let go of it: its operations are cancelled, its unread buffers
    /// returned; the slot is released once the kernel completed them all.
    fn close(&mut self, idx: u32) {
        let s = &mut self.slots[idx as usize];
        if !s.live {
            return;
        }
        s.live = false;
        s.out.clear();
        s.want_write = false;
        s.rx_off = 0;
        for (bid, _) in s.rx.drain(..) {
            self.bufs.give(bid);
        }
        if s.ops > 0 {
            s.ops += 1;
            self.sqes.push(
                opcode::AsyncCancel2::new(types::CancelBuilder::fd(types::Fixed(idx)).all())
                    .build()
                    .user_data(user_data(idx, OP_CANCEL)),
            );
        } else {
            self.closed.push(idx);
        }
    }

    /// Copies received bytes out of the provided buffers (each handed back once read whole);
    /// short when nothing more has arrived: the next completion is a new readiness event.
    fn read(&mut self, idx: u32, buf: &mut [u8]) -> io::Result<usize> {
        let s = &mut self.slots[idx as usize];
        let mut n = 0;
        while n < buf.len() {
            let Some(&(bid, len)) = s.rx.front() else {
                break;
            };
            let from = s.rx_off as usize;
            let take = (len as usize - from).min(buf.len() - n);
            buf[n..n + take].copy_from_slice(self.bufs.bytes(bid, from, from + take));
            n += take;
            if from + take == len as usize {
                s.rx.pop_front();
                s.rx_off = 0;
                self.bufs.give(bid);
            } else {
                s.rx_off += take as u32;
            }
        }
        if n > 0 || buf.is_empty() {
            return Ok(n);
        }
        match (s.err, s.eof) {
            (Some(e), _) => Err(io::Error::from_raw_os_error(e)),
            (None, true) => Ok(0),
            (None, false) => Err(IoKind::WouldBlock.into()),
        }
    }

    /// Queues the bytes for the turn's submission; they are sent in order, one send in flight
    /// per connection. A send's error shows on the next read or write.
    fn write(&mut self, idx: u32, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(idx, &[io::IoSlice::new(buf)])
    }

    /// [`State::write`] of several buffers as one (rustls hands its records so): one send for
    /// them all, where a write each would send the first and queue the rest behind it, for
    /// the next turn.
    fn write_vectored(&mut self, idx: u32, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        let s = &mut self.slots[idx as usize];
        if let Some(e) = s.err {
            return Err(io::Error::from_raw_os_error(e));
        }
        let mut room = OUT_CAP.saturating_sub(s.out.len() + s.inflight.len());
        if room == 0 && bufs.iter().any(|b| !b.is_empty()) {
            s.want_write = true;
            return Err(IoKind::WouldBlock.into());
        }
        let mut n = 0;
        for b in bufs {
            let take = room.min(b.len());
            s.out.extend_from_slice(&b[..take]);
            n += take;
            room -= take;
            if room == 0 {
                break;
            }
        }
        self.start_send(idx);
        Ok(n)
    }
}

/// `struct io_uring_getevents_arg` and `struct __kernel_timespec`.
#[repr(C)]
struct GeteventsArg {
    sigmask: u64,
    sigmask_sz: u32,
    min_wait_usec: u32,
    ts: u64,
}

#[repr(C)]
struct KernelTimespec {
    sec: i64,
    nsec: i64,
}

/// `struct io_uring_rsrc_update`.
#[repr(C)]
struct RsrcUpdate {
    offset: u32,
    resv: u32,
    data: u64,
}

/// How `io_uring_enter` names the ring: its index among the thread's registered rings
/// (`IORING_REGISTER_RING_FDS`, 5.18+), which spares each enter a file lookup and its
/// reference count, else its fd.
#[derive(Clone, Copy)]
struct EnterFd {
    fd: i32,
    registered: bool,
    /// `IORING_ENTER_NO_IOWAIT` (6.15+): waiting for a server's answers is not waiting for
    /// a disk. Counted as iowait, an idle generator core reads as busy in iowait.
    no_iowait: bool,
}

impl EnterFd {
    /// Registers the ring's fd on the calling thread (the ring's only issuer); the fd itself
    /// where the kernel refuses.
    fn register(ring: &IoUring) -> EnterFd {
        let fd = ring.as_raw_fd();
        let mut up = RsrcUpdate {
            offset: u32::MAX,
            resv: 0,
            data: fd as u64,
        };
        // SAFETY: one `io_uring_rsrc_update`, read and written by the kernel.
        let n = unsafe {
            libc::syscall(
                libc::SYS_io_uring_register,
                fd,
                REGISTER_RING_FDS,
                std::ptr::addr_of_mut!(up),
                1u32,
            )
        };
        let no_iowait = ring.params().is_feature_no_iowait();
        if n == 1 {
            EnterFd {
                fd: up.offset as i32,
                registered: true,
                no_iowait,
            }
        } else {
            EnterFd {
                fd,
                registered: false,
                no_iowait,
            }
        }
    }

    /// Drops the registration (it holds a reference to the ring until its thread ends).
    fn unregister(self, ring: &IoUring) {
        if !self.registered {
            return;
        }
        let up = RsrcUpdate {
            offset: self.fd as u32,
            resv: 0,
            data: 0,
        };
        // SAFETY: as in `register`.
        unsafe {
            libc::syscall(
                libc::SYS_io_uring_register,
                ring.as_raw_fd(),
                UNREGISTER_RING_FDS,
                std::ptr::addr_of!(up),
                1u32,
            )
        };
    }

    /// Submits `to_submit` entries and runs the deferred completions; with a timeout, waits
    /// until `want` completions are there or it passes (`ETIME`).
    fn enter(
        self,
        to_submit: u32,
        want: u32,
        timeout: Option<std::time::Duration>,
    ) -> io::Result<()> {
        let mut flags = ENTER_GETEVENTS;
        if self.registered {
            flags |= ENTER_REGISTERED_RING;
        }
        if self.no_iowait {
            flags |= ENTER_NO_IOWAIT;
        }
        let ts;
        let arg;
        let (min, argp, argsz) = match timeout {
            Some(d) => {
                ts = KernelTimespec {
                    sec: d.as_secs() as i64,
                    nsec: i64::from(d.subsec_nanos()),
                };
                arg = GeteventsArg {
                    sigmask: 0,
                    sigmask_sz: 0,
                    min_wait_usec: 0,
                    ts: std::ptr::addr_of!(ts) as u64,
                };
                flags |= ENTER_EXT_ARG;
                (
                    want,
                    std::ptr::addr_of!(arg).cast::<libc::c_void>(),
                    std::mem::size_of::<GeteventsArg>(),
                )
            }
            None => (0, std::ptr::null(), 0),
        };
        // SAFETY: the argument (when given) and its timespec live until the call returns.
        let n = unsafe {
            libc::syscall(
                libc::SYS_io_uring_enter,
                self.fd,
                to_submit,
                min,
                flags,
                argp,
                argsz,
            )
        };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

/// A thread's ring and its connections' state, shared by the poller and the sockets (one
/// thread: `Rc<RefCell>`).
pub struct Ring {
    /// Dropped first: the kernel lets go of the buffers (in `state`) before they are freed.
    ring: IoUring,
    state: State,
    enter: EnterFd,
}

impl Ring {
    /// Hands the queued submissions to the submission queue (a full one is submitted first).
    fn queue(&mut self) {
        for e in self.state.sqes.drain(..) {
            // SAFETY: every entry points at memory that outlives its completion: slots'
            // `inflight` buffers (kept until the send completes) and the buffer ring.
            while unsafe { self.ring.submission().push(&e) }.is_err() {
                let _ = self.ring.submit();
            }
        }
    }

    /// Closed slots with nothing in flight: out of the fixed-file table (the socket's last
    /// reference: the kernel closes it) and free for the next connection.
    fn release_closed(&mut self) {
        while let Some(idx) = self.state.closed.pop() {
            let _ = self.ring.submitter().register_files_update(idx, &[-1]);
            self.state.free.push(idx);
        }
    }

    /// Every completion waiting, handled.
    fn reap(&mut self, events: &mut Vec<Ready>) {
        // Copied out in batches: the completion queue borrows the ring the handling needs.
        let mut batch = [(0u64, 0i32, 0u32); 64];
        loop {
            let mut n = 0;
            for c in self.ring.completion().take(batch.len()) {
                batch[n] = (c.user_data(), c.result(), c.flags());
                n += 1;
            }
            if n == 0 {
                return;
            }
            for &(ud, res, flags) in &batch[..n] {
                self.state.complete(events, ud, res, flags);
            }
        }
    }
}

impl Drop for Ring {
    /// The kernel may still hold sends over our buffers: cancel everything and wait (briefly)
    /// for the completions before the memory goes.
    fn drop(&mut self) {
        self.state.sqes.push(
            opcode::AsyncCancel2::new(types::CancelBuilder::any())
                .build()
                .user_data(user_data(u32::MAX >> 8, OP_CANCEL)),
        );
        self.queue();
        let end = Instant::now() + std::time::Duration::from_secs(1);
        let mut scratch = Vec::new();
        while self.state.slots.iter().any(|s| s.ops > 0) && Instant::now() < end {
            let ts = types::Timespec::new().nsec(10_000_000);
            let _ = self
                .ring
                .submitter()
                .submit_with_args(1, &types::SubmitArgs::new().timespec(&ts));
            self.reap(&mut scratch);
            self.state.sqes.clear();
        }
        self.enter.unregister(&self.ring);
    }
}

/// A thread's ring as opened before the threads start (disabled until its thread enables it:
/// a single-issuer ring belongs to the thread that enables it).
pub struct Opened {
    ring: IoUring,
    disabled: bool,
}

impl Opened {
    pub fn open() -> crate::Result<Opened> {
        new_ring(SQ_ENTRIES, true)
            .map(|(ring, disabled)| Opened { ring, disabled })
            .map_err(|e| crate::Error::runtime(format!("io_uring_setup: {e}")))
    }
}

pub struct Uring {
    shared: Rc<RefCell<Ring>>,
}

impl Poller for Uring {
    type Registry = Rc<RefCell<Ring>>;

    fn start(opened: super::Opened) -> crate::Result<Uring> {
        let super::Opened::Uring(opened) = opened else {
            return Err(crate::Error::runtime("io_uring worker given an epoll"));
        };
        let Opened { ring, disabled } = *opened;
        let fail =
            |what: &str, e: io::Error| crate::Error::runtime(format!("io_uring {what}: {e}"));
        if disabled {
            ring.submitter()
                .register_enable_rings()
                .map_err(|e| fail("enable", e))?;
        }
        let files = crate::engine::sys::raise_fd_limit().clamp(1, u64::from(MAX_FILES)) as u32;
        ring.submitter()
            .register_files_sparse(files)
            .map_err(|e| fail("fixed files", e))?;
        let mut bufs = BufRing::new(BUFS, BUF_SIZE).map_err(|e| fail("buffers", e))?;
        bufs.register(&ring).map_err(|e| fail("buffer ring", e))?;
        let state = State::new(bufs, files);
        let enter = EnterFd::register(&ring);
        Ok(Uring {
            shared: Rc::new(RefCell::new(Ring { ring, state, enter })),
        })
    }

    fn registry(&self) -> &Rc<RefCell<Ring>> {
        &self.shared
    }

    fn wait(&mut self, events: &mut Vec<Ready>, wake: Option<Instant>) -> io::Result<()> {
        let r = &mut *self.shared.borrow_mut();
        events.clear();
        r.state.new_turn();
        r.release_closed();
        r.queue();
        r.state.bufs.publish();
        let now = Instant::now();
        // Completions already waiting: only submit. Else wait until the wake-up time.
        let timeout = match wake {
            Some(w) if w > now && r.ring.completion().is_empty() => Some(w - now),
            // Not waiting, but completions must be reaped: GETEVENTS runs deferred work.
            _ => None,
        };
        let to_submit = r.ring.submission().len() as u32;
        // One completion ends the wait, a send's too: measured, asking for one beyond the
        // turn's own sends (with sends that complete within their enter) saved enters but
        // slept more often, and a sleep costs more than an enter (bench/README.md).
        let res = r.enter.enter(to_submit, 1, timeout);
        match res {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.raw_os_error(),
                    Some(libc::ETIME | libc::EINTR | libc::EBUSY)
                ) => {}
            Err(e) => return Err(e),
        }
        r.reap(events);
        Ok(())
    }
}

/// A TCP socket on the thread's ring. The fd is a mio stream (its non-blocking connect and
/// the connect's outcome are the epoll socket's); the ring uses it as a fixed file.
pub struct UringSocket {
    stream: TcpStream,
    ring: Option<(Rc<RefCell<Ring>>, u32)>,
    connected: bool,
}

impl UringSocket {
    fn slot<R>(&self, f: impl FnOnce(&mut Ring, u32) -> R) -> Option<R> {
        let (ring, idx) = self.ring.as_ref()?;
        Some(f(&mut ring.borrow_mut(), *idx))
    }
}

impl Socket for UringSocket {
    type Poller = Uring;

    fn connect(addr: SocketAddr, from: Option<IpAddr>) -> io::Result<UringSocket> {
        Ok(UringSocket {
            stream: connect_tcp(addr, from)?,
            ring: None,
            connected: false,
        })
    }

    /// Takes a fixed-file slot for the socket and asks for the connect's end (a one-shot
    /// poll for writability, as epoll would report it).
    fn register(&mut self, registry: &Rc<RefCell<Ring>>, token: Token) -> io::Result<()> {
        let r = &mut *registry.borrow_mut();
        let idx = r.state.take_slot()?;
        let fd = self.stream.as_raw_fd();
        if let Err(e) = r.ring.submitter().register_files_update(idx, &[fd]) {
            r.state.free.push(idx);
            return Err(e);
        }
        r.state.open(idx, token);
        self.ring = Some((Rc::clone(registry), idx));
        Ok(())
    }

    fn deregister(&mut self, _: &Rc<RefCell<Ring>>) -> io::Result<()> {
        if let Some((ring, idx)) = self.ring.take() {
            ring.borrow_mut().state.close(idx);
        }
        Ok(())
    }

    /// Once connected, the multishot receive is armed: from then on the server's bytes
    /// arrive without a readiness round trip.
    fn established(&mut self) -> Result<bool, ErrorKind> {
        if self.connected {
            return Ok(true);
        }
        let up = tcp_established(&self.stream)?;
        if up {
            self.connected = true;
            self.slot(|r, idx| r.state.arm_recv(idx));
        }
        Ok(up)
    }
}

impl Drop for UringSocket {
    fn drop(&mut self) {
        if let Some((ring, idx)) = self.ring.take() {
            ring.borrow_mut().state.close(idx);
        }
    }
}

impl Read for UringSocket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.slot(|r, idx| r.state.read(idx, buf))
            .unwrap_or_else(|| Err(IoKind::NotConnected.into()))
    }
}

impl Write for UringSocket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.slot(|r, idx| r.state.write(idx, buf))
            .unwrap_or_else(|| Err(IoKind::NotConnected.into()))
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        self.slot(|r, idx| r.state.write_vectored(idx, bufs))
            .unwrap_or_else(|| Err(IoKind::NotConnected.into()))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
#[path = "uring_tests.rs"]
mod tests;
