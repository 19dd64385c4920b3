//! The verdict on scripted steps shaped like recorded ones: one test per candidate, the
//! ranking, ties, no evidence, and host-wide noise that must not win.
use super::*;
use crate::analysis::tests::{step, summary};
use crate::observe::{
    ApacheObservation, FpmObservation, GroupObservation, HostObservation, MysqlObservation, Stat,
    TcpObservation,
};

fn st(mean: f64, max: f64) -> Stat {
    Stat { mean, max }
}

/// One step's server, as a sweep on a 2-core host records it.
#[derive(Clone)]
struct Srv {
    host_busy: f64,
    /// The watched processes' CPU, % of one core (None: no --watch).
    own: Option<f64>,
    /// (active, total, queue, max children reached).
    fpm: Option<(f64, f64, f64, u64)>,
    /// (busy, idle, slots, open slots).
    apache: Option<(f64, f64, u64, f64)>,
    /// (queue peak, limit, host-wide overflows).
    tcp: Option<(f64, u64, u64)>,
    /// (running, connected, table locks waited in the 10 s step).
    mysql: Option<(f64, f64, u64)>,
    mem_avail_pct: f64,
}

impl Default for Srv {
    fn default() -> Self {
        Srv {
            host_busy: 20.0,
            own: Some(30.0),
            fpm: None,
            apache: None,
            tcp: Some((0.0, 511, 0)),
            mysql: None,
            mem_avail_pct: 60.0,
        }
    }
}

fn obs(v: &Srv) -> StepObservation {
    let total = 1u64 << 30;
    let src = SourceObservation {
        source: "local".into(),
        samples: 10,
        host: Some(HostObservation {
            cores: 2,
            cpu_busy_pct: st(v.host_busy, v.host_busy + 3.0),
            mem_total_bytes: total,
            mem_available_bytes: st(total as f64 * v.mem_avail_pct / 100.0, 0.0),
            ..Default::default()
        }),
        groups: v
            .own
            .map(|c| {
                vec![GroupObservation {
                    name: "php".into(),
                    cpu_pct: st(c, c + 5.0),
                    ..Default::default()
                }]
            })
            .unwrap_or_default(),
        fpm: v
            .fpm
            .map(|(a, t, q, r)| {
                vec![FpmObservation {
                    url: "http://127.0.0.1:9000/status".into(),
                    active: st(a, a),
                    total: st(t, t),
                    listen_queue: st(q / 2.0, q),
                    max_children_reached: r,
                    ..Default::default()
                }]
            })
            .unwrap_or_default(),
        apache: v
            .apache
            .map(|(b, i, slots, open)| {
                vec![ApacheObservation {
                    url: "http://127.0.0.1:8080/server-status".into(),
                    busy: st(b, b),
                    idle: st(i, i),
                    workers: st(b + i, b + i),
                    slots,
                    open_slots: st(open, open),
                    ..Default::default()
                }]
            })
            .unwrap_or_default(),
        tcp: v.tcp.map(|(q, l, o)| TcpObservation {
            port: 8080,
            listen_queue: Some(st(q / 2.0, q)),
            listen_limit: Some(l),
            listen_overflows: o,
            ..Default::default()
        }),
        mysql: v
            .mysql
            .map(|(r, c, locks)| {
                vec![MysqlObservation {
                    target: "ro@127.0.0.1:3306".into(),
                    threads_running: st(r, r),
                    threads_connected: st(c, c),
                    table_locks_waited: locks,
                    covered_ms: 10_000,
                    ..Default::default()
                }]
            })
            .unwrap_or_default(),
        ..Default::default()
    };
    StepObservation {
        samples: 10,
        sources: vec![src],
        generator: None,
    }
}

/// A sweep of 100, 200, ... req/s; `p90` per step (the latency rise), `srv` per step.
fn sweep(p90: &[f64], srv: &[Srv]) -> Vec<StepRecord> {
    p90.iter()
        .zip(srv)
        .enumerate()
        .map(|(i, (&l, v))| {
            let o = 100.0 * (i + 1) as f64;
            let mut s = step(i, o, summary(o, o, l, 0));
            s.server = Some(obs(v));
            s
        })
        .collect()
}

const RISE: [f64; 4] = [5.0, 5.5, 6.0, 900.0];

fn pool_steps() -> Vec<Srv> {
    let at = |a, q, r| Srv {
        fpm: Some((a, 8.0, q, r)),
        ..Srv::default()
    };
    vec![
        at(2.0, 0.0, 0),
        at(5.0, 0.0, 0),
        at(8.0, 180.0, 40),
        at(8.0, 170.0, 90),
    ]
}

#[test]
fn a_full_pool_is_named_with_its_numbers() {
    let b = diagnose("open", &sweep(&RISE, &pool_steps()), 3, Context::default());
    assert_eq!(b.outcome, Diagnosis::Limit);
    let w = b.leader().unwrap();
    assert_eq!(w.limit, Limit::WorkerPool);
    assert_eq!(w.from_step, Some(2));
    // Latency rose at step 4: the pool filled one step before.
    assert_eq!((b.latency_rise_step, w.lead_steps), (3, Some(1)));
    assert_eq!(w.numbers["workers"], 8.0);
    assert_eq!(w.numbers["queue_peak"], 180.0);
    assert_eq!(
        b.verdict,
        "knee at 400 req/s (step 4): all 8 workers busy from step 3 at 300 req/s (queue 0 at \
         step 1 → 180 at step 3), CPU 15%, no listen drops, memory 60% available, generator CPU 10% → the \
         worker pool; raise the pool (pm.max_children, MaxRequestWorkers, --workers) if CPU \
         and memory allow, or cut service time"
    );
    assert_eq!(
        b.not_observed,
        vec![
            "the database (--mysql USER@HOST:PORT)".to_string(),
            "the network (--link-speed)".to_string()
        ]
    );
}

/// The demo: one sample at 80% of the pool's capacity caught every worker busy (and
/// a request queued), busy 70% of the step on average, the next step calm: no limit there.
/// The pool is at its limit from the step it was full for most of, as latency rose.
#[test]
fn one_noisy_sample_does_not_put_the_pool_at_its_limit() {
    let mut steps = sweep(&RISE, &pool_steps());
    let mut set = |i: usize, mean: f64, max: f64, q: f64| {
        let f = &mut steps[i].server.as_mut().unwrap().sources[0].fpm[0];
        f.active = st(mean, max);
        f.listen_queue = st(q / 2.0, q);
        f.max_children_reached = 0;
    };
    set(1, 5.6, 8.0, 2.0);
    set(2, 6.0, 7.0, 0.0);
    set(3, 7.9, 8.0, 180.0);
    let b = diagnose("open", &steps, 3, Context::default());
    let w = b.leader().unwrap();
    assert_eq!(w.limit, Limit::WorkerPool);
    assert_eq!((w.evidence, w.from_step), (Evidence::AtLimit, Some(3)));
    assert_eq!(w.lead_steps, Some(0), "as latency rose, not 2 steps before");
    assert!(
        w.seen.starts_with(
            "all 8 workers busy from step 4 at 400 req/s (queue 0 at step 1 → 180 at step 4)"
        ),
        "{}",
        w.seen
    );
    // Full at its busiest twice in a row: at its limit from the first.
    let mut steps = sweep(&RISE, &pool_steps());
    for s in &mut steps[1..3] {
        let f = &mut s.server.as_mut().unwrap().sources[0].fpm[0];
        f.active = st(5.6, 8.0);
        f.listen_queue = st(1.0, 2.0);
    }
    let b = diagnose("open", &steps, 3, Context::default());
    assert_eq!(b.leader().unwrap().from_step, Some(1));
}

#[test]
fn an_unreadable_status_page_is_said_so_not_counted() {
    let mut steps = sweep(&RISE, &pool_steps());
    let f = &mut steps[3].server.as_mut().unwrap().sources[0].fpm[0];
    *f = FpmObservation {
        url: f.url.clone(),
        errors: 3,
        ..Default::default()
    };
    let b = diagnose("open", &steps[..], 3, Context::default());
    // The pool was full at step 3 already; at the knee its page did not answer.
    let w = b.leader().unwrap();
    assert_eq!(w.limit, Limit::WorkerPool);
    assert!(
        w.seen.starts_with("all 8 workers busy from step 3"),
        "{}",
        w.seen
    );
    let mut steps = sweep(&RISE, &vec![Srv::default(); 4]);
    for s in &mut steps {
        s.server.as_mut().unwrap().sources[0].fpm = vec![FpmObservation {
            errors: 2,
            ..Default::default()
        }];
    }
    let b = diagnose("open", &steps, 3, Context::default());
    let p = b
        .candidates
        .iter()
        .find(|c| c.limit == Limit::WorkerPool)
        .unwrap();
    assert_eq!(p.evidence, Evidence::None);
    assert_eq!(
        p.seen,
        "its status page could not be read at the knee (2 failed reads)"
    );
}

#[test]
fn apache_with_no_idle_worker_and_no_free_slot_is_a_full_pool() {
    let a = |b, i, open| Srv {
        apache: Some((b, i, 8, open)),
        ..Srv::default()
    };
    // Prefork spawns into open slots first: 5 busy, none idle, 3 slots free is not full.
    let v = vec![
        a(2.0, 3.0, 3.0),
        a(5.0, 0.0, 3.0),
        a(8.0, 0.0, 0.0),
        a(8.0, 0.0, 0.0),
    ];
    let b = diagnose("open", &sweep(&RISE, &v), 3, Context::default());
    let w = b.leader().unwrap();
    assert_eq!((w.limit, w.from_step), (Limit::WorkerPool, Some(2)));
    assert!(
        w.seen.starts_with(
            "all 8 Apache workers busy from step 3 at 300 req/s (under one idle on average"
        ),
        "{}",
        w.seen
    );
}

#[test]
fn apache_pool_size_is_busy_plus_idle_at_one_moment_not_the_sum_of_maxima() {
    // Prefork ×8 past 8 users: all 8 busy at some moments of the knee's step, 4 idle at
    // others. The lab's CI run once called this "all 12 Apache workers busy".
    let a = |b, i| Srv {
        apache: Some((b, i, 8, 0.0)),
        ..Srv::default()
    };
    let v = vec![a(4.0, 4.0), a(8.0, 0.0), a(8.0, 0.0), a(8.0, 0.0)];
    let mut steps = sweep(&RISE, &v);
    // At the knee, with no keep-alive, workers were seen idle between connections.
    let o = steps[3].server.as_mut().unwrap();
    o.sources[0].apache[0].idle = st(0.5, 4.0);
    let b = diagnose("open", &steps, 3, Context::default());
    let w = b.leader().unwrap();
    assert_eq!(w.limit, Limit::WorkerPool, "{}", b.verdict);
    assert!(
        w.seen.starts_with("all 8 Apache workers busy"),
        "{}",
        w.seen
    );
    // Results written before `workers` was recorded still read (the sum of the maxima).
    for s in &mut steps {
        let o = s.server.as_mut().unwrap();
        o.sources[0].apache[0].workers = Stat::default();
    }
    let b = diagnose("open", &steps, 3, Context::default());
    assert_eq!(b.leader().unwrap().limit, Limit::WorkerPool);
}

#[test]
fn the_servers_own_cpu() {
    let c = |own, busy, active| Srv {
        own: Some(own),
        host_busy: busy,
        fpm: Some((active, 32.0, 0.0, 0)),
        ..Srv::default()
    };
    let v = vec![
        c(60.0, 35.0, 3.0),
        c(120.0, 65.0, 6.0),
        c(190.0, 97.0, 12.0),
        c(195.0, 99.0, 14.0),
    ];
    let b = diagnose("open", &sweep(&RISE, &v), 3, Context::default());
    let w = b.leader().unwrap();
    assert_eq!((w.limit, w.from_step), (Limit::Cpu, Some(2)));
    assert!(
        b.verdict
            .contains("its processes (php) used 98% of 2 cores from step 3"),
        "{}",
        b.verdict
    );
    assert!(
        b.verdict.contains("12 of 32 workers busy") || b.verdict.contains("14 of 32 workers busy"),
        "{}",
        b.verdict
    );
    assert!(
        b.verdict.contains("→ the server's CPU; add cores"),
        "{}",
        b.verdict
    );
    // Half the busy host's CPU is the server's: still its CPU.
    let v = vec![c(10.0, 30.0, 1.0), c(100.0, 92.0, 2.0)];
    let b = diagnose("open", &sweep(&[5.0, 50.0], &v), 1, Context::default());
    assert_eq!(b.leader().unwrap().limit, Limit::Cpu);
}

#[test]
fn the_ports_own_accept_queue() {
    let q = |peak, ovf| Srv {
        tcp: Some((peak, 8, ovf)),
        ..Srv::default()
    };
    let v = vec![q(0.0, 0), q(9.0, 300), q(9.0, 900), q(9.0, 900)];
    let b = diagnose("open", &sweep(&RISE, &v), 3, Context::default());
    let w = b.leader().unwrap();
    assert_eq!((w.limit, w.from_step), (Limit::AcceptQueue, Some(1)));
    assert!(
        w.seen.starts_with("port 8080's accept queue full (9 of 8) from step 2 at 200 req/s (2,100 listen drops host-wide"),
        "{}",
        w.seen
    );
    // The queue is seen only between samples, but the host dropped SYNs and this run's
    // connections waited a second for their retry: this port's queue.
    let mut steps = sweep(&RISE, &[q(0.0, 0), q(1.0, 50), q(2.0, 80), q(2.0, 80)]);
    steps[1].summary.connect_time_ms.p99 = 1_020.0;
    let b = diagnose("open", &steps, 3, Context::default());
    let w = b.leader().unwrap();
    assert_eq!((w.limit, w.from_step), (Limit::AcceptQueue, Some(1)));
    assert_eq!(
        w.seen,
        "port 8080's accept queue (limit 8) overflowed from step 2 at 200 req/s: 210 listen \
         drops host-wide while this run's connect time p99 reached 1020 ms (SYNs retried after 1 s)"
    );
}

#[test]
fn the_database_when_it_led() {
    let d = |running, locks, active, q| Srv {
        mysql: Some((running, 8.0, locks)),
        fpm: Some((active, 8.0, q, 0)),
        ..Srv::default()
    };
    // Lock waits from step 2; the pool fills only at step 3, waiting on the database.
    let v = vec![
        d(1.0, 0, 2.0, 0.0),
        d(3.0, 400, 5.0, 0.0),
        d(7.0, 900, 8.0, 40.0),
        d(8.0, 990, 8.0, 90.0),
    ];
    let b = diagnose("open", &sweep(&RISE, &v), 3, Context::default());
    assert_eq!(b.outcome, Diagnosis::Limit);
    let w = b.leader().unwrap();
    assert_eq!((w.limit, w.from_step), (Limit::Database, Some(1)));
    assert_eq!(b.candidates[1].limit, Limit::WorkerPool);
    assert!(
        w.seen.contains("99 lock waits/s (table 990, row 0)"),
        "{}",
        w.seen
    );
    assert!(
        w.change
            .starts_with("table locks: move the written tables to InnoDB"),
        "{}",
        w.change
    );
    // Many connections but few running and no waits: no evidence against the database.
    let v = vec![d(1.0, 0, 2.0, 0.0), d(1.0, 0, 5.0, 0.0)];
    let b = diagnose("open", &sweep(&[5.0, 50.0], &v), 1, Context::default());
    let db = b
        .candidates
        .iter()
        .find(|c| c.limit == Limit::Database)
        .unwrap();
    assert_eq!(db.evidence, Evidence::None);
    assert_eq!(db.brief, "DB 1 threads running, no lock waits");
}

#[test]
fn memory_and_the_network() {
    let m = |p| Srv {
        mem_avail_pct: p,
        ..Srv::default()
    };
    let b = diagnose(
        "open",
        &sweep(&RISE, &[m(50.0), m(8.0), m(3.0), m(2.0)]),
        3,
        Context::default(),
    );
    let w = b.leader().unwrap();
    assert_eq!((w.limit, w.from_step), (Limit::Memory, Some(2)));
    // 8% available while the host pages out 200 MiB: at its limit from then.
    let mut steps = sweep(&RISE, &[m(50.0), m(8.0), m(8.0), m(8.0)]);
    for s in &mut steps[1..] {
        let h = s.server.as_mut().unwrap().sources[0].host.as_mut().unwrap();
        h.swap_used_bytes = st(150.0 * 1048576.0, 200.0 * 1048576.0);
    }
    let b = diagnose("open", &steps, 3, Context::default());
    let w = b.leader().unwrap();
    assert_eq!((w.limit, w.from_step), (Limit::Memory, Some(1)));
    assert!(w.seen.contains("swap grew 200 MiB"), "{}", w.seen);
    // The same 8% without paging is only near.
    let b = diagnose(
        "open",
        &sweep(&RISE, &[m(50.0), m(8.0), m(8.0), m(8.0)]),
        3,
        Context::default(),
    );
    assert_eq!(b.outcome, Diagnosis::NoEvidence, "{}", b.verdict);

    // 95 Mbit/s of a 100 Mbit/s link from step 3.
    let mut steps = sweep(&RISE, &vec![Srv::default(); 4]);
    for (s, mbit) in steps.iter_mut().zip([30.0, 60.0, 95.0, 96.0]) {
        s.summary.bytes_in = (mbit * 1e6 / 8.0 * s.summary.duration_s) as u64;
    }
    let cx = Context {
        link_bps: Some(100e6),
    };
    let b = diagnose("open", &steps, 3, cx);
    let w = b.leader().unwrap();
    assert_eq!((w.limit, w.from_step), (Limit::Network, Some(2)));
    assert!(
        w.seen.starts_with("96 Mbit/s of the 100 Mbit/s link"),
        "{}",
        w.seen
    );
    assert!(b.not_observed.iter().all(|n| !n.contains("link-speed")));
}

#[test]
fn the_generator_itself() {
    let mut steps = sweep(&RISE, &vec![Srv::default(); 4]);
    steps[2].generator.cpu_pct = 97.0;
    let b = diagnose("open", &steps, 3, Context::default());
    let w = b.leader().unwrap();
    assert_eq!((w.limit, w.from_step), (Limit::Generator, Some(2)));
    assert!(
        b.verdict.contains("→ the generator (overload itself)"),
        "{}",
        b.verdict
    );
}

#[test]
fn the_limit_that_led_the_latency_rise_ranks_first_and_equal_onsets_tie() {
    let v = |cpu_from: usize, pool_from: usize| -> Vec<Srv> {
        (0..4)
            .map(|i| Srv {
                own: Some(if i >= cpu_from { 190.0 } else { 50.0 }),
                host_busy: if i >= cpu_from { 97.0 } else { 30.0 },
                fpm: Some(if i >= pool_from {
                    (8.0, 8.0, 30.0, 5)
                } else {
                    (3.0, 8.0, 0.0, 0)
                }),
                ..Srv::default()
            })
            .collect()
    };
    let b = diagnose("open", &sweep(&RISE, &v(1, 2)), 3, Context::default());
    assert_eq!(b.outcome, Diagnosis::Limit);
    assert_eq!(
        b.candidates
            .iter()
            .map(|c| c.limit)
            .take(2)
            .collect::<Vec<_>>(),
        vec![Limit::Cpu, Limit::WorkerPool]
    );
    assert_eq!(b.candidates[0].lead_steps, Some(2));
    let b = diagnose("open", &sweep(&RISE, &v(2, 2)), 3, Context::default());
    assert_eq!(b.outcome, Diagnosis::Tie);
    assert!(
        b.verdict.starts_with("knee at 400 req/s (step 4): a tie, all at their limit from the same step: the worker pool (all 8 workers busy"),
        "{}",
        b.verdict
    );
    assert!(
        b.verdict.contains("; the server's CPU (its processes"),
        "{}",
        b.verdict
    );
}

/// The busy host: others keep both cores busy and overflow some other listener,
/// while this server's processes idle and its own accept queue stays empty.
#[test]
fn host_wide_noise_does_not_win() {
    let noisy = |active, q| Srv {
        host_busy: 97.0,
        own: Some(6.0),
        tcp: Some((0.0, 1024, 4_927)),
        fpm: Some((active, 8.0, q, 0)),
        ..Srv::default()
    };
    let v = vec![
        noisy(3.0, 0.0),
        noisy(5.0, 0.0),
        noisy(6.0, 0.0),
        noisy(7.0, 0.0),
    ];
    let b = diagnose("open", &sweep(&RISE, &v), 3, Context::default());
    assert_eq!(b.outcome, Diagnosis::NoEvidence, "{}", b.verdict);
    assert!(b.candidates.iter().all(|c| c.evidence != Evidence::AtLimit));
    let acc = b
        .candidates
        .iter()
        .find(|c| c.limit == Limit::AcceptQueue)
        .unwrap();
    assert!(
        acc.seen
            .contains("19,708 listen drops counted host-wide (other ports': not this server's)"),
        "{}",
        acc.seen
    );
    assert!(
        b.verdict.starts_with("knee at 400 req/s (step 4): no observed limit was reached (7 of 8 workers busy, CPU 3%"),
        "{}",
        b.verdict
    );
    assert!(
        b.verdict
            .contains("nearest: the worker pool (7 of 8 workers busy at the knee)"),
        "{}",
        b.verdict
    );
    // With the pool full, the pool is named; the busy host still is not.
    let mut v = v;
    v[3] = noisy(8.0, 57.0);
    v[3].fpm.as_mut().unwrap().3 = 900;
    let b = diagnose("open", &sweep(&RISE, &v), 3, Context::default());
    assert_eq!(b.leader().unwrap().limit, Limit::WorkerPool);
    assert_eq!(
        b.candidates
            .iter()
            .filter(|c| c.evidence == Evidence::AtLimit)
            .count(),
        1
    );
    // Without --watch the host's CPU is shown, never ranked.
    for s in &mut v {
        s.own = None;
    }
    v[3].fpm = Some((7.0, 8.0, 0.0, 0));
    let b = diagnose("open", &sweep(&RISE, &v), 3, Context::default());
    assert_eq!(b.outcome, Diagnosis::NoEvidence);
    let cpu = b.candidates.iter().find(|c| c.limit == Limit::Cpu).unwrap();
    assert_eq!(cpu.evidence, Evidence::None);
    assert_eq!(cpu.brief, "host CPU 97% (server's share unknown)");
}

#[test]
fn nothing_observed_is_said_so() {
    let mut steps = sweep(&RISE, &vec![Srv::default(); 4]);
    for s in &mut steps {
        s.server = None;
    }
    let b = diagnose("closed", &steps, 3, Context::default());
    assert_eq!(b.outcome, Diagnosis::NoEvidence);
    assert!(b.leader().is_none());
    assert_eq!(
        b.candidates.len(),
        1,
        "only the generator is always observed"
    );
    assert!(
        b.verdict.starts_with("knee at 400 users (step 4): no observed limit was reached (generator CPU 10%); not observed: the worker pool"),
        "{}",
        b.verdict
    );
    assert_eq!(b.not_observed.len(), 6);
}

#[test]
fn latency_rise_is_the_first_doubling() {
    let steps = sweep(&[5.0, 5.5, 12.0, 900.0], &vec![Srv::default(); 4]);
    assert_eq!(latency_rise(&steps, 3), 2);
    // Sub-millisecond jitter is no rise.
    let steps = sweep(&[0.2, 0.5, 0.6, 9.0], &vec![Srv::default(); 4]);
    assert_eq!(latency_rise(&steps, 3), 3);
    assert_eq!(latency_rise(&steps, 1), 1);
}

#[test]
fn bits() {
    assert_eq!(fmt_bits(1.25e9), "1.3 Gbit/s");
    assert_eq!(fmt_bits(95e6), "95 Mbit/s");
    assert_eq!(fmt_bits(3e3), "3 kbit/s");
}

/// Each candidate names source kinds that exist (or a flag handed to the verdict), so the
/// "not observed" line names the flags that observe it.
#[test]
fn candidates_name_their_sources_flags() {
    for (_, what, told_by) in super::CANDIDATES {
        for k in told_by {
            assert!(
                crate::observe::source::kind(k).is_some() || k.starts_with("--"),
                "{what}: no source kind {k}"
            );
        }
    }
    assert_eq!(
        super::not_observed_line("the worker pool", &["fpm", "apache"]),
        "the worker pool (--fpm-status, --apache-status)"
    );
    assert_eq!(
        super::not_observed_line("the accept queue", &["tcp"]),
        "the accept queue (the target's port, on its host)"
    );
    assert_eq!(
        super::not_observed_line("the generator", &[]),
        "the generator"
    );
    // The worker pool is observed by every kind that sees pools, and only by them.
    let (_, _, pool_kinds) = super::CANDIDATES[0];
    assert_eq!(pool_kinds, crate::observe::source::pool_kinds());
}

/// A ramp (50 → 600 req/s over 12 s against a 4-worker pool answering 400 req/s), its
/// windows observed as the pool's status page saw them: full, with a queue, from the
/// seconds it could no longer keep up. The verdict names the pool, in seconds, not steps.
#[test]
fn a_ramp_names_the_pool_at_its_knee() {
    use crate::analysis::ramp::{analyze_with_verdict, windows};
    let series: Vec<crate::store::SeriesPoint> = (0..12)
        .map(|i| {
            let offered = 50.0 + 550.0 / 12.0 * (i as f64 + 0.5);
            let thr = offered.min(400.0);
            let over = (offered - 400.0).max(0.0);
            crate::store::SeriesPoint {
                t: i as f64,
                step: 0,
                offered,
                warmup: false,
                responses: thr as u64,
                ok: thr as u64,
                errors: 0,
                bytes_in: 0,
                response_time_mean_ms: 10.0 + over,
                response_time_max_ms: 20.0 + over,
                send_lag_mean_ms: 0.0,
                response_time_p50_ms: Some(10.0 + over),
                response_time_p95_ms: Some(12.0 + over),
                response_time_p99_ms: Some(15.0 + over),
                server: None,
            }
        })
        .collect();
    let base = step(0, 325.0, summary(325.0, 300.0, 10.0, 0));
    let w = windows(&series, &base, |t0, _| {
        // Busy with the load's share of 4 workers; full with a queue past 400 req/s (7.6 s).
        let level = 50.0 + 550.0 / 12.0 * t0;
        let busy = (level / 100.0).min(4.0).floor();
        let queue = if level >= 390.0 { 30.0 } else { 0.0 };
        Some(obs(&Srv {
            fpm: Some((busy, 4.0, queue, u64::from(queue > 0.0))),
            ..Srv::default()
        }))
    });
    let a = analyze_with_verdict("open", &series, &w, Context::default());
    let k = a.knee.as_ref().expect("a knee");
    assert!((k.level - 400.0).abs() <= 40.0, "{k:?}");
    let b = a.bottleneck.expect("a verdict");
    assert_eq!(b.outcome, Diagnosis::Limit, "{}", b.verdict);
    let lead = b.leader().unwrap();
    assert_eq!(lead.limit, Limit::WorkerPool);
    assert!(lead.seen.contains(" s at "), "{}", lead.seen);
    assert!(!b.verdict.contains("step"), "{}", b.verdict);
    assert!(
        b.verdict.starts_with("knee at 400 req/s ± 138"),
        "{}",
        b.verdict
    );
}
