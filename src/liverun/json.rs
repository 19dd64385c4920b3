//! `--json FILE`: the run's summary as one JSON object (docs/results.md).
use crate::engine::{EngineConfig, Outcome};
use crate::metrics::Summary;
use serde::Serialize;
use std::path::Path;

/// Version of the JSON layout; bumped on incompatible changes.
pub const FORMAT_VERSION: u32 = 1;

#[derive(Serialize)]
struct RunJson<'a> {
    format_version: u32,
    overload_version: &'static str,
    urls: &'a [String],
    interrupted: bool,
    /// The I/O backend the run used (`epoll`, `io_uring`) and the `--io` asked for.
    io: crate::engine::Backend,
    io_asked: &'static str,
    warnings: Vec<String>,
    /// At most 1% of the plan's arrivals never sent (`analysis::plan_carried_out`); false:
    /// the run exits 1.
    plan_carried_out: bool,
    /// The arrivals never sent, of how many, and why (absent when every one was sent).
    #[serde(skip_serializing_if = "Option::is_none")]
    not_sent: Option<crate::analysis::NotSent>,
    #[serde(flatten)]
    summary: &'a Summary,
    /// What was observed on the server during the run (with --watch and friends).
    #[serde(skip_serializing_if = "Option::is_none")]
    server: Option<&'a crate::observe::StepObservation>,
    /// On stages: the knee found on the ramp and its verdict.
    #[serde(skip_serializing_if = "Option::is_none")]
    ramp: Option<&'a crate::analysis::ramp::RampAnalysis>,
    /// What each metrics sink got (`--prometheus-remote-write`, `--otlp`).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    push: &'a [crate::push::PushReport],
    /// The generator's own effort: its load threads' CPU (beside the push's own, in `push`).
    generator: GeneratorJson,
    /// The changes live control made to the load while it ran (absent: the plan's load
    /// throughout). A steered run's figures are not a fixed level's.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    steered: &'a [crate::store::ControlEvent],
}

/// The generator's effort over the run, as the JSON says it.
#[derive(Serialize)]
struct GeneratorJson {
    /// Worker (load) threads.
    threads: usize,
    /// CPU time of the load threads, ms (their own clocks, summed).
    cpu_ms: f64,
    /// Of that, per response, µs.
    cpu_us_per_response: f64,
}

/// Fails early (before the load) when the output file cannot be created.
pub fn check_writable(p: &Path) -> crate::Result<()> {
    if crate::report::export::is_stdout(p) {
        return Ok(());
    }
    let dir = p
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(crate::Error::usage(format!(
            "--json {}: directory '{}' does not exist",
            crate::fsutil::shown(p),
            crate::fsutil::shown(dir)
        )));
    }
    // Found out now, not after the run, whose result would then be lost.
    if p.is_dir() {
        return Err(crate::Error::usage(format!(
            "--json {}: is a directory (expected a file name)",
            crate::fsutil::shown(p)
        )));
    }
    // A link or FIFO planted at the name would be refused when the report is written, after
    // the run: refused now.
    crate::fsutil::check_regular_or_absent(p)
        .map_err(|e| crate::Error::usage(format!("--json {}: {e}", crate::fsutil::shown(p))))?;
    // Can a file be created there (permissions, read-only file system)? Try one.
    let replaceable = !p.exists() || std::fs::OpenOptions::new().append(true).open(p).is_ok();
    if !crate::fsutil::can_create_in(dir) || !replaceable {
        return Err(crate::Error::usage(format!(
            "--json {}: cannot write there",
            crate::fsutil::shown(p)
        )));
    }
    Ok(())
}

/// What a run's JSON holds beside its summary, each absent when the run had none of it.
#[derive(Default)]
pub struct Beside<'a> {
    /// The server's side, when observed.
    pub server: Option<&'a crate::observe::StepObservation>,
    /// On stages: the knee found on the ramp and its verdict.
    pub ramp: Option<&'a crate::analysis::ramp::RampAnalysis>,
    /// What each metrics sink got (`--prometheus-remote-write`, `--otlp`).
    pub push: &'a [crate::push::PushReport],
    /// The changes of live control, when steered.
    pub steered: &'a [crate::store::ControlEvent],
}

pub fn write_run(
    p: &Path,
    s: &Summary,
    outcome: &Outcome,
    cfg: &EngineConfig,
    urls: &[String],
    beside: Beside,
) -> crate::Result<()> {
    let Beside {
        server,
        ramp,
        push,
        steered,
    } = beside;
    let doc = RunJson {
        ramp,
        format_version: FORMAT_VERSION,
        overload_version: env!("CARGO_PKG_VERSION"),
        urls,
        interrupted: outcome.interrupted,
        io: outcome.io,
        io_asked: cfg.io.name(),
        warnings: super::summary::warnings(s, outcome, cfg),
        plan_carried_out: crate::analysis::plan_carried_out(s),
        not_sent: crate::analysis::not_sent(s, &crate::runner::step::generator_of(outcome)),
        summary: s,
        server,
        push,
        generator: GeneratorJson {
            threads: outcome.threads,
            cpu_ms: outcome.recorder.cpu.as_secs_f64() * 1e3,
            cpu_us_per_response: crate::runner::step::generator_of(outcome).cpu_us_per_response,
        },
        steered,
    };
    let text = serde_json::to_string_pretty(&doc)
        .map_err(|e| crate::Error::runtime(format!("JSON: {e}")))?;
    if crate::report::export::is_stdout(p) {
        crate::outln!("{text}");
        return Ok(());
    }
    crate::fsutil::write_atomic(p, (text + "\n").as_bytes())
}
