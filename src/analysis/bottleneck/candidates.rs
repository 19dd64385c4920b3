//! The candidates of the verdict, one function each: `None` when its source was not observed,
//! else the first step at (or near) its limit, its numbers and the change to make.
use super::{int, server, sources, Candidate, Ctx, Limit};
use crate::analysis::{generator_bound, plan_carried_out, GENERATOR_CPU};
use crate::observe::source;
use crate::observe::summary::{pool_at_limit_from, queue_growth};
use crate::store::StepRecord;
use crate::units::fmt_num;

/// Worker pools, from every source that sees one (`observe::source::pools`: PHP-FPM's and
/// the embedded target's, Apache's): at the limit from the first step where one was full
/// (every worker busy and requests waiting, or no room to spawn another) on more than one
/// sample, near it where the pools' busy workers came to 80% of their size.
pub(super) fn pool(c: &Ctx) -> Option<Candidate> {
    // Every pool of every source of a step.
    let pools = |s: &StepRecord| sources(s).flat_map(source::pools).collect::<Vec<_>>();
    if !c.steps.iter().any(|s| !pools(s).is_empty()) {
        return None;
    }
    // Busy and size of the pool, summed over the pools of the step.
    let busy = |s: &StepRecord| {
        pools(s)
            .iter()
            .fold((0.0, 0.0), |(b, n), p| (b + p.busy, n + p.size))
    };
    let queue = |s: &StepRecord| pools(s).iter().map(|p| p.queue).fold(0.0, f64::max);
    // Each kind of source's pools at their limit (more than one sample: pool_at_limit_from,
    // on whether a step was full at its busiest sample and for most of it); the earliest.
    let at = source::KINDS
        .iter()
        .filter_map(|k| k.pools)
        .filter_map(|of_kind| {
            let full: Vec<(bool, bool)> = c
                .steps
                .iter()
                .map(|s| {
                    let ps: Vec<source::Pool> = sources(s).flat_map(of_kind).collect();
                    (
                        ps.iter().any(|p| p.full_at_peak),
                        ps.iter().any(|p| p.full_at_peak && p.full_most_of_step),
                    )
                })
                .collect();
            pool_at_limit_from(&full)
        })
        .min();
    let near = c.first(|s| {
        let (b, n) = busy(s);
        n >= 1.0 && b >= 0.8 * n
    });
    let mut x = c.candidate(Limit::WorkerPool, at, near);
    let k = c.knee();
    let (b, n) = busy(k);
    // The queue at the first step and its peak from the step the pool filled through the
    // knee, each named by its step (the findings use the same computation over all steps).
    let queues: Vec<f64> = c.steps.iter().map(queue).collect();
    let ((i0, q0), (i1, q1)) = queue_growth(&queues, at.unwrap_or(0)).unwrap_or_default();
    let reached: u64 = c.steps[at.unwrap_or(0)..]
        .iter()
        .flat_map(pools)
        .map(|p| p.cap_hits)
        .sum();
    // Named as the knee's pools call their workers ("Apache workers").
    let name = pools(k)
        .iter()
        .map(|p| p.workers)
        .find(|w| *w != "workers")
        .unwrap_or("workers");
    let scoreboard = name == "Apache workers";
    x.numbers.insert("workers".into(), n);
    x.numbers.insert("busy".into(), b);
    x.numbers.insert("queue_first_step".into(), q0);
    x.numbers.insert("queue_peak".into(), q1);
    x.numbers
        .insert("max_children_reached".into(), reached as f64);
    x.seen = match at {
        Some(i) => {
            let queue = if q1 > 0.0 || q0 > 0.0 {
                format!(
                    " (queue {} at {} → {} at {})",
                    int(q0),
                    c.step_name(i0),
                    int(q1),
                    c.step_name(i1)
                )
            } else if scoreboard {
                " (under one idle on average, no scoreboard slot free)".to_string()
            } else {
                format!(" (max children reached {} times)", int(reached as f64))
            };
            // The pool's size where it filled (the knee's page may not have answered).
            let size = busy(&c.steps[i]).1.max(n);
            format!("all {} {name} busy from {}{queue}", int(size), c.at(i))
        }
        None if n < 1.0 => {
            // Every read of the pool's status page failed: a pool too busy to answer its own
            // status page, or a wrong URL. Either way no numbers to judge it by.
            let failed: u64 = pools(k).iter().map(|p| p.failed_reads).sum();
            format!(
                "its status page could not be read at the knee ({} failed reads)",
                int(failed as f64)
            )
        }
        None => format!("{} of {} {name} busy at the knee", int(b), int(n)),
    };
    x.brief = if let Some(i) = at {
        format!("all {} workers busy", int(busy(&c.steps[i]).1.max(n)))
    } else {
        format!("{} of {} workers busy", int(b), int(n))
    };
    x.change = "raise the pool (pm.max_children, MaxRequestWorkers, --workers) if CPU and \
                memory allow, or cut service time"
        .into();
    Some(x)
}

/// The server's CPU: its watched processes' share of the host's cores. At the limit when
/// they used 85% of all cores, or when the host was 90% busy and they took half of that.
/// Without `--watch` the share is unknown: the host's figure is shown, never ranked.
pub(super) fn cpu(c: &Ctx) -> Option<Candidate> {
    if !c
        .steps
        .iter()
        .any(|s| server(s).is_some_and(|o| o.host.is_some()))
    {
        return None;
    }
    // (own % of all cores, host busy %); own is None without --watch.
    let share = |s: &StepRecord| -> Option<(Option<f64>, f64)> {
        let o = server(s)?;
        let h = o.host?;
        let cores = f64::from(h.cores.max(1));
        let own = (!o.groups.is_empty())
            .then(|| o.groups.iter().map(|g| g.cpu_pct.mean).sum::<f64>() / cores);
        Some((own, h.cpu_busy_pct.mean))
    };
    let watched = c
        .steps
        .iter()
        .any(|s| share(s).is_some_and(|(o, _)| o.is_some()));
    let at = c.first(|s| {
        share(s).is_some_and(|(own, busy)| {
            own.is_some_and(|own| own >= 85.0 || (busy >= 90.0 && own >= 0.5 * busy))
        })
    });
    let near = c.first(|s| share(s).is_some_and(|(own, _)| own.is_some_and(|own| own >= 60.0)));
    let mut x = c.candidate(Limit::Cpu, at, near);
    let (own, busy) = share(c.knee()).unwrap_or((None, 0.0));
    let cores = server(c.knee()).and_then(|o| o.host).map_or(0, |h| h.cores);
    x.numbers.insert("host_busy_pct".into(), busy);
    x.numbers.insert("cores".into(), f64::from(cores));
    let names: Vec<&str> = server(c.knee())
        .map(|o| o.groups.iter().map(|g| g.name.as_str()).collect())
        .unwrap_or_default();
    match own {
        Some(own) => {
            x.numbers.insert("server_pct_of_cores".into(), own);
            let from = at
                .or(near)
                .map_or(String::new(), |i| format!(" from {}", c.at(i)));
            x.seen = format!(
                "its processes ({}) used {:.0}% of {} cores{from}; the host was {:.0}% busy",
                names.join(", "),
                own,
                cores,
                busy
            );
            x.brief = format!("CPU {own:.0}%");
        }
        None => {
            x.seen = format!(
                "the host was {busy:.0}% busy at the knee; the server's own share is unknown \
                 (--watch its processes){}",
                match (watched, c.ramp.is_some()) {
                    (false, _) => "",
                    (true, false) => " in that step",
                    (true, true) => " in those seconds",
                }
            );
            x.brief = format!("host CPU {busy:.0}% (server's share unknown)");
        }
    }
    x.change = "add cores or cut the CPU each request costs (opcode cache, cheaper code); more \
                workers will not help"
        .into();
    Some(x)
}

/// SYN retransmission starts at 1 s: a connect time p99 near it means SYNs were dropped.
const SYN_RETRY_MS: f64 = 900.0;

/// The accept queue of the server's own port: full when the port's queue reached its limit,
/// or when the host counted overflows and this run's connections waited for a SYN retry.
/// Overflows alone are host-wide (any port) and make no evidence.
pub(super) fn accept_queue(c: &Ctx) -> Option<Candidate> {
    fn tcp(s: &StepRecord) -> Option<&crate::observe::TcpObservation> {
        server(s).and_then(|o| o.tcp.as_ref())
    }
    if !c.steps.iter().any(|s| tcp(s).is_some()) {
        return None;
    }
    let full = |s: &StepRecord| {
        tcp(s).is_some_and(|t| match (t.listen_queue, t.listen_limit) {
            (Some(q), Some(l)) => l > 0 && q.max >= l as f64,
            _ => false,
        })
    };
    let syn_retry = |s: &StepRecord| {
        tcp(s).is_some_and(|t| t.listen_overflows + t.listen_drops > 0)
            && s.summary.connect_time_ms.p99 >= SYN_RETRY_MS
    };
    let at = c.first(|s| full(s) || syn_retry(s));
    let near = c.first(|s| {
        tcp(s).is_some_and(|t| match (t.listen_queue, t.listen_limit) {
            (Some(q), Some(l)) => l > 0 && q.max >= 0.5 * l as f64,
            _ => false,
        })
    });
    let mut x = c.candidate(Limit::AcceptQueue, at, near);
    let from = at.unwrap_or(0);
    let t = tcp(&c.steps[at.unwrap_or(c.steps.len() - 1)]).or_else(|| tcp(c.knee()));
    let port = t.map_or(0, |t| t.port);
    let limit = c
        .steps
        .iter()
        .filter_map(tcp)
        .filter_map(|t| t.listen_limit)
        .max();
    let peak = c.steps[from..]
        .iter()
        .filter_map(|s| tcp(s)?.listen_queue)
        .map(|q| q.max)
        .reduce(f64::max);
    let overflows: u64 = c.steps[from..]
        .iter()
        .filter_map(tcp)
        .map(|t| t.listen_overflows + t.listen_drops)
        .sum();
    let connect = c.steps[from..]
        .iter()
        .map(|s| s.summary.connect_time_ms.p99)
        .fold(0.0, f64::max);
    if let Some(p) = peak {
        x.numbers.insert("queue_peak".into(), p);
    }
    if let Some(l) = limit {
        x.numbers.insert("limit".into(), l as f64);
    }
    x.numbers
        .insert("host_listen_drops".into(), overflows as f64);
    x.numbers.insert("connect_p99_ms".into(), connect);
    let q = format!(
        "port {port}'s accept queue {} of {}",
        peak.map_or_else(|| "?".into(), int),
        limit.map_or_else(|| "?".into(), |l| int(l as f64))
    );
    let lim = limit.map_or_else(|| "?".into(), |l| int(l as f64));
    x.seen = match at {
        Some(i) if full(&c.steps[i]) => format!(
            "port {port}'s accept queue full ({} of {lim}) from {} ({} listen drops host-wide; \
             connect time p99 {} ms)",
            peak.map_or_else(|| "?".into(), int),
            c.at(i),
            int(overflows as f64),
            fmt_num(connect.round())
        ),
        // Full between two samples: the host dropped SYNs and this run's connections waited
        // for their retry, which is this port's queue overflowing.
        Some(i) => format!(
            "port {port}'s accept queue (limit {lim}) overflowed from {}: {} listen drops \
             host-wide while this run's connect time p99 reached {} ms (SYNs retried after 1 s)",
            c.at(i),
            int(overflows as f64),
            fmt_num(connect.round())
        ),
        None if overflows > 0 => format!(
            "{q} at most; {} listen drops counted host-wide (other ports': not this server's)",
            int(overflows as f64)
        ),
        None => format!("{q} at most, no listen drops"),
    };
    x.brief = if overflows == 0 && at.is_none() {
        "no listen drops".into()
    } else {
        format!(
            "accept queue {} of {}",
            peak.map_or_else(|| "?".into(), int),
            limit.map_or_else(|| "?".into(), |l| int(l as f64))
        )
    };
    let somaxconn = server(c.knee())
        .and_then(|o| o.kernel)
        .and_then(|k| k.somaxconn);
    x.change = format!(
        "raise the server's listen backlog (net.core.somaxconn = {} caps it) or accept faster",
        somaxconn.map_or_else(|| "?".into(), |m| int(m as f64))
    );
    Some(x)
}

/// Lock waits per second from which the database's locks hold requests up: each one is a
/// statement that found its table or row locked and waited.
const LOCK_WAITS: f64 = 0.5;

/// The database: lock waits (table or row), slow queries, or most connected threads running.
pub(super) fn database(c: &Ctx) -> Option<Candidate> {
    let dbs = |s: &StepRecord| {
        sources(s)
            .flat_map(|o| o.mysql.iter())
            .filter(|m| m.covered_ms > 0 || m.errors == 0)
            .cloned()
            .collect::<Vec<_>>()
    };
    if !c.steps.iter().any(|s| !dbs(s).is_empty()) {
        return None;
    }
    let hot = |m: &crate::observe::MysqlObservation| {
        m.lock_waits_per_s() >= LOCK_WAITS
            || m.slow_queries > 0
            || (m.threads_running.mean >= 4.0
                && m.threads_running.mean >= 0.5 * m.threads_connected.mean)
    };
    let at = c.first(|s| dbs(s).iter().any(hot));
    let near = c.first(|s| dbs(s).iter().any(|m| m.threads_running.max >= 4.0));
    let mut x = c.candidate(Limit::Database, at, near);
    let m = dbs(c.knee()).into_iter().next().unwrap_or_default();
    let waits = m.lock_waits_per_s();
    x.numbers
        .insert("threads_running".into(), m.threads_running.mean);
    x.numbers
        .insert("threads_connected".into(), m.threads_connected.mean);
    x.numbers.insert("lock_waits_per_s".into(), waits);
    x.numbers
        .insert("table_locks_waited".into(), m.table_locks_waited as f64);
    x.numbers.insert(
        "innodb_row_lock_waits".into(),
        m.innodb_row_lock_waits as f64,
    );
    x.numbers
        .insert("slow_queries".into(), m.slow_queries as f64);
    let from = at
        .or(near)
        .map_or(String::new(), |i| format!(" from {}", c.at(i)));
    x.seen = format!(
        "{} threads running of {} connected, {} lock waits/s (table {}, row {}), {} slow \
         queries{from}",
        fmt_num((m.threads_running.mean * 10.0).round() / 10.0),
        fmt_num(m.threads_connected.mean.round()),
        fmt_num((waits * 10.0).round() / 10.0),
        int(m.table_locks_waited as f64),
        int(m.innodb_row_lock_waits as f64),
        int(m.slow_queries as f64)
    );
    x.brief = if waits >= LOCK_WAITS {
        format!("DB {} lock waits/s", fmt_num((waits * 10.0).round() / 10.0))
    } else {
        format!(
            "DB {} threads running, no lock waits",
            fmt_num((m.threads_running.mean * 10.0).round() / 10.0)
        )
    };
    x.change = if m.table_locks_waited > m.innodb_row_lock_waits && waits >= LOCK_WAITS {
        "table locks: move the written tables to InnoDB (row locks) or batch the writes".into()
    } else if waits >= LOCK_WAITS {
        "row lock waits: shorten the transactions that write, or touch fewer rows".into()
    } else {
        "cut the queries' time (indexes, the slow query log) or cache their answers".into()
    };
    Some(x)
}

/// Swap growth over the sweep that says the host is paging (not old, idle swap).
const SWAP_GROWTH: f64 = 64.0 * 1048576.0;

/// Memory: the server host's available memory under 5% of its total, or under 10% while swap
/// grew by 64 MiB since the first step (near: under 10%, or swap growing).
pub(super) fn memory(c: &Ctx) -> Option<Candidate> {
    let avail = |s: &StepRecord| {
        let h = server(s)?.host?;
        (h.mem_total_bytes > 0)
            .then(|| h.mem_available_bytes.mean / h.mem_total_bytes as f64 * 100.0)
    };
    if !c.steps.iter().any(|s| avail(s).is_some()) {
        return None;
    }
    let swap = |s: &StepRecord| {
        server(s)
            .and_then(|o| o.host)
            .map_or(0.0, |h| h.swap_used_bytes.max)
    };
    let swap0 = swap(&c.steps[0]);
    let swapping = |s: &StepRecord| swap(s) - swap0 >= SWAP_GROWTH;
    let at = c.first(|s| avail(s).is_some_and(|p| p < 5.0 || (p < 10.0 && swapping(s))));
    let near = c.first(|s| avail(s).is_some_and(|p| p < 10.0) || swapping(s));
    let mut x = c.candidate(Limit::Memory, at, near);
    let p = avail(c.knee()).unwrap_or(100.0);
    let grew = swap(c.knee()) - swap0;
    x.numbers.insert("available_pct".into(), p);
    x.numbers.insert("swap_growth_bytes".into(), grew.max(0.0));
    let from = at
        .or(near)
        .map_or(String::new(), |i| format!(" (short from {})", c.at(i)));
    let swap_txt = if grew >= SWAP_GROWTH {
        format!(", swap grew {} MiB", int(grew / 1048576.0))
    } else {
        String::new()
    };
    x.seen = format!("{p:.1}% of memory available at the knee{swap_txt}{from}");
    x.brief = format!("memory {p:.0}% available");
    x.change = "fewer workers or less memory per worker (memory_limit), or more RAM".into();
    Some(x)
}

/// The network: the run's bytes each way, per second, against `--link-speed`.
pub(super) fn network(c: &Ctx) -> Option<Candidate> {
    let link_bps = c.link_bps;
    let link = link_bps.filter(|l| *l > 0.0)?;
    let bps = |s: &StepRecord| {
        let d = s.summary.duration_s;
        if d > 0.0 {
            (s.summary.bytes_in + s.summary.bytes_out) as f64 * 8.0 / d
        } else {
            0.0
        }
    };
    let at = c.first(|s| bps(s) >= 0.9 * link);
    let near = c.first(|s| bps(s) >= 0.7 * link);
    let mut x = c.candidate(Limit::Network, at, near);
    let b = bps(c.knee());
    x.numbers.insert("bits_per_s".into(), b);
    x.numbers.insert("link_bits_per_s".into(), link);
    x.seen = format!("{} of the {} link at the knee", fmt_bits(b), fmt_bits(link))
        + &at
            .or(near)
            .map_or(String::new(), |i| format!(", above 70% from {}", c.at(i)));
    x.brief = format!("network {:.0}% of {}", b / link * 100.0, fmt_bits(link));
    x.change = "compress text responses or make them smaller, or a faster link".into();
    Some(x)
}

/// 1.2 Gbit/s, 350 Mbit/s.
pub fn fmt_bits(b: f64) -> String {
    let (v, u) = if b >= 1e9 {
        (b / 1e9, "Gbit/s")
    } else if b >= 1e6 {
        (b / 1e6, "Mbit/s")
    } else {
        (b / 1e3, "kbit/s")
    };
    format!("{} {u}", fmt_num((v * 10.0).round() / 10.0))
}

/// The generator: at its limit when the step is generator-bound by its own CPU or by
/// arrivals it never sent; near when it is generator-bound by send lag alone (with its CPU
/// low, that is the host's scheduler keeping it waiting, a busy host rather than a resource
/// of its own) or its CPU passed 70% of its threads.
pub(super) fn generator(c: &Ctx) -> Option<Candidate> {
    let bound = |s: &StepRecord| generator_bound(c.mode, s);
    let own =
        |s: &StepRecord| s.generator.cpu_pct >= GENERATOR_CPU || !plan_carried_out(&s.summary);
    let at = c.first(|s| bound(s).is_some() && own(s));
    let near = c.first(|s| bound(s).is_some() || s.generator.cpu_pct >= 70.0);
    let mut x = c.candidate(Limit::Generator, at, near);
    let k = c.knee();
    x.numbers.insert("cpu_pct".into(), k.generator.cpu_pct);
    x.numbers
        .insert("send_lag_p99_ms".into(), k.summary.send_lag_ms.p99);
    x.seen = match at.or(near).and_then(|i| Some((i, bound(&c.steps[i])?))) {
        Some((i, why)) => format!("from {}: {why}", c.at(i)),
        None => format!(
            "CPU {:.0}% of its {} thread(s), send lag p99 {} ms at the knee",
            k.generator.cpu_pct,
            k.generator.threads,
            fmt_num(k.summary.send_lag_ms.p99)
        ),
    };
    x.brief = format!("generator CPU {:.0}%", k.generator.cpu_pct);
    x.change = "give overload more threads or cores (--threads), or split the load over \
                machines (--segment): this knee is overload's, not the server's"
        .into();
    Some(x)
}
