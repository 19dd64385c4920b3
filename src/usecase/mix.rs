//! The request mix, resolved from the configuration (URL arguments, `--urls`, an access log,
//! a scenario; the files are parsed by `plan/`) and rendered into the engine's requests once
//! the run's protocol and connection reuse are known (`engine_config.rs`).
use super::config::{AccessLogConfig, RequestConfig, ScenarioSource};
use crate::engine::{Pick, Prepared, Protocol, Reuse};
use crate::fsutil::{read_capped, MAX_BODY_FILE};
use crate::plan::access_log::{read_access_log, AccessLog, Keep, LoggedRequest};
use crate::plan::{check_headers, parse_headers, parse_method, read_urls_file, RequestSpec, Url};
use crate::url::Scheme;
use crate::Error;
use std::net::SocketAddr;
/// The request mix, resolved; rendered for the engine by [`base_config_of`].
pub struct Mix {
    pub addrs: Vec<SocketAddr>,
    pub(super) requests: Unrendered,
    pub pick: Pick,
    /// The URLs, for display and the results.
    pub urls: Vec<String>,
    /// https:// URLs: each address with its host name (SNI, certificate check); empty for
    /// http://. A mix is all one or all the other.
    pub tls_servers: Vec<(SocketAddr, String)>,
    /// `--scenario`: the loaded file the users follow (`requests` is then empty).
    pub scenario: Option<std::sync::Arc<crate::scenario::Plan>>,
    /// The requests' names (`Prepared::name` indexes it).
    pub names: Vec<String>,
    /// An access log's mix: running sums of the requests' counts (`Pick::Weighted`).
    pub weights: Vec<u64>,
    /// An access log replayed on its clock (`--replay-speed`).
    pub replay: Option<std::sync::Arc<crate::engine::Replay>>,
    /// Which answers count as success (`--ok-status`): set from the request configuration,
    /// or from the step a generator agent received.
    pub ok_status: crate::metrics::OkStatus,
}

/// A mix's requests before rendering: the engine's forms of a request (kept-alive, closing,
/// HTTP/2) are rendered once the run's protocol and connection reuse are known, and only
/// those it sends, so that an access log of a million distinct requests costs one rendering
/// of each.
pub(super) enum Unrendered {
    /// Each request its own spec (URL arguments, `--urls`, an agent's step), with its server
    /// (an index into `addrs`) and name.
    Specs(Vec<(RequestSpec, usize, u16)>),
    /// An access log: the one server's spec (the URL argument and `-H` headers), whose method
    /// and target each distinct request replaces, and each one's name.
    Log {
        base: RequestSpec,
        requests: Vec<LoggedRequest>,
        names: Vec<u16>,
    },
    /// A scenario: its users render their own requests.
    None,
}

impl RequestConfig {
    pub fn specs(&self) -> crate::Result<Vec<RequestSpec>> {
        let method = parse_method(&self.method).map_err(|e| Error::usage(format!("-X: {e}")))?;
        let headers = parse_headers(&self.headers).map_err(|e| Error::usage(format!("-H: {e}")))?;
        let body = match &self.body {
            None => None,
            Some(b) => match b.strip_prefix('@') {
                Some(path) => Some(
                    read_capped(path.as_ref(), MAX_BODY_FILE, "--body").map_err(Error::usage)?,
                ),
                None => Some(b.as_bytes().to_vec()),
            },
        };
        let mut specs = Vec::new();
        for u in &self.urls {
            let url = Url::parse(u).map_err(|e| Error::usage(format!("URL {e}")))?;
            specs.push(RequestSpec {
                method: method.clone(),
                url,
                headers: headers.clone(),
                body: body.clone(),
            });
        }
        if let Some(a) = &self.access_log {
            return self.logged_specs(a, method, headers);
        }
        if let Some(f) = &self.urls_file {
            for mut s in read_urls_file(f).map_err(Error::usage)? {
                s.headers.extend(headers.iter().cloned());
                specs.push(s);
            }
        }
        if specs.is_empty() {
            return Err(Error::usage(
                "no URL given (pass URL arguments or --urls FILE)",
            ));
        }
        Ok(specs)
    }

    /// A scenario file instead of URLs: loaded and checked now, before any connection. A URL
    /// argument is the server its relative URLs (`/login`) go to.
    fn scenario_mix(&self, s: &ScenarioSource) -> crate::Result<Mix> {
        let (flag, what) = match s.format {
            crate::scenario::Format::Toml => ("--scenario", "scenario"),
            crate::scenario::Format::Har(_) => ("--har", "HAR"),
            crate::scenario::Format::Wsesslog { .. } => ("--wsesslog", "session log"),
        };
        if self.urls.len() > 1 || self.urls_file.is_some() {
            return Err(Error::usage(format!(
                "{flag} takes at most one URL (the server of its relative URLs), and no --urls"
            )));
        }
        if self.body.is_some() || !self.headers.is_empty() || self.method != "GET" {
            return Err(Error::usage(format!(
                "{flag}: methods, headers and bodies come from the file, not -X, -H, --body"
            )));
        }
        let (plan, note) = crate::scenario::load_as(
            &s.file,
            s.format,
            self.urls.first().map(String::as_str),
            s.max_body_capture,
        )
        .map_err(Error::usage)?;
        if let Some(note) = note {
            crate::eoutln!("overload: {note}");
        }
        let servers = &plan.servers;
        Ok(Mix {
            addrs: servers.iter().map(|s| s.addr).collect(),
            requests: Unrendered::None,
            pick: self.pick,
            urls: vec![format!("{what} {}", crate::fsutil::shown(&s.file))],
            tls_servers: servers
                .iter()
                .filter(|s| s.https)
                .map(|s| (s.addr, s.host.clone()))
                .collect(),
            names: plan.names.clone(),
            scenario: Some(std::sync::Arc::new(plan)),
            weights: Vec::new(),
            replay: None,
            ok_status: crate::metrics::OkStatus::default(),
        })
    }

    /// An access log's distinct requests as specs, sent to the origin of the one URL given
    /// (what a controller sends its generators).
    fn logged_specs(
        &self,
        a: &AccessLogConfig,
        method: String,
        headers: Vec<(String, String)>,
    ) -> crate::Result<Vec<RequestSpec>> {
        let (base, log) = self.read_log(a, &method)?;
        let mut specs = Vec::with_capacity(log.requests.len());
        for r in log.requests {
            let mut url = base.clone();
            url.target = r.target.into();
            specs.push(RequestSpec {
                method: r.method.to_string(),
                url,
                headers: headers.clone(),
                body: None,
            });
        }
        Ok(specs)
    }

    /// The URL argument (the server an access log's requests go to) and the log, read:
    /// weights (its counts) and arrivals (its clock).
    fn read_log(&self, a: &AccessLogConfig, method: &str) -> crate::Result<(Url, AccessLog)> {
        let base = match (self.urls.as_slice(), &self.urls_file) {
            ([one], None) => Url::parse(one).map_err(|e| Error::usage(format!("URL {e}")))?,
            _ => {
                return Err(Error::usage(
                    "--access-log takes the one URL of the server to send its requests to \
                     (its path is ignored), and no --urls",
                ))
            }
        };
        if self.body.is_some() || method != "GET" {
            return Err(Error::usage(
                "--access-log sends each line's own method, without a body: drop -X and --body",
            ));
        }
        // A weighted mix needs each request's count only; a replay, each line's time too.
        let keep = match a.replay_speed {
            Some(_) => Keep::Arrivals,
            None => Keep::Counts,
        };
        let log = read_access_log(&a.path, a.format, a.allow_unsafe_methods, keep)
            .map_err(Error::usage)?;
        if let Some(note) = log.skipped_note() {
            crate::eoutln!("overload: {note}");
        }
        Ok((base, log))
    }

    /// An access log's mix: its distinct requests, all to the URL argument's server (resolved
    /// once), picked by their counts or replayed on the log's clock.
    fn log_mix(&self, a: &AccessLogConfig) -> crate::Result<Mix> {
        let method = parse_method(&self.method).map_err(|e| Error::usage(format!("-X: {e}")))?;
        let headers = parse_headers(&self.headers).map_err(|e| Error::usage(format!("-H: {e}")))?;
        let (url, mut log) = self.read_log(a, &method)?;
        let addr = url
            .resolve()
            .map_err(|e| Error::usage(format!("URL '{}': {e}", url.origin())))?;
        let mut names = crate::plan::naming::Names::new();
        let request_names = log
            .requests
            .iter()
            .map(|r| names.index(&crate::plan::naming::name_of_target(&r.target)))
            .collect();
        let (weights, replay) = match a.replay_speed {
            Some(speed) => {
                let scale = |ns: u64| (ns as f64 / speed).round() as u64;
                // Scaled in place and moved: a replay holds 12 bytes a line, once.
                let mut at_ns = std::mem::take(&mut log.at_ns);
                for t in &mut at_ns {
                    *t = scale(*t);
                }
                let replay = crate::engine::Replay {
                    at_ns,
                    requests: std::mem::take(&mut log.order),
                    span_ns: scale(log.span_ns).max(1),
                };
                (Vec::new(), Some(std::sync::Arc::new(replay)))
            }
            None => {
                let weights = log
                    .requests
                    .iter()
                    .scan(0u64, |sum, r| {
                        *sum += r.count;
                        Some(*sum)
                    })
                    .collect();
                (weights, None)
            }
        };
        Ok(Mix {
            addrs: vec![addr],
            pick: if replay.is_some() {
                self.pick
            } else {
                Pick::Weighted
            },
            urls: vec![format!(
                "access log {} ({} distinct requests)",
                crate::fsutil::shown(&a.path),
                log.requests.len()
            )],
            tls_servers: match url.scheme {
                Scheme::Https => vec![(addr, url.host.clone())],
                Scheme::Http => Vec::new(),
            },
            scenario: None,
            names: names.into_vec(),
            weights,
            replay,
            ok_status: crate::metrics::OkStatus::default(),
            requests: Unrendered::Log {
                base: RequestSpec {
                    method,
                    url,
                    headers,
                    body: None,
                },
                requests: log.requests,
                names: request_names,
            },
        })
    }

    /// Resolves hosts (once, before the run); [`base_config_of`] renders the requests.
    pub fn mix(&self) -> crate::Result<Mix> {
        if let Some(s) = &self.scenario {
            return self.scenario_mix(s);
        }
        if let Some(a) = &self.access_log {
            return self.log_mix(a);
        }
        Mix::of(self.specs()?, self.pick)
    }
}

impl Mix {
    /// Resolves the hosts of `specs` (once, before the run) and renders every request; a
    /// generator agent builds its mix from a step sent as data the same way.
    pub fn of(specs: Vec<RequestSpec>, pick: Pick) -> crate::Result<Mix> {
        let mut addrs: Vec<SocketAddr> = Vec::new();
        let mut requests = Vec::new();
        let mut urls = Vec::new();
        let mut tls_servers: Vec<(SocketAddr, String)> = Vec::new();
        let mut names = crate::plan::naming::Names::new();
        let scheme = specs
            .first()
            .ok_or_else(|| Error::usage("no URL given"))?
            .url
            .scheme;
        for mut s in specs {
            let shown = format!("{}{}", s.url.origin(), s.url.target);
            // The checks of -X and -H, for requests that did not come through them (a file's
            // lines, a controller's step): what is rendered below is sent as it is.
            let bad = |e: String| Error::usage(format!("URL '{shown}': {e}"));
            s.method = parse_method(&s.method).map_err(bad)?;
            s.headers = check_headers(&s.headers).map_err(bad)?;
            if s.url.scheme != scheme {
                return Err(Error::usage(format!(
                    "URL '{shown}': a run's URLs are all http:// or all https://"
                )));
            }
            let addr = s
                .url
                .resolve()
                .map_err(|e| Error::usage(format!("URL '{shown}': {e}")))?;
            let idx = match addrs.iter().position(|a| *a == addr) {
                Some(i) => i,
                None => {
                    addrs.push(addr);
                    if scheme == Scheme::Https {
                        tls_servers.push((addr, s.url.host.clone()));
                    }
                    addrs.len() - 1
                }
            };
            // The engine names a TLS server by its address: one host per address.
            if scheme == Scheme::Https && tls_servers[idx].1 != s.url.host {
                return Err(Error::usage(format!(
                    "URL '{shown}': hosts '{}' and '{}' share the address {addr}; one https \
                     host per address is supported",
                    tls_servers[idx].1, s.url.host
                )));
            }
            urls.push(format!("{} {shown}", s.method));
            let name = names.index(&crate::plan::naming::name_of_target(&s.url.target));
            requests.push((s, idx, name));
        }
        Ok(Mix {
            addrs,
            requests: Unrendered::Specs(requests),
            pick,
            urls,
            tls_servers,
            scenario: None,
            names: names.into_vec(),
            weights: Vec::new(),
            replay: None,
            ok_status: crate::metrics::OkStatus::default(),
        })
    }

    /// The first request sent to `addrs[addr]`, as an index into the mix's requests.
    pub fn first_request_to(&self, addr: usize) -> Option<usize> {
        match &self.requests {
            Unrendered::Specs(specs) => specs.iter().position(|(_, a, _)| *a == addr),
            Unrendered::Log { requests, .. } => (addr == 0 && !requests.is_empty()).then_some(0),
            Unrendered::None => None,
        }
    }

    /// The engine's requests, in the forms the run sends; each spec is dropped once rendered.
    pub(super) fn render(requests: Unrendered, protocol: Protocol, reuse: Reuse) -> Vec<Prepared> {
        match requests {
            Unrendered::Specs(specs) => specs
                .into_iter()
                .map(|(s, addr, name)| protocol.prepare(&s, reuse, addr, name))
                .collect(),
            Unrendered::Log {
                mut base,
                requests,
                names,
            } => {
                let mut out = Vec::with_capacity(requests.len());
                for (r, name) in requests.into_iter().zip(names) {
                    if *base.method != *r.method {
                        base.method = r.method.to_string();
                    }
                    base.url.target = r.target.into();
                    out.push(protocol.prepare(&base, reuse, 0, name));
                }
                out
            }
            Unrendered::None => Vec::new(),
        }
    }
}
