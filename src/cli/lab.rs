//! `overload lab`: bring up the studies' stacks on loopback (see src/lab/).
use clap::{Args, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

use crate::lab::{
    self, doctor, Engine, Health, Knobs, LabOptions, Pm, Stack, StackInfo, StackSpec,
};
use crate::units::parse_duration;
use crate::{Error, Result};

#[derive(Args, Debug)]
pub struct LabArgs {
    /// The lab's directory [default: $OVERLOAD_LAB_DIR, else /tmp/overload-lab]
    ///
    /// It holds every stack's configs, logs, pids and data; www-data must be able to
    /// traverse it.
    #[arg(long, global = true, value_name = "DIR")]
    pub prefix: Option<PathBuf>,

    #[command(subcommand)]
    pub command: LabCommand,
}

#[derive(Subcommand, Debug)]
pub enum LabCommand {
    /// Show which lab packages are present or missing, and the command that installs them.
    Doctor(DoctorArgs),
    /// Start a stack (restarting it if it runs) and print its URLs and --watch arguments.
    Up(UpArgs),
    /// Stop a stack (or all) and wait until its processes are gone and its port is free.
    Down(DownArgs),
    /// List the prefix's stacks and whether their processes run.
    Status(StatusArgs),
    /// Print only a running stack's base URL, e.g. http://127.0.0.1:18081.
    Url(UrlArgs),
    /// Print the path of a running app stack's URL file (siege's format, for `--urls`).
    Urls(UrlArgs),
    /// Run a command across a network path with delay, jitter and loss (root only).
    ///
    /// Two network namespaces (load, stack) made for the run and removed after it, joined
    /// by the kernel's netem or overload's own user-space bridge. See docs/lab.md.
    Netem(super::lab_netem::NetemArgs),
}

#[derive(Args, Debug)]
pub struct DoctorArgs {
    /// Print the install script (for `overload lab doctor --install-script | sudo bash`).
    #[arg(long)]
    pub install_script: bool,
    /// Also require an app stack's packages (wordpress); exit 1 when they are missing.
    #[arg(long, value_enum, value_name = "STACK")]
    pub app: Option<Stack>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

impl From<OnOff> for bool {
    fn from(v: OnOff) -> bool {
        v == OnOff::On
    }
}

#[derive(Args, Debug)]
pub struct UpArgs {
    /// The stack to start.
    #[arg(value_enum)]
    pub stack: Stack,
    /// Port on 127.0.0.1 [default: by stack].
    ///
    /// 18081..18085 by web stack, 13306 for mariadb.
    #[arg(long, value_name = "P")]
    pub port: Option<u16>,
    /// Port for the MariaDB a web stack starts when none runs in the prefix [default: 13306].
    #[arg(long, value_name = "P")]
    pub db_port: Option<u16>,
    /// Do not start or use MariaDB (db.php then answers 503).
    #[arg(long)]
    pub no_db: bool,
    /// PHP-FPM process manager (FPM stacks) [default: static].
    #[arg(
        long,
        value_enum,
        value_name = "static|dynamic|ondemand",
        hide_possible_values = true
    )]
    pub pm: Option<Pm>,
    /// PHP-FPM pm.max_children (FPM stacks) [default: 20].
    #[arg(long, value_name = "N")]
    pub max_children: Option<u32>,
    /// FPM pm.start_servers (pm dynamic) or Apache StartServers [default: N/4; prefork: all workers].
    #[arg(long, value_name = "N")]
    pub start_servers: Option<u32>,
    /// FPM pm.min_spare_servers (pm dynamic) or Apache MinSpareServers [default: N/4; prefork: 5].
    #[arg(long, value_name = "N")]
    pub min_spare: Option<u32>,
    /// FPM pm.max_spare_servers (pm dynamic) or Apache MaxSpareServers [default: N/2; prefork: workers].
    #[arg(long, value_name = "N")]
    pub max_spare: Option<u32>,
    /// OPcache on or off (web stacks) [default: on].
    #[arg(long, value_enum, value_name = "on|off", hide_possible_values = true)]
    pub opcache: Option<OnOff>,
    /// Keep-alive of the front web server (web stacks) [default: on].
    #[arg(long, value_enum, value_name = "on|off", hide_possible_values = true)]
    pub keep_alive: Option<OnOff>,
    /// prefork's MaxRequestWorkers, php-persistent's workers.
    ///
    /// apache-prefork: MaxRequestWorkers [default: 20]; php-persistent: worker processes
    /// [default: 4].
    #[arg(long, value_name = "N", alias = "max-request-workers")]
    pub workers: Option<u32>,
    /// The front server's listen backlog, its accept queue's limit (web stacks; capped by
    /// net.core.somaxconn) [default: 511].
    #[arg(long, value_name = "N")]
    pub backlog: Option<u32>,
    /// MariaDB query cache (mariadb) [default: off].
    #[arg(long, value_enum, value_name = "on|off")]
    pub query_cache: Option<OnOff>,
    /// Storage engine of the lab tables (mariadb) [default: innodb].
    #[arg(long, value_enum)]
    pub engine: Option<Engine>,
    /// Serve HTTPS on the port (web stacks).
    ///
    /// With a certificate made once per prefix in PREFIX/tls/ (its CA, ca.pem, is what a run
    /// passes as --cacert).
    #[arg(long)]
    pub tls: bool,
    /// Offer HTTP/2 beside HTTP/1.1 (needs --tls).
    ///
    /// Through ALPN; not on apache-prefork, whose mpm_prefork leaves mod_http2 inactive.
    #[arg(long)]
    pub http2: bool,
    /// How long the start may take before it is abandoned and cleaned up [default: 60s].
    #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
    pub timeout: Option<Duration>,
    /// Print the recorded state as JSON instead of the summary.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub app: super::lab_app_args::LabAppArgs,
}

#[derive(Args, Debug)]
pub struct DownArgs {
    /// The stack to stop.
    #[arg(value_enum, required_unless_present = "all")]
    pub stack: Option<Stack>,
    /// Stop every stack of the prefix.
    #[arg(long, conflicts_with = "stack")]
    pub all: bool,
}

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// Print JSON (one object per recorded stack).
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct UrlArgs {
    /// The stack whose base URL to print.
    #[arg(value_enum)]
    pub stack: Stack,
}

pub fn run(args: LabArgs) -> Result<i32> {
    let explicit_prefix = args.prefix.is_some();
    let mut opts = match args.prefix {
        Some(p) => LabOptions::new(p),
        None => LabOptions::from_env(),
    };
    opts.progress = true;
    match args.command {
        LabCommand::Doctor(a) => doctor_cmd(a),
        LabCommand::Up(a) => up_cmd(a, opts, explicit_prefix),
        LabCommand::Down(a) => down_cmd(a, &opts),
        LabCommand::Status(a) => status_cmd(a, &opts),
        LabCommand::Url(a) => {
            crate::outln!("{}", lab::url(a.stack, &opts)?);
            Ok(0)
        }
        LabCommand::Urls(a) => {
            crate::outln!("{}", lab::urls_file(a.stack, &opts)?.display());
            Ok(0)
        }
        LabCommand::Netem(a) => super::lab_netem::run(a),
    }
}

fn doctor_cmd(a: DoctorArgs) -> Result<i32> {
    if a.install_script {
        crate::out!("{}", doctor::INSTALL_SCRIPT);
        return Ok(0);
    }
    if let Some(app) = a.app.filter(|s| !s.is_app()) {
        return Err(Error::usage(format!("--app {app}: not an app stack")));
    }
    let r = doctor::check();
    crate::out!("{}", doctor::render(&r));
    let ok = match a.app {
        Some(app) => r.app_ok(app.name()),
        None => r.ok(),
    };
    Ok(if ok { 0 } else { 1 })
}

fn up_cmd(a: UpArgs, mut opts: LabOptions, explicit_prefix: bool) -> Result<i32> {
    if let Some(t) = a.timeout {
        if t.is_zero() {
            return Err(Error::usage("--timeout must be above zero"));
        }
        opts.ready_timeout = t;
    }
    let spec = StackSpec {
        stack: a.stack,
        knobs: Knobs {
            pm: a.pm,
            max_children: a.max_children,
            start_servers: a.start_servers,
            min_spare: a.min_spare,
            max_spare: a.max_spare,
            opcache: a.opcache.map(bool::from),
            keep_alive: a.keep_alive.map(bool::from),
            workers: a.workers,
            query_cache: a.query_cache.map(bool::from),
            engine: a.engine,
            tls: a.tls.then_some(true),
            http2: a.http2.then_some(true),
            web: a.app.web,
            size: a.app.size,
            backlog: a.backlog,
        },
        port: a.port,
        db_port: a.db_port,
        no_db: a.no_db,
    };
    crate::signals::install_patient();
    let info = lab::up(&spec, &opts)?;
    if a.json {
        let text = serde_json::to_string_pretty(&info)
            .map_err(|e| Error::runtime(format!("json: {e}")))?;
        crate::outln!("{text}");
    } else {
        let prefix_arg = if explicit_prefix {
            format!(
                " --prefix {}",
                shell_quote(&opts.prefix.display().to_string())
            )
        } else {
            String::new()
        };
        crate::out!("{}", summary(&info, &prefix_arg));
    }
    Ok(0)
}

/// Quotes a path for the printed example commands when it needs it.
fn shell_quote(s: &str) -> String {
    if s.chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

fn knobs_line(info: &StackInfo) -> String {
    info.knobs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What `up` prints: where to send load, what to watch, how to stop it.
fn summary(info: &StackInfo, prefix_arg: &str) -> String {
    let s = info.stack;
    let u = &info.url;
    let pids: Vec<String> = info
        .parts
        .iter()
        .map(|p| format!("{} {}", p.name, p.pid))
        .collect();
    let mut watch = info
        .watch
        .iter()
        .map(|w| format!("--watch {w}"))
        .collect::<Vec<_>>()
        .join(" ");
    // The worker pool's status pages, for the bottleneck verdict.
    if s.uses_fpm() {
        watch.push_str(&format!(" --fpm-status {u}/fpm-status"));
    }
    if s.has_mod_status() {
        watch.push_str(&format!(" --apache-status {u}/server-status"));
    }
    let mut o = format!(
        "{s} is up in {:.2}s ({}): {}\n",
        info.startup_secs,
        s.about(),
        knobs_line(info)
    );
    o.push_str(&format!("  url:     {u}\n"));
    let web = info.config.web();
    if s.is_app() {
        o.push_str(&format!(
            "  site:    {u}/ (URL list: overload lab urls {s}{prefix_arg})\n"
        ));
    }
    if s.is_web() {
        if !s.is_app() {
            o.push_str(&format!(
                "  apps:    {u}/static.html {u}/cpu.php {u}/db.php {u}/wait.php?ms=1000&jitter=250 {u}/session.php?ms=1000\n"
            ));
        }
        let mut st = Vec::new();
        if web.uses_fpm() {
            st.push(format!("{u}/fpm-status"));
        }
        if web == Stack::PhpPersistent {
            st.push(format!("{u}/worker-status"));
        }
        if s.has_mod_status() {
            st.push(format!("{u}/server-status"));
        }
        st.push(format!("{u}/opcache.php"));
        o.push_str(&format!("  status:  {}\n", st.join(" ")));
        match info.db_port {
            Some(p) => o.push_str(&format!("  db:      mariadb on 127.0.0.1:{p}\n")),
            None if !s.uses_db() => {}
            None => o.push_str("  db:      none (--no-db): db.php answers 503\n"),
        }
        if let Some(ca) = &info.ca_file {
            let protos = if info.config.http2 {
                "h2, http/1.1"
            } else {
                "http/1.1"
            };
            o.push_str(&format!(
                "  tls:     ALPN {protos}; the CA for --cacert: {}\n",
                ca.display()
            ));
        }
    } else {
        o.push_str(&format!(
            "  client:  mariadb --defaults-file={}/conf/my.cnf -uroot lab\n",
            info.dir.display()
        ));
    }
    o.push_str(&format!("  pids:    {}\n", pids.join(", ")));
    o.push_str(&format!("  watch:   {watch}\n"));
    if s.is_app() {
        o.push_str(&format!(
            "  try:     overload sweep --urls \"$(overload lab urls {s}{prefix_arg})\" --pick random {watch}\n"
        ));
    } else if s.is_web() {
        o.push_str(&format!(
            "  try:     overload sweep \"$(overload lab url {s}{prefix_arg})/wait.php\" {watch}\n"
        ));
    }
    o.push_str(&format!(
        "  files:   {} (conf/, logs/, run/)\n",
        info.dir.display()
    ));
    o.push_str(&format!("  stop:    overload lab down {s}{prefix_arg}\n"));
    o
}

fn down_cmd(a: DownArgs, opts: &LabOptions) -> Result<i32> {
    let stopped = match (a.all, a.stack) {
        (true, _) => lab::down_all(opts)?,
        (false, Some(s)) => lab::down(s, opts)?,
        (false, None) => return Err(Error::usage("lab down: name a stack or use --all")),
    };
    if stopped.is_empty() {
        match a.stack {
            Some(s) if !a.all => crate::outln!("{s} was not up in {}", opts.prefix.display()),
            _ => crate::outln!("nothing was up in {}", opts.prefix.display()),
        }
    } else {
        let names: Vec<&str> = stopped.iter().map(|s| s.name()).collect();
        crate::outln!("stopped: {}", names.join(", "));
    }
    Ok(0)
}

fn status_cmd(a: StatusArgs, opts: &LabOptions) -> Result<i32> {
    let all = lab::status(opts)?;
    if a.json {
        let text =
            serde_json::to_string_pretty(&all).map_err(|e| Error::runtime(format!("json: {e}")))?;
        crate::outln!("{text}");
        return Ok(0);
    }
    if all.is_empty() {
        crate::outln!("no stacks recorded in {}", opts.prefix.display());
        return Ok(0);
    }
    crate::outln!("prefix {}", opts.prefix.display());
    for st in &all {
        crate::outln!("{}", status_line(st));
    }
    Ok(0)
}

/// One stack's line of `lab status`: a space between every column even when one overflows
/// its width (a DEGRADED health naming its dead parts), and what comes from state.json
/// (which anyone who could write the prefix could have edited) with control characters
/// escaped.
fn status_line(st: &lab::StackStatus) -> String {
    let i = &st.info;
    let health = match &st.health {
        Health::Up => "up".to_string(),
        Health::Degraded(dead) => format!("DEGRADED (dead: {})", dead.join(", ")),
        Health::Dead => "DEAD (run `overload lab down` to clean up)".to_string(),
    };
    let pids: Vec<String> = i.parts.iter().map(|p| p.pid.to_string()).collect();
    let mut extra = String::new();
    if i.stack == Stack::Mariadb && i.auto_started {
        let users: Vec<&str> = i.held_by.iter().map(|s| s.name()).collect();
        extra = format!("  (started for {})", users.join(", "));
    }
    let line = format!(
        "{:<16} {:<8} {:<41} pids {:<14} {}{extra}",
        i.stack.name(),
        health,
        i.url,
        pids.join(","),
        knobs_line(i)
    );
    crate::units::escape_controls(&line).into_owned()
}

// The lab's enums as clap values: implemented here so that clap stays in src/cli/; the
// names and help texts come from the lab itself.
impl clap::ValueEnum for Stack {
    fn value_variants<'a>() -> &'a [Self] {
        &Stack::ALL
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()).help(self.help()))
    }
}

impl clap::ValueEnum for Pm {
    fn value_variants<'a>() -> &'a [Self] {
        &Pm::ALL
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()))
    }
}

impl clap::ValueEnum for Engine {
    fn value_variants<'a>() -> &'a [Self] {
        &Engine::ALL
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A health wider than its column still has a space before the URL, and a control
    /// character edited into state.json reaches the terminal escaped.
    #[test]
    fn status_columns_stay_apart_and_state_text_is_escaped() {
        let config = lab::StackSpec::new(Stack::NginxFpm).resolve().unwrap();
        let info = StackInfo {
            stack: Stack::NginxFpm,
            url: "http://127.0.0.1:18081\x1b[2J".into(),
            port: 18081,
            dir: "/tmp/p/nginx-fpm".into(),
            docroot: None,
            knobs: Default::default(),
            config,
            parts: Vec::new(),
            watch: Vec::new(),
            db_port: None,
            startup_secs: 0.0,
            started_unix: 0,
            auto_started: false,
            held_by: Vec::new(),
            ca_file: None,
        };
        let st = lab::StackStatus {
            info,
            health: Health::Degraded(vec!["php-fpm".into()]),
        };
        let line = status_line(&st);
        assert!(line.contains("DEGRADED (dead: php-fpm) http://"), "{line}");
        assert!(!line.contains('\x1b'), "{line}");
    }
}
