//! How `--help` is shown: the options people use, grouped, one line each, on one screen
//! (oha's and hyperfine's habit); `--help-all` shows every option with its details, and the
//! manual pages (`overload generate man`) keep everything too.
//!
//! The groups are the help headings set where each option is defined (`next_help_heading`
//! on the argument structs). Which options `--help` shows is one table here, per subcommand;
//! an option it does not name is hidden from `--help` only (clap's `hide_short_help`), so it
//! still parses, completes and shows in `--help-all` and the manual pages. A subcommand not
//! in the table shows everything: its page is short.
use clap::{Arg, ArgAction, Command};

/// The options `--help` shows, per subcommand path, in the order shown within their group:
/// `--long` flags, or a positional argument's value name.
const COMMON: &[(&str, &[&str])] = &[
    (
        "run",
        &[
            "URL",
            "--urls",
            "--method",
            "--header",
            "--body",
            "--ok-status",
            "--scenario",
            "--access-log",
            "--rate",
            "--users",
            "--concurrency",
            "--think",
            "--stages",
            "--user-stages",
            "--duration",
            "--requests",
            "--warmup",
            "--connections",
            "--slo",
            "--json",
            "--quiet",
            "--out",
            "--report",
            "--latency",
            "--no-tui",
            "--http",
            "--no-keep-alive",
            "--timeout",
            "--threads",
            "--watch",
            "--fpm-status",
            "--agent",
            "--agent-token-file",
        ],
    ),
    (
        "sweep",
        &[
            "URL",
            "--urls",
            "--method",
            "--header",
            "--body",
            "--ok-status",
            "--scenario",
            "--rates",
            "--users",
            "--think",
            "--connections",
            "--warmup",
            "--step",
            "--rest",
            "--past-saturation",
            "--max-errors",
            "--max-p99",
            "--slo",
            "--out",
            "--name",
            "--quiet",
            "--no-tui",
            "--live-port",
            "--http",
            "--no-keep-alive",
            "--timeout",
            "--threads",
            "--watch",
            "--fpm-status",
            "--agent",
            "--agent-token-file",
        ],
    ),
    (
        "capacity",
        &[
            "URL",
            "--urls",
            "--method",
            "--header",
            "--body",
            "--ok-status",
            "--scenario",
            "--start",
            "--max",
            "--precision",
            "--repeat",
            "--connections",
            "--warmup",
            "--step",
            "--rest",
            "--slo",
            "--out",
            "--name",
            "--quiet",
            "--no-tui",
            "--live-port",
            "--http",
            "--no-keep-alive",
            "--timeout",
            "--threads",
            "--watch",
            "--fpm-status",
            "--agent",
            "--agent-token-file",
        ],
    ),
    (
        "audit",
        &[
            "URL",
            "--lab",
            "--agent",
            "--agent-token-file",
            "--php-probe",
            "--fpm-status",
            "--mysql",
            "--mysql-password-file",
            "--no-ab",
            "--json",
            "--cacert",
            "--insecure",
        ],
    ),
    (
        "lab up",
        &[
            "STACK",
            "--web",
            "--size",
            "--workers",
            "--port",
            "--pm",
            "--max-children",
            "--opcache",
            "--keep-alive",
            "--tls",
            "--http2",
            "--json",
        ],
    ),
];

/// The heading of `-h`/`--help`, `--help-all` and `-V`/`--version` in every subcommand.
const HELP: &str = "Help";

/// The command line as clap parses and shows it: the derive definition (`super::Cli`), with
/// `--help` showing the common options and `--help-all` all of them, in every subcommand.
pub fn command() -> Command {
    shape(<super::Cli as clap::CommandFactory>::command(), "")
}

/// The name `COMMON` gives an argument: `--long`, or the positional's value name.
fn shown_name(arg: &Arg) -> Option<String> {
    match arg.get_long() {
        Some(long) => Some(format!("--{long}")),
        None if arg.is_positional() => arg
            .get_value_names()
            .and_then(|v| v.first())
            .map(|n| n.to_string()),
        None => None,
    }
}

/// The options `--help` shows for the subcommand at `path` ("sweep", "lab up"); `None`: all.
pub fn common(path: &str) -> Option<&'static [&'static str]> {
    COMMON.iter().find(|(p, _)| *p == path).map(|(_, c)| *c)
}

fn shape(mut cmd: Command, path: &str) -> Command {
    // clap's own -h shows the first paragraph of each option and --help every paragraph; here
    // both show the one-line page, and --help-all the long one.
    cmd = cmd
        .disable_help_flag(true)
        .max_term_width(100)
        .arg(
            Arg::new("help")
                .short('h')
                .long("help")
                .action(ArgAction::HelpShort)
                .help("Print the common options (--help-all: every option, with details)")
                .help_heading(HELP),
        )
        .arg(
            Arg::new("help-all")
                .long("help-all")
                .action(ArgAction::HelpLong)
                .help("Print every option, with details")
                .help_heading(HELP),
        );
    if !path.is_empty() {
        // The version is propagated to subcommands; its flag is only listed in --help-all.
        cmd = cmd.disable_version_flag(true).arg(
            Arg::new("version")
                .short('V')
                .long("version")
                .action(ArgAction::Version)
                .help("Print version")
                .help_heading(HELP)
                .hide_short_help(true),
        );
    }
    if path.is_empty() {
        cmd = cmd.after_help(
            "overload COMMAND --help: its common options; --help-all: every one. A walk-through: \
             docs/guide.md",
        );
    }
    if let Some(common) = common(path) {
        let args: Vec<(clap::Id, Option<String>)> = cmd
            .get_arguments()
            .map(|a| (a.get_id().clone(), shown_name(a)))
            .collect();
        for (n, (id, name)) in args.into_iter().enumerate() {
            let at = name
                .as_deref()
                .and_then(|name| common.iter().position(|c| *c == name));
            let keep = matches!(id.as_str(), "help" | "help-all" | "version");
            cmd = cmd.mut_arg(id, |a| match at {
                Some(i) => a.display_order(i),
                // The rest keep their definition order, after the common ones of their group.
                None if keep => a,
                None => a.hide_short_help(true).display_order(COMMON_MAX + n),
            });
        }
        cmd = cmd.after_help(format!(
            "Every option: overload {path} --help-all (or man overload-{}). A walk-through: docs/guide.md",
            path.replace(' ', "-")
        ));
    }
    let subs: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in subs {
        let sub_path = if path.is_empty() {
            name.clone()
        } else {
            format!("{path} {name}")
        };
        cmd = cmd.mut_subcommand(name, |s| shape(s, &sub_path));
    }
    cmd
}

/// Above every position in a `COMMON` list.
const COMMON_MAX: usize = 1000;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every subcommand, with its path.
    fn all(cmd: &Command, path: &str, out: &mut Vec<(String, Command)>) {
        for sub in cmd.get_subcommands() {
            let p = format!("{path} {}", sub.get_name()).trim().to_string();
            out.push((p.clone(), sub.clone()));
            all(sub, &p, out);
        }
    }

    fn subcommands() -> Vec<(String, Command)> {
        let mut cmd = command();
        cmd.build();
        let mut out = Vec::new();
        all(&cmd, "", &mut out);
        out
    }

    #[test]
    fn the_table_names_only_options_that_exist() {
        let subs = subcommands();
        for (path, names) in COMMON {
            let (_, cmd) = subs
                .iter()
                .find(|(p, _)| p == path)
                .unwrap_or_else(|| panic!("no subcommand {path}"));
            for name in *names {
                assert!(
                    cmd.get_arguments()
                        .any(|a| shown_name(a).as_deref() == Some(*name)),
                    "{path}: {name} is not one of its options"
                );
            }
        }
    }

    #[test]
    fn help_is_one_screen_and_help_all_has_every_option() {
        for (path, mut cmd) in subcommands() {
            let short = cmd.render_help().to_string();
            assert!(
                short.lines().count() <= 60,
                "{path} --help: {} lines\n{short}",
                short.lines().count()
            );
            let long = cmd.render_long_help().to_string();
            for arg in cmd.get_arguments().filter(|a| !a.is_hide_set()) {
                let name = shown_name(arg).unwrap_or_default();
                assert!(long.contains(&name), "{path} --help-all lacks {name}");
                if let Some(s) = arg.get_short() {
                    assert!(long.contains(&format!("-{s}")), "{path}: -{s}");
                }
            }
            // A command in the table: --help lists its options and no other.
            if let Some(common) = common(&path) {
                // A global option (lab's --prefix) is shown where it is defined.
                for arg in cmd.get_arguments().filter(|a| !a.is_global_set()) {
                    let Some(name) = shown_name(arg) else {
                        continue;
                    };
                    let listed = common.contains(&name.as_str()) || name == "--help-all";
                    let in_short = if arg.is_positional() {
                        short.contains(&format!("[{name}]")) || short.contains(&format!("<{name}>"))
                    } else {
                        short.contains(&format!("{name} ")) || short.contains(&format!("{name}\n"))
                    };
                    assert_eq!(
                        listed || name == "--help",
                        in_short,
                        "{path} --help and {name}"
                    );
                }
            }
        }
    }

    #[test]
    fn an_option_left_out_of_help_still_parses() {
        let cmd = command();
        let u = "http://127.0.0.1:9/";
        let cases: &[&[&str]] = &[
            &["run", u, "--seed", "7", "--pacing-slack", "2ms"],
            &["sweep", u, "--rates", "10,20", "--arrival", "poisson"],
            &["capacity", u, "--slo", "p99<1s", "--tls-resumption", "off"],
            &["audit", u, "--idle-wait", "1s"],
            &["lab", "up", "nginx-fpm", "--min-spare", "2"],
            &["sweep", "--version"],
        ];
        for args in cases {
            let argv = std::iter::once("overload").chain(args.iter().copied());
            match cmd.clone().try_get_matches_from(argv) {
                Ok(_) => {}
                Err(e) => assert_eq!(
                    e.kind(),
                    clap::error::ErrorKind::DisplayVersion,
                    "{args:?}: {e}"
                ),
            }
        }
        // And every hidden option of the table's commands is known to the parser.
        for (path, sub) in subcommands() {
            let Some(_) = common(&path) else { continue };
            for arg in sub.get_arguments().filter(|a| a.is_hide_short_help_set()) {
                let Some(long) = arg.get_long() else { continue };
                let mut argv: Vec<String> = vec!["overload".into()];
                argv.extend(path.split(' ').map(String::from));
                argv.push(format!("--{long}"));
                let err = command().try_get_matches_from(argv).err();
                let kind = err.as_ref().map(|e| e.kind());
                assert_ne!(
                    kind,
                    Some(clap::error::ErrorKind::UnknownArgument),
                    "{path} --{long}: {err:?}"
                );
            }
        }
    }
}
