//! Capacity: the highest rate that meets an SLO, by geometric growth then bisection
//! (plan::bracket), each probe a full step (runner::probes).
use super::capacity_config::CapacityConfig;
use super::config::parse_slo;
use super::engine_config::base_config;
use super::lifecycle::{Lifecycle, Pace};
use super::outcome::CapacityOutcome;
use crate::plan::bracket::CapacitySearch;
use crate::runner::Executor;
use crate::Error;
use std::time::Instant;

/// Runs the search on `exec`, storing every probe in the results folder as it ends.
pub fn run(cfg: &CapacityConfig, exec: &mut dyn Executor) -> crate::Result<CapacityOutcome> {
    cfg.timing.validate()?;
    let slo = parse_slo(cfg.slo.as_deref())?
        .ok_or_else(|| Error::usage("capacity needs --slo, e.g. --slo 'p99<500ms,errors<1%'"))?;
    if cfg.max < cfg.start {
        return Err(Error::usage("--max is below --start"));
    }
    if cfg.repeat == 0 {
        return Err(Error::usage("--repeat must be at least 1"));
    }
    if cfg.precision <= 0.0 {
        return Err(Error::usage("--precision must be above 0%"));
    }
    cfg.open.validate()?;
    let t = &cfg.timing;
    let first = cfg.open.load(cfg.start);
    let (mut base, urls) =
        base_config(&cfg.request, &cfg.conn, first, Some(t.step), None, t.warmup)?;
    slo.check_names(&base.names).map_err(Error::usage)?;
    cfg.segment.validate(t.step, &[first])?;
    base.segment = cfg.segment.segment;
    base.max_sessions = cfg.open.max_sessions;
    let config = serde_json::json!({
        "start": cfg.start, "max": cfg.max, "precision": cfg.precision, "repeat": cfg.repeat,
        "warmup_s": t.warmup.as_secs_f64(), "step_s": t.step.as_secs_f64(),
        "rest_s": t.rest.as_secs_f64(), "keep_alive": base.keep_alive, "threads": base.threads,
        "connections": cfg.open.connections, "segment": cfg.segment.record(),
    });
    let observe_cfg = cfg.observe.to_config(base.addrs[0].port())?;
    let mut config = config;
    if let Some(l) = observe_cfg.link_bps {
        // Kept for the verdict of `overload report` (the network against the link).
        config["link_speed_bps"] = l.into();
    }
    let started = Instant::now();
    let search = CapacitySearch::new(cfg.start, cfg.max, cfg.precision);
    let ended = Lifecycle {
        kind: "capacity",
        mode: "open",
        base: &base,
        urls: &urls,
        config,
        slo: Some(&slo),
        output: &cfg.output,
        folder: true,
        observe: Some(observe_cfg),
        segment: cfg.segment,
        banner: Some(format!(
            "overload capacity: SLO '{}', from {:.0} req/s, precision {:.0}%",
            slo.text,
            cfg.start,
            cfg.precision * 100.0,
        )),
        pace: Pace::Stepped {
            planned: None,
            timing: *t,
        },
        before_load: None,
    }
    .run(
        exec,
        |s| {
            let (arrival, connections) = (cfg.open.arrival, cfg.open.connections);
            crate::runner::probes::search(s, search, arrival, connections, t.rest, cfg.repeat)
        },
        |(_, r)| r.clone(),
    )?;
    let stored = ended.stored.expect("a capacity search writes its folder");
    let done = ended.finished;
    Ok(CapacityOutcome {
        dir: stored.dir,
        report: stored.report,
        steps: done.steps,
        notes: done.notes,
        complete: done.complete,
        reason: done.reason,
        search: ended.driven.0,
        slo,
        start: cfg.start,
        max: cfg.max,
        precision: cfg.precision,
        elapsed: started.elapsed(),
        analysis: stored.analysis,
    })
}
