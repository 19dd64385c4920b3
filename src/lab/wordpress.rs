//! The WordPress stack (S2's application): Debian's `wordpress` package served from the lab
//! prefix by one of the web stacks (`--web`), its database in the prefix's MariaDB.
//!
//! - The document root is the stack's `www/`: WordPress's top-level PHP files copied (so
//!   `__DIR__` is the docroot and our wp-config.php is the one loaded, not Debian's
//!   /etc/wordpress lookup), wp-admin and wp-includes linked to /usr/share/wordpress, and a
//!   wp-content of our own with Debian's themes linked in.
//! - Installed without a browser: WordPress's `wp_install()` through php-cli.
//! - Content generated in bulk SQL (`content.sql`), once per size: database `wp_<size>`
//!   keeps a mark row; a dump under `<dir>/data/` reloads it when the datadir is fresh.
use std::fs::{self, File};
use std::os::unix::fs::{symlink, OpenOptionsExt};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use super::process::DAEMON_PATH;
use super::render::{self, render};
use super::resolve::Resolved;
use super::stacks::{Size, Stack};
use super::state::{make_dir, write_file, Layout};
use super::{apps, mariadb};
use crate::{Error, Result};

/// Where Debian installs WordPress.
pub const WORDPRESS_DIR: &str = "/usr/share/wordpress";
/// The theme the site uses: Debian's `wordpress-theme-twentytwentyone` (a classic PHP theme).
pub const THEME: &str = "twentytwentyone";
const WP_CONFIG: &str = include_str!("../../lab/templates/wordpress/wp-config.php");
const INSTALL: &str = include_str!("../../lab/templates/wordpress/install.php");
const CONTENT: &str = include_str!("../../lab/templates/wordpress/content.sql");
/// Bumped whenever content.sql or install.php change what they make: older caches are
/// then regenerated instead of reused.
const CONTENT_VERSION: u32 = 1;
/// Post n has ID POST_ID_BASE + n (content.sql).
pub const POST_ID_BASE: u64 = 100;
pub const CATEGORIES: u64 = 20;
/// Posts are spread over two years from 2022-01-01.
const SPAN_MINUTES: u64 = 2 * 365 * 24 * 60;

/// How much a size generates: S2's site (200k users, 200k posts, 2.45M comments) scaled to
/// what 2 cores build in under a minute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Content {
    pub users: u64,
    pub posts: u64,
    pub comments: u64,
}

pub fn content(size: Size) -> Content {
    match size {
        Size::Small => Content {
            users: 200,
            posts: 1_000,
            comments: 10_000,
        },
        Size::Medium => Content {
            users: 2_000,
            posts: 10_000,
            comments: 100_000,
        },
    }
}

/// The database of a size (each size is built once and kept).
pub fn database(size: Size) -> String {
    format!("wp_{}", size.name())
}

/// What the database's mark row and the dump's mark file hold when the content is complete.
fn mark(size: Size) -> String {
    let c = content(size);
    format!(
        "overload-lab wordpress content v{CONTENT_VERSION} {}: users={} posts={} comments={}",
        size.name(),
        c.users,
        c.posts,
        c.comments
    )
}

/// The bulk SQL that fills an installed WordPress database.
pub fn content_sql(size: Size) -> Result<String> {
    let c = content(size);
    let vars = [
        ("USERS", c.users.to_string()),
        ("POSTS", c.posts.to_string()),
        ("COMMENTS", c.comments.to_string()),
        ("CATEGORIES", CATEGORIES.to_string()),
        ("STEP_MINUTES", (SPAN_MINUTES / c.posts).to_string()),
        ("MARK", mark(size)),
    ];
    render("content.sql", CONTENT, &vars)
}

/// The site's URL list in siege's format (front page, posts, archives, search, a 404), for
/// `--urls`: S2 loaded its WordPress from such a list.
pub fn url_list(base: &str, size: Size) -> String {
    let c = content(size);
    let mut o = format!(
        "# WordPress ({}: {} posts, {} comments) at {base}: front page, posts, archives,\n\
         # search and a 404, written by `overload lab up wordpress`.\n",
        size.name(),
        c.posts,
        c.comments
    );
    o.push_str(&format!("{base}/\n{base}/?paged=2\n"));
    // 40 posts spread over the whole range: old and new, few and many comments alike.
    for i in 0..40 {
        o.push_str(&format!(
            "{base}/?p={}\n",
            POST_ID_BASE + 1 + i * c.posts / 40
        ));
    }
    for cat in [1, 5, 9, 13, 17] {
        // Category term ids follow the installer's "Uncategorized" (1).
        o.push_str(&format!("{base}/?cat={}\n", 1 + cat));
    }
    for m in ["202201", "202207", "202301", "202307"] {
        o.push_str(&format!("{base}/?m={m}\n"));
    }
    for a in [2, 50, 150] {
        o.push_str(&format!("{base}/?author={}\n", a.min(c.users + 1)));
    }
    for s in ["latency", "queues", "kernels"] {
        o.push_str(&format!("{base}/?s={s}\n"));
    }
    o.push_str(&format!("{base}/?p=999999999\n"));
    o
}

fn www_readable(path: &Path) -> Result<()> {
    if !path.exists() {
        return Err(Error::runtime(format!(
            "lab up wordpress: {} is missing: install Debian's wordpress and \
             wordpress-theme-{THEME} (see `overload lab doctor`)",
            path.display()
        )));
    }
    Ok(())
}

/// Random keys for wp-config.php and the admin's password, made once per prefix and kept
/// in `<dir>/data/secrets` (mode 0600): cookies survive restarts, and no two labs share them.
fn secrets(l: &Layout) -> Result<Vec<String>> {
    let path = l.data.join("secrets");
    if let Ok(text) = crate::fsutil::read_capped_text(&path, 4096, "wordpress secrets") {
        let v: Vec<String> = text.lines().map(str::to_string).collect();
        if v.len() == 9 && v.iter().all(|s| s.len() == 64) {
            return Ok(v);
        }
    }
    let mut raw = [0u8; 9 * 32];
    File::open("/dev/urandom").and_then(|mut f| std::io::Read::read_exact(&mut f, &mut raw))?;
    let v: Vec<String> = raw
        .chunks(32)
        .map(|c| c.iter().map(|b| format!("{b:02x}")).collect())
        .collect();
    make_dir(&l.data, None)?;
    let _ = fs::remove_file(&path);
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    std::io::Write::write_all(&mut f, (v.join("\n") + "\n").as_bytes())?;
    Ok(v)
}

const SALT_NAMES: [&str; 8] = [
    "AUTH_KEY",
    "SECURE_AUTH_KEY",
    "LOGGED_IN_KEY",
    "NONCE_KEY",
    "AUTH_SALT",
    "SECURE_AUTH_SALT",
    "LOGGED_IN_SALT",
    "NONCE_SALT",
];

/// Fills the document root; `www/` exists (web.rs made it).
fn docroot(
    cfg: &Resolved,
    l: &Layout,
    size: Size,
    keys: &[String],
    www_user: (u32, u32),
) -> Result<()> {
    let src = Path::new(WORDPRESS_DIR);
    www_readable(&src.join("wp-settings.php"))?;
    www_readable(&src.join("wp-content/themes").join(THEME))?;
    for entry in fs::read_dir(src)? {
        let entry = entry?;
        let name = entry.file_name();
        let name_s = name.to_string_lossy();
        let to = l.www.join(&name);
        if name_s == "wp-admin" || name_s == "wp-includes" {
            apps::clear(&to)?;
            symlink(entry.path(), &to)?;
        } else if name_s.ends_with(".php") && name_s != "wp-config.php" {
            // Copied, not linked: PHP resolves links, and __DIR__ must be the docroot.
            apps::clear(&to)?;
            fs::copy(entry.path(), &to)?;
        }
    }
    let content = l.www.join("wp-content");
    make_dir(&content, None)?;
    for d in ["themes", "plugins"] {
        make_dir(&content.join(d), None)?;
    }
    let theme = content.join("themes").join(THEME);
    apps::clear(&theme)?;
    symlink(src.join("wp-content/themes").join(THEME), &theme)?;
    make_dir(&content.join("uploads"), Some(www_user))?;
    let salts: Vec<String> = SALT_NAMES
        .iter()
        .zip(keys)
        .map(|(n, k)| format!("define('{n}', '{k}');"))
        .collect();
    let vars = [
        ("DB_NAME", database(size)),
        ("DB_PORT", cfg.db_port.to_string()),
        ("PORT", cfg.port.to_string()),
        ("WWW", l.www.display().to_string()),
        ("SALTS", salts.join("\n")),
    ];
    write_file(
        l.www.join("wp-config.php"),
        render("wp-config.php", WP_CONFIG, &vars)?,
    )?;
    // The lab's page for readiness (apache-prefork waits for it) and the OPcache check.
    for (path, text) in render::www_files(l, cfg.db_port)? {
        if path.ends_with("static.html") || path.ends_with("opcache.php") {
            write_file(path, text)?;
        }
    }
    Ok(())
}

/// A mariadb client as root over the prefix's socket, stdin from `input`.
fn client(db: &Layout, args: &[&str], input: Stdio, output: Stdio) -> Result<std::process::Output> {
    Command::new(args[0])
        .arg(format!(
            "--defaults-file={}",
            db.conf.join("my.cnf").display()
        ))
        .args(&args[1..])
        .env_clear()
        .env("PATH", DAEMON_PATH)
        .stdin(input)
        .stdout(output)
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| Error::runtime(format!("cannot run {}: {e}", args[0])))
}

fn check(what: &str, out: std::process::Output) -> Result<std::process::Output> {
    if out.status.success() {
        return Ok(out);
    }
    Err(Error::runtime(format!(
        "lab up wordpress: {what} failed ({}): {}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    )))
}

/// Whether the database holds the complete content of `size`.
fn has_content(db: &Layout, size: Size) -> bool {
    let sql = format!(
        "SELECT option_value FROM {}.wp_options WHERE option_name = 'overload_lab_content'",
        database(size)
    );
    matches!(mariadb::run_sql(db, &sql), Ok(v) if v.trim() == mark(size))
}

/// Makes sure `wp_<size>` holds the installed site and its content: at once if it does,
/// from the dump if the datadir is fresh, else by installing and generating (then dumped).
fn ensure_content(l: &Layout, size: Size, keys: &[String], www_user: (u32, u32)) -> Result<()> {
    let prefix = l.dir.parent().unwrap_or(Path::new("/"));
    let db = Layout::new(prefix, Stack::Mariadb);
    if has_content(&db, size) {
        return Ok(());
    }
    let name = database(size);
    let t0 = Instant::now();
    mariadb::run_sql(
        &db,
        &format!(
            "DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name};\n\
             GRANT ALL ON {name}.* TO 'lab'@'localhost';\n\
             GRANT ALL ON {name}.* TO 'lab'@'127.0.0.1';"
        ),
    )?;
    let dump = l.data.join(format!("{name}.sql"));
    let dump_mark = l.data.join(format!("{name}.mark"));
    let cached = crate::fsutil::read_capped_text(&dump_mark, 4096, "wordpress mark")
        .is_ok_and(|m| m.trim() == mark(size));
    if cached && dump.exists() {
        crate::eoutln!(
            "wordpress: loading the {} content from {}",
            size.name(),
            dump.display()
        );
        let out = client(
            &db,
            &["mariadb", "-uroot", &name],
            Stdio::from(File::open(&dump)?),
            Stdio::null(),
        )?;
        check("loading the dump", out)?;
        if has_content(&db, size) {
            crate::eoutln!("wordpress: loaded in {:.1}s", t0.elapsed().as_secs_f64());
            return Ok(());
        }
        // A dump without the mark row is not the content: regenerate below.
        mariadb::run_sql(
            &db,
            &format!("DROP DATABASE {name}; CREATE DATABASE {name};"),
        )?;
    }
    let c = content(size);
    crate::eoutln!(
        "wordpress: installing and generating the {} content ({} users, {} posts, {} comments) once; kept in {}",
        size.name(),
        c.users,
        c.posts,
        c.comments,
        l.data.display()
    );
    let script = l.conf.join("wp-install.php");
    let vars = [("WWW", l.www.display().to_string())];
    write_file(&script, render("install.php", INSTALL, &vars)?)?;
    apps::php_cli(
        "lab up wordpress: wp_install()",
        &script,
        &[&keys[8]],
        www_user,
        "installed",
    )?;
    mariadb::run_sql(&db, &format!("USE {name};\n{}", content_sql(size)?))?;
    if !has_content(&db, size) {
        return Err(Error::runtime(
            "lab up wordpress: the content's mark row is missing after generation",
        ));
    }
    let generated = t0.elapsed();
    // The dump: a fresh datadir (or a new prefix's MariaDB) reloads it instead.
    let tmp = dump.with_extension("sql.tmp");
    let out = client(
        &db,
        &[
            "mariadb-dump",
            "-uroot",
            "--single-transaction",
            "--skip-dump-date",
            &name,
        ],
        Stdio::null(),
        Stdio::from(File::create(&tmp)?),
    )?;
    check("mariadb-dump", out)?;
    fs::rename(&tmp, &dump)?;
    write_file(&dump_mark, mark(size) + "\n")?;
    crate::eoutln!(
        "wordpress: content generated in {:.1}s, dumped in {:.1}s",
        generated.as_secs_f64(),
        (t0.elapsed() - generated).as_secs_f64()
    );
    Ok(())
}

/// Everything before the processes start: docroot, database content, URL list.
pub(super) fn prepare(cfg: &Resolved, l: &Layout, www_user: (u32, u32)) -> Result<()> {
    let size = cfg.size.unwrap_or_default();
    make_dir(&l.data, None)?;
    let keys = secrets(l)?;
    docroot(cfg, l, size, &keys, www_user)?;
    if cfg.use_db {
        ensure_content(l, size, &keys, www_user)?;
    }
    let base = format!("http://127.0.0.1:{}", cfg.port);
    write_file(apps::urls_path(l), url_list(&base, size))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_sql_renders_each_size() {
        for size in Size::ALL {
            let sql = content_sql(size).unwrap();
            let c = content(size);
            assert!(!sql.contains("{{"));
            assert!(sql.contains(&format!("seq_1_to_{}", c.comments)));
            assert!(sql.contains(&mark(size)));
        }
        assert_ne!(mark(Size::Small), mark(Size::Medium));
    }

    #[test]
    fn the_url_list_names_existing_posts_and_one_missing() {
        for size in Size::ALL {
            let c = content(size);
            let list = url_list("http://127.0.0.1:1", size);
            let posts: Vec<u64> = list
                .lines()
                .filter_map(|l| l.strip_prefix("http://127.0.0.1:1/?p="))
                .map(|n| n.parse().unwrap())
                .collect();
            let missing: Vec<_> = posts
                .iter()
                .filter(|&&id| id <= POST_ID_BASE || id > POST_ID_BASE + c.posts)
                .collect();
            assert_eq!(missing, [&999_999_999], "{size:?}");
            assert_eq!(posts.len(), 41);
            assert!(list.contains("/?s=") && list.contains("/?cat=") && list.contains("/?m="));
        }
    }
}
