//! Live control: the load changed while it runs (the terminal view's keys, `--control-port`).
//!
//! One mechanism for every way in: a [`Steer`] shared by the run's presentation and its
//! engine. The engine binds it to the step in progress with the level that step follows (a
//! `plan::stages::Profile`: the ramp of `--stages`, or a flat one at the step's rate or users);
//! a change is a new profile equal to the old one up to the moment it takes effect and
//! different from then on. The workers follow the new profile as they follow a ramp: the open
//! loop's arrivals are the same global schedule mapped through the new integral (arrivals
//! before the change keep their intended times, those after are exact for the new rate,
//! constant or Poisson), the closed loop's users start and stop along it. A pause is the level
//! 0 from then on: no arrival is scheduled, so a paused second offers nothing and holds no
//! send lag; closed-loop users stop after their current request.
//!
//! A change takes effect [`LEAD`] after it is asked for: every worker looks at the steer at
//! least that often, so none has sent an arrival the change moved.
use crate::plan::stages::Profile;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long after it is asked for a change takes effect: over twice the longest a worker
/// sleeps without looking (its timeout scan, at most 100 ms).
pub const LEAD: Duration = Duration::from_millis(250);

/// Where a change came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    Keys,
    Port,
}

impl By {
    pub fn as_str(self) -> &'static str {
        match self {
            By::Keys => "keys",
            By::Port => "port",
        }
    }
}

/// What a change asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Change {
    /// The level to this (requests/s or users).
    To(f64),
    /// The level by this much (negative: lower).
    By(f64),
    /// One step up (`+`) or down (`-`): `--control-step`, or 10% of the level (at least 1).
    Step(bool),
    Pause,
    Resume,
}

/// What the level counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Open loop: requests/s.
    Rate,
    /// Closed loop: users.
    Users,
}

impl Unit {
    /// The event's `what` for a change of level.
    pub fn what(self) -> &'static str {
        match self {
            Unit::Rate => "rate",
            Unit::Users => "users",
        }
    }
}

/// The run's bounds on changes (`--control-step`, `--control-max`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Settings {
    /// The step of `+`/`-`; None: 10% of the level, at least 1.
    pub step: Option<f64>,
    /// The highest level a change may set; None: 10× the step's planned level (its peak).
    pub max: Option<f64>,
}

/// A change that took effect.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The step it happened in.
    pub step: usize,
    /// Seconds from the step's engine start (warm-up included) to when it took effect.
    pub at: f64,
    /// `rate`, `users`, `pause` or `resume`.
    pub what: &'static str,
    pub from: f64,
    pub to: f64,
    pub by: By,
}

/// What the level does from now on, besides what the profile says.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// The plan's own level (a ramp moves).
    Plan,
    /// Held at a level set by a change.
    Hold(f64),
}

/// The step in progress, while bound.
#[derive(Debug)]
struct Bound {
    step: usize,
    origin: Instant,
    unit: Unit,
    /// The plan's level over the step, and the one followed now (the plan, changed).
    plan: Arc<Profile>,
    now: Arc<Profile>,
    mode: Mode,
    /// Paused: the mode to resume.
    paused: Option<Mode>,
    max: f64,
    /// When the step's sending ends, seconds from its origin (no change past it).
    end: f64,
    /// The plan moves (`--stages`): a change takes over from it.
    ramp: bool,
}

/// Where a run's level stands, for the view's footer and `GET /TOKEN/state`.
#[derive(Debug, Clone, PartialEq)]
pub struct State {
    pub step: usize,
    pub unit: Unit,
    /// The level now (0 while paused).
    pub level: f64,
    pub paused: bool,
    /// A change took over from the plan (the ramp of `--stages` no longer leads).
    pub held: bool,
    pub ramp: bool,
    pub max: f64,
    /// The step of `+`/`-` at this level.
    pub step_size: f64,
    /// Changes so far, the whole run.
    pub changes: usize,
}

#[derive(Debug, Default)]
struct Inner {
    bound: Option<Bound>,
    /// Every change of the run, in order.
    log: Vec<Applied>,
    /// Why the step in progress cannot be steered (a replay), when bound but not steerable.
    refused: Option<&'static str>,
}

/// The channel from whoever steers the run to its engine.
#[derive(Debug, Default)]
pub struct Steer {
    settings: Settings,
    /// Bumped at each change: the workers' cue to take the new profile.
    version: AtomicU64,
    /// The index of the step the engine runs next (`Steer::step_starts`).
    next_step: AtomicU64,
    inner: Mutex<Inner>,
}

/// The most users live control may run: each is a connection slot the closed loop holds
/// from the step's start, so the cap is bounded whatever `--control-max` says.
pub const MAX_USERS: f64 = 100_000.0;

/// Far past any run's end: a run bounded by its request count holds its level this long.
const FOREVER: f64 = 1e9;

impl Steer {
    pub fn new(settings: Settings) -> Arc<Steer> {
        Arc::new(Steer {
            settings,
            ..Steer::default()
        })
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The runner names the step it runs next (its changes are recorded under it).
    pub fn step_starts(&self, step: usize) {
        self.next_step.store(step as u64, Ordering::Relaxed);
    }

    /// The engine starts the step at `origin`: its level is `plan` (None: flat at `level`
    /// until `end`, seconds from the origin, or for ever). Returns the cap of its changes.
    pub(crate) fn bind(
        &self,
        origin: Instant,
        unit: Unit,
        level: f64,
        plan: Option<Arc<Profile>>,
        end: Option<f64>,
    ) -> f64 {
        let ramp = plan.is_some();
        let end = end.unwrap_or(FOREVER);
        let plan =
            plan.unwrap_or_else(|| Arc::new(Profile::from_points(&[(0.0, level), (end, level)])));
        let peak = plan.peak().max(level);
        let mut max = self.settings.max.unwrap_or(10.0 * peak).max(peak);
        if unit == Unit::Users {
            max = max.min(MAX_USERS.max(peak)).floor();
        }
        let step = self.next_step.load(Ordering::Relaxed) as usize;
        let mut g = self.inner();
        g.refused = None;
        g.bound = Some(Bound {
            step,
            origin,
            unit,
            now: Arc::clone(&plan),
            plan,
            mode: Mode::Plan,
            paused: None,
            max,
            end,
            ramp,
        });
        self.version.fetch_add(1, Ordering::Release);
        max
    }

    /// The step in progress cannot be steered (`why`, said to whoever tries).
    pub(crate) fn refuse(&self, why: &'static str) {
        let mut g = self.inner();
        g.bound = None;
        g.refused = Some(why);
    }

    /// The step ended: its level as it ran, when a change moved it (None: as planned).
    pub(crate) fn unbind(&self) -> Option<Arc<Profile>> {
        let mut g = self.inner();
        g.refused = None;
        let b = g.bound.take()?;
        let steered = g.log.iter().any(|a| a.step == b.step);
        steered.then_some(b.now)
    }

    /// The version the workers last took; a new one means a new profile.
    #[inline]
    pub(crate) fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// The level the step in progress follows now.
    pub fn profile(&self) -> Option<Arc<Profile>> {
        self.inner().bound.as_ref().map(|b| Arc::clone(&b.now))
    }

    /// A change moved the step in progress.
    pub fn steered(&self) -> bool {
        let g = self.inner();
        g.bound
            .as_ref()
            .is_some_and(|b| g.log.iter().any(|a| a.step == b.step))
    }

    /// Every change of the run so far.
    pub fn log(&self) -> Vec<Applied> {
        self.inner().log.clone()
    }

    /// The changes of step `step`.
    pub fn changes_of(&self, step: usize) -> Vec<Applied> {
        self.inner()
            .log
            .iter()
            .filter(|a| a.step == step)
            .cloned()
            .collect()
    }

    /// Where the level stands (None between steps).
    pub fn state(&self) -> Option<State> {
        let g = self.inner();
        let b = g.bound.as_ref()?;
        let t = b.origin.elapsed().as_secs_f64();
        let level = b.now.level(t);
        Some(State {
            step: b.step,
            unit: b.unit,
            level,
            paused: b.paused.is_some(),
            held: b.ramp && b.mode != Mode::Plan,
            ramp: b.ramp,
            max: b.max,
            step_size: self.step_at(b, t),
            changes: g.log.len(),
        })
    }

    /// The step of `+`/`-` at the level the step holds at `t`.
    fn step_at(&self, b: &Bound, t: f64) -> f64 {
        let level = match b.paused {
            Some(Mode::Hold(l)) => l,
            Some(Mode::Plan) => b.plan.level(t),
            None => b.now.level(t),
        };
        self.settings.step.unwrap_or((level * 0.1).round().max(1.0))
    }

    /// Asks for a change now; it takes effect [`LEAD`] later. Refused, with the reason, when
    /// no step is in progress, the step cannot be steered, or the level would pass the cap.
    pub fn apply(&self, change: Change, by: By) -> Result<Applied, String> {
        self.apply_at(change, by, Instant::now())
    }

    /// [`Steer::apply`] at `now` (scripted clocks in tests).
    pub fn apply_at(&self, change: Change, by: By, now: Instant) -> Result<Applied, String> {
        let mut g = self.inner();
        if let Some(why) = g.refused {
            return Err(why.to_string());
        }
        let step_size = match g.bound.as_ref() {
            Some(b) => self.step_at(b, now.saturating_duration_since(b.origin).as_secs_f64()),
            None => return Err("no step in progress (between steps, or the run ended)".into()),
        };
        let b = g.bound.as_mut().expect("checked above");
        let at = now.saturating_duration_since(b.origin).as_secs_f64() + LEAD.as_secs_f64();
        if at >= b.end {
            return Err("the step is ending: nothing left to change".into());
        }
        let before = b.now.level(at);
        let unit = b.unit;
        let (what, from, to, mode, paused) = match change {
            Change::Pause => {
                if b.paused.is_some() {
                    return Err("already paused".into());
                }
                ("pause", before, 0.0, Mode::Hold(0.0), Some(b.mode))
            }
            Change::Resume => {
                let Some(m) = b.paused else {
                    return Err("not paused".into());
                };
                let to = match m {
                    Mode::Hold(l) => l,
                    Mode::Plan => b.plan.level(at),
                };
                ("resume", 0.0, to, m, None)
            }
            _ if b.paused.is_some() => {
                return Err("paused: resume first (p, or /resume)".into());
            }
            Change::To(_) | Change::By(_) | Change::Step(_) => {
                let to = match change {
                    Change::To(v) => v,
                    Change::By(d) => before + d,
                    Change::Step(true) => before + step_size,
                    // A step down stops at 0 (a pause that `+` undoes).
                    _ => (before - step_size).max(0.0),
                };
                let to = if unit == Unit::Users { to.round() } else { to };
                if !to.is_finite() || to < 0.0 {
                    return Err(format!("{} {}: below 0", unit.what(), fmt(to)));
                }
                if to > b.max {
                    return Err(format!(
                        "{} {} is above the cap of {} (--control-max)",
                        unit.what(),
                        fmt(to),
                        fmt(b.max)
                    ));
                }
                if to == before {
                    return Err(format!("{} is already {}", unit.what(), fmt(to)));
                }
                (unit.what(), before, to, Mode::Hold(to), None)
            }
        };
        let tail = match mode {
            Mode::Plan => b.plan.tail_from(at),
            Mode::Hold(l) => vec![(at, l), (b.end, l)],
        };
        b.now = Arc::new(b.now.splice(at, &tail));
        b.mode = mode;
        b.paused = paused;
        let applied = Applied {
            step: b.step,
            at,
            what,
            from,
            to,
            by,
        };
        g.log.push(applied.clone());
        self.version.fetch_add(1, Ordering::Release);
        Ok(applied)
    }
}

/// A level as said in a refusal: whole when it is, else one decimal.
fn fmt(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::pacing::{Arrival, Schedule};
    use crate::plan::segment::Segment;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    /// A lane's arrivals before `until`, as seconds from the origin; the lane follows the
    /// steer's profile whenever its version moved (as a worker's loop does).
    fn arrivals(s: &mut Schedule, t0: Instant, until: f64) -> Vec<f64> {
        let mut out = Vec::new();
        loop {
            let t = s.next().duration_since(t0).as_secs_f64();
            if t >= until {
                return out;
            }
            out.push(t);
            s.advance();
        }
    }

    fn open_steer(t0: Instant, rate: f64) -> Arc<Steer> {
        let st = Steer::new(Settings::default());
        st.bind(t0, Unit::Rate, rate, None, Some(20.0));
        st
    }

    fn count(ts: &[f64], a: f64, b: f64) -> usize {
        ts.iter().filter(|&&t| t >= a && t < b).count()
    }

    /// Raised from 100 to 300 req/s at 2 s (in effect at 2.25 s): the arrivals before the
    /// change are the unsteered schedule's, to the nanosecond; after it they are 1/300 s
    /// apart, and each second holds its integral (within one arrival).
    #[test]
    fn a_raise_keeps_the_arrivals_before_it_and_paces_exactly_after() {
        let t0 = Instant::now();
        let lane = Segment::WHOLE.lane(0, 1);
        let plain: Vec<f64> = {
            let mut s = Schedule::new(t0, 100.0, Arrival::Constant, lane, 1);
            arrivals(&mut s, t0, 2.25)
        };
        let st = open_steer(t0, 100.0);
        let mut s = Schedule::new(t0, 100.0, Arrival::Constant, lane, 1);
        let before = arrivals(&mut s, t0, 1.0);
        let a = st
            .apply_at(Change::To(300.0), By::Keys, t0 + secs(2.0))
            .unwrap();
        assert_eq!(
            (a.what, a.from, a.to, a.by),
            ("rate", 100.0, 300.0, By::Keys)
        );
        assert!((a.at - 2.25).abs() < 1e-9, "{}", a.at);
        s.follow(st.profile().unwrap());
        let mut all = before;
        all.extend(arrivals(&mut s, t0, 6.0));
        let (old, new): (Vec<f64>, Vec<f64>) = all.iter().partition(|&&t| t < 2.25);
        assert_eq!(old.len(), plain.len());
        for (a, b) in old.iter().zip(&plain) {
            assert!((a - b).abs() < 1e-9, "{a} vs {b}");
        }
        for w in new.windows(2) {
            assert!((w[1] - w[0] - 1.0 / 300.0).abs() < 1e-6, "{w:?}");
        }
        assert!((count(&all, 1.0, 2.0) as i64 - 100).abs() <= 1);
        assert!((count(&all, 2.0, 3.0) as i64 - (25 + 225)).abs() <= 1);
        assert!((count(&all, 3.0, 4.0) as i64 - 300).abs() <= 1);
        assert_eq!(st.changes_of(0), vec![a]);
    }

    /// Poisson: the draws before the change are the unsteered schedule's, and after a raise
    /// to 2,000/s the mean rate over 10 s is within 3% of it.
    #[test]
    fn poisson_stays_exact_across_a_change() {
        let t0 = Instant::now();
        let lane = Segment::WHOLE.lane(0, 1);
        let plain = arrivals(
            &mut Schedule::new(t0, 500.0, Arrival::Poisson, lane, 7),
            t0,
            1.25,
        );
        let st = open_steer(t0, 500.0);
        let mut s = Schedule::new(t0, 500.0, Arrival::Poisson, lane, 7);
        let mut all = arrivals(&mut s, t0, 0.5);
        st.apply_at(Change::To(2000.0), By::Port, t0 + secs(1.0))
            .unwrap();
        s.follow(st.profile().unwrap());
        all.extend(arrivals(&mut s, t0, 11.25));
        let old: Vec<f64> = all.iter().copied().filter(|&t| t < 1.25).collect();
        assert_eq!(old.len(), plain.len());
        for (a, b) in old.iter().zip(&plain) {
            assert!((a - b).abs() < 1e-6, "{a} vs {b}");
        }
        let n = count(&all, 1.25, 11.25) as f64;
        assert!((n / 10.0 - 2000.0).abs() < 60.0, "{n}");
    }

    /// Lanes of threads that each follow the change (at different moments before it takes
    /// effect) reassemble into the one-thread steered schedule.
    #[test]
    fn steered_lanes_partition_the_arrivals() {
        let t0 = Instant::now();
        for arrival in [Arrival::Constant, Arrival::Poisson] {
            let whole = {
                let st = open_steer(t0, 400.0);
                let mut s = Schedule::new(t0, 400.0, arrival, Segment::WHOLE.lane(0, 1), 3);
                let mut a = arrivals(&mut s, t0, 1.0);
                st.apply_at(Change::By(-150.0), By::Keys, t0 + secs(1.0))
                    .unwrap();
                s.follow(st.profile().unwrap());
                a.extend(arrivals(&mut s, t0, 4.0));
                a
            };
            let st = open_steer(t0, 400.0);
            let mut lanes: Vec<Schedule> = (0..3)
                .map(|k| Schedule::new(t0, 400.0, arrival, Segment::WHOLE.lane(k, 3), 3))
                .collect();
            let mut all = Vec::new();
            for (k, s) in lanes.iter_mut().enumerate() {
                // Each thread got as far as its own moment before the change.
                all.extend(arrivals(s, t0, 0.9 + 0.1 * k as f64));
            }
            st.apply_at(Change::By(-150.0), By::Keys, t0 + secs(1.0))
                .unwrap();
            for s in &mut lanes {
                s.follow(st.profile().unwrap());
                all.extend(arrivals(s, t0, 4.0));
            }
            all.sort_by(f64::total_cmp);
            assert_eq!(all.len(), whole.len(), "{arrival:?}");
            for (a, b) in all.iter().zip(&whole) {
                assert!((a - b).abs() < 1e-6, "{arrival:?}: {a} vs {b}");
            }
        }
    }

    /// A pause schedules nothing until the resume: no arrival is intended inside it (a paused
    /// second offers no load and, its arrivals never due, holds no send lag); the resume
    /// goes on at the level paused.
    #[test]
    fn a_pause_schedules_nothing_and_the_resume_goes_on() {
        let t0 = Instant::now();
        let st = open_steer(t0, 200.0);
        let mut s = Schedule::new(t0, 200.0, Arrival::Constant, Segment::WHOLE.lane(0, 1), 1);
        let mut all = arrivals(&mut s, t0, 1.0);
        let p = st
            .apply_at(Change::Pause, By::Keys, t0 + secs(1.75))
            .unwrap();
        assert_eq!((p.what, p.from, p.to), ("pause", 200.0, 0.0));
        s.follow(st.profile().unwrap());
        assert!(st.state().unwrap().paused);
        assert!(st
            .apply_at(Change::Step(true), By::Keys, t0 + secs(2.0))
            .unwrap_err()
            .contains("resume first"));
        // Resumed at 3.75 s: in effect at 4 s.
        let r = st
            .apply_at(Change::Resume, By::Keys, t0 + secs(3.75))
            .unwrap();
        assert_eq!((r.what, r.from, r.to), ("resume", 0.0, 200.0));
        s.follow(st.profile().unwrap());
        all.extend(arrivals(&mut s, t0, 6.0));
        assert_eq!(count(&all, 2.0, 4.0), 0, "nothing intended while paused");
        assert_eq!(count(&all, 1.0, 2.0), 200);
        assert_eq!(count(&all, 4.0, 6.0), 400);
        // The first arrival after the pause is intended when the resume took effect: a
        // sender that wakes then is not behind.
        let first = all.iter().copied().find(|&t| t >= 2.0).unwrap();
        assert!((first - 4.0).abs() < 1e-2, "{first}");
        assert!(st
            .apply_at(Change::Resume, By::Keys, t0 + secs(5.0))
            .is_err());
    }

    /// Steps, the cap and what is refused, with the reason; a refusal changes nothing.
    #[test]
    fn steps_caps_and_refusals() {
        let t0 = Instant::now();
        let st = Steer::new(Settings::default());
        assert!(st
            .apply_at(Change::Step(true), By::Keys, t0)
            .unwrap_err()
            .contains("no step in progress"));
        st.bind(t0, Unit::Rate, 50.0, None, Some(10.0));
        // 10% of 50, at least 1: 5.
        let up = st.apply_at(Change::Step(true), By::Keys, t0).unwrap();
        assert_eq!((up.from, up.to), (50.0, 55.0));
        let e = st
            .apply_at(Change::To(501.0), By::Port, t0 + secs(1.0))
            .unwrap_err();
        assert!(e.contains("above the cap of 500"), "{e}");
        assert!(st
            .apply_at(Change::By(-100.0), By::Port, t0 + secs(1.0))
            .unwrap_err()
            .contains("below 0"));
        assert!(st
            .apply_at(Change::To(55.0), By::Port, t0 + secs(1.0))
            .unwrap_err()
            .contains("already 55"));
        assert!(st
            .apply_at(Change::To(60.0), By::Port, t0 + secs(9.9))
            .unwrap_err()
            .contains("ending"));
        assert_eq!(st.log().len(), 1, "refusals change nothing");
        // --control-step and --control-max, on users.
        let st = Steer::new(Settings {
            step: Some(3.0),
            max: Some(20.0),
        });
        st.bind(t0, Unit::Users, 4.0, None, None);
        let a = st.apply_at(Change::Step(false), By::Keys, t0).unwrap();
        assert_eq!((a.what, a.to), ("users", 1.0));
        let b = st.apply_at(Change::By(2.4), By::Port, t0).unwrap();
        assert_eq!(b.to, 3.0, "users are whole");
        assert!(st.apply_at(Change::To(21.0), By::Port, t0).is_err());
        assert_eq!(st.profile().unwrap().level(1.0), 3.0);
        // Unbound: the step's level as it ran, since a change moved it.
        assert!(st.unbind().is_some());
        assert!(st.state().is_none());
        st.refuse("a replay follows its recorded clock");
        assert!(st
            .apply_at(Change::Pause, By::Keys, t0)
            .unwrap_err()
            .contains("replay"));
    }

    /// On `--stages`, a change takes over from the ramp (the level holds where it was put);
    /// a pause and resume of a ramp not changed before goes on along the ramp.
    #[test]
    fn on_a_ramp_a_change_takes_over() {
        let t0 = Instant::now();
        let ramp = Arc::new(Profile::from_points(&[(0.0, 0.0), (10.0, 1000.0)]));
        let st = Steer::new(Settings::default());
        st.bind(t0, Unit::Rate, 1000.0, Some(Arc::clone(&ramp)), Some(10.0));
        let s = st.state().unwrap();
        assert!(s.ramp && !s.held);
        st.apply_at(Change::Pause, By::Keys, t0 + secs(1.75))
            .unwrap();
        st.apply_at(Change::Resume, By::Keys, t0 + secs(3.75))
            .unwrap();
        let p = st.profile().unwrap();
        assert_eq!(p.level(3.0), 0.0);
        assert!((p.level(6.0) - 600.0).abs() < 1e-6, "back on the ramp");
        st.apply_at(Change::To(250.0), By::Keys, t0 + secs(6.75))
            .unwrap();
        let p = st.profile().unwrap();
        assert_eq!(p.level(8.0), 250.0, "held, not ramping");
        assert!(st.state().unwrap().held);
    }
}
