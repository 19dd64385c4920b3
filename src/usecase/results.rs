//! The results folder of a run: where it goes, what run.json says, and the analysis text
//! shown when the run ends (the lifecycle writes the report beside it).
use crate::analysis::Slo;
use crate::report::export;
use crate::store::{self, RunInfo, Writer};
use std::path::{Path, PathBuf};

/// `runs/<UTC time>-<name>`.
pub fn default_dir(name: &str) -> PathBuf {
    Path::new("runs").join(format!(
        "{}-{}",
        utc_stamp(crate::clock::unix_ms() / 1000),
        name
    ))
}

/// A name for the run from its first URL: `127.0.0.1-8080-sleep`.
pub fn name_from_url(url: &str) -> String {
    let u = url.split_whitespace().last().unwrap_or(url);
    let u = u.trim_start_matches("http://");
    let u = u.split('?').next().unwrap_or(u);
    let mut name: String = u
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    while name.contains("--") {
        name = name.replace("--", "-");
    }
    let name = name.trim_matches('-').to_string();
    if name.is_empty() {
        "run".into()
    } else {
        name.chars().take(60).collect()
    }
}

/// `20261122T081500Z` from Unix seconds (UTC).
pub fn utc_stamp(secs: u64) -> String {
    let (y, m, d, hh, mm, ss) = crate::units::utc_fields(secs);
    format!("{y:04}{m:02}{d:02}T{hh:02}{mm:02}{ss:02}Z")
}

/// Longest `--name`: it ends a folder's name (`<UTC time>-<name>`, under 255 bytes).
const MAX_NAME: usize = 100;

/// `--name` becomes the last part of the folder's name under runs/, and is printed: one
/// plain file name (no '/', so `../../x` cannot leave runs/), no control characters.
pub fn check_name(n: &str) -> crate::Result<()> {
    let why = if n.chars().any(char::is_control) {
        "control characters are not allowed"
    } else if n.contains('/') {
        "'/' is not allowed: the name ends the results folder's name, in runs/ (--out puts it elsewhere)"
    } else if n.is_empty() {
        "must not be empty"
    } else if n.len() > MAX_NAME {
        "longer than 100 bytes"
    } else {
        return Ok(());
    };
    let shown: String = n.chars().take(MAX_NAME).collect();
    Err(crate::Error::usage(format!(
        "--name '{}': {why}",
        crate::units::escape_controls(&shown)
    )))
}

/// Opens the results folder and writes run.json.
#[allow(clippy::too_many_arguments)]
pub fn open(
    out: Option<&Path>,
    name: Option<&str>,
    kind: &str,
    mode: &str,
    urls: &[String],
    config: serde_json::Value,
    slo: Option<&Slo>,
) -> crate::Result<Writer> {
    if let Some(n) = name {
        check_name(n)?;
    }
    let name = name
        .map(str::to_string)
        .unwrap_or_else(|| name_from_url(urls.first().map_or("run", |s| s.as_str())));
    let dir = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| default_dir(&name));
    let info = RunInfo {
        format_version: store::FORMAT_VERSION,
        overload_version: env!("CARGO_PKG_VERSION").to_string(),
        name,
        kind: kind.to_string(),
        command_line: std::env::args().collect(),
        mode: mode.to_string(),
        urls: urls.to_vec(),
        config,
        host: store::host::host_info(),
        started_unix_ms: crate::clock::unix_ms(),
        finished_unix_ms: None,
        complete: false,
        stop_reason: None,
        slo: slo.map(|s| s.text.clone()),
    };
    Writer::create(&dir, info)
}

/// `--hdr-log FILE`: refused before the run when FILE cannot be written (no such folder).
pub fn check_hdr_log(path: Option<&Path>) -> crate::Result<()> {
    match path {
        Some(p) => export::check_parent(p)
            .map_err(|e| crate::Error::usage(e.to_string().replacen("--out", "--hdr-log", 1))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--name ../../x` would put the folder outside runs/: refused, as are control
    /// characters and names too long for a folder's name.
    #[test]
    fn names_stay_inside_runs() {
        for (n, says) in [
            ("../../x", "'/' is not allowed"),
            ("a/b", "'/' is not allowed"),
            ("", "empty"),
            ("a\x1b[2J", "control characters"),
        ] {
            let e = check_name(n).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(e.to_string().contains(says), "{n:?}: {e}");
        }
        assert!(check_name(&"a".repeat(101)).is_err());
        assert!(check_name("nginx-static.2").is_ok());
        assert!(
            check_name("..").is_ok(),
            "no '/': stays a folder name inside runs/"
        );
    }

    #[test]
    fn stamps_and_names() {
        assert_eq!(utc_stamp(0), "19700101T000000Z");
        assert_eq!(utc_stamp(1_795_339_800), "20261122T093000Z");
        assert_eq!(utc_stamp(951_782_400), "20000229T000000Z");
        assert_eq!(
            name_from_url("GET http://127.0.0.1:8080/sleep?ms=20"),
            "127.0.0.1-8080-sleep"
        );
        assert_eq!(name_from_url("http://h/"), "h");
    }

    /// A `--name` with an escape sequence or a newline would end up raw in the folder's name
    /// and in every line that prints it: refused, escaped in the message, nothing created.
    #[test]
    fn control_characters_in_a_name_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("run");
        let urls = ["GET http://127.0.0.1:9/".to_string()];
        let Err(e) = open(
            Some(&out),
            Some("a\u{1b}[2J\nb"),
            "sweep",
            "open",
            &urls,
            serde_json::Value::Null,
            None,
        ) else {
            panic!("accepted a name with control characters");
        };
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("'a\\x1b[2J\\x0ab'"), "{e}");
        assert!(!out.exists());
    }
}
