//! `report.html`: which page a results folder gets. A sweep's page (`html.rs`) has a load
//! axis; one step has none, so its page is made for one run (`html_run.rs`). The choice
//! lives here, above both, so neither page's file needs the other's.
use super::model::{Exporter, RunReport};
use std::path::{Path, PathBuf};

/// The HTML page of a results folder.
pub fn render(r: &RunReport) -> String {
    if r.steps.len() == 1 {
        super::html_run::render(r)
    } else {
        super::html::render_sweep(r)
    }
}

/// `overload report --format html`.
pub struct HtmlExporter;

impl Exporter for HtmlExporter {
    fn default_name(&self) -> &'static str {
        "report.html"
    }

    fn serialize(&self, r: &RunReport, out: &Path) -> crate::Result<Vec<(PathBuf, Vec<u8>)>> {
        Ok(vec![(out.to_path_buf(), render(r).into_bytes())])
    }
}
