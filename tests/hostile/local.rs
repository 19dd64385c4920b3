//! Hostile cases: a local unprivileged user (www-data too): audit, lab, files another user may write.
use libtest_mimic::Trial;

pub fn trials() -> Vec<Trial> {
    vec![]
}
