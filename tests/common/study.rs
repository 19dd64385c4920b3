//! The study files of experiments/ run to their end with --quick on the lab (tests/lab.rs,
//! tests/lab_apps.rs).
use super::{bin, output_within};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The study files pin their lab stacks' ports (the stacks' documented defaults, which the
/// studies' figures name): two suites on one machine (two checkouts, two CI jobs) would
/// collide on them, so their study files take turns on one machine-wide lock, held until
/// the returned file is dropped. Never through a link, never another user's file.
fn ports_lock() -> std::fs::File {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    use std::os::unix::io::AsRawFd;
    let path = "/tmp/overload-study-ports.lock";
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    assert_eq!(
        f.metadata().unwrap().uid(),
        uid,
        "{path} belongs to another user: remove it"
    );
    // SAFETY: a valid descriptor; blocks until the other suite's study file is done.
    assert_eq!(unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) }, 0);
    f
}

/// Runs experiments/NAME.toml with --quick in a private lab prefix and checks it completed
/// with its report (the S5 file: its two charts).
pub fn study_quick(name: &str) {
    let _ports = ports_lock();
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("experiments/{name}.toml"));
    let dir = super::scratch();
    let out = dir.path().join("exp");
    // A private, short lab prefix (unix socket paths are limited to 107 bytes).
    let prefix = PathBuf::from(format!("/tmp/ol-xq-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&prefix);
    let t0 = Instant::now();
    let o = output_within(
        bin()
            .args([
                "experiment",
                file.to_str().unwrap(),
                "--quick",
                "-q",
                "--out",
            ])
            .arg(&out)
            .env("OVERLOAD_LAB_DIR", &prefix),
        Duration::from_secs(400),
    );
    let _ = output_within(
        bin()
            .args(["lab", "down", "--all", "--prefix"])
            .arg(&prefix),
        Duration::from_secs(60),
    );
    let _ = std::fs::remove_dir_all(&prefix);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{name}: {stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    println!("{name} --quick: {:.0}s", t0.elapsed().as_secs_f64());
    let state: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("experiment.json")).unwrap())
            .unwrap();
    assert_eq!(state["complete"], true, "{name}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    if name == "s5-prefork-vs-fpm" {
        // S5's two charts: response time against users per configuration, and the spawn
        // test's worker processes over time.
        assert!(html.contains("Mean response time vs load"), "{name}");
        assert!(html.contains("Server processes over time"), "{name}");
    }
}
