//! Run once: one load level held for a duration (or a request count), then a summary.
use super::config::parse_slo;
use super::lifecycle::{Lifecycle, Pace};
use super::outcome::RunOutcome;
use super::run_config::{RunConfig, RunLoad};
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
            ramp = super::ramp::analyze(&cfg, s)?;
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
                steered: &done.steered,
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
        steered: done.steered,
    })
}
