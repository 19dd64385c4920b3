//! `--scenario FILE.toml` and its option: users follow named requests with cookies,
//! extracted values and checks (docs/scenarios.md).
use crate::scenario::DEFAULT_MAX_BODY_CAPTURE;
use crate::usecase::config::ScenarioSource;
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone, Default)]
pub struct ScenarioArgs {
    /// Users follow the requests of this scenario file (TOML: named requests, think times,
    /// cookies, extraction, checks, feeders; docs/scenarios.md). A URL argument is then the
    /// server of its relative URLs. Closed loop (--users) only.
    #[arg(long, value_name = "FILE.toml")]
    pub scenario: Option<PathBuf>,
    /// Most bytes of an answer's body kept for a scenario's checks and extraction, e.g. 64k
    /// [default: 1M]; the rest is read and counted, not kept.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes, requires = "scenario")]
    pub max_body_capture: Option<usize>,
}

impl ScenarioArgs {
    pub fn source(&self) -> Option<ScenarioSource> {
        self.scenario.as_ref().map(|f| ScenarioSource {
            file: f.clone(),
            max_body_capture: self.max_body_capture.unwrap_or(DEFAULT_MAX_BODY_CAPTURE),
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
