//! Reports: the terminal summary, the progress line and the JSON export of a run; the
//! reports of a results folder (HTML with SVG charts, CSV, JSON, gnuplot) and comparisons.
pub mod charts;
pub mod compare;
pub mod csv;
pub mod folder;
pub mod gnuplot;
pub mod html;
pub mod json;
pub mod jsonfmt;
pub mod progress;
pub mod server;
pub mod svg;
pub mod terminal;

pub use folder::{Format, RunReport};
