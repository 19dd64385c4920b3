//! The one signal layer: SIGINT, SIGTERM and SIGHUP become a flag that every long wait reads
//! (the engine's event loops, the step runner, the experiment's loops, the lab's readiness
//! waits), so the first signal stops the work gracefully and what was measured is kept.
//! With `install`, a second SIGINT/SIGTERM exits at once (130): the user insists. SIGHUP
//! never insists: a terminal that goes away sends it more than once (tmux to the pane, the
//! kernel on the hang-up), and the run must still write its results; a SIGHUP ignored when
//! the process started (`nohup`) stays ignored.
//! `install_patient` keeps only the flag, for `lab up`, whose cleanup must finish or the
//! daemons it started would be orphaned. Caught signals are reset to default by exec, so
//! child processes (the lab's daemons, an experiment's runs) are unaffected.
//!
//! A terminal the process changed (the live view's raw mode and alternate screen) is put back
//! before that exit: [`restore_terminal_on_exit`] leaves, where the handler can reach it
//! without a lock, the saved terminal mode and the bytes that undo the screen.
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static COUNT: AtomicUsize = AtomicUsize::new(0);
static EXIT_ON_SECOND: AtomicBool = AtomicBool::new(true);
/// The terminal to put back before exiting from the handler; null when there is none.
static TERMINAL: AtomicPtr<TerminalRestore> = AtomicPtr::new(std::ptr::null_mut());

/// What the handler needs to give a terminal back: plain data, read without a lock.
struct TerminalRestore {
    /// A descriptor of the terminal whose mode was changed.
    fd: RawFd,
    /// Its mode before the change.
    saved: libc::termios,
    /// Written to standard error first (leave the alternate screen, show the cursor).
    undo: &'static [u8],
}

extern "C" fn on_signal(sig: libc::c_int) {
    // Only async-signal-safe operations here: atomics, write, tcgetpgrp, getpgrp, tcsetattr
    // and _exit.
    INTERRUPTED.store(true, Ordering::SeqCst);
    if sig == libc::SIGHUP {
        return;
    }
    if COUNT.fetch_add(1, Ordering::SeqCst) >= 1 && EXIT_ON_SECOND.load(Ordering::SeqCst) {
        let t = TERMINAL.swap(std::ptr::null_mut(), Ordering::SeqCst);
        // SAFETY: a non-null pointer is a leaked Box that is never freed (see
        // `restore_terminal_on_exit`); the calls are async-signal-safe.
        unsafe {
            // Only from the terminal's foreground: tcsetattr from a background process
            // group would stop the process (SIGTTOU) instead of exiting.
            if let Some(t) = t
                .as_ref()
                .filter(|t| libc::tcgetpgrp(t.fd) == libc::getpgrp())
            {
                let _ = libc::write(libc::STDERR_FILENO, t.undo.as_ptr().cast(), t.undo.len());
                let _ = libc::tcsetattr(t.fd, libc::TCSANOW, &t.saved);
            }
            libc::_exit(130);
        }
    }
}

/// The handler of SIGXFSZ: nothing; its being caught is what matters.
extern "C" fn on_file_size_limit(_sig: libc::c_int) {}

/// A write past RLIMIT_FSIZE (`ulimit -f`) fails with EFBIG, which `fsutil` reports like a
/// full disk (the file named, no temporary left, no partial line), instead of SIGXFSZ
/// killing the process mid-write without a word. Caught rather than ignored: exec resets a
/// caught signal, so child processes keep the default.
pub fn catch_file_size_limit() {
    let handler: extern "C" fn(libc::c_int) = on_file_size_limit;
    // SAFETY: installing a handler that does nothing.
    unsafe {
        libc::signal(libc::SIGXFSZ, handler as libc::sighandler_t);
    }
}

/// Whether `sig` was ignored when the process started (`nohup` ignores SIGHUP).
fn ignored_at_start(sig: libc::c_int) -> bool {
    static AT_START: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if sig != libc::SIGHUP {
        return false;
    }
    *AT_START.get_or_init(|| {
        // SAFETY: sigaction with a null new action only reads the current one.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction == libc::SIG_IGN
        }
    })
}

/// Until [`keep_terminal_on_exit`], a second signal's exit first writes `undo` to standard
/// error and sets the terminal `fd` back to mode `saved` (taken before the process changed
/// it): the shell gets a terminal that echoes and reads lines again.
pub fn restore_terminal_on_exit(fd: RawFd, saved: libc::termios, undo: &'static [u8]) {
    // Leaked on purpose: the handler may read it at any moment, so it is never freed (one
    // small struct per live view started, which a process does once or twice).
    let t = Box::into_raw(Box::new(TerminalRestore { fd, saved, undo }));
    TERMINAL.store(t, Ordering::SeqCst);
}

/// The terminal was given back by the normal way: a second signal just exits.
pub fn keep_terminal_on_exit() {
    TERMINAL.store(std::ptr::null_mut(), Ordering::SeqCst);
}

fn install_handler(exit_on_second: bool) {
    EXIT_ON_SECOND.store(exit_on_second, Ordering::SeqCst);
    let handler: extern "C" fn(libc::c_int) = on_signal;
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        if ignored_at_start(sig) {
            continue;
        }
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
