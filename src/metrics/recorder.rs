//! The per-thread recorder: histograms and counters filled by the engine's hot loop.
//! Everything is allocated up front; recording a request touches no allocator. The second in
//! progress goes to the run's [`SecondSlot`] when the next one starts (see `second.rs`).
use super::histo::{new_hist, MAX_US};
use super::names::NameStats;
use super::second::{SecondBucket, SecondSlot};
use super::status::OkStatus;
use super::{ErrorKind, TlsReason};
use hdrhistogram::Histogram;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Status codes 0..=599 are counted by index; anything else lands in slot 0.
const STATUS_SLOTS: usize = 600;

/// The HTTP versions requests are counted by, as the summary names them: the index of each is
/// the engine's `Protocol::index`.
pub const PROTOCOLS: [&str; 3] = ["1.1", "2", "3"];

/// HTTP/3's counts from QUIC's own statistics, over the connections' lives up to their last
/// counted answer (so per request: these over the responses).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QuicTally {
    pub packets_sent: u64,
    pub packets_received: u64,
    /// Packets QUIC declared lost (their frames were sent again).
    pub packets_lost: u64,
    /// Handshakes whose 0-RTT data the server accepted (`--0rtt on`).
    pub zero_rtt_accepted: u64,
}

impl QuicTally {
    pub fn add(&mut self, o: &QuicTally) {
        self.packets_sent += o.packets_sent;
        self.packets_received += o.packets_received;
        self.packets_lost += o.packets_lost;
        self.zero_rtt_accepted += o.zero_rtt_accepted;
    }
}

/// One thread's measurements; [`Recorder::merge`] folds threads together.
#[derive(Debug, Clone)]
pub struct Recorder {
    /// completion − intended time: what a user feels, free of coordinated omission.
    pub response_time: Histogram<u64>,
    /// completion − actual write of the request.
    pub service_time: Histogram<u64>,
    /// actual start (connect or write) − intended time: the generator or its pool fell behind.
    pub send_lag: Histogram<u64>,
    /// TCP connect time of each new connection.
    pub connect_time: Histogram<u64>,
    /// First byte of the response − write of the request.
    pub first_byte: Histogram<u64>,
    /// TLS only: handshake time of each new connection, after its TCP connect.
    pub tls_handshake: Histogram<u64>,
    /// The run spoke TLS (the summary then has its `tls` part, even with no handshake done).
    pub tls: bool,
    /// Handshakes that did the full key exchange, and those that resumed a session.
    pub handshakes_full: u64,
    pub handshakes_resumed: u64,
    /// Why TLS handshakes failed, by [`TlsReason::index`]: one per failed handshake (an
    /// HTTP/2 connection's failure counts once, however many requests waited on it).
    pub tls_failures: [u64; TlsReason::COUNT],
    /// TLS handshakes begun (their TCP connect completed), whatever became of them.
    pub handshakes_started: u64,
    /// Connection attempts (a socket connect started), apart from the requests they carried.
    pub connect_attempts: u64,
    /// Attempts that failed before the connection came up, by [`ErrorKind::index`]: TCP's
    /// failures (refused, timed out, unreachable, …); TLS's are in `tls_failures`.
    pub connect_failures: [u64; ErrorKind::COUNT],
    /// Requests that needed a new connection while the connect backoff held (every attempt
    /// of the last second had failed): failed at once as the last attempt did, no attempt.
    pub connects_held: u64,
    pub errors: [u64; ErrorKind::COUNT],
    pub statuses: Vec<u64>,
    /// Requests started and counted (outside warm-up), whatever their outcome.
    pub requests: u64,
    /// Of those, requests whose bytes were all written to a connection (a request refused at
    /// connect, or failed before its write completed, was started but not sent).
    pub sent: u64,
    pub responses: u64,
    /// Responses whose status is in `ok_status` (2xx and 3xx unless `--ok-status`).
    pub ok: u64,
    /// Which statuses count as success (`--ok-status`).
    pub ok_status: OkStatus,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub connections_opened: u64,
    /// Requests the plan scheduled in the window that never got a connection before the end.
    pub unsent: u64,
    /// CPU time of the worker thread(s) over the run (the generator's own effort).
    pub cpu: Duration,
    /// Times an arrival found every allowed connection busy and had to queue (open loop).
    pub pool_waits: u64,
    /// Requests sent again on a fresh connection after a kept-alive one turned out closed.
    pub retries: u64,
    /// Counted requests in flight when the run was stopped (SIGINT, SIGTERM, a stop rule):
    /// neither answered nor failed, still requests the server was sent.
    pub interrupted: u64,
    /// Closed-loop users stopped because no file descriptor was left for their connection.
    pub users_stopped: u64,
    /// Open-loop scenario sessions (`--rate` with `--scenario`): arrivals and outcomes.
    pub sessions: SessionTally,
    /// HTTP/3: QUIC's packets and 0-RTT.
    pub quic: QuicTally,
    /// Requests sent, by protocol, in the order of [`PROTOCOLS`] (the engine's
    /// `Protocol::index`).
    pub protocols: [u64; PROTOCOLS.len()],
    /// Counted completions and errors, per second since `origin`: empty in a worker (its
    /// seconds go to `slot`), the run's closed seconds once the engine has collected them.
    pub seconds: Vec<SecondBucket>,
    pub origin: Instant,
    /// The measured window: from the end of warm-up to the last counted completion (or the
    /// stop, when the run was stopped early).
    pub window_start: Instant,
    /// First and last counted completion (response or error).
    pub first_event: Option<Instant>,
    pub last_event: Option<Instant>,
    /// Per request name (`EngineConfig::names`), indexed by `Prepared::name`; empty when the
    /// run keeps none (see [`Recorder::keep_names`]).
    pub names: Vec<NameStats>,
    /// The second in progress (since `origin`), its counters and response times.
    pub second: usize,
    pub second_bucket: SecondBucket,
    pub second_hist: Histogram<u64>,
    /// Where finished seconds go (the engine's `Control` holds one per worker).
    pub slot: Arc<SecondSlot>,
}

fn us(d: Duration) -> u64 {
    d.as_micros().min(MAX_US as u128) as u64
}

impl Recorder {
    /// `expected_secs` pre-sizes the per-second series (a recorder that is not a worker's).
    pub fn new(origin: Instant, window_start: Instant, expected_secs: usize) -> Recorder {
        Recorder {
            response_time: new_hist(),
            service_time: new_hist(),
            send_lag: new_hist(),
            connect_time: new_hist(),
            first_byte: new_hist(),
            tls_handshake: new_hist(),
            tls: false,
            handshakes_full: 0,
            handshakes_resumed: 0,
            tls_failures: [0; TlsReason::COUNT],
            handshakes_started: 0,
            connect_attempts: 0,
            connect_failures: [0; ErrorKind::COUNT],
            connects_held: 0,
            errors: [0; ErrorKind::COUNT],
            statuses: vec![0; STATUS_SLOTS],
            requests: 0,
            sent: 0,
            responses: 0,
            ok: 0,
            ok_status: OkStatus::default(),
            bytes_in: 0,
            bytes_out: 0,
            connections_opened: 0,
            unsent: 0,
            cpu: Duration::ZERO,
            pool_waits: 0,
            retries: 0,
            interrupted: 0,
            users_stopped: 0,
            sessions: SessionTally::default(),
            quic: QuicTally::default(),
            protocols: [0; PROTOCOLS.len()],
            seconds: Vec::with_capacity(expected_secs + 2),
            origin,
            window_start,
            first_event: None,
            last_event: None,
            names: Vec::new(),
            second: 0,
            second_bucket: SecondBucket::default(),
            second_hist: new_hist(),
            slot: Arc::default(),
        }
    }

    /// Keeps statistics per name of `names` (the counters allocated here, before the run, so
    /// the hot loop only indexes them; each histogram on its name's first response).
    pub fn keep_names(&mut self, names: &[String]) {
        self.names = names.iter().map(|n| NameStats::new(n)).collect();
    }

    /// A counted response of request name `name` (an index into the kept names; a name out
    /// of range is not kept), `rt_us` its response time as [`Recorder::response`] returned.
    #[inline]
    pub fn name_response(&mut self, name: u16, status: u16, rt_us: u64) {
        if let Some(n) = self.names.get_mut(name as usize) {
            n.responses += 1;
            n.ok += u64::from(self.ok_status.contains(status));
            n.record(rt_us);
        }
    }

    /// A counted page's load time (its response and its burst's), µs, under its name.
    pub fn name_page_load(&mut self, name: u16, us: u64) {
        if let Some(n) = self.names.get_mut(name as usize) {
            let _ = n
                .page_load
                .get_or_insert_with(super::names::new_name_hist)
                .record(us.max(1));
        }
    }

    /// A counted request of name `name` that ended in a transport error.
    #[inline]
    pub fn name_error(&mut self, name: u16, kind: ErrorKind) {
        if let Some(n) = self.names.get_mut(name as usize) {
            n.errors[kind.index()] += 1;
        }
    }

    /// The second `at` falls in, handing over the one in progress when `at` is past it (a
    /// completion stamped a moment before the last turn counts in the second in progress).
    #[inline]
    fn bucket(&mut self, at: Instant) -> &mut SecondBucket {
        let s = at.saturating_duration_since(self.origin).as_secs() as usize;
        if s > self.second {
            self.turn(s);
        }
        &mut self.second_bucket
    }

    /// Hands the second in progress to the slot and starts second `next`.
    #[cold]
    fn turn(&mut self, next: usize) {
        let b = std::mem::take(&mut self.second_bucket);
        self.slot
            .hand_over(self.second, b, &mut self.second_hist, next);
        self.second = next;
    }

    /// The worker's clock reads `now`: a second that has ended without completions in it
    /// is passed, so the reader need not wait for it (called from the worker's scan).
    pub fn roll(&mut self, now: Instant) {
        let s = now.saturating_duration_since(self.origin).as_secs() as usize;
        if s > self.second {
            self.turn(s);
        }
    }

    /// The worker ended: the second in progress is handed over, and no other will be.
    pub fn close_seconds(&mut self) {
        self.turn(usize::MAX);
    }

    /// A recorder of its own (no engine): closes its seconds into `seconds`, as the engine
    /// does for the threads of a run.
    pub fn collect_own_seconds(&mut self) {
        self.close_seconds();
        let mut log = super::second::SecondLog::default();
        log.collect(&[Arc::clone(&self.slot)]);
        self.seconds = log.take();
    }

    /// A complete response to a counted request.
    #[inline]
    ///
    /// `forgiven` is the pacing slack: lag the generator chose (to send several arrivals on
    /// one wake-up) is left out of the response time, up to that much; send lag stays raw.
    /// Returns the response time recorded (µs), for [`Recorder::name_response`].
    #[allow(clippy::too_many_arguments)]
    pub fn response(
        &mut self,
        status: u16,
        intended: Instant,
        forgiven: Duration,
        started: Instant,
        written: Instant,
        done: Instant,
        bytes: u64,
    ) -> u64 {
        let from = started.min(intended + forgiven).max(intended);
        let rt = us(done.saturating_duration_since(from));
        let _ = self.response_time.record(rt.max(1));
        let _ = self
            .service_time
            .record(us(done.saturating_duration_since(written)).max(1));
        let lag = us(started.saturating_duration_since(intended));
        let _ = self.send_lag.record(lag);
        self.responses += 1;
        let ok = self.ok_status.contains(status);
        if ok {
            self.ok += 1;
        }
        let slot = if (status as usize) < STATUS_SLOTS {
            status as usize
        } else {
            0
        };
        self.statuses[slot] += 1;
        self.bytes_in += bytes;
        self.first_event.get_or_insert(done);
        self.last_event = Some(done);
        let b = self.bucket(done);
        b.responses += 1;
        b.ok += ok as u64;
        b.bytes_in += bytes;
        b.response_time_sum_us += rt;
        b.response_time_max_us = b.response_time_max_us.max(rt);
        b.send_lag_sum_us += lag;
        let _ = self.second_hist.record(rt.max(1));
        rt
    }

    /// A response to a request of the warm-up, answered within it: in its second of the
    /// per-second series only (the timelines show what the warm-up sent and got, its seconds
    /// stored as warm-up), never in the run's figures. One answered after the warm-up ended
    /// is left out, so every second past it holds counted requests only.
    #[inline]
    pub fn warmup_response(
        &mut self,
        status: u16,
        intended: Instant,
        forgiven: Duration,
        started: Instant,
        done: Instant,
        bytes: u64,
    ) {
        if done >= self.window_start {
            return;
        }
        // Timed as a counted response is (see [`Recorder::response`]).
        let from = started.min(intended + forgiven).max(intended);
        let rt = us(done.saturating_duration_since(from));
        let lag = us(started.saturating_duration_since(intended));
        let ok = self.ok_status.contains(status);
        let b = self.bucket(done);
        b.responses += 1;
        b.ok += ok as u64;
        b.bytes_in += bytes;
        b.response_time_sum_us += rt;
        b.response_time_max_us = b.response_time_max_us.max(rt);
        b.send_lag_sum_us += lag;
        let _ = self.second_hist.record(rt.max(1));
    }

    /// A request of the warm-up that failed within it: in its second only (see
    /// [`Recorder::warmup_response`]).
    #[inline]
    pub fn warmup_error(&mut self, at: Instant) {
        if at < self.window_start {
            self.bucket(at).errors += 1;
        }
    }

    /// A counted request that ended in a transport error.
    #[inline]
    pub fn error(&mut self, kind: ErrorKind, at: Instant) {
        self.errors[kind.index()] += 1;
        self.first_event.get_or_insert(at);
        self.last_event = Some(at);
        self.bucket(at).errors += 1;
    }

    /// The run stopped early at `at` with `in_flight` counted requests unanswered: they are
    /// counted, and the window runs to the stop (one after warm-up), not to the last
    /// completion, which may be long before it or never have come.
    pub fn stopped(&mut self, in_flight: u64, at: Instant) {
        self.interrupted += in_flight;
        if at > self.window_start {
            self.last_event = Some(self.last_event.map_or(at, |l| l.max(at)));
        }
    }

    #[inline]
    pub fn connected(&mut self, took: Duration) {
        let _ = self.connect_time.record(us(took).max(1));
    }

    /// Time to first byte of a counted response.
    #[inline]
    pub fn first_byte(&mut self, took: Duration) {
        let _ = self.first_byte.record(us(took).max(1));
    }

    /// A TLS handshake done on a counted request's new connection.
    #[inline]
    pub fn handshake(&mut self, took: Duration, resumed: bool) {
        let _ = self.tls_handshake.record(us(took).max(1));
        if resumed {
            self.handshakes_resumed += 1;
        } else {
            self.handshakes_full += 1;
        }
    }

    /// A counted connection attempt's TLS handshake failed, for `reason` (the requests it
    /// carried count their errors apart, with [`Recorder::error`]).
    pub fn tls_failure(&mut self, reason: TlsReason) {
        self.tls_failures[reason.index()] += 1;
    }

    /// A counted connection attempt failed before it came up, TCP's part (`kind`).
    pub fn connect_failure(&mut self, kind: ErrorKind) {
        self.connect_failures[kind.index()] += 1;
    }

    pub fn error_count(&self) -> u64 {
        self.errors.iter().sum()
    }

    /// Folds another thread's measurements into this one.
    pub fn merge(&mut self, o: &Recorder) {
        let _ = self.response_time.add(&o.response_time);
        let _ = self.service_time.add(&o.service_time);
        let _ = self.send_lag.add(&o.send_lag);
        let _ = self.connect_time.add(&o.connect_time);
        let _ = self.first_byte.add(&o.first_byte);
        let _ = self.tls_handshake.add(&o.tls_handshake);
        self.tls |= o.tls;
        self.handshakes_full += o.handshakes_full;
        self.handshakes_resumed += o.handshakes_resumed;
        for (a, b) in self.tls_failures.iter_mut().zip(o.tls_failures.iter()) {
            *a += b;
        }
        self.handshakes_started += o.handshakes_started;
        self.connect_attempts += o.connect_attempts;
        self.connects_held += o.connects_held;
        for (a, b) in self
            .connect_failures
            .iter_mut()
            .zip(o.connect_failures.iter())
        {
            *a += b;
        }
        for (a, b) in self.errors.iter_mut().zip(o.errors.iter()) {
            *a += b;
        }
        for (a, b) in self.statuses.iter_mut().zip(o.statuses.iter()) {
            *a += b;
        }
        self.requests += o.requests;
        self.sent += o.sent;
        self.responses += o.responses;
        self.ok += o.ok;
        self.bytes_in += o.bytes_in;
        self.bytes_out += o.bytes_out;
        self.connections_opened += o.connections_opened;
        self.unsent += o.unsent;
        self.cpu += o.cpu;
        self.pool_waits += o.pool_waits;
        self.retries += o.retries;
        self.interrupted += o.interrupted;
        self.quic.add(&o.quic);
        for (mine, theirs) in self.protocols.iter_mut().zip(o.protocols) {
            *mine += theirs;
        }
        self.users_stopped += o.users_stopped;
        self.sessions.add(&o.sessions);
        // Threads share one origin, so buckets line up by index.
        let shift = o.origin.saturating_duration_since(self.origin).as_secs() as usize;
        if o.seconds.len() + shift > self.seconds.len() {
            self.seconds
                .resize(o.seconds.len() + shift, SecondBucket::default());
        }
        for (i, b) in o.seconds.iter().enumerate() {
            self.seconds[i + shift].add(b);
        }
        self.last_event = match (self.last_event, o.last_event) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        self.first_event = match (self.first_event, o.first_event) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.window_start = self.window_start.min(o.window_start);
        // Threads keep the same names table, in the same order.
        if self.names.is_empty() {
            self.names = o.names.clone();
        } else {
            for (a, b) in self.names.iter_mut().zip(o.names.iter()) {
                a.merge(b);
            }
        }
    }

    /// The length of the measured window, in seconds.
    ///
    /// A run that went its full course (`planned`): the span from the first to the last counted
    /// completion, but never less than the planned duration. Completions lag their sends by the
    /// response time, so the span of completions, not "end of warm-up to last completion",
    /// is the time over which they arrived: long requests (1 s against a 6 s step) then do not
    /// read low, an overloaded server's drain still stretches the window (its throughput reads
    /// as what it sustained), and a server that stops answering half-way is not flattered.
    /// Otherwise (bounded by --requests, or interrupted): end of warm-up to last completion.
    pub fn window_secs(&self, planned: Option<Duration>) -> f64 {
        match (planned, self.first_event, self.last_event) {
            (Some(p), Some(first), Some(last)) => {
                let n = self.responses + self.error_count();
                // n completions span n − 1 gaps: scale the span up by one gap.
                let span = last.saturating_duration_since(first).as_secs_f64();
                let span = if n > 1 {
                    span * n as f64 / (n - 1) as f64
                } else {
                    span
                };
                span.max(p.as_secs_f64())
            }
            (Some(p), _, _) => p.as_secs_f64(),
            (None, _, last) => last.map_or(0.0, |l| {
                l.saturating_duration_since(self.window_start).as_secs_f64()
            }),
        }
    }
}

/// CPU time consumed so far by the calling thread.
pub fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime with a valid pointer.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_counts_what_was_in_flight_and_ends_the_window_there() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut a = Recorder::new(t0, t0 + ms(100), 4);
        let mut b = Recorder::new(t0, t0 + ms(100), 4);
        a.error(ErrorKind::Reset, t0 + ms(300));
        a.stopped(2, t0 + ms(2100));
        // A stop within the warm-up counts its requests but leaves the window alone.
        b.stopped(1, t0 + ms(50));
        a.merge(&b);
        assert_eq!(a.interrupted, 3);
        assert!(
            (a.window_secs(None) - 2.0).abs() < 1e-9,
            "{}",
            a.window_secs(None)
        );
    }

    #[test]
    fn records_and_merges() {
        let t0 = Instant::now();
        let mut a = Recorder::new(t0, t0, 4);
        let mut b = Recorder::new(t0, t0, 4);
        b.tls = true;
        let ms = Duration::from_millis;
        a.response(
            200,
            t0,
            Duration::ZERO,
            t0 + ms(1),
            t0 + ms(2),
            t0 + ms(10),
            100,
        );
        b.response(503, t0, Duration::ZERO, t0, t0, t0 + ms(1500), 50);
        b.error(ErrorKind::Reset, t0 + ms(1600));
        b.handshake(ms(3), false);
        b.handshake(ms(1), true);
        b.tls_failure(TlsReason::Expired);
        b.error(TlsReason::Expired.kind(), t0 + ms(1600));
        b.connect_attempts = 3;
        b.connect_failure(ErrorKind::ConnectRefused);
        b.connects_held = 7;
        a.connect_attempts = 2;
        a.connect_failure(ErrorKind::ConnectRefused);
        assert!(a.seconds.is_empty(), "seconds go to the slot");
        a.collect_own_seconds();
        b.collect_own_seconds();
        a.merge(&b);
        assert!(a.tls);
        assert_eq!((a.handshakes_full, a.handshakes_resumed), (1, 1));
        assert_eq!(a.tls_handshake.len(), 2);
        assert_eq!(a.tls_failures[TlsReason::Expired.index()], 1);
        assert_eq!((a.connect_attempts, a.connects_held), (5, 7));
        assert_eq!(a.connect_failures[ErrorKind::ConnectRefused.index()], 2);
        assert_eq!(a.errors[ErrorKind::TlsCertificate.index()], 1);
        assert_eq!(a.responses, 2);
        assert_eq!(a.ok, 1);
        assert_eq!(a.statuses[200], 1);
        assert_eq!(a.statuses[503], 1);
        assert_eq!(a.errors[ErrorKind::Reset.index()], 1);
        assert_eq!(a.bytes_in, 150);
        assert_eq!(a.seconds.len(), 2);
        assert_eq!(a.seconds[0].responses, 1);
        assert_eq!(a.seconds[1].responses, 1);
        assert_eq!(a.seconds[1].errors, 2);
        // Each second's percentiles, from its own response times: 10 ms, then 1.5 s.
        assert_eq!(a.seconds[0].p99_us / 1000, 10);
        assert_eq!(a.seconds[1].p50_us / 10_000, 150);
        assert_eq!(a.response_time.len(), 2);
        // With 1 ms of pacing slack the first response's deliberate 1 ms of lag is forgiven.
        let mut c = Recorder::new(t0, t0, 4);
        c.response(200, t0, ms(1), t0 + ms(1), t0 + ms(2), t0 + ms(10), 100);
        assert_eq!(c.response_time.max() / 100, 90);
        assert!(c.send_lag.max() >= 999);
        // Lag beyond the slack still counts.
        let mut d = Recorder::new(t0, t0, 4);
        d.response(200, t0, ms(1), t0 + ms(5), t0 + ms(5), t0 + ms(10), 100);
        assert_eq!(d.response_time.max() / 100, 90);
        assert!(a.response_time.max() >= 1_499_000);
        // Send lag of the first: 1 ms; service time: 8 ms.
        assert!(a.send_lag.max() >= 999);
        assert_eq!(a.service_time.min() / 1000, 8);
        assert!((a.window_secs(None) - 1.6).abs() < 0.01);
        assert_eq!(a.window_secs(Some(Duration::from_secs(5))), 5.0);
    }

    #[test]
    fn warm_up_answers_fill_their_seconds_only() {
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        let mut r = Recorder::new(t0, t0 + ms(2000), 4);
        r.warmup_response(200, t0, ms(0), t0, t0 + ms(10), 100);
        r.warmup_response(503, t0 + ms(1000), ms(0), t0 + ms(1001), t0 + ms(1020), 50);
        r.warmup_error(t0 + ms(1500));
        // Answered after the warm-up ended: in no second (those hold counted requests only).
        r.warmup_response(200, t0 + ms(1990), ms(0), t0 + ms(1990), t0 + ms(2050), 10);
        r.warmup_error(t0 + ms(2100));
        r.collect_own_seconds();
        assert_eq!(r.seconds.len(), 2, "{:?}", r.seconds);
        assert_eq!((r.seconds[0].responses, r.seconds[0].ok), (1, 1));
        assert_eq!(r.seconds[0].bytes_in, 100);
        assert_eq!(r.seconds[0].response_time_max_us / 1000, 10);
        assert_eq!((r.seconds[1].responses, r.seconds[1].ok), (1, 0));
        assert_eq!(r.seconds[1].errors, 1);
        assert_eq!(r.seconds[1].send_lag_sum_us / 1000, 1);
        // The run's own figures know nothing of them.
        assert_eq!((r.responses, r.ok, r.bytes_in), (0, 0, 0));
        assert_eq!(r.errors.iter().sum::<u64>(), 0);
        assert!(r.response_time.is_empty() && r.first_event.is_none());
    }

    /// Names are kept per thread and added at the merge; a name out of the table is dropped
    /// (a run that keeps no names), never a panic.
    #[test]
    fn names_record_and_merge() {
        let t0 = Instant::now();
        let names = ["/a".to_string(), "/b".to_string()];
        let (mut a, mut b) = (Recorder::new(t0, t0, 1), Recorder::new(t0, t0, 1));
        a.keep_names(&names);
        b.keep_names(&names);
        let ms = Duration::from_millis;
        let rt = a.response(200, t0, ms(0), t0, t0, t0 + ms(20), 1);
        assert_eq!(rt, 20_000);
        a.name_response(0, 200, rt);
        b.name_response(1, 503, 5_000);
        b.name_error(1, ErrorKind::Timeout);
        b.name_response(7, 200, 1);
        b.name_error(7, ErrorKind::Reset);
        a.merge(&b);
        assert_eq!(a.names.len(), 2);
        assert_eq!((a.names[0].responses, a.names[0].ok), (1, 1));
        assert_eq!(a.names[0].response_time.as_ref().unwrap().max() / 1000, 20);
        assert_eq!((a.names[1].responses, a.names[1].ok), (1, 0));
        assert_eq!(a.names[1].errors[ErrorKind::Timeout.index()], 1);
        assert_eq!(a.names[1].error_count(), 1);
        let mut none = Recorder::new(t0, t0, 1);
        none.name_response(0, 200, 1);
        assert!(none.names.is_empty());
    }
}

/// Open-loop scenario sessions (httperf's `--wsess`): each arrival starts one user's pass
/// through its scenario, unless `--max-sessions` are already in flight (then it is dropped).
/// Only sessions that arrived after the warm-up are counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SessionTally {
    /// The run counts sessions (open loop with a scenario).
    pub open: bool,
    pub started: u64,
    /// Sessions that went through their scenario to its end.
    pub completed: u64,
    /// Sessions ended by a failed request, check or extraction.
    pub failed: u64,
    /// Arrivals that found `--max-sessions` in flight.
    pub dropped: u64,
}

impl SessionTally {
    pub fn add(&mut self, o: &SessionTally) {
        self.open |= o.open;
        self.started += o.started;
        self.completed += o.completed;
        self.failed += o.failed;
        self.dropped += o.dropped;
    }
}
