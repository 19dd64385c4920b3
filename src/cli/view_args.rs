//! How a run is shown while it goes, and what it writes beside its results folder (options
//! of every run kind: run, sweep, capacity, demo): the live
//! view on the terminal (`--no-tui`), the live report page on any address (`--live-listen`),
//! HdrHistogram's interval log (`--hdr-log`).
use crate::usecase::Output;
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Output")]
pub struct ViewArgs {
    /// Plain progress lines instead of the live view.
    ///
    /// The live view shows when standard output and error are terminals (not with --quiet); its keys: q quits as Ctrl-C does (what ran
    /// is recorded, the report written), n ends the step in progress and goes on to the next,
    /// the keys + and - (or the arrows) raise and lower the load by --control-step, p pauses
    /// and resumes it (live control: every change is recorded and marked on the report).
    #[arg(long)]
    pub no_tui: bool,
    /// When the run ends, write HdrHistogram's interval log (one interval per step) to FILE,
    /// as `overload report --format hdr-log` does; `run` then writes its results folder too.
    #[arg(long, value_name = "FILE")]
    pub hdr_log: Option<PathBuf>,
    /// A title for the run, in free words (at most 200 bytes, no control characters): the
    /// banner, the terminal view's header, run.json and the report's title say it.
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    #[command(flatten)]
    pub push: super::push_args::PushArgs,
    /// Take changes of the load while it runs on [ADDR:]PORT (loopback unless an address is
    /// given), at a secret path printed on the terminal.
    ///
    /// POST /TOKEN/rate?to=N, /TOKEN/rate?by=+N (or -N), /TOKEN/users?to=N|by=±N,
    /// /TOKEN/pause, /TOKEN/resume; GET /TOKEN/state (JSON). A wrong path answers 404 and
    /// changes nothing; a level above the cap (--control-max) is refused with the reason.
    /// The live view's keys do the same: + or Up raises, - or Down lowers by --control-step,
    /// p pauses and resumes.
    #[arg(long, value_name = "[ADDR:]PORT", value_parser = parse_control_addr)]
    pub control_port: Option<SocketAddr>,
    /// The step of the live view's + and - keys, in the run's unit (req/s or users);
    /// default: 10% of the level, at least 1.
    #[arg(long, value_name = "N", value_parser = parse_level)]
    pub control_step: Option<f64>,
    /// The highest level live control may set (req/s or users); default: 10× the planned
    /// level (a ramp's peak). A port must not turn the tool into a flood.
    #[arg(long, value_name = "N", value_parser = parse_level)]
    pub control_max: Option<f64>,
}

impl ViewArgs {
    /// The run's output options these flags set (every run kind flattens them); the rest
    /// (`--out`, `--name`, `-q`, the live page) is filled by the command.
    pub fn output(&self) -> Output {
        Output {
            hdr_log: self.hdr_log.clone(),
            title: self.title.clone(),
            push: self.push.clone().targets(),
            control: crate::usecase::ControlConfig {
                port: self.control_port,
                step: self.control_step,
                max: self.control_max,
            },
            ..Output::default()
        }
    }

    /// Whether to show the live view: asked for, and a terminal to show it on.
    pub fn live_view(&self) -> bool {
        !self.no_tui && crate::tui::available()
    }
}

#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Output")]
pub struct LiveListenArgs {
    /// Serve the live report page on ADDR (e.g. 127.0.0.1:8089, [::1]:0, 0.0.0.0:8089 to
    /// let other hosts in), at a secret path printed on the terminal; --live-port binds
    /// loopback only.
    #[arg(long, value_name = "ADDR", conflicts_with = "live_port", value_parser = parse_addr)]
    pub live_listen: Option<SocketAddr>,
}

fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    s.parse().map_err(|_| {
        format!("'{s}': give an IP address and a port, e.g. 127.0.0.1:8089 or [::1]:8089")
    })
}

/// `--control-port`'s `[ADDR:]PORT`: a bare port is loopback's.
fn parse_control_addr(s: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, port)));
    }
    s.parse().map_err(|_| {
        format!("'{s}': give a port (loopback), or an address and a port, e.g. 8090, 127.0.0.1:8090 or [::1]:8090")
    })
}

/// A level of live control: a number above 0 (1.5k and 2M as --rate reads them).
fn parse_level(s: &str) -> Result<f64, String> {
    crate::units::parse_rate(s)
}
