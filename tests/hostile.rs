//! Hostile cases: each test plays one party of docs/security.md's threat model (a local user,
//! a peer of what listens, a lying server, agent or controller, a crafted results folder or
//! input file, a terminal or standard output that goes away) against the real binary, and
//! holds one promise of that document. One binary with a module per surface, so the suite
//! builds once; tests that need root or a namespace show as ignored where the machine lacks it.
mod common;
mod hostile {
    pub mod client;
    pub mod inputs;
    pub mod listeners;
    pub mod local;
    pub mod results;
    pub mod scale;
    pub mod terminal;
}

fn main() {
    let mut trials = Vec::new();
    trials.extend(hostile::client::trials());
    trials.extend(hostile::inputs::trials());
    trials.extend(hostile::listeners::trials());
    trials.extend(hostile::local::trials());
    trials.extend(hostile::results::trials());
    trials.extend(hostile::scale::trials());
    trials.extend(hostile::terminal::trials());
    common::harness::main(trials)
}
