//! `overload target`: serve the embedded HTTP/1.1 target (see src/target/ and docs/target.md)
//! in the foreground until SIGINT or SIGTERM.
use std::net::SocketAddr;

use clap::Args;

use crate::target::{Fault, TargetConfig, TargetTls, TlsFault};
use crate::units::parse_duration;

// Values are taken as strings and checked here, so a bad one gives a one-line error naming
// its flag (exit code 2) instead of clap's multi-line report.
#[derive(Args, Debug)]
pub struct TargetArgs {
    /// Address to listen on. Loopback only, unless --allow-remote.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Serve at most N requests at once; the rest wait in FIFO order (like prefork's
    /// MaxRequestWorkers or FPM's max_children). Unlimited by default.
    #[arg(long, value_name = "N", allow_hyphen_values = true)]
    pub workers: Option<String>,
    /// Freeze all output during the last FREEZE of every PERIOD, e.g. 1s/5s.
    #[arg(long, value_name = "FREEZE/PERIOD")]
    pub stall: Option<String>,
    /// Server threads [default: one per core].
    #[arg(long, value_name = "T", allow_hyphen_values = true)]
    pub threads: Option<String>,
    /// Listen backlog (the kernel caps it at net.core.somaxconn).
    #[arg(
        long,
        value_name = "N",
        default_value = "1024",
        allow_hyphen_values = true
    )]
    pub backlog: String,
    /// Play a fault for every request: refuse, reset, reset-body, hang, drip, bad-status,
    /// bad-header, short-body, bad-chunk, huge-body, 503, close-after-read, close-idle; HTTP/2:
    /// h2-reset, h2-goaway, settings-flood, huge-headers; HTTP/3: quic-stall, quic-reset,
    /// h3-goaway, quic-streams-1, quic-close.
    #[arg(long, value_name = "MODE")]
    pub fault: Option<String>,
    /// Allow a non-loopback --listen address.
    #[arg(long)]
    pub allow_remote: bool,
    /// Serve HTTPS. Without --cert/--key, a CA and a certificate it signs (for localhost,
    /// 127.0.0.1 and ::1) are made at start; the CA is written to --ca-out for --cacert.
    #[arg(long)]
    pub tls: bool,
    /// HTTPS: the server's certificate chain (PEM) instead of a generated one.
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<std::path::PathBuf>,
    /// HTTPS: the private key (PEM) of --cert.
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<std::path::PathBuf>,
    /// HTTPS with a generated certificate: where to write its CA certificate [default:
    /// overload-target-PORT-ca.pem in the temporary directory].
    #[arg(long, value_name = "FILE")]
    pub ca_out: Option<std::path::PathBuf>,
    /// With --tls: serve HTTP/3 too, over QUIC on the same port number over UDP (TCP answers
    /// then carry Alt-Svc: h3=":PORT").
    #[arg(long)]
    pub http3: bool,
    /// HTTPS: play a TLS fault on every connection: stall (never answer the ClientHello),
    /// close (close after it), expired (an expired certificate), wrong-name (a certificate
    /// for another name).
    #[arg(long, value_name = "MODE")]
    pub tls_fault: Option<String>,
}

/// PEM files are small; the cap keeps a wrong path from filling memory.
const MAX_PEM_FILE: u64 = 1 << 20;

impl TargetArgs {
    /// Checks the flags and turns them into the library's config.
    pub fn config(&self) -> crate::Result<TargetConfig> {
        let listen = parse_listen(&self.listen, self.allow_remote, 8080)?;
        let workers = self
            .workers
            .as_deref()
            .map(|w| positive("--workers", w))
            .transpose()?;
        let threads = self
            .threads
            .as_deref()
            .map(|t| positive("--threads", t))
            .transpose()?
            .unwrap_or(0);
        if threads > 1024 {
            return Err(usage(format!("--threads {threads}: use 1 to 1024")));
        }
        let backlog = positive("--backlog", &self.backlog)?;
        let backlog = u32::try_from(backlog)
            .map_err(|_| usage(format!("--backlog: '{}' is too large", self.backlog)))?;
        let stall = self.stall.as_deref().map(parse_stall).transpose()?;
        let fault = self
            .fault
            .as_deref()
            .map(|f| {
                f.parse::<Fault>()
                    .map_err(|e| usage(format!("--fault: {e}")))
            })
            .transpose()?;
        let tls = self.tls_identity()?;
        Ok(TargetConfig {
            listen,
            workers,
            stall,
            threads,
            backlog,
            fault,
            tls,
            http3: self.http3,
        })
    }

    fn tls_identity(&self) -> crate::Result<Option<TargetTls>> {
        let tls_only = self.cert.is_some() || self.ca_out.is_some() || self.tls_fault.is_some();
        if !self.tls {
            if tls_only || self.http3 {
                return Err(usage(
                    "--cert, --key, --ca-out, --tls-fault and --http3 need --tls".into(),
                ));
            }
            return Ok(None);
        }
        let fault = self
            .tls_fault
            .as_deref()
            .map(|f| {
                f.parse::<TlsFault>()
                    .map_err(|e| usage(format!("--tls-fault: {e}")))
            })
            .transpose()?;
        let (Some(cert), Some(key)) = (&self.cert, &self.key) else {
            return TargetTls::generate(fault)
                .map(Some)
                .map_err(crate::Error::runtime);
        };
        if matches!(fault, Some(TlsFault::Expired | TlsFault::WrongName)) {
            return Err(usage(
                "--tls-fault expired/wrong-name make their own certificate; drop --cert/--key"
                    .into(),
            ));
        }
        let read = |p: &std::path::Path, what: &str| {
            let bytes = crate::fsutil::read_capped(p, MAX_PEM_FILE, what).map_err(usage)?;
            String::from_utf8(bytes).map_err(|_| {
                usage(format!(
                    "{what}: '{}' is not a PEM file",
                    crate::fsutil::shown(p)
                ))
            })
        };
        let t = TargetTls {
            cert_pem: read(cert, "--cert")?,
            key_pem: read(key, "--key")?,
            ca_pem: None,
            fault,
        };
        Ok(Some(t))
    }
}

/// `--listen IP:PORT` of a server command (target, agent): loopback only unless
/// `--allow-remote`, since this workplace must serve nothing beyond the machine by accident.
pub(crate) fn parse_listen(
    value: &str,
    allow_remote: bool,
    example_port: u16,
) -> crate::Result<SocketAddr> {
    let listen: SocketAddr = value.trim().parse().map_err(|_| {
        usage(format!(
            "--listen: invalid address '{value}' (expected IP:PORT, e.g. 127.0.0.1:{example_port})"
        ))
    })?;
    if !listen.ip().is_loopback() && !allow_remote {
        return Err(usage(format!(
            "--listen: {listen} is not a loopback address (add --allow-remote to serve beyond this machine)"
        )));
    }
    Ok(listen)
}

fn usage(msg: String) -> crate::Error {
    crate::Error::Usage(msg)
}

fn positive(flag: &str, v: &str) -> crate::Result<usize> {
    match v.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(usage(format!(
            "{flag}: expected a positive integer, got '{v}'"
        ))),
    }
}

/// `FREEZE/PERIOD`, e.g. `1s/5s`, with FREEZE shorter than PERIOD.
fn parse_stall(v: &str) -> crate::Result<(std::time::Duration, std::time::Duration)> {
    let (freeze, period) = v.split_once('/').ok_or_else(|| {
        usage(format!(
            "--stall: expected FREEZE/PERIOD (e.g. 1s/5s), got '{v}'"
        ))
    })?;
    let freeze = parse_duration(freeze).map_err(|e| usage(format!("--stall: {e}")))?;
    let period = parse_duration(period).map_err(|e| usage(format!("--stall: {e}")))?;
    if period.is_zero() || freeze >= period {
        return Err(usage(format!(
            "--stall: the freeze must be shorter than the period, got '{v}'"
        )));
    }
    Ok((freeze, period))
}

pub fn run(args: TargetArgs) -> crate::Result<i32> {
    let cfg = args.config()?;
    // Block the signals before the server's threads exist (they inherit the mask), so only
    // the sigwait below receives them and the server can be stopped cleanly.
    let signals = block_stop_signals()?;
    let ca_pem = cfg.tls.as_ref().and_then(|t| t.ca_pem.clone());
    let handle = crate::target::start(cfg)?;
    let ca_note = match ca_pem {
        Some(pem) => {
            let path = args.ca_out.clone().unwrap_or_else(|| {
                std::env::temp_dir().join(format!("overload-target-{}-ca.pem", handle.addr.port()))
            });
            crate::fsutil::write_atomic(&path, pem.as_bytes())?;
            format!(
                " (CA certificate: {}; pass it with --cacert)",
                crate::fsutil::shown(&path)
            )
        }
        None => String::new(),
    };
    // Scripts wait for this line; `outln!` flushes, so a pipe sees it at once.
    crate::outln!("listening on {}{ca_note}", handle.url());
    wait_for(&signals);
    handle.stop();
    Ok(0)
}

pub(crate) fn block_stop_signals() -> crate::Result<libc::sigset_t> {
    // SAFETY: sigset_t is plain data initialised by sigemptyset; pthread_sigmask only reads it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        if rc != 0 {
            return Err(crate::Error::runtime(format!(
                "target: cannot block signals: {}",
                std::io::Error::from_raw_os_error(rc)
            )));
        }
        Ok(set)
    }
}

/// Blocks until SIGINT or SIGTERM arrives.
pub(crate) fn wait_for(set: &libc::sigset_t) {
    let mut sig: libc::c_int = 0;
    // SAFETY: `set` was initialised by block_stop_signals; `sig` is a valid out-pointer.
    // sigwait only fails for an invalid set, in which case we stop rather than spin.
    unsafe {
        libc::sigwait(set, &mut sig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrap {
        #[command(flatten)]
        args: TargetArgs,
    }

    fn cfg(argv: &[&str]) -> crate::Result<TargetConfig> {
        let mut full = vec!["target"];
        full.extend_from_slice(argv);
        match Wrap::try_parse_from(full) {
            Ok(w) => w.args.config(),
            Err(e) => Err(crate::Error::usage(e.to_string())),
        }
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
    fn defaults_and_full_flags() {
        let c = cfg(&[]).expect("defaults");
        assert_eq!(c.listen, "127.0.0.1:8080".parse().expect("addr"));
        assert_eq!(
            (c.workers, c.stall, c.threads, c.backlog),
            (None, None, 0, 1024)
        );
        let c = cfg(&[
            "--listen",
            "[::1]:0",
            "--workers",
            "32",
            "--stall",
            "1s/5s",
            "--threads",
            "2",
            "--backlog",
            "128",
            "--fault",
            "close-idle",
        ])
        .expect("flags");
        assert_eq!(c.workers, Some(32));
        assert_eq!(
            c.stall,
            Some((
                std::time::Duration::from_secs(1),
                std::time::Duration::from_secs(5)
            ))
        );
        assert_eq!((c.threads, c.backlog), (2, 128));
        assert_eq!(c.fault, Some(Fault::CloseIdle));
    }

    #[test]
    fn bad_flags_name_the_flag() {
        usage_err(&["--listen", "nope"], "--listen");
        usage_err(&["--listen", "0.0.0.0:8080"], "--listen");
        usage_err(&["--workers", "0"], "--workers");
        usage_err(&["--workers", "x"], "--workers");
        usage_err(&["--threads", "-1"], "--threads");
        usage_err(&["--backlog", "0"], "--backlog");
        usage_err(&["--backlog", "99999999999"], "--backlog");
        usage_err(&["--stall", "1s"], "--stall");
        usage_err(&["--stall", "5s/5s"], "--stall");
        usage_err(&["--stall", "1x/5s"], "--stall");
        usage_err(&["--fault", "explode"], "--fault");
    }

    #[test]
    fn remote_needs_allow_remote() {
        let c = cfg(&["--listen", "0.0.0.0:8080", "--allow-remote"]).expect("allowed");
        assert!(c.listen.ip().is_unspecified());
    }
}
