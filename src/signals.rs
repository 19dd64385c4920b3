//! The one signal layer: SIGINT, SIGTERM and SIGHUP become a flag that every long wait reads
//! (the engine's event loops, the step runner, the experiment's loops, the lab's readiness
//! waits), so the first signal stops the work gracefully and what was measured is kept.
//! With `install`, a second SIGINT/SIGTERM exits at once (130): the user insists.
//! `install_patient` keeps only the flag, for `lab up`, whose cleanup must finish or the
//! daemons it started would be orphaned. Caught signals are reset to default by exec, so
//! child processes (the lab's daemons, an experiment's runs) are unaffected.
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static COUNT: AtomicUsize = AtomicUsize::new(0);
static EXIT_ON_SECOND: AtomicBool = AtomicBool::new(true);

extern "C" fn on_signal(_sig: libc::c_int) {
    // Only async-signal-safe operations here: atomics and _exit.
    INTERRUPTED.store(true, Ordering::SeqCst);
    if COUNT.fetch_add(1, Ordering::SeqCst) >= 1 && EXIT_ON_SECOND.load(Ordering::SeqCst) {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(130) };
    }
}

fn install_handler(exit_on_second: bool) {
    EXIT_ON_SECOND.store(exit_on_second, Ordering::SeqCst);
    let handler: extern "C" fn(libc::c_int) = on_signal;
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: installing a handler that only touches atomics and calls _exit.
        unsafe {
            libc::signal(sig, handler as libc::sighandler_t);
        }
    }
}

/// Installs the handlers: the first signal raises the flag, a second one exits with 130
/// (idempotent).
pub fn install() {
    install_handler(true);
}

/// Installs the handlers with the flag only: every signal raises it, none exits.
pub fn install_patient() {
    install_handler(false);
}

/// True once SIGINT, SIGTERM or SIGHUP arrived.
#[inline]
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}
