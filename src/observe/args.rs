//! The observe options, to `#[command(flatten)]` into `sweep` and `run`.
use std::path::PathBuf;

use clap::Args;

use super::agent::read_token;
use super::{AgentSpec, FpmSource, GroupSpec, ObserveConfig};
use crate::units::parse_duration;

// Values are strings checked in `to_config`, so a bad one is a one-line error naming its
// flag (exit code 2).
#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Server observation")]
pub struct ObserveArgs {
    /// Report a process group: NAME=REGEX (matched on the process name or command line) or
    /// NAME=pid:N. Repeatable.
    #[arg(long = "watch", value_name = "NAME=REGEX")]
    pub watch: Vec<String>,
    /// Also sample PHP-FPM's pool status (pm.status_path) at URL?json. Repeatable.
    #[arg(long = "fpm-status", value_name = "URL")]
    pub fpm_status: Vec<String>,
    /// Sampling period.
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub sample_every: String,
    /// Poll an `overload agent` on another host: [NAME=]URL, e.g. db=http://10.0.0.2:9090.
    /// Repeatable.
    #[arg(long = "agent", value_name = "[NAME=]URL")]
    pub agent: Vec<String>,
    /// File holding the agents' bearer token (needed with --agent).
    #[arg(long, value_name = "FILE")]
    pub agent_token_file: Option<PathBuf>,
    /// TCP port to watch on this host [default: the target URL's port].
    #[arg(long, value_name = "PORT")]
    pub observe_port: Option<String>,
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        o: ObserveArgs,
    }

    fn cfg(argv: &[&str]) -> crate::Result<ObserveConfig> {
        let mut full = vec!["x"];
        full.extend_from_slice(argv);
        Wrap::try_parse_from(full)
            .map_err(|e| crate::Error::usage(e.to_string()))?
            .o
            .to_config(8080)
    }

    fn usage_err(argv: &[&str], flag: &str) {
        match cfg(argv) {
            Err(crate::Error::Usage(m)) => {
                assert!(m.starts_with(flag), "{m}");
                assert!(!m.contains('\n'), "{m}");
            }
            other => panic!("expected a usage error for {argv:?}, got {other:?}"),
        }
    }

    #[test]
    fn defaults_and_flags() {
        let c = cfg(&[]).unwrap();
        assert_eq!(c.every, std::time::Duration::from_secs(1));
        assert_eq!(c.port, Some(8080));
        assert!(c.groups.is_empty() && c.agents.is_empty() && c.local);
        let c = cfg(&[
            "--watch",
            "fpm=php-fpm",
            "--watch",
            "t=pid:1",
            "--fpm-status",
            "http://127.0.0.1:8081/status",
            "--sample-every",
            "250ms",
            "--observe-port",
            "80",
        ])
        .unwrap();
        assert_eq!(c.groups.len(), 2);
        assert_eq!(c.fpm.len(), 1);
        assert_eq!(c.every, std::time::Duration::from_millis(250));
        assert_eq!(c.port, Some(80));
    }

    #[test]
    fn agents_need_a_token() {
        usage_err(&["--agent", "http://127.0.0.1:9090"], "--agent");
        let dir = std::env::temp_dir().join(format!("overload-obs-args-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("tok");
        std::fs::write(&f, "0123456789abcdef0123\n").unwrap();
        let fs = f.to_str().unwrap();
        let c = cfg(&[
            "--agent",
            "web=http://127.0.0.1:9090",
            "--agent",
            "http://127.0.0.1:9091",
            "--agent-token-file",
            fs,
        ])
        .unwrap();
        assert_eq!(c.agents[0].name, "web");
        assert_eq!(c.agents[0].token, "0123456789abcdef0123");
        assert_eq!(c.agents[1].name, "127.0.0.1:9091");
        usage_err(
            &[
                "--agent",
                "a=http://x:1",
                "--agent",
                "a=http://y:1",
                "--agent-token-file",
                fs,
            ],
            "--agent",
        );
        std::fs::write(&f, "short").unwrap();
        usage_err(
            &["--agent", "http://x:1", "--agent-token-file", fs],
            "agent token",
        );
        usage_err(
            &[
                "--agent",
                "http://x:1",
                "--agent-token-file",
                "/nonexistent/tok",
            ],
            "--agent-token-file",
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn bad_flags_name_the_flag() {
        usage_err(&["--watch", "x=("], "--watch");
        usage_err(&["--watch", "x=pid:abc"], "--watch");
        usage_err(&["--watch", "noequals"], "--watch");
        usage_err(&["--watch", "a=x", "--watch", "a=y"], "--watch");
        usage_err(&["--fpm-status", "ftp://x/status"], "--fpm-status");
        usage_err(&["--sample-every", "fast"], "--sample-every");
        usage_err(&["--sample-every", "1ms"], "--sample-every");
        usage_err(&["--observe-port", "0"], "--observe-port");
        usage_err(&["--observe-port", "70000"], "--observe-port");
        usage_err(
            &["--agent", "ftp://x", "--agent-token-file", "/dev/null"],
            "agent token",
        );
    }
}
