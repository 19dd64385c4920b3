//! Reports of a results folder and comparisons (what a run shows while it goes and prints
//! when it ends is `liverun`'s). A results folder's reports are the model
//! (`model.rs`, with the `Exporter` trait) and one writer per format, picked and written by
//! `export`: the bottleneck verdict's rendering (`bottleneck.rs`), HTML with SVG charts
//! (`html_page.rs` picks the page: a sweep's in `html.rs`, a one-step folder's in `html_run.rs`;
//! `charts.rs`, `server.rs`, `svg/`), CSV, JSON
//! (`jsonfmt.rs`) and gnuplot. `names.rs` is the table of statistics per request name.
pub mod audit;
pub mod bottleneck;
pub mod charts;
pub mod compare;
pub mod csv;
pub mod export;
pub mod gnuplot;
pub mod hist;
pub mod html;
pub mod html_names;
pub mod html_page;
pub mod html_run;
pub mod html_sessions;
pub mod jsonfmt;
pub mod model;
pub mod names;
pub mod server;
pub mod style;
pub mod svg;
pub mod table;
#[cfg(test)]
pub(crate) mod testdata;
pub mod tls;

pub use export::Format;
pub use model::{Exporter, RunReport};
