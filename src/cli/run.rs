//! `overload run`: arguments into a `RunConfig`, then `usecase::run`.
use super::load_args::RequestArgs;
use super::load_args::{parse_dur, parse_think, parse_usize_count, ConnArgs, Dur, OpenLoopArgs};
use super::observe_args::ObserveFlags;
use super::segment_args::SegmentArgs;
use crate::plan::stages::Stages;
use crate::units::{parse_count, parse_duration, parse_rate};
use crate::usecase::{run, RunConfig, RunLoad, DEFAULT_DURATION, DEFAULT_USERS};
use crate::Error;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    #[command(flatten)]
    pub request: RequestArgs,
    /// Open loop: requests per second, e.g. 2000, 1.5k (wrk2: -R).
    ///
    /// On one global schedule; with a scenario, sessions started per second (httperf:
    /// --wsess).
    #[arg(long, short = 'R', value_parser = parse_rate, conflicts_with = "users", help_heading = "Load")]
    pub rate: Option<f64>,
    /// Open loop: a ramping rate, e.g. '0s:50, 60s:600' (DURATION:TARGET, …).
    ///
    /// Ramp linearly to each TARGET req/s over each DURATION, from 0 (a 0s stage jumps), e.g.
    /// '30s:100, 2m:2000, 1m:2000, 30s:0'. Arrivals stay on one exact schedule (constant or
    /// Poisson); the run lasts the sum of the stages (no --duration; --warmup holds the
    /// starting level), and the summary finds where throughput left the offered line (the
    /// knee, ± the ramp's slope × 3 s).
    #[arg(long, value_name = "STAGES", value_parser = parse_stages, help_heading = "Load")]
    pub stages: Option<Stages>,
    /// Closed loop: ramping users, e.g. '1m:200, 30s:0' (DURATION:TARGET, …).
    ///
    /// Ramp linearly to each TARGET users over each DURATION, as --stages does the rate;
    /// users start along the ramp and stop after their current request when it falls.
    #[arg(long, value_name = "STAGES", value_parser = parse_stages, help_heading = "Load")]
    pub user_stages: Option<Stages>,
    #[command(flatten)]
    pub open: OpenLoopArgs,
    /// Closed loop: users, each waiting for its answer [default: 10].
    ///
    /// Each user holds one connection.
    #[arg(long, value_name = "N", value_parser = parse_usize_count, help_heading = "Load")]
    pub users: Option<usize>,
    /// Users, as ab, hey and wrk mean -c; with --rate, connections.
    ///
    /// Concurrency as ab, hey and wrk mean it: the users of the closed loop; with --rate, the
    /// most connections (wrk2's -c).
    #[arg(short = 'c', long, value_name = "N", value_parser = parse_usize_count, conflicts_with_all = ["users", "connections"], help_heading = "Load")]
    pub concurrency: Option<usize>,
    /// Closed loop: think time after each answer, D or LO..HI.
    ///
    /// Between a user's answer and its next request; a range is drawn uniformly.
    #[arg(long, value_parser = parse_think, value_name = "D[..D]", help_heading = "Load")]
    pub think: Option<(Duration, Duration)>,
    /// Length of the measured run [default: 10s] (wrk: -d).
    ///
    /// After the warm-up; 10 s unless --requests is given (hey: -z).
    #[arg(long, short = 'd', short_alias = 'z', value_name = "DURATION", value_parser = parse_duration, help_heading = "Load")]
    pub duration: Option<Duration>,
    /// Stop after this many requests, e.g. 10k (ab: -n).
    ///
    /// Counted requests; whichever of --duration/--requests ends first (hey: -n).
    #[arg(long, short = 'n', value_name = "N", value_parser = parse_count, help_heading = "Load")]
    pub requests: Option<u64>,
    /// Load sent before measuring starts (not counted).
    #[arg(long, value_name = "DURATION", default_value_t = Dur(RunConfig::default().warmup), value_parser = parse_dur, help_heading = "Load")]
    pub warmup: Dur,
    /// SLO, e.g. 'p99<500ms,errors<1%'; exit code 3 when it fails.
    ///
    /// Service-level objective: conditions on mean/p50/p90/p99/p999/max, errors and goodput,
    /// comma-separated; a request's name before a colon limits one to that request.
    #[arg(long, help_heading = "Output")]
    pub slo: Option<String>,
    /// Write the summary as JSON to FILE (`-`: standard output).
    ///
    /// One JSON object (format: docs/results.md); with `-` the summary goes to standard
    /// error.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    pub json: Option<PathBuf>,
    /// No progress line while running.
    #[arg(long, short = 'q', help_heading = "Output")]
    pub quiet: bool,
    /// Store the run as a results folder, with report.html.
    ///
    /// As sweep writes it (one step, per-second series), so `overload report DIR` can chart
    /// the run.
    #[arg(long, value_name = "DIR", help_heading = "Output")]
    pub out: Option<PathBuf>,
    /// Write a results folder and its report.html in runs/.
    ///
    /// The folder: runs/<UTC time>-<name>.
    #[arg(long, help_heading = "Output")]
    pub report: bool,
    /// Name of the run in its results folder [default: from the URL].
    #[arg(long, help_heading = "Output")]
    pub name: Option<String>,
    /// Print the percentile distribution too (wrk --latency).
    ///
    /// Of the response times, after the summary.
    #[arg(long, help_heading = "Output")]
    pub latency: bool,
    #[command(flatten)]
    pub view: super::view_args::ViewArgs,
    #[command(flatten)]
    pub live: super::live_args::RunLiveArgs,
    #[command(flatten)]
    pub conn: ConnArgs,
    #[command(flatten)]
    pub observe: ObserveFlags,
    #[command(flatten)]
    pub segment: SegmentArgs,
    #[command(flatten)]
    pub access_log: super::access_log_args::AccessLogArgs,
}

impl RunArgs {
    /// Checks the arguments into the library's configuration.
    pub fn config(mut self) -> crate::Result<RunConfig> {
        let stages = self.stages_of()?;
        if let Some(c) = self.concurrency {
            match self.rate {
                Some(_) => self.open.connections = c,
                None => self.users = Some(c),
            }
        }
        let load = match (self.rate, &stages) {
            (_, Some((true, st))) => RunLoad::Users {
                users: st.peak() as usize,
                think: self.think,
            },
            (_, Some((false, st))) => {
                if self.think.is_some() {
                    return Err(Error::usage(
                        "--think applies to the closed loop (--user-stages), not to --stages",
                    ));
                }
                RunLoad::Rate(st.peak())
            }
            (Some(rate), None) => {
                if self.think.is_some() {
                    return Err(Error::usage(
                        "--think applies to the closed loop (--users), not to --rate",
                    ));
                }
                RunLoad::Rate(rate)
            }
            (None, None) => RunLoad::Users {
                users: self.users.unwrap_or(DEFAULT_USERS),
                think: self.think,
            },
        };
        // The help texts above say these defaults in words: "[default: 10]", "10s".
        // A replay lasts the log's span unless cut (the library knows it once the log is read).
        let replaying = self.access_log.replay_speed.is_some();
        let duration = match (self.duration, self.requests) {
            // Stages last their sum.
            (None, None) if !replaying && stages.is_none() => Some(DEFAULT_DURATION),
            (d, _) => d,
        };
        let access_log = self
            .access_log
            .config(self.request.scenario.allow_unsafe_methods);
        Ok(RunConfig {
            load,
            stages: stages.map(|s| s.1),
            open: self.open.into(),
            duration,
            requests: self.requests,
            warmup: self.warmup.0,
            slo: self.slo,
            json: self.json,
            output: crate::usecase::Output {
                quiet: self.quiet,
                out: self.out,
                name: self.name,
                live_view: false,
                live_port: self.live.live_port,
                live_listen: self.live.listen.live_listen,
                ..self.view.output()
            },
            report: self.report,
            request: crate::usecase::config::RequestConfig {
                access_log,
                ..self.request.config()?
            },
            conn: self.conn.into(),
            observe: self.observe.into(),
            segment: self.segment.into(),
        })
    }
}

fn parse_stages(s: &str) -> Result<Stages, String> {
    Stages::parse(s)
}

impl RunArgs {
    /// The stages given, and whether they are users' (`--user-stages`); a plan form that
    /// sets the level too is refused, naming it.
    fn stages_of(&mut self) -> crate::Result<Option<(bool, Stages)>> {
        let (users, st) = match (self.stages.take(), self.user_stages.take()) {
            (Some(_), Some(_)) => {
                return Err(Error::usage(
                    "--stages ramps the rate, --user-stages the users: give one",
                ))
            }
            (Some(s), None) => (false, s),
            (None, Some(s)) => (true, s),
            (None, None) => return Ok(None),
        };
        let flag = if users { "--user-stages" } else { "--stages" };
        let level = if users { "users" } else { "rate" };
        let clash = [
            (self.rate.is_some(), "--rate"),
            (self.users.is_some(), "--users"),
            (self.concurrency.is_some() && users, "-c/--concurrency"),
            (self.duration.is_some(), "--duration"),
        ];
        if let Some((_, other)) = clash.iter().find(|c| c.0) {
            let what = if *other == "--duration" {
                "the run's length (the sum of its stages)".to_string()
            } else {
                format!("the {level} along the ramp")
            };
            return Err(Error::usage(format!(
                "{flag} sets {what}; leave out {other}"
            )));
        }
        // -c with --stages: the most connections, as with --rate.
        if let (Some(c), false) = (self.concurrency.take(), users) {
            self.open.connections = c;
        }
        Ok(Some((users, st)))
    }
}

pub fn run(args: RunArgs) -> crate::Result<i32> {
    let latency = args.latency;
    let live_view = args.view.live_view();
    let mut config = args.config()?;
    config.output.live_view = live_view;
    let outcome = run::run(&config)?;
    let mut text = outcome.to_string();
    let h = &outcome.outcome.recorder.response_time;
    if latency && !h.is_empty() {
        text.push_str("\n  Latency distribution (ms)\n\n");
        text.push_str(&crate::report::hist::distribution_text(h));
    }
    // With `--json -` standard output carries the JSON alone, for a pipe into jq.
    if config
        .json
        .as_deref()
        .is_some_and(crate::report::export::is_stdout)
    {
        crate::eout!("{text}");
    } else {
        crate::out!("{text}");
    }
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

    fn config(args: &[&str]) -> RunConfig {
        let mut argv = vec!["x"];
        argv.extend_from_slice(args);
        W::try_parse_from(argv).unwrap().a.config().unwrap()
    }

    /// ab's and hey's `-n 1000 -c 10`, wrk's `-t2 -c100 -d30s`, wrk2's `-R`.
    #[test]
    fn other_tools_flags_mean_what_they_mean_there() {
        let c = config(&["-n", "1000", "-c", "10", "http://127.0.0.1:1/"]);
        assert_eq!(c.requests, Some(1000));
        assert_eq!(c.duration, None, "-n alone runs until the count");
        assert_eq!(
            c.load,
            RunLoad::Users {
                users: 10,
                think: None
            }
        );
        let c = config(&["-t2", "-c100", "-d30s", "-k", "http://127.0.0.1:1/"]);
        assert_eq!(c.conn.threads, Some(2));
        assert!(c.conn.keep_alive);
        assert_eq!(c.duration, Some(Duration::from_secs(30)));
        assert_eq!(
            c.load,
            RunLoad::Users {
                users: 100,
                think: None
            }
        );
        // With a rate, -c is wrk2's connection count.
        let c = config(&["-R", "2k", "-c", "50", "-z", "5s", "http://127.0.0.1:1/"]);
        assert_eq!(c.load, RunLoad::Rate(2000.0));
        assert_eq!(c.open.connections, 50);
        assert_eq!(c.duration, Some(Duration::from_secs(5)));
        let c = config(&["-n", "10M", "-m", "POST", "http://127.0.0.1:1/"]);
        assert_eq!(c.requests, Some(10_000_000));
        assert_eq!(c.request.method, "POST");
        // -c and --users say the same thing twice: refused rather than one silently winning.
        assert!(W::try_parse_from(["x", "-c", "5", "--users", "6", "http://h/"]).is_err());
        assert!(W::try_parse_from(["x", "-k", "--no-keep-alive", "http://h/"]).is_err());
    }
}
