//! Takes one sample of this host: reads /proc, subtracts the previous reading for rates.
use std::time::{Duration, Instant};

use super::apache::ApacheSource;
use super::fpm::FpmSource;
use super::groups::{GroupSpec, GroupTracker};
use super::mariadb::MysqlSource;
use super::net::{diag_tally, parse_counters, TcpTally};
use super::proc::{
    page_size, parse_loadavg, parse_meminfo, parse_pid_stat, parse_stat, thread_cpu_us,
    ticks_per_sec, Stat,
};
use super::sample::{HostSample, KernelLimits, ProcSample, Sample, TcpSample};

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

/// Host TCP counters, cumulative: ListenOverflows, ListenDrops, TCPTimeouts, RetransSegs.
type Counters = [u64; 4];

pub struct Sampler {
    cfg: SamplerConfig,
    groups: GroupTracker,
    kernel: KernelLimits,
    started: Instant,
    prev_at: Instant,
    prev_stat: Option<Stat>,
    prev_counters: Option<Counters>,
    prev_self_ticks: Option<u64>,
    hz: f64,
    page: u64,
    /// Reused read buffer: /proc/net/tcp can be megabytes under TIME_WAIT floods.
    buf: String,
}

impl Sampler {
    /// Creates the sampler and takes the baseline reading the first sample's rates need.
    pub fn new(mut cfg: SamplerConfig) -> Sampler {
        let groups = GroupTracker::new(std::mem::take(&mut cfg.groups));
        let now = Instant::now();
        let mut s = Sampler {
            cfg,
            groups,
            kernel: KernelLimits::read(),
            started: now,
            prev_at: now,
            prev_stat: None,
            prev_counters: None,
            prev_self_ticks: None,
            hz: ticks_per_sec() as f64,
            page: page_size(),
            buf: String::with_capacity(1 << 16),
        };
        let _ = s.sample();
        s
    }

    pub fn started(&self) -> Instant {
        self.started
    }

    fn read(&mut self, path: &str) -> Option<&str> {
        use std::io::Read;
        self.buf.clear();
        let mut f = std::fs::File::open(path).ok()?;
        f.read_to_string(&mut self.buf).ok()?;
        Some(&self.buf)
    }

    pub fn sample(&mut self) -> Sample {
        let cpu0 = thread_cpu_us();
        let now = Instant::now();
        let interval = now.duration_since(self.prev_at);
        let secs = interval.as_secs_f64();
        self.prev_at = now;
        let host = self.host(secs);
        let groups = if self.groups.is_empty() {
            Vec::new()
        } else {
            self.groups.sample(secs)
        };
        let timeout = self.cfg.fpm_timeout;
        let fpm = self.cfg.fpm.iter_mut().map(|f| f.sample(timeout)).collect();
        let apache = self.cfg.apache.iter().map(|a| a.sample(timeout)).collect();
        let mysql = self
            .cfg
            .mysql
            .iter_mut()
            .map(|m| m.sample(timeout))
            .collect();
        let tcp = self.cfg.port.map(|p| self.tcp(p));
        let generator = if self.cfg.this_process {
            self.this_process(secs)
        } else {
            None
        };
        Sample {
            source: self.cfg.source.clone(),
            unix_ms: crate::clock::unix_ms(),
            mono_ms: now.duration_since(self.started).as_millis() as u64,
            interval_ms: interval.as_millis() as u64,
            host,
            groups,
            fpm,
            tcp,
            generator,
            kernel: Some(self.kernel),
            cost_us: thread_cpu_us().saturating_sub(cpu0),
            apache,
            mysql,
        }
    }

    fn host(&mut self, secs: f64) -> Option<HostSample> {
        let stat = parse_stat(self.read("/proc/stat")?)?;
        let load = self
            .read("/proc/loadavg")
            .and_then(parse_loadavg)
            .unwrap_or_default();
        let mem = self
            .read("/proc/meminfo")
            .and_then(parse_meminfo)
            .unwrap_or_default();
        let prev = self.prev_stat.replace(stat)?;
        let (a, b) = (prev.cpu, stat.cpu);
        let total = b.total().saturating_sub(a.total()).max(1) as f64;
        let pct = |x: u64, y: u64| y.saturating_sub(x) as f64 / total * 100.0;
        let idle = pct(a.idle, b.idle);
        let iowait = pct(a.iowait, b.iowait);
        Some(HostSample {
            cores: stat.cores,
            cpu_user_pct: pct(a.user + a.nice, b.user + b.nice),
            cpu_system_pct: pct(a.system, b.system),
            cpu_iowait_pct: iowait,
            cpu_irq_pct: pct(a.irq, b.irq),
            cpu_softirq_pct: pct(a.softirq, b.softirq),
            cpu_steal_pct: pct(a.steal, b.steal),
            cpu_busy_pct: (100.0 - idle - iowait).max(0.0),
            load1: load.one,
            load5: load.five,
            load15: load.fifteen,
            runnable: load.running,
            mem_total_bytes: mem.total,
            mem_used_bytes: mem.total.saturating_sub(mem.available),
            mem_available_bytes: mem.available,
            ctx_switches_per_s: if secs > 0.0 {
                stat.ctxt.saturating_sub(prev.ctxt) as f64 / secs
            } else {
                0.0
            },
            swap_used_bytes: mem.swap_used,
        })
    }

    fn tcp(&mut self, port: u16) -> TcpSample {
        // sock_diag first (cheap, and gives the listen limit); /proc/net/tcp if netlink is
        // unavailable (e.g. a seccomp profile that forbids it).
        let (tally, limit) = match diag_tally(port) {
            Some(x) => x,
            None => {
                let mut tally = TcpTally::default();
                for path in ["/proc/net/tcp", "/proc/net/tcp6"] {
                    if let Some(text) = self.read(path) {
                        tally.add(text, port);
                    }
                }
                (tally, None)
            }
        };
        let mut c: Counters = [0; 4];
        if let Some(t) = self.read("/proc/net/netstat") {
            let v = parse_counters(
                t,
                "TcpExt",
                &["ListenOverflows", "ListenDrops", "TCPTimeouts"],
            );
            c[0] = v[0].unwrap_or(0);
            c[1] = v[1].unwrap_or(0);
            c[2] = v[2].unwrap_or(0);
        }
        if let Some(t) = self.read("/proc/net/snmp") {
            c[3] = parse_counters(t, "Tcp", &["RetransSegs"])[0].unwrap_or(0);
        }
        let d = match self.prev_counters.replace(c) {
            Some(p) => std::array::from_fn(|i| c[i].saturating_sub(p[i])),
            None => [0; 4],
        };
        let s = tally.states;
        TcpSample {
            port,
            established: s[1],
            syn_sent: s[2],
            // Request sockets print as SYN_RECV; NEW_SYN_RECV is their internal name.
            syn_recv: s[3] + s[12],
            fin_wait1: s[4],
            fin_wait2: s[5],
            time_wait: s[6],
            close: s[7],
            close_wait: s[8],
            last_ack: s[9],
            listen: s[10],
            closing: s[11],
            listen_queue: tally.listen_queue,
            listen_limit: limit,
            listen_overflows: d[0],
            listen_drops: d[1],
            tcp_timeouts: d[2],
            retrans_segs: d[3],
        }
    }

    fn this_process(&mut self, secs: f64) -> Option<ProcSample> {
        let st = parse_pid_stat(self.read("/proc/self/stat")?)?;
        let prev = self.prev_self_ticks.replace(st.cpu_ticks);
        let cpu_pct = match prev {
            Some(p) if secs > 0.0 => st.cpu_ticks.saturating_sub(p) as f64 / self.hz / secs * 100.0,
            _ => 0.0,
        };
        Some(ProcSample {
            pid: st.pid,
            cpu_pct,
            rss_bytes: st.rss_pages * self.page,
            threads: st.threads,
        })
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
