//! `--workers N`: the worker-limit gate. Every request holds one of N permits for its whole
//! duration (waiting, sleeping, spinning, writing), and the rest queue in FIFO order. It models
//! Apache prefork's MaxRequestWorkers or PHP-FPM's pm.max_children (S2, S4, S5): capacity is
//! N / service time, and past it requests queue instead of failing.
use tokio::sync::{Semaphore, SemaphorePermit};

pub(crate) struct Gate {
    permits: Option<Semaphore>,
}

impl Gate {
    /// `None`: unlimited. The caller checks `1 <= n <= Semaphore::MAX_PERMITS`.
    pub(crate) fn new(workers: Option<usize>) -> Self {
        Gate {
            permits: workers.map(Semaphore::new),
        }
    }

    pub(crate) fn is_limited(&self) -> bool {
        self.permits.is_some()
    }

    /// Waits for a permit. tokio's semaphore is fair, so waiters are served first come first
    /// served, as a listen queue in front of busy workers would be.
    pub(crate) async fn enter(&self) -> Option<SemaphorePermit<'_>> {
        match &self.permits {
            // The semaphore is never closed, so an error cannot happen; if it did, serving
            // without a permit beats failing the request.
            Some(s) => s.acquire().await.ok(),
            None => None,
        }
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
