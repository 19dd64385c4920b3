//! Hostile cases: hostile input files (feeder, access log, HAR, wsesslog, scenario).
use libtest_mimic::Trial;

pub fn trials() -> Vec<Trial> {
    vec![]
}
