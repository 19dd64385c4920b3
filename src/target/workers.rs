//! `--workers N`: the worker-limit gate. Every request holds one of N permits for its whole
//! duration (waiting, sleeping, spinning, writing), and the rest queue in FIFO order. It models
//! Apache prefork's MaxRequestWorkers or PHP-FPM's pm.max_children (S2, S4, S5): capacity is
//! N / service time, and past it requests queue instead of failing.
//!
//! The gate also counts what a pool status page shows (busy, idle, waiting, how often every
//! worker was busy), served at `/pool-status` in PHP-FPM's JSON so that the observer's FPM
//! sampler reads it unchanged.
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::{Semaphore, SemaphorePermit};

pub(crate) struct Gate {
    permits: Option<Semaphore>,
    size: usize,
    /// Requests waiting for a permit now, the most ever, and how many had to wait.
    waiting: AtomicU64,
    max_waiting: AtomicU64,
    waited: AtomicU64,
}

/// The pool as a status page shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PoolStatus {
    pub(crate) busy: u64,
    pub(crate) idle: u64,
    pub(crate) total: u64,
    pub(crate) waiting: u64,
    pub(crate) max_waiting: u64,
    /// Requests that found every worker busy (FPM's "max children reached" counts the same
    /// event on its side).
    pub(crate) waited: u64,
}

/// Takes one request off the waiting count however its wait ends (a permit, or the
/// connection dropped while waiting).
struct Waiting<'a>(&'a AtomicU64);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Gate {
    /// `None`: unlimited. The caller checks `1 <= n <= Semaphore::MAX_PERMITS`.
    pub(crate) fn new(workers: Option<usize>) -> Self {
        Gate {
            permits: workers.map(Semaphore::new),
            size: workers.unwrap_or(0),
            waiting: AtomicU64::new(0),
            max_waiting: AtomicU64::new(0),
            waited: AtomicU64::new(0),
        }
    }

    pub(crate) fn is_limited(&self) -> bool {
        self.permits.is_some()
    }

    /// Waits for a permit. tokio's semaphore is fair, so waiters are served first come first
    /// served, as a listen queue in front of busy workers would be (a permit is free only
    /// while nobody waits, so taking one at once jumps no queue).
    pub(crate) async fn enter(&self) -> Option<SemaphorePermit<'_>> {
        let s = self.permits.as_ref()?;
        if let Ok(p) = s.try_acquire() {
            return Some(p);
        }
        self.waited.fetch_add(1, Ordering::Relaxed);
        let now = self.waiting.fetch_add(1, Ordering::Relaxed) + 1;
        let _waiting = Waiting(&self.waiting);
        self.max_waiting.fetch_max(now, Ordering::Relaxed);
        // The semaphore is never closed, so an error cannot happen; if it did, serving
        // without a permit beats failing the request.
        s.acquire().await.ok()
    }

    /// The pool now; None without a worker limit (there is no pool to show).
    pub(crate) fn status(&self) -> Option<PoolStatus> {
        let s = self.permits.as_ref()?;
        let total = self.size as u64;
        let idle = (s.available_permits() as u64).min(total);
        Some(PoolStatus {
            busy: total - idle,
            idle,
            total,
            waiting: self.waiting.load(Ordering::Relaxed),
            max_waiting: self.max_waiting.load(Ordering::Relaxed),
            waited: self.waited.load(Ordering::Relaxed),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limited_gate_counts_permits() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let g = Gate::new(Some(2));
            assert!(g.is_limited());
            let a = g.enter().await;
            let b = g.enter().await;
            assert!(a.is_some() && b.is_some());
            // A third waits until one is released.
            let third = tokio::time::timeout(std::time::Duration::from_millis(20), g.enter());
            assert!(third.await.is_err());
            drop(a);
            assert!(g.enter().await.is_some());
        });
    }

    /// The status counts busy workers and the queue in front of them, and forgets a waiter
    /// whose connection went away.
    #[test]
    fn status_counts_busy_workers_and_the_queue() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let g = Gate::new(Some(2));
            let idle = PoolStatus {
                busy: 0,
                idle: 2,
                total: 2,
                waiting: 0,
                max_waiting: 0,
                waited: 0,
            };
            assert_eq!(g.status(), Some(idle));
            let a = g.enter().await;
            let _b = g.enter().await;
            let short = std::time::Duration::from_millis(20);
            // Two requests queue behind the two busy workers, then give up.
            let waits = async { tokio::join!(g.enter(), g.enter()) };
            assert!(tokio::time::timeout(short, waits).await.is_err());
            let s = g.status().unwrap();
            assert_eq!((s.busy, s.idle, s.waiting), (2, 0, 0));
            assert_eq!((s.max_waiting, s.waited), (2, 2));
            // One waits while we look.
            let wait = g.enter();
            tokio::pin!(wait);
            assert!(tokio::time::timeout(short, &mut wait).await.is_err());
            assert_eq!(g.status().unwrap().waiting, 1);
            drop(a);
            assert!(wait.await.is_some());
            assert_eq!(g.status().unwrap().waiting, 0);
            assert_eq!(Gate::new(None).status(), None);
        });
    }

    #[test]
    fn unlimited_gate_never_waits() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let g = Gate::new(None);
            assert!(!g.is_limited());
            assert!(g.enter().await.is_none());
        });
    }
}
