//! Pacing: the open-loop arrival schedule and a timer precise below a millisecond.
//!
//! The schedule is ONE global schedule (not per connection, unlike wrk2): with T threads,
//! thread k owns arrivals k, k+T, k+2T… of the constant schedule, or an independent Poisson
//! stream of rate R/T (the superposition of T such streams is a Poisson stream of rate R).
use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    Constant,
    Poisson,
}

/// One thread's share of the global arrival schedule.
#[derive(Debug)]
pub struct Schedule {
    origin: Instant,
    rate: f64,
    arrival: Arrival,
    /// Constant: global index of the next arrival. Poisson: unused.
    index: u64,
    stride: u64,
    next: Instant,
    rng: fastrand::Rng,
}

impl Schedule {
    pub fn new(
        origin: Instant,
        rate: f64,
        arrival: Arrival,
        thread: usize,
        threads: usize,
        seed: u64,
    ) -> Schedule {
        let mut s = Schedule {
            origin,
            rate,
            arrival,
            index: thread as u64,
            stride: threads as u64,
            next: origin,
            rng: fastrand::Rng::with_seed(
                seed ^ (thread as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            ),
        };
        s.next = match arrival {
            Arrival::Constant => s.at_index(s.index),
            Arrival::Poisson => origin + s.exp_gap(),
        };
        s
    }

    fn at_index(&self, i: u64) -> Instant {
        self.origin + Duration::from_secs_f64(i as f64 / self.rate)
    }

    fn exp_gap(&mut self) -> Duration {
        // Thread rate is R/T; 1 - U avoids ln(0).
        let per_thread = self.rate / self.stride as f64;
        Duration::from_secs_f64(-(1.0 - self.rng.f64()).ln() / per_thread)
    }

    /// The intended time of the next arrival.
    #[inline]
    pub fn next(&self) -> Instant {
        self.next
    }

    #[inline]
    pub fn advance(&mut self) {
        match self.arrival {
            Arrival::Constant => {
                self.index += self.stride;
                self.next = self.at_index(self.index);
            }
            Arrival::Poisson => {
                let gap = self.exp_gap();
                self.next += gap;
            }
        }
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

    #[test]
    fn constant_threads_interleave_into_one_schedule() {
        let t0 = Instant::now();
        let mut all = Vec::new();
        for k in 0..3 {
            let mut s = Schedule::new(t0, 1000.0, Arrival::Constant, k, 3, 1);
            for _ in 0..10 {
                all.push(s.next().duration_since(t0));
                s.advance();
            }
        }
        all.sort();
        for (i, d) in all.iter().enumerate() {
            assert_eq!(d.as_micros(), i as u128 * 1000);
        }
    }

    #[test]
    fn poisson_mean_rate() {
        let t0 = Instant::now();
        let mut s = Schedule::new(t0, 2000.0, Arrival::Poisson, 0, 2, 7);
        for _ in 0..20_000 {
            s.advance();
        }
        // 20,000 arrivals of a 1,000/s stream take ~20 s; the mean is within 3%.
        let secs = s.next().duration_since(t0).as_secs_f64();
        assert!((secs - 20.0).abs() < 0.6, "{secs}");
    }
}
