//! Tables of cells, as aligned text for the terminal and as HTML for the reports: one
//! formatter shared by compare, the experiment report and the protocol tables, in a leaf
//! file so none of them imports another for it.
use super::svg::esc;
use std::fmt::Write;

/// Rows of cells aligned in columns (first column left, others left too: they hold units).
pub fn align(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let w: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut o = String::new();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{s}{}", " ".repeat(w[i] - s.chars().count())))
            .collect();
        let _ = writeln!(o, "{}", line.join("  ").trim_end());
    }
    o
}

/// An HTML table; the first row is the header, the first column is left-aligned.
pub fn html_table(o: &mut String, rows: &[Vec<String>]) {
    o.push_str("<div class=\"tablewrap fit\"><table>\n<thead><tr>");
    for (i, h) in rows[0].iter().enumerate() {
        let _ = write!(
            o,
            "<th{}>{}</th>",
            if i == 0 { " class=\"l\"" } else { "" },
            esc(h)
        );
    }
    o.push_str("</tr></thead>\n<tbody>\n");
    for r in &rows[1..] {
        o.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            let _ = write!(
                o,
                "<td{}>{}</td>",
                if i == 0 { " class=\"l\"" } else { "" },
                esc(c)
            );
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody></table></div>\n");
}
