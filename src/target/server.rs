//! The listening socket and the accept loop.
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use super::{conn, Shared};

/// Creates the socket bound to `addr`; listening with `backlog` unless `listen` is false (the
/// server-wide `refuse` fault keeps the port bound but not listening, so connects are refused
/// and no other process can take the port meanwhile). std's `TcpListener::bind` fixes the
/// backlog at 128, hence socket2.
pub(crate) fn bind(addr: SocketAddr, backlog: u32, listen: bool) -> io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    // Restarting the target must not wait for TIME_WAIT sockets of the previous run.
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    if listen {
        // The kernel caps this at net.core.somaxconn.
        socket.listen(i32::try_from(backlog).unwrap_or(i32::MAX))?;
    }
    socket.set_nonblocking(true)?;
    Ok(socket)
}

/// Accepts connections until `stop` fires (or its sender is dropped).
pub(crate) async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut stop: oneshot::Receiver<()>,
) {
    loop {
        tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    shared.stats.connections.fetch_add(1, Ordering::Relaxed);
                    match &shared.tls {
                        None => {
                            tokio::spawn(conn::serve(stream, Arc::clone(&shared)));
                        }
                        Some((acceptor, fault)) => {
                            let (acceptor, fault) = (acceptor.clone(), *fault);
                            tokio::spawn(serve_tls(stream, acceptor, fault, Arc::clone(&shared)));
                        }
                    }
                }
                // Out of file descriptors and the like: back off briefly instead of spinning
                // a core on an accept that keeps failing.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    }
}

/// One HTTPS connection: the TLS fault, or the handshake (bounded) and then the same handler
/// (HTTP/2 when ALPN chose `h2`).
async fn serve_tls(
    mut stream: tokio::net::TcpStream,
    acceptor: tokio_rustls::TlsAcceptor,
    fault: Option<super::TlsFault>,
    shared: Arc<Shared>,
) {
    let _ = stream.set_nodelay(true);
    if super::tls::play(fault, &mut stream).await {
        return;
    }
    let handshake = tokio::time::timeout(super::tls::HANDSHAKE_TIMEOUT, acceptor.accept(stream));
    if let Ok(Ok(tls)) = handshake.await {
        if tls.get_ref().1.alpn_protocol() == Some(b"h2") {
            super::h2::serve(tls, shared).await;
        } else {
            conn::serve(tls, shared).await;
        }
    }
}
