//! `overload agent`'s flags for the generator mode (`--generate`, its allow-list and limits)
//! and for the control channel's TLS; see docs/scale-out.md.
use crate::scale::agent::{allow_target, AllowedTarget, Generator, Limits};
use crate::scale::tls::{self, Identity};
use crate::units::parse_duration;
use crate::Error;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Args, Debug, Clone, Default)]
pub struct GenerateArgs {
    /// Also run load steps a controller sends (`sweep|capacity --generators FILE`); off unless
    /// given. Needs --allow-target.
    #[arg(long)]
    pub generate: bool,
    /// --generate: a target the steps may load, HOST:PORT (resolved now; repeatable). A step
    /// for any other address is refused.
    #[arg(long = "allow-target", value_name = "HOST:PORT")]
    pub allow_target: Vec<String>,
    /// --generate: most requests per second this agent sends in a step.
    #[arg(long, value_name = "RATE", default_value_t = Limits::default().max_rate)]
    pub max_rate: f64,
    /// --generate: longest warm-up + step (and request timeout) this agent runs.
    #[arg(long, value_name = "DURATION", default_value = "5m")]
    pub max_duration: String,
    /// --generate: most connections (open loop) or users (closed loop) this agent holds.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_connections)]
    pub max_connections: usize,
    /// --generate: make the steps' connections from these addresses of this host (a list,
    /// range or CIDR block; see `run --source`).
    #[arg(long, value_name = "ADDRS", value_parser = crate::engine::source::Sources::parse)]
    pub source: Option<crate::engine::source::Sources>,
    /// Serve over TLS with this certificate chain (PEM); with --tls-key.
    #[arg(
        long,
        value_name = "FILE",
        requires = "tls_key",
        conflicts_with = "tls_self_signed"
    )]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serve over TLS with a certificate made at start; its SHA-256 fingerprint is printed
    /// for the controller to pin.
    #[arg(long)]
    pub tls_self_signed: bool,
}

impl GenerateArgs {
    /// The generator, when --generate is given; the generator flags without it are refused.
    pub fn generator(&self) -> crate::Result<Option<Generator>> {
        if !self.generate {
            let stray = !self.allow_target.is_empty()
                || self.max_rate != Limits::default().max_rate
                || self.max_duration != "5m"
                || self.max_connections != Limits::default().max_connections
                || self.source.is_some();
            return if stray {
                Err(Error::usage(
                    "--allow-target, --source and the --max-* limits apply to --generate",
                ))
            } else {
                Ok(None)
            };
        }
        let allowed = self
            .allow_target
            .iter()
            .map(|t| allow_target(t))
            .collect::<Result<Vec<AllowedTarget>, String>>()
            .map_err(Error::usage)?;
        let max_duration = parse_duration(&self.max_duration)
            .map_err(|e| Error::usage(format!("--max-duration: {e}")))?;
        if max_duration.is_zero() || max_duration > Duration::from_secs(24 * 3600) {
            return Err(Error::usage("--max-duration: use above zero, at most 24h"));
        }
        if !(self.max_rate > 0.0 && self.max_rate.is_finite()) {
            return Err(Error::usage("--max-rate: use a rate above zero"));
        }
        if self.max_connections == 0 || self.max_connections > 1_000_000 {
            return Err(Error::usage("--max-connections: use 1 to 1000000"));
        }
        Generator::new(
            allowed,
            Limits {
                max_rate: self.max_rate,
                max_duration,
                max_connections: self.max_connections,
            },
        )
        .and_then(|g| g.with_source(self.source.clone()))
        .map(Some)
        .map_err(Error::usage)
    }

    /// The TLS identity, when asked for; a self-signed certificate names the loopback
    /// addresses, the listen address and this host's name.
    pub fn identity(&self, listen: std::net::SocketAddr) -> crate::Result<Option<Identity>> {
        if let (Some(c), Some(k)) = (&self.tls_cert, &self.tls_key) {
            return tls::from_files(c, k).map(Some).map_err(Error::usage);
        }
        if !self.tls_self_signed {
            return Ok(None);
        }
        let mut names = vec![
            "localhost".to_string(),
            "127.0.0.1".to_string(),
            "::1".to_string(),
        ];
        if !listen.ip().is_unspecified() && !listen.ip().is_loopback() {
            names.push(listen.ip().to_string());
        }
        let host = crate::store::host::host_info().hostname;
        if !host.is_empty() && !names.contains(&host) {
            names.push(host);
        }
        tls::self_signed(&names).map(Some).map_err(Error::runtime)
    }
}
