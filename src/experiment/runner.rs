//! Runs an experiment: for every run not finished yet, (re)start the server, send the
//! warm-up round, run the load plan with the same use case as `overload sweep|capacity` into
//! `EXPDIR/<config>-r<k>/`, stop the server, record the run as finished. The servers
//! ([`Servers`], `servers.rs` for the real ones) and the load ([`Executor`]) are seams: the
//! unit tests drive the sequencing and `--resume` with scripted ones.
use super::plan::{self, Measure, Run};
use super::resume::{RunState, State};
use super::spec::{Config, Experiment};
use crate::runner::{step::RunClock, Executor};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Starts and stops the server of each run.
pub trait Servers {
    /// Stops what a killed experiment left running (recorded in the state).
    fn stop_leftover(&mut self, state: &mut State, dir: &Path) -> crate::Result<()>;
    /// Starts the configuration's server afresh; returns its base URL.
    fn start(
        &mut self,
        exp: &Experiment,
        c: &Config,
        run: &Run,
        dir: &Path,
        state: &mut State,
    ) -> crate::Result<String>;
    /// Stops the server started last.
    fn stop(&mut self, c: &Config, run: &Run, dir: &Path) -> crate::Result<()>;
}

/// The warm-up round: the first level for `c.warmup`, counted nowhere (S2).
fn warm_up(c: &Config, base: &str, exec: &mut dyn Executor) -> crate::Result<()> {
    if c.warmup.is_zero() {
        return Ok(());
    }
    let (cfg, urls) = plan::warm_up(c, base).engine_config()?;
    let r = exec.run_step(&cfg, cfg.load, 0, &RunClock::now(), None, &mut |_, _| {})?;
    let s = &r.record.summary;
    crate::outln!(
        "  warm-up: {} for {}: {:.1} responses/s, {} errors (not stored)",
        urls.first().map_or("", String::as_str),
        crate::units::fmt_duration(c.warmup),
        s.throughput,
        s.error_count
    );
    Ok(())
}

/// The load plan through the same use case as `overload sweep|capacity`; its exit code.
fn measure(m: &Measure, exec: &mut dyn Executor) -> crate::Result<i32> {
    match m {
        Measure::Sweep(cfg) => {
            let o = crate::usecase::sweep::run(cfg, exec)?;
            crate::out!("{o}");
            Ok(o.exit_code())
        }
        Measure::Capacity(cfg) => {
            let o = crate::usecase::capacity::run(cfg, exec)?;
            crate::out!("{o}");
            Ok(o.exit_code())
        }
        // A ramp is one run of `overload run --stages`, on the real engine.
        Measure::Ramp(cfg) => {
            let o = crate::usecase::run::run(cfg)?;
            crate::out!("{o}");
            Ok(o.exit_code())
        }
    }
}

/// A partly written folder of an interrupted run goes to EXPDIR/.interrupted/, so the run
/// starts over in a clean folder and nothing measured is deleted.
fn set_aside(dir: &Path, id: &str) -> crate::Result<()> {
    let p = dir.join(id);
    if p.exists() {
        let aside = dir.join(".interrupted");
        std::fs::create_dir_all(&aside)?;
        let to = aside.join(format!("{id}-{}", crate::clock::unix_ms()));
        std::fs::rename(&p, &to)?;
        crate::outln!(
            "  {id}: an unfinished folder was moved to {}",
            crate::fsutil::shown(&to)
        );
    }
    Ok(())
}

pub struct Options {
    pub quiet: bool,
}

/// Runs every run not yet finished; returns the exit code (130 when interrupted).
pub fn execute(
    exp: &Experiment,
    dir: &Path,
    state: &mut State,
    opts: &Options,
    exec: &mut dyn Executor,
    servers: &mut dyn Servers,
) -> crate::Result<i32> {
    crate::signals::install();
    servers.stop_leftover(state, dir)?;
    let runs = plan::runs(exp);
    let total = runs.len();
    let t0 = Instant::now();
    for (k, run) in runs.iter().enumerate() {
        if state.is_done(&run.id) {
            crate::outln!("run {}/{total} {}: finished before, skipped", k + 1, run.id);
            continue;
        }
        if exec.interrupted() {
            return Ok(130);
        }
        let c = &exp.configs[run.config];
        crate::outln!(
            "\n=== run {}/{total}: {} ({}, repetition {}) · {:.0}s into the experiment",
            k + 1,
            run.id,
            super::report::server_text(c),
            run.rep,
            t0.elapsed().as_secs_f64()
        );
        set_aside(dir, &run.id)?;
        let started_ms = crate::clock::unix_ms();
        let base = servers.start(exp, c, run, dir, state)?;
        let out: PathBuf = dir.join(&run.id);
        let m = plan::measure(c, &base, &out, &run.id, opts.quiet);
        let result = warm_up(c, &base, exec).and_then(|()| {
            if exec.interrupted() {
                Ok(130)
            } else {
                measure(&m, exec)
            }
        });
        let stopped = servers.stop(c, run, dir);
        state.server = None;
        state.save(dir)?;
        let code = result?;
        let interrupted = code == 130 || exec.interrupted();
        // The run is recorded before a failed teardown is reported: its folder is complete,
        // and `--resume` must not set it aside and measure it again.
        if !interrupted {
            state.mark_done(RunState {
                id: run.id.clone(),
                config: c.name.clone(),
                rep: run.rep,
                exit_code: code,
                started_unix_ms: started_ms,
                finished_unix_ms: crate::clock::unix_ms(),
                command: m.to_string(),
            });
            state.save(dir)?;
        }
        if let Err(e) = stopped {
            return Err(crate::Error::runtime(format!(
                "{}: stopping its server failed ({e}); the run's results are kept in {}",
                run.id,
                crate::fsutil::shown(&out)
            )));
        }
        if interrupted {
            crate::outln!("\n{}: interrupted; `--resume` runs it again", run.id);
            return Ok(130);
        }
    }
    Ok(0)
}
