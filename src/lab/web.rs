//! The web stacks' start sequences: render configs and apps into the stack's directory,
//! then start the PHP side first and the web server in front of it, each waited for.
use std::fs;
use std::time::Duration;

use super::launch::{http_ready, unix_ready, Launch};
use super::process::PartInfo;
use super::render;
use super::resolve::Resolved;
use super::stacks::Stack;
use super::state::{make_dir, write_file, Layout};
use super::tls::TlsFiles;
use crate::Result;

/// Fills an app stack's document root (and its data) before its front starts.
fn prepare_app(cfg: &Resolved, l: &Layout, www_user: (u32, u32)) -> Result<()> {
    match cfg.stack {
        Stack::Wordpress => super::wordpress::prepare(cfg, l, www_user),
        Stack::Gallery => super::gallery::prepare(cfg, l, www_user),
        Stack::Symfony => super::symfony::prepare(cfg, l, www_user),
        other => Err(crate::Error::runtime(format!(
            "{other} is not an app stack"
        ))),
    }
}

/// Readiness body of static.html (its first bytes).
const STATIC_START: &str = "<!DOCTYPE html>";

fn prepare(cfg: &Resolved, l: &Layout, www_user: (u32, u32)) -> Result<()> {
    // run/ holds sockets and pid files of the previous run only; the previous run is
    // stopped by now, so start clean.
    if l.run.exists() {
        fs::remove_dir_all(&l.run)?;
    }
    // A cache kept across restarts is reloaded by nginx's cache loader and the first
    // request would be a HIT: every start is cold (lab-probe §5).
    if l.cache.exists() {
        fs::remove_dir_all(&l.cache)?;
    }
    // Logs describe the current run only, so a failure's excerpt is never an old one.
    if l.logs.exists() {
        fs::remove_dir_all(&l.logs)?;
    }
    // nginx's temp paths: its master (root) makes tmp/client_body and the others and chowns
    // them to www-data. tmp/ itself is root's and made afresh (remove_dir_all removes a
    // link, never follows it), so a worker can never have swapped one of them for a link
    // whose target that chown would reach.
    if l.tmp.exists() {
        fs::remove_dir_all(&l.tmp)?;
    }
    // The masters open their logs as root: logs/ is root's, the workers write only their
    // own file in it, made for them here.
    for d in [&l.conf, &l.run, &l.www, &l.logs, &l.tmp] {
        make_dir(d, None)?;
    }
    let php_errors = l.logs.join("php-errors.log");
    write_file(&php_errors, "")?;
    std::os::unix::fs::lchown(&php_errors, Some(www_user.0), Some(www_user.1))?;
    // The workers' own leaf directories (www-data): sessions, nginx's cache, the persistent
    // workers' sockets. No root process writes in them or chowns through them.
    make_dir(&l.sessions, Some(www_user))?;
    if cfg.web() == Stack::NginxFpmCache {
        make_dir(&l.cache, Some(www_user))?;
    }
    if cfg.web() == Stack::PhpPersistent {
        make_dir(&l.workers, Some(www_user))?;
    }
    let mut files = render::stack_files(cfg, l)?;
    if cfg.stack.is_app() {
        prepare_app(cfg, l, www_user)?;
    } else {
        // --no-db: db.php must not reach whatever MariaDB happens to listen on the default port.
        files.extend(render::www_files(
            l,
            if cfg.use_db { cfg.db_port } else { 0 },
        )?);
    }
    for (path, text) in files {
        write_file(&path, text)?;
    }
    Ok(())
}

/// server.php's APP MAX_REQUESTS MAX_MEMORY_MB: the Symfony worker with PHP-PM's limits, or
/// the built-in pages without limits (as before the app mode).
fn persistent_app_args(cfg: &Resolved, l: &Layout) -> Vec<String> {
    if cfg.stack == Stack::Symfony {
        vec![
            s(super::symfony::worker_file(l).display()),
            s(super::symfony::MAX_REQUESTS),
            s(super::symfony::MAX_MEMORY_MB),
        ]
    } else {
        vec![s("-"), s(0), s(0)]
    }
}

fn s(x: impl std::fmt::Display) -> String {
    x.to_string()
}

/// Brings a web stack up in `l`; returns its parts in start order.
pub fn launch(
    cfg: &Resolved,
    l: &Layout,
    www_user: (u32, u32),
    timeout: Duration,
) -> Result<Vec<PartInfo>> {
    prepare(cfg, l, www_user)?;
    let mut run = Launch::new(cfg.stack, timeout);
    let fpm_sock = l.run.join("php-fpm.sock");
    let opcache = if cfg.opcache { "1" } else { "0" };

    if cfg.fpm.is_some() {
        run.spawn(
            "php-fpm",
            "php-fpm8.2",
            vec![
                s("-F"),
                s("-y"),
                s(l.conf.join("php-fpm.conf").display()),
                // On the command line, so the master and every worker inherit it.
                s("-d"),
                format!("opcache.enable={opcache}"),
            ],
            &l.logs,
            vec![l.logs.join("php-fpm.log")],
            None,
        )?;
        run.wait("php-fpm socket", || unix_ready(&fpm_sock))?;
    }
    if let Some(workers) = cfg.workers {
        let dir = l.workers.clone();
        run.spawn(
            "php-server",
            "php8.2",
            vec![
                s("-d"),
                format!("opcache.enable_cli={opcache}"),
                s(l.conf.join("server.php").display()),
                s(dir.display()),
                s(workers),
                s(cfg.db_port),
                s(l.sessions.display()),
            ]
            .into_iter()
            .chain(persistent_app_args(cfg, l))
            .collect(),
            &l.logs,
            vec![],
            // The whole server runs as www-data: no privilege dropping inside PHP.
            Some(www_user),
        )?;
        run.wait("php workers", || {
            (0..workers).all(|i| unix_ready(&dir.join(format!("w{i}.sock"))))
        })?;
    }
    match cfg.web() {
        Stack::NginxFpm | Stack::NginxFpmCache | Stack::PhpPersistent => {
            run.spawn(
                "nginx",
                "nginx",
                vec![
                    s("-p"),
                    format!("{}/", l.dir.display()),
                    s("-c"),
                    s(l.conf.join("nginx.conf").display()),
                    // Otherwise the compiled-in /var/log/nginx/error.log is opened first.
                    s("-e"),
                    s(l.logs.join("nginx-error.log").display()),
                ],
                &l.logs,
                vec![l.logs.join("nginx-error.log")],
                None,
            )?;
        }
        Stack::ApachePrefork | Stack::ApacheEventFpm => {
            run.spawn(
                "apache2",
                "apache2",
                vec![
                    s("-d"),
                    s(l.dir.display()),
                    s("-f"),
                    s(l.conf.join("httpd.conf").display()),
                    s("-D"),
                    s("FOREGROUND"),
                ],
                &l.logs,
                vec![l.logs.join("apache-error.log")],
                None,
            )?;
        }
        Stack::CaddyFpm => {
            run.spawn(
                "caddy",
                "caddy",
                vec![
                    s("run"),
                    s("--config"),
                    s(l.conf.join("Caddyfile").display()),
                    s("--adapter"),
                    s("caddyfile"),
                ],
                &l.logs,
                vec![],
                None,
            )?;
        }
        Stack::Mariadb | Stack::Wordpress | Stack::Gallery | Stack::Symfony => {}
    }
    // Over HTTPS the readiness checks verify the prefix's certificate: a stack that is
    // "up" serves what a run with --cacert accepts.
    let base = cfg.base_url();
    let ca = cfg.tls.then(|| TlsFiles::new(l.prefix()).ca);
    let ready = |path: &str, body: &str| http_ready(&base, ca.as_deref(), path, 200, body);
    match cfg.web() {
        Stack::PhpPersistent => {
            run.wait("nginx", || ready("/static.html", STATIC_START))?;
            run.wait("nginx → php workers", || ready("/worker-status", "{"))?;
        }
        Stack::ApachePrefork => {
            run.wait("apache2", || ready("/static.html", STATIC_START))?;
        }
        // /fpm-ping through the web server proves both halves are up.
        _ => run.wait("web server → php-fpm", || ready("/fpm-ping", "pong"))?,
    }
    Ok(run.finish())
}
