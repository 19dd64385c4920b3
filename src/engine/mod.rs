//! The load engine: worker threads, one event loop each, connections, HTTP/1.1 and HTTP/2
//! codecs, pacing.
//! It knows nothing about reports: it fills a [`Recorder`] per thread and returns them merged.
//!
//! Layout: `worker/` is the event loop (poller, timers, pools, metrics; `open.rs` and
//! `closed.rs` its two load models), `conn.rs` one connection's exchange as a state machine,
//! `transport.rs` the byte-stream seam it runs over (plain TCP), `tls.rs` TLS over it,
//! `protocol/` the protocol seam (a [`Protocol`] value; HTTP/1.1 and HTTP/2 each a
//! `protocol::Wire`), `http.rs` the HTTP/1.1 response parser, `h2/` HTTP/2 (frames, HPACK,
//! one connection's streams), `pacing.rs` the arrival schedule and timer, `backoff.rs` the
//! connect backoff, `source.rs` the local addresses connections are made from (`--source`).
mod backoff;
mod conn;
pub mod h2;
pub mod h3;
pub mod http;
pub mod io;
pub mod pacing;
pub mod protocol;
pub mod source;
pub mod steer;
pub mod sys;
pub mod think;
pub mod tls;
pub mod transport;
mod worker;

pub use crate::plan::segment::Segment;
pub use io::{Backend, IoChoice};
pub use pacing::{Arrival, Replay};
pub use protocol::{Http2, Http3, Protocol, Reuse};
pub use think::Think;

use crate::metrics::{Recorder, SecondLog, SecondSlot};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A request ready to send, rendered once before the run by its protocol's preparation
/// ([`Protocol::prepare`]): each protocol fills the forms its `Wire` writes.
#[derive(Debug, Clone, Default)]
pub struct Prepared {
    /// Index into [`EngineConfig::addrs`].
    pub addr: usize,
    /// HTTP/1.1: the bytes for a kept-alive connection, and for one's last call.
    pub keep_alive: Vec<u8>,
    pub close: Vec<u8>,
    /// HEAD: the response has no body whatever its headers say.
    pub head_only: bool,
    /// HTTP/2: the request's header block (HPACK, see [`h2::hpack::encode_request`]).
    pub h2_block: Vec<u8>,
    /// HTTP/2: the request body, sent in DATA frames (HTTP/3: in one DATA frame).
    pub body: Vec<u8>,
    /// HTTP/3: the request's HEADERS frame (QPACK, see [`h3::qpack::encode_request`]) and
    /// the header of its DATA frame, if it has a body.
    pub h3_head: Vec<u8>,
    /// Its name: an index into [`EngineConfig::names`], for the statistics per name.
    pub name: u16,
    /// Scenarios over HTTP/2 and HTTP/3: the connection keeps the answer's head and up to
    /// this many body bytes for the user (HTTP/1.1 keeps them in the slot's parser). None:
    /// nothing is kept (the plain path).
    pub capture: Option<usize>,
}

/// Where a connection that carries many slots' requests (HTTP/2, HTTP/3) reads the one of
/// a slot: the run's mix by index, or, for a scenario user, the request rendered into the
/// slot itself (the worker's view of its slots implements it too).
pub trait Requests {
    fn of(&self, slot: usize, req: usize) -> &Prepared;
}

impl Requests for [Prepared] {
    fn of(&self, _: usize, req: usize) -> &Prepared {
        &self[req]
    }
}

impl Requests for Vec<Prepared> {
    fn of(&self, _: usize, req: usize) -> &Prepared {
        &self[req]
    }
}

impl Prepared {
    /// The method may be sent again safely (RFC 9110 §9.2.2): GET, HEAD, PUT, DELETE, OPTIONS,
    /// TRACE. Read from the rendered request line (a run that only closes its connections
    /// renders only `close`).
    pub fn idempotent(&self) -> bool {
        let line = if self.keep_alive.is_empty() {
            &self.close
        } else {
            &self.keep_alive
        };
        let method = line.split(|&b| b == b' ').next().unwrap_or(&[]);
        matches!(
            method,
            b"GET" | b"HEAD" | b"PUT" | b"DELETE" | b"OPTIONS" | b"TRACE"
        )
    }
}

/// How URLs of the mix are chosen for each request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    Random,
    Sequence,
    /// At random, each request as often as its weight says ([`EngineConfig::weights`]).
    Weighted,
}

/// The request a weighted pick draws for `x` in `0..total`, `cumulative` being the running
/// sums of the weights: a binary search, O(log n), no allocation.
#[inline]
pub fn weighted_index(cumulative: &[u64], x: u64) -> usize {
    cumulative
        .partition_point(|&c| c <= x)
        .min(cumulative.len().saturating_sub(1))
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    /// Arrivals follow the clock: `rate` requests/s on one global schedule, served by at most
    /// `max_connections` connections opened as needed.
    Open {
        rate: f64,
        arrival: Arrival,
        max_connections: usize,
    },
    /// `users` each hold one connection, send, wait for the answer, think, repeat.
    Closed {
        users: usize,
        think: (Duration, Duration),
    },
}

#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub addrs: Vec<SocketAddr>,
    /// Shared, not copied, by the run's part and its threads: an access log's mix holds a
    /// request per distinct line.
    pub requests: Arc<Vec<Prepared>>,
    pub pick: Pick,
    pub load: Load,
    /// Length of the measured window (after warm-up). At least one of duration/max_requests.
    pub duration: Option<Duration>,
    /// Counted requests to send at most.
    pub max_requests: Option<u64>,
    pub warmup: Duration,
    pub threads: usize,
    pub keep_alive: bool,
    /// Close a kept-alive connection after this many requests.
    pub calls_per_connection: Option<u32>,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub seed: u64,
    /// Open loop: at most one wake-up per this period for arrivals, so dense arrivals share a
    /// wake-up (zero: one per arrival). Response times forgive at most this much lag (the
    /// generator's own choice); send lag is reported raw, so nothing is hidden.
    pub pacing_slack: Duration,
    /// The part of the plan this generator sends (scale-out); the load above is the whole
    /// plan's, cut in [`run`] (see [`EngineConfig::segment_part`]).
    pub segment: Segment,
    /// https:// URLs: the TLS client (None: plain TCP). The transport's business: any
    /// protocol runs over either.
    pub tls: Option<tls::TlsClient>,
    /// The protocol the run speaks, with its settings.
    pub protocol: Protocol,
    /// `--scenario`: each user follows it (closed loop: the users loop it; open loop: each
    /// arrival starts a session, one pass through it); `requests` is then unused.
    pub scenario: Option<Arc<crate::scenario::Plan>>,
    /// The request names statistics are kept for, indexed by [`Prepared::name`] (a scenario's
    /// names, or the URL mix's: see `plan::naming`). Empty: none kept.
    pub names: Vec<String>,
    /// [`Pick::Weighted`]: the running sums of the requests' weights (an access log's counts),
    /// shared as `requests` is.
    pub weights: Arc<Vec<u64>>,
    /// Open loop on a recorded clock (`--replay-speed`): the arrivals and their requests
    /// replace the rate's schedule and the pick.
    pub replay: Option<Arc<Replay>>,
    /// `--stages`: the level moves along this profile (warm-up included, seconds from the
    /// start): the open loop's rate (its schedule follows the profile's integral; `Load`'s
    /// rate is then the measured window's mean) or the closed loop's users (`Load`'s users
    /// are the peak; users start and stop along it).
    pub ramp: Option<Arc<crate::plan::stages::Profile>>,
    /// Open loop with a scenario: most sessions in flight (`--max-sessions`).
    pub max_sessions: usize,
    /// Which answers count as success (`--ok-status`).
    pub ok_status: crate::metrics::OkStatus,
    /// The HTTP version spoken (`protocol` is it) and how it was chosen, for the plan line
    /// and the summary.
    pub protocol_choice: crate::metrics::ProtocolChoice,
    /// The I/O backend asked for (`--io`); the run resolves it (`Outcome::io`).
    pub io: IoChoice,
    /// `--source`: the local addresses connections are made from, round-robin per thread
    /// (None: the kernel's choice).
    pub source: Option<Arc<source::Sources>>,
    /// Live control (the terminal view's keys, `--control-port`): the channel the run's
    /// level may be changed through while it runs; None: the level is the plan's.
    pub steer: Option<Arc<steer::Steer>>,
}

/// A configuration that sends nothing until given addresses, requests and a duration or a
/// request count: one user, kept-alive HTTP/1.1 over TCP, the whole plan. Callers set what
/// they mean and take the rest from here (`..EngineConfig::default()`).
impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            addrs: Vec::new(),
            requests: Arc::default(),
            pick: Pick::Sequence,
            load: Load::Closed {
                users: 1,
                think: (Duration::ZERO, Duration::ZERO),
            },
            duration: None,
            max_requests: None,
            warmup: Duration::ZERO,
            threads: 1,
            keep_alive: true,
            calls_per_connection: None,
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(3),
            seed: 1,
            pacing_slack: Duration::ZERO,
            segment: Segment::WHOLE,
            tls: None,
            protocol: Protocol::Http1,
            scenario: None,
            names: Vec::new(),
            weights: Arc::default(),
            replay: None,
            ramp: None,
            max_sessions: 10_000,
            ok_status: crate::metrics::OkStatus::default(),
            protocol_choice: crate::metrics::ProtocolChoice::default(),
            io: IoChoice::default(),
            source: None,
            steer: None,
        }
    }
}

impl EngineConfig {
    /// The I/O backend the run uses: `io` resolved on this kernel, for this protocol.
    pub fn backend(&self) -> crate::Result<Backend> {
        self.io.resolve_for(
            matches!(self.protocol, Protocol::Http3(_)),
            matches!(self.load, Load::Open { .. }),
        )
    }

    /// The offered load: the rate in open loop, the users in closed loop.
    /// This generator's segment's share of it: the segments' offered loads add up to the plan's.
    pub fn offered(&self) -> (Option<f64>, Option<u64>) {
        match self.load {
            Load::Open { rate, .. } => (Some(rate / f64::from(self.segment.count)), None),
            Load::Closed { users, .. } => (None, Some(self.segment.share(users as u64))),
        }
    }

    /// The configuration the workers run for this segment: its share of the users, of the
    /// connections and of `--requests`. The open loop's rate stays the plan's: the workers'
    /// schedules stride through the one global schedule (`pacing`).
    pub fn segment_part(&self) -> EngineConfig {
        let seg = self.segment;
        let share = |n: usize| seg.share(n as u64) as usize;
        let load = match self.load {
            Load::Open {
                rate,
                arrival,
                max_connections,
            } => Load::Open {
                rate,
                arrival,
                // At least one: a segment with arrivals must be able to send them.
                max_connections: share(max_connections).max(1),
            },
            Load::Closed { users, think } => Load::Closed {
                users: share(users),
                think,
            },
        };
        EngineConfig {
            load,
            max_requests: self.max_requests.map(|n| seg.share(n)),
            ..self.clone()
        }
    }

    /// What the run allows a connection to carry.
    pub fn reuse(&self) -> Reuse {
        Reuse {
            keep_alive: self.keep_alive,
            calls_per_connection: self.calls_per_connection,
        }
    }

    /// Upper bound of the run's wall time: warm-up + duration + time to drain in-flight requests.
    pub fn max_wall_time(&self) -> Option<Duration> {
        self.duration
            .map(|d| self.warmup + d + self.timeout + Duration::from_secs(1))
    }
}

/// Live counters a worker publishes a few times a second, for the progress line.
#[derive(Debug, Default)]
#[repr(align(128))] // one cache line pair per thread: no false sharing between workers
pub struct Live {
    pub responses: AtomicU64,
    pub errors: AtomicU64,
    pub bytes_in: AtomicU64,
    pub in_flight: AtomicU64,
    /// Counted responses whose status counts as success (goodput).
    pub ok: AtomicU64,
    /// Requests started and counted (outside warm-up).
    pub requests: AtomicU64,
    /// Counted errors by `ErrorKind::index` (what `--prometheus-remote-write` and `--otlp`
    /// push by kind while the run goes on).
    pub error_kinds: [AtomicU64; crate::metrics::ErrorKind::COUNT],
    /// Connections open at the reading.
    pub connections: AtomicU64,
}

/// Shared between the caller and the workers: the stop flag and the live counters.
#[derive(Debug, Default)]
pub struct Control {
    /// Set to end the run early (SIGINT): workers stop sending and return what they have.
    pub stop: AtomicBool,
    pub live: Vec<Live>,
    /// Each worker's finished seconds (`metrics::second`), and the run's seconds added over
    /// the workers: the per-second series of the live view, the live page and the results.
    pub slots: Vec<Arc<SecondSlot>>,
    pub seconds: Mutex<SecondLog>,
}

impl Control {
    pub fn new(threads: usize) -> Arc<Control> {
        Arc::new(Control {
            stop: AtomicBool::new(false),
            live: (0..threads).map(|_| Live::default()).collect(),
            slots: (0..threads).map(|_| Arc::default()).collect(),
            seconds: Mutex::default(),
        })
    }

    /// The run's seconds so far: what the workers handed over is taken first (the engine
    /// does it each second; a reader may too). Closed seconds only: every worker is past them.
    pub fn seconds(&self) -> MutexGuard<'_, SecondLog> {
        let mut log = self.seconds.lock().unwrap_or_else(|e| e.into_inner());
        log.collect(&self.slots);
        log
    }

    /// (responses, errors, bytes in) so far, over all threads; warm-up included.
    pub fn totals(&self) -> (u64, u64, u64) {
        self.live.iter().fold((0, 0, 0), |a, l| {
            (
                a.0 + l.responses.load(Ordering::Relaxed),
                a.1 + l.errors.load(Ordering::Relaxed),
                a.2 + l.bytes_in.load(Ordering::Relaxed),
            )
        })
    }
}

/// What a run produced.
#[derive(Debug)]
pub struct Outcome {
    pub recorder: Recorder,
    /// The run was stopped early through [`Control::stop`].
    pub interrupted: bool,
    pub started: Instant,
    pub finished: Instant,
    /// Notes about the generator itself (fd limit lowered, …), for the summary.
    pub notes: Vec<String>,
    /// The soft fd limit in force.
    pub fd_limit: u64,
    /// Worker threads actually used.
    pub threads: usize,
    /// The I/O backend the workers ran on.
    pub io: Backend,
    /// The level the run followed when live control changed it (seconds from `started`):
    /// each second's offered load is read from it, as from a ramp's profile.
    pub steered: Option<Arc<crate::plan::stages::Profile>>,
}

impl Outcome {
    /// The planned measured window, when the run went its full duration (see [`planned_window`]).
    pub fn planned_window(&self, cfg: &EngineConfig) -> Option<Duration> {
        planned_window(
            self.interrupted,
            cfg.duration,
            cfg.max_requests.map(|n| cfg.segment.share(n)),
            self.recorder.requests,
        )
    }
}

/// The measured window's planned length, or None when the run did not go its planned course
/// and the window must be measured instead (end of warm-up to the last completion). The window
/// is at least the planned duration so a latency tail does not bias it; but a run stopped
/// early (interrupted), or one whose `--requests` were all started (`started`: counted requests
/// started) ended by count, so its duration does not apply: 100 requests answered in 0.2 s of a
/// planned 10 s are 500/s, not 10/s.
pub fn planned_window(
    interrupted: bool,
    duration: Option<Duration>,
    max_requests: Option<u64>,
    started: u64,
) -> Option<Duration> {
    let by_count = max_requests.is_some_and(|m| started >= m);
    if interrupted || by_count {
        None
    } else {
        duration
    }
}

/// One worker thread's start: what it runs, whatever its transport and protocol.
struct Spawn<'a> {
    cfg: &'a EngineConfig,
    id: usize,
    threads: usize,
    started: Instant,
    ctl: &'a Arc<Control>,
    fds: io::Opened,
}

impl Spawn<'_> {
    fn run<T: transport::Transport, W: protocol::Wire<T>>(
        self,
        setup: T::Setup,
    ) -> crate::Result<(Recorder, Vec<String>)> {
        worker::Worker::<T, W>::new(
            self.cfg,
            self.id,
            self.threads,
            self.started,
            self.ctl,
            self.fds,
            setup,
        )
        .and_then(|mut w| w.run())
    }
}

/// Runs the load described by `cfg`; blocks until done. `on_tick` is called about once a
/// second from the calling thread while the workers run (progress display).
pub fn run(
    cfg: &EngineConfig,
    ctl: &Arc<Control>,
    mut on_tick: impl FnMut(Duration),
) -> crate::Result<Outcome> {
    if (cfg.requests.is_empty() && cfg.scenario.is_none()) || cfg.addrs.is_empty() {
        return Err(crate::Error::usage("no request to send"));
    }
    if cfg.duration.is_none() && cfg.max_requests.is_none() {
        return Err(crate::Error::usage("a run needs --duration or --requests"));
    }
    let backend = cfg.backend()?;
    if let Some(s) = &cfg.source {
        s.check_families(&cfg.addrs).map_err(crate::Error::usage)?;
    }
    let mut part = cfg.segment_part();
    let started = Instant::now();
    if let Some(st) = &cfg.steer {
        bind_steer(st, cfg, &mut part, started);
    }
    let cfg = &part;
    let fd_limit = sys::raise_fd_limit();
    // No thread without work: a thread with no user (or no connection) would idle to the end.
    let work = match cfg.load {
        Load::Open {
            max_connections, ..
        } => max_connections,
        Load::Closed { users, .. } => users,
    };
    let threads = cfg
        .threads
        .max(1)
        .min(ctl.live.len().max(1))
        .min(work.max(1));
    if ctl.slots.len() < threads {
        return Err(crate::Error::runtime(
            "engine: fewer second slots than threads",
        ));
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let mut handles = Vec::with_capacity(threads);
    // Every thread's poller fds, before any connection (see worker::event_fds).
    let fds = (0..threads)
        .map(|_| worker::event_fds(backend))
        .collect::<crate::Result<Vec<_>>>()?;
    for (k, fds) in fds.into_iter().enumerate() {
        let cfg = cfg.clone();
        let ctl = Arc::clone(ctl);
        let tx = tx.clone();
        let h = std::thread::Builder::new()
            .name(format!("overload-w{k}"))
            .spawn(move || {
                // The backend, the transport and the protocol are picked once per thread: the
                // loop is generic over them (static dispatch on the hot path).
                let spawn = Spawn {
                    cfg: &cfg,
                    id: k,
                    threads,
                    started,
                    ctl: &ctl,
                    fds,
                };
                use io::uring::UringSocket;
                let r = match (&cfg.tls, backend) {
                    (None, Backend::Epoll) => cfg.protocol.work::<transport::Tcp>(spawn, ()),
                    (None, Backend::Uring) => {
                        cfg.protocol.work::<transport::Tcp<UringSocket>>(spawn, ())
                    }
                    (Some(tls), Backend::Epoll) => {
                        cfg.protocol.work::<tls::Tls>(spawn, tls.for_thread())
                    }
                    (Some(tls), Backend::Uring) => cfg
                        .protocol
                        .work::<tls::Tls<UringSocket>>(spawn, tls.for_thread()),
                };
                let _ = tx.send(());
                r
            })
            .map_err(|e| crate::Error::runtime(format!("cannot start worker thread: {e}")))?;
        handles.push(h);
    }
    drop(tx);
    let mut done = 0;
    let mut next_tick = started + Duration::from_secs(1);
    while done < threads {
        let wait = next_tick.saturating_duration_since(Instant::now());
        match rx.recv_timeout(wait) {
            Ok(()) => done += 1,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                drop(ctl.seconds());
                on_tick(started.elapsed());
                next_tick += Duration::from_secs(1);
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let mut merged: Option<Recorder> = None;
    let mut notes = Vec::new();
    for h in handles {
        let (rec, mut n) = h
            .join()
            .map_err(|_| crate::Error::runtime("a worker thread panicked"))??;
        notes.append(&mut n);
        match merged.as_mut() {
            Some(m) => m.merge(&rec),
            None => merged = Some(rec),
        }
    }
    let steered = cfg.steer.as_ref().and_then(|st| st.unbind());
    let mut recorder = merged.expect("at least one worker");
    // Every worker handed over its last second as it ended: all are closed now.
    recorder.seconds = ctl.seconds().take();
    if cfg.tls.as_ref().is_some_and(|t| t.insecure()) {
        notes.push("--insecure: the server's certificate was not verified".to_string());
    }
    notes.sort();
    notes.dedup();
    Ok(Outcome {
        recorder,
        interrupted: ctl.stop.load(Ordering::Relaxed) || crate::signals::interrupted(),
        started,
        finished: Instant::now(),
        notes,
        fd_limit,
        threads,
        io: backend,
        steered,
    })
}

/// Binds the run's steer to this step, with the level it plans (its ramp, or flat at its rate
/// or users). A closed loop gets a user slot per user the cap allows, numbered as a ramp's
/// (the workers start and stop them along the level); a replay cannot be steered.
fn bind_steer(st: &steer::Steer, whole: &EngineConfig, part: &mut EngineConfig, origin: Instant) {
    if whole.replay.is_some() {
        st.refuse("a replay follows its recorded clock: its rate cannot be changed");
        return;
    }
    let end = whole.duration.map(|d| (whole.warmup + d).as_secs_f64());
    match whole.load {
        Load::Open { rate, .. } => {
            st.bind(origin, steer::Unit::Rate, rate, whole.ramp.clone(), end);
        }
        Load::Closed { users, think } => {
            let cap = st.bind(
                origin,
                steer::Unit::Users,
                users as f64,
                whole.ramp.clone(),
                end,
            );
            part.ramp = st.profile();
            // Users are numbered over the whole plan, as a ramp's: the lanes split them.
            part.load = Load::Closed {
                users: cap.max(1.0) as usize,
                think,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(load: Load, segment: Segment) -> EngineConfig {
        EngineConfig {
            load,
            max_requests: Some(1001),
            threads: 2,
            timeout: Duration::from_secs(1),
            connect_timeout: Duration::from_secs(1),
            segment,
            ..EngineConfig::default()
        }
    }

    /// The parts of a split plan add up to the plan: users, connections, request count and
    /// the offered load; the open loop's rate stays the plan's (its schedule is strided).
    #[test]
    fn segment_parts_add_up_to_the_plan() {
        let closed = Load::Closed {
            users: 10,
            think: (Duration::ZERO, Duration::ZERO),
        };
        let open = Load::Open {
            rate: 1000.0,
            arrival: Arrival::Poisson,
            max_connections: 7,
        };
        let (mut users, mut conns, mut requests, mut rate) = (0, 0, 0, 0.0);
        for index in 0..3 {
            let seg = Segment { index, count: 3 };
            let c = config(closed, seg);
            let part = c.segment_part();
            if let Load::Closed { users: u, .. } = part.load {
                users += u;
                assert_eq!(c.offered(), (None, Some(u as u64)));
            }
            requests += part.max_requests.unwrap();
            let o = config(open, seg);
            match o.segment_part().load {
                Load::Open {
                    rate: r,
                    max_connections,
                    ..
                } => {
                    assert_eq!(r, 1000.0);
                    conns += max_connections;
                }
                Load::Closed { .. } => unreachable!(),
            }
            rate += o.offered().0.unwrap();
        }
        assert_eq!((users, conns, requests), (10, 7, 1001));
        assert!((rate - 1000.0).abs() < 1e-9, "{rate}");
        // The whole plan is its own part.
        let whole = config(closed, Segment::WHOLE);
        assert_eq!(whole.segment_part().load, closed);
    }

    #[test]
    fn the_planned_duration_applies_only_to_a_run_that_went_its_course() {
        let ten = Some(Duration::from_secs(10));
        // Duration only: the window is the plan (at least).
        assert_eq!(planned_window(false, ten, None, 5_000), ten);
        // Both, and the duration ended first (the count was not reached): the plan holds.
        assert_eq!(planned_window(false, ten, Some(100_000), 5_000), ten);
        // Both, and every request was started before the duration ran out: ended by count.
        assert_eq!(planned_window(false, ten, Some(100), 100), None);
        // Requests only, or interrupted: measured, never planned.
        assert_eq!(planned_window(false, None, Some(100), 100), None);
        assert_eq!(planned_window(true, ten, None, 5_000), None);
    }

    /// The weighted pick draws each request as often as its weight: over 200,000 draws the
    /// shares match the weights within 2% (of each share).
    #[test]
    fn weighted_pick_follows_the_weights() {
        let weights = [500u64, 300, 150, 40, 9, 1];
        let cumulative: Vec<u64> = weights
            .iter()
            .scan(0, |s, w| {
                *s += w;
                Some(*s)
            })
            .collect();
        let total = *cumulative.last().unwrap();
        let mut rng = fastrand::Rng::with_seed(7);
        let mut counts = [0u64; 6];
        let draws = 200_000;
        for _ in 0..draws {
            counts[weighted_index(&cumulative, rng.u64(..total))] += 1;
        }
        for (i, w) in weights.iter().enumerate().take(3) {
            let want = *w as f64 / total as f64;
            let got = counts[i] as f64 / draws as f64;
            assert!((got - want).abs() <= 0.02 * want, "{i}: {got} vs {want}");
        }
        // The rare ones are drawn too, and the edges map to the first and last request.
        assert!(counts[5] > 0);
        assert_eq!(weighted_index(&cumulative, 0), 0);
        assert_eq!(weighted_index(&cumulative, total - 1), 5);
        assert_eq!(weighted_index(&cumulative, 499), 0);
        assert_eq!(weighted_index(&cumulative, 500), 1);
    }
}
