//! The network probe before a run: which protocol an https:// server picks by ALPN.
use super::config::{ConnConfig, HttpVersion};
use crate::engine::tls::TlsClient;
use crate::engine::Protocol;
use crate::metrics::ProtocolChoice;
use std::net::SocketAddr;

/// https: the TLS client, offering by ALPN the protocol the run will speak, the HTTP/2
/// settings when it is h2, and how it was chosen. `--http auto` asks the first server once
/// which it picks from both (the engine speaks one protocol per run); a server that cannot be
/// asked gets HTTP/1.1, the choice saying why, and the run's errors too.
pub fn tls_and_protocol(
    conn: &ConnConfig,
    servers: &[(SocketAddr, String)],
) -> crate::Result<(Option<TlsClient>, Protocol, ProtocolChoice)> {
    let with_alpn = |alpn: &[&str]| {
        let mut t = conn.tls.clone();
        t.alpn = alpn.iter().map(|p| p.to_string()).collect();
        t.client(servers)
    };
    let choice = match conn.http {
        HttpVersion::V2 => ProtocolChoice::new("2", "http-flag"),
        HttpVersion::V3 => ProtocolChoice::new("3", "http-flag"),
        HttpVersion::V1 => ProtocolChoice::new("1.1", "http-flag"),
        HttpVersion::Auto if !conn.keep_alive => ProtocolChoice::new("1.1", "no-keep-alive"),
        HttpVersion::Auto => {
            let probe = with_alpn(&["h2", "http/1.1"])?;
            match probe.negotiate(servers[0].0, conn.connect_timeout) {
                Ok(p) if p.as_deref() == Some(b"h2".as_slice()) => ProtocolChoice::new("2", "alpn"),
                Ok(_) => ProtocolChoice::new("1.1", "alpn"),
                Err(e) => ProtocolChoice {
                    fallback: Some(e),
                    ..ProtocolChoice::new("1.1", "alpn-probe-failed")
                },
            }
        }
    };
    let protocol = conn.protocol_of(&choice);
    let client = with_alpn(&[protocol.alpn()])?;
    Ok((Some(client), protocol, choice))
}
