//! The progress line, once a second while a run goes: done, rate, errors, ETA.
use crate::engine::{Control, EngineConfig};
use std::io::{IsTerminal, Write};
use std::time::Duration;

pub struct Progress {
    quiet: bool,
    tty: bool,
    total: Option<Duration>,
    last: u64,
    printed: bool,
}

impl Progress {
    pub fn new(cfg: &EngineConfig, quiet: bool) -> Progress {
        Progress {
            quiet,
            tty: std::io::stderr().is_terminal(),
            total: cfg.duration.map(|d| d + cfg.warmup),
            last: 0,
            printed: false,
        }
    }

    pub fn tick(&mut self, ctl: &Control, elapsed: Duration) {
        if self.quiet {
            return;
        }
        let (done, errors, _) = ctl.totals();
        let rate = done.saturating_sub(self.last);
        self.last = done;
        let eta = match self.total {
            Some(t) if t > elapsed => {
                format!(", ETA {}s", (t - elapsed).as_secs_f64().ceil() as u64)
            }
            Some(_) => ", draining".to_string(),
            None => String::new(),
        };
        let line = format!(
            "[{:>4}s] {done} responses, {rate}/s, {errors} errors{eta}",
            elapsed.as_secs()
        );
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r\x1b[2K{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
        self.printed = true;
    }

    pub fn finish(&mut self) {
        if self.printed && self.tty && !self.quiet {
            eprint!("\r\x1b[2K");
        }
    }
}
