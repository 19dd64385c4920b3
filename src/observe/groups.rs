//! `--watch NAME=REGEX|pid:N`: process groups, found by scanning /proc each sample.
//!
//! Every sample reads /proc/PID/stat of every process (cheap, and catches a comm change
//! after exec); the command line is read only for a process not seen before with that start
//! time and comm. A process's first interval counts no CPU (no earlier reading to subtract).
use std::collections::HashMap;

use regex::Regex;

use serde::{Deserialize, Serialize};

use super::proc::{count_fds, page_size, parse_cmdline, parse_pid_stat, ticks_per_sec};
use super::sample::Sample;
use super::source::{Kind, Source, Tick};
use super::stat::{Acc, Stat};
use super::summary::{SecondObservation, SourceObservation};

#[derive(Debug, Clone)]
pub enum Matcher {
    /// Matched against the process name (comm) or the command line.
    Regex(Regex),
    Pid(u32),
}

#[derive(Debug, Clone)]
pub struct GroupSpec {
    pub name: String,
    pub matcher: Matcher,
}

impl GroupSpec {
    /// `NAME=REGEX` or `NAME=pid:N`.
    pub fn parse(s: &str) -> Result<GroupSpec, String> {
        let (name, pat) = s
            .split_once('=')
            .ok_or_else(|| format!("'{s}': expected NAME=REGEX or NAME=pid:N"))?;
        let name = name.trim();
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
        {
            return Err(format!(
                "'{s}': the name must be letters, digits, '_', '-' or '.'"
            ));
        }
        let matcher = if let Some(p) = pat.strip_prefix("pid:") {
            match p.trim().parse::<u32>() {
                Ok(n) if n > 0 => Matcher::Pid(n),
                _ => return Err(format!("'{s}': bad pid '{p}'")),
            }
        } else {
            if pat.is_empty() {
                return Err(format!("'{s}': empty pattern"));
            }
            Matcher::Regex(Regex::new(pat).map_err(|e| {
                // regex's message spans lines; the first names the problem.
                let first = e.to_string();
                let last = first.lines().last().unwrap_or("").trim().to_string();
                format!("'{s}': bad regex: {last}")
            })?)
        };
        Ok(GroupSpec {
            name: name.to_string(),
            matcher,
        })
    }

    fn matches(&self, pid: u32, comm: &str, cmdline: &str) -> bool {
        match &self.matcher {
            Matcher::Pid(p) => *p == pid,
            Matcher::Regex(r) => r.is_match(comm) || r.is_match(cmdline),
        }
    }
}

struct Known {
    starttime: u64,
    comm: String,
    /// Indices of the groups this process belongs to.
    groups: Vec<usize>,
    ticks: u64,
    /// Seen in the current scan (to forget exited processes).
    seen: bool,
}

pub struct GroupTracker {
    specs: Vec<GroupSpec>,
    known: HashMap<u32, Known>,
    hz: f64,
    page: u64,
}

impl GroupTracker {
    pub fn new(specs: Vec<GroupSpec>) -> GroupTracker {
        GroupTracker {
            specs,
            known: HashMap::new(),
            hz: ticks_per_sec() as f64,
            page: page_size(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// Scans /proc; CPU is over `interval_s` since the previous scan.
    pub fn sample(&mut self, interval_s: f64) -> Vec<GroupSample> {
        let mut out: Vec<GroupSample> = self
            .specs
            .iter()
            .map(|g| GroupSample {
                name: g.name.clone(),
                ..Default::default()
            })
            .collect();
        if self.specs.is_empty() {
            return out;
        }
        for k in self.known.values_mut() {
            k.seen = false;
        }
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return out;
        };
        for entry in dir.flatten() {
            let Some(pid) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            // The process may exit between readdir and read: skip it.
            let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            let Some(st) = parse_pid_stat(&text) else {
                continue;
            };
            let prev_ticks = match self.known.get(&pid) {
                Some(k) if k.starttime == st.starttime && k.comm == st.comm => Some(k.ticks),
                _ => None,
            };
            if prev_ticks.is_none() {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline"))
                    .map(|b| parse_cmdline(&b))
                    .unwrap_or_default();
                let groups = (0..self.specs.len())
                    .filter(|&i| self.specs[i].matches(pid, &st.comm, &cmdline))
                    .collect();
                self.known.insert(
                    pid,
                    Known {
                        starttime: st.starttime,
                        comm: st.comm.clone(),
                        groups,
                        ticks: st.cpu_ticks,
                        seen: true,
                    },
                );
            }
            let Some(k) = self.known.get_mut(&pid) else {
                continue;
            };
            k.seen = true;
            k.ticks = st.cpu_ticks;
            if k.groups.is_empty() {
                continue;
            }
            let cpu_ticks = prev_ticks.map_or(0, |p| st.cpu_ticks.saturating_sub(p));
            let fds = count_fds(pid);
            for &g in &k.groups {
                let o = &mut out[g];
                o.processes += 1;
                o.threads += st.threads;
                o.rss_bytes += st.rss_pages * self.page;
                if interval_s > 0.0 {
                    o.cpu_pct += cpu_ticks as f64 / self.hz / interval_s * 100.0;
                }
                if let Some(n) = fds {
                    *o.open_fds.get_or_insert(0) += n;
                }
            }
        }
        self.known.retain(|_, k| k.seen);
        out
    }
}

impl Source for GroupTracker {
    fn sample(&mut self, tick: &mut Tick, into: &mut Sample) {
        into.groups = GroupTracker::sample(self, tick.secs);
    }
}

pub const KIND: Kind = Kind {
    name: "groups",
    flag: "--watch NAME=REGEX",
    summarise,
    second,
    pools: None,
};

fn summarise(samples: &[&Sample], into: &mut SourceObservation) {
    into.groups = observe(samples);
}

fn observe(samples: &[&Sample]) -> Vec<GroupObservation> {
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

fn second(s: &Sample, o: &mut SecondObservation) {
    if !s.groups.is_empty() {
        o.processes = Some(s.groups.iter().map(|g| g.processes).sum());
    }
}

/// A `--watch NAME=...` process group.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct GroupSample {
    pub name: String,
    pub processes: u64,
    pub threads: u64,
    /// Percent of one core (as top shows it): 250 = two and a half cores.
    pub cpu_pct: f64,
    pub rss_bytes: u64,
    /// Open file descriptors; None when /proc/PID/fd is not readable (another user's).
    pub open_fds: Option<u64>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_specs() {
        let g = GroupSpec::parse("fpm=php-fpm.*").unwrap();
        assert_eq!(g.name, "fpm");
        assert!(g.matches(1, "php-fpm8.2", ""));
        assert!(g.matches(1, "x", "php-fpm: pool www"));
        assert!(!g.matches(1, "nginx", "nginx: worker"));
        let p = GroupSpec::parse("t=pid:42").unwrap();
        assert!(p.matches(42, "", ""));
        assert!(!p.matches(43, "", ""));
        for bad in [
            "nope", "=x", "a b=x", "x=", "x=pid:", "x=pid:0", "x=pid:-3", "x=(",
        ] {
            let e = GroupSpec::parse(bad).unwrap_err();
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }

    #[test]
    fn finds_this_process() {
        let me = std::process::id();
        let mut t = GroupTracker::new(vec![GroupSpec::parse(&format!("me=pid:{me}")).unwrap()]);
        let first = t.sample(1.0);
        assert_eq!(first[0].processes, 1);
        assert!(first[0].rss_bytes > 0);
        assert!(first[0].threads >= 1);
        assert!(first[0].open_fds.unwrap_or(0) > 0);
        let second = t.sample(1.0);
        assert_eq!(second[0].processes, 1);
    }
}
