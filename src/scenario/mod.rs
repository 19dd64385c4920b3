//! Scenarios (`--scenario FILE.toml`, docs/scenarios.md): users who follow named requests in
//! order, think between them, keep cookies, pull values out of responses into variables and
//! check what they get. Pure: the file's model (`file.rs` reads it, every error naming file,
//! line and key), `${var}` templates, the cookie jar, the feeders, and one user's state
//! (`user.rs`: the next request's bytes, the verdict on a response). The engine drives users
//! through it inside its own event loop.
//!
//! Recordings become scenarios too (`import.rs` what they share): a browser's HAR file
//! (`har.rs`) and httperf's session log (`wsesslog.rs`).
pub mod cookies;
pub mod feeder;
mod file;
pub mod har;
pub mod import;
pub mod template;
pub mod user;
pub mod wsesslog;

pub use file::load;
pub use user::{User, Verdict};

use feeder::Feeder;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use template::Template;

/// Most bytes of a response body kept for extraction and checks (`--max-body-capture`).
pub const DEFAULT_MAX_BODY_CAPTURE: usize = 1 << 20;

/// What a scenario file is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Format {
    /// `--scenario FILE.toml` (docs/scenarios.md).
    #[default]
    Toml,
    /// `--har FILE`: a browser's recording, one scenario.
    Har(har::Options),
    /// `--wsesslog FILE`: httperf's sessions, one scenario each; the flag is
    /// `--allow-unsafe-methods`.
    Wsesslog { allow_unsafe_methods: bool },
}

/// Loads a scenario file of any [`Format`], with a note on what an import left out (printed
/// before the run). `base`: the URL argument (the server of relative URLs; for a HAR, the
/// server that replaces the recording's).
pub fn load_as(
    path: &std::path::Path,
    format: Format,
    base: Option<&str>,
    max_body: usize,
) -> Result<(Plan, Option<String>), String> {
    let base_url = || {
        base.map(crate::url::Url::parse)
            .transpose()
            .map_err(|e| format!("URL {e}"))
    };
    let shown = crate::fsutil::shown(path);
    let mut b = import::Builder::default();
    let note = match format {
        Format::Toml => return load(path, base, max_body).map(|p| (p, None)),
        Format::Har(opts) => {
            let h = har::read(path, base_url()?.as_ref(), opts)?;
            let name = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("har")
                .to_string();
            b.scenario(name, h.requests)
                .map_err(|e| format!("{shown}: {e}"))?;
            h.note
        }
        Format::Wsesslog {
            allow_unsafe_methods,
        } => {
            let (sessions, note) =
                wsesslog::read(path, base_url()?.as_ref(), allow_unsafe_methods)?;
            for (i, s) in sessions.into_iter().enumerate() {
                b.scenario(format!("session{}", i + 1), s)
                    .map_err(|e| format!("{shown}: session {}: {e}", i + 1))?;
            }
            note
        }
    };
    let plan = b.plan(max_body).map_err(|e| format!("{shown}: {e}"))?;
    Ok((plan, note))
}

/// A scenario file, loaded and checked: everything a user needs, shared by all users.
#[derive(Debug)]
pub struct Plan {
    pub scenarios: Vec<Scenario>,
    /// The requests' names, for the statistics per name (steps sharing a name share a row).
    pub names: Vec<String>,
    /// Variable names by id: the feeder's columns, then `[vars]`, then extracted ones.
    pub var_names: Vec<String>,
    /// `[vars]`: (id, value), set at the start of every iteration.
    pub constants: Vec<(usize, String)>,
    /// The feeder and the id of each of its columns' variables.
    pub feeder: Option<(Feeder, Vec<usize>)>,
    /// Keep a cookie jar per user (`cookies = false` turns it off).
    pub cookies: bool,
    /// The servers the requests go to, as the engine indexes its addresses.
    pub servers: Vec<Server>,
    /// Body bytes kept per response that needs them.
    pub max_body: usize,
    /// Iterations (and open-loop sessions) begun by all users, for feeder rows.
    pub begun: AtomicU64,
    /// Connections a user opens at most to one server for a burst (a browser's 6).
    pub connections_per_host: usize,
}

/// A browser's connections per host (Chrome's and Firefox's HTTP/1.1 limit).
pub const DEFAULT_CONNECTIONS_PER_HOST: usize = 6;

/// One server of the plan: where to connect, and what the jar and the Host header see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    pub addr: SocketAddr,
    /// Lower-case host name or address (no port, no brackets).
    pub host: String,
    /// `Host` header value.
    pub authority: String,
    pub https: bool,
}

#[derive(Debug)]
pub struct Scenario {
    pub name: String,
    pub weight: u32,
    pub steps: Vec<Step>,
}

/// One named request of a scenario.
#[derive(Debug)]
pub struct Step {
    pub name: String,
    /// Index of `name` in [`Plan::names`]: what the engine's statistics per name key on.
    pub name_id: u16,
    pub method: String,
    /// Index into [`Plan::servers`] (and the engine's addresses).
    pub server: usize,
    /// Path and query, starting with `/`.
    pub target: Template,
    pub headers: Vec<(String, Template)>,
    pub body: Option<Template>,
    /// Think time after this request's answer: `(lo, hi)`, uniform; None: the run's `--think`.
    pub think: Option<(Duration, Duration)>,
    pub extract: Vec<Extract>,
    /// Expected statuses; empty: any.
    pub status: Vec<u16>,
    /// The body must contain this text.
    pub contains: Option<Template>,
    /// Embedded resources fetched in parallel after this request's answer (a page's images,
    /// CSS, scripts), on up to [`Plan::connections_per_host`] connections per server; the
    /// think time follows the whole burst. Members have no checks, extraction or burst.
    pub burst: Vec<Step>,
}

impl Step {
    /// The response's body must be kept (extraction or a check reads it).
    pub fn wants_body(&self) -> bool {
        self.contains.is_some()
            || self
                .extract
                .iter()
                .any(|e| !matches!(e.from, Source::Header(_)))
    }

    pub fn head_only(&self) -> bool {
        self.method == "HEAD"
    }
}

/// A value taken out of a response into a variable.
#[derive(Debug)]
pub struct Extract {
    pub var: usize,
    pub from: Source,
}

#[derive(Debug)]
pub enum Source {
    /// A regex over the body; the value is this capture group (1 when the pattern has one).
    Regex(regex::bytes::Regex, usize),
    /// A JSON pointer (RFC 6901) into a JSON body: strings as they are, other values as JSON.
    Json(String),
    /// A response header's first value (name in lower case).
    Header(String),
}

impl Plan {
    /// A scenario for a new iteration, by weight. `r` is uniform in [0, 1).
    pub fn pick(&self, r: f64) -> usize {
        let total: u64 = self.scenarios.iter().map(|s| u64::from(s.weight)).sum();
        let mut x = (r * total as f64) as u64;
        for (i, s) in self.scenarios.iter().enumerate() {
            if x < u64::from(s.weight) {
                return i;
            }
            x -= u64::from(s.weight);
        }
        self.scenarios.len() - 1
    }

    /// The next iteration's number (over all users and threads).
    pub fn next_iteration(&self) -> u64 {
        self.begun.fetch_add(1, Ordering::Relaxed)
    }

    /// Requests in the longest scenario.
    pub fn longest(&self) -> usize {
        self.scenarios
            .iter()
            .map(|s| s.steps.len())
            .max()
            .unwrap_or(0)
    }

    /// Every step's name, `scenario/step` when the file holds several scenarios.
    pub fn step_names(&self) -> Vec<String> {
        let many = self.scenarios.len() > 1;
        self.scenarios
            .iter()
            .flat_map(|s| {
                s.steps.iter().map(move |st| {
                    if many {
                        format!("{}/{}", s.name, st.name)
                    } else {
                        st.name.clone()
                    }
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_split_the_unit_interval() {
        let plan = file::tests::plan_of(
            r#"
            [[scenario]]
            name = "a"
            weight = 3
            [[scenario.request]]
            url = "/a"
            [[scenario]]
            name = "b"
            weight = 1
            [[scenario.request]]
            url = "/b"
            "#,
        );
        let mut counts = [0; 2];
        for i in 0..1000 {
            counts[plan.pick(i as f64 / 1000.0)] += 1;
        }
        assert_eq!(counts, [750, 250]);
        assert_eq!(plan.pick(0.999_999), 1);
        assert_eq!(plan.step_names(), vec!["a/GET /a", "b/GET /b"]);
    }
}
