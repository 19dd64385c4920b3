//! audit: the studies' tuning advice (S1 ch. 7, S2 ch. 4–7) checked against a running stack
//! before any load. Rules are pure functions from recorded evidence to a [`Check`], one file
//! per group (`http`, `host`, `php`, `db`), so each is unit-tested on recorded inputs;
//! `gather` collects the evidence (a few requests, /proc, a probe page, here or through the
//! agent), `ini` reads the php.ini found when there is no probe page. The load A/B and
//! the lab's knowledge of its stacks live in `usecase::audit`, which calls both.
//! docs/audit.md lists every rule.
use serde::{Deserialize, Serialize};

pub mod db;
pub mod gather;
pub mod host;
pub mod http;
pub mod ini;
pub mod php;
pub mod reads;

/// How a check ended: a finding (by severity), passed, or could not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    High,
    Medium,
    Low,
    Ok,
    Skipped,
}

impl Level {
    pub fn is_finding(self) -> bool {
        matches!(self, Level::High | Level::Medium | Level::Low)
    }

    pub fn name(self) -> &'static str {
        match self {
            Level::High => "high",
            Level::Medium => "medium",
            Level::Low => "low",
            Level::Ok => "ok",
            Level::Skipped => "skipped",
        }
    }
}

/// One rule's outcome. A finding always carries its evidence (what was seen: header values,
/// figures) and the one change to make; a skipped check says why in `evidence`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Stable id, `group.name` (`http.compression`).
    pub rule: String,
    pub level: Level,
    /// One line: what the check found (`text is sent uncompressed`).
    pub title: String,
    /// What was seen, or why the check could not run.
    pub evidence: String,
    /// The change to make (findings only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<String>,
    /// Where the advice comes from (`S2 ch. 4–7`).
    pub source: String,
}

impl Check {
    pub fn finding(
        rule: &str,
        level: Level,
        title: impl Into<String>,
        evidence: impl Into<String>,
        change: impl Into<String>,
        source: &str,
    ) -> Check {
        debug_assert!(level.is_finding());
        Check {
            rule: rule.into(),
            level,
            title: title.into(),
            evidence: evidence.into(),
            change: Some(change.into()),
            source: source.into(),
        }
    }

    pub fn ok(
        rule: &str,
        title: impl Into<String>,
        evidence: impl Into<String>,
        source: &str,
    ) -> Check {
        Check {
            rule: rule.into(),
            level: Level::Ok,
            title: title.into(),
            evidence: evidence.into(),
            change: None,
            source: source.into(),
        }
    }

    pub fn skipped(rule: &str, why: impl Into<String>, source: &str) -> Check {
        Check {
            rule: rule.into(),
            level: Level::Skipped,
            title: "not checked".into(),
            evidence: why.into(),
            change: None,
            source: source.into(),
        }
    }
}

/// A whole audit, as printed, written by `--json` and stored as audit.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Audit {
    /// The audited URL.
    pub url: String,
    /// The lab stack audited (`--lab`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
    /// Unix ms when the audit started.
    pub started_unix_ms: u64,
    /// How long the audit took, seconds.
    pub took_s: f64,
    /// Every check, findings first by severity, then passed, then skipped.
    pub checks: Vec<Check>,
}

impl Audit {
    /// Orders the checks: by level, then by rule id (stable output for diffs and tests).
    pub fn sort(&mut self) {
        self.checks
            .sort_by(|a, b| a.level.cmp(&b.level).then_with(|| a.rule.cmp(&b.rule)));
    }

    pub fn findings(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.level.is_finding())
    }

    pub fn check(&self, rule: &str) -> Option<&Check> {
        self.checks.iter().find(|c| c.rule == rule)
    }
}

/// Where each group's advice comes from (docs/audit.md has the chapter per rule).
pub const S1: &str = "S1 ch. 7";
pub const S2: &str = "S2 ch. 4–7";
pub const S1_S2: &str = "S1 ch. 7, S2 ch. 4–7";
/// Advice that is not in the studies (HTTP/2, TLS and hardening came after them).
pub const LATER: &str = "issue 14 (after the studies)";

/// Thousands separated, for byte counts in evidence.
pub(crate) fn num(n: u64) -> String {
    crate::observe::findings::int(n)
}

/// A probe's result: what it saw, or why it could not run (the check is then skipped).
pub type Probe<T> = Result<T, String>;
