//! The live view on a terminal (ratatui): offered vs achieved rate, errors, requests in
//! flight and the generator's CPU per second, the steps so far with their percentiles and the
//! saturation mark, the server's side when observed; `q` quits as Ctrl-C does, `n` ends the
//! step in progress. Shown by `run`, `sweep` and `capacity` when standard output and error are
//! terminals, unless `--no-tui` or `--quiet`.
//!
//! It is fed what the progress line is fed ([`LiveView`], from `liverun::progress`: the
//! runner's tick, once a second, off the workers' threads) and draws on its own thread, at
//! most four times a second. Files: `model.rs` what the panels show (plain data), `view.rs`
//! how they are drawn, `term.rs` the terminal's raw mode and its restoring.
mod model;
mod term;
#[cfg(test)]
mod tests;
mod view;

pub use model::{Model, Setup};

use crate::liverun::progress::{LiveView, Tick};
use crate::observe::Sample;
use crate::store::StepRecord;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The shortest time between two redraws (at most four a second).
const REDRAW: Duration = Duration::from_millis(250);

/// Whether the live view can be shown here: standard output and error are terminals (a
/// pipe or a file gets the plain lines) and this process is in the terminal's foreground.
/// A background process group (`cmd &`, `timeout`, a script's job) must not take the
/// terminal: raw mode from there stops the process (SIGTTOU), and keys are not its to read.
pub fn available() -> bool {
    use std::io::IsTerminal;
    // SAFETY: tcgetpgrp and getpgrp only read.
    let foreground = unsafe { libc::tcgetpgrp(libc::STDERR_FILENO) == libc::getpgrp() };
    std::io::stdout().is_terminal() && std::io::stderr().is_terminal() && foreground
}

/// What the feeding thread and the view's thread share.
struct Shared {
    model: Mutex<Model>,
    /// The model changed since the last redraw.
    dirty: AtomicBool,
    /// `n` was pressed and the runner has not taken it yet.
    end_step: AtomicBool,
    /// The view is closing.
    stop: AtomicBool,
    /// Live control: what `+`, `-` and `p` change.
    steer: Option<Arc<crate::engine::steer::Steer>>,
}

impl Shared {
    fn model(&self) -> MutexGuard<'_, Model> {
        // A panic while holding the lock leaves a model that is still drawable.
        self.model.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn update(&self, f: impl FnOnce(&mut Model)) {
        f(&mut self.model());
        self.dirty.store(true, Ordering::Release);
    }
}

/// The view, up until dropped (the terminal is then restored).
pub struct LiveScreen {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl LiveScreen {
    /// Takes over the terminal (alternate screen, raw mode) and starts drawing.
    pub fn start(
        mut setup: Setup,
        steer: Option<Arc<crate::engine::steer::Steer>>,
    ) -> crate::Result<LiveScreen> {
        setup.steer_keys = steer.is_some();
        // `q` raises SIGINT: its handler must be there (idempotent; the use cases install
        // it before any load anyway).
        crate::signals::install();
        let screen = term::Screen::enter()?;
        let shared = Arc::new(Shared {
            model: Mutex::new(Model::new(setup)),
            dirty: AtomicBool::new(true),
            end_step: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            steer,
        });
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("live-view".into())
            .spawn(move || ui(screen, &s))
            .map_err(|e| crate::Error::runtime(format!("live view: {e}")))?;
        Ok(LiveScreen {
            shared,
            thread: Some(thread),
        })
    }
}

impl Drop for LiveScreen {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // The thread's guard restored it; if the thread never ran, this does.
        term::restore();
    }
}

impl LiveView for LiveScreen {
    fn tick(&mut self, step: Option<usize>, offered: f64, tick: &Tick) {
        self.shared.update(|m| m.tick(step, offered, tick));
    }

    fn server(&mut self, samples: Vec<Sample>) {
        self.shared.update(|m| m.server_samples(&samples));
    }

    fn step_done(&mut self, rec: &StepRecord) {
        self.shared.end_step.store(false, Ordering::Release);
        self.shared.update(|m| m.step_done(rec));
    }

    fn take_end_step(&mut self) -> bool {
        self.shared.end_step.swap(false, Ordering::AcqRel)
    }
}

/// The view's thread: keys, and a redraw when something changed (at most every [`REDRAW`]).
/// A terminal that hung up ends the thread and, as the kernel's SIGHUP would, the run (its
/// results are written; the SIGHUP may have gone to another process group, or not at all).
fn ui(mut screen: term::Screen, sh: &Shared) {
    let mut last_draw: Option<Instant> = None;
    let mut size = screen.keys.and_then(term::size);
    let wait = Duration::from_millis(50);
    while !sh.stop.load(Ordering::Acquire) {
        match screen.keys {
            Some(fd) => match term::read_keys(fd, wait) {
                term::Input::Keys(keys) => keys.into_iter().for_each(|k| key(k, sh)),
                term::Input::Gone => {
                    // SAFETY: raise runs the handler `signals::install` set (an atomic).
                    unsafe { libc::raise(libc::SIGHUP) };
                    return;
                }
            },
            // No terminal to read keys from: the view still draws; keys are lost.
            None => std::thread::sleep(wait),
        }
        let now = screen.keys.and_then(term::size);
        if now != size {
            size = now;
            sh.dirty.store(true, Ordering::Release);
        }
        if last_draw.is_some_and(|t| t.elapsed() < REDRAW) {
            continue;
        }
        if sh.dirty.swap(false, Ordering::AcqRel) {
            let m = sh.model().clone();
            if screen.terminal.draw(|f| view::draw(f, &m)).is_err() {
                return; // the terminal is gone; the run goes on, the guard restores
            }
            last_draw = Some(Instant::now());
        }
    }
}

/// What a key does.
fn key(k: term::Key, sh: &Shared) {
    match k {
        term::Key::Quit => {
            let again = std::mem::replace(&mut sh.model().stopping, true);
            sh.dirty.store(true, Ordering::Release);
            if again {
                // Insisting, as a second Ctrl-C does: the process exits at once (130), so
                // the terminal is given back first.
                term::restore();
            }
            // Exactly what Ctrl-C does (raw mode turns Ctrl-C into a key, not a signal).
            // SAFETY: raise delivers the signal to this thread; the handler that
            // `signals::install` set touches atomics (and calls _exit on the second).
            unsafe { libc::raise(libc::SIGINT) };
        }
        term::Key::EndStep => {
            let mut m = sh.model();
            if m.setup.end_step_key && !m.stopping && m.current.is_some() {
                m.ending_step = true;
                sh.end_step.store(true, Ordering::Release);
                sh.dirty.store(true, Ordering::Release);
            }
        }
        term::Key::Raise | term::Key::Lower | term::Key::Pause => steer_key(k, sh),
    }
}

/// A key of live control: the change goes to the engine through the run's steer; the footer
/// says what it did, or why it was refused.
fn steer_key(k: term::Key, sh: &Shared) {
    use crate::engine::steer::{By, Change};
    let Some(st) = &sh.steer else {
        return;
    };
    let state = st.state();
    let change = match k {
        term::Key::Raise => Change::Step(true),
        term::Key::Lower => Change::Step(false),
        _ if state.as_ref().is_some_and(|s| s.paused) => Change::Resume,
        _ => Change::Pause,
    };
    let note = match st.apply(change, By::Keys) {
        Ok(a) => {
            let unit = match state.map(|s| s.unit) {
                Some(crate::engine::steer::Unit::Users) => " users",
                _ => " req/s",
            };
            let held = if st.state().is_some_and(|s| s.held) {
                " (the ramp no longer leads)"
            } else {
                ""
            };
            match a.what {
                "pause" => "paused: no new arrivals, users stop after their request".to_string(),
                "resume" => format!("resumed at {}{unit}", crate::units::fmt_num(a.to)),
                w => format!(
                    "{w} {}→{}{unit}{held}",
                    crate::units::fmt_num(a.from),
                    crate::units::fmt_num(a.to)
                ),
            }
        }
        Err(why) => format!("not changed: {why}"),
    };
    let paused = st.state().is_some_and(|s| s.paused);
    sh.update(|m| {
        m.control_note = Some(note);
        m.paused = paused;
    });
}
