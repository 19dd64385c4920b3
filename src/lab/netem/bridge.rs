//! overload's own impairment bridge, for kernels without `sch_netem`: one thread in the path
//! namespace with two AF_PACKET sockets, one on each veth end (toward the load, toward the
//! stack). Every frame read on one is handed to the scheduler (`sched.rs`: loss, delay,
//! jitter, queue cap) and written on the other when due. ARP, IPv6 and everything else pass
//! like any frame. An emulation in user space, not the kernel's netem: what it adds at zero
//! delay is measured and printed (`super::measure_rtt`).
use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::sched::{Counts, Impairment, Scheduler};
use crate::{Error, Result};

/// Largest frame read: the veths' MTU is 1500 and offloads are off, so frames are at most
/// 1514 bytes; a larger buffer costs nothing and never truncates.
const FRAME_MAX: usize = 65_536;
/// The kernel-side receive buffer of each socket: bursts wait there while the thread is busy.
const SOCKET_BUFFER: libc::c_int = 4 << 20;
/// How often the thread looks at its stop flag when nothing is due.
const IDLE_WAKE: Duration = Duration::from_millis(50);

/// The bridge's thread; `stop` ends it and returns its counts.
pub struct Bridge {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<[Counts; 2]>>,
}

/// An AF_PACKET socket bound to one interface of the calling thread's namespace.
struct Port {
    fd: libc::c_int,
}

impl Drop for Port {
    fn drop(&mut self) {
        // SAFETY: closing the descriptor this Port owns.
        unsafe { libc::close(self.fd) };
    }
}

fn last_err(what: &str) -> Error {
    Error::runtime(format!(
        "bridge: {what}: {}",
        std::io::Error::last_os_error()
    ))
}

impl Port {
    fn open(dev: &str) -> Result<Port> {
        let proto = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: plain socket creation; the descriptor is owned by Port from here on.
        let fd = unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                proto as libc::c_int,
            )
        };
        if fd < 0 {
            return Err(last_err("AF_PACKET socket"));
        }
        let port = Port { fd };
        let name = std::ffi::CString::new(dev).map_err(|_| Error::runtime("bad device name"))?;
        // SAFETY: a NUL-terminated name.
        let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if index == 0 {
            return Err(last_err(&format!("no interface {dev}")));
        }
        // SAFETY: sockaddr_ll is plain data; zeroed is a valid start.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = index as i32;
        // SAFETY: binding our socket to a sockaddr_ll of the right size.
        let r = unsafe {
            libc::bind(
                fd,
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if r == -1 {
            return Err(last_err(&format!("bind to {dev}")));
        }
        // What the bridge itself writes on an interface must not come back to it as input.
        let one: libc::c_int = 1;
        let opts = [
            (libc::SOL_PACKET, libc::PACKET_IGNORE_OUTGOING, one),
            (libc::SOL_SOCKET, libc::SO_RCVBUF, SOCKET_BUFFER),
            (libc::SOL_SOCKET, libc::SO_SNDBUF, SOCKET_BUFFER),
        ];
        for (level, opt, v) in opts {
            // SAFETY: setting an int option from a live int.
            let r = unsafe {
                libc::setsockopt(
                    fd,
                    level,
                    opt,
                    &v as *const libc::c_int as *const libc::c_void,
                    std::mem::size_of::<libc::c_int>() as u32,
                )
            };
            if r == -1 {
                return Err(last_err("setsockopt"));
            }
        }
        Ok(port)
    }

    /// One frame, or None when nothing waits. Frames the kernel sent out (a packet socket
    /// sees them too on kernels that ignore PACKET_IGNORE_OUTGOING) are skipped.
    fn recv(&self, buf: &mut [u8]) -> Option<usize> {
        loop {
            // SAFETY: see above.
            let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
            let mut len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            // SAFETY: reading into our buffer and address, both of the sizes given.
            let n = unsafe {
                libc::recvfrom(
                    self.fd,
                    buf.as_mut_ptr() as *mut libc::c_void,
                    buf.len(),
                    0,
                    &mut from as *mut libc::sockaddr_ll as *mut libc::sockaddr,
                    &mut len,
                )
            };
            if n < 0 {
                return None;
            }
            if from.sll_pkttype == libc::PACKET_OUTGOING {
                continue;
            }
            return Some(n as usize);
        }
    }

    fn send(&self, frame: &[u8]) {
        // A frame the kernel refuses (buffer full) is lost like on a wire.
        // SAFETY: writing from a live buffer on a bound packet socket.
        unsafe {
            libc::send(
                self.fd,
                frame.as_ptr() as *const libc::c_void,
                frame.len(),
                0,
            );
        }
    }
}

impl Bridge {
    /// Starts the thread in namespace `ns`, between devices `a` (index 0: toward the load)
    /// and `b` (index 1: toward the stack). Returns once both sockets are bound.
    pub fn start(ns: &File, a: &str, b: &str, imp: Impairment, seed: u64) -> Result<Bridge> {
        let ns = ns.try_clone()?;
        let (a, b) = (a.to_string(), b.to_string());
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let (ready_tx, ready_rx) = mpsc::channel::<Result<()>>();
        let thread = std::thread::Builder::new()
            .name("netem-bridge".into())
            .spawn(move || {
                let ports = super::ns::enter(ns.as_raw_fd())
                    .map_err(|e| {
                        Error::runtime(format!("bridge: cannot enter the path namespace: {e}"))
                    })
                    .and_then(|()| Ok([Port::open(&a)?, Port::open(&b)?]));
                drop(ns);
                match ports {
                    Ok(ports) => {
                        let _ = ready_tx.send(Ok(()));
                        forward(&ports, Scheduler::new(imp, seed), &flag)
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        [Counts::default(); 2]
                    }
                }
            })?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Bridge {
                stop,
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => Err(Error::runtime("bridge: its thread ended before starting")),
        }
    }

    /// Stops the thread (its sockets close with it); what it forwarded and dropped, per
    /// direction (0: load → stack, 1: stack → load).
    pub fn stop(mut self) -> [Counts; 2] {
        self.halt()
    }

    fn halt(&mut self) -> [Counts; 2] {
        self.stop.store(true, Ordering::SeqCst);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        self.halt();
    }
}

/// The thread's loop: read what waits on both ports, write what is due, sleep until the
/// next frame is due or a port has input.
fn forward(ports: &[Port; 2], mut s: Scheduler, stop: &AtomicBool) -> [Counts; 2] {
    let t0 = Instant::now();
    let now = || t0.elapsed().as_nanos() as u64;
    let mut buf = vec![0u8; FRAME_MAX];
    // Spent frame buffers, reused: no allocation per frame once warm.
    let mut spare: Vec<Vec<u8>> = Vec::new();
    let mut fds = [
        libc::pollfd {
            fd: ports[0].fd,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: ports[1].fd,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    while !stop.load(Ordering::Relaxed) {
        for (dir, port) in ports.iter().enumerate() {
            // A bounded batch per port, so one busy direction cannot starve the other.
            for _ in 0..256 {
                let Some(n) = port.recv(&mut buf) else {
                    break;
                };
                let mut f = spare.pop().unwrap_or_default();
                f.clear();
                f.extend_from_slice(&buf[..n]);
                s.offer(dir, now(), f);
            }
        }
        let t = now();
        for dir in 0..2 {
            while let Some(f) = s.pop_due(dir, t) {
                ports[1 - dir].send(&f);
                spare.push(f);
            }
        }
        let wait = match s.next_due() {
            Some(due) => Duration::from_nanos(due.saturating_sub(now())).min(IDLE_WAKE),
            None => IDLE_WAKE,
        };
        if wait.is_zero() {
            continue;
        }
        let ts = libc::timespec {
            tv_sec: wait.as_secs() as libc::time_t,
            tv_nsec: wait.subsec_nanos() as libc::c_long,
        };
        // SAFETY: polling our two live descriptors with a timeout.
        unsafe { libc::ppoll(fds.as_mut_ptr(), 2, &ts, std::ptr::null()) };
    }
    [s.counts(0), s.counts(1)]
}
