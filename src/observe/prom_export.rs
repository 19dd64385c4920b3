//! An exporter, not a scraper: the newest samples as Prometheus text exposition format (version 0.0.4), for
//! `GET /metrics` on the agent. Counter increases are exported as gauges "over the last
//! interval": the sampler keeps deltas, not the kernel's running totals.
use std::fmt::Write;

use super::sample::Sample;

struct Family {
    name: &'static str,
    help: &'static str,
    kind: &'static str,
    rows: Vec<(String, f64)>,
}

#[derive(Default)]
struct Out {
    families: Vec<Family>,
}

impl Out {
    fn add(&mut self, name: &'static str, help: &'static str, labels: &[(&str, &str)], v: f64) {
        self.add_kind(name, help, "gauge", labels, v);
    }

    fn add_kind(
        &mut self,
        name: &'static str,
        help: &'static str,
        kind: &'static str,
        labels: &[(&str, &str)],
        v: f64,
    ) {
        let i = match self.families.iter().position(|f| f.name == name) {
            Some(i) => i,
            None => {
                self.families.push(Family {
                    name,
                    help,
                    kind,
                    rows: Vec::new(),
                });
                self.families.len() - 1
            }
        };
        let mut l = String::new();
        for (k, val) in labels {
            if !l.is_empty() {
                l.push(',');
            }
            let _ = write!(l, "{k}=\"{}\"", escape(val));
        }
        self.families[i].rows.push((l, v));
    }

    fn render(&self) -> String {
        let mut s = String::new();
        for f in &self.families {
            let _ = writeln!(s, "# HELP {} {}", f.name, f.help);
            let _ = writeln!(s, "# TYPE {} {}", f.name, f.kind);
            for (l, v) in &f.rows {
                let v = if v.is_finite() {
                    format!("{v}")
                } else {
                    "NaN".into()
                };
                if l.is_empty() {
                    let _ = writeln!(s, "{} {v}", f.name);
                } else {
                    let _ = writeln!(s, "{}{{{l}}} {v}", f.name);
                }
            }
        }
        s
    }
}

/// Label values escape backslash, double quote and newline.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Renders the newest sample of each source.
pub fn render(samples: &[Sample]) -> String {
    let mut o = Out::default();
    for s in samples {
        let src = s.source.as_str();
        o.add(
            "overload_sample_timestamp_ms",
            "When the sample was taken, Unix ms.",
            &[("source", src)],
            s.unix_ms as f64,
        );
        o.add(
            "overload_sample_cost_microseconds",
            "CPU time the sampler spent on the sample.",
            &[("source", src)],
            s.cost_us as f64,
        );
        if let Some(h) = &s.host {
            for (mode, v) in [
                ("user", h.cpu_user_pct),
                ("system", h.cpu_system_pct),
                ("iowait", h.cpu_iowait_pct),
                ("irq", h.cpu_irq_pct),
                ("softirq", h.cpu_softirq_pct),
                ("steal", h.cpu_steal_pct),
                ("busy", h.cpu_busy_pct),
            ] {
                o.add(
                    "overload_cpu_percent",
                    "Host CPU time by mode over the last interval, percent of all cores.",
                    &[("source", src), ("mode", mode)],
                    v,
                );
            }
            o.add(
                "overload_cpu_cores",
                "Online cores.",
                &[("source", src)],
                h.cores as f64,
            );
            for (p, v) in [("1m", h.load1), ("5m", h.load5), ("15m", h.load15)] {
                o.add(
                    "overload_load_average",
                    "Load average (/proc/loadavg).",
                    &[("source", src), ("period", p)],
                    v,
                );
            }
            for (k, v) in [
                ("total", h.mem_total_bytes),
                ("used", h.mem_used_bytes),
                ("available", h.mem_available_bytes),
            ] {
                o.add(
                    "overload_memory_bytes",
                    "Memory (/proc/meminfo); used = total - available.",
                    &[("source", src), ("kind", k)],
                    v as f64,
                );
            }
            o.add(
                "overload_context_switches_per_second",
                "Context switches per second over the last interval.",
                &[("source", src)],
                h.ctx_switches_per_s,
            );
        }
        for g in &s.groups {
            let l = [("source", src), ("group", g.name.as_str())];
            o.add(
                "overload_group_processes",
                "Processes in the --watch group.",
                &l,
                g.processes as f64,
            );
            o.add(
                "overload_group_threads",
                "Threads in the --watch group.",
                &l,
                g.threads as f64,
            );
            o.add(
                "overload_group_cpu_percent",
                "CPU of the --watch group, percent of one core.",
                &l,
                g.cpu_pct,
            );
            o.add(
                "overload_group_rss_bytes",
                "Resident memory of the --watch group.",
                &l,
                g.rss_bytes as f64,
            );
            if let Some(f) = g.open_fds {
                o.add(
                    "overload_group_open_fds",
                    "Open file descriptors of the --watch group.",
                    &l,
                    f as f64,
                );
            }
        }
        for f in s.fpm.iter().filter(|f| f.error.is_none()) {
            for (state, v) in [("active", f.active), ("idle", f.idle), ("total", f.total)] {
                o.add(
                    "overload_fpm_processes",
                    "PHP-FPM pool processes by state.",
                    &[("source", src), ("pool", f.pool.as_str()), ("state", state)],
                    v as f64,
                );
            }
            let l = [("source", src), ("pool", f.pool.as_str())];
            o.add(
                "overload_fpm_listen_queue",
                "Connections waiting for an FPM worker.",
                &l,
                f.listen_queue as f64,
            );
            o.add_kind(
                "overload_fpm_max_children_reached_total",
                "Times pm.max_children was reached since FPM started.",
                "counter",
                &l,
                f.max_children_reached as f64,
            );
        }
        if let Some(t) = &s.tcp {
            let port = t.port.to_string();
            for (state, v) in t.states() {
                o.add(
                    "overload_tcp_connections",
                    "TCP sockets with the watched port as local or remote port, by state.",
                    &[("source", src), ("port", &port), ("state", state)],
                    v as f64,
                );
            }
            let l = [("source", src), ("port", port.as_str())];
            if let Some(q) = t.listen_queue {
                o.add(
                    "overload_tcp_listen_queue",
                    "Accept queue length of the LISTEN socket.",
                    &l,
                    q as f64,
                );
            }
            if let Some(q) = t.listen_limit {
                o.add(
                    "overload_tcp_listen_queue_limit",
                    "Accept queue limit of the LISTEN socket.",
                    &l,
                    q as f64,
                );
            }
            for (name, help, v) in [
                (
                    "overload_tcp_listen_overflows_last_interval",
                    "TcpExt ListenOverflows increase over the last interval (host-wide).",
                    t.listen_overflows,
                ),
                (
                    "overload_tcp_listen_drops_last_interval",
                    "TcpExt ListenDrops increase over the last interval (host-wide).",
                    t.listen_drops,
                ),
                (
                    "overload_tcp_timeouts_last_interval",
                    "TcpExt TCPTimeouts increase over the last interval (host-wide).",
                    t.tcp_timeouts,
                ),
                (
                    "overload_tcp_retrans_segs_last_interval",
                    "Tcp RetransSegs increase over the last interval (host-wide).",
                    t.retrans_segs,
                ),
            ] {
                o.add(name, help, &[("source", src)], v as f64);
            }
        }
        if let Some(p) = &s.generator {
            let l = [("source", src)];
            o.add(
                "overload_process_cpu_percent",
                "CPU of the sampling process, percent of one core.",
                &l,
                p.cpu_pct,
            );
            o.add(
                "overload_process_rss_bytes",
                "Resident memory of the sampling process.",
                &l,
                p.rss_bytes as f64,
            );
            o.add(
                "overload_process_threads",
                "Threads of the sampling process.",
                &l,
                p.threads as f64,
            );
        }
    }
    o.render()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::sample::{GroupSample, HostSample, TcpSample};

    #[test]
    fn one_help_per_family_and_escaped_labels() {
        let s = Sample {
            source: "we\"b\\1\n".into(),
            host: Some(HostSample::default()),
            groups: vec![GroupSample {
                name: "php".into(),
                ..Default::default()
            }],
            tcp: Some(TcpSample {
                port: 80,
                listen_queue: Some(3),
                ..Default::default()
            }),
            ..Default::default()
        };
        let t = render(&[
            s.clone(),
            Sample {
                source: "b".into(),
                ..s
            },
        ]);
        assert_eq!(t.matches("# TYPE overload_cpu_percent gauge").count(), 1);
        assert!(t.contains(r#"source="we\"b\\1\n""#), "{t}");
        assert!(
            t.contains("overload_tcp_listen_queue{source=\"b\",port=\"80\"} 3\n"),
            "{t}"
        );
        assert!(t.ends_with('\n'));
    }
}
