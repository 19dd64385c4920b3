//! What runs after a sweep or search has written its folder: the HTML report beside it.
use crate::report::{export, Format, RunReport};
use std::path::{Path, PathBuf};

/// Writes DIR/report.html from what is on disk (so it shows exactly what `overload report`
/// would) and returns its path.
pub fn after_run(dir: &Path) -> crate::Result<PathBuf> {
    let r = RunReport::load(dir)?;
    let paths = export::write(&r, Format::Html, None)?;
    let path = paths
        .into_iter()
        .next()
        .unwrap_or_else(|| dir.join("report.html"));
    println!("report:  {}", path.display());
    Ok(path)
}
