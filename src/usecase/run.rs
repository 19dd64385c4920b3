//! Run once: one load level held for a duration (or a request count), then a summary.
use super::config::parse_slo;
use super::lifecycle::{Lifecycle, Pace};
use super::outcome::RunOutcome;
use super::run_config::{RunConfig, RunLoad};
use crate::analysis::ramp::{self, RampAnalysis};
use crate::engine::Load;
use crate::liverun::{json, summary as terminal};
use crate::Error;

/// Runs once, as a one-step sweep through the run lifecycle: validates, observes the server
/// when asked, sends the load, stores it when a folder is asked for, writes `--json`.
pub fn run(rc: &RunConfig) -> crate::Result<RunOutcome> {
    let (cfg, urls) = rc.engine_config()?;
    let slo = parse_slo(rc.slo.as_deref())?;
    if let Some(s) = &slo {
        s.check_names(&cfg.names).map_err(Error::usage)?;
    }
    if let Some(p) = &rc.json {
        json::check_writable(p)?;
    }
    // Server-side sampling only when asked for: a plain run stays a pure load generator.
    let observe = match rc.observing() {
        true => Some(rc.observe.to_config(cfg.addrs[0].port())?),
        false => None,
    };
    let think = match rc.load {
        RunLoad::Users { think, .. } => think,
        RunLoad::Rate(_) => None,
    };
    let config = serde_json::json!({
        "levels": [crate::runner::step::offered_of(&cfg.load)],
        "warmup_s": cfg.warmup.as_secs_f64(),
        "duration_s": cfg.duration.map(|d| d.as_secs_f64()),
        "requests": cfg.max_requests,
        "keep_alive": cfg.keep_alive,
        "threads": cfg.threads,
        "timeout_s": cfg.timeout.as_secs_f64(),
        "think_s": think.map(|t| [t.0.as_secs_f64(), t.1.as_secs_f64()]),
        "connections": rc.open.connections,
        "stages": rc.stages.as_ref().map(ToString::to_string),
    });
    let mut ramp = None;
    let ended = Lifecycle {
        kind: "run",
        mode: match cfg.load {
            Load::Open { .. } => "open",
            Load::Closed { .. } => "closed",
        },
        base: &cfg,
        urls: &urls,
        config,
        slo: slo.as_ref(),
        output: &rc.output,
        folder: rc.output.out.is_some() || rc.report,
        observe,
        segment: rc.segment,
        banner: None,
        pace: Pace::Single,
        before_load: None,
    }
    .run(
        &mut crate::runner::LocalEngine,
        |s| {
            if !rc.output.quiet {
                crate::eoutln!("{}", terminal::plan_line(&cfg, &urls));
            }
            s.step(cfg.load)?;
            ramp = ramp_of(&cfg, s)?;
            Ok(if s.interrupted {
                "interrupted"
            } else {
                "run ended"
            })
        },
        |r| r.to_string(),
    )?;
    let mut done = ended.finished;
    let outcome = done
        .last_engine
        .take()
        .ok_or_else(|| Error::runtime("the run's engine gave no account of it"))?;
    let rec = done.steps.pop().expect("a run is one step");
    let server = rc.observing().then(|| {
        let obs = rec.server.unwrap_or_else(|| crate::observe::summarize(&[]));
        (obs, done.observer_notes)
    });
    if let Some(p) = &rc.json {
        json::write_run(
            p,
            &rec.summary,
            &outcome,
            &cfg,
            &urls,
            json::Beside {
                server: server.as_ref().map(|s| &s.0),
                ramp: ramp.as_ref(),
                push: &ended.pushed,
            },
        )?;
    }
    Ok(RunOutcome {
        cfg,
        summary: rec.summary,
        outcome,
        server,
        slo,
        stored: ended.stored.map(|s| (s.dir, s.report)),
        ramp,
        pushed: ended.pushed,
    })
}

/// On stages, right after the load: the knee on the ramp from its per-second series, and
/// the sweep's bottleneck verdict on windows of its seconds with the server's samples of
/// each (when observed); written as ramp.json into the folder, before its report.
fn ramp_of(
    cfg: &crate::engine::EngineConfig,
    s: &crate::runner::Stepper,
) -> crate::Result<Option<RampAnalysis>> {
    let (Some(_), Some(outcome), Some(rec)) = (&cfg.ramp, s.last_engine(), s.steps.last()) else {
        return Ok(None);
    };
    let clock = &s.clock;
    let start_s = clock.secs(outcome.started);
    let series = crate::runner::step::series_of(cfg, &outcome.recorder.seconds, 0, start_s);
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
