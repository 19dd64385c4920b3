//! `overload run`: arguments into a `RunConfig`, then `usecase::run`.
use super::load_args::{parse_dur, parse_think, ConnArgs, Dur, OpenLoopArgs, RequestArgs};
use super::observe_args::ObserveFlags;
use super::segment_args::SegmentArgs;
use crate::units::{parse_duration, parse_rate};
use crate::usecase::run::{self, RunConfig, RunLoad, DEFAULT_DURATION, DEFAULT_USERS};
use crate::Error;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub request: RequestArgs,
    /// Open loop: requests per second on one global schedule (e.g. 2000, 1.5k).
    #[arg(long, value_parser = parse_rate, conflicts_with = "users")]
    pub rate: Option<f64>,
    #[command(flatten)]
    pub open: OpenLoopArgs,
    /// Closed loop: users, each holding one connection and waiting for its answer [default: 10].
    #[arg(long)]
    pub users: Option<usize>,
    /// Closed loop: think time between a user's answer and its next request, `D` or `LO..HI`.
    #[arg(long, value_parser = parse_think, value_name = "DURATION[..DURATION]")]
    pub think: Option<(Duration, Duration)>,
    /// Length of the measured run (after warm-up) [default: 10s unless --requests is given].
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// Stop after this many counted requests (whichever of --duration/--requests ends first).
    #[arg(long)]
    pub requests: Option<u64>,
    /// Load sent before measuring starts (not counted).
    #[arg(long, default_value_t = Dur(RunConfig::default().warmup), value_parser = parse_dur)]
    pub warmup: Dur,
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub observe: ObserveFlags,
    #[command(flatten)]
    pub segment: SegmentArgs,
    /// Service-level objective, e.g. 'p99<500ms,errors<1%'; exit code 3 when it fails.
    #[arg(long)]
    pub slo: Option<String>,
    /// Write the summary as one JSON object (format: docs/results.md).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// No progress line while running.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

impl RunArgs {
    /// Checks the arguments into the library's configuration.
    pub fn config(self) -> crate::Result<RunConfig> {
        let load = match self.rate {
            Some(rate) => {
                if self.think.is_some() {
                    return Err(Error::usage(
                        "--think applies to the closed loop (--users), not to --rate",
                    ));
                }
                RunLoad::Rate(rate)
            }
            None => RunLoad::Users {
                users: self.users.unwrap_or(DEFAULT_USERS),
                think: self.think,
            },
        };
        // The help texts above say these defaults in words: "[default: 10]", "10s".
        let duration = match (self.duration, self.requests) {
            (None, None) => Some(DEFAULT_DURATION),
            (d, _) => d,
        };
        Ok(RunConfig {
            load,
            open: self.open.into(),
            duration,
            requests: self.requests,
            warmup: self.warmup.0,
            slo: self.slo,
            json: self.json,
            quiet: self.quiet,
            request: self.request.into(),
            conn: self.conn.into(),
            observe: self.observe.into(),
            segment: self.segment.into(),
        })
    }
}

pub fn run(args: RunArgs) -> crate::Result<i32> {
    let outcome = run::run(&args.config()?)?;
    crate::out!("{outcome}");
    if let Some(line) = outcome.failure() {
        crate::eoutln!("overload: {line}");
    }
    Ok(outcome.exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct W {
        #[command(flatten)]
        a: RunArgs,
    }

    #[test]
    fn help_defaults_match_the_library() {
        // The literals in the help text of --users and --duration are words, not values:
        // they must say what the library does.
        let c = W::try_parse_from(["x", "http://127.0.0.1:1/"])
            .unwrap()
            .a
            .config()
            .unwrap();
        assert_eq!(
            c.load,
            RunLoad::Users {
                users: 10,
                think: None
            }
        );
        assert_eq!(c.duration, Some(Duration::from_secs(10)));
        assert_eq!(
            c,
            RunConfig {
                request: c.request.clone(),
                ..RunConfig::default()
            }
        );
    }
}
