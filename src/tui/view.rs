//! Draws the [`Model`] with ratatui: header, live rates, the sweep so far, the server's side
//! and the keys. Drawn on the view's own thread; `tests.rs` draws it on a `TestBackend`.
use super::model::{Model, StepRow};
use crate::report::progress::{fmt_secs, SecondLatency};
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

pub fn draw(f: &mut Frame, m: &Model) {
    let server_h = if m.server.is_empty() {
        0
    } else {
        m.server.len().min(6) as u16 + 2
    };
    // A single run has no steps to list: its live charts take the room.
    let stepped = m.setup.command != "run";
    let (live_h, sweep_h) = if stepped {
        (Constraint::Length(12), Constraint::Min(6))
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
    .areas(f.area());
    header(f, head, m);
    let [rate, side] =
        Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(live);
    rate_chart(f, rate, m);
    sparklines(f, side, m);
    if stepped {
        let [table, chart] =
            Layout::horizontal([Constraint::Percentage(70), Constraint::Percentage(30)])
                .areas(sweep);
        steps_table(f, table, m);
        sweep_chart(f, chart, m);
    }
    if server_h > 0 {
        let lines: Vec<Line> = m.server.iter().map(|s| Line::raw(s.as_str())).collect();
        let block = Block::default().borders(Borders::ALL).title(" server ");
        f.render_widget(Paragraph::new(lines).block(block), server);
    }
    footer(f, foot, m);
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
    let now = match (&m.current, m.seconds.back()) {
        (Some((_, _, t)), Some(s)) => format!(
            "now: {}/s achieved · {} errors/s · {} in flight · {} · gen CPU {:.0}% · {} responses so far",
            fmt_num(s.achieved),
            fmt_num(s.errors),
            s.in_flight,
            percentiles(s.latency),
            s.cpu_pct,
            t.responses
        ),
        _ => "waiting for the next step".to_string(),
    };
    f.render_widget(
        Paragraph::new(vec![Line::from(first), Line::raw(now)]),
        area,
    );
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
    let title = format!(
        " p99 per second: {} ",
        last.and_then(|s| s.latency)
            .map_or("-".into(), |l| fmt_ms(l.p99_ms))
    );
    spark(f, p99, &title, &p, Color::Blue);
    let e = tail(m.seconds.iter().map(|s| s.errors.round() as u64).collect());
    let title = format!(" errors/s: {} ", last.map_or(0.0, |s| s.errors.round()));
    spark(f, errors, &title, &e, BAD);
    let q = tail(m.seconds.iter().map(|s| s.in_flight).collect());
    let title = format!(" in flight: {} ", last.map_or(0, |s| s.in_flight));
    spark(f, flight, &title, &q, Color::Yellow);
    let c = tail(m.seconds.iter().map(|s| s.cpu_pct.round() as u64).collect());
    let title = format!(
        " generator CPU: {:.0}% of a core ",
        last.map_or(0.0, |s| s.cpu_pct)
    );
    spark(f, cpu, &title, &c, Color::Magenta);
}

fn spark(f: &mut Frame, area: Rect, title: &str, data: &[u64], color: Color) {
    let w = Sparkline::default()
        .block(
            Block::default()
                .borders(Borders::TOP)
                .title(title.to_string()),
        )
        .data(data)
        .style(Style::default().fg(color));
    f.render_widget(w, area);
}

/// The steps so far: level, throughput, success, percentiles, send lag, generator CPU.
fn steps_table(f: &mut Frame, area: Rect, m: &Model) {
    let sat = m.saturation().map(|r| r.step);
    let visible = area.height.saturating_sub(3) as usize;
    let rows = m.steps[m.steps.len().saturating_sub(visible)..]
        .iter()
        .map(|r| step_row(r, sat == Some(r.step)));
    let header = Row::new([
        "step",
        m.setup.unit,
        "→ /s",
        "ok",
        "p50",
        "p95",
        "p99",
        "lag p99",
        "CPU",
        "flags",
    ])
    .style(Style::default().add_modifier(Modifier::BOLD));
    let widths = [
        Constraint::Length(4),
        Constraint::Length(7),
        Constraint::Length(8),
        Constraint::Length(6),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(8),
        Constraint::Length(4),
        Constraint::Min(8),
    ];
    let table = Table::new(rows, widths).header(header).block(
        Block::default().borders(Borders::ALL).title(format!(
            " {} so far (CPU: the generator's) ",
            m.setup.command
        )),
    );
    f.render_widget(table, area);
}

fn step_row(r: &StepRow, saturation: bool) -> Row<'static> {
    let flags = if saturation {
        format!("◆ {}", r.flags.join(" "))
    } else {
        r.flags.join(" ")
    };
    let row = Row::new([
        (r.step + 1).to_string(),
        fmt_num(r.offered),
        fmt_num(r.throughput),
        format!("{:.1}%", r.ok_pct),
        fmt_ms(r.p50_ms),
        fmt_ms(r.p95_ms),
        fmt_ms(r.p99_ms),
        fmt_ms(r.lag_p99_ms),
        format!("{:.0}%", r.gen_cpu_pct),
        flags,
    ]);
    if saturation {
        row.style(Style::default().fg(BAD))
    } else {
        row
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
    // Short: the panel is narrow.
    let title = match m.saturation() {
        Some(r) => format!(" throughput · saturation {} ", fmt_num(r.offered)),
        None => format!(" throughput vs {} ", m.setup.unit),
    };
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

fn footer(f: &mut Frame, area: Rect, m: &Model) {
    let key = Style::default().add_modifier(Modifier::REVERSED);
    let line = if m.stopping {
        Line::from(vec![
            Span::styled(" stopping ", key),
            Span::raw(
                " the step in progress is recorded and the report written; q again quits at once",
            ),
        ])
    } else {
        let mut spans = vec![
            Span::styled(" q ", key),
            Span::raw(" quit as Ctrl-C does: what ran is recorded, the report written  "),
        ];
        if m.setup.end_step_key {
            spans.push(Span::styled(" n ", key));
            spans.push(Span::raw(if m.ending_step {
                " ending this step…"
            } else {
                " end this step, go on to the next"
            }));
        }
        Line::from(spans)
    };
    f.render_widget(Paragraph::new(line), area);
}
