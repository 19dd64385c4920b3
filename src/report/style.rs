//! Colour for the terminal summary: on only when the command line turned it on (stdout is a
//! terminal and NO_COLOR is unset, see [`wanted`]); off for the library's other callers, for
//! files and for pipes, so what a script reads never holds escape codes.
use std::sync::atomic::{AtomicBool, Ordering};

static ON: AtomicBool = AtomicBool::new(false);

/// Whether to colour: a terminal, NO_COLOR unset or empty (no-color.org), TERM not `dumb`.
pub fn wanted(is_tty: bool, no_color: Option<&str>, term: Option<&str>) -> bool {
    is_tty && no_color.is_none_or(str::is_empty) && term != Some("dumb")
}

/// Turns colour on or off for the whole process (the command line decides, once).
pub fn enable(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

pub fn enabled() -> bool {
    ON.load(Ordering::Relaxed)
}

fn paint(code: &str, text: &str) -> String {
    if enabled() {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

pub fn green(text: &str) -> String {
    paint("32", text)
}

pub fn red(text: &str) -> String {
    paint("31", text)
}

pub fn yellow(text: &str) -> String {
    paint("33", text)
}

pub fn bold(text: &str) -> String {
    paint("1", text)
}

/// ✓ in green or ✗ in red: k6's marks beside each threshold.
pub fn mark(ok: bool) -> String {
    if ok {
        green("✓")
    } else {
        red("✗")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_only_on_a_terminal_without_no_color() {
        assert!(wanted(true, None, Some("xterm-256color")));
        assert!(
            wanted(true, Some(""), None),
            "an empty NO_COLOR does not count"
        );
        assert!(!wanted(true, Some("1"), Some("xterm")));
        assert!(
            !wanted(false, None, Some("xterm")),
            "never into a pipe or file"
        );
        assert!(!wanted(true, None, Some("dumb")));
    }
}
