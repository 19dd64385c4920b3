//! Takes one sample of this host: each [`Source`] in turn fills its part, with rates over the
//! interval since the previous tick.
use std::time::{Duration, Instant};

use super::apache::ApacheSource;
use super::fpm::FpmSource;
use super::groups::{GroupSpec, GroupTracker};
use super::mariadb::MysqlSource;
use super::net::TcpSource;
use super::proc::{thread_cpu_us, HostSource, ProcessSource};
use super::sample::Sample;
use super::source::{Source, Tick};

/// What one host's sampler watches.
#[derive(Debug, Clone)]
pub struct SamplerConfig {
    pub source: String,
    pub groups: Vec<GroupSpec>,
    pub fpm: Vec<FpmSource>,
    pub port: Option<u16>,
    /// Report this process (the generator, or the agent) too.
    pub this_process: bool,
    /// Time allowed to each FPM status fetch (and mod_status, and MariaDB query).
    pub fpm_timeout: Duration,
    pub apache: Vec<ApacheSource>,
    pub mysql: Vec<MysqlSource>,
}

impl SamplerConfig {
    /// The sources to read, in the order a sample has always been taken: the host, the
    /// groups, the status pages and databases, the port, this process.
    pub fn sources(self) -> Vec<Box<dyn Source>> {
        let mut v: Vec<Box<dyn Source>> = vec![Box::new(HostSource::new())];
        if !self.groups.is_empty() {
            v.push(Box::new(GroupTracker::new(self.groups)));
        }
        for f in self.fpm {
            v.push(Box::new(f));
        }
        for a in self.apache {
            v.push(Box::new(a));
        }
        for m in self.mysql {
            v.push(Box::new(m));
        }
        if let Some(p) = self.port {
            v.push(Box::new(TcpSource::new(p)));
        }
        if self.this_process {
            v.push(Box::new(ProcessSource::new()));
        }
        v
    }
}

pub struct Sampler {
    name: String,
    sources: Vec<Box<dyn Source>>,
    timeout: Duration,
    started: Instant,
    prev_at: Instant,
    /// Reused read buffer: /proc/net/tcp can be megabytes under TIME_WAIT floods.
    buf: String,
}

impl Sampler {
    /// Creates the sampler and takes the baseline reading the first sample's rates need.
    pub fn new(cfg: SamplerConfig) -> Sampler {
        let (name, timeout) = (cfg.source.clone(), cfg.fpm_timeout);
        Sampler::of(name, cfg.sources(), timeout)
    }

    /// A sampler of the given sources, named `name` (`local`); takes the baseline reading.
    pub fn of(name: String, sources: Vec<Box<dyn Source>>, timeout: Duration) -> Sampler {
        let now = Instant::now();
        let mut s = Sampler {
            name,
            sources,
            timeout,
            started: now,
            prev_at: now,
            buf: String::with_capacity(1 << 16),
        };
        let _ = s.sample();
        s
    }

    pub fn started(&self) -> Instant {
        self.started
    }

    pub fn sample(&mut self) -> Sample {
        let cpu0 = thread_cpu_us();
        let now = Instant::now();
        let interval = now.duration_since(self.prev_at);
        self.prev_at = now;
        let mut s = Sample {
            source: self.name.clone(),
            mono_ms: now.duration_since(self.started).as_millis() as u64,
            interval_ms: interval.as_millis() as u64,
            ..Default::default()
        };
        let mut tick = Tick::new(interval.as_secs_f64(), self.timeout, &mut self.buf);
        for src in &mut self.sources {
            src.sample(&mut tick, &mut s);
        }
        // Stamped once every source has answered (as the sample's rates end then).
        s.unix_ms = crate::clock::unix_ms();
        s.cost_us = thread_cpu_us().saturating_sub(cpu0);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_this_host() {
        let mut s = Sampler::new(SamplerConfig {
            source: "local".into(),
            groups: vec![],
            fpm: vec![],
            port: Some(1),
            this_process: true,
            fpm_timeout: Duration::from_millis(100),
            apache: Vec::new(),
            mysql: Vec::new(),
        });
        std::thread::sleep(Duration::from_millis(30));
        let x = s.sample();
        let h = x.host.expect("host");
        assert!(h.cores >= 1);
        assert!(h.mem_total_bytes > 0);
        assert!((0.0..=100.0).contains(&h.cpu_busy_pct));
        let g = x.generator.expect("self");
        assert_eq!(g.pid, std::process::id());
        assert!(g.rss_bytes > 0);
        assert!(x.tcp.is_some());
        assert!(x.interval_ms >= 30);
    }

    /// A scripted source: counts its ticks and writes them where the sample shows them.
    struct Counting(u64);

    impl Source for Counting {
        fn sample(&mut self, tick: &mut Tick, into: &mut Sample) {
            self.0 += 1;
            assert!(tick.secs >= 0.0);
            into.fpm.push(crate::observe::FpmSample {
                active: self.0,
                ..Default::default()
            });
        }
    }

    #[test]
    fn every_source_fills_its_part_of_each_sample_in_order() {
        let mut s = Sampler::of(
            "x".into(),
            vec![Box::new(Counting(0)), Box::new(Counting(10))],
            Duration::from_millis(10),
        );
        // The baseline reading was the first tick.
        let x = s.sample();
        assert_eq!(x.source, "x");
        let active: Vec<u64> = x.fpm.iter().map(|f| f.active).collect();
        assert_eq!(active, [2, 12]);
        assert!(x.host.is_none() && x.tcp.is_none() && x.generator.is_none());
        assert!(x.unix_ms > 0);
    }
}
#[cfg(test)]
mod cost {
    use super::*;
    #[test]
    #[ignore]
    fn cost_breakdown() {
        let spec = GroupSpec::parse("x=overload target").unwrap();
        for (name, groups, port) in [
            ("host only", vec![], None),
            ("host+port", vec![], Some(8080)),
            ("host+port+group", vec![spec], Some(8080)),
        ] {
            let mut s = Sampler::new(SamplerConfig {
                source: "l".into(),
                groups,
                fpm: vec![],
                port,
                this_process: true,
                fpm_timeout: Duration::from_millis(100),
                apache: Vec::new(),
                mysql: Vec::new(),
            });
            let mut tot = 0;
            for _ in 0..20 {
                tot += s.sample().cost_us;
            }
            eprintln!("{name}: {} µs/sample", tot / 20);
        }
    }
}
