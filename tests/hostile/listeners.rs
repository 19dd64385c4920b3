//! Hostile cases: network peers of what listens (the agent, the live page), with and without the token.
use libtest_mimic::Trial;

pub fn trials() -> Vec<Trial> {
    vec![]
}
