//! Templates (kept in lab/templates and lab/www, embedded so the binary works from any
//! directory) and their rendering: `{{NAME}}` placeholders, nothing else. An unknown
//! placeholder is an error, so a typo in a template cannot reach a daemon.
use std::path::PathBuf;

use super::resolve::Resolved;
use super::stacks::{Pm, Stack};
use super::state::Layout;
use super::tls::TlsFiles;
use crate::{Error, Result};

const NGINX_FPM: &str = include_str!("../../lab/templates/nginx-fpm.conf");
const NGINX_FPM_CACHE: &str = include_str!("../../lab/templates/nginx-fpm-cache.conf");
const NGINX_PERSISTENT: &str = include_str!("../../lab/templates/nginx-persistent.conf");
const PHP_FPM: &str = include_str!("../../lab/templates/php-fpm.conf");
const HTTPD_PREFORK: &str = include_str!("../../lab/templates/httpd-prefork.conf");
const HTTPD_EVENT_FPM: &str = include_str!("../../lab/templates/httpd-event-fpm.conf");
const CADDY_FPM: &str = include_str!("../../lab/templates/caddy-fpm.caddyfile");
const FASTCGI_PARAMS: &str = include_str!("../../lab/templates/fastcgi_params");
const NGINX_MIME: &str = include_str!("../../lab/templates/mime.types");
const APACHE_MIME: &str = include_str!("../../lab/templates/apache-mime.types");
const PHP_SERVER: &str = include_str!("../../lab/templates/php-server.php");
const MY_CNF: &str = include_str!("../../lab/templates/my.cnf");
const SCHEMA: &str = include_str!("../../lab/templates/schema.sql");

/// The document root of every web stack: (file name, template).
const WWW: &[(&str, &str)] = &[
    ("static.html", include_str!("../../lab/www/static.html")),
    ("index.html", include_str!("../../lab/www/index.html")),
    ("cpu.php", include_str!("../../lab/www/cpu.php")),
    ("db.php", include_str!("../../lab/www/db.php")),
    ("wait.php", include_str!("../../lab/www/wait.php")),
    ("session.php", include_str!("../../lab/www/session.php")),
    ("opcache.php", include_str!("../../lab/www/opcache.php")),
    // `overload audit --lab`: the PHP settings the audit checks, as JSON.
    ("audit.php", include_str!("../../lab/www/audit.php")),
];

/// Where Debian keeps Apache's modules (loaded directly, /etc/apache2 is never read).
pub const APACHE_MODULES: &str = "/usr/lib/apache2/modules";

/// Replaces every `{{NAME}}` in `template` by its value in `vars`.
pub fn render(name: &str, template: &str, vars: &[(&str, String)]) -> Result<String> {
    let mut out = String::with_capacity(template.len() + 256);
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .ok_or_else(|| Error::runtime(format!("template {name}: unclosed {{{{")))?;
        let key = &after[..end];
        let value = vars
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
            .ok_or_else(|| {
                Error::runtime(format!("template {name}: no value for {{{{{key}}}}}"))
            })?;
        out.push_str(value);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The placeholders every template may use: the stack's directories and port.
fn common_vars(l: &Layout, stack: Stack, port: u16) -> Vec<(&'static str, String)> {
    let p = |x: &PathBuf| x.display().to_string();
    vec![
        ("STACK", stack.name().to_string()),
        ("DIR", p(&l.dir)),
        ("CONF", p(&l.conf)),
        ("RUN", p(&l.run)),
        ("LOGS", p(&l.logs)),
        ("TMP", p(&l.tmp)),
        ("SESSIONS", p(&l.sessions)),
        ("WWW", p(&l.www)),
        ("CACHE", p(&l.cache)),
        ("DATA", p(&l.data)),
        ("PORT", port.to_string()),
        ("MODULES", APACHE_MODULES.to_string()),
    ]
}

/// Config files of a web stack, as (path, contents).
pub fn stack_files(cfg: &Resolved, l: &Layout) -> Result<Vec<(PathBuf, String)>> {
    // An app stack is rendered as the front that serves it.
    let stack = cfg.web();
    let mut vars = common_vars(l, stack, cfg.port);
    vars.push((
        "KEEPALIVE_TIMEOUT",
        if cfg.keep_alive { "65" } else { "0" }.to_string(),
    ));
    vars.push((
        "KEEPALIVE",
        if cfg.keep_alive { "On" } else { "Off" }.to_string(),
    ));
    vars.push((
        "OPCACHE_FLAG",
        if cfg.opcache { "On" } else { "Off" }.to_string(),
    ));
    vars.push(("CACHE_VALID", "60s".to_string()));
    vars.extend(tls_vars(cfg, l));
    vars.push(("BACKLOG", cfg.backlog.to_string()));
    vars.extend(app_route_vars(cfg.stack));
    let mut files = Vec::new();
    if let Some(f) = &cfg.fpm {
        let extra = match f.pm {
            Pm::Static => "; pm = static: all max_children workers start at once".to_string(),
            Pm::Dynamic => format!(
                "pm.start_servers = {}\npm.min_spare_servers = {}\npm.max_spare_servers = {}",
                f.start_servers, f.min_spare, f.max_spare
            ),
            Pm::Ondemand => "pm.process_idle_timeout = 10s".to_string(),
        };
        let mut v = vars.clone();
        v.push(("PM", f.pm.name().to_string()));
        v.push(("MAX_CHILDREN", f.max_children.to_string()));
        v.push(("PM_EXTRA", extra));
        files.push((
            l.conf.join("php-fpm.conf"),
            render("php-fpm.conf", PHP_FPM, &v)?,
        ));
    }
    if let Some(p) = &cfg.prefork {
        vars.push(("WORKERS", p.workers.to_string()));
        vars.push(("START_SERVERS", p.start_servers.to_string()));
        vars.push(("MIN_SPARE", p.min_spare.to_string()));
        vars.push(("MAX_SPARE", p.max_spare.to_string()));
    }
    match stack {
        Stack::NginxFpm | Stack::NginxFpmCache | Stack::PhpPersistent => {
            let (name, tpl) = match stack {
                Stack::NginxFpm => ("nginx-fpm.conf", NGINX_FPM),
                Stack::NginxFpmCache => ("nginx-fpm-cache.conf", NGINX_FPM_CACHE),
                _ => ("nginx-persistent.conf", NGINX_PERSISTENT),
            };
            if let Some(w) = cfg.workers {
                let servers: Vec<String> = (0..w)
                    .map(|i| format!("        server unix:{}/w{i}.sock;", l.workers.display()))
                    .collect();
                vars.push(("UPSTREAM_SERVERS", servers.join("\n")));
                files.push((l.conf.join("server.php"), PHP_SERVER.to_string()));
            }
            files.push((l.conf.join("nginx.conf"), render(name, tpl, &vars)?));
            files.push((
                l.conf.join("fastcgi_params"),
                render("fastcgi_params", FASTCGI_PARAMS, &vars)?,
            ));
            files.push((l.conf.join("mime.types"), NGINX_MIME.to_string()));
        }
        Stack::ApachePrefork | Stack::ApacheEventFpm => {
            let (name, tpl) = if stack == Stack::ApachePrefork {
                ("httpd-prefork.conf", HTTPD_PREFORK)
            } else {
                ("httpd-event-fpm.conf", HTTPD_EVENT_FPM)
            };
            files.push((l.conf.join("httpd.conf"), render(name, tpl, &vars)?));
            files.push((l.conf.join("mime.types"), APACHE_MIME.to_string()));
        }
        Stack::CaddyFpm => {
            files.push((
                l.conf.join("Caddyfile"),
                render("caddy-fpm.caddyfile", CADDY_FPM, &vars)?,
            ));
        }
        Stack::Mariadb | Stack::Wordpress | Stack::Gallery | Stack::Symfony => {
            return Err(Error::runtime(format!(
                "stack_files: {stack} is not a web front"
            )));
        }
    }
    Ok(files)
}

/// nginx's routing of paths that are no file: Symfony's routes go to its front controller
/// (nginx-fpm) or to the workers (php-persistent); the other stacks answer 404 as before.
fn app_route_vars(stack: Stack) -> Vec<(&'static str, String)> {
    if stack != Stack::Symfony {
        return vec![
            ("FRONT_CONTROLLER", String::new()),
            ("PERSISTENT_TRY", "$uri $uri/ =404".to_string()),
        ];
    }
    vec![
        (
            "FRONT_CONTROLLER",
            "        # The app's routes: a path that is no file goes to its front controller.\n        \
             location / {\n            try_files $uri /index.php$is_args$args;\n        }\n"
                .to_string(),
        ),
        ("PERSISTENT_TRY", "$uri @workers".to_string()),
    ]
}

/// The TLS lines of nginx and Apache: empty without `--tls`, so plain stacks render as before.
fn tls_vars(cfg: &Resolved, l: &Layout) -> Vec<(&'static str, String)> {
    if !cfg.tls {
        return vec![
            ("LISTEN_TLS", String::new()),
            ("NGINX_TLS", String::new()),
            ("APACHE_TLS", String::new()),
            ("CADDY_SITE", caddy_site("http", cfg.port)),
            ("CADDY_TLS", String::new()),
        ];
    }
    let f = TlsFiles::new(l.prefix());
    let (cert, key) = (f.cert.display(), f.key.display());
    let listen = if cfg.http2 { " ssl http2" } else { " ssl" };
    // Resumption as a production server has it: TLS 1.2 session ids in a shared cache and
    // tickets (TLS 1.3 resumes by ticket only); a run chooses with --tls-resumption.
    let nginx = format!(
        "        ssl_certificate {cert};\n        ssl_certificate_key {key};\n        \
         ssl_protocols TLSv1.2 TLSv1.3;\n        ssl_session_cache shared:lab_tls:10m;\n        \
         ssl_session_tickets on;\n"
    );
    let mut apache = format!(
        "LoadModule socache_shmcb_module {APACHE_MODULES}/mod_socache_shmcb.so\n\
         LoadModule ssl_module {APACHE_MODULES}/mod_ssl.so\n"
    );
    if cfg.http2 {
        apache.push_str(&format!(
            "LoadModule http2_module {APACHE_MODULES}/mod_http2.so\nProtocols h2 http/1.1\n"
        ));
    }
    apache.push_str(&format!(
        "SSLEngine on\nSSLCertificateFile {cert}\nSSLCertificateKeyFile {key}\n\
         SSLProtocol -all +TLSv1.2 +TLSv1.3\nSSLSessionCache shmcb:{}/ssl_scache(512000)\n\
         SSLSessionTickets on\n",
        l.run.display()
    ));
    vec![
        ("LISTEN_TLS", listen.to_string()),
        ("NGINX_TLS", nginx),
        ("APACHE_TLS", apache),
        ("CADDY_SITE", caddy_site("https", cfg.port)),
        ("CADDY_TLS", format!("\ttls {cert} {key}\n")),
    ]
}

/// Caddy's site addresses: its hosts are also a match on the request's Host, so the stack
/// side of a `lab netem` path (whose relay brings the load to this port) is named beside
/// loopback; any other Host gets Caddy's empty answer, as before.
fn caddy_site(scheme: &str, port: u16) -> String {
    let stack = super::netem::STACK_ADDR;
    format!("{scheme}://127.0.0.1:{port}, {scheme}://{stack}:{port}")
}

/// The apps of the document root; db.php gets the database port.
pub fn www_files(l: &Layout, db_port: u16) -> Result<Vec<(PathBuf, String)>> {
    let vars = [("DB_PORT", db_port.to_string())];
    WWW.iter()
        .chain(super::login::PAGES)
        .map(|(name, tpl)| Ok((l.www.join(name), render(name, tpl, &vars)?)))
        .collect()
}

/// MariaDB's my.cnf.
pub fn my_cnf(l: &Layout, port: u16, query_cache: bool, engine: &str) -> Result<String> {
    let mut vars = common_vars(l, Stack::Mariadb, port);
    vars.push(("ENGINE", engine.to_string()));
    vars.push((
        "QUERY_CACHE_TYPE",
        if query_cache { "1" } else { "0" }.to_string(),
    ));
    vars.push((
        "QUERY_CACHE_SIZE",
        if query_cache { "16M" } else { "0" }.to_string(),
    ));
    render("my.cnf", MY_CNF, &vars)
}

/// The idempotent schema and seed data, for the chosen engine.
pub fn schema(engine: &str) -> Result<String> {
    render("schema.sql", SCHEMA, &[("ENGINE", engine.to_string())])
}

#[cfg(test)]
mod tests {
    use super::super::stacks::{Knobs, StackSpec};
    use super::*;
    use std::path::Path;

    #[test]
    fn placeholders() {
        let v = [("A", "1".to_string()), ("B", "two".to_string())];
        assert_eq!(render("t", "x{{A}}y{{B}}{{A}}", &v).unwrap(), "x1ytwo1");
        assert!(render("t", "{{C}}", &v).is_err());
        assert!(render("t", "{{A", &v).is_err());
        assert_eq!(render("t", "no vars", &v).unwrap(), "no vars");
    }

    #[test]
    fn every_stack_renders_completely() {
        for stack in Stack::ALL {
            let l = Layout::new(Path::new("/tmp/ol"), stack);
            if stack == Stack::Mariadb {
                let c = my_cnf(&l, 13306, true, "InnoDB").unwrap();
                assert!(c.contains("query_cache_type = 1"));
                assert!(c.contains("datadir = /tmp/ol/mariadb/data"));
                assert!(schema("MyISAM").unwrap().contains("ENGINE = MyISAM"));
                continue;
            }
            for pm in [Pm::Static, Pm::Dynamic, Pm::Ondemand] {
                let mut spec = StackSpec::new(stack);
                if stack.uses_fpm() {
                    spec.knobs = Knobs {
                        pm: Some(pm),
                        ..Knobs::default()
                    };
                }
                let cfg = spec.resolve().unwrap();
                let files = stack_files(&cfg, &l).unwrap();
                for (path, text) in &files {
                    assert!(path.starts_with("/tmp/ol"), "{path:?}");
                    // PHP's own `{` blocks are fine; only our markers must be gone.
                    assert!(!text.contains("{{"), "{path:?} keeps a placeholder");
                }
                let conf = files.iter().map(|(_, t)| t.as_str()).collect::<String>();
                assert!(conf.contains(&format!("127.0.0.1:{}", cfg.port)));
                if stack == Stack::CaddyFpm {
                    // Reached across a `lab netem` path too (its Host is that address).
                    assert!(conf.contains(&format!("http://10.77.0.2:{} {{", cfg.port)));
                }
            }
        }
        let www = www_files(&Layout::new(Path::new("/tmp/ol"), Stack::NginxFpm), 13399).unwrap();
        // --tls: the prefix's certificate; --http2 on the listener or as a Protocols line.
        for (stack, h2) in [
            (Stack::NginxFpm, true),
            (Stack::PhpPersistent, false),
            (Stack::ApacheEventFpm, true),
            (Stack::ApachePrefork, false),
        ] {
            let mut spec = StackSpec::new(stack);
            spec.knobs.tls = Some(true);
            spec.knobs.http2 = h2.then_some(true);
            let cfg = spec.resolve().unwrap();
            let l = Layout::new(Path::new("/tmp/ol"), stack);
            let conf: String = stack_files(&cfg, &l)
                .unwrap()
                .into_iter()
                .map(|(_, t)| t)
                .collect();
            assert!(conf.contains("/tmp/ol/tls/cert.pem"), "{stack}");
            assert!(conf.contains("/tmp/ol/tls/key.pem"), "{stack}");
            let says_h2 = conf.contains(" ssl http2 ") || conf.contains("Protocols h2 http/1.1");
            assert_eq!(says_h2, h2, "{stack}");
            if stack.name().starts_with("apache") {
                assert!(conf.contains("SSLEngine on"), "{stack}");
            } else {
                assert!(conf.contains(" ssl"), "{stack}");
            }
        }
        // Symfony's routes reach its front controller (FPM) or the workers (persistent);
        // the plain stacks keep answering 404 for paths that are no file.
        let conf = |stack, web| {
            let mut spec = StackSpec::new(stack);
            spec.knobs.web = web;
            let cfg = spec.resolve().unwrap();
            let l = Layout::new(Path::new("/tmp/ol"), stack);
            stack_files(&cfg, &l)
                .unwrap()
                .into_iter()
                .find(|(p, _)| p.ends_with("nginx.conf"))
                .unwrap()
                .1
        };
        assert!(conf(Stack::Symfony, None).contains("try_files $uri /index.php$is_args$args;"));
        assert!(!conf(Stack::NginxFpm, None).contains("/index.php$is_args"));
        let persistent = conf(Stack::Symfony, Some(Stack::PhpPersistent));
        assert!(persistent.contains("try_files $uri @workers;"));
        assert!(persistent.contains("location @workers {"));
        assert!(conf(Stack::PhpPersistent, None).contains("try_files $uri $uri/ =404;"));
        let db = www.iter().find(|(p, _)| p.ends_with("db.php")).unwrap();
        assert!(db.1.contains("13399"));
        let st = www
            .iter()
            .find(|(p, _)| p.ends_with("static.html"))
            .unwrap();
        assert_eq!(st.1.len(), 22 * 1024, "S1's static page is 22 KiB");
    }
}
