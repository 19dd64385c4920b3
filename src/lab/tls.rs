//! The lab's HTTPS identity: one CA and a server certificate it signs (localhost, 127.0.0.1,
//! ::1, and 10.77.0.2: the stack side of a `lab netem` path), made by the target's generator
//! the first time a stack comes up with `--tls` and kept in `<prefix>/tls/`, so a `--cacert`
//! path handed to a run stays valid across restarts.
use std::fs;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::target::TargetTls;
use crate::{Error, Result};

/// The files of the prefix's certificate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsFiles {
    /// The CA, what clients pass as `--cacert`.
    pub ca: PathBuf,
    /// The server's certificate (PEM), read by nginx or Apache as root at start.
    pub cert: PathBuf,
    /// Its private key, mode 0600.
    pub key: PathBuf,
}

impl TlsFiles {
    pub fn new(prefix: &Path) -> TlsFiles {
        let dir = prefix.join("tls");
        TlsFiles {
            ca: dir.join("ca.pem"),
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
        }
    }

    fn all_present(&self) -> bool {
        [&self.ca, &self.cert, &self.key]
            .iter()
            .all(|p| p.is_file())
    }
}

/// The prefix's certificate files, made now if any is missing (under the prefix's lock).
pub fn ensure(prefix: &Path) -> Result<TlsFiles> {
    let files = TlsFiles::new(prefix);
    if files.all_present() {
        return Ok(files);
    }
    let dir = prefix.join("tls");
    fs::create_dir_all(&dir)?;
    // Only the masters (root) read the key; the CA and certificate are public anyway.
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))?;
    let id = TargetTls::generate(None).map_err(Error::runtime)?;
    let ca = id
        .ca_pem
        .as_deref()
        .ok_or_else(|| Error::runtime("lab certificate: the generator made no CA"))?;
    // The key first, the CA last: a CA file present means a complete set.
    write_new(&files.key, &id.key_pem, 0o600)?;
    write_new(&files.cert, &id.cert_pem, 0o644)?;
    write_new(&files.ca, ca, 0o644)?;
    Ok(files)
}

/// Replaces `path` with `text`, created with `mode` (never through a link left there).
fn write_new(path: &Path, text: &str, mode: u32) -> Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(Error::runtime(format!("{}: {e}", path.display())))
        }
        _ => {}
    }
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(|e| Error::runtime(format!("{}: {e}", path.display())))?;
    f.write_all(text.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| Error::runtime(format!("{}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_once_then_kept() {
        let dir = std::env::temp_dir().join(format!("overload-lab-tls-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let f = ensure(&dir).unwrap();
        let ca = fs::read_to_string(&f.ca).unwrap();
        assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"));
        assert!(fs::read_to_string(&f.key).unwrap().contains("PRIVATE KEY"));
        let mode = fs::metadata(&f.key).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // A second call keeps the files: runs holding the CA path stay valid.
        ensure(&dir).unwrap();
        assert_eq!(fs::read_to_string(&f.ca).unwrap(), ca);
        // A missing piece makes a new, consistent set.
        fs::remove_file(&f.cert).unwrap();
        ensure(&dir).unwrap();
        assert_ne!(fs::read_to_string(&f.ca).unwrap(), ca);
        fs::remove_dir_all(&dir).unwrap();
    }
}
