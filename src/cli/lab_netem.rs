//! `overload lab netem`: a command run across an impaired network path (src/lab/netem/).
use clap::Args;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use crate::lab::netem::{self, ns, NetPath, PathSpec, Way};
use crate::units::{parse_duration, parse_share};
use crate::{Error, Result};

/// How long the stack and the command get between SIGTERM and SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

#[derive(Args, Debug)]
#[command(after_help = "\
The load side is 10.77.0.1, the stack side 10.77.0.2 (also in $OVERLOAD_NETEM_STACK; `{stack}`
in COMMAND's arguments is replaced by it). Root only. Example:
  overload lab netem --delay 50ms --loss 1% \\
    --stack-cmd 'overload target --listen 0.0.0.0:8080 --allow-remote' --stack-port 8080 \\
    -- overload run http://{stack}:8080/ -d 10s --rate 200
A lab stack (it listens on the host's loopback) across the path:
  overload lab up caddy-fpm --tls --port 8443
  overload lab netem --delay 50ms --forward 8443 -- overload run --http 3 https://{stack}:8443/ -d 10s")]
pub struct NetemArgs {
    /// Round-trip delay added to the path (half each way).
    #[arg(long, value_parser = parse_duration, value_name = "DURATION", default_value = "0s",
          allow_hyphen_values = true)]
    pub delay: Duration,
    /// Round-trip jitter: each direction's delay is drawn uniformly in ± half of it.
    #[arg(long, value_parser = parse_duration, value_name = "DURATION", default_value = "0s",
          allow_hyphen_values = true)]
    pub jitter: Duration,
    /// Loss probability of each packet, in each direction (e.g. 1%).
    #[arg(long, value_parser = parse_share, value_name = "PERCENT", default_value = "0%",
          allow_hyphen_values = true)]
    pub loss: f64,
    /// How the path is impaired: auto (netem where the kernel has it, else bridge), netem,
    /// bridge (overload's user-space bridge), none (a plain veth pair).
    #[arg(
        long,
        value_enum,
        default_value = "auto",
        value_name = "auto|netem|bridge|none"
    )]
    pub impair: Way,
    /// Packets one direction holds at most; beyond, dropped and counted (a router's buffer).
    #[arg(long, default_value_t = netem::DEFAULT_QUEUE, value_name = "N")]
    pub queue: usize,
    /// The bridge's random seed: the same seed drops the same packets.
    #[arg(long, default_value_t = 1, value_name = "N")]
    pub seed: u64,
    /// UDP echoes sent across the path before COMMAND, their loss and RTT printed (0: none).
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub probe: usize,
    /// A shell command started in the stack namespace first (e.g. a server on 0.0.0.0).
    #[arg(long, value_name = "CMD")]
    pub stack_cmd: Option<String>,
    /// Wait until the stack accepts TCP connections on this port before COMMAND.
    #[arg(long, value_name = "PORT", requires = "stack_cmd")]
    pub stack_port: Option<u16>,
    /// How long the stack may take to accept on --stack-port.
    #[arg(long, value_parser = parse_duration, value_name = "DURATION", default_value = "30s")]
    pub stack_timeout: Duration,
    /// Relay the host's 127.0.0.1:PORT (a lab stack) to {stack}:PORT, TCP and UDP, so the
    /// load reaches it across the path (repeatable).
    #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub forward: Vec<u16>,
    /// Remove the namespaces that killed runs left (ovl-<pid>-*, whose pid is gone), and exit.
    #[arg(long, conflicts_with_all = ["stack_cmd", "command", "forward"])]
    pub cleanup: bool,
    /// The command run in the load namespace; the path is removed when it ends.
    #[arg(
        last = true,
        value_name = "COMMAND",
        required_unless_present = "cleanup"
    )]
    pub command: Vec<String>,
}

// The way as a clap value: names and help come from the lab.
impl clap::ValueEnum for Way {
    fn value_variants<'a>() -> &'a [Self] {
        &Way::ALL
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()).help(self.help()))
    }
}

pub fn run(a: NetemArgs) -> Result<i32> {
    if a.cleanup {
        let gone = netem::cleanup()?;
        if gone.is_empty() {
            crate::outln!("no leftover namespaces");
        } else {
            crate::outln!("removed: {}", gone.join(", "));
        }
        return Ok(0);
    }
    let spec = PathSpec {
        rtt: a.delay,
        jitter: a.jitter,
        loss: a.loss,
        way: a.impair,
        queue: a.queue,
        seed: a.seed,
    };
    spec.check()?;
    crate::signals::install_patient();
    let mut path = NetPath::create(spec)?;
    crate::eoutln!(
        "lab netem: {} ({})",
        path.describe(),
        path.names().join(", ")
    );
    let result = forward(&mut path, &a.forward).and_then(|()| across(&path, &a));
    for (port, c) in path.forwarded() {
        crate::eoutln!("lab netem: {}", c.describe(port));
    }
    let counts = path.remove();
    match counts {
        Ok(Some(c)) => crate::eoutln!("lab netem: {}", netem::describe_counts(&c)),
        Ok(None) => {}
        Err(e) => crate::eoutln!("overload: {e}"),
    }
    result
}

/// The host's loopback ports relayed to the stack side.
fn forward(path: &mut NetPath, ports: &[u16]) -> Result<()> {
    for &port in ports {
        path.forward(port)?;
        crate::eoutln!(
            "lab netem: forwarding {}:{port} (TCP and UDP) to the host's 127.0.0.1:{port}",
            netem::STACK_ADDR
        );
    }
    Ok(())
}

/// The probe, the stack, the command; the stack stopped whatever happens.
fn across(path: &NetPath, a: &NetemArgs) -> Result<i32> {
    if a.probe > 0 {
        let p = path.probe(a.probe)?;
        crate::eoutln!("lab netem: {}", p.describe());
    }
    let mut stack = match &a.stack_cmd {
        Some(cmd) => {
            let mut c = Command::new("sh");
            // Its output goes to stderr: stdout is the command's (a run's `--json -`).
            c.arg("-c").arg(cmd).stdout(std::io::stderr());
            Some(spawn_in(path.stack_ns(), c, "--stack-cmd")?)
        }
        None => None,
    };
    let result = (|| {
        if let (Some(port), Some(child)) = (a.stack_port, stack.as_mut()) {
            path.wait_tcp(port, a.stack_timeout, || match child.try_wait()? {
                Some(st) => Err(Error::runtime(format!(
                    "--stack-cmd exited ({st}) before it accepted on port {port}"
                ))),
                None => Ok(()),
            })?;
        }
        let args: Vec<String> = a
            .command
            .iter()
            .map(|s| s.replace("{stack}", netem::STACK_ADDR))
            .collect();
        let mut c = Command::new(&args[0]);
        c.args(&args[1..]);
        let mut child = spawn_in(path.load_ns(), c, &args[0])?;
        let st = wait_or_stop(&mut child)?;
        // What it left running in its group would hold the namespace: it goes too.
        // SAFETY: signalling the process group made for the command.
        unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
        Ok(code_of(st))
    })();
    if let Some(mut s) = stack {
        stop(&mut s);
    }
    result
}

/// Starts `c` inside `ns`, in its own process group, with the stack's address in its
/// environment.
fn spawn_in(ns_file: &std::fs::File, mut c: Command, what: &str) -> Result<Child> {
    c.env(netem::STACK_ENV, netem::STACK_ADDR);
    ns::command_in(&mut c, ns_file);
    std::os::unix::process::CommandExt::process_group(&mut c, 0);
    c.spawn()
        .map_err(|e| Error::runtime(format!("cannot run {what}: {e}")))
}

/// Waits for `child`; on Ctrl-C (or SIGTERM) stops it and answers 130.
fn wait_or_stop(child: &mut Child) -> Result<Option<ExitStatus>> {
    loop {
        if let Some(st) = child.try_wait()? {
            return Ok(Some(st));
        }
        if crate::signals::interrupted() {
            stop(child);
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn code_of(st: Option<ExitStatus>) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match st {
        None => 130,
        Some(s) => s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0)),
    }
}

/// SIGTERM to the child's group, SIGKILL after the grace.
fn stop(child: &mut Child) {
    let pg = child.id() as i32;
    // SAFETY: signalling the process group we made for this child.
    unsafe { libc::kill(-pg, libc::SIGTERM) };
    let t0 = Instant::now();
    while t0.elapsed() < STOP_GRACE {
        if let Ok(Some(_)) = child.try_wait() {
            // Its group may outlive it: the rest goes too.
            // SAFETY: as above.
            unsafe { libc::kill(-pg, libc::SIGKILL) };
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: as above.
    unsafe { libc::kill(-pg, libc::SIGKILL) };
    let _ = child.wait();
}
