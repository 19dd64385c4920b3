//! `overload sweep`: arguments into a `SweepConfig`, then `usecase::sweep`.
use super::load_args::{parse_share_arg, parse_think, ConnArgs, OpenLoopArgs, RequestArgs};
use super::load_args::{Share, StepArgs};
use super::observe_args::ObserveFlags;
use super::segment_args::SegmentArgs;
use crate::plan::steps::{parse_levels, parse_users};
use crate::units::parse_duration;
use crate::usecase::{sweep, Levels, SweepConfig};
use crate::Error;
use clap::Args;
use std::time::Duration;

#[derive(Args, Debug, Clone)]
pub struct SweepArgs {
    #[command(flatten)]
    pub request: RequestArgs,
    /// Open loop: rates to step through, e.g. 100:3000:100.
    ///
    /// start:stop:step or a list (100,200,400); rates take k and M (1k:10k:1k).
    #[arg(
        long,
        conflicts_with = "users",
        required_unless_present = "users",
        help_heading = "Load"
    )]
    pub rates: Option<String>,
    /// Closed loop: users to step through, e.g. 1:200:10.
    ///
    /// start:stop:step or a list (1,10,50).
    #[arg(long, help_heading = "Load")]
    pub users: Option<String>,
    #[command(flatten)]
    pub open: OpenLoopArgs,
    /// Closed loop: think time after each answer, D or LO..HI.
    ///
    /// Between a user's answer and its next request; a range is drawn uniformly.
    #[arg(long, value_parser = parse_think, value_name = "D[..D]", help_heading = "Load")]
    pub think: Option<(Duration, Duration)>,
    /// Steps to run after the saturation point.
    #[arg(long, value_name = "K", default_value_t = SweepConfig::default().past_saturation, help_heading = "Steps")]
    pub past_saturation: usize,
    /// Stop when a step fails more than this share.
    ///
    /// Of its requests, e.g. 20% or 0.2.
    #[arg(long, value_name = "SHARE", default_value_t = Share(SweepConfig::default().max_errors), value_parser = parse_share_arg, help_heading = "Steps")]
    pub max_errors: Share,
    /// Stop when a step's response-time p99 exceeds this.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, help_heading = "Steps")]
    pub max_p99: Option<Duration>,
    #[command(flatten)]
    pub steps: StepArgs,
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub observe: ObserveFlags,
    #[command(flatten)]
    pub segment: SegmentArgs,
    #[command(flatten)]
    pub audit: super::audit::SweepAuditArgs,
    #[command(flatten)]
    pub generators: super::generators_args::GeneratorsArgs,
}

impl SweepArgs {
    /// Checks the arguments into the library's configuration.
    pub fn config(self) -> crate::Result<SweepConfig> {
        let levels = match (&self.rates, &self.users) {
            (Some(r), None) => {
                if self.think.is_some() {
                    return Err(Error::usage(
                        "--think applies to the closed loop (--users), not to --rates",
                    ));
                }
                Levels::Rates(parse_levels(r, "--rates").map_err(Error::usage)?)
            }
            (None, Some(u)) => Levels::Users {
                users: parse_users(u).map_err(Error::usage)?,
                think: self.think,
            },
            _ => {
                return Err(Error::usage(
                    "give --rates (open loop) or --users (closed loop)",
                ))
            }
        };
        Ok(SweepConfig {
            levels,
            open: self.open.into(),
            past_saturation: self.past_saturation,
            max_errors: self.max_errors.0,
            max_p99: self.max_p99,
            timing: self.steps.timing(),
            slo: self.steps.slo.clone(),
            output: self.steps.output(),
            request: self.request.config()?,
            conn: self.conn.into(),
            observe: self.observe.into(),
            segment: self.segment.into(),
            audit: self.audit.audit,
        })
    }
}

pub fn run(args: SweepArgs) -> crate::Result<i32> {
    let live_view = args.steps.view.live_view();
    let generators = args.generators.clone();
    let mut cfg = args.config()?;
    cfg.output.live_view = live_view;
    let outcome = match generators.controller(&cfg.request, &cfg.conn, &cfg.segment)? {
        Some(mut c) => sweep::run(&cfg, &mut c)?,
        None => sweep::run(&cfg, &mut crate::runner::LocalEngine)?,
    };
    crate::out!("{outcome}");
    Ok(outcome.exit_code())
}
