//! The bottleneck verdict on the lab's real stacks (issue 14), a module of tests/lab.rs (its
//! `Lab` prefix, its serial lock, its harness: ignored with the reason without root or the
//! lab packages). Each sweep is short (a few steps of seconds) and bounded; each test names
//! the limit the verdict must give and the one it must not.
use std::path::Path;
use std::time::Duration;

use super::common::{bin, output_within};
use super::{serial, Lab};
use overload::analysis::bottleneck::{Bottleneck, Diagnosis, Evidence, Limit};

/// Sweeps `url` with `args` into the prefix, then reads the verdict back from the results
/// folder (as `overload report` does). Panics with the sweep's output when it failed or
/// found no knee.
fn verdict(lab: &Lab, name: &str, url: &str, args: &[&str]) -> Bottleneck {
    let (b, stdout) = sweep(lab, name, url, args);
    b.unwrap_or_else(|| panic!("{name}: no knee:\n{stdout}"))
}

/// The sweep behind [`verdict`]: its verdict, if it found a knee, and its output.
fn sweep(lab: &Lab, name: &str, url: &str, args: &[&str]) -> (Option<Bottleneck>, String) {
    let dir = lab.prefix.join(name);
    let out = output_within(
        bin().args(["sweep", url]).args(args).arg("--out").arg(&dir),
        Duration::from_secs(90),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() || out.status.code() == Some(3),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{name}:\n{stdout}");
    let r = overload::report::RunReport::load(&dir).unwrap();
    (r.analysis.bottleneck, stdout)
}

/// The most CPU that processes other than the watched groups and overload took in any step
/// of the sweep in `dir`, in % of all the host's cores (from the step's local observation).
fn others_cpu_pct(dir: &Path) -> f64 {
    let r = overload::report::RunReport::load(dir).unwrap();
    r.steps
        .iter()
        .filter_map(|s| {
            let obs = s.server.as_ref()?;
            let local = obs.source("local")?;
            let host = local.host?;
            let cores = f64::from(host.cores.max(1));
            let ours: f64 = local.groups.iter().map(|g| g.cpu_pct.mean).sum::<f64>()
                + obs.generator.as_ref().map_or(0.0, |g| g.cpu_pct.mean);
            Some(host.cpu_busy_pct.mean - ours / cores)
        })
        .fold(0.0, f64::max)
}

fn cand(b: &Bottleneck, l: Limit) -> Evidence {
    b.candidates
        .iter()
        .find(|c| c.limit == l)
        .map_or(Evidence::None, |c| c.evidence)
}

/// apache-prefork ×8 on wait.php: 8 workers each held 300 ms, swept past 8 users. The pool
/// is full (no idle worker, no free scoreboard slot) while the CPU idles: the worker pool,
/// not the CPU.
pub fn prefork_x8_on_wait_is_the_worker_pool() {
    let _g = serial();
    let lab = Lab::new("knee-pool");
    let info = lab.up("apache-prefork", &["--workers", "8", "--no-db"]);
    let base = format!("http://127.0.0.1:{}", info.port);
    let status = format!("{base}/server-status");
    let b = verdict(
        &lab,
        "pool",
        &format!("{base}/wait.php?ms=300&jitter=0"),
        &[
            "--users",
            "4,8,16",
            "--warmup",
            "1s",
            "--step",
            "6s",
            "--rest",
            "0s",
            "--past-saturation",
            "0",
            // Without keep-alive: a kept-alive connection holds its prefork worker, and the
            // users beyond 8 would wait unmeasured in the accept queue.
            "--no-keep-alive",
            // The status page waits for a worker like any request: 1 s to get one.
            "--sample-every",
            "2s",
            "--watch",
            "apache=apache2",
            "--apache-status",
            &status,
        ],
    );
    assert_eq!(b.outcome, Diagnosis::Limit, "{}", b.verdict);
    assert_eq!(b.candidates[0].limit, Limit::WorkerPool, "{}", b.verdict);
    assert!(
        b.candidates[0].seen.contains("all 8 Apache workers busy"),
        "{}",
        b.verdict
    );
    assert_ne!(cand(&b, Limit::Cpu), Evidence::AtLimit, "{}", b.verdict);
    lab.down_all_and_check();
}

/// nginx-fpm on cpu.php with 16 workers for at most 8 users on this machine's cores: the
/// pool never fills, PHP's processes take the CPU: the server's CPU. The host must be quiet
/// at the start (the trial's need) and stay so: a sweep whose steps shared the cores with
/// other work (CI runs other tests beside the lab's) cannot show a clean knee, and is then
/// reported ignored with the CPU they took — never passed.
pub fn fpm_on_cpu_php_is_the_cpu() -> Option<String> {
    let _g = serial();
    let lab = Lab::new("knee-cpu");
    let info = lab.up("nginx-fpm", &["--max-children", "16", "--no-db"]);
    let base = format!("http://127.0.0.1:{}", info.port);
    let fpm = format!("{base}/fpm-status");
    let (b, stdout) = sweep(
        &lab,
        "cpu",
        // 50,000 rand() a page: PHP, not nginx or overload, takes the CPU.
        &format!("{base}/cpu.php?n=50000"),
        &[
            // Two cores are full from 2–4 users; 16 makes the flat top certain, where 8
            // alone sometimes still gained enough to pass for unsaturated.
            "--users",
            "1,2,4,8,16",
            "--warmup",
            "1s",
            "--step",
            "4s",
            "--rest",
            "0s",
            "--past-saturation",
            "0",
            "--watch",
            "php=php-fpm",
            "--watch",
            "nginx=nginx",
            "--fpm-status",
            &fpm,
        ],
    );
    let clean = b
        .as_ref()
        .is_some_and(|b| b.candidates.first().is_some_and(|c| c.limit == Limit::Cpu));
    let others = others_cpu_pct(&lab.prefix.join("cpu"));
    if !clean && others > 20.0 {
        lab.down_all_and_check();
        return Some(format!(
            "the host got busy during the sweep (other processes took up to {others:.0}% of \
             its CPU in a step): no clean CPU knee to judge"
        ));
    }
    let b = b.unwrap_or_else(|| panic!("cpu: no knee (others' CPU ≤ {others:.0}%):\n{stdout}"));
    assert_eq!(b.candidates[0].limit, Limit::Cpu, "{}", b.verdict);
    assert_eq!(b.candidates[0].evidence, Evidence::AtLimit, "{}", b.verdict);
    assert_ne!(
        cand(&b, Limit::WorkerPool),
        Evidence::AtLimit,
        "{}",
        b.verdict
    );
    lab.down_all_and_check();
    None
}

/// nginx with a listen backlog of 8 and a burst of new connections (no keep-alive, every
/// user connecting at once): SYNs are dropped and retried after a second, the p99 SLO breaks
/// there: the accept queue. Ignored, as the CPU knee is, when other processes took the host
/// and no accept-queue knee showed: at 4 users a step holds 16 requests, so one sent late by
/// a busy generator is its p99 and breaks the SLO at step 1.
pub fn backlog_8_under_a_burst_is_the_accept_queue() -> Option<String> {
    let _g = serial();
    let lab = Lab::new("knee-backlog");
    let info = lab.up("nginx-fpm", &["--backlog", "8", "--no-db"]);
    let base = format!("http://127.0.0.1:{}", info.port);
    let (b, stdout) = sweep(
        &lab,
        "backlog",
        &format!("{base}/static.html"),
        &[
            "--users",
            "4,400",
            "--think",
            "1s",
            "--warmup",
            "0s",
            "--step",
            "4s",
            "--rest",
            "0s",
            "--past-saturation",
            "0",
            "--no-keep-alive",
            "--slo",
            "p99<500ms",
            "--watch",
            "nginx=nginx",
        ],
    );
    let clean = b.as_ref().is_some_and(|b| {
        b.candidates
            .first()
            .is_some_and(|c| c.limit == Limit::AcceptQueue)
    });
    let others = others_cpu_pct(&lab.prefix.join("backlog"));
    if !clean && others > 20.0 {
        lab.down_all_and_check();
        return Some(format!(
            "the host got busy during the sweep (other processes took up to {others:.0}% of \
             its CPU in a step): no clean accept-queue knee to judge"
        ));
    }
    let b = b.unwrap_or_else(|| panic!("backlog: no knee (others' CPU ≤ {others:.0}%):\n{stdout}"));
    assert_eq!(b.candidates[0].limit, Limit::AcceptQueue, "{}", b.verdict);
    assert_eq!(b.candidates[0].evidence, Evidence::AtLimit, "{}", b.verdict);
    lab.down_all_and_check();
    None
}

/// db.php (SELECT, then INSERT into a MyISAM table) while another session keeps taking the
/// table's write lock for 0.4 s: lock waits from the first step, whose p99 breaks the SLO
/// there (the knee): the database, not the pool of 20 FPM workers.
pub fn locked_myisam_table_is_the_database() {
    let _g = serial();
    let lab = Lab::new("knee-db");
    // The web stack uses the running MariaDB (its port).
    let db = lab.up("mariadb", &["--engine", "myisam"]);
    let port = super::free_port().to_string();
    let out = lab.run(&["up", "nginx-fpm", "--json", "--port", &port]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let info: overload::lab::StackInfo = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(info.db_port, Some(db.port));
    let base = format!("http://127.0.0.1:{}", info.port);
    let pw = lab.prefix.join("db-password");
    write_private(&pw, "labpass\n");
    let mysql = format!("lab@127.0.0.1:{}", db.port);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let locker = {
        let (stop, prefix) = (stop.clone(), lab.prefix.clone());
        std::thread::spawn(move || {
            // Bounded by the flag and by a minute, whatever the sweep does.
            let t0 = std::time::Instant::now();
            while !stop.load(std::sync::atomic::Ordering::Relaxed)
                && t0.elapsed() < Duration::from_secs(60)
            {
                let _ = overload::lab::mariadb::query(
                    &prefix,
                    "LOCK TABLES lab.test2 WRITE; DO SLEEP(0.4); UNLOCK TABLES;",
                );
                // The lock holder's pace: a short gap between its 0.4 s locks.
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let b = verdict(
        &lab,
        "db",
        &format!("{base}/db.php"),
        &[
            "--users",
            "2,4,8",
            "--warmup",
            "1s",
            "--step",
            "4s",
            "--rest",
            "0s",
            "--past-saturation",
            "0",
            // The knee is where p99 breaks the SLO: the lock waits' 0.4 s show from the first
            // step, where throughput alone may still track the users.
            "--slo",
            "p99<300ms",
            "--watch",
            "php=php-fpm",
            "--fpm-status",
            &format!("{base}/fpm-status"),
            "--mysql",
            &mysql,
            "--mysql-password-file",
            pw.to_str().unwrap(),
        ],
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = locker.join();
    assert_eq!(b.candidates[0].limit, Limit::Database, "{}", b.verdict);
    assert_eq!(b.candidates[0].evidence, Evidence::AtLimit, "{}", b.verdict);
    assert!(
        b.candidates[0].numbers["table_locks_waited"] > 0.0,
        "{}",
        b.verdict
    );
    lab.down_all_and_check();
}

fn write_private(p: &Path, text: &str) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(p)
        .unwrap();
    f.write_all(text.as_bytes()).unwrap();
}
