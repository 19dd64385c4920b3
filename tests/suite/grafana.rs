//! deploy/grafana/overload.json, the dashboard over what `--prometheus-remote-write` pushes:
//! it parses, and every metric and label it queries is one the pusher sends
//! (`overload::push::METRICS`, the run's labels and the points' own), so the two cannot drift.
use overload::push::METRICS;
use std::collections::BTreeSet;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![every_queried_metric_and_label_is_pushed]
}

fn dashboard() -> serde_json::Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/grafana/overload.json"
    ))
    .expect("deploy/grafana/overload.json");
    serde_json::from_str(&text).expect("the dashboard is JSON")
}

/// Every `expr` of the dashboard (panels' targets, template queries).
fn exprs(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("expr" | "definition", serde_json::Value::String(s)) => out.push(s.clone()),
                    _ => exprs(x, out),
                }
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| exprs(x, out)),
        _ => {}
    }
}

fn every_queried_metric_and_label_is_pushed() {
    let d = dashboard();
    let mut all = Vec::new();
    exprs(&d, &mut all);
    assert!(all.len() >= 10, "{all:?}");
    let pushed: BTreeSet<&str> = METRICS.iter().map(|m| m.name).collect();
    // The run's labels, and the points' own (errors by kind, percentiles, request names).
    let labels = ["run", "segment", "step", "kind", "quantile", "name"];
    let metric = regex::Regex::new(r"overload_[a-z0-9_]+").unwrap();
    let by = regex::Regex::new(r"by \(([^)]*)\)").unwrap();
    let selector = regex::Regex::new(r"\{([^}]*)\}").unwrap();
    let mut used = BTreeSet::new();
    for e in &all {
        for m in metric.find_iter(e) {
            assert!(
                pushed.contains(m.as_str()),
                "{} is not pushed: {e}",
                m.as_str()
            );
            used.insert(m.as_str().to_string());
        }
        for c in by.captures_iter(e) {
            for l in c[1].split(',').map(str::trim) {
                assert!(labels.contains(&l), "label {l} is not pushed: {e}");
            }
        }
        for c in selector.captures_iter(e) {
            for m in c[1].split(',').filter(|m| !m.trim().is_empty()) {
                let l = m.split(['=', '!', '~']).next().unwrap().trim();
                assert!(labels.contains(&l), "label {l} is not pushed: {e}");
            }
        }
    }
    // The figures the issue names all have a panel.
    for m in [
        "overload_offered_rate",
        "overload_throughput",
        "overload_goodput",
        "overload_response_time_seconds",
        "overload_errors_total",
        "overload_send_lag_seconds",
        "overload_connections",
        "overload_generator_cpu_cores",
    ] {
        assert!(used.contains(m), "no panel queries {m}");
    }
    // Every panel says where it is and what it reads.
    for p in d["panels"].as_array().unwrap() {
        assert!(p["gridPos"]["w"].as_u64().unwrap() > 0, "{p}");
        assert!(!p["targets"].as_array().unwrap().is_empty(), "{p}");
        assert!(p["datasource"]["type"] == "prometheus", "{p}");
    }
}
