//! Whether a capacity probe's server kept up over the whole step: a short step can meet a
//! latency objective while the queue grows, because it ends before the queue is long enough
//! to show in the percentiles. Pure functions of the step and its per-second series.
use super::THROUGHPUT_SHARE;
use crate::store::{SeriesPoint, StepRecord};

/// Response time (or send lag) may rise over the step by this share of its early level before the trend
/// counts as a growing queue…
pub const RT_RISE_SHARE: f64 = 0.5;
/// …and by at least this many milliseconds (jitter around a few ms is no queue).
pub const RT_RISE_MIN_MS: f64 = 10.0;

/// Why the server did not keep up during this open-loop step, or None when it did: throughput
/// below 95% of the offered rate, or response time (each second's median; its mean in series
/// written without one) or send lag trending up over the step's seconds.
pub fn not_sustained(rec: &StepRecord, series: &[SeriesPoint]) -> Option<String> {
    let x = rec.summary.throughput;
    if x < THROUGHPUT_SHARE * rec.offered {
        return Some(format!(
            "not sustained: throughput {x:.1}/s is below {:.0}% of the offered {:.1}/s",
            THROUGHPUT_SHARE * 100.0,
            rec.offered
        ));
    }
    let seconds: Vec<&SeriesPoint> = series
        .iter()
        .filter(|p| p.step == rec.step && !p.warmup && p.responses > 0)
        .collect();
    // Each second's median where the series has it: a growing queue lifts the median, while
    // a few requests that waited a retransmission timeout (a lossy path) lift only the mean.
    let typical = |p: &SeriesPoint| p.response_time_p50_ms.unwrap_or(p.response_time_mean_ms);
    if let Some((rise, early)) = growing(&seconds, typical) {
        return Some(format!(
            "not sustained: response time rose by {rise:.1} ms over the step (from about {early:.1} ms): the queue was growing"
        ));
    }
    // Send lag rises when arrivals wait: for a connection (the queue moved into the
    // generator's pool) or for a generator that fell behind its schedule. Either way the
    // offered rate was not being served as offered.
    let (rise, early) = growing(&seconds, |p| p.send_lag_mean_ms)?;
    let waiting = if rec.generator.pool_waits > 0 {
        "arrivals waited for a busy connection"
    } else {
        "the generator fell behind its schedule"
    };
    Some(format!(
        "not sustained: send lag rose by {rise:.1} ms over the step (from about {early:.1} ms): {waiting}"
    ))
}

/// The rise of `y` over the seconds and its early level, when it trends up by more than
/// [`RT_RISE_SHARE`] of that level and at least [`RT_RISE_MIN_MS`].
fn growing(seconds: &[&SeriesPoint], y: impl Fn(&SeriesPoint) -> f64) -> Option<(f64, f64)> {
    // Each second weighs by its answers: the step's partial last second (a handful of
    // answers) must not make a trend of its own.
    let pts: Vec<(f64, f64, f64)> = seconds
        .iter()
        .map(|p| (p.t, y(p), p.responses as f64))
        .collect();
    let (rise, early) = rise_over(&pts)?;
    (rise > (RT_RISE_SHARE * early.max(0.0)).max(RT_RISE_MIN_MS)).then_some((rise, early))
}

/// The weighted least-squares rise of `(t, y, weight)` over its span, and the fitted value at
/// its start; None under 3 points (no trend can be told from noise).
fn rise_over(pts: &[(f64, f64, f64)]) -> Option<(f64, f64)> {
    if pts.len() < 3 {
        return None;
    }
    let n: f64 = pts.iter().map(|p| p.2).sum();
    if n <= 0.0 {
        return None;
    }
    let mt = pts.iter().map(|p| p.2 * p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.2 * p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| p.2 * (p.0 - mt).powi(2)).sum();
    if sxx == 0.0 {
        return None;
    }
    let slope = pts
        .iter()
        .map(|p| p.2 * (p.0 - mt) * (p.1 - my))
        .sum::<f64>()
        / sxx;
    let (t0, t1) = (pts[0].0, pts[pts.len() - 1].0);
    Some((slope * (t1 - t0), my + slope * (t0 - mt)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::tests::{step, summary};

    fn series(step: usize, rt: &[f64]) -> Vec<SeriesPoint> {
        rt.iter()
            .enumerate()
            .map(|(i, &ms)| SeriesPoint {
                send_lag_mean_ms: 0.5,
                response_time_p50_ms: None,
                response_time_p95_ms: None,
                response_time_p99_ms: None,
                t: i as f64,
                step,
                offered: 200.0,
                warmup: false,
                responses: 200,
                ok: 200,
                errors: 0,
                bytes_in: 0,
                response_time_mean_ms: ms,
                response_time_max_ms: ms,
                server: None,
            })
            .collect()
    }

    /// 185/s answered of 200/s offered, p99 well under any SLO: the server fell behind.
    #[test]
    fn throughput_below_offered_is_not_sustained() {
        let rec = step(0, 200.0, summary(200.0, 185.0, 50.0, 0));
        let flat = series(0, &[50.0, 50.0, 51.0]);
        let why = not_sustained(&rec, &flat).expect("185 of 200/s");
        assert!(why.contains("below 95%"), "{why}");
        let rec = step(0, 200.0, summary(200.0, 196.0, 50.0, 0));
        assert_eq!(not_sustained(&rec, &flat), None);
    }

    #[test]
    fn response_time_trending_up_is_a_growing_queue() {
        let rec = step(0, 200.0, summary(200.0, 200.0, 60.0, 0));
        let rising = series(0, &[20.0, 40.0, 60.0, 80.0, 100.0]);
        let why = not_sustained(&rec, &rising).expect("rising");
        assert!(why.contains("queue was growing"), "{why}");
        // Noise around a level, a small drift, or too few seconds: no trend.
        assert_eq!(
            not_sustained(&rec, &series(0, &[20.0, 26.0, 19.0, 25.0, 21.0])),
            None
        );
        assert_eq!(
            not_sustained(&rec, &series(0, &[20.0, 22.0, 24.0, 26.0])),
            None
        );
        assert_eq!(not_sustained(&rec, &series(0, &[20.0, 100.0])), None);
        // Seconds of another step, or of the warm-up, do not count.
        assert_eq!(
            not_sustained(&rec, &series(1, &[20.0, 40.0, 60.0, 80.0])),
            None
        );
        let mut warm = series(0, &[20.0, 40.0, 60.0, 80.0]);
        warm.iter_mut().for_each(|p| p.warmup = true);
        assert_eq!(not_sustained(&rec, &warm), None);
    }

    /// A lossy path (1% per packet): the median stays at the server's 5 ms, but a few requests
    /// of the last second waited a retransmission timeout (200 ms and more), which lifts that
    /// second's mean by 11 ms. No queue grew: the step is sustained. A median that rises is
    /// a queue, as before.
    #[test]
    fn outliers_of_a_lossy_path_are_no_growing_queue() {
        let rec = step(0, 100.0, summary(100.0, 100.0, 5.0, 0));
        let mut lossy = series(0, &[5.59, 5.56, 16.67]);
        for (p, p50) in lossy.iter_mut().zip([5.33, 5.29, 5.24]) {
            p.response_time_p50_ms = Some(p50);
        }
        assert_eq!(not_sustained(&rec, &lossy), None);
        let mut queue = series(0, &[5.6, 30.0, 60.0]);
        for (p, p50) in queue.iter_mut().zip([5.3, 28.0, 58.0]) {
            p.response_time_p50_ms = Some(p50);
        }
        let why = not_sustained(&rec, &queue).expect("the median rose");
        assert!(why.contains("queue was growing"), "{why}");
    }

    /// The step's last, partial second holds a handful of answers (those that finished after
    /// its last full second, a round trip later across a 50 ms path): it weighs by its
    /// answers, not as much as a full second, so its higher median is no trend.
    #[test]
    fn a_partial_last_second_weighs_by_its_answers() {
        let rec = step(0, 100.0, summary(100.0, 100.0, 55.0, 0));
        let mut tail = series(0, &[63.6, 64.3, 64.2, 88.4]);
        for ((p, p50), n) in tail
            .iter_mut()
            .zip([55.55, 55.49, 55.52, 86.91])
            .zip([95, 100, 100, 5])
        {
            p.response_time_p50_ms = Some(p50);
            p.responses = n;
        }
        assert_eq!(not_sustained(&rec, &tail), None);
    }

    /// Response time flat (the server answers each request as fast as ever) while arrivals wait
    /// longer and longer to be sent: the offered rate was not served as offered.
    #[test]
    fn send_lag_trending_up_is_not_sustained() {
        let mut rec = step(0, 200.0, summary(200.0, 198.0, 20.0, 0));
        let mut lagging = series(0, &[20.0, 21.0, 20.0, 19.0, 20.0]);
        for (p, lag) in lagging.iter_mut().zip([1.0, 30.0, 60.0, 90.0, 120.0]) {
            p.send_lag_mean_ms = lag;
        }
        let why = not_sustained(&rec, &lagging).expect("send lag rising");
        assert!(why.contains("send lag rose by 1"), "{why}");
        assert!(why.contains("generator fell behind"), "{why}");
        rec.generator.pool_waits = 40;
        let why = not_sustained(&rec, &lagging).expect("send lag rising");
        assert!(why.contains("busy connection"), "{why}");
        // A few ms of jitter in the lag, or a steady high lag, is no trend.
        for (p, lag) in lagging.iter_mut().zip([1.0, 4.0, 0.5, 6.0, 2.0]) {
            p.send_lag_mean_ms = lag;
        }
        assert_eq!(not_sustained(&rec, &lagging), None);
        lagging.iter_mut().for_each(|p| p.send_lag_mean_ms = 80.0);
        assert_eq!(not_sustained(&rec, &lagging), None);
    }
}
