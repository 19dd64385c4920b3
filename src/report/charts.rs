//! The charts of a sweep report, built from a [`RunReport`]. Each chart is one function, so
//! a new chart (server CPU vs load, processes over time…) is one more function added to
//! [`sweep_charts`]; [`load_axis`], [`mark_load`] and [`step_bands`] are there to reuse.
use super::model::RunReport;
use super::svg::{esc, Axis, Band, Chart, Line, Marker, Series};
use crate::analysis::usl;
use crate::metrics::ErrorKind;
use crate::store::{SeriesPoint, StepRecord};
use crate::units::fmt_num;
use std::fmt::Write;

/// Distinct series colours (colour-blind friendly where it matters: blue/orange first).
pub const PALETTE: [&str; 10] = [
    "#2563eb", "#ea580c", "#16a34a", "#9333ea", "#0891b2", "#db2777", "#ca8a04", "#4b5563",
    "#65a30d", "#7c2d12",
];
pub const SATURATION_COLOR: &str = "#dc2626";
pub const CAPACITY_COLOR: &str = "#16a34a";
pub const IDEAL_COLOR: &str = "#9ca3af";
pub const WARN_COLOR: &str = "#f59e0b";
/// Live control's changes of load, marked on the timelines.
pub const CONTROL_COLOR: &str = "#7c3aed";
/// The shade of a step's warm-up seconds on the timelines.
pub const WARMUP_FILL: &str = "#fdf3d3";

/// The legend key of the warm-up shading, when any second of `r` is a warm-up one: what it
/// shows was sent and answered, and is not in the step's figures.
pub fn warmup_key(r: &RunReport) -> Option<Series> {
    r.data.series.iter().any(|p| p.warmup).then(|| {
        Series::new(
            "warm-up (not in the step's figures)",
            WARMUP_FILL,
            Vec::new(),
        )
        .line(Line::None)
        .marker(Marker::Swatch)
    })
}

/// All charts of a sweep, in reading order.
pub fn sweep_charts(r: &RunReport) -> Vec<Chart> {
    let mut c = vec![
        throughput_chart(r),
        latency_chart(r),
        errors_chart(r),
        time_split_chart(r),
    ];
    c.extend(timeline_charts(r));
    c
}

/// The x axis for load levels: log when the steps grow geometrically (1, 2, 4… users),
/// where a linear axis would crowd the light steps into a corner.
pub fn load_axis(open: bool, offered: &[f64]) -> Axis {
    let label = if open {
        "offered load (requests/s)"
    } else {
        "users (concurrency)"
    };
    let mut v: Vec<f64> = offered.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v.dedup();
    let geometric = v.len() >= 4
        && v[0] > 0.0
        && v.windows(2).all(|w| w[1] / w[0] >= 1.5)
        && v[v.len() - 1] / v[0] >= 16.0;
    if geometric {
        Axis::log(label)
    } else {
        Axis::linear(label)
    }
}

/// Vertical lines at the saturation point and the capacity.
pub fn mark_load(c: &mut Chart, r: &RunReport) {
    if let Some(s) = &r.analysis.saturation {
        c.vline(
            s.offered,
            format!("saturation {}", r.load_text(s.offered)),
            SATURATION_COLOR,
        );
    }
    if let Some(cap) = r.analysis.capacity {
        c.vline(
            cap,
            format!("capacity {}", r.capacity_text()),
            CAPACITY_COLOR,
        );
    }
}

fn points(steps: &[StepRecord], f: impl Fn(&StepRecord) -> f64) -> Vec<(f64, f64)> {
    steps.iter().map(|s| (s.offered, f(s))).collect()
}

/// A y = x line over the load range, sampled so it stays straight on a log x axis.
pub fn ideal_line(offered: &[f64]) -> Series {
    let lo = offered
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold(f64::INFINITY, f64::min);
    let hi = offered
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let pts = if lo.is_finite() && hi > 0.0 {
        let lo = lo.max(hi / 1e6).max(f64::MIN_POSITIVE);
        (0..=40)
            .map(|k| {
                let v = lo * (hi / lo).powf(k as f64 / 40.0);
                (v, v)
            })
            .collect()
    } else {
        Vec::new()
    };
    Series::new("ideal: throughput = offered", IDEAL_COLOR, pts)
        .line(Line::Dashed)
        .marker(Marker::None)
        .width(1.5)
}

/// S1's chart: reply rate against demanded rate, y = x when the server keeps up. In closed
/// loop: throughput against users, with the USL curve when it was fitted.
pub fn throughput_chart(r: &RunReport) -> Chart {
    let steps = &r.steps;
    let offered: Vec<f64> = steps.iter().map(|s| s.offered).collect();
    let title = if r.is_open() {
        "Throughput vs offered load"
    } else {
        "Throughput vs users"
    };
    let mut c = Chart::new(
        title,
        load_axis(r.is_open(), &offered),
        Axis::linear("responses/s"),
    );
    if steps.is_empty() {
        return c;
    }
    if r.is_open() {
        c.add(ideal_line(&offered));
    } else if let Some(u) = &r.analysis.usl {
        let hi = offered.iter().copied().fold(0.0, f64::max);
        let lo = offered
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min)
            .max(1.0);
        let pts = (0..=60)
            .map(|k| {
                let n = lo + (hi - lo) * k as f64 / 60.0;
                (n, usl::predict(u.lambda, u.sigma, u.kappa, n))
            })
            .collect();
        c.add(
            Series::new(
                format!(
                    "USL fit (σ={:.3}, κ={:.4}, R²={:.2})",
                    u.sigma, u.kappa, u.r2
                ),
                PALETTE[3],
                pts,
            )
            .line(Line::Dashed)
            .marker(Marker::None)
            .width(1.5),
        );
    }
    c.add(Series::new(
        "throughput",
        PALETTE[0],
        points(steps, |s| s.summary.throughput),
    ));
    c.add(
        Series::new(
            "goodput (2xx/3xx)",
            PALETTE[2],
            points(steps, |s| s.summary.goodput),
        )
        .line(Line::Dashed),
    );
    let bound: Vec<(f64, f64)> = steps
        .iter()
        .filter(|s| r.analysis.generator_bound.contains(&s.step))
        .map(|s| (s.offered, s.summary.throughput))
        .collect();
    if !bound.is_empty() {
        c.add(
            Series::new("generator-bound step", WARN_COLOR, bound)
                .line(Line::None)
                .marker(Marker::Ring),
        );
    }
    mark_load(&mut c, r);
    c
}

/// Response-time percentiles against load, log y: the knee shows as a wall.
pub fn latency_chart(r: &RunReport) -> Chart {
    let steps = &r.steps;
    let offered: Vec<f64> = steps.iter().map(|s| s.offered).collect();
    let mut c = Chart::new(
        "Response time percentiles vs load",
        load_axis(r.is_open(), &offered),
        Axis::log("response time (ms, log scale)"),
    );
    // Steps without answers have no latency: leave a gap rather than plot a zero.
    let lat = |f: fn(&StepRecord) -> f64| {
        move |s: &StepRecord| {
            if s.summary.response_time_ms.count > 0 || s.summary.responses > 0 {
                f(s)
            } else {
                f64::NAN
            }
        }
    };
    // Four hues that stay apart for colour-blind readers too (not four blues), and a dash
    // pattern per line so they part in greyscale prints as well.
    let styles = [
        (PALETTE[2], Line::Solid),
        (PALETTE[0], Line::Solid),
        (PALETTE[1], Line::Dashed),
        (PALETTE[3], Line::Dotted),
    ];
    type Pick = fn(&StepRecord) -> f64;
    let pcts: [(&str, Pick); 4] = [
        ("p50", |s| s.summary.response_time_ms.p50),
        ("p90", |s| s.summary.response_time_ms.p90),
        ("p99", |s| s.summary.response_time_ms.p99),
        ("p99.9", |s| s.summary.response_time_ms.p999),
    ];
    for ((name, f), (color, line)) in pcts.into_iter().zip(styles) {
        c.add(Series::new(name, color, points(steps, lat(f))).line(line));
    }
    c.add(
        Series::new(
            "max",
            "#6b7280",
            points(steps, lat(|s| s.summary.response_time_ms.max)),
        )
        .line(Line::Dotted)
        .width(1.5),
    );
    mark_load(&mut c, r);
    c
}

/// Where the time goes at the tail: response time = send lag + wait for a connection +
/// service time. Service time flat while response time climbs means queueing before the
/// server answered; send lag climbing means the generator fell behind.
pub fn time_split_chart(r: &RunReport) -> Chart {
    let steps = &r.steps;
    let offered: Vec<f64> = steps.iter().map(|s| s.offered).collect();
    // Send lag is the open loop's lateness against its schedule: a closed loop has none.
    let open = r.is_open();
    let mut c = Chart::new(
        if open {
            "Response time, service time and send lag (p99)"
        } else {
            "Response time and service time (p99)"
        },
        load_axis(r.is_open(), &offered),
        Axis::log("ms, log scale").with_unit("ms"),
    );
    let answered = |v: f64, s: &StepRecord| if s.summary.responses > 0 { v } else { f64::NAN };
    c.add(Series::new(
        "response time p99",
        "#1d4ed8",
        points(steps, |s| answered(s.summary.response_time_ms.p99, s)),
    ));
    c.add(
        Series::new(
            "service time p99",
            PALETTE[4],
            points(steps, |s| answered(s.summary.service_time_ms.p99, s)),
        )
        .line(Line::Dashed),
    );
    if open {
        c.add(Series::new(
            "send lag p99",
            WARN_COLOR,
            points(steps, |s| s.summary.send_lag_ms.p99),
        ));
    }
    mark_load(&mut c, r);
    c
}

/// Transport errors by kind and 4xx/5xx answers, per second of each step, against load.
pub fn errors_chart(r: &RunReport) -> Chart {
    let steps = &r.steps;
    let offered: Vec<f64> = steps.iter().map(|s| s.offered).collect();
    let mut c = Chart::new(
        "Errors and non-2xx/3xx responses vs load",
        load_axis(r.is_open(), &offered),
        Axis::linear("per second").with_unit("/s"),
    );
    c.empty_note = if steps.is_empty() {
        "no data".to_string()
    } else {
        "no transport errors and no 4xx/5xx responses".to_string()
    };
    let per_s = |n: u64, s: &StepRecord| {
        if s.summary.duration_s > 0.0 {
            n as f64 / s.summary.duration_s
        } else {
            n as f64
        }
    };
    let mut color = 0;
    for k in ErrorKind::ALL {
        if steps.iter().any(|s| s.summary.errors_of(k) > 0) {
            c.add(Series::new(
                k.name(),
                PALETTE[(1 + color) % PALETTE.len()],
                points(steps, |s| per_s(s.summary.errors_of(k), s)),
            ));
            color += 1;
        }
    }
    let mut codes: Vec<&String> = steps
        .iter()
        .flat_map(|s| {
            let ok = s.summary.ok_status;
            s.summary
                .statuses
                .keys()
                .filter(move |code| !ok.contains_code(code))
        })
        .collect();
    codes.sort();
    codes.dedup();
    for code in codes {
        c.add(
            Series::new(
                format!("HTTP {code}"),
                PALETTE[(1 + color) % PALETTE.len()],
                points(steps, |s| {
                    per_s(s.summary.statuses.get(code).copied().unwrap_or(0), s)
                }),
            )
            .line(Line::Dashed),
        );
        color += 1;
    }
    if c.series.is_empty() {
        return c;
    }
    mark_load(&mut c, r);
    c
}

/// The steps as x-bands on a timeline (alternately shaded, labelled with their load), and
/// the warm-up seconds of each as a tinted band. From series.jsonl when it has the step,
/// else from the step record's times.
pub fn step_bands(r: &RunReport) -> Vec<Band> {
    // Each step's seconds and its record (the first of that number), gathered in one pass.
    let mut by_id: std::collections::BTreeMap<usize, (Vec<&SeriesPoint>, Option<&StepRecord>)> =
        std::collections::BTreeMap::new();
    for p in &r.data.series {
        by_id.entry(p.step).or_default().0.push(p);
    }
    for s in &r.steps {
        by_id.entry(s.step).or_default().1.get_or_insert(s);
    }
    let mut out = Vec::new();
    for (pts, rec) in by_id.into_values() {
        let (x0, x1, offered) = if !pts.is_empty() {
            let lo = pts.iter().map(|p| p.t).fold(f64::INFINITY, f64::min);
            let hi = pts
                .iter()
                .map(|p| p.t + 1.0)
                .fold(f64::NEG_INFINITY, f64::max);
            (lo, hi, pts[0].offered)
        } else if let Some(s) = rec {
            (s.start_s, s.end_s, s.offered)
        } else {
            continue;
        };
        if !(x0.is_finite() && x1.is_finite()) {
            continue;
        }
        let unit = if r.is_open() { "/s" } else { "u" };
        out.push(Band {
            x0,
            x1,
            label: Some(format!("{}{unit}", fmt_num(offered))),
            // One shade for every step (alternating with white read as gaps between steps).
            fill: "#eef2f7".to_string(),
        });
        let warm: Vec<f64> = pts.iter().filter(|p| p.warmup).map(|p| p.t).collect();
        if let (Some(a), Some(b)) = (
            warm.iter().copied().reduce(f64::min),
            warm.iter().copied().reduce(f64::max),
        ) {
            out.push(Band {
                x0: a,
                x1: b + 1.0,
                label: None,
                fill: WARMUP_FILL.to_string(),
            });
        }
    }
    out
}

/// The whole sweep second by second: responses/s (with the offered rate in open loop), then
/// mean and max response time; steps shaded, warm-ups tinted.
pub fn timeline_charts(r: &RunReport) -> Vec<Chart> {
    let s = &r.data.series;
    let mut a = Chart::new(
        "Timeline: responses per second",
        Axis::fitted("time since start (s)"),
        Axis::linear("responses/s"),
    );
    let mut b = Chart::new(
        "Timeline: response time",
        Axis::fitted("time since start (s)"),
        Axis::log("response time (ms, log scale)"),
    );
    a.empty_note = "no per-second data (series.jsonl is empty)".to_string();
    b.empty_note = a.empty_note.clone();
    // Full page width: a sweep has many seconds.
    for c in [&mut a, &mut b] {
        c.width = 1280.0;
        c.height = 330.0;
    }
    if s.is_empty() {
        return vec![a, b];
    }
    // Seconds are per step; a gap between steps (rest time) must not be bridged.
    let with_gaps = |f: &dyn Fn(&crate::store::SeriesPoint) -> f64| {
        let mut pts = Vec::with_capacity(s.len());
        for (i, p) in s.iter().enumerate() {
            if i > 0 && (p.t - s[i - 1].t > 1.5 || p.step != s[i - 1].step) {
                pts.push((f64::NAN, f64::NAN));
            }
            pts.push((p.t + 0.5, f(p)));
        }
        pts
    };
    let bands = step_bands(r);
    for band in &bands {
        a.band(band.clone());
        b.band(band.clone());
    }
    if let Some(key) = warmup_key(r) {
        a.add(key.clone());
        b.add(key);
    }
    if r.is_open() {
        a.add(
            Series::new("offered", IDEAL_COLOR, with_gaps(&|p| p.offered))
                .line(Line::Dashed)
                .marker(Marker::None)
                .width(1.5),
        );
    }
    a.add(
        Series::new(
            "responses/s",
            PALETTE[0],
            with_gaps(&|p| p.responses as f64),
        )
        .marker(Marker::None),
    );
    if s.iter().any(|p| p.errors > 0) {
        a.add(
            Series::new("errors/s", PALETTE[1], with_gaps(&|p| p.errors as f64))
                .marker(Marker::None)
                .width(1.5),
        );
    }
    // A second without answers has no response time: a gap, not a zero.
    let rt = |v: f64, p: &crate::store::SeriesPoint| if p.responses > 0 { v } else { f64::NAN };
    b.add(
        Series::new(
            "mean",
            PALETTE[0],
            with_gaps(&|p| rt(p.response_time_mean_ms, p)),
        )
        .marker(Marker::None),
    );
    b.add(
        Series::new(
            "max",
            "#6b7280",
            with_gaps(&|p| rt(p.response_time_max_ms, p)),
        )
        .line(Line::Dotted)
        .marker(Marker::None)
        .width(1.5),
    );
    mark_control(&mut [&mut a, &mut b], r);
    vec![a, b]
}

/// Live control's changes of load (series.jsonl's events): a labelled mark at the second
/// each took effect, on every timeline.
pub fn mark_control(charts: &mut [&mut Chart], r: &RunReport) {
    for e in &r.data.events {
        for c in charts.iter_mut() {
            c.vline(e.t, e.label(), CONTROL_COLOR);
        }
    }
}

/// The timelines of a one-step run (a page made for one run, not a sweep's): responses per
/// second against the offered rate, response-time percentiles per second, and send lag per
/// second; the warm-up seconds shaded.
pub fn run_charts(r: &RunReport) -> Vec<Chart> {
    let s = &r.data.series;
    let mut rate = Chart::new(
        "Timeline: responses per second",
        Axis::fitted("time since start (s)").with_unit("s"),
        Axis::linear("responses/s").with_unit("/s"),
    );
    let mut rt = Chart::new(
        "Timeline: response time",
        Axis::fitted("time since start (s)").with_unit("s"),
        Axis::log("response time (ms, log scale)").with_unit("ms"),
    );
    let mut lag = Chart::new(
        "Timeline: send lag",
        Axis::fitted("time since start (s)").with_unit("s"),
        Axis::linear("mean send lag (ms)").with_unit("ms"),
    );
    for c in [&mut rate, &mut rt, &mut lag] {
        c.width = 1280.0;
        c.height = 300.0;
        c.empty_note = "no per-second data (series.jsonl is empty)".to_string();
    }
    if s.is_empty() {
        return vec![rate, rt, lag];
    }
    // Only the warm-up is shaded: one step needs no band naming its load.
    let warm: Vec<Band> = step_bands(r)
        .into_iter()
        .filter(|b| b.label.is_none())
        .collect();
    for c in [&mut rate, &mut rt, &mut lag] {
        for b in &warm {
            c.band(b.clone());
        }
    }
    // A pause in the seconds (none in a run, but a merged folder may have one) is a gap.
    let line = |f: &dyn Fn(&SeriesPoint) -> f64| {
        let mut pts = Vec::with_capacity(s.len());
        for (i, p) in s.iter().enumerate() {
            if i > 0 && p.t - s[i - 1].t > 1.5 {
                pts.push((f64::NAN, f64::NAN));
            }
            pts.push((p.t + 0.5, f(p)));
        }
        pts
    };
    // Dots show isolated seconds of a short run; a long one reads better as lines.
    let dots = if s.len() <= 60 {
        Marker::Dot
    } else {
        Marker::None
    };
    if r.is_open() {
        rate.add(
            Series::new("offered", IDEAL_COLOR, line(&|p| p.offered))
                .line(Line::Dashed)
                .marker(Marker::None)
                .width(1.5),
        );
    }
    rate.add(Series::new("responses/s", PALETTE[0], line(&|p| p.responses as f64)).marker(dots));
    if s.iter().any(|p| p.ok != p.responses) {
        rate.add(
            Series::new("goodput/s", PALETTE[2], line(&|p| p.ok as f64))
                .line(Line::Dashed)
                .marker(Marker::None),
        );
    }
    if s.iter().any(|p| p.errors > 0) {
        rate.add(
            Series::new("errors/s", PALETTE[1], line(&|p| p.errors as f64))
                .marker(Marker::None)
                .width(1.5),
        );
    }
    // A second without answers has no response time: a gap, not a zero.
    let answered =
        |v: Option<f64>, p: &SeriesPoint| v.filter(|_| p.responses > 0).unwrap_or(f64::NAN);
    type Pick = fn(&SeriesPoint) -> Option<f64>;
    let pcts: [(&str, &str, Line, Pick); 3] = [
        ("p50", PALETTE[2], Line::Solid, |p| p.response_time_p50_ms),
        ("p95", PALETTE[0], Line::Dashed, |p| p.response_time_p95_ms),
        ("p99", PALETTE[1], Line::Solid, |p| p.response_time_p99_ms),
    ];
    for (name, color, style, f) in pcts {
        if s.iter().any(|p| f(p).is_some()) {
            rt.add(
                Series::new(name, color, line(&|p| answered(f(p), p)))
                    .line(style)
                    .marker(Marker::None),
            );
        }
    }
    rt.add(
        Series::new(
            "mean",
            PALETTE[3],
            line(&|p| answered(Some(p.response_time_mean_ms), p)),
        )
        .line(Line::Dotted)
        .marker(Marker::None),
    );
    rt.add(
        Series::new(
            "max",
            "#6b7280",
            line(&|p| answered(Some(p.response_time_max_ms), p)),
        )
        .line(Line::Dotted)
        .marker(Marker::None)
        .width(1.5),
    );
    lag.add(
        Series::new(
            "send lag (mean)",
            WARN_COLOR,
            line(&|p| answered(Some(p.send_lag_mean_ms), p)),
        )
        .marker(dots),
    );
    if let Some(key) = warmup_key(r) {
        for c in [&mut rate, &mut rt, &mut lag] {
            c.add(key.clone());
        }
    }
    // A ramp: where throughput left the offered line, on every timeline.
    if let Some(k) = r.ramp.as_ref().and_then(|a| a.knee.as_ref()) {
        let label = format!(
            "knee {} ± {}",
            r.load_text(k.level),
            crate::units::fmt_num(k.uncertainty)
        );
        for c in [&mut rate, &mut rt, &mut lag] {
            c.vline(k.at_s, label.clone(), SATURATION_COLOR);
        }
    }
    mark_control(&mut [&mut rate, &mut rt, &mut lag], r);
    vec![rate, rt, lag]
}

/// Charts in a responsive grid; `prefix` keeps the SVG ids unique on the page. A chart with
/// nothing to draw is one line of text under the grid, not an empty frame.
pub fn chart_grid(charts: &[Chart], prefix: &str) -> String {
    let mut o = String::from("<div class=\"charts\">\n");
    let mut empty = String::new();
    for (i, c) in charts.iter().enumerate() {
        if !c.has_data() {
            let _ = writeln!(
                empty,
                "<p class=\"empty-chart\"><strong>{}</strong>: {}</p>",
                esc(&c.title),
                esc(&c.empty_note)
            );
            continue;
        }
        // Wide charts (timelines) take a whole row.
        let class = if c.width > 900.0 {
            " class=\"wide\""
        } else {
            ""
        };
        let _ = writeln!(
            o,
            "<figure{class}>\n{}</figure>",
            c.to_svg(&format!("{prefix}{i}"))
        );
    }
    o.push_str("</div>\n");
    o.push_str(&empty);
    o
}

#[cfg(test)]
mod tests {
    use super::super::testdata;
    use super::*;
    use crate::store::RunData;

    fn report(mode: &str, steps: Vec<StepRecord>) -> RunReport {
        let series = steps.iter().flat_map(testdata::series).collect();
        RunReport::from_data(RunData {
            dir: "/tmp/x".into(),
            info: testdata::info("t", mode, Some("p99<100ms")),
            steps,
            series,
            events: Vec::new(),
            skipped: vec![],
        })
    }

    /// Send lag is the open loop's: a closed loop's chart and step table show none (no
    /// "0µs" for a schedule that does not exist).
    #[test]
    fn send_lag_shows_in_the_open_loop_only() {
        let names = |r: &RunReport| -> Vec<String> {
            time_split_chart(r)
                .series
                .iter()
                .map(|s| s.name.clone())
                .collect()
        };
        let open = report("open", testdata::open_sweep());
        assert!(names(&open).contains(&"send lag p99".to_string()));
        let closed = report("closed", testdata::closed_sweep());
        let n = names(&closed);
        assert!(!n.iter().any(|n| n.contains("lag")), "{n:?}");
        assert!(!time_split_chart(&closed).title.contains("send lag"));
    }

    #[test]
    fn open_sweep_charts_mark_saturation_and_capacity() {
        let r = report("open", testdata::open_sweep());
        let c = throughput_chart(&r);
        assert!(c.series.iter().any(|s| s.name.starts_with("ideal")));
        assert_eq!(c.vlines.len(), 2, "{:?}", c.vlines);
        assert!(c.vlines[0].label.contains("saturation 400 req/s"));
        let e = errors_chart(&r);
        let names: Vec<&str> = e.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["timeout", "HTTP 503"]);
        let t = timeline_charts(&r);
        assert_eq!(t[0].bands.len(), 10, "5 steps + 5 warm-ups");
        assert_eq!(sweep_charts(&r).len(), 6);
    }

    #[test]
    fn percentile_lines_are_told_apart_by_hue_and_dash() {
        let r = report("open", testdata::open_sweep());
        let c = latency_chart(&r);
        let styles: Vec<(&str, Line)> = c
            .series
            .iter()
            .map(|s| (s.color.as_str(), s.line))
            .collect();
        assert_eq!(styles.len(), 5, "p50, p90, p99, p99.9, max");
        let mut colors: Vec<&str> = styles.iter().map(|s| s.0).collect();
        colors.sort();
        colors.dedup();
        assert_eq!(colors.len(), 5, "each line its own colour: {styles:?}");
        // Not a ramp of one hue: at most one of them is a blue (hue 190°–250°).
        let blue = |c: &&&str| {
            let v = u32::from_str_radix(c.trim_start_matches('#'), 16).unwrap_or(0);
            let [r, g, b] = [v >> 16, (v >> 8) & 0xff, v & 0xff].map(|x| x as f64 / 255.0);
            let (max, min) = (r.max(g).max(b), r.min(g).min(b));
            if max - min < 0.15 {
                return false; // grey
            }
            let h = if max == b {
                240.0 + 60.0 * (r - g) / (max - min)
            } else if max == g {
                120.0 + 60.0 * (b - r) / (max - min)
            } else {
                (60.0 * (g - b) / (max - min)).rem_euclid(360.0)
            };
            (190.0..=250.0).contains(&h)
        };
        assert!(colors.iter().filter(blue).count() <= 1, "{colors:?}");
    }

    #[test]
    fn closed_sweep_has_usl_and_log_users_axis() {
        let r = report("closed", testdata::closed_sweep());
        let c = throughput_chart(&r);
        assert!(c.x.log, "1..32 users doubling");
        assert!(c.series.iter().any(|s| s.name.starts_with("USL")));
        assert!(!c.series.iter().any(|s| s.name.starts_with("ideal")));
    }

    #[test]
    fn empty_and_degenerate_data_render() {
        let r = report("open", vec![]);
        for c in sweep_charts(&r) {
            let svg = c.to_svg("x");
            assert!(svg.contains("no "), "{svg}");
        }
        let mut st = testdata::open_sweep();
        for s in &mut st {
            s.summary.throughput = f64::NAN;
            s.summary.response_time_ms = Default::default();
            s.summary.responses = 0;
            s.summary.duration_s = 0.0;
        }
        let r = report("open", st);
        for (i, c) in sweep_charts(&r).iter().enumerate() {
            let svg = c.to_svg(&i.to_string());
            assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        }
    }

    #[test]
    fn a_chart_without_data_is_one_line_not_an_empty_frame() {
        let mut empty = Chart::new("Errors vs load", Axis::linear("x"), Axis::linear("y"));
        empty.empty_note = "no transport errors".into();
        let mut full = Chart::new("Throughput", Axis::linear("x"), Axis::linear("y"));
        full.add(Series::new("a", "#000", vec![(1.0, 2.0)]));
        let html = chart_grid(&[empty, full], "t");
        assert_eq!(html.matches("<svg").count(), 1, "{html}");
        assert!(html.contains(
            "<p class=\"empty-chart\"><strong>Errors vs load</strong>: no transport errors</p>"
        ));
    }
}
