//! The response-time histograms of a results folder, out in the forms users of other tools
//! read: vegeta's `report -type=hist` buckets, the percentile distribution that wrk2's
//! `--latency` and HdrHistogram print, and HdrHistogram's interval log (one interval per step,
//! readable by HdrHistogram's own log processors). Values are recorded in µs.
use super::charts::PALETTE;
use super::model::{Exporter, RunReport};
use super::svg::{Axis, Chart, Marker, Series};
use crate::metrics::histo;
use crate::store::StepRecord;
use crate::units::{fmt_ms, parse_duration};
use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::Histogram;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

/// A step's response-time histogram (µs); None when the step stored none.
pub fn of_step(s: &StepRecord) -> Option<Histogram<u64>> {
    histo::decode(&s.response_time_hist)
}

/// Parses vegeta's bucket list, `[0,1ms,10ms,100ms]` (brackets optional), into µs bounds;
/// they must increase.
pub fn parse_buckets(s: &str) -> Result<Vec<u64>, String> {
    let inner = s.trim().trim_start_matches('[').trim_end_matches(']');
    let mut out: Vec<u64> = Vec::new();
    for part in inner.split(',') {
        let d = parse_duration(part).map_err(|e| format!("--buckets: {e}"))?;
        let us = d.as_micros() as u64;
        if out.last().is_some_and(|&last| us <= last) {
            return Err(format!(
                "--buckets '{s}': bounds must increase ('{}' does not)",
                part.trim()
            ));
        }
        out.push(us);
    }
    Ok(out)
}

/// How many buckets the default histogram spreads over a step's responses.
pub const DEFAULT_BUCKETS: u32 = 30;

/// Buckets for a histogram when none are given, chosen from its data: 0, then
/// [`DEFAULT_BUCKETS`] log-spaced bounds from its p0.1 to its p99.9 (so the fastest and the
/// slowest 0.1% are the first and the open last bucket), each rounded to three significant
/// digits so a reader can name it. Fixed 1-2-5 bounds gave a step whose responses lie within
/// a factor of two of each other two or three buckets, which showed nothing of its shape.
pub fn default_buckets(h: &Histogram<u64>) -> Vec<u64> {
    if h.is_empty() {
        return vec![0];
    }
    let lo = h.lowest_equivalent(h.value_at_quantile(0.001)).max(1) as f64;
    let hi = h.highest_equivalent(h.value_at_quantile(0.999)) as f64;
    // Responses all alike: a span of ±10% around them, not bounds finer than the histogram
    // tells values apart.
    let (lo, hi) = if hi < lo * 1.2 {
        ((lo / 1.1).max(1.0), hi * 1.1)
    } else {
        (lo, hi)
    };
    let ratio = (hi / lo).powf(1.0 / f64::from(DEFAULT_BUCKETS));
    let mut out = vec![0];
    for k in 0..=DEFAULT_BUCKETS {
        let b = three_digits(lo * ratio.powi(k as i32));
        if out.last().is_some_and(|&last| b > last) {
            out.push(b);
        }
    }
    out
}

/// `v` (µs) rounded to three significant digits: 1234 → 1230, 87 → 87.
fn three_digits(v: f64) -> u64 {
    if v < 1000.0 {
        return v.round().max(1.0) as u64;
    }
    let unit = 10f64.powi(v.log10().floor() as i32 - 2);
    ((v / unit).round() * unit) as u64
}

/// Counts per bucket `[bounds[i], bounds[i+1])`, the last one open (`+Inf`).
pub fn bucket_counts(h: &Histogram<u64>, bounds: &[u64]) -> Vec<u64> {
    let mut counts = vec![0u64; bounds.len()];
    for v in h.iter_recorded() {
        // The histogram stores a range of equal values; its lowest value names the bucket.
        let value = h.lowest_equivalent(v.value_iterated_to());
        if let Some(i) = bounds.iter().rposition(|&b| value >= b) {
            counts[i] += v.count_at_value();
        }
    }
    counts
}

fn fmt_us(us: u64) -> String {
    if us == 0 {
        "0s".to_string()
    } else {
        fmt_ms(us as f64 / 1000.0)
    }
}

/// vegeta's histogram table: bucket, count, share and a bar.
pub fn buckets_text(h: &Histogram<u64>, bounds: &[u64]) -> String {
    let counts = bucket_counts(h, bounds);
    let total = h.len().max(1) as f64;
    let labels: Vec<String> = bounds
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            let hi = bounds.get(i + 1).map_or("+Inf".to_string(), |&n| fmt_us(n));
            format!("[{},  {hi}]", fmt_us(b))
        })
        .collect();
    let width = labels.iter().map(|l| l.len()).max().unwrap_or(6).max(6);
    let mut o = format!("{:<width$}  {:>10}  {:>7}  Histogram\n", "Bucket", "#", "%");
    for (label, &n) in labels.iter().zip(&counts) {
        let share = n as f64 / total;
        let bar = "#".repeat((share * 50.0).round() as usize);
        let _ = writeln!(
            o,
            "{label:<width$}  {n:>10}  {:>6.2}%  {bar}",
            share * 100.0
        );
    }
    o
}

/// The percentile distribution as HdrHistogram prints it (wrk2 `--latency`): value (ms),
/// percentile (a fraction: 0.99 is p99), responses up to it, and 1/(1-percentile), five
/// lines per halving of the tail. Units are named in the heading and the summary lines, as
/// HdrHistogram's own output leaves the reader to guess them.
pub fn distribution_text(h: &Histogram<u64>) -> String {
    let mut o = format!(
        "{:>12} {:>14} {:>10} {:>14}\n\n",
        "Value(ms)", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    let mut total = 0u64;
    for v in h.iter_quantiles(5) {
        total += v.count_since_last_iteration();
        let q = v.quantile_iterated_to();
        let value = h.highest_equivalent(v.value_iterated_to()) as f64 / 1000.0;
        if q < 1.0 {
            let _ = writeln!(
                o,
                "{value:>12.3} {q:>14.6} {total:>10} {:>14.2}",
                1.0 / (1.0 - q)
            );
        } else {
            let _ = writeln!(o, "{value:>12.3} {q:>14.6} {total:>10}");
        }
    }
    let _ = writeln!(
        o,
        "#[Mean    = {:>12.3} ms, StdDeviation   = {:>12.3} ms]",
        h.mean() / 1000.0,
        h.stdev() / 1000.0
    );
    let _ = writeln!(
        o,
        "#[Max     = {:>12.3} ms, Total count    = {:>12} responses]",
        h.max() as f64 / 1000.0,
        h.len()
    );
    o
}

/// The steps with a histogram, each with a heading when there are several.
fn per_step(r: &RunReport, body: impl Fn(&Histogram<u64>) -> String) -> String {
    let mut o = String::new();
    let several = r.steps.len() > 1;
    for s in &r.steps {
        let Some(h) = of_step(s).filter(|h| !h.is_empty()) else {
            if several {
                let _ = writeln!(o, "# step {}: no responses\n", s.step + 1);
            }
            continue;
        };
        if several {
            let _ = writeln!(o, "# step {} at {}", s.step + 1, r.load_text(s.offered));
        }
        o.push_str(&body(&h));
        if several {
            o.push('\n');
        }
    }
    if o.is_empty() {
        o.push_str("no responses were recorded\n");
    }
    o
}

/// `overload report --format hist`: the bucket table of every step.
pub fn hist_text(r: &RunReport, bounds: Option<&[u64]>) -> String {
    per_step(r, |h| match bounds {
        Some(b) => buckets_text(h, b),
        None => buckets_text(h, &default_buckets(h)),
    })
}

/// The percentile distribution of every step.
pub fn distributions_text(r: &RunReport) -> String {
    per_step(r, distribution_text)
}

/// HdrHistogram's interval log: one interval per step (start and length in seconds since the
/// run started, values in µs, shown in ms by the log's MaxValueDivisor), tagged `step-N`.
pub fn hdr_log(r: &RunReport) -> crate::Result<Vec<u8>> {
    let start = UNIX_EPOCH + Duration::from_millis(r.data.info.started_unix_ms);
    let mut buf = Vec::new();
    let mut ser = V2DeflateSerializer::new();
    let fail = |e: String| crate::Error::runtime(format!("HdrHistogram log: {e}"));
    {
        let mut w = IntervalLogWriterBuilder::new()
            .add_comment(&format!(
                "overload {}: response times of '{}', one interval per step, in µs",
                env!("CARGO_PKG_VERSION"),
                r.name()
            ))
            .with_start_time(start)
            .with_base_time(start)
            .with_max_value_divisor(1000.0)
            .begin_log_with(&mut buf, &mut ser)
            .map_err(|e| fail(e.to_string()))?;
        for s in &r.steps {
            let Some(h) = of_step(s) else { continue };
            let tag_text = format!("step-{}", s.step + 1);
            let tag = hdrhistogram::serialization::interval_log::Tag::new(&tag_text);
            let (start, length) = interval_of(s).ok_or_else(|| {
                crate::Error::usage(format!(
                    "'{}': step {} starts at {} s and ends at {} s: not an interval of the run",
                    crate::fsutil::shown(&r.data.dir.join("steps.jsonl")),
                    s.step + 1,
                    s.start_s,
                    s.end_s
                ))
            })?;
            w.write_histogram(&h, start, length, tag)
                .map_err(|e| fail(e.to_string()))?;
        }
    }
    Ok(buf)
}

/// A step's start (since the run started) and length as the log writes them; None when the
/// step's seconds are no time a run can take (a crafted folder's ±1e308), which a Duration
/// cannot hold. A start before the run's is read as its start, as an end before the start is
/// read as an empty step.
fn interval_of(s: &StepRecord) -> Option<(Duration, Duration)> {
    let start = Duration::try_from_secs_f64(s.start_s.max(0.0)).ok()?;
    let length = Duration::try_from_secs_f64((s.end_s - s.start_s).max(0.0)).ok()?;
    // The log writes seconds as f64 with millisecond precision beside a base time: beyond
    // years, the figure would be meaningless to any reader of the log.
    const MAX: Duration = Duration::from_secs(100 * 365 * 86_400);
    (start <= MAX && length <= MAX).then_some((start, length))
}

/// The steps' histograms, labelled, for the charts (steps without responses left out).
fn labelled(r: &RunReport) -> Vec<(String, Histogram<u64>)> {
    r.steps
        .iter()
        .filter_map(|s| {
            let h = of_step(s).filter(|h| !h.is_empty())?;
            let name = if r.steps.len() == 1 {
                "response time".to_string()
            } else {
                format!("step {}: {}", s.step + 1, r.load_text(s.offered))
            };
            Some((name, h))
        })
        .collect()
}

/// The report's latency-distribution charts: the share of responses per 1-2-5 bucket, and
/// the percentile distribution (HdrHistogram's plot: response time against 1/(1-percentile)
/// on log axes, so p90, p99 and p99.9 are evenly spaced). One line per step.
pub fn charts(r: &RunReport) -> Vec<Chart> {
    let mut histogram = Chart::new(
        "Response-time histogram",
        Axis::log("response time, bucket upper bound (ms, log scale)"),
        Axis::linear("share of responses (%)"),
    );
    let mut dist = Chart::new(
        "Percentile distribution",
        Axis::log("1/(1−percentile): 10 = p90, 100 = p99, 1000 = p99.9 (log scale)"),
        Axis::log("response time (ms, log scale)"),
    );
    histogram.empty_note = "no response-time histogram stored".to_string();
    dist.empty_note = histogram.empty_note.clone();
    let steps = labelled(r);
    // One set of buckets for every step, so their bars compare.
    let mut all: Option<Histogram<u64>> = None;
    for (_, h) in &steps {
        match &mut all {
            Some(a) => {
                let _ = a.add(h);
            }
            None => all = Some(h.clone()),
        }
    }
    let Some(all) = all else {
        return vec![histogram, dist];
    };
    let bounds = default_buckets(&all);
    for (i, (name, h)) in steps.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let total = h.len().max(1) as f64;
        let counts = bucket_counts(h, &bounds);
        let pts = counts
            .iter()
            .enumerate()
            .map(|(b, &n)| {
                let upper = bounds.get(b + 1).copied().unwrap_or(all.max().max(1));
                (upper as f64 / 1000.0, n as f64 * 100.0 / total)
            })
            .collect();
        histogram.add(Series::new(name.clone(), color, pts));
        let pts = h
            .iter_quantiles(5)
            .filter(|v| v.quantile_iterated_to() < 1.0)
            .map(|v| {
                (
                    1.0 / (1.0 - v.quantile_iterated_to()),
                    h.highest_equivalent(v.value_iterated_to()) as f64 / 1000.0,
                )
            })
            .collect();
        dist.add(Series::new(name.clone(), color, pts).marker(Marker::None));
    }
    vec![histogram, dist]
}

/// `report --format hist`: the bucket table with the default buckets.
pub struct HistExporter;

impl Exporter for HistExporter {
    fn default_name(&self) -> &'static str {
        "latency-hist.txt"
    }

    fn serialize(&self, r: &RunReport, out: &Path) -> crate::Result<Vec<(PathBuf, Vec<u8>)>> {
        Ok(vec![(out.to_path_buf(), hist_text(r, None).into_bytes())])
    }
}

/// `report --format hdr-log` / `--hdr-log FILE`.
pub struct HdrLogExporter;

impl Exporter for HdrLogExporter {
    fn default_name(&self) -> &'static str {
        "latency.hlog"
    }

    fn serialize(&self, r: &RunReport, out: &Path) -> crate::Result<Vec<(PathBuf, Vec<u8>)>> {
        Ok(vec![(out.to_path_buf(), hdr_log(r)?)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(values_us: &[(u64, u64)]) -> Histogram<u64> {
        let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        for &(v, n) in values_us {
            h.record_n(v, n).unwrap();
        }
        h
    }

    #[test]
    fn buckets_parse_like_vegeta() {
        assert_eq!(
            parse_buckets("[0,1ms,10ms,1s]").unwrap(),
            vec![0, 1000, 10_000, 1_000_000]
        );
        assert_eq!(parse_buckets("500us, 2ms").unwrap(), vec![500, 2000]);
        assert!(parse_buckets("[1ms,1ms]").unwrap_err().contains("increase"));
        assert!(parse_buckets("[0,fast]").unwrap_err().contains("--buckets"));
    }

    #[test]
    fn counts_fall_into_their_buckets_and_the_last_is_open() {
        let h = hist(&[(300, 10), (1500, 5), (2_000_000, 1)]);
        assert_eq!(bucket_counts(&h, &[0, 1000, 10_000]), vec![10, 5, 1]);
        // Below the first bound: not in any bucket, as vegeta does.
        assert_eq!(bucket_counts(&h, &[1000, 10_000]), vec![5, 1]);
        let text = buckets_text(&h, &[0, 1000, 10_000]);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("Bucket"), "{text}");
        assert!(
            lines[1].starts_with("[0s,  1.00ms]") && lines[1].contains("62.50%"),
            "{text}"
        );
        assert!(
            lines[3].starts_with("[10.00ms,  +Inf]") && lines[3].contains(" 1 "),
            "{text}"
        );
        assert_eq!(lines[1].matches('#').count(), 31, "{text}");
    }

    /// The bucket counts of `h` under `b`, with the share of the fullest bucket.
    fn spread(h: &Histogram<u64>, b: &[u64]) -> (Vec<u64>, f64) {
        let counts = bucket_counts(h, b);
        let top = counts.iter().copied().max().unwrap_or(0) as f64 / h.len() as f64;
        (counts, top)
    }

    #[test]
    fn default_buckets_spread_a_steps_distribution() {
        // One step's responses between 4 and 9 ms: 1-2-5 buckets put them all into [5, 10) ms
        // and [2, 5) ms, which shows nothing of the shape.
        let values: Vec<(u64, u64)> = (0..500).map(|i| (4000 + i * 10, 2)).collect();
        let h = hist(&values);
        let b = default_buckets(&h);
        assert_eq!(b[0], 0, "{b:?}");
        assert!(b.windows(2).all(|w| w[0] < w[1]), "{b:?}");
        let (counts, top) = spread(&h, &b);
        assert_eq!(
            counts.iter().sum::<u64>(),
            h.len(),
            "every response in a bucket"
        );
        let used = counts.iter().filter(|&&n| n > 0).count();
        assert!(
            (20..=42).contains(&used),
            "{used} buckets hold responses: {b:?}"
        );
        assert!(
            top <= 0.10,
            "the fullest bucket holds {top}: {b:?} {counts:?}"
        );
        // Log-spaced: each bound about the same ratio above the one before.
        let ratios: Vec<f64> = b[2..b.len() - 1]
            .windows(2)
            .map(|w| w[1] as f64 / w[0] as f64)
            .collect();
        let (lo, hi) = ratios
            .iter()
            .fold((f64::MAX, 0.0f64), |(l, h), &r| (l.min(r), h.max(r)));
        assert!(hi / lo < 1.2, "{ratios:?}");
    }

    #[test]
    fn default_buckets_cover_a_long_tail_and_identical_values() {
        let mut values: Vec<(u64, u64)> = (0..1000).map(|i| (100 + i, 10)).collect();
        values.push((42_000, 1));
        let h = hist(&values);
        let b = default_buckets(&h);
        let (counts, _) = spread(&h, &b);
        assert_eq!(counts.iter().sum::<u64>(), h.len());
        assert!(b.len() <= 42, "{b:?}");
        assert_eq!(
            *counts.last().unwrap(),
            1,
            "the slowest 0.1% in the open bucket: {b:?}"
        );
        // Every response alike: still increasing bounds, every response counted.
        let h = hist(&[(1000, 500)]);
        let b = default_buckets(&h);
        assert!(b.windows(2).all(|w| w[0] < w[1]), "{b:?}");
        assert_eq!(spread(&h, &b).0.iter().sum::<u64>(), 500);
    }

    #[test]
    fn distribution_ends_at_the_maximum_with_every_count() {
        let h = hist(&[(1000, 90), (5000, 9), (20_000, 1)]);
        let text = distribution_text(&h);
        assert!(
            text.starts_with("   Value(ms)     Percentile TotalCount 1/(1-Percentile)"),
            "{text}"
        );
        // Every figure with its unit: values in ms, counts in responses.
        assert!(text.contains("#[Mean    =        1.550 ms"), "{text}");
        assert!(text.contains("#[Max     =       20.015 ms"), "{text}");
        let last = text
            .lines()
            .rfind(|l| !l.starts_with('#') && !l.is_empty())
            .unwrap();
        let cols: Vec<&str> = last.split_whitespace().collect();
        assert_eq!(cols[1], "1.000000", "{last}");
        assert_eq!(cols[2], "100", "{last}");
        assert!(
            (cols[0].parse::<f64>().unwrap() - 20.0).abs() < 0.05,
            "{last}"
        );
        // The p90 line and its 1/(1-p) column.
        assert!(
            text.lines()
                .any(|l| l.contains(" 0.900000 ") && l.ends_with("10.00")),
            "{text}"
        );
        assert!(
            text.contains("Total count    =          100 responses]"),
            "{text}"
        );
    }
}
