//! The results folder of a sweep (or capacity search): never lose a finished step.
//!
//! ```text
//! DIR/run.json      what was run: command line, config, version, host; rewritten at the end
//! DIR/steps.jsonl   one line per finished step, appended and fsync'd when the step ends
//! DIR/series.jsonl  one line per second of load, appended and fsync'd with each step
//! DIR/audit.json    the audit run before the load (`sweep --audit`), when asked for
//! ```
//! Killing the process loses at most the step in progress. The reader accepts a truncated
//! last line (the write that was cut) and says it skipped it. Format: docs/results.md.
mod audit;
pub mod host;
mod reader;
mod writer;

pub use audit::{read_audit, write_audit, AUDIT_FILE};
pub use reader::{load, load_strict, parse_series, parse_steps, RunData};
pub use writer::Writer;

use crate::metrics::Summary;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the folder layout; bumped on incompatible changes.
pub const FORMAT_VERSION: u32 = 1;

/// `run.json`: what was run, where, and whether it finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    pub format_version: u32,
    pub overload_version: String,
    /// A short name for the run (used in comparisons); defaults to the folder name.
    pub name: String,
    /// `sweep` or `capacity`.
    pub kind: String,
    pub command_line: Vec<String>,
    /// `open` (steps are rates) or `closed` (steps are users).
    pub mode: String,
    pub urls: Vec<String>,
    /// The plan and options, as given (free-form, for the record).
    pub config: serde_json::Value,
    pub host: HostInfo,
    /// Unix time in ms.
    pub started_unix_ms: u64,
    pub finished_unix_ms: Option<u64>,
    /// False until the run ended normally; an interrupted or killed run stays incomplete.
    pub complete: bool,
    /// Why the sweep stopped (e.g. "2 steps past saturation", "interrupted").
    pub stop_reason: Option<String>,
    /// The SLO expression, if one was given.
    pub slo: Option<String>,
}

/// The generator host, for the record (S2's kernel chapter).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HostInfo {
    pub hostname: String,
    pub cores: usize,
    pub kernel: String,
    pub fd_limit_soft: u64,
    pub fd_limit_hard: u64,
    /// sysctl name → value, for the kernel limits that matter under overload.
    pub sysctls: BTreeMap<String, String>,
}

/// The generator's own effort during a step: the self-check of S1's first principle.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct GeneratorStats {
    /// CPU time of the worker threads over the step, as a percentage of one core per thread.
    pub cpu_pct: f64,
    /// Worker CPU µs per response.
    pub cpu_us_per_response: f64,
    pub threads: usize,
    /// Times an arrival found every allowed connection busy and had to queue (open loop).
    pub pool_waits: u64,
    /// The I/O backend the workers ran on (absent from older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<crate::metrics::IoBackend>,
}

/// One line of `steps.jsonl`: a finished step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRecord {
    /// 0-based index in the sweep (or probe number of a capacity search).
    pub step: usize,
    /// The load level: requests/s (open loop) or users (closed loop).
    pub offered: f64,
    pub start_unix_ms: u64,
    pub end_unix_ms: u64,
    /// Seconds since the run started, for timelines.
    pub start_s: f64,
    pub end_s: f64,
    /// Mean think time of the closed loop, ms (for the Little's-law check).
    pub think_ms: f64,
    #[serde(flatten)]
    pub summary: Summary,
    pub generator: GeneratorStats,
    /// The response-time histogram (µs), HdrHistogram V2 deflate serialization, base64.
    pub response_time_hist: String,
    /// The other latency histograms, encoded the same way, so `overload merge` can add the
    /// steps of several generators exactly (absent from folders of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hists: Option<StepHists>,
    /// Flags raised when the step ended: `saturated`, `slo-failed`, `generator-bound`,
    /// `littles-law`, `interrupted`.
    pub flags: Vec<String>,
    /// Whether the SLO (if any) held in this step.
    pub slo_ok: Option<bool>,
    /// What was observed on the server (and the generator host) during the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<crate::observe::StepObservation>,
}

/// A step's other histograms (µs), encoded as [`StepRecord::response_time_hist`]: what
/// `overload merge` adds to give the exact percentiles of several generators' steps.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StepHists {
    pub service_time: String,
    pub send_lag: String,
    pub connect_time: String,
    /// Time to the response's first byte (empty in folders from before it was kept).
    #[serde(default)]
    pub first_byte: String,
    /// TLS handshakes of new connections (https runs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_handshake: Option<String>,
    /// The response time of each request name of `summary.names`, by name (absent from
    /// folders written before names were kept, and from runs that kept none).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub names: BTreeMap<String, String>,
}

/// A line of `series.jsonl` that is not a second: a change of the load made while the run
/// went (live control: the terminal view's keys, `--control-port`), at the second it took
/// effect. `{"event":"control","t":…,"step":…,"what":"rate","from":…,"to":…,"by":"keys"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControlEvent {
    /// Always `control`: what tells the line from a second's.
    pub event: String,
    /// Seconds since the run started, when it took effect.
    pub t: f64,
    pub step: usize,
    /// `rate`, `users`, `pause` or `resume`.
    pub what: String,
    pub from: f64,
    pub to: f64,
    /// `keys` (the terminal view) or `port` (`--control-port`).
    pub by: String,
}

impl ControlEvent {
    /// The mark's label on a timeline: `rate 50→100 (keys)`, `pause (port)`.
    pub fn label(&self) -> String {
        let n = crate::units::fmt_num;
        match self.what.as_str() {
            "pause" | "resume" => format!("{} ({})", self.what, self.by),
            w => format!("{w} {}→{} ({})", n(self.from), n(self.to), self.by),
        }
    }

    /// Whether a line of `series.jsonl` is an event (events are written starting so).
    pub fn is_event_line(line: &str) -> bool {
        line.trim_start().starts_with("{\"event\"")
    }
}

/// One line of `series.jsonl`: one second of load.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SeriesPoint {
    /// Seconds since the run started (start of this second).
    pub t: f64,
    pub step: usize,
    pub offered: f64,
    /// Inside the step's warm-up (not counted in the step's figures).
    pub warmup: bool,
    pub responses: u64,
    pub ok: u64,
    pub errors: u64,
    pub bytes_in: u64,
    pub response_time_mean_ms: f64,
    pub response_time_max_ms: f64,
    /// Mean send lag of the responses of that second (0 in results from before it was kept).
    #[serde(default)]
    pub send_lag_mean_ms: f64,
    /// Response-time percentiles of that second's responses (absent in results from before
    /// they were kept, in seconds without responses, and in seconds merged from several
    /// parts, whose percentiles do not add).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_time_p50_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_time_p95_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_time_p99_ms: Option<f64>,
    /// The server's state in that second (sampled beside the load, same clock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<crate::observe::SecondObservation>,
}
