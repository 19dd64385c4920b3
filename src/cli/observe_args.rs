//! The server-observation flags of run, sweep and capacity, into `observe::ObserveArgs`.
use crate::observe::ObserveArgs;
use clap::Args;
use std::path::PathBuf;

// Values are strings checked in `ObserveArgs::to_config`, so a bad one is a one-line error
// naming its flag (exit code 2).
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Server observation")]
pub struct ObserveFlags {
    /// Watch processes: NAME=REGEX or NAME=pid:N (repeatable).
    ///
    /// A process group, reported by NAME: the processes whose name or command line REGEX
    /// matches, or process N.
    #[arg(long = "watch", value_name = "NAME=REGEX")]
    pub watch: Vec<String>,
    /// Sample PHP-FPM's pool status page at URL (repeatable).
    ///
    /// Its pm.status_path, read at URL?json.
    #[arg(long = "fpm-status", value_name = "URL")]
    pub fpm_status: Vec<String>,
    /// Sampling period.
    #[arg(long, value_name = "DURATION", default_value_t = ObserveArgs::default().sample_every)]
    pub sample_every: String,
    /// Poll an `overload agent` on another host (repeatable).
    ///
    /// [NAME=]URL, e.g. db=http://10.0.0.2:9090.
    #[arg(long = "agent", value_name = "[NAME=]URL")]
    pub agent: Vec<String>,
    /// File holding the agents' bearer token (needed with --agent).
    #[arg(long, value_name = "FILE")]
    pub agent_token_file: Option<PathBuf>,
    /// TCP port to watch on this host [default: the target URL's port].
    #[arg(long, value_name = "PORT")]
    pub observe_port: Option<String>,
    #[command(flatten)]
    pub diagnose: super::diagnose_args::DiagnoseFlags,
}

#[cfg(test)]
impl ObserveFlags {
    fn into_config(self) -> crate::Result<crate::observe::ObserveConfig> {
        ObserveArgs::from(self).to_config(8080)
    }
}

impl From<ObserveFlags> for ObserveArgs {
    fn from(f: ObserveFlags) -> ObserveArgs {
        ObserveArgs {
            watch: f.watch,
            fpm_status: f.fpm_status,
            sample_every: f.sample_every,
            agent: f.agent,
            agent_token_file: f.agent_token_file,
            observe_port: f.observe_port,
            apache_status: f.diagnose.apache_status,
            mysql: f.diagnose.mysql,
            mysql_password_file: f.diagnose.mysql_password_file,
            link_speed: f.diagnose.link_speed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::ObserveConfig;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        o: ObserveFlags,
    }

    fn cfg(argv: &[&str]) -> crate::Result<ObserveConfig> {
        let mut full = vec!["x"];
        full.extend_from_slice(argv);
        Wrap::try_parse_from(full)
            .map_err(|e| crate::Error::usage(e.to_string()))?
            .o
            .into_config()
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
        // A device is no token file (it could be /dev/zero): refused before it is read.
        usage_err(
            &["--agent", "ftp://x", "--agent-token-file", "/dev/null"],
            "--agent-token-file: '/dev/null' is a device, not a regular file",
        );
    }
}
