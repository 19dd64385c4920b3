//! The Symfony stack (S3's application): a small app on Debian's Symfony 5.4 components
//! (HttpKernel with a compiled container, Routing, a controller reading one row of the lab's
//! MariaDB and rendering it with Twig), served two ways (`--web`):
//!
//! - nginx-fpm: `www/index.php`, the front controller, boots the kernel on every request
//!   (with or without OPcache: `--opcache`), as any PHP-FPM application does;
//! - php-persistent: server.php's app mode loads `app/worker.php` once per worker, which
//!   boots the kernel once and serves many requests with it (S3's PHP-PM idea), each worker
//!   recycled after [`MAX_REQUESTS`] requests or [`MAX_MEMORY_MB`] of memory.
//!
//! The code lives in `<dir>/app` (outside the docroot), its cache in `<dir>/var`, rebuilt
//! and warmed through php-cli at every start so the first request pays no compilation.
use std::path::{Path, PathBuf};

use super::apps;
use super::render::{self, render};
use super::resolve::Resolved;
use super::state::{make_dir, write_file, Layout};
use crate::{Error, Result};

const APP: &str = include_str!("../../lab/templates/symfony/app.php");
const FRONT: &str = include_str!("../../lab/templates/symfony/index.php");
const WORKER: &str = include_str!("../../lab/templates/symfony/worker.php");
const WARM: &str = include_str!("../../lab/templates/symfony/warm.php");
/// Twig templates: copied as they are (their `{{ }}` are Twig's, not the lab's placeholders).
const TEMPLATES: &[(&str, &str)] = &[
    (
        "base.html.twig",
        include_str!("../../lab/templates/symfony/base.html.twig"),
    ),
    (
        "item.html.twig",
        include_str!("../../lab/templates/symfony/item.html.twig"),
    ),
];
/// Where Debian installs the components the app needs (php-symfony-*, php-twig).
const NEEDS: &[&str] = &[
    "/usr/share/php/Symfony/Component/HttpKernel/autoload.php",
    "/usr/share/php/Symfony/Component/DependencyInjection/autoload.php",
    "/usr/share/php/Symfony/Component/Config/autoload.php",
    "/usr/share/php/Symfony/Component/Routing/autoload.php",
    "/usr/share/php/Twig/autoload.php",
];
/// A persistent worker is replaced after this many requests (PHP-PM's default)...
pub const MAX_REQUESTS: u32 = 1000;
/// ...or once its PHP memory passes this many MiB (a leak must not grow without end).
pub const MAX_MEMORY_MB: u32 = 128;
/// Rows of the lab's test1 table (schema.sql): the pages `/item/1` to `/item/10000`.
pub const ROWS: u32 = 10_000;

fn app_dir(l: &Layout) -> PathBuf {
    l.dir.join("app")
}

/// The file server.php's app mode loads in each worker.
pub fn worker_file(l: &Layout) -> PathBuf {
    app_dir(l).join("worker.php")
}

/// The app's pages for `--urls`: the home page (a random row) and 20 rows spread over the
/// table, each one query and one template.
pub fn url_list(base: &str) -> String {
    let mut o = format!(
        "# The Symfony app at {base}: its home page and rows of the lab's test1 table, each\n\
         # page one query rendered with Twig; written by `overload lab up symfony`.\n{base}/\n"
    );
    for i in 0..20 {
        o.push_str(&format!("{base}/item/{}\n", 1 + i * (ROWS / 20)));
    }
    o
}

fn check_packages() -> Result<()> {
    match NEEDS.iter().find(|p| !Path::new(p).exists()) {
        Some(p) => Err(Error::runtime(format!(
            "lab up symfony: {p} is missing: install php-symfony-http-kernel, \
             php-symfony-dependency-injection, php-symfony-config, php-symfony-routing and \
             php-twig (see `overload lab doctor --app symfony`)"
        ))),
        None => Ok(()),
    }
}

/// Everything before the processes start: the app, its warmed cache, the front controller,
/// the URL file.
pub(super) fn prepare(cfg: &Resolved, l: &Layout, www_user: (u32, u32)) -> Result<()> {
    check_packages()?;
    let app = app_dir(l);
    let var = l.dir.join("var");
    let templates = app.join("templates");
    // A cache from another start may hold a container built from other settings.
    apps::clear(&var)?;
    apps::clear(&app)?;
    make_dir(&app, None)?;
    make_dir(&templates, None)?;
    make_dir(&var, Some(www_user))?;
    let app_php = app.join("app.php");
    let p = |x: &Path| x.display().to_string();
    write_file(
        &app_php,
        render(
            "symfony/app.php",
            APP,
            &[
                ("VAR", p(&var)),
                ("TEMPLATES", p(&templates)),
                ("DB_PORT", cfg.db_port.to_string()),
            ],
        )?,
    )?;
    for (name, text) in TEMPLATES {
        write_file(templates.join(name), text)?;
    }
    let app_var = [("APP", p(&app_php))];
    write_file(
        l.www.join("index.php"),
        render("symfony/index.php", FRONT, &app_var)?,
    )?;
    write_file(
        worker_file(l),
        render("symfony/worker.php", WORKER, &app_var)?,
    )?;
    let warm = app.join("warm.php");
    write_file(&warm, render("symfony/warm.php", WARM, &app_var)?)?;
    // As www-data: the workers must be able to read (and, for a new template, write) it.
    apps::php_cli(
        "lab up symfony: warming the cache",
        &warm,
        &[],
        www_user,
        "warmed",
    )?;
    // static.html (the persistent front's readiness page) and the OPcache check.
    for (path, text) in render::www_files(l, 0)? {
        if path.ends_with("static.html") || path.ends_with("opcache.php") {
            write_file(path, text)?;
        }
    }
    write_file(apps::urls_path(l), url_list(&cfg.base_url()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_app_renders_and_the_url_list_covers_the_table() {
        let app = render(
            "a",
            APP,
            &[
                ("VAR", "/v".into()),
                ("TEMPLATES", "/t".into()),
                ("DB_PORT", "13306".into()),
            ],
        )
        .unwrap();
        assert!(app.contains("const DB_PORT = 13306;"));
        assert!(app.contains(&format!("const ROWS = {ROWS};")));
        for tpl in [FRONT, WORKER, WARM] {
            assert!(render("f", tpl, &[("APP", "/a/app.php".into())])
                .unwrap()
                .contains("require '/a/app.php';"));
        }
        let list = url_list("http://127.0.0.1:1");
        let pages: Vec<&str> = list.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(pages.len(), 21);
        assert_eq!(pages[0], "http://127.0.0.1:1/");
        assert!(pages.iter().skip(1).all(|p| p
            .strip_prefix("http://127.0.0.1:1/item/")
            .is_some_and(|n| n.parse::<u32>().is_ok_and(|n| (1..=ROWS).contains(&n)))));
    }
}
