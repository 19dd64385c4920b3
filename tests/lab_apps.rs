//! The lab's application stacks (issue 17): Debian's WordPress served by each front, with
//! generated content that is made once per prefix and reloaded from its dump; the gallery;
//! the Symfony app on PHP-FPM and on persistent workers, one of which is killed under load.
//!
//! They need root, the lab packages and the app's own packages (scripts/install-lab.sh);
//! where any is missing they show as ignored with the reason (tests/common/harness.rs).
mod common;
use std::path::PathBuf;
use std::process::Output;
use std::time::{Duration, Instant};

use common::harness::{self, Need::*};
use common::study::study_quick;
use common::{bin, free_port, output_within, QUICK};
use libtest_mimic::{Completion, Trial};
use overload::lab::launch::get_local;
use overload::lab::{mariadb, process, StackInfo};

fn main() {
    harness::main(vec![
        harness::trial(
            "app_stacks_bad_input_is_a_one_line_usage_error",
            &[],
            app_stacks_bad_input_is_a_one_line_usage_error,
        ),
        app_trial(
            "wordpress_serves_generated_posts_on_each_front_and_goes_down",
            "wordpress",
            wordpress_serves_generated_posts_on_each_front_and_goes_down,
        ),
        app_trial(
            "gallery_makes_thumbnails_per_request_and_the_cache_front_serves_hits",
            "gallery",
            gallery_makes_thumbnails_per_request_and_the_cache_front_serves_hits,
        ),
        app_trial(
            "symfony_renders_a_row_on_each_front_and_a_killed_worker_is_replaced",
            "symfony",
            symfony_renders_a_row_on_each_front_and_a_killed_worker_is_replaced,
        ),
        app_trial("s3_persistent_runs_quick_on_symfony", "symfony", || {
            study_quick_on_default_db("s3-persistent")
        }),
        app_trial("s2_overload_runs_quick_on_wordpress", "wordpress", || {
            study_quick_on_default_db("s2-overload")
        }),
        app_trial("s4_cache_runs_quick_on_the_gallery", "gallery", || {
            study_quick("s4-cache")
        }),
    ])
}

/// The study files' lab stacks use MariaDB's default port (13306) in their own prefixes: two
/// of them at once would collide, so those runs take turns.
fn study_quick_on_default_db(name: &str) {
    static DEFAULT_DB_PORT: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = DEFAULT_DB_PORT.lock().unwrap_or_else(|e| e.into_inner());
    study_quick(name);
}

fn app_stacks_bad_input_is_a_one_line_usage_error() {
    for (args, want) in [
        (
            &["up", "wordpress", "--web", "mariadb"][..],
            "wordpress runs on nginx-fpm",
        ),
        (
            &["up", "gallery", "--web", "apache-prefork"],
            "gallery runs on nginx-fpm",
        ),
        (
            &["up", "symfony", "--web", "nginx-fpm-cache"],
            "symfony runs on nginx-fpm, php-persistent",
        ),
        (
            &["up", "wordpress", "--no-db"],
            "wordpress needs its database",
        ),
        (
            &["up", "gallery", "--workers", "3"],
            "--workers does not apply to gallery",
        ),
        (
            &[
                "up",
                "wordpress",
                "--web",
                "apache-prefork",
                "--pm",
                "static",
            ],
            "--pm does not apply",
        ),
        (
            &["up", "nginx-fpm", "--size", "small"],
            "--size does not apply to nginx-fpm",
        ),
        (&["urls", "nginx-fpm"], "nginx-fpm has no URL file"),
        (&["doctor", "--app", "nginx-fpm"], "not an app stack"),
    ] {
        let out = output_within(bin().arg("lab").args(args), QUICK);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("overload: ") && err.contains(want),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// A trial that needs root, the core lab packages and `app`'s packages.
fn app_trial(name: &str, app: &'static str, test: fn()) -> Trial {
    Trial::ignorable_test(name, move || {
        if let Some(why) = [Root, LabPackages].iter().find_map(|n| n.missing()) {
            return Ok(Completion::ignored_with(why));
        }
        let doctor = bin().args(["lab", "doctor", "--app", app]).output();
        if !doctor.is_ok_and(|o| o.status.success()) {
            return Ok(Completion::ignored_with(format!(
                "{app}'s packages are missing (sudo bash scripts/install-lab.sh)"
            )));
        }
        test();
        Ok(Completion::Completed)
    })
}

/// A private prefix, brought down and removed on drop (even after a failed assertion).
struct Lab {
    prefix: PathBuf,
    db_port: u16,
}

impl Lab {
    fn new(name: &str) -> Lab {
        // Not a tempfile folder (mode 0700): the workers run as www-data.
        let prefix = PathBuf::from(format!("/tmp/ol-apps-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&prefix);
        Lab {
            prefix,
            db_port: free_port(),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        output_within(
            bin()
                .arg("lab")
                .args(args)
                .arg("--prefix")
                .arg(&self.prefix),
            Duration::from_secs(180),
        )
    }

    /// `lab up STACK --json` with `args`; the state and what it said on stderr.
    fn up(&self, stack: &str, port: u16, args: &[&str]) -> (StackInfo, String) {
        let (port, db_port) = (port.to_string(), self.db_port.to_string());
        let mut all = vec![
            "up",
            stack,
            "--json",
            "--port",
            &port,
            "--db-port",
            &db_port,
        ];
        all.extend(args);
        let t0 = Instant::now();
        let out = self.run(&all);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "lab {all:?} failed: {err}");
        println!("{all:?}: {:.1}s\n{err}", t0.elapsed().as_secs_f64());
        (serde_json::from_slice(&out.stdout).unwrap(), err)
    }

    fn questions(&self) -> u64 {
        let out = mariadb::query(&self.prefix, "SHOW GLOBAL STATUS LIKE 'Questions'").unwrap();
        out.split_whitespace().nth(1).unwrap().parse().unwrap()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = self.run(&["down", "--all"]);
        let _ = std::fs::remove_dir_all(&self.prefix);
    }
}

fn get(port: u16, path: &str) -> (u16, String) {
    let r = get_full(port, path);
    (r.status, r.text())
}

fn get_full(port: u16, path: &str) -> overload::http_get::Response {
    get_local(port, path, &[], Duration::from_secs(30), 16 << 20)
        .unwrap_or_else(|e| panic!("GET {path} on {port}: {e}"))
}

/// The front page, a post with its comments, a 404 and the URL file, on one front.
fn check_site(port: u16) {
    let (status, front) = get(port, "/");
    assert_eq!(status, 200, "{front}");
    assert!(
        front.contains("<meta name=\"generator\" content=\"WordPress 6."),
        "no generator tag: {front}"
    );
    // The newest generated post (n = 1,000 of the small size) heads the front page.
    assert!(front.contains("Notes on queues, part 1000"), "{front}");
    let (status, missing) = get(port, "/?p=999999999");
    assert_eq!(status, 404, "{missing}");
}

fn wordpress_serves_generated_posts_on_each_front_and_goes_down() {
    let lab = Lab::new("wp");
    let port = free_port();
    let (info, err) = lab.up("wordpress", port, &[]);
    assert_eq!(info.knobs["web"], "nginx-fpm");
    assert_eq!(info.knobs["size"], "small");
    assert!(err.contains("generating the small content"), "{err}");
    check_site(port);

    // A post page runs its queries: post 1 (ID 101) and its ten comments come from MariaDB.
    let before = lab.questions();
    let (status, post) = get(port, "/?p=101");
    let asked = lab.questions() - before;
    assert_eq!(status, 200, "{post}");
    assert!(post.contains("Notes on latency, part 1<"), "{post}");
    assert!(post.contains("Comment 1000:"), "{post}");
    assert!(
        asked >= 10,
        "the post page asked MariaDB only {asked} questions"
    );

    // The URL file: every line a URL of this site, posts, archives, search and a 404.
    let out = lab.run(&["urls", "wordpress"]);
    assert!(out.status.success());
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let urls = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = urls.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(lines.len() >= 50, "{urls}");
    let base = format!("http://127.0.0.1:{port}/");
    assert!(lines.iter().all(|l| l.starts_with(&base)), "{urls}");
    for kind in ["?p=", "?cat=", "?m=", "?author=", "?s=", "?p=999999999"] {
        assert!(urls.contains(kind), "no {kind} in {urls}");
    }

    // The other fronts reuse the content (no second generation).
    // Each with its own knob for the pool: the front's knobs apply to the app.
    for (web, pool) in [
        ("apache-prefork", "--workers"),
        ("apache-event-fpm", "--max-children"),
    ] {
        let (info, err) = lab.up("wordpress", port, &["--web", web, pool, "4"]);
        assert_eq!(info.knobs["web"], web);
        assert_eq!(info.knobs[&pool[2..]], "4");
        assert!(!err.contains("generating"), "{web}: {err}");
        check_site(port);
    }

    // A fresh datadir reloads the dump instead of generating again.
    let infos = down_all_and_check(&lab);
    assert!(infos.iter().any(|i| i.stack.name() == "mariadb"));
    std::fs::remove_dir_all(lab.prefix.join("mariadb/data")).unwrap();
    let (_, err) = lab.up("wordpress", port, &[]);
    assert!(err.contains("loading the small content"), "{err}");
    assert!(!err.contains("generating"), "{err}");
    check_site(port);
    down_all_and_check(&lab);
}

/// The number of thumbnails a gallery page embeds.
fn thumbnails(page: &str) -> usize {
    page.matches("<img src=\"data:image/jpeg;base64,").count()
}

fn gallery_makes_thumbnails_per_request_and_the_cache_front_serves_hits() {
    let lab = Lab::new("gal");
    let port = free_port();
    let (info, err) = lab.up("gallery", port, &["--max-children", "2"]);
    assert_eq!(info.knobs["web"], "nginx-fpm");
    assert!(info.db_port.is_none(), "the gallery runs without MariaDB");
    assert!(err.contains("making the album"), "{err}");
    // Every request makes its thumbnails: the page says so, and it is never cached.
    let (status, page) = get(port, "/?page=2");
    assert_eq!(status, 200, "{page}");
    assert_eq!(thumbnails(&page), 6, "{page}");
    assert!(
        page.contains("img006.jpg") && page.contains("img011.jpg"),
        "{page}"
    );
    let (status, missing) = get(port, "/?page=7");
    assert_eq!(status, 404, "{missing}");

    // Behind fastcgi_cache: a MISS, then a HIT with the very same page (its timing line
    // included) until `?nocache=1` bypasses it. The album is kept from the first start.
    let (info, err) = lab.up("gallery", port, &["--web", "nginx-fpm-cache"]);
    assert_eq!(info.knobs["web"], "nginx-fpm-cache");
    assert!(!err.contains("making the album"), "{err}");
    let first = get_full(port, "/?page=1");
    assert_eq!(first.header("x-cache"), Some("MISS"));
    let second = get_full(port, "/?page=1");
    assert_eq!(second.header("x-cache"), Some("HIT"));
    assert_eq!(first.text(), second.text());
    assert_eq!(thumbnails(&second.text()), 6);
    let fresh = get_full(port, "/?page=1&nocache=1");
    assert_eq!(fresh.header("x-cache"), Some("BYPASS"));
    let (status, last) = get(port, "/?page=6");
    assert_eq!((status, thumbnails(&last)), (200, 6));
    down_all_and_check(&lab);
}

/// A Symfony page: the template rendered around the row of test1 asked for, one query.
fn check_symfony_row(port: u16, id: u64) -> String {
    let (status, page) = get(port, &format!("/item/{id}"));
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("<meta name=\"generator\" content=\"Symfony 5.4."),
        "not the Symfony template: {page}"
    );
    // schema.sql: row n is named row-n with value (n * 7919) % 10007.
    assert!(
        page.contains(&format!("<dd id=\"row-name\">row-{id}</dd>"))
            && page.contains(&format!("<dd id=\"row-value\">{}</dd>", id * 7919 % 10007)),
        "no row {id}: {page}"
    );
    // The request's query log starts empty: a persistent worker resets it between requests.
    assert!(
        page.contains(&format!("queries this request: 1 [test1 #{id}]")),
        "{page}"
    );
    page
}

/// The worker processes of php-persistent's supervisor (its group, less itself).
fn persistent_workers(info: &StackInfo) -> Vec<i32> {
    let sup = info.parts.iter().find(|p| p.name == "php-server").unwrap();
    let mut w: Vec<i32> = process::group_members(sup)
        .into_iter()
        .filter(|p| *p != sup.pid)
        .collect();
    w.sort();
    w
}

fn symfony_renders_a_row_on_each_front_and_a_killed_worker_is_replaced() {
    let lab = Lab::new("sym");
    let port = free_port();
    // PHP-FPM: the front controller boots the kernel on every request.
    let (info, _) = lab.up("symfony", port, &["--max-children", "2"]);
    assert_eq!(info.knobs["web"], "nginx-fpm");
    let page = check_symfony_row(port, 42);
    assert!(page.contains("(fpm-fcgi)"), "{page}");
    let (status, missing) = get(port, "/item/x");
    assert_eq!(status, 404, "{missing}");
    assert_eq!(get(port, "/item/10001").0, 404, "no such row");

    // Persistent workers: the same page from two booted kernels, each keeping its one
    // database connection across requests.
    let (info, _) = lab.up(
        "symfony",
        port,
        &["--web", "php-persistent", "--workers", "2"],
    );
    assert_eq!(info.knobs["web"], "php-persistent");
    for id in 1..=6 {
        let page = check_symfony_row(port, id);
        assert!(page.contains("(cli)"), "{page}");
        assert!(
            page.contains("database connections made by this process: 1<"),
            "{page}"
        );
    }
    let (status, missing) = get(port, "/nope");
    assert_eq!(status, 404, "{missing}");
    let workers = persistent_workers(&info);
    assert_eq!(workers.len(), 2, "{workers:?}");

    // A worker killed under load: its supervisor starts another, and the run loses at most
    // the one request that worker had in hand (the connections queued on its socket wait for
    // the replacement; nginx retries a GET it lost on the other worker).
    let url = format!("http://127.0.0.1:{port}/item/7");
    let run = bin()
        .args(["run", &url, "--users", "8", "-d", "4s", "-q", "--json", "-"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Under load: once the run holds its connections to the front.
    common::wait_until("the run sends its load", QUICK, || {
        common::procs::connections_to(run.id(), port) > 0
    });
    // The workers of this moment: one may have been recycled (request or memory limit) since
    // the list above, and a pid that just exited is no worker to kill.
    let victim = (0..20)
        .find_map(|_| {
            let w = persistent_workers(&info);
            // SAFETY: kill(2) on a pid of the group this test's lab started.
            let killed = w.len() == 2 && unsafe { libc::kill(w[0], libc::SIGKILL) } == 0;
            if !killed {
                // The polling period of this bounded retry (20 tries).
                std::thread::sleep(Duration::from_millis(50));
            }
            killed.then_some(w[0])
        })
        .expect("no persistent worker to kill");
    let out = run.wait_with_output().unwrap();
    assert!(out.status.success());
    let sum: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ok = sum["statuses"]["200"].as_u64().unwrap_or(0);
    let lost = sum["requests"].as_u64().unwrap() - ok;
    assert!(lost <= 1, "lost {lost} requests: {sum}");
    assert!(ok >= 100, "the run stalled after the kill: {sum}");
    let now = persistent_workers(&info);
    assert_eq!(now.len(), 2, "{now:?}");
    assert!(!now.contains(&victim), "{victim} killed → {now:?}");
    let log = std::fs::read_to_string(lab.prefix.join("symfony/logs/php-server.out")).unwrap();
    assert!(
        log.contains(&format!("(pid {victim}) died (signal 9), restarting")),
        "{log}"
    );
    // Without a recycled worker there were three worker lives (the killed one, its
    // replacement, the other), each under the 1,000-request limit.
    if ok + 20 > 3 * 999 {
        assert!(
            log.contains("reached its request or memory limit, restarting"),
            "{ok} requests and no worker recycled: {log}"
        );
    }
    println!("{ok} requests, {lost} lost; worker log:\n{log}");
    check_symfony_row(port, 8);
    down_all_and_check(&lab);
}

/// `lab down --all`, then nothing of what was recorded runs or listens.
fn down_all_and_check(lab: &Lab) -> Vec<StackInfo> {
    let out = lab.run(&["status", "--json"]);
    let all: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let infos: Vec<StackInfo> = all
        .iter()
        .map(|v| serde_json::from_value(v["info"].clone()).unwrap())
        .collect();
    assert!(!infos.is_empty());
    let out = lab.run(&["down", "--all"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for info in &infos {
        for p in &info.parts {
            assert!(
                !process::is_alive(p),
                "{} {} still runs",
                info.stack,
                p.name
            );
            let left = process::group_members(p);
            assert!(left.is_empty(), "{} {}: {left:?} left", info.stack, p.name);
        }
        assert!(
            !process::listening(info.port),
            "{} port {} listens",
            info.stack,
            info.port
        );
    }
    infos
}
