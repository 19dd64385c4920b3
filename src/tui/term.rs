//! The terminal while the view is up: raw mode and the alternate screen, and their undoing on
//! every way out — the [`Screen`] guard's drop (normal end, an error returned through `?`, a
//! panic unwinding the view's thread), a panic hook for a panic on any other thread, and the
//! signal handler's exit on a second SIGINT/SIGTERM (see [`arm_signal_restore`]).
//!
//! Keys are read here too, with poll(2) on the terminal ([`read_keys`]), not with crossterm's
//! event reader: on a terminal that hung up (tmux killed, ssh dropped) that reader loops for
//! ever on reads of 0 bytes, a core at 100% and a view that never closes. A hang-up here is
//! [`Input::Gone`], which the view answers as the kernel's SIGHUP.
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::cursor::{Hide, Show};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::Terminal;
use std::io::Stderr;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Once, OnceLock};

/// The terminal is in raw mode on the alternate screen.
static ACTIVE: AtomicBool = AtomicBool::new(false);
static HOOK: Once = Once::new();

/// The view's terminal (standard error: standard output keeps the run's results).
pub struct Screen {
    pub terminal: Terminal<CrosstermBackend<Stderr>>,
    /// Where keys come from: the terminal crossterm put in raw mode ([`tty`]); None when
    /// there is none to read (the view then only draws).
    pub keys: Option<RawFd>,
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
            Ok(terminal) => Ok(Screen {
                terminal,
                keys: tty(),
            }),
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

/// The terminal crossterm changes: standard input when it is one, else /dev/tty (opened once
/// and kept open: the signal handler and the key reader use it). None when there is none.
fn tty() -> Option<RawFd> {
    static TTY: OnceLock<Option<RawFd>> = OnceLock::new();
    *TTY.get_or_init(|| {
        // SAFETY: isatty and open on constant arguments.
        unsafe {
            if libc::isatty(libc::STDIN_FILENO) == 1 {
                return Some(libc::STDIN_FILENO);
            }
            let fd = libc::open(c"/dev/tty".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
            (fd >= 0).then_some(fd)
        }
    })
}

/// Saves the terminal's mode before raw mode so that the signal handler's exit (a second
/// SIGINT/SIGTERM, which cannot unwind to the guard) can put it back.
fn arm_signal_restore() {
    let Some(fd) = tty() else { return };
    // SAFETY: tcgetattr on a descriptor we own, with a valid termios pointer.
    unsafe {
        let mut saved: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(fd, &mut saved) == 0 {
            crate::signals::restore_terminal_on_exit(fd, saved, UNDO_SCREEN);
        }
    }
}

/// What the terminal gave within a wait.
#[derive(Debug, PartialEq)]
pub enum Input {
    /// Keys pressed (maybe none).
    Keys(Vec<Key>),
    /// The terminal hung up: nothing more will come, and nothing written will show.
    Gone,
}

/// What a key asks of the view.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Key {
    /// `q` or Ctrl-C (raw mode makes it a byte, not a signal).
    Quit,
    /// `n`: end the step in progress.
    EndStep,
    /// `+` (or `=`, its unshifted key) or Up: raise the load a step (live control).
    Raise,
    /// `-` or Down: lower the load a step.
    Lower,
    /// `p`: pause the load, or resume it.
    Pause,
}

/// Waits at most `wait` for keys on `fd`. Never blocks longer: it reads only the bytes that
/// FIONREAD says are there.
pub fn read_keys(fd: RawFd, wait: std::time::Duration) -> Input {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll on one valid pollfd.
    let n = unsafe { libc::poll(&mut p, 1, wait.as_millis().min(1000) as libc::c_int) };
    if n <= 0 {
        // A timeout, or a signal arrived (EINTR): the caller looks at its flags.
        return Input::Keys(vec![]);
    }
    if p.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
        return Input::Gone;
    }
    let mut pending: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int.
    if unsafe { libc::ioctl(fd, libc::FIONREAD, &mut pending) } != 0 || pending <= 0 {
        // Readable with nothing to read: wait out the period instead of polling again at
        // once (no busy loop on a terminal in an odd state).
        std::thread::sleep(wait);
        return Input::Keys(vec![]);
    }
    let mut buf = [0u8; 256];
    let want = (pending as usize).min(buf.len());
    // SAFETY: read into a buffer of at least `want` bytes.
    let got = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), want) };
    match got {
        0 => Input::Gone,
        n if n > 0 => Input::Keys(keys(&buf[..n as usize])),
        _ => match std::io::Error::last_os_error().raw_os_error() {
            Some(libc::EINTR | libc::EAGAIN) => Input::Keys(vec![]),
            _ => Input::Gone,
        },
    }
}

/// The keys in bytes read from a terminal in raw mode; escape sequences (arrows, function
/// keys, Alt+key) are skipped whole, so their letters are not taken for `q` or `n`.
pub fn keys(bytes: &[u8]) -> Vec<Key> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            0x1b => {
                i += 1;
                match bytes.get(i) {
                    // CSI: parameters, then one final byte in 0x40..=0x7e.
                    Some(b'[') => {
                        i += 1;
                        while i < bytes.len() && !(0x40..=0x7e).contains(&bytes[i]) {
                            i += 1;
                        }
                        arrow(bytes.get(i), &mut out);
                    }
                    // SS3 (F1–F4, arrows in application mode): one more byte.
                    Some(b'O') => {
                        i += 1;
                        arrow(bytes.get(i), &mut out);
                    }
                    // Alt+key, or a lone Escape.
                    _ => {}
                }
            }
            0x03 | b'q' | b'Q' => out.push(Key::Quit),
            b'n' | b'N' => out.push(Key::EndStep),
            b'+' | b'=' => out.push(Key::Raise),
            b'-' | b'_' => out.push(Key::Lower),
            b'p' | b'P' => out.push(Key::Pause),
            _ => {}
        }
        i += 1;
    }
    out
}

/// Up and Down (an escape sequence's final byte) steer the load as `+` and `-` do.
fn arrow(last: Option<&u8>, out: &mut Vec<Key>) {
    match last {
        Some(b'A') => out.push(Key::Raise),
        Some(b'B') => out.push(Key::Lower),
        _ => {}
    }
}

/// The terminal's size (columns, rows) now, or None; read to redraw after a resize.
pub fn size(fd: RawFd) -> Option<(u16, u16)> {
    // SAFETY: TIOCGWINSZ writes one winsize.
    unsafe {
        let mut w: libc::winsize = std::mem::zeroed();
        (libc::ioctl(fd, libc::TIOCGWINSZ, &mut w) == 0).then_some((w.ws_col, w.ws_row))
    }
}
