//! The observe options as the user gives them (strings, so that a bad one is a one-line error
//! naming its flag, exit code 2), checked into an [`ObserveConfig`] by `to_config`. The
//! command line's flags (`cli::observe_args`) and the experiment files fill them in.
use std::path::PathBuf;

use super::agent::read_token;
use super::{AgentSpec, ApacheSource, FpmSource, GroupSpec, MysqlConfig, ObserveConfig};
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
    /// Apache mod_status URLs.
    pub apache_status: Vec<String>,
    /// A MariaDB/MySQL server: USER@HOST:PORT, and the file holding its password.
    pub mysql: Option<String>,
    pub mysql_password_file: Option<PathBuf>,
    /// The link's speed (`1gbit`, `100mbit`), for the verdict.
    pub link_speed: Option<String>,
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
            apache_status: Vec::new(),
            mysql: None,
            mysql_password_file: None,
            link_speed: None,
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
        let apache = self
            .apache_status
            .iter()
            .map(|u| ApacheSource::parse(u).map_err(|e| usage(format!("--apache-status: {e}"))))
            .collect::<crate::Result<Vec<_>>>()?;
        let mysql = match &self.mysql {
            Some(m) => vec![MysqlConfig::parse(m, self.mysql_password_file.as_deref())
                .map_err(|e| usage(format!("--mysql: {e}")))?],
            None if self.mysql_password_file.is_some() => {
                return Err(usage(
                    "--mysql-password-file: needs --mysql USER@HOST:PORT".into(),
                ))
            }
            None => Vec::new(),
        };
        let link_bps = match &self.link_speed {
            Some(l) => Some(parse_link_speed(l).map_err(|e| usage(format!("--link-speed: {e}")))?),
            None => None,
        };
        Ok(ObserveConfig {
            every,
            groups,
            fpm,
            port: (port > 0).then_some(port),
            agents,
            apache,
            mysql,
            link_bps,
            ..ObserveConfig::default()
        })
    }
}

/// A link speed in bits/s: `1gbit`, `100Mbit/s`, `10g`, `2.5gbps`, `1e9`.
pub fn parse_link_speed(s: &str) -> Result<f64, String> {
    let t = s.trim().to_ascii_lowercase();
    let t = t
        .trim_end_matches("/s")
        .trim_end_matches("bps")
        .trim_end_matches("bit")
        .trim_end_matches('b');
    let (num, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1e3),
        Some('m') => (&t[..t.len() - 1], 1e6),
        Some('g') => (&t[..t.len() - 1], 1e9),
        Some('t') => (&t[..t.len() - 1], 1e12),
        _ => (t, 1.0),
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v * mult >= 1e3 => Ok(v * mult),
        _ => Err(format!(
            "expected a speed such as 1gbit or 100mbit (at least 1kbit), got '{s}'"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_speeds() {
        assert_eq!(parse_link_speed("1gbit"), Ok(1e9));
        assert_eq!(parse_link_speed("100Mbit/s"), Ok(100e6));
        assert_eq!(parse_link_speed("2.5gbps"), Ok(2.5e9));
        assert_eq!(parse_link_speed("10G"), Ok(10e9));
        assert_eq!(parse_link_speed("1e9"), Ok(1e9));
        for bad in ["", "fast", "0gbit", "-1g", "5", "nang"] {
            assert!(parse_link_speed(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sources_and_their_errors() {
        let a = ObserveArgs {
            apache_status: vec!["http://127.0.0.1:8080/server-status".into()],
            mysql: Some("ro@127.0.0.1:3306".into()),
            link_speed: Some("1gbit".into()),
            ..ObserveArgs::default()
        };
        let c = a.to_config(8080).unwrap();
        assert_eq!(
            (c.apache.len(), c.mysql.len(), c.link_bps),
            (1, 1, Some(1e9))
        );
        let bad = |a: ObserveArgs, flag: &str| match a.to_config(8080) {
            Err(crate::Error::Usage(m)) => assert!(m.starts_with(flag), "{m}"),
            other => panic!("{flag}: {other:?}"),
        };
        bad(
            ObserveArgs {
                apache_status: vec!["ftp://x/".into()],
                ..ObserveArgs::default()
            },
            "--apache-status: ",
        );
        bad(
            ObserveArgs {
                mysql: Some("127.0.0.1:3306".into()),
                ..ObserveArgs::default()
            },
            "--mysql: ",
        );
        bad(
            ObserveArgs {
                mysql_password_file: Some("/nonexistent".into()),
                ..ObserveArgs::default()
            },
            "--mysql-password-file: ",
        );
        bad(
            ObserveArgs {
                link_speed: Some("fast".into()),
                ..ObserveArgs::default()
            },
            "--link-speed: ",
        );
    }
}
