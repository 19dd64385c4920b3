//! What the application stacks (wordpress, gallery, symfony) share: their URL file, clearing
//! what an earlier start left, and PHP scripts run through php-cli as the web workers' user.
//! A leaf: the stacks' own files use it; `web.rs` dispatches to them.
use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use super::process::DAEMON_PATH;
use super::state::Layout;
use crate::{Error, Result};

/// An app stack's URL file in siege's format (for `--urls`), rewritten at every start.
pub fn urls_path(l: &Layout) -> PathBuf {
    l.dir.join("urls.txt")
}

/// Removes `path` (a file, link or directory from an earlier start) if it exists.
pub(super) fn clear(path: &Path) -> Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path)?,
        Ok(_) => fs::remove_file(path)?,
        Err(_) => {}
    }
    Ok(())
}

/// Runs `script args` with php-cli as `user` (what it writes, the workers can read); its
/// stdout must contain `done` or the step fails with what PHP said.
pub(super) fn php_cli(
    what: &str,
    script: &Path,
    args: &[&str],
    user: (u32, u32),
    done: &str,
) -> Result<()> {
    let out = Command::new("php8.2")
        .args(["-d", "opcache.enable_cli=0", "-d", "memory_limit=256M"])
        .arg(script)
        .args(args)
        .env_clear()
        .env("PATH", DAEMON_PATH)
        .uid(user.0)
        .gid(user.1)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| Error::runtime(format!("{what}: cannot run php8.2: {e}")))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !stdout.contains(done) {
        return Err(Error::runtime(format!(
            "{what} failed ({}): {} {}",
            out.status,
            stdout.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}
