//! The network probe before a run: which protocol an https:// server picks by ALPN.
use super::config::{ConnConfig, HttpVersion};
use crate::engine::tls::TlsClient;
use crate::engine::Http2;
use std::net::SocketAddr;

/// https: the TLS client, offering by ALPN the protocol the run will speak, and the HTTP/2
/// settings when it is h2. `--http auto` asks the first server once which it picks from
/// both (the engine speaks one protocol per run); a server that cannot be asked gets HTTP/1.1
/// and the run's errors say why.
pub fn tls_and_protocol(
    conn: &ConnConfig,
    servers: &[(SocketAddr, String)],
) -> crate::Result<(Option<TlsClient>, Option<Http2>)> {
    let with_alpn = |alpn: &[&str]| {
        let mut t = conn.tls.clone();
        t.alpn = alpn.iter().map(|p| p.to_string()).collect();
        t.client(servers)
    };
    let h2 = match conn.http {
        HttpVersion::V2 => true,
        HttpVersion::V1 => false,
        HttpVersion::Auto => {
            let probe = with_alpn(&["h2", "http/1.1"])?;
            conn.keep_alive
                && probe
                    .negotiate(servers[0].0, conn.connect_timeout)
                    .is_ok_and(|p| p.as_deref() == Some(b"h2".as_slice()))
        }
    };
    let http2 = h2.then_some(Http2 {
        streams: conn.streams,
    });
    let client = with_alpn(if h2 { &["h2"] } else { &["http/1.1"] })?;
    Ok((Some(client), http2))
}
