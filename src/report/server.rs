//! The server-side charts of a sweep report, from what was sampled beside the load
//! (`StepRecord::server` per step, `SeriesPoint::server` per second; docs/observe.md). Each
//! chart is built only when its figures are in the folder, so a run without observation (or
//! an older folder) gets none of them and its report looks as before.
use super::charts::{load_axis, mark_load, step_bands, PALETTE, SATURATION_COLOR, WARN_COLOR};
use super::model::RunReport;
use super::svg::{Axis, Chart, Line, Marker, Series};
use crate::observe::{SecondObservation, SourceObservation, LOCAL};
use crate::store::{SeriesPoint, StepRecord};

/// The source standing for the server in a step: the first agent, else the local host.
pub fn server_of(s: &StepRecord) -> Option<&SourceObservation> {
    s.server.as_ref()?.server()
}

/// Whether any step or second carries server figures.
pub fn has_server_data(r: &RunReport) -> bool {
    r.steps.iter().any(|s| server_of(s).is_some())
        || r.data.series.iter().any(|p| p.server.is_some())
}

/// All server charts that have data, in reading order: per step against load first, then
/// the timelines.
pub fn server_charts(r: &RunReport) -> Vec<Chart> {
    [
        cpu_chart(r),
        cpu_per_response_chart(r),
        listen_overflow_chart(r),
        processes_timeline(r),
        tcp_timeline(r),
        listen_queue_timeline(r),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The server charts of a one-step run: its seconds, not a load axis with one point. The
/// host's CPU second by second first, then the timelines a sweep's page has too.
pub fn run_server_charts(r: &RunReport) -> Vec<Chart> {
    [
        cpu_timeline(r),
        processes_timeline(r),
        tcp_timeline(r),
        listen_queue_timeline(r),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The server host's CPU busy and overload's own CPU, second by second.
pub fn cpu_timeline(r: &RunReport) -> Option<Chart> {
    let s = &r.data.series;
    let busy = per_second(s, |o| o.cpu_busy_pct);
    if !any_point(&busy) {
        return None;
    }
    let label = source_label(r).unwrap_or_else(|| "server host".to_string());
    let mut c = timeline(
        r,
        format!("Timeline: server CPU ({label})"),
        "CPU, % of all cores",
    );
    c.y.max = Some(100.0);
    c.add(timeline_series("busy", PALETTE[0], busy));
    // overload's CPU is kept as % of one core: here, of all its host's cores, as busy is.
    let cores = r.data.info.host.cores.max(1) as f64;
    let gen = per_second(s, |o| o.generator_cpu_pct.map(|p| p / cores));
    if any_point(&gen) {
        c.add(
            timeline_series("overload itself (% of its host's cores)", PALETTE[1], gen)
                .line(Line::Dashed),
        );
    }
    Some(c)
}

/// Names the server source for titles. A local server shares its host with overload, which
/// the reader must keep in mind when reading host-wide CPU.
fn source_label(r: &RunReport) -> Option<String> {
    let name = r
        .steps
        .iter()
        .find_map(|s| server_of(s).filter(|o| o.host.is_some()))?
        .source
        .clone();
    Some(if name == LOCAL {
        "local host, shared with overload".to_string()
    } else {
        format!("host {name}")
    })
}

fn load_chart(r: &RunReport, title: impl Into<String>, y: Axis) -> Chart {
    let offered: Vec<f64> = r.steps.iter().map(|s| s.offered).collect();
    Chart::new(title, load_axis(r.is_open(), &offered), y)
}

/// One point per step; steps without the figure leave a gap, never a zero.
fn per_step(r: &RunReport, f: impl Fn(&StepRecord) -> Option<f64>) -> Vec<(f64, f64)> {
    r.steps
        .iter()
        .map(|s| {
            (
                s.offered,
                f(s).filter(|v| v.is_finite()).unwrap_or(f64::NAN),
            )
        })
        .collect()
}

/// The generator process's CPU in % of one core: sampled beside the load when it was, else
/// the engine's own figure (worker threads only).
fn generator_pct(s: &StepRecord) -> Option<f64> {
    if let Some(g) = s.server.as_ref().and_then(|o| o.generator) {
        return Some(g.cpu_pct.mean);
    }
    let g = &s.generator;
    (g.cpu_pct.is_finite() && g.threads > 0).then_some(g.cpu_pct * g.threads as f64)
}

/// Cores of the generator's host: the local source's count, else run.json's.
fn generator_cores(r: &RunReport, s: &StepRecord) -> f64 {
    s.server
        .as_ref()
        .and_then(|o| o.source(LOCAL))
        .and_then(|l| l.host)
        .map(|h| h.cores as usize)
        .filter(|c| *c > 0)
        .unwrap_or(r.data.info.host.cores)
        .max(1) as f64
}

/// Chart 1: the server host's CPU (busy mean and max, and its split) against load, with the
/// generator's CPU beside it (S1's self-check: a generator that eats the CPU measures itself).
pub fn cpu_chart(r: &RunReport) -> Option<Chart> {
    let label = source_label(r)?;
    let mut c = load_chart(
        r,
        format!("Server CPU vs load ({label})"),
        Axis {
            max: Some(100.0),
            ..Axis::linear("CPU, % of all cores").with_unit("% of all cores")
        },
    );
    let host = |s: &StepRecord| server_of(s).and_then(|o| o.host);
    c.add(Series::new(
        "busy (mean)",
        PALETTE[0],
        per_step(r, |s| host(s).map(|h| h.cpu_busy_pct.mean)),
    ));
    c.add(
        Series::new(
            "busy (max)",
            PALETTE[0],
            per_step(r, |s| host(s).map(|h| h.cpu_busy_pct.max)),
        )
        .line(Line::Dashed)
        .width(1.5),
    );
    type Pick = fn(&crate::observe::HostObservation) -> f64;
    let split: [(&str, &str, Pick); 4] = [
        ("user", PALETTE[4], |h| h.cpu_user_pct.mean),
        ("system", PALETTE[3], |h| h.cpu_system_pct.mean),
        ("softirq", PALETTE[6], |h| h.cpu_softirq_pct.mean),
        ("steal", PALETTE[7], |h| h.cpu_steal_pct.mean),
    ];
    for (i, (name, color, f)) in split.into_iter().enumerate() {
        let pts = per_step(r, |s| host(s).map(|h| f(&h)));
        // softirq and steal only when they show: a flat zero line is clutter.
        if i >= 2 && !pts.iter().any(|p| p.1 >= 1.0) {
            continue;
        }
        c.add(
            Series::new(format!("{name} (mean)"), color, pts)
                .line(Line::Dotted)
                .width(1.5),
        );
    }
    let gen = per_step(r, |s| generator_pct(s).map(|p| p / generator_cores(r, s)));
    if gen.iter().any(|p| p.1.is_finite()) {
        let name = if label.starts_with("local") {
            "overload itself (mean)"
        } else {
            "overload, % of its own host (mean)"
        };
        c.add(Series::new(name, PALETTE[1], gen).line(Line::Dashed));
    }
    mark_load(&mut c, r);
    Some(c)
}

/// Chart 2: CPU spent per response, in ms: the server's efficiency, and where it worsens
/// with load (contention, spinning, swapping). From the watched process groups when there
/// are any, and from the whole host.
pub fn cpu_per_response_chart(r: &RunReport) -> Option<Chart> {
    let label = source_label(r)?;
    let local = label.starts_with("local");
    let per_resp = |cpu_cores: f64, s: &StepRecord| {
        let x = s.summary.throughput;
        (x > 0.0 && cpu_cores.is_finite()).then(|| cpu_cores * 1000.0 / x)
    };
    let mut groups: Vec<String> = Vec::new();
    for s in &r.steps {
        for g in server_of(s)
            .map(|o| o.groups.as_slice())
            .unwrap_or_default()
        {
            if !groups.contains(&g.name) {
                groups.push(g.name.clone());
            }
        }
    }
    let title = if groups.is_empty() {
        format!("Server CPU time per response (whole {label})")
    } else {
        format!(
            "CPU time per response (watched: {}; and the whole host)",
            groups.join(", ")
        )
    };
    let mut c = load_chart(
        r,
        title,
        Axis::linear("ms of CPU per response").with_unit("ms of CPU"),
    );
    for (i, name) in groups.iter().enumerate() {
        c.add(Series::new(
            format!("watched {name}"),
            PALETTE[(2 + i) % PALETTE.len()],
            per_step(r, |s| {
                let g = server_of(s)?.groups.iter().find(|g| &g.name == name)?;
                per_resp(g.cpu_pct.mean / 100.0, s)
            }),
        ));
    }
    // Host busy % × cores = cores in use; on the generator's own host overload's share is
    // taken out, or the curve would measure the generator too.
    let host = per_step(r, |s| {
        let h = server_of(s)?.host?;
        let mut cores = h.cpu_busy_pct.mean / 100.0 * h.cores.max(1) as f64;
        if local {
            cores -= generator_pct(s).unwrap_or(0.0) / 100.0;
        }
        per_resp(cores.max(0.0), s)
    });
    c.add(
        Series::new(
            if local {
                "whole host minus overload"
            } else {
                "whole host"
            },
            PALETTE[0],
            host,
        )
        .line(if groups.is_empty() {
            Line::Solid
        } else {
            Line::Dashed
        }),
    );
    mark_load(&mut c, r);
    Some(c)
}

/// Listen-queue overflows and drops per step against load: connections the kernel refused
/// because the accept queue was full. Host-wide counters (the kernel keeps none per port).
pub fn listen_overflow_chart(r: &RunReport) -> Option<Chart> {
    fn tcp(s: &StepRecord) -> Option<&crate::observe::TcpObservation> {
        server_of(s)?.tcp.as_ref()
    }
    r.steps.iter().find_map(tcp)?;
    let mut c = load_chart(
        r,
        "Listen queue overflows and drops per step (host-wide)",
        Axis::linear("count in the step").with_unit(""),
    );
    let overflows = per_step(r, |s| tcp(s).map(|t| t.listen_overflows as f64));
    let drops = per_step(r, |s| tcp(s).map(|t| t.listen_drops as f64));
    // None at all: a chart of zeros would only take room (the steps table shows the 0s).
    if !overflows.iter().chain(&drops).any(|p| p.1 > 0.0) {
        return None;
    }
    c.add(Series::new("ListenOverflows", SATURATION_COLOR, overflows));
    c.add(
        Series::new("ListenDrops", WARN_COLOR, drops)
            .line(Line::Dashed)
            .width(1.5),
    );
    mark_load(&mut c, r);
    Some(c)
}

/// Counts of a few (1 process, an empty queue) would get ticks at 0.5: show at least 0–5.
fn whole_counts(c: &mut Chart) {
    let top = c
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    if !c.y.log && top < 4.5 {
        c.y.max = Some(5.0);
    }
}

/// A full-width timeline chart with the steps shaded, as the other timelines.
fn timeline(r: &RunReport, title: impl Into<String>, y: &str) -> Chart {
    let mut c = Chart::new(title, Axis::fitted("time since start (s)"), Axis::linear(y));
    c.width = 1280.0;
    c.height = 330.0;
    for b in step_bands(r) {
        c.band(b);
    }
    c
}

/// Per-second points of one server figure. Seconds without it and pauses (rest between
/// steps) break the line instead of bridging it. Unlike the response counts, a step change
/// does not: the server's state runs on from one step into the next.
fn per_second(s: &[SeriesPoint], f: impl Fn(&SecondObservation) -> Option<f64>) -> Vec<(f64, f64)> {
    let mut pts = Vec::with_capacity(s.len());
    for (i, p) in s.iter().enumerate() {
        if i > 0 && p.t - s[i - 1].t > 1.5 {
            pts.push((f64::NAN, f64::NAN));
        }
        let v = p.server.as_ref().and_then(&f).filter(|v| v.is_finite());
        pts.push((p.t + 0.5, v.unwrap_or(f64::NAN)));
    }
    pts
}

fn any_point(pts: &[(f64, f64)]) -> bool {
    pts.iter().any(|p| p.1.is_finite())
}

/// A line without dots, unless the run is short: then dots show isolated seconds (a line
/// needs two) and carry the hover values.
fn timeline_series(name: impl Into<String>, color: &str, pts: Vec<(f64, f64)>) -> Series {
    let n = pts.iter().filter(|p| p.1.is_finite()).count();
    let s = Series::new(name, color, pts);
    if n <= 60 {
        s.width(1.5)
    } else {
        s.marker(Marker::None)
    }
}

/// What the line of busy pool workers is called: the pools' own kind (the embedded target's
/// pool speaks FPM's status format but is not PHP-FPM), from the steps' observations.
fn busy_workers_label(r: &RunReport) -> String {
    let mut kinds: Vec<&str> = Vec::new();
    for f in r
        .steps
        .iter()
        .flat_map(|s| s.server.iter().flat_map(|o| o.sources.iter()))
        .flat_map(|o| o.fpm.iter())
    {
        if !kinds.contains(&f.workers_label()) {
            kinds.push(f.workers_label());
        }
    }
    match kinds.as_slice() {
        [one] => format!("busy {one}"),
        _ => "busy pool workers".to_string(),
    }
}

/// Chart 3: processes of the watched groups and busy pool workers, second by second (S5:
/// workers spawned as load rises, and still there after it).
pub fn processes_timeline(r: &RunReport) -> Option<Chart> {
    let s = &r.data.series;
    let procs = per_second(s, |o| o.processes.map(|n| n as f64));
    let fpm = per_second(s, |o| o.fpm_active.map(|n| n as f64));
    if !any_point(&procs) && !any_point(&fpm) {
        return None;
    }
    let mut names: Vec<&str> = Vec::new();
    for st in &r.steps {
        for g in server_of(st)
            .map(|o| o.groups.as_slice())
            .unwrap_or_default()
        {
            if !names.contains(&g.name.as_str()) {
                names.push(&g.name);
            }
        }
    }
    let title = if names.is_empty() {
        "Timeline: worker processes".to_string()
    } else {
        format!("Timeline: worker processes (watched: {})", names.join(", "))
    };
    let mut c = timeline(r, title, "processes");
    if any_point(&procs) {
        c.add(timeline_series(
            "processes of the watched groups",
            PALETTE[3],
            procs,
        ));
    }
    if any_point(&fpm) {
        c.add(timeline_series(busy_workers_label(r), PALETTE[2], fpm));
    }
    whole_counts(&mut c);
    Some(c)
}

/// Chart 4: TCP connections on the watched port by state, second by second. ESTABLISHED and
/// TIME_WAIT always; SYN_RECV and CLOSE_WAIT when they occur.
pub fn tcp_timeline(r: &RunReport) -> Option<Chart> {
    let s = &r.data.series;
    type Pick = fn(&SecondObservation) -> Option<u64>;
    let states: [(&str, &str, Pick, bool); 4] = [
        ("ESTABLISHED", PALETTE[0], |o| o.established, true),
        ("TIME_WAIT", PALETTE[1], |o| o.time_wait, true),
        ("SYN_RECV", SATURATION_COLOR, |o| o.syn_recv, false),
        ("CLOSE_WAIT", PALETTE[3], |o| o.close_wait, false),
    ];
    // (state, colour, points, drawn even when all zero)
    type Line4<'a> = (&'a str, &'a str, Vec<(f64, f64)>, bool);
    let lines: Vec<Line4> = states
        .into_iter()
        .map(|(n, c, f, always)| (n, c, per_second(s, |o| f(o).map(|v| v as f64)), always))
        .collect();
    if !lines.iter().any(|l| any_point(&l.2)) {
        return None;
    }
    let port = r
        .steps
        .iter()
        .find_map(|st| server_of(st)?.tcp.as_ref().map(|t| t.port));
    let title = match port {
        Some(p) => format!("Timeline: TCP connections on port {p} by state"),
        None => "Timeline: TCP connections by state".to_string(),
    };
    // Without keep-alive TIME_WAIT runs to tens of thousands while ESTABLISHED stays in the
    // tens: a log scale keeps both readable (zeros then drop out, which hides nothing).
    let peak = |pts: &[(f64, f64)]| {
        pts.iter()
            .map(|p| p.1)
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max)
    };
    let (est, tw) = (peak(&lines[0].2), peak(&lines[1].2));
    let log = est > 0.0 && tw > 0.0 && est.max(tw) / est.min(tw) > 20.0;
    // On loopback both ends of a connection match the port: say so where it matters.
    let mut c = timeline(r, title, "sockets (both ends when on loopback)");
    if log {
        c.y = Axis::log("sockets, log scale (both ends when on loopback)").with_unit("sockets");
    }
    for (name, color, pts, always) in lines {
        if always || pts.iter().any(|p| p.1 > 0.0) {
            c.add(timeline_series(name, color, pts));
        }
    }
    whole_counts(&mut c);
    Some(c)
}

/// Chart 5: the listening socket's accept-queue length and the listen overflows, second by
/// second, with the queue's limit in the title (as a line it would flatten the queue).
pub fn listen_queue_timeline(r: &RunReport) -> Option<Chart> {
    let s = &r.data.series;
    let queue = per_second(s, |o| o.listen_queue.map(|n| n as f64));
    let ovf = per_second(s, |o| o.listen_overflows.map(|n| n as f64));
    // An accept queue that stayed empty, without overflows, is not worth a chart.
    if !queue.iter().chain(&ovf).any(|p| p.1 > 0.0) {
        return None;
    }
    let limit = r
        .steps
        .iter()
        .filter_map(|st| server_of(st)?.tcp.as_ref()?.listen_limit)
        .max();
    let title = match limit {
        Some(l) => format!("Timeline: accept queue (limit {l}) and listen overflows"),
        None => "Timeline: accept queue and listen overflows".to_string(),
    };
    let mut c = timeline(r, title, "connections");
    if any_point(&queue) {
        c.add(timeline_series("accept queue length", PALETTE[0], queue));
    }
    if any_point(&ovf) {
        c.add(timeline_series(
            "listen overflows in the second (host-wide)",
            SATURATION_COLOR,
            ovf,
        ));
    }
    whole_counts(&mut c);
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::super::testdata;
    use super::*;
    use crate::store::RunData;

    fn report(steps: Vec<StepRecord>) -> RunReport {
        let series = steps.iter().flat_map(testdata::series).collect();
        RunReport::from_data(RunData {
            dir: "/tmp/x".into(),
            info: testdata::info("t", "open", Some("p99<100ms")),
            steps,
            series,
            events: Vec::new(),
            skipped: vec![],
        })
    }

    #[test]
    fn no_server_data_no_charts() {
        let r = report(testdata::open_sweep());
        assert!(!has_server_data(&r));
        assert!(server_charts(&r).is_empty());
        assert!(server_charts(&report(vec![])).is_empty());
    }

    #[test]
    fn server_sweep_has_every_chart() {
        let r = report(testdata::server_sweep());
        assert!(has_server_data(&r));
        let c = server_charts(&r);
        let titles: Vec<&str> = c.iter().map(|c| c.title.as_str()).collect();
        assert_eq!(c.len(), 6, "{titles:?}");
        assert!(titles[0].starts_with("Server CPU vs load (host web)"));
        assert!(titles[1].contains("watched: php"), "{titles:?}");
        let cpu = &c[0];
        let names: Vec<&str> = cpu.series.iter().map(|s| s.name.as_str()).collect();
        assert!(names.contains(&"busy (mean)") && names.iter().any(|n| n.contains("overload")));
        // 100 % busy at 2 cores and 350 responses/s: 2000 ms / 350.
        let host = c[1].series.last().unwrap();
        let (_, ms) = host.points[3];
        assert!((ms - 2000.0 / 350.0).abs() < 1e-9, "{ms}");
        assert_eq!(c[2].series.len(), 2, "overflows and drops");
        assert!(c[4].title.contains("port 8080"));
        assert!(c[4].y.log, "TIME_WAIT thousands, ESTABLISHED tens");
        assert!(c[5].title.contains("limit 128"));
        for (i, ch) in c.iter().enumerate() {
            let svg = ch.to_svg(&format!("s{i}"));
            assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        }
    }

    /// The busy workers' line is named after the pool's kind: the embedded target's pool is
    /// not PHP-FPM's.
    #[test]
    fn busy_workers_are_labelled_as_their_pools_kind() {
        let names = |r: &RunReport| -> Vec<String> {
            processes_timeline(r)
                .unwrap()
                .series
                .iter()
                .map(|s| s.name.clone())
                .collect()
        };
        let r = report(testdata::server_sweep());
        assert!(
            names(&r).contains(&"busy FPM workers".to_string()),
            "{:?}",
            names(&r)
        );
        let mut st = testdata::server_sweep();
        for s in &mut st {
            for src in &mut s.server.as_mut().unwrap().sources {
                for f in &mut src.fpm {
                    f.pool = crate::observe::summary::TARGET_POOL.to_string();
                }
            }
        }
        let r = report(st);
        let n = names(&r);
        assert!(n.contains(&"busy target workers".to_string()), "{n:?}");
        assert!(!n.iter().any(|n| n.contains("FPM")), "{n:?}");
    }

    #[test]
    fn partial_and_nan_figures_do_not_panic() {
        let mut st = testdata::server_sweep();
        // A step without observation, one with NaN CPU, one without TCP.
        st[0].server = None;
        if let Some(h) = st[1]
            .server
            .as_mut()
            .and_then(|o| o.sources.last_mut())
            .and_then(|s| s.host.as_mut())
        {
            h.cpu_busy_pct.mean = f64::NAN;
        }
        st[2].server.as_mut().unwrap().sources[1].tcp = None;
        st[3].summary.throughput = 0.0;
        let r = report(st);
        for (i, ch) in server_charts(&r).iter().enumerate() {
            let svg = ch.to_svg(&format!("p{i}"));
            assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        }
        // Overflows all zero: no chart of zeros.
        let mut st = testdata::server_sweep();
        for s in &mut st {
            for src in &mut s.server.as_mut().unwrap().sources {
                if let Some(t) = src.tcp.as_mut() {
                    t.listen_overflows = 0;
                    t.listen_drops = 0;
                }
            }
        }
        assert!(listen_overflow_chart(&report(st)).is_none());
    }
}
