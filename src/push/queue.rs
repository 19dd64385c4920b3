//! A pusher: a bounded queue of frames and the thread that sends them. The producer (the
//! per-second loop) only takes a lock to append; when the queue is full the oldest frame is
//! dropped and counted, so a sink that is slow or down costs the load nothing.
use super::Frame;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Why a batch was not delivered.
#[derive(Debug, Clone, PartialEq)]
pub enum SendError {
    /// Worth sending again (connection failed, 5xx, 429): the frames go back to the queue.
    Retry(String),
    /// Refused for good (4xx): the frames are dropped.
    Drop(String),
}

/// Where frames go (an HTTP endpoint; a scripted one in the tests).
pub trait Sink: Send {
    fn send(&mut self, frames: &[Frame]) -> Result<(), SendError>;
}

/// What a pusher did, for the summary and the JSON.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct PushReport {
    /// `prometheus-remote-write` or `otlp`.
    pub sink: String,
    /// Frames (one a second, and the summary's) the sink accepted.
    pub pushed: u64,
    /// Frames dropped: the queue was full, the sink refused them, or they were still queued
    /// when the run's drain time ran out.
    pub dropped: u64,
    /// Exchanges that failed (each retried while the frames stay queued).
    pub failed_exchanges: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// Request names left out of the per-name metrics (beyond the cap).
    #[serde(skip_serializing_if = "is_zero")]
    pub names_left_out: usize,
    /// The CPU time of the sink's own thread (`push-KIND`: encoding and sending), ms: the
    /// push's cost measured on its thread, apart from the load's (`generator.cpu_ms`).
    pub cpu_ms: f64,
    /// The CPU time spent making the frames on the runner's thread (once a second), ms;
    /// shared by every sink of the run.
    pub frames_cpu_ms: f64,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl std::fmt::Display for PushReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: pushed {}, dropped {}",
            self.sink, self.pushed, self.dropped
        )?;
        if self.names_left_out > 0 {
            write!(f, ", {} request names left out", self.names_left_out)?;
        }
        if let Some(e) = &self.last_error {
            write!(f, ", last error: {e}")?;
        }
        Ok(())
    }
}

#[derive(Default)]
struct State {
    frames: VecDeque<Frame>,
    cap: usize,
    closed: bool,
    /// The sender gave up (drain time over): frames it still holds count as dropped.
    abandoned: bool,
    report: PushReport,
}

struct Shared {
    state: Mutex<State>,
    wake: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Plain counters and frames: a panic elsewhere leaves them usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One sink's queue and sending thread.
pub struct Pusher {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// The batch size: a sink back after an outage gets what was kept in a few exchanges.
const BATCH: usize = 20;
/// Wait between two failed exchanges.
const RETRY_PAUSE: Duration = Duration::from_secs(1);

impl Pusher {
    /// Starts the sending thread of `sink`, keeping at most `cap` frames.
    pub fn start(kind: &str, sink: Box<dyn Sink>, cap: usize) -> Pusher {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                cap: cap.max(1),
                report: PushReport {
                    sink: kind.to_string(),
                    ..PushReport::default()
                },
                ..State::default()
            }),
            wake: Condvar::new(),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("push-{kind}"))
            .spawn(move || send_loop(&s, sink))
            .ok();
        if thread.is_none() {
            shared.lock().report.last_error = Some("could not start its thread".into());
        }
        Pusher { shared, thread }
    }

    /// Queues a frame; never waits on the sink. A full queue loses its oldest frame.
    pub fn offer(&self, frame: Frame) {
        let mut st = self.shared.lock();
        if st.frames.len() >= st.cap {
            st.frames.pop_front();
            st.report.dropped += 1;
        }
        st.frames.push_back(frame);
        drop(st);
        self.shared.wake.notify_one();
    }

    /// Counts request names left out of the frames (reported with the rest).
    pub fn names_left_out(&self, n: usize) {
        self.shared.lock().report.names_left_out = n;
    }

    /// Lets the thread deliver what is queued for at most `within`, then reports. Whatever
    /// is still queued (or in an exchange that outlives `within`) is counted as dropped.
    pub fn finish(mut self, within: Duration) -> PushReport {
        let deadline = Instant::now() + within;
        self.shared.lock().closed = true;
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.take() {
            while !t.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if t.is_finished() {
                let _ = t.join();
            }
            // Else the thread is in an exchange bounded by its own deadline: left to end
            // alone (it drops what it holds), the run does not wait for it.
        }
        let mut st = self.shared.lock();
        st.abandoned = true;
        let left = st.frames.len() as u64;
        st.frames.clear();
        st.report.dropped += left;
        st.report.clone()
    }
}

fn send_loop(shared: &Shared, mut sink: Box<dyn Sink>) {
    loop {
        let batch: Vec<Frame> = {
            let mut st = shared.lock();
            while st.frames.is_empty() && !st.closed {
                st = shared.wake.wait(st).unwrap_or_else(|e| e.into_inner());
            }
            if st.frames.is_empty() {
                return;
            }
            let n = st.frames.len().min(BATCH);
            st.frames.drain(..n).collect()
        };
        let result = sink.send(&batch);
        let mut st = shared.lock();
        // Read on the thread itself after each exchange (once a second): its own CPU.
        st.report.cpu_ms = crate::metrics::recorder::thread_cpu_time().as_secs_f64() * 1e3;
        let n = batch.len() as u64;
        if st.abandoned {
            st.report.dropped += n;
            return;
        }
        match result {
            Ok(()) => st.report.pushed += n,
            Err(SendError::Drop(e)) => {
                st.report.dropped += n;
                st.report.failed_exchanges += 1;
                st.report.last_error = Some(e);
            }
            Err(SendError::Retry(e)) => {
                st.report.failed_exchanges += 1;
                st.report.last_error = Some(e);
                // Back in front, in order; what no longer fits is the oldest: dropped.
                for f in batch.into_iter().rev() {
                    if st.frames.len() >= st.cap {
                        st.report.dropped += 1;
                    } else {
                        st.frames.push_front(f);
                    }
                }
                if st.closed {
                    // The run is over and the sink is failing: no more waiting on it.
                    st.report.dropped += st.frames.len() as u64;
                    st.frames.clear();
                    return;
                }
                let _ = shared.wake.wait_timeout(st, RETRY_PAUSE);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// A sink that blocks on each exchange until the test lets it go.
    struct Stalled(mpsc::Receiver<()>, Arc<Mutex<Vec<u64>>>);

    impl Sink for Stalled {
        fn send(&mut self, frames: &[Frame]) -> Result<(), SendError> {
            let _ = self.0.recv();
            self.1
                .lock()
                .unwrap()
                .extend(frames.iter().map(|f| f.at_ms));
            Ok(())
        }
    }

    fn frame(at: u64) -> Frame {
        Frame {
            at_ms: at,
            ..Frame::default()
        }
    }

    /// A stalled sink: the producer's offers all return at once, the queue keeps the newest
    /// `cap` frames, the rest are counted as dropped; once the sink moves again the kept
    /// frames go out in order.
    #[test]
    fn a_stalled_sink_drops_the_oldest_and_never_blocks() {
        let (go, wait) = mpsc::channel();
        let got = Arc::new(Mutex::new(Vec::new()));
        let p = Pusher::start("test", Box::new(Stalled(wait, got.clone())), 5);
        let t0 = Instant::now();
        p.offer(frame(0));
        // Let the thread take frame 0 into its (stalled) exchange.
        while !p.shared.lock().frames.is_empty() {
            std::thread::sleep(Duration::from_millis(1));
        }
        for i in 1..=1000 {
            p.offer(frame(i));
        }
        assert!(t0.elapsed() < Duration::from_secs(2), "the producer waited");
        assert_eq!(p.shared.lock().report.dropped, 995);
        for _ in 0..10 {
            let _ = go.send(());
        }
        let r = p.finish(Duration::from_secs(10));
        assert_eq!(r.pushed, 6);
        assert_eq!(r.dropped, 995);
        assert_eq!(*got.lock().unwrap(), vec![0, 996, 997, 998, 999, 1000]);
    }

    /// A sink that never answers within the drain time: finish returns on time and counts
    /// what was not delivered.
    #[test]
    fn finish_is_bounded_when_the_sink_hangs() {
        let (_go, wait) = mpsc::channel();
        let p = Pusher::start("test", Box::new(Stalled(wait, Arc::default())), 60);
        for i in 0..20 {
            p.offer(frame(i));
        }
        let t0 = Instant::now();
        let r = p.finish(Duration::from_millis(300));
        assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
        assert_eq!(r.pushed, 0);
        // The batch in the hung exchange is counted when it ends; the queued rest now.
        assert_eq!(r.dropped, 20 - BATCH as u64);
    }

    /// A failing sink: frames are kept for the next try, and the error is reported; a
    /// refusal drops them.
    #[test]
    fn failures_are_retried_and_refusals_dropped() {
        struct Failing(u32);
        impl Sink for Failing {
            fn send(&mut self, _: &[Frame]) -> Result<(), SendError> {
                self.0 += 1;
                match self.0 {
                    1 => Err(SendError::Retry("connect: refused".into())),
                    2 => Ok(()),
                    _ => Err(SendError::Drop("HTTP 400: out of order".into())),
                }
            }
        }
        let p = Pusher::start("test", Box::new(Failing(0)), 60);
        p.offer(frame(1));
        let deadline = Instant::now() + Duration::from_secs(10);
        while p.shared.lock().report.pushed == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        p.offer(frame(2));
        let r = p.finish(Duration::from_secs(10));
        assert_eq!((r.pushed, r.dropped, r.failed_exchanges), (1, 1, 2));
        assert_eq!(r.last_error.as_deref(), Some("HTTP 400: out of order"));
        assert!(r.to_string().contains("last error: HTTP 400"), "{r}");
    }
}
