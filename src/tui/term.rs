//! The terminal while the view is up: raw mode and the alternate screen, and their undoing on
//! every way out — the [`Screen`] guard's drop (normal end, an error returned through `?`, a
//! panic unwinding the view's thread) and a panic hook for a panic on any other thread.
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
        enable_raw_mode().map_err(fail)?;
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
        let _ = execute!(std::io::stderr(), LeaveAlternateScreen, Show);
        let _ = disable_raw_mode();
    }
}
