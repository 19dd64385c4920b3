//! The stack catalogue (names, ports, what each is made of) and the knobs: which apply to
//! which stack and their defaults. `resolve.rs` turns them into a checked, runnable config.
use serde::{Deserialize, Serialize};
use std::fmt;

use crate::{Error, Result};

/// The stacks of the studies that the lab can bring up.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stack {
    /// nginx + PHP-FPM (S2, S4).
    NginxFpm,
    /// Apache prefork + mod_php (S1, S2, S5).
    ApachePrefork,
    /// Apache mpm_event + PHP-FPM through mod_proxy_fcgi (S5).
    ApacheEventFpm,
    /// nginx fastcgi_cache in front of PHP-FPM (S4).
    NginxFpmCache,
    /// Long-lived pre-forked PHP workers speaking HTTP, nginx in front (S3).
    PhpPersistent,
    /// Caddy in front of PHP-FPM: with `--tls`, HTTP/1.1, HTTP/2 and HTTP/3 from one stack.
    CaddyFpm,
    /// Debian's WordPress with generated content, behind a front chosen by `--web` (S2).
    Wordpress,
    /// S4's slow image gallery (thumbnails made on request with GD), on nginx-fpm or
    /// nginx-fpm-cache (`--web`).
    Gallery,
    /// A Symfony application on Debian's components, on nginx-fpm (booted per request) or
    /// php-persistent (booted once per worker) (`--web`) (S3).
    Symfony,
    /// MariaDB with a private datadir (S1, S2).
    Mariadb,
}

impl Stack {
    /// Web stacks first and MariaDB last: `down --all` stops them in this order.
    pub const ALL: [Stack; 10] = [
        Stack::NginxFpm,
        Stack::ApachePrefork,
        Stack::ApacheEventFpm,
        Stack::NginxFpmCache,
        Stack::PhpPersistent,
        Stack::CaddyFpm,
        Stack::Wordpress,
        Stack::Gallery,
        Stack::Symfony,
        Stack::Mariadb,
    ];

    /// One line for `--help` and listings: what the stack is and which studies used it.
    pub fn help(self) -> &'static str {
        match self {
            Stack::NginxFpm => "nginx + PHP-FPM (S2, S4)",
            Stack::ApachePrefork => "Apache prefork + mod_php (S1, S2, S5)",
            Stack::ApacheEventFpm => "Apache mpm_event + PHP-FPM through mod_proxy_fcgi (S5)",
            Stack::NginxFpmCache => "nginx fastcgi_cache in front of PHP-FPM (S4)",
            Stack::PhpPersistent => {
                "Long-lived pre-forked PHP workers speaking HTTP, nginx in front (S3)"
            }
            Stack::CaddyFpm => "Caddy + PHP-FPM; with --tls it serves HTTP/3 too (protocols)",
            Stack::Wordpress => {
                "Debian's WordPress with generated content, --web picks the front (S2)"
            }
            Stack::Gallery => {
                "S4's slow image gallery (GD thumbnails per request), --web picks the front (S4)"
            }
            Stack::Symfony => {
                "A Symfony app (kernel, routes, Twig, MariaDB); --web nginx-fpm or php-persistent (S3)"
            }
            Stack::Mariadb => "MariaDB with a private datadir (S1, S2)",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Stack::NginxFpm => "nginx-fpm",
            Stack::ApachePrefork => "apache-prefork",
            Stack::ApacheEventFpm => "apache-event-fpm",
            Stack::NginxFpmCache => "nginx-fpm-cache",
            Stack::PhpPersistent => "php-persistent",
            Stack::CaddyFpm => "caddy-fpm",
            Stack::Wordpress => "wordpress",
            Stack::Gallery => "gallery",
            Stack::Symfony => "symfony",
            Stack::Mariadb => "mariadb",
        }
    }

    /// Ports clear of the usual 80/8080/3306 (see lab-probe.md).
    pub fn default_port(self) -> u16 {
        match self {
            Stack::NginxFpm => 18081,
            Stack::ApachePrefork => 18082,
            Stack::ApacheEventFpm => 18083,
            Stack::NginxFpmCache => 18084,
            Stack::PhpPersistent => 18085,
            Stack::Wordpress => 18086,
            Stack::Gallery => 18087,
            Stack::Symfony => 18088,
            Stack::CaddyFpm => 18089,
            Stack::Mariadb => 13306,
        }
    }

    /// Whether the stack serves the PHP apps (and so may need MariaDB for db.php).
    pub fn is_web(self) -> bool {
        self != Stack::Mariadb
    }

    /// Whether the stack is an application served by one of the other web stacks (`--web`).
    pub fn is_app(self) -> bool {
        !self.fronts().is_empty()
    }

    /// The web stacks an app stack can run on, the default first; empty for the others.
    pub fn fronts(self) -> &'static [Stack] {
        match self {
            Stack::Wordpress => &[Stack::NginxFpm, Stack::ApachePrefork, Stack::ApacheEventFpm],
            Stack::Gallery => &[Stack::NginxFpm, Stack::NginxFpmCache],
            Stack::Symfony => &[Stack::NginxFpm, Stack::PhpPersistent],
            _ => &[],
        }
    }

    /// Whether the stack's pages use MariaDB (the gallery's do not: S4 had no database).
    pub fn uses_db(self) -> bool {
        self.is_web() && self != Stack::Gallery
    }

    /// Whether PHP runs under PHP-FPM (so the pm knobs and /fpm-status exist).
    pub fn uses_fpm(self) -> bool {
        matches!(
            self,
            Stack::NginxFpm | Stack::ApacheEventFpm | Stack::NginxFpmCache | Stack::CaddyFpm
        )
    }

    /// Whether Apache fronts it (so /server-status, mod_status, exists).
    pub fn has_mod_status(self) -> bool {
        matches!(self, Stack::ApachePrefork | Stack::ApacheEventFpm)
    }

    pub fn knobs(self) -> &'static [Knob] {
        use Knob::*;
        match self {
            Stack::NginxFpm | Stack::NginxFpmCache | Stack::ApacheEventFpm => &[
                Pm,
                MaxChildren,
                StartServers,
                MinSpare,
                MaxSpare,
                Opcache,
                KeepAlive,
                Tls,
                Http2,
                Backlog,
            ],
            // --http2 is refused with its own reason in resolve (mod_http2 and prefork).
            Stack::ApachePrefork => &[
                Workers,
                StartServers,
                MinSpare,
                MaxSpare,
                Opcache,
                KeepAlive,
                Tls,
                Backlog,
            ],
            Stack::PhpPersistent => &[Workers, Opcache, KeepAlive, Tls, Http2, Backlog],
            // Caddy serves HTTP/2 and HTTP/3 on HTTPS by itself; its idle timeout and backlog
            // are Go's defaults.
            Stack::CaddyFpm => &[
                Pm,
                MaxChildren,
                StartServers,
                MinSpare,
                MaxSpare,
                Opcache,
                Tls,
            ],
            // Plus the knobs of the front it runs on (`resolve` adds them).
            Stack::Wordpress => &[Web, Size],
            Stack::Gallery | Stack::Symfony => &[Web],
            Stack::Mariadb => &[QueryCache, Engine],
        }
    }

    /// Process names to observe, in the `--watch label=name` form of the sweep command.
    pub fn watch(self) -> &'static [&'static str] {
        match self {
            Stack::NginxFpm | Stack::NginxFpmCache => &["php=php-fpm", "nginx=nginx"],
            Stack::ApachePrefork => &["apache=apache2"],
            Stack::ApacheEventFpm => &["apache=apache2", "php=php-fpm"],
            Stack::PhpPersistent => &["php=php", "nginx=nginx"],
            Stack::CaddyFpm => &["php=php-fpm", "caddy=caddy"],
            // The front's processes: `Resolved::web` names the front.
            Stack::Wordpress | Stack::Gallery | Stack::Symfony => &[],
            Stack::Mariadb => &["db=mariadbd"],
        }
    }

    pub fn about(self) -> &'static str {
        match self {
            Stack::NginxFpm => "nginx + PHP-FPM",
            Stack::ApachePrefork => "Apache prefork + mod_php",
            Stack::ApacheEventFpm => "Apache mpm_event + PHP-FPM (mod_proxy_fcgi)",
            Stack::NginxFpmCache => "nginx fastcgi_cache + PHP-FPM",
            Stack::PhpPersistent => "persistent pre-forked PHP workers behind nginx",
            Stack::CaddyFpm => "Caddy + PHP-FPM (HTTP/3 with --tls)",
            Stack::Wordpress => "Debian's WordPress",
            Stack::Gallery => "S4's image gallery, thumbnails made with GD on every request",
            Stack::Symfony => "a Symfony 5.4 app (HttpKernel, Routing, Twig, a MariaDB row)",
            Stack::Mariadb => "MariaDB, private datadir",
        }
    }
}

impl fmt::Display for Stack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Stack {
    type Err = Error;
    fn from_str(s: &str) -> Result<Stack> {
        Stack::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Stack::ALL.iter().map(|k| k.name()).collect();
                Error::usage(format!(
                    "unknown stack '{s}' (one of: {})",
                    names.join(", ")
                ))
            })
    }
}

/// One configurable knob, named after its command-line flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Knob {
    Pm,
    MaxChildren,
    StartServers,
    MinSpare,
    MaxSpare,
    Opcache,
    KeepAlive,
    Workers,
    QueryCache,
    Engine,
    Tls,
    Http2,
    Web,
    Size,
    Backlog,
}

impl Knob {
    pub fn flag(self) -> &'static str {
        match self {
            Knob::Pm => "--pm",
            Knob::MaxChildren => "--max-children",
            Knob::StartServers => "--start-servers",
            Knob::MinSpare => "--min-spare",
            Knob::MaxSpare => "--max-spare",
            Knob::Opcache => "--opcache",
            Knob::KeepAlive => "--keep-alive",
            Knob::Workers => "--workers",
            Knob::QueryCache => "--query-cache",
            Knob::Engine => "--engine",
            Knob::Tls => "--tls",
            Knob::Http2 => "--http2",
            Knob::Web => "--web",
            Knob::Size => "--size",
            Knob::Backlog => "--backlog",
        }
    }
}

/// PHP-FPM's process manager.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pm {
    Static,
    Dynamic,
    Ondemand,
}

impl Pm {
    pub const ALL: [Pm; 3] = [Pm::Static, Pm::Dynamic, Pm::Ondemand];

    pub fn name(self) -> &'static str {
        match self {
            Pm::Static => "static",
            Pm::Dynamic => "dynamic",
            Pm::Ondemand => "ondemand",
        }
    }
}

/// Storage engine of the lab tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    Innodb,
    Myisam,
}

impl Engine {
    pub const ALL: [Engine; 2] = [Engine::Innodb, Engine::Myisam];

    /// The name on the command line and in experiment files.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Innodb => "innodb",
            Engine::Myisam => "myisam",
        }
    }

    /// The name MariaDB uses (and reports in information_schema).
    pub fn sql_name(self) -> &'static str {
        match self {
            Engine::Innodb => "InnoDB",
            Engine::Myisam => "MyISAM",
        }
    }
}

/// How much content an app stack generates (S2's site scaled to 2 cores and minutes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Size {
    #[default]
    Small,
    Medium,
}

impl Size {
    pub const ALL: [Size; 2] = [Size::Small, Size::Medium];

    pub fn name(self) -> &'static str {
        match self {
            Size::Small => "small",
            Size::Medium => "medium",
        }
    }
}

/// Knob values as given; `None` means "the stack's default".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Knobs {
    pub pm: Option<Pm>,
    pub max_children: Option<u32>,
    pub start_servers: Option<u32>,
    pub min_spare: Option<u32>,
    pub max_spare: Option<u32>,
    pub opcache: Option<bool>,
    pub keep_alive: Option<bool>,
    pub workers: Option<u32>,
    pub query_cache: Option<bool>,
    pub engine: Option<Engine>,
    /// HTTPS on the stack's port, with the prefix's certificate (web stacks).
    pub tls: Option<bool>,
    /// HTTP/2 offered through ALPN beside HTTP/1.1 (needs `tls`).
    pub http2: Option<bool>,
    /// App stacks: the web stack serving the app (its knobs then apply too).
    pub web: Option<Stack>,
    /// App stacks: how much content to generate.
    pub size: Option<Size>,
    /// The front server's listen backlog (its accept queue's limit, capped by somaxconn).
    pub backlog: Option<u32>,
}

impl Knobs {
    pub(super) fn given(&self) -> Vec<Knob> {
        let mut v = Vec::new();
        let mut add = |set: bool, k: Knob| {
            if set {
                v.push(k)
            }
        };
        add(self.pm.is_some(), Knob::Pm);
        add(self.max_children.is_some(), Knob::MaxChildren);
        add(self.start_servers.is_some(), Knob::StartServers);
        add(self.min_spare.is_some(), Knob::MinSpare);
        add(self.max_spare.is_some(), Knob::MaxSpare);
        add(self.opcache.is_some(), Knob::Opcache);
        add(self.keep_alive.is_some(), Knob::KeepAlive);
        add(self.workers.is_some(), Knob::Workers);
        add(self.query_cache.is_some(), Knob::QueryCache);
        add(self.engine.is_some(), Knob::Engine);
        add(self.tls.is_some(), Knob::Tls);
        add(self.http2.is_some(), Knob::Http2);
        add(self.web.is_some(), Knob::Web);
        add(self.size.is_some(), Knob::Size);
        add(self.backlog.is_some(), Knob::Backlog);
        v
    }
}

/// What to bring up: a stack, its knobs, and where it listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackSpec {
    pub stack: Stack,
    pub knobs: Knobs,
    /// Listening port; `None` for the stack's default.
    pub port: Option<u16>,
    /// Port of the prefix's MariaDB if this (web) stack has to start it; default 13306.
    pub db_port: Option<u16>,
    /// Do not start or use MariaDB (db.php then answers 503).
    pub no_db: bool,
}

impl StackSpec {
    /// A stack with all defaults.
    pub fn new(stack: Stack) -> StackSpec {
        StackSpec {
            stack,
            knobs: Knobs::default(),
            port: None,
            db_port: None,
            no_db: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in Stack::ALL {
            assert_eq!(s.name().parse::<Stack>().unwrap(), s);
        }
        assert!("nginx".parse::<Stack>().is_err());
    }
}
