//! The protocol seam: how a worker carries requests over its connections.
//!
//! A run speaks one protocol, named by the [`Protocol`] value of `EngineConfig`. Each protocol
//! implements [`Wire`] over any [`Transport`] (plain TCP or TLS): what a connection can carry
//! at once, how a request is written, how readiness on a connection turns into answers, which
//! the worker then times and records the same way for every protocol. The worker is generic
//! over its `Wire` as it is over its `Transport`, so the hot path is statically dispatched:
//! `engine::run` picks the pair once per thread.
//!
//! `http1.rs`: one request at a time on a slot's own connection (the slot's `Conn` is the
//! exchange's state machine, `conn.rs`). `http2.rs`: the slots' requests ride streams of a few
//! shared connections (`h2/`: frames, HPACK, one connection's streams). A new protocol adds
//! its file here and a variant of [`Protocol`].
pub(super) mod http1;
pub(super) mod http2;
pub(super) mod http3;
mod mux;

use super::transport::Transport;
use super::worker::Worker;
use super::Prepared;
use crate::engine::h2::hpack::RequestParts;
use crate::plan::RequestSpec;
use std::time::Instant;

/// What the run allows a connection to carry: the choices that decide when it closes, and
/// so which forms of each request HTTP/1.1 renders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reuse {
    pub keep_alive: bool,
    /// Close a kept-alive connection after this many requests.
    pub calls_per_connection: Option<u32>,
}

/// HTTP/2's settings (`--http 2`): the connections multiplex requests on streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Http2 {
    /// Concurrent streams per connection (`--streams`), capped by the server's
    /// SETTINGS_MAX_CONCURRENT_STREAMS.
    pub streams: u32,
}

/// HTTP/3's settings (`--http 3`): requests on QUIC streams of shared connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Http3 {
    /// Concurrent streams per connection (`--streams`), capped by the server's MAX_STREAMS.
    pub streams: u32,
}

/// The protocol a run speaks, with its settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    /// HTTP/1.1: one request at a time per connection, kept alive or not.
    #[default]
    Http1,
    /// HTTP/2 (h2c with prior knowledge over TCP, ALPN `h2` over TLS).
    Http2(Http2),
    /// HTTP/3 over QUIC (https only, ALPN `h3`).
    Http3(Http3),
}

impl Protocol {
    /// Its place in the run's counts by protocol (`metrics::PROTOCOLS` holds the labels).
    pub fn index(self) -> usize {
        match self {
            Protocol::Http1 => 0,
            Protocol::Http2(_) => 1,
            Protocol::Http3(_) => 2,
        }
    }

    /// What TLS offers by ALPN for it.
    pub fn alpn(self) -> &'static str {
        match self {
            Protocol::Http1 => "http/1.1",
            Protocol::Http2(_) => "h2",
            Protocol::Http3(_) => "h3",
        }
    }

    /// Connections a thread's `users` (closed loop) need: one each, unless they share them.
    pub fn connections_for(self, users: usize) -> usize {
        match self {
            Protocol::Http1 => users,
            // Each user takes a stream; the thread's users share connections.
            Protocol::Http2(h) => users.div_ceil(h.streams.max(1) as usize).max(1),
            Protocol::Http3(h) => users.div_ceil(h.streams.max(1) as usize).max(1),
        }
    }

    /// A request of the mix made ready to send, once before the run: what this protocol's
    /// `Wire` writes (HTTP/1.1's bytes in the forms `reuse` will send; HTTP/2's header
    /// block and body), to server `addr`, counted under `name`.
    pub fn prepare(self, spec: &RequestSpec, reuse: Reuse, addr: usize, name: u16) -> Prepared {
        let mut p = Prepared {
            addr,
            name,
            head_only: spec.method == "HEAD",
            ..Prepared::default()
        };
        match self {
            Protocol::Http1 => http1::prepare(&mut p, spec, reuse),
            Protocol::Http2(_) => http2::prepare(&mut p, spec, reuse),
            Protocol::Http3(_) => http3::prepare(&mut p, spec, reuse),
        }
        p
    }

    /// Runs one worker thread speaking this protocol over the transport `T`: the pair is
    /// picked here, once per thread, and the loop is compiled for each.
    pub(super) fn work<T: Transport>(
        self,
        spawn: super::Spawn<'_>,
        setup: T::Setup,
    ) -> crate::Result<(crate::metrics::Recorder, Vec<String>)> {
        match self {
            Protocol::Http1 => spawn.run::<T, http1::H1>(setup),
            Protocol::Http2(_) => spawn.run::<T, http2::H2<T>>(setup),
            Protocol::Http3(_) => spawn.run::<T, http3::H3>(setup),
        }
    }
}

/// One protocol's side of a worker. The worker owns the slots (each request's times, its
/// user, its outcome), the poller, pools and metrics; the `Wire` owns how slots' requests
/// reach connections and how their answers come back, and reports each outcome to the worker
/// (`Worker::apply`: sent, done, failed), which records it the same way for every protocol.
///
/// Tokens and `Worker::more` entries name what the `Wire` registered: a slot's own connection
/// (HTTP/1.1) or a shared connection (HTTP/2); only the `Wire` reads them.
pub(super) trait Wire<T: Transport>: Sized {
    /// Its place in the counts by protocol ([`Protocol::index`]).
    const INDEX: usize;

    /// Its state for a worker of the run `cfg` (its `protocol` names this one).
    fn new(cfg: &super::EngineConfig) -> Self;

    /// Open loop: may an arrival go out now (a connection with room, or one more allowed)?
    fn can_dispatch(w: &Worker<'_, T, Self>) -> bool;

    /// Open loop: the slot for the next arrival to server `addr`, or None while every
    /// connection that may carry it is busy (the arrival waits: send lag).
    fn dispatch_slot(w: &mut Worker<'_, T, Self>, addr: usize, now: Instant) -> Option<usize>;

    /// Open loop: the slot's answer left its connection able to carry another request (the
    /// slot is idle): it waits for the next arrival to its server.
    fn pool(w: &mut Worker<'_, T, Self>, slot: usize);

    /// The slot's request (begun) to server `addr`: on a connection that can take it, or
    /// one opened for it.
    fn start(w: &mut Worker<'_, T, Self>, slot: usize, addr: usize, now: Instant);

    /// Writes (the rest of) the slot's request once its connection is up.
    fn write(w: &mut Worker<'_, T, Self>, slot: usize, now: Instant);

    /// A readiness event for the connection registered as (`idx`, `gen`).
    fn event(
        w: &mut Worker<'_, T, Self>,
        idx: usize,
        gen: u32,
        readable: bool,
        writable: bool,
        read_closed: bool,
    );

    /// Resumes the reads the connection (`idx`, `gen`) left for this turn.
    fn read_more(w: &mut Worker<'_, T, Self>, idx: usize, gen: u32, now: Instant);

    /// Before the loop sleeps: output this turn's requests left buffered goes out (and the
    /// protocol's timers that are due run).
    fn flush(w: &mut Worker<'_, T, Self>);

    /// When the protocol next needs [`Wire::flush`] for a timer of its own (QUIC's), which
    /// bounds the loop's sleep. None: it has none.
    fn next_timer(_: &mut Worker<'_, T, Self>) -> Option<Instant> {
        None
    }

    /// The slot's request ends without its connection's word (a timeout): withdraw it.
    fn release(w: &mut Worker<'_, T, Self>, slot: usize);

    /// The request failed with `kind`: true when the protocol sends it again (the keep-alive
    /// race of HTTP/1.1); the worker then records nothing yet.
    fn retry(
        w: &mut Worker<'_, T, Self>,
        slot: usize,
        kind: crate::metrics::ErrorKind,
        now: Instant,
    ) -> bool;

    /// The timeout scan: connections of its own that are past their deadline.
    fn scan(w: &mut Worker<'_, T, Self>, now: Instant);

    /// The end of the run: its connections close (politely where the protocol says how).
    fn close_all(w: &mut Worker<'_, T, Self>);

    /// Scenarios: how many of a user's requests to one server may be in flight at once
    /// when its slots ride streams of its own connection (HTTP/2, HTTP/3: `--streams`);
    /// None when each slot holds a connection of its own (HTTP/1.1), so the scenario's
    /// connections per host bound a burst.
    fn user_streams(_: &Worker<'_, T, Self>) -> Option<usize> {
        None
    }

    /// Scenarios: user `user`'s session ended; the connections the protocol opened for it
    /// close (HTTP/1.1's are the user's slots', which the worker closes itself).
    fn end_user(_: &mut Worker<'_, T, Self>, _: usize) {}

    /// Renders the protocol's form of a scenario user's request into `p`, from the HTTP/1.1
    /// form the user rendered (`p.keep_alive`); `https`: the server's scheme.
    fn render_own(_: &mut super::Prepared, _: bool) {}
}

/// A scenario user's request, rendered in HTTP/1.1's form, split into what the multiplexed
/// protocols encode: calls `encode` with its parts and its body.
pub(super) fn own_parts(
    rendered: &[u8],
    https: bool,
    encode: impl FnOnce(&RequestParts<'_>, &[u8]),
) {
    let mut headers = [httparse::EMPTY_HEADER; 128];
    let mut req = httparse::Request::new(&mut headers);
    let Ok(httparse::Status::Complete(at)) = req.parse(rendered) else {
        return;
    };
    let method = req.method.unwrap_or("GET");
    let path = req.path.unwrap_or("/");
    let mut length = false;
    let mut authority = "";
    let mut list = Vec::with_capacity(req.headers.len());
    for h in req.headers.iter() {
        let value = String::from_utf8_lossy(h.value).into_owned();
        if h.name.eq_ignore_ascii_case("content-length") {
            length = true;
        }
        if h.name.eq_ignore_ascii_case("host") {
            authority = std::str::from_utf8(h.value).unwrap_or("");
        }
        list.push((h.name.to_string(), value));
    }
    let body = &rendered[at..];
    encode(
        &RequestParts {
            method,
            scheme: if https { "https" } else { "http" },
            authority,
            path,
            headers: &list,
            body_len: length.then_some(body.len()),
        },
        body,
    );
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
