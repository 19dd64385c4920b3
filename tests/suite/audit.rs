//! `overload audit` against the embedded target: it completes, names what the target lacks
//! (caching headers, validators, compression of a 22 KiB text body) with the evidence and
//! the A/B's figures, and says how long it took (printed, not asserted beyond a hang guard).
use crate::common;
use crate::common::{bin, output_within, scratch, Target, QUICK};
use std::time::{Duration, Instant};

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        the_embedded_target_lacks_caching_validators_and_compression,
        a_backlog_of_8_is_found_without_load,
        the_json_file_and_bad_input,
        a_sweep_with_audit_stores_it_and_its_report_shows_it,
        over_https_http2_resumption_and_the_headers_are_checked,
        the_agent_answers_the_audits_questions_behind_its_token,
        audit_through_the_agent_reads_the_servers_host,
        the_php_rules_read_a_given_php_ini_and_pool
    ]
}

/// A hang guard, not a speed claim: the audit's own bound is a few seconds.
const GUARD: Duration = Duration::from_secs(60);

fn audit_json(args: &[&str]) -> (serde_json::Value, String) {
    let t0 = Instant::now();
    let out = output_within(bin().arg("audit").args(args).args(["--json", "-"]), GUARD);
    let took = t0.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "audit {args:?}: {stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("audit JSON: {e}: {}", String::from_utf8_lossy(&out.stdout)));
    println!(
        "audit {args:?}: {:.2} s by the clock, {:.2} s by its own",
        took.as_secs_f64(),
        v["took_s"].as_f64().unwrap()
    );
    (v, stderr)
}

fn check<'a>(v: &'a serde_json::Value, rule: &str) -> &'a serde_json::Value {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["rule"] == rule)
        .unwrap_or_else(|| panic!("no {rule} in {v}"))
}

fn the_embedded_target_lacks_caching_validators_and_compression() {
    let t = Target::start(&[]);
    let url = format!("{}/bytes/22528", t.url);
    let (v, list) = audit_json(&[&url]);
    // Every finding has its evidence and its change.
    for c in v["checks"].as_array().unwrap() {
        assert!(!c["evidence"].as_str().unwrap().is_empty(), "{c}");
        let finding = ["high", "medium", "low"].contains(&c["level"].as_str().unwrap());
        assert_eq!(c["change"].is_string(), finding, "{c}");
    }
    let caching = check(&v, "http.caching");
    assert_eq!(caching["level"], "medium");
    assert!(caching["evidence"]
        .as_str()
        .unwrap()
        .contains("neither Cache-Control nor Expires"));
    let val = check(&v, "http.validators");
    assert_eq!(val["level"], "medium");
    assert!(val["evidence"]
        .as_str()
        .unwrap()
        .contains("neither ETag nor Last-Modified"));
    let comp = check(&v, "http.compression");
    assert_eq!(comp["level"], "medium", "{comp}");
    let ev = comp["evidence"].as_str().unwrap();
    assert!(
        ev.contains("answered 22,528 bytes with no Content-Type (by its bytes: UTF-8 text)"),
        "{ev}"
    );
    assert!(ev.contains("gzip -6 makes them"), "{ev}");
    // The A/B ran: both arms' bytes/s, and the saving at the measured rate.
    assert!(ev.contains("MB/s without Accept-Encoding"), "{ev}");
    assert!(ev.contains("compression would save"), "{ev}");
    // The target keeps connections alive; the A/B says what it buys.
    let ka = check(&v, "http.keep-alive");
    assert_eq!(ka["level"], "ok", "{ka}");
    let ev = ka["evidence"].as_str().unwrap();
    assert!(ev.contains("still open after 2.0 s"), "{ev}");
    assert!(ev.contains("with a new connection per request"), "{ev}");
    // The host is this one: the listening process is found (the target itself).
    assert_eq!(check(&v, "host.somaxconn")["level"], "ok");
    let nofile = check(&v, "host.nofile");
    assert!(
        nofile["evidence"]
            .as_str()
            .unwrap()
            .contains("overload (pid"),
        "{nofile}"
    );
    // No PHP here: skipped, with the reason.
    let opc = check(&v, "php.opcache");
    assert_eq!(opc["level"], "skipped");
    assert!(opc["evidence"].as_str().unwrap().contains("--php-probe"));
    // The list went to stderr, by severity, and names the time it took.
    assert!(list.starts_with("overload audit "), "{list}");
    assert!(list.contains(" s)\n"), "{list}");
    let pos = |s: &str| list.find(s).unwrap_or_else(|| panic!("{s}: {list}"));
    assert!(
        pos("medium") < pos("ok ") && pos("ok ") < pos("skipped"),
        "{list}"
    );
}

fn a_backlog_of_8_is_found_without_load() {
    let t = Target::start(&["--backlog", "8"]);
    let (v, _) = audit_json(&[&t.url, "--no-ab", "--idle-wait", "200ms"]);
    let b = check(&v, "host.listen-backlog");
    assert_eq!(b["level"], "high", "{b}");
    assert!(
        b["evidence"].as_str().unwrap().contains("backlog of 8"),
        "{b}"
    );
    // --no-ab: no figures, and no invented ones.
    let ka = check(&v, "http.keep-alive");
    assert!(
        !ka["evidence"].as_str().unwrap().contains("measured"),
        "{ka}"
    );
    // The root page is 100 bytes: too small to advise compression.
    assert_eq!(
        check(&v, "http.compression")["title"],
        "too small to matter"
    );
}

fn the_json_file_and_bad_input() {
    let t = Target::start(&[]);
    let dir = scratch();
    let file = dir.path().join("audit.json");
    let out = output_within(
        bin()
            .args(["audit", &t.url, "--no-ab", "--idle-wait", "100ms", "--json"])
            .arg(&file),
        GUARD,
    );
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(v["url"], format!("{}/", t.url));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("overload audit "));
    for (args, says) in [
        (vec!["audit"], "URL"),
        (vec!["audit", "ftp://x/"], "only http:// and https://"),
        (vec!["audit", "http://127.0.0.1:1/", "--ab", "0s"], "--ab"),
        (vec!["audit", "--lab", "nginx"], "nginx"),
        (
            vec!["audit", "http://127.0.0.1:1/", "--prefix", "/tmp"],
            "--lab",
        ),
    ] {
        let out = output_within(bin().args(&args), QUICK);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // Nothing listening: the checks are skipped with the reason, the audit still ends.
    let port = common::free_port();
    let (v, _) = audit_json(&[
        &format!("http://127.0.0.1:{port}/"),
        "--no-ab",
        "--idle-wait",
        "100ms",
    ]);
    let ka = check(&v, "http.keep-alive");
    assert_eq!(ka["level"], "skipped");
    assert!(ka["evidence"].as_str().unwrap().contains("connect"), "{ka}");
}

fn a_sweep_with_audit_stores_it_and_its_report_shows_it() {
    let t = Target::start(&[]);
    let dir = scratch();
    let out_dir = dir.path().join("run");
    let url = format!("{}/bytes/4096", t.url);
    let out = output_within(
        bin()
            .args(["sweep", "--rates", "50", "--step", "1s", "--warmup", "0s"])
            .args(["--rest", "0s", "--audit", "-q", "--out"])
            .arg(&out_dir)
            .arg(&url),
        GUARD,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let a: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out_dir.join("audit.json")).unwrap()).unwrap();
    assert_eq!(a["url"], url);
    assert_eq!(check(&a, "http.caching")["level"], "medium");
    let html = std::fs::read_to_string(out_dir.join("report.html")).unwrap();
    let at = html.find("<h2>Audit</h2>").expect("an Audit section");
    assert!(
        html[at..].contains("http.caching"),
        "the findings are in it"
    );
    assert!(html[at..].contains("neither Cache-Control nor Expires"));
    // Still well-formed markup (the report is XHTML-compatible).
    let mut r = quick_xml::Reader::from_str(&html);
    r.config_mut().check_end_names = true;
    loop {
        match r.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(_) => {}
            Err(e) => panic!("malformed report at {}: {e}", r.buffer_position()),
        }
    }
}

fn over_https_http2_resumption_and_the_headers_are_checked() {
    let dir = scratch();
    let ca = dir.path().join("ca.pem");
    let t = Target::start(&["--tls", "--ca-out", ca.to_str().unwrap()]);
    assert!(t.url.starts_with("https://"), "{}", t.url);
    let (v, _) = audit_json(&[&t.url, "--cacert", ca.to_str().unwrap(), "--ab", "500ms"]);
    let h2 = check(&v, "http.http2");
    assert_eq!(h2["level"], "ok", "{h2}");
    assert!(evidence_of(h2).contains("picked h2"), "{h2}");
    let res = check(&v, "http.tls-resumption");
    assert_eq!(res["level"], "ok", "{res}");
    assert!(evidence_of(res).contains("resumed a session"), "{res}");
    // The header probes speak TLS too, verifying the certificate against --cacert.
    let ka = check(&v, "http.keep-alive");
    assert_eq!(ka["level"], "ok", "{ka}");
    let caching = check(&v, "http.caching");
    assert_eq!(caching["level"], "medium", "{caching}");
    assert!(evidence_of(caching).contains("neither Cache-Control nor Expires"));
    // --insecure: the probes cannot verify the certificate, so they say so and skip.
    let (v, _) = audit_json(&[&t.url, "--insecure", "--no-ab"]);
    let ka = check(&v, "http.keep-alive");
    assert_eq!(ka["level"], "skipped", "{ka}");
    assert!(evidence_of(ka).contains("--insecure"), "{ka}");
}

fn evidence_of(c: &serde_json::Value) -> &str {
    c["evidence"].as_str().unwrap()
}

/// `overload agent` on a free loopback port with a token file; killed on drop.
struct Agent {
    child: std::process::Child,
    addr: std::net::SocketAddr,
    token_file: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const TOKEN: &str = "audit-agent-token-0123456789";

fn start_agent() -> Agent {
    let dir = scratch();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    // A secret only its owner reads (else the audit warns, a second line on stderr).
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut child = bin()
        .args(["agent", "--listen", "127.0.0.1:0", "--token-file"])
        .arg(&token_file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("spawn agent");
    let addr = common::agent_addr(&mut child);
    Agent {
        child,
        addr,
        token_file,
        _dir: dir,
    }
}

/// One GET to the agent; (status, body).
fn agent_get(addr: std::net::SocketAddr, path: &str, token: Option<&str>) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n{auth}\r\n").as_bytes())
        .unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text[9..12].parse().unwrap();
    (
        status,
        text.split_once("\r\n\r\n").map_or("", |x| x.1).into(),
    )
}

fn the_agent_answers_the_audits_questions_behind_its_token() {
    let t = Target::start(&["--backlog", "8"]);
    let port: u16 = t.url.rsplit(':').next().unwrap().parse().unwrap();
    let agent = start_agent();
    let a = agent.addr;
    assert!(a.ip().is_loopback(), "loopback by default: {a}");
    for path in ["/host?port=80", "/php-ini"] {
        assert_eq!(agent_get(a, path, None).0, 401, "{path}");
        assert_eq!(
            agent_get(a, path, Some("wrong-token-0123456789abcdef")).0,
            401,
            "{path}"
        );
    }
    assert_eq!(agent_get(a, "/host", Some(TOKEN)).0, 400);
    let (status, body) = agent_get(a, &format!("/host?port={port}"), Some(TOKEN));
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    // The target's socket, as the kernel holds it, and the target as its listener.
    assert_eq!(v["host"]["backlog"]["Ok"], 8, "{v}");
    assert_eq!(v["host"]["listener"]["Ok"]["name"], "overload", "{v}");
    assert!(
        v["host"]["kernel"]["somaxconn"].as_u64().unwrap() > 0,
        "{v}"
    );
    assert!(v["ram_bytes"]["Ok"].as_u64().unwrap() > 0, "{v}");
    // The target is not PHP: the agent says so rather than read some PHP's files.
    let (status, body) = agent_get(a, &format!("/php-ini?port={port}"), Some(TOKEN));
    assert_eq!(status, 200, "{body}");
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let why = v["Err"].as_str().unwrap_or_else(|| panic!("{v}"));
    assert!(why.contains("not a PHP server"), "{why}");
}

fn audit_through_the_agent_reads_the_servers_host() {
    let t = Target::start(&["--backlog", "8"]);
    let agent = start_agent();
    let agent_url = format!("http://{}", agent.addr);
    let token = agent.token_file.to_str().unwrap();
    let (v, _) = audit_json(&[
        &t.url,
        "--no-ab",
        "--idle-wait",
        "200ms",
        "--agent",
        &agent_url,
        "--agent-token-file",
        token,
    ]);
    let b = check(&v, "host.listen-backlog");
    assert_eq!(b["level"], "high", "{b}");
    let ev = b["evidence"].as_str().unwrap();
    assert!(ev.contains("backlog of 8"), "{ev}");
    assert!(
        ev.ends_with(&format!("(read by agent {})", agent.addr)),
        "{ev}"
    );
    let nofile = evidence_of(check(&v, "host.nofile"));
    assert!(nofile.contains("overload (pid"), "{nofile}");
    assert!(nofile.contains("read by agent"), "{nofile}");
    let opc = check(&v, "php.opcache");
    assert_eq!(opc["level"], "skipped", "{opc}");
    assert!(evidence_of(opc).contains("not a PHP server"), "{opc}");
    // A wrong token: the host checks are skipped with that reason, the audit still ends.
    let dir = scratch();
    let bad = dir.path().join("bad");
    std::fs::write(&bad, "not-the-token-0123456789").unwrap();
    let (v, _) = audit_json(&[
        &t.url,
        "--no-ab",
        "--idle-wait",
        "100ms",
        "--agent",
        &agent_url,
        "--agent-token-file",
        bad.to_str().unwrap(),
    ]);
    let s = check(&v, "host.somaxconn");
    assert_eq!(s["level"], "skipped", "{s}");
    assert!(evidence_of(s).contains("token rejected (401)"), "{s}");
    // Usage errors: one line, exit 2.
    for (args, says) in [
        (
            vec!["audit", &t.url, "--agent", &agent_url],
            "--agent-token-file",
        ),
        (
            vec![
                "audit",
                &t.url,
                "--agent",
                "ftp://x",
                "--agent-token-file",
                token,
            ],
            "--agent",
        ),
        (
            vec!["audit", &t.url, "--php-ini", "/nonexistent/php.ini"],
            "--php-ini",
        ),
    ] {
        let out = output_within(bin().args(&args), QUICK);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

fn the_php_rules_read_a_given_php_ini_and_pool() {
    let t = Target::start(&[]);
    let dir = scratch();
    let ini = dir.path().join("php.ini");
    std::fs::write(
        &ini,
        "[PHP]\nmemory_limit = 256M\nopen_basedir = /srv/www\n[opcache]\nzend_extension=opcache.so\nopcache.enable = 0\n",
    )
    .unwrap();
    let pool = dir.path().join("www.conf");
    std::fs::write(
        &pool,
        "[www]\npm.max_children = 100000\nphp_admin_value[session.save_handler] = files\n",
    )
    .unwrap();
    let (v, _) = audit_json(&[
        &t.url,
        "--no-ab",
        "--idle-wait",
        "100ms",
        "--php-ini",
        ini.to_str().unwrap(),
        "--fpm-config",
        pool.to_str().unwrap(),
    ]);
    let ini_s = ini.display().to_string();
    let pool_s = pool.display().to_string();
    let opc = check(&v, "php.opcache");
    assert_eq!(opc["level"], "high", "{opc}");
    assert!(
        evidence_of(opc).contains(&format!("opcache.enable is off ({ini_s}:6)")),
        "{opc}"
    );
    let rp = check(&v, "php.realpath-cache");
    assert_eq!(rp["level"], "medium", "{rp}");
    assert!(
        evidence_of(rp).contains(&format!("open_basedir = /srv/www ({ini_s}:3)")),
        "{rp}"
    );
    // 100,000 workers × 256M exceeds any test machine's RAM; the pool's line is named.
    let mp = check(&v, "php.memory-plan");
    assert_eq!(mp["level"], "high", "{mp}");
    let ev = evidence_of(mp);
    assert!(
        ev.contains(&format!("pool www pm.max_children at {pool_s}:2")),
        "{ev}"
    );
    assert!(
        ev.contains(&format!("memory_limit 256M ({ini_s}:2)")),
        "{ev}"
    );
    let ss = check(&v, "php.sessions");
    assert_eq!(ss["level"], "low", "{ss}");
    assert!(evidence_of(ss).contains(&format!("({pool_s}:3)")), "{ss}");
}
