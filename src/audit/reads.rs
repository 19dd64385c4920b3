//! What the audit reads on a host, as a trait: the evidence gatherers (`gather`, `ini`) read
//! through it, [`super::gather::LocalHost`] reads this machine, the agent answers with it and
//! tests script it. A leaf of its own, so the readers and the gatherer do not import each
//! other.
use super::host::Listener;
use super::Probe;
use crate::observe::KernelLimits;
use std::path::{Path, PathBuf};

/// Everything the audit reads on a host: /proc and /proc/sys, sock_diag, the PHP files and
/// the PHP binary's own account of them.
pub trait HostReads: Send + Sync {
    fn read(&self, path: &Path) -> Result<String, String>;
    /// The entries of a directory (any order).
    fn list(&self, dir: &Path) -> Result<Vec<PathBuf>, String>;
    /// Running processes: pid, command line (arguments joined by spaces), executable.
    fn processes(&self) -> Vec<(u32, String, Option<PathBuf>)>;
    /// A program by name on the PATH (or sbin), `php-fpm` also finding `php-fpm8.2`.
    fn which(&self, name: &str) -> Option<PathBuf>;
    /// A program's standard output (bounded in time).
    fn run(&self, program: &Path, args: &[&str]) -> Result<String, String>;
    fn kernel(&self) -> KernelLimits;
    /// The LISTEN socket's backlog on `port`.
    fn backlog(&self, port: u16) -> Probe<u64>;
    fn listener(&self, port: u16) -> Probe<Listener>;
    fn ram(&self) -> Probe<u64>;
}
