//! Terminal output that never panics (a leaf module: the CLI, the use cases, the lab and the
//! progress lines all print through it). `print!`/`eprint!` panic when the write fails, and
//! Rust ignores SIGPIPE, so `overload ... | head -1` or a closed terminal would end a run in
//! a panic after its results were measured. Every line for the terminal goes through these
//! macros instead: a failed write (EPIPE, a full disk, a hung-up tty) is dropped quietly and
//! the exit code stays the one the outcome chose. Files are written by the use cases before
//! anything is printed, so they never depend on the terminal.
use std::io::Write;

/// Writes to stdout, ignoring any error (the reader went away; nothing useful can be done).
pub fn stdout(args: std::fmt::Arguments) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_fmt(args);
    let _ = o.flush();
}

/// Writes to stderr, ignoring any error.
pub fn stderr(args: std::fmt::Arguments) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// `print!` that drops the text when stdout is gone instead of panicking.
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => { $crate::console::stdout(format_args!($($t)*)) };
}

/// `println!` that drops the text when stdout is gone instead of panicking.
#[macro_export]
macro_rules! outln {
    () => { $crate::console::stdout(format_args!("\n")) };
    ($($t:tt)*) => { $crate::console::stdout(format_args!("{}\n", format_args!($($t)*))) };
}

/// `eprint!` that drops the text when stderr is gone instead of panicking.
#[macro_export]
macro_rules! eout {
    ($($t:tt)*) => { $crate::console::stderr(format_args!($($t)*)) };
}

/// `eprintln!` that drops the text when stderr is gone instead of panicking.
#[macro_export]
macro_rules! eoutln {
    () => { $crate::console::stderr(format_args!("\n")) };
    ($($t:tt)*) => { $crate::console::stderr(format_args!("{}\n", format_args!($($t)*))) };
}
