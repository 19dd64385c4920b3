//! The run's figures pushed once a second to the monitoring an operator already runs:
//! Prometheus remote-write 1.0 (`--prometheus-remote-write URL`, `remote_write.rs`) and
//! OpenTelemetry metrics over OTLP/HTTP (`--otlp URL`, `otlp.rs`).
//!
//! The per-second loop builds a [`Frame`] (plain data: metric, labels, value) from the
//! engine's live counters ([`Reading`]) and hands it to each [`Pusher`], which only queues it:
//! a bounded queue, the oldest frame dropped (and counted) when it is full, so a slow or down
//! sink never slows the load. Each pusher's own thread encodes what is queued and POSTs it
//! through `http_get` (one deadline per exchange, the answer read capped). When the run ends
//! the last frame carries the run's summary (the figures of its JSON, per name too) and the
//! pusher gets a bounded time to deliver; what it could not is reported as dropped.
pub mod frame;
pub mod otlp;
pub mod queue;
pub mod remote_write;

pub use frame::{Frame, Labels, Offered, Point, Reading, METRICS};
pub use queue::{PushReport, Pusher, SendError, Sink};

use crate::url::Url;
use std::time::Duration;

/// Frames kept while the sink is slow or down: a minute of the run (two frames a second:
/// the closed second's, and the counters').
pub const QUEUE_FRAMES: usize = 120;
/// One exchange with the sink, connect to the last byte of its answer.
pub const EXCHANGE_DEADLINE: Duration = Duration::from_secs(5);
/// How long the end of the run waits for the queue to drain.
pub const DRAIN_DEADLINE: Duration = Duration::from_secs(10);
/// Request names sent with a `name` label; the others are counted in the report, not sent.
pub const NAME_CAP: usize = 50;
/// What is read of the sink's answer (its error message, at most).
const ANSWER_CAP: usize = 16 * 1024;

/// Where the run's figures go.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// Prometheus remote-write 1.0 (snappy-compressed protobuf `WriteRequest`).
    RemoteWrite(Url),
    /// OTLP/HTTP metrics (protobuf `ExportMetricsServiceRequest`); a URL without a path is
    /// given OTLP's `/v1/metrics`.
    Otlp(Url),
}

impl Target {
    /// Parses the URL of `flag` (for the error message): http:// or https://.
    pub fn remote_write(s: &str) -> Result<Target, String> {
        let url = Url::parse(s).map_err(|e| format!("--prometheus-remote-write: {e}"))?;
        Ok(Target::RemoteWrite(url))
    }

    pub fn otlp(s: &str) -> Result<Target, String> {
        let mut url = Url::parse(s).map_err(|e| format!("--otlp: {e}"))?;
        if url.target == "/" {
            url.target = "/v1/metrics".to_string();
        }
        Ok(Target::Otlp(url))
    }

    /// `prometheus-remote-write` or `otlp`: the sink's name in the summary and the JSON.
    pub fn kind(&self) -> &'static str {
        match self {
            Target::RemoteWrite(_) => "prometheus-remote-write",
            Target::Otlp(_) => "otlp",
        }
    }

    /// The URL as given back on a command line.
    pub fn shown(&self) -> String {
        let u = self.url();
        format!("{}://{}{}", u.scheme.as_str(), u.authority, u.target)
    }

    pub fn url(&self) -> &Url {
        match self {
            Target::RemoteWrite(u) | Target::Otlp(u) => u,
        }
    }

    /// Starts the pusher of this target for a run labelled `labels`.
    pub fn start(&self, labels: Labels) -> Pusher {
        let sink: Box<dyn Sink> = Box::new(HttpSink {
            target: self.clone(),
            labels: labels.clone(),
        });
        Pusher::start(self.kind(), sink, QUEUE_FRAMES)
    }
}

/// The pushers of one run and what builds their frames: fed each engine tick of each step
/// ([`RunPush::tick`]), each stored step ([`RunPush::step_done`]), ended once
/// ([`RunPush::finish`]). The run lifecycle's sink drives it, for every run kind.
pub struct RunPush {
    pushers: Vec<Pusher>,
    /// The step in progress.
    maker: Option<frame::FrameMaker>,
    /// CPU time spent making frames on the caller's thread (its ticks and steps' ends).
    frames_cpu: std::time::Duration,
}

impl RunPush {
    /// Starts a pusher per target.
    pub fn start(targets: &[Target], labels: Labels) -> RunPush {
        RunPush::of(targets.iter().map(|t| t.start(labels.clone())).collect())
    }

    fn of(pushers: Vec<Pusher>) -> RunPush {
        RunPush {
            pushers,
            maker: None,
            frames_cpu: std::time::Duration::ZERO,
        }
    }

    /// A tick of step `index` at `offered` (this generator's share): its seconds closed
    /// since the last tick (`series`: the step's closed seconds so far, on the run's clock
    /// whose origin is `origin_ms`), then its counters, with the observed server's newest
    /// samples. Only queues: never waits on a sink.
    pub fn tick(
        &mut self,
        index: usize,
        offered: Offered,
        ctl: &crate::engine::Control,
        series: &[crate::store::SeriesPoint],
        origin_ms: u64,
        server: &[crate::observe::Sample],
    ) {
        let cpu = crate::metrics::recorder::thread_cpu_time();
        self.tick_frames(index, offered, ctl, series, origin_ms, server);
        self.frames_cpu += crate::metrics::recorder::thread_cpu_time().saturating_sub(cpu);
    }

    fn tick_frames(
        &mut self,
        index: usize,
        offered: Offered,
        ctl: &crate::engine::Control,
        series: &[crate::store::SeriesPoint],
        origin_ms: u64,
        server: &[crate::observe::Sample],
    ) {
        let step = index.to_string();
        if self.maker.as_ref().is_none_or(|m| m.step() != step) {
            self.maker = Some(frame::FrameMaker::new(offered, index, origin_ms));
        }
        let Some(maker) = self.maker.as_mut() else {
            return;
        };
        // The level moves on a ramp or under live control: the gauge shows this tick's.
        maker.offered = offered;
        let mut frames = maker.seconds(series);
        let mut now = maker.frame(&Reading::of(ctl));
        now.add_server(server, &step);
        frames.push(now);
        self.offer(frames);
    }

    /// Step `rec` ended with `series`: the seconds that closed after its last tick, then
    /// its summary (the counters end on the figures its JSON holds, per name too).
    pub fn step_done(
        &mut self,
        rec: &crate::store::StepRecord,
        series: &[crate::store::SeriesPoint],
    ) {
        let cpu = crate::metrics::recorder::thread_cpu_time();
        self.step_frames(rec, series);
        self.frames_cpu += crate::metrics::recorder::thread_cpu_time().saturating_sub(cpu);
    }

    fn step_frames(
        &mut self,
        rec: &crate::store::StepRecord,
        series: &[crate::store::SeriesPoint],
    ) {
        let s = &rec.summary;
        let offered = match (s.offered_rate, s.users) {
            (Some(r), _) => Offered::Rate(r),
            (None, u) => Offered::Users(u.unwrap_or(0)),
        };
        let origin_ms = rec
            .start_unix_ms
            .saturating_sub((rec.start_s * 1000.0).round() as u64);
        let mut maker = match self.maker.take() {
            Some(m) if m.step() == rec.step.to_string() => m,
            _ => frame::FrameMaker::new(offered, rec.step, origin_ms),
        };
        let mut frames = maker.seconds(series);
        let (last, left_out) = maker.final_frame(s, NAME_CAP);
        frames.push(last);
        for p in &self.pushers {
            p.names_left_out(left_out);
        }
        self.offer(frames);
    }

    fn offer(&self, frames: Vec<Frame>) {
        for f in frames {
            if let Some((last, rest)) = self.pushers.split_last() {
                for p in rest {
                    p.offer(f.clone());
                }
                last.offer(f);
            }
        }
    }

    /// The run ended: each pusher gets [`DRAIN_DEADLINE`] to deliver what is queued, all of
    /// them together.
    pub fn finish(self) -> Vec<PushReport> {
        let deadline = std::time::Instant::now() + DRAIN_DEADLINE;
        let frames_cpu_ms = self.frames_cpu.as_secs_f64() * 1e3;
        self.pushers
            .into_iter()
            .map(|p| PushReport {
                frames_cpu_ms,
                ..p.finish(deadline.saturating_duration_since(std::time::Instant::now()))
            })
            .collect()
    }
}

/// POSTs encoded frames to the target's URL.
struct HttpSink {
    target: Target,
    labels: Labels,
}

impl Sink for HttpSink {
    fn send(&mut self, frames: &[Frame]) -> Result<(), SendError> {
        let (body, headers): (Vec<u8>, &[(&str, &str)]) = match &self.target {
            Target::RemoteWrite(_) => (
                remote_write::encode(frames, &self.labels),
                &[
                    ("Content-Type", "application/x-protobuf"),
                    ("Content-Encoding", "snappy"),
                    ("X-Prometheus-Remote-Write-Version", "0.1.0"),
                ],
            ),
            Target::Otlp(_) => (
                otlp::encode(frames, &self.labels),
                &[("Content-Type", "application/x-protobuf")],
            ),
        };
        let url = self.target.url();
        let answer = crate::http_get::post(
            url,
            &url.target,
            headers,
            &body,
            EXCHANGE_DEADLINE,
            ANSWER_CAP,
        )
        .map_err(SendError::Retry)?;
        match answer.status {
            200..=299 => Ok(()),
            // The sink refused these points (bad labels, out of order): sending them again
            // cannot help. Remote-write's rule, and OTLP/HTTP's.
            400..=499 if answer.status != 429 => Err(SendError::Drop(refusal(&answer))),
            _ => Err(SendError::Retry(refusal(&answer))),
        }
    }
}

/// "HTTP 400: first line of the body", for the report's last error.
fn refusal(answer: &crate::http_get::Response) -> String {
    let text = answer.text();
    let line = text.lines().next().unwrap_or("").trim();
    let line: String = line.chars().filter(|c| !c.is_control()).take(200).collect();
    if line.is_empty() {
        format!("HTTP {}", answer.status)
    } else {
        format!("HTTP {}: {line}", answer.status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Frames kept by a sink that accepts everything.
    struct Kept(std::sync::Arc<std::sync::Mutex<Vec<Frame>>>);

    impl Sink for Kept {
        fn send(&mut self, frames: &[Frame]) -> Result<(), SendError> {
            self.0.lock().unwrap().extend_from_slice(frames);
            Ok(())
        }
    }

    /// The run's seam, as the lifecycle's sink drives it: each second of a step goes out
    /// once, from the ticks or, for the ones that closed after the last tick, from the
    /// stored series; the step's last counters are its record's; the next step starts its
    /// own series under its own label.
    #[test]
    fn run_push_sends_each_second_once_and_ends_steps_on_their_records() {
        use crate::engine::{Arrival, Control, Load};
        use frame::tests::second;
        let kept = std::sync::Arc::default();
        let mut push = RunPush::of(vec![Pusher::start(
            "test",
            Box::new(Kept(std::sync::Arc::clone(&kept))),
            QUEUE_FRAMES,
        )]);
        let ctl = Control::new(1);
        let series = [second(0.0, 90, 4.0), second(1.0, 110, 6.0)];
        let origin = 1_000_000;
        let rate = Offered::Rate(100.0);
        push.tick(0, rate, &ctl, &series[..1], origin, &[]);
        push.tick(0, rate, &ctl, &series[..1], origin, &[]);
        let load = Load::Open {
            rate: 100.0,
            arrival: Arrival::Constant,
            max_connections: 10,
        };
        let rec =
            crate::runner::fake::record(0, &load, crate::runner::fake::Shape::ok(100.0, 6.0), 2.0);
        push.step_done(&rec, &series);
        push.tick(1, rate, &ctl, &series[..1], origin, &[]);
        let report = push.finish();
        let frames = kept.lock().unwrap();
        assert_eq!(report[0].pushed as usize, frames.len());
        assert_eq!(report[0].dropped, 0);
        let points = |metric: &str, step: &str| -> Vec<(u64, f64)> {
            frames
                .iter()
                .flat_map(|f| f.points.iter().map(move |p| (f.at_ms, p)))
                .filter(|(_, p)| {
                    p.metric == metric && p.labels.contains(&("step", step.to_string()))
                })
                .map(|(at, p)| (at, p.value))
                .collect()
        };
        assert_eq!(
            points("overload_throughput", "0"),
            [(origin + 1_000, 90.0), (origin + 2_000, 110.0)]
        );
        let responses = points("overload_responses_total", "0");
        assert_eq!(
            responses.last().map(|r| r.1),
            Some(rec.summary.responses as f64)
        );
        assert_eq!(points("overload_throughput", "1"), [(origin + 1_000, 90.0)]);
    }

    /// The push's cost is measured on its own thread: a sink that spends 30 ms of CPU per
    /// exchange reports at least that as the thread's `cpu_ms` (its own clock, not the
    /// process's, so the load's threads are not in it); the frames' making is counted apart.
    #[test]
    fn the_push_threads_own_cpu_is_reported() {
        struct Burn;
        impl Sink for Burn {
            fn send(&mut self, _: &[Frame]) -> Result<(), SendError> {
                let t0 = crate::metrics::recorder::thread_cpu_time();
                while crate::metrics::recorder::thread_cpu_time() - t0
                    < std::time::Duration::from_millis(30)
                {
                    std::hint::spin_loop();
                }
                Ok(())
            }
        }
        let mut push = RunPush::of(vec![Pusher::start("test", Box::new(Burn), QUEUE_FRAMES)]);
        let ctl = crate::engine::Control::new(1);
        push.tick(0, Offered::Rate(10.0), &ctl, &[], 0, &[]);
        // This thread's CPU meanwhile is not the push thread's.
        let report = push.finish();
        assert_eq!(report[0].pushed, 1);
        assert!(report[0].cpu_ms >= 30.0, "{:?}", report[0]);
        assert!(report[0].cpu_ms < 5_000.0, "{:?}", report[0]);
        assert!(report[0].frames_cpu_ms >= 0.0);
    }

    /// The offered gauge follows the level each tick is at (a ramp's, or live control's),
    /// not the level the step started at.
    #[test]
    fn the_offered_gauge_follows_the_level_of_each_tick() {
        use crate::engine::Control;
        let kept = std::sync::Arc::default();
        let mut push = RunPush::of(vec![Pusher::start(
            "test",
            Box::new(Kept(std::sync::Arc::clone(&kept))),
            QUEUE_FRAMES,
        )]);
        let ctl = Control::new(1);
        for level in [100.0, 250.0, 400.0] {
            push.tick(0, Offered::Rate(level), &ctl, &[], 1_000_000, &[]);
        }
        push.finish();
        let frames = kept.lock().unwrap();
        let gauge: Vec<f64> = frames
            .iter()
            .flat_map(|f| f.points.iter())
            .filter(|p| p.metric == "overload_offered_rate")
            .map(|p| p.value)
            .collect();
        assert_eq!(gauge, [100.0, 250.0, 400.0]);
    }

    /// A sink's error answer is reported as its first line, without control characters,
    /// 200 characters at most: it cannot drive the terminal or flood the summary.
    #[test]
    fn a_refusal_is_one_clean_bounded_line() {
        let answer = crate::http_get::Response {
            status: 400,
            headers: Vec::new(),
            body: format!("bad \x1b[31msample\x07 {}\nsecond line", "x".repeat(500)).into_bytes(),
            truncated: false,
        };
        let r = refusal(&answer);
        assert!(r.starts_with("HTTP 400: bad [31msample "), "{r}");
        assert!(!r.chars().any(char::is_control), "{r:?}");
        assert!(r.len() <= "HTTP 400: ".len() + 200, "{}", r.len());
        let empty = crate::http_get::Response {
            status: 503,
            headers: Vec::new(),
            body: Vec::new(),
            truncated: false,
        };
        assert_eq!(refusal(&empty), "HTTP 503");
    }

    #[test]
    fn otlp_url_without_path_gets_v1_metrics() {
        let Target::Otlp(u) = Target::otlp("http://127.0.0.1:4318").unwrap() else {
            panic!()
        };
        assert_eq!(u.target, "/v1/metrics");
        let Target::Otlp(u) = Target::otlp("http://127.0.0.1:4318/custom").unwrap() else {
            panic!()
        };
        assert_eq!(u.target, "/custom");
        let e = Target::remote_write("ftp://x").unwrap_err();
        assert!(e.starts_with("--prometheus-remote-write: "), "{e}");
    }
}
