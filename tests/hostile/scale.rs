//! Hostile cases: a hostile generator agent seen by the controller, and a hostile controller seen by agent --generate.
use libtest_mimic::Trial;

pub fn trials() -> Vec<Trial> {
    vec![]
}
