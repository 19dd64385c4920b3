//! The flags that feed the bottleneck verdict beyond `--watch` and `--fpm-status`: Apache's
//! mod_status, a MariaDB/MySQL server, the link's speed. Flattened into the observation flags
//! of run, sweep and capacity; checked in `observe::ObserveArgs::to_config`.
use clap::Args;
use std::path::PathBuf;

#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Server observation")]
pub struct DiagnoseFlags {
    /// Also sample Apache's mod_status page at URL?auto (busy and idle workers, the
    /// scoreboard): the worker pool of prefork and event stacks. Repeatable.
    #[arg(long = "apache-status", value_name = "URL")]
    pub apache_status: Vec<String>,
    /// Also sample a MariaDB/MySQL server with SHOW GLOBAL STATUS (threads running, lock
    /// waits, slow queries), as a read-only account: USER@HOST:PORT. Runs the mariadb (or
    /// mysql) client, 2 s at most per sample.
    #[arg(long, value_name = "USER@HOST:PORT")]
    pub mysql: Option<String>,
    /// File whose first line is the --mysql account's password (not readable by every user).
    #[arg(long, value_name = "FILE", requires = "mysql")]
    pub mysql_password_file: Option<PathBuf>,
    /// The link's speed between generator and server, e.g. 1gbit, 100mbit: the verdict then
    /// weighs the run's bytes/s against it.
    #[arg(long, value_name = "RATE")]
    pub link_speed: Option<String>,
}
