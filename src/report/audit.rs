//! The audit's output: the terminal list by severity (coloured through `style`) and the HTML
//! report's section when the results folder holds audit.json (`sweep --audit`).
use super::model::RunReport;
use super::style;
use super::svg::esc;
use crate::audit::{Audit, Check, Level};
use std::fmt::Write;

fn painted(level: Level) -> String {
    let tag = format!("{:<7}", level.name());
    match level {
        Level::High => style::red(&style::bold(&tag)),
        Level::Medium => style::red(&tag),
        Level::Low => style::yellow(&tag),
        Level::Ok => style::green(&tag),
        Level::Skipped => tag,
    }
}

/// The terminal list: findings by severity, each with its evidence and change; then what
/// passed; then what could not be checked and why.
pub fn terminal(a: &Audit) -> String {
    let mut o = String::new();
    let findings = a.findings().count();
    let _ = writeln!(
        o,
        "{} {}{}: {} finding{}, {} passed, {} not checked ({:.1} s)",
        style::bold("overload audit"),
        a.url,
        a.stack
            .as_ref()
            .map_or(String::new(), |s| format!(" (lab {s})")),
        findings,
        if findings == 1 { "" } else { "s" },
        a.checks.iter().filter(|c| c.level == Level::Ok).count(),
        a.checks
            .iter()
            .filter(|c| c.level == Level::Skipped)
            .count(),
        a.took_s
    );
    for c in &a.checks {
        line(&mut o, c);
    }
    o
}

fn line(o: &mut String, c: &Check) {
    // Evidence quotes what servers and hosts said (a TLS error names the certificate's own
    // names): escaped, so that it cannot send control sequences to the terminal.
    let evidence = crate::units::escape_controls(&c.evidence);
    match c.level {
        Level::Skipped => {
            let _ = writeln!(o, "  {} {:<26} {evidence}", painted(c.level), c.rule);
        }
        _ => {
            let _ = writeln!(o, "  {} {:<26} {}", painted(c.level), c.rule, c.title);
            let _ = writeln!(o, "          seen:   {evidence}");
            if let Some(ch) = &c.change {
                let _ = writeln!(o, "          change: {ch}  [{}]", c.source);
            }
        }
    }
}

/// The HTML section: a table of every check, findings first. Empty without an audit.
pub fn section(r: &RunReport) -> String {
    let Some(a) = crate::store::read_audit(&r.data.dir) else {
        return String::new();
    };
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<h2>Audit</h2>\n<p class=\"sub\">{} before the load: {} finding(s); {} checks in \
         {:.1} s (docs/audit.md explains each rule).</p>",
        esc(&a.url),
        a.findings().count(),
        a.checks.len(),
        a.took_s
    );
    o.push_str(
        "<div class=\"tablewrap\"><table>\n<thead><tr><th class=\"l\">level</th>\
         <th class=\"l\">rule</th><th class=\"l\">found</th><th class=\"l\">seen</th>\
         <th class=\"l\">change</th><th class=\"l\">from</th></tr></thead>\n<tbody>\n",
    );
    for c in &a.checks {
        let class = match c.level {
            Level::High | Level::Medium => "bad",
            Level::Low => "warn",
            Level::Ok => "good",
            Level::Skipped => "muted",
        };
        let _ = writeln!(
            o,
            "<tr><td class=\"l {class}\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>\
             <td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            c.level.name(),
            esc(&c.rule),
            esc(&c.title),
            esc(&c.evidence),
            esc(c.change.as_deref().unwrap_or("")),
            esc(&c.source)
        );
    }
    o.push_str("</tbody></table></div>\n");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn audit() -> Audit {
        let mut a = Audit {
            url: "http://127.0.0.1:8080/".into(),
            stack: None,
            started_unix_ms: 0,
            took_s: 1.25,
            checks: vec![
                Check::skipped("http.http2", "the URL is http://", "x"),
                Check::ok("host.somaxconn", "fine", "net.core.somaxconn = 4,096", "S2"),
                Check::finding(
                    "http.caching",
                    Level::Medium,
                    "no caching headers",
                    "neither Cache-Control nor Expires",
                    "send Cache-Control",
                    "S2",
                ),
                Check::finding(
                    "php.opcache",
                    Level::High,
                    "OPcache is off",
                    "opcache.enable off",
                    "turn it on",
                    "S2",
                ),
            ],
        };
        a.sort();
        a
    }

    #[test]
    fn the_terminal_lists_findings_by_severity_with_evidence_and_change() {
        let t = terminal(&audit());
        assert!(
            t.starts_with("overload audit http://127.0.0.1:8080/: 2 findings, 1 passed, 1 not checked (1.2 s)"),
            "{t}"
        );
        let pos = |s: &str| t.find(s).unwrap_or_else(|| panic!("{s} not in {t}"));
        assert!(pos("php.opcache") < pos("http.caching"));
        assert!(pos("http.caching") < pos("host.somaxconn"));
        assert!(pos("host.somaxconn") < pos("http.http2"));
        assert!(t.contains("seen:   opcache.enable off"), "{t}");
        assert!(t.contains("change: turn it on  [S2]"), "{t}");
        assert!(t.contains("skipped http.http2"), "{t}");
        assert!(
            !t.contains('\x1b'),
            "no colour unless the command line turns it on"
        );
    }

    /// Evidence quotes what servers said (a TLS error names the certificate's own names):
    /// control characters are shown escaped, never sent to the terminal.
    #[test]
    fn evidence_from_a_server_cannot_drive_the_terminal() {
        let mut a = audit();
        a.checks[0].evidence =
            "TLS handshake: only valid for DnsName(\"a\x1b[31mred\x07.test\")".into();
        a.checks[1].evidence = "net.core.somaxconn = \x1b]0;title\x07".into();
        let t = terminal(&a);
        assert!(!t.contains('\x1b') && !t.contains('\x07'), "{t:?}");
        assert!(t.contains("a\\x1b[31mred\\x07.test"), "{t}");
    }
}
