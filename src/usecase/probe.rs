//! The network probe before a run: which protocol an https:// server picks by ALPN, and with
//! `--alt-svc` whether it announces HTTP/3 (`Alt-Svc`, RFC 7838).
use super::alt_svc;
use super::config::{ConnConfig, HttpVersion};
use crate::engine::tls::TlsClient;
use crate::engine::Protocol;
use crate::metrics::ProtocolChoice;
use std::net::SocketAddr;

/// What the probe settled: the TLS client (offering by ALPN the protocol the run will speak),
/// the protocol with its settings, how it was chosen, and with `--alt-svc` the first server's
/// address moved to its announced HTTP/3 port (from, to).
pub struct Probed {
    pub tls: TlsClient,
    pub protocol: Protocol,
    pub choice: ProtocolChoice,
    pub moved: Option<(SocketAddr, SocketAddr)>,
}

/// https: `--http auto` asks the first server once which protocol it picks from both (the
/// engine speaks one protocol per run); a server that cannot be asked gets HTTP/1.1, the
/// choice saying why, and the run's errors too. With `--alt-svc`, an `h3` alternative the
/// server announces on its own host makes the run HTTP/3 on that port.
pub fn tls_and_protocol(
    conn: &ConnConfig,
    servers: &[(SocketAddr, String)],
) -> crate::Result<Probed> {
    let with_alpn = |alpn: &[&str], servers: &[(SocketAddr, String)]| {
        let mut t = conn.tls.clone();
        t.alpn = alpn.iter().map(|p| p.to_string()).collect();
        t.client(servers)
    };
    let mut moved = None;
    let choice = match conn.http {
        HttpVersion::V2 => ProtocolChoice::new("2", "http-flag"),
        HttpVersion::V3 => ProtocolChoice::new("3", "http-flag"),
        HttpVersion::V1 => ProtocolChoice::new("1.1", "http-flag"),
        HttpVersion::Auto if !conn.keep_alive => ProtocolChoice::new("1.1", "no-keep-alive"),
        HttpVersion::Auto => {
            let probe = with_alpn(&["h2", "http/1.1"], servers)?;
            let tcp = match probe.negotiate(servers[0].0, conn.connect_timeout) {
                Ok(p) if p.as_deref() == Some(b"h2".as_slice()) => ProtocolChoice::new("2", "alpn"),
                Ok(_) => ProtocolChoice::new("1.1", "alpn"),
                Err(e) => ProtocolChoice {
                    fallback: Some(e),
                    ..ProtocolChoice::new("1.1", "alpn-probe-failed")
                },
            };
            if conn.alt_svc && tcp.chosen_by == "alpn" {
                let asker = with_alpn(&["http/1.1"], servers)?;
                match announced_h3(&asker, &servers[0], conn) {
                    Ok(port) => {
                        let from = servers[0].0;
                        moved = Some((from, SocketAddr::new(from.ip(), port)));
                        ProtocolChoice::new("3", "alt-svc")
                    }
                    Err(why) => ProtocolChoice {
                        fallback: Some(why),
                        ..tcp
                    },
                }
            } else {
                tcp
            }
        }
    };
    let protocol = conn.protocol_of(&choice);
    let mut servers = servers.to_vec();
    if let Some((from, to)) = moved {
        for s in servers.iter_mut().filter(|s| s.0 == from) {
            s.0 = to;
        }
    }
    let tls = with_alpn(&[protocol.alpn()], &servers)?;
    Ok(Probed {
        tls,
        protocol,
        choice,
        moved,
    })
}

/// The UDP port of the HTTP/3 alternative the server announces for `server`'s origin in
/// the `Alt-Svc` of its answer to `HEAD /`; Err says why none is used.
fn announced_h3(
    asker: &TlsClient,
    server: &(SocketAddr, String),
    conn: &ConnConfig,
) -> Result<u16, String> {
    let (addr, host) = server;
    let authority = match (host.contains(':') && !host.starts_with('['), addr.port()) {
        (true, 443) => format!("[{host}]"),
        (true, p) => format!("[{host}]:{p}"),
        (false, 443) => host.clone(),
        (false, p) => format!("{host}:{p}"),
    };
    let request = format!(
        "HEAD / HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: {}\r\nAccept: */*\r\n\
         Connection: close\r\n\r\n",
        crate::plan::request::USER_AGENT
    );
    let head = asker
        .ask_head(
            *addr,
            conn.connect_timeout.max(conn.timeout),
            request.as_bytes(),
        )
        .map_err(|e| format!("--alt-svc: the probe's HEAD / failed: {e}"))?;
    if !head.starts_with(b"HTTP/1.") {
        return Err("--alt-svc: the probe's HEAD / got no HTTP/1.1 answer".into());
    }
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match alt_svc::from_head(&head) {
        None => Err("--alt-svc: the server sent no Alt-Svc header".into()),
        Some(alt_svc::AltSvc::Clear) => Err("--alt-svc: the server's Alt-Svc is `clear`".into()),
        Some(a) => a.h3(host).map(|a| a.port).ok_or_else(|| {
            "--alt-svc: the server's Alt-Svc announces no h3 on this host".to_string()
        }),
    }
}
