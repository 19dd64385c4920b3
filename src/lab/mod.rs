//! The lab: real web stacks of the studies, rendered from templates, on loopback.
