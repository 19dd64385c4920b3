//! The engine's TLS transport (`overload::engine::tls::Tls`, the `Transport` of https://) after a
//! real handshake with a rustls server on loopback, both ends driven from this thread over
//! non-blocking sockets. Input: byte 0 = mode and the client's read size, byte 1 = the
//! server's record size, the rest = the payload.
//! - even mode: the payload is plaintext the server sends in records of that size, then
//!   close_notify. Oracle: the client reads exactly the payload, then end of stream.
//! - odd mode: the payload goes raw on the socket (not encrypted), then the server shuts its
//!   side. Oracle: no panic, no hang; the client yields no plaintext and ends in EOF or an
//!   error that is not WouldBlock.
#![no_main]
use libfuzzer_sys::fuzz_target;
use overload::engine::tls::{Tls, TlsClient, TlsClientOptions};
use overload::engine::transport::Transport;
use overload::target::TargetTls;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, OnceLock};

/// Made once per process: certificates cost more than the iterations.
struct Fixture {
    server: Arc<rustls::ServerConfig>,
    ca_pem: Vec<u8>,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let id = TargetTls::generate(None).unwrap();
        let chain = CertificateDer::pem_slice_iter(id.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_slice(id.key_pem.as_bytes()).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
            .with_protocol_versions(rustls::DEFAULT_VERSIONS)
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        Fixture {
            server: Arc::new(cfg),
            ca_pem: id.ca_pem.unwrap().into_bytes(),
        }
    })
}

/// Moves what the server has to say onto the socket and what came from the client into it.
fn pump(s: &mut rustls::ServerConnection, sock: &mut TcpStream) {
    loop {
        match s.read_tls(sock) {
            Ok(0) => break,
            Ok(_) => {
                if s.process_new_packets().is_err() {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    while s.wants_write() {
        if s.write_tls(sock).is_err() {
            break;
        }
    }
}

/// Bounds every loop: loopback delivers at once, so this many turns means a hang.
const TURNS: usize = 200_000;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let raw = data[0] & 1 == 1;
    let read_size = usize::from(data[0] >> 1) + 1;
    let record_size = usize::from(data[1]) + 1;
    let payload = &data[2..];
    let f = fixture();

    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let opts = TlsClientOptions {
        ca_pem: Some(f.ca_pem.clone()),
        resumption: false,
        alpn: vec![b"http/1.1".to_vec()],
        ..TlsClientOptions::default()
    };
    let setup = TlsClient::new(&opts, &[(addr, "127.0.0.1".to_string())])
        .unwrap()
        .for_thread();
    // Over the epoll backend's socket: the one the engine's readiness loop drives.
    let mut client: Tls<mio::net::TcpStream> = Tls::connect(&setup, addr, None).unwrap();
    let (mut sock, _) = listener.accept().unwrap();
    sock.set_nonblocking(true).unwrap();
    let mut server = rustls::ServerConnection::new(Arc::clone(&f.server)).unwrap();

    let mut done = false;
    for _ in 0..TURNS {
        match client.establish() {
            Ok(true) => {
                done = true;
                break;
            }
            Ok(false) => {}
            Err(e) => panic!("a valid handshake failed: {e:?}"),
        }
        pump(&mut server, &mut sock);
    }
    assert!(done, "the handshake never finished");
    // The client's Finished, so the server is past its handshake too.
    for _ in 0..TURNS {
        pump(&mut server, &mut sock);
        if !server.is_handshaking() {
            break;
        }
    }

    if raw {
        sock.set_nonblocking(false).unwrap();
        let _ = sock.write_all(payload);
        let _ = sock.shutdown(std::net::Shutdown::Write);
    } else {
        for chunk in payload.chunks(record_size) {
            server.writer().write_all(chunk).unwrap();
        }
        server.send_close_notify();
        pump(&mut server, &mut sock);
    }

    let mut got = Vec::new();
    let mut buf = vec![0u8; read_size];
    let mut ended = None;
    for _ in 0..TURNS {
        match client.read(&mut buf) {
            Ok(0) => {
                ended = Some(Ok(()));
                break;
            }
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if !raw {
                    pump(&mut server, &mut sock);
                }
            }
            Err(e) => {
                ended = Some(Err(e));
                break;
            }
        }
    }
    let ended = ended.expect("the client neither ended nor failed");
    if raw {
        // Bytes that are not records of this session never decrypt into plaintext.
        assert!(
            got.is_empty(),
            "{} bytes of plaintext from raw input",
            got.len()
        );
    } else {
        assert!(ended.is_ok(), "close_notify after the data: {ended:?}");
        assert_eq!(
            got, payload,
            "read size {read_size}, records of {record_size}"
        );
    }
});
