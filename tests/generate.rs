//! `overload generate`: manual pages and completions come from the same clap definitions as
//! `--help`, so a flag added to a command shows up in both.
mod common;
use common::{bin, output_within, scratch, QUICK};

#[test]
fn man_pages_cover_every_command_and_its_flags() {
    let dir = scratch();
    let out = output_within(
        bin().args(["generate", "man", "--out"]).arg(dir.path()),
        QUICK,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for page in [
        "overload.1",
        "overload-run.1",
        "overload-sweep.1",
        "overload-lab-up.1",
    ] {
        let text = std::fs::read_to_string(dir.path().join(page)).expect(page);
        assert!(text.contains("\n.TH "), "{page} is not a roff man page");
    }
    let run = std::fs::read_to_string(dir.path().join("overload-run.1")).unwrap();
    // The page is titled for `man overload-run` and lists the command's own flags.
    assert!(
        run.contains(".TH overload-run 1"),
        "{}",
        &run[..200.min(run.len())]
    );
    assert!(run.contains("\\-\\-rate"), "run's page lacks --rate");
    let top = std::fs::read_to_string(dir.path().join("overload.1")).unwrap();
    // The top page points at each command's own page.
    assert!(
        top.contains("overload\\-run(1)"),
        "top page lacks overload-run(1)"
    );
}

#[test]
fn completions_name_the_subcommands_and_their_flags() {
    let out = output_within(bin().args(["generate", "bash"]), QUICK);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("_overload()"), "no completion function");
    for word in ["sweep", "capacity", "--rate", "--slo"] {
        assert!(text.contains(word), "bash completion lacks {word}");
    }
    let dir = scratch();
    let out = output_within(
        bin().args(["generate", "zsh", "--out"]).arg(dir.path()),
        QUICK,
    );
    assert!(out.status.success());
    assert!(
        dir.path().join("_overload").is_file(),
        "zsh looks for _overload"
    );
}

#[test]
fn man_without_a_folder_is_a_usage_error() {
    let out = output_within(bin().args(["generate", "man"]), QUICK);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--out"), "{err}");
}

#[test]
fn a_planted_symlink_is_not_written_through() {
    let dir = scratch();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    let out_dir = dir.path().join("comp");
    std::fs::create_dir(&out_dir).unwrap();
    std::os::unix::fs::symlink(&victim, out_dir.join("overload")).unwrap();
    let out = output_within(
        bin().args(["generate", "bash", "--out"]).arg(&out_dir),
        QUICK,
    );
    assert_ne!(out.status.code(), Some(0), "wrote through a symlink");
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
}
