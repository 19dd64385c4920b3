//! The HTML report's TLS section: per step, the handshakes (full and resumed), their time
//! apart from the TCP connect and the first byte, and why some failed. Only runs that spoke
//! TLS have it.
use super::model::RunReport;
use super::svg::esc;
use crate::units::{fmt_ms, fmt_num};
use std::fmt::Write;

/// The section, or nothing when no step spoke TLS.
pub fn section(r: &RunReport) -> String {
    let mut o = String::new();
    if !r.steps.iter().any(|s| s.summary.tls.is_some()) {
        return o;
    }
    o.push_str(
        "<h2>TLS</h2>\n<div class=\"tablewrap\"><table>\n<thead><tr><th>#</th>\
         <th>full handshakes</th><th>resumed</th><th>handshake p50</th><th>handshake p99</th>\
         <th>connect p50</th><th>first byte p50</th><th class=\"l\">failed handshakes</th>\
         </tr></thead>\n<tbody>\n",
    );
    for s in &r.steps {
        let m = &s.summary;
        let Some(t) = &m.tls else { continue };
        let lat = |v: f64, n: u64| if n == 0 { "–".to_string() } else { fmt_ms(v) };
        let failures: Vec<String> = t
            .failures
            .iter()
            .map(|(k, v)| format!("{}: {}", esc(k), fmt_num(*v as f64)))
            .collect();
        let hs = &t.handshake_time_ms;
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
             <td class=\"l\">{}</td></tr>",
            s.step + 1,
            fmt_num(t.handshakes_full as f64),
            fmt_num(t.handshakes_resumed as f64),
            lat(hs.p50, hs.count),
            lat(hs.p99, hs.count),
            lat(m.connect_time_ms.p50, m.connect_time_ms.count),
            lat(m.first_byte_ms.p50, m.first_byte_ms.count),
            if failures.is_empty() {
                "none".to_string()
            } else {
                failures.join(", ")
            },
        );
    }
    o.push_str("</tbody></table></div>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::super::testdata;
    use super::*;
    use crate::metrics::{LatencyStats, TlsSummary};
    use crate::store::RunData;

    fn report(tls: bool) -> RunReport {
        let mut steps = testdata::open_sweep();
        if tls {
            steps[1].summary.tls = Some(TlsSummary {
                handshakes_full: 3,
                handshakes_resumed: 1200,
                handshake_time_ms: LatencyStats {
                    p50: 0.4,
                    p99: 2.5,
                    count: 1203,
                    ..LatencyStats::default()
                },
                failures: [("name-mismatch".to_string(), 7)].into_iter().collect(),
            });
        }
        RunReport::from_data(RunData {
            dir: "/tmp/x".into(),
            info: testdata::info("t", "open", None),
            steps,
            series: vec![],
            skipped: vec![],
        })
    }

    #[test]
    fn only_tls_runs_have_the_section_with_counts_and_reasons() {
        assert_eq!(section(&report(false)), "");
        let html = section(&report(true));
        assert!(html.contains("<h2>TLS</h2>"));
        assert!(
            html.contains("<td>3</td><td>1200</td><td>400µs</td><td>2.50ms</td>"),
            "{html}"
        );
        assert!(html.contains("name-mismatch: 7"), "{html}");
        assert_eq!(html.matches("<tr><td>").count(), 1, "one TLS step, one row");
    }
}
