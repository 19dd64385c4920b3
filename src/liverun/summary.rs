//! The terminal summary of a run.
use crate::engine::{EngineConfig, Load, Outcome};
use crate::metrics::{ErrorKind, LatencyStats, Summary, TlsReason};
use crate::report::style;
use crate::units::{fmt_duration, fmt_ms, fmt_num};
use std::fmt::Write;

/// One line describing the plan, printed before the run starts.
pub fn plan_line(cfg: &EngineConfig, urls: &[String]) -> String {
    let think = cfg.think();
    let load = match cfg.load {
        // A recorded schedule: its arrivals keep the log's gaps, whatever --arrival says.
        Load::Open {
            max_connections, ..
        } if cfg.replay.is_some() => {
            let r = cfg.replay.as_deref().expect("a replay");
            format!(
                "open loop, replaying {} recorded arrivals over {} (mean {} req/s), up to {max_connections} connections",
                fmt_num(r.at_ns.len() as f64),
                fmt_duration(std::time::Duration::from_nanos(r.span_ns)),
                fmt_num(r.rate())
            )
        }
        Load::Open { rate, arrival, .. } if cfg.scenario.is_some() => format!(
            "open loop, {} sessions/s {} arrivals, up to {} sessions in flight{}",
            fmt_num(rate),
            arrival_name(arrival),
            cfg.max_sessions,
            if think.none() {
                String::new()
            } else {
                format!(", {}", think_text(&think))
            }
        ),
        // A ramp (--stages): its rate moves, peak and mean said.
        Load::Open {
            rate,
            arrival,
            max_connections,
        } if cfg.ramp.is_some() => format!(
            "open loop on stages, up to {} req/s (mean {}) {} arrivals, up to {max_connections} connections",
            fmt_num(cfg.ramp.as_deref().map_or(rate, |p| p.peak())),
            fmt_num(rate),
            arrival_name(arrival)
        ),
        Load::Open {
            rate,
            arrival,
            max_connections,
        } => format!(
            "open loop, {} req/s {} arrivals, up to {max_connections} connections",
            fmt_num(rate),
            arrival_name(arrival)
        ),
        Load::Closed { users, .. } if cfg.ramp.is_some() => {
            format!(
                "closed loop on stages, up to {users} users, {}",
                think_text(&think)
            )
        }
        Load::Closed { users, .. } => {
            format!("closed loop, {users} users, {}", think_text(&think))
        }
    };
    let mut bound = Vec::new();
    if let Some(d) = cfg.duration {
        bound.push(fmt_duration(d));
    }
    if let Some(n) = cfg.max_requests {
        bound.push(format!("{n} requests"));
    }
    let warm = if cfg.warmup.is_zero() {
        String::new()
    } else {
        format!(" after {} warm-up", fmt_duration(cfg.warmup))
    };
    let mut conn = if cfg.keep_alive {
        "keep-alive"
    } else {
        "new connection per request"
    }
    .to_string();
    if let Some(s) = &cfg.source {
        conn += &format!(" from {} source addresses ({})", s.len(), s.given());
    }
    // A backend that cannot run is the run's own error; the plan line just leaves it out.
    let io = match cfg.backend() {
        Ok(b) => format!("I/O {}; ", crate::engine::io::describe(b, cfg.io)),
        Err(_) => String::new(),
    };
    let target = match urls {
        [one] => one.clone(),
        many => format!("{} URLs", many.len()),
    };
    format!(
        "overload: {load}; {}{warm}; {} threads, {conn}; {}; {io}{target}",
        bound.join(" or "),
        cfg.threads,
        cfg.protocol_choice.describe()
    )
}

fn arrival_name(a: crate::engine::Arrival) -> &'static str {
    match a {
        crate::engine::Arrival::Constant => "constant",
        crate::engine::Arrival::Poisson => "poisson",
    }
}

/// The think time as the plan states it: the run's `--think`, or the scenario's steps' own
/// (their range and mean) when some set one.
pub fn think_text(t: &crate::engine::Think) -> String {
    let range = if t.lo == t.hi {
        fmt_duration(t.lo)
    } else {
        format!("{}..{}", fmt_duration(t.lo), fmt_duration(t.hi))
    };
    if t.none() {
        "no think time".to_string()
    } else if t.from_scenario {
        format!(
            "think {range} (the scenario's, mean {})",
            // Whole milliseconds: a think time's mean needs no more.
            fmt_duration(std::time::Duration::from_millis(
                (t.mean.as_secs_f64() * 1e3).round() as u64
            ))
        )
    } else {
        format!("think {range}")
    }
}

fn fmt_bytes(b: f64) -> String {
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.2} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{b:.0} B")
    }
}

fn lat_row(out: &mut String, name: &str, l: &LatencyStats) {
    if l.count == 0 {
        let _ = writeln!(out, "  {name:<15} -");
        return;
    }
    let _ = writeln!(
        out,
        "  {name:<15}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}",
        fmt_ms(l.mean),
        fmt_ms(l.p50),
        fmt_ms(l.p90),
        fmt_ms(l.p95),
        fmt_ms(l.p99),
        fmt_ms(l.p999),
        fmt_ms(l.max)
    );
}

/// The summary printed after a run.
pub fn summary(s: &Summary, outcome: &Outcome, cfg: &EngineConfig) -> String {
    let mut o = String::new();
    if outcome.interrupted {
        let _ = writeln!(
            o,
            "\ninterrupted: the figures cover what was done before the signal"
        );
    }
    let offered = match (s.offered_rate, s.users) {
        // Open loop with a scenario: the rate counts sessions (httperf's --wsess).
        (Some(r), _) if s.sessions.is_some() => format!("offered {} sessions/s", fmt_num(r)),
        (Some(r), _) => format!("offered {} req/s", fmt_num(r)),
        (_, Some(u)) => format!("offered {u} users"),
        _ => String::new(),
    };
    let _ = writeln!(o, "\n  {offered}, measured over {:.2}s", s.duration_s);
    let _ = writeln!(
        o,
        "  throughput     {}   goodput {:.1}/s (2xx/3xx)",
        style::bold(&format!("{:.1} responses/s", s.throughput)),
        s.goodput
    );
    if let Some(x) = &s.sessions {
        let _ = writeln!(
            o,
            "  sessions       {} started, {} completed ({:.1}/s), {} failed, {} dropped (--max-sessions in flight)",
            x.started,
            x.completed,
            x.completed_per_s,
            x.failed,
            x.dropped
        );
    }
    o.push_str(&requests_line(s));
    if let Some(n) = crate::analysis::not_sent(s, &crate::runner::step::generator_of(outcome)) {
        o.push_str(&not_sent_line(&n));
    }
    let _ = writeln!(
        o,
        "  transfer       {}/s in ({} total), {} out; {} connections opened",
        fmt_bytes(s.bytes_in_per_s),
        fmt_bytes(s.bytes_in as f64),
        fmt_bytes(s.bytes_out as f64),
        s.connections_opened
    );
    o.push_str(&connects_line(s));
    let _ = writeln!(
        o,
        "\n  {:<15}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}{:>9}",
        "", "mean", "p50", "p90", "p95", "p99", "p99.9", "max"
    );
    lat_row(&mut o, "response time", &s.response_time_ms);
    lat_row(&mut o, "service time", &s.service_time_ms);
    // Send lag is the open loop's lateness against its schedule; a closed loop has no
    // schedule, so the row would only ever be empty.
    if matches!(cfg.load, Load::Open { .. }) {
        lat_row(&mut o, "send lag", &s.send_lag_ms);
    }
    lat_row(&mut o, "first byte", &s.first_byte_ms);
    lat_row(&mut o, "connect", &s.connect_time_ms);
    if let Some(t) = &s.tls {
        // HTTP/3's handshake is QUIC's (TLS 1.3 inside it, no TCP connect before it).
        let label = if s.quic.is_some() {
            "QUIC handshake"
        } else {
            "TLS handshake"
        };
        lat_row(&mut o, label, &t.handshake_time_ms);
        o.push_str(&tls_line(t));
    }
    if let Some(q) = &s.quic {
        o.push_str(&quic_line(q));
    }
    let statuses: Vec<String> = s
        .statuses
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    let _ = writeln!(
        o,
        "\n  statuses       {}",
        if statuses.is_empty() {
            "none".into()
        } else {
            statuses.join(", ")
        }
    );
    if !s.protocols.is_empty() || s.protocol.is_some() {
        let p: Vec<String> = s
            .protocols
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        // The version and how it was chosen, then the requests sent by version.
        let line = match (&s.protocol, p.is_empty()) {
            (Some(c), true) => c.describe(),
            (Some(c), false) => format!("{} (sent {})", c.describe(), p.join(", ")),
            (None, _) => p.join(", "),
        };
        let _ = writeln!(o, "  protocol       {line}");
    }
    let _ = writeln!(
        o,
        "  I/O            {}",
        crate::engine::io::describe(outcome.io, cfg.io)
    );
    o.push_str(&errors_lines(s));
    o.push_str(&crate::report::names::table(s));
    for w in warnings(s, outcome, cfg) {
        let _ = writeln!(o, "  {} {w}", style::yellow("!"));
    }
    o
}

/// Handshakes full and resumed, and why some failed: what TLS cost apart from the requests.
pub fn tls_line(t: &crate::metrics::TlsSummary) -> String {
    let failures: Vec<String> = t
        .failures
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    let started = if t.handshakes_started > 0 {
        format!("{} handshakes started: ", t.handshakes_started)
    } else {
        String::new()
    };
    format!(
        "\n  TLS            {started}{} full, {} resumed{}\n",
        t.handshakes_full,
        t.handshakes_resumed,
        if failures.is_empty() {
            String::new()
        } else {
            format!(", {} failed ({})", t.failed_count(), failures.join(", "))
        }
    )
}

/// HTTP/3: QUIC's packets per answer, and the 0-RTT handshakes.
pub fn quic_line(q: &crate::metrics::QuicSummary) -> String {
    let early = if q.zero_rtt_accepted > 0 {
        format!("; 0-RTT accepted on {} handshakes", q.zero_rtt_accepted)
    } else {
        String::new()
    };
    format!(
        "  QUIC           packets per answer: {:.2} sent, {:.2} received, {:.3} lost \
         ({} lost of {} sent){early}\n",
        q.packets_sent_per_response,
        q.packets_received_per_response,
        q.packets_lost_per_response,
        q.packets_lost,
        q.packets_sent,
    )
}

/// Connection attempts, when some did not come up: how many were made and how they failed,
/// and the requests the connect backoff failed without an attempt. Empty when every attempt
/// connected (the transfer line's "connections opened" says it all).
pub fn connects_line(s: &Summary) -> String {
    let Some(c) = &s.connects else {
        return String::new();
    };
    let tls_failed = s.tls.as_ref().map_or(0, |t| t.failed_count());
    if c.failed_count() + tls_failed + c.held_by_backoff == 0 {
        return String::new();
    }
    let mut parts: Vec<String> = c.failed.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    if tls_failed > 0 {
        parts.push(format!("TLS handshake: {tls_failed}"));
    }
    let held = if c.held_by_backoff > 0 {
        format!(
            "; {} requests failed at once, the connect backoff holding (every attempt of the \
             last second had failed)",
            c.held_by_backoff
        )
    } else {
        String::new()
    };
    format!(
        "  connects       {} attempts, {} failed ({}){held}\n",
        c.attempts,
        c.failed_count() + tls_failed,
        parts.join(", ")
    )
}

/// The count line: transport errors and non-2xx/3xx answers side by side (as wrk does), so a
/// run of 503s does not read as error-free. With `--ok-status`, the answers outside its list.
pub fn requests_line(s: &Summary) -> String {
    let non_ok = s.responses.saturating_sub(s.ok_count());
    let not_ok = if s.ok_status.is_default() {
        "non-2xx/3xx answers".to_string()
    } else {
        format!("answers outside --ok-status {}", s.ok_status)
    };
    let pct = |n: u64| {
        if s.requests > 0 {
            n as f64 * 100.0 / s.requests as f64
        } else {
            0.0
        }
    };
    // A scenario's failed checks are answers judged wrong, not transport errors.
    let checks: u64 = ErrorKind::ALL
        .iter()
        .filter(|k| k.is_check())
        .map(|&k| s.errors_of(k))
        .sum();
    let transport = s.error_count.saturating_sub(checks);
    format!(
        "  requests       {} sent, {} answered, {} transport errors ({:.2}%), {} {not_ok} ({:.2}%){}{}{}\n",
        s.sent,
        s.responses,
        transport,
        pct(transport),
        non_ok,
        pct(non_ok),
        if checks > 0 {
            format!(", {checks} failed scenario checks ({:.2}%)", pct(checks))
        } else {
            String::new()
        },
        if s.retries > 0 {
            format!(
                ", {} retried (kept-alive connection closed by the server)",
                s.retries
            )
        } else {
            String::new()
        },
        if s.interrupted_requests > 0 {
            format!(
                ", {} in flight at the interrupt (unanswered)",
                s.interrupted_requests
            )
        } else {
            String::new()
        }
    )
}

/// The arrivals never sent, apart from the server's answers: how many, of how many, why,
/// and whether the plan was carried out nevertheless.
pub fn not_sent_line(n: &crate::analysis::NotSent) -> String {
    let verdict = if n.plan_carried_out {
        String::new()
    } else {
        format!(
            "; the plan was not carried out (over {}% of its arrivals not sent)",
            crate::analysis::GENERATOR_UNSENT_SHARE * 100.0
        )
    };
    let line = format!(
        "{} of {} intended arrivals ({:.2}%): {}{verdict}",
        n.count,
        n.intended,
        n.share * 100.0,
        n.why
    );
    format!(
        "  not sent       {}\n",
        if n.plan_carried_out {
            line
        } else {
            style::red(&line)
        }
    )
}

/// The transport errors by kind, then the SLO's definition of an error stated once, with its
/// value for this run.
pub fn errors_lines(s: &Summary) -> String {
    let is_check = |k: &str| ErrorKind::from_name(k).is_some_and(ErrorKind::is_check);
    let errors: Vec<String> = s
        .errors
        .iter()
        .filter(|(k, _)| !is_check(k))
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    let checks: Vec<String> = s
        .errors
        .iter()
        .filter(|(k, _)| is_check(k))
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    let checks = if checks.is_empty() {
        String::new()
    } else {
        format!("  checks         {}\n", style::red(&checks.join(", ")))
    };
    // Of the requests (started): arrivals never sent are no answer of the server's (their
    // own line says so); an SLO's `errors` counts them too, as arrivals the plan meant to serve.
    let failed = if s.requests > 0 {
        s.requests.saturating_sub(s.ok_count()) as f64 / s.requests as f64
    } else {
        0.0
    };
    let failed_text = format!("{:.2}%", failed * 100.0);
    let slo = if s.unsent > 0 {
        format!(
            "; {:.2}% of the intended arrivals, those not sent included (what an SLO's `errors` counts)",
            crate::analysis::Slo::measure(crate::analysis::slo::Metric::Errors, s) * 100.0
        )
    } else {
        " (what an SLO's `errors` counts)".to_string()
    };
    format!(
        "  transport      {}\n{checks}  failed         {} of requests got no 2xx/3xx answer{slo}\n",
        if errors.is_empty() {
            "no errors".into()
        } else {
            style::red(&errors.join(", "))
        },
        if failed > 0.0 {
            style::red(&failed_text)
        } else {
            failed_text
        }
    )
}

/// The SLO verdict: a headline, then each condition with ✓ or ✗ and its measured value.
pub fn slo_lines(slo: &crate::analysis::Slo, s: &Summary) -> String {
    let checks = slo.check(s);
    let mut o = if checks.iter().all(|c| c.1) {
        format!("\n  SLO '{}' {}\n", slo.text, style::green("met"))
    } else {
        format!("\n  SLO '{}' {}\n", slo.text, style::red("FAILED"))
    };
    for (cond, ok, measured) in checks {
        let name = crate::analysis::Slo::metric_name(cond.metric);
        let _ = writeln!(
            o,
            "    {} {:<20} {name} = {measured}",
            style::mark(ok),
            cond.to_string()
        );
    }
    o
}

/// Things the user must know to trust (or not) the figures.
pub fn warnings(s: &Summary, outcome: &Outcome, cfg: &EngineConfig) -> Vec<String> {
    let mut w: Vec<String> = outcome.notes.clone();
    let stopped = outcome.recorder.users_stopped;
    if stopped > 0 {
        let users = s.users.unwrap_or(0);
        w.push(format!(
            "{stopped} of {users} users stopped at once: no file descriptor was left for their \
             connection; the figures are for the other {}",
            users.saturating_sub(stopped)
        ));
    }
    // Refused certificates: advice that fits each reason, and what was trusted.
    if let Some(t) = &s.tls {
        let cacert = cfg.tls.as_ref().is_some_and(|c| c.cacert());
        for r in TlsReason::ALL {
            if t.failures.contains_key(r.name()) {
                if let Some(a) = r.advice(cacert) {
                    w.push(format!("{} ({}): {a}", r.kind().name(), r.name()));
                }
            }
        }
    }
    for k in ErrorKind::ALL {
        if s.errors_of(k) > 0 {
            if let Some(a) = k.advice() {
                // The setting in force, next to the advice to change it.
                let now = match k {
                    ErrorKind::FdUnavail => format!(" (fd limit now {})", outcome.fd_limit),
                    ErrorKind::AddrUnavail => port_settings(),
                    _ => String::new(),
                };
                w.push(format!("{}: {a}{now}", k.name()));
            }
        }
    }
    if let Load::Open { .. } = cfg.load {
        // Sends more than 10 ms late (or never sent) mean the generator, not the server, was the limit.
        // (Arrivals never sent have their own line: `not sent`.)
        if s.send_lag_ms.p99 > 10.0 {
            w.push(format!(
                "send lag p99 {}: requests waited for a free connection or for the generator; \
                 response times include that wait (raise --connections or --threads if the server is not saturated)",
                fmt_ms(s.send_lag_ms.p99)
            ));
        }
    }
    w
}

/// The server side of a run, one line per source (host CPU, TCP, watched groups, FPM).
pub fn server(o: &crate::observe::StepObservation) -> String {
    let mut out = String::new();
    for src in &o.sources {
        let mut parts = Vec::new();
        if let Some(h) = &src.host {
            parts.push(format!(
                "CPU {:.0}% (max {:.0}%) of {} cores, load {:.1}",
                h.cpu_busy_pct.mean, h.cpu_busy_pct.max, h.cores, h.load1.max
            ));
        }
        if let Some(t) = &src.tcp {
            parts.push(format!(
                "port {}: ESTABLISHED max {:.0}, TIME_WAIT max {:.0}, listen overflows {}",
                t.port,
                t.state("ESTABLISHED").max,
                t.state("TIME_WAIT").max,
                t.listen_overflows
            ));
        }
        for g in &src.groups {
            parts.push(format!(
                "{}: {:.0} processes, CPU {:.0}%, RSS {}",
                g.name,
                g.processes.max,
                g.cpu_pct.mean,
                fmt_bytes(g.rss_bytes.max)
            ));
        }
        for f in &src.fpm {
            // The embedded target's pool speaks FPM's format but is not PHP-FPM.
            parts.push(format!(
                "{} ({}): busy max {:.0} of {:.0}",
                f.workers_label(),
                f.pool,
                f.active.max,
                f.total.max
            ));
        }
        if !parts.is_empty() {
            let _ = writeln!(out, "  server [{}]  {}", src.source, parts.join("; "));
        }
    }
    out
}

/// ` (ip_local_port_range now 32768 60999, tcp_tw_reuse 2)`, from /proc; empty if unreadable.
fn port_settings() -> String {
    let read = |name: &str| {
        std::fs::read_to_string(format!("/proc/sys/net/ipv4/{name}"))
            .ok()
            .map(|v| v.split_whitespace().collect::<Vec<_>>().join(" "))
    };
    match (read("ip_local_port_range"), read("tcp_tw_reuse")) {
        (Some(range), Some(reuse)) => {
            format!(" (ip_local_port_range now {range}, tcp_tw_reuse {reuse})")
        }
        (Some(range), None) => format!(" (ip_local_port_range now {range})"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run answered only with 503s: no transport error, yet every request failed. The old
    /// summary printed "errors none" here.
    #[test]
    fn non_2xx_answers_show_beside_transport_errors() {
        let mut s = crate::analysis::tests::summary(100.0, 100.0, 5.0, 0);
        s.statuses = [("503".to_string(), s.responses)].into();
        let line = requests_line(&s);
        assert!(
            line.contains("0 transport errors (0.00%), 1000 non-2xx/3xx answers (100.00%)"),
            "{line}"
        );
        let errs = errors_lines(&s);
        assert!(errs.contains("transport      no errors"), "{errs}");
        assert!(
            errs.contains("100.00% of requests got no 2xx/3xx answer"),
            "{errs}"
        );
        assert!(!errs.contains("none"), "{errs}");
    }

    /// `--source`: the plan line says how many addresses the connections come from.
    #[test]
    fn the_plan_line_names_the_source_addresses() {
        use crate::engine::source::Sources;
        use crate::engine::think::tests::config;
        let load = Load::Closed {
            users: 1_000_000,
            think: (std::time::Duration::ZERO, std::time::Duration::ZERO),
        };
        let url = ["http://h/".to_string()];
        let mut cfg = config(load, None);
        assert!(!plan_line(&cfg, &url).contains("source"));
        cfg.source = Some(std::sync::Arc::new(
            Sources::parse("127.0.0.1-127.0.0.250").unwrap(),
        ));
        let line = plan_line(&cfg, &url);
        assert!(
            line.contains("keep-alive from 250 source addresses (127.0.0.1-127.0.0.250);"),
            "{line}"
        );
    }

    /// The plan line states the plan: a scenario's own think times (not "no think time"),
    /// a replay's recorded arrivals (not "constant arrivals").
    #[test]
    fn the_plan_line_states_think_times_and_replays() {
        use crate::engine::think::tests::config;
        use crate::engine::{Arrival, Replay};
        use std::time::Duration;
        let closed = |ms| Load::Closed {
            users: 4,
            think: (Duration::from_millis(ms), Duration::from_millis(ms)),
        };
        let open = Load::Open {
            rate: 5.0,
            arrival: Arrival::Constant,
            max_connections: 10,
        };
        let url = ["http://h/".to_string()];
        let line = plan_line(&config(closed(0), None), &url);
        assert!(
            line.contains("closed loop, 4 users, no think time;"),
            "{line}"
        );
        let line = plan_line(&config(closed(250), None), &url);
        assert!(line.contains("4 users, think 250ms;"), "{line}");
        let scenario = "[[request]]\nurl = \"/\"\nthink = \"100ms\"\n\
                        [[request]]\nurl = \"/b\"\nthink = \"50ms..150ms\"\n";
        let line = plan_line(&config(closed(0), Some(scenario)), &url);
        assert!(
            line.contains("4 users, think 50ms..150ms (the scenario's, mean 100ms);"),
            "{line}"
        );
        let line = plan_line(&config(open, Some(scenario)), &url);
        assert!(
            line.contains(
                "5 sessions/s constant arrivals, up to 1 sessions in flight, think 50ms..150ms"
            ),
            "{line}"
        );
        let line = plan_line(&config(open, None), &url);
        assert!(
            line.contains("open loop, 5 req/s constant arrivals, up to 10 connections;"),
            "{line}"
        );
        let mut replay = config(open, None);
        replay.replay = Some(std::sync::Arc::new(Replay {
            at_ns: vec![0, 500_000_000, 1_000_000_000],
            requests: vec![0, 0, 0],
            span_ns: 1_500_000_000,
        }));
        let line = plan_line(&replay, &url);
        assert!(!line.contains("constant"), "{line}");
        assert!(
            line.contains("open loop, replaying 3 recorded arrivals over 1.5s (mean 2 req/s), up to 10 connections;"),
            "{line}"
        );
        // A ramp says it moves, its peak and its mean.
        let mut ramp = config(open, None);
        let stages = crate::plan::stages::Stages::parse("0s:2, 10s:8").unwrap();
        ramp.ramp = Some(std::sync::Arc::new(stages.profile(Duration::ZERO)));
        let line = plan_line(&ramp, &url);
        assert!(
            line.contains("open loop on stages, up to 8 req/s (mean 5) constant arrivals"),
            "{line}"
        );
        ramp.load = closed(0);
        let line = plan_line(&ramp, &url);
        assert!(line.contains("closed loop on stages, up to "), "{line}");
    }

    #[test]
    fn slo_lines_mark_each_condition() {
        let s = crate::analysis::tests::summary(100.0, 100.0, 5.0, 10);
        let slo = crate::analysis::slo::parse("p99<10ms,errors<0.5%").unwrap();
        let text = slo_lines(&slo, &s);
        assert!(text.contains("SLO 'p99<10ms,errors<0.5%' FAILED"), "{text}");
        assert!(text.contains("✓ p99<10.00ms"), "{text}");
        assert!(text.contains("p99 = 5.00ms"), "{text}");
        assert!(text.contains("✗ errors<0.5%"), "{text}");
        assert!(text.contains("errors = 0.99%"), "{text}");
        let met = slo_lines(&crate::analysis::slo::parse("p99<10ms").unwrap(), &s);
        assert!(met.contains("' met") && !met.contains('✗'), "{met}");
    }

    #[test]
    fn transport_errors_by_kind_and_the_failed_share() {
        let s = crate::analysis::tests::summary(100.0, 100.0, 5.0, 10);
        let line = requests_line(&s);
        assert!(
            line.contains("10 transport errors (0.99%), 0 non-2xx/3xx answers (0.00%)"),
            "{line}"
        );
        let errs = errors_lines(&s);
        assert!(errs.contains("transport      timeout: 10"), "{errs}");
        assert!(errs.contains("0.99% of requests got no 2xx/3xx"), "{errs}");
    }

    /// The `-R 200k` case: arrivals the generator never sent are named apart, with why; the
    /// failed share counts the requests sent only (the SLO's view beside it).
    #[test]
    fn arrivals_not_sent_are_not_failed_answers() {
        let mut s = crate::analysis::tests::summary(200_000.0, 11_000.0, 5.0, 0);
        s.unsent = 3 * s.requests;
        let errs = errors_lines(&s);
        assert!(errs.contains("transport      no errors"), "{errs}");
        assert!(
            errs.contains("failed         0.00% of requests got no 2xx/3xx answer; 75.00% of the intended arrivals, those not sent included"),
            "{errs}"
        );
        assert!(!requests_line(&s).contains("never sent"));
        let g = crate::store::GeneratorStats {
            io: None,
            cpu_pct: 97.0,
            cpu_us_per_response: 1.0,
            threads: 2,
            pool_waits: 0,
        };
        let n = crate::analysis::not_sent(&s, &g).unwrap();
        let line = not_sent_line(&n);
        assert!(line.starts_with("  not sent       "), "{line}");
        assert!(
            line.contains(" (75.00%): the generator could not keep up"),
            "{line}"
        );
        assert!(
            line.contains("the plan was not carried out (over 1% of its arrivals not sent)"),
            "{line}"
        );
    }
}
