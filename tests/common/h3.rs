//! HTTP/3 for the tests: `overload target --tls --http3` in its own process, and a small
//! HTTP/3 client (quinn and h3, the crates the target serves with) on its own runtime, to
//! check the target without the engine's client, and the engine's client against it.
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Buf;

use super::{scratch, Target};

/// `overload target --tls --http3 ARGS` on a free loopback port, its CA written to a scratch
/// folder (`ca`, for `--cacert`); killed on drop.
pub struct H3Target {
    pub target: Target,
    /// `https://127.0.0.1:PORT` (the same port number serves TCP and UDP).
    pub url: String,
    pub addr: SocketAddr,
    pub ca: PathBuf,
    _dir: tempfile::TempDir,
}

impl H3Target {
    pub fn start(args: &[&str]) -> H3Target {
        let dir = scratch();
        let ca = dir.path().join("ca.pem");
        let mut all = vec!["--tls", "--http3", "--ca-out", ca.to_str().unwrap()];
        all.extend_from_slice(args);
        let target = Target::start(&all);
        let url = target.url.clone();
        let addr = url
            .trim_start_matches("https://")
            .parse()
            .unwrap_or_else(|_| panic!("no address in {url}"));
        H3Target {
            target,
            url,
            addr,
            ca,
            _dir: dir,
        }
    }

    pub fn pid(&self) -> u32 {
        self.target.child.id()
    }

    /// `/stats` over HTTPS/1.1 (TCP), with the answer's head: the TCP side's view.
    pub fn stats(&self) -> serde_json::Value {
        let (head, body) = self.tcp_get("/stats");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
    }

    /// One GET over TLS and TCP (HTTP/1.1), head and body apart.
    pub fn tcp_get(&self, path: &str) -> (String, String) {
        use rustls::pki_types::pem::PemObject;
        let mut roots = rustls::RootCertStore::empty();
        for c in rustls::pki_types::CertificateDer::pem_file_iter(&self.ca).unwrap() {
            roots.add(c.unwrap()).unwrap();
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let cfg = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = "localhost".try_into().unwrap();
        let mut tls = rustls::ClientConnection::new(Arc::new(cfg), name).unwrap();
        let mut tcp = std::net::TcpStream::connect(self.addr).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut s = rustls::Stream::new(&mut tls, &mut tcp);
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut all = Vec::new();
        let _ = s.read_to_end(&mut all);
        let all = String::from_utf8_lossy(&all).to_string();
        let (head, body) = all.split_once("\r\n\r\n").expect("a whole answer");
        (head.to_string(), body.to_string())
    }

    /// A client that trusts this target's CA.
    pub fn client(&self) -> H3Client {
        H3Client::new(
            self.addr,
            &std::fs::read(&self.ca).expect("the target's CA"),
        )
    }
}

/// What a request ended in: its status and body size, or the kind of failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Answer { status: u16, bytes: u64 },
    Failed(String),
}

/// A blocking HTTP/3 client: one QUIC connection at a time, made again when it ends.
pub struct H3Client {
    rt: tokio::runtime::Runtime,
    endpoint: quinn::Endpoint,
    config: quinn::ClientConfig,
    addr: SocketAddr,
    timeout: Duration,
}

/// Time one request (and its connection, when it needs one) may take, unless `with_timeout`.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

impl H3Client {
    pub fn new(addr: SocketAddr, ca_pem: &[u8]) -> H3Client {
        use rustls::pki_types::pem::PemObject;
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls::pki_types::CertificateDer::pem_slice_iter(ca_pem) {
            roots.add(cert.expect("a PEM CA")).expect("a usable CA");
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(&[&rustls::version::TLS13])
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        tls.alpn_protocols = vec![b"h3".to_vec()];
        let quic = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
        let config = quinn::ClientConfig::new(Arc::new(quic));
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let endpoint = {
            let _g = rt.enter();
            quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap()
        };
        H3Client {
            rt,
            endpoint,
            config,
            addr,
            timeout: REQUEST_TIMEOUT,
        }
    }

    pub fn with_timeout(mut self, timeout: Duration) -> H3Client {
        self.timeout = timeout;
        self
    }

    /// GET `path` on a fresh connection.
    pub fn get(&self, path: &str) -> Outcome {
        self.load(&[path], 1, 1).1.pop().expect("one outcome")
    }

    /// `n` GETs of `paths` (in turn), `concurrency` at once on one connection, which is
    /// made again whenever it ends; returns the time taken and every request's outcome.
    pub fn load(&self, paths: &[&str], n: usize, concurrency: usize) -> (Duration, Vec<Outcome>) {
        let start = Instant::now();
        let outcomes = self.rt.block_on(async {
            let mut out = Vec::with_capacity(n);
            let mut conn: Option<Session> = None;
            let mut i = 0;
            while i < n {
                let live = match conn.take() {
                    Some(s) if s.quic.close_reason().is_none() => s,
                    _ => match self.connect().await {
                        Ok(s) => s,
                        Err(e) => {
                            out.push(Outcome::Failed(e));
                            i += 1;
                            continue;
                        }
                    },
                };
                let batch = concurrency.min(n - i);
                let mut tasks = Vec::with_capacity(batch);
                for k in 0..batch {
                    let path = paths[(i + k) % paths.len()].to_string();
                    let send = live.send.clone();
                    let authority = self.addr.to_string();
                    let timeout = self.timeout;
                    tasks.push(tokio::spawn(async move {
                        tokio::time::timeout(timeout, request(send, authority, path))
                            .await
                            .unwrap_or_else(|_| Outcome::Failed("timeout".into()))
                    }));
                }
                let mut failed = false;
                for t in tasks {
                    let o = t.await.unwrap_or_else(|e| Outcome::Failed(e.to_string()));
                    failed |= matches!(o, Outcome::Failed(_));
                    out.push(o);
                }
                i += batch;
                // After a failure (a GOAWAY among them), the next batch opens a new connection.
                if !failed {
                    conn = Some(live);
                }
            }
            out
        });
        (start.elapsed(), outcomes)
    }

    async fn connect(&self) -> Result<Session, String> {
        let connecting = self
            .endpoint
            .connect_with(self.config.clone(), self.addr, "localhost")
            .map_err(|e| format!("connect: {e}"))?;
        let quic = tokio::time::timeout(self.timeout.max(REQUEST_TIMEOUT), connecting)
            .await
            .map_err(|_| "handshake timeout".to_string())?
            .map_err(|e| format!("handshake: {e}"))?;
        let (mut driver, send) = h3::client::new(h3_quinn::Connection::new(quic.clone()))
            .await
            .map_err(|e| format!("h3: {e}"))?;
        tokio::spawn(async move {
            let _ = std::future::poll_fn(|cx| driver.poll_close(cx)).await;
        });
        Ok(Session { quic, send })
    }
}

struct Session {
    quic: quinn::Connection,
    send: h3::client::SendRequest<h3_quinn::OpenStreams, bytes::Bytes>,
}

async fn request(
    mut send: h3::client::SendRequest<h3_quinn::OpenStreams, bytes::Bytes>,
    authority: String,
    path: String,
) -> Outcome {
    let req = http::Request::get(format!("https://{authority}{path}"))
        .body(())
        .unwrap();
    let failed = |e: &dyn std::fmt::Display| Outcome::Failed(kind_of(&e.to_string()));
    let mut stream = match send.send_request(req).await {
        Ok(s) => s,
        Err(e) => return failed(&e),
    };
    if let Err(e) = stream.finish().await {
        return failed(&e);
    }
    let resp = match stream.recv_response().await {
        Ok(r) => r,
        Err(e) => return failed(&e),
    };
    let mut bytes = 0u64;
    loop {
        match stream.recv_data().await {
            Ok(Some(mut chunk)) => {
                bytes += chunk.remaining() as u64;
                chunk.advance(chunk.remaining());
            }
            Ok(None) => break,
            Err(e) => return failed(&e),
        }
    }
    Outcome::Answer {
        status: resp.status().as_u16(),
        bytes,
    }
}

/// The failure's kind, from h3's and quinn's messages: what the tests assert on.
fn kind_of(msg: &str) -> String {
    let m = msg.to_ascii_lowercase();
    for (needle, kind) in [
        ("reset by peer", "stateless-reset"),
        ("stateless reset", "stateless-reset"),
        ("h3_internal_error", "internal-error"),
        ("internalerror", "internal-error"),
        ("0x102", "internal-error"),
        ("timed out", "timeout"),
        ("goaway", "goaway"),
        ("remote is closing", "goaway"),
        ("closed", "closed"),
    ] {
        if m.contains(needle) {
            return kind.to_string();
        }
    }
    msg.to_string()
}

/// Outcomes counted: `200`, `503`, … for answers, the failure's kind otherwise.
pub fn tally(outcomes: &[Outcome]) -> BTreeMap<String, usize> {
    let mut t = BTreeMap::new();
    for o in outcomes {
        let k = match o {
            Outcome::Answer { status, .. } => status.to_string(),
            Outcome::Failed(kind) => kind.clone(),
        };
        *t.entry(k).or_insert(0) += 1;
    }
    t
}

/// The resident memory of process `pid`, in KiB (VmRSS).
pub fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("/proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmRSS")
}
