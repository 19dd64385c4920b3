//! `overload report` and `overload compare` on results folders written with the store's own
//! writer from synthetic steps.

use crate::common;
use crate::common::bin;

// The synthetic folders' contents: the library's own test data file, compiled here too.
#[path = "../../src/report/testdata.rs"]
mod testdata;
use overload::store::{StepRecord, Writer};
use quick_xml::events::Event;
use quick_xml::Reader;
use std::path::{Path, PathBuf};
use std::process::Output;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        html_report_of_a_finished_sweep,
        html_report_without_observation_has_no_server_section,
        html_report_with_server_data_has_server_charts_columns_and_findings,
        interrupted_run_with_a_truncated_line_is_reported_as_incomplete,
        csv_json_and_gnuplot_exports,
        closed_loop_report_has_the_usl_curve,
        empty_folder_and_bad_input,
        compare_two_runs,
        control_characters_from_a_results_folder_are_escaped,
        html_report_of_one_step_is_a_page_for_one_run
    ]
}

/// A fresh folder under cargo's scratch space for integration tests.
/// A folder named `name` that does not exist yet, inside a scratch folder removed on drop.
fn scratch(name: &str) -> (tempfile::TempDir, PathBuf) {
    let t = common::scratch();
    let d = t.path().join(name);
    (t, d)
}

/// Writes a results folder the way a sweep does: run.json, then step by step.
fn write_run(dir: &Path, name: &str, mode: &str, steps: &[StepRecord], finish: bool) {
    let mut info = testdata::info(name, mode, Some("p99<100ms"));
    // As a sweep does: incomplete until it ends normally.
    info.complete = false;
    info.finished_unix_ms = None;
    info.stop_reason = None;
    let mut w = Writer::create(dir, info).unwrap();
    for s in steps {
        w.append_step(s, &testdata::series(s)).unwrap();
    }
    if finish {
        w.finish(true, "all steps done").unwrap();
    }
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("run overload")
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "status {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn usage_error(o: &Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(2), "stderr: {err}");
    err
}

/// Parses the page as XML and returns (svg count, table count); panics on malformed markup or
/// any reference to an outside resource.
fn check_html(html: &str) -> (usize, usize) {
    let mut r = Reader::from_str(html);
    r.config_mut().check_end_names = true;
    let (mut svgs, mut tables, mut depth) = (0, 0, 0i32);
    let check_attrs = |e: &quick_xml::events::BytesStart| {
        for a in e.attributes() {
            let a = a.expect("well-formed attribute");
            let key = String::from_utf8_lossy(a.key.as_ref()).to_lowercase();
            let val = String::from_utf8_lossy(&a.value).to_lowercase();
            if key == "src" || key.ends_with("href") {
                assert!(
                    !val.contains("http:") && !val.contains("https:") && !val.starts_with("//"),
                    "external reference {key}={val}"
                );
            }
            assert!(
                !val.contains("url(http") && !val.contains("url(//"),
                "external url() in {key}"
            );
        }
    };
    loop {
        match r.read_event() {
            Ok(Event::Eof) => break,
            Ok(Event::Start(e)) => {
                check_attrs(&e);
                depth += 1;
                match e.name().as_ref() {
                    b"svg" => svgs += 1,
                    b"table" => tables += 1,
                    b"script" => panic!("no scripts in the report"),
                    _ => {}
                }
            }
            Ok(Event::Empty(e)) => {
                check_attrs(&e);
                assert_ne!(e.name().as_ref(), b"script");
                assert_ne!(e.name().as_ref(), b"link", "no linked style sheets");
                assert_ne!(e.name().as_ref(), b"img");
            }
            Ok(Event::End(_)) => depth -= 1,
            Ok(Event::GeneralRef(g)) => {
                let name = String::from_utf8_lossy(&g).into_owned();
                assert!(
                    g.is_char_ref() || ["amp", "lt", "gt", "quot", "apos"].contains(&name.as_str()),
                    "entity &{name}; is not XML"
                );
            }
            Ok(_) => {}
            Err(e) => panic!("malformed HTML at {}: {e}", r.error_position()),
        }
    }
    assert_eq!(depth, 0, "unclosed elements");
    assert!(!html.contains("@import"));
    assert!(!html.to_lowercase().contains("<script"));
    (svgs, tables)
}

fn html_report_of_a_finished_sweep() {
    let (_dir_tmp, dir) = scratch("finished");
    write_run(&dir, "prefork", "open", &testdata::open_sweep(), true);
    let out = ok(&run(&["report", dir.to_str().unwrap()]));
    let page = dir.join("report.html");
    assert_eq!(out.trim(), page.display().to_string());
    let html = std::fs::read_to_string(&page).unwrap();
    let (svgs, tables) = check_html(&html);
    // The fixture stores no histogram: the latency distribution's two charts are lines.
    assert_eq!(
        svgs, 6,
        "throughput, latency, errors, time split, 2 timelines"
    );
    assert_eq!(html.matches("no response-time histogram stored").count(), 2);
    // The steps' table, and the bottleneck card's ranked candidates at the top.
    assert_eq!(tables, 2);
    assert!(html.contains("<section class=\"card bottleneck"));
    assert!(html.contains("Saturation at 400 req/s offered (step"));
    assert!(html.contains("capacity 300 req/s"));
    assert!(html.contains("ideal: throughput = offered"));
    assert!(html.contains("gen1"), "host shown");
    assert!(html.contains("overload sweep --rate"), "command line shown");
    assert!(!html.contains("Incomplete run"));
    // --out elsewhere.
    let other = dir.join("elsewhere.html");
    let out = ok(&run(&[
        "report",
        dir.to_str().unwrap(),
        "--out",
        other.to_str().unwrap(),
    ]));
    assert!(out.contains("elsewhere.html") && other.exists());
}

/// The server-side chart titles: none may appear without observation.
const SERVER_TITLES: [&str; 6] = [
    "Server CPU vs load",
    "CPU time per response",
    "Listen queue overflows and drops per step",
    "Timeline: worker processes",
    "Timeline: TCP connections on port",
    "Timeline: accept queue",
];

fn html_report_without_observation_has_no_server_section() {
    let (_dir_tmp, dir) = scratch("no-server");
    write_run(&dir, "plain", "open", &testdata::open_sweep(), true);
    ok(&run(&["report", dir.to_str().unwrap()]));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let (svgs, _) = check_html(&html);
    assert_eq!(svgs, 6);
    for t in SERVER_TITLES {
        assert!(!html.contains(t), "{t}");
    }
    assert!(!html.contains("<h2>Server</h2>"));
    assert!(!html.contains(">TIME_WAIT</th>"), "no server columns");
}

fn html_report_with_server_data_has_server_charts_columns_and_findings() {
    let (_dir_tmp, dir) = scratch("server");
    write_run(&dir, "observed", "open", &testdata::server_sweep(), true);
    ok(&run(&["report", dir.to_str().unwrap()]));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let (svgs, tables) = check_html(&html);
    assert_eq!(svgs, 12, "6 load charts + 6 server charts");
    assert_eq!(tables, 2, "the steps, and the bottleneck card's candidates");
    for t in SERVER_TITLES {
        assert!(html.contains(&format!("<title>{t}")), "{t}");
    }
    assert!(html.contains("Server CPU vs load (host web)"));
    assert!(html.contains("watched: php"));
    assert!(html.contains("limit 128"));
    assert!(html.contains("<h2>Server</h2>"));
    // The steps table's server column group: CPU 100% and 550 overflows at 500 req/s.
    assert!(html.contains(">server</th>") && html.contains(">TIME_WAIT</th>"));
    assert!(html.contains("<td class=\"grp\">100%</td>"));
    assert!(html.contains("<td class=\"bad\">550</td>"));
    // The server findings are listed with the others.
    let findings = &html[html.find("<h2>Findings</h2>").unwrap()..];
    let findings = &findings[..findings.find("</ul>").unwrap()];
    assert!(findings.contains("listen queue overflowed"), "{findings}");
    assert!(findings.contains("TIME_WAIT reached"), "{findings}");
    assert!(
        findings.contains("all 16 workers of pool www busy from 500 req/s"),
        "{findings}"
    );
    assert!(
        findings.contains("saturation at 400 req/s offered (step 4)"),
        "{findings}"
    );
    // The JSON report carries them too.
    ok(&run(&["report", dir.to_str().unwrap(), "--format", "json"]));
    let json = std::fs::read_to_string(dir.join("report.json")).unwrap();
    assert!(json.contains("listen queue overflowed"));
}

fn interrupted_run_with_a_truncated_line_is_reported_as_incomplete() {
    let (_dir_tmp, dir) = scratch("truncated");
    let steps = testdata::open_sweep();
    write_run(&dir, "cut", "open", &steps[..3], false);
    // The writer was killed in the middle of the next step's line.
    let line = serde_json::to_string(&steps[3]).unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.join("steps.jsonl"))
        .unwrap();
    std::io::Write::write_all(&mut f, &line.as_bytes()[..line.len() / 2]).unwrap();
    drop(f);
    let o = run(&["report", dir.to_str().unwrap()]);
    ok(&o);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("incomplete"), "{stderr}");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    check_html(&html);
    assert!(html.contains("Incomplete run"));
    assert!(
        html.contains("truncated last line"),
        "the skipped line is named"
    );
    assert!(html.contains("3 steps saved"));
    // Every other format works on it too.
    for f in ["csv", "json", "gnuplot"] {
        ok(&run(&["report", dir.to_str().unwrap(), "--format", f]));
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["complete"], false);
    assert!(json["notes"][0].as_str().unwrap().contains("truncated"));
}

fn csv_json_and_gnuplot_exports() {
    let (_dir_tmp, dir) = scratch("exports");
    write_run(&dir, "prefork", "open", &testdata::open_sweep(), true);
    let d = dir.to_str().unwrap();
    let out = ok(&run(&["report", d, "--format", "csv"]));
    assert!(out.trim().ends_with("steps.csv"));
    let csv = std::fs::read_to_string(dir.join("steps.csv")).unwrap();
    assert_eq!(csv.lines().count(), 6);
    assert!(csv.starts_with("step,offered,"));

    ok(&run(&["report", d, "--format", "json"]));
    let text = std::fs::read_to_string(dir.join("report.json")).unwrap();
    assert!(!text.contains("HISTFAKE"), "no histogram blobs");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["analysis"]["saturation"]["offered"], 400.0);
    assert_eq!(v["run"]["name"], "prefork");

    let out = ok(&run(&["report", d, "--format", "gnuplot"]));
    assert!(
        out.contains("steps.dat") && out.contains("steps.gp"),
        "{out}"
    );
    let dat = std::fs::read_to_string(dir.join("steps.dat")).unwrap();
    assert!(dat.contains("# step start_s demanded_rate request_rate reply_rate_avg"));
    assert_eq!(dat.lines().filter(|l| !l.starts_with('#')).count(), 5);
    // gnuplot draws it: tests/suite/report_hist.rs (`gnuplot_draws_the_exported_script`, ignored
    // with the reason where gnuplot is missing).
}

fn closed_loop_report_has_the_usl_curve() {
    let (_dir_tmp, dir) = scratch("closed");
    write_run(&dir, "workers8", "closed", &testdata::closed_sweep(), true);
    ok(&run(&["report", dir.to_str().unwrap()]));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    check_html(&html);
    assert!(html.contains("Throughput vs users"));
    assert!(html.contains("USL fit"));
}

fn empty_folder_and_bad_input() {
    let (_dir_tmp, dir) = scratch("empty");
    write_run(&dir, "nothing", "open", &[], false);
    ok(&run(&["report", dir.to_str().unwrap()]));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    // Nothing to draw: each chart is a line of text saying so, not an empty frame.
    let (svgs, _) = check_html(&html);
    assert_eq!(svgs, 0);
    assert_eq!(
        html.matches("<p class=\"empty-chart\">").count(),
        8,
        "{html}"
    );
    assert!(html.contains("no data"));

    let (_missing_tmp, missing) = scratch("missing");
    let err = usage_error(&run(&["report", missing.to_str().unwrap()]));
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let (_foreign_tmp, foreign) = scratch("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    let err = usage_error(&run(&["report", foreign.to_str().unwrap()]));
    assert!(err.contains("run.json"), "{err}");
    usage_error(&run(&["report", dir.to_str().unwrap(), "--format", "pdf"]));
    let err = usage_error(&run(&[
        "report",
        dir.to_str().unwrap(),
        "--out",
        "/nonexistent-dir/x.html",
    ]));
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

fn compare_two_runs() {
    let (_a_tmp, a) = scratch("cmp-prefork");
    let (_b_tmp, b) = scratch("cmp-fpm");
    write_run(&a, "prefork", "open", &testdata::open_sweep(), true);
    let mut faster = testdata::open_sweep();
    for s in &mut faster {
        s.summary.response_time_ms.p50 /= 2.0;
        s.summary.response_time_ms.p99 /= 4.0;
    }
    write_run(&b, "fpm", "open", &faster, true);
    let (_page_tmp, page) = scratch("cmp-out.html");
    let out = ok(&run(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        page.to_str().unwrap(),
        "--names",
        "Prefork,FPM",
    ]));
    assert!(out.contains("Prefork") && out.contains("FPM"), "{out}");
    assert!(out.contains("(0.50×)") && out.contains("(0.25×)"), "{out}");
    assert!(out.contains("saturation"), "{out}");
    let html = std::fs::read_to_string(&page).unwrap();
    let (svgs, tables) = check_html(&html);
    assert_eq!(svgs, 4, "no server CPU overlay without observation");
    assert_eq!(tables, 2);
    assert!(!html.contains("Server CPU"));
    assert!(
        html.contains(">Prefork</text>") && html.contains(">FPM</text>"),
        "legend"
    );

    // Both runs observed: the server CPU overlay is added.
    let (_sa_tmp, sa) = scratch("cmp-server-a");
    let (_sb_tmp, sb) = scratch("cmp-server-b");
    write_run(&sa, "a", "open", &testdata::server_sweep(), true);
    write_run(&sb, "b", "open", &testdata::server_sweep()[..3], true);
    let (_page2_tmp, page2) = scratch("cmp-server-out.html");
    ok(&run(&[
        "compare",
        sa.to_str().unwrap(),
        sb.to_str().unwrap(),
        "--out",
        page2.to_str().unwrap(),
    ]));
    let html = std::fs::read_to_string(&page2).unwrap();
    let (svgs, _) = check_html(&html);
    assert_eq!(svgs, 5);
    assert!(html.contains("<title>Server CPU (busy, mean) vs load"));

    // Mixed open and closed loop: a one-line usage error.
    let (_c_tmp, c) = scratch("cmp-closed");
    write_run(&c, "closed", "closed", &testdata::closed_sweep(), true);
    let err = usage_error(&run(&["compare", a.to_str().unwrap(), c.to_str().unwrap()]));
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let err = usage_error(&run(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--names",
        "one",
    ]));
    assert!(err.contains("--names"), "{err}");
}

/// The control characters in `bytes` (ESC, BEL, C1 controls…), leaving out the tabs and line
/// ends a format is made of; a stray newline inside a field shows as a broken line instead.
fn raw_controls(bytes: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(bytes);
    text.chars()
        .filter(|c| c.is_control() && *c != '\n' && *c != '\t' && *c != '\r')
        .map(|c| c as u32 as u8)
        .collect()
}

/// A results folder whose name, run name, URL, command line and server group carry terminal
/// escape sequences and a newline: neither `report` (HTML, CSV, JSON, gnuplot, and what it
/// prints) nor `compare` lets one through raw.
fn control_characters_from_a_results_folder_are_escaped() {
    let evil = "run\u{1b}]0;pwned\u{7}\u{1b}[2J\nx";
    let (_tmp, dir) = scratch(evil);
    let mut steps = testdata::server_sweep();
    for s in &mut steps {
        if let Some(src) = s.server.as_mut().and_then(|o| o.sources.first_mut()) {
            for g in &mut src.groups {
                g.name = format!("php\u{1b}[31m\n{}", g.name);
            }
        }
    }
    let mut info = testdata::info(evil, "open", Some("p99<100ms"));
    info.urls = vec![format!("GET http://127.0.0.1:8080/{evil}")];
    info.command_line.push(evil.to_string());
    let mut w = Writer::create(&dir, info).unwrap();
    for s in &steps {
        w.append_step(s, &testdata::series(s)).unwrap();
    }
    w.finish(true, "all steps done").unwrap();

    let d = dir.to_str().unwrap();
    for (format, file, paths) in [
        ("html", "report.html", 1),
        ("csv", "steps.csv", 1),
        ("json", "report.json", 1),
        ("gnuplot", "steps.dat", 2),
    ] {
        let o = run(&["report", d, "--format", format]);
        let printed = ok(&o);
        // One path per line: the newline of the folder's name is escaped too.
        assert_eq!(
            raw_controls(printed.as_bytes()),
            b"",
            "{format}: {printed:?}"
        );
        assert_eq!(raw_controls(&o.stderr), b"", "{format}");
        assert_eq!(printed.lines().count(), paths, "{format}: {printed:?}");
        let written = std::fs::read(dir.join(file)).unwrap();
        assert_eq!(raw_controls(&written), b"", "{file}");
        assert!(
            !String::from_utf8_lossy(&written).contains("pwned\u{7}"),
            "{file}"
        );
    }
    let gp = std::fs::read(dir.join("steps.gp")).unwrap();
    assert_eq!(raw_controls(&gp), b"", "steps.gp");
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("\\x1b[2J"), "escaped, not dropped");
    check_html(&html);

    let (_b_tmp, b) = scratch("plain");
    write_run(&b, "plain", "open", &testdata::server_sweep(), true);
    let (_page_tmp, page) = scratch("cmp-evil.html");
    let o = run(&[
        "compare",
        d,
        b.to_str().unwrap(),
        "--out",
        page.to_str().unwrap(),
    ]);
    let printed = ok(&o);
    assert_eq!(raw_controls(printed.as_bytes()), b"", "{printed:?}");
    assert_eq!(raw_controls(&o.stderr), b"");
    let page = std::fs::read(&page).unwrap();
    assert_eq!(raw_controls(&page), b"");
}

/// A one-step folder (what `run --out` writes) gets a page made for one run: its seconds,
/// histogram and percentile distribution, none of a sweep's charts against load.
fn html_report_of_one_step_is_a_page_for_one_run() {
    let (_dir_tmp, dir) = scratch("one-step");
    let mut steps = testdata::open_sweep();
    steps.truncate(1);
    write_run(&dir, "one", "open", &steps, true);
    ok(&run(&["report", dir.to_str().unwrap()]));
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    let (svgs, tables) = check_html(&html);
    assert_eq!(svgs, 3, "three timelines: rate, response time, send lag");
    assert_eq!(tables, 1, "the response times table");
    for section in [
        "Timeline: responses per second",
        "Timeline: response time",
        "Timeline: send lag",
        "<h2>Response times</h2>",
        "Response-time histogram",
        "Percentile distribution",
    ] {
        assert!(html.contains(section), "{section} missing");
    }
    for word in [
        "vs offered",
        "vs load",
        "kept up with every step",
        "aturation",
        "<h2>Steps</h2>",
    ] {
        assert!(!html.contains(word), "sweep-only '{word}' on a run's page");
    }
    // Two steps: the sweep's page, as before.
    let (_tmp2, dir2) = scratch("two-steps");
    write_run(&dir2, "two", "open", &testdata::open_sweep()[..2], true);
    ok(&run(&["report", dir2.to_str().unwrap()]));
    let html = std::fs::read_to_string(dir2.join("report.html")).unwrap();
    assert!(html.contains("Throughput vs offered load"));
}
