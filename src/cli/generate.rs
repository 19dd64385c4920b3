//! `overload generate`: the manual pages and shell completions, rendered from the same clap
//! definitions that parse the command line, so they can never drift from `--help`. The
//! packaging script (scripts/package-deb.sh) installs what this writes; users of a binary
//! built from source run it once (docs/guide.md: Install).
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use clap_complete::Shell;

use crate::fsutil;

#[derive(Args, Debug)]
pub struct GenerateArgs {
    /// What to write: `man` (one page per command, into --out), or a shell's completions
    /// (to standard output, or into --out as the file name the shell looks for).
    #[arg(value_name = "WHAT")]
    pub what: Artifact,
    /// Folder to write into (created if missing). Required for `man`.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Artifact {
    /// Manual pages: overload.1, overload-run.1, …
    Man,
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
}

pub fn run(a: GenerateArgs) -> crate::Result<i32> {
    let mut cmd = super::command();
    cmd.build();
    match a.what {
        Artifact::Man => {
            let dir = a.out.ok_or_else(|| {
                crate::Error::usage("generate man: --out DIR is required (one page per command)")
            })?;
            for (name, page) in man_pages(&cmd)? {
                write_into(&dir, &name, &page)?;
            }
        }
        shell => {
            let shell = shell_of(shell);
            let mut text = Vec::new();
            clap_complete::generate(shell, &mut cmd, "overload", &mut text);
            match a.out {
                Some(dir) => write_into(&dir, &completion_file(shell), &text)?,
                None => crate::out!("{}", String::from_utf8_lossy(&text)),
            }
        }
    }
    Ok(0)
}

/// The page of the command and one per subcommand (`overload-run.1`, as git and cargo name
/// theirs), each as (file name, roff text).
pub fn man_pages(cmd: &clap::Command) -> crate::Result<Vec<(String, Vec<u8>)>> {
    let mut pages = Vec::new();
    render(cmd, "overload", &mut pages)?;
    Ok(pages)
}

fn render(
    cmd: &clap::Command,
    name: &str,
    pages: &mut Vec<(String, Vec<u8>)>,
) -> crate::Result<()> {
    // clap_mangen titles a page with the command's own name; a subcommand's page gets the
    // full "overload-run" so `man overload-run` finds it.
    let titled = cmd.clone().name(name.to_string());
    let mut page = Vec::new();
    clap_mangen::Man::new(titled)
        .render(&mut page)
        .map_err(|e| crate::Error::Runtime(format!("generate man: {e}")))?;
    pages.push((format!("{name}.1"), page));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        if sub.get_name() == "help" {
            continue;
        }
        render(sub, &format!("{name}-{}", sub.get_name()), pages)?;
    }
    Ok(())
}

fn shell_of(a: Artifact) -> Shell {
    match a {
        Artifact::Bash => Shell::Bash,
        Artifact::Zsh => Shell::Zsh,
        Artifact::Fish => Shell::Fish,
        Artifact::Elvish => Shell::Elvish,
        Artifact::Powershell | Artifact::Man => Shell::PowerShell,
    }
}

/// The file name each shell's completion loader looks for.
fn completion_file(shell: Shell) -> String {
    match shell {
        Shell::Bash => "overload".into(),
        Shell::Zsh => "_overload".into(),
        Shell::Fish => "overload.fish".into(),
        Shell::Elvish => "overload.elv".into(),
        _ => "_overload.ps1".into(),
    }
}

fn write_into(dir: &std::path::Path, name: &str, data: &[u8]) -> crate::Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| fsutil::write_error(dir, &e))?;
    fsutil::write_atomic(&dir.join(name), data)
}
