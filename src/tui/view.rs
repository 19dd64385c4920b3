//! Draws the [`Model`] with ratatui: header, live rates, the sweep so far, the server's side
//! and the keys. Drawn on the view's own thread; `tests.rs` draws it on a `TestBackend`.
use super::model::Model;
use crate::liverun::progress::{fmt_secs, SecondLatency};
use crate::units::{fmt_ms, fmt_num};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Axis, Block, Borders, Chart, Dataset, GraphType, Paragraph, Row, Sparkline, Table,
};
use ratatui::Frame;

const OFFERED: Color = Color::Cyan;
const ACHIEVED: Color = Color::Green;
const BAD: Color = Color::Red;

/// Below this height the live charts take 8 rows instead of 12, so the step table and the
/// server panel keep theirs at 80×24, the terminal's default size.
const TALL: u16 = 32;

/// Lays the panels out for the terminal's size. A panel that has no room is dropped (the
/// throughput chart, then the server panel), a figure is never cut: every text below is built
/// from whole pieces that fit, see [`fit`].
pub fn draw(f: &mut Frame, m: &Model) {
    let area = f.area();
    let stepped = m.setup.command != "run";
    let live_rows = if area.height >= TALL { 12 } else { 8 };
    // Rows the others need: header, live charts, the step table's header and one row, footer.
    let needed = 2 + live_rows + if stepped { 6 } else { 0 } + 1;
    let server_lines = server_lines(m, area.width.saturating_sub(2) as usize);
    let server_h = match server_lines.len() {
        0 => 0,
        n => (n.min(6) as u16 + 2).min(area.height.saturating_sub(needed)),
    };
    let server_h = if server_h >= 3 { server_h } else { 0 };
    // A single run has no steps to list: its live charts take the room.
    let (live_h, sweep_h) = if stepped {
        (Constraint::Length(live_rows), Constraint::Min(6))
    } else {
        (Constraint::Min(8), Constraint::Length(0))
    };
    let [head, live, sweep, server, foot] = Layout::vertical([
        Constraint::Length(2),
        live_h,
        sweep_h,
        Constraint::Length(server_h),
        Constraint::Length(1),
    ])
    .areas(area);
    header(f, head, m);
    let [rate, side] =
        Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(live);
    rate_chart(f, rate, m);
    sparklines(f, side, m);
    if stepped {
        let table = StepTable::new(m);
        // The chart keeps its 30% while the table's columns fit in the rest; else the table
        // takes the whole width.
        let [left, chart] =
            Layout::horizontal([Constraint::Percentage(70), Constraint::Percentage(30)])
                .areas(sweep);
        if table.fits(left.width.saturating_sub(2)) || sweep.width < 60 {
            table.render(f, left, m);
            sweep_chart(f, chart, m);
        } else {
            table.render(f, sweep, m);
        }
    }
    if server_h > 0 {
        let lines: Vec<Line> = server_lines.into_iter().map(Line::raw).collect();
        let block = Block::default().borders(Borders::ALL).title(" server ");
        f.render_widget(Paragraph::new(lines).block(block), server);
    }
    footer(f, foot, m);
}

/// The pieces of a line that fit in `width`, in their order: a piece that does not fit is
/// left out whole (the next, shorter ones may still fit), never cut.
fn fit(pieces: Vec<Span<'static>>, width: u16) -> Line<'static> {
    let mut used = 0;
    let kept: Vec<Span> = pieces
        .into_iter()
        .filter(|p| {
            let w = p.width();
            let fits = used + w <= width as usize;
            if fits {
                used += w;
            }
            fits
        })
        .collect();
    Line::from(kept)
}

/// `text` wrapped at spaces to lines of at most `width` columns (a word longer than that is
/// left out: it would be cut).
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ').filter(|w| Span::raw(*w).width() <= width) {
        if !line.is_empty() && Span::raw(format!("{line} {word}")).width() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// The server panel's lines at `width` columns, wrapped so that none is cut.
fn server_lines(m: &Model, width: usize) -> Vec<String> {
    m.server
        .iter()
        .flat_map(|s| wrap(s, width.max(1)))
        .collect()
}

fn header(f: &mut Frame, area: Rect, m: &Model) {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut first = vec![
        Span::styled(format!("overload {} ", m.setup.command), bold),
        Span::raw(format!("{}  ", m.setup.target)),
        Span::styled(m.step_text(), bold),
    ];
    if let Some(eta) = m.eta() {
        first.push(Span::raw(format!(
            " · {} ETA ≤ {}",
            m.setup.command,
            fmt_secs(eta.as_secs_f64())
        )));
    }
    // In full where it fits, else in short words, whole pieces left out from the end.
    let now = |short: bool| -> Vec<Span<'static>> {
        let (Some((_, _, t)), Some(s)) = (&m.current, m.seconds.back()) else {
            return vec![Span::raw("waiting for the next step")];
        };
        let w = |long: &'static str, brief: &'static str| if short { brief } else { long };
        [
            format!("now: {}/s{}", fmt_num(s.achieved), w(" achieved", "")),
            format!(" · {} {}", fmt_num(s.errors), w("errors/s", "err/s")),
            format!(" · {} in flight", s.in_flight),
            format!(" · {}", percentiles(s.latency)),
            format!(" · {}CPU {:.0}%", w("gen ", ""), s.cpu_pct),
            format!(" · {} {}", t.responses, w("responses so far", "responses")),
        ]
        .into_iter()
        .map(Span::raw)
        .collect()
    };
    let full = Line::from(now(false));
    let second = if full.width() <= area.width as usize {
        full
    } else {
        fit(now(true), area.width)
    };
    f.render_widget(Paragraph::new(vec![fit(first, area.width), second]), area);
}

/// Offered vs achieved rate over the last seconds (x: seconds ago).
fn rate_chart(f: &mut Frame, area: Rect, m: &Model) {
    let n = m.seconds.len();
    let x = |i: usize| i as f64 - n as f64 + 1.0;
    let achieved: Vec<(f64, f64)> = m
        .seconds
        .iter()
        .enumerate()
        .map(|(i, s)| (x(i), s.achieved))
        .collect();
    // Users are not a rate: in closed loop only the achieved rate is drawn.
    let open = m.setup.unit == "req/s";
    let offered: Vec<(f64, f64)> = if open {
        m.seconds
            .iter()
            .enumerate()
            .map(|(i, s)| (x(i), s.offered))
            .collect()
    } else {
        Vec::new()
    };
    let top = achieved
        .iter()
        .chain(&offered)
        .map(|p| p.1)
        .fold(1.0, f64::max)
        * 1.1;
    let mut sets = vec![Dataset::default()
        .name("achieved")
        .marker(Marker::Braille)
        .graph_type(GraphType::Line)
        .style(Style::default().fg(ACHIEVED))
        .data(&achieved)];
    if open {
        sets.insert(
            0,
            Dataset::default()
                .name("offered")
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(OFFERED))
                .data(&offered),
        );
    }
    let left = -(n.max(2) as f64 - 1.0);
    let chart = Chart::new(sets)
        .block(
            Block::default()
                .borders(Borders::ALL)
                .title(" responses/s, last seconds "),
        )
        .x_axis(
            Axis::default()
                .bounds([left, 0.0])
                .labels([format!("{}s", left as i64), "now".to_string()]),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, top])
                .labels(["0".to_string(), fmt_num(top)]),
        );
    f.render_widget(chart, area);
}

/// The last second's response-time percentiles, or a dash before any.
fn percentiles(l: Option<SecondLatency>) -> String {
    match l {
        Some(l) => format!(
            "p50 {} p95 {} p99 {}",
            fmt_ms(l.p50_ms),
            fmt_ms(l.p95_ms),
            fmt_ms(l.p99_ms)
        ),
        None => "p50 - p95 - p99 -".to_string(),
    }
}

/// p99 of each second, errors, in flight and the generator's CPU, per second.
fn sparklines(f: &mut Frame, area: Rect, m: &Model) {
    let [p99, errors, flight, cpu] = Layout::vertical([
        Constraint::Ratio(1, 4),
        Constraint::Ratio(1, 4),
        Constraint::Ratio(1, 4),
        Constraint::Ratio(1, 4),
    ])
    .areas(area);
    let width = area.width.saturating_sub(2) as usize;
    let tail = |v: Vec<u64>| -> Vec<u64> { v[v.len().saturating_sub(width)..].to_vec() };
    let last = m.seconds.back();
    // In µs: the sparkline draws integers.
    let p = tail(m.p99.iter().map(|ms| (ms * 1e3).round() as u64).collect());
    let v = last
        .and_then(|s| s.latency)
        .map_or("-".into(), |l| fmt_ms(l.p99_ms));
    let titles = [format!(" p99 per second: {v} "), format!(" p99 {v} ")];
    spark(f, p99, &titles, &p, Color::Blue);
    let e = tail(m.seconds.iter().map(|s| s.errors.round() as u64).collect());
    let v = last.map_or(0.0, |s| s.errors.round());
    let titles = [format!(" errors/s: {v} "), format!(" err/s {v} ")];
    spark(f, errors, &titles, &e, BAD);
    let q = tail(m.seconds.iter().map(|s| s.in_flight).collect());
    let v = last.map_or(0, |s| s.in_flight);
    let titles = [format!(" in flight: {v} "), format!(" flight {v} ")];
    spark(f, flight, &titles, &q, Color::Yellow);
    let c = tail(m.seconds.iter().map(|s| s.cpu_pct.round() as u64).collect());
    let v = last.map_or(0.0, |s| s.cpu_pct);
    let titles = [
        format!(" generator CPU: {v:.0}% of a core "),
        format!(" gen CPU {v:.0}% "),
    ];
    spark(f, cpu, &titles, &c, Color::Magenta);
}

/// A sparkline titled with the first of `titles` that fits its width (none if none does).
fn spark(f: &mut Frame, area: Rect, titles: &[String], data: &[u64], color: Color) {
    let title = titles
        .iter()
        .find(|t| Span::raw(t.as_str()).width() <= area.width as usize)
        .cloned()
        .unwrap_or_default();
    let w = Sparkline::default()
        .block(Block::default().borders(Borders::TOP).title(title))
        .data(data)
        .style(Style::default().fg(color));
    f.render_widget(w, area);
}

/// The steps so far: level, throughput, success, percentiles, send lag, generator CPU, each
/// column as wide as its widest cell; where the width is short, whole columns are dropped
/// (send lag first, then CPU, p50, p95), never a cell cut.
struct StepTable {
    /// Column titles, then each row's cells, in the same order; the flags come last.
    titles: Vec<&'static str>,
    rows: Vec<(Vec<String>, bool)>,
    widths: Vec<u16>,
}

/// The columns left out first when the table is too wide, by title.
const DROP_ORDER: [&str; 4] = ["lag p99", "CPU", "p50", "p95"];
/// Room the flags column keeps (its words are labels: they may be cut, figures are not).
const FLAGS_MIN: u16 = 6;

impl StepTable {
    fn new(m: &Model) -> StepTable {
        let sat = m.saturation().map(|r| r.step);
        // Closed loop has no schedule to lag behind: no send-lag column.
        let open = m.setup.unit == "req/s";
        let mut titles = vec!["step", m.setup.unit, "→ /s", "ok", "p50", "p95", "p99"];
        if open {
            titles.push("lag p99");
        }
        titles.push("CPU");
        let rows: Vec<(Vec<String>, bool)> = m
            .steps
            .iter()
            .map(|r| {
                let mut cells = vec![
                    (r.step + 1).to_string(),
                    fmt_num(r.offered),
                    fmt_num(r.throughput),
                    format!("{:.1}%", r.ok_pct),
                    fmt_ms(r.p50_ms),
                    fmt_ms(r.p95_ms),
                    fmt_ms(r.p99_ms),
                ];
                if open {
                    cells.push(fmt_ms(r.lag_p99_ms));
                }
                cells.push(format!("{:.0}%", r.gen_cpu_pct));
                let saturated = sat == Some(r.step);
                cells.push(if saturated {
                    format!("◆ {}", r.flags.join(" "))
                } else {
                    r.flags.join(" ")
                });
                (cells, saturated)
            })
            .collect();
        let widths = titles
            .iter()
            .enumerate()
            .map(|(i, t)| {
                rows.iter()
                    .map(|(c, _)| Span::raw(c[i].as_str()).width())
                    .chain([Span::raw(*t).width()])
                    .max()
                    .unwrap_or(0) as u16
            })
            .collect();
        titles.push("flags");
        StepTable {
            titles,
            rows,
            widths,
        }
    }

    /// Columns shown in `width` (inside the borders): all figure columns but those dropped.
    fn columns(&self, width: u16) -> Vec<usize> {
        let mut shown: Vec<usize> = (0..self.widths.len()).collect();
        let need = |shown: &[usize]| {
            // One space between columns, the flags column after the last.
            shown.iter().map(|&i| self.widths[i] + 1).sum::<u16>() + FLAGS_MIN
        };
        for title in DROP_ORDER {
            if need(&shown) <= width {
                break;
            }
            shown.retain(|&i| self.titles[i] != title);
        }
        shown
    }

    /// Every column fits in `width` (inside the borders).
    fn fits(&self, width: u16) -> bool {
        self.columns(width).len() == self.widths.len()
    }

    fn render(&self, f: &mut Frame, area: Rect, m: &Model) {
        let mut shown = self.columns(area.width.saturating_sub(2));
        let flags = self.titles.len() - 1;
        shown.push(flags);
        let visible = area.height.saturating_sub(3) as usize;
        let pick =
            |cells: &[String]| -> Vec<String> { shown.iter().map(|&i| cells[i].clone()).collect() };
        let rows = self.rows[self.rows.len().saturating_sub(visible)..]
            .iter()
            .map(|(cells, saturated)| {
                let row = Row::new(pick(cells));
                if *saturated {
                    row.style(Style::default().fg(BAD))
                } else {
                    row
                }
            });
        let titles: Vec<String> = shown.iter().map(|&i| self.titles[i].to_string()).collect();
        let header = Row::new(titles).style(Style::default().add_modifier(Modifier::BOLD));
        let widths: Vec<Constraint> = shown
            .iter()
            .map(|&i| match self.widths.get(i) {
                Some(&w) => Constraint::Length(w),
                None => Constraint::Fill(1),
            })
            .collect();
        let table = Table::new(rows, widths).header(header).block(
            Block::default().borders(Borders::ALL).title(format!(
                " {} so far (CPU: the generator's) ",
                m.setup.command
            )),
        );
        f.render_widget(table, area);
    }
}

/// Throughput against the offered level, one point per step, with the saturation mark (a
/// vertical line at the first saturated step's level) once the analysis has found it.
fn sweep_chart(f: &mut Frame, area: Rect, m: &Model) {
    let points: Vec<(f64, f64)> = m.steps.iter().map(|r| (r.offered, r.throughput)).collect();
    let right = points.iter().map(|p| p.0).fold(1.0, f64::max) * 1.1;
    let top = points.iter().map(|p| p.1).fold(1.0, f64::max) * 1.1;
    let ideal: Vec<(f64, f64)> = if m.setup.unit == "req/s" {
        vec![(0.0, 0.0), (right.min(top), right.min(top))]
    } else {
        Vec::new()
    };
    let sat: Vec<(f64, f64)> = m
        .saturation()
        .map(|r| vec![(r.offered, 0.0), (r.offered, top)])
        .unwrap_or_default();
    let mut sets = vec![Dataset::default()
        .name("throughput")
        .marker(Marker::Braille)
        .graph_type(GraphType::Line)
        .style(Style::default().fg(ACHIEVED))
        .data(&points)];
    if !ideal.is_empty() {
        sets.insert(
            0,
            Dataset::default()
                .name("= offered")
                .marker(Marker::Dot)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(OFFERED))
                .data(&ideal),
        );
    }
    if !sat.is_empty() {
        sets.push(
            Dataset::default()
                .name("saturation")
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(BAD))
                .data(&sat),
        );
    }
    // Short: the panel is narrow; the figure is left out rather than cut.
    let titles = match m.saturation() {
        Some(r) => vec![
            format!(" throughput · saturation {} ", fmt_num(r.offered)),
            format!(" saturation {} ", fmt_num(r.offered)),
        ],
        None => vec![format!(" throughput vs {} ", m.setup.unit)],
    };
    let title = titles
        .into_iter()
        .find(|t| Span::raw(t.as_str()).width() + 2 <= area.width as usize)
        .unwrap_or_default();
    let chart = Chart::new(sets)
        .block(Block::default().borders(Borders::ALL).title(title))
        .x_axis(
            Axis::default()
                .bounds([0.0, right])
                .labels(["0".to_string(), fmt_num(right)]),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, top])
                .labels(["0".to_string(), fmt_num(top)]),
        );
    f.render_widget(chart, area);
}

/// The keys, said in full where the width allows, else more briefly; live control's note
/// (what the last key did) goes last and is left out before any key is.
fn footer(f: &mut Frame, area: Rect, m: &Model) {
    let key = Style::default().add_modifier(Modifier::REVERSED);
    // 0: in full, 1: `q` briefer, 2: every key brief, 3: brief and no note.
    let line = |brevity: u8| -> Line<'static> {
        let short = brevity >= 2;
        if m.stopping {
            return Line::from(vec![
                Span::styled(" stopping ", key),
                Span::raw(if short {
                    " recording the step, writing the report; q quits at once"
                } else {
                    " the step in progress is recorded and the report written; q again quits at once"
                }),
            ]);
        }
        let mut spans = vec![
            Span::styled(" q ", key),
            Span::raw(match brevity {
                0 => " quit as Ctrl-C does: what ran is recorded, the report written  ",
                1 => " quit as Ctrl-C does  ",
                _ => " quit: what ran is recorded  ",
            }),
        ];
        if m.setup.end_step_key {
            spans.push(Span::styled(" n ", key));
            spans.push(Span::raw(match (m.ending_step, short) {
                (true, _) => " ending this step…  ",
                (false, false) => " end this step, go on to the next  ",
                (false, true) => " end this step  ",
            }));
        }
        if m.setup.steer_keys {
            spans.push(Span::styled(" +/- ", key));
            spans.push(Span::raw(" load  "));
            spans.push(Span::styled(" p ", key));
            spans.push(Span::raw(if m.paused { " resume  " } else { " pause  " }));
            if let (Some(n), false) = (&m.control_note, brevity >= 3) {
                spans.push(Span::raw(n.clone()));
            }
        }
        Line::from(spans)
    };
    let shown = (0..3)
        .map(line)
        .find(|l| l.width() <= area.width as usize)
        .unwrap_or_else(|| line(3));
    f.render_widget(Paragraph::new(shown), area);
}
