//! An impaired network path between the load and the stack: two network namespaces that
//! overload makes and removes (`ovl-<pid>-load`, `ovl-<pid>-stack`), joined by veth, with a
//! round-trip delay, jitter and loss. Two ways to impair:
//!
//! - netem: one veth pair, the kernel's `tc … netem` on both ends (half the RTT each way);
//! - bridge: a third namespace `ovl-<pid>-path` holding two veth pairs (load↔path,
//!   path↔stack) and overload's own user-space bridge between them (`bridge.rs`, deciding
//!   with `sched.rs`), for kernels without `sch_netem`;
//! - none: one plain veth pair, the baseline the other two are compared with.
//!
//! The load end is 10.77.0.1, the stack end 10.77.0.2 (/24): every run has its own
//! namespaces, so the same addresses never meet. Nothing of the host is touched: the links
//! are created inside the namespaces, never in the host's; the host's loopback, routes and
//! interfaces are never named. [`NetPath`] removes what it made when dropped (success,
//! error, interrupt); [`cleanup`] removes what a killed run left (its pid is dead).
use std::fs::File;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

pub mod bridge;
pub mod forward;
pub mod ns;
pub mod sched;

pub use sched::{Counts, Impairment};

use crate::{Error, Result};

/// The load namespace's address.
pub const LOAD_ADDR: &str = "10.77.0.1";
/// The stack namespace's address: where the load is sent.
pub const STACK_ADDR: &str = "10.77.0.2";
/// The environment variable holding [`STACK_ADDR`] in commands started on either side.
pub const STACK_ENV: &str = "OVERLOAD_NETEM_STACK";
/// Prefix of every namespace made here.
pub const PREFIX: &str = "ovl-";
/// Frames one direction may hold (netem's default `limit`).
pub const DEFAULT_QUEUE: usize = 1000;

/// How the path is impaired.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Way {
    /// netem where the kernel has it, else the bridge.
    Auto,
    Netem,
    Bridge,
    /// A plain veth pair: no impairment (the baseline).
    None,
}

impl Way {
    pub const ALL: [Way; 4] = [Way::Auto, Way::Netem, Way::Bridge, Way::None];
    pub fn name(self) -> &'static str {
        match self {
            Way::Auto => "auto",
            Way::Netem => "netem",
            Way::Bridge => "bridge",
            Way::None => "none",
        }
    }
    pub fn help(self) -> &'static str {
        match self {
            Way::Auto => "netem where the kernel has sch_netem, else the bridge",
            Way::Netem => "the kernel's tc netem on both ends of one veth pair",
            Way::Bridge => "overload's user-space bridge in a third namespace",
            Way::None => "a plain veth pair, no impairment (the baseline)",
        }
    }
}

impl std::str::FromStr for Way {
    type Err = Error;
    fn from_str(s: &str) -> Result<Way> {
        Way::ALL.into_iter().find(|w| w.name() == s).ok_or_else(|| {
            Error::usage(format!(
                "impair '{s}': expected auto, netem, bridge or none"
            ))
        })
    }
}

/// What the path should do, as the user says it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PathSpec {
    /// Round-trip delay: half of it each way.
    pub rtt: Duration,
    /// Round-trip jitter: half of it each way (each direction draws in ± its half).
    pub jitter: Duration,
    /// Loss probability of each frame, in each direction.
    pub loss: f64,
    pub way: Way,
    /// Frames one direction holds at most.
    pub queue: usize,
    /// The bridge's RNG seed (losses and jitter repeat with it).
    pub seed: u64,
}

impl Default for PathSpec {
    fn default() -> Self {
        PathSpec {
            rtt: Duration::ZERO,
            jitter: Duration::ZERO,
            loss: 0.0,
            way: Way::Auto,
            queue: DEFAULT_QUEUE,
            seed: 1,
        }
    }
}

impl PathSpec {
    /// One direction's share.
    pub fn one_way(&self) -> Impairment {
        Impairment {
            delay: self.rtt / 2,
            jitter: self.jitter / 2,
            loss: self.loss,
            queue: self.queue,
        }
    }

    /// Bad values, named: a one-line usage error.
    pub fn check(&self) -> Result<()> {
        if !(0.0..=1.0).contains(&self.loss) || !self.loss.is_finite() {
            return Err(Error::usage(format!(
                "--loss {}: must be between 0% and 100%",
                self.loss * 100.0
            )));
        }
        if self.jitter > self.rtt {
            return Err(Error::usage(format!(
                "--jitter {} is above --delay {}: the delay would go below zero",
                crate::units::fmt_duration(self.jitter),
                crate::units::fmt_duration(self.rtt)
            )));
        }
        if self.rtt > Duration::from_secs(10) {
            return Err(Error::usage("--delay: at most 10s"));
        }
        if self.queue == 0 {
            return Err(Error::usage("--queue must be at least 1 frame"));
        }
        Ok(())
    }

    /// `50ms RTT ± 5ms, 1% loss` as printed.
    pub fn describe(&self) -> String {
        let mut s = format!("{} RTT", crate::units::fmt_duration(self.rtt));
        if !self.jitter.is_zero() {
            s.push_str(&format!(" ± {}", crate::units::fmt_duration(self.jitter)));
        }
        s.push_str(&format!(", {}% loss each way", fmt_pct(self.loss)));
        s
    }
}

/// `bridge: toward the stack N forwarded, L lost, O over the queue; back …`: what the bridge
/// did to each direction, as `lab netem` and an experiment's run print it.
pub fn describe_counts([up, down]: &[Counts; 2]) -> String {
    format!(
        "bridge: toward the stack {} forwarded, {} lost, {} over the queue; back {} forwarded, {} lost, {} over the queue",
        up.forwarded, up.lost, up.overflow, down.forwarded, down.lost, down.overflow
    )
}

fn fmt_pct(v: f64) -> String {
    let t = format!("{:.3}", v * 100.0);
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Whether the caller can make namespaces (root).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no failure mode.
    unsafe { libc::geteuid() == 0 }
}

/// The namespaces and links of one run, removed on drop.
pub struct NetPath {
    pub spec: PathSpec,
    /// The way used (auto resolved).
    pub way: Way,
    names: Vec<String>,
    load: File,
    stack: File,
    bridge: Option<bridge::Bridge>,
    /// Ports of the host's loopback relayed to the stack side (`forward.rs`).
    forwards: Vec<forward::Forward>,
}

fn name(pid: u32, side: &str) -> String {
    format!("{PREFIX}{pid}-{side}")
}

impl NetPath {
    /// Makes the namespaces and the path. Anything made before a failure is removed.
    pub fn create(spec: PathSpec) -> Result<NetPath> {
        spec.check()?;
        if !is_root() {
            return Err(Error::usage(
                "lab netem: needs root (it makes network namespaces); run it with sudo",
            ));
        }
        let pid = std::process::id();
        // What killed runs left goes first (namespaces of this pid can only be a dead run's
        // too, whose pid was reused): a run killed with SIGKILL never removes its own.
        let leftovers: Vec<String> = ns::list()
            .into_iter()
            .filter(|n| pid_of(n).is_some_and(|p| p == pid || !pid_runs(p)))
            .collect();
        let stuck = remove_names(&leftovers);
        for n in leftovers.iter().filter(|n| !stuck.contains(n)) {
            crate::eoutln!("lab netem: removed {n} (left by a killed run)");
        }
        let mut made = Partial { names: Vec::new() };
        let (load, stack) = (name(pid, "load"), name(pid, "stack"));
        for n in [&load, &stack] {
            ns::run("ip", &["netns", "add", n])?;
            made.names.push(n.clone());
        }
        let way = match spec.way {
            Way::Auto if has_netem(&load) => Way::Netem,
            Way::Auto => Way::Bridge,
            w => w,
        };
        let mut bridge = None;
        match way {
            Way::Netem | Way::None => {
                ns::ip_in(
                    &load,
                    &[
                        "link", "add", "eth0", "type", "veth", "peer", "name", "eth0", "netns",
                        &stack,
                    ],
                )?;
            }
            Way::Bridge | Way::Auto => {
                let path = name(pid, "path");
                ns::run("ip", &["netns", "add", &path])?;
                made.names.push(path.clone());
                ns::ip_in(
                    &path,
                    &[
                        "link", "add", "toload", "type", "veth", "peer", "name", "eth0", "netns",
                        &load,
                    ],
                )?;
                ns::ip_in(
                    &path,
                    &[
                        "link", "add", "tostack", "type", "veth", "peer", "name", "eth0", "netns",
                        &stack,
                    ],
                )?;
                for dev in ["toload", "tostack"] {
                    ns::ip_in(&path, &["link", "set", dev, "up"])?;
                }
            }
        }
        for (n, addr) in [(&load, LOAD_ADDR), (&stack, STACK_ADDR)] {
            ns::ip_in(n, &["addr", "add", &format!("{addr}/24"), "dev", "eth0"])?;
            ns::ip_in(n, &["link", "set", "lo", "up"])?;
            ns::ip_in(n, &["link", "set", "eth0", "up"])?;
        }
        let load_fd = ns::open(&load)?;
        let stack_fd = ns::open(&stack)?;
        match way {
            Way::Netem => {
                let imp = spec.one_way();
                let mut args: Vec<String> =
                    ["qdisc", "add", "dev", "eth0", "root", "netem", "limit"]
                        .iter()
                        .map(|s| s.to_string())
                        .collect();
                args.push(spec.queue.to_string());
                args.extend(["delay".into(), format!("{}us", imp.delay.as_micros())]);
                if !imp.jitter.is_zero() {
                    args.push(format!("{}us", imp.jitter.as_micros()));
                }
                if imp.loss > 0.0 {
                    args.extend(["loss".into(), format!("{}%", fmt_pct(imp.loss))]);
                }
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                for n in [&load, &stack] {
                    ns::tc_in(n, &args).map_err(|e| {
                        Error::runtime(format!(
                            "{e} (a kernel without sch_netem: --impair bridge emulates it)"
                        ))
                    })?;
                }
            }
            Way::Bridge | Way::Auto => {
                for fd in [&load_fd, &stack_fd] {
                    in_namespace(fd, || ns::no_offloads("eth0"))?;
                }
                let path_fd = ns::open(&name(pid, "path"))?;
                bridge = Some(bridge::Bridge::start(
                    &path_fd,
                    "toload",
                    "tostack",
                    spec.one_way(),
                    spec.seed,
                )?);
            }
            Way::None => {}
        }
        let names = std::mem::take(&mut made.names);
        Ok(NetPath {
            spec,
            way,
            names,
            load: load_fd,
            stack: stack_fd,
            bridge,
            forwards: Vec::new(),
        })
    }

    /// The load namespace (for setns, [`ns::command_in`], [`ns::Entered`]).
    pub fn load_ns(&self) -> &File {
        &self.load
    }

    pub fn stack_ns(&self) -> &File {
        &self.stack
    }

    /// The namespaces' names.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// `netem: 50ms RTT ± 5ms, 1% loss each way` (with why the bridge, under auto).
    pub fn describe(&self) -> String {
        let why = match (self.spec.way, self.way) {
            (Way::Auto, Way::Bridge) => " (auto: the kernel lacks sch_netem)",
            (Way::Auto, Way::Netem) => " (auto: the kernel has sch_netem)",
            _ => "",
        };
        match self.way {
            Way::None => "none: a plain veth pair, no impairment".into(),
            w => format!("{}{why}: {}", w.name(), self.spec.describe()),
        }
    }

    /// Makes the host's 127.0.0.1:`port` (a lab stack, which listens on loopback) reachable
    /// at STACK_ADDR:`port` from the load side, TCP and UDP, across the path. Must be called
    /// from a thread in the host's namespace (the relay's connections are made there).
    pub fn forward(&mut self, port: u16) -> Result<()> {
        if self.forwards.iter().any(|f| f.port == port) {
            return Ok(());
        }
        let to = std::net::SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, port));
        let f = forward::Forward::start(&self.stack, port, to)?;
        self.forwards.push(f);
        Ok(())
    }

    /// What each forwarded port relayed so far.
    pub fn forwarded(&self) -> Vec<(u16, forward::ForwardCounts)> {
        self.forwards.iter().map(|f| (f.port, f.counts())).collect()
    }

    /// Stops the bridge and removes the namespaces; what the bridge counted.
    pub fn remove(mut self) -> Result<Option<[Counts; 2]>> {
        // The relays' sockets in the stack namespace would keep it alive: closed first.
        self.forwards.clear();
        let counts = self.bridge.take().map(|b| b.stop());
        let names = std::mem::take(&mut self.names);
        let left = remove_names(&names);
        if left.is_empty() {
            Ok(counts)
        } else {
            Err(Error::runtime(format!(
                "could not remove namespaces: {}",
                left.join(", ")
            )))
        }
    }

    /// Sends `n` UDP datagrams from the load side to an echo on the stack side and back;
    /// see [`Probe`].
    pub fn probe(&self, n: usize) -> Result<Probe> {
        probe(&self.load, &self.stack, n, self.spec.rtt)
    }

    /// Waits until TCP `port` of the stack accepts a connection from the load side, while
    /// `alive` holds, for at most `limit`.
    pub fn wait_tcp(
        &self,
        port: u16,
        limit: Duration,
        mut alive: impl FnMut() -> Result<()>,
    ) -> Result<()> {
        let t0 = Instant::now();
        let addr: std::net::SocketAddr = format!("{STACK_ADDR}:{port}").parse().expect("address");
        loop {
            alive()?;
            let ok = in_namespace(&self.load, || {
                Ok(std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(500)).is_ok())
            })?;
            if ok {
                return Ok(());
            }
            if crate::signals::interrupted() {
                return Err(Error::runtime("interrupted while waiting for the stack"));
            }
            if t0.elapsed() >= limit {
                return Err(Error::runtime(format!(
                    "the stack did not accept on {addr} within {}",
                    crate::units::fmt_duration(limit)
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for NetPath {
    fn drop(&mut self) {
        self.forwards.clear();
        self.bridge.take();
        let left = remove_names(&std::mem::take(&mut self.names));
        if !left.is_empty() {
            crate::eoutln!(
                "overload: could not remove namespaces {} (`overload lab netem --cleanup`)",
                left.join(", ")
            );
        }
    }
}

/// The names made so far by a `create` that fails half-way, removed on drop.
struct Partial {
    names: Vec<String>,
}

impl Drop for Partial {
    fn drop(&mut self) {
        remove_names(&self.names);
    }
}

/// Deletes namespaces (their links go with them: a veth dies with either end's namespace);
/// returns those that could not be removed.
fn remove_names(names: &[String]) -> Vec<String> {
    names
        .iter()
        .rev()
        .filter(|n| ns::run("ip", &["netns", "del", n]).is_err() && ns::path_of(n).exists())
        .cloned()
        .collect()
}

/// The pid in `ovl-<pid>-<side>`.
pub fn pid_of(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let (pid, side) = rest.split_once('-')?;
    matches!(side, "load" | "stack" | "path").then_some(())?;
    pid.parse().ok()
}

fn pid_runs(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Removes the namespaces of runs whose process is gone; returns their names.
pub fn cleanup() -> Result<Vec<String>> {
    if !is_root() {
        return Err(Error::usage(
            "lab netem --cleanup: needs root; run it with sudo",
        ));
    }
    let dead: Vec<String> = ns::list()
        .into_iter()
        .filter(|n| pid_of(n).is_some_and(|p| !pid_runs(p)))
        .collect();
    let left = remove_names(&dead);
    if !left.is_empty() {
        return Err(Error::runtime(format!(
            "could not remove: {}",
            left.join(", ")
        )));
    }
    Ok(dead)
}

/// Whether the kernel has netem: tried on the new load namespace's own loopback (never the
/// host's), then taken off again.
fn has_netem(load: &str) -> bool {
    let ok = ns::tc_in(
        load,
        &["qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"],
    )
    .is_ok();
    if ok {
        let _ = ns::tc_in(load, &["qdisc", "del", "dev", "lo", "root"]);
    }
    ok
}

/// Runs `f` on a thread of its own inside `ns` (the caller's thread stays where it is).
pub fn in_namespace<T: Send>(ns: &File, f: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    let fd = ns.try_clone()?;
    std::thread::scope(|s| {
        s.spawn(move || {
            let _in = ns::Entered::enter(&fd)?;
            f()
        })
        .join()
        .unwrap_or_else(|_| Err(Error::runtime("a namespace thread panicked")))
    })
}

/// What [`NetPath::probe`] measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    pub sent: usize,
    /// Datagrams that reached the stack.
    pub reached: usize,
    /// Echoes that came back.
    pub back: usize,
    /// Round trips of the echoes that came back, ms, sorted.
    pub rtt_ms: Vec<f64>,
    /// The RTT the path was asked for: the median's excess over it is what the path itself
    /// (the bridge, the veths, the host's scheduling) adds.
    pub asked: Duration,
}

impl Probe {
    pub fn median_ms(&self) -> Option<f64> {
        self.rtt_ms.get(self.rtt_ms.len() / 2).copied()
    }

    /// `probe: 20 datagrams, 0 lost toward the stack, 0 lost back; RTT median 40.3 ms (min …, max …)`
    pub fn describe(&self) -> String {
        let toward = self.sent.saturating_sub(self.reached);
        let back = self.reached.saturating_sub(self.back);
        let mut s = format!(
            "probe: {} UDP datagrams, {toward} lost toward the stack ({}%), {back} of {} lost back ({}%)",
            self.sent,
            fmt_pct(toward as f64 / self.sent.max(1) as f64),
            self.reached,
            fmt_pct(back as f64 / self.reached.max(1) as f64),
        );
        if let (Some(m), Some(lo), Some(hi)) =
            (self.median_ms(), self.rtt_ms.first(), self.rtt_ms.last())
        {
            let asked = self.asked.as_secs_f64() * 1e3;
            s.push_str(&format!(
                "; RTT median {m:.3} ms (min {lo:.3}, max {hi:.3}): {:.3} ms above the {} asked",
                m - asked,
                crate::units::fmt_duration(self.asked)
            ));
        }
        s
    }
}

/// The probe's UDP port on the stack side (its own namespace: nothing else listens there
/// unless the stack command chose it).
const PROBE_PORT: u16 = 9;

fn probe(load: &File, stack: &File, n: usize, rtt: Duration) -> Result<Probe> {
    use std::sync::atomic::{AtomicBool, Ordering};
    // Sockets belong to the namespace they were made in, whichever thread uses them.
    let echo = in_namespace(stack, || {
        UdpSocket::bind((STACK_ADDR, PROBE_PORT))
            .map_err(|e| Error::runtime(format!("probe: cannot bind the echo: {e}")))
    })?;
    let sock = in_namespace(load, || {
        let s = UdpSocket::bind((LOAD_ADDR, 0))?;
        s.connect((STACK_ADDR, PROBE_PORT))?;
        Ok(s)
    })?;
    echo.set_read_timeout(Some(Duration::from_millis(20)))?;
    let stop = AtomicBool::new(false);
    let t0 = Instant::now();
    let stamp = || t0.elapsed().as_nanos() as u64;
    std::thread::scope(|s| {
        let stop = &stop;
        let echoer = s.spawn(move || {
            let mut buf = [0u8; 64];
            let mut reached = 0;
            while !stop.load(Ordering::Relaxed) {
                if let Ok((k, from)) = echo.recv_from(&mut buf) {
                    // One byte: the warm-up that resolves ARP, not counted.
                    if k == 16 {
                        reached += 1;
                    }
                    let _ = echo.send_to(&buf[..k], from);
                }
            }
            reached
        });
        let measured = (|| -> Result<Vec<f64>> {
            // Until one echo comes back (ARP resolved across the path, whose frames may be
            // lost too), nothing is counted: the kernel holds or drops the first datagrams
            // while it resolves the address.
            sock.set_read_timeout(Some(Duration::from_millis(100) + rtt))?;
            let mut buf = [0u8; 64];
            loop {
                sock.send(&[0])?;
                if matches!(sock.recv(&mut buf), Ok(1)) {
                    break;
                }
                if t0.elapsed() > Duration::from_secs(5) + rtt * 10 {
                    return Err(Error::runtime(format!(
                        "probe: no echo from {STACK_ADDR} within {:.0?}: the path carries nothing",
                        t0.elapsed()
                    )));
                }
            }
            // A reader of its own, so each echo is timed when it arrives.
            let reader = sock.try_clone()?;
            reader.set_read_timeout(Some(Duration::from_millis(5)))?;
            let done = AtomicBool::new(false);
            std::thread::scope(|s2| {
                let done = &done;
                let got = s2.spawn(move || {
                    let mut rtts = Vec::with_capacity(n);
                    let mut buf = [0u8; 64];
                    let mut quiet_since: Option<Instant> = None;
                    // After the last send: a round trip and half a second more.
                    let tail = rtt * 2 + Duration::from_millis(500);
                    while rtts.len() < n {
                        match reader.recv(&mut buf) {
                            Ok(16) => {
                                let at = u64::from_le_bytes(buf[8..16].try_into().expect("8"));
                                rtts.push((stamp() - at) as f64 / 1e6);
                            }
                            _ if done.load(Ordering::Relaxed) => {
                                let q = *quiet_since.get_or_insert_with(Instant::now);
                                if q.elapsed() > tail {
                                    break;
                                }
                            }
                            _ => {}
                        }
                    }
                    rtts
                });
                for i in 0..n as u64 {
                    let mut d = [0u8; 16];
                    d[..8].copy_from_slice(&i.to_le_bytes());
                    d[8..].copy_from_slice(&stamp().to_le_bytes());
                    let _ = sock.send(&d);
                    // Paced (about 10k/s), so that a burst measures the path, not its queue.
                    std::thread::sleep(Duration::from_micros(100));
                }
                done.store(true, Ordering::Relaxed);
                Ok(got.join().unwrap_or_default())
            })
        })();
        stop.store(true, Ordering::Relaxed);
        let reached = echoer.join().unwrap_or(0);
        let mut rtt_ms = measured?;
        rtt_ms.sort_by(f64::total_cmp);
        Ok(Probe {
            sent: n,
            reached,
            back: rtt_ms.len(),
            rtt_ms,
            asked: rtt,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stack reached across the path is verified by its generated certificate.
    #[test]
    fn generated_certificates_name_the_stack_address() {
        assert!(crate::target::CERT_NAMES.contains(&STACK_ADDR));
    }

    #[test]
    fn names_are_read_back_to_their_pid() {
        assert_eq!(pid_of("ovl-123-load"), Some(123));
        assert_eq!(pid_of("ovl-9-path"), Some(9));
        assert_eq!(pid_of("ovl-123-other"), None, "not one of ours");
        assert_eq!(pid_of("ovl-x-load"), None);
        assert_eq!(pid_of("netns-123-load"), None);
    }

    #[test]
    fn the_rtt_is_split_between_the_directions() {
        let s = PathSpec {
            rtt: Duration::from_millis(50),
            jitter: Duration::from_millis(4),
            loss: 0.01,
            ..PathSpec::default()
        };
        let one = s.one_way();
        assert_eq!(one.delay, Duration::from_millis(25));
        assert_eq!(one.jitter, Duration::from_millis(2));
        assert_eq!(one.loss, 0.01, "loss applies to each direction as given");
        assert_eq!(s.describe(), "50ms RTT ± 4ms, 1% loss each way");
    }

    #[test]
    fn the_probe_says_what_the_path_adds_to_the_rtt_asked() {
        let p = Probe {
            sent: 10,
            reached: 9,
            back: 8,
            rtt_ms: vec![40.1, 40.2, 40.3, 40.4, 40.5, 40.6, 40.7, 41.0],
            asked: Duration::from_millis(40),
        };
        assert_eq!(
            p.describe(),
            "probe: 10 UDP datagrams, 1 lost toward the stack (10%), 1 of 9 lost back (11.111%); \
             RTT median 40.500 ms (min 40.100, max 41.000): 0.500 ms above the 40ms asked"
        );
    }

    #[test]
    fn bad_values_are_usage_errors() {
        let bad = [
            PathSpec {
                loss: 1.2,
                ..PathSpec::default()
            },
            PathSpec {
                rtt: Duration::from_millis(10),
                jitter: Duration::from_millis(20),
                ..PathSpec::default()
            },
            PathSpec {
                queue: 0,
                ..PathSpec::default()
            },
            PathSpec {
                rtt: Duration::from_secs(11),
                ..PathSpec::default()
            },
        ];
        for s in bad {
            let e = s.check().unwrap_err();
            assert_eq!(e.exit_code(), 2, "{s:?}");
            assert!(!e.to_string().contains('\n'));
        }
        assert!(PathSpec::default().check().is_ok());
        assert!("tc".parse::<Way>().is_err());
        assert_eq!("bridge".parse::<Way>().unwrap(), Way::Bridge);
    }
}
