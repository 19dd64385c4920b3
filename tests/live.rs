//! The terminal side: colour on a pseudo-terminal (NO_COLOR respected), and the live view
//! under tmux. These need programs beyond the crate (util-linux `script`, tmux): where one is
//! missing its tests show as ignored with the reason (tests/common/harness.rs).
mod common;
use common::harness::{self, Need};
use common::{output_within, Target};
use std::time::Duration;

const LOAD: Duration = Duration::from_secs(60);

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn main() {
    harness::main(vec![harness::trial(
        "colour_on_a_terminal_unless_no_color",
        &[Need::Script],
        colour_on_a_terminal_unless_no_color,
    )]);
}

/// On a terminal (util-linux `script` gives the run a pseudo-terminal) the summary is coloured;
/// NO_COLOR turns it off.
fn colour_on_a_terminal_unless_no_color() {
    let t = Target::start(&["--threads", "1"]);
    let exe = env!("CARGO_BIN_EXE_overload");
    let cmd = format!("{exe} run -n 50 -c 2 -q --slo p99\\<5s {}", t.url);
    let under_tty = |no_color: bool| {
        let mut c = std::process::Command::new("script");
        c.args(["-qec", &cmd, "/dev/null"]).env("TERM", "xterm");
        if no_color {
            c.env("NO_COLOR", "1");
        } else {
            c.env_remove("NO_COLOR");
        }
        let out = output_within(&mut c, LOAD);
        assert!(out.status.success(), "{}", text(&out.stdout));
        text(&out.stdout)
    };
    let coloured = under_tty(false);
    assert!(coloured.contains("\x1b[32m✓\x1b[0m"), "{coloured:?}");
    let plain = under_tty(true);
    assert!(
        plain.contains('✓') && !plain.contains("\x1b[3"),
        "{plain:?}"
    );
}
