//! The README is one screen that points to the guide; its links and the guide's resolve (files
//! and `#anchors`), and its test command is the one CI runs. Reads files only.
use std::path::{Path, PathBuf};

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        readme_is_one_screen_and_its_links_resolve,
        the_guide_walks_from_one_run_to_a_comparison_and_its_links_resolve,
        ci_runs_the_readme_test_command
    ]
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes.
fn anchor(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(markdown: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in markdown.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.push(anchor(line.trim_start_matches('#')));
        }
    }
    out
}

/// The `](target)` links of a markdown file, outside code blocks.
fn links(markdown: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in markdown.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            if let Some(end) = rest.find(')') {
                out.push(rest[..end].to_string());
                rest = &rest[end..];
            }
        }
    }
    out
}

/// Every relative link of `rel` names a file that exists, and its anchor a heading there.
fn assert_links_resolve(rel: &str) {
    let text = read(rel);
    let dir = Path::new(rel).parent().unwrap_or(Path::new(""));
    let found = links(&text);
    assert!(!found.is_empty(), "{rel}: no links");
    for link in found {
        if link.starts_with("http://") || link.starts_with("https://") {
            continue;
        }
        let (file, frag) = match link.split_once('#') {
            Some((f, a)) => (f, Some(a)),
            None => (link.as_str(), None),
        };
        let target = if file.is_empty() {
            PathBuf::from(rel)
        } else {
            dir.join(file)
        };
        let path = root().join(&target);
        assert!(
            path.exists(),
            "{rel}: link {link} → {} is missing",
            path.display()
        );
        if let Some(frag) = frag {
            let heads = anchors(&read(target.to_str().unwrap()));
            assert!(
                heads.iter().any(|h| h == frag),
                "{rel}: no heading #{frag} in {}: {heads:?}",
                target.display()
            );
        }
    }
}

fn readme_is_one_screen_and_its_links_resolve() {
    let readme = read("README.md");
    let lines = readme.lines().count();
    assert!(lines <= 120, "README.md is {lines} lines");
    assert!(
        readme.contains("](docs/guide.md)"),
        "the README points to the guide"
    );
    assert_links_resolve("README.md");
    // Every docs/*.md is on the README's map.
    for entry in std::fs::read_dir(root().join("docs")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().to_string();
        if name.ends_with(".md") {
            assert!(
                readme.contains(&format!("(docs/{name})")),
                "docs/{name} is not on the README's map"
            );
        }
    }
}

fn the_guide_walks_from_one_run_to_a_comparison_and_its_links_resolve() {
    let guide = read("docs/guide.md");
    let heads = anchors(&guide);
    let order = [
        "1-one-run",
        "2-reading-the-summary",
        "3-a-sweep-find-the-saturation-point",
        "4-the-saturation-point-the-bottleneck-and-the-capacity",
        "5-comparing-two-configurations",
    ];
    let at: Vec<usize> = order
        .iter()
        .map(|h| {
            heads
                .iter()
                .position(|x| x == h)
                .unwrap_or_else(|| panic!("no #{h}: {heads:?}"))
        })
        .collect();
    assert!(
        at.windows(2).all(|w| w[0] < w[1]),
        "{order:?} out of order: {heads:?}"
    );
    for command in [
        "$ overload run ",
        "$ overload sweep ",
        "$ overload capacity ",
        "$ overload compare ",
    ] {
        assert!(
            guide.contains(command),
            "the guide shows no printout of {command:?}"
        );
    }
    assert_links_resolve("docs/guide.md");
}

/// The README's two set-up commands; CI runs its test command (in parts).
fn ci_runs_the_readme_test_command() {
    let readme = read("README.md");
    for command in [
        "scripts/cargo run --release -- demo",
        "scripts/cargo test --release",
    ] {
        assert!(readme.contains(command), "README lacks {command}");
    }
    let ci = read(".ci/run");
    assert!(
        ci.contains("scripts/cargo test --release"),
        ".ci/run no longer runs the README's tests"
    );
}
