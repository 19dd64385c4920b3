//! `overload experiment FILE.toml`: run a matrix of server configurations under the same
//! load and compare them in one report (docs/experiment.md).
use crate::experiment::{self, plan, report, resume, runner};
use crate::Error;
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args, Debug, Clone)]
pub struct ExperimentArgs {
    /// The experiment file (TOML: configurations, request, load plan, repetitions).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Experiment folder [default: runs/<UTC time>-<name>, with --resume the newest one].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print the runs, their commands and how long they take; run nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Scale every run down so the whole file takes about a minute (a smoke test).
    #[arg(long)]
    pub quick: bool,
    /// Go on with an interrupted experiment: finished runs are skipped.
    #[arg(long)]
    pub resume: bool,
    /// No progress bar and no per-step lines.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

fn folder_name(exp: &experiment::Experiment) -> String {
    if exp.quick {
        format!("{}-quick", exp.name)
    } else {
        exp.name.clone()
    }
}

pub fn run(a: ExperimentArgs) -> crate::Result<i32> {
    let exp = experiment::load(&a.file, a.quick)?;
    let name = folder_name(&exp);
    let dir = match (&a.out, a.resume) {
        (Some(d), _) => d.clone(),
        (None, false) => crate::usecase::results::default_dir(&name),
        (None, true) => resume::latest(Path::new("runs"), &name).ok_or_else(|| {
            Error::usage(format!(
                "--resume: no experiment folder runs/*-{name} found (give it with --out DIR)"
            ))
        })?,
    };
    if a.dry_run {
        crate::out!("{}", plan::describe(&exp, &crate::fsutil::shown(&dir)));
        return Ok(0);
    }
    let mut state = if a.resume {
        let s = resume::State::load(&dir)?;
        s.check(&exp, &dir)?;
        crate::outln!(
            "resuming {}: {} of {} runs finished",
            crate::fsutil::shown(&dir),
            s.runs.len(),
            s.planned.len()
        );
        s
    } else {
        if resume::State::path(&dir).exists() {
            return Err(Error::usage(format!(
                "--out: {} already holds an experiment; add --resume to go on with it",
                crate::fsutil::shown(&dir)
            )));
        }
        std::fs::create_dir_all(&dir).map_err(|e| {
            Error::usage(format!(
                "--out: cannot create '{}': {e}",
                crate::fsutil::shown(&dir)
            ))
        })?;
        let s = resume::State::new(&exp);
        s.save(&dir)?;
        s
    };
    crate::outln!(
        "overload experiment '{}': {} runs ({} configurations × {}), at most {}; results in {}",
        exp.name,
        state.planned.len(),
        exp.configs.len(),
        exp.repetitions,
        plan::fmt_long(plan::total_duration(&exp)),
        crate::fsutil::shown(&dir)
    );
    let result = runner::execute(
        &exp,
        &dir,
        &mut state,
        &runner::Options { quiet: a.quiet },
        &mut crate::runner::LocalEngine,
        &mut crate::experiment::servers::RealServers::default(),
    );
    // The report covers whatever finished, also after an error or an interruption.
    let path = report::write(&exp, &dir, &state)?;
    crate::out!("{}", report::table(&exp, &dir, &state));
    crate::outln!("\nreport:  {}", crate::fsutil::shown(&path));
    crate::outln!("results: {}", crate::fsutil::shown(&dir));
    let code = result?;
    if code == 0 && !state.complete {
        return Err(Error::runtime("the experiment ended with runs unfinished"));
    }
    Ok(code)
}
