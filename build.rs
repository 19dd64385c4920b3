//! Puts the git commit the binary was built from into `overload --version`
//! (`OVERLOAD_COMMIT`). Outside a checkout (a source tarball, a crate) it says "unknown";
//! a packager may set OVERLOAD_COMMIT themselves. Never fails the build.
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-env-changed=OVERLOAD_COMMIT");
    let commit = std::env::var("OVERLOAD_COMMIT")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=OVERLOAD_COMMIT={commit}");
    // Rebuild when HEAD moves: HEAD itself (a branch switch) and the branch's ref (a commit),
    // loose or packed. In a worktree HEAD lives in its own git dir, the refs in the common one.
    println!("cargo:rerun-if-changed=build.rs");
    // Only paths that exist: cargo reruns the script on every build for a missing one.
    let watch = |p: String| {
        if std::path::Path::new(&p).exists() {
            println!("cargo:rerun-if-changed={p}");
        }
    };
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        watch(format!("{dir}/HEAD"));
    }
    if let (Some(common), Some(head_ref)) = (
        git(&["rev-parse", "--git-common-dir"]),
        git(&["symbolic-ref", "-q", "HEAD"]),
    ) {
        watch(format!("{common}/{head_ref}"));
        watch(format!("{common}/packed-refs"));
    }
}
