//! The HTTP/2 client's frame decoder and connection on arbitrary server bytes, whole and cut
//! into pieces. Oracle: no panic; the decoder yields the same frames whatever the pieces; the
//! connection answers each submitted request at most once with a final outcome, and names no
//! other slot. Input: byte 0 = piece size, the rest = what the server sent after our preface.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mio::{Registry, Token};
use overload::engine::h2::conn::{H2Conn, Outcome};
use overload::engine::h2::frame::Decoder;
use overload::engine::transport::Transport;
use overload::engine::Prepared;
use overload::metrics::ErrorKind;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

/// Connected at once; nothing to read (the input is fed with `input`); takes every write.
struct Null;

impl Transport for Null {
    type Setup = ();
    type Poller = overload::engine::io::epoll::Epoll;
    fn connect(_: &(), _: SocketAddr, _: Option<IpAddr>) -> io::Result<Null> {
        Ok(Null)
    }
    fn register(&mut self, _: &Registry, _: Token) -> io::Result<()> {
        Ok(())
    }
    fn deregister(&mut self, _: &Registry) -> io::Result<()> {
        Ok(())
    }
    fn establish(&mut self) -> Result<bool, ErrorKind> {
        Ok(true)
    }
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        Err(io::ErrorKind::WouldBlock.into())
    }
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Ok(buf.len())
    }
    fn wants_write(&self) -> bool {
        false
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The frames (as their debug text) or the error.
fn frames<'a>(pieces: impl Iterator<Item = &'a [u8]>) -> Result<Vec<String>, String> {
    let mut d = Decoder::new();
    let mut got: Vec<String> = Vec::new();
    for p in pieces {
        d.feed(p, |f| {
            got.push(format!("{f:?}"));
            true
        })
        .map_err(|e| e.to_string())?;
    }
    Ok(got)
}

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let size = data[0] as usize % 61 + 1;
    let msg = &data[1..];
    // DATA arrives in pieces as it is read, so only the other frames compare across splits.
    let whole = frames(std::iter::once(msg)).map(|v| {
        v.into_iter().filter(|f| !f.starts_with("Data")).collect::<Vec<_>>()
    });
    let split = frames(msg.chunks(size)).map(|v| {
        v.into_iter().filter(|f| !f.starts_with("Data")).collect::<Vec<_>>()
    });
    assert_eq!(whole, split, "pieces of {size}");

    let reqs = vec![Prepared {
        h2_block: vec![0x82, 0x86, 0x84, 0x41, 0x01, b't'],
        body: b"hello".to_vec(),
        ..Prepared::default()
    }];
    let now = Instant::now();
    let mut h = H2Conn::new(Null, 0, 1, 4, None, now, now + Duration::from_secs(1));
    let mut buf = [0u8; 64];
    h.on_event(false, true, false, &reqs, &mut buf, 1);
    for slot in 0..6 {
        h.submit(slot, 0, &reqs);
    }
    for p in msg.chunks(size) {
        h.input(p, &reqs);
    }
    let mut ended = [0u8; 6];
    for e in &h.events {
        assert!(e.slot < 6, "unknown slot {}", e.slot);
        if !matches!(e.outcome, Outcome::Sent { .. }) {
            ended[e.slot] += 1;
        }
    }
    assert!(ended.iter().all(|&n| n <= 1), "{:?}", h.events);
});
