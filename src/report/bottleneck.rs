//! The bottleneck verdict (`analysis::bottleneck`) as the terminal and the HTML report show
//! it: the one line first, then every candidate in rank order with its evidence, then what
//! was not observed. The JSON formats serialize the `Bottleneck` itself.
use std::fmt::Write;

use super::svg::esc;
use crate::analysis::bottleneck::{Bottleneck, Candidate, Diagnosis, Evidence};

/// "at its limit, 1 step before latency rose".
fn standing(c: &Candidate) -> String {
    let lead = match c.lead_steps {
        _ if c.evidence == Evidence::None => String::new(),
        Some(0) => ", as latency rose".to_string(),
        Some(1) => ", 1 step before latency rose".to_string(),
        Some(n) if n > 1 => format!(", {n} steps before latency rose"),
        _ => String::new(),
    };
    format!("{}{lead}", standing_short(c))
}

/// The terminal's lines: the verdict, the ranking, what was not observed.
pub fn text(b: &Bottleneck) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "  ▶ bottleneck: {}", b.verdict);
    for (i, c) in b.candidates.iter().enumerate() {
        let _ = writeln!(
            o,
            "      {}. {} — {}: {}",
            i + 1,
            c.limit.name(),
            standing(c),
            c.seen
        );
    }
    if !b.not_observed.is_empty() {
        let _ = writeln!(o, "      not observed: {}", b.not_observed.join(", "));
    }
    o
}

fn standing_short(c: &Candidate) -> &'static str {
    match c.evidence {
        Evidence::AtLimit => "at its limit",
        Evidence::Near => "near its limit",
        Evidence::None => "no evidence",
    }
}

/// `compare`: one line per run, its bottleneck at the knee.
pub fn compare_lines(runs: &[super::RunReport], names: &[String]) -> String {
    let mut o = String::from("bottleneck at the knee:\n");
    for (r, n) in runs.iter().zip(names) {
        let line = match &r.analysis.bottleneck {
            None => "no knee (no saturation)".to_string(),
            Some(b) => {
                let at = r.load_text(b.knee_load);
                match (b.outcome, b.leader()) {
                    (Diagnosis::Limit, Some(w)) => {
                        format!("{} at {at}: {}", w.limit.name(), w.seen)
                    }
                    (Diagnosis::Tie, _) => {
                        let tied: Vec<&str> = b
                            .candidates
                            .iter()
                            .take_while(|c| {
                                c.evidence == Evidence::AtLimit
                                    && c.from_step == b.candidates[0].from_step
                            })
                            .map(|c| c.limit.name())
                            .collect();
                        format!("a tie at {at}: {}", tied.join(" and "))
                    }
                    _ => format!("no observed limit reached at {at}"),
                }
            }
        };
        let _ = writeln!(o, "  {n}: {line}");
    }
    o
}

/// The report's first card: the verdict, then a table of the candidates.
pub fn html(b: &Bottleneck) -> String {
    let (class, title) = match (b.outcome, b.leader()) {
        (Diagnosis::Limit, Some(w)) => ("b-limit", format!("Bottleneck: {}", w.limit.name())),
        (Diagnosis::Tie, _) => ("b-tie", "Bottleneck: a tie".to_string()),
        _ => ("", "Bottleneck: no observed limit reached".to_string()),
    };
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<section class=\"card bottleneck {class}\"><div class=\"k\">{}</div>\n<p>{}</p>",
        esc(&title),
        esc(&b.verdict)
    );
    o.push_str(
        "<div class=\"tablewrap\"><table><thead><tr><th>#</th><th class=\"l\">limit</th>\
         <th class=\"l\">evidence</th><th class=\"l\">what was seen</th>\
         <th class=\"l\">the change to make</th></tr></thead><tbody>\n",
    );
    for (i, c) in b.candidates.iter().enumerate() {
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>\
             <td class=\"l wrap\">{}</td><td class=\"l wrap\">{}</td></tr>",
            i + 1,
            esc(c.limit.name()),
            esc(&standing(c)),
            esc(&c.seen),
            if c.evidence == Evidence::None {
                String::new()
            } else {
                esc(&c.change)
            }
        );
    }
    o.push_str("</tbody></table></div>\n");
    if !b.not_observed.is_empty() {
        let _ = writeln!(
            o,
            "<p class=\"d\">Not observed: {}.</p>",
            esc(&b.not_observed.join(", "))
        );
    }
    o.push_str("</section>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::bottleneck::{diagnose, Context};
    use crate::report::testdata::server_sweep;

    #[test]
    fn terminal_and_card_carry_the_verdict_and_each_candidate() {
        let steps = server_sweep();
        let a = crate::analysis::analyze("open", &steps, None);
        let sat = a.saturation.unwrap().step;
        let knee = steps.iter().position(|s| s.step == sat).unwrap();
        let b = diagnose("open", &steps, knee, Context::default());
        let t = text(&b);
        assert!(
            t.starts_with(&format!("  ▶ bottleneck: {}\n", b.verdict)),
            "{t}"
        );
        assert_eq!(
            t.lines().filter(|l| l.starts_with("      ")).count(),
            b.candidates.len() + usize::from(!b.not_observed.is_empty())
        );
        let h = html(&b);
        assert!(h.contains(&esc(&b.verdict)), "{h}");
        for c in &b.candidates {
            assert!(h.contains(&esc(&c.seen)), "{}", c.seen);
        }
        assert!(h.starts_with("<section class=\"card bottleneck"));
    }

    #[test]
    fn compare_says_one_line_per_run() {
        use crate::report::testdata::{info, open_sweep};
        let run = |steps| {
            crate::report::RunReport::from_data(crate::store::RunData {
                dir: "/tmp/x".into(),
                info: info("x", "open", None),
                steps,
                series: vec![],
                events: Vec::new(),
                skipped: vec![],
            })
        };
        let (with, without) = (run(server_sweep()), run(open_sweep()));
        let t = compare_lines(&[with, without], &["a".into(), "b".into()]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3, "{t}");
        assert!(lines[1].starts_with("  a: "), "{t}");
        assert!(
            lines[2].starts_with("  b: no observed limit reached at 400 req/s"),
            "{t}"
        );
    }
}
