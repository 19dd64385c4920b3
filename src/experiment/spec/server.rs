//! A configuration's server validated: a lab stack (with its knobs, expanded into a matrix)
//! or a `setup` command with its readiness URL.
use super::raw::{List, RawConfig};
use super::{dur, err, is_name, Server};
use crate::experiment::plan;
use crate::lab::{Engine, Knobs, Pm, Size, Stack, StackSpec};
use crate::Error;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// `on`/`off`, `true`/`false`.
pub(super) fn knob_bool(v: &toml::Value) -> Option<bool> {
    match v {
        toml::Value::Boolean(b) => Some(*b),
        toml::Value::String(s) => match s.as_str() {
            "on" | "true" | "yes" => Some(true),
            "off" | "false" | "no" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

fn knob_count(v: &toml::Value) -> Option<u32> {
    match v {
        toml::Value::Integer(i) => u32::try_from(*i).ok(),
        _ => None,
    }
}

/// Display of one knob value in generated names: `8`, `on`, `dynamic`.
pub fn knob_text(v: &toml::Value) -> String {
    match v {
        toml::Value::Boolean(b) => if *b { "on" } else { "off" }.into(),
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The configuration's server(s): one, or one per point of its matrix.
pub(super) fn servers(
    file: &Path,
    label: &str,
    c: &RawConfig,
) -> crate::Result<Vec<(String, Server)>> {
    let key = |k: &str| format!("{label} {k}");
    match (&c.stack, &c.setup) {
        (Some(_), Some(_)) => Err(err(
            file,
            &key("setup"),
            "give a lab `stack` or a `setup` command, not both",
        )),
        (None, None) => Err(err(
            file,
            &key("stack"),
            "say which server: a lab `stack` (e.g. \"nginx-fpm\") or a `setup` command with a `ready` URL",
        )),
        (None, Some(setup)) => {
            if c.knobs.is_some() || c.port.is_some() || c.no_db.is_some() {
                return Err(err(
                    file,
                    &key("knobs"),
                    "knobs, port and no_db apply to lab stacks; a setup command configures its server itself",
                ));
            }
            let name = c
                .name
                .clone()
                .ok_or_else(|| err(file, &key("name"), "a setup configuration needs a name"))?;
            if !is_name(&name) {
                return Err(err(
                    file,
                    &key("name"),
                    format!(
                        "'{}' must be letters, digits, '-', '_' or '.'",
                        crate::units::escape_controls(&name)
                    ),
                ));
            }
            let ready = c
                .ready
                .clone()
                .ok_or_else(|| err(file, &key("ready"), "a setup command needs a `ready` URL that answers once the server is up"))?;
            let base = origin(&ready).ok_or_else(|| {
                err(file, &key("ready"), format!("'{ready}' is not an http(s):// URL"))
            })?;
            let url = c.url.clone().unwrap_or(base);
            if origin(&url).is_none() {
                return Err(err(file, &key("url"), format!("'{url}' is not an http(s):// URL")));
            }
            Ok(vec![(
                name,
                Server::Command {
                    setup: setup.clone(),
                    teardown: c.teardown.clone(),
                    ready,
                    url: url.trim_end_matches('/').to_string(),
                    ready_timeout: dur(file, &key("ready_timeout"), &c.ready_timeout, Duration::from_secs(30))?,
                    network: network(file, label, c)?,
                },
            )])
        }
        (Some(stacks), None) => {
            if c.teardown.is_some() || c.ready.is_some() || c.url.is_some() {
                return Err(err(
                    file,
                    &key("ready"),
                    "teardown, ready and url go with a setup command; the lab knows its stacks",
                ));
            }
            lab_servers(file, label, c, stacks)
        }
    }
}

/// The configuration's `network` table as a path (`lab netem`'s defaults for what it omits).
fn network(
    file: &Path,
    label: &str,
    c: &RawConfig,
) -> crate::Result<Option<crate::lab::netem::PathSpec>> {
    use crate::lab::netem::{PathSpec, Way};
    let Some(n) = &c.network else {
        return Ok(None);
    };
    let key = |k: &str| format!("{label} network.{k}");
    let d = PathSpec::default();
    let loss = match &n.loss {
        Some(t) => crate::units::parse_share(&t.0).map_err(|e| err(file, &key("loss"), e))?,
        None => d.loss,
    };
    let way: Way = match &n.impair {
        Some(w) => w.parse().map_err(|e: Error| err(file, &key("impair"), e))?,
        None => d.way,
    };
    let spec = PathSpec {
        rtt: dur(file, &key("delay"), &n.delay, d.rtt)?,
        jitter: dur(file, &key("jitter"), &n.jitter, d.jitter)?,
        loss,
        way,
        queue: n.queue.unwrap_or(d.queue),
        seed: n.seed.unwrap_or(d.seed),
    };
    spec.check().map_err(|e| err(file, &key("delay"), e))?;
    Ok(Some(spec))
}

/// `http(s)://host:port` of an http(s):// URL.
pub fn origin(url: &str) -> Option<String> {
    crate::url::Url::parse(url).ok().map(|u| u.origin())
}

fn lab_servers(
    file: &Path,
    label: &str,
    c: &RawConfig,
    stacks: &List,
) -> crate::Result<Vec<(String, Server)>> {
    let key = |k: &str| format!("{label} {k}");
    if stacks.0.is_empty() {
        return Err(err(file, &key("stack"), "empty list"));
    }
    let mut parsed = Vec::new();
    for s in &stacks.0 {
        let st: Stack = s.parse().map_err(|e: Error| err(file, &key("stack"), e))?;
        if !st.is_web() {
            return Err(err(
                file,
                &key("stack"),
                format!("'{s}' is not a web stack; set MariaDB's query_cache/engine as knobs of a web stack"),
            ));
        }
        parsed.push(st);
    }
    let knobs = c.knobs.clone().unwrap_or_default();
    if plan::matrix_size(&parsed, &knobs) > plan::MAX_CONFIGS {
        return Err(err(
            file,
            &key("knobs"),
            format!(
                "the matrix has more than {} configurations (stacks × knob values)",
                plan::MAX_CONFIGS
            ),
        ));
    }
    let net = network(file, label, c)?;
    let points = plan::matrix(&parsed, &knobs);
    let axes = plan::axes(&parsed, &knobs);
    let mut out = Vec::new();
    for (stack, values) in points {
        let name = plan::point_name(c.name.as_deref(), stack, &values, &axes);
        if !is_name(&name) {
            return Err(err(
                file,
                &key("name"),
                format!(
                    "'{}' must be letters, digits, '-', '_' or '.' (placeholders: {{stack}} and the knobs)",
                    crate::units::escape_controls(&name)
                ),
            ));
        }
        let (k, db) = knobs_of(file, &format!("config '{name}'"), stack, &values)?;
        let spec = StackSpec {
            knobs: k,
            port: c.port,
            no_db: c.no_db.unwrap_or(false),
            ..StackSpec::new(stack)
        };
        // Every rule the lab checks at `up`, checked now: a typo fails before the first run.
        spec.resolve()
            .map_err(|e| err(file, &format!("config '{name}' knobs"), e))?;
        if db.is_some() && spec.no_db {
            return Err(err(
                file,
                &format!("config '{name}' knobs"),
                "query_cache/engine configure MariaDB, which no_db turns off",
            ));
        }
        out.push((
            name,
            Server::Lab {
                spec,
                db,
                network: net,
            },
        ));
    }
    Ok(out)
}

/// Lab knobs from the file's values. `workers` means worker processes on every stack
/// (max_children for PHP-FPM) so one matrix axis spans stacks (S2); query_cache and engine
/// go to the MariaDB the stack uses.
fn knobs_of(
    file: &Path,
    label: &str,
    stack: Stack,
    values: &BTreeMap<String, toml::Value>,
) -> crate::Result<(Knobs, Option<Knobs>)> {
    let mut k = Knobs::default();
    let mut db = Knobs::default();
    for (name, v) in values {
        let key = format!("{label} knobs.{name}");
        let bad = |want: &str| err(file, &key, format!("{} is not {want}", knob_text(v)));
        match name.as_str() {
            "pm" => {
                k.pm = Some(match v.as_str() {
                    Some("static") => Pm::Static,
                    Some("dynamic") => Pm::Dynamic,
                    Some("ondemand") => Pm::Ondemand,
                    _ => return Err(bad("one of static, dynamic, ondemand")),
                })
            }
            "engine" => {
                db.engine = Some(match v.as_str() {
                    Some("innodb") => Engine::Innodb,
                    Some("myisam") => Engine::Myisam,
                    _ => return Err(bad("one of innodb, myisam")),
                })
            }
            "opcache" => k.opcache = Some(knob_bool(v).ok_or_else(|| bad("on or off"))?),
            "tls" => k.tls = Some(knob_bool(v).ok_or_else(|| bad("on or off"))?),
            "http2" => k.http2 = Some(knob_bool(v).ok_or_else(|| bad("on or off"))?),
            "keep_alive" => k.keep_alive = Some(knob_bool(v).ok_or_else(|| bad("on or off"))?),
            "query_cache" => {
                db.query_cache = Some(knob_bool(v).ok_or_else(|| bad("on or off"))?)
            }
            "web" => {
                k.web = Some(
                    v.as_str()
                        .and_then(|s| s.parse().ok())
                        .ok_or_else(|| bad("a stack name"))?,
                )
            }
            "size" => {
                k.size = Some(match v.as_str() {
                    Some("small") => Size::Small,
                    Some("medium") => Size::Medium,
                    _ => return Err(bad("one of small, medium")),
                })
            }
            "backlog" => k.backlog = Some(knob_count(v).ok_or_else(|| bad("a whole number"))?),
            "workers" | "max_children" | "start_servers" | "min_spare" | "max_spare" => {
                let n = knob_count(v).ok_or_else(|| bad("a whole number"))?;
                // An app stack's workers are its front's (`web`, else its default front).
                let serves = match (stack.fronts().first(), values.get("web")) {
                    (None, _) => stack,
                    (Some(first), w) => w
                        .and_then(|w| w.as_str())
                        .and_then(|w| w.parse().ok())
                        .unwrap_or(*first),
                };
                let slot = match name.as_str() {
                    "workers" if serves.uses_fpm() => {
                        if values.contains_key("max_children") {
                            return Err(err(
                                file,
                                &key,
                                "give workers or max_children, not both (workers is max_children on PHP-FPM)",
                            ));
                        }
                        &mut k.max_children
                    }
                    "workers" => &mut k.workers,
                    "max_children" => &mut k.max_children,
                    "start_servers" => &mut k.start_servers,
                    "min_spare" => &mut k.min_spare,
                    _ => &mut k.max_spare,
                };
                *slot = Some(n);
            }
            other => {
                return Err(err(
                    file,
                    &key,
                    format!("unknown knob '{other}' (knobs: pm, workers, max_children, start_servers, min_spare, max_spare, opcache, keep_alive, backlog, tls, http2, query_cache, engine, web, size)"),
                ))
            }
        }
    }
    let db = (db != Knobs::default()).then_some(db);
    Ok((k, db))
}
