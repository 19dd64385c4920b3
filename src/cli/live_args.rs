//! `run`'s live report page: `--live-port` and `--live-listen`, as the stepped commands have
//! them (`StepArgs`), in their own group so `run`'s arguments stay as they were.
use clap::Args;

#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Output")]
pub struct RunLiveArgs {
    /// Serve the run's report page on 127.0.0.1:PORT while it goes on, its per-second charts
    /// refreshed every second, at a secret path printed on the terminal (0: any free port);
    /// the results folder is then written too, as with --report.
    #[arg(long, value_name = "PORT")]
    pub live_port: Option<u16>,
    #[command(flatten)]
    pub listen: super::view_args::LiveListenArgs,
}
