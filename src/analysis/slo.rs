//! Service-level objectives: `p99<500ms,errors<1%,goodput>95%`.
//!
//! Latency metrics (`mean p50 p90 p99 p999 max`) are the response time. `errors` is the share
//! of requests that got no 2xx/3xx answer (transport errors and 4xx/5xx alike: a user does not
//! care which). `goodput` is the share of the offered requests answered 2xx/3xx.
use crate::metrics::Summary;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Mean,
    P50,
    P90,
    P95,
    P99,
    P999,
    Max,
    Errors,
    Goodput,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Cond {
    /// `login:p95<300ms`: the condition holds for the requests of this name only (a prefix
    /// of the text; see `metrics::names`). None: the whole run.
    pub name: Option<String>,
    pub metric: Metric,
    pub op: Op,
    /// Milliseconds for latencies, a fraction (0..1) for errors and goodput.
    pub value: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Slo {
    pub conds: Vec<Cond>,
    pub text: String,
}

impl Metric {
    fn name(self) -> &'static str {
        match self {
            Metric::Mean => "mean",
            Metric::P50 => "p50",
            Metric::P90 => "p90",
            Metric::P95 => "p95",
            Metric::P99 => "p99",
            Metric::P999 => "p999",
            Metric::Max => "max",
            Metric::Errors => "errors",
            Metric::Goodput => "goodput",
        }
    }
    fn is_latency(self) -> bool {
        !matches!(self, Metric::Errors | Metric::Goodput)
    }
}

impl fmt::Display for Cond {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let op = match self.op {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        };
        if let Some(n) = &self.name {
            write!(f, "{n}:")?;
        }
        if self.metric.is_latency() {
            write!(
                f,
                "{}{op}{}",
                self.metric.name(),
                crate::units::fmt_ms(self.value)
            )
        } else {
            write!(f, "{}{op}{}%", self.metric.name(), self.value * 100.0)
        }
    }
}

/// Parses an SLO expression; the error names the offending part.
pub fn parse(s: &str) -> Result<Slo, String> {
    let mut conds = Vec::new();
    for part in s.split(',').map(str::trim) {
        if part.is_empty() {
            return Err(format!("--slo '{s}': empty condition"));
        }
        let pos = part
            .find(['<', '>'])
            .ok_or_else(|| format!("--slo: '{part}' has no < or > (e.g. p99<500ms)"))?;
        let (name, rest) = part.split_at(pos);
        // `NAME:metric`: the last colon before the operator ends the request name.
        let (req_name, name) = match name.rsplit_once(':') {
            Some((n, m)) if !n.trim().is_empty() => (Some(n.trim().to_string()), m),
            Some(_) => return Err(format!("--slo: '{part}' has an empty name before ':'")),
            None => (None, name),
        };
        let (op, value) = if let Some(v) = rest.strip_prefix("<=") {
            (Op::Le, v)
        } else if let Some(v) = rest.strip_prefix(">=") {
            (Op::Ge, v)
        } else if let Some(v) = rest.strip_prefix('<') {
            (Op::Lt, v)
        } else {
            (Op::Gt, &rest[1..])
        };
        let metric = match name.trim() {
            "mean" => Metric::Mean,
            "p50" | "median" => Metric::P50,
            "p90" => Metric::P90,
            "p95" => Metric::P95,
            "p99" => Metric::P99,
            "p999" | "p99.9" => Metric::P999,
            "max" => Metric::Max,
            "errors" | "error" => Metric::Errors,
            "goodput" => Metric::Goodput,
            other => {
                return Err(format!(
                    "--slo: unknown metric '{other}' in '{part}' (use mean, p50, p90, p95, p99, p999, max, errors, goodput)"
                ))
            }
        };
        let value = value.trim();
        let value = if metric.is_latency() {
            let d =
                crate::units::parse_duration(value).map_err(|e| format!("--slo '{part}': {e}"))?;
            d.as_secs_f64() * 1e3
        } else if let Some(p) = value.strip_suffix('%') {
            let v: f64 = p
                .trim()
                .parse()
                .map_err(|_| format!("--slo '{part}': '{value}' is not a percentage"))?;
            v / 100.0
        } else {
            value
                .parse::<f64>()
                .map_err(|_| format!("--slo '{part}': '{value}' is not a number or percentage"))?
        };
        if !value.is_finite() || value < 0.0 || (!metric.is_latency() && value > 1.0) {
            return Err(format!("--slo '{part}': value out of range"));
        }
        conds.push(Cond {
            name: req_name,
            metric,
            op,
            value,
        });
    }
    Ok(Slo {
        conds,
        text: s.to_string(),
    })
}

impl Slo {
    /// The measured value of a metric in a step.
    pub fn measure(metric: Metric, s: &Summary) -> f64 {
        let r = &s.response_time_ms;
        let offered = (s.requests + s.unsent) as f64;
        match metric {
            Metric::Mean => r.mean,
            Metric::P50 => r.p50,
            Metric::P90 => r.p90,
            Metric::P95 => r.p95,
            Metric::P99 => r.p99,
            Metric::P999 => r.p999,
            Metric::Max => r.max,
            Metric::Errors => {
                if offered == 0.0 {
                    0.0
                } else {
                    ((offered - s.ok_count() as f64) / offered).clamp(0.0, 1.0)
                }
            }
            Metric::Goodput => {
                if offered == 0.0 {
                    0.0
                } else {
                    (s.ok_count() as f64 / offered).clamp(0.0, 1.0)
                }
            }
        }
    }

    /// The names the conditions name must be the run's: an unknown one is a mistake to say
    /// before the load, not a condition that fails after it.
    pub fn check_names(&self, names: &[String]) -> Result<(), String> {
        for c in &self.conds {
            if let Some(n) = &c.name {
                if !names.contains(n) {
                    let known = names
                        .iter()
                        .take(10)
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ");
                    return Err(format!(
                        "--slo '{c}': no request is named '{n}' (names: {known})"
                    ));
                }
            }
        }
        Ok(())
    }

    /// A metric over the requests of one name: latencies from its histogram, errors and
    /// goodput as shares of its completed requests. A name that completed nothing measures
    /// as no answer (latencies 0, which [`Slo::check`] fails).
    pub fn measure_name(metric: Metric, s: &Summary, name: &str) -> (f64, u64) {
        let Some(n) = s.names.iter().find(|n| n.name == name) else {
            return (0.0, 0);
        };
        let r = &n.response_time_ms;
        let share = |k: u64| {
            if n.requests == 0 {
                0.0
            } else {
                k as f64 / n.requests as f64
            }
        };
        let v = match metric {
            Metric::Mean => r.mean,
            Metric::P50 => r.p50,
            Metric::P90 => r.p90,
            Metric::P95 => r.p95,
            Metric::P99 => r.p99,
            Metric::P999 => r.p999,
            Metric::Max => r.max,
            Metric::Errors => share(n.requests - n.ok),
            Metric::Goodput => share(n.ok),
        };
        (v, n.responses)
    }

    /// Each condition with whether it held and the measured value as shown (`3.20ms`,
    /// `0.50%`): the ✓/✗ lines of the terminal summary.
    pub fn check(&self, s: &Summary) -> Vec<(Cond, bool, String)> {
        self.conds
            .iter()
            .map(|c| {
                let (v, responses) = match &c.name {
                    Some(n) => Self::measure_name(c.metric, s, n),
                    None => (Self::measure(c.metric, s), s.responses),
                };
                let ok = match c.op {
                    Op::Lt => v < c.value,
                    Op::Le => v <= c.value,
                    Op::Gt => v > c.value,
                    Op::Ge => v >= c.value,
                };
                // A step with no answer at all cannot meet a latency objective.
                let ok = ok && !(c.metric.is_latency() && responses == 0);
                let measured = if c.metric.is_latency() {
                    crate::units::fmt_ms(v)
                } else {
                    format!("{:.2}%", v * 100.0)
                };
                (c.clone(), ok, measured)
            })
            .collect()
    }

    /// The conditions that failed, with the measured values; empty when the SLO holds.
    pub fn failures(&self, s: &Summary) -> Vec<String> {
        self.check(s)
            .into_iter()
            .filter(|(_, ok, _)| !ok)
            .map(|(c, _, measured)| format!("{c} failed ({} = {measured})", c.metric.name()))
            .collect()
    }

    /// The metric's name as the SLO text spells it (`p99`, `errors`).
    pub fn metric_name(m: Metric) -> &'static str {
        m.name()
    }

    pub fn holds(&self, s: &Summary) -> bool {
        self.failures(s).is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::tests::summary;

    #[test]
    fn parses() {
        let s = parse("p99<500ms, errors<1%,goodput>=95%,mean<=0.2s").unwrap();
        assert_eq!(s.conds.len(), 4);
        assert_eq!(
            s.conds[0],
            Cond {
                name: None,
                metric: Metric::P99,
                op: Op::Lt,
                value: 500.0
            }
        );
        assert_eq!(
            s.conds[1],
            Cond {
                name: None,
                metric: Metric::Errors,
                op: Op::Lt,
                value: 0.01
            }
        );
        assert_eq!(s.conds[2].op, Op::Ge);
        assert!((s.conds[2].value - 0.95).abs() < 1e-12);
        assert_eq!(s.conds[3].value, 200.0);
    }

    #[test]
    fn rejects_bad_expressions() {
        for bad in [
            "",
            "p99",
            "p98<1s",
            "p99<abc",
            "errors<150%",
            "errors<x",
            "p99<500ms,",
            "goodput>-1",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(parse("p98<1s").unwrap_err().contains("p98"));
    }

    #[test]
    fn evaluates() {
        let slo = parse("p99<500ms,errors<1%").unwrap();
        let good = summary(100.0, 100.0, 20.0, 0);
        assert!(slo.holds(&good));
        let slow = summary(100.0, 100.0, 800.0, 0);
        let f = slo.failures(&slow);
        assert_eq!(f.len(), 1);
        assert!(f[0].contains("p99"), "{f:?}");
        let failing = summary(100.0, 90.0, 20.0, 50);
        assert!(!slo.holds(&failing));
        assert!(parse("goodput>95%").unwrap().failures(&failing)[0].contains("goodput"));
    }

    /// `NAME:metric<value` judges one name's requests: the slow name fails, the fast one holds,
    /// an unknown name is refused before the run.
    #[test]
    fn conditions_per_name() {
        use crate::metrics::{LatencyStats, NameSummary};
        let mut s = crate::analysis::tests::summary(100.0, 100.0, 5.0, 0);
        let name = |n: &str, p95: f64, ok: u64| NameSummary {
            name: n.into(),
            requests: 100,
            responses: 100,
            ok,
            response_time_ms: LatencyStats {
                p95,
                count: 100,
                ..Default::default()
            },
            ..Default::default()
        };
        s.names = vec![name("/login", 400.0, 90), name("/", 2.0, 100)];
        let slo = parse("/login:p95<300ms, /:p95<300ms, /login:errors<5%").unwrap();
        assert_eq!(slo.conds[0].name.as_deref(), Some("/login"));
        let held: Vec<bool> = slo.check(&s).iter().map(|c| c.1).collect();
        assert_eq!(held, [false, true, false]);
        assert!(
            slo.failures(&s)[0].starts_with("/login:p95<300"),
            "{:?}",
            slo.failures(&s)
        );
        let names = ["/login".to_string(), "/".to_string()];
        assert!(slo.check_names(&names).is_ok());
        let e = parse("logon:p95<1s")
            .unwrap()
            .check_names(&names)
            .unwrap_err();
        assert!(e.contains("no request is named 'logon'"), "{e}");
        assert!(parse(":p95<1s").is_err());
        // A name that completed nothing cannot meet a latency objective.
        s.names.truncate(1);
        assert!(!parse("/:p95<1s").unwrap().check(&s)[0].1);
    }
}
