//! Analysis of a sweep's steps: where it saturated, the capacity under an SLO, the Little's-law
//! check, the generator self-check and the Universal Scalability Law fit. Pure functions of the
//! step records, so `report` recomputes them from a results folder.
pub mod bottleneck;
pub mod ramp;
pub mod slo;
pub mod sustained;
pub mod usl;

pub use bottleneck::Bottleneck;
pub use slo::Slo;
pub use usl::UslFit;

use crate::metrics::Summary;
use crate::store::{GeneratorStats, StepRecord};
use serde::{Deserialize, Serialize};

/// Open loop: a step is saturated when throughput falls below this share of the offered rate.
pub const THROUGHPUT_SHARE: f64 = 0.95;
/// Closed loop: a step is saturated when throughput rose by less than this over the previous.
pub const CLOSED_GAIN: f64 = 0.05;
/// Share of failed requests from which "errors appear".
pub const ERROR_SHARE: f64 = 0.001;
/// Little's law: flag a step when users and throughput × (response + think) differ by more.
pub const LITTLE_TOLERANCE: f64 = 0.10;
/// Generator CPU (% of its threads' cores) from which the generator is the suspect.
pub const GENERATOR_CPU: f64 = 90.0;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Saturation {
    /// The first saturated step (in load order), by its number as it ran
    /// ([`StepRecord::step`], 0-based): a capacity search runs its probes out of load order,
    /// and the probe list, the step table and the bottleneck verdict all number them so.
    pub step: usize,
    /// Its offered load.
    pub offered: f64,
    /// The highest throughput measured up to and including that step: what the server sustains.
    pub peak_throughput: f64,
    /// The step that measured it, by its number as it ran (0-based; the first of equal peaks).
    #[serde(default)]
    pub peak_step: usize,
    pub reasons: Vec<String>,
}

impl Saturation {
    /// The one wording of the saturation point, the same in the terminal, the findings and the
    /// report: the offered load of the first saturated step, the peak sustained throughput beside.
    pub fn describe(&self, unit: &str) -> String {
        use crate::units::fmt_num;
        format!(
            "saturation at {} {unit} offered (step {}); peak sustained throughput {} responses/s at step {}",
            fmt_num(self.offered),
            self.step + 1,
            fmt_num(self.peak_throughput),
            self.peak_step + 1
        )
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LittleCheck {
    pub step: usize,
    pub users: f64,
    /// throughput × (mean response time + mean think time).
    pub predicted: f64,
    pub ratio: f64,
    pub off: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    pub mode: String,
    pub saturation: Option<Saturation>,
    /// Highest offered load whose step met the SLO, below the first step that failed it.
    pub capacity: Option<f64>,
    /// No step failed the SLO: the capacity is only a lower bound ("≥ X"), never a value to
    /// take a ratio against.
    #[serde(default)]
    pub capacity_lower_bound: bool,
    /// The highest throughput of any step (past the saturation point too).
    pub peak_throughput: f64,
    /// The step that measured it, by its number as it ran (0-based); None without steps.
    #[serde(default)]
    pub peak_step: Option<usize>,
    pub littles_law: Vec<LittleCheck>,
    pub usl: Option<UslFit>,
    /// Steps where the generator, not the server, may have been the limit.
    pub generator_bound: Vec<usize>,
    /// Plain-language conclusions, each with its evidence.
    pub findings: Vec<String>,
    /// The limit reached at the knee (the saturation point), ranked with its evidence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottleneck: Option<Bottleneck>,
}

/// What a step is judged against: the step before it and the lightest response time p90
/// of all the steps before it. Built once per step and carried forward ([`Before::then`]), so
/// judging every step of a sweep is linear in its steps: a judgement sees no slice of steps.
#[derive(Debug, Clone, Copy)]
pub struct Before<'a> {
    prev: Option<&'a StepRecord>,
    lightest_p90: f64,
}

impl<'a> Before<'a> {
    /// Before the first step.
    pub const NONE: Before<'static> = Before {
        prev: None,
        lightest_p90: f64::INFINITY,
    };

    /// Before step `i` of `steps` (reads the `i` steps before it once).
    pub fn of(steps: &'a [StepRecord], i: usize) -> Before<'a> {
        steps[..i].iter().fold(Before::NONE, Before::then)
    }

    /// Before the step after `s`, this being before `s`.
    pub fn then(self, s: &'a StepRecord) -> Before<'a> {
        #[cfg(test)]
        tests::STEPS_READ.with(|n| n.set(n.get() + 1));
        Before {
            prev: Some(s),
            lightest_p90: self.lightest_p90.min(s.summary.response_time_ms.p90),
        }
    }
}

/// Why step `i` counts as saturated, given the steps before it (empty when it is not).
pub fn saturation_reasons(
    mode: &str,
    steps: &[StepRecord],
    i: usize,
    slo: Option<&Slo>,
) -> Vec<String> {
    saturation_reasons_after(mode, Before::of(steps, i), &steps[i], slo)
}

/// Why `s` counts as saturated, judged against `before` (empty when it is not).
pub fn saturation_reasons_after(
    mode: &str,
    before: Before,
    s: &StepRecord,
    slo: Option<&Slo>,
) -> Vec<String> {
    let sum = &s.summary;
    let mut r = Vec::new();
    let failed = Slo::measure(slo::Metric::Errors, sum);
    if failed > ERROR_SHARE {
        r.push(format!("{:.2}% of requests failed", failed * 100.0));
    }
    if mode == "open" {
        // With scenarios the offered load counts sessions/s and the throughput responses/s:
        // not comparable. A server that falls behind keeps sessions in flight longer until
        // arrivals find `--max-sessions` of them and are dropped.
        if let Some(ss) = &sum.sessions {
            if ss.dropped > 0 {
                r.push(format!(
                    "{} of {} session arrivals dropped: the sessions in flight reached --max-sessions",
                    ss.dropped,
                    ss.started + ss.dropped
                ));
            }
        } else if sum.throughput < THROUGHPUT_SHARE * s.offered {
            r.push(format!(
                "throughput {:.1}/s is below {:.0}% of the offered {:.1}/s",
                sum.throughput,
                THROUGHPUT_SHARE * 100.0,
                s.offered
            ));
        }
        if let Some(before_s) = before.prev {
            let prev = before_s.summary.send_lag_ms.p99;
            let cur = sum.send_lag_ms.p99;
            // Lag with connections to spare is the generator's (see generator_bound), not the server's.
            if cur > 10.0 && cur > 2.0 * prev && s.generator.pool_waits > 0 {
                r.push(format!(
                    "send lag p99 grew from {prev:.1} ms to {cur:.1} ms with every connection busy"
                ));
            }
            let base = before.lightest_p90;
            let p90 = sum.response_time_ms.p90;
            if base.is_finite() && p90 > (4.0 * base).max(base + 20.0) {
                r.push(format!(
                    "response time p90 {p90:.1} ms is over 4x the lightest step's {base:.1} ms"
                ));
            }
        }
    } else if let Some(prev) = before.prev {
        let p = &prev.summary;
        let gain = if p.throughput > 0.0 {
            sum.throughput / p.throughput - 1.0
        } else {
            1.0
        };
        let rt_growth = if p.response_time_ms.mean > 0.0 {
            sum.response_time_ms.mean / p.response_time_ms.mean - 1.0
        } else {
            0.0
        };
        if gain < CLOSED_GAIN && rt_growth > CLOSED_GAIN {
            r.push(format!(
                "throughput gained {:+.1}% over the previous step while response time grew {:+.0}%",
                gain * 100.0,
                rt_growth * 100.0
            ));
        }
    }
    if let Some(slo) = slo {
        for f in slo.failures(sum) {
            r.push(format!("SLO {f}"));
        }
    }
    r
}

/// The highest throughput of `steps` and the step that measured it (its number as it ran;
/// the first of equal peaks): one computation for the saturation point's peak and the run's.
pub fn peak_of(steps: &[StepRecord]) -> Option<(usize, f64)> {
    steps.iter().fold(None, |best, s| match best {
        Some((_, b)) if b >= s.summary.throughput => best,
        _ => Some((s.step, s.summary.throughput)),
    })
}

/// The Little's-law check of a closed-loop step (None in open loop or without answers).
pub fn littles_law(s: &StepRecord) -> Option<LittleCheck> {
    let users = s.summary.users? as f64;
    if s.summary.responses == 0 || users == 0.0 {
        return None;
    }
    let predicted = s.summary.throughput * (s.summary.response_time_ms.mean + s.think_ms) / 1000.0;
    let ratio = predicted / users;
    Some(LittleCheck {
        step: s.step,
        users,
        predicted,
        ratio,
        off: (ratio - 1.0).abs() > LITTLE_TOLERANCE,
    })
}

/// Send lag (p99) from which a generator with connections to spare fell behind its schedule…
pub const GENERATOR_LAG_MS: f64 = 10.0;
/// …provided the lag is also this share of the response time p99: lag much shorter than the
/// server's own delay (a busy host's scheduler hiccups under a growing queue) changes nothing
/// the step measured.
pub const GENERATOR_LAG_SHARE: f64 = 0.25;
/// Arrivals never sent, as a share of those the plan scheduled (sent or not), beyond which the
/// plan was not carried out: a run then exits 1 ([`plan_carried_out`]), and a sweep's step with
/// connections to spare is generator-bound ([`generator_bound`]).
pub const GENERATOR_UNSENT_SHARE: f64 = 0.01;

/// The share of the plan's arrivals in the window that were never sent (open loop; 0 when
/// nothing was scheduled).
pub fn unsent_share(s: &Summary) -> f64 {
    let intended = s.requests + s.unsent;
    if intended == 0 {
        0.0
    } else {
        s.unsent as f64 / intended as f64
    }
}

/// Whether the generator sent what the plan scheduled: no more than
/// [`GENERATOR_UNSENT_SHARE`] of the arrivals never sent. The one rule, for a run's exit
/// status and a sweep's generator-bound step alike.
pub fn plan_carried_out(s: &Summary) -> bool {
    unsent_share(s) <= GENERATOR_UNSENT_SHARE
}

/// Arrivals the plan scheduled that were never sent, and why: not answers of the server, so
/// not counted as its failures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NotSent {
    pub count: u64,
    /// Arrivals the plan scheduled in the window, sent or not.
    pub intended: u64,
    /// `count` / `intended`.
    pub share: f64,
    /// The plan was carried out nevertheless ([`plan_carried_out`]).
    pub plan_carried_out: bool,
    /// Why they were not sent, and what to change, from the generator's evidence.
    pub why: String,
}

/// The arrivals never sent (None when every one was), with the cause its evidence shows: the
/// generator's own CPU, or every connection it may open busy waiting for an answer (the
/// server's pace, or too few `--connections`), or else the generator fell behind.
pub fn not_sent(s: &Summary, g: &GeneratorStats) -> Option<NotSent> {
    if s.unsent == 0 {
        return None;
    }
    let why = if g.cpu_pct >= GENERATOR_CPU {
        format!(
            "the generator could not keep up (its CPU at {:.0}% of its {} thread(s)): fewer \
             connections busy, more threads (--threads), or a lower rate",
            g.cpu_pct, g.threads
        )
    } else if g.pool_waits > 0 {
        "every connection it may open was busy (connecting, or waiting for an answer): the \
         server did not keep up with this rate over that many connections; a lower rate, or \
         more --connections if the server has room"
            .to_string()
    } else {
        format!(
            "the generator could not keep up (its CPU at {:.0}% of its {} thread(s), \
             connections to spare): more threads (--threads), or a lower rate",
            g.cpu_pct, g.threads
        )
    };
    Some(NotSent {
        count: s.unsent,
        intended: s.requests + s.unsent,
        share: unsent_share(s),
        plan_carried_out: plan_carried_out(s),
        why,
    })
}

/// Whether the generator itself fell behind in this step, with the evidence: its CPU near
/// its threads' capacity, or (open loop, no arrival ever waited for a connection) send lag
/// that matters beside the response time, or arrivals it never sent. Lag from arrivals that
/// waited for a busy connection is the server's queue, not the generator's doing.
pub fn generator_bound(mode: &str, s: &StepRecord) -> Option<String> {
    let g = &s.generator;
    let sum = &s.summary;
    let lag = sum.send_lag_ms.p99;
    if g.cpu_pct >= GENERATOR_CPU {
        return Some(format!(
            "generator CPU at {:.0}% of its {} thread(s), send lag p99 {lag:.1} ms",
            g.cpu_pct, g.threads
        ));
    }
    if mode != "open" || g.pool_waits > 0 {
        return None;
    }
    let rt = sum.response_time_ms.p99;
    if lag > GENERATOR_LAG_MS && lag > GENERATOR_LAG_SHARE * rt {
        return Some(format!(
            "send lag p99 {lag:.1} ms against a response time p99 of {rt:.1} ms, with \
             connections to spare (no arrival waited for one) and generator CPU at {:.0}%: \
             overload fell behind its schedule",
            g.cpu_pct
        ));
    }
    (!plan_carried_out(sum)).then(|| {
        format!(
            "{} arrivals never sent ({:.1}% of those intended) with connections to spare and \
             generator CPU at {:.0}%: overload did not deliver the offered load",
            sum.unsent,
            unsent_share(sum) * 100.0,
            g.cpu_pct
        )
    })
}

/// The highest load (steps in order of load) at which every run met the SLO and was sustained,
/// below the first load where one did not; and whether no load failed (the capacity is then a
/// lower bound). A run that failed while flagged generator-bound measured overload, not the
/// server, and does not count against its load when another run there met the SLO.
pub fn capacity_of(steps: &[StepRecord], slo: &Slo) -> (Option<f64>, bool) {
    let meets =
        |s: &StepRecord| slo.holds(&s.summary) && !s.flags.iter().any(|f| f == "not-sustained");
    let mut best = None;
    let mut i = 0;
    while i < steps.len() {
        let rate = steps[i].offered;
        let runs: Vec<&StepRecord> = steps[i..]
            .iter()
            .take_while(|s| s.offered == rate)
            .collect();
        i += runs.len();
        let counted: Vec<&&StepRecord> = runs
            .iter()
            .filter(|s| meets(s) || !s.flags.iter().any(|f| f == "generator-bound"))
            .collect();
        if counted.is_empty() || !counted.iter().all(|s| meets(s)) {
            return (best, false);
        }
        best = Some(rate);
    }
    (best, best.is_some())
}

/// The flags of a finished step, given the steps before it (used when the step ends).
pub fn step_flags(mode: &str, steps: &[StepRecord], i: usize, slo: Option<&Slo>) -> Vec<String> {
    step_flags_after(mode, Before::of(steps, i), &steps[i], slo)
}

/// The flags of a finished step `s`, judged against `before` (for a reader flagging many
/// steps in order: carry `before` forward with [`Before::then`]).
pub fn step_flags_after(
    mode: &str,
    before: Before,
    s: &StepRecord,
    slo: Option<&Slo>,
) -> Vec<String> {
    let mut f = Vec::new();
    if !saturation_reasons_after(mode, before, s, slo).is_empty() {
        f.push("saturated".to_string());
    }
    if slo.is_some_and(|slo| !slo.holds(&s.summary)) {
        f.push("slo-failed".to_string());
    }
    if generator_bound(mode, s).is_some() {
        f.push("generator-bound".to_string());
    }
    if littles_law(s).is_some_and(|c| c.off) {
        f.push("littles-law".to_string());
    }
    f
}

/// [`analyze`], with what the run's configuration adds to the bottleneck verdict.
pub fn analyze_with(
    mode: &str,
    steps: &[StepRecord],
    slo: Option<&Slo>,
    cx: bottleneck::Context,
) -> Analysis {
    let (mut a, knee) = analyze_at(mode, steps, slo);
    if let Some(i) = knee {
        a.bottleneck = Some(bottleneck::diagnose(mode, steps, i, cx));
    }
    a
}

/// Analyses the steps of a sweep in order of load.
pub fn analyze(mode: &str, steps: &[StepRecord], slo: Option<&Slo>) -> Analysis {
    analyze_at(mode, steps, slo).0
}

/// [`analyze`], with the index in `steps` of the saturated one (its number as it ran may
/// differ: see [`Saturation::step`]).
fn analyze_at(mode: &str, steps: &[StepRecord], slo: Option<&Slo>) -> (Analysis, Option<usize>) {
    let mut findings = Vec::new();
    let mut saturation = None;
    let mut knee = None;
    let mut before = Before::NONE;
    for i in 0..steps.len() {
        let reasons = saturation_reasons_after(mode, before, &steps[i], slo);
        before = before.then(&steps[i]);
        if !reasons.is_empty() {
            let (peak_step, peak) = peak_of(&steps[..=i]).unwrap_or_default();
            knee = Some(i);
            saturation = Some(Saturation {
                step: steps[i].step,
                offered: steps[i].offered,
                peak_throughput: peak,
                peak_step,
                reasons,
            });
            break;
        }
    }
    let unit = if mode == "open" { "req/s" } else { "users" };
    match &saturation {
        Some(s) => findings.push(format!("{}: {}", s.describe(unit), s.reasons.join("; "))),
        None if !steps.is_empty() => findings.push(format!(
            "no saturation up to {:.0} {unit}: the server kept up with every step",
            steps[steps.len() - 1].offered
        )),
        None => {}
    }
    let (capacity, capacity_lower_bound) = slo.map_or((None, false), |slo| capacity_of(steps, slo));
    match (slo, capacity) {
        (Some(slo), Some(c)) if capacity_lower_bound => findings.push(format!(
            "capacity under SLO '{}': at least {c:.0} {unit} (every step met it: the highest load tried)",
            slo.text
        )),
        (Some(slo), Some(c)) => findings.push(format!(
            "capacity under SLO '{}': {c:.0} {unit} (highest step that met it)",
            slo.text
        )),
        (Some(slo), None) => findings.push(format!("no step met the SLO '{}'", slo.text)),
        (None, _) => {}
    }
    let littles_law: Vec<LittleCheck> = steps.iter().filter_map(littles_law).collect();
    for c in littles_law.iter().filter(|c| c.off) {
        findings.push(format!(
            "step {}: Little's law is off by {:+.0}% ({} users, but throughput x (response + think) = {:.1}): \
             users were not all busy, or the measurement window cut requests",
            c.step + 1,
            (c.ratio - 1.0) * 100.0,
            c.users,
            c.predicted
        ));
    }
    let generator: Vec<(usize, String)> = steps
        .iter()
        .filter_map(|s| generator_bound(mode, s).map(|w| (s.step, w)))
        .collect();
    for (i, why) in &generator {
        findings.push(format!(
            "step {}: this step measured overload itself, not the server ({why})",
            i + 1
        ));
    }
    let usl = if mode == "closed" {
        let pts: Vec<(f64, f64)> = steps
            .iter()
            .map(|s| (s.offered, s.summary.throughput))
            .collect();
        usl::fit(&pts)
    } else {
        None
    };
    if let Some(u) = &usl {
        match (u.peak_users, u.peak_throughput) {
            (Some(n), Some(x)) => findings.push(format!(
                "USL fit: σ={:.4}, κ={:.5}, R²={:.3}; throughput peaks near {n:.0} users at {x:.1}/s",
                u.sigma, u.kappa, u.r2
            )),
            _ => findings.push(format!(
                "USL fit: σ={:.4}, κ={:.5}, R²={:.3}; no retrograde region: throughput levels off near {:.1}/s",
                u.sigma,
                u.kappa,
                u.r2,
                if u.sigma > 0.0 { u.lambda / u.sigma } else { f64::INFINITY }
            )),
        }
    }
    let peak = peak_of(steps);
    let bottleneck = knee.map(|i| bottleneck::diagnose(mode, steps, i, Default::default()));
    let a = Analysis {
        mode: mode.to_string(),
        saturation,
        capacity,
        capacity_lower_bound,
        peak_throughput: peak.map_or(0.0, |p| p.1),
        peak_step: peak.map(|p| p.0),
        littles_law,
        usl,
        generator_bound: generator.into_iter().map(|g| g.0).collect(),
        findings,
        bottleneck,
    };
    (a, knee)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::metrics::{LatencyStats, Summary};
    use crate::store::GeneratorStats;
    use std::collections::BTreeMap;

    thread_local! {
        /// Steps read by [`Before::then`] on this thread: what judging a sweep costs.
        pub static STEPS_READ: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// A sweep of `n` steps where no step saturates: each is judged against every one before.
    fn flat_sweep(n: usize) -> Vec<StepRecord> {
        (0..n)
            .map(|i| step(i, 100.0, summary(100.0, 100.0, 5.0 + (i % 7) as f64, 0)))
            .collect()
    }

    #[test]
    fn judging_a_sweep_reads_each_step_once() {
        // Judging step i against a scan of the i steps before it made a 100,000-step folder
        // cost 5·10⁹ reads (a 1 GiB folder of small steps: minutes); carried forward, n.
        for n in [10, 1000] {
            let steps = flat_sweep(n);
            STEPS_READ.with(|c| c.set(0));
            let a = analyze("open", &steps, None);
            assert!(a.saturation.is_none(), "{a:?}");
            let read = STEPS_READ.with(|c| c.get());
            assert!(read <= n, "{read} step reads to judge {n} steps");
        }
    }

    #[test]
    fn a_step_judged_against_what_came_before_it_is_judged_as_against_the_steps() {
        let mut steps = flat_sweep(12);
        steps[9].summary.response_time_ms.p90 = 80.0;
        steps[10].summary.throughput = 40.0;
        steps[11].summary.send_lag_ms.p99 = 50.0;
        steps[11].generator.pool_waits = 3;
        let mut before = Before::NONE;
        for (i, s) in steps.iter().enumerate() {
            for mode in ["open", "closed"] {
                let after = saturation_reasons_after(mode, before, s, None);
                assert_eq!(
                    after,
                    saturation_reasons(mode, &steps, i, None),
                    "{i} {mode}"
                );
                assert_eq!(
                    step_flags_after(mode, before, s, None),
                    step_flags(mode, &steps, i, None)
                );
            }
            before = before.then(s);
        }
        assert!(!saturation_reasons("open", &steps, 9, None).is_empty());
    }

    /// A synthetic summary: offered rate, throughput, p-latency (all percentiles), errors.
    pub fn summary(offered: f64, throughput: f64, latency_ms: f64, errors: u64) -> Summary {
        let lat = LatencyStats {
            mean: latency_ms,
            p50: latency_ms,
            p90: latency_ms,
            p95: latency_ms,
            p99: latency_ms,
            p999: latency_ms,
            max: latency_ms,
            count: 1,
        };
        let responses = (throughput * 10.0) as u64;
        let mut statuses = BTreeMap::new();
        statuses.insert("200".to_string(), responses);
        let mut errs = BTreeMap::new();
        if errors > 0 {
            errs.insert("timeout".to_string(), errors);
        }
        Summary {
            mode: "open".into(),
            offered_rate: Some(offered),
            users: None,
            throughput,
            goodput: throughput,
            requests: responses + errors,
            sent: responses + errors,
            responses,
            unsent: 0,
            retries: 0,
            interrupted_requests: 0,
            protocols: Default::default(),
            duration_s: 10.0,
            connections_opened: 1,
            connects: None,
            protocol: None,
            errors: errs,
            error_count: errors,
            error_ratio: errors as f64 / (responses + errors).max(1) as f64,
            statuses,
            ok_status: Default::default(),
            bytes_in: 0,
            bytes_out: 0,
            bytes_in_per_s: 0.0,
            response_time_ms: lat,
            service_time_ms: lat,
            send_lag_ms: LatencyStats::default(),
            connect_time_ms: LatencyStats::default(),
            first_byte_ms: LatencyStats::default(),
            tls: None,
            quic: None,
            names: Vec::new(),
            sessions: None,
        }
    }

    pub fn step(i: usize, offered: f64, s: Summary) -> StepRecord {
        StepRecord {
            step: i,
            offered,
            start_unix_ms: 0,
            end_unix_ms: 0,
            start_s: 0.0,
            end_s: 0.0,
            think_ms: 0.0,
            summary: s,
            generator: GeneratorStats {
                io: None,
                cpu_pct: 10.0,
                cpu_us_per_response: 10.0,
                threads: 1,
                pool_waits: 0,
            },
            response_time_hist: String::new(),
            hists: None,
            flags: vec![],
            slo_ok: None,
            server: None,
        }
    }

    fn closed(i: usize, users: f64, x: f64, rt: f64) -> StepRecord {
        let mut s = summary(0.0, x, rt, 0);
        s.mode = "closed".into();
        s.offered_rate = None;
        s.users = Some(users as u64);
        step(i, users, s)
    }

    #[test]
    fn open_loop_saturation_at_the_first_short_step() {
        let steps: Vec<StepRecord> = [
            (100.0, 100.0, 20.0),
            (200.0, 199.0, 21.0),
            (300.0, 299.0, 22.0),
            (400.0, 370.0, 900.0),
            (500.0, 380.0, 3000.0),
        ]
        .iter()
        .enumerate()
        .map(|(i, &(o, x, l))| step(i, o, summary(o, x, l, 0)))
        .collect();
        let a = analyze("open", &steps, None);
        let s = a.saturation.unwrap();
        assert_eq!(s.step, 3);
        assert_eq!(s.offered, 400.0);
        assert_eq!((s.peak_step, s.peak_throughput), (3, 370.0));
        // One number, one wording: the offered load of the step, the peak sustained beside,
        // with its step.
        let words = "saturation at 400 req/s offered (step 4); peak sustained throughput 370 \
                     responses/s at step 4";
        assert_eq!(s.describe("req/s"), words);
        // The run's peak is a figure of its own, past the knee, named by its step.
        assert_eq!((a.peak_step, a.peak_throughput), (Some(4), 380.0));
        assert!(a.findings[0].starts_with(words), "{}", a.findings[0]);
        assert!(
            s.reasons.iter().any(|r| r.contains("below 95%")),
            "{:?}",
            s.reasons
        );
        assert!(a.capacity.is_none());
        assert!(a.usl.is_none());
    }

    /// Probes run out of load order (a capacity search): the saturation point is named by the
    /// step number the probe ran as, the one the probe list, the step table and the bottleneck
    /// verdict show, not by its rank in load order.
    #[test]
    fn saturation_names_the_probe_by_the_order_it_ran() {
        // Run order: 100, 400, 200, 300 req/s; in load order 300 is third, the first saturated.
        let steps: Vec<StepRecord> = [
            (0, 100.0, 100.0),
            (2, 200.0, 199.0),
            (3, 300.0, 240.0),
            (1, 400.0, 250.0),
        ]
        .iter()
        .map(|&(i, o, x)| step(i, o, summary(o, x, 20.0, 0)))
        .collect();
        let a = analyze_with("open", &steps, None, Default::default());
        let s = a.saturation.as_ref().unwrap();
        assert_eq!((s.step, s.offered), (3, 300.0));
        assert!(s.describe("req/s").contains("300 req/s offered (step 4)"));
        assert!(a.findings[0].contains("(step 4)"), "{}", a.findings[0]);
        let b = a.bottleneck.unwrap();
        assert!(
            b.verdict.starts_with("knee at 300 req/s (step 4)"),
            "{}",
            b.verdict
        );
    }

    #[test]
    fn errors_or_latency_alone_mark_saturation() {
        let mut steps = vec![
            step(0, 100.0, summary(100.0, 100.0, 10.0, 0)),
            step(1, 200.0, summary(200.0, 200.0, 10.0, 50)),
        ];
        assert_eq!(analyze("open", &steps, None).saturation.unwrap().step, 1);
        steps[1] = step(1, 200.0, summary(200.0, 200.0, 80.0, 0));
        let s = analyze("open", &steps, None).saturation.unwrap();
        assert!(s.reasons[0].contains("p90"), "{:?}", s.reasons);
        // A modest rise is not saturation.
        steps[1] = step(1, 200.0, summary(200.0, 200.0, 25.0, 0));
        assert!(analyze("open", &steps, None).saturation.is_none());
    }

    #[test]
    fn capacity_is_the_last_step_meeting_the_slo() {
        let slo = slo::parse("p99<100ms").unwrap();
        let steps: Vec<StepRecord> = [(100.0, 10.0), (200.0, 30.0), (300.0, 150.0), (400.0, 90.0)]
            .iter()
            .enumerate()
            .map(|(i, &(o, l))| step(i, o, summary(o, o, l, 0)))
            .collect();
        let a = analyze("open", &steps, Some(&slo));
        assert_eq!(a.capacity, Some(200.0));
        assert!(!a.capacity_lower_bound);
        assert_eq!(a.saturation.unwrap().step, 2);
    }

    /// Every step met the SLO: the capacity is a lower bound, and says so.
    #[test]
    fn capacity_that_never_failed_is_a_lower_bound() {
        let slo = slo::parse("p99<100ms").unwrap();
        let steps: Vec<StepRecord> = [100.0, 200.0]
            .iter()
            .enumerate()
            .map(|(i, &o)| step(i, o, summary(o, o, 10.0, 0)))
            .collect();
        let a = analyze("open", &steps, Some(&slo));
        assert_eq!((a.capacity, a.capacity_lower_bound), (Some(200.0), true));
        assert!(
            a.findings.iter().any(|f| f.contains("at least 200")),
            "{:?}",
            a.findings
        );
    }

    /// Probes repeated at one load (steps sorted by load): the load counts only if every run
    /// met the SLO and kept up; a generator-bound failure that was run again does not count.
    #[test]
    fn capacity_counts_a_load_only_if_every_run_met_the_slo() {
        let slo = slo::parse("p99<100ms").unwrap();
        let run = |i, o: f64, ms: f64, flag: Option<&str>| {
            let mut s = step(i, o, summary(o, o, ms, 0));
            s.flags.extend(flag.map(String::from));
            s
        };
        let steps = vec![
            run(0, 100.0, 10.0, None),
            run(1, 200.0, 10.0, None),
            run(2, 200.0, 150.0, None),
            run(3, 300.0, 150.0, None),
        ];
        assert_eq!(capacity_of(&steps, &slo), (Some(100.0), false));
        let steps = vec![
            run(0, 100.0, 10.0, None),
            run(1, 200.0, 150.0, Some("generator-bound")),
            run(2, 200.0, 10.0, None),
            run(3, 300.0, 10.0, Some("not-sustained")),
        ];
        assert_eq!(capacity_of(&steps, &slo), (Some(200.0), false));
    }

    #[test]
    fn closed_loop_saturation_littles_law_and_usl() {
        // 20 ms service, 8 workers: X = min(N, 8) / 0.02; response time = N / X.
        let steps: Vec<StepRecord> = [1.0, 2.0, 4.0, 8.0, 12.0, 16.0]
            .iter()
            .enumerate()
            .map(|(i, &n): (usize, &f64)| {
                let x: f64 = n.min(8.0) / 0.02;
                closed(i, n, x, n / x * 1000.0)
            })
            .collect();
        let a = analyze("closed", &steps, None);
        let s = a.saturation.unwrap();
        assert_eq!(s.step, 4, "{:?}", s.reasons);
        assert_eq!(s.peak_throughput, 400.0);
        assert!(a.littles_law.iter().all(|c| !c.off), "{:?}", a.littles_law);
        assert!(a.usl.is_some());
        // A step whose users were partly idle breaks Little's law.
        let bad = closed(0, 10.0, 100.0, 20.0);
        assert!(littles_law(&bad).unwrap().off);
    }

    #[test]
    fn generator_self_check() {
        let mut s = step(0, 1000.0, summary(1000.0, 1000.0, 1.0, 0));
        assert!(generator_bound("open", &s).is_none());
        s.generator.cpu_pct = 97.0;
        assert!(generator_bound("open", &s).unwrap().contains("CPU"));
        s.generator.cpu_pct = 20.0;
        s.summary.send_lag_ms.p99 = 50.0;
        assert!(generator_bound("open", &s).unwrap().contains("send lag"));
        s.generator.pool_waits = 10;
        assert!(
            generator_bound("open", &s).is_none(),
            "queueing for a full pool is the server's doing"
        );
        let a = analyze("open", &[s], None);
        assert!(a.generator_bound.is_empty());
    }

    /// The plan was carried out while at most 1% of its arrivals were never sent (of those
    /// intended: sent or not); the cause named is the one the generator's evidence shows.
    #[test]
    fn arrivals_not_sent_beyond_1_percent_mean_the_plan_was_not_carried_out() {
        let mut s = summary(1000.0, 1000.0, 1.0, 0);
        s.requests = 990;
        s.unsent = 10;
        assert!(plan_carried_out(&s), "exactly 1%");
        s.unsent = 11;
        assert!(!plan_carried_out(&s));
        let mut g = GeneratorStats {
            io: None,
            cpu_pct: 95.0,
            cpu_us_per_response: 10.0,
            threads: 2,
            pool_waits: 0,
        };
        let n = not_sent(&s, &g).expect("some not sent");
        assert_eq!((n.count, n.intended, n.plan_carried_out), (11, 1001, false));
        assert!(
            n.why
                .contains("the generator could not keep up (its CPU at 95% of its 2 thread(s))"),
            "{}",
            n.why
        );
        g.cpu_pct = 10.0;
        g.pool_waits = 3;
        let n = not_sent(&s, &g).unwrap();
        assert!(
            n.why.contains("every connection it may open was busy"),
            "{}",
            n.why
        );
        g.pool_waits = 0;
        let n = not_sent(&s, &g).unwrap();
        assert!(n.why.contains("connections to spare"), "{}", n.why);
        assert!(!n.why.contains("  "), "one line, single spaces: {}", n.why);
        s.unsent = 0;
        assert_eq!(not_sent(&s, &g), None);
        // Nothing scheduled: nothing missed.
        s.requests = 0;
        assert!(plan_carried_out(&s));
    }

    /// The case: 2% generator CPU, a server queue behind 8 busy workers: every
    /// connection busy and arrivals waiting for one, so send lag grows — the server's doing.
    /// Nor does a busy host's 15 ms scheduler hiccup under a 900 ms response time count. A
    /// saturated generator does, with its evidence; so do arrivals it never sent.
    #[test]
    fn generator_self_check_fires_only_on_evidence_it_fell_behind() {
        let mut s = step(0, 600.0, summary(600.0, 400.0, 900.0, 0));
        s.generator.cpu_pct = 2.0;
        s.summary.send_lag_ms.p99 = 700.0;
        s.generator.pool_waits = 5_000;
        assert_eq!(generator_bound("open", &s), None);
        assert!(!step_flags("open", &[s.clone()], 0, None).contains(&"generator-bound".into()));
        s.generator.pool_waits = 0;
        s.summary.send_lag_ms.p99 = 15.0;
        assert_eq!(
            generator_bound("open", &s),
            None,
            "lag small beside the response time"
        );

        s.generator.cpu_pct = 96.0;
        let why = generator_bound("open", &s).expect("saturated CPU");
        assert!(why.contains("CPU at 96% of its 1 thread(s)"), "{why}");
        assert!(why.contains("send lag p99 15.0 ms"), "{why}");
        assert!(step_flags("open", &[s.clone()], 0, None).contains(&"generator-bound".into()));

        s.generator.cpu_pct = 30.0;
        s.summary.unsent = s.summary.sent / 10;
        let why = generator_bound("open", &s).expect("unsent arrivals");
        assert!(why.contains("never sent (9.1% of those intended)"), "{why}");
        assert!(!why.contains("  "), "one line, single spaces: {why}");
        s.generator.pool_waits = 1;
        assert_eq!(
            generator_bound("open", &s),
            None,
            "they waited for a busy connection"
        );
    }

    #[test]
    fn session_steps_judge_dropped_arrivals_not_responses_against_sessions() {
        use crate::metrics::SessionSummary;
        // 20 sessions/s offered, 3 requests each: 60 responses/s is no shortfall, and 15/s
        // (a third of the requests) is none either: the units differ.
        let mut a = summary(20.0, 60.0, 5.0, 0);
        a.sessions = Some(SessionSummary {
            offered_per_s: 20.0,
            started: 100,
            completed: 100,
            completed_per_s: 20.0,
            ..Default::default()
        });
        let mut b = summary(40.0, 15.0, 5.0, 0);
        b.sessions = Some(SessionSummary {
            offered_per_s: 40.0,
            started: 200,
            completed: 190,
            completed_per_s: 38.0,
            ..Default::default()
        });
        let steps = vec![step(0, 20.0, a.clone()), step(1, 40.0, b.clone())];
        assert!(saturation_reasons("open", &steps, 0, None).is_empty());
        assert!(saturation_reasons("open", &steps, 1, None).is_empty());
        b.sessions.as_mut().unwrap().dropped = 25;
        let steps = vec![step(0, 20.0, a), step(1, 40.0, b)];
        let r = saturation_reasons("open", &steps, 1, None);
        assert_eq!(
            r,
            vec![
                "25 of 225 session arrivals dropped: the sessions in flight reached --max-sessions"
            ]
        );
    }
}
