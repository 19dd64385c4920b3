//! A run on stages (`--stages`, `--user-stages`), right after its load: the knee on the ramp
//! and the verdict at it, from the step the lifecycle just ran.
use crate::analysis::ramp::{self, RampAnalysis};
use crate::engine::Load;
use crate::Error;

/// On stages, right after the load: the knee on the ramp from its per-second series, and
/// the sweep's bottleneck verdict on windows of its seconds with the server's samples of
/// each (when observed); written as ramp.json into the folder, before its report.
pub(super) fn analyze(
    cfg: &crate::engine::EngineConfig,
    s: &crate::runner::Stepper,
) -> crate::Result<Option<RampAnalysis>> {
    let (Some(_), Some(outcome), Some(rec)) = (&cfg.ramp, s.last_engine(), s.steps.last()) else {
        return Ok(None);
    };
    let clock = &s.clock;
    let start_s = clock.secs(outcome.started);
    let level = outcome.steered.as_deref().or(cfg.ramp.as_deref());
    let series = crate::runner::step::series_of(cfg, level, &outcome.recorder.seconds, 0, start_s);
    let at = |t: f64| clock.start_unix_ms + (t * 1000.0) as u64;
    let windows = ramp::windows(&series, rec, |t0, t1| {
        let samples = s.observer.as_ref()?.samples_between(at(t0), at(t1));
        (!samples.is_empty()).then(|| crate::observe::summarize(&samples))
    });
    let mode = match cfg.load {
        Load::Open { .. } => "open",
        Load::Closed { .. } => "closed",
    };
    let a = ramp::analyze_with_verdict(mode, &series, &windows, Default::default());
    if let Some(w) = s.writer.as_ref() {
        let text = serde_json::to_vec_pretty(&a)
            .map_err(|e| Error::runtime(format!("{}: {e}", ramp::RAMP_FILE)))?;
        crate::fsutil::write_atomic(&w.dir().join(ramp::RAMP_FILE), &text)?;
    }
    Ok(Some(a))
}
