//! The `[load]` and `[request]` tables validated; what they leave out falls back to the
//! library's defaults (`usecase::SweepConfig`, `CapacityConfig`, …), the same as the
//! command line's.
use super::raw::{RawLoad, RawRequest, Text};
use super::server::{knob_bool, knob_text};
use super::{dur, err, share, Kind, LoadPlan, Request};
use crate::engine::tls::TlsVersion;
use crate::units::{parse_duration, parse_duration_range};
use crate::usecase::command::{arrival_name, pick_name};
use crate::usecase::config::{HttpVersion, TlsConfig};
use crate::usecase::SweepConfig;
use crate::usecase::{CapacityConfig, ConnConfig, OpenLoopConfig, RequestConfig, StepTiming};
use std::path::{Path, PathBuf};

pub(super) fn load_plan(file: &Path, label: &str, l: &RawLoad) -> crate::Result<LoadPlan> {
    let key = |k: &str| format!("{label} load.{k}");
    let ramp = stages_of(file, label, l)?;
    let kind = match (l.kind.as_deref(), &ramp) {
        (None | Some("ramp"), Some(_)) => Kind::Ramp,
        (Some("ramp"), None) => {
            return Err(err(
                file,
                &key("stages"),
                "a ramp needs stages = \"30s:100, 1m:2000\" (or user_stages)",
            ))
        }
        (Some(k), Some((users, _))) => {
            let which = if *users { "user_stages" } else { "stages" };
            return Err(err(
                file,
                &key(which),
                format!("{which} make a ramp, not a {k}: leave out kind (or kind = \"ramp\")"),
            ));
        }
        (None | Some("sweep"), None) => Kind::Sweep,
        (Some("steps"), None) => Kind::Steps,
        (Some("capacity"), None) => Kind::Capacity,
        (Some(other), None) => {
            return Err(err(
                file,
                &key("kind"),
                format!("'{other}' is not one of sweep, steps, capacity, ramp"),
            ))
        }
    };
    let (closed, levels) = match (&l.users, &l.rates, kind) {
        (_, _, Kind::Ramp) => (ramp.as_ref().is_some_and(|r| r.0), Vec::new()),
        (Some(_), _, Kind::Capacity) => {
            return Err(err(
                file,
                &key("users"),
                "a capacity search steps the request rate: use start/max, not users",
            ))
        }
        (None, _, Kind::Capacity) => (false, Vec::new()),
        (Some(_), Some(_), _) => {
            return Err(err(file, &key("rates"), "give users or rates, not both"))
        }
        (Some(Text(u)), None, _) => (
            true,
            crate::plan::steps::parse_users(u)
                .map_err(|e| err(file, &key("users"), e.replace("--users ", "")))?
                .into_iter()
                .map(|v| v as f64)
                .collect(),
        ),
        (None, Some(Text(r)), _) => (
            false,
            crate::plan::steps::parse_levels(r, "rates")
                .map_err(|e| err(file, &key("rates"), e))?,
        ),
        (None, None, _) => {
            return Err(err(
                file,
                &key("users"),
                "no load levels: give users (closed loop) or rates (open loop)",
            ))
        }
    };
    let think = match &l.think {
        None => None,
        Some(_) if !closed => {
            return Err(err(
                file,
                &key("think"),
                "think time applies to users (closed loop), not to rates",
            ))
        }
        Some(Text(t)) => Some(parse_duration_range(t).map_err(|e| err(file, &key("think"), e))?),
    };
    let timing = StepTiming::default();
    let step = dur(file, &key("step"), &l.step, timing.step)?;
    if step.is_zero() {
        return Err(err(file, &key("step"), "must be above zero"));
    }
    let max_p99 = match &l.max_p99 {
        None => None,
        Some(Text(t)) => Some(parse_duration(t).map_err(|e| err(file, &key("max_p99"), e))?),
    };
    if let Some(s) = &l.slo {
        crate::analysis::slo::parse(s).map_err(|e| err(file, &key("slo"), e))?;
    }
    if kind == Kind::Capacity && l.slo.is_none() {
        return Err(err(
            file,
            &key("slo"),
            "a capacity search needs an SLO, e.g. slo = \"p99<500ms,errors<1%\"",
        ));
    }
    let cap = CapacityConfig::default();
    let start = l.start.unwrap_or(cap.start);
    let max = l.max.unwrap_or(cap.max);
    if !(start.is_finite() && start > 0.0) {
        return Err(err(file, &key("start"), "must be a rate above zero"));
    }
    if !(max.is_finite() && max >= start) {
        return Err(err(file, &key("max"), "must be at least start"));
    }
    let precision = share(file, &key("precision"), &l.precision, cap.precision)?;
    if precision <= 0.0 {
        return Err(err(file, &key("precision"), "must be above 0%"));
    }
    let open = OpenLoopConfig::default();
    let arrival = l
        .arrival
        .clone()
        .unwrap_or_else(|| arrival_name(open.arrival).into());
    if !matches!(arrival.as_str(), "constant" | "poisson") {
        return Err(err(
            file,
            &key("arrival"),
            format!("'{arrival}' is not one of constant, poisson"),
        ));
    }
    let connections = l.connections.unwrap_or(open.connections);
    if connections == 0 {
        return Err(err(file, &key("connections"), "must be at least 1"));
    }
    let sweep = SweepConfig::default();
    Ok(LoadPlan {
        kind,
        closed,
        levels,
        stages: ramp.map(|r| r.1),
        think,
        step,
        warmup: dur(file, &key("warmup"), &l.warmup, timing.warmup)?,
        rest: dur(file, &key("rest"), &l.rest, timing.rest)?,
        past_saturation: l.past_saturation.unwrap_or(sweep.past_saturation),
        max_errors: share(file, &key("max_errors"), &l.max_errors, sweep.max_errors)?,
        max_p99,
        slo: l.slo.clone(),
        start,
        max,
        precision,
        arrival,
        connections,
    })
}

/// `stages` / `user_stages`: (of users, the stages); one at most, and not beside levels.
fn stages_of(
    file: &Path,
    label: &str,
    l: &RawLoad,
) -> crate::Result<Option<(bool, crate::plan::stages::Stages)>> {
    use crate::plan::stages::Stages;
    let key = |k: &str| format!("{label} load.{k}");
    let (users, text) = match (&l.stages, &l.user_stages) {
        (Some(_), Some(_)) => {
            return Err(err(
                file,
                &key("user_stages"),
                "stages ramp the rate, user_stages the users: give one",
            ))
        }
        (Some(t), None) => (false, t),
        (None, Some(t)) => (true, t),
        (None, None) => return Ok(None),
    };
    let which = if users { "user_stages" } else { "stages" };
    if l.users.is_some() || l.rates.is_some() {
        return Err(err(
            file,
            &key(which),
            format!("{which} set the levels: leave out users and rates"),
        ));
    }
    let st = Stages::parse(text).map_err(|e| err(file, &key(which), e))?;
    if users {
        st.check_users().map_err(|e| err(file, &key(which), e))?;
    }
    Ok(Some((users, st)))
}

pub(super) fn request_of(file: &Path, label: &str, r: &RawRequest) -> crate::Result<Request> {
    let key = |k: &str| format!("{label} request.{k}");
    let paths = r
        .path
        .clone()
        .map(|l| l.0)
        .unwrap_or_else(|| vec!["/".into()]);
    if paths.is_empty() {
        return Err(err(file, &key("path"), "empty list"));
    }
    for p in &paths {
        if !(p.starts_with('/') || p.starts_with("http://") || p.starts_with("https://")) {
            return Err(err(
                file,
                &key("path"),
                format!("'{p}' must start with '/' (or be a full http(s):// URL)"),
            ));
        }
    }
    let defaults = RequestConfig::default();
    let conn = ConnConfig::default();
    let pick = r
        .pick
        .clone()
        .unwrap_or_else(|| pick_name(defaults.pick).into());
    if !matches!(pick.as_str(), "sequence" | "random") {
        return Err(err(
            file,
            &key("pick"),
            format!("'{pick}' is not one of sequence, random"),
        ));
    }
    let method = r.method.clone().unwrap_or(defaults.method);
    crate::plan::parse_method(&method).map_err(|e| err(file, &key("method"), e))?;
    let headers = r.headers.clone().unwrap_or_default();
    for h in &headers {
        crate::plan::parse_header(h).map_err(|e| err(file, &key("headers"), e))?;
    }
    let keep_alive = r.keep_alive.unwrap_or(conn.keep_alive);
    if r.calls_per_connection == Some(0) {
        return Err(err(
            file,
            &key("calls_per_connection"),
            "must be at least 1",
        ));
    }
    if !keep_alive && r.calls_per_connection.is_some_and(|k| k > 1) {
        return Err(err(
            file,
            &key("calls_per_connection"),
            "contradicts keep_alive = false",
        ));
    }
    if r.threads.is_some_and(|t| t == 0 || t > 1024) {
        return Err(err(file, &key("threads"), "use 1 to 1024"));
    }
    let timeout = dur(file, &key("timeout"), &r.timeout, conn.timeout)?;
    let connect_timeout = dur(
        file,
        &key("connect_timeout"),
        &r.connect_timeout,
        conn.connect_timeout,
    )?;
    if timeout.is_zero() || connect_timeout.is_zero() {
        return Err(err(file, &key("timeout"), "timeouts must be above zero"));
    }
    let http = match &r.http {
        None => conn.http,
        Some(Text(t)) => HttpVersion::parse(t).map_err(|e| err(file, &key("http"), e))?,
    };
    let streams = r.streams.unwrap_or(conn.streams);
    if http == HttpVersion::V2 && !keep_alive {
        return Err(err(
            file,
            &key("http"),
            "\"2\" contradicts keep_alive = false (HTTP/2 multiplexes requests on kept connections; use calls_per_connection = 1)",
        ));
    }
    let io = match &r.io {
        None => conn.io,
        Some(Text(t)) => crate::engine::IoChoice::parse(t).map_err(|e| err(file, &key("io"), e))?,
    };
    let tls = tls_of(file, label, r)?;
    let scenario = scenario_of(file, label, r)?;
    let ok_status = match &r.ok_status {
        None => defaults.ok_status,
        Some(Text(t)) => {
            crate::metrics::OkStatus::parse(t).map_err(|e| err(file, &key("ok_status"), e))?
        }
    };
    // The command line's own checks (streams' range, TLS options that contradict each other),
    // on the same typed configuration; the message names the flag, the prefix the table.
    let alt_svc = r.alt_svc.unwrap_or(conn.alt_svc);
    let checked = ConnConfig {
        http,
        alt_svc,
        streams,
        keep_alive,
        tls: tls.clone(),
        ..ConnConfig::default()
    };
    checked
        .validate()
        .map_err(|e| err(file, &format!("{label} request"), e))?;
    Ok(Request {
        paths,
        pick,
        method,
        headers,
        body: r.body.clone(),
        keep_alive,
        calls_per_connection: r.calls_per_connection,
        timeout,
        connect_timeout,
        threads: r.threads,
        http,
        alt_svc,
        streams,
        tls,
        scenario,
        ok_status,
        io,
    })
}

/// `scenario`, relative to the file, read and checked now as `--scenario` would be: its
/// requests replace `path`, `method`, `headers` and `body`, so those are refused beside it.
fn scenario_of(file: &Path, label: &str, r: &RawRequest) -> crate::Result<Option<PathBuf>> {
    let Some(s) = &r.scenario else {
        return Ok(None);
    };
    let key = format!("{label} request.scenario");
    if r.path.is_some() || r.method.is_some() || r.headers.is_some() || r.body.is_some() {
        return Err(err(
            file,
            &key,
            "the scenario's requests replace path, method, headers and body: give one or the other",
        ));
    }
    let p = Path::new(s);
    let p = if p.is_relative() {
        file.parent().unwrap_or(Path::new("")).join(p)
    } else {
        p.to_path_buf()
    };
    // The server is not known here; a stand-in base checks everything but the address.
    crate::scenario::load(
        &p,
        Some("http://127.0.0.1"),
        crate::scenario::DEFAULT_MAX_BODY_CAPTURE,
    )
    .map_err(|e| err(file, &key, e))?;
    Ok(Some(p))
}

/// The TLS keys as the command line's [`TlsConfig`] (its `Default` is the only default).
fn tls_of(file: &Path, label: &str, r: &RawRequest) -> crate::Result<TlsConfig> {
    let key = |k: &str| format!("{label} request.{k}");
    let d = TlsConfig::default();
    // An on/off key, `default` when absent.
    let on_off = |k: &str, v: &Option<toml::Value>, default: bool| match v {
        None => Ok(default),
        Some(v) => knob_bool(v)
            .ok_or_else(|| err(file, &key(k), format!("{} is not on or off", knob_text(v)))),
    };
    let resumption = on_off("tls_resumption", &r.tls_resumption, d.resumption)?;
    let early_data = on_off("zero_rtt", &r.zero_rtt, d.early_data)?;
    let version = match &r.tls_version {
        None => d.version,
        Some(Text(t)) => Some(match t.as_str() {
            "1.2" => TlsVersion::V12,
            "1.3" => TlsVersion::V13,
            _ => {
                return Err(err(
                    file,
                    &key("tls_version"),
                    format!("'{t}': use \"1.2\" or \"1.3\""),
                ))
            }
        }),
    };
    // Relative to the file, so an experiment folder can carry its CA.
    let cacert = r.cacert.as_ref().map(|c| {
        let p = Path::new(c);
        if p.is_relative() {
            file.parent().unwrap_or(Path::new("")).join(p)
        } else {
            p.to_path_buf()
        }
    });
    Ok(TlsConfig {
        cacert,
        insecure: r.insecure.unwrap_or(d.insecure),
        version,
        resumption,
        early_data,
        ..d
    })
}
