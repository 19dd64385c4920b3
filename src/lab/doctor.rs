//! `overload lab doctor`: which lab packages and programs are present, which are missing,
//! and the one command that installs them.
use std::path::Path;
use std::process::Command;

/// The Debian 12 packages of the lab. Keep in sync with scripts/install-lab.sh.
pub const PACKAGES: &[&str] = &[
    "nginx",
    "apache2",
    "apache2-utils",
    "libapache2-mod-php8.2",
    "php8.2-fpm",
    "php8.2-cli",
    "php8.2-mysql",
    "php8.2-opcache",
    "mariadb-server",
    "mariadb-client",
    "curl",
    "iproute2",
    "procps",
];

/// The packages of the application stacks, apart from the core ones above: the other stacks
/// run without them, so `lab doctor`'s exit status is about the core and `--app` asks about
/// one app. Keep in sync with scripts/install-lab.sh (APP_PACKAGES).
pub const APP_PACKAGES: &[(&str, &[&str])] = &[
    (
        "wordpress",
        &["wordpress", "wordpress-theme-twentytwentyone"],
    ),
    ("gallery", &["php8.2-gd"]),
    // Caddy (Debian's 2.6) serves HTTP/3 on its HTTPS sites.
    ("caddy-fpm", &["caddy"]),
    // The components the app loads (each brings its own dependencies: event-dispatcher,
    // http-foundation, error-handler, the contracts, psr/log, psr/container).
    (
        "symfony",
        &[
            "php-symfony-http-kernel",
            "php-symfony-dependency-injection",
            "php-symfony-config",
            "php-symfony-routing",
            "php-twig",
        ],
    ),
];

/// The programs and files the stacks run, with the package that brings each.
pub const REQUIRED: &[(&str, &str)] = &[
    ("/usr/sbin/nginx", "nginx"),
    ("/usr/sbin/apache2", "apache2"),
    ("/usr/lib/apache2/modules/mod_mpm_event.so", "apache2"),
    ("/usr/lib/apache2/modules/mod_proxy_fcgi.so", "apache2"),
    // --tls and --http2 (mod_ssl keeps its session cache in shmcb).
    ("/usr/lib/apache2/modules/mod_ssl.so", "apache2"),
    ("/usr/lib/apache2/modules/mod_socache_shmcb.so", "apache2"),
    ("/usr/lib/apache2/modules/mod_http2.so", "apache2"),
    (
        "/usr/lib/apache2/modules/libphp8.2.so",
        "libapache2-mod-php8.2",
    ),
    ("/usr/sbin/php-fpm8.2", "php8.2-fpm"),
    ("/usr/bin/php8.2", "php8.2-cli"),
    ("/usr/sbin/mariadbd", "mariadb-server"),
    ("/usr/bin/mariadb-install-db", "mariadb-server"),
    ("/usr/bin/mariadb", "mariadb-client"),
    ("/usr/bin/ab", "apache2-utils"),
];

/// The shell line that installs the lab (the repo script; the binary can print it too).
pub const INSTALL_HINT: &str = "sudo bash scripts/install-lab.sh    (outside the repo: overload lab doctor --install-script | sudo bash)";

/// The install script, embedded so the binary can hand it out from anywhere.
pub const INSTALL_SCRIPT: &str = include_str!("../../scripts/install-lab.sh");

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub present: Vec<String>,
    pub missing: Vec<String>,
    /// Programs/files missing even if dpkg says otherwise (or on a non-Debian system).
    pub missing_files: Vec<String>,
    pub versions: Vec<(String, String)>,
    pub is_root: bool,
    /// Per app stack, its packages that are not installed (empty: the app can run).
    pub apps_missing: Vec<(String, Vec<String>)>,
}

impl Report {
    pub fn ok(&self) -> bool {
        self.missing.is_empty() && self.missing_files.is_empty()
    }

    /// Whether the core and the app stack `app` can run.
    pub fn app_ok(&self, app: &str) -> bool {
        self.ok()
            && self
                .apps_missing
                .iter()
                .any(|(a, missing)| a == app && missing.is_empty())
    }
}

/// Asks dpkg which packages are installed (one call for all), then checks the files.
pub fn check() -> Report {
    let mut r = Report {
        // SAFETY: geteuid cannot fail.
        is_root: unsafe { libc::geteuid() } == 0,
        ..Report::default()
    };
    let installed = installed_packages(PACKAGES);
    for p in PACKAGES {
        let present = match &installed {
            Some(set) => set.iter().any(|s| s == p),
            // No dpkg: judge by the files below only.
            None => REQUIRED
                .iter()
                .filter(|(_, pkg)| pkg == p)
                .all(|(f, _)| Path::new(f).exists()),
        };
        if present {
            r.present.push(p.to_string());
        } else {
            r.missing.push(p.to_string());
        }
    }
    for (app, pkgs) in APP_PACKAGES {
        let have = installed_packages(pkgs).unwrap_or_default();
        let missing = pkgs.iter().filter(|p| !have.iter().any(|h| h == *p));
        r.apps_missing
            .push((app.to_string(), missing.map(|p| p.to_string()).collect()));
    }
    for (file, pkg) in REQUIRED {
        if !Path::new(file).exists() {
            r.missing_files.push(format!("{file} ({pkg})"));
        }
    }
    r.missing_files.extend(missing_nginx_modules(
        version_text("/usr/sbin/nginx", &["-V"]).as_deref(),
    ));
    for (name, prog, args) in [
        ("nginx", "/usr/sbin/nginx", &["-v"][..]),
        ("apache2", "/usr/sbin/apache2", &["-v"][..]),
        ("php", "/usr/bin/php8.2", &["-v"][..]),
        ("mariadbd", "/usr/sbin/mariadbd", &["--version"][..]),
    ] {
        if let Some(v) = version(prog, args) {
            r.versions.push((name.to_string(), v));
        }
    }
    r
}

fn installed_packages(packages: &[&str]) -> Option<Vec<String>> {
    let out = Command::new("dpkg-query")
        .arg("-W")
        .arg("-f=${Package} ${db:Status-Status}\n")
        .args(packages)
        .output()
        .ok()?;
    // dpkg-query exits 1 when some package is unknown but still lists the others.
    let text = String::from_utf8_lossy(&out.stdout);
    Some(
        text.lines()
            .filter_map(|l| l.split_once(' '))
            .filter(|(_, st)| st.trim() == "installed")
            .map(|(p, _)| p.to_string())
            .collect(),
    )
}

/// nginx's modules for `--tls` and `--http2`, compiled in (Debian's are): those that
/// `nginx -V`'s configure arguments lack. No nginx: nothing to say beyond its package.
fn missing_nginx_modules(nginx_v: Option<&str>) -> Vec<String> {
    let Some(v) = nginx_v else {
        return Vec::new();
    };
    ["http_ssl_module", "http_v2_module"]
        .iter()
        .filter(|m| !v.contains(&format!("--with-{m}")))
        .map(|m| format!("nginx built without {m} (nginx, for lab up --tls/--http2)"))
        .collect()
}

/// What `prog args` prints (stdout, or stderr: nginx -v prints there).
fn version_text(prog: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(prog).args(args).output().ok()?;
    let text = if out.stdout.is_empty() {
        out.stderr
    } else {
        out.stdout
    };
    Some(String::from_utf8_lossy(&text).into_owned())
}

/// The first line of `prog args`.
fn version(prog: &str, args: &[&str]) -> Option<String> {
    version_text(prog, args)?
        .lines()
        .next()
        .map(|l| l.trim().to_string())
}

/// The human report.
pub fn render(r: &Report) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "present: {}\n",
        if r.present.is_empty() {
            "(none)".to_string()
        } else {
            r.present.join(" ")
        }
    ));
    s.push_str(&format!(
        "missing: {}\n",
        if r.missing.is_empty() {
            "(none)".to_string()
        } else {
            r.missing.join(" ")
        }
    ));
    for f in &r.missing_files {
        s.push_str(&format!("missing file: {f}\n"));
    }
    for (name, v) in &r.versions {
        s.push_str(&format!("version: {name}: {v}\n"));
    }
    for (app, missing) in &r.apps_missing {
        if missing.is_empty() {
            s.push_str(&format!("app {app}: ok\n"));
        } else {
            s.push_str(&format!(
                "app {app}: missing {} (the other stacks run without them)\n",
                missing.join(" ")
            ));
        }
    }
    if !r.is_root {
        s.push_str(
            "note: `overload lab up` needs root (masters run as root, workers as www-data)\n",
        );
    }
    if r.ok() {
        s.push_str("ok: every lab package is installed\n");
    } else {
        s.push_str(&format!("install: {INSTALL_HINT}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_and_list_agree() {
        // The script installs exactly the packages the doctor checks.
        for p in PACKAGES {
            assert!(
                INSTALL_SCRIPT.split_whitespace().any(|w| w == *p),
                "{p} missing from scripts/install-lab.sh"
            );
        }
        for (_, pkg) in REQUIRED {
            assert!(PACKAGES.contains(pkg), "{pkg}");
        }
        for (app, pkgs) in APP_PACKAGES {
            assert!(app.parse::<super::super::Stack>().is_ok(), "{app}");
            for p in *pkgs {
                assert!(
                    INSTALL_SCRIPT.split_whitespace().any(|w| w == *p),
                    "{p} missing from scripts/install-lab.sh"
                );
            }
        }
    }

    #[test]
    fn nginx_modules_from_configure_arguments() {
        let full = "nginx version: nginx/1.22.1\nconfigure arguments: --with-http_ssl_module --with-http_v2_module";
        assert!(missing_nginx_modules(Some(full)).is_empty());
        let m = missing_nginx_modules(Some("configure arguments: --with-http_ssl_module"));
        assert_eq!(m.len(), 1);
        assert!(m[0].contains("http_v2_module"), "{m:?}");
        assert!(missing_nginx_modules(None).is_empty());
    }

    #[test]
    fn report_text() {
        let r = Report {
            present: vec!["nginx".into()],
            missing: vec!["apache2".into()],
            ..Report::default()
        };
        let t = render(&r);
        assert!(!r.app_ok("wordpress"));
        assert!(t.contains("missing: apache2"));
        let r = Report {
            apps_missing: vec![("wordpress".into(), vec!["wordpress".into()])],
            ..Report::default()
        };
        assert!(r.ok() && !r.app_ok("wordpress"));
        assert!(render(&r).contains("app wordpress: missing wordpress"));
        assert!(t.contains("install-lab.sh"));
    }
}
