//! Exact merge of the results folders of a split plan (`--segment I/N` on N generators) into
//! one folder that report, compare and the analysis read as if one host had run the plan.
//!
//! Per step, the histograms are added (HdrHistogram addition loses nothing: the merged
//! percentiles are those of all the segments' requests together) and the counters summed;
//! rates are recomputed over the step's window. Per second, counts are summed, the mean is
//! weighted by responses and the max is the max. Flags that judge a step against the others
//! (saturated, slo-failed, littles-law) are judged again on the merged steps; those about one
//! generator (generator-bound, interrupted, not-sustained) are kept when any segment raised
//! them. The server's observation is the first segment's that has one: the generators watch
//! the same server.
//!
//! Refused, with a one-line reason: folders that are not segments, segments of different
//! plans (their run.json config differs beyond the segment's own index and thread count),
//! missing or doubled segments, and steps that do not line up (another load, or a start more
//! than [`max_skew_ms`] apart).
use crate::analysis;
use crate::metrics::histo;
use crate::metrics::names::sort_names;
use crate::metrics::{LatencyStats, TlsSummary};
use crate::metrics::{NameSummary, Summary};
use crate::store::{GeneratorStats, RunData, RunInfo, SeriesPoint, StepHists, StepRecord};
use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::path::Path;

/// One folder's results, as merged.
pub struct Merged {
    pub info: RunInfo,
    /// Steps with their seconds, in step order.
    pub steps: Vec<(StepRecord, Vec<SeriesPoint>)>,
    /// What the user must know (segments that stopped at different steps…).
    pub notes: Vec<String>,
    /// Live control's changes in any part (each part's own: a generator steered alone
    /// changed its share only), in time order.
    pub events: Vec<crate::store::ControlEvent>,
}

/// How far apart the segments' starts of one step may be: a tenth of the step's window,
/// within 100 ms to 1 s (clocks kept by NTP agree to a few ms; a skew beyond this means the
/// generators did not send the step together).
pub fn max_skew_ms(window_s: f64) -> u64 {
    ((window_s * 100.0) as u64).clamp(100, 1000)
}

/// Merges the segments `runs` (any order) of one plan.
pub fn merge(runs: &[RunData]) -> Result<Merged, String> {
    let first = runs.first().ok_or("no results folder to merge")?;
    let name = |r: &RunData| crate::fsutil::shown(&r.dir);
    // Segment i at position i.
    let mut by_index: Vec<Option<&RunData>> = Vec::new();
    let mut count = None;
    for r in runs {
        let (index, n) = segment_of(&r.info).ok_or_else(|| {
            format!(
                "'{}' is not a segment of a split plan (run without --segment I/N)",
                name(r)
            )
        })?;
        match count {
            None => {
                count = Some(n);
                by_index = vec![None; n as usize];
            }
            Some(c) if c != n => {
                return Err(format!(
                    "'{}' is segment {index}/{n}, '{}' one of {c}: different splits",
                    name(r),
                    name(first)
                ))
            }
            Some(_) => {}
        }
        if let Some(other) = by_index[index as usize] {
            return Err(format!(
                "'{}' and '{}' are both segment {index}/{n}",
                name(other),
                name(r)
            ));
        }
        by_index[index as usize] = Some(r);
    }
    let count = count.unwrap_or(1);
    let missing: Vec<String> = (0..count)
        .filter(|&i| by_index[i as usize].is_none())
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        return Err(format!("segment {} missing", missing.join(", ")));
    }
    let runs: Vec<&RunData> = by_index.into_iter().flatten().collect();
    let base = runs[0];
    for r in &runs[1..] {
        if let Some(why) = plan_difference(&base.info, &r.info) {
            return Err(format!(
                "'{}' is from another plan than '{}': {why}",
                name(r),
                name(base)
            ));
        }
    }
    let slo = match &base.info.slo {
        Some(text) => Some(analysis::slo::parse(text).map_err(|e| format!("run.json slo: {e}"))?),
        None => None,
    };
    let mut notes = Vec::new();
    let n_steps = runs.iter().map(|r| r.steps.len()).min().unwrap_or(0);
    // A merged folder of no step would say nothing while claiming to be the plan's results.
    if let Some(empty) = runs.iter().find(|r| r.steps.is_empty()) {
        return Err(format!(
            "'{}' holds no step to merge",
            crate::fsutil::shown(&empty.dir.join("steps.jsonl"))
        ));
    }
    let most = runs.iter().map(|r| r.steps.len()).max().unwrap_or(0);
    if most > n_steps {
        notes.push(format!(
            "the segments ran {n_steps} to {most} steps (each judged its stop rules on its own part): merged the {n_steps} steps all ran"
        ));
    }
    let mode = base.info.mode.as_str();
    let mut steps: Vec<StepRecord> = Vec::with_capacity(n_steps);
    let mut kept = Vec::with_capacity(n_steps);
    let mut seconds = Vec::with_capacity(n_steps);
    // Each run's seconds by step, gathered once: a search of every run's series per step
    // would cost steps × seconds.
    let mut by_step: Vec<BTreeMap<usize, Vec<&SeriesPoint>>> = vec![BTreeMap::new(); runs.len()];
    for (r, m) in runs.iter().zip(&mut by_step) {
        for p in r.series.iter().filter(|p| p.step < n_steps) {
            m.entry(p.step).or_default().push(p);
        }
    }
    for k in 0..n_steps {
        let parts: Vec<(&RunData, &StepRecord)> =
            runs.iter().map(|r| (*r, &r.steps[k])).collect::<Vec<_>>();
        check_aligned(k, &parts, mode)?;
        let named: Vec<(String, &StepRecord)> = parts.iter().map(|(r, s)| (name(r), *s)).collect();
        steps.push(merge_step(k, &named)?);
        kept.push(kept_flags(&named));
        let per_run = runs
            .iter()
            .zip(&mut by_step)
            .map(|(r, m)| (name(r), m.remove(&k).unwrap_or_default()))
            .collect();
        seconds.push(merge_series(k, per_run)?);
    }
    // Flags judged on the merged steps in order, as the runner does when a step ends (a
    // step's flags read the steps before it, never their flags).
    let mut flags = Vec::with_capacity(n_steps);
    let mut before = analysis::Before::NONE;
    for s in &steps {
        flags.push(analysis::step_flags_after(mode, before, s, slo.as_ref()));
        before = before.then(s);
    }
    for ((rec, mut f), kept) in steps.iter_mut().zip(flags).zip(kept) {
        for k in kept {
            if !f.contains(&k) {
                f.push(k);
            }
        }
        rec.flags = f;
        rec.slo_ok = slo.as_ref().map(|s| s.holds(&rec.summary));
    }
    let complete = runs.iter().all(|r| r.info.complete) && most == n_steps;
    let reasons: Vec<&str> = runs
        .iter()
        .filter_map(|r| r.info.stop_reason.as_deref())
        .collect();
    let reason = if reasons.windows(2).all(|w| w[0] == w[1]) {
        reasons.first().map(|s| s.to_string())
    } else {
        Some(format!(
            "the segments stopped differently: {}",
            reasons.join("; ")
        ))
    };
    let mut info = base.info.clone();
    info.started_unix_ms = runs
        .iter()
        .map(|r| r.info.started_unix_ms)
        .min()
        .unwrap_or(0);
    info.finished_unix_ms = runs.iter().filter_map(|r| r.info.finished_unix_ms).max();
    info.complete = complete;
    info.stop_reason = reason;
    if let Some(cfg) = info.config.as_object_mut() {
        let threads: usize = runs.iter().map(|r| threads_of(&r.info)).sum();
        cfg.insert("threads".into(), threads.into());
        cfg.insert(
            "segment".into(),
            serde_json::json!({
                "count": count,
                "merged": true,
                "start_at_unix_ms": base.info.config["segment"]["start_at_unix_ms"],
                "hosts": runs.iter().map(|r| r.info.host.hostname.clone()).collect::<Vec<_>>(),
            }),
        );
    }
    let mut events: Vec<crate::store::ControlEvent> = Vec::new();
    for r in runs {
        let mine: Vec<_> = r.events.iter().filter(|e| e.step < n_steps).collect();
        if !mine.is_empty() {
            notes.push(format!(
                "'{}' was steered by live control ({} change(s)): its share of the load was not the plan's",
                name(r),
                mine.len()
            ));
        }
        events.extend(mine.into_iter().cloned());
    }
    events.sort_by(|a, b| a.t.total_cmp(&b.t));
    Ok(Merged {
        info,
        steps: steps.into_iter().zip(seconds).collect(),
        notes,
        events,
    })
}

/// The flags about one generator that a merged step keeps when any part raised them.
fn kept_flags(parts: &[(String, &StepRecord)]) -> Vec<String> {
    ["generator-bound", "interrupted", "not-sustained", "steered"]
        .into_iter()
        .filter(|kept| parts.iter().any(|(_, s)| s.flags.iter().any(|f| f == kept)))
        .map(String::from)
        .collect()
}

/// Step `k` of several generators, added as [`merge`] adds a folder's steps: the live
/// controller's (`scale::controller`) merge of the parts its agents sent back. `parts` are
/// (a name for errors, the part's record, its seconds). The flags that judge a step against
/// the others are left to the caller (the runner's `flag_last`); those about one generator
/// are kept.
pub fn add_step(
    k: usize,
    parts: &[(String, &StepRecord, &[SeriesPoint])],
) -> Result<(StepRecord, Vec<SeriesPoint>), String> {
    let named: Vec<(String, &StepRecord)> = parts.iter().map(|(n, s, _)| (n.clone(), *s)).collect();
    let mut rec = merge_step(k, &named)?;
    rec.flags = kept_flags(&named);
    let per_run = parts
        .iter()
        .map(|(n, _, series)| (n.clone(), series.iter().collect()))
        .collect();
    Ok((rec, merge_series(k, per_run)?))
}

/// (index, count) of a segment's run.json; None for a whole plan or a merged folder.
fn segment_of(info: &RunInfo) -> Option<(u32, u32)> {
    let s = info.config.get("segment")?;
    let index = s.get("index")?.as_u64()?;
    let count = s.get("count")?.as_u64()?;
    (index < count && count <= u64::from(crate::plan::segment::MAX_SEGMENTS))
        .then_some((index as u32, count as u32))
}

fn threads_of(info: &RunInfo) -> usize {
    info.config["threads"].as_u64().unwrap_or(0) as usize
}

/// Why two segments' run.json describe different plans, naming the first field that differs;
/// None when they are the same plan.
fn plan_difference(a: &RunInfo, b: &RunInfo) -> Option<String> {
    let same = |what: &str, x: &dyn std::fmt::Debug, y: &dyn std::fmt::Debug| {
        let (x, y) = (format!("{x:?}"), format!("{y:?}"));
        (x != y).then(|| format!("{what} differs ({x} vs {y})"))
    };
    if let Some(d) = same("kind", &a.kind, &b.kind)
        .or_else(|| same("mode", &a.mode, &b.mode))
        .or_else(|| same("urls", &a.urls, &b.urls))
        .or_else(|| same("slo", &a.slo, &b.slo))
    {
        return Some(d);
    }
    // The config as given, less what is each generator's own: its index and its threads.
    let strip = |c: &serde_json::Value| {
        let mut c = c.clone();
        if let Some(o) = c.as_object_mut() {
            o.remove("threads");
            if let Some(s) = o.get_mut("segment").and_then(|s| s.as_object_mut()) {
                s.remove("index");
            }
        }
        c
    };
    let (ca, cb) = (strip(&a.config), strip(&b.config));
    if ca == cb {
        return None;
    }
    let keys: std::collections::BTreeSet<&String> = ca
        .as_object()
        .into_iter()
        .chain(cb.as_object())
        .flat_map(|o| o.keys())
        .collect();
    let key = keys
        .into_iter()
        .find(|k| ca.get(k.as_str()) != cb.get(k.as_str()))
        .map_or_else(|| "config".to_string(), |k| format!("config '{k}'"));
    Some(format!("{key} differs"))
}

/// The parts of step `k` are the same step: the same load (each its share) started together.
fn check_aligned(k: usize, parts: &[(&RunData, &StepRecord)], mode: &str) -> Result<(), String> {
    let (r0, s0) = parts[0];
    let shown = |r: &RunData| crate::fsutil::shown(&r.dir);
    let skew = max_skew_ms(s0.summary.duration_s);
    for &(r, s) in &parts[1..] {
        // Open loop: every segment offers rate/N. Closed loop: shares differ by one user at most.
        let same_load = if mode == "open" {
            (s.offered - s0.offered).abs() <= 1e-9 * s0.offered.abs().max(1.0)
        } else {
            (s.offered - s0.offered).abs() <= 1.0
        };
        if !same_load {
            return Err(format!(
                "step {}: '{}' offered {} but '{}' {}: the segments did not run the same step",
                k + 1,
                shown(r),
                s.offered,
                shown(r0),
                s0.offered
            ));
        }
        let apart = s.start_unix_ms.abs_diff(s0.start_unix_ms);
        if apart > skew {
            return Err(format!(
                "step {}: '{}' started {apart} ms apart from '{}' (at most {skew} ms): start the segments with the same --start-at",
                k + 1,
                shown(r),
                shown(r0)
            ));
        }
    }
    Ok(())
}

fn decode(text: &str, what: &str, k: usize, name: &str) -> Result<Histogram<u64>, String> {
    histo::try_decode(text).map_err(|why| {
        if text.is_empty() {
            format!(
                "step {} of '{name}': no {what} histogram (written by an older overload?)",
                k + 1
            )
        } else {
            format!(
                "step {} of '{name}': unreadable {what} histogram: {why}",
                k + 1
            )
        }
    })
}

/// Adds `parts`' histograms of one kind.
fn added(
    parts: &[(String, &StepRecord)],
    k: usize,
    what: &str,
    pick: impl Fn(&StepRecord) -> Option<&str>,
) -> Result<Histogram<u64>, String> {
    let mut sum: Option<Histogram<u64>> = None;
    for (name, s) in parts {
        let h = decode(pick(s).unwrap_or(""), what, k, name)?;
        match sum.as_mut() {
            None => sum = Some(h),
            Some(m) => m
                .add(&h)
                .map_err(|e| format!("step {}: cannot add {what} histograms: {e:?}", k + 1))?,
        }
    }
    sum.ok_or_else(|| "no segment".to_string())
}

/// Adds a count of part `part` to a merged count: a sum beyond u64 is no real run's (a
/// corrupt or crafted count) and is refused, naming the step, the part and the count, where
/// plain addition would wrap (u64::MAX + 25 = 24) and report a lie.
fn add_count(sum: u64, n: u64, k: usize, part: &str, what: &str) -> Result<u64, String> {
    sum.checked_add(n).ok_or_else(|| {
        format!(
            "step {} of '{part}': {what} {n} overflows the merged count ({sum} so far): a corrupt count",
            k + 1
        )
    })
}

/// The parts' `what` added with [`add_count`].
fn total(
    k: usize,
    parts: &[(String, &StepRecord)],
    what: &str,
    f: impl Fn(&StepRecord) -> u64,
) -> Result<u64, String> {
    parts
        .iter()
        .try_fold(0, |sum, (r, s)| add_count(sum, f(s), k, r, what))
}

/// The parts' maps of counts (statuses, errors by kind…) added key by key with [`add_count`].
fn sum_maps(
    k: usize,
    parts: &[(String, &StepRecord)],
    what: &str,
    f: impl Fn(&StepRecord) -> BTreeMap<String, u64>,
) -> Result<BTreeMap<String, u64>, String> {
    let mut out = BTreeMap::new();
    for (r, s) in parts {
        for (key, v) in f(s) {
            let sum = out.entry(key).or_insert(0);
            *sum = add_count(*sum, v, k, r, what)?;
        }
    }
    Ok(out)
}

/// The request names of step `k`'s segments, added: counts summed, response-time histograms
/// added (a name a segment did not see counts nothing there), over the merged window.
fn merge_names(
    k: usize,
    parts: &[(String, &StepRecord)],
    duration_s: f64,
) -> Result<(Vec<NameSummary>, BTreeMap<String, String>), String> {
    // Per name: responses, ok, errors by kind, the parts' encoded histograms. They are
    // decoded one name at a time below, so the merge holds two histograms, not one per name
    // (a folder of many names costs its encoded size, not tens of KB per name).
    type Acc<'a> = (u64, u64, BTreeMap<String, u64>, Vec<(&'a str, &'a str)>);
    let mut acc: BTreeMap<&str, Acc> = BTreeMap::new();
    for (r, s) in parts {
        for n in &s.summary.names {
            let e = acc.entry(n.name.as_str()).or_default();
            e.0 = add_count(e.0, n.responses, k, r, "responses")?;
            e.1 = add_count(e.1, n.ok, k, r, "ok")?;
            for (kind, c) in &n.errors {
                let sum = e.2.entry(kind.clone()).or_insert(0);
                *sum = add_count(*sum, *c, k, r, "errors")?;
            }
            if n.response_time_ms.count == 0 {
                continue;
            }
            let text = s.hists.as_ref().and_then(|h| h.names.get(&n.name));
            e.3.push((r.as_str(), text.map_or("", String::as_str)));
        }
    }
    let mut names = Vec::with_capacity(acc.len());
    let mut hists = BTreeMap::new();
    for (name, (responses, ok, errors, texts)) in acc {
        let mut sum: Option<Histogram<u64>> = None;
        for (r, text) in texts {
            let h = decode(text, "per-name", k, r)?;
            match sum.as_mut() {
                None => sum = Some(h),
                Some(m) => m.add(&h).map_err(|e| {
                    format!(
                        "step {} of '{r}': cannot add per-name histograms: {e:?}",
                        k + 1
                    )
                })?,
            }
        }
        let sum = match sum {
            Some(h) => h,
            None => Histogram::<u64>::new(3).map_err(|e| format!("{e:?}"))?,
        };
        names.push(NameSummary::from_parts(
            name, responses, ok, errors, &sum, duration_s,
        ));
        if !sum.is_empty() {
            hists.insert(name.to_string(), histo::encode(&sum));
        }
    }
    sort_names(&mut names);
    Ok((names, hists))
}

/// The parts' connection attempts added up; unknown (None) when a part was written before
/// attempts were counted, rather than a sum that leaves its attempts out.
fn merge_connects(
    k: usize,
    parts: &[(String, &StepRecord)],
) -> Result<Option<crate::metrics::ConnectSummary>, String> {
    if parts.iter().any(|(_, s)| s.summary.connects.is_none()) {
        return Ok(None);
    }
    let c = |s: &StepRecord| s.summary.connects.clone().unwrap_or_default();
    Ok(Some(crate::metrics::ConnectSummary {
        attempts: total(k, parts, "connect attempts", |s| c(s).attempts)?,
        failed: sum_maps(k, parts, "connect failures", |s| c(s).failed)?,
        held_by_backoff: total(k, parts, "connects held by the backoff", |s| {
            c(s).held_by_backoff
        })?,
    }))
}

/// Step `k` of every segment, added into one step (flags and SLO verdict left to the caller).
fn merge_step(k: usize, parts: &[(String, &StepRecord)]) -> Result<StepRecord, String> {
    fn hists(s: &StepRecord) -> Option<&StepHists> {
        s.hists.as_ref()
    }
    let response = added(parts, k, "response-time", |s| {
        Some(s.response_time_hist.as_str())
    })?;
    let service = added(parts, k, "service-time", |s| {
        hists(s).map(|h| h.service_time.as_str())
    })?;
    let send_lag = added(parts, k, "send-lag", |s| {
        hists(s).map(|h| h.send_lag.as_str())
    })?;
    let connect = added(parts, k, "connect-time", |s| {
        hists(s).map(|h| h.connect_time.as_str())
    })?;
    let first_byte = added(parts, k, "first-byte", |s| {
        hists(s).map(|h| h.first_byte.as_str())
    })?;
    // TLS: every part spoke it or none did (the same plan, the same URLs).
    let tls = match parts
        .iter()
        .filter(|(_, s)| s.summary.tls.is_some())
        .count()
    {
        0 => None,
        n if n == parts.len() => {
            let handshake = added(parts, k, "TLS-handshake", |s| {
                hists(s).and_then(|h| h.tls_handshake.as_deref())
            })?;
            let t = |s: &StepRecord| s.summary.tls.clone().unwrap_or_default();
            Some((
                TlsSummary {
                    handshakes_started: total(k, parts, "TLS handshakes started", |s| {
                        t(s).handshakes_started
                    })?,
                    handshakes_full: total(k, parts, "TLS handshakes", |s| t(s).handshakes_full)?,
                    handshakes_resumed: total(k, parts, "TLS resumptions", |s| {
                        t(s).handshakes_resumed
                    })?,
                    handshake_time_ms: LatencyStats::from_hist(&handshake),
                    failures: sum_maps(k, parts, "TLS failures", |s| t(s).failures)?,
                },
                handshake,
            ))
        }
        _ => {
            return Err(format!(
                "step {}: some parts spoke TLS and some did not",
                k + 1
            ))
        }
    };
    let s0 = parts[0].1;
    let sum = |what: &str, f: &dyn Fn(&Summary) -> u64| total(k, parts, what, |s| f(&s.summary));
    // The window: the segments' windows are the same plan; the longest is the honest one
    // (a drain that ran over stretches it, as it would have on one host).
    let duration_s = parts
        .iter()
        .map(|(_, s)| s.summary.duration_s)
        .fold(0.0, f64::max);
    let per_s = |n: u64| {
        if duration_s > 0.0 {
            n as f64 / duration_s
        } else {
            0.0
        }
    };
    let requests = sum("requests", &|s| s.requests)?;
    let responses = sum("responses", &|s| s.responses)?;
    let errors = sum_maps(k, parts, "errors", |s| s.summary.errors.clone())?;
    let error_count = sum("error count", &|s| s.error_count)?;
    let statuses = sum_maps(k, parts, "statuses", |s| s.summary.statuses.clone())?;
    let bytes_in = sum("bytes in", &|s| s.bytes_in)?;
    let offered = round_level(parts.iter().map(|(_, s)| s.offered).sum());
    let open = s0.summary.offered_rate.is_some();
    let mut summary = Summary {
        mode: s0.summary.mode.clone(),
        offered_rate: open.then_some(offered),
        users: if open {
            None
        } else {
            Some(sum("users", &|s| s.users.unwrap_or(0))?)
        },
        throughput: per_s(responses),
        goodput: 0.0,
        requests,
        sent: sum("sent", &|s| s.sent)?,
        responses,
        unsent: sum("unsent", &|s| s.unsent)?,
        retries: sum("retries", &|s| s.retries)?,
        interrupted_requests: sum("interrupted requests", &|s| s.interrupted_requests)?,
        duration_s,
        connections_opened: sum("connections opened", &|s| s.connections_opened)?,
        connects: merge_connects(k, parts)?,
        errors,
        error_count,
        error_ratio: if requests > 0 {
            error_count as f64 / requests as f64
        } else {
            0.0
        },
        statuses,
        // The parts ran one plan: the same statuses count as success in each.
        ok_status: s0.summary.ok_status,
        bytes_in,
        bytes_out: sum("bytes out", &|s| s.bytes_out)?,
        bytes_in_per_s: per_s(bytes_in),
        response_time_ms: LatencyStats::from_hist(&response),
        service_time_ms: LatencyStats::from_hist(&service),
        send_lag_ms: LatencyStats::from_hist(&send_lag),
        connect_time_ms: LatencyStats::from_hist(&connect),
        first_byte_ms: LatencyStats::from_hist(&first_byte),
        protocols: sum_maps(k, parts, "protocols", |s| s.summary.protocols.clone())?,
        // The parts ran one plan, each asking its first server the same question.
        protocol: s0.summary.protocol.clone(),
        tls: tls.as_ref().map(|(t, _)| t.clone()),
        // QUIC's packets add up as the requests do.
        quic: parts
            .iter()
            .filter_map(|(_, s)| s.summary.quic.as_ref())
            .map(crate::metrics::QuicSummary::tally)
            .reduce(|mut a, b| {
                a.add(&b);
                a
            })
            .map(|t| crate::metrics::QuicSummary::of(&t, responses)),
        names: Vec::new(),
        // Generators' sessions add up as their requests do.
        sessions: match &s0.summary.sessions {
            None => None,
            Some(_) => {
                let of = |what: &str, f: &dyn Fn(&crate::metrics::SessionSummary) -> u64| {
                    sum(what, &|s| s.sessions.as_ref().map_or(0, f))
                };
                let completed = of("sessions completed", &|x| x.completed)?;
                Some(crate::metrics::SessionSummary {
                    offered_per_s: offered,
                    started: of("sessions started", &|x| x.started)?,
                    completed,
                    completed_per_s: per_s(completed),
                    failed: of("sessions failed", &|x| x.failed)?,
                    dropped: of("sessions dropped", &|x| x.dropped)?,
                })
            }
        },
    };
    summary.goodput = per_s(summary.ok_count());
    let (names, name_hists) = merge_names(k, parts, duration_s)?;
    summary.names = names;
    let threads = total(k, parts, "threads", |s| s.generator.threads as u64)? as usize;
    let generator = GeneratorStats {
        // Per thread, weighted by threads: the fleet's mean load per worker thread.
        cpu_pct: parts
            .iter()
            .map(|(_, s)| s.generator.cpu_pct * s.generator.threads as f64)
            .sum::<f64>()
            / threads.max(1) as f64,
        cpu_us_per_response: if responses > 0 {
            parts
                .iter()
                .map(|(_, s)| s.generator.cpu_us_per_response * s.summary.responses as f64)
                .sum::<f64>()
                / responses as f64
        } else {
            0.0
        },
        threads,
        pool_waits: total(k, parts, "pool waits", |s| s.generator.pool_waits)?,
        // The parts' backend when they agree; generators on different kernels may differ.
        io: parts
            .first()
            .and_then(|(_, s)| s.generator.io)
            .filter(|b| parts.iter().all(|(_, s)| s.generator.io == Some(*b))),
    };
    let min = |f: &dyn Fn(&StepRecord) -> f64| {
        parts
            .iter()
            .map(|(_, s)| f(s))
            .fold(f64::INFINITY, f64::min)
    };
    let max = |f: &dyn Fn(&StepRecord) -> f64| {
        parts
            .iter()
            .map(|(_, s)| f(s))
            .fold(f64::NEG_INFINITY, f64::max)
    };
    Ok(StepRecord {
        step: k,
        offered,
        start_unix_ms: parts
            .iter()
            .map(|(_, s)| s.start_unix_ms)
            .min()
            .unwrap_or(0),
        end_unix_ms: parts.iter().map(|(_, s)| s.end_unix_ms).max().unwrap_or(0),
        start_s: min(&|s| s.start_s),
        end_s: max(&|s| s.end_s),
        think_ms: s0.think_ms,
        summary,
        generator,
        response_time_hist: histo::encode(&response),
        hists: Some(StepHists {
            service_time: histo::encode(&service),
            send_lag: histo::encode(&send_lag),
            connect_time: histo::encode(&connect),
            first_byte: histo::encode(&first_byte),
            tls_handshake: tls.as_ref().map(|(_, h)| histo::encode(h)),
            names: name_hists,
        }),
        flags: Vec::new(),
        slo_ok: None,
        server: parts.iter().find_map(|(_, s)| s.server.clone()),
    })
}

/// The plan's level from its parts: N shares of rate/N add up to the rate up to rounding,
/// which would show as 999.9999999 req/s; levels are never finer than a millionth.
fn round_level(v: f64) -> f64 {
    (v * 1e6).round() / 1e6
}

/// Second j of step `k` of every segment (`per_run`: each segment's name and its seconds of
/// the step), added; counts beyond u64 are refused as [`add_count`] does.
fn merge_series(
    k: usize,
    per_run: Vec<(String, Vec<&SeriesPoint>)>,
) -> Result<Vec<SeriesPoint>, String> {
    let len = per_run.iter().map(|(_, v)| v.len()).max().unwrap_or(0);
    (0..len)
        .map(|j| {
            let ps: Vec<(&str, &SeriesPoint)> = per_run
                .iter()
                .filter_map(|(r, v)| v.get(j).map(|p| (r.as_str(), *p)))
                .collect();
            let count = |what: &str, f: fn(&SeriesPoint) -> u64| {
                ps.iter().try_fold(0, |sum, (r, p)| {
                    add_count(sum, f(p), k, r, &format!("second {}'s {what}", j + 1))
                })
            };
            let responses = count("responses", |p| p.responses)?;
            // Means of the parts, weighted by the responses each one averaged over.
            let weighted = |f: fn(&SeriesPoint) -> f64| -> f64 {
                if responses == 0 {
                    return 0.0;
                }
                ps.iter()
                    .map(|(_, p)| f(p) * p.responses as f64)
                    .sum::<f64>()
                    / responses as f64
            };
            let answered: Vec<&SeriesPoint> = ps
                .iter()
                .filter(|(_, p)| p.responses > 0)
                .map(|(_, p)| *p)
                .collect();
            let alone = |f: fn(&SeriesPoint) -> Option<f64>| match answered[..] {
                [p] => f(p),
                _ => None,
            };
            Ok(SeriesPoint {
                t: ps.iter().map(|(_, p)| p.t).fold(f64::INFINITY, f64::min),
                step: k,
                offered: round_level(ps.iter().map(|(_, p)| p.offered).sum()),
                warmup: ps.iter().any(|(_, p)| p.warmup),
                responses,
                ok: count("ok", |p| p.ok)?,
                errors: count("errors", |p| p.errors)?,
                bytes_in: count("bytes in", |p| p.bytes_in)?,
                response_time_mean_ms: weighted(|p| p.response_time_mean_ms),
                send_lag_mean_ms: weighted(|p| p.send_lag_mean_ms),
                response_time_max_ms: ps
                    .iter()
                    .map(|(_, p)| p.response_time_max_ms)
                    .fold(0.0, f64::max),
                // Percentiles do not add: kept only when one part answered in that second.
                response_time_p50_ms: alone(|p| p.response_time_p50_ms),
                response_time_p95_ms: alone(|p| p.response_time_p95_ms),
                response_time_p99_ms: alone(|p| p.response_time_p99_ms),
                server: ps.iter().find_map(|(_, p)| p.server),
            })
        })
        .collect()
}

/// Writes `m` as a results folder at `out` through the store's writer (fsutil: never through
/// a planted link, never over a folder that already holds results).
pub fn write(out: &Path, m: &Merged) -> crate::Result<()> {
    let mut w = crate::store::Writer::create(out, m.info.clone())?;
    w.append_events(&m.events)?;
    w.append_steps(m.steps.iter().map(|(rec, series)| (rec, series.as_slice())))?;
    w.finish_at(
        m.info.complete,
        m.info.stop_reason.as_deref().unwrap_or("merged"),
        m.info
            .finished_unix_ms
            .unwrap_or_else(crate::clock::unix_ms),
    )
}

/// A merge, done.
pub struct MergeOutcome {
    pub dir: std::path::PathBuf,
    pub report: std::path::PathBuf,
    pub segments: usize,
    pub steps: usize,
    pub complete: bool,
    pub notes: Vec<String>,
}

impl std::fmt::Display for MergeOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "merged {} segments: {} step(s){}",
            self.segments,
            self.steps,
            if self.complete { "" } else { " (incomplete)" }
        )?;
        for n in &self.notes {
            writeln!(f, "  ! {n}")?;
        }
        writeln!(f, "report:  {}", self.report.display())?;
        writeln!(f, "\nresults: {}", self.dir.display())
    }
}

/// `overload merge DIR… --out DIR`: reads the segments' folders, merges them, writes the
/// merged folder and its HTML report. A refusal is a usage error (exit 2) in one line.
pub fn run(dirs: &[std::path::PathBuf], out: &Path) -> crate::Result<MergeOutcome> {
    let runs = dirs
        .iter()
        .map(|d| crate::store::load_strict(d))
        .collect::<crate::Result<Vec<_>>>()?;
    let mut m = merge(&runs).map_err(|e| crate::Error::usage(format!("merge: {e}")))?;
    for r in &runs {
        m.notes.extend(r.skipped.iter().cloned());
    }
    write(out, &m)?;
    let report = crate::report::RunReport::load(out)?;
    let paths = crate::report::export::write(&report, crate::report::Format::Html, None)?;
    Ok(MergeOutcome {
        dir: out.to_path_buf(),
        report: paths
            .into_iter()
            .next()
            .unwrap_or_else(|| out.join("report.html")),
        segments: runs.len(),
        steps: m.steps.len(),
        complete: m.info.complete,
        notes: m.notes,
    })
}

#[cfg(test)]
mod tests;
