//! What an experiment file may say, as read by serde (every field optional), and how a
//! configuration's tables override the file's (`Merge`).
use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;

/// A value written as a string or a number (`step = "10s"` or `step = 10`), or a list of
/// numbers (`users = [1, 2, 4]`, kept as `"1,2,4"`): parsed later by the units parsers, so
/// the file accepts exactly what the command line accepts.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Text(pub String);

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Text, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string, a number or a list of numbers")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Text, E> {
                Ok(Text(v.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Text, A::Error> {
                let mut parts = Vec::new();
                while let Some(Text(t)) = seq.next_element::<Text>()? {
                    parts.push(t);
                }
                Ok(Text(parts.join(",")))
            }
        }
        d.deserialize_any(V)
    }
}

/// One string or a list of strings (`path = "/a"` or `path = ["/a", "/b"]`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct List(pub Vec<String>);

impl<'de> Deserialize<'de> for List {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<List, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = List;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a list of strings")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<List, E> {
                Ok(List(vec![v.to_string()]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<List, A::Error> {
                let mut v = Vec::new();
                while let Some(s) = seq.next_element::<String>()? {
                    v.push(s);
                }
                Ok(List(v))
            }
        }
        d.deserialize_any(V)
    }
}

/// The file as written.
#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct RawFile {
    pub name: Option<String>,
    pub description: Option<String>,
    /// Runs of every configuration (the spread across them is reported).
    pub repetitions: Option<u32>,
    /// Warm-up round before every run, after the (re)start: load at the plan's first level,
    /// not stored (S2). "0s" turns it off.
    pub warmup: Option<Text>,
    /// The lab's directory (default: $OVERLOAD_LAB_DIR or /tmp/overload-lab).
    pub lab_prefix: Option<String>,
    #[serde(default)]
    pub request: RawRequest,
    #[serde(default)]
    pub load: RawLoad,
    #[serde(default)]
    pub observe: RawObserve,
    pub quick: Option<RawQuick>,
    #[serde(default)]
    pub config: Vec<RawConfig>,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct RawRequest {
    /// Path(s) appended to the server's base URL, or full http(s):// URLs.
    pub path: Option<List>,
    pub pick: Option<String>,
    pub method: Option<String>,
    pub headers: Option<Vec<String>>,
    pub body: Option<String>,
    pub keep_alive: Option<bool>,
    pub calls_per_connection: Option<u32>,
    pub timeout: Option<Text>,
    pub connect_timeout: Option<Text>,
    pub threads: Option<usize>,
    /// `--http`: "1.1", "2" or "auto".
    pub http: Option<Text>,
    /// `--streams`: HTTP/2 streams per connection.
    pub streams: Option<u32>,
    /// `--insecure`.
    pub insecure: Option<bool>,
    /// `--cacert`: a PEM file, relative to the experiment file's folder.
    pub cacert: Option<String>,
    /// `--tls-resumption`: on/off (or true/false).
    pub tls_resumption: Option<toml::Value>,
    /// `--tls-version`: "1.2" or "1.3".
    pub tls_version: Option<Text>,
    /// `--alt-svc`: with http = "auto" over https, follow the server's `Alt-Svc: h3=…`.
    pub alt_svc: Option<bool>,
    /// `--0rtt`: on/off (HTTP/3 with resumption).
    pub zero_rtt: Option<toml::Value>,
    /// `--scenario`: a scenario file, relative to the experiment file's folder.
    pub scenario: Option<String>,
    /// `--ok-status`: "200-399,404".
    pub ok_status: Option<Text>,
    /// `--io`: "auto", "epoll" or "uring".
    pub io: Option<Text>,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct RawLoad {
    /// sweep (stop rules apply), steps (every level, no stop rule) or capacity.
    pub kind: Option<String>,
    pub users: Option<Text>,
    pub rates: Option<Text>,
    /// A ramp (`run --stages`): the rate moves through these stages.
    pub stages: Option<String>,
    /// A ramp of users (`run --user-stages`).
    pub user_stages: Option<String>,
    pub think: Option<Text>,
    pub step: Option<Text>,
    pub warmup: Option<Text>,
    pub rest: Option<Text>,
    pub past_saturation: Option<usize>,
    pub max_errors: Option<Text>,
    pub max_p99: Option<Text>,
    pub slo: Option<String>,
    pub start: Option<f64>,
    pub max: Option<f64>,
    pub precision: Option<Text>,
    pub arrival: Option<String>,
    pub connections: Option<usize>,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct RawObserve {
    pub watch: Option<Vec<String>>,
    pub fpm_status: Option<bool>,
    pub sample_every: Option<Text>,
}

/// What `--quick` changes before the automatic scaling (plan::quick).
#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct RawQuick {
    /// Target length of the whole quick run (default 60s).
    pub budget: Option<Text>,
    pub repetitions: Option<u32>,
    pub warmup: Option<Text>,
    #[serde(default)]
    pub load: RawLoad,
    #[serde(default)]
    pub request: RawRequest,
}

/// A configuration's own `--quick` overrides.
#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct RawConfigQuick {
    pub warmup: Option<Text>,
    #[serde(default)]
    pub load: RawLoad,
    #[serde(default)]
    pub request: RawRequest,
}

#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    /// Run folder name; with matrix axes, may hold `{stack}` and `{knob}` placeholders.
    pub name: Option<String>,
    /// Configurations of one group are compared together (one section of the report).
    pub group: Option<String>,
    /// A lab stack, or a list of them (a matrix axis).
    pub stack: Option<List>,
    /// Lab knobs; a list value is a matrix axis.
    pub knobs: Option<BTreeMap<String, toml::Value>>,
    pub port: Option<u16>,
    pub no_db: Option<bool>,
    /// Any server: a shell command that starts it (it may stay in the foreground).
    pub setup: Option<String>,
    pub teardown: Option<String>,
    /// URL that answers once the server is ready.
    pub ready: Option<String>,
    /// Base URL the request paths are appended to (default: the ready URL's origin).
    pub url: Option<String>,
    pub ready_timeout: Option<Text>,
    pub warmup: Option<Text>,
    /// The setup server in a namespace of its own, the load in another, across an
    /// impaired path (`overload lab netem`; root only).
    pub network: Option<RawNetwork>,
    #[serde(default)]
    pub request: RawRequest,
    #[serde(default)]
    pub load: RawLoad,
    pub observe: Option<RawObserve>,
    pub quick: Option<RawConfigQuick>,
}

/// `network = { delay = "50ms", jitter = "5ms", loss = "1%", impair = "auto" }`.
#[derive(Deserialize, Debug, Clone, Default)]
#[serde(deny_unknown_fields)]
pub struct RawNetwork {
    /// Round-trip delay.
    pub delay: Option<Text>,
    pub jitter: Option<Text>,
    pub loss: Option<Text>,
    /// auto, netem, bridge or none.
    pub impair: Option<String>,
    pub queue: Option<usize>,
    pub seed: Option<u64>,
}

/// `self` with every field that `over` sets replaced.
pub trait Merge {
    fn merge(&self, over: &Self) -> Self;
}

macro_rules! merge_fields {
    ($t:ty, $($f:ident),*) => {
        impl Merge for $t {
            fn merge(&self, over: &Self) -> Self {
                Self { $($f: over.$f.clone().or_else(|| self.$f.clone()),)* }
            }
        }
    };
}

merge_fields!(
    RawRequest,
    path,
    pick,
    method,
    headers,
    body,
    keep_alive,
    calls_per_connection,
    timeout,
    connect_timeout,
    threads,
    http,
    streams,
    insecure,
    cacert,
    tls_resumption,
    tls_version,
    alt_svc,
    zero_rtt,
    scenario,
    ok_status,
    io
);
merge_fields!(RawObserve, watch, fpm_status, sample_every);

impl Merge for RawLoad {
    fn merge(&self, over: &Self) -> Self {
        let pick = |a: &Option<Text>, b: &Option<Text>| b.clone().or_else(|| a.clone());
        // Levels come as a pair: an override that names users or rates replaces both, so a
        // configuration can switch between open and closed loop.
        // A capacity search finds its own rates: inherited levels do not apply to it.
        // Stages are levels too: naming any of the four replaces them all.
        let to_capacity = over.kind.as_deref() == Some("capacity");
        let names_levels = over.users.is_some()
            || over.rates.is_some()
            || over.stages.is_some()
            || over.user_stages.is_some();
        let from = if names_levels || to_capacity {
            over
        } else {
            self
        };
        RawLoad {
            kind: over.kind.clone().or_else(|| self.kind.clone()),
            users: from.users.clone(),
            rates: from.rates.clone(),
            stages: from.stages.clone(),
            user_stages: from.user_stages.clone(),
            think: pick(&self.think, &over.think),
            step: pick(&self.step, &over.step),
            warmup: pick(&self.warmup, &over.warmup),
            rest: pick(&self.rest, &over.rest),
            past_saturation: over.past_saturation.or(self.past_saturation),
            max_errors: pick(&self.max_errors, &over.max_errors),
            max_p99: pick(&self.max_p99, &over.max_p99),
            slo: over.slo.clone().or_else(|| self.slo.clone()),
            start: over.start.or(self.start),
            max: over.max.or(self.max),
            precision: pick(&self.precision, &over.precision),
            arrival: over.arrival.clone().or_else(|| self.arrival.clone()),
            connections: over.connections.or(self.connections),
        }
    }
}
