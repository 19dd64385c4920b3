//! The bottleneck at the knee: which limit the server (or the generator) reached first, ranked
//! by evidence and by how far it led the latency rise. Pure functions of the steps' records
//! and their observations, so a results folder read back says the same as the run did.
//!
//! Each candidate is one resource: the server's CPU (its `--watch`ed processes' share of the
//! cores), its worker pool (PHP-FPM, Apache's mod_status, the embedded target's
//! `/pool-status`), the accept queue of its own port, the database (`--mysql`), memory, the
//! network (`--link-speed`) and the generator. A candidate is *at its limit* from the first
//! step where its own numbers say so, *near* it when they came close, and has *no evidence*
//! otherwise. Host-wide counters (the CPU of other processes, ListenOverflows of other ports)
//! never make a candidate: the rule of `observe::findings`.
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::observe::{SourceObservation, StepObservation};
use crate::store::StepRecord;
use crate::units::fmt_num;

/// A resource that can limit a web stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Limit {
    WorkerPool,
    Cpu,
    AcceptQueue,
    Database,
    Memory,
    Network,
    Generator,
}

impl Limit {
    /// How the verdict names it.
    pub fn name(self) -> &'static str {
        match self {
            Limit::WorkerPool => "the worker pool",
            Limit::Cpu => "the server's CPU",
            Limit::AcceptQueue => "the accept queue",
            Limit::Database => "the database",
            Limit::Memory => "memory",
            Limit::Network => "the network",
            Limit::Generator => "the generator (overload itself)",
        }
    }
}

/// How strongly a candidate's numbers point at it, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Evidence {
    AtLimit,
    Near,
    None,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub limit: Limit,
    pub evidence: Evidence,
    /// Index (steps in load order) of the first step at (or near) the limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_step: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from_load: Option<f64>,
    /// Steps by which that came before the latency rise (0: the same step).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead_steps: Option<i64>,
    /// The numbers behind it, at the knee unless the name says otherwise.
    pub numbers: BTreeMap<String, f64>,
    /// What was seen, with its numbers.
    pub seen: String,
    /// The short form beside another verdict: "CPU 31%", "no listen drops".
    pub brief: String,
    /// The one change to make.
    pub change: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// One candidate reached its limit first.
    Limit,
    /// Two or more reached their limits in the same step.
    Tie,
    /// None of the observed candidates reached its limit.
    NoEvidence,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bottleneck {
    /// The knee: index (steps in load order) of the saturation point, and its load.
    pub knee_step: usize,
    pub knee_load: f64,
    /// The first step whose response time p90 doubled over the lighter steps' best.
    pub latency_rise_step: usize,
    pub outcome: Outcome,
    /// The one line: the knee, the winner with its numbers, the others briefly, the change.
    pub verdict: String,
    /// Every observed candidate, best first.
    pub candidates: Vec<Candidate>,
    /// What was not observed, with the flag that observes it.
    pub not_observed: Vec<String>,
}

impl Bottleneck {
    /// The winner (or the first of a tie); None without evidence.
    pub fn leader(&self) -> Option<&Candidate> {
        (self.outcome != Outcome::NoEvidence).then(|| &self.candidates[0])
    }
}

/// What the verdict needs besides the steps.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Context {
    /// The link's speed, bits/s (`--link-speed`).
    pub link_bps: Option<f64>,
}

impl Context {
    /// What a results folder's run.json `config` recorded (`link_speed_bps`).
    pub fn from_config(config: &serde_json::Value) -> Context {
        Context {
            link_bps: config
                .get("link_speed_bps")
                .and_then(serde_json::Value::as_f64)
                .filter(|l| l.is_finite() && *l > 0.0),
        }
    }
}

/// The verdict for the knee at `knee` (index into `steps`, which are in load order).
pub fn diagnose(mode: &str, steps: &[StepRecord], knee: usize, cx: Context) -> Bottleneck {
    let knee = knee.min(steps.len().saturating_sub(1));
    let c = Ctx {
        mode,
        steps: &steps[..(knee + 1).min(steps.len())],
        rise: latency_rise(steps, knee),
    };
    let mut not_observed = Vec::new();
    let mut candidates = Vec::new();
    let found = [
        (pool(&c), "the worker pool (--fpm-status, --apache-status)"),
        (cpu(&c), "the server's CPU (--watch NAME=REGEX)"),
        (
            accept_queue(&c),
            "the accept queue (the target's port, on its host)",
        ),
        (database(&c), "the database (--mysql USER@HOST:PORT)"),
        (memory(&c), "memory (the server's host)"),
        (network(&c, cx.link_bps), "the network (--link-speed)"),
        (generator(&c), "the generator"),
    ];
    for (cand, what) in found {
        match cand {
            Some(x) => candidates.push(x),
            None => not_observed.push(what.to_string()),
        }
    }
    // Stable: equal evidence and onset keep the order above (the server's own limits first).
    candidates.sort_by_key(|x| (x.evidence, x.from_step.unwrap_or(usize::MAX)));
    let outcome = match candidates.as_slice() {
        [a, b, ..]
            if a.evidence == Evidence::AtLimit
                && b.evidence == Evidence::AtLimit
                && a.from_step == b.from_step =>
        {
            Outcome::Tie
        }
        [a, ..] if a.evidence == Evidence::AtLimit => Outcome::Limit,
        _ => Outcome::NoEvidence,
    };
    let knee_load = steps.get(knee).map_or(0.0, |s| s.offered);
    let verdict = verdict(&c, knee, knee_load, outcome, &candidates, &not_observed);
    Bottleneck {
        knee_step: knee,
        knee_load,
        latency_rise_step: c.rise,
        outcome,
        verdict,
        candidates,
        not_observed,
    }
}

struct Ctx<'a> {
    mode: &'a str,
    /// The steps up to and including the knee: what came after did not cause it.
    steps: &'a [StepRecord],
    rise: usize,
}

impl Ctx<'_> {
    fn load(&self, x: f64) -> String {
        let unit = if self.mode == "closed" {
            "users"
        } else {
            "req/s"
        };
        format!("{} {unit}", fmt_num(x))
    }

    /// "step 7 at 377 req/s".
    fn at(&self, i: usize) -> String {
        let s = &self.steps[i];
        format!("step {} at {}", s.step + 1, self.load(s.offered))
    }

    fn knee(&self) -> &StepRecord {
        &self.steps[self.steps.len() - 1]
    }

    /// The first step where `f` holds.
    fn first(&self, f: impl Fn(&StepRecord) -> bool) -> Option<usize> {
        self.steps.iter().position(f)
    }

    /// A candidate with its onset filled in from the first step at, else near, the limit.
    fn candidate(&self, limit: Limit, at: Option<usize>, near: Option<usize>) -> Candidate {
        let (evidence, from) = match (at, near) {
            (Some(i), _) => (Evidence::AtLimit, Some(i)),
            (None, Some(i)) => (Evidence::Near, Some(i)),
            _ => (Evidence::None, None),
        };
        Candidate {
            limit,
            evidence,
            from_step: from,
            from_load: from.map(|i| self.steps[i].offered),
            lead_steps: from.map(|i| self.rise as i64 - i as i64),
            numbers: BTreeMap::new(),
            seen: String::new(),
            brief: String::new(),
            change: String::new(),
        }
    }
}

/// The server's source of a step: the first agent, else this host.
fn server(s: &StepRecord) -> Option<&SourceObservation> {
    s.server.as_ref().and_then(StepObservation::server)
}

/// Every source of a step (status pages and databases are read from wherever was told).
fn sources(s: &StepRecord) -> impl Iterator<Item = &SourceObservation> {
    s.server.iter().flat_map(|o| o.sources.iter())
}

/// The first step (up to the knee) whose response time p90 is at least twice the best of
/// the steps before it (and 1 ms more): where latency began to rise. The knee when none.
pub fn latency_rise(steps: &[StepRecord], knee: usize) -> usize {
    let mut best = f64::INFINITY;
    for (i, s) in steps.iter().enumerate().take(knee + 1) {
        let p90 = s.summary.response_time_ms.p90;
        if best.is_finite() && p90 >= 2.0 * best && p90 >= best + 1.0 {
            return i;
        }
        best = best.min(p90);
    }
    knee
}

fn int(x: f64) -> String {
    crate::observe::findings::int(x.max(0.0).round() as u64)
}

/// Worker pools: PHP-FPM's (and the embedded target's, which speaks its status format) full
/// when every worker is busy and requests queue (or max_children was hit); Apache's when no
/// worker is idle and no scoreboard slot is left to spawn one.
fn pool(c: &Ctx) -> Option<Candidate> {
    let observed = c
        .steps
        .iter()
        .any(|s| sources(s).any(|o| !o.fpm.is_empty() || !o.apache.is_empty()));
    if !observed {
        return None;
    }
    let fpm_full = |s: &StepRecord| {
        sources(s).any(|o| {
            o.fpm.iter().any(|f| {
                f.total.max >= 1.0
                    && f.active.max >= f.total.max
                    && (f.max_children_reached > 0 || f.listen_queue.max > 0.0)
            })
        })
    };
    let apache_full = |s: &StepRecord| sources(s).any(|o| o.apache.iter().any(|a| a.full()));
    // Busy and size of the pool, summed over the pools of the step.
    let busy = |s: &StepRecord| {
        sources(s).fold((0.0, 0.0), |(b, n), o| {
            let f = o
                .fpm
                .iter()
                .fold((0.0, 0.0), |(b, n), f| (b + f.active.max, n + f.total.max));
            let a = o.apache.iter().fold((0.0, 0.0), |(b, n), a| {
                (
                    b + a.busy.max,
                    n + (a.busy.max + a.idle.max).max(a.slots as f64 - a.open_slots.max),
                )
            });
            (b + f.0 + a.0, n + f.1 + a.1)
        })
    };
    let queue = |s: &StepRecord| {
        sources(s)
            .flat_map(|o| o.fpm.iter())
            .map(|f| f.listen_queue.max)
            .fold(0.0, f64::max)
    };
    let at = c.first(|s| fpm_full(s) || apache_full(s));
    let near = c.first(|s| {
        let (b, n) = busy(s);
        n >= 1.0 && b >= 0.8 * n
    });
    let mut x = c.candidate(Limit::WorkerPool, at, near);
    let k = c.knee();
    let (b, n) = busy(k);
    let q0 = queue(&c.steps[0]);
    let q1 = c.steps[at.unwrap_or(0)..]
        .iter()
        .map(queue)
        .fold(0.0, f64::max);
    let reached: u64 = c.steps[at.unwrap_or(0)..]
        .iter()
        .flat_map(sources)
        .flat_map(|o| o.fpm.iter())
        .map(|f| f.max_children_reached)
        .sum();
    let apache = k
        .server
        .iter()
        .flat_map(|o| &o.sources)
        .any(|o| !o.apache.is_empty());
    x.numbers.insert("workers".into(), n);
    x.numbers.insert("busy".into(), b);
    x.numbers.insert("queue_first_step".into(), q0);
    x.numbers.insert("queue_peak".into(), q1);
    x.numbers
        .insert("max_children_reached".into(), reached as f64);
    let name = if apache { "Apache workers" } else { "workers" };
    x.seen = match at {
        Some(i) => {
            let queue = if q1 > 0.0 || q0 > 0.0 {
                format!(" (queue grew {} → {})", int(q0), int(q1))
            } else if apache {
                " (none idle, no scoreboard slot free)".to_string()
            } else {
                format!(" (max children reached {} times)", int(reached as f64))
            };
            format!("all {} {name} busy from {}{queue}", int(n), c.at(i))
        }
        None => format!("{} of {} {name} busy at the knee", int(b), int(n)),
    };
    x.brief = if at.is_some() {
        format!("all {} workers busy", int(n))
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
fn cpu(c: &Ctx) -> Option<Candidate> {
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
                if watched { " in that step" } else { "" }
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
fn accept_queue(c: &Ctx) -> Option<Candidate> {
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
    x.seen = match at {
        Some(i) => format!(
            "{q} from {} ({} listen drops host-wide; connect time p99 {} ms{})",
            c.at(i),
            int(overflows as f64),
            fmt_num(connect),
            if connect >= SYN_RETRY_MS {
                ": SYNs were retried"
            } else {
                ""
            }
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

/// The database: lock waits (table or row), slow queries, or most connected threads running.
fn database(c: &Ctx) -> Option<Candidate> {
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
        m.lock_waits_per_s() >= 1.0
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
    x.brief = if waits >= 1.0 {
        format!("DB {} lock waits/s", fmt_num(waits.round()))
    } else {
        format!(
            "DB {} threads running, no lock waits",
            fmt_num((m.threads_running.mean * 10.0).round() / 10.0)
        )
    };
    x.change = if m.table_locks_waited > m.innodb_row_lock_waits && waits >= 1.0 {
        "table locks: move the written tables to InnoDB (row locks) or batch the writes".into()
    } else if waits >= 1.0 {
        "row lock waits: shorten the transactions that write, or touch fewer rows".into()
    } else {
        "cut the queries' time (indexes, the slow query log) or cache their answers".into()
    };
    Some(x)
}

/// Memory: the server host's available memory under 5% of its total (near: under 10%).
fn memory(c: &Ctx) -> Option<Candidate> {
    let avail = |s: &StepRecord| {
        let h = server(s)?.host?;
        (h.mem_total_bytes > 0)
            .then(|| h.mem_available_bytes.mean / h.mem_total_bytes as f64 * 100.0)
    };
    if !c.steps.iter().any(|s| avail(s).is_some()) {
        return None;
    }
    let at = c.first(|s| avail(s).is_some_and(|p| p < 5.0));
    let near = c.first(|s| avail(s).is_some_and(|p| p < 10.0));
    let mut x = c.candidate(Limit::Memory, at, near);
    let p = avail(c.knee()).unwrap_or(100.0);
    x.numbers.insert("available_pct".into(), p);
    let from = at
        .or(near)
        .map_or(String::new(), |i| format!(" (below 10% from {})", c.at(i)));
    x.seen = format!("{p:.1}% of memory available at the knee{from}");
    x.brief = format!("memory {p:.0}% available");
    x.change = "fewer workers or less memory per worker (memory_limit), or more RAM".into();
    Some(x)
}

/// The network: the run's bytes each way, per second, against `--link-speed`.
fn network(c: &Ctx, link_bps: Option<f64>) -> Option<Candidate> {
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

/// The generator: the step flagged generator-bound (its CPU, or send lag with connections to
/// spare, or arrivals never sent); near when its CPU passed 70% of its threads.
fn generator(c: &Ctx) -> Option<Candidate> {
    let bound = |s: &StepRecord| super::generator_bound(c.mode, s);
    let at = c.first(|s| bound(s).is_some());
    let near = c.first(|s| s.generator.cpu_pct >= 70.0);
    let mut x = c.candidate(Limit::Generator, at, near);
    let k = c.knee();
    x.numbers.insert("cpu_pct".into(), k.generator.cpu_pct);
    x.numbers
        .insert("send_lag_p99_ms".into(), k.summary.send_lag_ms.p99);
    x.seen = match at {
        Some(i) => format!(
            "from {}: {}",
            c.at(i),
            bound(&c.steps[i]).unwrap_or_default()
        ),
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

fn verdict(
    c: &Ctx,
    knee: usize,
    load: f64,
    outcome: Outcome,
    cands: &[Candidate],
    not_observed: &[String],
) -> String {
    let head = format!(
        "knee at {} (step {})",
        c.load(load),
        c.steps.get(knee).map_or(knee, |s| s.step) + 1
    );
    let others = |skip: usize| {
        cands[skip..]
            .iter()
            .map(|x| x.brief.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let tail = |skip: usize| {
        let o = others(skip);
        if o.is_empty() {
            String::new()
        } else {
            format!(", {o}")
        }
    };
    match outcome {
        Outcome::Limit => {
            let w = &cands[0];
            format!(
                "{head}: {}{} → {}; {}",
                w.seen,
                tail(1),
                w.limit.name(),
                w.change
            )
        }
        Outcome::Tie => {
            let n = cands
                .iter()
                .take_while(|x| {
                    x.evidence == Evidence::AtLimit && x.from_step == cands[0].from_step
                })
                .count();
            let tied: Vec<String> = cands[..n]
                .iter()
                .map(|x| format!("{} ({})", x.limit.name(), x.seen))
                .collect();
            format!(
                "{head}: a tie, all at their limit from the same step: {}{} → change one at a \
                 time, first: {}",
                tied.join("; "),
                tail(n),
                cands[0].change
            )
        }
        Outcome::NoEvidence => {
            let near: Vec<String> = cands
                .iter()
                .filter(|x| x.evidence == Evidence::Near)
                .map(|x| format!("{} ({})", x.limit.name(), x.seen))
                .collect();
            let mut s = format!("{head}: no observed limit was reached");
            if !cands.is_empty() {
                s += &format!(" ({})", others(0));
            }
            if !near.is_empty() {
                s += &format!("; nearest: {}", near.join("; "));
            }
            if !not_observed.is_empty() {
                s += &format!("; not observed: {}", not_observed.join(", "));
            }
            s
        }
    }
}

#[cfg(test)]
#[path = "bottleneck_tests.rs"]
mod tests;
