//! Pacing: the open-loop arrival schedule and a timer precise below a millisecond.
//!
//! The schedule is ONE global schedule (not per connection, unlike wrk2), a function of the
//! plan alone (rate, arrival process, seed): arrival n of a constant schedule is due at n/R,
//! arrival n of a Poisson schedule after the first n+1 gaps of one exponential stream drawn
//! from the seed. Whoever sends it (thread k of T, on generator i of N: see
//! `plan::segment::Lane`) owns a lane of indices `offset + j × stride`, so threads and hosts
//! splitting a plan send together exactly the schedule one thread would have sent.
//!
//! Poisson lanes draw every gap of the global stream and keep their own: R draws a second
//! per thread whatever the split (a few ms of CPU a second at 100k/s), the price of an exact
//! split. Gaps are whole nanoseconds added as integers, so every lane sums them identically.
//!
//! On a moving rate (`--stages`: a piecewise linear r(t), `plan::stages::Profile`) the same
//! global indices are mapped through the integrated rate Λ: constant arrival n is due when
//! Λ(t) = n; Poisson arrival n when Λ(t) reaches the sum of n+1 unit-exponential gaps (a
//! Poisson process in Λ's time is one of rate r(t) in real time). Closed form per piece, no
//! drift, nothing allocated per arrival; lanes still partition the arrivals.
use crate::plan::segment::Lane;
use crate::plan::stages::Profile;
use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    Constant,
    Poisson,
}

/// A recorded schedule (an access log's, already scaled by the replay speed): arrival `i` is
/// due `at_ns[i]` after the origin and sends request `requests[i]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Replay {
    pub at_ns: Vec<u64>,
    pub requests: Vec<u32>,
    /// The recording's length, scaled: the replay's natural duration.
    pub span_ns: u64,
}

impl Replay {
    /// The mean rate, requests/s: the offered load shown for the run.
    pub fn rate(&self) -> f64 {
        self.at_ns.len() as f64 / (self.span_ns.max(1) as f64 / 1e9)
    }
}

/// Past the last recorded arrival: nothing more is due within any run's length.
const NEVER: Duration = Duration::from_secs(100 * 365 * 86_400);

/// One lane of the global arrival schedule.
#[derive(Debug)]
pub struct Schedule {
    origin: Instant,
    rate: f64,
    arrival: Arrival,
    /// Global index of the next arrival of this lane.
    index: u64,
    stride: u64,
    next: Instant,
    /// Poisson: the global stream's generator, the index of the last gap drawn (or None
    /// before the first) and the time of that arrival since the origin, in ns.
    rng: fastrand::Rng,
    drawn: Option<u64>,
    at_ns: u64,
    /// Replaying a recorded schedule instead of the rate's.
    replay: Option<Arc<Replay>>,
    /// A moving rate: its profile, the piece the last arrival fell in, and (Poisson) the
    /// running sum of unit-exponential gaps, in arrivals.
    ramp: Option<Arc<Profile>>,
    piece: usize,
    units: f64,
}

impl Schedule {
    pub fn new(origin: Instant, rate: f64, arrival: Arrival, lane: Lane, seed: u64) -> Schedule {
        let mut s = Schedule {
            origin,
            rate,
            arrival,
            index: lane.offset,
            stride: lane.stride.max(1),
            next: origin,
            rng: fastrand::Rng::with_seed(seed),
            drawn: None,
            at_ns: 0,
            replay: None,
            ramp: None,
            piece: 0,
            units: 0.0,
        };
        s.next = s.due(s.index);
        s
    }

    /// A lane of the schedule of a moving rate: arrivals follow `profile`'s integral.
    pub fn ramp(
        origin: Instant,
        profile: Arc<Profile>,
        arrival: Arrival,
        lane: Lane,
        seed: u64,
    ) -> Schedule {
        let mut s = Schedule::new(origin, profile.peak().max(1e-9), arrival, lane, seed);
        // Rewind what `new` drew for the constant rate: the stream starts over in Λ's time.
        s.rng = fastrand::Rng::with_seed(seed);
        s.drawn = None;
        s.at_ns = 0;
        s.ramp = Some(profile);
        s.next = s.due(s.index);
        s
    }

    /// From now on, the arrivals follow `profile` (a live change, `engine::steer`): the
    /// lane's pending arrival and every later one are mapped through its integral. The
    /// profile equals the one followed so far up to the change, so arrivals before it keep
    /// their times; a constant rate's schedule carries its Poisson draws over into Λ's time
    /// (arrival n at t is Λ = R·t there). A replay keeps its recorded clock.
    pub fn follow(&mut self, profile: Arc<Profile>) {
        if self.replay.is_some() {
            return;
        }
        if self.ramp.is_none() {
            self.units = self.at_ns as f64 * 1e-9 * self.rate;
        }
        self.ramp = Some(profile);
        self.piece = 0;
        self.next = self.due(self.index);
    }

    /// A lane of a recorded schedule: lanes stride through its arrivals as through the rate's.
    pub fn replay(origin: Instant, replay: Arc<Replay>, lane: Lane) -> Schedule {
        let mut s = Schedule::new(origin, replay.rate(), Arrival::Constant, lane, 0);
        s.replay = Some(replay);
        s.next = s.due(s.index);
        s
    }

    /// Replay: the request of the next arrival (None: the caller picks).
    #[inline]
    pub fn request(&self) -> Option<usize> {
        let r = self.replay.as_ref()?;
        r.requests.get(self.index as usize).map(|&i| i as usize)
    }

    /// When global arrival `i` is due; Poisson lanes only ever move forward.
    fn due(&mut self, i: u64) -> Instant {
        if let Some(r) = &self.replay {
            return match r.at_ns.get(i as usize) {
                Some(&ns) => self.origin + Duration::from_nanos(ns),
                None => self.origin + NEVER,
            };
        }
        if let Some(p) = &self.ramp {
            let x = match self.arrival {
                Arrival::Constant => i as f64,
                Arrival::Poisson => {
                    while self.drawn.is_none_or(|d| d < i) {
                        self.units += -(1.0 - self.rng.f64()).ln();
                        self.drawn = Some(self.drawn.map_or(0, |d| d + 1));
                    }
                    self.units
                }
            };
            return match p.inverse(x, &mut self.piece) {
                Some(t) => self.origin + Duration::from_secs_f64(t),
                None => self.origin + NEVER,
            };
        }
        match self.arrival {
            Arrival::Constant => self.origin + Duration::from_secs_f64(i as f64 / self.rate),
            Arrival::Poisson => {
                while self.drawn.is_none_or(|d| d < i) {
                    // 1 - U avoids ln(0); the gap is rounded to whole ns once, here.
                    let gap = -(1.0 - self.rng.f64()).ln() / self.rate * 1e9;
                    self.at_ns = self.at_ns.saturating_add(gap.round() as u64);
                    self.drawn = Some(self.drawn.map_or(0, |d| d + 1));
                }
                self.origin + Duration::from_nanos(self.at_ns)
            }
        }
    }

    /// The intended time of the next arrival.
    #[inline]
    pub fn next(&self) -> Instant {
        self.next
    }

    #[inline]
    pub fn advance(&mut self) {
        self.index += self.stride;
        self.next = self.due(self.index);
    }
}

/// A timerfd registered with the event loop: epoll_wait's timeout has millisecond
/// granularity, too coarse to pace thousands of requests per second on time.
pub struct TimerFd {
    fd: RawFd,
    armed: Option<Instant>,
}

impl TimerFd {
    pub fn new(registry: &Registry, token: Token) -> std::io::Result<TimerFd> {
        // SAFETY: plain syscall; the fd is owned by this struct and closed in Drop.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let t = TimerFd { fd, armed: None };
        registry.register(&mut SourceFd(&fd), token, Interest::READABLE)?;
        Ok(t)
    }

    /// Arms the timer to fire at `at` (relative to now), unless already armed for it.
    pub fn arm(&mut self, at: Instant, now: Instant) {
        if self.armed == Some(at) {
            return;
        }
        let d = at
            .saturating_duration_since(now)
            .max(Duration::from_nanos(1000));
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: d.as_secs() as libc::time_t,
                tv_nsec: d.subsec_nanos() as libc::c_long,
            },
        };
        // SAFETY: valid fd and pointers to stack values.
        unsafe { libc::timerfd_settime(self.fd, 0, &spec, std::ptr::null_mut()) };
        self.armed = Some(at);
    }

    /// Clears the expiration count after the timer fired.
    pub fn clear(&mut self) {
        let mut buf = [0u8; 8];
        // SAFETY: reading 8 bytes into a stack buffer from our own fd; EAGAIN is fine.
        unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), 8) };
        self.armed = None;
    }
}

impl Drop for TimerFd {
    fn drop(&mut self) {
        // SAFETY: we own the fd.
        unsafe { libc::close(self.fd) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::segment::Segment;

    /// The first `n` arrivals of a lane, as offsets from the origin.
    fn take(s: &mut Schedule, t0: Instant, n: usize) -> Vec<Duration> {
        (0..n)
            .map(|_| {
                let d = s.next().duration_since(t0);
                s.advance();
                d
            })
            .collect()
    }

    /// Segments of N hosts, each with its own thread count, reassemble into the schedule one
    /// thread sends alone: the same arrivals at the same nanoseconds, none lost or doubled.
    #[test]
    fn segments_reassemble_into_the_whole_schedule() {
        let t0 = Instant::now();
        for arrival in [Arrival::Constant, Arrival::Poisson] {
            let whole = Segment::WHOLE.lane(0, 1);
            let reference = take(&mut Schedule::new(t0, 1500.0, arrival, whole, 42), t0, 6000);
            for threads in [vec![1usize, 1], vec![3, 2, 1], vec![2, 2, 2, 2]] {
                let count = threads.len() as u32;
                let mut all = Vec::new();
                for (index, &t) in threads.iter().enumerate() {
                    let seg = Segment {
                        index: index as u32,
                        count,
                    };
                    for k in 0..t {
                        // Each lane holds 6000 / stride arrivals of the first 6000.
                        let lane = seg.lane(k, t);
                        let n = (6000 - lane.offset).div_ceil(lane.stride) as usize;
                        let mut s = Schedule::new(t0, 1500.0, arrival, lane, 42);
                        all.extend(take(&mut s, t0, n));
                    }
                }
                all.sort();
                assert_eq!(all, reference, "{arrival:?} over {threads:?}");
            }
        }
    }

    /// A ramp's schedule: the arrivals of each second are the integral of the rate over that
    /// second within one arrival (constant), or near it (Poisson, over a 10 s ramp).
    #[test]
    fn ramp_counts_per_second_follow_the_integral() {
        use crate::plan::stages::Stages;
        let t0 = Instant::now();
        let stages = Stages::parse("0s:50, 12s:600, 3s:600, 5s:0").unwrap();
        let profile = Arc::new(stages.profile(Duration::from_secs(2)));
        let end = profile.end();
        let whole = Segment::WHOLE.lane(0, 1);
        let per_second = |arrival| {
            let mut s = Schedule::ramp(t0, Arc::clone(&profile), arrival, whole, 9);
            let mut counts = vec![0u64; end.ceil() as usize];
            loop {
                let t = s.next().duration_since(t0).as_secs_f64();
                if t >= end {
                    break;
                }
                counts[t as usize] += 1;
                s.advance();
            }
            counts
        };
        let constant = per_second(Arrival::Constant);
        let mut before = 0u64;
        for (sec, &n) in constant.iter().enumerate() {
            // Arrivals in [0, t) are ⌈Λ(t)⌉: each second's count is within 1 of its integral,
            // and the running count never drifts.
            let want = profile.integral(sec as f64 + 1.0) - profile.integral(sec as f64);
            assert!(
                (n as f64 - want).abs() <= 1.0,
                "second {sec}: {n} vs {want}"
            );
            before += n;
            let cum = profile.integral(sec as f64 + 1.0);
            assert!(
                (before as f64 - cum).abs() <= 1.0,
                "drift at {sec}: {before} vs {cum}"
            );
        }
        // The ramp down to 0 sends nothing past its end, and the level-0 tail holds none.
        assert_eq!(
            constant.iter().sum::<u64>() as f64,
            profile.integral(end).ceil()
        );
        // Poisson: 5-second windows of the ramp within 4 standard deviations of the integral.
        let poisson = per_second(Arrival::Poisson);
        for w in (0..poisson.len()).step_by(5) {
            let hi = (w + 5).min(poisson.len());
            let n: u64 = poisson[w..hi].iter().sum();
            let want = profile.integral(hi as f64) - profile.integral(w as f64);
            assert!(
                (n as f64 - want).abs() <= 4.0 * want.sqrt() + 1.0,
                "{w}..{hi}: {n} vs {want}"
            );
        }
    }

    /// Lanes of a ramp (threads of several hosts) reassemble into the schedule one thread
    /// sends alone, constant and Poisson.
    #[test]
    fn ramp_lanes_partition_the_arrivals() {
        use crate::plan::stages::Stages;
        let t0 = Instant::now();
        let profile = Arc::new(
            Stages::parse("5s:800, 5s:100")
                .unwrap()
                .profile(Duration::ZERO),
        );
        let total = profile.integral(profile.end()).ceil() as usize;
        for arrival in [Arrival::Constant, Arrival::Poisson] {
            let mk = |lane| Schedule::ramp(t0, Arc::clone(&profile), arrival, lane, 3);
            let mut whole = mk(Segment::WHOLE.lane(0, 1));
            let reference = take(&mut whole, t0, total);
            for threads in [vec![1usize, 1], vec![3, 2, 1]] {
                let count = threads.len() as u32;
                let mut all = Vec::new();
                for (index, &t) in threads.iter().enumerate() {
                    let seg = Segment {
                        index: index as u32,
                        count,
                    };
                    for k in 0..t {
                        let lane = seg.lane(k, t);
                        let n = (total as u64)
                            .saturating_sub(lane.offset)
                            .div_ceil(lane.stride);
                        all.extend(take(&mut mk(lane), t0, n as usize));
                    }
                }
                all.sort();
                assert_eq!(all, reference, "{arrival:?} over {threads:?}");
            }
        }
    }

    #[test]
    fn constant_is_evenly_spaced() {
        let t0 = Instant::now();
        let all = take(
            &mut Schedule::new(t0, 1000.0, Arrival::Constant, Segment::WHOLE.lane(0, 1), 1),
            t0,
            30,
        );
        for (i, d) in all.iter().enumerate() {
            assert_eq!(d.as_micros(), i as u128 * 1000);
        }
    }

    #[test]
    fn another_seed_is_another_poisson_schedule() {
        let t0 = Instant::now();
        let lane = Segment::WHOLE.lane(0, 1);
        let a = take(
            &mut Schedule::new(t0, 1000.0, Arrival::Poisson, lane, 1),
            t0,
            50,
        );
        let b = take(
            &mut Schedule::new(t0, 1000.0, Arrival::Poisson, lane, 2),
            t0,
            50,
        );
        assert_ne!(a, b);
    }

    #[test]
    fn poisson_mean_rate_of_a_lane() {
        let t0 = Instant::now();
        // Half of a 2,000/s schedule: 20,000 arrivals of a 1,000/s lane take ~20 s (mean
        // within 3%).
        let lane = Segment { index: 1, count: 2 }.lane(0, 1);
        let mut s = Schedule::new(t0, 2000.0, Arrival::Poisson, lane, 7);
        for _ in 0..20_000 {
            s.advance();
        }
        let secs = s.next().duration_since(t0).as_secs_f64();
        assert!((secs - 20.0).abs() < 0.6, "{secs}");
    }
}
