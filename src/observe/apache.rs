//! Apache's mod_status page (`--apache-status URL`), fetched as `URL?auto`: busy and idle
//! workers and the scoreboard, for the worker-pool verdict of prefork and event stacks.
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::sample::Sample;
use super::source::{no_second, Kind, Pool, Source, Tick};
use super::stat::{Acc, Stat};
use super::summary::SourceObservation;
use crate::http_get;
use crate::url::Url;

/// One `--apache-status URL`.
#[derive(Debug, Clone)]
pub struct ApacheSource {
    pub url: Url,
    pub raw: String,
}

impl ApacheSource {
    pub fn parse(s: &str) -> Result<ApacheSource, String> {
        let url = Url::parse(s.trim())?.http_only()?;
        Ok(ApacheSource {
            url,
            raw: s.trim().to_string(),
        })
    }

    /// The status URL with `auto` (the machine-readable form) added to its query.
    fn target(&self) -> String {
        let t = &self.url.target;
        if t.contains('?') {
            format!("{t}&auto")
        } else {
            format!("{t}?auto")
        }
    }

    pub fn sample(&self, timeout: Duration) -> ApacheSample {
        let got = http_get::get(&self.url, &self.target(), &[], timeout, 1 << 20).and_then(|r| {
            if r.truncated {
                return Err("status page larger than 1 MiB".to_string());
            }
            if r.status != 200 {
                return Err(format!("status page answered {}", r.status));
            }
            parse_auto(&r.text())
        });
        match got {
            Ok(mut s) => {
                s.url = self.raw.clone();
                s
            }
            Err(e) => ApacheSample {
                url: self.raw.clone(),
                error: Some(e),
                ..Default::default()
            },
        }
    }
}

/// Parses the `?auto` page: `Key: value` lines, among them BusyWorkers, IdleWorkers and
/// Scoreboard. A page without BusyWorkers is not mod_status (an HTML page, a login form).
pub fn parse_auto(text: &str) -> Result<ApacheSample, String> {
    let mut s = ApacheSample::default();
    let mut seen = false;
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim();
        match k.trim() {
            "BusyWorkers" => {
                s.busy = v.parse().map_err(|_| format!("BusyWorkers: '{v}'"))?;
                seen = true;
            }
            "IdleWorkers" => s.idle = v.parse().map_err(|_| format!("IdleWorkers: '{v}'"))?,
            "Scoreboard" => {
                s.slots = v.chars().count() as u64;
                s.open_slots = v.chars().filter(|c| *c == '.').count() as u64;
                s.reading = v.chars().filter(|c| *c == 'R').count() as u64;
            }
            _ => {}
        }
    }
    if !seen {
        return Err("not a mod_status ?auto page (no BusyWorkers line)".into());
    }
    Ok(s)
}

/// One mod_status page over a step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ApacheObservation {
    pub url: String,
    pub busy: Stat,
    pub idle: Stat,
    /// Busy plus idle in each sample: the pool's size then. The sum of `busy.max` and
    /// `idle.max` is not, as they come from different moments (4 idle before the load rose,
    /// 8 busy after, in a pool of 8). 0 in results written before it was recorded.
    pub workers: Stat,
    /// Scoreboard slots (the most seen).
    pub slots: u64,
    pub open_slots: Stat,
    pub reading: Stat,
    /// Samples where the page could not be fetched.
    pub errors: u64,
}

impl ApacheObservation {
    /// Every worker busy at the step's busiest sample, and no scoreboard slot left to spawn
    /// one into (or the busy count at the scoreboard's size).
    pub fn full_at_peak(&self) -> bool {
        // Results from before `workers` was recorded: no idle worker in any sample.
        let every_worker = match self.workers.max > 0.0 {
            true => self.busy.max >= self.workers.max,
            false => self.idle.max < 1.0,
        };
        self.busy.max >= 1.0
            && every_worker
            && (self.open_slots.max < 1.0 || self.busy.max >= self.slots as f64)
    }

    /// Full for most of the step, not at one sample: under one worker idle on average. A
    /// sample taken as a batch of answers ended may see a worker or two idle for an instant
    /// (prefork without keep-alive), so "none idle in any sample" would hang the verdict on
    /// the sampler's phase.
    pub fn full_most_of_step(&self) -> bool {
        self.full_at_peak() && self.idle.mean < 1.0
    }
}

impl Source for ApacheSource {
    fn sample(&mut self, tick: &mut Tick, into: &mut Sample) {
        let s = ApacheSource::sample(self, tick.timeout);
        into.apache.push(s);
    }
}

pub const KIND: Kind = Kind {
    name: "apache",
    flag: "--apache-status",
    summarise: |samples, into| into.apache = observe(samples),
    second: no_second,
    pools: Some(pools),
};

/// Apache's workers: full when every worker is busy, under one idle on average over the
/// step, and no scoreboard slot is left to spawn one.
fn pools(o: &SourceObservation) -> Vec<Pool> {
    o.apache
        .iter()
        .map(|a| {
            // Results from before `workers` was recorded: the sum of the maxima, which can
            // overstate the pool.
            let size = if a.workers.max > 0.0 {
                a.workers.max
            } else {
                a.busy.max + a.idle.max
            };
            Pool {
                workers: "Apache workers",
                busy: a.busy.max,
                size: size.max(a.slots as f64 - a.open_slots.max),
                full_at_peak: a.full_at_peak(),
                full_most_of_step: a.full_most_of_step(),
                queue: 0.0,
                cap_hits: 0,
                failed_reads: a.errors,
            }
        })
        .collect()
}

/// The step's summary of each page, in the order the pages were given.
fn observe(samples: &[&Sample]) -> Vec<ApacheObservation> {
    let mut out: Vec<(ApacheObservation, [Acc; 5])> = Vec::new();
    for a in samples.iter().flat_map(|s| &s.apache) {
        let i = match out.iter().position(|(o, _)| o.url == a.url) {
            Some(i) => i,
            None => {
                out.push((
                    ApacheObservation {
                        url: a.url.clone(),
                        ..Default::default()
                    },
                    [Acc::default(); 5],
                ));
                out.len() - 1
            }
        };
        let (o, acc) = &mut out[i];
        if a.error.is_some() {
            o.errors += 1;
            continue;
        }
        o.slots = o.slots.max(a.slots);
        for (x, v) in acc
            .iter_mut()
            .zip([a.busy, a.idle, a.open_slots, a.reading, a.busy + a.idle])
        {
            x.add(v as f64);
        }
    }
    out.into_iter()
        .map(|(mut o, a)| {
            o.busy = a[0].stat();
            o.idle = a[1].stat();
            o.open_slots = a[2].stat();
            o.reading = a[3].stat();
            o.workers = a[4].stat();
            o
        })
        .collect()
}

/// Apache's mod_status (`URL?auto`): its workers and the scoreboard, one letter per slot.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ApacheSample {
    pub url: String,
    pub busy: u64,
    pub idle: u64,
    /// Scoreboard slots: ServerLimit × ThreadsPerChild (prefork: ServerLimit, which the lab
    /// sets to MaxRequestWorkers).
    pub slots: u64,
    /// Slots with no process behind them (`.`): room to spawn more workers.
    pub open_slots: u64,
    /// Workers reading a request (`R`): many of them under load is slow clients or a full pool.
    pub reading: u64,
    /// Set when the page could not be fetched or read; the numbers are then zero.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_page() {
        // As Apache 2.4.57 prints it (prefork, ServerLimit 8, all busy).
        let body = "127.0.0.1\nServerVersion: Apache/2.4.57 (Debian)\nServerMPM: prefork\n\
            Total Accesses: 1234\nBusyWorkers: 8\nIdleWorkers: 0\n\
            Scoreboard: WWWWWWRW\n";
        let s = parse_auto(body).unwrap();
        assert_eq!(
            (s.busy, s.idle, s.slots, s.open_slots, s.reading),
            (8, 0, 8, 0, 1)
        );
        let s = parse_auto("BusyWorkers: 1\nIdleWorkers: 4\nScoreboard: _W___...\n").unwrap();
        assert_eq!((s.busy, s.idle, s.slots, s.open_slots), (1, 4, 8, 3));
        assert!(parse_auto("<html>Forbidden</html>").is_err());
        assert!(parse_auto("BusyWorkers: many\n").is_err());
    }

    #[test]
    fn a_step_of_samples() {
        let page = |busy, idle, open, error: Option<&str>| Sample {
            apache: vec![ApacheSample {
                url: "u".into(),
                busy,
                idle,
                slots: 8,
                open_slots: open,
                error: error.map(String::from),
                ..Default::default()
            }],
            ..Default::default()
        };
        let v = [
            page(6, 2, 0, None),
            page(8, 0, 0, None),
            page(0, 0, 0, Some("down")),
        ];
        let o = observe(&v.iter().collect::<Vec<_>>());
        assert_eq!(o.len(), 1);
        assert_eq!(
            o[0].busy,
            Stat {
                mean: 7.0,
                max: 8.0
            }
        );
        assert_eq!((o[0].slots, o[0].errors), (8, 1));
        // 2 idle at one moment, 8 busy at another: a pool of 8 all along, not 10.
        assert_eq!(o[0].workers.max, 8.0);
        assert_eq!(o[0].busy.max + o[0].idle.max, 10.0);
        // Two idle at one of two samples (as a batch of answers ended): every worker busy at
        // the peak, one idle on average: not full for most of the step.
        assert!(o[0].full_at_peak());
        assert!(!o[0].full_most_of_step());
        let full = |v: &[Sample]| observe(&v.iter().collect::<Vec<_>>())[0].full_most_of_step();
        assert!(full(&[page(8, 0, 0, None), page(8, 0, 0, None)]));
        // Two idle at one sample of three: under one idle on average, still full.
        assert!(full(&[
            page(8, 0, 0, None),
            page(6, 2, 0, None),
            page(8, 0, 0, None)
        ]));
        // Idle at most samples: not full.
        assert!(!full(&[
            page(8, 0, 0, None),
            page(6, 2, 0, None),
            page(7, 1, 0, None)
        ]));
        // Room in the scoreboard: Apache spawns more.
        assert!(!full(&[page(3, 0, 5, None)]));
    }

    #[test]
    fn target_gets_auto() {
        let a = ApacheSource::parse("http://127.0.0.1:8080/server-status").unwrap();
        assert_eq!(a.target(), "/server-status?auto");
        assert!(ApacheSource::parse("ftp://x/").is_err());
    }
}
