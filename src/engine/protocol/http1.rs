//! HTTP/1.1: each slot holds its own connection and one request at a time on it; the
//! exchange's state machine is the slot's `Conn` (`conn.rs`, pre-rendered request bytes, the
//! response parser of `http.rs`). Kept-alive connections of the open loop wait in its idle
//! pool per server; a request that meets the keep-alive race is sent once more on a fresh connection.
use super::{Reuse, Wire};
use crate::engine::conn::Phase;
use crate::engine::io::Poller;
use crate::engine::transport::Transport;
use crate::engine::worker::{token, Worker, READS_PER_TURN};
use crate::engine::{EngineConfig, Prepared};
use crate::metrics::ErrorKind;
use crate::plan::RequestSpec;
use std::time::Instant;

/// Rendered into a guess of a buffer: trimmed, a mix holds many.
pub(super) fn exact(mut v: Vec<u8>) -> Vec<u8> {
    v.shrink_to_fit();
    v
}

/// HTTP/1.1's forms of the request: kept-alive when connections are kept, `Connection:
/// close` for the last call of one (every call without keep-alive).
pub(super) fn prepare(p: &mut Prepared, spec: &RequestSpec, reuse: Reuse) {
    if reuse.keep_alive {
        p.keep_alive = exact(spec.render(false));
    }
    if !reuse.keep_alive || reuse.calls_per_connection.is_some() {
        p.close = exact(spec.render(true));
    }
}

/// HTTP/1.1's [`Wire`]: the connections are the slots' own (`Conn`); it keeps the idle
/// ones of the open loop.
pub(in crate::engine) struct H1 {
    /// Idle kept-alive connections per address, as (slot, gen); stale entries are skipped.
    idle: Vec<Vec<(usize, u32)>>,
}

impl<T: Transport> Worker<'_, T, H1> {
    /// An idle kept-alive connection to `addr`.
    fn pop_idle(&mut self, addr: usize) -> Option<usize> {
        while let Some((slot, gen)) = self.wire.idle[addr].pop() {
            let c = &self.conns[slot];
            if c.gen == gen && c.phase == Phase::Idle {
                return Some(slot);
            }
        }
        None
    }
}

impl<T: Transport> Wire<T> for H1 {
    const INDEX: usize = 0;

    fn new(cfg: &EngineConfig) -> H1 {
        H1 {
            idle: vec![Vec::new(); cfg.addrs.len()],
        }
    }

    fn can_dispatch(w: &Worker<'_, T, H1>) -> bool {
        w.open < w.max_conns || w.wire.idle.iter().any(|v| !v.is_empty())
    }

    /// An idle kept-alive connection to `addr`, or a slot for a new one while the pool allows.
    fn dispatch_slot(w: &mut Worker<'_, T, H1>, addr: usize, now: Instant) -> Option<usize> {
        let slot = if w.cfg.keep_alive {
            w.pop_idle(addr)
        } else {
            None
        };
        match slot {
            Some(s) => Some(s),
            None if w.open < w.max_conns => Some(w.alloc_slot(now)),
            None => {
                // Pool full: an idle connection to another address makes room.
                if let Some(other) = (0..w.wire.idle.len()).find_map(|a| w.pop_idle(a)) {
                    w.close_socket(other);
                    w.free_slot(other);
                    Some(w.alloc_slot(now))
                } else {
                    None
                }
            }
        }
    }

    fn pool(w: &mut Worker<'_, T, H1>, slot: usize) {
        let c = &w.conns[slot];
        w.wire.idle[c.addr].push((slot, c.gen));
    }

    fn start(w: &mut Worker<'_, T, H1>, slot: usize, addr: usize, now: Instant) {
        let c = &w.conns[slot];
        if c.stream.is_some() && c.addr == addr && w.cfg.keep_alive {
            w.conns[slot].deadline = now + w.cfg.timeout;
            Self::write(w, slot, now);
            return;
        }
        w.close_socket(slot);
        w.conns[slot].addr = addr;
        if let Err(kind) = connect(w, slot, now) {
            w.connect_failed(slot, kind, now);
        }
    }

    fn write(w: &mut Worker<'_, T, H1>, slot: usize, now: Instant) {
        let step = w.conns[slot].send_current(&w.cfg.requests, w.reuse, now);
        w.apply(slot, step, now);
    }

    fn event(
        w: &mut Worker<'_, T, H1>,
        slot: usize,
        gen: u32,
        readable: bool,
        writable: bool,
        read_closed: bool,
    ) {
        if slot >= w.conns.len() || w.conns[slot].gen != gen {
            return; // an event of a socket the slot no longer holds
        }
        let now = Instant::now();
        let step = w.conns[slot].on_event(
            readable,
            writable,
            read_closed,
            &w.cfg.requests,
            w.reuse,
            &mut w.buf,
            READS_PER_TURN,
            now,
        );
        w.apply(slot, step, now);
    }

    fn read_more(w: &mut Worker<'_, T, H1>, slot: usize, gen: u32, now: Instant) {
        let c = &mut w.conns[slot];
        if c.gen == gen && matches!(c.phase, Phase::Writing | Phase::Reading) {
            let step = c.receive(&mut w.buf, READS_PER_TURN, w.reuse);
            w.apply(slot, step, now);
        }
    }

    fn flush(_: &mut Worker<'_, T, H1>) {}

    fn release(_: &mut Worker<'_, T, H1>, _: usize) {}

    /// The keep-alive race (see `Conn::stale_race`): the request goes once more on a fresh
    /// connection; `retries` counts it.
    fn retry(w: &mut Worker<'_, T, H1>, slot: usize, kind: ErrorKind, now: Instant) -> bool {
        let idempotent = w.may_resend(slot);
        let c = &w.conns[slot];
        if !c.stale_race(kind, idempotent) {
            return false;
        }
        if c.counted {
            w.rec.retries += 1;
        }
        w.close_socket(slot);
        w.conns[slot].restart();
        // The deadline stays the request's own (connect keeps it): the retry adds no time.
        if let Err(kind) = connect(w, slot, now) {
            w.connect_failed(slot, kind, now);
        }
        true
    }

    // The slots' own deadlines are the worker's scan; nothing else of HTTP/1.1's waits.
    fn scan(_: &mut Worker<'_, T, H1>, _: Instant) {}

    fn close_all(_: &mut Worker<'_, T, H1>) {}
}

/// Opens the slot's own connection to its server.
fn connect<T: Transport>(
    w: &mut Worker<'_, T, H1>,
    slot: usize,
    now: Instant,
) -> Result<(), ErrorKind> {
    let counted = w.conns[slot].counted;
    let mut stream = w.open_socket(w.conns[slot].addr, counted, now)?;
    let c = &mut w.conns[slot];
    c.gen = c.gen.wrapping_add(1);
    if let Err(e) = stream.register(w.poll.registry(), token(slot, c.gen)) {
        return Err(ErrorKind::from_io(&e, true));
    }
    c.attach(stream, now, w.cfg.timeout, w.cfg.connect_timeout);
    w.open += 1;
    Ok(())
}
