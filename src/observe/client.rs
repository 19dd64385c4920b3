//! The controller's side of the agent protocol: fetch `/samples`, estimate the agent's clock
//! offset, and move its samples onto the local clock.
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::url::Url;

use super::sample::Sample;
use crate::http_get;

/// The body of `GET /samples?since=UNIX_MS`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SamplesResponse {
    /// The agent's clock when it answered, Unix ms.
    pub now_unix_ms: u64,
    /// The agent's own name for its samples (informational; the controller tags by its name).
    pub source: String,
    pub samples: Vec<Sample>,
}

/// `--agent [NAME=]URL`.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSpec {
    pub name: String,
    pub url: Url,
    pub token: String,
}

impl AgentSpec {
    pub fn parse(s: &str, token: &str) -> Result<AgentSpec, String> {
        let s = s.trim();
        let (name, url) = match s.split_once('=') {
            Some((n, u)) if !n.contains('/') && !n.contains(':') => (Some(n.trim()), u.trim()),
            _ => (None, s),
        };
        let url = Url::parse(url)?.http_only()?;
        let name = match name {
            Some("") => return Err(format!("'{s}': empty agent name")),
            Some(n) => n.to_string(),
            None => url.authority.clone(),
        };
        if name == super::LOCAL {
            return Err(format!(
                "'{s}': the name 'local' is taken by this host's samples"
            ));
        }
        Ok(AgentSpec {
            name,
            url,
            token: token.to_string(),
        })
    }
}

/// One round trip: local time before, the agent's clock, local time after (Unix ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    pub t0: u64,
    pub agent: u64,
    pub t1: u64,
}

/// NTP-style: offset = agent − midpoint of the round trip, from the probe with the shortest
/// round trip (the least room for asymmetric delay). Positive: the agent's clock is ahead.
pub fn offset_ms(probes: &[Probe]) -> Option<i64> {
    let best = probes
        .iter()
        .filter(|p| p.t1 >= p.t0)
        .min_by_key(|p| p.t1 - p.t0)?;
    let mid = best.t0 as i128 + (best.t1 - best.t0) as i128 / 2;
    i64::try_from(best.agent as i128 - mid).ok()
}

pub struct AgentClient {
    spec: AgentSpec,
    timeout: Duration,
    offset_ms: Option<i64>,
    /// Newest agent-clock stamp received; the next poll asks for newer ones.
    last_agent_ms: Option<u64>,
}

impl AgentClient {
    pub fn new(spec: AgentSpec, timeout: Duration) -> AgentClient {
        AgentClient {
            spec,
            timeout,
            offset_ms: None,
            last_agent_ms: None,
        }
    }

    pub fn name(&self) -> &str {
        &self.spec.name
    }

    pub fn offset(&self) -> Option<i64> {
        self.offset_ms
    }

    /// `GET /samples?since=` on the agent's clock.
    pub fn fetch(&self, since_agent_ms: u64) -> Result<(SamplesResponse, Probe), String> {
        let base = self.spec.url.target.trim_end_matches('/');
        let base = base.split('?').next().unwrap_or("");
        let target = format!("{base}/samples?since={since_agent_ms}");
        let auth = format!("Bearer {}", self.spec.token);
        let t0 = crate::clock::unix_ms();
        let r = http_get::get(
            &self.spec.url,
            &target,
            &[("Authorization", &auth)],
            self.timeout,
            64 << 20,
        )
        .map_err(|e| format!("agent {}: {e}", self.spec.name))?;
        let t1 = crate::clock::unix_ms();
        if r.truncated {
            return Err(format!(
                "agent {}: answer larger than 64 MiB",
                self.spec.name
            ));
        }
        match r.status {
            200 => {}
            401 => return Err(format!("agent {}: token rejected (401)", self.spec.name)),
            s => return Err(format!("agent {}: answered {s}", self.spec.name)),
        }
        let body: SamplesResponse = serde_json::from_slice(&r.body)
            .map_err(|e| format!("agent {}: bad /samples JSON: {e}", self.spec.name))?;
        let probe = Probe {
            t0,
            agent: body.now_unix_ms,
            t1,
        };
        Ok((body, probe))
    }

    /// Measures the offset with `tries` empty fetches (since = far future), keeping the
    /// shortest round trip.
    pub fn estimate_offset(&mut self, tries: usize) -> Result<i64, String> {
        let mut probes = Vec::new();
        let mut last_err = None;
        for _ in 0..tries.max(1) {
            match self.fetch(u64::MAX / 2) {
                Ok((_, p)) => probes.push(p),
                Err(e) => last_err = Some(e),
            }
        }
        match offset_ms(&probes) {
            Some(o) => {
                self.offset_ms = Some(o);
                Ok(o)
            }
            None => Err(last_err.unwrap_or_else(|| "no clock probe".into())),
        }
    }

    /// New samples since the previous poll, on the local clock and tagged with this agent's
    /// name. The first poll starts at "now" (the agent's older history is not wanted).
    pub fn poll(&mut self) -> Result<Vec<Sample>, String> {
        if self.offset_ms.is_none() {
            self.estimate_offset(3)?;
        }
        let offset = self.offset_ms.unwrap_or(0);
        let since = match self.last_agent_ms {
            Some(t) => t + 1,
            None => shift(crate::clock::unix_ms(), offset),
        };
        let (body, _) = self.fetch(since)?;
        if self.last_agent_ms.is_none() {
            self.last_agent_ms = Some(since.saturating_sub(1));
        }
        Ok(self.adopt(body.samples, offset))
    }

    fn adopt(&mut self, mut samples: Vec<Sample>, offset: i64) -> Vec<Sample> {
        for s in &mut samples {
            self.last_agent_ms = Some(self.last_agent_ms.unwrap_or(0).max(s.unix_ms));
            s.unix_ms = shift(s.unix_ms, -offset);
            s.source = self.spec.name.clone();
            // The agent reports itself, not the load generator.
            s.generator = None;
        }
        samples
    }
}

fn shift(t: u64, by: i64) -> u64 {
    (t as i64).saturating_add(by).max(0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offset_from_best_probe() {
        let probes = [
            Probe {
                t0: 1000,
                agent: 6100,
                t1: 1300,
            },
            Probe {
                t0: 2000,
                agent: 7010,
                t1: 2020,
            },
            Probe {
                t0: 3000,
                agent: 9000,
                t1: 2999,
            },
        ];
        // The 20 ms probe wins: 7010 − 2010 = 5000.
        assert_eq!(offset_ms(&probes), Some(5000));
        assert_eq!(offset_ms(&[]), None);
        assert_eq!(
            offset_ms(&[Probe {
                t0: 10,
                agent: 0,
                t1: 10
            }]),
            Some(-10)
        );
    }

    #[test]
    fn agent_spec() {
        let a = AgentSpec::parse("db=http://10.0.0.2:9090", "t").unwrap();
        assert_eq!((a.name.as_str(), a.url.port), ("db", 9090));
        let b = AgentSpec::parse("http://127.0.0.1:9090/", "t").unwrap();
        assert_eq!(b.name, "127.0.0.1:9090");
        assert!(AgentSpec::parse("=http://x:1", "t").is_err());
        assert!(AgentSpec::parse("local=http://x:1", "t").is_err());
        assert!(AgentSpec::parse("x=ftp://y", "t").is_err());
    }

    #[test]
    fn adopt_shifts_and_tags() {
        let spec = AgentSpec::parse("web=http://127.0.0.1:1", "t").unwrap();
        let mut c = AgentClient::new(spec, Duration::from_millis(10));
        let s = Sample {
            source: "agent".into(),
            unix_ms: 10_000,
            ..Default::default()
        };
        let out = c.adopt(vec![s], 2_000);
        assert_eq!(out[0].unix_ms, 8_000);
        assert_eq!(out[0].source, "web");
        assert_eq!(c.last_agent_ms, Some(10_000));
    }
}
