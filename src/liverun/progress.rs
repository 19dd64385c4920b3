//! What a run shows while it goes, fed once a second from the engine's tick on the runner's
//! thread: the progress line (a run), the step bar and per-step lines (a sweep), or instead a
//! [`LiveView`] (the terminal view, `crate::tui`). [`Ticker`] turns the engine's live counters
//! into the per-second figures all of them show: the one place they are computed.
use crate::engine::{Control, EngineConfig};
use crate::observe::Sample;
use crate::store::StepRecord;
use std::io::{IsTerminal, Write};
use std::sync::atomic::Ordering;
use std::time::Duration;

/// One reading of the live counters of the step (or run) in progress, with the rates of the
/// interval since the reading before.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tick {
    /// Since the step (or run) started, warm-up included.
    pub elapsed: Duration,
    /// Totals since the step started, warm-up included.
    pub responses: u64,
    pub errors: u64,
    /// Requests sent and not yet answered, at the reading.
    pub in_flight: u64,
    /// Responses (errors included) and errors per second since the reading before.
    pub rate: f64,
    pub error_rate: f64,
    /// This process's CPU since the reading before, % of one core: the generator's own effort
    /// (its workers, and the little the display costs).
    pub cpu_pct: f64,
    /// Response times of the newest closed second (None: it had no counted response).
    pub latency: Option<SecondLatency>,
}

/// The response times of one second of the step (or run), by completion, over all threads:
/// the engine's per-second series (`metrics::second`), the same the results store.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SecondLatency {
    /// Seconds since the step (or run) started, warm-up included.
    pub second: usize,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
}

impl SecondLatency {
    /// The newest closed second of `closed`, when it had responses.
    pub fn newest(closed: &[crate::metrics::SecondBucket]) -> Option<SecondLatency> {
        let b = closed.last().filter(|b| b.responses > 0)?;
        Some(SecondLatency {
            second: closed.len() - 1,
            p50_ms: b.p50_us as f64 / 1e3,
            p95_ms: b.p95_us as f64 / 1e3,
            p99_ms: b.p99_us as f64 / 1e3,
        })
    }
}

/// Turns successive readings of the live counters into [`Tick`]s.
#[derive(Debug, Default)]
pub struct Ticker {
    /// (elapsed, responses, errors, process CPU µs) at the reading before, in this step.
    last: Option<(Duration, u64, u64, u64)>,
    /// Process CPU µs when the step started (its first reading has no reading before).
    start_cpu_us: u64,
}

impl Ticker {
    /// A ticker for a step about to start (its counters start at zero).
    pub fn new() -> Ticker {
        Ticker {
            last: None,
            start_cpu_us: crate::clock::process_cpu_us(),
        }
    }

    /// Reads the engine's live counters.
    pub fn read(&mut self, ctl: &Control, elapsed: Duration) -> Tick {
        let (responses, errors, _) = ctl.totals();
        let in_flight = ctl
            .live
            .iter()
            .map(|l| l.in_flight.load(Ordering::Relaxed))
            .sum();
        let mut tick = self.next(
            elapsed,
            responses,
            errors,
            in_flight,
            crate::clock::process_cpu_us(),
        );
        tick.latency = SecondLatency::newest(ctl.seconds().closed());
        tick
    }

    /// The tick for a reading of the counters (pure: the unit tests script it).
    pub fn next(
        &mut self,
        elapsed: Duration,
        responses: u64,
        errors: u64,
        in_flight: u64,
        cpu_us: u64,
    ) -> Tick {
        let (t0, r0, e0, c0) = self
            .last
            .unwrap_or((Duration::ZERO, 0, 0, self.start_cpu_us));
        self.last = Some((elapsed, responses, errors, cpu_us));
        let dt = elapsed.saturating_sub(t0).as_secs_f64();
        let per_s = |n: u64| if dt > 0.0 { n as f64 / dt } else { 0.0 };
        Tick {
            elapsed,
            responses,
            errors,
            in_flight,
            rate: per_s(responses.saturating_sub(r0)),
            error_rate: per_s(errors.saturating_sub(e0)),
            cpu_pct: per_s(cpu_us.saturating_sub(c0)) / 1e4,
            latency: None,
        }
    }
}

/// A display of the run that replaces the progress lines (the terminal view). It is fed on
/// the runner's thread and must return at once: it draws on its own thread.
pub trait LiveView {
    /// A tick of the step in progress: its index (None: a single run) and level.
    fn tick(&mut self, step: Option<usize>, offered: f64, tick: &Tick);
    /// The newest sample of each observed source (the server's side), when observed.
    fn server(&mut self, samples: Vec<Sample>);
    /// A step ended and was stored.
    fn step_done(&mut self, rec: &StepRecord);
    /// The user asked to end the step in progress and go on (`n`); true once per asking.
    fn take_end_step(&mut self) -> bool;
}

/// The newest sample of each source stamped in the last few seconds, for the live view.
pub fn latest_samples(obs: &crate::observe::ObserverHandle) -> Vec<Sample> {
    let now = crate::clock::unix_ms();
    let mut newest: Vec<Sample> = Vec::new();
    for s in obs.samples_between(now.saturating_sub(3_000), now) {
        match newest.iter_mut().find(|n| n.source == s.source) {
            Some(n) => *n = s,
            None => newest.push(s),
        }
    }
    newest
}

pub struct Progress {
    quiet: bool,
    tty: bool,
    total: Option<Duration>,
    ticker: Ticker,
    printed: bool,
    view: Option<Box<dyn LiveView>>,
    /// The run's level (rate or users), for the view.
    offered: f64,
    /// On a ramp (`--stages`), else the level was steered (live control).
    ramp: bool,
}

impl Progress {
    pub fn new(cfg: &EngineConfig, quiet: bool) -> Progress {
        Progress {
            quiet,
            tty: std::io::stderr().is_terminal(),
            total: cfg.duration.map(|d| d + cfg.warmup),
            ticker: Ticker::new(),
            printed: false,
            view: None,
            offered: {
                let (rate, users) = cfg.offered();
                rate.unwrap_or(users.unwrap_or(0) as f64)
            },
            ramp: cfg.ramp.is_some(),
        }
    }

    /// Shows the run in `view` instead of the progress line.
    pub fn with_view(mut self, view: Box<dyn LiveView>) -> Progress {
        self.view = Some(view);
        self
    }

    /// A tick of the engine; `obs`: the server's observer, when observed; `offered`: the
    /// level now when it moves (a ramp, or live control: `runner::StepTick::moving_level`).
    pub fn tick(
        &mut self,
        ctl: &Control,
        elapsed: Duration,
        obs: Option<&crate::observe::ObserverHandle>,
        offered: Option<f64>,
    ) {
        if let Some(view) = self.view.as_mut() {
            let tick = self.ticker.read(ctl, elapsed);
            if let Some(o) = obs {
                view.server(latest_samples(o));
            }
            view.tick(None, offered.unwrap_or(self.offered), &tick);
            return;
        }
        if self.quiet {
            return;
        }
        let t = self.ticker.read(ctl, elapsed);
        let (done, errors, rate) = (t.responses, t.errors, t.rate.round() as u64);
        let eta = match self.total {
            Some(t) if t > elapsed => {
                format!(", ETA {}s", (t - elapsed).as_secs_f64().ceil() as u64)
            }
            Some(_) => ", draining".to_string(),
            None => String::new(),
        };
        let what = if self.ramp { "ramp at" } else { "steered to" };
        let level = offered.map_or(String::new(), |l| format!(" ({what} {l:.0})"));
        let line = format!(
            "[{:>4}s] {done} responses, {rate}/s{level}, {errors} errors{eta}",
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

    /// Clears the progress line, or closes the view (the terminal is restored).
    pub fn finish(&mut self) {
        self.view = None;
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
    /// The step the ticker counts for, and the ticker.
    ticking: Option<(usize, Ticker)>,
    view: Option<Box<dyn LiveView>>,
    /// The step the user ended early from the view (`n`), until the runner takes it.
    ended_early: Option<usize>,
    /// The per-step lines, held while the view covers the terminal and printed after it.
    held: Vec<String>,
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
            ticking: None,
            view: None,
            ended_early: None,
            held: Vec::new(),
        }
    }

    /// Shows the run in `view` instead of the bar; the per-step lines are printed when it
    /// closes.
    pub fn with_view(mut self, view: Box<dyn LiveView>) -> SweepProgress {
        self.view = Some(view);
        self
    }

    /// A tick of step `index`'s engine; `obs`: the server's observer, when observed. When the
    /// user asked the view to end the step, the step's engine is told to stop here (the
    /// runner's thread, once a second: nothing of this runs in a worker).
    pub fn tick(
        &mut self,
        index: usize,
        offered: f64,
        ctl: &Control,
        elapsed: Duration,
        obs: Option<&crate::observe::ObserverHandle>,
    ) {
        if let Some(view) = self.view.as_mut() {
            let ticker = match &mut self.ticking {
                Some((i, t)) if *i == index => t,
                other => &mut other.insert((index, Ticker::new())).1,
            };
            let tick = ticker.read(ctl, elapsed);
            if let Some(o) = obs {
                view.server(latest_samples(o));
            }
            view.tick(Some(index), offered, &tick);
            if view.take_end_step() {
                ctl.stop.store(true, Ordering::Relaxed);
                self.ended_early = Some(index);
            }
            return;
        }
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

    /// Whether the user ended step `index` early from the view (asked once, then forgotten).
    pub fn take_ended_early(&mut self, index: usize) -> bool {
        self.ended_early.take_if(|i| *i == index).is_some()
    }

    /// Closes the view, if any (the terminal is restored), and prints the per-step lines it
    /// held. Dropping the progress does it too.
    pub fn close_view(&mut self) {
        if self.view.take().is_some() {
            for line in std::mem::take(&mut self.held) {
                crate::eoutln!("{line}");
            }
        }
    }

    pub fn step_done(&mut self, rec: &crate::store::StepRecord, mode: &str) {
        if let Some(view) = self.view.as_mut() {
            view.step_done(rec);
            if !self.quiet {
                self.held.push(self.step_line(rec, mode));
            }
            return;
        }
        if self.quiet {
            return;
        }
        if self.tty {
            crate::eout!("\r\x1b[2K");
        }
        crate::eoutln!("{}", self.step_line(rec, mode));
    }

    /// The line printed for a finished step.
    fn step_line(&self, rec: &crate::store::StepRecord, mode: &str) -> String {
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
        // Send lag is the open loop's lateness against its schedule: a closed loop has none.
        let lag = if mode == "open" {
            format!("  lag p99 {:>7}", crate::units::fmt_ms(s.send_lag_ms.p99))
        } else {
            String::new()
        };
        format!(
            "step {:>3}{of}  {level:>12} → {:>9.1}/s  ok {:>5.1}%  p50 {:>8}  p99 {:>8}{lag}  gen cpu {:>3.0}%{flags}",
            rec.step + 1,
            s.throughput,
            if s.requests > 0 { s.ok_count() as f64 / s.requests as f64 * 100.0 } else { 0.0 },
            crate::units::fmt_ms(s.response_time_ms.p50),
            crate::units::fmt_ms(s.response_time_ms.p99),
            rec.generator.cpu_pct,
        )
    }
}

impl Drop for SweepProgress {
    fn drop(&mut self) {
        self.close_view();
    }
}

/// `1h02m`, `3m05s`, `42s`: a time left.
pub fn fmt_secs(s: f64) -> String {
    let s = s.max(0.0) as u64;
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s % 3600 / 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rates are per second of the interval since the reading before, whatever its length;
    /// CPU is the process's share of one core over it.
    #[test]
    fn ticks_turn_totals_into_rates() {
        let mut t = Ticker::default();
        let s = Duration::from_secs;
        let a = t.next(s(1), 100, 2, 5, 500_000);
        assert_eq!((a.rate, a.error_rate, a.cpu_pct), (100.0, 2.0, 50.0));
        assert_eq!((a.responses, a.errors, a.in_flight), (100, 2, 5));
        let b = t.next(s(2), 350, 2, 7, 1_250_000);
        assert_eq!((b.rate, b.error_rate, b.cpu_pct), (250.0, 0.0, 75.0));
        let c = t.next(Duration::from_millis(4500), 850, 12, 0, 1_250_000);
        assert_eq!((c.rate, c.error_rate, c.cpu_pct), (200.0, 4.0, 0.0));
        // A reading at the same instant divides by nothing: no rate, not infinity.
        let d = t.next(Duration::from_millis(4500), 900, 12, 0, 1_250_000);
        assert_eq!(d.rate, 0.0);
    }

    /// The step line shows send lag in the open loop only: a closed loop has no schedule.
    #[test]
    fn the_step_line_shows_send_lag_in_the_open_loop_only() {
        let p = SweepProgress::new(
            Some(3),
            Duration::ZERO,
            Duration::ZERO,
            Duration::ZERO,
            "",
            true,
        );
        let open = &crate::report::testdata::open_sweep()[0];
        assert!(p.step_line(open, "open").contains("lag p99"));
        let closed = &crate::report::testdata::closed_sweep()[0];
        let line = p.step_line(closed, "closed");
        assert!(!line.contains("lag"), "{line}");
        assert!(line.contains("gen cpu"), "{line}");
    }

    /// A view that asks to end step `end` once it sees it.
    struct EndStep {
        end: usize,
        seen: Option<usize>,
        done: Vec<usize>,
    }

    impl LiveView for EndStep {
        fn tick(&mut self, step: Option<usize>, _offered: f64, _tick: &Tick) {
            self.seen = step;
        }
        fn server(&mut self, _samples: Vec<Sample>) {}
        fn step_done(&mut self, rec: &StepRecord) {
            self.done.push(rec.step);
        }
        fn take_end_step(&mut self) -> bool {
            self.seen.take() == Some(self.end)
        }
    }

    /// With a view, the tick stops the step's engine when the view asks (`n`), and the runner
    /// learns it once, for that step only.
    #[test]
    fn the_view_ends_a_step_through_the_engines_stop_flag() {
        let z = Duration::ZERO;
        let view = EndStep {
            end: 1,
            seen: None,
            done: Vec::new(),
        };
        let mut p = SweepProgress::new(Some(3), z, z, z, "req/s", false).with_view(Box::new(view));
        let ctl = Control::new(1);
        p.tick(0, 100.0, &ctl, Duration::from_secs(1), None);
        assert!(!ctl.stop.load(Ordering::Relaxed));
        assert!(!p.take_ended_early(0));
        let ctl = Control::new(1);
        p.tick(1, 200.0, &ctl, Duration::from_secs(1), None);
        assert!(
            ctl.stop.load(Ordering::Relaxed),
            "the step's workers are told to stop"
        );
        assert!(!p.take_ended_early(0), "not another step");
        assert!(p.take_ended_early(1));
        assert!(!p.take_ended_early(1), "once");
    }
}
