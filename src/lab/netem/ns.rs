//! Network namespaces by name (`ip netns`'s /run/netns/NAME), `ip`/`tc` run inside them, and
//! a thread or a child process moved into one (setns). Everything here acts inside the
//! namespaces it is given: the host's interfaces, routes and loopback are never named.
use std::fs::File;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

use crate::{Error, Result};

/// Where `ip netns add` mounts a named namespace.
pub const NETNS_DIR: &str = "/run/netns";

pub fn path_of(name: &str) -> PathBuf {
    PathBuf::from(NETNS_DIR).join(name)
}

/// Runs `program args…`; its stderr's first line in the error when it fails.
pub fn run(program: &str, args: &[&str]) -> Result<()> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| Error::runtime(format!("cannot run {program}: {e} (iproute2 installed?)")))?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    Err(Error::runtime(format!(
        "`{program} {}` failed: {}",
        args.join(" "),
        err.lines().next().unwrap_or("(no message)").trim()
    )))
}

/// `ip -n NS args…`.
pub fn ip_in(ns: &str, args: &[&str]) -> Result<()> {
    let mut all = vec!["-n", ns];
    all.extend_from_slice(args);
    run("ip", &all)
}

/// `tc -n NS args…`.
pub fn tc_in(ns: &str, args: &[&str]) -> Result<()> {
    let mut all = vec!["-n", ns];
    all.extend_from_slice(args);
    run("tc", &all)
}

/// Moves the calling thread into the namespace `fd` (only this thread: threads it starts
/// later are born in it, the others stay where they are).
pub fn enter(fd: RawFd) -> std::io::Result<()> {
    // SAFETY: setns on a descriptor we hold open; it changes only this thread's namespace.
    if unsafe { libc::setns(fd, libc::CLONE_NEWNET) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// An open handle on a named namespace.
pub fn open(name: &str) -> Result<File> {
    File::open(path_of(name))
        .map_err(|e| Error::runtime(format!("cannot open namespace {name}: {e}")))
}

/// Makes `cmd` start inside the namespace `ns` (its process group or session is the
/// caller's to set).
pub fn command_in(cmd: &mut Command, ns: &File) {
    let fd = ns.as_raw_fd();
    // SAFETY: setns is an async-signal-safe system call; nothing else runs between fork and
    // exec. The descriptor stays open in the parent until spawn returns.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setns(fd, libc::CLONE_NEWNET) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The calling thread's namespace now; [`Entered::leave`] (or drop) brings the thread back.
pub struct Entered {
    home: File,
}

impl Entered {
    /// Moves the calling thread into `ns`, remembering where it was.
    pub fn enter(ns: &File) -> Result<Entered> {
        let home = File::open("/proc/thread-self/ns/net")
            .map_err(|e| Error::runtime(format!("cannot open this thread's namespace: {e}")))?;
        enter(ns.as_raw_fd())
            .map_err(|e| Error::runtime(format!("cannot enter the load namespace: {e}")))?;
        Ok(Entered { home })
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        // Failing to go back would leave the thread on the emulated path: say so loudly.
        if let Err(e) = enter(self.home.as_raw_fd()) {
            crate::eoutln!("overload: cannot return to the host's network namespace: {e}");
        }
    }
}

/// The names of the namespaces in /run/netns.
pub fn list() -> Vec<String> {
    let Ok(rd) = std::fs::read_dir(NETNS_DIR) else {
        return Vec::new();
    };
    let mut v: Vec<String> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    v.sort();
    v
}

/// Disables checksum and segmentation offloads of `dev` in the calling thread's namespace.
/// A veth hands its peer frames whose checksum is left for hardware to fill in and TCP
/// segments of up to 64 KiB; a user-space bridge between two veths sees them raw, so the
/// ends that face it must send real checksums and frames no bigger than the MTU.
pub fn no_offloads(dev: &str) -> Result<()> {
    // The legacy ethtool commands (linux/ethtool.h): set TX checksumming, TSO, GSO, GRO.
    const ETHTOOL_STXCSUM: u32 = 0x17;
    const ETHTOOL_STSO: u32 = 0x1f;
    const ETHTOOL_SGSO: u32 = 0x24;
    const ETHTOOL_SGRO: u32 = 0x2c;
    #[repr(C)]
    struct EthtoolValue {
        cmd: u32,
        data: u32,
    }
    #[repr(C)]
    struct Ifreq {
        name: [libc::c_char; libc::IFNAMSIZ],
        data: *mut EthtoolValue,
        _pad: [u8; 16],
    }
    if dev.len() >= libc::IFNAMSIZ {
        return Err(Error::runtime(format!("interface name {dev} too long")));
    }
    // SAFETY: a plain datagram socket used only for the ioctl, closed below.
    let sock = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if sock < 0 {
        return Err(std::io::Error::last_os_error().into());
    }
    let mut result = Ok(());
    for cmd in [ETHTOOL_SGRO, ETHTOOL_SGSO, ETHTOOL_STSO, ETHTOOL_STXCSUM] {
        let mut v = EthtoolValue { cmd, data: 0 };
        let mut req = Ifreq {
            name: [0; libc::IFNAMSIZ],
            data: &mut v,
            _pad: [0; 16],
        };
        for (d, s) in req.name.iter_mut().zip(dev.bytes()) {
            *d = s as libc::c_char;
        }
        // SAFETY: SIOCETHTOOL reads the ifreq and the ethtool_value it points to, both alive.
        if unsafe { libc::ioctl(sock, libc::SIOCETHTOOL, &mut req) } == -1 {
            result = Err(Error::runtime(format!(
                "cannot turn off offloads of {dev}: {}",
                std::io::Error::last_os_error()
            )));
            break;
        }
    }
    // SAFETY: closing the socket made above.
    unsafe { libc::close(sock) };
    result
}
