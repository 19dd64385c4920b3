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
    /// A file the operator named (`--php-ini`, `--fpm-config`).
    fn read(&self, path: &Path) -> Result<String, String>;
    /// A file found on the host (a php.ini, an FPM pool): read only when one of `owners`
    /// owns it and no other user can write it, so a local user cannot plant the evidence.
    fn read_owned(&self, path: &Path, owners: &[u32]) -> Result<String, String>;
    /// The entries of a directory (any order).
    fn list(&self, dir: &Path) -> Result<Vec<PathBuf>, String>;
    /// Running processes: pid, command line (arguments joined by spaces), owner. Never their
    /// executables: a binary found through /proc is whatever its starter chose, and is not run.
    fn processes(&self) -> Vec<Proc>;
    /// A program by name on the PATH (or sbin), `php-fpm` also finding `php-fpm8.2`: only one
    /// that root owns in directories only root can write (a PATH entry another user can write
    /// is skipped).
    fn which(&self, name: &str) -> Option<PathBuf>;
    /// A program's standard output (bounded in time and size).
    fn run(&self, program: &Path, args: &[&str]) -> Result<String, String>;
    fn kernel(&self) -> KernelLimits;
    /// The LISTEN socket's backlog on `port`.
    fn backlog(&self, port: u16) -> Probe<u64>;
    fn listener(&self, port: u16) -> Probe<Listener>;
    fn ram(&self) -> Probe<u64>;
    /// The user this process runs as: its own processes and files are as trusted as root's.
    fn me(&self) -> u32;
}

/// A running process as the audit sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct Proc {
    pub pid: u32,
    /// Its arguments joined by spaces (anyone can set them: a title proves nothing).
    pub cmd: String,
    /// Its real user; None when /proc does not say.
    pub uid: Option<u32>,
}
