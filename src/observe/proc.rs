//! Parsers for the host and per-process files of /proc. Each takes the file's text and
//! returns `None` (or skips the line) on anything malformed: a sampler must never panic
//! because a kernel prints something unexpected. The host's source and the sampling
//! process's are here too.

use serde::{Deserialize, Serialize};

use super::sample::{KernelLimits, ProcSample, Sample};
use super::source::{Kind, Source, Tick};
use super::stat::Acc;
use super::summary::HostObservation;
use super::summary::{SecondObservation, SourceObservation};

/// The aggregate `cpu` line of /proc/stat, in clock ticks since boot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTimes {
    /// All ticks. guest and guest_nice are left out: the kernel already counts them in user
    /// and nice.
    pub fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }
}

/// What the sampler needs from /proc/stat.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stat {
    pub cpu: CpuTimes,
    /// Number of `cpuN` lines: the online cores.
    pub cores: u32,
    /// Context switches since boot.
    pub ctxt: u64,
}

pub fn parse_stat(text: &str) -> Option<Stat> {
    let mut out = Stat::default();
    let mut seen_cpu = false;
    for line in text.lines() {
        let mut it = line.split_ascii_whitespace();
        match it.next() {
            Some("cpu") => {
                let v: Vec<u64> = it.map_while(|f| f.parse().ok()).collect();
                // Kernels before 2.6.11 lack steal; older fields are all required.
                if v.len() < 7 {
                    return None;
                }
                out.cpu = CpuTimes {
                    user: v[0],
                    nice: v[1],
                    system: v[2],
                    idle: v[3],
                    iowait: v[4],
                    irq: v[5],
                    softirq: v[6],
                    steal: v.get(7).copied().unwrap_or(0),
                };
                seen_cpu = true;
            }
            Some(k) if k.starts_with("cpu") && k[3..].bytes().all(|b| b.is_ascii_digit()) => {
                out.cores += 1;
            }
            Some("ctxt") => out.ctxt = it.next()?.parse().ok()?,
            _ => {}
        }
    }
    seen_cpu.then_some(out)
}

/// /proc/loadavg.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LoadAvg {
    pub one: f64,
    pub five: f64,
    pub fifteen: f64,
    /// Runnable scheduling entities right now (the `R/T` field's R).
    pub running: u64,
}

pub fn parse_loadavg(text: &str) -> Option<LoadAvg> {
    let mut it = text.split_ascii_whitespace();
    let one = it.next()?.parse().ok()?;
    let five = it.next()?.parse().ok()?;
    let fifteen = it.next()?.parse().ok()?;
    let running = it
        .next()
        .and_then(|f| f.split_once('/'))
        .and_then(|(r, _)| r.parse().ok())
        .unwrap_or(0);
    Some(LoadAvg {
        one,
        five,
        fifteen,
        running,
    })
}

/// /proc/meminfo, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemInfo {
    pub total: u64,
    pub available: u64,
    /// SwapTotal − SwapFree.
    pub swap_used: u64,
}

pub fn parse_meminfo(text: &str) -> Option<MemInfo> {
    let mut total = None;
    let mut available = None;
    let mut free = 0;
    let (mut swap_total, mut swap_free) = (0, 0);
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let kb = v
            .split_ascii_whitespace()
            .next()
            .and_then(|n| n.parse::<u64>().ok());
        match k {
            "MemTotal" => total = kb,
            "MemAvailable" => available = kb,
            "MemFree" => free = kb.unwrap_or(0),
            "SwapTotal" => swap_total = kb.unwrap_or(0),
            "SwapFree" => swap_free = kb.unwrap_or(0),
            _ => {}
        }
    }
    // MemAvailable exists since 3.14; before it, MemFree is the honest lower bound.
    Some(MemInfo {
        total: total? * 1024,
        available: available.unwrap_or(free) * 1024,
        swap_used: swap_total.saturating_sub(swap_free) * 1024,
    })
}

/// The fields of /proc/PID/stat the sampler uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PidStat {
    pub pid: u32,
    pub comm: String,
    pub state: char,
    /// User + system CPU time, clock ticks.
    pub cpu_ticks: u64,
    pub threads: u64,
    /// Start time after boot, clock ticks: with the pid, identifies a process across samples
    /// (pids are reused).
    pub starttime: u64,
    pub rss_pages: u64,
}

pub fn parse_pid_stat(text: &str) -> Option<PidStat> {
    // comm may hold spaces and ')' itself: it ends at the last ')'.
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    if close < open {
        return None;
    }
    let pid = text[..open].trim().parse().ok()?;
    let comm = text[open + 1..close].to_string();
    let rest: Vec<&str> = text[close + 1..].split_ascii_whitespace().collect();
    // rest[0] is field 3 (state); field N is rest[N - 3].
    let field = |n: usize| -> Option<u64> { rest.get(n - 3)?.parse().ok() };
    Some(PidStat {
        pid,
        comm,
        state: rest.first()?.chars().next()?,
        cpu_ticks: field(14)?.checked_add(field(15)?)?,
        threads: field(20)?,
        starttime: field(22)?,
        // rss is signed in the kernel's format; a negative value would be a kernel bug.
        rss_pages: rest.get(24 - 3)?.parse::<i64>().ok()?.max(0) as u64,
    })
}

/// /proc/PID/cmdline: NUL-separated arguments, joined with spaces for matching.
pub fn parse_cmdline(raw: &[u8]) -> String {
    let s = String::from_utf8_lossy(raw);
    s.split('\0')
        .filter(|a| !a.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Clock ticks per second and the page size, from sysconf (fixed for the process's life).
pub fn ticks_per_sec() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as u64
    } else {
        100
    }
}

pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// Entries of /proc/PID/fd (None when not permitted: another user's process).
pub fn count_fds(pid: u32) -> Option<u64> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    Some(dir.count() as u64)
}

/// CPU time used by the calling thread, µs (the sampler's own cost).
pub fn thread_cpu_us() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec as u64 * 1_000_000 + ts.tv_nsec as u64 / 1000
}

/// The host: CPU by mode, load, memory (/proc/stat, loadavg, meminfo), and the kernel's
/// limits, read once when sampling starts.
pub struct HostSource {
    kernel: KernelLimits,
    prev_stat: Option<Stat>,
}

impl HostSource {
    pub fn new() -> HostSource {
        HostSource {
            kernel: KernelLimits::read(),
            prev_stat: None,
        }
    }

    fn read(&mut self, tick: &mut Tick) -> Option<HostSample> {
        let secs = tick.secs;
        let stat = parse_stat(tick.read("/proc/stat")?)?;
        let load = tick
            .read("/proc/loadavg")
            .and_then(parse_loadavg)
            .unwrap_or_default();
        let mem = tick
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
}

impl Default for HostSource {
    fn default() -> Self {
        HostSource::new()
    }
}

impl Source for HostSource {
    fn sample(&mut self, tick: &mut Tick, into: &mut Sample) {
        into.host = self.read(tick);
        into.kernel = Some(self.kernel);
    }
}

pub const HOST: Kind = Kind {
    name: "host",
    flag: "the server's host",
    summarise,
    second,
    pools: None,
};

fn summarise(samples: &[&Sample], into: &mut SourceObservation) {
    into.host = observe(samples);
    into.kernel = samples.iter().rev().find_map(|s| s.kernel);
}

fn observe(samples: &[&Sample]) -> Option<HostObservation> {
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

fn second(s: &Sample, o: &mut SecondObservation) {
    if let Some(h) = &s.host {
        o.cpu_busy_pct = Some(h.cpu_busy_pct);
        o.load1 = Some(h.load1);
        o.mem_available_bytes = Some(h.mem_available_bytes);
    }
}

/// The sampling process itself: the generator, or the agent. Its step summary is the
/// step's `generator` (summary.rs), not a host's.
pub struct ProcessSource {
    prev_ticks: Option<u64>,
    hz: f64,
    page: u64,
}

impl ProcessSource {
    pub fn new() -> ProcessSource {
        ProcessSource {
            prev_ticks: None,
            hz: ticks_per_sec() as f64,
            page: page_size(),
        }
    }

    fn read(&mut self, tick: &mut Tick) -> Option<ProcSample> {
        let secs = tick.secs;
        let st = parse_pid_stat(tick.read("/proc/self/stat")?)?;
        let prev = self.prev_ticks.replace(st.cpu_ticks);
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

impl Default for ProcessSource {
    fn default() -> Self {
        ProcessSource::new()
    }
}

impl Source for ProcessSource {
    fn sample(&mut self, tick: &mut Tick, into: &mut Sample) {
        into.generator = self.read(tick);
    }
}

/// Host-wide figures. CPU percentages are of all cores (100 = every core busy).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostSample {
    pub cores: u32,
    /// user + nice.
    pub cpu_user_pct: f64,
    pub cpu_system_pct: f64,
    pub cpu_iowait_pct: f64,
    /// hard + soft interrupts are apart: softirq is where the network stack runs.
    pub cpu_irq_pct: f64,
    pub cpu_softirq_pct: f64,
    pub cpu_steal_pct: f64,
    /// 100 − idle − iowait.
    pub cpu_busy_pct: f64,
    pub load1: f64,
    pub load5: f64,
    pub load15: f64,
    /// Runnable tasks at the instant of the sample.
    pub runnable: u64,
    pub mem_total_bytes: u64,
    /// total − available.
    pub mem_used_bytes: u64,
    pub mem_available_bytes: u64,
    pub ctx_switches_per_s: f64,
    /// SwapTotal − SwapFree.
    pub swap_used_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  78791 5 21926 284498 1460 3 2110 3416 0 0\n\
        cpu0 37069 0 10099 145981 194 0 1005 1753 0 0\n\
        cpu1 41722 0 11827 138516 1265 0 1105 1663 0 0\n\
        intr 1 2 3\nctxt 123456789\nbtime 1700000000\nprocesses 12000\n";

    #[test]
    fn stat() {
        let s = parse_stat(STAT).unwrap();
        assert_eq!(s.cores, 2);
        assert_eq!(s.ctxt, 123456789);
        assert_eq!(s.cpu.user, 78791);
        assert_eq!(s.cpu.nice, 5);
        assert_eq!(s.cpu.steal, 3416);
        assert_eq!(
            s.cpu.total(),
            78791 + 5 + 21926 + 284498 + 1460 + 3 + 2110 + 3416
        );
    }

    #[test]
    fn stat_malformed() {
        assert_eq!(parse_stat(""), None);
        assert_eq!(parse_stat("cpu 1 2 x"), None);
        assert_eq!(parse_stat("ctxt nope\ncpu 1 2 3 4 5 6 7"), None);
        // No steal column (old kernels): still parsed.
        assert_eq!(parse_stat("cpu 1 2 3 4 5 6 7\n").unwrap().cpu.steal, 0);
    }

    #[test]
    fn loadavg() {
        let l = parse_loadavg("9.30 1.96 0.95 8/145 12376\n").unwrap();
        assert_eq!((l.one, l.five, l.fifteen, l.running), (9.3, 1.96, 0.95, 8));
        assert_eq!(parse_loadavg("1.0 x"), None);
        assert_eq!(parse_loadavg("").map(|l| l.one), None);
    }

    #[test]
    fn meminfo() {
        let m = parse_meminfo(
            "MemTotal:       24682416 kB\nMemFree:        21369400 kB\n\
             MemAvailable:   23658252 kB\nBuffers: 1 kB\nSwapTotal: 100 kB\nSwapFree: 60 kB\n",
        )
        .unwrap();
        assert_eq!(m.total, 24682416 * 1024);
        assert_eq!(m.swap_used, 40 * 1024);
        assert_eq!(m.available, 23658252 * 1024);
        let old = parse_meminfo("MemTotal: 100 kB\nMemFree: 40 kB\n").unwrap();
        assert_eq!(old.available, 40 * 1024);
        assert_eq!(parse_meminfo("garbage\n: :\n"), None);
    }

    #[test]
    fn pid_stat() {
        let t = "12378 (cat) R 12365 12365 6098 0 -1 4194304 99 0 0 0 7 3 0 0 20 0 4 0 \
                 196227 3133440 413 18446744073709551615 9476 0";
        let p = parse_pid_stat(t).unwrap();
        assert_eq!(p.pid, 12378);
        assert_eq!(p.comm, "cat");
        assert_eq!(p.state, 'R');
        assert_eq!(p.cpu_ticks, 10);
        assert_eq!(p.threads, 4);
        assert_eq!(p.starttime, 196227);
        assert_eq!(p.rss_pages, 413);
    }

    #[test]
    fn pid_stat_odd_comm() {
        let t = "7 (a) b (c) S 1 1 1 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 5 100 -3";
        let p = parse_pid_stat(t).unwrap();
        assert_eq!(p.comm, "a) b (c");
        assert_eq!(p.rss_pages, 0);
        assert_eq!(parse_pid_stat("7 (x S 1"), None);
        assert_eq!(parse_pid_stat(")( "), None);
        assert_eq!(parse_pid_stat("7 (x) S 1 2"), None);
        assert_eq!(parse_pid_stat(""), None);
    }

    #[test]
    fn cmdline() {
        assert_eq!(
            parse_cmdline(b"php-fpm: pool www\0\0"),
            "php-fpm: pool www".to_string()
        );
        assert_eq!(parse_cmdline(b"/usr/bin/x\0-a\0b\0"), "/usr/bin/x -a b");
        assert_eq!(parse_cmdline(b""), "");
        assert_eq!(parse_cmdline(&[0xff, 0, b'a']), "\u{fffd} a");
    }
}
