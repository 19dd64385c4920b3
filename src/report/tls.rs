//! Protocols and TLS in the reports: per step (the HTML report of a run) and per run (`compare`,
//! terminal and HTML, and so the experiment's comparison), the requests sent by protocol, the
//! handshakes full and resumed, their time apart from the TCP connect and the first byte, and
//! why some failed. Only runs that spoke TLS or HTTP/2 have it: plain HTTP/1.1 adds nothing.
use super::model::RunReport;
use super::svg::esc;
use crate::metrics::{LatencyStats, Summary, TlsSummary};
use crate::units::{fmt_ms, fmt_num};
use std::collections::BTreeMap;
use std::fmt::Write;

/// Whether a step's protocol and TLS figures say more than "plain HTTP/1.1".
fn notable(s: &Summary) -> bool {
    s.tls.is_some() || s.protocols.keys().any(|p| p != "1.1")
}

fn has_any(r: &RunReport) -> bool {
    r.steps.iter().any(|s| notable(&s.summary))
}

/// `2: 12,000, 1.1: 3`: requests sent by protocol, the most used first.
fn protocols_text(p: &BTreeMap<String, u64>) -> String {
    let mut v: Vec<(&String, &u64)> = p.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    if v.is_empty() {
        return "–".to_string();
    }
    v.iter()
        .map(|(k, n)| format!("{k}: {}", fmt_num(**n as f64)))
        .collect::<Vec<_>>()
        .join(", ")
}

fn failures_text(f: &BTreeMap<String, u64>) -> String {
    if f.is_empty() {
        return "none".to_string();
    }
    f.iter()
        .map(|(k, v)| format!("{k}: {}", fmt_num(*v as f64)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A latency, or – when nothing was measured.
fn lat(v: f64, n: u64) -> String {
    if n == 0 {
        "–".to_string()
    } else {
        fmt_ms(v)
    }
}

/// The figures of one row: a step's, or a run's (`run_figures`).
struct Figures<'a> {
    protocols: BTreeMap<String, u64>,
    tls: Option<TlsSummary>,
    connect: &'a LatencyStats,
    first_byte: &'a LatencyStats,
}

impl<'a> Figures<'a> {
    fn of(s: &'a Summary) -> Figures<'a> {
        Figures {
            protocols: s.protocols.clone(),
            tls: s.tls.clone(),
            connect: &s.connect_time_ms,
            first_byte: &s.first_byte_ms,
        }
    }

    /// Protocols, handshakes full and resumed, handshake p50 and p99, connect p50, first byte
    /// p50, failed handshakes.
    fn cells(&self) -> Vec<String> {
        let mut c = vec![protocols_text(&self.protocols)];
        match &self.tls {
            Some(t) => {
                let hs = &t.handshake_time_ms;
                c.push(fmt_num(t.handshakes_full as f64));
                c.push(fmt_num(t.handshakes_resumed as f64));
                c.push(lat(hs.p50, hs.count));
                c.push(lat(hs.p99, hs.count));
            }
            None => c.extend(std::iter::repeat_n("–".to_string(), 4)),
        }
        c.push(lat(self.connect.p50, self.connect.count));
        c.push(lat(self.first_byte.p50, self.first_byte.count));
        c.push(
            self.tls
                .as_ref()
                .map_or("–".to_string(), |t| failures_text(&t.failures)),
        );
        c
    }
}

const HEAD: [&str; 8] = [
    "protocols",
    "full handshakes",
    "resumed",
    "handshake p50",
    "handshake p99",
    "connect p50",
    "first byte p50",
    "failed handshakes",
];

/// The HTML report's section, one row per step; nothing for a plain HTTP/1.1 run.
pub fn section(r: &RunReport) -> String {
    let mut o = String::new();
    // How the version was chosen: an https:// run's ALPN pick is not http://'s HTTP/1.1.
    let choice = r.steps.iter().find_map(|s| s.summary.protocol.as_ref());
    if !has_any(r) && choice.is_none_or(|c| c.chosen_by == "cleartext") {
        return o;
    }
    o.push_str("<h2>Protocols and TLS</h2>\n");
    if let Some(c) = choice {
        let _ = writeln!(o, "<p>{}</p>", esc(&c.describe()));
    }
    o.push_str("<div class=\"tablewrap\"><table>\n<thead><tr><th>#</th>");
    for (i, h) in HEAD.iter().enumerate() {
        let class = if i == 0 || i == HEAD.len() - 1 {
            " class=\"l\""
        } else {
            ""
        };
        let _ = write!(o, "<th{class}>{h}</th>");
    }
    o.push_str("</tr></thead>\n<tbody>\n");
    for s in r.steps.iter().filter(|s| notable(&s.summary)) {
        let c = Figures::of(&s.summary).cells();
        let _ = write!(o, "<tr><td>{}</td>", s.step + 1);
        for (i, v) in c.iter().enumerate() {
            let class = if i == 0 || i == c.len() - 1 {
                " class=\"l\""
            } else {
                ""
            };
            let _ = write!(o, "<td{class}>{}</td>", esc(v));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody></table></div>\n");
    o
}

/// One run's figures: counts added over its steps; the latencies of its step with the most
/// handshakes (then requests), since percentiles of different steps do not add. None for a
/// run without steps.
fn run_figures(r: &RunReport) -> Option<Figures<'_>> {
    let busiest = r.steps.iter().map(|s| &s.summary).max_by_key(|s| {
        let handshakes = s.tls.as_ref().map_or(0, |t| t.handshake_time_ms.count);
        (handshakes, s.requests)
    })?;
    let mut f = Figures::of(busiest);
    f.protocols.clear();
    let mut tls: Option<TlsSummary> = None;
    for s in &r.steps {
        for (k, v) in &s.summary.protocols {
            *f.protocols.entry(k.clone()).or_default() += v;
        }
        if let Some(t) = &s.summary.tls {
            let sum = tls.get_or_insert_with(TlsSummary::default);
            sum.handshakes_full += t.handshakes_full;
            sum.handshakes_resumed += t.handshakes_resumed;
            for (k, v) in &t.failures {
                *sum.failures.entry(k.clone()).or_default() += v;
            }
        }
    }
    if let Some(sum) = tls.as_mut() {
        sum.handshake_time_ms = busiest
            .tls
            .as_ref()
            .map(|t| t.handshake_time_ms)
            .unwrap_or_default();
    }
    f.tls = tls;
    Some(f)
}

/// `compare`'s rows (header first), one per run; None when no run spoke TLS or HTTP/2.
pub fn compare_rows(runs: &[RunReport], names: &[String]) -> Option<Vec<Vec<String>>> {
    if !runs.iter().any(has_any) {
        return None;
    }
    let mut head = vec!["run".to_string()];
    head.extend(HEAD.iter().map(|h| h.to_string()));
    let mut rows = vec![head];
    for (r, n) in runs.iter().zip(names) {
        let mut row = vec![n.clone()];
        match run_figures(r) {
            Some(f) => row.extend(f.cells()),
            None => row.extend(std::iter::repeat_n("–".to_string(), HEAD.len())),
        }
        rows.push(row);
    }
    Some(rows)
}

/// What `compare` says over its rows: how the latencies were chosen.
pub const COMPARE_NOTE: &str =
    "protocols and TLS (counts over all steps; latencies of each run's step with the most handshakes):";

/// The per-run table as HTML under a heading of `tag` (`h2` in `compare`, `h3` in an
/// experiment's group); nothing when no run spoke TLS or HTTP/2.
pub fn compare_html(runs: &[RunReport], names: &[String], tag: &str) -> String {
    let mut o = String::new();
    if let Some(rows) = compare_rows(runs, names) {
        let _ = writeln!(
            o,
            "<{tag}>Protocols and TLS</{tag}>\n<p class=\"muted\">{}</p>",
            esc(COMPARE_NOTE
                .trim_start_matches("protocols and TLS (")
                .trim_end_matches("):"))
        );
        super::table::html_table(&mut o, &rows);
    }
    o
}

#[cfg(test)]
mod tests {
    use super::super::testdata;
    use super::*;
    use crate::store::RunData;

    fn report(tls: bool) -> RunReport {
        let mut steps = testdata::open_sweep();
        if tls {
            steps[1].summary.tls = Some(TlsSummary {
                handshakes_started: 0,
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
            steps[1].summary.protocols = [("1.1".to_string(), 5000)].into_iter().collect();
            steps[2].summary.tls = Some(TlsSummary {
                handshakes_started: 0,
                handshakes_full: 2,
                handshakes_resumed: 10,
                handshake_time_ms: LatencyStats {
                    p50: 9.0,
                    count: 12,
                    ..LatencyStats::default()
                },
                failures: BTreeMap::new(),
            });
        }
        RunReport::from_data(RunData {
            dir: "/tmp/x".into(),
            info: testdata::info("t", "open", None),
            steps,
            series: vec![],
            events: Vec::new(),
            skipped: vec![],
        })
    }

    fn h2_report() -> RunReport {
        let mut steps = testdata::open_sweep();
        for (i, s) in steps.iter_mut().enumerate() {
            s.summary.protocols = [("2".to_string(), 1000 * (i as u64 + 1))]
                .into_iter()
                .collect();
        }
        RunReport::from_data(RunData {
            dir: "/tmp/h2".into(),
            info: testdata::info("h2", "open", None),
            steps,
            series: vec![],
            events: Vec::new(),
            skipped: vec![],
        })
    }

    #[test]
    fn only_tls_or_h2_runs_have_the_section_with_counts_and_reasons() {
        assert_eq!(section(&report(false)), "");
        let html = section(&report(true));
        assert!(html.contains("<h2>Protocols and TLS</h2>"));
        assert!(
            html.contains("<td class=\"l\">1.1: 5000</td><td>3</td><td>1200</td><td>400µs</td><td>2.50ms</td>"),
            "{html}"
        );
        assert!(html.contains("name-mismatch: 7"), "{html}");
        assert_eq!(
            html.matches("<tr><td>").count(),
            2,
            "two TLS steps, two rows"
        );
        // h2c: no TLS, but the protocol is worth a row per step.
        let h2 = section(&h2_report());
        assert!(
            h2.contains("<td class=\"l\">2: 1000</td><td>–</td>"),
            "{h2}"
        );
    }

    /// The report says which protocol the run spoke and how it was chosen: an https:// run
    /// that ALPN took to HTTP/2 has the sentence (and the section, even without TLS rows);
    /// plain http:// at HTTP/1.1 has neither.
    #[test]
    fn the_section_names_the_protocol_and_how_it_was_chosen() {
        let mut r = report(true);
        for s in &mut r.steps {
            s.summary.protocol = Some(crate::metrics::ProtocolChoice::new("2", "alpn"));
        }
        let html = section(&r);
        assert!(
            html.contains("<p>HTTP/2, negotiated by ALPN; --http 1.1 to compare with http://</p>"),
            "{html}"
        );
        let mut plain = report(false);
        for s in &mut plain.steps {
            s.summary.protocol = Some(crate::metrics::ProtocolChoice::default());
        }
        assert_eq!(section(&plain), "");
        let mut asked = report(false);
        asked.steps[0].summary.protocol =
            Some(crate::metrics::ProtocolChoice::new("1.1", "http-flag"));
        assert!(
            section(&asked).contains("<p>HTTP/1.1, asked with --http 1.1</p>"),
            "{}",
            section(&asked)
        );
    }

    #[test]
    fn compare_rows_add_counts_and_take_the_busiest_steps_latencies() {
        let names = vec!["plain".to_string(), "tls".to_string(), "h2".to_string()];
        assert!(compare_rows(&[report(false)], &names[..1]).is_none());
        let rows = compare_rows(&[report(false), report(true), h2_report()], &names).unwrap();
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[0][1], "protocols");
        let tls = &rows[2];
        // 3 + 2 full, 1200 + 10 resumed; p50 of the step with 1203 handshakes.
        assert_eq!(&tls[2..6], ["5", "1210", "400µs", "2.50ms"], "{tls:?}");
        assert_eq!(tls[8], "name-mismatch: 7");
        let total: u64 = (1..=h2_report().steps.len() as u64).map(|i| 1000 * i).sum();
        assert_eq!(rows[3][1], format!("2: {}", fmt_num(total as f64)));
        assert_eq!(rows[3][2], "–");
        let html = compare_html(&[report(false), report(true)], &names[..2], "h3");
        assert!(html.starts_with("<h3>Protocols and TLS</h3>"), "{html}");
        assert!(html.contains("name-mismatch: 7"), "{html}");
        assert_eq!(compare_html(&[report(false)], &names[..1], "h3"), "");
    }
}
