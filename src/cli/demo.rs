//! `overload demo`: arguments into a `DemoConfig`, then `usecase::demo`.
use super::load_args::{parse_dur, Dur};
use crate::usecase::{demo, DemoConfig};
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Target workers (each request holds one for its whole service time).
    #[arg(long, default_value_t = DemoConfig::default().workers)]
    pub workers: usize,
    /// Service time of each request, in ms (the target's /sleep?ms=).
    #[arg(long, default_value_t = DemoConfig::default().service_ms)]
    pub service_ms: u64,
    /// Measured length of each step.
    #[arg(long, default_value_t = Dur(DemoConfig::default().step), value_parser = parse_dur)]
    pub step: Dur,
    /// Results folder [default: runs/<UTC time>-demo].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// No progress bar and no per-step lines.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    #[command(flatten)]
    pub view: super::view_args::ViewArgs,
}

pub fn run(a: DemoArgs) -> crate::Result<i32> {
    let cfg = DemoConfig {
        workers: a.workers,
        service_ms: a.service_ms,
        step: a.step.0,
        output: crate::usecase::Output {
            out: a.out,
            quiet: a.quiet,
            live_view: a.view.live_view(),
            ..a.view.output()
        },
    };
    let outcome = demo::run(&cfg, &mut crate::runner::LocalEngine, |t| {
        crate::out!("{t}")
    })?;
    crate::out!("{outcome}");
    Ok(outcome.exit_code())
}
