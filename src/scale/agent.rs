//! `overload agent --generate`: the generator side of live coordination. It rides on the
//! observation agent's listener (`observe::agent`: token check, connection limits, TLS) as its
//! [`Extension`], and answers:
//!
//! - `GET /generator`: what it allows (targets, limits), so a controller can check before a run;
//! - `POST /step`: one step of a plan ([`StepPlan`]), run here on the real engine at the
//!   step's start time, answered with the step's record and seconds ([`StepAnswer`]).
//! - `POST /stop`: ends the step named by its start time now ([`StopStep`]: the controller
//!   was interrupted); that step's own answer then holds what was measured.
//!
//! Locked down: the targets it may load are fixed when it starts (`--allow-target HOST:PORT`,
//! resolved then; a step is resolved here and every address it would connect to must be one
//! of those), every step is bounded by limits the agent's owner sets (rate, warm-up + step,
//! connections), and one step runs at a time. A refusal is a one-line answer that says why.
use super::wire::{GeneratorInfo, StepAnswer, StepPlan, StopStep, PROTOCOL};
use crate::engine::source::Sources;
use crate::engine::Load;
use crate::observe::agent::{Extension, Reply};
use crate::runner::step::{run_step, RunClock};
use crate::usecase::engine_config::base_config_of;
use crate::usecase::mix::Mix;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Largest step plan accepted (a long URL list fits many times over).
const MAX_PLAN: usize = 4 << 20;
/// How far ahead a step's start may be: a controller sends it a moment ahead; more would let
/// a step hold the agent idle.
const MAX_LEAD: Duration = Duration::from_secs(60);

/// The agent owner's limits on every step, for this agent's part of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Requests per second (open loop).
    pub max_rate: f64,
    /// Warm-up + step, and the request timeout.
    pub max_duration: Duration,
    /// Connections (open loop's pool) or users (closed loop).
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_rate: 20_000.0,
            max_duration: Duration::from_secs(300),
            max_connections: 2_000,
        }
    }
}

/// One allowed target: as given, and the addresses it resolved to at start.
#[derive(Debug, Clone, PartialEq)]
pub struct AllowedTarget {
    pub given: String,
    pub addrs: Vec<SocketAddr>,
}

/// Resolves `--allow-target HOST:PORT` once, at start.
pub fn allow_target(s: &str) -> Result<AllowedTarget, String> {
    let bad = |why: String| format!("--allow-target '{s}': {why}");
    let (host, port) = s
        .trim()
        .rsplit_once(':')
        .ok_or_else(|| bad("expected HOST:PORT".into()))?;
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| bad(format!("'{port}' is not a port")))?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(bad("no host".into()));
    }
    let addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| bad(format!("cannot resolve: {e}")))?
        .collect();
    if addrs.is_empty() {
        return Err(bad("resolves to no address".into()));
    }
    Ok(AllowedTarget {
        given: s.trim().to_string(),
        addrs,
    })
}

/// The generator behind `POST /step`.
#[derive(Debug)]
pub struct Generator {
    allowed: Vec<AllowedTarget>,
    limits: Limits,
    host: String,
    /// Held while a step runs: one at a time.
    busy: Mutex<()>,
    /// The start time (`start_at_unix_ms`) of the step a controller asked to end now
    /// (`POST /stop`); 0: none.
    stop_at: AtomicU64,
    /// `agent --generate --source`: this host's addresses its steps connect from.
    source: Option<Arc<Sources>>,
}

impl Generator {
    pub fn new(allowed: Vec<AllowedTarget>, limits: Limits) -> Result<Generator, String> {
        if allowed.is_empty() {
            return Err(
                "agent --generate: give the targets it may load (--allow-target HOST:PORT)".into(),
            );
        }
        if !(limits.max_rate > 0.0 && limits.max_rate.is_finite())
            || limits.max_duration.is_zero()
            || limits.max_connections == 0
        {
            return Err("agent --generate: the limits must be above zero".into());
        }
        Ok(Generator {
            allowed,
            limits,
            host: crate::store::host::host_info().hostname,
            busy: Mutex::new(()),
            stop_at: AtomicU64::new(0),
            source: None,
        })
    }

    /// Its steps connect from these addresses of this host (`--source`), checked once here.
    pub fn with_source(mut self, source: Option<Sources>) -> Result<Generator, String> {
        if let Some(s) = &source {
            s.probe()?;
        }
        self.source = source.map(Arc::new);
        Ok(self)
    }

    fn info(&self) -> GeneratorInfo {
        GeneratorInfo {
            protocol: PROTOCOL,
            host: self.host.clone(),
            allowed_targets: self.allowed.iter().map(|a| a.given.clone()).collect(),
            max_rate: self.limits.max_rate,
            max_duration_ms: self.limits.max_duration.as_millis() as u64,
            max_connections: self.limits.max_connections,
            cores: cores(),
        }
    }

    /// Checks a step against the protocol, the allow-list and the limits; the engine's
    /// configuration for it when it passes, else (status, why).
    pub fn admit(&self, plan: &StepPlan) -> Result<crate::engine::EngineConfig, (u16, String)> {
        let unprocessable = |why: String| (422, why);
        if plan.protocol != PROTOCOL {
            return Err((
                400,
                format!(
                    "protocol {} (this agent speaks {PROTOCOL}): run the same overload version on both sides",
                    plan.protocol
                ),
            ));
        }
        let seg = plan.segment().map_err(unprocessable)?;
        let mut specs = Vec::with_capacity(plan.requests.len());
        for r in &plan.requests {
            specs.push(r.spec().map_err(unprocessable)?);
        }
        if specs.is_empty() {
            return Err(unprocessable("the step has no request".into()));
        }
        // Resolved here, once: the addresses checked are the ones the engine connects to.
        let mut mix = Mix::of(specs, plan.pick.pick()).map_err(|e| (422, e.to_string()))?;
        mix.ok_status = plan.ok_status;
        for (i, addr) in mix.addrs.iter().enumerate() {
            if !self.allowed.iter().any(|a| a.addrs.contains(addr)) {
                let url = mix
                    .first_request_to(i)
                    .and_then(|r| plan.requests.get(r))
                    .map_or("?", |r| r.url.as_str());
                return Err((
                    403,
                    format!(
                        "target {addr} (URL '{url}') is not allowed here (allowed: {})",
                        self.allowed_list()
                    ),
                ));
            }
        }
        let mut load = plan.load.load();
        // The command line's checks of a load and of its split, in the same functions
        // (`base_config_of` checks the load again, with the rest of the plan).
        let usage = |e: crate::Error| unprocessable(e.to_string());
        crate::usecase::config::check_load(&load).map_err(usage)?;
        let split = crate::usecase::config::SegmentConfig {
            segment: seg,
            start_at_ms: None,
        };
        split.validate(Duration::ZERO, &[load]).map_err(usage)?;
        self.check_limits(plan, load, seg)?;
        if let Load::Open {
            max_connections, ..
        } = &mut load
        {
            // The whole plan's ceiling such that this segment's share stays within the limit.
            let cap = self
                .limits
                .max_connections
                .saturating_mul(seg.count as usize);
            *max_connections = (*max_connections).min(cap);
        }
        let conn = plan.conn.conn();
        let (mut cfg, _urls) =
            base_config_of(mix, &conn, load, Some(plan.duration()), None, plan.warmup())
                .map_err(|e| unprocessable(e.to_string()))?;
        cfg.segment = seg;
        if let Some(s) = &self.source {
            s.check_families(&cfg.addrs).map_err(unprocessable)?;
            cfg.source = Some(Arc::clone(s));
        }
        // The agent's cores at most: more threads than cores only adds scheduling noise.
        cfg.threads = cfg.threads.min(cores()).max(1);
        Ok(cfg)
    }

    fn allowed_list(&self) -> String {
        self.allowed
            .iter()
            .map(|a| a.given.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn check_limits(
        &self,
        plan: &StepPlan,
        load: Load,
        seg: crate::plan::Segment,
    ) -> Result<(), (u16, String)> {
        let l = &self.limits;
        let over = |why: String| Err((422, format!("{why} (limits set by this agent's owner)")));
        let show = crate::units::fmt_duration;
        match load {
            // The open loop's pool is a ceiling (connections open as arrivals need them),
            // capped in `admit` rather than refused: sweeps default to a large ceiling that
            // no step reaches.
            Load::Open { rate, .. } => {
                let part = rate / f64::from(seg.count);
                if !(part.is_finite() && part > 0.0) {
                    return Err((422, format!("rate {rate}: not a rate")));
                }
                if part > l.max_rate * (1.0 + 1e-9) {
                    return over(format!(
                        "rate {part:.1} req/s for this generator is above --max-rate {}",
                        l.max_rate
                    ));
                }
            }
            Load::Closed { users, .. } => {
                let part = seg.share(users as u64);
                if part > l.max_connections as u64 {
                    return over(format!(
                        "{part} users for this generator are above --max-connections {}",
                        l.max_connections
                    ));
                }
            }
        }
        let length = plan.warmup() + plan.duration();
        if plan.duration().is_zero() {
            return Err((422, "the step's duration is zero".into()));
        }
        if length > l.max_duration {
            return over(format!(
                "warm-up + step {} is above --max-duration {}",
                show(length),
                show(l.max_duration)
            ));
        }
        let timeout = plan.conn.conn().timeout;
        if timeout > l.max_duration {
            return over(format!(
                "request timeout {} is above --max-duration {}",
                show(timeout),
                show(l.max_duration)
            ));
        }
        let now = crate::clock::unix_ms();
        if plan.start_at_unix_ms > now + MAX_LEAD.as_millis() as u64 {
            return Err((
                422,
                format!(
                    "the step starts {:.0} s ahead (at most {} s): are the clocks in sync?",
                    (plan.start_at_unix_ms - now) as f64 / 1e3,
                    MAX_LEAD.as_secs()
                ),
            ));
        }
        Ok(())
    }

    /// Runs one admitted step: waits for its start, runs it, answers its part. A stop for
    /// it (`POST /stop`) ends it at the engine's next tick, answered with what was measured.
    fn run(&self, plan: &StepPlan, cfg: crate::engine::EngineConfig) -> Reply {
        let asked = || self.stop_at.load(Ordering::SeqCst) == plan.start_at_unix_ms;
        while crate::clock::unix_ms() < plan.start_at_unix_ms && !asked() {
            let left = plan
                .start_at_unix_ms
                .saturating_sub(crate::clock::unix_ms());
            std::thread::sleep(Duration::from_millis(left.min(50)));
        }
        let clock = RunClock::at(plan.run_start_unix_ms);
        let load = cfg.load;
        let mut on_tick = |ctl: &crate::engine::Control, _| {
            if asked() {
                ctl.stop.store(true, Ordering::Relaxed);
            }
        };
        match run_step(&cfg, load, plan.index, &clock, None, &mut on_tick) {
            Err(e) => Reply::text(500, &format!("the step failed here: {e}")),
            Ok(r) => {
                let answer = StepAnswer {
                    protocol: PROTOCOL,
                    host: self.host.clone(),
                    record: r.record,
                    series: r.series,
                    notes: r.notes,
                    interrupted: r.interrupted,
                };
                match serde_json::to_vec(&answer) {
                    Ok(b) => Reply::json(b),
                    Err(e) => Reply::text(500, &format!("cannot encode the answer: {e}")),
                }
            }
        }
    }
}

impl Generator {
    /// `POST /stop`: the step named ends at the engine's next tick (its own exchange answers
    /// with what was measured). Kept even when that step is not running yet (its plan may
    /// still be on its way); naming the step's start keeps it from ending any other.
    fn stop(&self, body: &[u8]) -> Reply {
        let stop: StopStep = match serde_json::from_slice(body) {
            Ok(s) => s,
            Err(e) => return Reply::text(400, &format!("not a stop request: {e}")),
        };
        self.stop_at.store(stop.start_at_unix_ms, Ordering::SeqCst);
        Reply::text(200, "stopping")
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl Extension for Generator {
    fn max_body(&self) -> usize {
        MAX_PLAN
    }

    fn post(&self, path: &str, body: &[u8]) -> Reply {
        if path == "/stop" {
            return self.stop(body);
        }
        if path != "/step" {
            return Reply::text(404, "not found (POST /step, POST /stop)");
        }
        let plan: StepPlan = match serde_json::from_slice(body) {
            Ok(p) => p,
            Err(e) => return Reply::text(400, &format!("not a step plan: {e}")),
        };
        let Ok(_running) = self.busy.try_lock() else {
            return Reply::text(409, "busy: a step is already running (one at a time)");
        };
        match self.admit(&plan) {
            Err((status, why)) => Reply::text(status, &format!("refused: {why}")),
            Ok(cfg) => self.run(&plan, cfg),
        }
    }

    fn get(&self, path: &str) -> Option<Reply> {
        (path == "/generator").then(|| match serde_json::to_vec(&self.info()) {
            Ok(b) => Reply::json(b),
            Err(e) => Reply::text(500, &format!("cannot encode: {e}")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scale::wire::{WireArrival, WireConn, WireLoad, WirePick, WireRequest};

    fn generator(limits: Limits) -> Generator {
        Generator::new(vec![allow_target("127.0.0.1:8080").unwrap()], limits).unwrap()
    }

    fn plan(url: &str, rate: f64, count: u32) -> StepPlan {
        StepPlan {
            protocol: PROTOCOL,
            requests: vec![WireRequest {
                method: "GET".into(),
                url: url.into(),
                headers: Vec::new(),
                body_base64: None,
            }],
            pick: WirePick::Sequence,
            load: WireLoad::Open {
                rate,
                arrival: WireArrival::Constant,
                max_connections: 100,
            },
            conn: WireConn::of(&Default::default()).unwrap(),
            warmup_ms: 1000,
            duration_ms: 5000,
            index: 0,
            segment_index: 0,
            segment_count: count,
            start_at_unix_ms: crate::clock::unix_ms(),
            run_start_unix_ms: crate::clock::unix_ms(),
            ok_status: Default::default(),
        }
    }

    fn refusal(g: &Generator, p: &StepPlan) -> (u16, String) {
        g.admit(p).expect_err("refused")
    }

    #[test]
    fn targets_outside_the_allow_list_are_refused() {
        let g = generator(Limits::default());
        assert!(g.admit(&plan("http://127.0.0.1:8080/x", 100.0, 1)).is_ok());
        for url in [
            "http://127.0.0.1:8081/",
            "http://127.0.0.2:8080/",
            "http://[::1]:8080/",
        ] {
            let (status, why) = refusal(&g, &plan(url, 100.0, 1));
            assert_eq!(status, 403, "{url}: {why}");
            assert!(
                why.contains("not allowed here") && why.contains("127.0.0.1:8080"),
                "{why}"
            );
        }
        // https:// to an allowed address passes (the allow-list is addresses, not schemes);
        // to another one it is refused as plain http is.
        let cfg = g
            .admit(&plan("https://127.0.0.1:8080/", 100.0, 1))
            .expect("https to an allowed target");
        assert!(cfg.tls.is_some());
        assert_eq!(
            refusal(&g, &plan("https://127.0.0.1:8443/", 100.0, 1)).0,
            403
        );
    }

    #[test]
    fn tls_options_arrive_as_values_and_bad_ones_are_refused() {
        let g = generator(Limits::default());
        let mut p = plan("https://127.0.0.1:8080/", 100.0, 1);
        p.conn.tls.ca_pem = Some("not a certificate".into());
        let (status, why) = refusal(&g, &p);
        assert_eq!(status, 422);
        assert!(why.contains("--cacert"), "{why}");
        // TLS options on a plain-http step are the plan's mistake, said as for one host.
        let mut p = plan("http://127.0.0.1:8080/", 100.0, 1);
        p.conn.tls.insecure = true;
        let (status, why) = refusal(&g, &p);
        assert_eq!(status, 422);
        assert!(why.contains("need https://"), "{why}");
    }

    #[test]
    fn steps_beyond_the_limits_are_refused_with_the_limit_named() {
        let g = generator(Limits {
            max_rate: 1000.0,
            max_duration: Duration::from_secs(10),
            max_connections: 50,
        });
        // 1500 req/s over 2 generators is 750 each: within 1000.
        assert!(g.admit(&plan("http://127.0.0.1:8080/", 1500.0, 2)).is_ok());
        let (s, why) = refusal(&g, &plan("http://127.0.0.1:8080/", 1500.0, 1));
        assert_eq!(s, 422);
        assert!(why.contains("--max-rate 1000"), "{why}");
        let mut long = plan("http://127.0.0.1:8080/", 100.0, 1);
        long.duration_ms = 10_000;
        let (_, why) = refusal(&g, &long);
        assert!(why.contains("--max-duration 10s"), "{why}");
        let mut wide = plan("http://127.0.0.1:8080/", 100.0, 1);
        wide.load = WireLoad::Closed {
            users: 51,
            think_ms: (0, 0),
        };
        let (_, why) = refusal(&g, &wide);
        // The open loop's pool is a ceiling: capped to the limit, not refused.
        let cfg = g.admit(&plan("http://127.0.0.1:8080/", 100.0, 1)).unwrap();
        assert!(
            matches!(
                cfg.load,
                Load::Open {
                    max_connections: 50,
                    ..
                }
            ),
            "{:?}",
            cfg.load
        );
        assert!(
            why.contains("51 users") && why.contains("--max-connections 50"),
            "{why}"
        );
        let mut far = plan("http://127.0.0.1:8080/", 100.0, 1);
        far.start_at_unix_ms += 3_600_000;
        assert!(refusal(&g, &far).1.contains("ahead"));
        let mut old = plan("http://127.0.0.1:8080/", 100.0, 1);
        old.protocol = PROTOCOL + 1;
        assert_eq!(refusal(&g, &old).0, 400);
    }

    /// Defect 16: a step passes the checks of the command line, in the same functions: a
    /// header that would split the request or reframe it, no user, a reversed think range,
    /// no connection, a segment left without a user.
    #[test]
    fn a_step_passes_the_same_checks_as_the_command_line() {
        let g = generator(Limits::default());
        let url = "http://127.0.0.1:8080/";
        let header = |n: &str, v: &str| {
            let mut p = plan(url, 100.0, 1);
            p.requests[0].headers = vec![(n.into(), v.into())];
            p
        };
        let closed = |users: usize, think_ms: (u64, u64), count: u32| {
            let mut p = plan(url, 100.0, count);
            p.load = WireLoad::Closed { users, think_ms };
            // The last segment: the one a share rounds down for.
            p.segment_index = count - 1;
            p
        };
        let mut no_pool = plan(url, 100.0, 1);
        no_pool.load = WireLoad::Open {
            rate: 100.0,
            arrival: WireArrival::Constant,
            max_connections: 0,
        };
        for (p, needle) in [
            (
                header("X-A", "a\r\n\r\nGET /smuggled HTTP/1.1"),
                "control character",
            ),
            (header("X-A\r\nX-B", "1"), "invalid name"),
            (header("Transfer-Encoding", "chunked"), "set by overload"),
            (header("Content-Length", "0"), "set by overload"),
            (closed(0, (0, 0), 1), "--users 0"),
            (closed(5, (200, 100), 1), "--think 200ms..100ms"),
            (closed(1, (0, 0), 2), "leave this segment none"),
            (no_pool, "--connections 0"),
        ] {
            let (status, why) = refusal(&g, &p);
            assert_eq!(status, 422, "{needle}: {why}");
            assert!(why.contains(needle), "{needle}: {why}");
            assert!(
                !why.contains('\n') && !why.contains('\r'),
                "one line: {why:?}"
            );
        }
        // Headers within the rules pass, as they would on the command line.
        assert!(g.admit(&header("X-Trace", "abc\tdef")).is_ok());
    }

    #[test]
    fn allow_targets_parse_and_resolve() {
        let a = allow_target("localhost:8080").unwrap();
        assert!(a
            .addrs
            .iter()
            .all(|x| x.port() == 8080 && x.ip().is_loopback()));
        assert_eq!(allow_target("[::1]:80").unwrap().addrs[0].port(), 80);
        for bad in ["8080", "host:", "host:0", ":80", "127.0.0.1:http"] {
            assert!(
                allow_target(bad).unwrap_err().starts_with("--allow-target"),
                "{bad}"
            );
        }
        assert!(Generator::new(Vec::new(), Limits::default()).is_err());
    }
}
