//! `--access-log FILE` and its options (run): an nginx or Apache log as the request mix,
//! weighted by its counts, or replayed on its own clock (`--replay-speed`); docs/replay.md.
use crate::plan::access_log::LogFormat;
use crate::units::parse_speed;
use crate::usecase::config::AccessLogConfig;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Requests")]
pub struct AccessLogArgs {
    /// Send the requests of an nginx/Apache access log.
    ///
    /// Combined or common format, to the one URL's server: each URL as often as the log has
    /// it, in random order; with --replay-speed, on the log's own clock (docs/replay.md).
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with = "urls_file",
        group = "import"
    )]
    pub access_log: Option<PathBuf>,
    /// The log's format: combined or common [default: detected per line].
    #[arg(long, value_name = "FORMAT", value_parser = LogFormat::parse, requires = "access_log")]
    pub log_format: Option<LogFormat>,
    /// Open loop on the log's clock, X times as fast (2 = twice as fast); the run lasts the
    /// log's span / X unless --duration cuts it.
    #[arg(long, value_name = "X", value_parser = parse_speed, requires = "access_log",
          conflicts_with_all = ["rate", "users", "concurrency", "think"])]
    pub replay_speed: Option<f64>,
}

impl AccessLogArgs {
    /// `allow_unsafe_methods`: `--allow-unsafe-methods` (with the scenario imports' flags,
    /// since every import reads it).
    pub fn config(self, allow_unsafe_methods: bool) -> Option<AccessLogConfig> {
        self.access_log.map(|path| AccessLogConfig {
            path,
            format: self.log_format,
            allow_unsafe_methods,
            replay_speed: self.replay_speed,
        })
    }
}
