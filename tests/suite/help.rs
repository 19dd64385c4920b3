//! `--help` shows the options people use, grouped, one line each, on one screen; `--help-all`
//! shows every option the clap definition has (so the two cannot drift apart), and an option
//! left out of `--help` still works. Through the real binary; the load runs are bounded and on
//! loopback.
use crate::common::{bin, output_within, run_json, Target, QUICK};
use clap::CommandFactory;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        sweep_help_fits_one_screen_and_help_all_lists_every_flag,
        run_and_capacity_help_one_line_each,
        every_long_help_fits_one_screen,
        options_left_out_of_help_still_work
    ]
}

/// `overload ARGS` on a pipe (no terminal: clap's 100 columns), its exit code and stdout.
fn help(args: &[&str]) -> String {
    let out = output_within(bin().args(args).env_remove("COLUMNS"), QUICK);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}{}",
        text,
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// Every `--long` and `-s` flag of a subcommand, from the clap definition itself.
fn flags(sub: &str) -> Vec<String> {
    let cmd = overload::cli::Cli::command();
    let sub = cmd.find_subcommand(sub).expect("subcommand");
    let mut flags = Vec::new();
    for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
        if let Some(l) = arg.get_long() {
            flags.push(format!("--{l}"));
        }
        if let Some(s) = arg.get_short() {
            flags.push(format!("-{s}"));
        }
    }
    flags
}

fn sweep_help_fits_one_screen_and_help_all_lists_every_flag() {
    let short = help(&["sweep", "--help"]);
    let lines = short.lines().count();
    assert!(lines <= 60, "sweep --help is {lines} lines:\n{short}");
    // The common options are there, grouped, and the way to the rest is said.
    for common in ["--rates", "--users", "--step", "--slo", "--out", "--watch"] {
        assert!(short.contains(common), "{common} missing:\n{short}");
    }
    assert!(short.contains("--help-all"), "{short}");
    assert_one_line_each(&short);
    let all = help(&["sweep", "--help-all"]);
    for flag in flags("sweep") {
        let shown = all.contains(&format!(" {flag} ")) || all.contains(&format!(" {flag},"));
        let shown = shown || all.contains(&format!(" {flag}\n"));
        assert!(shown, "{flag} missing from sweep --help-all:\n{all}");
    }
    assert!(all.lines().count() > lines, "{all}");
    // -h is --help, not a longer or shorter page.
    assert_eq!(help(&["sweep", "-h"]), short);
}

/// One line each: below the usage, every line is a heading, an option, a blank or the footer;
/// no option's help wraps onto a second line.
fn assert_one_line_each(page: &str) {
    for line in page
        .lines()
        .skip_while(|l| !l.starts_with("Usage:"))
        .skip(1)
    {
        assert!(line.chars().count() <= 100, "wider than 100: {line}");
        let option = ["  -", "      --", "  [", "  <"]
            .iter()
            .any(|p| line.starts_with(p));
        let heading = !line.starts_with(' ') && line.ends_with(':');
        let footer = line.starts_with("Every option:");
        assert!(
            line.is_empty() || option || heading || footer,
            "a wrapped line: {line:?}\n{page}"
        );
    }
}

fn run_and_capacity_help_one_line_each() {
    for sub in ["run", "capacity"] {
        let page = help(&[sub, "--help"]);
        assert!(page.lines().count() <= 60, "{page}");
        assert_one_line_each(&page);
    }
}

fn every_long_help_fits_one_screen() {
    let cmd = overload::cli::Cli::command();
    for sub in cmd.get_subcommands().map(|s| s.get_name().to_string()) {
        if sub == "help" {
            continue;
        }
        let text = help(&[&sub, "--help"]);
        let lines = text.lines().count();
        assert!(lines <= 60, "{sub} --help is {lines} lines:\n{text}");
        help(&[&sub, "--help-all"]);
    }
}

fn options_left_out_of_help_still_work() {
    // --seed, --pacing-slack and --arrival are under --help-all only.
    let short = help(&["run", "--help"]);
    for rare in ["--seed", "--pacing-slack", "--arrival"] {
        assert!(!short.contains(rare), "{rare} is in run --help");
    }
    let t = Target::start(&[]);
    let url = format!("{}/", t.url);
    let (out, v) = run_json(&[
        "run",
        &url,
        "-R",
        "50",
        "-n",
        "20",
        "--seed",
        "7",
        "--pacing-slack",
        "2ms",
        "--arrival",
        "poisson",
    ]);
    assert_eq!(out.status.code(), Some(0), "{v}");
    assert_eq!(v["responses"].as_u64(), Some(20), "{v}");
}
