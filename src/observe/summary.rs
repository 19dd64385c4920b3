//! A step's samples boiled down to mean and max per metric (for `steps.jsonl`), and one
//! second's to a few numbers (for `series.jsonl`). Every field is defaulted so files written
//! by older or newer versions still parse.
use serde::{Deserialize, Serialize};

pub use super::apache::ApacheObservation;
pub use super::fpm::{workers_label, FpmObservation, POOL_BUSY_MOST, TARGET_POOL};
pub use super::groups::GroupObservation;
pub use super::mariadb::MysqlObservation;
pub use super::net::TcpObservation;
use super::sample::{KernelLimits, Sample, LOCAL};
use super::source::KINDS;

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
    let mut o = SourceObservation {
        source: name.to_string(),
        samples: samples.len() as u64,
        sample_cost_us: cost.stat(),
        ..Default::default()
    };
    for k in KINDS {
        (k.summarise)(samples, &mut o);
    }
    o
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
        for k in KINDS {
            (k.second)(s, &mut o);
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
