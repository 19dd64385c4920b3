//! Terminal output that never panics (a leaf module: the CLI, the use cases, the lab and the
//! progress lines all print through it). `print!`/`eprint!` panic when the write fails, and
//! Rust ignores SIGPIPE, so `overload ... | head -1` or a closed terminal would end a run in
//! a panic after its results were measured. Every line goes through these macros instead.
//!
//! Standard output is often the product itself (`--json -`, `report --format percentiles`,
//! `generate bash`), so a failed write there is not dropped silently: a reader that went
//! away (EPIPE) is quiet, as `| head` expects, but any other error (a full disk, EIO, a file
//! size limit) is kept, later output is skipped, and [`exit_code`] turns it into one line on
//! standard error and exit code 1. The run goes on meanwhile: files are written by the use
//! cases before anything is printed, so they never depend on standard output. Standard error
//! is only ever the messages about the run; a failure there is dropped.
use std::io::Write;
use std::sync::Mutex;

/// What became of standard output.
enum Sink {
    Open,
    /// The reader went away: output is skipped, and that is no error.
    Closed,
    /// Any other error: output is skipped, and the exit code says so.
    Failed(std::io::Error),
}

impl Sink {
    fn after(e: std::io::Error) -> Sink {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Sink::Closed
        } else {
            Sink::Failed(e)
        }
    }
}

static STDOUT: Mutex<Sink> = Mutex::new(Sink::Open);

/// Writes to stdout, unless an earlier write failed; a failure is kept for [`exit_code`].
pub fn stdout(args: std::fmt::Arguments) {
    // Held across the write, so that lines of two threads never interleave either.
    let mut sink = STDOUT.lock().unwrap_or_else(|e| e.into_inner());
    if !matches!(*sink, Sink::Open) {
        return;
    }
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_fmt(args).and_then(|_| o.flush()) {
        *sink = Sink::after(e);
    }
}

/// Records the failure of a write to standard output made elsewhere (clap's help).
pub fn stdout_failed(e: std::io::Error) {
    let mut sink = STDOUT.lock().unwrap_or_else(|e| e.into_inner());
    if matches!(*sink, Sink::Open) {
        *sink = Sink::after(e);
    }
}

/// The process's exit code given the outcome's `code`: when standard output failed (other
/// than a closed pipe), says so on standard error and makes a success exit 1 (a failure
/// keeps its own code, which says more).
pub fn exit_code(code: i32) -> i32 {
    let sink = STDOUT.lock().unwrap_or_else(|e| e.into_inner());
    match &*sink {
        Sink::Failed(e) => {
            stderr(format_args!(
                "overload: cannot write to standard output: {e}; the output is incomplete\n"
            ));
            if code == 0 {
                1
            } else {
                code
            }
        }
        _ => code,
    }
}

/// Writes to stderr, ignoring any error.
pub fn stderr(args: std::fmt::Arguments) {
    let _ = std::io::stderr().lock().write_fmt(args);
}

/// `print!` that never panics; a failed write is kept for `console::exit_code`.
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => { $crate::console::stdout(format_args!($($t)*)) };
}

/// `println!` that never panics; a failed write is kept for `console::exit_code`.
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
