//! One connection slot's HTTP/1.1 exchange, split from the event loop so it can be tested with
//! a scripted transport: the loop hands it readiness events, it does the reads and writes and
//! answers with a [`Step`] (wait, connected, sent, response done, failed, read more later).
//! Pools, timers, retries' reconnects and metrics stay in the loop (`worker`).
use super::http::ResponseParser;
use super::protocol::Reuse;
use super::transport::Transport;
use super::Prepared;
use crate::metrics::ErrorKind;
use std::io::ErrorKind as IoKind;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// Slot unused (open loop) or user finished (closed loop).
    Free,
    Connecting,
    Writing,
    Reading,
    /// Connected, no request in flight (open loop: in the idle pool).
    Idle,
    /// Closed loop: waiting out the think time.
    Thinking,
}

/// What the loop must do after the connection handled an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// Nothing until the next readiness event.
    Wait,
    /// The connection is established: count it, then [`Conn::send`] the request.
    Connected,
    /// The whole request (this many bytes) is written; the response is awaited.
    Sent(usize),
    /// The response is complete; `reusable`: the connection may carry the next request.
    Done {
        status: u16,
        reusable: bool,
    },
    Failed(ErrorKind),
    /// The read budget of this turn is spent and data is likely left: call
    /// [`Conn::receive`] again next turn (edge-triggered epoll will not report it again).
    More,
    /// The server closed a connection with nothing in flight (its idle timeout): drop it.
    Dropped,
    /// The server sent bytes with no request outstanding: an answer nobody asked for, which
    /// must not be taken as the next request's. A `protocol` error; drop the connection.
    Stray,
}

pub(super) struct Conn<T> {
    pub stream: Option<T>,
    /// Bumped whenever the slot's socket changes, so stale events are ignored.
    pub gen: u32,
    pub phase: Phase,
    pub addr: usize,
    pub req: usize,
    pub intended: Instant,
    pub started: Instant,
    pub written: Instant,
    /// When the first byte of the response came.
    pub first_byte: Instant,
    pub connect_start: Instant,
    pub deadline: Instant,
    pub counted: bool,
    /// The current request was already retried once on a fresh connection.
    pub retried: bool,
    /// Response bytes of the current request.
    pub bytes: u64,
    /// A protocol whose connections the slots share (HTTP/2): the connection (its index,
    /// generation) the request waits on or is streamed on.
    pub link: Option<(usize, u32)>,
    /// Times the current request was sent again after the server left it unprocessed
    /// (HTTP/2's GOAWAY and REFUSED_STREAM).
    pub resends: u8,
    /// Request bytes written so far.
    sent: usize,
    /// Times the current request was written in full (a stale-race retry writes it twice):
    /// the loop counts a request as sent on its first delivery only.
    pub deliveries: u32,
    /// The request in flight asks the server to close (`Connection: close`).
    closing: bool,
    /// Requests started on the current socket.
    calls: u32,
    /// The server's FIN was seen on this socket (EPOLLRDHUP): do not reuse it.
    peer_closed: bool,
    parser: ResponseParser,
    /// Scenarios: the request rendered for this slot's user alone (the plain path sends the
    /// run's shared `requests[req]` and leaves this None).
    pub own: Option<Box<Prepared>>,
    /// Scenarios: the worker's user (visitor) this slot's connection belongs to; NO_USER
    /// when none. `req` is then 0 for a step's own request, 1 + its index in its page's
    /// burst for a burst's member.
    pub user: u32,
}

/// [`Conn::user`] of a slot no scenario user holds.
pub(super) const NO_USER: u32 = u32::MAX;

impl<T: Transport> Conn<T> {
    pub fn new(now: Instant) -> Conn<T> {
        Conn {
            stream: None,
            gen: 0,
            phase: Phase::Free,
            addr: 0,
            req: 0,
            intended: now,
            started: now,
            written: now,
            first_byte: now,
            connect_start: now,
            deadline: now,
            counted: false,
            retried: false,
            bytes: 0,
            link: None,
            resends: 0,
            sent: 0,
            deliveries: 0,
            closing: false,
            calls: 0,
            peer_closed: false,
            parser: ResponseParser::new(),
            own: None,
            user: NO_USER,
        }
    }

    pub fn in_flight(&self) -> bool {
        matches!(
            self.phase,
            Phase::Connecting | Phase::Writing | Phase::Reading
        )
    }

    /// A new request on this slot (the socket, if any, is the loop's to reuse or replace).
    pub fn begin(&mut self, req: usize, intended: Instant, counted: bool, now: Instant) {
        self.req = req;
        self.intended = intended;
        self.started = now;
        self.counted = counted;
        self.sent = 0;
        self.deliveries = 0;
        self.bytes = 0;
        self.retried = false;
        self.resends = 0;
    }

    /// A freshly connected (and registered) socket for the current request. The deadline is
    /// the request's own, cut short by the connect timeout.
    pub fn attach(
        &mut self,
        stream: T,
        now: Instant,
        timeout: Duration,
        connect_timeout: Duration,
    ) {
        self.stream = Some(stream);
        self.phase = Phase::Connecting;
        self.calls = 0;
        self.peer_closed = false;
        self.connect_start = now;
        self.deadline = (self.started + timeout).min(now + connect_timeout);
    }

    /// Takes the socket out (to deregister and close it); later events for it are stale.
    pub fn detach(&mut self) -> Option<T> {
        let s = self.stream.take();
        if s.is_some() {
            self.gen = self.gen.wrapping_add(1);
        }
        s
    }

    /// Handles one readiness event. `read_closed`: the peer's FIN came with it (edge-triggered:
    /// reported once, so it is remembered here, or the next request would be written to this
    /// socket and wait for an event that never comes).
    #[allow(clippy::too_many_arguments)]
    pub fn on_event(
        &mut self,
        readable: bool,
        writable: bool,
        read_closed: bool,
        requests: &[Prepared],
        reuse: Reuse,
        buf: &mut [u8],
        reads: usize,
        now: Instant,
    ) -> Step {
        if read_closed {
            self.peer_closed = true;
        }
        let readable = readable || read_closed;
        match self.phase {
            Phase::Connecting => match self.stream.as_mut().map(T::establish) {
                Some(Ok(true)) => Step::Connected,
                Some(Ok(false)) => Step::Wait, // spurious wakeup: still connecting
                Some(Err(kind)) => Step::Failed(kind),
                None => Step::Failed(ErrorKind::Other),
            },
            Phase::Writing if writable => self.send_current(requests, reuse, now),
            Phase::Writing | Phase::Reading if readable => self.receive(buf, reads, reuse),
            Phase::Reading if writable && self.stream.as_ref().is_some_and(T::wants_write) => {
                match self.stream.as_mut().map(T::flush) {
                    Some(Err(e)) if e.kind() != IoKind::WouldBlock => {
                        Step::Failed(ErrorKind::from_io(&e, false))
                    }
                    _ => Step::Wait,
                }
            }
            Phase::Idle | Phase::Thinking if readable => self.idle_read(buf),
            _ => Step::Wait,
        }
    }

    /// A connection with nothing in flight turned readable: the server's FIN or reset (it
    /// closed an idle connection, a normal end), or bytes nobody asked for.
    fn idle_read(&mut self, buf: &mut [u8]) -> Step {
        let Some(stream) = self.stream.as_mut() else {
            return Step::Dropped;
        };
        loop {
            return match stream.read(buf) {
                Ok(0) => Step::Dropped,
                Ok(_) => Step::Stray,
                Err(e) if e.kind() == IoKind::Interrupted => continue,
                // Spurious wake-up: nothing to read, the connection stays idle.
                Err(e) if e.kind() == IoKind::WouldBlock && !self.peer_closed => Step::Wait,
                Err(_) => Step::Dropped,
            };
        }
    }

    /// The request goes out with `Connection: close` when this is the socket's last call.
    fn last_call(&self, reuse: Reuse) -> bool {
        !reuse.keep_alive
            || reuse
                .calls_per_connection
                .is_some_and(|k| self.calls + 1 >= k)
    }

    /// Writes (the rest of) the slot's current request: its own, or the run's `requests[req]`.
    pub fn send_current(&mut self, requests: &[Prepared], reuse: Reuse, now: Instant) -> Step {
        match self.own.take() {
            None => self.send(&requests[self.req], reuse, now),
            Some(p) => {
                let step = self.send(&p, reuse, now);
                self.own = Some(p);
                step
            }
        }
    }

    /// Keeps the heads and up to `body_limit` body bytes of the responses (scenarios).
    pub fn set_capture(&mut self, body_limit: Option<usize>) {
        self.parser.set_capture(body_limit);
    }

    /// The head and body kept of the last response.
    pub fn captured(&self) -> Option<&super::http::Capture> {
        self.parser.captured()
    }

    /// Where a multiplexed protocol hands the slot's answer (HTTP/2, HTTP/3).
    pub fn capture_mut(&mut self) -> Option<&mut super::http::Capture> {
        self.parser.capture_mut()
    }

    /// Writes (the rest of) the current request `p`.
    pub fn send(&mut self, p: &Prepared, reuse: Reuse, now: Instant) -> Step {
        if self.sent == 0 {
            // Chosen once per request: a write resumed after EAGAIN goes on with the same bytes.
            self.closing = self.last_call(reuse);
            self.written = now;
            self.calls += 1;
            self.parser.start(p.head_only);
        }
        let bytes = if self.closing {
            &p.close
        } else {
            &p.keep_alive
        };
        self.write_from(bytes)
    }

    fn write_from(&mut self, bytes: &[u8]) -> Step {
        let Some(stream) = self.stream.as_mut() else {
            return Step::Failed(ErrorKind::Other);
        };
        while self.sent < bytes.len() {
            match stream.write(&bytes[self.sent..]) {
                Ok(0) => return Step::Failed(ErrorKind::Closed),
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == IoKind::WouldBlock => {
                    self.phase = Phase::Writing;
                    return Step::Wait;
                }
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(e) => return Step::Failed(ErrorKind::from_io(&e, false)),
            }
        }
        self.phase = Phase::Reading;
        self.deliveries += 1;
        Step::Sent(bytes.len())
    }

    /// Reads into the thread's shared `buf`, at most `reads` full reads this turn, and feeds
    /// the parser.
    pub fn receive(&mut self, buf: &mut [u8], reads: usize, reuse: Reuse) -> Step {
        for _ in 0..reads {
            let Some(stream) = self.stream.as_mut() else {
                return Step::Failed(ErrorKind::Other);
            };
            let n = match stream.read(buf) {
                // EOF: the legitimate end of an until-close body, or a premature close.
                Ok(0) => {
                    return match self.parser.finish_on_eof() {
                        Some(resp) => Step::Done {
                            status: resp.status,
                            reusable: false,
                        },
                        None => Step::Failed(ErrorKind::Closed),
                    };
                }
                Ok(n) => n,
                Err(e) if e.kind() == IoKind::WouldBlock => return Step::Wait,
                Err(e) if e.kind() == IoKind::Interrupted => continue,
                Err(e) => return Step::Failed(ErrorKind::from_io(&e, false)),
            };
            if self.bytes == 0 {
                self.first_byte = Instant::now();
            }
            self.bytes += n as u64;
            match self.parser.feed(&buf[..n]) {
                Ok((used, Some(resp))) => {
                    // Bytes beyond the response: the server answered more than was asked (twice,
                    // say). This answer cannot be trusted to be the request's, and the rest is
                    // not the next request's: a protocol error, and the connection is closed.
                    if used < n {
                        self.bytes -= (n - used) as u64;
                        return Step::Failed(ErrorKind::Protocol);
                    }
                    return Step::Done {
                        status: resp.status,
                        reusable: !resp.close && self.reusable(reuse),
                    };
                }
                Ok((_, None)) => {}
                Err(_) => return Step::Failed(ErrorKind::Protocol),
            }
            // A short read drained the socket; edge-triggered epoll will report new data. Not
            // a FIN already reported with this data, though, nor a TLS close_notify read with
            // it: read on to the EOF.
            let ended = self.stream.as_ref().is_some_and(T::read_ended);
            if n < buf.len() && !self.peer_closed && !ended {
                return Step::Wait;
            }
        }
        Step::More
    }

    /// May the socket carry another request after a response that did not ask to close it?
    fn reusable(&self, reuse: Reuse) -> bool {
        !self.peer_closed
            && reuse.keep_alive
            && reuse.calls_per_connection.is_none_or(|k| self.calls < k)
    }

    /// A request sent on a kept-alive connection that the server was closing at that moment
    /// (its idle timeout, or it closes after every answer without saying so) meets EOF or RST
    /// before a single byte of response. That is a race, not the server failing the request,
    /// so, as browsers do (RFC 9112 §9.3.1), an idempotent request may be sent once more on a
    /// fresh connection.
    pub fn stale_race(&self, kind: ErrorKind, idempotent: bool) -> bool {
        matches!(kind, ErrorKind::Closed | ErrorKind::Reset)
            && self.stream.is_some()
            && self.calls > 1 // the socket had served a request before this one
            && self.bytes == 0
            && !self.retried
            && idempotent
    }

    /// The retry of a stale race: the request starts over (on a socket the loop attaches).
    pub fn restart(&mut self) {
        self.retried = true;
        self.sent = 0;
    }

    /// The error to count if the request in flight is past its deadline.
    pub fn expired(&self, now: Instant) -> Option<ErrorKind> {
        if !self.in_flight() || now < self.deadline {
            return None;
        }
        Some(if self.phase == Phase::Connecting {
            ErrorKind::ConnectTimeout
        } else {
            ErrorKind::Timeout
        })
    }
}

#[cfg(test)]
#[path = "conn_tests.rs"]
mod tests;
