//! A step's samples boiled down to mean and max per metric (for `steps.jsonl`), and one
//! second's to a few numbers (for `series.jsonl`). Every field is defaulted so files written
//! by older or newer versions still parse.
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use super::apache::ApacheObservation;
pub use super::mariadb::MysqlObservation;
use super::sample::{KernelLimits, Sample, LOCAL};

use super::stat::Acc;
pub use super::stat::Stat;

/// `StepRecord::server`: what the observed hosts did during one step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StepObservation {
    /// Samples summarized (all sources).
    pub samples: u64,
    /// One entry per source (`local`, then agents by name).
    pub sources: Vec<SourceObservation>,
    /// The load generator process (local samples only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generator: Option<GeneratorObservation>,
}

impl StepObservation {
    pub fn source(&self, name: &str) -> Option<&SourceObservation> {
        self.sources.iter().find(|s| s.source == name)
    }

    /// The source that stands for the server: the first agent if any, else `local`.
    pub fn server(&self) -> Option<&SourceObservation> {
        self.sources
            .iter()
            .find(|s| s.source != LOCAL)
            .or_else(|| self.sources.first())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SourceObservation {
    pub source: String,
    pub samples: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<HostObservation>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupObservation>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fpm: Vec<FpmObservation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpObservation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernel: Option<KernelLimits>,
    /// CPU µs the sampler spent per sample.
    pub sample_cost_us: Stat,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub apache: Vec<ApacheObservation>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mysql: Vec<MysqlObservation>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostObservation {
    pub cores: u32,
    pub cpu_user_pct: Stat,
    pub cpu_system_pct: Stat,
    pub cpu_iowait_pct: Stat,
    pub cpu_softirq_pct: Stat,
    pub cpu_steal_pct: Stat,
    pub cpu_busy_pct: Stat,
    pub load1: Stat,
    pub mem_total_bytes: u64,
    pub mem_used_bytes: Stat,
    pub mem_available_bytes: Stat,
    pub ctx_switches_per_s: Stat,
    pub swap_used_bytes: Stat,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GroupObservation {
    pub name: String,
    pub processes: Stat,
    pub threads: Stat,
    /// Percent of one core.
    pub cpu_pct: Stat,
    pub rss_bytes: Stat,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_fds: Option<Stat>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FpmObservation {
    pub url: String,
    pub pool: String,
    pub active: Stat,
    pub idle: Stat,
    pub total: Stat,
    pub listen_queue: Stat,
    /// FPM's own high-water mark, as of the step's last sample.
    pub max_listen_queue: u64,
    /// Times pm.max_children was hit during the step.
    pub max_children_reached: u64,
    /// Samples where the status page could not be fetched.
    pub errors: u64,
}

/// The pool name the embedded target's `/pool-status` reports (`target/routes.rs`'s
/// `POOL_NAME`): its workers are the target's, not PHP-FPM's.
pub const TARGET_POOL: &str = "overload-target";

/// A pool busy on average at least this share of its workers over a step was full for most
/// of it.
pub const POOL_BUSY_MOST: f64 = 0.95;

impl FpmObservation {
    /// At the step's busiest sample every worker was busy and requests queued for one (or
    /// pm.max_children was hit): what one sample may show, noise included.
    pub fn full_at_peak(&self) -> bool {
        self.total.max >= 1.0
            && self.active.max >= self.total.max
            && (self.max_children_reached > 0 || self.listen_queue.max > 0.0)
    }

    /// Busy on average at least [`POOL_BUSY_MOST`] of the pool over the step.
    pub fn full_most_of_step(&self) -> bool {
        self.total.max >= 1.0 && self.active.mean >= POOL_BUSY_MOST * self.total.max
    }

    /// What its workers are called: the embedded target's pool speaks FPM's status format
    /// but is not PHP-FPM.
    pub fn workers_label(&self) -> &'static str {
        workers_label(&self.pool)
    }
}

/// What the workers of the pool named `pool` are called in labels.
pub fn workers_label(pool: &str) -> &'static str {
    if pool == TARGET_POOL {
        "target workers"
    } else {
        "FPM workers"
    }
}

/// The first step from which a pool was at its limit, given per step (full at its busiest
/// sample, full for most of the step): full at its busiest there, and full for most of that
/// step or full at its busiest in the next step too. One sample that caught every worker busy
/// is not a limit. None when no step qualifies.
pub fn pool_at_limit_from(steps: &[(bool, bool)]) -> Option<usize> {
    (0..steps.len()).find(|&i| {
        let (peak, most) = steps[i];
        peak && (most || steps.get(i + 1).is_some_and(|next| next.0))
    })
}

/// A pool's queue over steps: its value at the first step, and its peak from step `from` on,
/// each with the index of its step (the first of equal peaks). None for no steps.
pub fn queue_growth(queues: &[f64], from: usize) -> Option<((usize, f64), (usize, f64))> {
    let first = (0, *queues.first()?);
    let peak = queues
        .iter()
        .enumerate()
        .skip(from)
        .fold(None::<(usize, f64)>, |best, (i, &q)| match best {
            Some((_, b)) if b >= q => best,
            _ => Some((i, q)),
        })
        .unwrap_or(first);
    Some((first, peak))
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TcpObservation {
    pub port: u16,
    /// State name (`ESTABLISHED`, `TIME_WAIT`, ...) → sockets; states never seen are left out.
    pub states: BTreeMap<String, Stat>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen_queue: Option<Stat>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen_limit: Option<u64>,
    /// Host-wide counter increases over the step, and their highest per-second rate.
    pub listen_overflows: u64,
    pub listen_overflows_per_s_max: f64,
    pub listen_drops: u64,
    pub tcp_timeouts: u64,
    pub retrans_segs: u64,
}

impl TcpObservation {
    pub fn state(&self, name: &str) -> Stat {
        self.states.get(name).copied().unwrap_or_default()
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GeneratorObservation {
    /// Percent of one core.
    pub cpu_pct: Stat,
    pub rss_bytes: Stat,
    pub threads: Stat,
}

/// Summarizes the samples of one window (usually `samples_between(step start, step end)`).
pub fn summarize(samples: &[Sample]) -> StepObservation {
    let mut order: Vec<&str> = Vec::new();
    for s in samples {
        if !order.contains(&s.source.as_str()) {
            order.push(&s.source);
        }
    }
    // local first, then agents in the order they appeared.
    order.sort_by_key(|s| *s != LOCAL);
    let sources = order
        .iter()
        .map(|name| {
            let mine: Vec<&Sample> = samples.iter().filter(|s| s.source == *name).collect();
            source(name, &mine)
        })
        .collect();
    let mut g = [Acc::default(); 3];
    for s in samples.iter().filter_map(|s| s.generator.as_ref()) {
        g[0].add(s.cpu_pct);
        g[1].add(s.rss_bytes as f64);
        g[2].add(s.threads as f64);
    }
    StepObservation {
        samples: samples.len() as u64,
        sources,
        generator: (g[0].n > 0).then(|| GeneratorObservation {
            cpu_pct: g[0].stat(),
            rss_bytes: g[1].stat(),
            threads: g[2].stat(),
        }),
    }
}

fn source(name: &str, samples: &[&Sample]) -> SourceObservation {
    let mut cost = Acc::default();
    for s in samples {
        cost.add(s.cost_us as f64);
    }
    SourceObservation {
        source: name.to_string(),
        samples: samples.len() as u64,
        host: host(samples),
        groups: groups(samples),
        fpm: fpm(samples),
        tcp: tcp(samples),
        kernel: samples.iter().rev().find_map(|s| s.kernel),
        sample_cost_us: cost.stat(),
        apache: super::apache::observe(samples),
        mysql: super::mariadb::observe(samples),
    }
}

fn host(samples: &[&Sample]) -> Option<HostObservation> {
    let mut a = [Acc::default(); 11];
    let mut cores = 0;
    let mut total = 0;
    for h in samples.iter().filter_map(|s| s.host.as_ref()) {
        cores = h.cores;
        total = h.mem_total_bytes;
        let v = [
            h.cpu_user_pct,
            h.cpu_system_pct,
            h.cpu_iowait_pct,
            h.cpu_softirq_pct,
            h.cpu_steal_pct,
            h.cpu_busy_pct,
            h.load1,
            h.mem_used_bytes as f64,
            h.mem_available_bytes as f64,
            h.ctx_switches_per_s,
            h.swap_used_bytes as f64,
        ];
        for (acc, x) in a.iter_mut().zip(v) {
            acc.add(x);
        }
    }
    (a[0].n > 0).then(|| HostObservation {
        cores,
        cpu_user_pct: a[0].stat(),
        cpu_system_pct: a[1].stat(),
        cpu_iowait_pct: a[2].stat(),
        cpu_softirq_pct: a[3].stat(),
        cpu_steal_pct: a[4].stat(),
        cpu_busy_pct: a[5].stat(),
        load1: a[6].stat(),
        mem_total_bytes: total,
        mem_used_bytes: a[7].stat(),
        mem_available_bytes: a[8].stat(),
        ctx_switches_per_s: a[9].stat(),
        swap_used_bytes: a[10].stat(),
    })
}

fn groups(samples: &[&Sample]) -> Vec<GroupObservation> {
    let mut names: Vec<&str> = Vec::new();
    let mut accs: Vec<[Acc; 5]> = Vec::new();
    for g in samples.iter().flat_map(|s| &s.groups) {
        let i = match names.iter().position(|n| *n == g.name) {
            Some(i) => i,
            None => {
                names.push(&g.name);
                accs.push([Acc::default(); 5]);
                names.len() - 1
            }
        };
        let a = &mut accs[i];
        a[0].add(g.processes as f64);
        a[1].add(g.threads as f64);
        a[2].add(g.cpu_pct);
        a[3].add(g.rss_bytes as f64);
        if let Some(f) = g.open_fds {
            a[4].add(f as f64);
        }
    }
    names
        .iter()
        .zip(accs)
        .map(|(n, a)| GroupObservation {
            name: n.to_string(),
            processes: a[0].stat(),
            threads: a[1].stat(),
            cpu_pct: a[2].stat(),
            rss_bytes: a[3].stat(),
            open_fds: a[4].opt(),
        })
        .collect()
}

fn fpm(samples: &[&Sample]) -> Vec<FpmObservation> {
    let mut out: Vec<(FpmObservation, [Acc; 4])> = Vec::new();
    for f in samples.iter().flat_map(|s| &s.fpm) {
        let i = match out.iter().position(|(o, _)| o.url == f.url) {
            Some(i) => i,
            None => {
                out.push((
                    FpmObservation {
                        url: f.url.clone(),
                        ..Default::default()
                    },
                    [Acc::default(); 4],
                ));
                out.len() - 1
            }
        };
        let (o, a) = &mut out[i];
        if f.error.is_some() {
            o.errors += 1;
            continue;
        }
        o.pool.clone_from(&f.pool);
        a[0].add(f.active as f64);
        a[1].add(f.idle as f64);
        a[2].add(f.total as f64);
        a[3].add(f.listen_queue as f64);
        o.max_listen_queue = f.max_listen_queue;
        o.max_children_reached += f.max_children_reached_delta;
    }
    out.into_iter()
        .map(|(mut o, a)| {
            o.active = a[0].stat();
            o.idle = a[1].stat();
            o.total = a[2].stat();
            o.listen_queue = a[3].stat();
            o
        })
        .collect()
}

fn tcp(samples: &[&Sample]) -> Option<TcpObservation> {
    let mut o = TcpObservation::default();
    let mut states = [Acc::default(); 11];
    let mut queue = Acc::default();
    let mut any = false;
    for t in samples
        .iter()
        .filter_map(|s| s.tcp.as_ref().map(|t| (s.interval_ms, t)))
    {
        let (interval_ms, t) = t;
        any = true;
        o.port = t.port;
        let v = [
            t.established,
            t.syn_sent,
            t.syn_recv,
            t.fin_wait1,
            t.fin_wait2,
            t.time_wait,
            t.close,
            t.close_wait,
            t.last_ack,
            t.listen,
            t.closing,
        ];
        for (a, x) in states.iter_mut().zip(v) {
            a.add(x as f64);
        }
        if let Some(q) = t.listen_queue {
            queue.add(q as f64);
        }
        if let Some(l) = t.listen_limit {
            o.listen_limit = Some(o.listen_limit.unwrap_or(0).max(l));
        }
        o.listen_overflows += t.listen_overflows;
        o.listen_drops += t.listen_drops;
        o.tcp_timeouts += t.tcp_timeouts;
        o.retrans_segs += t.retrans_segs;
        if interval_ms > 0 {
            let rate = t.listen_overflows as f64 * 1000.0 / interval_ms as f64;
            o.listen_overflows_per_s_max = o.listen_overflows_per_s_max.max(rate);
        }
    }
    if !any {
        return None;
    }
    const NAMES: [&str; 11] = [
        "ESTABLISHED",
        "SYN_SENT",
        "SYN_RECV",
        "FIN_WAIT1",
        "FIN_WAIT2",
        "TIME_WAIT",
        "CLOSE",
        "CLOSE_WAIT",
        "LAST_ACK",
        "LISTEN",
        "CLOSING",
    ];
    for (name, a) in NAMES.iter().zip(states) {
        if a.max > 0.0 {
            o.states.insert(name.to_string(), a.stat());
        }
    }
    o.listen_queue = queue.opt();
    Some(o)
}

/// `SeriesPoint::server`: one second of the server, in a few numbers. `Copy`, so
/// `SeriesPoint` stays `Copy`. Host and TCP figures come from the server source (the first
/// agent if any, else local); the generator's from local.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SecondObservation {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_busy_pct: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load1: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mem_available_bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub established: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub syn_recv: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_wait: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub close_wait: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen_queue: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen_overflows: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retrans_segs: Option<u64>,
    /// Processes of all --watch groups together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processes: Option<u64>,
    /// Busy PHP-FPM workers (all pools).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fpm_active: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generator_cpu_pct: Option<f64>,
}

/// Boils down the samples of one second (`samples_between(t, t + 999)`); None if empty.
/// With several samples of the server source in the window, the last one wins for levels and
/// counter deltas are summed.
pub fn second(samples: &[Sample]) -> Option<SecondObservation> {
    let server = samples
        .iter()
        .find(|s| s.source != LOCAL)
        .or_else(|| samples.first())?
        .source
        .clone();
    let mut o = SecondObservation::default();
    for s in samples.iter().filter(|s| s.source == server) {
        if let Some(h) = &s.host {
            o.cpu_busy_pct = Some(h.cpu_busy_pct);
            o.load1 = Some(h.load1);
            o.mem_available_bytes = Some(h.mem_available_bytes);
        }
        if let Some(t) = &s.tcp {
            o.established = Some(t.established);
            o.syn_recv = Some(t.syn_recv);
            o.time_wait = Some(t.time_wait);
            o.close_wait = Some(t.close_wait);
            o.listen_queue = t.listen_queue;
            o.listen_overflows = Some(o.listen_overflows.unwrap_or(0) + t.listen_overflows);
            o.retrans_segs = Some(o.retrans_segs.unwrap_or(0) + t.retrans_segs);
        }
        if !s.groups.is_empty() {
            o.processes = Some(s.groups.iter().map(|g| g.processes).sum());
        }
        let ok: Vec<_> = s.fpm.iter().filter(|f| f.error.is_none()).collect();
        if !ok.is_empty() {
            o.fpm_active = Some(ok.iter().map(|f| f.active).sum());
        }
    }
    if let Some(g) = samples.iter().rev().find_map(|s| s.generator) {
        o.generator_cpu_pct = Some(g.cpu_pct);
    }
    Some(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pool is at its limit from a step full at its busiest and either full for most of it
    /// or followed by another full step: one sample is no limit.
    #[test]
    fn a_pool_at_its_limit_needs_more_than_one_sample() {
        assert_eq!(pool_at_limit_from(&[]), None);
        assert_eq!(pool_at_limit_from(&[(false, false), (true, false)]), None);
        assert_eq!(
            pool_at_limit_from(&[(true, false), (false, false), (true, true)]),
            Some(2)
        );
        assert_eq!(
            pool_at_limit_from(&[(false, false), (true, false), (true, false)]),
            Some(1)
        );
        let f = FpmObservation {
            active: Stat {
                mean: 7.6,
                max: 8.0,
            },
            total: Stat {
                mean: 8.0,
                max: 8.0,
            },
            listen_queue: Stat {
                mean: 0.0,
                max: 1.0,
            },
            ..Default::default()
        };
        assert!(f.full_at_peak() && f.full_most_of_step(), "7.6 of 8 is 95%");
        let f = FpmObservation {
            active: Stat {
                mean: 7.5,
                max: 8.0,
            },
            ..f
        };
        assert!(f.full_at_peak() && !f.full_most_of_step());
        let f = FpmObservation {
            listen_queue: Stat::default(),
            ..f
        };
        assert!(!f.full_at_peak(), "no queue, max_children never reached");
    }

    /// The queue's first value and its peak from a step on, each with its step.
    #[test]
    fn queue_growth_names_its_steps() {
        assert_eq!(queue_growth(&[], 0), None);
        let q = [1.0, 0.0, 5.0, 142.0, 475.0, 300.0];
        assert_eq!(queue_growth(&q, 2), Some(((0, 1.0), (4, 475.0))));
        assert_eq!(queue_growth(&q[..4], 2), Some(((0, 1.0), (3, 142.0))));
        assert_eq!(
            queue_growth(&[0.0, 7.0, 7.0], 0),
            Some(((0, 0.0), (1, 7.0)))
        );
    }

    /// The embedded target's pool speaks FPM's format but is not PHP-FPM.
    #[test]
    fn the_targets_pool_is_labelled_as_the_targets() {
        assert_eq!(workers_label(TARGET_POOL), "target workers");
        assert_eq!(workers_label("www"), "FPM workers");
        assert_eq!(workers_label(""), "FPM workers");
    }
    use crate::observe::sample::{FpmSample, GroupSample, HostSample, ProcSample, TcpSample};

    fn s(source: &str, t: u64, busy: f64, tw: u64, ovf: u64) -> Sample {
        Sample {
            source: source.into(),
            unix_ms: t,
            interval_ms: 1000,
            host: Some(HostSample {
                cores: 2,
                cpu_busy_pct: busy,
                load1: busy / 50.0,
                ..Default::default()
            }),
            groups: vec![GroupSample {
                name: "php".into(),
                processes: tw,
                cpu_pct: busy,
                open_fds: None,
                ..Default::default()
            }],
            fpm: vec![FpmSample {
                url: "u".into(),
                active: 3,
                total: 4,
                max_children_reached_delta: 1,
                ..Default::default()
            }],
            tcp: Some(TcpSample {
                port: 80,
                time_wait: tw,
                listen_overflows: ovf,
                listen_limit: Some(128),
                ..Default::default()
            }),
            generator: Some(ProcSample {
                cpu_pct: 10.0,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn summarizes_mean_and_max() {
        let v = vec![
            s(LOCAL, 1, 50.0, 10, 0),
            s(LOCAL, 2, 100.0, 30, 7),
            s("web", 2, 20.0, 1, 0),
        ];
        let o = summarize(&v);
        assert_eq!(o.samples, 3);
        assert_eq!(o.sources.len(), 2);
        let l = o.source(LOCAL).unwrap();
        let h = l.host.unwrap();
        assert_eq!(
            h.cpu_busy_pct,
            Stat {
                mean: 75.0,
                max: 100.0
            }
        );
        let t = l.tcp.as_ref().unwrap();
        assert_eq!(
            t.state("TIME_WAIT"),
            Stat {
                mean: 20.0,
                max: 30.0
            }
        );
        assert!(!t.states.contains_key("ESTABLISHED"));
        assert_eq!(t.listen_overflows, 7);
        assert_eq!(t.listen_overflows_per_s_max, 7.0);
        assert_eq!(t.listen_limit, Some(128));
        assert_eq!(l.groups[0].processes.max, 30.0);
        assert_eq!(l.groups[0].open_fds, None);
        assert_eq!(l.fpm[0].max_children_reached, 2);
        assert_eq!(o.server().unwrap().source, "web");
        assert_eq!(o.generator.unwrap().cpu_pct.mean, 10.0);
        // Round trip, and an empty object (an old file) parses.
        let j = serde_json::to_string(&o).unwrap();
        assert_eq!(serde_json::from_str::<StepObservation>(&j).unwrap(), o);
        assert_eq!(
            serde_json::from_str::<StepObservation>("{}").unwrap(),
            StepObservation::default()
        );
        assert_eq!(summarize(&[]), StepObservation::default());
    }

    #[test]
    fn second_picks_server() {
        let v = vec![s(LOCAL, 1, 50.0, 10, 0), s("web", 2, 20.0, 1, 3)];
        let o = second(&v).unwrap();
        assert_eq!(o.cpu_busy_pct, Some(20.0));
        assert_eq!(o.listen_overflows, Some(3));
        assert_eq!(o.fpm_active, Some(3));
        assert_eq!(o.generator_cpu_pct, Some(10.0));
        assert_eq!(second(&[]), None);
        let j = serde_json::to_string(&o).unwrap();
        assert_eq!(serde_json::from_str::<SecondObservation>(&j).unwrap(), o);
        assert_eq!(
            serde_json::from_str::<SecondObservation>("{}").unwrap(),
            SecondObservation::default()
        );
    }

    #[test]
    fn ignores_nan() {
        let mut a = Acc::default();
        a.add(f64::NAN);
        a.add(2.0);
        assert_eq!(
            a.stat(),
            Stat {
                mean: 2.0,
                max: 2.0
            }
        );
    }
}
