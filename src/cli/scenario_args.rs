//! `--scenario FILE.toml` and its option: users follow named requests with cookies,
//! extracted values and checks (docs/scenarios.md); `--har` and `--wsesslog`, recordings
//! imported as scenarios; `--allow-unsafe-methods`, which every import (the access log's
//! too) reads.
use crate::scenario::{Format, DEFAULT_MAX_BODY_CAPTURE};
use crate::usecase::config::ScenarioSource;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Requests")]
pub struct ScenarioArgs {
    /// Users follow this scenario file (docs/scenarios.md).
    ///
    /// TOML: named requests, think times, cookies, extraction, checks, feeders, bursts. A URL
    /// argument is then the server of its relative URLs. --users: users loop it; --rate: sessions/s, each
    /// a new user going through it once (see --max-sessions). Over --http 2 and 3 each user
    /// holds its own connection per server and sends a page's burst as streams on it.
    #[arg(long, value_name = "FILE.toml", conflicts_with = "import")]
    pub scenario: Option<PathBuf>,
    /// Most bytes of an answer's body kept for a scenario's checks and extraction, e.g. 64k
    /// [default: 1M]; the rest is read and counted, not kept.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes, requires = "scenario")]
    pub max_body_capture: Option<usize>,
    /// Users replay a browser's recording (HAR, from the developer tools): its requests in
    /// order, with its headers (cookies aside: each user keeps its own), bodies and pauses
    /// (at most 10s). Static assets and methods other than GET and HEAD are left out unless
    /// asked for. A URL argument replaces the first entry's origin. --rate: sessions/s.
    #[arg(long, value_name = "FILE", group = "import")]
    pub har: Option<PathBuf>,
    /// With --har: also send the static assets (images, CSS, scripts, fonts).
    #[arg(long, requires = "har")]
    pub har_assets: bool,
    /// Users follow the sessions of httperf's --wsesslog file, one scenario per session,
    /// equally weighted; its paths go to the URL argument's server; its bursts (indented
    /// lines) are fetched in parallel after their page. --rate: sessions/s (--wsess).
    #[arg(long, value_name = "FILE", group = "import")]
    pub wsesslog: Option<PathBuf>,
    /// Also send the methods other than GET and HEAD of an imported file (--har,
    /// --wsesslog, --access-log; an access log's without their bodies).
    #[arg(long, requires = "import")]
    pub allow_unsafe_methods: bool,
}

impl ScenarioArgs {
    pub fn source(&self) -> Option<ScenarioSource> {
        let (file, format) = if let Some(f) = &self.scenario {
            (f, Format::Toml)
        } else if let Some(f) = &self.har {
            let opts = crate::scenario::har::Options {
                assets: self.har_assets,
                allow_unsafe_methods: self.allow_unsafe_methods,
            };
            (f, Format::Har(opts))
        } else if let Some(f) = &self.wsesslog {
            let allow_unsafe_methods = self.allow_unsafe_methods;
            (
                f,
                Format::Wsesslog {
                    allow_unsafe_methods,
                },
            )
        } else {
            return None;
        };
        Some(ScenarioSource {
            file: file.clone(),
            max_body_capture: self.max_body_capture.unwrap_or(DEFAULT_MAX_BODY_CAPTURE),
            format,
        })
    }
}

/// `65536`, `64k` (KiB), `1M` (MiB).
fn parse_bytes(s: &str) -> Result<usize, String> {
    let t = s.trim();
    let (num, scale) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1usize << 10),
        Some((i, 'm' | 'M')) => (&t[..i], 1 << 20),
        _ => (t, 1),
    };
    num.parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .filter(|&n| n <= 1 << 30)
        .ok_or_else(|| format!("'{s}': a size in bytes up to 1G, e.g. 65536, 64k, 1M"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("64k"), Ok(65536));
        assert_eq!(parse_bytes("1M"), Ok(1 << 20));
        assert_eq!(parse_bytes("100"), Ok(100));
        assert!(parse_bytes("2G").is_err());
        assert!(parse_bytes("x").is_err());
    }
}
