//! HTTP/3 for the load engine (`--http 3`), sans I/O inside the same mio loop as HTTP/1.1
//! and HTTP/2: `frame` (RFC 9114's frames and a stream's decoder), `qpack` (field sections
//! with a dynamic table of 0: requests encoded once per URL, responses decoded without
//! state), `conn` (one QUIC connection, quinn-proto's state machine over its own UDP socket,
//! answering with the same events as HTTP/2's connections).
pub mod conn;
pub mod frame;
pub mod qpack;
