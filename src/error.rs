//! Errors carry context and an exit code: 2 for usage errors (bad flags, files, URLs),
//! 1 for failures while running, 3 when a run completed but its SLO failed.
use std::fmt;

#[derive(Debug)]
pub enum Error {
    /// The user asked for something invalid: exit code 2.
    Usage(String),
    /// Something failed while running: exit code 1.
    Runtime(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn usage(msg: impl Into<String>) -> Self {
        Error::Usage(msg.into())
    }
    pub fn runtime(msg: impl Into<String>) -> Self {
        Error::Runtime(msg.into())
    }
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => 2,
            Error::Runtime(_) => 1,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) | Error::Runtime(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Runtime(e.to_string())
    }
}
