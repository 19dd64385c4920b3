//! How the controller reaches its generator agents: the `--generators FILE` list, and one
//! blocking HTTP/1.1 exchange per request (plain, or TLS pinned to a fingerprint or checked
//! against a CA file) with one deadline for all of it, behind the [`Channel`] seam that the
//! unit tests script.
//!
//! A line may stand for several agents: `addresses=N` says its host name resolves to N of
//! them (a Kubernetes headless Service lists its ready pods so), one generator per address,
//! each reached at its address while TLS checks the certificate against the name.
use super::tls::{self, Trust};
use super::wire::{GeneratorInfo, StepAnswer, StepPlan, StopStep, PROTOCOL};
use crate::url::{Scheme, Url};
use crate::Error;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Why a generator gave no part of a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// It answered, refusing the step (its limits, its allow-list, its token): the plan is
    /// wrong for it.
    Refused(String),
    /// It could not be reached, broke the connection, or did not answer in time.
    Lost(String),
}

/// Sends one generator's part of a step and waits for its answer.
pub trait Channel: Sync {
    /// How many generators.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// A name for generator `g` in notes and errors (its URL).
    fn name(&self, g: usize) -> &str;
    /// Sends `plan` to generator `g` and waits for its part, `wait` at most (cut short by an
    /// interruption: see [`STOP_GRACE`]).
    fn step(&self, g: usize, plan: &StepPlan, wait: Duration) -> Result<StepAnswer, Failure>;
    /// Tells generator `g` to end the step of `plan` now (an interruption) and answer with
    /// what it measured. Best effort: one that does not will be lost at [`STOP_GRACE`].
    fn stop(&self, g: usize, plan: &StepPlan);
}

/// One agent as `--generators FILE` lists it.
#[derive(Debug, Clone)]
pub struct Generator {
    pub url: Url,
    pub shown: String,
    pub token: String,
    tls: Option<Arc<rustls::ClientConfig>>,
    /// `addresses=N`: the line stands for the N addresses its name resolves to.
    pub addresses: Option<usize>,
    /// The address this generator is reached at (one of a line's `addresses=N`); None: the
    /// URL's.
    pub addr: Option<SocketAddr>,
}

/// How long `addresses=N` waits for its name to resolve to N addresses: the pods of a
/// Deployment started beside the controller take a while to be ready.
pub const RESOLVE_PATIENCE: Duration = Duration::from_secs(120);

/// Reads `--generators FILE`: one agent a line, `URL token-file=FILE [fingerprint=sha256:…]
/// [cacert=FILE] [addresses=N]`; blank lines and `#` comments skipped. https:// needs a
/// fingerprint or a CA file. Errors name the line. Lines with `addresses=N` are expanded
/// ([`expand`], waiting up to [`RESOLVE_PATIENCE`]).
pub fn read_generators(path: &Path) -> crate::Result<Vec<Generator>> {
    let text = crate::fsutil::read_capped(path, 1 << 20, "--generators").map_err(Error::usage)?;
    let text = String::from_utf8(text)
        .map_err(|_| Error::usage(format!("--generators {}: not UTF-8 text", path.display())))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at =
            |why: String| Error::usage(format!("--generators {}:{}: {why}", path.display(), i + 1));
        out.push(parse_line(line, base).map_err(at)?);
    }
    if out.is_empty() {
        return Err(Error::usage(format!(
            "--generators {}: no generator listed (one `URL token-file=FILE` a line)",
            path.display()
        )));
    }
    let out = expand(out, RESOLVE_PATIENCE)?;
    if out.len() > crate::plan::segment::MAX_SEGMENTS as usize {
        return Err(Error::usage("--generators: too many generators"));
    }
    Ok(out)
}

/// One generator per address of each `addresses=N` line, in address order (so a rerun cuts
/// the same segments); the name is resolved again each second, up to `patience`, until it
/// gives N addresses. Fewer or more after that: a one-line error saying what it resolved to.
pub fn expand(gens: Vec<Generator>, patience: Duration) -> crate::Result<Vec<Generator>> {
    let mut out = Vec::with_capacity(gens.len());
    for g in gens {
        let Some(n) = g.addresses else {
            out.push(g);
            continue;
        };
        let deadline = std::time::Instant::now() + patience;
        let addrs = loop {
            let found = all_addresses(&g.url);
            let done = matches!(&found, Ok(a) if a.len() >= n);
            if done || std::time::Instant::now() >= deadline {
                break found;
            }
            std::thread::sleep(Duration::from_secs(1).min(patience));
        };
        let addrs = addrs.map_err(|e| Error::usage(format!("generator {}: {e}", g.shown)))?;
        if addrs.len() != n {
            let list: Vec<String> = addrs.iter().map(|a| a.ip().to_string()).collect();
            return Err(Error::usage(format!(
                "generator {}: addresses={n}, but '{}' resolves to {} address(es) [{}] after {}",
                g.shown,
                g.url.host,
                addrs.len(),
                list.join(", "),
                crate::units::fmt_duration(patience)
            )));
        }
        for a in addrs {
            out.push(Generator {
                shown: format!("{} ({a})", g.shown),
                addr: Some(a),
                addresses: None,
                ..g.clone()
            });
        }
    }
    Ok(out)
}

/// Every address `url`'s host resolves to, sorted, without repeats.
fn all_addresses(url: &Url) -> Result<Vec<SocketAddr>, String> {
    let mut a: Vec<SocketAddr> = (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve host '{}': {e}", url.host))?
        .collect();
    a.sort();
    a.dedup();
    Ok(a)
}

fn parse_line(line: &str, base: &Path) -> Result<Generator, String> {
    let mut words = line.split_whitespace();
    let u = words.next().unwrap_or_default();
    let url = Url::parse(u).map_err(|e| format!("URL {e}"))?;
    let (mut token, mut trust, mut addresses) = (None, None, None);
    for w in words {
        let (k, v) = w.split_once('=').ok_or_else(|| {
            format!("'{w}': expected token-file=FILE, fingerprint=…, cacert=FILE or addresses=N")
        })?;
        let file = |v: &str| {
            let p = Path::new(v);
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                base.join(p)
            }
        };
        match k {
            "token-file" => {
                token =
                    Some(crate::observe::agent::read_token(&file(v)).map_err(|e| e.to_string())?)
            }
            "fingerprint" => trust = Some(Trust::Pinned(tls::parse_fingerprint(v)?)),
            "cacert" => {
                let pem = crate::fsutil::read_capped(&file(v), 1 << 20, "cacert")?;
                trust = Some(Trust::Ca(pem));
            }
            "addresses" => {
                let max = crate::plan::segment::MAX_SEGMENTS as usize;
                addresses = Some(
                    v.parse::<usize>()
                        .ok()
                        .filter(|n| (1..=max).contains(n))
                        .ok_or_else(|| format!("addresses={v}: use a count from 1 to {max}"))?,
                );
            }
            _ => {
                return Err(format!(
                    "'{k}': unknown field (token-file, fingerprint, cacert, addresses)"
                ))
            }
        }
    }
    let token = token.ok_or("no token-file=FILE (every agent checks a bearer token)")?;
    let tls = match (url.scheme, &trust) {
        (Scheme::Https, Some(t)) => Some(tls::client(t)?),
        (Scheme::Https, None) => {
            return Err(format!(
                "{u}: https needs fingerprint=sha256:… (printed by the agent) or cacert=FILE"
            ))
        }
        (Scheme::Http, Some(_)) => {
            return Err(format!(
                "{u}: fingerprint and cacert are for https:// agents"
            ))
        }
        (Scheme::Http, None) => None,
    };
    Ok(Generator {
        shown: url.origin(),
        url,
        token,
        tls,
        addresses,
        addr: None,
    })
}

/// The real channel: HTTP to the listed agents.
pub struct Http {
    pub generators: Vec<Generator>,
}

impl Http {
    /// Asks every agent what it allows (`GET /generator`), so a wrong token, an unreachable
    /// agent or another version stops the run before its first step.
    pub fn check(&self) -> crate::Result<Vec<GeneratorInfo>> {
        // All agents at once, as a step goes out: a silent one costs the check its deadline
        // once, not once per agent. The first failure in the list's order is the one told.
        std::thread::scope(|s| {
            let asks: Vec<_> = self
                .generators
                .iter()
                .map(|g| s.spawn(move || check_one(g)))
                .collect();
            asks.into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(Error::runtime("the controller's thread failed")))
                })
                .collect()
        })
    }
}

/// How long the check before the run waits for an agent's `GET /generator`.
const CHECK_WAIT: Duration = Duration::from_secs(10);

/// One agent's `GET /generator`: what it allows, or the one-line reason it cannot be used.
fn check_one(g: &Generator) -> crate::Result<GeneratorInfo> {
    let (status, body) = exchange(g, "GET", "/generator", b"", CHECK_WAIT)
        .map_err(|e| Error::usage(format!("generator {}: {e}", g.shown)))?;
    if status != 200 {
        return Err(Error::usage(format!(
            "generator {}: {status} {}",
            g.shown,
            first_line(&body)
        )));
    }
    let info: GeneratorInfo = serde_json::from_slice(&body).map_err(|_| {
        Error::usage(format!(
            "generator {}: not an `overload agent --generate` (its /generator answer is not one)",
            g.shown
        ))
    })?;
    if info.protocol != PROTOCOL {
        return Err(Error::usage(format!(
            "generator {}: protocol {} (this controller speaks {PROTOCOL}): run the same overload version",
            g.shown, info.protocol
        )));
    }
    Ok(info)
}

fn first_line(body: &[u8]) -> String {
    crate::units::escape_controls(
        String::from_utf8_lossy(body)
            .lines()
            .next()
            .unwrap_or("")
            .trim(),
    )
    .into_owned()
}

impl Channel for Http {
    fn len(&self) -> usize {
        self.generators.len()
    }
    fn name(&self, g: usize) -> &str {
        &self.generators[g].shown
    }
    fn step(&self, g: usize, plan: &StepPlan, wait: Duration) -> Result<StepAnswer, Failure> {
        let gen = &self.generators[g];
        let body = serde_json::to_vec(plan).map_err(|e| Failure::Refused(e.to_string()))?;
        let (status, answer) =
            exchange(gen, "POST", "/step", &body, wait).map_err(Failure::Lost)?;
        match status {
            200 => serde_json::from_slice(&answer)
                .map_err(|e| Failure::Lost(format!("an answer that is not a step's result ({e})"))),
            400..=499 => Err(Failure::Refused(format!(
                "{status} {}",
                first_line(&answer)
            ))),
            _ => Err(Failure::Lost(format!("{status} {}", first_line(&answer)))),
        }
    }
    fn stop(&self, g: usize, plan: &StepPlan) {
        let stop = StopStep {
            start_at_unix_ms: plan.start_at_unix_ms,
        };
        if let Ok(body) = serde_json::to_vec(&stop) {
            // Its answer changes nothing: the step's own exchange brings the part, or not.
            let _ = exchange(&self.generators[g], "POST", "/stop", &body, STOP_ASK);
        }
    }
}

/// How long asking an agent to stop may take.
const STOP_ASK: Duration = Duration::from_secs(2);

/// Largest answer read (a step's histograms and seconds are a few hundred KB at most).
const MAX_ANSWER: usize = 64 << 20;
/// Longest connect: an agent that does not accept within it is not there.
const CONNECT_LIMIT: Duration = Duration::from_secs(5);
/// How long the controller still waits for its agents' answers once an interruption
/// (SIGINT, SIGTERM, SIGHUP) was asked for: they were told to stop ([`Channel::stop`]) and
/// answer at their engine's next tick (1 s) with what they measured.
pub const STOP_GRACE: Duration = Duration::from_secs(5);
/// How often a blocked read or write looks at the clock and the signal flag.
const SLICE: Duration = Duration::from_millis(100);

/// When an exchange must be over: its own deadline, brought forward to [`STOP_GRACE`] after
/// an interruption. Every read and write waits one slice at most, so a peer that drips a
/// byte at a time, or nothing, cannot hold the exchange past it.
struct Deadline {
    wait: Duration,
    at: Instant,
    /// Set when the interruption was first seen.
    cut: Option<Instant>,
}

impl Deadline {
    fn new(wait: Duration) -> Deadline {
        Deadline {
            wait,
            at: Instant::now() + wait,
            cut: None,
        }
    }

    /// How long the next blocking call may wait (one slice at most), or why the time is up.
    fn next_wait(&mut self) -> Result<Duration, String> {
        let now = Instant::now();
        if self.cut.is_none() && crate::signals::interrupted() {
            self.cut = Some(now + STOP_GRACE);
        }
        let end = self.cut.map_or(self.at, |c| c.min(self.at));
        if now >= end {
            return Err(match self.cut {
                Some(c) if c < self.at => format!(
                    "no answer within {} of the interruption",
                    crate::units::fmt_duration(STOP_GRACE)
                ),
                _ => format!("no answer within {}", crate::units::fmt_duration(self.wait)),
            });
        }
        Ok((end - now).min(SLICE))
    }
}

/// A TCP stream whose reads and writes end at its [`Deadline`]: a wait that runs out is
/// retried while time is left, so TLS above it sees only progress or the final error (a
/// `TimedOut` carrying the reason).
struct Bounded {
    tcp: TcpStream,
    deadline: Deadline,
}

impl Bounded {
    fn retry<T>(
        &mut self,
        mut op: impl FnMut(&mut TcpStream) -> std::io::Result<T>,
        set: fn(&TcpStream, Option<Duration>) -> std::io::Result<()>,
    ) -> std::io::Result<T> {
        loop {
            let wait = self
                .deadline
                .next_wait()
                .map_err(|why| std::io::Error::new(std::io::ErrorKind::TimedOut, why))?;
            set(&self.tcp, Some(wait))?;
            match op(&mut self.tcp) {
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock
                            | std::io::ErrorKind::TimedOut
                            | std::io::ErrorKind::Interrupted
                    ) => {}
                r => return r,
            }
        }
    }
}

impl Read for Bounded {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.retry(|t| t.read(buf), TcpStream::set_read_timeout)
    }
}

impl Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.retry(|t| t.write(buf), TcpStream::set_write_timeout)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// One request, one answer (the agent closes after it), all within `wait` (connect, TLS,
/// request and the whole answer), cut to [`STOP_GRACE`] by an interruption: (status, body).
/// Errors in one line.
fn exchange(
    g: &Generator,
    method: &str,
    path: &str,
    body: &[u8],
    wait: Duration,
) -> Result<(u16, Vec<u8>), String> {
    let deadline = Deadline::new(wait);
    let addr = match g.addr {
        Some(a) => a,
        None => g.url.resolve()?,
    };
    let tcp = TcpStream::connect_timeout(&addr, CONNECT_LIMIT.min(wait).max(SLICE))
        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    let bounded = Bounded { tcp, deadline };
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        g.url.authority,
        g.token,
        body.len()
    )
    .into_bytes();
    head.extend_from_slice(body);
    match &g.tls {
        None => round_trip(bounded, &head),
        Some(cfg) => {
            let name = rustls::pki_types::ServerName::try_from(g.url.host.clone())
                .map_err(|_| format!("'{}' is not a TLS server name", g.url.host))?;
            let conn = rustls::ClientConnection::new(Arc::clone(cfg), name)
                .map_err(|e| format!("TLS: {e}"))?;
            round_trip(rustls::StreamOwned::new(conn, bounded), &head)
        }
    }
}

/// Writes `request`, reads the answer until it is complete (its Content-Length) or the
/// agent closes, at most [`MAX_ANSWER`] bytes.
fn round_trip(mut s: impl Read + Write, request: &[u8]) -> Result<(u16, Vec<u8>), String> {
    let io = |e: std::io::Error| match e.kind() {
        // The deadline's own reason.
        std::io::ErrorKind::TimedOut => e.to_string(),
        _ => format!("connection broken: {e}"),
    };
    s.write_all(request).and_then(|_| s.flush()).map_err(io)?;
    let mut raw = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match s.read(&mut chunk) {
            Ok(n) => n,
            // A TLS peer that closes without close_notify: judged on what arrived.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !raw.is_empty() => 0,
            Err(e) => return Err(io(e)),
        };
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&chunk[..n]);
        if raw.len() > MAX_ANSWER {
            return Err(format!("an answer larger than {} MB", MAX_ANSWER >> 20));
        }
        if let Ok(Some(r)) = crate::http_get::parse_response(&raw) {
            return Ok((r.status, r.body));
        }
    }
    match crate::http_get::parse_response(&raw) {
        Ok(Some(r)) => Ok((r.status, r.body)),
        _ if raw.is_empty() => Err("the connection closed without an answer".into()),
        Ok(None) => Err("the connection closed in the middle of the answer".into()),
        Err(_) => Err("an answer that is not HTTP".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> Generator {
        let dir = tempfile::tempdir().unwrap();
        let tok = dir.path().join("tok");
        std::fs::write(&tok, "0123456789abcdef0123").unwrap();
        std::fs::set_permissions(&tok, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap();
        parse_line(&format!("{text} token-file=tok"), dir.path()).unwrap()
    }

    #[test]
    fn a_line_with_addresses_n_is_one_generator_per_address() {
        // An IP resolves to itself: one address.
        let g = expand(
            vec![line("http://127.0.0.1:9091 addresses=1")],
            Duration::ZERO,
        )
        .unwrap();
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].addr, Some("127.0.0.1:9091".parse().unwrap()));
        assert_eq!(g[0].shown, "http://127.0.0.1:9091 (127.0.0.1:9091)");
        assert_eq!(g[0].addresses, None);
        // Asked for more than the name gives: one line saying what it found.
        let e = expand(
            vec![line("http://127.0.0.1:9091 addresses=3")],
            Duration::ZERO,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("addresses=3") && e.contains("resolves to 1 address(es) [127.0.0.1]"),
            "{e}"
        );
        // Lines without it pass as they are, in order.
        let g = expand(
            vec![
                line("http://10.0.0.1:1"),
                line("http://127.0.0.1:2 addresses=1"),
            ],
            Duration::ZERO,
        )
        .unwrap();
        assert_eq!(g[0].addr, None);
        assert_eq!(g[1].addr.unwrap().port(), 2);
    }

    /// An agent's answer as a stream: `head`, then `body_len` bytes of JSON-ish filler (or
    /// endless ones), then the close.
    struct Answer {
        head: Vec<u8>,
        left: Option<usize>,
        pos: usize,
    }

    impl Read for Answer {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.pos < self.head.len() {
                let n = buf.len().min(self.head.len() - self.pos);
                buf[..n].copy_from_slice(&self.head[self.pos..self.pos + n]);
                self.pos += n;
                return Ok(n);
            }
            let n = self.left.map_or(buf.len(), |l| l.min(buf.len()));
            buf[..n].fill(b' ');
            if let Some(l) = &mut self.left {
                *l -= n;
            }
            Ok(n)
        }
    }

    impl Write for Answer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn answer(head: &str, body: Option<usize>) -> Answer {
        Answer {
            head: head.as_bytes().to_vec(),
            left: body,
            pos: 0,
        }
    }

    #[test]
    fn an_answer_is_read_to_its_length_and_no_further_than_the_cap() {
        // Complete at its Content-Length, though the agent keeps the connection open.
        let (status, body) = round_trip(
            answer("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", None),
            b"",
        )
        .unwrap();
        assert_eq!((status, body.len()), (200, 5));
        // An endless answer stops at the cap, in one line.
        let e = round_trip(
            answer(
                "HTTP/1.1 200 OK\r\nContent-Length: 999999999999\r\n\r\n",
                None,
            ),
            b"",
        )
        .unwrap_err();
        assert_eq!(e, "an answer larger than 64 MB");
        // Cut short by the close.
        let e = round_trip(
            answer("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", Some(3)),
            b"",
        )
        .unwrap_err();
        assert!(e.contains("in the middle of the answer"), "{e}");
        let e = round_trip(answer("", Some(0)), b"").unwrap_err();
        assert!(e.contains("without an answer"), "{e}");
    }

    #[test]
    fn a_deadline_runs_out_and_says_so() {
        let started = Instant::now();
        let mut d = Deadline::new(Duration::from_millis(300));
        // Wait as a blocked read would: a slice at a time, until the time is up.
        let e = loop {
            match d.next_wait() {
                Ok(w) => {
                    assert!(w <= SLICE);
                    std::thread::sleep(w);
                }
                Err(e) => break e,
            }
        };
        assert_eq!(e, "no answer within 300ms");
        assert!(started.elapsed() >= Duration::from_millis(300));
    }

    #[test]
    fn generator_lines() {
        let dir = tempfile::tempdir().unwrap();
        let tok = dir.path().join("tok");
        std::fs::write(&tok, "0123456789abcdef0123").unwrap();
        std::fs::set_permissions(&tok, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .unwrap();
        let fp = format!("sha256:{}", ["AB"; 32].join(":"));
        let list = dir.path().join("gens");
        std::fs::write(
            &list,
            format!("# two agents\nhttp://10.0.0.1:9090 token-file=tok\n\nhttps://gen2:9443 token-file={} fingerprint={fp}  # pinned\n", tok.display()),
        )
        .unwrap();
        let g = read_generators(&list).unwrap();
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].shown, "http://10.0.0.1:9090");
        assert_eq!(g[0].token, "0123456789abcdef0123");
        assert!(g[0].tls.is_none() && g[1].tls.is_some());
        for (line, needle) in [
            ("http://a:1", "no token-file"),
            ("https://a:1 token-file=tok", "https needs fingerprint"),
            (
                "http://a:1 token-file=tok fingerprint=sha256:AB",
                "fingerprint 'sha256:AB'",
            ),
            ("http://a:1 token-file=tok colour=blue", "unknown field"),
            ("ftp://a:1 token-file=tok", "URL"),
            ("http://a:1 token-file=missing", "cannot read"),
        ] {
            std::fs::write(&list, format!("\n{line}\n")).unwrap();
            let e = read_generators(&list).unwrap_err().to_string();
            assert!(e.contains(":2: ") && e.contains(needle), "{line}: {e}");
        }
        std::fs::write(&list, "http://a:1 token-file=tok addresses=0\n").unwrap();
        let e = read_generators(&list).unwrap_err().to_string();
        assert!(e.contains(":1: addresses=0: use a count"), "{e}");
        std::fs::write(&list, "# nothing\n").unwrap();
        assert!(read_generators(&list)
            .unwrap_err()
            .to_string()
            .contains("no generator"));
    }
}
