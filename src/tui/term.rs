//! The terminal while the view is up: raw mode and the alternate screen, and their undoing on
//! every way out — the [`Screen`] guard's drop (normal end, an error returned through `?`, a
//! panic unwinding the view's thread), a panic hook for a panic on any other thread, and the
//! signal handler's exit on a second SIGINT/SIGTERM (see [`arm_signal_restore`]).
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::cursor::{Hide, Show};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::Terminal;
use std::io::Stderr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

/// The terminal is in raw mode on the alternate screen.
static ACTIVE: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();

/// The view's terminal (standard error: standard output keeps the run's results).
pub struct Screen {
    pub terminal: Terminal<CrosstermBackend<Stderr>>,
}

impl Screen {
    /// Raw mode, alternate screen, cursor hidden; undone by [`restore`] (drop does it).
    pub fn enter() -> crate::Result<Screen> {
        let fail = |e: std::io::Error| crate::Error::runtime(format!("live view: {e}"));
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                // The message must land on the normal screen, after the terminal is back.
                restore();
                previous(info);
            }));
        });
        arm_signal_restore();
        if let Err(e) = enable_raw_mode() {
            crate::signals::keep_terminal_on_exit();
            return Err(fail(e));
        }
        ACTIVE.store(true, Ordering::SeqCst);
        let mut err = std::io::stderr();
        if let Err(e) = execute!(err, EnterAlternateScreen, Hide) {
            restore();
            return Err(fail(e));
        }
        match Terminal::new(CrosstermBackend::new(std::io::stderr())) {
            Ok(terminal) => Ok(Screen { terminal }),
            Err(e) => {
                restore();
                Err(fail(e))
            }
        }
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
    }
}

/// Leaves the alternate screen, shows the cursor, turns raw mode off; once, whoever calls it
/// first (the guard, the panic hook, a second `q`).
pub fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        crate::signals::keep_terminal_on_exit();
        let _ = execute!(std::io::stderr(), LeaveAlternateScreen, Show);
        let _ = disable_raw_mode();
    }
}

/// What `LeaveAlternateScreen` and `Show` write: the handler cannot call crossterm.
const UNDO_SCREEN: &[u8] = b"\x1b[?1049l\x1b[?25h";

/// Saves the terminal's mode before raw mode so that the signal handler's exit (a second
/// SIGINT/SIGTERM, which cannot unwind to the guard) can put it back. The terminal is the one
/// crossterm changes: standard input when it is one, else /dev/tty (kept open for the handler).
fn arm_signal_restore() {
    // SAFETY: isatty, open and tcgetattr on descriptors we own, with a valid termios pointer.
    unsafe {
        let fd = if libc::isatty(libc::STDIN_FILENO) == 1 {
            libc::STDIN_FILENO
        } else {
            libc::open(c"/dev/tty".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC)
        };
        let mut saved: libc::termios = std::mem::zeroed();
        if fd >= 0 && libc::tcgetattr(fd, &mut saved) == 0 {
            crate::signals::restore_terminal_on_exit(fd, saved, UNDO_SCREEN);
        }
    }
}
