//! What the imports share (`har.rs`: a browser's recording, `wsesslog.rs`: httperf's session
//! log): recorded requests become scenario steps. Their text is literal (a recorded `${` is
//! text, not a variable), their servers are resolved once, before the run, and they are named
//! as a URL mix names its requests (`GET /search?q=*`), so repeated URLs share a row.
use super::template::{Part, Template};
use super::{Plan, Scenario, Server, Step};
use crate::plan::naming::{name_of_target, Names};
use crate::url::{Scheme, Url};
use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// One recorded request, checked: where it goes and what it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub method: String,
    pub url: Url,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    /// Pause after its answer (after its burst's, when it has one); None: the run's `--think`.
    pub think: Option<Duration>,
    /// Requests fetched in parallel after its answer (httperf's burst: a page's resources).
    pub burst: Vec<Recorded>,
}

/// Scenarios being built from recorded requests.
#[derive(Default)]
pub struct Builder {
    servers: Vec<Server>,
    names: Names,
    scenarios: Vec<Scenario>,
}

impl Builder {
    /// Adds a scenario of these requests (weight 1). `Err`: a host that does not resolve, or
    /// two https hosts on one address (the engine keeps one TLS name per address).
    pub fn scenario(&mut self, name: String, requests: Vec<Recorded>) -> Result<(), String> {
        let steps = requests
            .into_iter()
            .map(|r| self.step(r))
            .collect::<Result<Vec<_>, _>>()?;
        self.scenarios.push(Scenario {
            name,
            weight: 1,
            steps,
        });
        Ok(())
    }

    fn step(&mut self, r: Recorded) -> Result<Step, String> {
        let server = self.server(&r.url)?;
        let name = format!("{} {}", r.method, name_of_target(&r.url.target));
        let burst = r
            .burst
            .into_iter()
            .map(|m| self.step(m))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Step {
            name_id: self.names.index(&name),
            name,
            method: r.method,
            server,
            target: literal(r.url.target),
            headers: r
                .headers
                .into_iter()
                .map(|(n, v)| (n, literal(v)))
                .collect(),
            body: r.body.map(literal),
            think: r.think.map(|d| (d, d)),
            extract: Vec::new(),
            status: Vec::new(),
            contains: None,
            burst,
        })
    }

    fn server(&mut self, url: &Url) -> Result<usize, String> {
        let https = url.scheme == Scheme::Https;
        let host = url.host.to_ascii_lowercase();
        if let Some(i) = self
            .servers
            .iter()
            .position(|s| s.host == host && s.authority == url.authority && s.https == https)
        {
            return Ok(i);
        }
        let addr = url.resolve()?;
        if https && self.servers.iter().any(|s| s.addr == addr) {
            return Err(format!(
                "two https hosts share the address {addr}; one per address is supported"
            ));
        }
        self.servers.push(Server {
            addr,
            host,
            authority: url.authority.clone(),
            https,
        });
        Ok(self.servers.len() - 1)
    }

    /// The plan: no variables, no checks; cookies kept per user as a browser keeps them.
    pub fn plan(self, max_body: usize) -> Result<Plan, String> {
        if self.servers.iter().any(|s| s.https) && self.servers.iter().any(|s| !s.https) {
            return Err("the requests are all http:// or all https://".to_string());
        }
        Ok(Plan {
            scenarios: self.scenarios,
            names: self.names.into_vec(),
            var_names: Vec::new(),
            constants: Vec::new(),
            feeder: None,
            cookies: true,
            servers: self.servers,
            max_body,
            begun: AtomicU64::new(0),
            connections_per_host: super::DEFAULT_CONNECTIONS_PER_HOST,
        })
    }
}

fn literal(s: String) -> Template {
    Template {
        parts: if s.is_empty() {
            Vec::new()
        } else {
            vec![Part::Lit(s)]
        },
    }
}

/// Whether a method may be sent without `--allow-unsafe-methods`: reading, not changing.
pub fn is_safe(method: &str) -> bool {
    matches!(method, "GET" | "HEAD")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(method: &str, url: &str) -> Recorded {
        Recorded {
            method: method.into(),
            url: Url::parse(url).unwrap(),
            headers: vec![("X-A".into(), "${not a var}".into())],
            body: None,
            think: Some(Duration::from_millis(5)),
            burst: Vec::new(),
        }
    }

    #[test]
    fn recorded_requests_become_literal_named_steps() {
        let mut b = Builder::default();
        b.scenario(
            "s".into(),
            vec![
                rec("GET", "http://127.0.0.1:1/a?id=1"),
                rec("GET", "http://127.0.0.1:1/a?id=2"),
                rec("POST", "http://127.0.0.1:2/b"),
            ],
        )
        .unwrap();
        let p = b.plan(10).unwrap();
        let s = &p.scenarios[0];
        assert_eq!(p.names, ["GET /a?id=*", "POST /b"]);
        assert_eq!(
            s.steps.iter().map(|s| s.name_id).collect::<Vec<_>>(),
            [0, 0, 1]
        );
        assert_eq!(
            s.steps.iter().map(|s| s.server).collect::<Vec<_>>(),
            [0, 0, 1]
        );
        assert_eq!(s.steps[0].headers[0].1.literal(), Some("${not a var}"));
        assert_eq!(s.steps[1].target.literal(), Some("/a?id=2"));
        assert_eq!(
            s.steps[0].think,
            Some((Duration::from_millis(5), Duration::from_millis(5)))
        );
        let mut mixed = Builder::default();
        mixed
            .scenario(
                "m".into(),
                vec![
                    rec("GET", "http://127.0.0.1:1/"),
                    rec("GET", "https://127.0.0.1:2/"),
                ],
            )
            .unwrap();
        assert!(mixed
            .plan(1)
            .unwrap_err()
            .contains("all http:// or all https://"));
    }
}
