//! `overload audit`: the stack's tuning checked against the studies' advice before any load.
//! Gathers the evidence (`audit::gather`: a few GETs, /proc, the PHP probe page, FPM's
//! status), adds what only a load can show (a short A/B with the engine: bytes/s with and
//! without Accept-Encoding, req/s and connections/s with and without keep-alive, which over
//! https also shows TLS resumption; the ALPN answer), and runs the rules of `audit::*`.
//! With `lab`, the stack's URL, probe page, FPM status and pool size come from its state.
use super::config::{ConnConfig, HttpVersion, RequestConfig, TlsConfig};
use super::run_config::{RunConfig, RunLoad};
use crate::audit::db::{self, DbEvidence};
use crate::audit::http::{Arm, ACCEPT_ENCODING};
use crate::audit::php::{PhpEvidence, PhpIni};
use crate::audit::{gather, host, http, ini, php, Audit, Probe};
use crate::lab::{LabOptions, Stack};
use crate::observe::client::AgentSpec;
use crate::observe::MysqlConfig;
use crate::url::{Scheme, Url};
use crate::Error;
use std::fmt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, PartialEq)]
pub struct AuditConfig {
    /// The page to audit; with `lab` alone, the stack's /static.html.
    pub url: Option<String>,
    /// A lab stack: its URL, PHP probe page, FPM status and pool size from its state.
    pub lab: Option<Stack>,
    pub lab_options: LabOptions,
    /// A page printing the PHP settings as JSON (lab/www/audit.php).
    pub php_probe: Option<String>,
    /// PHP-FPM's status page (`pm.status_path`).
    pub fpm_status: Option<String>,
    /// PHP workers at most (pm.max_children, MaxRequestWorkers), for the memory plan.
    pub workers: Option<u64>,
    /// Length of each A/B arm; None: no A/B (no load at all).
    pub ab: Option<Duration>,
    /// How long the kept connection is left idle to see whether the server closes it.
    pub idle_wait: Duration,
    /// Per request of the probes.
    pub timeout: Duration,
    /// For https:// URLs (the A/B and the ALPN question).
    pub tls: TlsConfig,
    /// A read-only database account (`--mysql USER@HOST:PORT`); with `lab`, the lab's.
    pub mysql: Option<MysqlConfig>,
    /// The server's agent (`--agent URL`): the host checks and the php.ini found are read
    /// there rather than on this machine.
    pub agent: Option<AgentSpec>,
    /// A php.ini and an FPM configuration to read instead of finding them (`--php-ini`,
    /// `--fpm-config`).
    pub php_ini: Option<PathBuf>,
    pub fpm_config: Option<PathBuf>,
}

/// Users of each A/B arm: enough to measure, few enough to stay a probe.
pub const AB_USERS: usize = 4;
/// Requests per A/B arm at most (the arm's time bounds it first on most servers).
pub const AB_MAX_REQUESTS: u64 = 20_000;

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            url: None,
            lab: None,
            lab_options: LabOptions::from_env(),
            php_probe: None,
            fpm_status: None,
            workers: None,
            ab: Some(Duration::from_secs(1)),
            idle_wait: Duration::from_secs(2),
            timeout: Duration::from_secs(3),
            tls: TlsConfig::default(),
            mysql: None,
            agent: None,
            php_ini: None,
            fpm_config: None,
        }
    }
}

/// An audit, done.
pub struct AuditOutcome {
    pub audit: Audit,
}

impl AuditOutcome {
    /// 0: the audit ran (its findings are output, not failures).
    pub fn exit_code(&self) -> i32 {
        0
    }
}

impl fmt::Display for AuditOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::report::audit::terminal(&self.audit))
    }
}

/// Where everything is, once the lab state (if any) is read.
struct Plan {
    url: Url,
    php_probe: Option<Url>,
    fpm_status: Option<String>,
    workers: Probe<(u64, String)>,
    mysql: Option<MysqlConfig>,
}

fn plan(cfg: &AuditConfig) -> crate::Result<Plan> {
    let parse = |s: &str, what: &str| {
        Url::parse(s.trim()).map_err(|e| Error::usage(format!("{what}: {e}")))
    };
    let mut php_probe = cfg
        .php_probe
        .as_deref()
        .map(|s| parse(s, "--php-probe").and_then(|u| u.http_only().map_err(Error::usage)))
        .transpose()?;
    let mut fpm_status = cfg.fpm_status.clone();
    let mut mysql = cfg.mysql.clone();
    let mut workers = cfg
        .workers
        .map(|w| (w, "--workers".to_string()))
        .ok_or_else(|| "the pool size is unknown (give --workers N)".to_string());
    let url = match (cfg.lab, cfg.url.as_deref()) {
        (None, None) => return Err(Error::usage("give a URL to audit, or --lab STACK")),
        (None, Some(u)) => parse(u, "URL")?,
        (Some(stack), u) => {
            if !stack.is_web() {
                return Err(Error::usage(format!(
                    "--lab {stack}: audit a web stack (the database is checked through it)"
                )));
            }
            let base = crate::lab::url(stack, &cfg.lab_options)?;
            let info = crate::lab::info(stack, &cfg.lab_options)?
                .ok_or_else(|| Error::runtime(format!("{stack}: no lab state")))?;
            if php_probe.is_none() {
                php_probe = Some(parse(&format!("{base}/audit.php"), "lab")?);
            }
            if fpm_status.is_none() && stack.uses_fpm() {
                fpm_status = Some(format!("{base}/fpm-status"));
            }
            if cfg.workers.is_none() {
                let c = &info.config;
                let w = c
                    .fpm
                    .as_ref()
                    .map(|f| (f.max_children, "the lab's pm.max_children"))
                    .or(c.prefork.as_ref().map(|p| (p.workers, "the lab's workers")))
                    .or(c.workers.map(|w| (w, "the lab's PHP workers")));
                if let Some((n, from)) = w {
                    workers = Ok((u64::from(n), from.to_string()));
                }
            }
            if mysql.is_none() && info.db_port.is_some() {
                mysql = lab_account(&cfg.lab_options);
            }
            match u {
                Some(u) => parse(u, "URL")?,
                None => parse(&format!("{base}/static.html"), "lab")?,
            }
        }
    };
    Ok(Plan {
        url,
        php_probe,
        fpm_status,
        workers,
        mysql,
    })
}

/// The lab's MariaDB account, from its state's `mysql://USER:PASSWORD@HOST:PORT/DB`.
fn lab_account(opts: &LabOptions) -> Option<MysqlConfig> {
    let info = crate::lab::info(Stack::Mariadb, opts).ok()??;
    let rest = info.url.strip_prefix("mysql://")?;
    let (cred, addr) = rest.split_once('@')?;
    let (user, password) = cred.split_once(':').unwrap_or((cred, ""));
    let addr = addr.split('/').next()?;
    let mut c = MysqlConfig::parse(&format!("{user}@{addr}"), None).ok()?;
    c.password = password.to_string();
    Some(c)
}

/// Runs the audit: every probe bounded, nothing changed on the server.
pub fn run(cfg: &AuditConfig) -> crate::Result<AuditOutcome> {
    let p = plan(cfg)?;
    let started = Instant::now();
    let started_unix_ms = crate::clock::unix_ms();
    crate::signals::install();
    // The probes run beside the A/B: the idle wait is most of their time.
    let (http_ev, ab) = std::thread::scope(|s| {
        // The header probes verify the certificate as the load does (--cacert), or skip.
        let trust = match (&cfg.tls.cacert, cfg.tls.insecure) {
            (_, true) => Err("--insecure: the header probes verify certificates (give --cacert FILE, or the http:// port)".to_string()),
            (Some(ca), false) => Ok(crate::http_get::Trust::CaFile(ca)),
            (None, false) => Ok(crate::http_get::Trust::System),
        };
        let probes = s.spawn(|| gather::http(&p.url, cfg.timeout, cfg.idle_wait, trust));
        let ab = cfg.ab.map(|d| measure(cfg, &p.url, d));
        let ev = probes
            .join()
            .map_err(|_| Error::runtime("the audit's HTTP probe failed"));
        (ev, ab)
    });
    let mut http_ev = http_ev?;
    match ab {
        Some((compression, keep_alive)) => {
            http_ev.ab_compression = compression;
            http_ev.ab_keep_alive = keep_alive;
        }
        None => {
            let why = "not measured (--no-ab)".to_string();
            http_ev.ab_compression = Err(why.clone());
            http_ev.ab_keep_alive = Err(why);
        }
    }
    if p.url.scheme == Scheme::Https {
        http_ev.alpn = alpn(cfg, &p.url);
    }
    let (host_ev, ram_bytes) = match &cfg.agent {
        Some(a) => gather::host_via_agent(a, p.url.port, cfg.timeout),
        None => {
            let h = gather::host(&p.url);
            let ram = gather::ram(&h.local);
            (h, ram)
        }
    };
    let (php_label, probe, ini_workers) = php_settings(cfg, &p, &host_ev);
    let workers = match (&p.workers, ini_workers) {
        (Err(_), Some(Ok(w))) => Ok(w),
        (w, _) => w.clone(),
    };
    let php_ev = PhpEvidence {
        probe_url: php_label,
        probe,
        fpm: match &p.fpm_status {
            Some(s) => gather::fpm_status(s, cfg.timeout),
            None => Err("no FPM status page (give --fpm-status URL)".into()),
        },
        workers: workers.clone(),
        ram_bytes,
    };
    let db_ev = match &p.mysql {
        Some(m) => gather::db(m, workers.clone()),
        None => {
            let why = "no database account (give --mysql USER@HOST:PORT)".to_string();
            DbEvidence {
                target: String::new(),
                variables: Err(why.clone()),
                status: Err(why.clone()),
                myisam: Err(why),
                workers: workers.clone(),
            }
        }
    };
    let mut checks = http::checks(&http_ev);
    checks.extend(host::checks(&host_ev));
    checks.extend(php::checks(&php_ev));
    checks.extend(db::checks(&db_ev));
    let mut audit = Audit {
        url: format!("{}{}", p.url.origin(), p.url.target),
        stack: cfg.lab.map(|s| s.name().to_string()),
        started_unix_ms,
        took_s: started.elapsed().as_secs_f64(),
        checks,
    };
    audit.sort();
    Ok(AuditOutcome { audit })
}

/// How the evidence names the PHP settings, the settings, and the pool size FPM's files give.
type PhpSettings = (String, Probe<PhpIni>, Option<Probe<(u64, String)>>);

/// The PHP settings the rules judge, how the evidence names them, and the pool size when
/// FPM's files give it: the probe page when there is one, else the php.ini found (given
/// files; else on the agent's machine; else on this one when it is the server).
fn php_settings(
    cfg: &AuditConfig,
    p: &Plan,
    host: &crate::audit::host::HostEvidence,
) -> PhpSettings {
    if let Some(u) = &p.php_probe {
        return (
            format!("{}{}", u.origin(), u.target),
            gather::php_probe(u, cfg.timeout),
            None,
        );
    }
    let given = cfg.php_ini.is_some() || cfg.fpm_config.is_some();
    let found = if given {
        ini::find(
            &gather::LocalHost,
            None,
            cfg.php_ini.as_deref(),
            cfg.fpm_config.as_deref(),
        )
    } else if let Some(a) = &cfg.agent {
        gather::php_ini_via_agent(a, p.url.port, cfg.timeout)
    } else {
        host.local
            .clone()
            .and_then(|()| ini::find(&gather::LocalHost, Some(p.url.port), None, None))
    };
    match found {
        Ok(f) => (f.label(), Ok(f.effective()), Some(f.workers())),
        Err(why) => (
            String::new(),
            Err(format!("no PHP probe page, and no php.ini found: {why}")),
            None,
        ),
    }
}

/// What the agent answers for `audit --agent`: this machine's reads.
pub fn agent_answers() -> std::sync::Arc<dyn crate::observe::agent::HostQuestions> {
    std::sync::Arc::new(gather::AgentAnswers(std::sync::Arc::new(gather::LocalHost)))
}

/// The ALPN answer to `h2, http/1.1` (one handshake).
fn alpn(cfg: &AuditConfig, url: &Url) -> Probe<Option<String>> {
    let addr = url.resolve()?;
    let mut tls = cfg.tls.clone();
    tls.alpn = vec!["h2".into(), "http/1.1".into()];
    let client = tls
        .client(&[(addr, url.host.clone())])
        .map_err(|e| e.to_string())?;
    client
        .negotiate(addr, cfg.timeout)
        .map(|p| p.map(|p| String::from_utf8_lossy(&p).into_owned()))
}

/// One A/B arm: a short closed-loop run of `AB_USERS` users, bounded in time and count.
fn arm(
    cfg: &AuditConfig,
    url: &Url,
    d: Duration,
    headers: Vec<String>,
    keep_alive: bool,
) -> Probe<Arm> {
    let rc = RunConfig {
        request: RequestConfig {
            urls: vec![format!("{}{}", url.origin(), url.target)],
            headers,
            ..RequestConfig::default()
        },
        load: RunLoad::Users {
            users: AB_USERS,
            think: None,
        },
        duration: Some(d),
        requests: Some(AB_MAX_REQUESTS),
        conn: ConnConfig {
            // A new connection per request speaks HTTP/1.1: HTTP/2 exists to keep them.
            http: if keep_alive {
                HttpVersion::Auto
            } else {
                HttpVersion::V1
            },
            calls_per_connection: (!keep_alive).then_some(1),
            threads: Some(1),
            timeout: cfg.timeout,
            // The client offers resumption: the question is whether the server takes it.
            tls: TlsConfig {
                resumption: true,
                ..cfg.tls.clone()
            },
            ..ConnConfig::default()
        },
        ..RunConfig::default()
    };
    let (ec, _) = rc.engine_config().map_err(|e| e.to_string())?;
    let (s, outcome) = execute(&ec).map_err(|e| e.to_string())?;
    if outcome.interrupted {
        return Err("interrupted".into());
    }
    if s.responses == 0 {
        return Err(format!(
            "the A/B run got no answer ({})",
            s.nothing_answered(&ec.addrs[0].to_string())
                .unwrap_or_else(|| "no response".into())
        ));
    }
    let tls = s.tls.clone().unwrap_or_default();
    Ok(Arm {
        responses: s.responses,
        duration_s: s.duration_s,
        bytes_in: s.bytes_in,
        connections: s.connections_opened,
        handshakes_full: tls.handshakes_full,
        handshakes_resumed: tls.handshakes_resumed,
        http2: s.protocols.contains_key("2"),
    })
}

type Pair = Probe<[Arm; 2]>;

/// The A/B runs: compression (without, with Accept-Encoding), keep-alive (kept, fresh).
fn measure(cfg: &AuditConfig, url: &Url, d: Duration) -> (Pair, Pair) {
    let both = |a: Probe<Arm>, b: Probe<Arm>| Ok([a?, b?]);
    let plain = arm(cfg, url, d, vec![], true);
    let encoded = arm(
        cfg,
        url,
        d,
        vec![format!("Accept-Encoding: {ACCEPT_ENCODING}")],
        true,
    );
    let fresh = arm(cfg, url, d, vec![], false);
    (both(plain.clone(), encoded), both(plain, fresh))
}

/// `sweep --audit`: the audit of `url` before the load, stored in the results folder as
/// audit.json and printed to stderr unless quiet. A failed audit is said and the sweep goes
/// on: the load is what was asked for.
pub fn before_load(url: &str, tls: &TlsConfig, dir: &std::path::Path, quiet: bool) {
    let cfg = AuditConfig {
        url: Some(url.to_string()),
        tls: tls.clone(),
        ..AuditConfig::default()
    };
    let stored = run(&cfg).and_then(|o| {
        crate::store::write_audit(dir, &o.audit)?;
        Ok(o)
    });
    match stored {
        Ok(o) if !quiet => crate::eout!("{o}"),
        Ok(_) => {}
        Err(e) => crate::eoutln!("overload: the audit before the sweep failed: {e}"),
    }
}

/// Runs the load once, showing nothing, and returns its summary (the A/B arms: no folder,
/// no progress).
fn execute(
    cfg: &crate::engine::EngineConfig,
) -> crate::Result<(crate::metrics::Summary, crate::engine::Outcome)> {
    crate::signals::install();
    let ctl = crate::engine::Control::new(cfg.threads);
    let outcome = crate::engine::run(cfg, &ctl, |_| {})?;
    let (rate, users) = cfg.offered();
    let window = outcome.planned_window(cfg);
    let mut summary =
        crate::metrics::Summary::from_recorder(&outcome.recorder, rate, users, window);
    summary.protocol = Some(cfg.protocol_choice.clone());
    Ok((summary, outcome))
}
