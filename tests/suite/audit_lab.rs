//! `overload audit --lab` on real stacks: nginx-fpm started with `--opcache off` over a
//! MariaDB whose tables are MyISAM gets OPcache named (high), the MyISAM tables named, and —
//! nginx having neither gzip nor expires by default — both the compression finding with the
//! byte saving measured and the caching one; restarted with the defaults, OPcache is no
//! longer a finding. Needs root and the lab packages (scripts/install-lab.sh); elsewhere it
//! shows as ignored with the reason (tests/common/harness.rs).
use crate::common::harness::{self, Need::*};
use crate::common::{bin, free_port, output_within};
use std::path::PathBuf;
use std::time::{Duration, Instant};

pub fn trials() -> Vec<libtest_mimic::Trial> {
    vec![harness::trial(
        "audit_names_opcache_off_myisam_compression_and_caching",
        &[Root, LabPackages],
        audit_names_opcache_off_myisam_compression_and_caching,
    )]
}

/// A private prefix, brought down and removed on drop (even after a failed assertion).
struct Lab(PathBuf);

impl Lab {
    fn lab(&self, args: &[&str]) {
        let out = output_within(
            bin().arg("lab").args(args).arg("--prefix").arg(&self.0),
            Duration::from_secs(180),
        );
        assert!(
            out.status.success(),
            "lab {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn audit(&self, args: &[&str]) -> serde_json::Value {
        let t0 = Instant::now();
        let out = output_within(
            bin()
                .args(["audit", "--lab", "nginx-fpm", "--json", "-", "--prefix"])
                .arg(&self.0)
                .args(args),
            Duration::from_secs(60),
        );
        assert!(
            out.status.success(),
            "audit: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        println!("audit {args:?}: {:.2} s", t0.elapsed().as_secs_f64());
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = output_within(
            bin()
                .args(["lab", "down", "--all", "--prefix"])
                .arg(&self.0),
            Duration::from_secs(60),
        );
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn check<'a>(v: &'a serde_json::Value, rule: &str) -> &'a serde_json::Value {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["rule"] == rule)
        .unwrap_or_else(|| panic!("no {rule} in {v}"))
}

fn evidence(c: &serde_json::Value) -> &str {
    c["evidence"].as_str().unwrap()
}

fn audit_names_opcache_off_myisam_compression_and_caching() {
    // Not a tempfile folder: those are mode 0700, and the workers run as www-data.
    let lab = Lab(PathBuf::from(format!(
        "/tmp/ol-audit-{}",
        std::process::id()
    )));
    let _ = std::fs::remove_dir_all(&lab.0);
    let (web, db) = (free_port().to_string(), free_port().to_string());
    lab.lab(&["up", "mariadb", "--port", &db, "--engine", "myisam"]);
    let up = |extra: &[&str]| {
        let mut a = vec!["up", "nginx-fpm", "--port", &web, "--db-port", &db];
        a.extend(extra);
        lab.lab(&a);
    };
    up(&["--opcache", "off"]);
    let v = lab.audit(&[]);
    let op = check(&v, "php.opcache");
    assert_eq!(op["level"], "high", "{op}");
    assert!(evidence(op).contains("opcache.enable is off"), "{op}");
    let comp = check(&v, "http.compression");
    assert_eq!(comp["level"], "medium", "{comp}");
    assert!(
        evidence(comp).contains("22,528 bytes of text/html"),
        "{comp}"
    );
    assert!(evidence(comp).contains("bytes saved per answer"), "{comp}");
    assert!(evidence(comp).contains("compression would save"), "{comp}");
    let cache = check(&v, "http.caching");
    assert_eq!(cache["level"], "medium", "{cache}");
    let my = check(&v, "db.myisam");
    assert_eq!(my["level"], "medium", "{my}");
    assert!(evidence(my).contains("lab.test1"), "{my}");
    // The pool size came from the lab's state.
    assert!(
        evidence(check(&v, "php.memory-plan")).contains("20 workers (the lab's pm.max_children)")
    );
    // The defaults: OPcache on, and said so with its memory.
    lab.lab(&["down", "nginx-fpm"]);
    up(&[]);
    let v = lab.audit(&["--no-ab", "--idle-wait", "200ms"]);
    let op = check(&v, "php.opcache");
    assert_eq!(op["level"], "ok", "{op}");
    assert!(evidence(op).contains("OPcache on"), "{op}");
    assert!(v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| ["high", "medium", "low"].contains(&c["level"].as_str().unwrap()))
        .all(|c| c["rule"] != "php.opcache"));
}
