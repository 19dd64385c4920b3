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
            crate::eout!("\r\x1b[2K");
        }
    }
}

/// The sweep's progress: a bar for the step in progress (on a terminal) and a line per
/// finished step (always).
pub struct SweepProgress {
    quiet: bool,
    tty: bool,
    /// Steps planned (None for a capacity search, whose length is not known).
    total: Option<usize>,
    /// Warm-up + step + rest: the time one step takes.
    per_step: Duration,
    step_len: Duration,
    unit: &'static str,
}

impl SweepProgress {
    pub fn new(
        total: Option<usize>,
        warmup: Duration,
        step: Duration,
        rest: Duration,
        unit: &'static str,
        quiet: bool,
    ) -> Self {
        SweepProgress {
            quiet,
            tty: std::io::stderr().is_terminal(),
            total,
            per_step: warmup + step + rest,
            step_len: warmup + step,
            unit,
        }
    }

    pub fn tick(&mut self, index: usize, offered: f64, ctl: &Control, elapsed: Duration) {
        if self.quiet || !self.tty {
            return;
        }
        let (done, errors, _) = ctl.totals();
        let frac = (elapsed.as_secs_f64() / self.step_len.as_secs_f64().max(1e-9)).min(1.0);
        let width = 24;
        let fill = (frac * width as f64) as usize;
        let bar: String = "#".repeat(fill) + &".".repeat(width - fill);
        let of = self.total.map_or(String::new(), |t| format!("/{t}"));
        let eta = match self.total {
            Some(t) => {
                let left = (t - index - 1) as f64 * self.per_step.as_secs_f64()
                    + (self.step_len.as_secs_f64() - elapsed.as_secs_f64()).max(0.0);
                format!(" | sweep ETA ≤ {}", fmt_secs(left))
            }
            None => String::new(),
        };
        crate::eout!(
            "\r\x1b[2K[{bar}] step {}{of} {offered:.0} {} {}s | {done} responses, {errors} errors{eta}",
            index + 1,
            self.unit,
            elapsed.as_secs()
        );
        let _ = std::io::stderr().flush();
    }

    pub fn step_done(&mut self, rec: &crate::store::StepRecord, mode: &str) {
        if self.quiet {
            return;
        }
        if self.tty {
            crate::eout!("\r\x1b[2K");
        }
        let s = &rec.summary;
        let of = self.total.map_or(String::new(), |t| format!("/{t}"));
        let level = if mode == "open" {
            format!("{:.0} req/s", rec.offered)
        } else {
            format!("{:.0} users", rec.offered)
        };
        let flags = if rec.flags.is_empty() {
            String::new()
        } else {
            format!("  [{}]", rec.flags.join(", "))
        };
        crate::eoutln!(
            "step {:>3}{of}  {level:>12} → {:>9.1}/s  ok {:>5.1}%  p50 {:>8}  p99 {:>8}  lag p99 {:>7}  gen cpu {:>3.0}%{flags}",
            rec.step + 1,
            s.throughput,
            if s.requests > 0 { s.ok_count() as f64 / s.requests as f64 * 100.0 } else { 0.0 },
            crate::units::fmt_ms(s.response_time_ms.p50),
            crate::units::fmt_ms(s.response_time_ms.p99),
            crate::units::fmt_ms(s.send_lag_ms.p99),
            rec.generator.cpu_pct,
        );
    }
}

fn fmt_secs(s: f64) -> String {
    let s = s.max(0.0) as u64;
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}
