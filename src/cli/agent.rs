//! `overload agent`: sample this host and serve the samples to a controller (`--agent URL`
//! of `sweep`/`run`) as JSON and Prometheus text. See docs/observe.md for the protocol.
//! With `--generate` it also runs the load steps a controller sends (docs/scale-out.md).
use std::path::PathBuf;

use clap::Args;

use crate::observe::agent::{self, read_token, AgentConfig};
use crate::observe::ObserveArgs;

#[derive(Args, Debug)]
pub struct AgentArgs {
    /// Address to listen on. Loopback only, unless --allow-remote.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:9090")]
    pub listen: String,
    /// File holding the bearer token every request must carry (at least 16 characters).
    #[arg(long, value_name = "FILE")]
    pub token_file: PathBuf,
    /// Allow a non-loopback --listen address. Over plain HTTP the token then travels in clear
    /// text (a warning says so): add --tls-self-signed or --tls-cert/--tls-key.
    #[arg(long)]
    pub allow_remote: bool,
    /// Report a process group: NAME=REGEX (process name or command line) or NAME=pid:N.
    #[arg(long = "watch", value_name = "NAME=REGEX")]
    pub watch: Vec<String>,
    /// TCP port whose connections, listen queue and overflows to report.
    #[arg(long, value_name = "PORT")]
    pub port: Option<String>,
    /// Also sample PHP-FPM's pool status at URL?json. Repeatable.
    #[arg(long = "fpm-status", value_name = "URL")]
    pub fpm_status: Vec<String>,
    /// Sampling period.
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub sample_every: String,
    /// How much history to keep for controllers that poll late.
    #[arg(long, value_name = "DURATION", default_value = "10m")]
    pub history: String,
    #[command(flatten)]
    pub generate: super::agent_generate::GenerateArgs,
}

impl AgentArgs {
    pub fn config(&self) -> crate::Result<AgentConfig> {
        let usage = crate::Error::usage;
        let listen = super::target::parse_listen(&self.listen, self.allow_remote, 9090)?;
        let token = read_token(&self.token_file)?;
        let port = match &self.port {
            None => 0,
            Some(p) => match p.trim().parse::<u16>() {
                Ok(n) if n > 0 => n,
                _ => return Err(usage(format!("--port: expected a port 1-65535, got '{p}'"))),
            },
        };
        let oa = ObserveArgs {
            watch: self.watch.clone(),
            fpm_status: self.fpm_status.clone(),
            sample_every: self.sample_every.clone(),
            ..Default::default()
        };
        let mut observe = oa.to_config(port)?;
        let history = crate::units::parse_duration(&self.history)
            .map_err(|e| usage(format!("--history: {e}")))?;
        let per_sec = 1.0 / observe.every.as_secs_f64();
        observe.max_samples =
            ((history.as_secs_f64() * per_sec).ceil() as usize).clamp(10, 1_000_000);
        let extension = self.generate.generator()?.map(|g| {
            std::sync::Arc::new(g) as std::sync::Arc<dyn crate::observe::agent::Extension>
        });
        Ok(AgentConfig {
            listen,
            token,
            observe,
            extension,
            tls: None,
            // Read-only, behind the same token: what `audit --agent` asks.
            host: Some(crate::usecase::audit::agent_answers()),
        })
    }
}

pub fn run(args: AgentArgs) -> crate::Result<i32> {
    let mut cfg = args.config()?;
    let identity = args.generate.identity(cfg.listen)?;
    cfg.tls = identity.as_ref().map(|i| std::sync::Arc::clone(&i.config));
    let generating = cfg.extension.is_some();
    if let Some(w) = agent::plain_remote_warning(cfg.listen, cfg.tls.is_some()) {
        crate::eoutln!("overload: warning: {w}");
    }
    // Threads started below inherit the blocked mask; only sigwait sees SIGINT/SIGTERM.
    let signals = super::target::block_stop_signals()?;
    let handle = agent::start(cfg)?;
    let scheme = if identity.is_some() { "https" } else { "http" };
    crate::outln!("agent listening on {scheme}://{}", handle.addr);
    if let Some(id) = &identity {
        crate::outln!("certificate {}", id.fingerprint);
    }
    if generating {
        crate::outln!(
            "generating for {} (--max-rate {}, --max-duration {}, --max-connections {})",
            args.generate.allow_target.join(", "),
            args.generate.max_rate,
            args.generate.max_duration,
            args.generate.max_connections
        );
    }
    super::target::wait_for(&signals);
    handle.stop();
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        a: AgentArgs,
    }

    fn cfg(argv: &[&str]) -> crate::Result<AgentConfig> {
        let mut full = vec!["agent"];
        full.extend_from_slice(argv);
        Wrap::try_parse_from(full)
            .map_err(|e| crate::Error::usage(e.to_string()))?
            .a
            .config()
    }

    #[test]
    fn flags() {
        let dir = std::env::temp_dir().join(format!("overload-agent-args-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("tok");
        std::fs::write(&f, "0123456789abcdef").unwrap();
        let fs = f.to_str().unwrap();
        let c = cfg(&["--token-file", fs, "--port", "8080", "--history", "1m"]).unwrap();
        assert_eq!(c.observe.port, Some(8080));
        assert_eq!(c.observe.max_samples, 60);
        assert!(cfg(&["--token-file", fs]).unwrap().observe.port.is_none());
        for bad in [
            vec!["--token-file", fs, "--listen", "0.0.0.0:9090"],
            vec!["--token-file", fs, "--port", "x"],
            vec!["--token-file", "/nonexistent"],
            vec!["--token-file", fs, "--history", "soon"],
        ] {
            let e = cfg(&bad).unwrap_err();
            assert!(matches!(e, crate::Error::Usage(_)), "{bad:?}");
        }
        assert!(cfg(&[
            "--token-file",
            fs,
            "--listen",
            "0.0.0.0:0",
            "--allow-remote"
        ])
        .is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
