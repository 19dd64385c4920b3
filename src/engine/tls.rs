//! TLS over the engine's own event loop: a rustls `ClientConnection` (sans-I/O) over a mio
//! `TcpStream`, implementing [`Transport`]. The handshake runs in `establish`; reads decrypt
//! into the thread's shared buffer; TLS records produced while reading (alerts, key updates)
//! go out from `read` or wait for `flush`.
//!
//! The client configuration is built once per run ([`TlsClient`]) and copied per worker thread
//! ([`TlsClient::for_thread`]) so each thread has its own session cache: with resumption on,
//! a thread's first handshake to a server is full and the later ones resume.
use super::io::{Poller, Socket};
use super::transport::{Handshake, Transport};
use crate::metrics::{ErrorKind, TlsReason};
use mio::net::TcpStream;
use mio::Token;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, ClientConnection, DigitallySignedStruct};
use std::io::{self, ErrorKind as IoKind, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

/// TLS protocol versions the client may offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsVersion {
    /// TLS 1.2 only.
    V12,
    /// TLS 1.3 only.
    V13,
}

/// What the user chose about TLS, with the PEM files already read (the engine reads no file).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsClientOptions {
    /// PEM certificates to trust instead of the system's roots (`--cacert`).
    pub ca_pem: Option<Vec<u8>>,
    /// PEM chain and key for client authentication (`--client-cert`, `--client-key`).
    pub client_cert_pem: Option<Vec<u8>>,
    pub client_key_pem: Option<Vec<u8>>,
    /// Accept any certificate (`--insecure`); signatures of the handshake are still checked.
    pub insecure: bool,
    /// None: both 1.2 and 1.3.
    pub version: Option<TlsVersion>,
    /// Resume sessions (one cache per worker thread); off: every connection is a full handshake.
    pub resumption: bool,
    /// ALPN protocols offered, in order of preference (`http/1.1` today).
    pub alpn: Vec<Vec<u8>>,
    /// HTTP/3 (`--0rtt on`): send idempotent requests as early data on resumed connections.
    pub early_data: bool,
}

/// The run's TLS client: the configuration and the server name of each address.
#[derive(Debug, Clone)]
pub struct TlsClient {
    config: Arc<ClientConfig>,
    insecure: bool,
    cacert: bool,
    resumption: bool,
    early_data: bool,
    names: Vec<(SocketAddr, ServerName<'static>)>,
}

/// Sessions kept per thread: one per server is all a load run needs; a few spare for mixes.
const SESSIONS_PER_THREAD: usize = 64;

impl TlsClient {
    /// Builds the client. `servers`: each address with the host name of its URL (an IP host
    /// is verified against the certificate's IP names and sends no SNI).
    pub fn new(opts: &TlsClientOptions, servers: &[(SocketAddr, String)]) -> Result<Self, String> {
        let provider = Arc::new(prefer_aes128(rustls::crypto::ring::default_provider()));
        let versions: &[&rustls::SupportedProtocolVersion] = match opts.version {
            None => rustls::DEFAULT_VERSIONS,
            Some(TlsVersion::V12) => &[&rustls::version::TLS12],
            Some(TlsVersion::V13) => &[&rustls::version::TLS13],
        };
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(versions)
            .map_err(|e| format!("TLS: {e}"))?;
        let builder = if opts.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Verifier::new(AcceptAny, provider))
        } else {
            let pinned = match opts.ca_pem.as_deref() {
                Some(pem) => certs(pem, "--cacert")?,
                None => Vec::new(),
            };
            let webpki = rustls::client::WebPkiServerVerifier::builder_with_provider(
                Arc::new(roots(opts.ca_pem.as_deref())?),
                Arc::clone(&provider),
            )
            .build()
            .map_err(|e| format!("--cacert: {e}"))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Verifier::new(
                    Anchored { webpki, pinned },
                    provider,
                ))
        };
        let mut config = match (&opts.client_cert_pem, &opts.client_key_pem) {
            (Some(cert), Some(key)) => {
                let chain = certs(cert, "--client-cert")?;
                let key = PrivateKeyDer::from_pem_slice(key)
                    .map_err(|e| format!("--client-key: no usable private key ({e})"))?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|e| format!("--client-cert/--client-key: {e}"))?
            }
            (None, None) => builder.with_no_client_auth(),
            _ => return Err("--client-cert and --client-key go together".into()),
        };
        config.alpn_protocols = opts.alpn.clone();
        config.enable_early_data = opts.early_data;
        let names = servers
            .iter()
            .map(|(addr, host)| {
                ServerName::try_from(host.clone())
                    .map(|n| (*addr, n))
                    .map_err(|_| format!("'{host}' is not a valid TLS server name"))
            })
            .collect::<Result<_, _>>()?;
        Ok(TlsClient {
            config: Arc::new(config),
            insecure: opts.insecure,
            cacert: opts.ca_pem.is_some(),
            resumption: opts.resumption,
            early_data: opts.early_data,
            names,
        })
    }

    /// One blocking handshake before the load: the application protocol the server at `addr`
    /// picks from the ALPN offer of this client (`--http auto` over https: the engine speaks
    /// one protocol per run, the one the server negotiates; None: the server chose none),
    /// and the connection, for a question over it.
    #[allow(clippy::type_complexity)]
    fn handshake(
        &self,
        addr: SocketAddr,
        timeout: Duration,
    ) -> Result<(Option<Vec<u8>>, (ClientConnection, Deadlined)), String> {
        let name = self
            .names
            .iter()
            .find(|(a, _)| *a == addr)
            .map(|(_, n)| n.clone())
            .ok_or_else(|| format!("{addr}: no TLS server name"))?;
        let mut conn = rustls::ClientConnection::new(Arc::clone(&self.config), name)
            .map_err(|e| format!("{addr}: {e}"))?;
        // One deadline for connect and handshake together: a per-read timeout alone lets a
        // server that drips its handshake a byte at a time hold the run for as long as it likes.
        let deadline = Instant::now() + timeout;
        let sock = std::net::TcpStream::connect_timeout(&addr, timeout)
            .map_err(|e| format!("{addr}: {e}"))?;
        let mut sock = Deadlined { sock, deadline };
        while conn.is_handshaking() {
            conn.complete_io(&mut sock).map_err(|e| match e.kind() {
                IoKind::TimedOut | IoKind::WouldBlock => format!(
                    "{addr}: TLS handshake not done within {} ms",
                    timeout.as_millis()
                ),
                _ => format!("{addr}: TLS handshake: {e}"),
            })?;
        }
        Ok((conn.alpn_protocol().map(<[u8]>::to_vec), (conn, sock)))
    }

    /// The TLS handshake with the server at `addr` (within `timeout`, connect included):
    /// the protocol ALPN picked, if any (Ok(None): the server chose none).
    pub fn negotiate(
        &self,
        addr: SocketAddr,
        timeout: Duration,
    ) -> Result<Option<Vec<u8>>, String> {
        self.handshake(addr, timeout).map(|(alpn, _)| alpn)
    }

    /// `request` (HTTP/1.1, offered by ALPN alone) sent after the handshake, and the head of
    /// the answer: its bytes up to the blank line, at most `MAX_HEAD` of them, all within
    /// `timeout`. `--alt-svc` reads the server's `Alt-Svc` from it.
    pub fn ask_head(
        &self,
        addr: SocketAddr,
        timeout: Duration,
        request: &[u8],
    ) -> Result<Vec<u8>, String> {
        /// A head longer than this is not read on (the probe wants one header of it).
        const MAX_HEAD: usize = 16 * 1024;
        let (_, (conn, sock)) = self.handshake(addr, timeout)?;
        let mut tls = rustls::StreamOwned::new(conn, sock);
        let late = |e: io::Error| match e.kind() {
            IoKind::TimedOut | IoKind::WouldBlock => {
                format!("{addr}: no answer's head within {} ms", timeout.as_millis())
            }
            _ => format!("{addr}: {e}"),
        };
        tls.write_all(request).map_err(late)?;
        tls.flush().map_err(late)?;
        let mut head = Vec::new();
        let mut buf = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
            match tls.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => head.extend_from_slice(&buf[..n.min(MAX_HEAD - head.len())]),
                Err(e) if head.is_empty() => return Err(late(e)),
                Err(_) => break,
            }
        }
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            head.truncate(end + 4);
        }
        Ok(head)
    }

    /// The certificates trusted are `--cacert`'s, not the system's.
    pub fn cacert(&self) -> bool {
        self.cacert
    }

    /// Certificates are not verified (`--insecure`).
    pub fn insecure(&self) -> bool {
        self.insecure
    }

    /// The setup of one worker thread: the same configuration with a session cache of its own.
    pub fn for_thread(&self) -> TlsSetup {
        let mut config = ClientConfig::clone(&self.config);
        config.resumption = if self.resumption {
            Resumption::in_memory_sessions(SESSIONS_PER_THREAD)
        } else {
            Resumption::disabled()
        };
        TlsSetup {
            config: Arc::new(config),
            names: self.names.clone(),
        }
    }
}

impl TlsClient {
    /// HTTP/3: one worker thread's QUIC client, from the same configuration (its verifier,
    /// `--cacert`, `--insecure`, client certificate; ALPN `h3`), with a session cache of its
    /// own as for TCP. QUIC speaks TLS 1.3 only: `--tls-version 1.2` cannot carry it.
    pub fn quic_for_thread(&self) -> Result<QuicSetup, String> {
        let mut config = ClientConfig::clone(&self.config);
        config.resumption = if self.resumption {
            Resumption::in_memory_sessions(SESSIONS_PER_THREAD)
        } else {
            Resumption::disabled()
        };
        config.alpn_protocols = vec![b"h3".to_vec()];
        config.enable_early_data = self.early_data;
        let crypto = quinn_proto::crypto::rustls::QuicClientConfig::try_from(Arc::new(config))
            .map_err(|e| format!("HTTP/3 needs TLS 1.3 with AES-128-GCM: {e}"))?;
        let mut transport = quinn_proto::TransportConfig::default();
        // The server opens no request streams; its control and QPACK streams are three.
        transport
            .max_concurrent_bidi_streams(0u32.into())
            .max_concurrent_uni_streams(16u32.into())
            // Large windows, as HTTP/2's: a response never waits for a window update on a
            // fast network.
            .stream_receive_window((16u32 << 20).into())
            .receive_window((1u32 << 30).into());
        let mut client = quinn_proto::ClientConfig::new(Arc::new(crypto));
        client.transport_config(Arc::new(transport));
        Ok(QuicSetup {
            config: client,
            names: self
                .names
                .iter()
                .map(|(a, n)| (*a, n.to_str().into_owned()))
                .collect(),
        })
    }
}

/// What one worker thread needs to open QUIC connections.
#[derive(Clone)]
pub struct QuicSetup {
    pub config: quinn_proto::ClientConfig,
    /// The server name (SNI, and the name the certificate must carry) of each address.
    pub names: Vec<(SocketAddr, String)>,
}

/// A blocking socket whose every read and write ends by one deadline: each call waits at
/// most the time left, and none starts once it has passed.
struct Deadlined {
    sock: std::net::TcpStream,
    deadline: Instant,
}

impl Deadlined {
    fn left(&self) -> io::Result<Duration> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(IoKind::TimedOut.into());
        }
        Ok(left)
    }
}

impl Read for Deadlined {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.sock.set_read_timeout(Some(self.left()?))?;
        self.sock.read(buf)
    }
}

impl Write for Deadlined {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.sock.set_write_timeout(Some(self.left()?))?;
        self.sock.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.sock.flush()
    }
}

/// What [`Tls::connect`] needs: the thread's configuration and the server names.
pub struct TlsSetup {
    config: Arc<ClientConfig>,
    names: Vec<(SocketAddr, ServerName<'static>)>,
}

/// The provider with the AES-128-GCM suites offered first (TLS 1.3 and 1.2): on AES-NI
/// hardware they cost less per record than AES-256-GCM (10 rounds, not 14) and ChaCha20, and
/// ring's default order puts AES-256 first. Only the offer's order changes: every suite is
/// still offered, so a server that prefers its own order, or supports no AES-128, still
/// picks what it wants.
fn prefer_aes128(mut p: rustls::crypto::CryptoProvider) -> rustls::crypto::CryptoProvider {
    use rustls::CipherSuite as S;
    p.cipher_suites.sort_by_key(|s| {
        !matches!(
            s.suite(),
            S::TLS13_AES_128_GCM_SHA256
                | S::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
                | S::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
        )
    });
    p
}

fn certs(pem: &[u8], what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("{what}: not a PEM certificate file ({e})"))?;
    if certs.is_empty() {
        return Err(format!("{what}: no certificate in the file"));
    }
    Ok(certs)
}

/// The trust anchors: the `--cacert` file's, or the system's.
fn roots(ca_pem: Option<&[u8]>) -> Result<rustls::RootCertStore, String> {
    let mut store = rustls::RootCertStore::empty();
    match ca_pem {
        Some(pem) => {
            for c in certs(pem, "--cacert")? {
                store
                    .add(c)
                    .map_err(|e| format!("--cacert: unusable certificate ({e})"))?;
            }
        }
        None => {
            // Unreadable system certificates are skipped, as curl does; none at all is an error
            // only when a handshake needs them (it then fails as unknown-issuer, counted).
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
        }
    }
    Ok(store)
}

/// rustls' verification (webpki: the chain to a trust anchor, validity, name), with the
/// one exception curl and OpenSSL make too: a server certificate that is byte for byte one
/// of the `--cacert` certificates is trusted even when it is marked CA:TRUE, which is what
/// `openssl req -x509` makes. Its validity and name are still checked.
#[derive(Debug)]
struct Anchored {
    webpki: Arc<rustls::client::WebPkiServerVerifier>,
    /// The `--cacert` certificates (none with the system's roots).
    pinned: Vec<CertificateDer<'static>>,
}

impl CertPolicy for Anchored {
    fn check(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let e =
            match self
                .webpki
                .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
            {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
        // webpki checks the validity period before the basic constraints: a CA refusal means
        // the dates passed, and only the name is left to check.
        if !is_ca_as_end_entity(&e) || !self.pinned.iter().any(|c| c == end_entity) {
            return Err(e);
        }
        let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
        match rustls::client::verify_server_name(&parsed, server_name) {
            Ok(()) => Ok(ServerCertVerified::assertion()),
            // No subjectAltName at all (openssl's -subj /CN=NAME): the subject's common name,
            // as curl and OpenSSL fall back to it.
            Err(rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext {
                presented,
                ..
            })) if presented.is_empty() && cn_matches(end_entity, server_name) => {
                Ok(ServerCertVerified::assertion())
            }
            Err(e) => Err(e),
        }
    }
}

/// webpki refused the server's certificate for being a CA's (basicConstraints CA:TRUE);
/// rustls passes that on only as an opaque `Other` error.
fn is_ca_as_end_entity(e: &rustls::Error) -> bool {
    match e {
        rustls::Error::InvalidCertificate(CertificateError::Other(o)) => matches!(
            o.0.downcast_ref::<webpki::Error>(),
            Some(webpki::Error::CaUsedAsEndEntity)
        ),
        _ => false,
    }
}

/// Whether a DNS server name equals (ASCII case aside) one of the certificate's subject
/// common names. An IP address never matches a CN, as in curl.
fn cn_matches(der: &[u8], name: &ServerName<'_>) -> bool {
    let ServerName::DnsName(dns) = name else {
        return false;
    };
    subject_common_names(der)
        .iter()
        .any(|cn| cn.eq_ignore_ascii_case(dns.as_ref()))
}

/// One DER element at the start of `input`: (tag, contents, the rest). None when malformed.
fn der(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (first as usize, rest)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n].iter().fold(0usize, |l, b| (l << 8) | *b as usize);
        (len, &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// The subject's common names (OID 2.5.4.3) of a DER certificate: its tbsCertificate walked
/// to the subject (version, serial, signature, issuer and validity skipped).
fn subject_common_names(cert: &[u8]) -> Vec<String> {
    const SEQ: u8 = 0x30;
    const CN: &[u8] = &[0x55, 0x04, 0x03];
    let walk = || -> Option<Vec<String>> {
        let (SEQ, cert, _) = der(cert)? else {
            return None;
        };
        let (SEQ, mut tbs, _) = der(cert)? else {
            return None;
        };
        if tbs.first() == Some(&0xa0) {
            tbs = der(tbs)?.2; // [0] version
        }
        for _ in 0..4 {
            tbs = der(tbs)?.2; // serial, signature, issuer, validity
        }
        let (SEQ, mut subject, _) = der(tbs)? else {
            return None;
        };
        let mut names = Vec::new();
        while !subject.is_empty() {
            let (_, mut set, rest) = der(subject)?;
            subject = rest;
            while !set.is_empty() {
                let (_, attr, rest) = der(set)?;
                set = rest;
                let (_, oid, value) = der(attr)?;
                if oid == CN {
                    // UTF8String, PrintableString, IA5String, T61String: text in all four.
                    let (_, text, _) = der(value)?;
                    if let Ok(t) = std::str::from_utf8(text) {
                        names.push(t.to_string());
                    }
                }
            }
        }
        Some(names)
    };
    walk().unwrap_or_default()
}

/// What a server's certificate must be for the client to go on: one policy per way of
/// trusting (a CA's chain, any certificate, a pinned fingerprint in `scale::tls`). The
/// handshake's signatures are checked apart from it, the same for every policy ([`Verifier`]).
pub trait CertPolicy: std::fmt::Debug + Send + Sync {
    fn check(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error>;
}

/// The one rustls certificate verifier of the crate: the certificate is the policy's to
/// accept, and the handshake's signatures are always verified with the provider's
/// algorithms, so whatever the policy only the holder of the certificate's key gets through
/// and the cost measured is a real handshake's.
#[derive(Debug)]
pub struct Verifier<P> {
    policy: P,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl<P: CertPolicy + 'static> Verifier<P> {
    pub fn new(policy: P, provider: Arc<rustls::crypto::CryptoProvider>) -> Arc<Verifier<P>> {
        Arc::new(Verifier { policy, provider })
    }
}

impl<P: CertPolicy> ServerCertVerifier for Verifier<P> {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        // A full handshake shows its certificate, a resumed one does not: QUIC's handshake
        // tells the two apart by this (see `watch_verified`).
        VERIFIED.with(|v| v.set(true));
        self.policy
            .check(end_entity, intermediates, server_name, ocsp, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

thread_local! {
    /// Set when this thread's verifier was asked about a certificate.
    static VERIFIED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` (a QUIC connection reading handshake data) and sets `*seen` if a server
/// certificate was verified meanwhile: the handshake was a full one. quinn-proto keeps
/// rustls' connection to itself, so whether it resumed is known only this way; the check
/// runs on the worker's own thread, inside `f`.
pub fn watch_verified<R>(f: impl FnOnce() -> R, seen: &mut bool) -> R {
    VERIFIED.with(|v| v.set(false));
    let r = f();
    if VERIFIED.with(|v| v.get()) {
        *seen = true;
    }
    r
}

/// `--insecure`: any certificate is accepted, but the handshake's signatures are still
/// verified (what curl -k does), so the cost measured is a real handshake's.
#[derive(Debug)]
struct AcceptAny;

impl CertPolicy for AcceptAny {
    fn check(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
}

/// Why rustls refused a handshake, as the metrics count it.
pub fn reason(e: &rustls::Error) -> TlsReason {
    use CertificateError as C;
    match e {
        rustls::Error::InvalidCertificate(c) => match c {
            C::Expired | C::ExpiredContext { .. } => TlsReason::Expired,
            C::NotValidYet | C::NotValidYetContext { .. } => TlsReason::NotYetValid,
            C::UnknownIssuer => TlsReason::UnknownIssuer,
            C::NotValidForName | C::NotValidForNameContext { .. } => TlsReason::NameMismatch,
            C::BadSignature => TlsReason::BadSignature,
            C::Revoked => TlsReason::Revoked,
            C::Other(_) if is_ca_as_end_entity(e) => TlsReason::CaUsedAsEndEntity,
            _ => TlsReason::BadCertificate,
        },
        rustls::Error::AlertReceived(_) => TlsReason::Alert,
        _ => TlsReason::Protocol,
    }
}

/// One TLS connection, over a backend's socket (epoll's: a mio stream).
pub struct Tls<S = TcpStream> {
    tcp: S,
    /// Boxed: rustls's state is about a kilobyte, and a slot holds its transport inline, so
    /// a slot without a connection (a closed-loop user between connections) would pay it too.
    conn: Box<ClientConnection>,
    tcp_connected: Option<Instant>,
    failure: Option<TlsReason>,
    /// The server's close_notify (or the TCP end) was read: see [`Transport::read_ended`].
    ended: bool,
    /// recv calls made on the socket (tests count them: the short-read rule saves one).
    #[cfg(test)]
    recvs: usize,
}

/// The socket as rustls reads from it, noting whether the recv was short: it returned less
/// than rustls offered, so the kernel had nothing more at that moment.
struct Recv<'a, S> {
    tcp: &'a mut S,
    short: bool,
}

impl<S: Read> Read for Recv<'_, S> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.tcp.read(buf)?;
        self.short = n < buf.len();
        Ok(n)
    }
}

impl<S: Socket> Tls<S> {
    /// A handshake failure: remembered for the metrics, returned as its error kind.
    fn failed(&mut self, reason: TlsReason) -> ErrorKind {
        self.failure = Some(reason);
        reason.kind()
    }

    /// Feeds received records to rustls; a fatal error still sends its alert (best effort).
    fn process(&mut self) -> Result<(), rustls::Error> {
        if let Err(e) = self.conn.process_new_packets() {
            let _ = self.conn.write_tls(&mut self.tcp);
            return Err(e);
        }
        Ok(())
    }

    /// Writes pending TLS records until done or the socket is full.
    fn write_pending(&mut self) -> io::Result<()> {
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut self.tcp) {
                Ok(_) => {}
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Drives the handshake as far as the socket allows: Ok(true) when it is done.
    fn handshake_step(&mut self) -> Result<bool, ErrorKind> {
        loop {
            match self.write_pending() {
                Ok(()) => {}
                Err(e) if e.kind() == IoKind::WouldBlock => return Ok(false),
                Err(_) => return Err(self.failed(TlsReason::Closed)),
            }
            if !self.conn.is_handshaking() {
                return Ok(true);
            }
            match self.conn.read_tls(&mut self.tcp) {
                Ok(0) => return Err(self.failed(TlsReason::Closed)),
                Ok(_) => {
                    if let Err(e) = self.process() {
                        return Err(self.failed(reason(&e)));
                    }
                }
                Err(e) if e.kind() == IoKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(_) => return Err(self.failed(TlsReason::Closed)),
            }
        }
    }
}

impl<S: Socket> Transport for Tls<S> {
    type Setup = TlsSetup;
    type Poller = S::Poller;

    fn connect(setup: &TlsSetup, addr: SocketAddr, from: Option<IpAddr>) -> io::Result<Tls<S>> {
        let name = setup
            .names
            .iter()
            .find(|(a, _)| *a == addr)
            .map(|(_, n)| n.clone())
            .ok_or_else(|| io::Error::other("no TLS server name for this address"))?;
        let conn = ClientConnection::new(Arc::clone(&setup.config), name)
            .map_err(|e| io::Error::other(e.to_string()))?;
        Ok(Tls {
            tcp: S::connect(addr, from)?,
            conn: Box::new(conn),
            tcp_connected: None,
            failure: None,
            ended: false,
            #[cfg(test)]
            recvs: 0,
        })
    }

    fn register(
        &mut self,
        registry: &<S::Poller as Poller>::Registry,
        token: Token,
    ) -> io::Result<()> {
        self.tcp.register(registry, token)
    }

    fn deregister(&mut self, registry: &<S::Poller as Poller>::Registry) -> io::Result<()> {
        self.tcp.deregister(registry)
    }

    fn establish(&mut self) -> Result<bool, ErrorKind> {
        if self.tcp_connected.is_none() {
            if !self.tcp.established()? {
                return Ok(false);
            }
            self.tcp_connected = Some(Instant::now());
        }
        self.handshake_step()
    }

    /// Fills `buf` with plaintext until it is full or the socket has nothing more: a short
    /// read means the socket is drained (the loop is edge-triggered and relies on that), not
    /// merely that one record ended.
    ///
    /// Drained is known without a recv that fails with EAGAIN: once a recv came back short,
    /// the kernel had no more bytes, and epoll (edge-triggered, mio's only mode) reports the
    /// next ones as a new event. rustls decrypts every complete record it holds in
    /// `process_new_packets`, so what it keeps after that is a partial record whose rest is
    /// such new bytes. This halves the recv calls of a response that comes in one segment.
    /// With nothing to return yet the loop still reads on to EAGAIN (or EOF): a FIN queued
    /// behind the bytes must not wait for an event that already came.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let _ = self.write_pending(); // a record left over from an earlier read
        let mut filled = 0;
        let mut drained = false;
        loop {
            match self.conn.reader().read(&mut buf[filled..]) {
                // close_notify (buf is never full here): a server that keeps TCP open after it,
                // waiting for ours, sends nothing more to wake the loop for the EOF.
                Ok(0) => {
                    self.ended = true;
                    return Ok(filled);
                }
                Ok(n) => {
                    filled += n;
                    if filled == buf.len() {
                        return Ok(filled);
                    }
                    continue;
                }
                Err(e) if e.kind() == IoKind::WouldBlock => {}
                // The TCP end came without close_notify: for HTTP/1.1 framing it is the same
                // end of stream as on plain TCP (a truncated body still fails as `closed`).
                Err(e) if e.kind() == IoKind::UnexpectedEof => {
                    self.ended = true;
                    return Ok(filled);
                }
                Err(e) => return Err(e),
            }
            if drained && filled > 0 {
                return Ok(filled);
            }
            let mut rx = Recv {
                tcp: &mut self.tcp,
                short: false,
            };
            let r = self.conn.read_tls(&mut rx);
            drained = rx.short;
            #[cfg(test)]
            {
                self.recvs += 1;
            }
            match r {
                Ok(_) => {
                    // Ok(0) too: rustls notes the EOF, and the reader reports it next turn.
                    self.process()
                        .map_err(|e| io::Error::new(IoKind::InvalidData, e))?;
                    let _ = self.write_pending();
                }
                Err(e) if e.kind() == IoKind::Interrupted => {}
                Err(_) if filled > 0 => return Ok(filled),
                Err(e) => return Err(e),
            }
        }
    }

    /// Encrypts `buf` and writes the records; records the socket cannot take yet are kept
    /// (wants_write) and go out on the next writable event.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut pending = || match self.write_pending() {
            Err(e) if e.kind() != IoKind::WouldBlock => Err(e),
            _ => Ok(()),
        };
        pending()?; // room in rustls' buffer first
        let n = self.conn.writer().write(buf)?;
        match self.write_pending() {
            Err(e) if e.kind() != IoKind::WouldBlock => return Err(e),
            _ => {}
        }
        if n == 0 && !buf.is_empty() {
            // rustls' own buffer is full: the socket must drain first.
            return Err(IoKind::WouldBlock.into());
        }
        Ok(n)
    }

    fn wants_write(&self) -> bool {
        self.conn.wants_write()
    }

    fn flush(&mut self) -> io::Result<()> {
        self.write_pending()
    }

    fn read_ended(&self) -> bool {
        self.ended
    }

    fn alpn(&self) -> Option<&[u8]> {
        self.conn.alpn_protocol()
    }

    fn handshake(&self) -> Option<Handshake> {
        Some(Handshake {
            tcp_connected: self.tcp_connected,
            resumed: self.conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
            failure: self.failure,
        })
    }
}

#[cfg(test)]
#[path = "tls_tests.rs"]
mod tests;
