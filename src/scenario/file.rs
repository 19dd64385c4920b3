//! The scenario file (TOML) into a checked [`Plan`]: every error is one line naming the file,
//! the line and the key (`shop.toml:14: scenario[1].request[2].body: unknown variable
//! '${tok}'`), found before the run starts.
use super::feeder::{Feeder, RowPer};
use super::template::{is_var_name, Template};
use super::{Extract, Plan, Scenario, Server, Source, Step};
use crate::url::{Scheme, Url};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use toml::Spanned;

/// Largest scenario file read.
const MAX_FILE: u64 = 4 << 20;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    base: Option<Spanned<String>>,
    cookies: Option<bool>,
    connections_per_host: Option<Spanned<i64>>,
    #[serde(default)]
    vars: BTreeMap<String, Spanned<String>>,
    feeder: Option<RawFeeder>,
    scenario: Option<Vec<RawScenario>>,
    request: Option<Vec<RawRequest>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFeeder {
    file: Spanned<String>,
    per: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Option<Spanned<String>>,
    weight: Option<Spanned<i64>>,
    request: Vec<RawRequest>,
}

/// One scenario as read: its name, weight, requests, and where it is (for errors).
type ScenarioParts = (
    Option<Spanned<String>>,
    Option<Spanned<i64>>,
    Vec<RawRequest>,
    String,
);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRequest {
    name: Option<Spanned<String>>,
    method: Option<Spanned<String>>,
    url: Spanned<String>,
    #[serde(default)]
    headers: Vec<Spanned<String>>,
    body: Option<Spanned<String>>,
    think: Option<Spanned<String>>,
    status: Option<Spanned<StatusSpec>>,
    contains: Option<Spanned<String>>,
    #[serde(default)]
    extract: Vec<Spanned<RawExtract>>,
    #[serde(default)]
    burst: Vec<RawResource>,
}

/// A burst's member: an embedded resource (no checks, extraction or think time of its own).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawResource {
    name: Option<Spanned<String>>,
    method: Option<Spanned<String>>,
    url: Spanned<String>,
    #[serde(default)]
    headers: Vec<Spanned<String>>,
}

impl From<RawResource> for RawRequest {
    fn from(r: RawResource) -> RawRequest {
        RawRequest {
            name: r.name,
            method: r.method,
            url: r.url,
            headers: r.headers,
            body: None,
            think: None,
            status: None,
            contains: None,
            extract: Vec::new(),
            burst: Vec::new(),
        }
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum StatusSpec {
    One(i64),
    Many(Vec<i64>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExtract {
    var: Spanned<String>,
    regex: Option<Spanned<String>>,
    group: Option<usize>,
    json: Option<Spanned<String>>,
    header: Option<Spanned<String>>,
}

/// Errors about one file: `file:line: key: message`.
struct Ctx<'a> {
    file: String,
    text: &'a str,
}

impl Ctx<'_> {
    fn line(&self, at: usize) -> usize {
        self.text[..at.min(self.text.len())].matches('\n').count() + 1
    }

    fn err<T>(
        &self,
        span: std::ops::Range<usize>,
        key: &str,
        msg: impl std::fmt::Display,
    ) -> Result<T, String> {
        Err(format!(
            "{}:{}: {key}: {msg}",
            self.file,
            self.line(span.start)
        ))
    }
}

/// Reads and checks a scenario file. `base`: the URL given on the command line, which
/// relative request URLs (`/login`) resolve against (before the file's `base`).
/// `max_body`: `--max-body-capture`.
pub fn load(path: &Path, base: Option<&str>, max_body: usize) -> Result<Plan, String> {
    let bytes = crate::fsutil::read_capped(path, MAX_FILE, "--scenario")?;
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("{}: not UTF-8 text", crate::fsutil::shown(path)))?;
    parse(&text, path, base, max_body)
}

pub(super) fn parse(
    text: &str,
    path: &Path,
    base: Option<&str>,
    max_body: usize,
) -> Result<Plan, String> {
    let cx = Ctx {
        file: crate::fsutil::shown(path),
        text,
    };
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        let msg = e.message().replace('\n', " ");
        match e.span() {
            Some(s) => format!("{}:{}: {}", cx.file, cx.line(s.start), msg.trim()),
            None => format!("{}: {}", cx.file, msg.trim()),
        }
    })?;
    let mut var_names: Vec<String> = Vec::new();
    // The feeder's columns are the first variables.
    let feeder = match &raw.feeder {
        None => None,
        Some(f) => {
            let per = match f.per.as_ref().map(|p| p.get_ref().as_str()) {
                None | Some("user") => RowPer::User,
                Some("iteration") => RowPer::Iteration,
                Some(other) => {
                    return cx.err(
                        f.per.as_ref().map_or(0..0, Spanned::span),
                        "feeder.per",
                        format!("'{other}': use \"user\" or \"iteration\""),
                    )
                }
            };
            let file = path
                .parent()
                .unwrap_or(Path::new("."))
                .join(f.file.get_ref());
            let feeder =
                Feeder::load(&file, per).or_else(|e| cx.err(f.file.span(), "feeder.file", e))?;
            let ids = feeder
                .columns
                .iter()
                .map(|c| {
                    var_names.push(c.clone());
                    var_names.len() - 1
                })
                .collect();
            Some((feeder, ids))
        }
    };
    let mut constants = Vec::new();
    for (name, value) in &raw.vars {
        if !is_var_name(name) {
            return cx.err(
                value.span(),
                &format!("vars.{name}"),
                "a variable name is letters, digits and '_'",
            );
        }
        if var_names.contains(name) {
            return cx.err(
                value.span(),
                &format!("vars.{name}"),
                "also a feeder column",
            );
        }
        var_names.push(name.clone());
        constants.push((var_names.len() - 1, value.get_ref().clone()));
    }
    let base_url = match (base, &raw.base) {
        (Some(b), _) => Some(Url::parse(b).map_err(|e| format!("URL {e}"))?),
        (None, Some(b)) => Some(Url::parse(b.get_ref()).or_else(|e| cx.err(b.span(), "base", e))?),
        (None, None) => None,
    };
    let raw_scenarios: Vec<ScenarioParts> = match (raw.scenario, raw.request) {
        (Some(_), Some(_)) => {
            return Err(format!(
                "{}: give either [[request]] (one scenario) or [[scenario]] tables, not both",
                cx.file
            ))
        }
        (Some(s), None) => s
            .into_iter()
            .enumerate()
            .map(|(i, s)| (s.name, s.weight, s.request, format!("scenario[{}].", i + 1)))
            .collect(),
        (None, Some(r)) => vec![(None, None, r, String::new())],
        (None, None) => return Err(format!("{}: no [[request]] to send", cx.file)),
    };
    let fixed = var_names.len();
    // Every extracted name gets its id up front, so a use before the extraction is told apart
    // from a name defined nowhere.
    for (_, _, requests, _) in &raw_scenarios {
        for e in requests.iter().flat_map(|r| &r.extract) {
            let v = e.get_ref().var.get_ref();
            if is_var_name(v) && !var_names.contains(v) {
                var_names.push(v.clone());
            }
        }
    }
    let mut b = Builder {
        cx: &cx,
        var_names,
        servers: Vec::new(),
        base: base_url,
    };
    let mut scenarios = Vec::new();
    for (i, (name, weight, requests, prefix)) in raw_scenarios.into_iter().enumerate() {
        let name = match name {
            Some(n) => n.into_inner(),
            None if prefix.is_empty() => path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or("scenario")
                .to_string(),
            None => format!("scenario{}", i + 1),
        };
        let weight = match weight {
            None => 1,
            Some(w) => match u32::try_from(*w.get_ref()) {
                Ok(v) if v > 0 => v,
                _ => {
                    return cx.err(
                        w.span(),
                        &format!("{prefix}weight"),
                        "a whole number above 0",
                    )
                }
            },
        };
        if requests.is_empty() {
            return Err(format!(
                "{}: {prefix}request: no request in scenario '{name}'",
                cx.file
            ));
        }
        // Variables a step may use: the feeder's, [vars], and what earlier steps extracted.
        let mut known: Vec<bool> = (0..b.var_names.len()).map(|i| i < fixed).collect();
        let mut steps = Vec::new();
        for (j, r) in requests.into_iter().enumerate() {
            let key = format!("{prefix}request[{}]", j + 1);
            steps.push(b.step(r, &key, &mut known)?);
        }
        let mut names: Vec<&str> = Vec::new();
        for s in steps
            .iter()
            .flat_map(|s| std::iter::once(s).chain(&s.burst))
        {
            if names.contains(&s.name.as_str()) {
                return Err(format!("{}: {prefix}request: the name '{}' is used twice; names tell requests apart in the results", cx.file, s.name));
            }
            names.push(&s.name);
        }
        scenarios.push(Scenario {
            name,
            weight,
            steps,
        });
    }
    let https = b.servers.iter().any(|s| s.https);
    if https && b.servers.iter().any(|s| !s.https) {
        return Err(format!(
            "{}: a scenario's URLs are all http:// or all https://",
            cx.file
        ));
    }
    // Names for the statistics per name: the steps' own, numbered once here.
    let mut scenarios = scenarios;
    let mut names = crate::plan::naming::Names::new();
    for step in scenarios.iter_mut().flat_map(|s| s.steps.iter_mut()) {
        step.name_id = names.index(&step.name);
        for m in &mut step.burst {
            m.name_id = names.index(&m.name);
        }
    }
    let connections_per_host = match &raw.connections_per_host {
        None => super::DEFAULT_CONNECTIONS_PER_HOST,
        Some(n) => match usize::try_from(*n.get_ref()) {
            Ok(v @ 1..=64) => v,
            _ => {
                return cx.err(
                    n.span(),
                    "connections_per_host",
                    "a whole number from 1 to 64",
                )
            }
        },
    };
    Ok(Plan {
        scenarios,
        names: names.into_vec(),
        var_names: b.var_names,
        constants,
        feeder,
        cookies: raw.cookies.unwrap_or(true),
        servers: b.servers,
        max_body,
        begun: AtomicU64::new(0),
        connections_per_host,
    })
}

struct Builder<'a> {
    cx: &'a Ctx<'a>,
    var_names: Vec<String>,
    servers: Vec<Server>,
    base: Option<Url>,
}

impl Builder<'_> {
    fn template(&self, s: &Spanned<String>, key: &str, known: &[bool]) -> Result<Template, String> {
        let t = Template::parse(s.get_ref(), |n| {
            self.var_names
                .iter()
                .position(|v| v == n)
                .filter(|&i| known.get(i) == Some(&true))
        });
        t.or_else(|e| {
            // Name the variable's real problem: not defined at all, or only later.
            let e = if e.starts_with("unknown variable") {
                let later = self
                    .var_names
                    .iter()
                    .any(|v| e.contains(&format!("'${{{v}}}'")));
                if later {
                    format!(
                        "{e}: it is extracted by this request or a later one, not an earlier one"
                    )
                } else {
                    format!("{e}: not a feeder column, [vars] entry or extracted variable")
                }
            } else {
                e
            };
            self.cx.err(s.span(), key, e)
        })
    }

    fn step(&mut self, r: RawRequest, key: &str, known: &mut Vec<bool>) -> Result<Step, String> {
        let cx = self.cx;
        let method = match &r.method {
            None => "GET".to_string(),
            Some(m) => crate::plan::parse_method(m.get_ref())
                .or_else(|e| cx.err(m.span(), &format!("{key}.method"), e))?,
        };
        let url_key = format!("{key}.url");
        let (server, target) = self.url(&r.url, &url_key, known)?;
        let name = match &r.name {
            Some(n) if n.get_ref().is_empty() || n.get_ref().chars().any(char::is_control) => {
                return cx.err(n.span(), &format!("{key}.name"), "a name is printable text")
            }
            Some(n) => n.get_ref().clone(),
            None => {
                // As the results name a URL: its path, without query values.
                let raw = r.url.get_ref();
                let path = raw.split('?').next().unwrap_or(raw);
                let path = path
                    .strip_prefix("http://")
                    .or_else(|| path.strip_prefix("https://"))
                    .map_or(path, |p| p.find('/').map_or("/", |i| &p[i..]));
                format!("{method} {path}")
            }
        };
        let mut headers = Vec::new();
        for (k, h) in r.headers.iter().enumerate() {
            let hkey = format!("{key}.headers[{}]", k + 1);
            let (n, v) =
                crate::plan::parse_header(h.get_ref()).or_else(|e| cx.err(h.span(), &hkey, e))?;
            if n.eq_ignore_ascii_case("host") {
                return cx.err(h.span(), &hkey, "Host comes from the URL");
            }
            let v = Spanned::new(h.span(), v);
            headers.push((n, self.template(&v, &hkey, known)?));
        }
        let body = r
            .body
            .as_ref()
            .map(|b| self.template(b, &format!("{key}.body"), known))
            .transpose()?;
        let think = r
            .think
            .as_ref()
            .map(|t| {
                crate::units::parse_duration_range(t.get_ref())
                    .or_else(|e| cx.err(t.span(), &format!("{key}.think"), e))
            })
            .transpose()?;
        let status = match &r.status {
            None => Vec::new(),
            Some(s) => {
                let list = match s.get_ref() {
                    StatusSpec::One(n) => vec![*n],
                    StatusSpec::Many(v) => v.clone(),
                };
                let mut out = Vec::new();
                for n in list {
                    match u16::try_from(n) {
                        Ok(c @ 100..=599) => out.push(c),
                        _ => {
                            return cx.err(
                                s.span(),
                                &format!("{key}.status"),
                                format!("{n}: a status is 100 to 599"),
                            )
                        }
                    }
                }
                out
            }
        };
        let contains = r
            .contains
            .as_ref()
            .map(|c| self.template(c, &format!("{key}.contains"), known))
            .transpose()?;
        // Members see the variables their page sees (not what the page extracts: they are
        // sent with its answer in hand, but a browser's resource URLs are in the page already).
        let mut burst = Vec::new();
        for (k, m) in r.burst.into_iter().enumerate() {
            let mkey = format!("{key}.burst[{}]", k + 1);
            burst.push(self.step(m.into(), &mkey, known)?);
        }
        // Extracted values are known to the requests after this one.
        let mut extract = Vec::new();
        for (k, e) in r.extract.iter().enumerate() {
            let ekey = format!("{key}.extract[{}]", k + 1);
            extract.push(self.extract(e, &ekey)?);
        }
        known.resize(self.var_names.len(), false);
        for e in &extract {
            known[e.var] = true;
        }
        Ok(Step {
            name_id: 0,
            name,
            method,
            server,
            target,
            headers,
            body,
            think,
            extract,
            status,
            contains,
            burst,
        })
    }

    fn extract(&mut self, e: &Spanned<RawExtract>, key: &str) -> Result<Extract, String> {
        let cx = self.cx;
        let raw = e.get_ref();
        let var = raw.var.get_ref();
        if !is_var_name(var) {
            return cx.err(
                raw.var.span(),
                &format!("{key}.var"),
                "a variable name is letters, digits and '_'",
            );
        }
        let from = match (&raw.regex, &raw.json, &raw.header) {
            (Some(re), None, None) => {
                let rx = regex::bytes::Regex::new(re.get_ref()).or_else(|err| {
                    let msg = err.to_string();
                    let last = msg
                        .lines()
                        .rfind(|l| !l.trim().is_empty())
                        .unwrap_or("")
                        .trim()
                        .to_string();
                    cx.err(
                        re.span(),
                        &format!("{key}.regex"),
                        format!("bad regex: {last}"),
                    )
                })?;
                let groups = rx.captures_len() - 1;
                let group = raw.group.unwrap_or(usize::from(groups > 0));
                if group > groups {
                    return cx.err(
                        re.span(),
                        &format!("{key}.group"),
                        format!("group {group}, but the regex has {groups}"),
                    );
                }
                Source::Regex(rx, group)
            }
            (None, Some(p), None) => {
                let p = p.get_ref();
                if !(p.is_empty() || p.starts_with('/')) {
                    return cx.err(
                        raw.var.span(),
                        &format!("{key}.json"),
                        format!("'{p}': a JSON pointer starts with '/'"),
                    );
                }
                Source::Json(p.clone())
            }
            (None, None, Some(h)) => {
                let n = h.get_ref();
                if n.is_empty() || !n.bytes().all(|b| b.is_ascii_graphic() && b != b':') {
                    return cx.err(
                        h.span(),
                        &format!("{key}.header"),
                        format!("'{n}' is not a header name"),
                    );
                }
                Source::Header(n.to_ascii_lowercase())
            }
            _ => return cx.err(e.span(), key, "give exactly one of regex, json or header"),
        };
        let id = match self.var_names.iter().position(|v| v == var) {
            Some(i) => i,
            None => {
                self.var_names.push(var.clone());
                self.var_names.len() - 1
            }
        };
        Ok(Extract { var: id, from })
    }

    /// A request URL: absolute, or a path against the base; `${var}` only after the host.
    fn url(
        &mut self,
        u: &Spanned<String>,
        key: &str,
        known: &[bool],
    ) -> Result<(usize, Template), String> {
        let cx = self.cx;
        let text = u.get_ref();
        let (origin, rest) = if text.starts_with('/') {
            match &self.base {
                Some(b) => (b.clone(), text.as_str()),
                None => {
                    return cx.err(u.span(), key, format!("'{text}' is a path: give the server as a URL argument or as base = \"http://host:port\""))
                }
            }
        } else {
            let after = text
                .strip_prefix("http://")
                .or_else(|| text.strip_prefix("https://"))
                .ok_or(())
                .or_else(|()| {
                    cx.err(
                        u.span(),
                        key,
                        format!("'{text}': use http://host/path, https://host/path or /path"),
                    )
                })?;
            let cut = text.len() - after.len() + after.find(['/', '?']).unwrap_or(after.len());
            let (o, r) = text.split_at(cut);
            if o.contains('$') {
                return cx.err(u.span(), key, "variables may not name the server: the run connects to its servers before it starts");
            }
            let parsed = Url::parse(o).or_else(|e| cx.err(u.span(), key, e))?;
            (parsed, if r.is_empty() { "/" } else { r })
        };
        let rest = if rest.starts_with('?') {
            format!("/{rest}")
        } else {
            rest.to_string()
        };
        if rest.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return cx.err(
                u.span(),
                key,
                "spaces and control characters must be percent-encoded",
            );
        }
        let target = self.template(&Spanned::new(u.span(), rest), key, known)?;
        let https = origin.scheme == Scheme::Https;
        let host = origin.host.to_ascii_lowercase();
        let idx = match self
            .servers
            .iter()
            .position(|s| s.host == host && s.authority == origin.authority && s.https == https)
        {
            Some(i) => i,
            None => {
                let addr = origin.resolve().or_else(|e| cx.err(u.span(), key, e))?;
                if https && self.servers.iter().any(|s| s.addr == addr) {
                    return cx.err(u.span(), key, format!("two https hosts share the address {addr}; one per address is supported"));
                }
                self.servers.push(Server {
                    addr,
                    host,
                    authority: origin.authority.clone(),
                    https,
                });
                self.servers.len() - 1
            }
        };
        Ok((idx, target))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    pub(in crate::scenario) fn plan_of(text: &str) -> Plan {
        parse(text, Path::new("t.toml"), Some("http://127.0.0.1:1"), 1024).unwrap()
    }

    fn err_of(text: &str) -> String {
        parse(text, Path::new("t.toml"), Some("http://127.0.0.1:1"), 1024).unwrap_err()
    }

    #[test]
    fn a_login_scenario() {
        let p = plan_of(
            r#"
[vars]
password = "secret"

[[request]]
name = "login"
method = "post"
url = "/login"
headers = ["Content-Type: application/x-www-form-urlencoded"]
body = "user=ann&password=${password}"
status = 200
[[request.extract]]
var = "token"
regex = 'name="csrf" value="([^"]+)"'

[[request]]
url = "http://127.0.0.1:1/post?t=${token}"
think = "1s..2s"
status = [200, 302]
contains = "ok"
"#,
        );
        assert_eq!(p.scenarios.len(), 1);
        let s = &p.scenarios[0];
        assert_eq!(s.name, "t");
        assert_eq!(s.steps[0].name, "login");
        assert_eq!(s.steps[0].method, "POST");
        assert_eq!(s.steps[1].name, "GET /post");
        assert_eq!(s.steps[1].status, vec![200, 302]);
        assert_eq!(
            p.servers.len(),
            1,
            "the base and the absolute URL are one server"
        );
        assert_eq!(p.var_names, vec!["password", "token"]);
        assert!(s.steps[1].wants_body() && s.steps[0].wants_body());
        assert_eq!(
            s.steps[1].think,
            Some((
                std::time::Duration::from_secs(1),
                std::time::Duration::from_secs(2)
            ))
        );
        assert!(p.cookies);
    }

    #[test]
    fn bursts_and_their_connections() {
        let p = plan_of(
            "connections_per_host = 2\n[vars]\nv = \"1\"\n[[request]]\nname = \"home\"\nurl = \"/\"\n\
             burst = [{ url = \"/a.css?v=${v}\" }, { name = \"logo\", url = \"/l.png\", method = \"HEAD\", headers = [\"X-A: 1\"] }]\n",
        );
        assert_eq!(p.connections_per_host, 2);
        let b = &p.scenarios[0].steps[0].burst;
        assert_eq!(
            b.iter()
                .map(|m| (m.name.as_str(), m.method.as_str()))
                .collect::<Vec<_>>(),
            [("GET /a.css", "GET"), ("logo", "HEAD")]
        );
        // Members are named in the results beside the steps.
        assert_eq!(p.names, ["home", "GET /a.css", "logo"]);
        assert_eq!(b[1].name_id, 2);
        assert_eq!(
            plan_of("[[request]]\nurl = \"/\"\n").connections_per_host,
            6
        );
        let e = err_of("[[request]]\nurl = \"/\"\nburst = [{ url = \"/a\", status = 200 }]\n");
        assert!(e.starts_with("t.toml:3: unknown field `status`"), "{e}");
        let e = err_of("[[request]]\nurl = \"/\"\nburst = [{ url = \"/a?${nope}\" }]\n");
        assert!(
            e.starts_with("t.toml:3: request[1].burst[1].url: unknown variable"),
            "{e}"
        );
        let e = err_of("connections_per_host = 0\n[[request]]\nurl = \"/\"\n");
        assert_eq!(
            e,
            "t.toml:1: connections_per_host: a whole number from 1 to 64"
        );
        let e = err_of(
            "[[request]]\nname = \"x\"\nurl = \"/\"\nburst = [{ name = \"x\", url = \"/a\" }]\n",
        );
        assert!(e.contains("the name 'x' is used twice"), "{e}");
    }

    #[test]
    fn bad_input_names_file_line_and_key() {
        let e = err_of(
            "[[request]]\nurl = \"/a\"\n\n[[request]]\nurl = \"/b\"\nbody = \"x=${nope}\"\n",
        );
        assert_eq!(
            e,
            "t.toml:6: request[2].body: unknown variable '${nope}': not a feeder column, [vars] \
             entry or extracted variable"
        );
        // Used before the request that extracts it.
        let e = err_of("[[request]]\nurl = \"/a?${tok}\"\n[[request.extract]]\nvar = \"tok\"\nheader = \"x-t\"\n");
        assert!(
            e.starts_with("t.toml:2: request[1].url: unknown variable '${tok}': it is extracted"),
            "{e}"
        );
        let e = err_of(
            "[[request]]\nurl = \"/a\"\n[[request.extract]]\nvar = \"t\"\nregex = \"a(b\"\n",
        );
        assert!(
            e.starts_with("t.toml:5: request[1].extract[1].regex: bad regex"),
            "{e}"
        );
        assert!(!e.contains('\n'));
        let e = err_of("[[request]]\nurl = \"/a\"\n[[request.extract]]\nvar = \"t\"\nregex = \"a\"\njson = \"/x\"\n");
        assert!(e.contains("exactly one of"), "{e}");
        let e = err_of("[[request]]\nurl = \"http://h${x}:1/\"\n");
        assert!(
            e.contains("request[1].url: variables may not name the server"),
            "{e}"
        );
        let e = err_of("[[request]]\nurl = \"/\"\nstatus = 999\n");
        assert!(e.starts_with("t.toml:3: request[1].status"), "{e}");
        let e = err_of("[[request]]\nurl = \"/\"\nbogus = 1\n");
        assert!(e.starts_with("t.toml:3: unknown field `bogus`"), "{e}");
        let e = err_of("[[request]]\nurl = \"/\"\nheaders = [\"Content-Length: 3\"]\n");
        assert!(e.starts_with("t.toml:3: request[1].headers[1]:"), "{e}");
        let e = err_of("[[request]]\nurl = \"/\"\nthink = \"2s..1s\"\n");
        assert!(e.starts_with("t.toml:3: request[1].think:"), "{e}");
        assert!(err_of("cookies = true\n").contains("no [[request]]"));
        let e = parse("[[request]]\nurl = \"/\"\n", Path::new("t.toml"), None, 1).unwrap_err();
        assert!(e.contains("is a path"), "{e}");
    }

    #[test]
    fn feeder_columns_are_variables_and_a_missing_column_is_an_error() {
        let dir =
            std::env::temp_dir().join(format!("overload-scenario-feeder-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("users.csv"), "user,password\nann,a1\nbob,b2\n").unwrap();
        let file = dir.join("s.toml");
        let good = "[feeder]\nfile = \"users.csv\"\n[[request]]\nurl = \"/u/${user}\"\nbody = \"${password}\"\n";
        let p = parse(good, &file, Some("http://127.0.0.1:1"), 1).unwrap();
        let (f, ids) = p.feeder.as_ref().unwrap();
        assert_eq!((f.rows(), ids.clone()), (2, vec![0, 1]));
        let bad = "[feeder]\nfile = \"users.csv\"\n[[request]]\nurl = \"/u/${login}\"\n";
        let e = parse(bad, &file, Some("http://127.0.0.1:1"), 1).unwrap_err();
        assert!(e.ends_with("s.toml:4: request[1].url: unknown variable '${login}': not a feeder column, [vars] entry or extracted variable"), "{e}");
        let missing = "[feeder]\nfile = \"nope.csv\"\n[[request]]\nurl = \"/\"\n";
        let e = parse(missing, &file, Some("http://127.0.0.1:1"), 1).unwrap_err();
        assert!(e.contains("s.toml:2: feeder.file:"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
