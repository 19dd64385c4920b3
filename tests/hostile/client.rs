//! Hostile cases: a hostile HTTP, TLS or HTTP/2 server, seen by the load engine.
use libtest_mimic::Trial;

pub fn trials() -> Vec<Trial> {
    vec![]
}
