//! The observe options as the user gives them (strings, so that a bad one is a one-line error
//! naming its flag, exit code 2), checked into an [`ObserveConfig`] by `to_config`. The
//! command line's flags (`cli::observe_args`) and the experiment files fill them in.
use std::path::PathBuf;

use super::agent::read_token;
use super::{AgentSpec, FpmSource, GroupSpec, ObserveConfig};
use crate::units::parse_duration;

#[derive(Debug, Clone, PartialEq)]
pub struct ObserveArgs {
    /// Process groups: NAME=REGEX or NAME=pid:N.
    pub watch: Vec<String>,
    /// PHP-FPM status URLs.
    pub fpm_status: Vec<String>,
    /// Sampling period.
    pub sample_every: String,
    /// Agents on other hosts: [NAME=]URL.
    pub agent: Vec<String>,
    /// File holding the agents' bearer token.
    pub agent_token_file: Option<PathBuf>,
    /// TCP port to watch on this host; `None`: the target URL's port.
    pub observe_port: Option<String>,
}

impl Default for ObserveArgs {
    fn default() -> Self {
        ObserveArgs {
            watch: Vec::new(),
            fpm_status: Vec::new(),
            sample_every: "1s".into(),
            agent: Vec::new(),
            agent_token_file: None,
            observe_port: None,
        }
    }
}

impl ObserveArgs {
    /// Checks the flags; `target_port` is watched unless --observe-port says otherwise.
    pub fn to_config(&self, target_port: u16) -> crate::Result<ObserveConfig> {
        let usage = crate::Error::usage;
        let every = parse_duration(&self.sample_every)
            .map_err(|e| usage(format!("--sample-every: {e}")))?;
        if every < std::time::Duration::from_millis(10) {
            return Err(usage(format!(
                "--sample-every: must be at least 10ms, got '{}'",
                self.sample_every
            )));
        }
        let groups = self
            .watch
            .iter()
            .map(|w| GroupSpec::parse(w).map_err(|e| usage(format!("--watch: {e}"))))
            .collect::<crate::Result<Vec<_>>>()?;
        let mut names: Vec<&str> = groups.iter().map(|g| g.name.as_str()).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(usage(format!("--watch: the name '{}' is used twice", w[0])));
        }
        let fpm = self
            .fpm_status
            .iter()
            .map(|u| FpmSource::parse(u).map_err(|e| usage(format!("--fpm-status: {e}"))))
            .collect::<crate::Result<Vec<_>>>()?;
        let port = match &self.observe_port {
            Some(p) => match p.trim().parse::<u16>() {
                Ok(n) if n > 0 => n,
                _ => {
                    return Err(usage(format!(
                        "--observe-port: expected a port 1-65535, got '{p}'"
                    )))
                }
            },
            None => target_port,
        };
        let token = match (&self.agent_token_file, self.agent.is_empty()) {
            (_, true) => String::new(),
            (Some(f), false) => read_token(f).map_err(|e| {
                usage(
                    e.to_string()
                        .replacen("--token-file", "--agent-token-file", 1),
                )
            })?,
            (None, false) => {
                return Err(usage("--agent: needs --agent-token-file FILE".into()));
            }
        };
        let agents = self
            .agent
            .iter()
            .map(|a| AgentSpec::parse(a, &token).map_err(|e| usage(format!("--agent: {e}"))))
            .collect::<crate::Result<Vec<_>>>()?;
        let mut an: Vec<&str> = agents.iter().map(|a| a.name.as_str()).collect();
        an.sort_unstable();
        if let Some(w) = an.windows(2).find(|w| w[0] == w[1]) {
            return Err(usage(format!(
                "--agent: the name '{}' is used twice (name them: NAME=URL)",
                w[0]
            )));
        }
        Ok(ObserveConfig {
            every,
            groups,
            fpm,
            port: (port > 0).then_some(port),
            agents,
            ..ObserveConfig::default()
        })
    }
}
