//! Sweep: load levels one after another (S1's stepped rates, S2/S5's concurrency sweeps),
//! each stored when it ends; then the saturation point, capacity and findings.
use super::config::parse_slo;
use super::engine_config::base_config;
use super::lifecycle::{Lifecycle, Pace};
use super::outcome::SweepOutcome;
use super::sweep_config::{Levels, SweepConfig};
use crate::runner::sweep::SweepPlan;
use crate::runner::Executor;
use crate::Error;

/// Runs the sweep on `exec`, storing every step in the results folder as it ends.
pub fn run(cfg: &SweepConfig, exec: &mut dyn Executor) -> crate::Result<SweepOutcome> {
    cfg.timing.validate()?;
    let slo = parse_slo(cfg.slo.as_deref())?;
    let mode = cfg.mode();
    if let Levels::Rates(_) = cfg.levels {
        cfg.open.validate()?;
    }
    let loads = cfg.loads();
    for l in &loads {
        crate::usecase::config::check_load(l)?;
    }
    let first = *loads
        .first()
        .ok_or_else(|| Error::usage("give --rates (open loop) or --users (closed loop)"))?;
    let t = &cfg.timing;
    let (mut base, urls) =
        base_config(&cfg.request, &cfg.conn, first, Some(t.step), None, t.warmup)?;
    if let Some(s) = &slo {
        s.check_names(&base.names).map_err(Error::usage)?;
    }
    cfg.segment.validate(t.step, &loads)?;
    base.segment = cfg.segment.segment;
    base.max_sessions = cfg.open.max_sessions;
    let think = match &cfg.levels {
        Levels::Users { think, .. } => *think,
        Levels::Rates(_) => None,
    };
    let config = serde_json::json!({
        "levels": loads.iter().map(crate::runner::step::offered_of).collect::<Vec<_>>(),
        "warmup_s": t.warmup.as_secs_f64(),
        "step_s": t.step.as_secs_f64(),
        "rest_s": t.rest.as_secs_f64(),
        "keep_alive": base.keep_alive,
        "threads": base.threads,
        "timeout_s": base.timeout.as_secs_f64(),
        "think_s": think.map(|t| [t.0.as_secs_f64(), t.1.as_secs_f64()]),
        "connections": cfg.open.connections,
        "past_saturation": cfg.past_saturation,
        "max_errors": cfg.max_errors,
        "segment": cfg.segment.record(),
    });
    let observe_cfg = cfg.observe.to_config(base.addrs[0].port())?;
    let mut config = config;
    if let Some(l) = observe_cfg.link_bps {
        // Kept for the verdict of `overload report` (the network against the link).
        config["link_speed_bps"] = l.into();
    }
    let plan = SweepPlan {
        loads,
        past_saturation: cfg.past_saturation,
        max_errors: Some(cfg.max_errors),
        max_p99_ms: cfg.max_p99.map(|d| d.as_secs_f64() * 1e3),
        rest: t.rest,
    };
    // The plan's first URL (shown as `METHOD URL`).
    let audit_url = urls[0].split_whitespace().find(|w| w.contains("://"));
    let audit = |dir: &std::path::Path| {
        let url = audit_url.unwrap_or(&urls[0]);
        super::audit::before_load(url, &cfg.conn.tls, dir, cfg.output.quiet)
    };
    let ended = Lifecycle {
        kind: "sweep",
        mode,
        base: &base,
        urls: &urls,
        config,
        slo: slo.as_ref(),
        output: &cfg.output,
        folder: true,
        observe: Some(observe_cfg),
        segment: cfg.segment,
        banner: Some(format!(
            "overload sweep: {} steps of {} (+{} warm-up, {} rest), {mode} loop",
            plan.loads.len(),
            crate::units::fmt_duration(t.step),
            crate::units::fmt_duration(t.warmup),
            crate::units::fmt_duration(t.rest),
        )),
        pace: Pace::Stepped {
            planned: Some(plan.loads.len()),
            timing: *t,
        },
        before_load: cfg.audit.then_some(&audit as &dyn Fn(&std::path::Path)),
    }
    .run(
        exec,
        |s| crate::runner::sweep::sweep(s, &plan),
        String::clone,
    )?;
    let stored = ended.stored.expect("a sweep writes its folder");
    let done = ended.finished;
    Ok(SweepOutcome {
        dir: stored.dir,
        report: stored.report,
        steps: done.steps,
        notes: done.notes,
        complete: done.complete,
        reason: done.reason,
        analysis: stored.analysis,
        has_slo: slo.is_some(),
    })
}
