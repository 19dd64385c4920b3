//! Scale-out, live: generator agents (`overload agent --generate`, [`agent`]) that run the
//! steps a controller (`sweep|capacity … --generators FILE`, [`controller`]) sends them, each
//! step cut into one segment per agent, the parts' results added with `merge`'s adding, and
//! the stop rules and capacity search deciding on the merged step as for one host.
//! See docs/scale-out.md.
pub mod agent;
pub mod channel;
pub mod controller;
pub mod tls;
pub mod wire;
