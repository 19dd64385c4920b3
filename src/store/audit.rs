//! `DIR/audit.json`: the audit run before a sweep (`sweep --audit`), as `overload audit
//! --json` prints it. Written once, atomically; the report reads it back when present.
use crate::audit::Audit;
use std::path::Path;

pub const AUDIT_FILE: &str = "audit.json";

/// An audit is a few kilobytes; the cap keeps a planted huge file from filling memory.
const MAX_AUDIT_FILE: u64 = 4 << 20;

pub fn write_audit(dir: &Path, a: &Audit) -> crate::Result<()> {
    let text = serde_json::to_vec_pretty(a)
        .map_err(|e| crate::Error::runtime(format!("audit.json: {e}")))?;
    crate::fsutil::write_atomic(&dir.join(AUDIT_FILE), &text)
}

/// The folder's audit; None when there is none or it does not parse (the report then has
/// no audit section, as for a folder written before audits existed).
pub fn read_audit(dir: &Path) -> Option<Audit> {
    let raw = crate::fsutil::read_capped(&dir.join(AUDIT_FILE), MAX_AUDIT_FILE, AUDIT_FILE).ok()?;
    serde_json::from_slice(&raw).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{Check, Level};

    #[test]
    fn round_trip_and_absent() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_audit(dir.path()), None);
        let a = Audit {
            url: "http://127.0.0.1:1/".into(),
            stack: Some("nginx-fpm".into()),
            started_unix_ms: 1,
            took_s: 0.5,
            checks: vec![Check::finding(
                "http.caching",
                Level::Medium,
                "no caching headers",
                "neither",
                "send them",
                "S2",
            )],
        };
        write_audit(dir.path(), &a).unwrap();
        assert_eq!(read_audit(dir.path()), Some(a));
        std::fs::write(dir.path().join(AUDIT_FILE), "{not json").unwrap();
        assert_eq!(read_audit(dir.path()), None);
    }
}
