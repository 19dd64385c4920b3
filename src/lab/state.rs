//! The prefix on disk: one directory per stack, a JSON state file recording what `up`
//! started (so `down` and `status` work from another process), and a lock so two
//! `overload lab` commands on the same prefix do not interleave.
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

use super::process::PartInfo;
use super::resolve::Resolved;
use super::stacks::Stack;
use crate::{Error, Result};

/// Where a stack's files live: `<prefix>/<stack>/{conf,run,logs,tmp,sessions,www,cache,data}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub dir: PathBuf,
    pub conf: PathBuf,
    pub run: PathBuf,
    /// php-persistent's worker sockets (owned by www-data, which runs the workers).
    pub workers: PathBuf,
    pub logs: PathBuf,
    pub tmp: PathBuf,
    pub sessions: PathBuf,
    pub www: PathBuf,
    pub cache: PathBuf,
    pub data: PathBuf,
}

impl Layout {
    pub fn new(prefix: &Path, stack: Stack) -> Layout {
        let dir = prefix.join(stack.name());
        Layout {
            conf: dir.join("conf"),
            run: dir.join("run"),
            workers: dir.join("run").join("workers"),
            logs: dir.join("logs"),
            tmp: dir.join("tmp"),
            sessions: dir.join("sessions"),
            www: dir.join("www"),
            cache: dir.join("cache"),
            data: dir.join("data"),
            dir,
        }
    }

    /// The prefix the stack's directory lives in.
    pub fn prefix(&self) -> &Path {
        self.dir.parent().unwrap_or(&self.dir)
    }

    pub fn state_file(&self) -> PathBuf {
        self.dir.join("state.json")
    }
}

/// What `up` started, as saved in `<prefix>/<stack>/state.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StackInfo {
    pub stack: Stack,
    /// `http://127.0.0.1:PORT` for web stacks, `mysql://lab:labpass@127.0.0.1:PORT/lab` for MariaDB.
    pub url: String,
    pub port: u16,
    /// The stack's directory inside the prefix.
    pub dir: PathBuf,
    /// Document root (web stacks).
    pub docroot: Option<PathBuf>,
    /// Effective knob values (`pm`, `max-children`, `opcache`, ...).
    pub knobs: BTreeMap<String, String>,
    /// The full resolved configuration the stack was rendered from.
    pub config: Resolved,
    /// Started processes, in start order (stopped in reverse).
    pub parts: Vec<PartInfo>,
    /// `--watch label=process` arguments for observing this stack.
    pub watch: Vec<String>,
    /// The MariaDB port the apps use (web stacks with a database).
    pub db_port: Option<u16>,
    /// Seconds from the first spawn to readiness.
    pub startup_secs: f64,
    /// Unix time of the start.
    pub started_unix: u64,
    /// MariaDB only: started on behalf of a web stack rather than by `lab up mariadb`.
    #[serde(default)]
    pub auto_started: bool,
    /// MariaDB only: web stacks using it that did not bring their own.
    #[serde(default)]
    pub held_by: Vec<Stack>,
    /// Web stacks with `--tls`: the CA that signed the stack's certificate (`--cacert`).
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
}

/// Largest state.json read (a stack's is a few KiB).
const MAX_STATE_FILE: u64 = 1 << 20;

pub fn read_state(prefix: &Path, stack: Stack) -> Result<Option<StackInfo>> {
    let path = Layout::new(prefix, stack).state_file();
    if let Err(e) = fs::symlink_metadata(&path) {
        if e.kind() == std::io::ErrorKind::NotFound {
            return Ok(None);
        }
    }
    let text = crate::fsutil::read_capped_text(&path, MAX_STATE_FILE, "lab state")
        .map_err(Error::runtime)?;
    serde_json::from_str(&text).map(Some).map_err(|e| {
        Error::runtime(format!(
            "{}: unreadable state ({e}); remove it after checking no process of it runs",
            path.display()
        ))
    })
}

/// Writes the state atomically (temp file + rename): a reader never sees half a file.
pub fn write_state(prefix: &Path, info: &StackInfo) -> Result<()> {
    let path = Layout::new(prefix, info.stack).state_file();
    let text =
        serde_json::to_string_pretty(info).map_err(|e| Error::runtime(format!("state: {e}")))?;
    write_file(&path, text + "\n")
}

pub fn remove_state(prefix: &Path, stack: Stack) -> Result<()> {
    match fs::remove_file(Layout::new(prefix, stack).state_file()) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

/// An exclusive flock on `<prefix>/.lock`, released on drop (the fd is close-on-exec, so
/// the daemons never inherit it).
pub struct PrefixLock {
    _file: fs::File,
}

pub fn lock(prefix: &Path) -> Result<PrefixLock> {
    let path = prefix.join(".lock");
    // Never through a link (a dangling one would make root create its target), never a FIFO.
    let file = crate::fsutil::open_append(&path)?;
    // SAFETY: flock on a descriptor we own; blocks until the other command is done.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
    if rc != 0 {
        return Err(Error::runtime(format!(
            "cannot lock {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        )));
    }
    Ok(PrefixLock { _file: file })
}

/// The uid/gid of www-data, the user the workers run as.
pub fn www_data() -> Result<(u32, u32)> {
    let name = c"www-data";
    // SAFETY: getpwnam returns a pointer into static storage or null; we copy two integers
    // out immediately and keep no reference.
    let pw = unsafe { libc::getpwnam(name.as_ptr()) };
    if pw.is_null() {
        return Err(Error::runtime(
            "user www-data does not exist (install the lab packages: `overload lab doctor`)",
        ));
    }
    // SAFETY: non-null, points at a valid passwd record (see above).
    let (uid, gid) = unsafe { ((*pw).pw_uid, (*pw).pw_gid) };
    Ok((uid, gid))
}

/// Every directory from / to `dir` must be searchable by www-data (o+x, or owned by
/// it): a prefix under /root (mode 700) gives 403 / "File not found" from the workers.
pub fn check_traversable(dir: &Path, www: (u32, u32)) -> Result<()> {
    let (www_uid, www_gid) = www;
    let mut p = PathBuf::new();
    for c in dir.components() {
        p.push(c);
        let Ok(m) = fs::metadata(&p) else {
            break; // not created yet: we create it 0755 below
        };
        let ok = m.mode() & 0o001 != 0
            || (m.uid() == www_uid && m.mode() & 0o100 != 0)
            || (m.gid() == www_gid && m.mode() & 0o010 != 0);
        if !ok {
            return Err(Error::usage(format!(
                "prefix {} is not traversable by www-data: {} has mode {:o}; choose another --prefix (e.g. under /tmp)",
                dir.display(),
                p.display(),
                m.mode() & 0o7777
            )));
        }
    }
    Ok(())
}

/// Creates the prefix (and parents) private to its user: mode 0710, group www-data, so the
/// workers (www-data) can reach their stack's files through it but no other user can enter
/// or list it (config files, logs and sessions live below). A prefix that exists and
/// belongs to someone else, or that another user can write (or whose parent they can write,
/// but for a sticky one like /tmp), is refused: they could plant links where `up` renders
/// and the daemons run as root.
pub fn make_prefix(dir: &Path, www_gid: u32) -> Result<()> {
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    for up in dir.ancestors().skip(1) {
        let Ok(m) = fs::metadata(up) else {
            continue; // not created yet: created below, ours
        };
        let sticky = m.mode() & 0o1000 != 0;
        let why = if m.uid() != 0 && m.uid() != me {
            format!("belongs to uid {}, who", m.uid())
        } else if crate::fsutil::writable_by_others(&m) && !sticky {
            format!(
                "can be written by other users (mode {:o})",
                m.mode() & 0o7777
            )
        } else {
            continue;
        };
        return Err(Error::usage(format!(
            "prefix {}: {} {why} could replace the prefix while root's daemons read it; choose another --prefix",
            dir.display(),
            up.display()
        )));
    }
    fs::create_dir_all(dir)
        .map_err(|e| Error::runtime(format!("cannot create {}: {e}", dir.display())))?;
    let m = fs::metadata(dir).map_err(|e| Error::runtime(format!("{}: {e}", dir.display())))?;
    if m.uid() != me {
        return Err(Error::usage(format!(
            "prefix {} belongs to uid {}, not to you (uid {me}); choose another --prefix",
            dir.display(),
            m.uid()
        )));
    }
    if crate::fsutil::writable_by_others(&m) {
        return Err(Error::usage(format!(
            "prefix {}: other users can write it (mode {:o}), and could have planted links in it; choose another --prefix",
            dir.display(),
            m.mode() & 0o7777
        )));
    }
    std::os::unix::fs::chown(dir, None, Some(www_gid))
        .map_err(|e| Error::runtime(format!("cannot chgrp {}: {e}", dir.display())))?;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o710))
        .map_err(|e| Error::runtime(format!("cannot chmod {}: {e}", dir.display())))
}

/// Creates `dir` with mode 0755, owned by root or by `owner` (the workers' own leaf
/// directories). An existing `dir` must be a real directory (not a link), owned by root or
/// `owner`, that no other user can write: else it is refused, never written or chowned
/// through. Its parent is the prefix or a directory made here before it.
pub fn make_dir(dir: &Path, owner: Option<(u32, u32)>) -> Result<()> {
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    let refuse = |why: String| {
        Err(Error::usage(format!(
            "{} {why}; remove it or choose another --prefix",
            dir.display()
        )))
    };
    match fs::symlink_metadata(dir) {
        Ok(m) if m.file_type().is_symlink() => {
            return refuse("is a symbolic link, not a directory lab up made".into())
        }
        Ok(m) if !m.is_dir() => return refuse("is not a directory".into()),
        Ok(m) if m.uid() != me && Some(m.uid()) != owner.map(|o| o.0) => {
            return refuse(format!("belongs to uid {}, not to root", m.uid()))
        }
        Ok(m) if crate::fsutil::writable_by_others(&m) => {
            return refuse(format!(
                "can be written by other users (mode {:o})",
                m.mode() & 0o7777
            ))
        }
        Ok(_) => {}
        Err(_) => fs::create_dir_all(dir)
            .map_err(|e| Error::runtime(format!("cannot create {}: {e}", dir.display())))?,
    }
    fs::set_permissions(dir, fs::Permissions::from_mode(0o755))?;
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(dir, Some(uid), Some(gid))
            .map_err(|e| Error::runtime(format!("cannot chown {}: {e}", dir.display())))?;
    }
    Ok(())
}

/// Writes a file `lab up` renders: never through a link planted at its name (a temporary
/// made with O_EXCL|O_NOFOLLOW, renamed over it; a link found there is refused).
pub fn write_file(path: impl AsRef<Path>, data: impl AsRef<[u8]>) -> Result<()> {
    crate::fsutil::write_atomic(path.as_ref(), data.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prefix_is_private_and_traversable_by_its_group() {
        let tmp = tempfile::tempdir().unwrap();
        let prefix = tmp.path().join("lab");
        // SAFETY: getegid cannot fail. Our own group stands in for www-data's (no root needed).
        let gid = unsafe { libc::getegid() };
        make_prefix(&prefix, gid).unwrap();
        let m = fs::metadata(&prefix).unwrap();
        assert_eq!(m.mode() & 0o777, 0o710);
        assert_eq!(m.gid(), gid);
        // Traversable by the group alone (www-data's uid is some other one here).
        check_traversable(&prefix, (u32::MAX - 1, gid)).unwrap();
        assert!(check_traversable(&prefix, (u32::MAX - 1, u32::MAX - 1)).is_err());
    }

    #[test]
    fn a_prefix_owned_by_someone_else_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        // SAFETY: geteuid cannot fail.
        let other = if unsafe { libc::geteuid() } == 0 {
            let d = tmp.path().join("theirs");
            fs::create_dir(&d).unwrap();
            std::os::unix::fs::chown(&d, Some(65534), None).unwrap();
            d
        } else {
            PathBuf::from("/") // root's
        };
        let before = fs::metadata(&other).unwrap().mode();
        let e = make_prefix(&other, 0).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let s = e.to_string();
        assert!(s.contains("belongs to uid") && !s.contains('\n'), "{s}");
        assert_eq!(
            fs::metadata(&other).unwrap().mode(),
            before,
            "left as it was"
        );
    }
}
