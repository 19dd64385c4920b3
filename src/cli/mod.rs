//! The command line: one file per subcommand. Each parses its own arguments into the
//! library's configuration types (`usecase`), calls the library and prints what it returns;
//! `main` maps errors to exit codes. clap is used here and nowhere else.
use clap::{Parser, Subcommand};

pub mod access_log_args;
pub mod agent;
pub mod agent_generate;
pub mod audit;
pub mod capacity;
pub mod compare;
pub mod demo;
pub mod diagnose_args;
pub mod experiment;
pub mod generate;
pub mod generators_args;
mod help;
mod hints;
pub mod lab;
pub mod lab_app_args;
pub mod lab_netem;
pub mod live_args;
pub mod load_args;
pub mod merge;
pub mod observe_args;
pub mod push_args;
pub mod report;
pub mod run;
pub mod scenario_args;
pub mod segment_args;
pub mod sweep;
pub mod target;
pub mod view_args;

pub use help::command;

/// `overload --version`: the version and the commit it was built from (build.rs).
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("OVERLOAD_COMMIT"),
    ")"
);

#[derive(Parser, Debug)]
#[command(
    name = "overload",
    version = VERSION,
    about = "Load-test web stacks and analyse how they behave under overload",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Send load to one or more URLs (open loop with --rate, closed loop with --users).
    Run(run::RunArgs),
    /// Step through load levels; find the saturation point; store every step as it ends.
    Sweep(sweep::SweepArgs),
    /// Find the highest rate meeting an SLO (geometric growth, then bisection).
    Capacity(capacity::CapacityArgs),
    /// Check a stack's tuning before the load (keep-alive, compression, caching, kernel
    /// limits, PHP), each finding with its evidence and the change to make.
    Audit(audit::AuditArgs),
    /// Serve the embedded HTTP/1.1 and HTTP/2 (h2c) target (workloads of the studies: sleep,
    /// cpu, bytes).
    Target(target::TargetArgs),
    /// Sweep the embedded target past saturation and report: the tool in one command.
    #[command(after_help = crate::usecase::demo_config::help_note())]
    Demo(demo::DemoArgs),
    /// Bring up the studies' real web stacks (nginx, Apache, PHP-FPM, MariaDB) on loopback.
    Lab(lab::LabArgs),
    /// Regenerate a results folder's report: HTML with charts, CSV, JSON or gnuplot.
    Report(report::ReportArgs),
    /// Overlay several runs' curves in one HTML page and compare them in a table.
    Compare(compare::CompareArgs),
    /// Add the results folders of a split plan's segments (--segment I/N) into one, exactly.
    Merge(merge::MergeArgs),
    /// Sample this host (CPU, processes, TCP) and serve it to a remote controller, and the
    /// host and PHP settings to `audit --agent`.
    Agent(agent::AgentArgs),
    /// Run a matrix of server configurations from a TOML file and compare them in one report.
    Experiment(experiment::ExperimentArgs),
    /// Write the manual pages or a shell's completions (for packagers and installs from source).
    Generate(generate::GenerateArgs),
}

/// Parses the command line, runs it, and returns the process exit code (1 for a success
/// whose standard output was lost: `console::exit_code`).
pub fn main() -> i32 {
    // A file size limit (ulimit -f) then fails the write with EFBIG, said like a full disk,
    // instead of killing the process with half a line written.
    crate::signals::catch_file_size_limit();
    crate::console::exit_code(dispatch())
}

fn dispatch() -> i32 {
    use std::io::IsTerminal;
    crate::report::style::enable(crate::report::style::wanted(
        std::io::stdout().is_terminal(),
        std::env::var("NO_COLOR").ok().as_deref(),
        std::env::var("TERM").ok().as_deref(),
    ));
    let parsed = command()
        .try_get_matches()
        .and_then(|m| <Cli as clap::FromArgMatches>::from_arg_matches(&m));
    let cli = match parsed {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind as K;
            // Help and version print as clap renders them (help shown for a missing
            // subcommand is a usage error); every other error is one line naming the flag.
            if matches!(
                e.kind(),
                K::DisplayHelp | K::DisplayVersion | K::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                if let Err(err) = e.print() {
                    if !e.use_stderr() {
                        crate::console::stdout_failed(err);
                    }
                }
                return if e.use_stderr() { 2 } else { 0 };
            }
            // `overload URL`: what ab, wrk and hey users type first.
            if e.kind() == K::InvalidSubcommand {
                if let Some(hint) = std::env::args()
                    .nth(1)
                    .and_then(|a| hints::not_a_command(&a))
                {
                    crate::eoutln!("overload: {hint}");
                    return 2;
                }
            }
            crate::eoutln!("overload: {}", concise(&e));
            return 2;
        }
    };
    let result = match cli.command {
        Command::Run(a) => run::run(a),
        Command::Sweep(a) => sweep::run(a),
        Command::Capacity(a) => capacity::run(a),
        Command::Audit(a) => audit::run(a),
        Command::Target(a) => target::run(a),
        Command::Demo(a) => demo::run(a),
        Command::Lab(a) => lab::run(a),
        Command::Report(a) => report::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Merge(a) => merge::run(a),
        Command::Agent(a) => agent::run(a),
        Command::Experiment(a) => experiment::run(a),
        Command::Generate(a) => generate::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            crate::eoutln!("overload: {e}");
            e.exit_code()
        }
    }
}

/// A clap error in one line: its first line (which names the flag or value), plus what its
/// later lines would have added (the missing arguments, the possible values, a suggestion)
/// and which --help to read.
fn concise(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    let text = e.render().to_string();
    let first = text.lines().next().unwrap_or("").trim();
    let mut msg = first.strip_prefix("error: ").unwrap_or(first).to_string();
    let list = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(v)) if !v.is_empty() => Some(v.join(", ")),
        _ => None,
    };
    if msg.ends_with(':') {
        // "the following required arguments were not provided:" and the like.
        if let Some(args) = list(ContextKind::InvalidArg) {
            msg = format!("{msg} {args}");
        }
    }
    if let Some(values) = list(ContextKind::ValidValue) {
        if !msg.contains("possible values") {
            msg = format!("{msg} (possible values: {values})");
        }
    }
    for kind in [
        ContextKind::SuggestedArg,
        ContextKind::SuggestedValue,
        ContextKind::SuggestedSubcommand,
    ] {
        if let Some(s) = list(kind) {
            msg = format!("{msg} (did you mean '{s}'?)");
        }
    }
    // The (sub)command the arguments reached, for its --help.
    let mut cmd = command();
    let mut path = vec!["overload".to_string()];
    for arg in std::env::args().skip(1) {
        match cmd.find_subcommand(&arg) {
            Some(sub) if !arg.starts_with('-') => {
                path.push(arg);
                cmd = sub.clone();
            }
            _ => {}
        }
    }
    let command = path.join(" ");
    format!("{msg}; see '{command} --help'")
}

#[cfg(test)]
mod tests;
