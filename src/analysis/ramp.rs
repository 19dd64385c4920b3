//! The knee on a ramp (`--stages`): from the per-second series, where throughput left the
//! offered line (open loop), or the line of users × what each user got done (closed loop),
//! for [`WINDOW`] seconds in a row, and where response time rose. A ramp finds in one run
//! what a sweep finds in many, less precisely: the level moved by the ramp's slope during
//! each of the seconds it takes to notice, so the knee is given ± slope × [`WINDOW`].
//!
//! The bottleneck verdict is the sweep's (`bottleneck::diagnose_ramp`), read on windows of
//! the ramp's seconds with the server's samples of each window.
use crate::analysis::bottleneck::{self, Bottleneck};
use crate::analysis::THROUGHPUT_SHARE;
use crate::metrics::Summary;
use crate::observe::StepObservation;
use crate::store::{SeriesPoint, StepRecord};
use crate::units::fmt_num;
use serde::{Deserialize, Serialize};

/// The results folder's file holding a ramp's analysis (written by `run`; the report shows
/// it): its knee and verdict need the server's raw samples, which the folder does not keep.
pub const RAMP_FILE: &str = "ramp.json";

/// Seconds in a row below the line before it counts (one slow second is noise); kept beside
/// the verdict that names it, so the verdict needs nothing from this file.
pub use super::bottleneck::RAMP_WINDOW as WINDOW;
/// Seconds per window the bottleneck verdict reads (its "steps").
pub const VERDICT_WINDOW: usize = 2;
/// Answers a second may miss without counting as below the line: those of its last
/// milliseconds, counted in the next second.
const SLACK: f64 = 2.0;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RampKnee {
    /// The level at the knee: where the first second below the line began.
    pub level: f64,
    /// ± this: the ramp's slope × [`WINDOW`] seconds to notice.
    pub uncertainty: f64,
    /// The ramp's slope there, level per second.
    pub slope: f64,
    /// Seconds since the run started, of the first second below the line.
    pub at_s: f64,
    /// Index of that second in the series.
    pub second: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RampAnalysis {
    /// `open` (the level is a rate) or `closed` (users).
    pub mode: String,
    pub peak_offered: f64,
    /// The most responses of one second.
    pub peak_throughput: f64,
    /// None: throughput kept to the line the whole ramp.
    pub knee: Option<RampKnee>,
    /// The first second whose median response time doubled over the best before it (and
    /// rose 1 ms at least): (seconds since the start, level then).
    pub latency_rise: Option<(f64, f64)>,
    /// The sweep's verdict on the windows around the knee, when there is a knee.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bottleneck: Option<Bottleneck>,
}

fn unit(mode: &str) -> &'static str {
    if mode == "closed" {
        "users"
    } else {
        "req/s"
    }
}

impl RampAnalysis {
    /// The one line the terminal and the report show.
    pub fn describe(&self) -> String {
        let u = unit(&self.mode);
        let rise = self.latency_rise.map_or(String::new(), |(t, l)| {
            format!(
                "; response time rose from {} s ({} {u})",
                fmt_num(t),
                fmt_num(l)
            )
        });
        match (&self.knee, &self.bottleneck) {
            (None, _) => format!(
                "ramp: no knee: throughput kept to the {} up to {} {u} (at most {} responses/s){rise}",
                if self.mode == "closed" {
                    "users' line"
                } else {
                    "offered line"
                },
                fmt_num(self.peak_offered),
                fmt_num(self.peak_throughput)
            ),
            (Some(_), Some(b)) => format!("ramp: {}{rise}", b.verdict),
            (Some(k), None) => format!(
                "ramp: knee at {} ± {} {u} ({} s into the run; {} s below the line at a slope \
                 of {} {u}/s; a sweep's knee is as precise as its steps){rise}",
                fmt_num(k.level),
                fmt_num(k.uncertainty),
                fmt_num(k.at_s),
                WINDOW,
                fmt_num(k.slope)
            ),
        }
    }
}

/// The seconds the analysis reads: measured ones (no warm-up) while the plan offered load.
fn measured(series: &[SeriesPoint]) -> Vec<usize> {
    (0..series.len())
        .filter(|&i| !series[i].warmup && series[i].offered > 0.0)
        .collect()
}

/// The knee and latency rise of a ramp's per-second series (`mode`: `open` or `closed`).
pub fn analyze(mode: &str, series: &[SeriesPoint]) -> RampAnalysis {
    let idx = measured(series);
    let pts: Vec<&SeriesPoint> = idx.iter().map(|&i| &series[i]).collect();
    let x = |p: &SeriesPoint| p.responses as f64;
    // The line throughput should follow: the offered rate, or users × the median of what one
    // user got done per second in the seconds before (closed loop).
    let line = |k: usize| -> f64 {
        if mode != "closed" {
            return pts[k].offered;
        }
        let mut per_user: Vec<f64> = pts[..k]
            .iter()
            .filter(|p| p.responses > 0)
            .map(|p| x(p) / p.offered)
            .collect();
        if per_user.is_empty() {
            return 0.0;
        }
        per_user.sort_by(f64::total_cmp);
        pts[k].offered * per_user[per_user.len() / 2]
    };
    let below: Vec<bool> = (0..pts.len())
        .map(|k| {
            let l = line(k);
            l > 0.0 && x(pts[k]) + SLACK < THROUGHPUT_SHARE * l
        })
        .collect();
    let first = (0..pts.len().saturating_sub(WINDOW - 1))
        .find(|&k| (k > 0 || mode != "closed") && below[k..k + WINDOW].iter().all(|b| *b));
    let knee = first.map(|k| {
        // The knee lies in second k, at or after its start (halfway between its level and
        // the level of the second before). Open loop: where throughput and the offered line
        // part is the height throughput then holds (the median of the window's seconds), so
        // the 95% threshold does not push the knee up by 5%.
        let mut level = match k.checked_sub(1) {
            Some(j) => (pts[j].offered + pts[k].offered) / 2.0,
            None => pts[k].offered,
        };
        if mode != "closed" {
            let mut held: Vec<f64> = pts[k..k + WINDOW].iter().map(|p| x(p)).collect();
            held.sort_by(f64::total_cmp);
            level = level.min(held[WINDOW / 2]);
        }
        let lo = k.saturating_sub(1);
        let hi = (k + WINDOW - 1).min(pts.len() - 1);
        let slope = if hi > lo {
            (lo..hi)
                .map(|j| (pts[j + 1].offered - pts[j].offered).abs())
                .sum::<f64>()
                / (hi - lo) as f64
        } else {
            0.0
        };
        RampKnee {
            level,
            uncertainty: slope * WINDOW as f64,
            slope,
            at_s: pts[k].t,
            second: idx[k],
        }
    });
    let mut best = f64::INFINITY;
    let mut latency_rise = None;
    for p in &pts {
        let Some(p50) = p.response_time_p50_ms else {
            continue;
        };
        if best.is_finite() && p50 >= 2.0 * best && p50 >= best + 1.0 {
            latency_rise = Some((p.t, p.offered));
            break;
        }
        best = best.min(p50);
    }
    RampAnalysis {
        mode: mode.to_string(),
        peak_offered: pts.iter().map(|p| p.offered).fold(0.0, f64::max),
        peak_throughput: pts.iter().map(|p| x(p)).fold(0.0, f64::max),
        knee,
        latency_rise,
        bottleneck: None,
    }
}

/// The ramp's measured seconds cut into windows of [`VERDICT_WINDOW`] seconds, as step
/// records the bottleneck verdict reads: each window's mean level, throughput and the worst
/// per-second p95 (as the windows' p90), `base`'s other figures (the run's), and the
/// server's samples of the window from `observe(first second's t, end t)`.
pub fn windows(
    series: &[SeriesPoint],
    base: &StepRecord,
    mut observe: impl FnMut(f64, f64) -> Option<StepObservation>,
) -> Vec<StepRecord> {
    let idx = measured(series);
    idx.chunks(VERDICT_WINDOW)
        .map(|c| {
            let pts: Vec<&SeriesPoint> = c.iter().map(|&i| &series[i]).collect();
            let n = pts.len() as f64;
            let offered = pts.iter().map(|p| p.offered).sum::<f64>() / n;
            let throughput = pts.iter().map(|p| p.responses as f64).sum::<f64>() / n;
            let p95 = pts
                .iter()
                .filter_map(|p| p.response_time_p95_ms)
                .fold(0.0, f64::max);
            let mut summary: Summary = base.summary.clone();
            summary.throughput = throughput;
            summary.goodput = pts.iter().map(|p| p.ok as f64).sum::<f64>() / n;
            if summary.offered_rate.is_some() {
                summary.offered_rate = Some(offered);
            }
            summary.response_time_ms.p90 = p95;
            summary.response_time_ms.p95 = p95;
            let (t0, t1) = (pts[0].t, pts[pts.len() - 1].t + 1.0);
            StepRecord {
                // The second the window starts at, as the verdict names it.
                step: c[0],
                offered,
                start_s: t0,
                end_s: t1,
                summary,
                flags: Vec::new(),
                server: observe(t0, t1),
                ..base.clone()
            }
        })
        .collect()
}

/// [`analyze`], with the sweep's bottleneck verdict on `windows` when a knee was found.
pub fn analyze_with_verdict(
    mode: &str,
    series: &[SeriesPoint],
    windows: &[StepRecord],
    cx: bottleneck::Context,
) -> RampAnalysis {
    let mut a = analyze(mode, series);
    if let Some(k) = &a.knee {
        // The window holding the knee's second.
        let w = windows
            .iter()
            .rposition(|s| s.step <= k.second)
            .unwrap_or(0);
        if !windows.is_empty() {
            a.bottleneck = Some(bottleneck::diagnose_ramp(
                mode,
                windows,
                w,
                cx,
                (k.level, k.uncertainty, k.at_s),
            ));
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ramp from 50 to 600 req/s over 12 s against a server that answers at most `cap`:
    /// throughput follows the offered rate up to `cap`, then stays there (with noise), and
    /// the median response time climbs once the queue builds.
    fn ramp(cap: f64) -> Vec<SeriesPoint> {
        (0..12)
            .map(|i| {
                let offered = 50.0 + (550.0 / 12.0) * (i as f64 + 0.5);
                let noise = if i % 2 == 0 { 3.0 } else { -4.0 };
                let thr = offered.min(cap + noise);
                let over = (offered - cap).max(0.0);
                SeriesPoint {
                    t: i as f64,
                    step: 0,
                    offered,
                    warmup: false,
                    responses: thr as u64,
                    ok: thr as u64,
                    errors: 0,
                    bytes_in: 0,
                    response_time_mean_ms: 10.0 + over,
                    response_time_max_ms: 20.0 + over,
                    send_lag_mean_ms: 0.0,
                    response_time_p50_ms: Some(10.0 + over),
                    response_time_p95_ms: Some(12.0 + over),
                    response_time_p99_ms: Some(15.0 + over),
                    server: None,
                }
            })
            .collect()
    }

    #[test]
    fn finds_a_knee_at_400_within_ten_percent() {
        let a = analyze("open", &ramp(400.0));
        let k = a.knee.clone().expect("a knee");
        assert!((k.level - 400.0).abs() <= 40.0, "{k:?}");
        // The height throughput held, not where it fell 5% short (417 req/s here).
        assert!(k.level < 410.0, "{k:?}");
        // 550 req/s over 12 s: ~46 req/s each second, 3 s to notice.
        assert!((k.slope - 45.8).abs() < 1.0, "{k:?}");
        assert!((k.uncertainty - 137.5).abs() < 3.0, "{k:?}");
        let (t, level) = a.latency_rise.expect("a rise");
        assert!(
            t >= k.at_s - 1.0 && (level - 400.0).abs() < 60.0,
            "{t} {level}"
        );
        assert!(a.describe().contains("knee at"), "{}", a.describe());
    }

    #[test]
    fn no_knee_when_the_server_kept_up() {
        let a = analyze("open", &ramp(10_000.0));
        assert!(a.knee.is_none());
        assert!(a.latency_rise.is_none());
        assert!(
            a.describe().starts_with("ramp: no knee"),
            "{}",
            a.describe()
        );
    }

    /// One slow second (a hiccup) or two are not a knee; warm-up seconds are not read.
    #[test]
    fn a_short_dip_is_not_a_knee() {
        let mut s = ramp(10_000.0);
        s[4].responses /= 2;
        s[5].responses /= 2;
        s[0].warmup = true;
        s[0].responses = 0;
        assert!(analyze("open", &s).knee.is_none());
        s[6].responses /= 2;
        assert_eq!(analyze("open", &s).knee.map(|k| k.second), Some(4));
    }

    /// Closed loop: users ramp 1 → 40 against a server answering at most 400/s, 10 ms
    /// each: throughput is users × 100/s until 4 users, then flat.
    #[test]
    fn closed_loop_knee_where_throughput_stops_following_users() {
        let s: Vec<SeriesPoint> = ramp(400.0)
            .into_iter()
            .enumerate()
            .map(|(i, mut p)| {
                p.offered = 1.0 + i as f64;
                p.responses = (p.offered * 100.0).min(400.0) as u64;
                p
            })
            .collect();
        let k = analyze("closed", &s).knee.expect("a knee");
        assert!((k.level - 4.5).abs() <= 0.5, "{k:?}");
    }

    #[test]
    fn windows_carry_each_second_range_and_the_verdict_names_the_knee() {
        let s = ramp(400.0);
        let base = crate::analysis::tests::step(
            0,
            325.0,
            crate::analysis::tests::summary(325.0, 300.0, 10.0, 0),
        );
        let w = windows(&s, &base, |_, _| None);
        assert_eq!(w.len(), 6);
        assert_eq!((w[1].step, w[1].start_s, w[1].end_s), (2, 2.0, 4.0));
        assert!((w[1].offered - (s[2].offered + s[3].offered) / 2.0).abs() < 1e-9);
        let a = analyze_with_verdict("open", &s, &w, Default::default());
        let b = a.bottleneck.expect("a verdict");
        assert!(b.verdict.starts_with("knee at "), "{}", b.verdict);
        assert!(b.verdict.contains(" s into the run"), "{}", b.verdict);
    }
}
