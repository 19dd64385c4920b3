//! The php.ini found: when no probe page tells the PHP settings, the audit reads the files
//! the server's PHP reads — its php.ini, the scan directory's `*.ini` in name order, and
//! the FPM pool's `php_value`/`php_admin_value` overrides — into effective settings, each
//! with its origin (`file:line`), so the PHP rules run and their evidence names the line to
//! change. Where the files are: the running FPM master (its title names its configuration;
//! `BINARY -i` names the php.ini it reads), else `php --ini`. All reads go through
//! [`HostReads`], so tests script them and the agent answers `/php-ini` with the same code.
//!
//! Not seen: `-d` options on the master's command line (FPM rewrites its title, so they
//! are gone from /proc), `.user.ini` files and `ini_set()` in the application.
use super::php::PhpIni;
use super::reads::HostReads;
use super::Probe;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One directive's value and where it was set (`/etc/php/8.2/fpm/php.ini:409`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting {
    pub value: String,
    pub origin: String,
}

/// An FPM pool: its size and its overrides of php.ini.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Pool {
    pub name: String,
    /// Where the pool's section starts.
    pub origin: String,
    pub max_children: Option<Setting>,
    /// `php_value[k]`, `php_flag[k]`, `php_admin_value[k]`, `php_admin_flag[k]`: the last
    /// one of a name wins.
    pub overrides: BTreeMap<String, Setting>,
}

/// What was read, as the agent's `/php-ini` sends it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IniFound {
    /// How the files were found (`the php-fpm8.2 master (pid 812)`, `php --ini`).
    pub how: String,
    /// `fpm-fcgi` when the files are FPM's, `cli` for `php --ini`'s.
    pub sapi: String,
    /// The PHP version the binary reported, when it did.
    pub php: String,
    /// The ini files read, in order.
    pub files: Vec<String>,
    /// Every directive of the ini files, the last one of a name winning.
    pub settings: BTreeMap<String, Setting>,
    /// `zend_extension=` lines (they add up, none overrides another).
    pub zend_extensions: Vec<Setting>,
    pub pools: Vec<Pool>,
}

/// One `key = value` of an ini file, with its 1-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    /// The section it is in (`PHP`, `opcache`, a pool's name), empty before any.
    pub section: String,
    pub key: String,
    pub value: String,
    pub line: usize,
}

/// Parses ini text as PHP does for what the audit needs: `;` comments, `[section]` lines,
/// `key = value` with the value double- or single-quoted (kept verbatim inside) or bare
/// (cut at `;`). `[PATH=…]` and `[HOST=…]` sections apply to some scripts only and are
/// left out, like lines that are not directives.
pub fn parse(text: &str) -> Vec<Directive> {
    let mut out = Vec::new();
    let mut section = String::new();
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if l.is_empty() || l.starts_with(';') || l.starts_with('#') {
            continue;
        }
        if let Some(rest) = l.strip_prefix('[') {
            section = rest.split(']').next().unwrap_or("").trim().to_string();
            continue;
        }
        let up = section.to_ascii_uppercase();
        if up.starts_with("PATH=") || up.starts_with("HOST=") {
            continue;
        }
        let Some((k, v)) = l.split_once('=') else {
            continue;
        };
        let key = k.trim();
        if key.is_empty() {
            continue;
        }
        out.push(Directive {
            section: section.clone(),
            key: key.to_string(),
            value: value(v),
            line: i + 1,
        });
    }
    out
}

/// A value as PHP reads it: the text inside quotes, or the bare text before a `;` comment.
fn value(v: &str) -> String {
    let v = v.trim();
    for q in ['"', '\''] {
        if let Some(rest) = v.strip_prefix(q) {
            return match rest.find(q) {
                Some(end) => rest[..end].to_string(),
                None => rest.to_string(),
            };
        }
    }
    v.split(';').next().unwrap_or("").trim().to_string()
}

/// php.ini's booleans: `1`, `On`, `yes`, `true` are on; anything else is off.
pub fn is_on(v: &str) -> bool {
    matches!(
        v.trim().to_ascii_lowercase().as_str(),
        "1" | "on" | "yes" | "true"
    )
}

impl IniFound {
    /// Adds an ini file's directives: a later file overrides an earlier one.
    pub fn add_ini(&mut self, path: &str, text: &str) {
        self.files.push(path.to_string());
        for d in parse(text) {
            let s = Setting {
                value: d.value,
                origin: format!("{path}:{}", d.line),
            };
            if d.key == "zend_extension" {
                self.zend_extensions.push(s);
            } else if d.key != "extension" {
                self.settings.insert(d.key, s);
            }
        }
    }

    /// Adds an FPM configuration file's pools (its `[global]` section is not PHP's).
    /// Returns its `include=` patterns, for the caller to read in turn.
    pub fn add_fpm(&mut self, path: &str, text: &str) -> Vec<String> {
        let mut includes = Vec::new();
        for d in parse(text) {
            let at = format!("{path}:{}", d.line);
            if d.key == "include" {
                includes.push(d.value);
                continue;
            }
            if d.section.is_empty() || d.section == "global" {
                continue;
            }
            let pool = match self.pools.iter_mut().position(|p| p.name == d.section) {
                Some(i) => &mut self.pools[i],
                None => {
                    self.pools.push(Pool {
                        name: d.section.clone(),
                        origin: format!("{path}:{}", d.line),
                        ..Pool::default()
                    });
                    self.pools.last_mut().expect("just pushed")
                }
            };
            let s = Setting {
                value: d.value.clone(),
                origin: at,
            };
            if d.key == "pm.max_children" {
                pool.max_children = Some(s);
                continue;
            }
            for kind in [
                "php_admin_value[",
                "php_admin_flag[",
                "php_value[",
                "php_flag[",
            ] {
                if let Some(name) = d.key.strip_prefix(kind).and_then(|r| r.strip_suffix(']')) {
                    pool.overrides.insert(name.trim().to_string(), s.clone());
                }
            }
        }
        includes
    }

    /// A setting as a pool's workers see it: the pool's override, else the ini files'.
    pub fn get<'a>(&'a self, pool: Option<&'a Pool>, key: &str) -> Option<&'a Setting> {
        pool.and_then(|p| p.overrides.get(key))
            .or_else(|| self.settings.get(key))
    }

    /// The settings the PHP rules judge, each with its origin (PHP's default when no file
    /// sets it). With several pools, each reads its own overrides: the first pool's are
    /// shown, except memory_limit, where the largest one is what the memory plan must fit.
    pub fn effective(&self) -> PhpIni {
        let pool = self.pools.first();
        let mut p = PhpIni {
            sapi: self.sapi.clone(),
            php: if self.php.is_empty() {
                "version unknown".into()
            } else {
                self.php.clone()
            },
            ..PhpIni::default()
        };
        let mut take = |key: &str, default: &str| -> String {
            match self.get(pool, key) {
                Some(s) => {
                    p.origins.insert(key.to_string(), s.origin.clone());
                    s.value.clone()
                }
                None => {
                    p.origins
                        .insert(key.to_string(), "PHP's default".to_string());
                    default.to_string()
                }
            }
        };
        let enable = take("opcache.enable", "1");
        let memory = take("opcache.memory_consumption", "128");
        let realpath = take("realpath_cache_size", "4096K");
        let basedir = take("open_basedir", "");
        let mut memory_limit = take("memory_limit", "128M");
        let handler = take("session.save_handler", "files");
        // The pool with the largest memory_limit bounds the plan.
        for other in self.pools.iter().skip(1) {
            if let Some(s) = other.overrides.get("memory_limit") {
                let bigger = match (
                    super::php::ini_bytes(&s.value),
                    super::php::ini_bytes(&memory_limit),
                ) {
                    (None, _) => true,
                    (Some(a), Some(b)) => a > b,
                    (Some(_), None) => false,
                };
                if bigger {
                    memory_limit = s.value.clone();
                    p.origins.insert(
                        "memory_limit".into(),
                        format!("{}, pool {}", s.origin, other.name),
                    );
                }
            }
        }
        let loader = self
            .zend_extensions
            .iter()
            .find(|z| {
                Path::new(&z.value)
                    .file_stem()
                    .is_some_and(|s| s.to_string_lossy().contains("opcache"))
            })
            .cloned();
        // PHP 8.5 builds OPcache in.
        let built_in = version_at_least(&self.php, 8, 5);
        p.opcache_loaded = loader.is_some() || built_in;
        p.origins.insert(
            "zend_extension".into(),
            match (&loader, built_in) {
                (Some(z), _) => z.origin.clone(),
                (None, true) => format!("built into PHP {}", self.php),
                (None, false) => format!(
                    "no zend_extension=opcache line in the {} ini files read",
                    self.files.len()
                ),
            },
        );
        p.opcache_enabled = p.opcache_loaded && is_on(&enable);
        p.opcache_memory_consumption = Some(memory);
        p.realpath_cache_size = realpath;
        p.open_basedir = basedir;
        p.memory_limit = memory_limit;
        p.session_save_handler = handler;
        p
    }

    /// The PHP workers at most: the pools' pm.max_children (added up), with where.
    pub fn workers(&self) -> Probe<(u64, String)> {
        let mut total = 0u64;
        let mut from = Vec::new();
        for p in &self.pools {
            let Some(s) = &p.max_children else { continue };
            let n = s.value.trim().parse::<u64>().map_err(|_| {
                format!(
                    "{}: pm.max_children = {} is not a number",
                    s.origin, s.value
                )
            })?;
            total += n;
            from.push(format!("pool {} pm.max_children at {}", p.name, s.origin));
        }
        if from.is_empty() {
            return Err("no FPM pool sets pm.max_children (give --workers N)".into());
        }
        Ok((total, from.join(" + ")))
    }

    /// How the evidence lines name these settings.
    pub fn label(&self) -> String {
        let pools: Vec<&str> = self.pools.iter().map(|p| p.name.as_str()).collect();
        let pools = if pools.is_empty() {
            String::new()
        } else {
            format!(", pool {}", pools.join(", "))
        };
        format!(
            "the php.ini found ({}: {} ini files{pools})",
            self.how,
            self.files.len()
        )
    }
}

fn version_at_least(v: &str, major: u32, minor: u32) -> bool {
    let mut it = v.split('.').map(|x| x.parse::<u32>().ok());
    match (it.next().flatten(), it.next().flatten()) {
        (Some(a), Some(b)) => (a, b) >= (major, minor),
        _ => false,
    }
}

/// The line `Label => value` (or `Label: value`) of `php -i` / `php --ini` output.
fn field<'a>(out: &'a str, label: &str) -> Option<&'a str> {
    out.lines().find_map(|l| {
        let rest = l.strip_prefix(label)?.trim_start();
        let v = rest
            .strip_prefix("=>")
            .or_else(|| rest.strip_prefix(':'))?
            .trim();
        (!v.is_empty() && v != "(none)").then_some(v)
    })
}

/// What a PHP binary reports about its ini files: (php.ini, scan directory, version).
pub fn parse_info(out: &str) -> (Option<String>, Option<String>, Option<String>) {
    let ini = field(out, "Loaded Configuration File").map(str::to_string);
    let scan = field(out, "Scan this dir for additional .ini files")
        .or_else(|| field(out, "Scan for additional .ini files in"))
        .map(str::to_string);
    let version = field(out, "PHP Version").map(str::to_string);
    (ini, scan, version)
}

/// The FPM master's configuration from its process title
/// (`php-fpm: master process (/etc/php/8.2/fpm/php-fpm.conf)`).
pub fn master_conf(cmdline: &str) -> Option<&str> {
    let rest = cmdline.trim().strip_prefix("php-fpm: master process (")?;
    rest.strip_suffix(')')
}

/// The files `pattern` names: a path, or a `*` glob in its last part (FPM's `include=`).
fn expand(r: &dyn HostReads, pattern: &str, base: &Path) -> Vec<PathBuf> {
    let p = Path::new(pattern);
    let p = if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    };
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let Some((pre, post)) = name.split_once('*') else {
        return vec![p];
    };
    let dir = p.parent().unwrap_or(Path::new("/"));
    let mut found: Vec<PathBuf> = r
        .list(dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|f| {
            f.file_name().is_some_and(|n| {
                let n = n.to_string_lossy();
                n.len() >= pre.len() + post.len() && n.starts_with(pre) && n.ends_with(post)
            })
        })
        .collect();
    found.sort();
    found
}

/// Whose files the audit reads: None for a file the operator named, else only files one of
/// these users owns (root and the server's own user), so a local user cannot plant evidence.
type Owners<'a> = Option<&'a [u32]>;

fn read_as(r: &dyn HostReads, p: &Path, owners: Owners) -> Result<String, String> {
    match owners {
        None => r.read(p),
        Some(o) => r.read_owned(p, o),
    }
}

/// Reads an ini file and the scan directory's `*.ini` (sorted by name, as PHP does).
fn read_ini(
    r: &dyn HostReads,
    f: &mut IniFound,
    ini: Option<&str>,
    scan: Option<&str>,
    owners: Owners,
) {
    if let Some(ini) = ini {
        if let Ok(t) = read_as(r, Path::new(ini), owners) {
            f.add_ini(ini, &t);
        }
    }
    // PHP_INI_SCAN_DIR may list several directories.
    for dir in scan.unwrap_or("").split(':').filter(|d| !d.is_empty()) {
        let mut files: Vec<PathBuf> = r
            .list(Path::new(dir))
            .unwrap_or_default()
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "ini"))
            .collect();
        files.sort();
        for p in files {
            if let Ok(t) = read_as(r, &p, owners) {
                f.add_ini(&p.display().to_string(), &t);
            }
        }
    }
}

/// Reads an FPM configuration and the files it includes (to a small depth: FPM allows one
/// level in practice, a loop must not hang the audit).
fn read_fpm(
    r: &dyn HostReads,
    f: &mut IniFound,
    conf: &Path,
    depth: usize,
    owners: Owners,
) -> Result<(), String> {
    let t = read_as(r, conf, owners)?;
    let base = conf.parent().unwrap_or(Path::new("/")).to_path_buf();
    for inc in f.add_fpm(&conf.display().to_string(), &t) {
        if depth < 3 {
            for p in expand(r, &inc, &base) {
                let _ = read_fpm(r, f, &p, depth + 1, owners);
            }
        }
    }
    Ok(())
}

/// php.ini and its scan directory beside an FPM configuration, without running anything:
/// `DIR/php.ini` and `DIR/conf.d` (Debian's /etc/php/8.2/fpm, Alpine, RHEL's /etc with
/// /etc/php.d), or `DIR/php/` (the official Docker image's /usr/local/etc). PHP's version
/// stays unknown.
type Info = (Option<String>, Option<String>, Option<String>);
fn beside(r: &dyn HostReads, dir: &Path, owners: &[u32]) -> Info {
    for (ini, scans) in [
        (
            dir.join("php.ini"),
            vec![dir.join("conf.d"), dir.join("php.d")],
        ),
        (dir.join("php/php.ini"), vec![dir.join("php/conf.d")]),
    ] {
        if r.read_owned(&ini, owners).is_ok() {
            let scan = scans
                .into_iter()
                .find(|d| r.list(d).is_ok_and(|l| !l.is_empty()));
            return (
                Some(ini.display().to_string()),
                scan.map(|d| d.display().to_string()),
                None,
            );
        }
    }
    (None, None, None)
}

/// Whether a process of this name may run PHP or pass requests to it: PHP itself and the
/// web servers that front FPM or embed PHP. Anything else on the port (the embedded
/// target, a Node or Java server) means the PHP found here would describe another program.
pub fn may_serve_php(name: &str) -> bool {
    name.starts_with("php")
        || name.starts_with("lsphp")
        || matches!(
            name,
            "nginx"
                | "apache2"
                | "httpd"
                | "lighttpd"
                | "caddy"
                | "h2o"
                | "openresty"
                | "litespeed"
                | "frankenphp"
        )
}

/// Finds and reads the PHP settings of this host: the running FPM master's files, Apache's
/// mod_php php.ini, or what `php --ini` names when PHP itself listens. `port`: the audited
/// server's, whose listening process must be one that serves PHP (when it is visible).
/// `php_ini`/`fpm_conf`: given files, which replace what would be found.
pub fn find(
    r: &dyn HostReads,
    port: Option<u16>,
    php_ini: Option<&Path>,
    fpm_conf: Option<&Path>,
) -> Probe<IniFound> {
    let mut f = IniFound::default();
    let listener = port.and_then(|p| r.listener(p).ok());
    if php_ini.is_some() || fpm_conf.is_some() {
        f.how = "given".into();
        f.sapi = if fpm_conf.is_some() { "fpm-fcgi" } else { "" }.into();
        if let Some(ini) = php_ini {
            let t = r.read(ini)?;
            f.add_ini(&ini.display().to_string(), &t);
        }
        if let Some(conf) = fpm_conf {
            read_fpm(r, &mut f, conf, 0, None)?;
        }
        return Ok(f);
    }
    if let (Some(l), Some(port)) = (&listener, port) {
        if !may_serve_php(&l.name) {
            return Err(format!(
                "{} (pid {}) listens on port {port}, not a PHP server (give --php-probe URL, \
                 or --php-ini FILE)",
                l.name, l.pid
            ));
        }
    }
    // A master's title is only a claim (any user can start a process that reads so): only
    // masters of root, of the user the audit runs as, or of the server's own user count.
    let procs = r.processes();
    let me = r.me();
    let server = listener
        .as_ref()
        .and_then(|l| procs.iter().find(|p| p.pid == l.pid))
        .and_then(|p| p.uid);
    let trusted = |uid: u32| uid == 0 || uid == me || Some(uid) == server;
    let mut masters: Vec<(u32, String, u32)> = Vec::new();
    let mut ignored: Vec<String> = Vec::new();
    for p in &procs {
        let Some(conf) = master_conf(&p.cmd) else {
            continue;
        };
        match p.uid {
            Some(uid) if trusted(uid) => masters.push((p.pid, conf.to_string(), uid)),
            Some(uid) => ignored.push(format!("pid {} of uid {uid}", p.pid)),
            None => ignored.push(format!("pid {} of an unknown user", p.pid)),
        }
    }
    masters.sort_by_key(|m| m.0);
    let several = masters.len();
    if let Some((pid, conf, uid)) = masters.into_iter().next() {
        let owners: Vec<u32> = if uid == 0 { vec![0] } else { vec![0, uid] };
        let conf_dir = Path::new(&conf).parent().unwrap_or(Path::new("/"));
        // The master's own binary is never run: /proc/PID/exe is whatever its starter chose.
        // A php-fpm of root's on the PATH names its php.ini when its files are the master's
        // (under the directory of its configuration); else php.ini is looked for beside it.
        let bin = r.which("php-fpm");
        let info = match &bin {
            Some(b) => r.run(b, &["-i"]),
            None => Err("no php-fpm binary of root's on the PATH".into()),
        };
        let (mut ini, mut scan, mut version) = info.as_deref().map(parse_info).unwrap_or_default();
        let under = |p: &Option<String>| {
            p.as_deref()
                .is_some_and(|p| Path::new(p).starts_with(conf_dir))
        };
        let matches = under(&ini) || under(&scan);
        let name = match &bin {
            Some(b) if matches => b
                .file_name()
                .map_or("php-fpm".into(), |n| n.to_string_lossy().into_owned()),
            _ => "php-fpm".into(),
        };
        f.how = format!("the {name} master (pid {pid}), {conf}");
        if !matches {
            (ini, scan, version) = beside(r, conf_dir, &owners);
            if ini.is_some() {
                f.how.push_str(", php.ini beside it");
            }
        }
        if several > 1 {
            // Which master serves the audited site is not visible from here.
            f.how.push_str(&format!(
                "; the oldest of {several} masters (--fpm-config picks another)"
            ));
        }
        f.sapi = "fpm-fcgi".into();
        f.php = version.unwrap_or_default();
        read_ini(r, &mut f, ini.as_deref(), scan.as_deref(), Some(&owners));
        read_fpm(r, &mut f, Path::new(&conf), 0, Some(&owners))
            .map_err(|e| format!("the FPM master's {conf}: {e}"))?;
        if f.files.is_empty() {
            return Err(format!(
                "the {name} master (pid {pid}) runs, but its php.ini is not known (none of \
                 root's beside {} nor from a php-fpm of root's on the PATH: {})",
                conf_dir.display(),
                info.err()
                    .unwrap_or_else(|| "its php.ini lies elsewhere".into())
            ));
        }
        return Ok(f);
    }
    // Apache's mod_php reads its own php.ini (Debian's layout).
    if listener
        .as_ref()
        .is_some_and(|l| l.name == "apache2" || l.name == "httpd")
    {
        let mut inis: Vec<PathBuf> = r
            .list(Path::new("/etc/php"))
            .unwrap_or_default()
            .into_iter()
            .map(|v| v.join("apache2/php.ini"))
            .filter(|p| r.read_owned(p, &[0]).is_ok())
            .collect();
        inis.sort();
        if let Some(ini) = inis.pop() {
            let dir = ini.parent().unwrap_or(Path::new("/")).join("conf.d");
            f.how = format!("Apache's mod_php, {}", ini.display());
            f.sapi = "apache2handler".into();
            read_ini(
                r,
                &mut f,
                Some(&ini.display().to_string()),
                Some(&dir.display().to_string()),
                Some(&[0]),
            );
            return Ok(f);
        }
    }
    // `php --ini` describes the command line's PHP: only PHP listening itself shares it.
    if !listener.as_ref().is_some_and(|l| l.name.starts_with("php")) {
        let ignored = if ignored.is_empty() {
            String::new()
        } else {
            format!(
                "; ignored a php-fpm master title on {} (not root's, nor the server's user's)",
                ignored.join(", ")
            )
        };
        return Err(format!(
            "no php-fpm master runs here and PHP does not listen on the port itself \
             (give --php-probe URL, or --php-ini FILE){ignored}"
        ));
    }
    let php = r
        .which("php")
        .ok_or("no PHP found here: no php-fpm master runs and no php binary is on the PATH")?;
    let out = r.run(&php, &["--ini"])?;
    let (ini, scan, _) = parse_info(&out);
    f.php = r
        .run(&php, &["-r", "echo PHP_VERSION;"])
        .map(|v| v.trim().to_string())
        .unwrap_or_default();
    f.how = format!(
        "{} --ini, the command line's: a web server's PHP may read others",
        php.display()
    );
    f.sapi = "cli".into();
    let owners: Vec<u32> = [0, me].into_iter().chain(server).collect();
    read_ini(r, &mut f, ini.as_deref(), scan.as_deref(), Some(&owners));
    if f.files.is_empty() {
        return Err(format!(
            "{} --ini names no readable ini file",
            php.display()
        ));
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::gather::tests::Scripted;
    use crate::audit::host::Listener;

    /// Lines as Debian's php.ini for FPM has them (abridged, numbers kept small).
    const PHP_INI: &str = "[PHP]\n\
        ; memory_limit = 512M is only a comment\n\
        memory_limit = 256M ; the default is 128M\n\
        open_basedir = \"/srv/www:/tmp\"\n\
        realpath_cache_size = '4096K'\n\
        [Session]\n\
        session.save_handler = files\n\
        [opcache]\n\
        ;opcache.enable=1\n\
        opcache.memory_consumption=128\n\
        [PATH=/srv/www/legacy]\n\
        memory_limit = 2G\n";

    const OPCACHE_INI: &str = "; configuration for php opcache module\n\
        ; priority=10\n\
        zend_extension=opcache.so\n\
        opcache.enable = Off\n";

    const POOL: &str = "[www]\n\
        user = www-data\n\
        pm = dynamic\n\
        pm.max_children = 50\n\
        php_admin_value[memory_limit] = 512M\n\
        php_value[session.save_handler] = redis\n\
        php_admin_flag[opcache.enable] = on\n";

    #[test]
    fn values_comments_and_quotes() {
        let d = parse(PHP_INI);
        let kv: Vec<(&str, &str, usize)> = d
            .iter()
            .map(|d| (d.key.as_str(), d.value.as_str(), d.line))
            .collect();
        assert_eq!(
            kv,
            vec![
                ("memory_limit", "256M", 3),
                ("open_basedir", "/srv/www:/tmp", 4),
                ("realpath_cache_size", "4096K", 5),
                ("session.save_handler", "files", 7),
                ("opcache.memory_consumption", "128", 10),
            ],
            "comments, quotes and the [PATH=] section"
        );
        assert_eq!(value(" \"a;b\" ; c"), "a;b");
        assert!(is_on("On") && is_on("1") && is_on("yes") && !is_on("off") && !is_on(""));
    }

    #[test]
    fn a_later_file_overrides_an_earlier_one() {
        let mut f = IniFound::default();
        f.add_ini("/etc/php/8.2/fpm/php.ini", PHP_INI);
        f.add_ini("/etc/php/8.2/fpm/conf.d/10-opcache.ini", OPCACHE_INI);
        f.add_ini(
            "/etc/php/8.2/fpm/conf.d/99-local.ini",
            "memory_limit = 64M\n",
        );
        let p = f.effective();
        assert!(p.opcache_loaded);
        assert!(!p.opcache_enabled, "conf.d's opcache.enable = Off");
        assert_eq!(
            p.origins["opcache.enable"],
            "/etc/php/8.2/fpm/conf.d/10-opcache.ini:4"
        );
        assert_eq!(p.memory_limit, "64M");
        assert_eq!(
            p.origins["memory_limit"],
            "/etc/php/8.2/fpm/conf.d/99-local.ini:1"
        );
        assert_eq!(p.open_basedir, "/srv/www:/tmp");
        assert_eq!(p.origins["open_basedir"], "/etc/php/8.2/fpm/php.ini:4");
        // Unset: PHP's default, said as such.
        let bare = IniFound::default().effective();
        assert_eq!(bare.memory_limit, "128M");
        assert!(bare.origins["memory_limit"].contains("PHP's default"));
        assert!(!bare.opcache_loaded && !bare.opcache_enabled);
        assert!(bare.origins["zend_extension"].contains("no zend_extension=opcache"));
    }

    #[test]
    fn the_pools_overrides_win_and_size_the_plan() {
        let mut f = IniFound::default();
        f.add_ini("/etc/php/8.2/fpm/php.ini", PHP_INI);
        f.add_ini("/etc/php/8.2/fpm/conf.d/10-opcache.ini", OPCACHE_INI);
        let inc = f.add_fpm(
            "/etc/php/8.2/fpm/php-fpm.conf",
            "[global]\npid = /run/php/php8.2-fpm.pid\ninclude=/etc/php/8.2/fpm/pool.d/*.conf\n",
        );
        assert_eq!(inc, vec!["/etc/php/8.2/fpm/pool.d/*.conf"]);
        assert!(f.pools.is_empty(), "[global] is not a pool");
        f.add_fpm("/etc/php/8.2/fpm/pool.d/www.conf", POOL);
        let p = f.effective();
        assert!(p.opcache_enabled, "php_admin_flag wins over conf.d");
        assert_eq!(
            p.origins["opcache.enable"],
            "/etc/php/8.2/fpm/pool.d/www.conf:7"
        );
        assert_eq!(p.memory_limit, "512M");
        assert_eq!(p.session_save_handler, "redis");
        assert_eq!(
            f.workers(),
            Ok((
                50,
                "pool www pm.max_children at /etc/php/8.2/fpm/pool.d/www.conf:4".into()
            ))
        );
        // A second pool with a larger memory_limit bounds the plan; workers add up.
        f.add_fpm(
            "/etc/php/8.2/fpm/pool.d/api.conf",
            "[api]\npm.max_children = 10\nphp_admin_value[memory_limit] = 1G\n",
        );
        let p = f.effective();
        assert_eq!(p.memory_limit, "1G");
        assert!(p.origins["memory_limit"].ends_with("api.conf:3, pool api"));
        assert_eq!(f.workers().unwrap().0, 60);
        f.pools[1].max_children = Some(Setting {
            value: "lots".into(),
            origin: "api.conf:2".into(),
        });
        assert!(f.workers().unwrap_err().contains("api.conf:2"));
    }

    /// The PHP rules on the settings found: every finding names the file:line to change.
    #[test]
    fn the_rules_name_the_line_to_change() {
        use crate::audit::php::{self, PhpEvidence};
        use crate::audit::Level;
        let mut f = IniFound {
            how: "given".into(),
            sapi: "fpm-fcgi".into(),
            php: "8.2.36".into(),
            ..IniFound::default()
        };
        f.add_ini("/etc/php/8.2/fpm/php.ini", PHP_INI);
        f.add_ini("/etc/php/8.2/fpm/conf.d/10-opcache.ini", OPCACHE_INI);
        f.add_fpm(
            "/etc/php/8.2/fpm/pool.d/www.conf",
            "[www]\npm.max_children = 64\nphp_admin_value[memory_limit] = 512M\n",
        );
        let e = PhpEvidence {
            probe_url: f.label(),
            probe: Ok(f.effective()),
            fpm: Err("no FPM status page".into()),
            workers: f.workers(),
            ram_bytes: Ok(8 << 30),
        };
        let c = php::opcache(&e);
        assert_eq!(c.level, Level::High);
        assert!(
            c.evidence
                .ends_with("opcache.enable is off (/etc/php/8.2/fpm/conf.d/10-opcache.ini:4)"),
            "{c:?}"
        );
        assert!(c
            .evidence
            .starts_with("the php.ini found (given: 2 ini files, pool www)"));
        assert!(
            c.change
                .as_deref()
                .unwrap()
                .starts_with("set opcache.enable=1 where it is turned off (/etc/php/8.2/fpm/conf.d/10-opcache.ini:4)"),
            "{c:?}"
        );
        let c = php::realpath(&e);
        assert_eq!(c.level, Level::Medium);
        assert!(
            c.evidence
                .contains("open_basedir = /srv/www:/tmp (/etc/php/8.2/fpm/php.ini:4)"),
            "{c:?}"
        );
        // 64 × 512M = 32 GiB against 8 GiB: the pool's two lines are named.
        let c = php::memory_plan(&e);
        assert_eq!(c.level, Level::High);
        assert_eq!(
            c.evidence,
            "64 workers (pool www pm.max_children at /etc/php/8.2/fpm/pool.d/www.conf:2) × \
             memory_limit 512M (/etc/php/8.2/fpm/pool.d/www.conf:3) = 32,768 MiB against \
             8,192 MiB of RAM"
        );
        let c = php::sessions(&e);
        assert_eq!(c.level, Level::Low);
        assert!(
            c.evidence
                .contains("session.save_handler = files (/etc/php/8.2/fpm/php.ini:7)"),
            "{c:?}"
        );
    }

    #[test]
    fn php_info_and_master_title() {
        let info = "phpinfo()\nPHP Version => 8.2.36\n\nLoaded Configuration File => /etc/php/8.2/fpm/php.ini\nScan this dir for additional .ini files => /etc/php/8.2/fpm/conf.d\n";
        assert_eq!(
            parse_info(info),
            (
                Some("/etc/php/8.2/fpm/php.ini".into()),
                Some("/etc/php/8.2/fpm/conf.d".into()),
                Some("8.2.36".into())
            )
        );
        let ini = "Configuration File (php.ini) Path: /etc/php/8.2/cli\nLoaded Configuration File:         (none)\nScan for additional .ini files in: /etc/php/8.2/cli/conf.d\n";
        assert_eq!(
            parse_info(ini),
            (None, Some("/etc/php/8.2/cli/conf.d".into()), None)
        );
        assert_eq!(
            master_conf("php-fpm: master process (/etc/php/8.2/fpm/php-fpm.conf)"),
            Some("/etc/php/8.2/fpm/php-fpm.conf")
        );
        assert_eq!(master_conf("php-fpm: pool www"), None);
        assert!(version_at_least("8.5.0", 8, 5) && !version_at_least("8.2.36", 8, 5));
    }

    fn master(pid: u32, uid: u32) -> crate::audit::gather::Proc {
        crate::audit::gather::Proc {
            pid,
            cmd: "php-fpm: master process (/etc/php/8.2/fpm/php-fpm.conf)".into(),
            uid: Some(uid),
        }
    }

    /// A Debian host's FPM 8.2 files, root's.
    fn fpm_files(h: &mut Scripted) {
        h.files
            .insert("/etc/php/8.2/fpm/php.ini".into(), PHP_INI.into());
        h.files.insert(
            "/etc/php/8.2/fpm/conf.d/10-opcache.ini".into(),
            OPCACHE_INI.into(),
        );
        h.files.insert(
            "/etc/php/8.2/fpm/php-fpm.conf".into(),
            "[global]\ninclude=pool.d/*.conf\n".into(),
        );
        h.files
            .insert("/etc/php/8.2/fpm/pool.d/www.conf".into(), POOL.into());
    }

    /// Nothing is run to find php.ini when no php-fpm of root's names the master's files: it
    /// is read beside the master's configuration. A php-fpm whose files are another version's
    /// (8.3 beside an 8.2 master) is not taken for the master's.
    #[test]
    fn php_ini_beside_the_masters_configuration() {
        let mut h = Scripted::default();
        h.procs.push(master(812, 0));
        fpm_files(&mut h);
        let f = find(&h, None, None, None).unwrap();
        assert_eq!(
            f.files,
            vec![
                "/etc/php/8.2/fpm/php.ini",
                "/etc/php/8.2/fpm/conf.d/10-opcache.ini"
            ]
        );
        assert!(f.how.contains("php.ini beside it"), "{}", f.how);
        assert_eq!(f.php, "");
        h.programs
            .insert("php-fpm".into(), "/usr/sbin/php-fpm8.3".into());
        h.commands.insert(
            "/usr/sbin/php-fpm8.3 -i".into(),
            "PHP Version => 8.3.1\nLoaded Configuration File => /etc/php/8.3/fpm/php.ini\n".into(),
        );
        let f = find(&h, None, None, None).unwrap();
        assert_eq!(f.files[0], "/etc/php/8.2/fpm/php.ini");
        assert_eq!(f.php, "");
    }

    /// A local user's process titled as a master, or files of theirs, are not the evidence:
    /// a master of another user is ignored (and said so), a php.ini or pool file another
    /// user owns is not read.
    #[test]
    fn another_users_master_and_files_are_ignored() {
        let mut h = Scripted::default();
        h.procs.push(master(40, 1000));
        fpm_files(&mut h);
        let e = find(&h, None, None, None).unwrap_err();
        assert!(
            e.contains("ignored a php-fpm master title on pid 40 of uid 1000"),
            "{e}"
        );
        // The server's user (the listener's) may run its own master.
        h.procs.push(crate::audit::gather::Proc {
            pid: 7,
            cmd: "nginx: worker process".into(),
            uid: Some(1000),
        });
        h.listener = Some(Listener {
            pid: 7,
            name: "nginx".into(),
            nofile_soft: None,
            nofile_hard: None,
        });
        assert!(find(&h, Some(80), None, None).is_ok());
        // Root's master, but a pool file and an ini of uid 1000's: left out.
        let mut h = Scripted::default();
        h.procs.push(master(812, 0));
        fpm_files(&mut h);
        h.owners
            .insert("/etc/php/8.2/fpm/pool.d/www.conf".into(), 1000);
        h.owners
            .insert("/etc/php/8.2/fpm/conf.d/10-opcache.ini".into(), 1000);
        let f = find(&h, None, None, None).unwrap();
        assert_eq!(f.files, vec!["/etc/php/8.2/fpm/php.ini"]);
        assert!(f.pools.is_empty(), "{:?}", f.pools);
    }

    /// The whole search on a scripted host: the master's title, `-i`, conf.d in name
    /// order, the pool through `include=`.
    #[test]
    fn found_through_the_running_master() {
        let mut h = Scripted::default();
        h.procs.push(master(812, 0));
        h.programs
            .insert("php-fpm".into(), "/usr/sbin/php-fpm8.2".into());
        h.commands.insert(
            "/usr/sbin/php-fpm8.2 -i".into(),
            "PHP Version => 8.2.36\nLoaded Configuration File => /etc/php/8.2/fpm/php.ini\nScan this dir for additional .ini files => /etc/php/8.2/fpm/conf.d\n".into(),
        );
        h.files
            .insert("/etc/php/8.2/fpm/php.ini".into(), PHP_INI.into());
        h.files.insert(
            "/etc/php/8.2/fpm/conf.d/20-zz.ini".into(),
            "opcache.enable=1\n".into(),
        );
        h.files.insert(
            "/etc/php/8.2/fpm/conf.d/10-opcache.ini".into(),
            OPCACHE_INI.into(),
        );
        h.files.insert(
            "/etc/php/8.2/fpm/php-fpm.conf".into(),
            "[global]\ninclude=pool.d/*.conf\n".into(),
        );
        h.files
            .insert("/etc/php/8.2/fpm/pool.d/www.conf".into(), POOL.into());
        h.files.insert(
            "/etc/php/8.2/fpm/pool.d/www.conf.dpkg-old".into(),
            "[old]\n".into(),
        );
        let f = find(&h, Some(80), None, None).unwrap();
        assert_eq!(
            f.files,
            vec![
                "/etc/php/8.2/fpm/php.ini",
                "/etc/php/8.2/fpm/conf.d/10-opcache.ini",
                "/etc/php/8.2/fpm/conf.d/20-zz.ini"
            ]
        );
        assert_eq!(f.php, "8.2.36");
        assert_eq!(f.pools.len(), 1, "{:?}", f.pools);
        assert!(f.how.contains("php-fpm8.2 master (pid 812)"), "{}", f.how);
        assert_eq!(
            f.settings["opcache.enable"].origin, "/etc/php/8.2/fpm/conf.d/20-zz.ini:1",
            "20-zz.ini is read after 10-opcache.ini"
        );
        // The embedded target on the port: not PHP's files, said why.
        h.listener = Some(Listener {
            pid: 99,
            name: "overload".into(),
            nofile_soft: None,
            nofile_hard: None,
        });
        let e = find(&h, Some(8080), None, None).unwrap_err();
        assert!(e.contains("overload (pid 99) listens on port 8080"), "{e}");
        assert!(e.contains("--php-probe"), "{e}");
        // No master, PHP not listening: the reason, `php --ini` not taken for the server's.
        let none = Scripted::default();
        assert!(find(&none, None, None, None)
            .unwrap_err()
            .contains("no php-fpm master"));
        // PHP's built-in server listening: `php --ini`.
        let mut cli = Scripted {
            listener: Some(Listener {
                pid: 7,
                name: "php8.2".into(),
                nofile_soft: None,
                nofile_hard: None,
            }),
            ..Scripted::default()
        };
        cli.programs.insert("php".into(), "/usr/bin/php".into());
        cli.commands.insert(
            "/usr/bin/php --ini".into(),
            "Loaded Configuration File:         /etc/php/8.2/cli/php.ini\nScan for additional .ini files in: (none)\n".into(),
        );
        cli.commands
            .insert("/usr/bin/php -r echo PHP_VERSION;".into(), "8.2.36".into());
        cli.files.insert(
            "/etc/php/8.2/cli/php.ini".into(),
            "memory_limit = -1\n".into(),
        );
        let f = find(&cli, Some(8000), None, None).unwrap();
        assert_eq!(f.sapi, "cli");
        assert_eq!(f.php, "8.2.36");
        assert_eq!(f.effective().memory_limit, "-1");
    }
}
