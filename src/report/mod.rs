//! Reports: the terminal summary, the progress line and the JSON export.
pub mod json;
pub mod progress;
pub mod terminal;
