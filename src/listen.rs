//! The small HTTP/1.1 server core of what overload serves to the network: the agent
//! (`observe::agent`, with `agent --generate` riding on it) and the live report page
//! (`live`). One request per connection, std threads, plain TCP or TLS (rustls).
//!
//! What a peer can make it spend is bounded here, once, for both:
//!
//! - **A head deadline**: a connection has [`Limits::head_deadline`] from its accept to send
//!   its whole request head (the TLS handshake included), however it paces its bytes; a
//!   per-read timeout alone would let a client dripping a byte a second hold it for ever.
//! - **Connections still sending their head** are few threads ([`Limits::pending`] in all,
//!   [`Limits::pending_per_peer`] per peer address). A newcomer is always taken in: at a limit
//!   the oldest connection of the peer holding the most is dropped for it (answered 503 on
//!   plain HTTP). So slow peers, from one address or many, cannot keep a real client out: its
//!   head arrives with its connection and is read before enough newer ones come to push it out.
//! - **Authentication before anything costly**: the [`Service`] judges the head alone
//!   (token, path, method) before a serving slot is taken or a body byte read.
//! - **Serving slots**: at most [`Limits::serving`] admitted requests are answered at once;
//!   more get 503 at once.
//! - **A body cap and deadline**: the service names the largest body a request may carry
//!   (more: 413 before reading it); the body has [`Limits::body_deadline`].
//! - **A write deadline**: the answer has [`Limits::write_deadline`] to leave, in all.
//! - **A bounded shutdown**: [`Server::stop`] ends the accept loop (it polls the stop flag
//!   every [`POLL`]) and drops the connections still sending their heads; it never waits on
//!   a client, and answers being written finish (or time out) on their own threads.
use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the accept loop looks at the stop flag while nobody connects (a connection
/// wakes it at once).
pub const POLL: Duration = Duration::from_millis(100);

/// What a peer may make the server spend.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Limits {
    /// Connections still sending their head, in all (each is a thread).
    pub pending: usize,
    /// Of those, from one peer address.
    pub pending_per_peer: usize,
    /// Admitted requests answered at once.
    pub serving: usize,
    /// From accept to the end of the head (TLS handshake included).
    pub head_deadline: Duration,
    /// Longest request head.
    pub max_head: usize,
    /// From the end of the head to the end of the body.
    pub body_deadline: Duration,
    /// For the whole answer to be written.
    pub write_deadline: Duration,
}

impl Limits {
    /// The budget each listener starts from (the agent's as it is; the live page changes
    /// what differs): heads come in one packet, so 2 s is generous.
    pub const BASE: Limits = Limits {
        pending: 128,
        pending_per_peer: 8,
        serving: 32,
        head_deadline: Duration::from_secs(2),
        max_head: 8 * 1024,
        body_deadline: Duration::from_secs(10),
        write_deadline: Duration::from_secs(10),
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::BASE
    }
}

/// A request head, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub method: String,
    /// The request target as sent (path and query).
    pub target: String,
    pub headers: Vec<(String, Vec<u8>)>,
}

impl Head {
    /// The first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }
}

/// An answer: a status, a content type, a body and extra header lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
    pub headers: Vec<(&'static str, &'static str)>,
}

impl Reply {
    /// A one-line text answer.
    pub fn text(status: u16, line: &str) -> Reply {
        Reply {
            status,
            content_type: "text/plain; charset=utf-8",
            body: format!("{}\n", line.trim_end()).into_bytes(),
            headers: Vec::new(),
        }
    }
    pub fn json(body: Vec<u8>) -> Reply {
        Reply {
            status: 200,
            content_type: "application/json",
            body,
            headers: Vec::new(),
        }
    }
    pub fn with_header(mut self, name: &'static str, value: &'static str) -> Reply {
        self.headers.push((name, value));
        self
    }
    /// The answer on the wire (the connection closes after it).
    pub fn to_bytes(&self) -> Vec<u8> {
        let reason = match self.status {
            200 => "OK",
            400 => "Bad Request",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Method Not Allowed",
            408 => "Request Timeout",
            409 => "Conflict",
            413 => "Content Too Large",
            422 => "Unprocessable Content",
            431 => "Request Header Fields Too Large",
            500 => "Internal Server Error",
            501 => "Not Implemented",
            502 => "Bad Gateway",
            _ => "Service Unavailable",
        };
        let mut head = format!(
            "HTTP/1.1 {} {reason}\r\nContent-Type: {}\r\nContent-Length: {}\r\n\
             Connection: close\r\nCache-Control: no-store\r\n",
            self.status,
            self.content_type,
            self.body.len()
        );
        for (k, v) in &self.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        out.extend_from_slice(&self.body);
        out
    }
}

fn busy() -> Reply {
    Reply::text(503, "busy: too many connections").with_header("Retry-After", "1")
}

/// What a server answers; called on the connection's thread.
pub trait Service: Send + Sync {
    /// Judges the head alone, before anything costly (a serving slot, the body): Err is the
    /// answer that ends the exchange now (401, 404, 405…); Ok, the largest body this request
    /// may carry (0: none).
    fn admit(&self, head: &Head) -> Result<usize, Reply>;
    /// The answer to an admitted request and its whole body.
    fn answer(&self, head: &Head, body: &[u8]) -> Reply;
}

/// What the bytes received so far make of a request head.
#[derive(Debug, PartialEq, Eq)]
pub enum Parsed {
    /// Not complete yet (and within the size limit).
    Partial,
    /// The head, and its length in bytes (the body starts there).
    Complete(Head, usize),
    /// Not a request we take: the answer that says why.
    Reject(Reply),
}

/// Parses the head at the start of `buf` (at most `max_head` bytes of it).
pub fn parse_head(buf: &[u8], max_head: usize) -> Parsed {
    let mut hs = [httparse::EMPTY_HEADER; 32];
    let mut req = httparse::Request::new(&mut hs);
    let window = &buf[..buf.len().min(max_head)];
    match req.parse(window) {
        Ok(httparse::Status::Complete(n)) => Parsed::Complete(
            Head {
                method: req.method.unwrap_or("").to_string(),
                target: req.path.unwrap_or("").to_string(),
                headers: req
                    .headers
                    .iter()
                    .map(|h| (h.name.to_string(), h.value.to_vec()))
                    .collect(),
            },
            n,
        ),
        Ok(httparse::Status::Partial) if buf.len() < max_head => Parsed::Partial,
        Ok(httparse::Status::Partial) => Parsed::Reject(Reply::text(431, "request head too large")),
        Err(httparse::Error::TooManyHeaders) => {
            Parsed::Reject(Reply::text(431, "too many header lines"))
        }
        Err(_) => Parsed::Reject(Reply::text(400, "bad request")),
    }
}

/// The body length a head announces, within `max_body`: Err is the answer (411/413/501/400).
pub fn body_len(head: &Head, max_body: usize) -> Result<usize, Reply> {
    if head.header("transfer-encoding").is_some() {
        return Err(Reply::text(
            501,
            "Transfer-Encoding is not taken: send a Content-Length",
        ));
    }
    let lengths: Vec<&[u8]> = head
        .headers
        .iter()
        .filter(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map(|(_, v)| v.as_slice())
        .collect();
    let len = match lengths.as_slice() {
        [] => 0,
        [v] => match std::str::from_utf8(v).ok().map(str::trim) {
            Some(t) if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) => {
                t.parse::<usize>().unwrap_or(usize::MAX)
            }
            _ => return Err(Reply::text(400, "bad Content-Length")),
        },
        _ => return Err(Reply::text(400, "more than one Content-Length")),
    };
    if len > max_body {
        return Err(Reply::text(413, "request body too large"));
    }
    Ok(len)
}

/// The answer `service` gives to a request arriving whole in `buf`, without any I/O (the
/// unit tests' and the fuzz targets' entry); None while the request is incomplete.
pub fn respond(service: &dyn Service, buf: &[u8], max_head: usize) -> Option<Reply> {
    let (head, n) = match parse_head(buf, max_head) {
        Parsed::Partial => return None,
        Parsed::Reject(r) => return Some(r),
        Parsed::Complete(h, n) => (h, n),
    };
    let max_body = match service.admit(&head) {
        Err(r) => return Some(r),
        Ok(m) => m,
    };
    let len = match body_len(&head, max_body) {
        Err(r) => return Some(r),
        Ok(l) => l,
    };
    let body = buf.get(n..n.checked_add(len)?)?;
    Some(service.answer(&head, body))
}

/// A listening server; stops when dropped.
pub struct Server {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

struct Shared {
    stop: AtomicBool,
    limits: Limits,
    service: Arc<dyn Service>,
    tls: Option<Arc<rustls::ServerConfig>>,
    slots: Mutex<Slots>,
}

/// Listens on `listener` and serves `service` until stopped; `name` names the threads.
pub fn serve(
    listener: TcpListener,
    name: &str,
    limits: Limits,
    service: Arc<dyn Service>,
    tls: Option<Arc<rustls::ServerConfig>>,
) -> std::io::Result<Server> {
    let addr = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let shared = Arc::new(Shared {
        stop: AtomicBool::new(false),
        limits,
        service,
        tls,
        slots: Mutex::new(Slots::default()),
    });
    let sh = Arc::clone(&shared);
    let conn_name = format!("{name}-conn");
    let accept = std::thread::Builder::new()
        .name(format!("{name}-accept"))
        .spawn(move || accept_loop(&listener, &sh, &conn_name))?;
    Ok(Server {
        addr,
        shared,
        accept: Some(accept),
    })
}

impl Server {
    pub fn stop(mut self) {
        self.shutdown();
    }
    fn shutdown(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
        // The connections still sending their heads end now; their threads are not waited on.
        let pending: Vec<TcpStream> = lock(&self.shared.slots)
            .pending
            .values()
            .filter_map(|p| p.sock.try_clone().ok())
            .collect();
        for s in pending {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A connection still sending its head.
struct Pending {
    peer: IpAddr,
    /// A handle on its socket, to drop it for a newcomer or at stop.
    sock: TcpStream,
}

/// The connections in progress: those sending their heads (by age: ids only grow) and the
/// number being served.
#[derive(Default)]
struct Slots {
    next: u64,
    pending: BTreeMap<u64, Pending>,
    per_peer: HashMap<IpAddr, usize>,
    serving: usize,
}

impl Slots {
    /// Takes `sock` in as pending; returns its id and the connections it pushes out (the
    /// oldest of the peer holding the most, at the global limit; the peer's own oldest, at
    /// the per-peer limit).
    fn admit(&mut self, peer: IpAddr, sock: TcpStream, l: &Limits) -> (u64, Vec<TcpStream>) {
        let mut out = Vec::new();
        while self.per_peer.get(&peer).copied().unwrap_or(0) >= l.pending_per_peer.max(1) {
            match self.oldest_of(peer) {
                Some(id) => out.extend(self.remove(id)),
                None => break,
            }
        }
        while self.pending.len() >= l.pending.max(1) {
            let Some(biggest) = self
                .per_peer
                .iter()
                .max_by_key(|(_, n)| **n)
                .map(|(p, _)| *p)
            else {
                break;
            };
            match self.oldest_of(biggest) {
                Some(id) => out.extend(self.remove(id)),
                None => break,
            }
        }
        let id = self.next;
        self.next += 1;
        self.pending.insert(id, Pending { peer, sock });
        *self.per_peer.entry(peer).or_insert(0) += 1;
        (id, out)
    }

    fn oldest_of(&self, peer: IpAddr) -> Option<u64> {
        self.pending
            .iter()
            .find(|(_, p)| p.peer == peer)
            .map(|(id, _)| *id)
    }

    /// Removes pending connection `id` if still there (pushed out already: nothing).
    fn remove(&mut self, id: u64) -> Option<TcpStream> {
        let p = self.pending.remove(&id)?;
        if let Some(n) = self.per_peer.get_mut(&p.peer) {
            *n -= 1;
            if *n == 0 {
                self.per_peer.remove(&p.peer);
            }
        }
        Some(p.sock)
    }
}

/// Accepts until stopped. Polls rather than blocks, so stopping needs no wake-up connection
/// (which a full backlog would refuse); a connection still wakes it at once.
fn accept_loop(l: &TcpListener, sh: &Arc<Shared>, name: &str) {
    let mut pfd = libc::pollfd {
        fd: l.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    while !sh.stop.load(Ordering::SeqCst) {
        // SAFETY: one valid pollfd, owned by this frame.
        unsafe { libc::poll(&mut pfd, 1, POLL.as_millis() as libc::c_int) };
        loop {
            match l.accept() {
                Ok((s, peer)) => take(s, peer.ip(), sh, name),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                // EMFILE and the like: back off rather than spin.
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(50));
                    break;
                }
            }
            if sh.stop.load(Ordering::SeqCst) {
                return;
            }
        }
    }
}

fn take(s: TcpStream, peer: IpAddr, sh: &Arc<Shared>, name: &str) {
    let Ok(handle) = s.try_clone() else {
        return;
    };
    let accepted = Instant::now();
    let (id, pushed) = lock(&sh.slots).admit(peer, handle, &sh.limits);
    for victim in pushed {
        push_out(&victim, sh.tls.is_none());
    }
    let sh2 = Arc::clone(sh);
    let spawned = std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            connection(s, id, accepted, &sh2);
            lock(&sh2.slots).remove(id);
        });
    if spawned.is_err() {
        // The closure (and the stream) is dropped; its slot goes with it.
        lock(&sh.slots).remove(id);
    }
}

/// Ends a connection pushed out for a newcomer: a 503 first on plain HTTP (it fits a fresh
/// socket's send buffer: never blocks), then both directions shut, which wakes its thread.
fn push_out(s: &TcpStream, plain: bool) {
    if plain {
        let r = busy().to_bytes();
        // SAFETY: a valid socket and buffer; MSG_DONTWAIT: never blocks this accept thread.
        unsafe {
            libc::send(
                s.as_raw_fd(),
                r.as_ptr().cast(),
                r.len(),
                libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
            )
        };
    }
    let _ = s.shutdown(std::net::Shutdown::Both);
}

/// A connection: plain TCP, or a rustls server connection driven over it by hand, one socket
/// read or write at a time, so the deadline is checked between any two (rustls'
/// `StreamOwned` loops inside one call while bytes keep coming: a handshake dripped a byte at
/// a time would turn the deadline back into a per-read timeout).
enum Conn {
    Plain(TcpStream),
    Tls(Box<rustls::ServerConnection>, TcpStream),
}

/// What a read before a deadline gave.
enum Got {
    More,
    Late,
    Gone,
}

fn retry(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::Interrupted
            | std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
    )
}

impl Conn {
    fn tcp(&self) -> &TcpStream {
        match self {
            Conn::Plain(s) | Conn::Tls(_, s) => s,
        }
    }

    /// Reads more into `buf` (up to `cap` bytes in all) before `end`.
    fn read_by(&mut self, buf: &mut Vec<u8>, end: Instant, cap: usize) -> Got {
        let mut chunk = [0u8; 16 * 1024];
        let room = cap.saturating_sub(buf.len()).clamp(1, chunk.len());
        loop {
            if let Conn::Tls(c, _) = self {
                match c.reader().read(&mut chunk[..room]) {
                    Ok(0) => return Got::Gone,
                    Ok(n) => {
                        buf.extend_from_slice(&chunk[..n]);
                        return Got::More;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(_) => return Got::Gone,
                }
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Got::Late;
            }
            let _ = self.tcp().set_read_timeout(Some(left));
            match self {
                Conn::Plain(s) => match s.read(&mut chunk[..room]) {
                    Ok(0) => return Got::Gone,
                    Ok(n) => {
                        buf.extend_from_slice(&chunk[..n]);
                        return Got::More;
                    }
                    Err(e) if retry(&e) => {}
                    Err(_) => return Got::Gone,
                },
                Conn::Tls(c, s) => {
                    // The handshake's own answers go out first, within the same deadline.
                    if !flush_tls(c, s, end) {
                        return Got::Gone;
                    }
                    match c.read_tls(s) {
                        Ok(0) => return Got::Gone,
                        Ok(_) => {
                            if c.process_new_packets().is_err() {
                                let _ = flush_tls(c, s, end); // the alert
                                return Got::Gone;
                            }
                        }
                        Err(e) if retry(&e) => {}
                        Err(_) => return Got::Gone,
                    }
                }
            }
        }
    }

    /// Writes all of `bytes` before `end` (TLS: then close_notify, so the client reads the
    /// answer's end as an end, not a truncation); false if cut short.
    fn write_by(&mut self, bytes: &[u8], end: Instant) -> bool {
        match self {
            Conn::Plain(s) => {
                let mut at = 0;
                while at < bytes.len() {
                    let left = end.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    let _ = s.set_write_timeout(Some(left));
                    match s.write(&bytes[at..]) {
                        Ok(0) => return false,
                        Ok(n) => at += n,
                        Err(e) if retry(&e) => {}
                        Err(_) => return false,
                    }
                }
                true
            }
            Conn::Tls(c, s) => {
                let mut at = 0;
                while at < bytes.len() {
                    // rustls takes what fits its buffer; sending its records makes room.
                    match c.writer().write(&bytes[at..]) {
                        Ok(n) => at += n,
                        Err(_) => return false,
                    }
                    if !c.wants_write() && at < bytes.len() {
                        return false;
                    }
                    if !flush_tls(c, s, end) {
                        return false;
                    }
                }
                c.send_close_notify();
                flush_tls(c, s, end)
            }
        }
    }
}

/// Sends the records rustls has queued, before `end`; false if not all went.
fn flush_tls(c: &mut rustls::ServerConnection, s: &mut TcpStream, end: Instant) -> bool {
    while c.wants_write() {
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        let _ = s.set_write_timeout(Some(left));
        match c.write_tls(s) {
            Ok(0) => return false,
            Ok(_) => {}
            Err(e) if retry(&e) => {}
            Err(_) => return false,
        }
    }
    true
}

/// One exchange: the head by its deadline, the service's judgement, a serving slot, the body
/// by its deadline, the answer by its deadline.
fn connection(tcp: TcpStream, id: u64, accepted: Instant, sh: &Shared) {
    let l = &sh.limits;
    let mut s = match &sh.tls {
        None => Conn::Plain(tcp),
        Some(cfg) => match rustls::ServerConnection::new(Arc::clone(cfg)) {
            Ok(c) => Conn::Tls(Box::new(c), tcp),
            Err(_) => return,
        },
    };
    let mut buf = Vec::with_capacity(1024);
    let head_end = accepted + l.head_deadline;
    let (head, head_len) = loop {
        match parse_head(&buf, l.max_head) {
            Parsed::Complete(h, n) => break (h, n),
            Parsed::Reject(r) => return finish(&mut s, &r, l),
            Parsed::Partial => {}
        }
        match s.read_by(&mut buf, head_end, l.max_head) {
            Got::More => {}
            Got::Late => return finish(&mut s, &Reply::text(408, "request timeout"), l),
            Got::Gone => return close_gently(s.tcp()),
        }
    };
    let max_body = match sh.service.admit(&head) {
        Ok(m) => m,
        Err(r) => return finish(&mut s, &r, l),
    };
    let len = match body_len(&head, max_body) {
        Ok(n) => n,
        Err(r) => return finish(&mut s, &r, l),
    };
    // Admitted: no longer pending (a newcomer cannot push it out), and a serving slot.
    {
        let mut slots = lock(&sh.slots);
        if slots.remove(id).is_none() {
            return; // pushed out meanwhile
        }
        if slots.serving >= l.serving {
            drop(slots);
            return finish(&mut s, &busy(), l);
        }
        slots.serving += 1;
    }
    struct Serving<'a>(&'a Mutex<Slots>);
    impl Drop for Serving<'_> {
        fn drop(&mut self) {
            let mut s = lock(self.0);
            s.serving = s.serving.saturating_sub(1);
        }
    }
    let slot = Serving(&sh.slots);
    let want = head_len + len;
    let body_end = Instant::now() + l.body_deadline;
    while buf.len() < want {
        match s.read_by(&mut buf, body_end, want) {
            Got::More => {}
            Got::Late => return finish(&mut s, &Reply::text(408, "request timeout"), l),
            Got::Gone => return close_gently(s.tcp()),
        }
    }
    let reply = sh.service.answer(&head, &buf[head_len..want]);
    let written = s.write_by(&reply.to_bytes(), Instant::now() + l.write_deadline);
    // The answer is out: its serving place is free before the close the client waits on, so a
    // client that asks again as soon as it has read the answer is not told "busy".
    drop(slot);
    if written {
        close_gently(s.tcp());
    }
}

/// Writes `reply` within the write deadline, then closes so the client reads it whole.
fn finish(s: &mut Conn, reply: &Reply, l: &Limits) {
    if s.write_by(&reply.to_bytes(), Instant::now() + l.write_deadline) {
        close_gently(s.tcp());
    }
}

/// Closes after reading what already arrived (bounded): closing a socket with unread bytes
/// sends a reset, which can destroy the answer before the client reads it.
fn close_gently(s: &TcpStream) {
    let _ = s.shutdown(std::net::Shutdown::Write);
    if s.set_nonblocking(true).is_ok() {
        let mut scratch = [0u8; 4096];
        for _ in 0..16 {
            if !matches!((&*s).read(&mut scratch), Ok(n) if n > 0) {
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(raw: &str) -> Head {
        match parse_head(raw.as_bytes(), 8192) {
            Parsed::Complete(h, _) => h,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn heads_parse_and_limits_hold() {
        assert_eq!(parse_head(b"GET / HTTP/1.1\r\n", 8192), Parsed::Partial);
        let h = head("GET /x?y=1 HTTP/1.1\r\nAuthorization: Bearer t\r\n\r\n");
        assert_eq!((h.method.as_str(), h.target.as_str()), ("GET", "/x?y=1"));
        assert_eq!(h.header("authorization"), Some(&b"Bearer t"[..]));
        let status = |p: Parsed| match p {
            Parsed::Reject(r) => r.status,
            other => panic!("{other:?}"),
        };
        assert_eq!(status(parse_head(b"\x00\x01garbage\r\n\r\n", 8192)), 400);
        let long = format!("GET / HTTP/1.1\r\nX: {}", "a".repeat(100));
        assert_eq!(status(parse_head(long.as_bytes(), 64)), 431);
        let many: String = (0..40).map(|i| format!("X{i}: y\r\n")).collect();
        let many = format!("GET / HTTP/1.1\r\n{many}\r\n");
        assert_eq!(status(parse_head(many.as_bytes(), 8192)), 431);
    }

    #[test]
    fn bodies_need_one_content_length_within_the_cap() {
        let len = |extra: &str, max| {
            body_len(&head(&format!("POST / HTTP/1.1\r\n{extra}\r\n")), max).map_err(|r| r.status)
        };
        assert_eq!(len("", 10), Ok(0));
        assert_eq!(len("Content-Length: 10\r\n", 10), Ok(10));
        assert_eq!(len("Content-Length: 11\r\n", 10), Err(413));
        assert_eq!(
            len("Content-Length: 99999999999999999999999\r\n", 10),
            Err(413)
        );
        assert_eq!(len("Content-Length: -1\r\n", 10), Err(400));
        assert_eq!(len("Content-Length: +1\r\n", 10), Err(400));
        assert_eq!(
            len("Content-Length: 1\r\nContent-Length: 1\r\n", 10),
            Err(400)
        );
        assert_eq!(len("Transfer-Encoding: chunked\r\n", 10), Err(501));
    }

    fn sock() -> TcpStream {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let _ = l.accept().unwrap();
        c
    }

    #[test]
    fn newcomers_push_out_the_biggest_peers_oldest() {
        let l = Limits {
            pending: 3,
            pending_per_peer: 2,
            ..Limits::default()
        };
        let (a, b): (IpAddr, IpAddr) = ([127, 0, 0, 2].into(), [127, 0, 0, 1].into());
        let mut s = Slots::default();
        for _ in 0..2 {
            assert!(s.admit(a, sock(), &l).1.is_empty());
        }
        // The per-peer limit: a's third pushes out a's first.
        let (_, out) = s.admit(a, sock(), &l);
        assert_eq!((out.len(), s.oldest_of(a)), (1, Some(1)));
        let (b1, out) = s.admit(b, sock(), &l);
        assert!(out.is_empty());
        // The global limit: b's second pushes out a's oldest (a holds the most), not b's.
        let (_, out) = s.admit(b, sock(), &l);
        assert_eq!(out.len(), 1);
        assert_eq!((s.per_peer[&a], s.per_peer[&b]), (1, 2));
        assert_eq!(s.oldest_of(a), Some(2));
        // Now b holds the most: its third pushes out its own oldest.
        let (_, out) = s.admit(b, sock(), &l);
        assert_eq!(out.len(), 1);
        assert!(!s.pending.contains_key(&b1));
        assert_eq!((s.per_peer[&a], s.per_peer[&b], s.pending.len()), (1, 2, 3));
        // Removing twice (pushed out, then its thread ends) counts once.
        let newest = *s.pending.keys().last().unwrap();
        assert!(s.remove(newest).is_some() && s.remove(newest).is_none());
        assert_eq!(s.per_peer[&b], 1);
    }

    /// Answers everything with 200 after a token check.
    struct Echo;
    impl Service for Echo {
        fn admit(&self, h: &Head) -> Result<usize, Reply> {
            match h.header("x-token") {
                Some(b"yes") => Ok(16),
                _ => Err(Reply::text(401, "unauthorized")),
            }
        }
        fn answer(&self, _: &Head, body: &[u8]) -> Reply {
            Reply::json(body.to_vec())
        }
    }

    #[test]
    fn respond_judges_the_head_before_the_body() {
        let r = |raw: &str| respond(&Echo, raw.as_bytes(), 8192).map(|r| (r.status, r.body));
        assert_eq!(
            r("POST / HTTP/1.1\r\nContent-Length: 99\r\n\r\n")
                .unwrap()
                .0,
            401
        );
        assert_eq!(
            r("POST / HTTP/1.1\r\nX-Token: yes\r\nContent-Length: 99\r\n\r\n")
                .unwrap()
                .0,
            413
        );
        assert_eq!(
            r("POST / HTTP/1.1\r\nX-Token: yes\r\nContent-Length: 3\r\n\r\nab"),
            None
        );
        assert_eq!(
            r("POST / HTTP/1.1\r\nX-Token: yes\r\nContent-Length: 3\r\n\r\nabcd"),
            Some((200, b"abc".to_vec()))
        );
    }

    #[test]
    fn stop_does_not_wait_on_a_client() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let server = serve(l, "t", Limits::default(), Arc::new(Echo), None).unwrap();
        let mut c = TcpStream::connect(server.addr).unwrap();
        c.write_all(b"GET / HT").unwrap();
        let t0 = Instant::now();
        server.stop();
        assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
        let mut rest = Vec::new();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = c.read_to_end(&mut rest);
        assert!(rest.is_empty(), "dropped, not answered");
    }

    /// Answers with 64 MiB, more than any socket buffers hold.
    struct Big;
    impl Service for Big {
        fn admit(&self, _: &Head) -> Result<usize, Reply> {
            Ok(0)
        }
        fn answer(&self, _: &Head, _: &[u8]) -> Reply {
            Reply::json(vec![b' '; 64 << 20])
        }
    }

    /// The status line's code of an answer to `GET /` on `addr`, reading at most its head.
    fn status_of(addr: SocketAddr) -> u16 {
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut head = [0u8; 12];
        match c.read_exact(&mut head) {
            Ok(()) => std::str::from_utf8(&head[9..12]).unwrap().parse().unwrap(),
            Err(_) => 0,
        }
    }

    #[test]
    fn serving_slots_are_capped_and_a_slow_reader_frees_its_own() {
        let l = Limits {
            serving: 1,
            write_deadline: Duration::from_millis(500),
            ..Limits::default()
        };
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let server = serve(listener, "t", l, Arc::new(Big), None).unwrap();
        // A reader that never reads holds the one slot while its answer is being written...
        let mut slow = TcpStream::connect(server.addr).unwrap();
        slow.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        let mut first = [0u8; 12];
        slow.read_exact(&mut first).unwrap();
        assert_eq!(&first[9..12], b"200", "being served");
        let t0 = Instant::now();
        let mut seen_busy = false;
        loop {
            match status_of(server.addr) {
                503 => seen_busy = true,
                200 => break,
                other => panic!("status {other}"),
            }
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "the slot never came back"
            );
        }
        // ... and only until its write deadline.
        assert!(
            seen_busy,
            "a second request was served beside the first: no cap"
        );
        drop(slow);
    }

    /// Over TLS (driven by hand, record by record): a request is answered whole, its end
    /// marked by close_notify (a clean end of stream, not a truncation).
    #[test]
    fn tls_exchanges_end_with_close_notify() {
        use crate::scale::tls;
        let id = tls::self_signed(&["localhost".into()]).unwrap();
        let fp = tls::parse_fingerprint(&id.fingerprint).unwrap();
        let client = tls::client(&tls::Trust::Pinned(fp)).unwrap();
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let server = serve(
            listener,
            "t",
            Limits::default(),
            Arc::new(Echo),
            Some(id.config),
        )
        .unwrap();
        let tcp = TcpStream::connect(server.addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
        let conn = rustls::ClientConnection::new(client, name).unwrap();
        let mut s = rustls::StreamOwned::new(conn, tcp);
        s.write_all(b"POST / HTTP/1.1\r\nX-Token: yes\r\nContent-Length: 5\r\n\r\nhello")
            .unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).expect("a clean end: close_notify");
        let text = String::from_utf8_lossy(&out);
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.ends_with("\r\n\r\nhello"), "{text}");
    }
}
