//! Axes for the SVG charts: nice tick steps, linear and log ticks, tick labels, the data
//! domain of an axis and the mapping from data to pixels.
/// A "nice" tick step (1, 2 or 5 × 10^k) dividing `range` into about `target` intervals.
pub fn nice_step(range: f64, target: usize) -> f64 {
    if !(range.is_finite() && range > 0.0) {
        return 1.0;
    }
    let raw = range / target.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// Ticks of a linear axis: multiples of a nice step covering [min, max].
pub fn linear_ticks(min: f64, max: f64, target: usize) -> Vec<f64> {
    if !(min.is_finite() && max.is_finite()) || max < min {
        return Vec::new();
    }
    let step = nice_step(max - min, target);
    let first = (min / step - 1e-9).ceil();
    let mut out = Vec::new();
    let mut k = first;
    loop {
        let v = k * step;
        if v > max + step * 1e-9 || out.len() > 50 {
            break;
        }
        // Multiples of 0.1 etc. carry float noise (0.30000000000000004); clean it up.
        out.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
        k += 1.0;
    }
    out
}

/// Ticks of a log axis over [min, max] (both > 0): 1-2-5 per decade up to four decades (a
/// reader interpolates between labelled ticks on a log scale only with them), powers of ten
/// otherwise (every other one past six decades).
pub fn log_ticks(min: f64, max: f64) -> Vec<f64> {
    if !(min > 0.0 && max >= min && max.is_finite()) {
        return Vec::new();
    }
    let lo = min.log10().floor() as i32;
    let hi = max.log10().ceil() as i32;
    let decades = hi - lo;
    let mults: &[f64] = if decades <= 4 {
        &[1.0, 2.0, 5.0]
    } else {
        &[1.0]
    };
    let every = if decades > 6 { 2 } else { 1 };
    let mut out = Vec::new();
    for e in lo..=hi {
        if (e - lo) % every != 0 {
            continue;
        }
        for m in mults {
            let v = m * 10f64.powi(e);
            if v >= min * (1.0 - 1e-9) && v <= max * (1.0 + 1e-9) {
                out.push(v);
            }
        }
    }
    out
}

/// Compact tick label: 0, 0.25, 15, 1.5k, 2M.
pub fn fmt_tick(v: f64) -> String {
    if !v.is_finite() {
        return String::new();
    }
    let a = v.abs();
    let (x, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let t = if x == x.round() {
        format!("{x:.0}")
    } else if (x * 10.0 - (x * 10.0).round()).abs() < 1e-6 {
        format!("{x:.1}")
    } else if (x * 100.0 - (x * 100.0).round()).abs() < 1e-6 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    };
    format!("{t}{suffix}")
}

/// Maps data values to pixels along one axis.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    pub log: bool,
    /// Domain (data units).
    pub min: f64,
    pub max: f64,
    /// Range (pixels); `r0` is where `min` lands (may be greater than `r1` for y axes).
    pub r0: f64,
    pub r1: f64,
    /// About how many ticks a linear axis gets.
    pub ticks: usize,
}

impl Scale {
    /// Pixel position of `v`; None when it cannot be shown (NaN, infinite, ≤ 0 on a log axis).
    pub fn map(&self, v: f64) -> Option<f64> {
        if !v.is_finite() || (self.log && v <= 0.0) {
            return None;
        }
        let t = if self.log {
            (v.log10() - self.min.log10()) / (self.max.log10() - self.min.log10())
        } else {
            (v - self.min) / (self.max - self.min)
        };
        let t = if t.is_finite() { t } else { 0.5 };
        Some(self.r0 + t * (self.r1 - self.r0))
    }

    pub fn ticks(&self) -> Vec<f64> {
        if self.log {
            log_ticks(self.min, self.max)
        } else {
            linear_ticks(self.min, self.max, self.ticks)
        }
    }
}

/// The domain to show for the finite values `vals`: extended to nice bounds, never empty.
/// `zero` pulls a linear domain down (or up) to include 0; `headroom` leaves a little space
/// above the highest value (y axes), so a curve at the maximum does not run along the frame.
pub fn domain(vals: &[f64], log: bool, zero: bool, headroom: bool) -> Option<(f64, f64)> {
    let vals: Vec<f64> = vals
        .iter()
        .copied()
        .filter(|v| v.is_finite() && (!log || *v > 0.0))
        .collect();
    if vals.is_empty() {
        return None;
    }
    let mut lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let mut hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if log {
        if hi / lo < 1.0001 {
            lo /= 3.0;
            hi *= 3.0;
        }
        // Out to the neighbouring 1-2-5 values so the end ticks are labelled.
        let down = |v: f64| {
            let m = 10f64.powf(v.log10().floor());
            [5.0, 2.0, 1.0]
                .iter()
                .map(|k| k * m)
                .find(|c| *c <= v * (1.0 + 1e-9))
                .unwrap_or(m)
        };
        let up = |v: f64| {
            let m = 10f64.powf(v.log10().floor());
            [1.0, 2.0, 5.0, 10.0]
                .iter()
                .map(|k| k * m)
                .find(|c| *c >= v * (1.0 - 1e-9))
                .unwrap_or(10.0 * m)
        };
        // Over many decades only powers of ten are labelled: end on them.
        if hi / lo > 1e4 {
            return Some((
                10f64.powf(lo.log10().floor()),
                10f64.powf(hi.log10().ceil()),
            ));
        }
        return Some((down(lo), up(hi)));
    }
    if zero {
        lo = lo.min(0.0);
        hi = hi.max(0.0);
    }
    if hi - lo < 1e-12 {
        let pad = if hi.abs() > 0.0 { hi.abs() * 0.1 } else { 1.0 };
        lo -= pad;
        hi += pad;
        if zero && lo < 0.0 && vals.iter().all(|v| *v >= 0.0) {
            lo = 0.0;
        }
    }
    let top = if headroom && hi > 0.0 {
        hi + (hi - lo) * 0.04
    } else {
        hi
    };
    let step = nice_step(top - lo, 6);
    Some(((lo / step).floor() * step, (top / step).ceil() * step))
}

#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub label: String,
    pub log: bool,
    /// Linear axes start at zero unless told otherwise (throughput, counts).
    pub zero: bool,
    /// Fixed bounds instead of the data's.
    pub min: Option<f64>,
    pub max: Option<f64>,
    /// The unit tooltips put after a value; None: read it from the label (see [`Axis::unit`]).
    pub unit: Option<String>,
}

impl Axis {
    pub fn linear(label: impl Into<String>) -> Axis {
        Axis {
            label: label.into(),
            log: false,
            zero: true,
            min: None,
            max: None,
            unit: None,
        }
    }
    pub fn log(label: impl Into<String>) -> Axis {
        Axis {
            log: true,
            zero: false,
            ..Axis::linear(label)
        }
    }
    /// Names the unit for tooltips when the label does not carry it in parentheses.
    pub fn with_unit(mut self, unit: impl Into<String>) -> Axis {
        self.unit = Some(unit.into());
        self
    }
    /// The unit of a value on this axis: the one given, else what the label says in
    /// parentheses before any comma ("response time (ms, log scale)" → "ms"), else the label
    /// itself ("responses/s").
    pub fn unit(&self) -> &str {
        if let Some(u) = &self.unit {
            return u;
        }
        match (self.label.rfind('('), self.label.rfind(')')) {
            (Some(a), Some(b)) if a < b => {
                self.label[a + 1..b].split(',').next().unwrap_or("").trim()
            }
            _ => self.label.trim(),
        }
    }
    /// A linear axis fitted to the data rather than starting at zero (time).
    pub fn fitted(label: impl Into<String>) -> Axis {
        Axis {
            zero: false,
            ..Axis::linear(label)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(10.0, 5), 2.0);
        assert_eq!(nice_step(100.0, 6), 20.0);
        assert_eq!(nice_step(1.0, 4), 0.5);
        assert_eq!(nice_step(7.0, 7), 1.0);
        assert_eq!(nice_step(0.0, 5), 1.0);
        assert_eq!(nice_step(f64::NAN, 5), 1.0);
    }

    #[test]
    fn linear_ticks_cover_the_range_on_multiples() {
        assert_eq!(
            linear_ticks(0.0, 500.0, 5),
            vec![0.0, 100.0, 200.0, 300.0, 400.0, 500.0]
        );
        let t = linear_ticks(0.0, 0.6, 6);
        assert_eq!(t.len(), 7);
        assert_eq!(fmt_tick(t[3]), "0.3", "float noise cleaned: {:?}", t);
        assert_eq!(linear_ticks(-1.0, 1.0, 4), vec![-1.0, -0.5, 0.0, 0.5, 1.0]);
        assert!(linear_ticks(f64::NAN, 1.0, 5).is_empty());
        assert!(linear_ticks(2.0, 1.0, 5).is_empty());
    }

    #[test]
    fn log_ticks_per_decade() {
        assert_eq!(
            log_ticks(1.0, 100.0),
            vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]
        );
        // 1-2-5 up to four decades, so a reader can place 300 ms between 200 and 500.
        assert_eq!(log_ticks(0.1, 1000.0).len(), 13);
        assert!(log_ticks(1.0, 1000.0).contains(&200.0));
        assert_eq!(
            log_ticks(1.0, 1e5),
            vec![1.0, 10.0, 100.0, 1000.0, 1e4, 1e5]
        );
        assert_eq!(log_ticks(1.0, 1e8).len(), 5, "{:?}", log_ticks(1.0, 1e8));
        assert!(log_ticks(0.0, 10.0).is_empty());
        assert!(log_ticks(-1.0, 10.0).is_empty());
    }

    #[test]
    fn domains_are_nice_and_never_empty() {
        assert_eq!(
            domain(&[12.0, 470.0], false, true, true),
            Some((0.0, 500.0))
        );
        assert_eq!(
            domain(&[0.0, 500.0], false, true, true),
            Some((0.0, 600.0)),
            "headroom"
        );
        assert_eq!(
            domain(&[0.0, 500.0], false, true, false),
            Some((0.0, 500.0))
        );
        assert_eq!(domain(&[3.0, 7.0], true, false, false), Some((2.0, 10.0)));
        // Up to four decades the ends are 1-2-5 values (all labelled); past that, powers of ten.
        assert_eq!(
            domain(&[0.2, 1500.0], true, false, false),
            Some((0.2, 2000.0))
        );
        assert_eq!(
            domain(&[0.2, 15_000.0], true, false, false),
            Some((0.1, 100_000.0))
        );
        // Non-positive values are dropped on a log axis; one value gets a span around it.
        assert_eq!(
            domain(&[0.0, -1.0, 40.0], true, false, false),
            Some((10.0, 200.0))
        );
        let (lo, hi) = domain(&[5.0, 5.0], false, false, true).unwrap();
        assert!(lo < 5.0 && hi > 5.0);
        let (lo, hi) = domain(&[0.0], false, true, true).unwrap();
        assert!(lo <= 0.0 && hi > 0.0);
        assert_eq!(domain(&[f64::NAN, f64::INFINITY], false, true, true), None);
        assert_eq!(domain(&[], true, false, true), None);
    }

    #[test]
    fn scales_map_linear_and_log() {
        let s = Scale {
            log: false,
            min: 0.0,
            max: 100.0,
            r0: 0.0,
            r1: 200.0,
            ticks: 5,
        };
        assert_eq!(s.map(50.0), Some(100.0));
        assert_eq!(s.map(f64::NAN), None);
        let l = Scale {
            log: true,
            min: 1.0,
            max: 1000.0,
            r0: 300.0,
            r1: 0.0,
            ticks: 5,
        };
        assert!((l.map(10.0).unwrap() - 200.0).abs() < 1e-9);
        assert_eq!(l.map(0.0), None);
        assert_eq!(l.map(-5.0), None);
    }

    #[test]
    fn tick_labels() {
        assert_eq!(fmt_tick(0.0), "0");
        assert_eq!(fmt_tick(2500.0), "2.5k");
        assert_eq!(fmt_tick(1000.0), "1k");
        assert_eq!(fmt_tick(25_000.0), "25k");
        assert_eq!(fmt_tick(1_500_000.0), "1.5M");
        assert_eq!(fmt_tick(0.25), "0.25");
        assert_eq!(fmt_tick(0.001), "0.001");
    }
}
