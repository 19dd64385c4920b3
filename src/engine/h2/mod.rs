//! HTTP/2 for the load engine, sans I/O inside the same mio loop as HTTP/1.1: `frame` (the
//! codec), `hpack` (request blocks encoded once per URL, response blocks decoded with
//! `httlib-hpack`), `conn` (one connection's streams, settings and flow control over any
//! [`Transport`](super::transport::Transport), so it runs unchanged over TLS).
pub mod conn;
pub mod frame;
pub mod hpack;
