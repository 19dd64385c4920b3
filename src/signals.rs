//! SIGINT/SIGTERM handling: the first signal asks the run to stop gracefully (the engine
//! stops sending, and what was measured is reported); a second SIGINT exits at once.
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static COUNT: AtomicUsize = AtomicUsize::new(0);

extern "C" fn on_signal(_sig: libc::c_int) {
    // Only async-signal-safe operations here: atomics and _exit.
    INTERRUPTED.store(true, Ordering::SeqCst);
    if COUNT.fetch_add(1, Ordering::SeqCst) >= 1 {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(130) };
    }
}

/// Installs the handlers (idempotent).
pub fn install() {
    // SAFETY: installing a handler that only touches atomics and calls _exit.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
}

/// True once SIGINT or SIGTERM arrived.
#[inline]
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}
