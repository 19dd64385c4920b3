//! The epoll backend: mio's edge-triggered poller, a timerfd for wake-ups finer than
//! epoll_wait's milliseconds, and sockets the transports read and write themselves.
use super::{Poller, Ready, Socket};
use crate::engine::pacing::TimerFd;
use crate::engine::transport::{connect_tcp, tcp_established};
use crate::metrics::ErrorKind;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Registry, Token};
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

const TIMER: Token = Token(usize::MAX);

/// The epoll and timer fds of a thread, opened before the threads start.
pub struct Opened {
    poll: Poll,
    timer: TimerFd,
}

impl Opened {
    pub fn open() -> crate::Result<Opened> {
        let poll = Poll::new().map_err(|e| crate::Error::runtime(format!("epoll: {e}")))?;
        let timer = TimerFd::new(poll.registry(), TIMER)
            .map_err(|e| crate::Error::runtime(format!("timerfd: {e}")))?;
        Ok(Opened { poll, timer })
    }
}

pub struct Epoll {
    poll: Poll,
    timer: TimerFd,
    events: Events,
}

impl Poller for Epoll {
    type Registry = Registry;

    fn start(opened: super::Opened) -> crate::Result<Epoll> {
        match opened {
            super::Opened::Epoll(Opened { poll, timer }) => Ok(Epoll {
                poll,
                timer,
                events: Events::with_capacity(1024),
            }),
            super::Opened::Uring(_) => Err(crate::Error::runtime("epoll worker given a ring")),
        }
    }

    fn registry(&self) -> &Registry {
        self.poll.registry()
    }

    fn mio_registry(&self) -> Option<&Registry> {
        Some(self.poll.registry())
    }

    fn wait(&mut self, events: &mut Vec<Ready>, wake: Option<Instant>) -> io::Result<()> {
        let now = Instant::now();
        let timeout = match wake {
            Some(w) if w > now && w - now < Duration::from_millis(2) => {
                self.timer.arm(w, now);
                None
            }
            // epoll rounds up to whole milliseconds: wake a little early rather than late.
            Some(w) if w > now => Some((w - now).saturating_sub(Duration::from_micros(900))),
            _ => Some(Duration::ZERO),
        };
        events.clear();
        self.poll.poll(&mut self.events, timeout)?;
        for ev in self.events.iter() {
            if ev.token() == TIMER {
                self.timer.clear();
                continue;
            }
            events.push(Ready {
                token: ev.token(),
                readable: ev.is_readable() || ev.is_error(),
                writable: ev.is_writable(),
                read_closed: ev.is_read_closed(),
            });
        }
        Ok(())
    }
}

impl Socket for TcpStream {
    type Poller = Epoll;

    fn connect(addr: SocketAddr, from: Option<IpAddr>) -> io::Result<TcpStream> {
        connect_tcp(addr, from)
    }

    fn register(&mut self, registry: &Registry, token: Token) -> io::Result<()> {
        registry.register(self, token, Interest::READABLE | Interest::WRITABLE)
    }

    fn deregister(&mut self, registry: &Registry) -> io::Result<()> {
        registry.deregister(self)
    }

    fn established(&mut self) -> Result<bool, ErrorKind> {
        tcp_established(self)
    }
}
