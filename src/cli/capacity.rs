//! `overload capacity`: arguments into a `CapacityConfig`, then `usecase::capacity`.
use super::load_args::{parse_share_arg, ConnArgs, OpenLoopArgs, RequestArgs, Share, StepArgs};
use super::observe_args::ObserveFlags;
use super::segment_args::SegmentArgs;
use crate::units::parse_rate;
use crate::usecase::{capacity, CapacityConfig};
use clap::Args;

#[derive(Args, Debug, Clone)]
pub struct CapacityArgs {
    #[command(flatten)]
    pub request: RequestArgs,
    /// First rate probed (req/s); it doubles until one fails.
    ///
    /// Doubles until a probe fails the SLO, then bisects.
    #[arg(long, value_name = "RATE", default_value_t = CapacityConfig::default().start, value_parser = parse_rate, help_heading = "Search")]
    pub start: f64,
    /// Highest rate probed (req/s).
    #[arg(long, value_name = "RATE", default_value_t = CapacityConfig::default().max, value_parser = parse_rate, help_heading = "Search")]
    pub max: f64,
    /// Stop bisecting at this width of the bracket.
    ///
    /// When the bracket is narrower than this share of its low end.
    #[arg(long, value_name = "SHARE", default_value_t = Share(CapacityConfig::default().precision), value_parser = parse_share_arg, help_heading = "Search")]
    pub precision: Share,
    /// Runs of each end of the final bracket.
    ///
    /// The capacity (the highest rate that met) holds only if every run met; their spread
    /// is printed.
    #[arg(long, value_name = "K", default_value_t = CapacityConfig::default().repeat, help_heading = "Search")]
    pub repeat: usize,
    #[command(flatten)]
    pub open: OpenLoopArgs,
    #[command(flatten)]
    pub steps: StepArgs,
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub observe: ObserveFlags,
    #[command(flatten)]
    pub segment: SegmentArgs,
    #[command(flatten)]
    pub generators: super::generators_args::GeneratorsArgs,
}

impl CapacityArgs {
    /// Checks the arguments into the library's configuration.
    pub fn config(self) -> crate::Result<CapacityConfig> {
        let a = self;
        Ok(CapacityConfig {
            start: a.start,
            max: a.max,
            precision: a.precision.0,
            repeat: a.repeat,
            open: a.open.into(),
            timing: a.steps.timing(),
            slo: a.steps.slo.clone(),
            output: a.steps.output(),
            request: a.request.config()?,
            conn: a.conn.into(),
            observe: a.observe.into(),
            segment: a.segment.into(),
        })
    }
}

pub fn run(args: CapacityArgs) -> crate::Result<i32> {
    let live_view = args.steps.view.live_view();
    let generators = args.generators.clone();
    let mut cfg = args.config()?;
    cfg.output.live_view = live_view;
    let outcome = match generators.controller(&cfg.request, &cfg.conn, &cfg.segment)? {
        Some(mut c) => capacity::run(&cfg, &mut c)?,
        None => capacity::run(&cfg, &mut crate::runner::LocalEngine)?,
    };
    crate::out!("{outcome}");
    Ok(outcome.exit_code())
}
