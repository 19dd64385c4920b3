//! PHP-FPM's pool status page (`pm.status_path`), fetched as JSON.
use std::time::Duration;

use crate::url::Url;

use serde::{Deserialize, Serialize};

use super::sample::Sample;
use super::source::{Kind, Pool, Source, Tick};
use super::stat::{Acc, Stat};
use super::summary::{SecondObservation, SourceObservation};
use crate::http_get;

/// One `--fpm-status URL`: where to fetch, and the previous `max children reached` for the
/// per-interval delta.
#[derive(Debug, Clone)]
pub struct FpmSource {
    pub url: Url,
    pub raw: String,
    prev_reached: Option<u64>,
}

impl FpmSource {
    pub fn parse(s: &str) -> Result<FpmSource, String> {
        let url = Url::parse(s.trim())?.http_only()?;
        Ok(FpmSource {
            url,
            raw: s.trim().to_string(),
            prev_reached: None,
        })
    }

    /// The status URL with `json` added to its query.
    fn target(&self) -> String {
        let t = &self.url.target;
        if t.contains('?') {
            format!("{t}&json")
        } else {
            format!("{t}?json")
        }
    }

    pub fn sample(&mut self, timeout: Duration) -> FpmSample {
        let got = http_get::get(&self.url, &self.target(), &[], timeout, 1 << 20).and_then(|r| {
            if r.truncated {
                return Err("status page larger than 1 MiB".to_string());
            }
            if r.status != 200 {
                return Err(format!("status page answered {}", r.status));
            }
            parse_status(&r.body)
        });
        match got {
            Ok(mut s) => {
                s.url = self.raw.clone();
                s.max_children_reached_delta = self
                    .prev_reached
                    .map_or(0, |p| s.max_children_reached.saturating_sub(p));
                self.prev_reached = Some(s.max_children_reached);
                s
            }
            Err(e) => FpmSample {
                url: self.raw.clone(),
                error: Some(e),
                ..Default::default()
            },
        }
    }
}

/// Parses FPM's `?json` status (keys with spaces, as FPM prints them).
pub fn parse_status(body: &[u8]) -> Result<FpmSample, String> {
    let v: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| format!("status page is not JSON: {e}"))?;
    if !v.is_object() {
        return Err("status page JSON is not an object".into());
    }
    let n = |k: &str| v.get(k).and_then(|x| x.as_u64()).unwrap_or(0);
    Ok(FpmSample {
        pool: v
            .get("pool")
            .and_then(|p| p.as_str())
            .unwrap_or("")
            .to_string(),
        active: n("active processes"),
        idle: n("idle processes"),
        total: n("total processes"),
        listen_queue: n("listen queue"),
        max_listen_queue: n("max listen queue"),
        listen_queue_len: n("listen queue len"),
        max_children_reached: n("max children reached"),
        ..Default::default()
    })
}

impl Source for FpmSource {
    fn sample(&mut self, tick: &mut Tick, into: &mut Sample) {
        let s = FpmSource::sample(self, tick.timeout);
        into.fpm.push(s);
    }
}

pub const KIND: Kind = Kind {
    name: "fpm",
    flag: "--fpm-status",
    summarise,
    second,
    pools: Some(pools),
};

/// FPM's pool (and the embedded target's, which speaks its status format): full when every
/// worker is busy and requests queue, or max_children was hit.
fn pools(o: &SourceObservation) -> Vec<Pool> {
    o.fpm
        .iter()
        .map(|f| Pool {
            workers: "workers",
            busy: f.active.max,
            size: f.total.max,
            full_at_peak: f.full_at_peak(),
            full_most_of_step: f.full_most_of_step(),
            queue: f.listen_queue.max,
            cap_hits: f.max_children_reached,
            failed_reads: f.errors,
        })
        .collect()
}

/// One FPM pool over a step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FpmObservation {
    pub url: String,
    pub pool: String,
    pub active: Stat,
    pub idle: Stat,
    pub total: Stat,
    pub listen_queue: Stat,
    /// FPM's own high-water mark, as of the step's last sample.
    pub max_listen_queue: u64,
    /// Times pm.max_children was hit during the step.
    pub max_children_reached: u64,
    /// Samples where the status page could not be fetched.
    pub errors: u64,
}

/// The pool name the embedded target's `/pool-status` reports (`target/routes.rs`'s
/// `POOL_NAME`): its workers are the target's, not PHP-FPM's.
pub const TARGET_POOL: &str = "overload-target";

/// A pool busy on average at least this share of its workers over a step was full for most
/// of it.
pub const POOL_BUSY_MOST: f64 = 0.95;

impl FpmObservation {
    /// At the step's busiest sample every worker was busy and requests queued for one (or
    /// pm.max_children was hit): what one sample may show, noise included.
    pub fn full_at_peak(&self) -> bool {
        self.total.max >= 1.0
            && self.active.max >= self.total.max
            && (self.max_children_reached > 0 || self.listen_queue.max > 0.0)
    }

    /// Busy on average at least [`POOL_BUSY_MOST`] of the pool over the step.
    pub fn full_most_of_step(&self) -> bool {
        self.total.max >= 1.0 && self.active.mean >= POOL_BUSY_MOST * self.total.max
    }

    /// What its workers are called: the embedded target's pool speaks FPM's status format
    /// but is not PHP-FPM.
    pub fn workers_label(&self) -> &'static str {
        workers_label(&self.pool)
    }
}

/// What the workers of the pool named `pool` are called in labels.
pub fn workers_label(pool: &str) -> &'static str {
    if pool == TARGET_POOL {
        "target workers"
    } else {
        "FPM workers"
    }
}

fn summarise(samples: &[&Sample], into: &mut SourceObservation) {
    into.fpm = observe(samples);
}

fn observe(samples: &[&Sample]) -> Vec<FpmObservation> {
    let mut out: Vec<(FpmObservation, [Acc; 4])> = Vec::new();
    for f in samples.iter().flat_map(|s| &s.fpm) {
        let i = match out.iter().position(|(o, _)| o.url == f.url) {
            Some(i) => i,
            None => {
                out.push((
                    FpmObservation {
                        url: f.url.clone(),
                        ..Default::default()
                    },
                    [Acc::default(); 4],
                ));
                out.len() - 1
            }
        };
        let (o, a) = &mut out[i];
        if f.error.is_some() {
            o.errors += 1;
            continue;
        }
        o.pool.clone_from(&f.pool);
        a[0].add(f.active as f64);
        a[1].add(f.idle as f64);
        a[2].add(f.total as f64);
        a[3].add(f.listen_queue as f64);
        o.max_listen_queue = f.max_listen_queue;
        o.max_children_reached += f.max_children_reached_delta;
    }
    out.into_iter()
        .map(|(mut o, a)| {
            o.active = a[0].stat();
            o.idle = a[1].stat();
            o.total = a[2].stat();
            o.listen_queue = a[3].stat();
            o
        })
        .collect()
}

fn second(s: &Sample, o: &mut SecondObservation) {
    let ok: Vec<_> = s.fpm.iter().filter(|f| f.error.is_none()).collect();
    if !ok.is_empty() {
        o.fpm_active = Some(ok.iter().map(|f| f.active).sum());
    }
}

/// PHP-FPM's pool status (`--fpm-status URL`, fetched as `URL?json`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FpmSample {
    pub url: String,
    pub pool: String,
    pub active: u64,
    pub idle: u64,
    pub total: u64,
    /// Connections waiting for a free worker.
    pub listen_queue: u64,
    /// Highest listen queue since FPM started.
    pub max_listen_queue: u64,
    /// The FPM socket's backlog limit.
    pub listen_queue_len: u64,
    /// Times pm.max_children was hit since FPM started, and during this interval.
    pub max_children_reached: u64,
    pub max_children_reached_delta: u64,
    /// Set when the status could not be fetched; the numbers are then zero.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_json() {
        let body = br#"{"pool":"www","process manager":"dynamic","start time":1700000000,
            "start since":42,"accepted conn":1234,"listen queue":3,"max listen queue":17,
            "listen queue len":511,"idle processes":0,"active processes":20,
            "total processes":20,"max active processes":20,"max children reached":5,
            "slow requests":0}"#;
        let s = parse_status(body).unwrap();
        assert_eq!(s.pool, "www");
        assert_eq!((s.active, s.idle, s.total), (20, 0, 20));
        assert_eq!(
            (s.listen_queue, s.max_listen_queue, s.listen_queue_len),
            (3, 17, 511)
        );
        assert_eq!(s.max_children_reached, 5);
        assert!(parse_status(b"<html>").is_err());
        assert!(parse_status(b"[1]").is_err());
        assert_eq!(parse_status(b"{}").unwrap().total, 0);
    }

    #[test]
    fn target_gets_json() {
        let a = FpmSource::parse("http://127.0.0.1:8081/status").unwrap();
        assert_eq!(a.target(), "/status?json");
        let b = FpmSource::parse("http://127.0.0.1:8081/status?full").unwrap();
        assert_eq!(b.target(), "/status?full&json");
        assert!(FpmSource::parse("https://x/status").is_err());
    }
}
