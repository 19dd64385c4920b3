//! The lab's login application (lab/www/login.php and its pages) under real scenarios: users
//! log in as their own feeder rows, extract the CSRF token and post, and never see another's
//! session; two tabs sharing a session wait for slow.php's lock unless it releases it (S2).
//!
//! They need root and the lab packages (scripts/install-lab.sh); where either is missing they
//! show as ignored with the reason (tests/common/harness.rs).
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::harness::{self, Need::*};
use crate::common::{bin, f, free_port, output_within, run_json, scratch};

pub fn trials() -> Vec<libtest_mimic::Trial> {
    vec![harness::trial(
        "login_scenarios_keep_sessions_apart_and_show_the_lock",
        &[Root, LabPackages],
        login_scenarios_keep_sessions_apart_and_show_the_lock,
    )]
}

/// nginx-fpm in a private prefix; dropping it brings it down, even after a failed assertion.
struct Lab {
    prefix: PathBuf,
    url: String,
}

impl Lab {
    fn up() -> Lab {
        // Not a tempfile folder (mode 0700: the workers run as www-data); short, for the unix
        // socket paths under it.
        let prefix = PathBuf::from(format!("/tmp/ol-login-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&prefix);
        let port = free_port().to_string();
        // More workers than users: what waits in the lock runs is the lock, not a worker.
        let args = ["up", "nginx-fpm", "--no-db", "--max-children", "12"];
        let out = output_within(
            bin()
                .arg("lab")
                .args(args)
                .args(["--port", &port, "--prefix"])
                .arg(&prefix),
            Duration::from_secs(120),
        );
        let lab = Lab {
            prefix,
            url: format!("http://127.0.0.1:{port}"),
        };
        assert!(
            out.status.success(),
            "lab up: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        lab
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = output_within(
            bin()
                .args(["lab", "down", "--all", "--prefix"])
                .arg(&self.prefix),
            Duration::from_secs(60),
        );
        let _ = std::fs::remove_dir_all(&self.prefix);
    }
}

fn sessions(file: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/sessions");
    p.join(file).to_str().unwrap().to_string()
}

fn scenario_run(file: &str, url: &str, users: &str, duration: &str) -> serde_json::Value {
    let args = [
        "run",
        "--scenario",
        file,
        url,
        "--users",
        users,
        "--duration",
        duration,
    ];
    run_json(&args).1
}

/// One name's p95 in ms.
fn p95(v: &serde_json::Value, name: &str) -> f64 {
    let rows = v["names"].as_array().expect("names");
    let row = rows
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no name {name}: {}", v["names"]));
    f(row, "response_time_ms.p95")
}

/// login.toml's requests, but both users send one fixed session id instead of their jars.
const SHARED: &str = r#"
cookies = false
[feeder]
file = "USERS_CSV"
per = "user"

[[request]]
name = "login"
method = "POST"
url = "/login.php"
headers = ["Cookie: PHPSESSID=sharedbytwousers", "Content-Type: application/x-www-form-urlencoded"]
body = "user=${user}&password=${password}"
status = 200

[[request]]
name = "account"
url = "/account.php"
headers = ["Cookie: PHPSESSID=sharedbytwousers"]
status = 200
contains = "user: ${user}</p>"
[[request.extract]]
var = "csrf"
regex = 'name="csrf" value="([0-9a-f]+)"'

[[request]]
name = "post"
method = "POST"
url = "/post.php"
headers = ["Cookie: PHPSESSID=sharedbytwousers", "Content-Type: application/x-www-form-urlencoded"]
body = "csrf=${csrf}&user=${user}"
status = 200
"#;

fn login_scenarios_keep_sessions_apart_and_show_the_lock() {
    let lab = Lab::up();

    // Four users, four feeder rows, four cookie jars: every check holds (the account page
    // names the user, post.php refuses a session that is another user's), every answer 200.
    let v = scenario_run(&sessions("login.toml"), &lab.url, "4", "3s");
    let responses = v["responses"].as_u64().unwrap();
    assert!(responses >= 40, "{v}");
    assert_eq!(v["error_count"].as_u64(), Some(0), "{v}");
    assert_eq!(v["statuses"]["200"].as_u64(), Some(responses), "{v}");
    let names: Vec<&str> = v["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 4, "{names:?}");

    // The server's check has teeth: two feeder users made to share one session (the same
    // PHPSESSID, no jar) do see each other, and their checks fail, counted.
    let dir = scratch();
    let shared = dir.path().join("shared.toml");
    let feeder = sessions("users.csv");
    std::fs::write(&shared, SHARED.replace("USERS_CSV", &feeder)).unwrap();
    let v = scenario_run(shared.to_str().unwrap(), &lab.url, "2", "3s");
    let failed = v["errors"]["check-failed"].as_u64().unwrap_or(0);
    assert!(
        failed >= 3,
        "two users on one session must trip the checks: {v}"
    );

    // S2's lock: two tabs per session (8 users, 4 rows). slow.php holding the lock makes the
    // account page wait for it (400 ms of work); released early, the page answers at once.
    let held = scenario_run(&sessions("s2-held.toml"), &lab.url, "8", "4s");
    let early = scenario_run(&sessions("s2-early.toml"), &lab.url, "8", "4s");
    for v in [&held, &early] {
        assert_eq!(v["error_count"].as_u64(), Some(0), "{v}");
    }
    let (h, e) = (p95(&held, "account"), p95(&early, "account"));
    println!("account p95: {h:.0} ms with the lock held, {e:.0} ms released early");
    assert!(h >= 250.0, "held: the account page did not wait ({h} ms)");
    assert!(h >= 2.0 * e, "held {h} ms against released {e} ms");
}
