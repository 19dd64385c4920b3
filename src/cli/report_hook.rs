//! What runs after a sweep or search has written its folder: the HTML report.
use std::path::Path;

pub fn after_run(_dir: &Path) -> crate::Result<()> {
    Ok(())
}
