//! Safe file I/O shared by everything that writes results or reads user files.
//!
//! Writing: a results folder or report path may sit in a shared place (/tmp), where someone
//! else can plant a symbolic link or a FIFO under the name we are about to write. So files
//! are written to a new temporary (O_CREAT|O_EXCL|O_NOFOLLOW) beside the target, fsync'd and
//! renamed over it, and a target that is a link or not a regular file is refused. Files that
//! are appended to are opened with O_NOFOLLOW|O_NONBLOCK (a FIFO with no reader then fails
//! instead of blocking) and checked to be regular files.
//!
//! Reading: user-named inputs (bodies, URL files, results files) are read with a size cap, so
//! `--body @/dev/zero` is an error instead of a process that grows without end.
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::Error;

/// Largest request body read from a file (`--body @FILE`, URL-file `<FILE`).
pub const MAX_BODY_FILE: u64 = 64 << 20;
/// Largest URL file.
pub const MAX_URLS_FILE: u64 = 64 << 20;
/// Largest line of a results file (steps carry a histogram; far below this in practice).
pub const MAX_RESULTS_LINE: usize = 16 << 20;
/// Largest results file (steps.jsonl, series.jsonl, run.json).
pub const MAX_RESULTS_FILE: u64 = 1 << 30;

/// Names a file for humans: its path with control characters escaped, so a planted name
/// cannot rewrite the terminal when it is shown in an error.
pub fn shown(p: &Path) -> String {
    crate::units::escape_controls(&p.display().to_string()).into_owned()
}

/// Refuses `p` when it exists as a symbolic link or as anything but a regular file.
pub fn check_regular_or_absent(p: &Path) -> crate::Result<()> {
    match std::fs::symlink_metadata(p) {
        Err(_) => Ok(()),
        Ok(m) if m.file_type().is_symlink() => Err(Error::usage(format!(
            "'{}' is a symbolic link; refusing to write through it",
            shown(p)
        ))),
        Ok(m) if m.is_file() => Ok(()),
        Ok(m) => Err(Error::usage(format!(
            "'{}' is {}, not a regular file; refusing to write to it",
            shown(p),
            kind(&m.file_type())
        ))),
    }
}

fn kind(t: &std::fs::FileType) -> &'static str {
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else {
        "a special file"
    }
}

/// A one-line error for a failed write of `p`; a full disk says so plainly.
pub fn write_error(p: &Path, e: &std::io::Error) -> Error {
    if e.raw_os_error() == Some(libc::ENOSPC) || e.raw_os_error() == Some(libc::EDQUOT) {
        Error::runtime(format!(
            "cannot write '{}': the disk is full ({e})",
            shown(p)
        ))
    } else {
        Error::runtime(format!("cannot write '{}': {e}", shown(p)))
    }
}

/// Writes `data` to `p` all at once: a reader sees the old file or the new one, never half,
/// and a full disk leaves the old file and no temporary behind.
pub fn write_atomic(p: &Path, data: &[u8]) -> crate::Result<()> {
    check_regular_or_absent(p)?;
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = p
        .file_name()
        .ok_or_else(|| Error::usage(format!("'{}': not a file name", shown(p))))?;
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let tmp = dir.join(format!(
        ".{}.{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)
        .map_err(|e| write_error(p, &e))?;
    let written = f.write_all(data).and_then(|_| f.sync_all());
    drop(f);
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(write_error(p, &e));
    }
    // A link planted at `p` since the check is replaced by rename, never followed.
    if let Err(e) = std::fs::rename(&tmp, p) {
        let _ = std::fs::remove_file(&tmp);
        return Err(write_error(p, &e));
    }
    if let Ok(d) = File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Opens `p` for appending (creating it), never through a symbolic link, never a FIFO or
/// device.
pub fn open_append(p: &Path) -> crate::Result<File> {
    check_regular_or_absent(p)?;
    let f = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(p)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                Error::usage(format!(
                    "'{}' is a symbolic link; refusing to write through it",
                    shown(p)
                ))
            } else {
                write_error(p, &e)
            }
        })?;
    let m = f.metadata().map_err(|e| write_error(p, &e))?;
    if !m.is_file() {
        return Err(Error::usage(format!(
            "'{}' is {}, not a regular file; refusing to write to it",
            shown(p),
            kind(&m.file_type())
        )));
    }
    Ok(f)
}

/// Reads at most `cap` bytes of `p`; a longer input is an error naming the cap, `what`
/// saying which input it is (`--body`, `URL file`).
pub fn read_capped(p: &Path, cap: u64, what: &str) -> Result<Vec<u8>, String> {
    let f = File::open(p).map_err(|e| format!("{what}: cannot read '{}': {e}", shown(p)))?;
    read_to_cap(f, p, cap, what)
}

/// [`read_capped`] for a file that must be a regular one (a results folder's files): a FIFO,
/// device or socket planted under its name is refused without blocking (opened non-blocking,
/// checked on the open descriptor, so nothing can be swapped in between).
pub fn read_regular_capped(p: &Path, cap: u64, what: &str) -> Result<Vec<u8>, String> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(p)
        .map_err(|e| format!("{what}: cannot read '{}': {e}", shown(p)))?;
    let m = f
        .metadata()
        .map_err(|e| format!("{what}: cannot read '{}': {e}", shown(p)))?;
    if !m.is_file() {
        return Err(format!(
            "{what}: '{}' is {}, not a regular file",
            shown(p),
            kind(&m.file_type())
        ));
    }
    read_to_cap(f, p, cap, what)
}

fn read_to_cap(f: File, p: &Path, cap: u64, what: &str) -> Result<Vec<u8>, String> {
    let mut buf = Vec::new();
    f.take(cap.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(|e| format!("{what}: cannot read '{}': {e}", shown(p)))?;
    if buf.len() as u64 > cap {
        return Err(format!(
            "{what}: '{}' is larger than the {} MiB limit",
            shown(p),
            cap >> 20
        ));
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("overload-fsutil-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn leftovers(d: &Path) -> Vec<String> {
        std::fs::read_dir(d)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn atomic_write_replaces_and_leaves_no_temporary() {
        let d = scratch("atomic");
        let p = d.join("a.txt");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert!(leftovers(&d).is_empty());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn symlinks_and_fifos_are_refused() {
        let d = scratch("links");
        let victim = d.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let link = d.join("run.json");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = write_atomic(&link, b"x").unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        let e = open_append(&link).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");

        let fifo = d.join("steps.jsonl");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: plain syscall on a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Would block forever without a reader if it were opened as a file.
        let e = open_append(&fifo).unwrap_err().to_string();
        assert!(e.contains("FIFO"), "{e}");
        let e = write_atomic(&fifo, b"x").unwrap_err().to_string();
        assert!(e.contains("FIFO"), "{e}");
        assert!(leftovers(&d).is_empty());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn capped_reads_name_the_cap() {
        let e = read_capped(Path::new("/dev/zero"), 1 << 20, "--body").unwrap_err();
        assert!(e.contains("--body") && e.contains("1 MiB limit"), "{e}");
        let d = scratch("cap");
        let p = d.join("small");
        std::fs::write(&p, vec![b'a'; 1 << 20]).unwrap();
        assert_eq!(read_capped(&p, 1 << 20, "x").unwrap().len(), 1 << 20);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn full_disk_error_names_the_file() {
        let e = write_error(
            Path::new("/r/steps.jsonl"),
            &std::io::Error::from_raw_os_error(libc::ENOSPC),
        );
        let e = e.to_string();
        assert!(
            e.contains("/r/steps.jsonl") && e.contains("disk is full"),
            "{e}"
        );
    }
}
