//! Small SVG line charts for the HTML reports: linear and log scales with nice ticks,
//! polylines with markers, legends, vertical marker lines (saturation, capacity) and shaded
//! x-bands (steps on a timeline). Output is plain SVG text with no external references, so it
//! can be inlined into a self-contained page.
//!
//! A chart is data plus styling; callers build [`Chart`]s and add [`Series`], [`VLine`]s and
//! [`Band`]s to them. More kinds of data (server CPU, process counts…) are just more series or
//! more charts: nothing here knows what is plotted.
use std::fmt::Write;

mod scale;
pub use scale::{domain, fmt_tick, linear_ticks, log_ticks, nice_step, Axis, Scale};

/// Escapes text for XML/HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            // Control characters are not allowed in XML 1.0; they carry nothing readable.
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    Solid,
    Dashed,
    Dotted,
    /// Markers only.
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    None,
    Dot,
    /// A hollow circle, drawn larger: highlights points (e.g. generator-bound steps).
    Ring,
    /// A filled rectangle: the legend key of a shaded band (a series without points).
    Swatch,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub name: String,
    /// CSS color.
    pub color: String,
    pub points: Vec<(f64, f64)>,
    pub line: Line,
    pub marker: Marker,
    pub width: f64,
    pub in_legend: bool,
}

impl Series {
    /// A solid line with dots.
    pub fn new(name: impl Into<String>, color: &str, points: Vec<(f64, f64)>) -> Series {
        Series {
            name: name.into(),
            color: color.to_string(),
            points,
            line: Line::Solid,
            marker: Marker::Dot,
            width: 2.0,
            in_legend: true,
        }
    }
    pub fn line(mut self, l: Line) -> Series {
        self.line = l;
        self
    }
    pub fn marker(mut self, m: Marker) -> Series {
        self.marker = m;
        self
    }
    pub fn width(mut self, w: f64) -> Series {
        self.width = w;
        self
    }
}

/// A vertical line across the plot with a label (saturation point, capacity).
#[derive(Debug, Clone, PartialEq)]
pub struct VLine {
    pub x: f64,
    pub label: String,
    pub color: String,
}

/// A shaded x-range (a step on a timeline), optionally labelled at its top.
#[derive(Debug, Clone, PartialEq)]
pub struct Band {
    pub x0: f64,
    pub x1: f64,
    pub label: Option<String>,
    pub fill: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub series: Vec<Series>,
    pub vlines: Vec<VLine>,
    pub bands: Vec<Band>,
    /// Drawn instead of the plot when no series has a point that can be shown.
    pub empty_note: String,
    pub width: f64,
    pub height: f64,
}

const FONT: &str =
    "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif";
const INK: &str = "#1f2937";
const MUTED: &str = "#6b7280";
const GRID: &str = "#e5e7eb";

/// Rough text width for layout (no font metrics available): ~0.58 em per character.
fn text_w(s: &str, size: f64) -> f64 {
    s.chars().count() as f64 * size * 0.58
}

fn dash(l: Line) -> &'static str {
    match l {
        Line::Dashed => " stroke-dasharray=\"6 4\"",
        Line::Dotted => " stroke-dasharray=\"2 3\"",
        _ => "",
    }
}

impl Chart {
    pub fn new(title: impl Into<String>, x: Axis, y: Axis) -> Chart {
        Chart {
            title: title.into(),
            x,
            y,
            series: Vec::new(),
            vlines: Vec::new(),
            bands: Vec::new(),
            empty_note: "no data".to_string(),
            width: 640.0,
            height: 380.0,
        }
    }
    pub fn add(&mut self, s: Series) -> &mut Chart {
        self.series.push(s);
        self
    }
    pub fn vline(&mut self, x: f64, label: impl Into<String>, color: &str) -> &mut Chart {
        self.vlines.push(VLine {
            x,
            label: label.into(),
            color: color.to_string(),
        });
        self
    }
    pub fn band(&mut self, b: Band) -> &mut Chart {
        self.bands.push(b);
        self
    }

    /// Whether any point can be drawn; a page shows a chart without one as a line of text.
    pub fn has_data(&self) -> bool {
        self.series.iter().any(|s| {
            s.points.iter().any(|&(x, y)| {
                x.is_finite()
                    && y.is_finite()
                    && (!self.x.log || x > 0.0)
                    && (!self.y.log || y > 0.0)
            })
        })
    }

    /// Legend items laid out in rows; returns (x, row) per shown series and the row count.
    fn legend_layout(&self, avail: f64) -> (Vec<(usize, f64, usize)>, usize) {
        let mut out = Vec::new();
        let (mut x, mut row) = (0.0, 0);
        for (i, s) in self.series.iter().enumerate().filter(|(_, s)| s.in_legend) {
            let w = 26.0 + text_w(&s.name, 12.0) + 16.0;
            if x > 0.0 && x + w > avail {
                x = 0.0;
                row += 1;
            }
            out.push((i, x, row));
            x += w;
        }
        let rows = if out.is_empty() { 0 } else { row + 1 };
        (out, rows)
    }

    /// The chart as an `<svg>` element. `id` must be unique within the page (clip path).
    pub fn to_svg(&self, id: &str) -> String {
        let (w, h) = (self.width, self.height);
        let mut o = String::new();
        let _ = write!(
            o,
            "<svg class=\"chart\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" height=\"{h}\" role=\"img\" \
             aria-label=\"{t}\" font-family=\"{FONT}\" font-size=\"12\">\n<title>{t}</title>\n",
            t = esc(&self.title)
        );
        let _ = writeln!(
            o,
            "<text x=\"16\" y=\"24\" font-size=\"15\" font-weight=\"600\" fill=\"{INK}\">{}</text>",
            esc(&self.title)
        );
        let (left, right, bottom) = (64.0, 20.0, 48.0);
        let (items, rows) = self.legend_layout(w - left - right);
        let legend_top = 38.0;
        // Step labels get a strip of their own above the plot, so no line crosses them.
        let strip = if self.bands.iter().any(|b| b.label.is_some()) {
            14.0
        } else {
            0.0
        };
        let top = legend_top + rows as f64 * 18.0 + 10.0 + strip;
        let (pw, ph) = (w - left - right, h - top - bottom);
        if !self.has_data() {
            let _ = writeln!(
                o,
                "<rect x=\"{left}\" y=\"{top}\" width=\"{pw}\" height=\"{ph}\" fill=\"#f9fafb\" stroke=\"{GRID}\"/>\n\
                 <text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{MUTED}\" font-size=\"14\">{}</text>\n</svg>",
                left + pw / 2.0,
                top + ph / 2.0,
                esc(&self.empty_note)
            );
            return o;
        }
        // Domains from every drawable point, the marker lines and bands included.
        let mut xs: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .collect();
        xs.extend(self.vlines.iter().map(|v| v.x));
        xs.extend(self.bands.iter().flat_map(|b| [b.x0, b.x1]));
        let ys: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .collect();
        let dom = |a: &Axis, v: &[f64], headroom: bool| {
            let (mut lo, mut hi) = domain(v, a.log, a.zero, headroom).unwrap_or((1.0, 10.0));
            if !a.log && !a.zero {
                // A fitted axis (time) ends where the data ends: a timeline's axis stops with
                // the run rather than at the next round number.
                let finite = v.iter().copied().filter(|x| x.is_finite());
                let (a0, a1) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| {
                    (l.min(x), h.max(x))
                });
                if a1 - a0 > 1e-9 {
                    (lo, hi) = (a0, a1);
                }
            }
            if let Some(m) = a.min.filter(|m| m.is_finite() && (!a.log || *m > 0.0)) {
                lo = m;
            }
            if let Some(m) = a.max.filter(|m| m.is_finite()) {
                hi = m;
            }
            if hi <= lo {
                hi = if a.log { lo * 10.0 } else { lo + 1.0 };
            }
            (lo, hi)
        };
        let (x0, x1) = dom(&self.x, &xs, false);
        let (y0, y1) = dom(&self.y, &ys, true);
        let sx = Scale {
            log: self.x.log,
            min: x0,
            max: x1,
            r0: left,
            r1: left + pw,
            // One tick per ~100 px: wide timelines get more.
            ticks: ((pw / 100.0) as usize).clamp(4, 16),
        };
        let sy = Scale {
            log: self.y.log,
            min: y0,
            max: y1,
            r0: top + ph,
            r1: top,
            ticks: ((ph / 50.0) as usize).clamp(3, 8),
        };
        let clamp_x = |v: f64| sx.map(v).map(|p| p.clamp(left, left + pw));

        // Legend.
        for (i, lx, row) in &items {
            let s = &self.series[*i];
            let (x, y) = (left + lx, legend_top + *row as f64 * 18.0);
            if s.line != Line::None {
                let _ = write!(
                    o,
                    "<line x1=\"{x}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" stroke=\"{}\" stroke-width=\"{}\"{}/>",
                    x + 20.0,
                    esc(&s.color),
                    s.width.min(3.0),
                    dash(s.line)
                );
            }
            if s.marker != Marker::None {
                o.push_str(&marker_svg(s.marker, &s.color, x + 10.0, y));
            }
            let _ = writeln!(
                o,
                "<text x=\"{}\" y=\"{}\" fill=\"{INK}\">{}</text>",
                x + 26.0,
                y + 4.0,
                esc(&s.name)
            );
        }

        // Bands under everything else.
        for b in &self.bands {
            if let (Some(a), Some(c)) = (clamp_x(b.x0), clamp_x(b.x1)) {
                let (a, c) = (a.min(c), a.max(c));
                let _ = writeln!(
                    o,
                    // The white edge parts neighbouring steps of the same shade.
                    "<rect x=\"{a:.1}\" y=\"{top}\" width=\"{:.1}\" height=\"{ph}\" fill=\"{}\" stroke=\"#ffffff\" stroke-width=\"2\"/>",
                    c - a,
                    esc(&b.fill)
                );
                if let Some(l) = &b.label {
                    if text_w(l, 10.0) + 4.0 < c - a {
                        let _ = writeln!(
                            o,
                            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\" font-size=\"10\" fill=\"{MUTED}\">{}</text>",
                            (a + c) / 2.0,
                            top - 4.0,
                            esc(l)
                        );
                    }
                }
            }
        }

        // Grid and tick labels.
        for t in sy.ticks() {
            if let Some(py) = sy.map(t) {
                let _ = writeln!(
                    o,
                    "<line x1=\"{left}\" y1=\"{py:.1}\" x2=\"{}\" y2=\"{py:.1}\" stroke=\"{GRID}\"/>\
                     <text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"{MUTED}\">{}</text>",
                    left + pw,
                    left - 6.0,
                    py + 4.0,
                    fmt_tick(t)
                );
            }
        }
        let xticks = sx.ticks();
        // Thin out x labels that would collide.
        let label_w = xticks
            .iter()
            .map(|t| text_w(&fmt_tick(*t), 12.0))
            .fold(0.0, f64::max)
            + 8.0;
        let mut last_px = f64::NEG_INFINITY;
        for t in xticks {
            if let Some(px) = sx.map(t) {
                let _ = write!(
                    o,
                    "<line x1=\"{px:.1}\" y1=\"{top}\" x2=\"{px:.1}\" y2=\"{}\" stroke=\"{GRID}\"/>",
                    top + ph
                );
                if px - last_px >= label_w {
                    let _ = write!(
                        o,
                        "<text x=\"{px:.1}\" y=\"{}\" text-anchor=\"middle\" fill=\"{MUTED}\">{}</text>",
                        top + ph + 16.0,
                        fmt_tick(t)
                    );
                    last_px = px;
                }
                o.push('\n');
            }
        }
        let _ = writeln!(
            o,
            "<line x1=\"{left}\" y1=\"{b}\" x2=\"{}\" y2=\"{b}\" stroke=\"#9ca3af\"/>\
             <line x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{b}\" stroke=\"#9ca3af\"/>",
            left + pw,
            b = top + ph
        );
        let _ = writeln!(
            o,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" fill=\"{INK}\">{}</text>",
            left + pw / 2.0,
            h - 10.0,
            esc(&self.x.label)
        );
        let (lx, ly) = (16.0, top + ph / 2.0);
        let _ = writeln!(
            o,
            "<text x=\"{lx}\" y=\"{ly}\" transform=\"rotate(-90 {lx} {ly})\" text-anchor=\"middle\" fill=\"{INK}\">{}</text>",
            esc(&self.y.label)
        );

        // Series, clipped to the plot area.
        let clip = format!(
            "clip-{}",
            id.replace(|c: char| !c.is_ascii_alphanumeric(), "-")
        );
        let _ = writeln!(
            o,
            "<clipPath id=\"{clip}\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/></clipPath>\n<g clip-path=\"url(#{clip})\">",
            left - 6.0,
            top - 6.0,
            pw + 12.0,
            ph + 12.0
        );
        for s in &self.series {
            let pts: Vec<Option<(f64, f64)>> = s
                .points
                .iter()
                .map(|&(x, y)| Some((sx.map(x)?, sy.map(y)?)))
                .collect();
            if s.line != Line::None {
                let mut d = String::new();
                let mut pen_down = false;
                for p in &pts {
                    match p {
                        Some((x, y)) => {
                            let _ =
                                write!(d, "{}{x:.1},{y:.1}", if pen_down { " L" } else { " M" });
                            pen_down = true;
                        }
                        // A point that cannot be shown breaks the line rather than bridging it.
                        None => pen_down = false,
                    }
                }
                if !d.is_empty() {
                    let _ = writeln!(
                        o,
                        "<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" stroke-linejoin=\"round\" stroke-linecap=\"round\"{}/>",
                        d.trim_start(),
                        esc(&s.color),
                        s.width,
                        dash(s.line)
                    );
                }
            }
            if s.marker != Marker::None {
                for (p, &(x, y)) in pts.iter().zip(&s.points) {
                    if let Some((px, py)) = p {
                        let m = marker_svg(s.marker, &s.color, *px, *py);
                        // A hover tooltip with the values: no script needed.
                        let _ = writeln!(
                            o,
                            "<g>{m}<title>{}</title></g>",
                            esc(&tooltip(&s.name, (x, &self.x), (y, &self.y)))
                        );
                    }
                }
            }
        }
        o.push_str("</g>\n");

        // Marker lines on top, labels staggered so neighbours do not overlap.
        for (i, v) in self.vlines.iter().enumerate() {
            if let Some(px) = sx
                .map(v.x)
                .filter(|p| *p >= left - 0.5 && *p <= left + pw + 0.5)
            {
                let ty = top + 14.0 + 15.0 * i as f64;
                let tw = text_w(&v.label, 11.0);
                let (tx, anchor) = if px + 6.0 + tw > left + pw {
                    (px - 5.0, "end")
                } else {
                    (px + 5.0, "start")
                };
                let _ = writeln!(
                    o,
                    "<line x1=\"{px:.1}\" y1=\"{top}\" x2=\"{px:.1}\" y2=\"{}\" stroke=\"{c}\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\"/>\
                     <text x=\"{tx:.1}\" y=\"{ty}\" text-anchor=\"{anchor}\" font-size=\"11\" font-weight=\"600\" fill=\"{c}\" \
                     stroke=\"#ffffff\" stroke-width=\"3\" paint-order=\"stroke\">{}</text>",
                    top + ph,
                    esc(&v.label),
                    c = esc(&v.color)
                );
            }
        }
        o.push_str("</svg>\n");
        o
    }
}

fn marker_svg(m: Marker, color: &str, x: f64, y: f64) -> String {
    let c = esc(color);
    match m {
        Marker::Dot => format!(
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"3.2\" fill=\"{c}\" stroke=\"#ffffff\" stroke-width=\"1\"/>"
        ),
        Marker::Ring => format!(
            "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"6.5\" fill=\"none\" stroke=\"{c}\" stroke-width=\"2\"/>"
        ),
        Marker::Swatch => format!(
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"18\" height=\"11\" fill=\"{c}\" stroke=\"#d1d5db\"/>",
            x - 9.0,
            y - 5.5
        ),
        Marker::None => String::new(),
    }
}

/// A point's hover text with the axes' units: "p99: 132 ms at 200 requests/s".
fn tooltip(name: &str, (x, xa): (f64, &Axis), (y, ya): (f64, &Axis)) -> String {
    let with = |v: f64, a: &Axis| {
        let u = a.unit();
        match u {
            "" => fmt_val(v),
            u if u.starts_with('%') || u.starts_with('/') => format!("{}{u}", fmt_val(v)),
            u => format!("{} {u}", fmt_val(v)),
        }
    };
    format!("{name}: {} at {}", with(y, ya), with(x, xa))
}

/// A value for tooltips: a few significant digits.
fn fmt_val(v: f64) -> String {
    if !v.is_finite() {
        "n/a".into()
    } else if v.abs() >= 100.0 || v == v.round() {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_render_and_survive_bad_data() {
        let mut c = Chart::new("T <&>", Axis::linear("x"), Axis::log("y"));
        c.add(Series::new(
            "a",
            "#123456",
            vec![
                (0.0, 1.0),
                (1.0, f64::NAN),
                (2.0, 0.0),
                (3.0, 10.0),
                (4.0, 20.0),
            ],
        ));
        c.vline(2.0, "sat", "#ff0000");
        let svg = c.to_svg("t1");
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("T &lt;&amp;&gt;"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        // The NaN and the zero (log axis) break the line: two sub-paths.
        assert_eq!(
            svg.matches(" M").count() + svg.matches("d=\"M").count(),
            2,
            "{svg}"
        );
        assert!(svg.contains(">sat</text>"));

        let mut e = Chart::new("empty", Axis::linear("x"), Axis::linear("y"));
        e.add(Series::new("nan", "#000", vec![(f64::NAN, f64::NAN)]));
        let svg = e.to_svg("t2");
        assert!(svg.contains("no data"));
        let only_zero = {
            let mut z = Chart::new("z", Axis::linear("x"), Axis::linear("y"));
            z.add(Series::new("z", "#000", vec![(0.0, 0.0)]));
            z.to_svg("t3")
        };
        assert!(!only_zero.contains("NaN"), "{only_zero}");
    }

    #[test]
    fn tooltips_carry_the_axes_units() {
        let mut c = Chart::new(
            "t",
            Axis::linear("offered load (requests/s)"),
            Axis::log("response time (ms, log scale)"),
        );
        c.add(Series::new("p99", "#000", vec![(200.0, 132.0)]));
        let svg = c.to_svg("u");
        assert!(
            svg.contains("<title>p99: 132 ms at 200 requests/s</title>"),
            "{svg}"
        );
        let mut c = Chart::new(
            "t",
            Axis::linear("time (s)"),
            Axis::linear("CPU, % of all cores").with_unit("%"),
        );
        c.add(Series::new("busy", "#000", vec![(3.0, 42.0)]));
        assert!(c.to_svg("v").contains("<title>busy: 42% at 3 s</title>"));
    }

    /// y of every `<text>` whose content is `label`, and of the first band's rectangle.
    fn text_y(svg: &str, label: &str) -> Vec<f64> {
        svg.lines()
            .filter(|l| l.contains(&format!(">{label}</text>")))
            .filter_map(|l| l.split("y=\"").nth(1)?.split('"').next()?.parse().ok())
            .collect()
    }

    #[test]
    fn a_timeline_ends_with_the_run_and_its_step_labels_sit_above_the_lines() {
        let mut c = Chart::new("t", Axis::fitted("time (s)"), Axis::linear("responses/s"));
        c.width = 1280.0;
        let pts: Vec<(f64, f64)> = (0..=21).map(|i| (i as f64 * 0.5, 100.0)).collect();
        c.add(Series::new("responses/s", "#000", pts));
        c.band(Band {
            x0: 0.0,
            x1: 10.5,
            label: Some("160/s".into()),
            fill: "#eee".into(),
        });
        let svg = c.to_svg("w");
        // The run ended at 10.5 s: the axis stops there, no tick at 11 or 12.
        assert!(!text_y(&svg, "10").is_empty(), "{svg}");
        assert!(text_y(&svg, "11").is_empty() && text_y(&svg, "12").is_empty());
        // The step's label is above the plot area (whose top is the band's rectangle), where
        // no series line can cross it.
        let label_y = text_y(&svg, "160/s")[0];
        let band_top: f64 = svg
            .lines()
            .find(|l| l.starts_with("<rect") && l.contains("fill=\"#eee\""))
            .and_then(|l| l.split("y=\"").nth(1)?.split('"').next()?.parse().ok())
            .unwrap();
        assert!(
            label_y < band_top,
            "label at {label_y}, plot from {band_top}"
        );
    }
}
