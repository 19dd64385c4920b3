//! The one run lifecycle of every run kind (run, sweep, capacity, demo): everything around
//! the steps. It opens the results folder with its run.json, serves the live page, prints
//! the banner, waits for `--start-at`, shows the run (progress line or bar, terminal view,
//! live page: one [`Sink`]), starts the observer and builds the [`Stepper`]. The use case
//! supplies its configuration and its driver (which step next). At the end the lifecycle
//! marks the folder finished, reads it back once, and writes the report and the hdr-log
//! from that one reading, whose analysis the use case prints.
use super::config::{Output, SegmentConfig, StepTiming};
use super::results;
use crate::analysis::{Analysis, Slo};
use crate::engine::EngineConfig;
use crate::live::LivePage;
use crate::liverun::progress::{Progress, SweepProgress};
use crate::observe::ObserveConfig;
use crate::report::{export, Format, RunReport};
use crate::runner::{Executor, Finished, Sink, StepTick, Stepper};
use crate::Error;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How the run is paced, for its progress and terminal view.
#[derive(Debug, Clone, Copy)]
pub enum Pace {
    /// One load level for the run's duration (or request count): the progress line.
    Single,
    /// Steps of warm-up + step + rest (`planned`: None when the count is not known ahead).
    Stepped {
        planned: Option<usize>,
        timing: StepTiming,
    },
}

/// What a use case hands the lifecycle, besides its driver.
pub struct Lifecycle<'a> {
    /// run.json's `kind` (`run`, `sweep`, `capacity`), and the command the view names.
    pub kind: &'static str,
    /// `open` or `closed`.
    pub mode: &'static str,
    pub base: &'a EngineConfig,
    /// The request mix as shown (`METHOD URL`).
    pub urls: &'a [String],
    /// run.json's `config`: the plan and options, for the record.
    pub config: serde_json::Value,
    pub slo: Option<&'a Slo>,
    pub output: &'a Output,
    /// Write a results folder even without `--live-port`/`--hdr-log` asking for one (a
    /// single run writes none unless asked: it stays a pure load generator).
    pub folder: bool,
    /// Server-side sampling beside the load, when any.
    pub observe: Option<ObserveConfig>,
    /// `--start-at`: when the steps start (and their grid).
    pub segment: SegmentConfig,
    /// The first line printed (unless quiet), before `; results in DIR`; without one, a
    /// folder is announced as `overload: results in DIR`.
    pub banner: Option<String>,
    pub pace: Pace,
    /// Called once the folder exists, before the wait and the load (the sweep's `--audit`).
    pub before_load: Option<&'a dyn Fn(&Path)>,
}

impl<T> Ended<T> {
    /// The run's notes, with a line per metrics sink (what it got): what a stepped run prints.
    pub fn notes(&mut self) -> Vec<String> {
        let mut notes = std::mem::take(&mut self.finished.notes);
        notes.extend(self.pushed.iter().map(|p| format!("push: {p}")));
        notes
    }
}

/// The results folder of an ended run, as read back once.
pub struct Stored {
    pub dir: PathBuf,
    pub report: PathBuf,
    /// The analysis of what the folder holds (the report's own).
    pub analysis: Analysis,
}

/// A run, ended: its folder (when written), its steps, and what the driver returned.
pub struct Ended<T> {
    pub stored: Option<Stored>,
    pub finished: Finished,
    pub driven: T,
    /// What each metrics sink got (`--prometheus-remote-write`, `--otlp`).
    pub pushed: Vec<crate::push::PushReport>,
}

impl Lifecycle<'_> {
    /// Runs the lifecycle around `drive`, which runs the steps on the stepper; `reason` says
    /// why the run stopped, for run.json. A driver's error is recorded in run.json, then
    /// returned.
    pub fn run<T>(
        mut self,
        exec: &mut dyn Executor,
        drive: impl FnOnce(&mut Stepper) -> crate::Result<T>,
        reason: impl Fn(&T) -> String,
    ) -> crate::Result<Ended<T>> {
        let out = self.output;
        results::check_hdr_log(out.hdr_log.as_deref())?;
        if let (Some(m), "closed") = (out.control.max, self.mode) {
            if m > crate::engine::steer::MAX_USERS {
                return Err(Error::usage(format!(
                    "--control-max {}: at most {} users (each is a connection slot held from the start)",
                    crate::units::fmt_num(m),
                    crate::units::fmt_num(crate::engine::steer::MAX_USERS)
                )));
            }
        }

        if let Some(t) = &out.title {
            check_title(t)?;
            // Kept for the report's title (and the record).
            self.config["title"] = t.as_str().into();
        }
        let wants_folder = self.folder || out.live_addr().is_some() || out.hdr_log.is_some();
        let mut writer = if wants_folder {
            Some(results::open(
                out.out.as_deref(),
                out.name.as_deref(),
                self.kind,
                self.mode,
                self.urls,
                std::mem::take(&mut self.config),
                self.slo,
            )?)
        } else {
            None
        };
        crate::signals::install();
        let dir = writer.as_ref().map(|w| w.dir().to_path_buf());
        // Before the banner: a port in use ends the run before anything is announced.
        let page = match &dir {
            Some(d) => live_page(out, d)?,
            None => None,
        };
        if !out.quiet {
            let banner = match (&out.title, &self.banner) {
                (Some(t), Some(b)) => Some(format!("{b} · {t}")),
                (Some(t), None) => Some(format!("overload: {t}")),
                (None, b) => b.clone(),
            };
            match (&banner, &dir) {
                (Some(b), Some(d)) => crate::eoutln!("{b}; results in {}", crate::fsutil::shown(d)),
                (Some(b), None) => crate::eoutln!("{b}"),
                (None, Some(d)) => {
                    crate::eoutln!("overload: results in {}", crate::fsutil::shown(d))
                }
                (None, None) => {}
            }
        }
        if let (Some(f), Some(d)) = (self.before_load, &dir) {
            f(d);
        }
        if !wait_for_start(self.segment.start_at_ms, out.quiet) {
            let why = "interrupted while waiting for --start-at";
            if let Some(w) = writer.as_mut() {
                w.finish(false, why)?;
            }
            return Err(Error::runtime(why));
        }
        let labels = crate::push::Labels {
            // The same on every generator of a split run, so their series add up.
            run: out.name.clone().unwrap_or_else(|| {
                results::name_from_url(self.urls.first().map_or("run", |u| u.as_str()))
            }),
            segment: self.segment.segment.to_string(),
        };
        // Live control: the view's keys and --control-port steer the engine through one
        // channel; its port is up before the load, and says where.
        let c = out.control;
        let steer = (c.port.is_some() || (out.live_view && !out.quiet)).then(|| {
            crate::engine::steer::Steer::new(crate::engine::steer::Settings {
                step: c.step,
                max: c.max,
            })
        });
        let _control_port = match (&steer, c.port) {
            (Some(st), Some(addr)) => {
                let p = crate::live::ControlPort::start(addr, std::sync::Arc::clone(st))?;
                crate::eoutln!("overload: live control at {}", p.url());
                Some(p)
            }
            _ => None,
        };
        let steered_base = EngineConfig {
            steer: steer.clone(),
            ..self.base.clone()
        };
        let mut sink = Shown {
            show: self.show(steer.clone())?,
            page,
            push: (!out.push.is_empty()).then(|| crate::push::RunPush::start(&out.push, labels)),
        };
        let mut stepper = Stepper::new(
            &steered_base,
            self.mode,
            self.slo,
            writer.as_mut(),
            &mut sink,
            exec,
        );
        if let Some(at) = self.segment.start_at_ms {
            stepper.clock = crate::runner::step::RunClock::at(at);
            if let Pace::Stepped { timing: t, .. } = self.pace {
                stepper.grid = Some(t.warmup + t.step + t.rest);
            }
        }
        if let Some(oc) = self.observe {
            stepper.observer = Some(crate::observe::Observer::start(oc)?);
        }
        let driven = drive(&mut stepper);
        let finished = stepper.finish(&driven, reason);
        // The sinks get what the run sent, even when it failed.
        let pushed = sink.push.take().map(|p| p.finish()).unwrap_or_default();
        let finished = finished?;
        let driven = driven?;
        let stored = match dir {
            Some(dir) => Some(store(dir, out.hdr_log.as_deref())?),
            None => None,
        };
        // The page is dropped here, after the report: its last reload shows the stored run.
        drop(sink);
        Ok(Ended {
            stored,
            finished,
            driven,
            pushed,
        })
    }

    /// The progress (line or bar), or the terminal view when asked for and not quiet.
    fn show(
        &self,
        steer: Option<std::sync::Arc<crate::engine::steer::Steer>>,
    ) -> crate::Result<Show> {
        let out = self.output;
        let unit = if self.mode == "open" {
            "req/s"
        } else {
            "users"
        };
        let (planned, step_len, per_step) = match self.pace {
            Pace::Single => (None, self.base.duration.map(|d| d + self.base.warmup), None),
            Pace::Stepped { planned, timing: t } => (
                planned,
                Some(t.warmup + t.step),
                Some(t.warmup + t.step + t.rest),
            ),
        };
        let view = if out.live_view && !out.quiet {
            Some(crate::tui::LiveScreen::start(
                crate::tui::Setup {
                    command: self.kind,
                    target: match &out.title {
                        Some(t) => {
                            format!("{t} · {}", self.urls.first().map_or("", |u| u.as_str()))
                        }
                        None => self.urls.first().cloned().unwrap_or_default(),
                    },
                    unit,
                    planned,
                    step_len,
                    per_step: per_step.unwrap_or(Duration::ZERO),
                    end_step_key: per_step.is_some(),
                    steer_keys: false,
                },
                steer,
            )?)
        } else {
            None
        };
        Ok(match self.pace {
            Pace::Single => {
                let p = Progress::new(self.base, out.quiet);
                Show::Line(match view {
                    Some(v) => p.with_view(Box::new(v)),
                    None => p,
                })
            }
            Pace::Stepped { planned, timing: t } => {
                let p = SweepProgress::new(planned, t.warmup, t.step, t.rest, unit, out.quiet);
                Show::Bar(match view {
                    Some(v) => p.with_view(Box::new(v)),
                    None => p,
                })
            }
        })
    }
}

/// Longest `--title`, in bytes: it heads a terminal view and a report page.
const MAX_TITLE: usize = 200;

/// `--title` is printed on the terminal and in every report: no control characters (an
/// escape sequence would reach each of them), and short enough for a header.
fn check_title(t: &str) -> crate::Result<()> {
    let why = if t.chars().any(char::is_control) {
        "control characters are not allowed"
    } else if t.trim().is_empty() {
        "must not be empty"
    } else if t.len() > MAX_TITLE {
        "longer than 200 bytes"
    } else {
        return Ok(());
    };
    let shown: String = t.chars().take(MAX_TITLE).collect();
    Err(Error::usage(format!(
        "--title '{}': {why}",
        crate::units::escape_controls(&shown)
    )))
}

/// Waits for `--start-at` (cut short by SIGINT); false when interrupted.
fn wait_for_start(start_at_ms: Option<u64>, quiet: bool) -> bool {
    let Some(at) = start_at_ms else {
        return true;
    };
    let now = crate::clock::unix_ms();
    if at > now && !quiet {
        crate::eoutln!(
            "waiting {:.1} s for --start-at {}",
            (at - now) as f64 / 1e3,
            crate::units::fmt_unix_ms(at)
        );
    }
    while crate::clock::unix_ms() < at {
        if crate::signals::interrupted() {
            return false;
        }
        let left = at.saturating_sub(crate::clock::unix_ms());
        std::thread::sleep(Duration::from_millis(left.min(50)));
    }
    true
}

/// Reads the finished folder back once and writes report.html (and `--hdr-log`) from it.
fn store(dir: PathBuf, hdr_log: Option<&Path>) -> crate::Result<Stored> {
    let r = RunReport::load(&dir)?;
    let report = export::write(&r, Format::Html, None)?
        .into_iter()
        .next()
        .unwrap_or_else(|| dir.join("report.html"));
    if let Some(p) = hdr_log {
        export::write(&r, Format::HdrLog, Some(p))?;
    }
    Ok(Stored {
        dir,
        report,
        analysis: r.analysis,
    })
}

/// `--live-port`/`--live-listen`: serves `dir`'s report while the run goes on and says where.
/// The page stops when the returned value is dropped.
fn live_page(out: &Output, dir: &Path) -> crate::Result<Option<LivePage>> {
    let Some(addr) = out.live_addr() else {
        return Ok(None);
    };
    let flag = if out.live_listen.is_some() {
        format!("--live-listen {addr}")
    } else {
        format!("--live-port {}", addr.port())
    };
    let page = LivePage::start(addr, &flag, dir)?;
    crate::eoutln!("overload: live report at {}", page.url());
    Ok(Some(page))
}

enum Show {
    /// A single run: the progress line.
    Line(Progress),
    /// Steps: the bar and a line per step.
    Bar(SweepProgress),
}

/// The one sink of a run: its progress (or terminal view), its live page and its metrics
/// pushers.
struct Shown {
    show: Show,
    page: Option<LivePage>,
    push: Option<crate::push::RunPush>,
}

impl Sink for Shown {
    fn tick(&mut self, t: &StepTick) {
        match &mut self.show {
            Show::Line(p) => p.tick(t.ctl, t.elapsed, t.observer, t.moving_level()),
            Show::Bar(p) => p.tick(t.index, t.offered(), t.ctl, t.elapsed, t.observer),
        }
        let series = match (&self.page, &self.push) {
            (None, None) => Vec::new(),
            _ => t.series(),
        };
        if let Some(push) = &mut self.push {
            // The level at this tick: a ramp's, or as live control set it.
            let offered = match t.load {
                crate::engine::Load::Open { .. } => crate::push::Offered::Rate(t.offered()),
                crate::engine::Load::Closed { .. } => {
                    crate::push::Offered::Users(t.offered().round() as u64)
                }
            };
            let server = t
                .observer
                .map(crate::liverun::progress::latest_samples)
                .unwrap_or_default();
            let origin = t.clock.start_unix_ms;
            push.tick(t.index, offered, t.ctl, &series, origin, &server);
        }
        if let Some(page) = &self.page {
            page.show_series(series, t.events());
        }
    }

    fn step_done(
        &mut self,
        rec: &crate::store::StepRecord,
        series: &[crate::store::SeriesPoint],
        mode: &str,
    ) {
        if let Some(push) = &mut self.push {
            push.step_done(rec, series);
        }
        // A single run prints its summary instead, when it ends.
        if let Show::Bar(p) = &mut self.show {
            p.step_done(rec, mode);
        }
    }

    fn take_ended_early(&mut self, index: usize) -> bool {
        match &mut self.show {
            Show::Bar(p) => p.take_ended_early(index),
            Show::Line(_) => false,
        }
    }

    fn close(&mut self) {
        match &mut self.show {
            Show::Line(p) => p.finish(),
            Show::Bar(p) => p.close_view(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Arrival, Load};
    use crate::runner::fake::{self, Scripted};

    fn rate(rate: f64) -> Load {
        Load::Open {
            rate,
            arrival: Arrival::Constant,
            max_connections: 100,
        }
    }

    fn lifecycle<'a>(base: &'a EngineConfig, urls: &'a [String], out: &'a Output) -> Lifecycle<'a> {
        Lifecycle {
            kind: "sweep",
            mode: "open",
            base,
            urls,
            config: serde_json::json!({ "levels": [100, 200, 300] }),
            slo: None,
            output: out,
            folder: true,
            observe: None,
            segment: SegmentConfig::default(),
            banner: Some("test".into()),
            pace: Pace::Stepped {
                planned: Some(3),
                timing: StepTiming::default(),
            },
            before_load: None,
        }
    }

    /// A scripted driver runs its steps in order on the stepper; the lifecycle opens the
    /// folder before the first step, stores every step, marks the folder finished with the
    /// driver's reason, and writes the report and the hdr-log from one reading of it, whose
    /// analysis it hands back.
    #[test]
    fn the_driver_runs_the_steps_and_the_lifecycle_stores_them_once() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        let out = Output {
            out: Some(dir.clone()),
            quiet: true,
            hdr_log: Some(tmp.path().join("run.hlog")),
            ..Output::default()
        };
        let base = fake::base(rate(100.0));
        let urls = ["GET http://127.0.0.1:9/".to_string()];
        let mut exec = Scripted::new(fake::server(250.0));
        let seen = std::cell::RefCell::new(Vec::new());
        let ended = lifecycle(&base, &urls, &out)
            .run(
                &mut exec,
                |s| {
                    assert!(dir.join("run.json").exists(), "the folder exists first");
                    for r in [100.0, 200.0, 300.0] {
                        let rec = s.step(rate(r))?;
                        seen.borrow_mut().push((rec.step, rec.offered));
                    }
                    Ok(3)
                },
                |n| format!("{n} steps done"),
            )
            .unwrap();
        assert_eq!(exec.offered, [100.0, 200.0, 300.0]);
        assert_eq!(*seen.borrow(), [(0, 100.0), (1, 200.0), (2, 300.0)]);
        assert_eq!(ended.driven, 3);
        assert_eq!(ended.finished.steps.len(), 3);
        assert!(ended.finished.complete);
        let stored = ended.stored.expect("a folder was asked for");
        assert_eq!(stored.dir, dir);
        assert_eq!(stored.report, dir.join("report.html"));
        assert!(stored.report.exists());
        let steps = std::fs::read_to_string(dir.join("steps.jsonl")).unwrap();
        assert_eq!(steps.lines().count(), 3, "each step stored once");
        let info: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
        assert_eq!(info["complete"], true);
        assert_eq!(info["stop_reason"], "3 steps done");
        assert_eq!(info["kind"], "sweep");
        let hlog = std::fs::read_to_string(tmp.path().join("run.hlog")).unwrap();
        assert!(hlog.contains("#[StartTime"), "{hlog}");
        // The analysis is the report's: 300 req/s on a 250 req/s server saturates.
        assert_eq!(stored.analysis.saturation.map(|s| s.step), Some(2));
    }

    /// A single run that asks for no folder writes nothing, and still runs its step.
    #[test]
    fn a_run_without_a_folder_writes_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let out = Output {
            quiet: true,
            ..Output::default()
        };
        let base = fake::base(rate(100.0));
        let urls = ["GET http://127.0.0.1:9/".to_string()];
        let mut exec = Scripted::new(fake::server(1e9));
        let cwd_before = std::fs::read_dir(tmp.path()).unwrap().count();
        let lc = Lifecycle {
            kind: "run",
            folder: false,
            pace: Pace::Single,
            ..lifecycle(&base, &urls, &out)
        };
        let ended = lc
            .run(
                &mut exec,
                |s| s.step(rate(100.0)).map(|_| ()),
                |_| "run ended".into(),
            )
            .unwrap();
        assert!(ended.stored.is_none());
        assert_eq!(ended.finished.steps.len(), 1);
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), cwd_before);
    }

    /// A driver's error is recorded in run.json as why the run stopped, then returned; no
    /// report is written for a failed run.
    #[test]
    fn a_drivers_error_is_recorded_then_returned() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        let out = Output {
            out: Some(dir.clone()),
            quiet: true,
            ..Output::default()
        };
        let base = fake::base(rate(100.0));
        let urls = ["GET http://127.0.0.1:9/".to_string()];
        let mut exec = Scripted::new(fake::server(1e9));
        exec.fail_at = Some(1);
        let e = lifecycle(&base, &urls, &out)
            .run(
                &mut exec,
                |s| {
                    s.step(rate(100.0))?;
                    s.step(rate(200.0))?;
                    Ok(())
                },
                |_| "done".into(),
            )
            .err()
            .expect("the second step fails");
        assert!(e.to_string().contains("scripted failure"), "{e}");
        let info: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
        assert_eq!(info["complete"], false);
        assert_eq!(info["stop_reason"], "failed: scripted failure at step 1");
        assert!(!dir.join("report.html").exists());
    }
}
