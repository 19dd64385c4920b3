//! `overload audit`: arguments into an `AuditConfig`, then `usecase::audit`.
use super::load_args::{parse_dur, Dur, TlsArgs};
use crate::lab::{LabOptions, Stack};
use crate::liverun::json;
use crate::usecase::audit::{self, AuditConfig};
use crate::Error;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone)]
pub struct AuditArgs {
    /// The page to audit [with --lab: the stack's /static.html].
    ///
    /// E.g. http://127.0.0.1:8080/.
    #[arg(value_name = "URL", required_unless_present = "lab")]
    pub url: Option<String>,
    /// Audit a stack of `overload lab`.
    ///
    /// Its URL, PHP probe page (audit.php), FPM status and pool size come from the lab's
    /// state.
    #[arg(long, value_name = "STACK")]
    pub lab: Option<Stack>,
    /// The lab's directory, as given to `overload lab --prefix` [default: $OVERLOAD_LAB_DIR,
    /// else /tmp/overload-lab].
    #[arg(long, value_name = "DIR", requires = "lab")]
    pub prefix: Option<PathBuf>,
    /// A page printing the PHP settings as JSON.
    ///
    /// docs/audit.md has one; the lab installs it. Without it, the php.ini, conf.d and FPM
    /// pool files found on the server are read.
    #[arg(long, value_name = "URL")]
    pub php_probe: Option<String>,
    /// PHP-FPM's status page (pm.status_path).
    ///
    /// E.g. http://127.0.0.1/fpm-status.
    #[arg(long, value_name = "URL")]
    pub fpm_status: Option<String>,
    /// PHP workers at most (pm.max_children or MaxRequestWorkers), for the memory plan
    /// [default: the FPM pools' pm.max_children when their files are found].
    #[arg(long, value_name = "N")]
    pub workers: Option<u64>,
    /// Read this php.ini for the PHP checks (without --php-probe) instead of finding the
    /// files of the running php-fpm master (or mod_php, or PHP listening itself).
    #[arg(long, value_name = "FILE")]
    pub php_ini: Option<PathBuf>,
    /// Read this FPM configuration (php-fpm.conf or a pool file, its include= followed) for
    /// the pools' php_value/php_admin_value overrides and pm.max_children.
    #[arg(long, value_name = "FILE")]
    pub fpm_config: Option<PathBuf>,
    /// The server's `overload agent`, http://HOST:9090.
    ///
    /// The host checks and the php.ini found are read on the server through it, not on this
    /// machine.
    #[arg(long, value_name = "URL")]
    pub agent: Option<String>,
    /// File holding the agent's bearer token (needed with --agent).
    #[arg(long, value_name = "FILE", requires = "agent")]
    pub agent_token_file: Option<PathBuf>,
    /// A read-only MariaDB/MySQL account to check.
    ///
    /// USER@HOST:PORT, its password in --mysql-password-file: query cache, max_connections,
    /// slow log, MyISAM tables.
    #[arg(long, value_name = "USER@HOST:PORT")]
    pub mysql: Option<String>,
    /// File holding the --mysql password on its first line.
    ///
    /// The file must not be world-readable.
    #[arg(long, value_name = "FILE", requires = "mysql")]
    pub mysql_password_file: Option<PathBuf>,
    /// Length of each A/B load run that measures compression and keep-alive (3 runs of 4
    /// users, at most 20k requests each).
    #[arg(long, default_value_t = Dur(AuditConfig::default().ab.unwrap_or_default()), value_parser = parse_dur, value_name = "DURATION")]
    pub ab: Dur,
    /// No A/B load runs: only the probes' few requests.
    ///
    /// The compression and keep-alive figures are then left out.
    #[arg(long)]
    pub no_ab: bool,
    /// How long a kept connection is left idle to see when the server closes it.
    #[arg(long, default_value_t = Dur(AuditConfig::default().idle_wait), value_parser = parse_dur, value_name = "DURATION")]
    pub idle_wait: Dur,
    /// Write the audit as JSON to FILE (`-`: standard output).
    ///
    /// Format: docs/audit.md; with `-` the list goes to standard error.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub tls: TlsArgs,
}

pub fn run(a: AuditArgs) -> crate::Result<i32> {
    if a.ab.0.is_zero() && !a.no_ab {
        return Err(Error::usage("--ab must be above zero (or give --no-ab)"));
    }
    if a.ab.0 > std::time::Duration::from_secs(30) {
        return Err(Error::usage(format!(
            "--ab {}: at most 30s per run (the audit is a probe, not a load test)",
            crate::units::fmt_duration(a.ab.0)
        )));
    }
    if a.idle_wait.0 > std::time::Duration::from_secs(120) {
        return Err(Error::usage("--idle-wait: at most 120s"));
    }
    if let Some(p) = &a.json {
        json::check_writable(p)?;
    }
    let mysql = a
        .mysql
        .as_deref()
        .map(|m| {
            crate::observe::MysqlConfig::parse(m, a.mysql_password_file.as_deref())
                .map_err(|e| Error::usage(format!("--mysql: {e}")))
        })
        .transpose()?;
    let agent = match (&a.agent, &a.agent_token_file) {
        (None, _) => None,
        (Some(_), None) => return Err(Error::usage("--agent: needs --agent-token-file FILE")),
        (Some(u), Some(f)) => {
            let token = crate::observe::agent::read_token(f).map_err(|e| {
                Error::usage(
                    e.to_string()
                        .replacen("--token-file", "--agent-token-file", 1),
                )
            })?;
            Some(
                crate::observe::AgentSpec::parse(u, &token)
                    .map_err(|e| Error::usage(format!("--agent: {e}")))?,
            )
        }
    };
    for (flag, f) in [("--php-ini", &a.php_ini), ("--fpm-config", &a.fpm_config)] {
        if let Some(f) = f {
            if !f.is_file() {
                return Err(Error::usage(format!(
                    "{flag}: {} is not a readable file",
                    f.display()
                )));
            }
        }
    }
    let cfg = AuditConfig {
        mysql,
        agent,
        php_ini: a.php_ini,
        fpm_config: a.fpm_config,
        url: a.url,
        lab: a.lab,
        lab_options: a.prefix.map_or_else(LabOptions::from_env, LabOptions::new),
        php_probe: a.php_probe,
        fpm_status: a.fpm_status,
        workers: a.workers,
        ab: (!a.no_ab).then_some(a.ab.0),
        idle_wait: a.idle_wait.0,
        tls: a.tls.into(),
        ..AuditConfig::default()
    };
    let outcome = audit::run(&cfg)?;
    match &a.json {
        Some(p) => {
            let text = serde_json::to_string_pretty(&outcome.audit)
                .map_err(|e| Error::runtime(format!("JSON: {e}")))?;
            if crate::report::export::is_stdout(p) {
                crate::eout!("{outcome}");
                crate::outln!("{text}");
            } else {
                crate::fsutil::write_atomic(p, (text + "\n").as_bytes())?;
                crate::out!("{outcome}");
            }
        }
        None => crate::out!("{outcome}"),
    }
    Ok(outcome.exit_code())
}

/// `sweep --audit`.
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Server observation")]
pub struct SweepAuditArgs {
    /// Audit the (first) URL before the load (`overload audit URL`, its A/B included) and
    /// keep it as audit.json; the report shows it in an Audit section.
    #[arg(long)]
    pub audit: bool,
}
