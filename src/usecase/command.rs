//! A configuration as the `overload …` command line that does the same (what an
//! experiment's `--dry-run` and its state file show): the `Display` of each configuration is
//! built here, with every value written so that it parses back to the same value.
use super::config::{ConnConfig, OpenLoopConfig, Output, RequestConfig, SegmentConfig, StepTiming};
use crate::engine::{Arrival, Pick};
use crate::observe::ObserveArgs;
use std::fmt;
use std::time::Duration;

/// An argument list being built, shown shell-quoted after `overload`.
#[derive(Default)]
pub struct Argv(pub Vec<String>);

impl Argv {
    pub fn new(command: &str) -> Argv {
        Argv(vec!["overload".into(), command.into()])
    }
    pub fn arg(&mut self, a: impl Into<String>) -> &mut Self {
        self.0.push(a.into());
        self
    }
    pub fn opt(&mut self, flag: &str, value: impl Into<String>) -> &mut Self {
        self.0.push(flag.into());
        self.0.push(value.into());
        self
    }
}

impl fmt::Display for Argv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&crate::units::shell_join(&self.0))
    }
}

/// A duration as a command-line value that parses back exactly.
pub fn dur(d: Duration) -> String {
    if d.subsec_nanos() % 1_000_000 == 0 {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}us", d.as_micros())
    }
}

pub fn pick_name(p: Pick) -> &'static str {
    match p {
        Pick::Random => "random",
        Pick::Sequence => "sequence",
        Pick::Weighted => "weighted",
    }
}

pub fn arrival_name(a: Arrival) -> &'static str {
    match a {
        Arrival::Constant => "constant",
        Arrival::Poisson => "poisson",
    }
}

/// Request and connection flags (those of every load-sending command).
pub fn request(a: &mut Argv, r: &RequestConfig, c: &ConnConfig) {
    for u in &r.urls {
        a.arg(u.clone());
    }
    if let Some(f) = &r.urls_file {
        a.opt("--urls", f.display().to_string());
    }
    a.opt("--pick", pick_name(r.pick));
    if r.method != RequestConfig::default().method {
        a.opt("-X", r.method.clone());
    }
    for h in &r.headers {
        a.opt("-H", h.clone());
    }
    if let Some(b) = &r.body {
        a.opt("--body", b.clone());
    }
    if !r.ok_status.is_default() {
        a.opt("--ok-status", r.ok_status.to_string());
    }
    if let Some(s) = &r.scenario {
        let file = s.file.display().to_string();
        match s.format {
            crate::scenario::Format::Toml => {
                a.opt("--scenario", file);
            }
            crate::scenario::Format::Har(o) => {
                a.opt("--har", file);
                if o.assets {
                    a.arg("--har-assets");
                }
                if o.allow_unsafe_methods {
                    a.arg("--allow-unsafe-methods");
                }
            }
            crate::scenario::Format::Wsesslog {
                allow_unsafe_methods,
            } => {
                a.opt("--wsesslog", file);
                if allow_unsafe_methods {
                    a.arg("--allow-unsafe-methods");
                }
            }
        }
        if s.max_body_capture != crate::scenario::DEFAULT_MAX_BODY_CAPTURE {
            a.opt("--max-body-capture", s.max_body_capture.to_string());
        }
    }
    if let Some(l) = &r.access_log {
        a.opt("--access-log", l.path.display().to_string());
        if let Some(f) = l.format {
            a.opt("--log-format", f.as_str());
        }
        if l.allow_unsafe_methods {
            a.arg("--allow-unsafe-methods");
        }
        if let Some(x) = l.replay_speed {
            a.opt("--replay-speed", x.to_string());
        }
    }
    let d = ConnConfig::default();
    if c.http != d.http {
        a.opt("--http", c.http.as_str().to_string());
    }
    if c.streams != d.streams {
        a.opt("--streams", c.streams.to_string());
    }
    if !c.keep_alive {
        a.arg("--no-keep-alive");
    }
    if let Some(k) = c.calls_per_connection {
        a.opt("--calls-per-connection", k.to_string());
    }
    a.opt("--timeout", dur(c.timeout));
    a.opt("--connect-timeout", dur(c.connect_timeout));
    if let Some(t) = c.threads {
        a.opt("--threads", t.to_string());
    }
    if c.pacing_slack != d.pacing_slack {
        a.opt("--pacing-slack", dur(c.pacing_slack));
    }
    if c.seed != d.seed {
        a.opt("--seed", c.seed.to_string());
    }
    if c.io != d.io {
        a.opt("--io", c.io.name().to_string());
    }
    let t = &c.tls;
    for (flag, file) in [
        ("--cacert", &t.cacert),
        ("--client-cert", &t.client_cert),
        ("--client-key", &t.client_key),
    ] {
        if let Some(f) = file {
            a.opt(flag, f.display().to_string());
        }
    }
    if t.insecure {
        a.arg("--insecure");
    }
    if let Some(v) = t.version {
        let v = match v {
            crate::engine::tls::TlsVersion::V12 => "1.2",
            crate::engine::tls::TlsVersion::V13 => "1.3",
        };
        a.opt("--tls-version", v.to_string());
    }
    if !t.resumption {
        a.opt("--tls-resumption", "off".to_string());
    }
}

/// `--segment` and `--start-at`, when the plan is split or synchronized.
pub fn segment(a: &mut Argv, s: &SegmentConfig) {
    if !s.segment.is_whole() {
        a.opt("--segment", s.segment.to_string());
    }
    if let Some(ms) = s.start_at_ms {
        a.opt("--start-at", format!("{}.{:03}", ms / 1000, ms % 1000));
    }
}

pub fn think(a: &mut Argv, think: Option<(Duration, Duration)>) {
    if let Some((lo, hi)) = think {
        a.opt("--think", format!("{}..{}", dur(lo), dur(hi)));
    }
}

pub fn open_loop(a: &mut Argv, o: &OpenLoopConfig) {
    a.opt("--arrival", arrival_name(o.arrival));
    a.opt("--connections", o.connections.to_string());
    if o.max_sessions != OpenLoopConfig::default().max_sessions {
        a.opt("--max-sessions", o.max_sessions.to_string());
    }
}

pub fn observe(a: &mut Argv, o: &ObserveArgs) {
    for w in &o.watch {
        a.opt("--watch", w.clone());
    }
    for u in &o.fpm_status {
        a.opt("--fpm-status", u.clone());
    }
    a.opt("--sample-every", o.sample_every.clone());
    for g in &o.agent {
        a.opt("--agent", g.clone());
    }
    if let Some(f) = &o.agent_token_file {
        a.opt("--agent-token-file", f.display().to_string());
    }
    if let Some(p) = &o.observe_port {
        a.opt("--observe-port", p.clone());
    }
    for u in &o.apache_status {
        a.opt("--apache-status", u.clone());
    }
    if let Some(m) = &o.mysql {
        a.opt("--mysql", m.clone());
    }
    if let Some(f) = &o.mysql_password_file {
        a.opt("--mysql-password-file", f.display().to_string());
    }
    if let Some(l) = &o.link_speed {
        a.opt("--link-speed", l.clone());
    }
}

pub fn timing(a: &mut Argv, t: &StepTiming, slo: Option<&str>, o: &Output) {
    a.opt("--warmup", dur(t.warmup));
    a.opt("--step", dur(t.step));
    a.opt("--rest", dur(t.rest));
    if let Some(s) = slo {
        a.opt("--slo", s);
    }
    output(a, o);
}

/// The options of the results folder and of how the run is shown (every run kind).
pub fn output(a: &mut Argv, o: &Output) {
    if let Some(d) = &o.out {
        a.opt("--out", d.display().to_string());
    }
    if let Some(n) = &o.name {
        a.opt("--name", n.clone());
    }
    if let Some(p) = o.live_port {
        a.opt("--live-port", p.to_string());
    }
    if let Some(l) = o.live_listen {
        a.opt("--live-listen", l.to_string());
    }
    if let Some(p) = &o.hdr_log {
        a.opt("--hdr-log", p.display().to_string());
    }
    if let Some(t) = &o.title {
        a.opt("--title", t.clone());
    }
    for t in &o.push {
        let flag = match t {
            crate::push::Target::RemoteWrite(_) => "--prometheus-remote-write",
            crate::push::Target::Otlp(_) => "--otlp",
        };
        a.opt(flag, t.shown());
    }
    if o.quiet {
        a.arg("-q");
    }
}
