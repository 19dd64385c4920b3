//! Hostile cases: a hostile results folder (merge, report, compare).
use libtest_mimic::Trial;

pub fn trials() -> Vec<Trial> {
    vec![]
}
