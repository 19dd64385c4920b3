//! The integration tests that drive the real binary, in one test binary: a module per area,
//! so the tests link once and run side by side whatever file they are in (docs/architecture.md,
//! "Tests"). A new file is `tests/suite/NAME.rs` with a `pub fn trials() -> Vec<Trial>` at
//! its top (see [`tests!`]), its `mod NAME;` line below and its name in the `suite!` list
//! (rustfmt formats only the files of plain `mod` lines). tests/lab.rs, tests/lab_apps.rs and
//! tests/hostile.rs stay binaries of their own: .ci/run runs them apart, for the load they make.
//!
//! One harness for all (libtest-mimic, tests/common/harness.rs): a test whose needs are
//! missing shows as ignored, with the reason. `cargo test --test suite sweep::` runs one
//! module; the slowest tests are named after the summary.
#[path = "../common/mod.rs"]
mod common;

/// The trials of a module whose tests need nothing of the machine: each function by its name.
macro_rules! tests {
    ($($test:ident),* $(,)?) => {
        vec![$($crate::common::harness::trial(stringify!($test), &[], $test)),*]
    };
}

/// Runs the modules' trials: one name per module declared below.
macro_rules! suite {
    ($($module:ident),* $(,)?) => {
        fn main() {
            let mut modules = vec![common::harness::module_trials("suite", || {
                tests![every_file_is_a_listed_module_without_libtest_tests]
            })];
            modules.extend([$(common::harness::module_trials(
                stringify!($module),
                $module::trials,
            )),*]);
            common::harness::main(round_robin(modules))
        }
    };
}

/// The modules' trials taken in turns: the first of each module, then the second of each...
/// A module whose tests take turns on a lock (tests/suite/sweep.rs: one sweep at a time) has
/// its tests spread over the run, so the test threads seldom wait on each other.
fn round_robin(modules: Vec<Vec<libtest_mimic::Trial>>) -> Vec<libtest_mimic::Trial> {
    let mut queues: Vec<_> = modules.into_iter().map(Vec::into_iter).collect();
    let mut out = Vec::new();
    loop {
        let before = out.len();
        out.extend(queues.iter_mut().filter_map(Iterator::next));
        if out.len() == before {
            return out;
        }
    }
}

/// Every file of tests/suite/ is a module of this binary, named in `suite!` (else its tests
/// never run), and none holds a libtest `#[test]` (this harness would never run it).
fn every_file_is_a_listed_module_without_libtest_tests() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite");
    let main = std::fs::read_to_string(dir.join("main.rs")).unwrap();
    let listed = main
        .split("\nsuite![")
        .nth(1)
        .and_then(|l| l.split("];").next())
        .expect("the suite! list in tests/suite/main.rs");
    let listed: Vec<&str> = listed
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .collect();
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let Some(name) = path.file_stem().and_then(|n| n.to_str()) else {
            continue;
        };
        if path.extension().is_none_or(|e| e != "rs") || name == "main" {
            continue;
        }
        files += 1;
        assert!(
            main.lines().any(|l| l == format!("mod {name};")),
            "tests/suite/{name}.rs: no `mod {name};` line in tests/suite/main.rs"
        );
        assert!(
            listed.contains(&name),
            "tests/suite/{name}.rs: not in the suite! list of tests/suite/main.rs"
        );
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            assert!(
                !line.trim_start().starts_with("#[test]"),
                "tests/suite/{name}.rs:{}: a libtest #[test] never runs here: list the function \
                 in the module's trials() (docs/architecture.md, \"Tests\")",
                i + 1
            );
        }
    }
    // And no name without its file (the compiler says so first, for a `mod` line).
    assert_eq!(files, listed.len(), "suite! names {listed:?}");
}
mod access_log;
mod audit;
mod audit_lab;
mod cli_errors;
mod cli_home;
mod connect;
mod control;
mod diagnose;
mod experiment;
mod faults;
mod generate;
mod grafana;
mod h2;
mod h2_props;
mod h3;
mod h3_client;
mod help;
mod http_props;
mod imports;
mod lab_login;
mod layers;
mod layout;
mod limits;
mod live;
mod merge;
mod metrics_out;
mod names;
mod netem;
mod observe;
mod readme;
mod report;
mod report_hist;
mod run;
mod scale_deploy;
mod scenario;
mod scenario_mux;
mod signals;
mod slo_names;
mod source;
mod stages;
mod store_parse;
mod sweep;
mod target;
mod title;
mod tls;
mod tui;

suite![
    access_log,
    audit,
    audit_lab,
    cli_errors,
    cli_home,
    connect,
    control,
    diagnose,
    experiment,
    faults,
    generate,
    grafana,
    h2,
    h2_props,
    h3,
    h3_client,
    help,
    http_props,
    imports,
    lab_login,
    layers,
    layout,
    limits,
    live,
    merge,
    metrics_out,
    names,
    netem,
    observe,
    readme,
    report,
    report_hist,
    run,
    scale_deploy,
    scenario,
    scenario_mux,
    signals,
    slo_names,
    source,
    stages,
    store_parse,
    sweep,
    target,
    title,
    tls,
    tui,
];
