//! `--generators FILE` and `--on-generator-loss` of `sweep` and `capacity`: the live
//! controller over generator agents (docs/scale-out.md).
use crate::scale::channel::{read_generators, Http};
use crate::scale::controller::{Controller, Mixture, OnLoss};
use crate::scale::wire::{WireConn, WirePick, WireRequest};
use crate::usecase::config::{ConnConfig, RequestConfig, SegmentConfig};
use crate::Error;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Scale-out")]
pub struct GeneratorsArgs {
    /// Send every step to the generator agents (`agent --generate`) listed in FILE, one a
    /// line: `URL token-file=FILE [fingerprint=sha256:…|cacert=FILE]`; each runs its segment
    /// and the merged step decides the next one.
    #[arg(long, value_name = "FILE")]
    pub generators: Option<PathBuf>,
    /// --generators: when a generator is lost mid-step, mark the step and stop (results
    /// kept), or continue with the others.
    #[arg(long, value_name = "stop|continue", default_value = "stop", value_parser = OnLoss::parse)]
    pub on_generator_loss: OnLoss,
}

impl GeneratorsArgs {
    /// The controller, when --generators is given: the agents' list read and every agent
    /// asked what it allows before the first step.
    pub fn controller(
        &self,
        request: &RequestConfig,
        conn: &ConnConfig,
        segment: &SegmentConfig,
    ) -> crate::Result<Option<Controller<Http>>> {
        let Some(file) = &self.generators else {
            if self.on_generator_loss != OnLoss::default() {
                return Err(Error::usage("--on-generator-loss applies to --generators"));
            }
            return Ok(None);
        };
        if !segment.segment.is_whole() || segment.start_at_ms.is_some() {
            return Err(Error::usage(
                "--generators cuts the plan itself: leave out --segment and --start-at",
            ));
        }
        let specs = request.specs()?;
        conn.validate()?;
        // The plan's own mistakes (a weighted mix, a client key, an unreadable --cacert)
        // before any agent is asked.
        let mix = Mixture {
            requests: specs.iter().map(WireRequest::of).collect(),
            pick: WirePick::of(request.pick).ok_or_else(|| {
                Error::usage(
                    "--generators: a weighted mix (an access log) cannot be sent to agents",
                )
            })?,
            conn: WireConn::of(conn)?,
            ok_status: request.ok_status,
        };
        let http = Http {
            generators: read_generators(file)?,
        };
        http.check()?;
        Ok(Some(Controller::new(http, mix, self.on_generator_loss)))
    }
}
