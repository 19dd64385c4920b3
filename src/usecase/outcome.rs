//! What each run kind returns when it ends, and what it prints (`Display`) and exits with
//! (`exit_code`): a single run's summary, a sweep's and a search's analysis, the demo's verdict.
use crate::analysis::{self, Analysis, Slo};
use crate::engine::{EngineConfig, Outcome};
use crate::liverun::summary as terminal;
use crate::metrics::Summary;
use crate::observe::StepObservation;
use crate::plan::bracket::CapacitySearch;
use crate::store::StepRecord;
use std::fmt;
use std::fmt::Write;
use std::path::PathBuf;
use std::time::Duration;

/// A run, ended.
pub struct RunOutcome {
    pub cfg: EngineConfig,
    pub summary: Summary,
    pub outcome: Outcome,
    /// The server's side and the observer's warnings, when observed.
    pub server: Option<(StepObservation, Vec<String>)>,
    pub slo: Option<Slo>,
    /// The results folder and its report, when one was asked for (`--out`, `--report`).
    pub stored: Option<(PathBuf, PathBuf)>,
    /// On stages: the knee found on the ramp and its verdict.
    pub ramp: Option<crate::analysis::ramp::RampAnalysis>,
    /// What each metrics sink got (`--prometheus-remote-write`, `--otlp`).
    pub pushed: Vec<crate::push::PushReport>,
    /// The changes live control made to the load (empty: the plan's load throughout).
    pub steered: Vec<crate::store::ControlEvent>,
}

impl RunOutcome {
    /// Why the run failed as a whole, in one line: no request succeeded (the dominant error),
    /// or the plan was not carried out (`analysis::plan_carried_out`: over 1% of its arrivals
    /// never sent). An interrupted run is not judged.
    pub fn failure(&self) -> Option<String> {
        if self.outcome.interrupted {
            return None;
        }
        self.summary
            .nothing_answered(&self.cfg.addrs[0].to_string())
            .or_else(|| {
                let g = crate::runner::step::generator_of(&self.outcome);
                let n = crate::analysis::not_sent(&self.summary, &g)?;
                (!n.plan_carried_out).then(|| {
                    format!(
                        "the plan was not carried out: {} of its {} arrivals ({:.2}%) were never sent; {}",
                        n.count,
                        n.intended,
                        n.share * 100.0,
                        n.why
                    )
                })
            })
    }

    /// 130 when interrupted, 1 when nothing answered or the plan was not carried out, 3 when
    /// the SLO failed, else 0.
    pub fn exit_code(&self) -> i32 {
        if self.outcome.interrupted {
            130
        } else if self.failure().is_some() {
            1
        } else if self.slo.as_ref().is_some_and(|s| !s.holds(&self.summary)) {
            3
        } else {
            0
        }
    }
}

/// What is printed when the run ends: the summary, the server's side, the SLO verdict.
impl fmt::Display for RunOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&terminal::summary(&self.summary, &self.outcome, &self.cfg))?;
        if let Some(r) = &self.ramp {
            writeln!(f, "\n  {}", r.describe())?;
        }
        if !self.steered.is_empty() {
            let changes: Vec<String> = self
                .steered
                .iter()
                .map(|e| format!("{} at {:.1} s", e.label(), e.t))
                .collect();
            writeln!(
                f,
                "\nsteered: {} (live control): the load was not one fixed level, so these figures \
                 are no capacity (a sweep's steps measure that)",
                changes.join(", ")
            )?;
        }
        if let Some((obs, warnings)) = &self.server {
            f.write_str(&terminal::server(obs))?;
            let (rate, users) = self.cfg.offered();
            let mode = if users.is_some() { "closed" } else { "open" };
            let level = rate.unwrap_or(users.unwrap_or(0) as f64);
            for finding in crate::observe::findings(&[(level, obs)], mode) {
                writeln!(f, "  • {finding}")?;
            }
            for w in warnings {
                writeln!(f, "  ! {w}")?;
            }
        }
        if !self.outcome.interrupted {
            if let Some(slo) = &self.slo {
                f.write_str(&terminal::slo_lines(slo, &self.summary))?;
            }
        }
        for p in &self.pushed {
            writeln!(f, "push:    {p}")?;
        }
        if let Some((dir, report)) = &self.stored {
            writeln!(f, "\nreport:  {}", report.display())?;
            writeln!(f, "results: {}", dir.display())?;
        }
        Ok(())
    }
}

/// A sweep, ended.
#[derive(Debug)]
pub struct SweepOutcome {
    pub dir: PathBuf,
    pub report: PathBuf,
    pub steps: Vec<StepRecord>,
    pub notes: Vec<String>,
    /// Went its full course (not interrupted).
    pub complete: bool,
    /// Why it stopped, as recorded in run.json.
    pub reason: String,
    pub analysis: Analysis,
    pub has_slo: bool,
}

impl SweepOutcome {
    /// 130 when interrupted, 3 when a step failed the SLO, else 0.
    pub fn exit_code(&self) -> i32 {
        if !self.complete {
            130
        } else if self.has_slo && self.steps.iter().any(|s| s.slo_ok == Some(false)) {
            3
        } else {
            0
        }
    }
}

/// What is printed when the sweep ends.
impl fmt::Display for SweepOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "sweep ended: {}", self.reason)?;
        f.write_str(&analysis_text(&self.analysis, &self.notes))?;
        writeln!(f, "report:  {}", crate::fsutil::shown(&self.report))?;
        writeln!(f, "\nresults: {}", crate::fsutil::shown(&self.dir))
    }
}

/// A capacity search, ended.
#[derive(Debug)]
pub struct CapacityOutcome {
    pub dir: PathBuf,
    pub report: PathBuf,
    /// Every step run, in search order (a generator-bound failure shows twice: it was re-run).
    pub steps: Vec<StepRecord>,
    pub notes: Vec<String>,
    pub complete: bool,
    pub reason: String,
    pub search: CapacitySearch,
    pub slo: Slo,
    pub start: f64,
    pub max: f64,
    pub precision: f64,
    pub elapsed: Duration,
    /// The analysis of the probes in order of load.
    pub analysis: Analysis,
}

impl CapacityOutcome {
    /// 130 when interrupted, 3 when even the first probe failed, else 0.
    pub fn exit_code(&self) -> i32 {
        if !self.complete {
            130
        } else if self.search.lo.is_none() {
            3
        } else {
            0
        }
    }
}

/// What is printed when the search ends.
impl fmt::Display for CapacityOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "\ncapacity search ended: {} ({:.0}s)",
            self.reason,
            self.elapsed.as_secs_f64()
        )?;
        for (i, step) in self.steps.iter().enumerate() {
            let s = &step.summary;
            let gen = if step.flags.iter().any(|f| f == "generator-bound") {
                "  (generator-bound)"
            } else {
                ""
            };
            writeln!(
                f,
                "  probe {:>2}: {:>9.1} req/s  {}  p99 {:>8}  errors {:.2}%{gen}",
                i + 1,
                step.offered,
                if self.slo.holds(s) && !step.flags.iter().any(|f| f == "not-sustained") {
                    "met   "
                } else {
                    "FAILED"
                },
                crate::units::fmt_ms(s.response_time_ms.p99),
                Slo::measure(analysis::slo::Metric::Errors, s) * 100.0
            )?;
        }
        match (self.search.lo, self.search.hi) {
            (Some(lo), hi) => {
                let bracket = hi.map_or(format!("[{lo:.1}, >{:.0}]", self.max), |h| {
                    format!("[{lo:.1}, {h:.1})")
                });
                let at_least = if hi.is_none() { "at least " } else { "" };
                writeln!(
                    f,
                    "\ncapacity: {at_least}{lo:.1} req/s under '{}' (bracket {bracket}){}",
                    self.slo.text,
                    self.search.spread_text()
                )?;
                let linear = CapacitySearch::linear_steps(self.start, lo, self.precision);
                writeln!(
                    f,
                    "  {} probes; a linear sweep from {:.0} req/s in steps of {:.0}% would need about {linear}",
                    self.steps.len(),
                    self.start,
                    self.precision * 100.0
                )?;
            }
            (None, _) => writeln!(
                f,
                "\ncapacity: below {:.1} req/s: the first probe already failed '{}'",
                self.start, self.slo.text
            )?,
        }
        f.write_str(&analysis_text(&self.analysis, &self.notes))?;
        writeln!(f, "report:  {}", crate::fsutil::shown(&self.report))?;
        writeln!(f, "\nresults: {}", crate::fsutil::shown(&self.dir))
    }
}

/// The target as started, before the sweep.
pub struct DemoTarget {
    pub url: String,
    pub workers: usize,
    pub service_ms: u64,
    /// Theoretical capacity, req/s.
    pub capacity: f64,
    /// How long the sweep should take.
    pub time: super::demo_config::DemoTime,
}

/// What is printed before the sweep starts.
impl fmt::Display for DemoTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "overload demo: the embedded target at {} has {} workers x {} ms per request: capacity {:.0} req/s.",
            self.url, self.workers, self.service_ms, self.capacity
        )?;
        writeln!(
            f,
            "Sweeping the request rate from 40% to 160% of that, in steps of 10%, until 2 steps past saturation: {} ({} steps).\n",
            super::demo_config::about(self.time.typical),
            self.time.steps
        )
    }
}

pub struct DemoOutcome {
    pub capacity: f64,
    pub dir: PathBuf,
    pub report: PathBuf,
    pub notes: Vec<String>,
    pub complete: bool,
    pub analysis: Analysis,
}

impl DemoOutcome {
    pub fn exit_code(&self) -> i32 {
        if self.complete {
            0
        } else {
            130
        }
    }
}

impl fmt::Display for DemoOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let capacity = self.capacity;
        match &self.analysis.saturation {
            Some(s) => writeln!(
                f,
                "\n{} (the target's theoretical capacity: {capacity:.0} req/s)",
                s.describe("req/s")
            )?,
            None => writeln!(
                f,
                "\nno saturation found up to {:.0} req/s (the target's theoretical capacity: {capacity:.0})",
                self.analysis.peak_throughput
            )?,
        }
        f.write_str(&analysis_text(&self.analysis, &self.notes))?;
        writeln!(f, "report:  {}", crate::fsutil::shown(&self.report))?;
        writeln!(
            f,
            "\nresults: {}  (overload report {} regenerates the report)",
            crate::fsutil::shown(&self.dir),
            crate::fsutil::shown(&self.dir)
        )
    }
}

/// The analysis after a sweep or search: a blank line, the bottleneck verdict, the findings,
/// the notes.
pub fn analysis_text(a: &Analysis, notes: &[String]) -> String {
    let mut o = String::from("\n");
    if let Some(b) = &a.bottleneck {
        o.push_str(&crate::report::bottleneck::text(b));
    }
    for f in &a.findings {
        let _ = writeln!(o, "  • {f}");
    }
    for n in notes {
        let _ = writeln!(o, "  ! {n}");
    }
    o
}
