//! observe: what the server (and the generator) did while the load ran — CPU, load average,
//! memory, process groups, PHP-FPM's pool, TCP states and listen-queue overflows on the target
//! port — sampled from /proc on this host, and from `overload agent` on other hosts.
//!
//! ```no_run
//! use overload::observe::{ObserveConfig, Observer, summarize};
//! let h = Observer::start(ObserveConfig { port: Some(8080), ..Default::default() })?;
//! let t0 = overload::clock::unix_ms();
//! // ... the step's load runs here ...
//! let step = summarize(&h.samples_between(t0, overload::clock::unix_ms()));
//! h.stop();
//! # Ok::<(), overload::Error>(())
//! ```
//!
//! Files: `source` (the seam: a `Source` reads, its `Kind` summarises), and the sources,
//! each with its parser: `proc` (the host, this process), `net` (the port's TCP; netlink for
//! the listen limit), `groups` (--watch), `fpm` (FPM status), `apache` (mod_status),
//! `mariadb` (SHOW GLOBAL STATUS). Then `sampler` (one reading: the sources in turn),
//! `sample` (the wire types), `summary` (per step, per second), `findings`, `prom_export`
//! (the agent's samples as Prometheus text for `/metrics`: an exporter, not a scraper),
//! `agent` (server), `client` (agent client, clock offset), `args` (CLI options).
//! See docs/observe.md.
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub mod agent;
pub mod apache;
mod args;
pub mod client;
pub mod findings;
pub mod fpm;
pub mod groups;
pub mod mariadb;
pub mod net;
pub mod proc;
pub mod prom_export;
pub mod sample;
pub mod sampler;
pub mod source;
mod stat;
pub mod summary;

pub use apache::ApacheSource;
pub use args::ObserveArgs;
pub use client::{AgentClient, AgentSpec};
pub use findings::findings;
pub use fpm::FpmSource;
pub use groups::{GroupSpec, Matcher};
pub use mariadb::{query_pairs, MysqlConfig, MysqlSource};
pub use sample::{
    ApacheSample, FpmSample, GroupSample, HostSample, KernelLimits, MysqlSample, ProcSample,
    Sample, TcpSample, LOCAL,
};
pub use summary::{
    second, summarize, ApacheObservation, FpmObservation, GeneratorObservation, GroupObservation,
    HostObservation, MysqlObservation, SecondObservation, SourceObservation, Stat, StepObservation,
    TcpObservation,
};

use sampler::{Sampler, SamplerConfig};

/// What to observe and how often.
#[derive(Debug, Clone)]
pub struct ObserveConfig {
    /// Sampling period (default 1 s).
    pub every: Duration,
    /// Process groups to report on this host.
    pub groups: Vec<GroupSpec>,
    /// PHP-FPM status pages.
    pub fpm: Vec<FpmSource>,
    /// The TCP port to watch (the target's) on this host.
    pub port: Option<u16>,
    /// Remote agents to poll (their samples are tagged with the agent's name).
    pub agents: Vec<AgentSpec>,
    /// Sample this host too (source `local`). On by default.
    pub local: bool,
    /// Samples kept in memory (all sources together); the oldest go first.
    pub max_samples: usize,
    /// Apache mod_status pages, read from this host's sampler.
    pub apache: Vec<ApacheSource>,
    /// MariaDB/MySQL servers (`SHOW GLOBAL STATUS`), queried from this host's sampler.
    pub mysql: Vec<MysqlConfig>,
    /// The link's speed, bits/s (`--link-speed`): not sampled, handed to the verdict.
    pub link_bps: Option<f64>,
}

impl Default for ObserveConfig {
    fn default() -> Self {
        ObserveConfig {
            every: Duration::from_secs(1),
            groups: Vec::new(),
            fpm: Vec::new(),
            port: None,
            agents: Vec::new(),
            local: true,
            // A day at 1 s with a web and a DB agent.
            max_samples: 3 * 86_400,
            apache: Vec::new(),
            mysql: Vec::new(),
            link_bps: None,
        }
    }
}

/// Starts observing; see [`ObserverHandle`].
pub struct Observer;

impl Observer {
    /// Starts the sampler thread (and one poller thread per agent). Returns after the local
    /// baseline reading, so the first sample arrives one period later.
    pub fn start(cfg: ObserveConfig) -> crate::Result<ObserverHandle> {
        if cfg.every < Duration::from_millis(10) {
            return Err(crate::Error::usage("--sample-every: must be at least 10ms"));
        }
        let shared = Arc::new(Shared {
            samples: Mutex::new(VecDeque::new()),
            warnings: Mutex::new(Vec::new()),
            max: cfg.max_samples.max(1),
            stop: Mutex::new(false),
            wake: Condvar::new(),
        });
        let mut threads = Vec::new();
        if cfg.local {
            let sampler = Sampler::new(SamplerConfig {
                source: LOCAL.to_string(),
                groups: cfg.groups.clone(),
                fpm: cfg.fpm.clone(),
                port: cfg.port,
                this_process: true,
                fpm_timeout: (cfg.every / 2).min(Duration::from_secs(2)),
                apache: cfg.apache.clone(),
                mysql: cfg.mysql.iter().cloned().map(MysqlSource::new).collect(),
            });
            let sh = Arc::clone(&shared);
            let every = cfg.every;
            threads.push((
                LOCAL.to_string(),
                spawn("observe-local", move || local_loop(sampler, every, &sh))?,
            ));
        }
        for spec in &cfg.agents {
            let client = AgentClient::new(spec.clone(), Duration::from_secs(2).max(cfg.every));
            let sh = Arc::clone(&shared);
            let every = cfg.every;
            threads.push((
                format!("agent {}", client.name()),
                spawn("observe-agent", move || agent_loop(client, every, &sh))?,
            ));
        }
        Ok(ObserverHandle { shared, threads })
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> crate::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(f)
        .map_err(|e| crate::Error::runtime(format!("observe: cannot start a thread: {e}")))
}

struct Shared {
    samples: Mutex<VecDeque<Sample>>,
    warnings: Mutex<Vec<String>>,
    max: usize,
    stop: Mutex<bool>,
    wake: Condvar,
}

impl Shared {
    fn push(&self, s: Vec<Sample>) {
        let mut q = lock(&self.samples);
        for x in s {
            if q.len() >= self.max {
                q.pop_front();
            }
            q.push_back(x);
        }
    }

    fn warn(&self, msg: String) {
        let mut w = lock(&self.warnings);
        if !w.contains(&msg) && w.len() < 100 {
            w.push(msg);
        }
    }

    /// Sleeps until `until` or until stopped; true if stopped.
    fn wait(&self, until: Instant) -> bool {
        let mut stop = lock(&self.stop);
        loop {
            if *stop {
                return true;
            }
            let now = Instant::now();
            if now >= until {
                return false;
            }
            stop = match self.wake.wait_timeout(stop, until - now) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }
}

/// A poisoned lock only means another sampler thread panicked; the data is still usable.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Ticks on a fixed schedule (start + k·every), so slow reads don't make the period drift.
fn local_loop(mut sampler: Sampler, every: Duration, sh: &Shared) {
    let start = sampler.started();
    let mut k = 1u32;
    loop {
        let mut next = start + every * k;
        let now = Instant::now();
        if next < now {
            // Fell behind (suspended, overloaded host): skip missed ticks, don't burst.
            let behind = (now - start).as_nanos() / every.as_nanos().max(1);
            k = u32::try_from(behind).unwrap_or(u32::MAX - 1) + 1;
            next = start + every * k;
        }
        if sh.wait(next) {
            return;
        }
        let s = sampler.sample();
        sh.push(vec![s]);
        k = k.saturating_add(1);
    }
}

/// How often an agent's clock offset is measured again (clocks drift, NTP steps).
const REPROBE: Duration = Duration::from_secs(30);

fn agent_loop(mut client: AgentClient, every: Duration, sh: &Shared) {
    let mut probed: Option<Instant> = None;
    let mut next = Instant::now();
    loop {
        if probed.is_none_or(|p| p.elapsed() >= REPROBE) {
            match client.estimate_offset(5) {
                Ok(_) => probed = Some(Instant::now()),
                Err(e) => sh.warn(e),
            }
        }
        if client.offset().is_some() {
            match client.poll() {
                Ok(s) => sh.push(s),
                Err(e) => sh.warn(e),
            }
        }
        next += every;
        let now = Instant::now();
        if next < now {
            next = now + every;
        }
        if sh.wait(next) {
            return;
        }
    }
}

/// How long `stop` waits for a sampling thread. An agent or FPM status page that never
/// answers holds its thread for a whole request timeout (2 s or more, five times while
/// probing the clock); the run's time bound must not stretch by that, so such a thread is
/// left to end on its own (it holds only the shared buffer) and a warning says so.
const STOP_GRACE: Duration = Duration::from_millis(500);

/// A running observer. Dropping it stops the threads, as `stop` does.
pub struct ObserverHandle {
    shared: Arc<Shared>,
    /// Each thread with what it samples (`local`, `agent NAME`), for the warning.
    threads: Vec<(String, JoinHandle<()>)>,
}

impl ObserverHandle {
    /// Samples stamped within `[start_unix_ms, end_unix_ms]` (local clock), oldest first.
    /// A sample's rates cover the `interval_ms` before its stamp.
    pub fn samples_between(&self, start_unix_ms: u64, end_unix_ms: u64) -> Vec<Sample> {
        let q = lock(&self.shared.samples);
        let mut v: Vec<Sample> = q
            .iter()
            .filter(|s| s.unix_ms >= start_unix_ms && s.unix_ms <= end_unix_ms)
            .cloned()
            .collect();
        v.sort_by(|a, b| {
            a.unix_ms
                .cmp(&b.unix_ms)
                .then_with(|| a.source.cmp(&b.source))
        });
        v
    }

    /// Removes and returns the samples stamped at or after `since_unix_ms`, oldest first;
    /// older ones are discarded (the caller has moved past them).
    pub fn drain_since(&self, since_unix_ms: u64) -> Vec<Sample> {
        let mut q = lock(&self.shared.samples);
        let mut v: Vec<Sample> = q.drain(..).filter(|s| s.unix_ms >= since_unix_ms).collect();
        v.sort_by(|a, b| {
            a.unix_ms
                .cmp(&b.unix_ms)
                .then_with(|| a.source.cmp(&b.source))
        });
        v
    }

    /// The newest sample of `source`.
    pub fn latest(&self, source: &str) -> Option<Sample> {
        let q = lock(&self.shared.samples);
        q.iter().rev().find(|s| s.source == source).cloned()
    }

    /// Problems met so far (an agent unreachable, a token rejected), each once.
    pub fn warnings(&self) -> Vec<String> {
        lock(&self.shared.warnings).clone()
    }

    /// Stops sampling and waits for the threads, at most [`STOP_GRACE`]; returns every
    /// warning, including one per source that was still busy (a hung agent).
    pub fn stop(mut self) -> Vec<String> {
        self.shutdown();
        self.warnings()
    }

    fn shutdown(&mut self) {
        *lock(&self.shared.stop) = true;
        self.shared.wake.notify_all();
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline && self.threads.iter().any(|(_, t)| !t.is_finished()) {
            std::thread::sleep(Duration::from_millis(5));
        }
        for (what, t) in self.threads.drain(..) {
            if t.is_finished() {
                let _ = t.join();
            } else {
                // Dropping the handle detaches the thread; it sees `stop` after its request.
                self.shared.warn(format!(
                    "{what}: still waiting for an answer when the run ended; not waited for"
                ));
            }
        }
    }
}

impl Drop for ObserverHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl std::fmt::Debug for ObserverHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObserverHandle")
            .field("threads", &self.threads.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_on_schedule_and_windows() {
        let h = Observer::start(ObserveConfig {
            every: Duration::from_millis(50),
            ..Default::default()
        })
        .unwrap();
        let t0 = crate::clock::unix_ms();
        // Until four samples are in (about 200 ms; a loaded machine may take longer).
        let end = Instant::now() + Duration::from_secs(10);
        while h.samples_between(0, u64::MAX).len() < 4 {
            assert!(Instant::now() < end, "not 4 samples after 10 s");
            std::thread::sleep(Duration::from_millis(10));
        }
        let t1 = crate::clock::unix_ms();
        let all = h.samples_between(0, u64::MAX);
        assert!(all.iter().all(|s| s.source == LOCAL && s.host.is_some()));
        let mid = all[all.len() / 2].unix_ms;
        let w = h.samples_between(t0, mid);
        assert!(w.iter().all(|s| s.unix_ms >= t0 && s.unix_ms <= mid));
        assert!(!w.is_empty());
        let d = h.drain_since(mid);
        assert!(d.iter().all(|s| s.unix_ms >= mid && s.unix_ms <= t1 + 100));
        assert!(h.samples_between(0, mid.saturating_sub(1)).is_empty());
        h.stop();
    }

    #[test]
    fn a_hung_agent_does_not_delay_stop() {
        // Accepts and never answers: every request waits for the client's whole timeout.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (accepted, connected) = std::sync::mpsc::channel();
        let held = std::thread::spawn(move || {
            let c = listener.accept();
            let _ = accepted.send(());
            // The hung peer's behaviour: it holds the connection and never answers.
            std::thread::sleep(Duration::from_secs(8));
            drop(c);
        });
        let h = Observer::start(ObserveConfig {
            // The request timeout is max(2 s, every): 5 s here.
            every: Duration::from_secs(5),
            agents: vec![AgentSpec::parse(&format!("web=http://{addr}"), "").unwrap()],
            local: false,
            ..ObserveConfig::default()
        })
        .unwrap();
        // Stopped while the agent's thread waits for an answer.
        connected
            .recv_timeout(Duration::from_secs(10))
            .expect("the observer connects to the agent");
        let t = Instant::now();
        let warnings = h.stop();
        // Far below the 5 s request timeout the old join waited for.
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("agent web") && w.contains("not waited for")),
            "{warnings:?}"
        );
        drop(held);
    }

    #[test]
    fn rejects_tiny_period() {
        let e = Observer::start(ObserveConfig {
            every: Duration::from_millis(1),
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("sample-every"));
    }

    #[test]
    fn buffer_is_bounded() {
        let sh = Shared {
            samples: Mutex::new(VecDeque::new()),
            warnings: Mutex::new(Vec::new()),
            max: 3,
            stop: Mutex::new(false),
            wake: Condvar::new(),
        };
        sh.push(
            (0..5)
                .map(|i| Sample {
                    unix_ms: i,
                    ..Default::default()
                })
                .collect(),
        );
        let q = lock(&sh.samples);
        assert_eq!(
            q.iter().map(|s| s.unix_ms).collect::<Vec<_>>(),
            vec![2, 3, 4]
        );
    }
}
