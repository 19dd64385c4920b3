//! The gallery stack (S4's slow application): one PHP page per album page, its thumbnails
//! resized with GD from full-size JPEGs on every request, served by nginx-fpm or behind
//! nginx-fpm-cache's fastcgi_cache (`--web`), S4's cure. No database (S4 had none).
//!
//! The album is made once per prefix with GD through php-cli (`make-images.php`) into
//! `<dir>/data/images`, with a mark file naming what was made.
use std::path::Path;
use std::time::Instant;

use super::apps;
use super::render::{self, render};
use super::resolve::Resolved;
use super::state::{make_dir, write_file, Layout};
use crate::Result;

const PAGE: &str = include_str!("../../lab/www/gallery/index.php");
const MAKE_IMAGES: &str = include_str!("../../lab/templates/gallery/make-images.php");
/// Photos in the album (1600×1200 JPEGs) and thumbnails per page: 6 pages of 6.
pub const IMAGES: u32 = 36;
pub const PER_PAGE: u32 = 6;
/// Bumped when make-images.php changes what it makes.
const IMAGES_VERSION: u32 = 1;

fn mark() -> String {
    format!("overload-lab gallery images v{IMAGES_VERSION}: {IMAGES} of 1600x1200\n")
}

/// The album's pages, for `--urls` (each page makes PER_PAGE thumbnails).
pub fn url_list(base: &str) -> String {
    let mut o = format!(
        "# The gallery at {base}: its {} pages of {PER_PAGE} thumbnails made with GD per request,\n\
         # written by `overload lab up gallery`.\n",
        IMAGES / PER_PAGE
    );
    for p in 1..=IMAGES / PER_PAGE {
        o.push_str(&format!("{base}/?page={p}\n"));
    }
    o
}

fn make_images(l: &Layout, dir: &Path, www_user: (u32, u32)) -> Result<()> {
    // Beside the album, not in it: the album is the workers' (www-data), the mark root's.
    let mark_file = dir.with_extension("made");
    if crate::fsutil::read_capped_text(&mark_file, 4096, "gallery mark").is_ok_and(|m| m == mark())
    {
        return Ok(());
    }
    apps::clear(dir)?;
    make_dir(dir, Some(www_user))?;
    crate::eoutln!(
        "gallery: making the album ({IMAGES} photos with GD) once; kept in {}",
        dir.display()
    );
    let t0 = Instant::now();
    let script = l.conf.join("make-images.php");
    write_file(&script, MAKE_IMAGES)?;
    let count = IMAGES.to_string();
    let dir_s = dir.display().to_string();
    apps::php_cli(
        "lab up gallery: making the images",
        &script,
        &[&dir_s, &count],
        www_user,
        "made",
    )?;
    write_file(&mark_file, mark())?;
    crate::eoutln!("gallery: album made in {:.1}s", t0.elapsed().as_secs_f64());
    Ok(())
}

/// Everything before the processes start: the album, the page, the URL file.
pub(super) fn prepare(cfg: &Resolved, l: &Layout, www_user: (u32, u32)) -> Result<()> {
    make_dir(&l.data, None)?;
    let images = l.data.join("images");
    make_images(l, &images, www_user)?;
    let vars = [
        ("IMAGES", images.display().to_string()),
        ("COUNT", IMAGES.to_string()),
    ];
    write_file(
        l.www.join("index.php"),
        render("gallery/index.php", PAGE, &vars)?,
    )?;
    // The lab's page for the OPcache check, and static.html as a static file beside it.
    for (path, text) in render::www_files(l, 0)? {
        if path.ends_with("static.html") || path.ends_with("opcache.php") {
            write_file(path, text)?;
        }
    }
    let base = format!("http://127.0.0.1:{}", cfg.port);
    write_file(apps::urls_path(l), url_list(&base))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_renders_and_the_url_list_covers_every_page() {
        let page = render(
            "p",
            PAGE,
            &[("IMAGES", "/x".into()), ("COUNT", "36".into())],
        )
        .unwrap();
        assert!(page.contains("const COUNT = 36;"));
        let list = url_list("http://127.0.0.1:1");
        let pages: Vec<&str> = list.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(pages.len() as u32, IMAGES / PER_PAGE);
        assert_eq!(pages.last(), Some(&"http://127.0.0.1:1/?page=6"));
    }
}
