//! The TLS transport against real peers on loopback: a rustls server (handshake, bytes both
//! ways, resumption, ALPN, certificate reasons), and a scripted peer that answers the
//! ClientHello, or a finished handshake, with arbitrary bytes (never a panic, always an error).
use super::*;
use proptest::prelude::*;
use std::net::TcpListener;
use std::time::Duration;

/// A CA, and a server certificate it signs for `names`; (CA PEM, server config).
fn identity(names: &[&str], expired: bool) -> (Vec<u8>, Arc<rustls::ServerConfig>) {
    identity_with(names, expired, rustls::crypto::ring::default_provider())
}

/// [`identity`], with the server's cipher suites those of `provider`.
fn identity_with(
    names: &[&str],
    expired: bool,
    provider: rustls::crypto::CryptoProvider,
) -> (Vec<u8>, Arc<rustls::ServerConfig>) {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::default();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let mut leaf =
        CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    if expired {
        leaf.not_before = rcgen::date_time_ymd(2000, 1, 1);
        leaf.not_after = rcgen::date_time_ymd(2001, 1, 1);
    }
    let key = KeyPair::generate().unwrap();
    let cert = leaf
        .signed_by(&key, &Issuer::from_params(&ca, &ca_key))
        .unwrap();
    let mut cfg = rustls::ServerConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(rustls::DEFAULT_VERSIONS)
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes()).unwrap(),
        )
        .unwrap();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    (ca_cert.pem().into_bytes(), Arc::new(cfg))
}

fn client(ca: Option<Vec<u8>>, addr: SocketAddr, host: &str) -> TlsSetup {
    let opts = TlsClientOptions {
        ca_pem: ca,
        insecure: false,
        resumption: true,
        alpn: vec![b"http/1.1".to_vec()],
        ..TlsClientOptions::default()
    };
    TlsClient::new(&opts, &[(addr, host.to_string())])
        .unwrap()
        .for_thread()
}

/// Polls `establish` until it decides, for at most 5 s.
fn established(t: &mut Tls) -> Result<bool, ErrorKind> {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        match t.establish() {
            Ok(false) if Instant::now() < end => std::thread::sleep(Duration::from_millis(1)),
            r => return r,
        }
    }
}

/// Reads until `want` bytes came, EOF, or an error (5 s at most).
fn read_all(t: &mut Tls, want: usize) -> io::Result<Vec<u8>> {
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    let end = Instant::now() + Duration::from_secs(5);
    while got.len() < want && Instant::now() < end {
        match t.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == IoKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(1))
            }
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// A rustls server thread: per connection, echo what it reads (upper-cased) until EOF.
fn serve(cfg: Arc<rustls::ServerConfig>, conns: usize) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for _ in 0..conns {
            let Ok((sock, _)) = listener.accept() else {
                return;
            };
            let conn = rustls::ServerConnection::new(Arc::clone(&cfg)).unwrap();
            let mut s = rustls::StreamOwned::new(conn, sock);
            let mut buf = [0u8; 4096];
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let up: Vec<u8> = buf[..n].iter().map(u8::to_ascii_uppercase).collect();
                if s.write_all(&up).and_then(|_| s.flush()).is_err() {
                    break;
                }
            }
        }
    });
    addr
}

#[test]
fn handshakes_moves_bytes_and_resumes_on_the_threads_second_connection() {
    let (ca, cfg) = identity(&["localhost", "127.0.0.1"], false);
    let addr = serve(cfg, 2);
    let setup = client(Some(ca), addr, "127.0.0.1");
    for round in 0..2 {
        let mut t = Tls::connect(&setup, addr, None).unwrap();
        assert_eq!(established(&mut t), Ok(true));
        let h = t.handshake().unwrap();
        assert!(h.tcp_connected.is_some());
        assert_eq!(h.resumed, round == 1, "round {round}");
        assert_eq!(t.alpn(), Some(&b"http/1.1"[..]));
        // 100 kB out: more than one TLS record and more than rustls buffers at once.
        let msg = vec![b'a'; 100_000];
        let mut sent = 0;
        let end = Instant::now() + Duration::from_secs(5);
        while sent < msg.len() && Instant::now() < end {
            match t.write(&msg[sent..]) {
                Ok(n) => sent += n,
                Err(e) if e.kind() == IoKind::WouldBlock => {
                    let _ = t.flush();
                    let _ = read_all(&mut t, 0);
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => panic!("{e}"),
            }
        }
        while t.wants_write() {
            let _ = t.flush();
        }
        let got = read_all(&mut t, msg.len()).unwrap();
        assert_eq!(got.len(), msg.len());
        assert!(got.iter().all(|&b| b == b'A'));
    }
}

/// A response that arrives in one segment is read with one recv: the recv came back short,
/// so the socket is drained and no second recv goes to fetch EAGAIN. The next call still
/// reads the socket (it may have been woken by new bytes).
#[test]
fn a_short_recv_ends_the_read_without_another_recv() {
    let (ca, cfg) = identity(&["127.0.0.1"], false);
    let addr = serve(cfg, 1);
    let setup = client(Some(ca), addr, "127.0.0.1");
    let mut t = Tls::connect(&setup, addr, None).unwrap();
    assert_eq!(established(&mut t), Ok(true));
    for msg in [&b"ping"[..], b"a second request"] {
        let mut sent = 0;
        while sent < msg.len() {
            sent += t.write(&msg[sent..]).unwrap();
        }
        while t.wants_write() {
            let _ = t.flush();
        }
        let mut buf = [0u8; 1024];
        let end = Instant::now() + Duration::from_secs(5);
        let (n, recvs) = loop {
            let before = t.recvs;
            match t.read(&mut buf) {
                Ok(n) => break (n, t.recvs - before),
                Err(e) if e.kind() == IoKind::WouldBlock && Instant::now() < end => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                Err(e) => panic!("{e}"),
            }
        };
        assert_eq!(&buf[..n], msg.to_ascii_uppercase().as_slice());
        assert_eq!(
            recvs,
            1,
            "recv calls for {:?}",
            String::from_utf8_lossy(msg)
        );
        let before = t.recvs;
        assert_eq!(
            t.read(&mut buf).map_err(|e| e.kind()),
            Err(IoKind::WouldBlock)
        );
        assert_eq!(t.recvs - before, 1, "a new call reads the socket again");
    }
}

/// The client offers AES-128-GCM first, so a server that follows the client's order (nginx
/// and rustls by default) picks it; a server without it still gets its own choice.
#[test]
fn aes_128_gcm_is_offered_first_and_the_server_keeps_its_choice() {
    use rustls::CipherSuite as S;
    let (ca, cfg) = identity(&["127.0.0.1"], false);
    let addr = serve(cfg, 1);
    let setup = client(Some(ca), addr, "127.0.0.1");
    let offered: Vec<S> = setup
        .config
        .crypto_provider()
        .cipher_suites
        .iter()
        .map(|s| s.suite())
        .collect();
    assert_eq!(offered[0], S::TLS13_AES_128_GCM_SHA256, "{offered:?}");
    assert!(offered.contains(&S::TLS13_AES_256_GCM_SHA384));
    assert!(offered.contains(&S::TLS13_CHACHA20_POLY1305_SHA256));
    let mut t = Tls::connect(&setup, addr, None).unwrap();
    assert_eq!(established(&mut t), Ok(true));
    let got = t.conn.negotiated_cipher_suite().map(|s| s.suite());
    assert_eq!(got, Some(S::TLS13_AES_128_GCM_SHA256));

    let mut only_256 = rustls::crypto::ring::default_provider();
    only_256
        .cipher_suites
        .retain(|s| s.suite() == S::TLS13_AES_256_GCM_SHA384);
    let (ca, cfg) = identity_with(&["127.0.0.1"], false, only_256);
    let addr = serve(cfg, 1);
    let setup = client(Some(ca), addr, "127.0.0.1");
    let mut t = Tls::connect(&setup, addr, None).unwrap();
    assert_eq!(established(&mut t), Ok(true));
    let got = t.conn.negotiated_cipher_suite().map(|s| s.suite());
    assert_eq!(got, Some(S::TLS13_AES_256_GCM_SHA384));
}

#[test]
fn refused_certificates_say_why() {
    for (names, expired, ca, want) in [
        (&["127.0.0.1"][..], false, false, TlsReason::UnknownIssuer),
        (&["127.0.0.1"][..], true, true, TlsReason::Expired),
        (&["other.example"][..], false, true, TlsReason::NameMismatch),
    ] {
        let (ca_pem, cfg) = identity(names, expired);
        let addr = serve(cfg, 1);
        // Without --cacert the system's roots cannot know this CA.
        let setup = client(ca.then_some(ca_pem), addr, "127.0.0.1");
        let mut t = Tls::connect(&setup, addr, None).unwrap();
        assert_eq!(
            established(&mut t),
            Err(ErrorKind::TlsCertificate),
            "{want:?}"
        );
        assert_eq!(t.handshake().unwrap().failure, Some(want));
    }
}

#[test]
fn bad_client_options_are_refused_with_the_flag_named() {
    let addr: SocketAddr = "127.0.0.1:9".parse().unwrap();
    let with = |o: TlsClientOptions| TlsClient::new(&o, &[(addr, "127.0.0.1".into())]).unwrap_err();
    let junk = Some(b"junk".to_vec());
    assert!(with(TlsClientOptions {
        ca_pem: junk.clone(),
        ..Default::default()
    })
    .contains("--cacert"));
    assert!(with(TlsClientOptions {
        client_cert_pem: junk.clone(),
        ..Default::default()
    })
    .contains("--client-key"));
    let (ca, _) = identity(&["x"], false);
    assert!(with(TlsClientOptions {
        client_cert_pem: Some(ca),
        client_key_pem: junk,
        ..Default::default()
    })
    .contains("--client-key"));
    let e =
        TlsClient::new(&TlsClientOptions::default(), &[(addr, "bad name!".into())]).unwrap_err();
    assert!(e.contains("bad name!"), "{e}");
}

/// What the scripted peer does: answer the ClientHello with `bytes`, or finish a real
/// handshake and then send `bytes` raw on the socket (as if they were records).
fn scripted_peer(bytes: Vec<u8>, after_handshake: bool) -> (SocketAddr, Vec<u8>) {
    let (ca, cfg) = identity(&["127.0.0.1"], false);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let Ok((mut sock, _)) = listener.accept() else {
            return;
        };
        let _ = sock.set_read_timeout(Some(Duration::from_secs(5)));
        if after_handshake {
            let mut conn = rustls::ServerConnection::new(cfg).unwrap();
            while conn.is_handshaking() {
                if conn.complete_io(&mut sock).is_err() {
                    return;
                }
            }
            // The session tickets, without waiting for anything from the client.
            while conn.wants_write() {
                if conn.write_tls(&mut sock).is_err() {
                    return;
                }
            }
        } else {
            let mut hello = [0u8; 4096];
            let _ = sock.read(&mut hello);
        }
        let _ = sock.write_all(&bytes);
        // Closing ends the exchange: the client must then fail, not wait.
        let _ = sock.shutdown(std::net::Shutdown::Both);
    });
    (addr, ca)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever the peer sends, the transport ends in an error (or EOF), never a panic or a
    /// hang, and a failed handshake always carries its reason.
    #[test]
    fn arbitrary_peer_bytes_end_in_an_error(
        bytes in proptest::collection::vec(any::<u8>(), 0..600),
        record_head in any::<bool>(),
        after_handshake in any::<bool>(),
    ) {
        let mut bytes = bytes;
        if record_head {
            // A plausible record header first, so the bytes reach the handshake parser.
            let len = (bytes.len() as u16).to_be_bytes();
            let kind = if after_handshake { 23 } else { 22 };
            bytes.splice(0..0, [kind, 3, 3, len[0], len[1]]);
        }
        let (addr, ca) = scripted_peer(bytes, after_handshake);
        let setup = client(Some(ca), addr, "127.0.0.1");
        let mut t = Tls::connect(&setup, addr, None).unwrap();
        match established(&mut t) {
            Ok(true) => {
                prop_assert!(after_handshake);
                match read_all(&mut t, usize::MAX) {
                    // Undecryptable records are an error; an empty script is a plain EOF.
                    Ok(got) => prop_assert!(got.is_empty()),
                    Err(e) => prop_assert!(e.kind() != IoKind::WouldBlock),
                }
            }
            Ok(false) => prop_assert!(false, "the handshake neither finished nor failed"),
            Err(kind) => {
                prop_assert!(!after_handshake || kind != ErrorKind::TlsCertificate);
                let hs = t.handshake().unwrap();
                if matches!(kind, ErrorKind::TlsHandshake | ErrorKind::TlsCertificate) {
                    prop_assert!(hs.failure.is_some());
                }
            }
        }
    }
}

#[test]
fn subject_common_names_are_read_from_the_der() {
    use rcgen::{CertificateParams, DnType, KeyPair};
    let key = KeyPair::generate().unwrap();
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::OrganizationName, "Org");
    p.distinguished_name.push(DnType::CommonName, "LocalHost");
    let der = p.self_signed(&key).unwrap().der().to_vec();
    assert_eq!(subject_common_names(&der), ["LocalHost"]);
    let name = ServerName::try_from("localhost").unwrap();
    assert!(cn_matches(&der, &name));
    let ip = ServerName::try_from("127.0.0.1").unwrap();
    assert!(!cn_matches(&der, &ip));
    // Truncated or junk DER: no names, no panic.
    for n in 0..der.len() {
        let _ = subject_common_names(&der[..n]);
    }
    assert!(subject_common_names(b"\x30\x84\xff\xff\xff\xff").is_empty());
}
