//! Stages: load that moves (`--stages '30s:100, 2m:2000, 1m:2000, 30s:0'`). Each stage ramps
//! the level linearly from where the previous one ended (0 before the first) to its target
//! over its duration; a `0s` stage jumps. The level is a rate (open loop: requests/s) or a
//! number of users (closed loop).
//!
//! [`Profile`] is the level as a function of time, r(t), piecewise linear, with its integral
//! Λ(t) (the arrivals due by t) and Λ's inverse in closed form per piece: the schedule's k-th
//! arrival is due when Λ(t) = k (pacing.rs), so arrivals stay exact on a moving rate.
use crate::units::{fmt_duration, fmt_num, parse_duration, MAX_RATE};
use std::fmt;
use std::time::Duration;

/// One stage: ramp linearly to `target` over `duration`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    pub duration: Duration,
    pub target: f64,
}

/// The stages of a run, as given.
#[derive(Debug, Clone, PartialEq)]
pub struct Stages(pub Vec<Stage>);

/// The most stages a plan holds: far beyond any hand-written ramp, small enough to scan.
pub const MAX_STAGES: usize = 1000;

impl Stages {
    /// Parses `DURATION:TARGET[, DURATION:TARGET…]`. An error names the stage (1-based, with
    /// its text) and what is wrong with it.
    pub fn parse(s: &str) -> Result<Stages, String> {
        let parts: Vec<&str> = s.split(',').map(str::trim).collect();
        if parts.iter().all(|p| p.is_empty()) {
            return Err("no stage given (expected e.g. '30s:100, 1m:2000, 30s:0')".to_string());
        }
        if parts.len() > MAX_STAGES {
            return Err(format!(
                "{} stages: at most {MAX_STAGES} are supported",
                parts.len()
            ));
        }
        let mut stages = Vec::with_capacity(parts.len());
        for (i, p) in parts.iter().enumerate() {
            let at = |what: String| format!("stage {} '{p}': {what}", i + 1);
            if p.is_empty() {
                return Err(at("empty (a stray comma?)".to_string()));
            }
            let Some((d, t)) = p.split_once(':') else {
                return Err(at(
                    "expected DURATION:TARGET, e.g. 30s:100 (ramp to 100 over 30 s)".to_string(),
                ));
            };
            let duration = parse_duration(d.trim()).map_err(at)?;
            let target = parse_target(t.trim()).map_err(at)?;
            stages.push(Stage { duration, target });
        }
        let st = Stages(stages);
        if st.duration().is_zero() {
            return Err("every stage lasts 0s: give at least one stage a duration".to_string());
        }
        if st.peak() <= 0.0 {
            return Err("every target is 0: no load would be sent".to_string());
        }
        Ok(st)
    }

    /// The sum of the stages: the run's measured length.
    pub fn duration(&self) -> Duration {
        self.0.iter().map(|s| s.duration).sum()
    }

    /// The highest level reached.
    pub fn peak(&self) -> f64 {
        self.0.iter().map(|s| s.target).fold(0.0, f64::max)
    }

    /// The closed loop's users are whole: the first stage whose target is not, as an error.
    pub fn check_users(&self) -> Result<(), String> {
        match self.0.iter().position(|s| s.target.fract() != 0.0) {
            Some(i) => Err(format!(
                "stage {} '{}': users are whole, not {}",
                i + 1,
                fmt_stage(&self.0[i]),
                fmt_num(self.0[i].target)
            )),
            None => Ok(()),
        }
    }

    /// The level over time, `hold` (the warm-up) first at the level the stages start from.
    pub fn profile(&self, hold: Duration) -> Profile {
        // The level after the leading jumps (0s stages): what the warm-up holds.
        let start = self
            .0
            .iter()
            .take_while(|s| s.duration.is_zero())
            .last()
            .map_or(0.0, |s| s.target);
        let mut points = vec![(0.0, start)];
        let mut t = hold.as_secs_f64();
        if t > 0.0 {
            points.push((t, start));
        }
        let mut level = 0.0;
        for s in &self.0 {
            if s.duration.is_zero() {
                level = s.target;
                points.push((t, level));
                continue;
            }
            points.push((t, level));
            t += s.duration.as_secs_f64();
            level = s.target;
            points.push((t, level));
        }
        Profile::from_points(&points)
    }
}

fn parse_target(t: &str) -> Result<f64, String> {
    let (num, mult) = if let Some(n) = t.strip_suffix(['k', 'K']) {
        (n, 1e3)
    } else if let Some(n) = t.strip_suffix('M') {
        (n, 1e6)
    } else {
        (t, 1.0)
    };
    let v = num
        .parse::<f64>()
        .map(|v| v * mult)
        .map_err(|_| format!("the target '{t}' is not a number (e.g. 100, 1.5k)"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("the target '{t}' must be 0 or more"));
    }
    if v > MAX_RATE {
        return Err(format!(
            "the target '{t}' is above the supported {}",
            crate::units::fmt_si(MAX_RATE)
        ));
    }
    Ok(v)
}

fn fmt_stage(s: &Stage) -> String {
    let d = if s.duration.is_zero() {
        "0s".to_string()
    } else {
        fmt_duration(s.duration)
    };
    format!("{d}:{}", fmt_num(s.target))
}

/// As typed: `30s:100, 2m:2000`; parses back.
impl fmt::Display for Stages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.0.iter().map(fmt_stage).collect();
        f.write_str(&parts.join(", "))
    }
}

/// One linear piece of a profile: from `t0` for `dt` seconds, the level goes from `r0` to
/// `r1`; `cum0` is the integral of the level before it.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Piece {
    t0: f64,
    dt: f64,
    r0: f64,
    r1: f64,
    cum0: f64,
}

impl Piece {
    fn area(&self) -> f64 {
        (self.r0 + self.r1) * 0.5 * self.dt
    }

    fn level(&self, tau: f64) -> f64 {
        self.r0 + (self.r1 - self.r0) * (tau / self.dt)
    }

    fn integral(&self, tau: f64) -> f64 {
        let tau = tau.clamp(0.0, self.dt);
        (self.r0 + self.level(tau)) * 0.5 * tau
    }

    /// The τ in the piece where the integral from its start reaches `y` (0 ≤ y ≤ area): the
    /// root of r0·τ + a·τ²/2 = y, written 2y / (r0 + √(r0² + 2ay)) so that it stays exact
    /// when the slope a is tiny or negative.
    fn solve(&self, y: f64) -> f64 {
        if y <= 0.0 {
            return 0.0;
        }
        let a = (self.r1 - self.r0) / self.dt;
        let disc = (self.r0 * self.r0 + 2.0 * a * y).max(0.0);
        let den = self.r0 + disc.sqrt();
        if den <= 0.0 {
            return self.dt;
        }
        (2.0 * y / den).clamp(0.0, self.dt)
    }
}

/// The level as a piecewise linear function of time (seconds from the origin), 0 past its end.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pieces: Vec<Piece>,
    end: f64,
}

impl Profile {
    /// Through the points `(t, level)`, in time order; equal times make a jump.
    pub fn from_points(points: &[(f64, f64)]) -> Profile {
        let mut pieces = Vec::with_capacity(points.len());
        let mut cum = 0.0;
        for w in points.windows(2) {
            let ((t0, r0), (t1, r1)) = (w[0], w[1]);
            let dt = t1 - t0;
            if dt <= 0.0 {
                continue;
            }
            let p = Piece {
                t0,
                dt,
                r0,
                r1,
                cum0: cum,
            };
            cum += p.area();
            pieces.push(p);
        }
        let end = points.last().map_or(0.0, |p| p.0);
        Profile { pieces, end }
    }

    /// When the profile ends, seconds from the origin.
    pub fn end(&self) -> f64 {
        self.end
    }

    /// The piece holding `t` (the last one starting at or before it).
    fn at(&self, t: f64) -> Option<&Piece> {
        let i = self.pieces.partition_point(|p| p.t0 <= t);
        i.checked_sub(1).map(|i| &self.pieces[i])
    }

    /// The level at `t` (right after a jump at `t`).
    pub fn level(&self, t: f64) -> f64 {
        match self.at(t) {
            Some(p) if t < p.t0 + p.dt => p.level(t - p.t0),
            _ => 0.0,
        }
    }

    /// The highest level.
    pub fn peak(&self) -> f64 {
        self.pieces
            .iter()
            .map(|p| p.r0.max(p.r1))
            .fold(0.0, f64::max)
    }

    /// Λ(t): the integral of the level from the origin to `t` (the arrivals due by then).
    pub fn integral(&self, t: f64) -> f64 {
        match self.at(t) {
            Some(p) => p.cum0 + p.integral(t - p.t0),
            None => 0.0,
        }
    }

    /// The mean level over `[t0, t1)`: a second's offered load.
    pub fn mean(&self, t0: f64, t1: f64) -> f64 {
        if t1 <= t0 {
            return self.level(t0);
        }
        (self.integral(t1) - self.integral(t0)) / (t1 - t0)
    }

    /// This profile up to `at`, then `tail` (points from `at` on, in time order): the level
    /// changed from `at` on, its integral before `at` untouched, so every arrival due before
    /// `at` stays where it was (a live change, `engine::steer`).
    pub fn splice(&self, at: f64, tail: &[(f64, f64)]) -> Profile {
        let mut points = vec![(0.0, self.level(0.0))];
        for p in &self.pieces {
            if p.t0 >= at {
                break;
            }
            let t1 = (p.t0 + p.dt).min(at);
            points.push((p.t0, p.r0));
            points.push((t1, p.level(t1 - p.t0)));
        }
        points.extend_from_slice(tail);
        Profile::from_points(&points)
    }

    /// The profile's own points from `at` on (its level at `at` first): what a level that
    /// follows the plan again goes on with.
    pub fn tail_from(&self, at: f64) -> Vec<(f64, f64)> {
        let mut points = vec![(at, self.level(at))];
        for p in &self.pieces {
            let t1 = p.t0 + p.dt;
            if t1 <= at {
                continue;
            }
            let s = p.t0.max(at);
            points.push((s, p.level(s - p.t0)));
            points.push((t1, p.r1));
        }
        points
    }

    /// The first time at which Λ reaches `x` inside a piece with load (a piece at level 0
    /// holds no arrival); None past the end. `cursor` is the piece to search from, moved
    /// forward: callers asking for growing `x` pay O(1) per call.
    pub fn inverse(&self, x: f64, cursor: &mut usize) -> Option<f64> {
        while let Some(p) = self.pieces.get(*cursor) {
            let area = p.area();
            if x < p.cum0 + area && area > 0.0 {
                return Some(p.t0 + p.solve(x - p.cum0));
            }
            *cursor += 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn parses_the_issue_example_and_prints_it_back() {
        let s = Stages::parse("30s:100, 2m:2000, 1m:2000, 30s:0").unwrap();
        assert_eq!(s.0.len(), 4);
        assert_eq!(s.0[1].duration, secs(120));
        assert_eq!(s.0[1].target, 2000.0);
        assert_eq!(s.duration(), secs(240));
        assert_eq!(s.peak(), 2000.0);
        assert_eq!(Stages::parse(&s.to_string()).unwrap(), s);
        assert_eq!(Stages::parse("0s:50,12s:1.5k").unwrap().0[1].target, 1500.0);
    }

    #[test]
    fn errors_name_the_stage_and_what_is_wrong() {
        let e = |s: &str| Stages::parse(s).unwrap_err();
        assert!(e("30s:100, 2m").starts_with("stage 2 '2m': expected DURATION:TARGET"));
        assert!(
            e("30s:100, 2x:5").starts_with("stage 2 '2x:5': "),
            "{}",
            e("30s:100, 2x:5")
        );
        assert!(e("30s:abc").contains("stage 1 '30s:abc': the target 'abc' is not a number"));
        assert!(e("30s:-5").contains("must be 0 or more"));
        assert!(e("10s:5,,10s:0").starts_with("stage 2 '': empty"));
        assert!(e("").starts_with("no stage given"));
        assert!(e("0s:100").contains("every stage lasts 0s"));
        assert!(e("10s:0, 5s:0").contains("every target is 0"));
        assert!(e("1s:20M").contains("above the supported"));
        let u = Stages::parse("10s:2.5").unwrap().check_users().unwrap_err();
        assert_eq!(u, "stage 1 '10s:2.5': users are whole, not 2.5");
    }

    #[test]
    fn profile_ramps_holds_and_jumps() {
        // Warm-up of 2 s at 50 (after the 0s jump), then 50→150 over 10 s, hold 10 s.
        let p = Stages::parse("0s:50, 10s:150, 10s:150")
            .unwrap()
            .profile(secs(2));
        assert_eq!(p.level(1.0), 50.0);
        assert_eq!(p.level(2.0), 50.0);
        assert!((p.level(7.0) - 100.0).abs() < 1e-9);
        assert_eq!(p.level(15.0), 150.0);
        assert_eq!(p.level(22.0), 0.0);
        assert_eq!(p.end(), 22.0);
        // 2 × 50 + (50 + 150) / 2 × 10 + 150 × 10.
        assert!((p.integral(22.0) - 2600.0).abs() < 1e-9);
        assert!((p.mean(2.0, 12.0) - 100.0).abs() < 1e-9);
        assert_eq!(p.peak(), 150.0);
    }

    /// The inverse lands where the integral reaches each count, on rising, falling and flat
    /// pieces, and skips a piece at level 0.
    #[test]
    fn inverse_is_the_integrals_inverse() {
        let p = Profile::from_points(&[
            (0.0, 0.0),
            (4.0, 100.0),
            (6.0, 100.0),
            (8.0, 10.0),
            (8.0, 0.0),
            (10.0, 0.0),
            (10.0, 30.0),
            (11.0, 30.0),
        ]);
        let total = p.integral(p.end());
        let mut cursor = 0;
        let mut k = 0.0;
        while let Some(t) = p.inverse(k, &mut cursor) {
            assert!((p.integral(t) - k).abs() < 1e-6, "k {k} at {t}");
            assert!(
                !(8.0..10.0).contains(&t) || t == 8.0,
                "an arrival at level 0: {t}"
            );
            k += 1.0;
        }
        assert_eq!(k, total.ceil());
    }
}
