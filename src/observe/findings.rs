//! Findings: what the server-side figures say about a sweep, each with its evidence (the
//! counts, the load level where it started, the kernel limit involved).
use super::summary::{SourceObservation, StepObservation};

/// Findings over a sweep: `steps` are (offered load, observation) in the sweep's order;
/// `mode` is `open` (offered = req/s) or `closed` (offered = users).
pub fn findings(steps: &[(f64, &StepObservation)], mode: &str) -> Vec<String> {
    // Each source's steps, gathered in one pass (sources in order of first appearance; a
    // step's first entry of a name stands for it, as `StepObservation::source` reads it): a
    // search of every step per name would cost names × steps.
    let mut names: Vec<&str> = Vec::new();
    let mut of: std::collections::HashMap<&str, Vec<(f64, &SourceObservation)>> =
        std::collections::HashMap::new();
    for (x, o) in steps {
        let mut seen = std::collections::HashSet::new();
        for s in &o.sources {
            if !seen.insert(s.source.as_str()) {
                continue;
            }
            of.entry(&s.source)
                .or_insert_with(|| {
                    names.push(&s.source);
                    Vec::new()
                })
                .push((*x, s));
        }
    }
    let agents = names.iter().any(|n| *n != super::LOCAL);
    let mut out = Vec::new();
    for name in &names {
        let per = of.remove(name).unwrap_or_default();
        let prefix = if names.len() > 1 {
            format!("[{name}] ")
        } else {
            String::new()
        };
        let ctx = Ctx { mode };
        // The server's own signals first; host-wide counters after them.
        for f in [
            fpm_busy(&ctx, &per),
            listen_overflow(&ctx, &per),
            time_wait(&ctx, &per),
            cpu_bound(&ctx, &per),
            load_avg(&ctx, &per),
            memory(&ctx, &per),
            close_wait(&ctx, &per),
            retrans(&ctx, &per),
        ]
        .into_iter()
        .flatten()
        {
            out.push(format!("{prefix}{f}"));
        }
        out.extend(
            process_growth(&ctx, &per)
                .into_iter()
                .map(|f| format!("{prefix}{f}")),
        );
    }
    out.extend(generator(mode, steps, agents));
    out
}

struct Ctx<'a> {
    mode: &'a str,
}

impl Ctx<'_> {
    fn load(&self, x: f64) -> String {
        load(self.mode, x)
    }
}

fn load(mode: &str, x: f64) -> String {
    if mode == "closed" {
        format!("{} users", int(x.round() as u64))
    } else {
        format!("{} req/s", int(x.round() as u64))
    }
}

/// 1234567 → "1,234,567".
pub fn int(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn opt(v: Option<u64>) -> String {
    v.map_or_else(|| "?".into(), int)
}

type Steps<'a> = [(f64, &'a SourceObservation)];

/// ListenOverflows counts every listening socket of the host. It is about this server only
/// when its own port's accept queue reached its limit in one of those steps; otherwise it is
/// shown as host-wide (another listener overflowed, e.g. a stack beside it).
fn listen_overflow(c: &Ctx, steps: &Steps) -> Option<String> {
    let first = steps
        .iter()
        .position(|(_, s)| s.tcp.as_ref().is_some_and(|t| t.listen_overflows > 0))?;
    let total: u64 = steps[first..]
        .iter()
        .filter_map(|(_, s)| s.tcp.as_ref())
        .map(|t| t.listen_overflows)
        .sum();
    let (x, s) = steps[first];
    let t = s.tcp.as_ref()?;
    // The port's own accept queue over the steps that overflowed: (peak, limit).
    let full_at = steps[first..].iter().find_map(|(x, s)| {
        let t = s.tcp.as_ref()?;
        let (q, l) = (t.listen_queue?.max, t.listen_limit?);
        (t.listen_overflows > 0 && l > 0 && q >= l as f64).then_some((*x, t))
    });
    let Some((x_full, tf)) = full_at else {
        let peak = steps[first..]
            .iter()
            .filter_map(|(_, s)| s.tcp.as_ref()?.listen_queue)
            .map(|q| q.max)
            .reduce(f64::max);
        let own = match peak {
            Some(q) => format!(
                "port {}'s accept queue peaked at {} of {}: not this server's",
                t.port,
                int(q as u64),
                opt(t.listen_limit)
            ),
            None => format!("port {}'s accept queue was not observed", t.port),
        };
        return Some(format!(
            "host-wide: listen queue overflowed {} times from {} (any port; {own})",
            int(total),
            c.load(x)
        ));
    };
    let somaxconn = s.kernel.and_then(|k| k.somaxconn);
    let advice = match (tf.listen_limit, somaxconn) {
        (Some(l), Some(m)) if l >= m => format!(
            "raise net.core.somaxconn (= {m}, it caps the backlog) and the server's backlog"
        ),
        (Some(l), Some(m)) => format!(
            "raise the server's listen backlog (limit {}; somaxconn = {} allows more) or accept faster",
            int(l),
            int(m)
        ),
        _ => format!(
            "raise the backlog (somaxconn = {} caps it) or accept faster",
            opt(somaxconn)
        ),
    };
    Some(format!(
        "listen queue overflowed {} times from {} (port {}, accept queue full at {} of {} from {}): {advice}",
        int(total),
        c.load(x),
        tf.port,
        tf.listen_queue
            .map_or_else(|| "?".into(), |q| int(q.max as u64)),
        opt(tf.listen_limit),
        c.load(x_full),
    ))
}

/// A worker pool (PHP-FPM's, or the embedded target's `/pool-status`) with every worker busy
/// and requests queueing for one: the server's own signal of its limit. At its limit by the
/// rule the bottleneck verdict uses (`summary::pool_at_limit_from`: more than one sample), its
/// queue by the same computation (`summary::queue_growth`), each figure with its load.
fn fpm_busy(c: &Ctx, steps: &Steps) -> Option<String> {
    // The pools, in order of first appearance.
    let mut pools: Vec<(&str, &str)> = Vec::new();
    for f in steps.iter().flat_map(|(_, s)| &s.fpm) {
        if !pools.contains(&(f.url.as_str(), f.pool.as_str())) {
            pools.push((&f.url, &f.pool));
        }
    }
    let of = |s: &SourceObservation, (url, pool): (&str, &str)| {
        s.fpm
            .iter()
            .find(|g| g.url == url && g.pool == pool)
            .cloned()
    };
    let (key, i) = pools.iter().find_map(|&key| {
        let full: Vec<(bool, bool)> = steps
            .iter()
            .map(|(_, s)| {
                of(s, key).map_or((false, false), |f| {
                    (f.full_at_peak(), f.full_most_of_step())
                })
            })
            .collect();
        super::summary::pool_at_limit_from(&full).map(|i| (key, i))
    })?;
    let f = of(steps[i].1, key)?;
    let queues: Vec<f64> = steps
        .iter()
        .map(|(_, s)| of(s, key).map_or(0.0, |g| g.listen_queue.max))
        .collect();
    let ((i0, q0), (i1, q1)) = super::summary::queue_growth(&queues, i)?;
    let reached: u64 = steps[i..]
        .iter()
        .filter_map(|(_, s)| of(s, key))
        .map(|g| g.max_children_reached)
        .sum();
    Some(format!(
        "all {} workers{} busy from {}, queue {} at {} → {} at {} (every worker busy for {} \
         arrivals): requests wait for a worker — raise the pool's size (pm.max_children, \
         --workers) if CPU and memory allow",
        int(f.total.max.round() as u64),
        if f.pool.is_empty() {
            String::new()
        } else {
            format!(" of pool {}", f.pool)
        },
        c.load(steps[i].0),
        int(q0 as u64),
        c.load(steps[i0].0),
        int(q1 as u64),
        c.load(steps[i1].0),
        int(reached),
    ))
}

/// TIME_WAIT worth a word: a tenth of the local port range (2,823 by default).
fn time_wait(c: &Ctx, steps: &Steps) -> Option<String> {
    let (x, s, tw) = steps
        .iter()
        .filter_map(|(x, s)| s.tcp.as_ref().map(|t| (*x, *s, t.state("TIME_WAIT").max)))
        .max_by(|a, b| a.2.total_cmp(&b.2))?;
    let k = s.kernel.unwrap_or_default();
    let ports = k.ports();
    let threshold = ports.map_or(2_800.0, |p| (p as f64 / 10.0).max(1_000.0));
    if tw < threshold {
        return None;
    }
    let ports_txt = match (ports, k.port_range) {
        (Some(p), Some((lo, hi))) => format!(
            "; ip_local_port_range {lo}-{hi} gives {} ports per destination, each held 60 s in \
             TIME_WAIT (≈{} new connections/s)",
            int(p),
            int(p / 60)
        ),
        _ => String::new(),
    };
    Some(format!(
        "TIME_WAIT reached {} at {}: use keep-alive{ports_txt}; tcp_tw_reuse = {}",
        int(tw as u64),
        c.load(x),
        opt(k.tcp_tw_reuse)
    ))
}

/// Host CPU near full. About the server only when its own processes (`--watch`) used most of
/// the cores; otherwise host-wide, saying what the watched processes used.
fn cpu_bound(c: &Ctx, steps: &Steps) -> Option<String> {
    steps.iter().find_map(|(x, s)| {
        let h = s.host.as_ref()?;
        if h.cpu_busy_pct.max < 95.0 || h.cpu_busy_pct.mean < 85.0 {
            return None;
        }
        let host = format!(
            "mean {:.0}% of {} cores: user {:.0}%, system {:.0}%, softirq {:.0}%, steal {:.0}%",
            h.cpu_busy_pct.mean,
            h.cores,
            h.cpu_user_pct.mean,
            h.cpu_system_pct.mean,
            h.cpu_softirq_pct.mean,
            h.cpu_steal_pct.mean
        );
        if s.groups.is_empty() {
            return Some(format!(
                "host-wide: CPU ≥ 95% busy from {} ({host}); the server's own share is \
                 unknown: --watch its processes to tell whether it was CPU-bound",
                c.load(*x)
            ));
        }
        // Percent of one core, summed over the watched groups.
        let own: f64 = s.groups.iter().map(|g| g.cpu_pct.mean).sum();
        let names: Vec<&str> = s.groups.iter().map(|g| g.name.as_str()).collect();
        let cores = h.cores.max(1) as f64 * 100.0;
        Some(if own >= 0.85 * cores {
            format!(
                "server CPU-bound from {}: its processes ({}) used {:.0}% of {} cores ({host})",
                c.load(*x),
                names.join(", "),
                own,
                h.cores
            )
        } else {
            format!(
                "host-wide: CPU ≥ 95% busy from {} ({host}), but the server's processes ({}) \
                 used {:.0}% of a core: something else on the host took the CPU",
                c.load(*x),
                names.join(", "),
                own
            )
        })
    })
}

fn load_avg(c: &Ctx, steps: &Steps) -> Option<String> {
    let (x, s) = steps
        .iter()
        .filter(|(_, s)| s.host.is_some())
        .max_by(|a, b| {
            let l = |s: &SourceObservation| s.host.map_or(0.0, |h| h.load1.max);
            l(a.1).total_cmp(&l(b.1))
        })?;
    let h = s.host?;
    let cores = h.cores.max(1) as f64;
    (h.load1.max > 2.0 * cores).then(|| {
        format!(
            "host-wide: load average {:.1} on {} cores at {}: more runnable tasks than cores \
             (any process of the host)",
            h.load1.max,
            h.cores,
            c.load(*x)
        )
    })
}

fn memory(c: &Ctx, steps: &Steps) -> Option<String> {
    steps.iter().find_map(|(x, s)| {
        let h = s.host.as_ref()?;
        if h.mem_total_bytes == 0 {
            return None;
        }
        // Lowest available ≈ mean − (max − mean) is not known; use the mean of the step.
        let avail = h.mem_available_bytes.mean;
        let pct = avail / h.mem_total_bytes as f64 * 100.0;
        (pct < 5.0).then(|| {
            format!(
                "memory available fell to {:.1}% ({} MiB of {} MiB) at {}: the host is about to \
                 swap or kill processes",
                pct,
                int((avail / 1048576.0) as u64),
                int(h.mem_total_bytes / 1048576),
                c.load(*x)
            )
        })
    })
}

fn close_wait(c: &Ctx, steps: &Steps) -> Option<String> {
    steps.iter().find_map(|(x, s)| {
        let cw = s.tcp.as_ref()?.state("CLOSE_WAIT").max;
        (cw >= 100.0).then(|| {
            format!(
                "CLOSE_WAIT reached {} at {}: the server is slow to close connections the \
                 client already closed (busy or leaking workers)",
                int(cw as u64),
                c.load(*x)
            )
        })
    })
}

fn retrans(c: &Ctx, steps: &Steps) -> Option<String> {
    let first = steps.iter().position(|(_, s)| {
        s.tcp
            .as_ref()
            .is_some_and(|t| t.retrans_segs >= 100 || t.tcp_timeouts >= 10)
    })?;
    let (segs, tos) = steps[first..]
        .iter()
        .filter_map(|(_, s)| s.tcp.as_ref())
        .fold((0, 0), |(a, b), t| (a + t.retrans_segs, b + t.tcp_timeouts));
    Some(format!(
        "host-wide: TCP retransmitted {} segments ({} timeouts) from {}: dropped SYNs or \
         packets (any connection of the host)",
        int(segs),
        int(tos),
        c.load(steps[first].0)
    ))
}

/// S5: worker processes climbing with load (prefork spawning, FPM's dynamic pm).
fn process_growth(c: &Ctx, steps: &Steps) -> Vec<String> {
    let mut out = Vec::new();
    let Some((_, first)) = steps.first() else {
        return out;
    };
    for g in &first.groups {
        let start = g.processes.mean;
        let peak = steps
            .iter()
            .filter_map(|(x, s)| {
                s.groups
                    .iter()
                    .find(|h| h.name == g.name)
                    .map(|h| (*x, h.processes.max))
            })
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((x, p)) = peak {
            if p >= 2.0 * start.max(1.0) && p - start >= 4.0 {
                out.push(format!(
                    "{} processes grew from {:.0} to {:.0} (at {}): the server spawns workers \
                     under load",
                    g.name,
                    start,
                    p,
                    c.load(x)
                ));
            }
        }
    }
    out
}

/// S1's first principle, from the server side: a generator that eats the CPU measures itself.
fn generator(mode: &str, steps: &[(f64, &StepObservation)], agents: bool) -> Vec<String> {
    let mut out = Vec::new();
    let cores = |o: &StepObservation| {
        o.source(super::LOCAL)
            .and_then(|s| s.host)
            .map_or(1, |h| h.cores.max(1))
    };
    if let Some((x, o)) = steps.iter().find(|(_, o)| {
        o.generator
            .is_some_and(|g| g.cpu_pct.mean >= 90.0 * cores(o) as f64)
    }) {
        let g = o.generator.unwrap_or_default();
        out.push(format!(
            "generator CPU-bound from {}: it used {:.0}% CPU of {} cores; results from there on \
             describe the generator, not the server",
            load(mode, *x),
            g.cpu_pct.mean,
            cores(o)
        ));
        return out;
    }
    if !agents {
        // The server runs beside the generator: say how much of the CPU the generator took.
        if let Some((x, o)) = steps.iter().find(|(_, o)| {
            let busy = o
                .source(super::LOCAL)
                .and_then(|s| s.host)
                .is_some_and(|h| h.cpu_busy_pct.mean >= 90.0);
            busy && o.generator.is_some_and(|g| g.cpu_pct.mean >= 25.0)
        }) {
            let g = o.generator.unwrap_or_default();
            out.push(format!(
                "generator and server share this host's CPU (busy from {}; the generator took \
                 {:.0}% of a core): the server had less than the whole machine",
                load(mode, *x),
                g.cpu_pct.mean
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::sample::KernelLimits;
    use crate::observe::summary::{
        FpmObservation, GeneratorObservation, GroupObservation, HostObservation, Stat,
        TcpObservation,
    };

    fn st(mean: f64, max: f64) -> Stat {
        Stat { mean, max }
    }

    fn obs(busy: f64, tw: f64, ovf: u64, active: f64, procs: f64) -> StepObservation {
        let mut tcp = TcpObservation {
            port: 8080,
            listen_overflows: ovf,
            listen_limit: Some(128),
            listen_queue: Some(st(10.0, 129.0)),
            ..Default::default()
        };
        tcp.states.insert("TIME_WAIT".into(), st(tw, tw));
        StepObservation {
            samples: 5,
            sources: vec![SourceObservation {
                source: "local".into(),
                samples: 5,
                host: Some(HostObservation {
                    cores: 2,
                    cpu_busy_pct: st(busy, busy + 2.0),
                    load1: st(1.0, 9.3),
                    mem_total_bytes: 1 << 30,
                    mem_available_bytes: st((1u64 << 29) as f64, 0.0),
                    ..Default::default()
                }),
                groups: vec![GroupObservation {
                    name: "php".into(),
                    processes: st(procs, procs),
                    // The server's processes take most of what the host's 2 cores did.
                    cpu_pct: st(busy * 1.8, busy * 1.9),
                    ..Default::default()
                }],
                fpm: vec![FpmObservation {
                    pool: "www".into(),
                    active: st(active, active),
                    total: st(20.0, 20.0),
                    listen_queue: st(1.0, 12.0),
                    max_children_reached: 5,
                    ..Default::default()
                }],
                tcp: Some(tcp),
                kernel: Some(KernelLimits {
                    somaxconn: Some(4096),
                    port_range: Some((32768, 60999)),
                    tcp_tw_reuse: Some(2),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            generator: Some(GeneratorObservation {
                cpu_pct: st(5.0, 6.0),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn finds_the_studies_symptoms() {
        let mut a = obs(40.0, 100.0, 0, 5.0, 5.0);
        a.sources[0].fpm[0].listen_queue = st(0.0, 0.0);
        let b = obs(96.0, 28_000.0, 1234, 20.0, 50.0);
        let f = findings(&[(1200.0, &a), (2400.0, &b)], "open");
        let all = f.join("\n");
        assert!(
            all.contains("listen queue overflowed 1,234 times from 2,400 req/s"),
            "{all}"
        );
        assert!(all.contains("somaxconn = 4,096"), "{all}");
        assert!(
            all.contains(
                "all 20 workers of pool www busy from 2,400 req/s, queue 0 at 1,200 req/s → 12 \
                 at 2,400 req/s"
            ),
            "{all}"
        );
        assert!(
            all.contains("TIME_WAIT reached 28,000 at 2,400 req/s: use keep-alive"),
            "{all}"
        );
        assert!(
            all.contains(
                "server CPU-bound from 2,400 req/s: its processes (php) used 173% of 2 cores"
            ),
            "{all}"
        );
        assert!(
            all.contains("host-wide: load average 9.3 on 2 cores"),
            "{all}"
        );
        assert!(all.contains("php processes grew from 5 to 50"), "{all}");
        assert!(!all.contains("generator"), "{all}");
        assert!(f.iter().all(|l| !l.contains('\n')));
    }

    #[test]
    fn quiet_when_healthy_and_generator_bound() {
        let mut a = obs(30.0, 10.0, 0, 2.0, 5.0);
        a.sources[0].host.as_mut().unwrap().load1 = st(0.5, 1.0);
        a.sources[0].fpm[0].max_children_reached = 0;
        a.sources[0].fpm[0].listen_queue = st(0.0, 0.0);
        assert!(findings(&[(10.0, &a)], "closed").is_empty());
        a.generator = Some(GeneratorObservation {
            cpu_pct: st(195.0, 200.0),
            ..Default::default()
        });
        let f = findings(&[(48.0, &a)], "closed");
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(
            f[0].starts_with("generator CPU-bound from 48 users"),
            "{f:?}"
        );
        assert!(findings(&[], "open").is_empty());
    }

    /// One sample that caught every worker busy (at 320 req/s, 80% of the pool's capacity,
    /// busy 70% on average) is no limit; the pool is at its limit from the step it was full
    /// for most of, or from a full step followed by another. The queue's figures name their
    /// loads: the first step's, and the peak's.
    #[test]
    fn a_pool_at_its_limit_needs_more_than_one_sample() {
        let pool = |active: Stat, q: f64| {
            let mut o = obs(30.0, 10.0, 0, 3.0, 5.0);
            o.sources[0].fpm[0] = FpmObservation {
                pool: "www".into(),
                active,
                total: st(8.0, 8.0),
                listen_queue: st(q / 2.0, q),
                ..Default::default()
            };
            o
        };
        let (low, noisy) = (pool(st(4.0, 6.0), 0.0), pool(st(5.6, 8.0), 2.0));
        let (calm, full) = (pool(st(6.0, 7.0), 0.0), pool(st(7.9, 8.0), 40.0));
        let busy = |f: Vec<String>| f.into_iter().find(|l| l.starts_with("all 8 workers"));
        let f = findings(&[(160.0, &low), (320.0, &noisy), (360.0, &calm)], "open");
        assert_eq!(busy(f), None, "one noisy sample");
        let f = findings(
            &[
                (160.0, &low),
                (320.0, &noisy),
                (360.0, &calm),
                (400.0, &full),
                (440.0, &full),
            ],
            "open",
        );
        let line = busy(f).expect("full for most of the step");
        assert!(
            line.starts_with(
                "all 8 workers of pool www busy from 400 req/s, queue 0 at 160 req/s → 40 at 400 req/s"
            ),
            "{line}"
        );
        // Two steps full at their busiest in a row: from the first of them.
        let f = findings(&[(160.0, &low), (320.0, &noisy), (360.0, &noisy)], "open");
        let line = busy(f).expect("full twice in a row");
        assert!(
            line.contains("busy from 320 req/s, queue 0 at 160 req/s → 2 at 320 req/s"),
            "{line}"
        );
    }

    /// The busy host: other work keeps both cores busy and overflows some other
    /// listener 4,927 times, while this server's processes idle at 6%, its own accept queue
    /// never holds a connection, and its 8 workers (the embedded target's pool) are all busy
    /// with a queue behind them. The findings name the pool; the host's counters are shown
    /// host-wide and blame nothing on the server.
    #[test]
    fn a_busy_host_is_not_blamed_on_the_server() {
        let mut early = obs(30.0, 10.0, 0, 3.0, 5.0);
        early.sources[0].fpm[0] = FpmObservation {
            pool: "overload-target".into(),
            active: st(3.0, 5.0),
            total: st(8.0, 8.0),
            ..Default::default()
        };
        let mut o = obs(97.0, 10.0, 4_927, 2.0, 5.0);
        let src = &mut o.sources[0];
        src.groups[0].cpu_pct = st(6.0, 9.0);
        src.fpm[0] = FpmObservation {
            pool: "overload-target".into(),
            active: st(7.9, 8.0),
            total: st(8.0, 8.0),
            listen_queue: st(30.0, 57.0),
            max_children_reached: 900,
            ..Default::default()
        };
        let tcp = src.tcp.as_mut().unwrap();
        tcp.listen_queue = Some(st(0.0, 0.0));
        tcp.listen_limit = Some(1024);
        tcp.retrans_segs = 300;
        let f = findings(&[(160.0, &early), (400.0, &o)], "open");
        let all = f.join("\n");
        assert!(
            f[0].starts_with(
                "all 8 workers of pool overload-target busy from 400 req/s, queue 0 at 160 \
                 req/s → 57 at 400 req/s (every worker busy for 900 arrivals)"
            ),
            "the pool first: {all}"
        );
        assert!(!all.contains("CPU-bound"), "{all}");
        assert!(
            all.contains(
                "host-wide: listen queue overflowed 4,927 times from 400 req/s (any port; port \
                 8080's accept queue peaked at 0 of 1,024: not this server's)"
            ),
            "{all}"
        );
        assert!(
            all.contains("but the server's processes (php) used 6% of a core"),
            "{all}"
        );
        assert!(all.contains("host-wide: TCP retransmitted 300"), "{all}");
        assert!(
            f[1..]
                .iter()
                .filter(|l| l.contains("listen") || l.contains("CPU") || l.contains("load average"))
                .all(|l| l.starts_with("host-wide: ")),
            "{all}"
        );
        // overload took 2% of a core on that busy host: it did not fall behind, and no
        // finding says it did.
        o.generator = Some(GeneratorObservation {
            cpu_pct: st(2.0, 3.0),
            ..Default::default()
        });
        let all = findings(&[(160.0, &early), (400.0, &o)], "open").join("\n");
        assert!(!all.contains("generator"), "{all}");
        // Without --watch the server's share is unknown, and said to be.
        o.sources[0].groups.clear();
        let all = findings(&[(400.0, &o)], "open").join("\n");
        assert!(all.contains("the server's own share is unknown"), "{all}");
        assert!(!all.contains("CPU-bound from"), "{all}");
    }

    #[test]
    fn thousands() {
        assert_eq!(int(0), "0");
        assert_eq!(int(999), "999");
        assert_eq!(int(1000), "1,000");
        assert_eq!(int(1234567), "1,234,567");
    }
}
