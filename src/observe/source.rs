//! The observation-source seam. A source is one thing a host's sampler reads each tick: the
//! host's /proc (`proc.rs`), the `--watch` groups (`groups.rs`), the watched port's TCP
//! (`net.rs`), a PHP-FPM status page, the embedded target's `/pool-status` included
//! (`fpm.rs`), Apache's mod_status (`apache.rs`), a MariaDB server (`mariadb.rs`), and the
//! sampling process itself (`proc.rs`).
//!
//! Two halves, because samples outlive the sources that took them (a results folder is read
//! back long after the run, an agent's samples arrive over the wire):
//! - [`Source`]: the live reader, which keeps what its rates need between ticks and fills
//!   its part of a [`Sample`]; the sampler iterates them.
//! - [`Kind`]: what is done with stored samples of that kind: a step's samples boiled down
//!   into its part of a [`SourceObservation`], one second's into a [`SecondObservation`],
//!   and the flag that adds it. [`KINDS`] lists them; `summary` iterates it.
//!
//! Bottleneck evidence: a kind that sees worker pools offers them as [`Pool`]s (`Kind::pools`),
//! and the worker-pool candidate weighs every pool of every kind, so a new pool source needs
//! no change to the verdict. The other candidates are the analysis floor's
//! (`analysis/bottleneck/candidates.rs`: observe may not import it); each names the kinds
//! that observe it, so the verdict's "not observed" line is these kinds' flags.
use std::time::Duration;

use super::sample::Sample;
use super::summary::{SecondObservation, SourceObservation};

/// What a source is handed at each tick.
pub struct Tick<'a> {
    /// Seconds since the previous tick: the interval rates and deltas cover.
    pub secs: f64,
    /// Time allowed to one request (a status page, a query).
    pub timeout: Duration,
    /// The sampler's read buffer, reused: /proc/net/tcp can be megabytes under TIME_WAIT
    /// floods.
    buf: &'a mut String,
}

impl<'a> Tick<'a> {
    pub fn new(secs: f64, timeout: Duration, buf: &'a mut String) -> Tick<'a> {
        Tick { secs, timeout, buf }
    }

    /// A whole /proc file into the shared buffer; None if it cannot be read.
    pub fn read(&mut self, path: &str) -> Option<&str> {
        use std::io::Read;
        self.buf.clear();
        let mut f = std::fs::File::open(path).ok()?;
        f.read_to_string(self.buf).ok()?;
        Some(self.buf)
    }
}

/// A live source: reads once per tick and fills its part of the sample.
pub trait Source: Send {
    fn sample(&mut self, tick: &mut Tick, into: &mut Sample);
}

/// What is done with stored samples of one kind of source.
pub struct Kind {
    /// What the source is (`host`, `fpm`, ...): the name the candidates use.
    pub name: &'static str,
    /// The flag that adds it (or what it needs, for the always-on ones).
    pub flag: &'static str,
    /// One host's samples of one step → this kind's fields of that host's summary.
    pub summarise: fn(&[&Sample], &mut SourceObservation),
    /// One sample of the server's host → this kind's fields of the second; with several
    /// samples in a second, levels take the last and counters add up.
    pub second: fn(&Sample, &mut SecondObservation),
    /// The worker pools this kind saw in one host's step, for the worker-pool candidate of
    /// the bottleneck verdict; None for a kind that sees no pool.
    pub pools: Option<fn(&SourceObservation) -> Vec<Pool>>,
}

/// One worker pool over one step, as its source saw it: the evidence the worker-pool
/// candidate weighs, whichever server the pool belongs to.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Pool {
    /// What its workers are called in the verdict ("workers", "Apache workers").
    pub workers: &'static str,
    /// The most workers busy at once.
    pub busy: f64,
    /// The pool's size: the most workers it had, or could spawn.
    pub size: f64,
    /// At its limit at the step's busiest sample: every worker busy and requests waiting for
    /// one (or its cap hit), or no room left to spawn another. One sample may be noise.
    pub full_at_peak: bool,
    /// At its limit for most of the step (FPM: busy on average 95% of its workers), so not
    /// one sample's noise (`summary::pool_at_limit_from` weighs the two).
    pub full_most_of_step: bool,
    /// The most requests waiting for a worker (0 where the source cannot see a queue).
    pub queue: f64,
    /// Times the pool's cap was hit during the step (FPM's max children reached).
    pub cap_hits: u64,
    /// Reads of its status that failed during the step.
    pub failed_reads: u64,
}

/// Every pool of one host's step, from every kind that sees pools.
pub fn pools(o: &SourceObservation) -> impl Iterator<Item = Pool> + '_ {
    KINDS.iter().filter_map(|k| k.pools).flat_map(move |f| f(o))
}

/// Every kind, in the order its fields are summarised.
pub const KINDS: &[&Kind] = &[
    &super::proc::HOST,
    &super::groups::KIND,
    &super::fpm::KIND,
    &super::net::KIND,
    &super::apache::KIND,
    &super::mariadb::KIND,
];

/// The kind called `name`; the candidates of the verdict name theirs.
pub fn kind(name: &str) -> Option<&'static Kind> {
    KINDS.iter().copied().find(|k| k.name == name)
}

/// The kinds that see worker pools, by name.
pub fn pool_kinds() -> Vec<&'static str> {
    KINDS
        .iter()
        .filter(|k| k.pools.is_some())
        .map(|k| k.name)
        .collect()
}

/// A kind whose samples have nothing to add to a second.
pub fn no_second(_: &Sample, _: &mut SecondObservation) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_named_once_and_summarise_nothing_from_nothing() {
        for (i, k) in KINDS.iter().enumerate() {
            assert!(
                KINDS[..i].iter().all(|o| o.name != k.name),
                "{} twice",
                k.name
            );
            assert!(!k.flag.is_empty(), "{}", k.name);
            let mut o = SourceObservation::default();
            (k.summarise)(&[], &mut o);
            assert_eq!(o, SourceObservation::default(), "{}", k.name);
            let mut s = SecondObservation::default();
            (k.second)(&Sample::default(), &mut s);
            assert_eq!(s, SecondObservation::default(), "{}", k.name);
            if let Some(f) = k.pools {
                assert!(f(&o).is_empty(), "{}", k.name);
            }
        }
        assert_eq!(kind("fpm").map(|k| k.name), Some("fpm"));
        assert!(kind("nothing").is_none());
    }
}
