//! The HTTP/3 client's stream decoder and QPACK decoding on arbitrary server bytes, whole
//! and cut into pieces. Oracle: no panic; the decoder yields the same frames (DATA aside,
//! which comes in pieces as read) and the same error whatever the pieces; every HEADERS
//! payload decodes as QPACK (static table and literals only) without a panic, and a
//! decoded section is no larger than the cap. Input: byte 0 = piece size, the rest = what
//! the server sent on a request stream.
#![no_main]
use libfuzzer_sys::fuzz_target;
use overload::engine::h3::frame::{Decoder, Frame};
use overload::engine::h3::qpack;

const MAX: usize = 16 * 1024;

fn frames<'a>(pieces: impl Iterator<Item = &'a [u8]>) -> Result<Vec<String>, String> {
    let mut d = Decoder::new(MAX);
    let mut q = qpack::Decoder::default();
    let mut got = Vec::new();
    for p in pieces {
        d.feed(p, |f| {
            match f {
                Frame::Data(_) => {}
                Frame::Headers(section) => {
                    assert!(section.len() <= MAX);
                    got.push(format!("Headers {:?}", q.head(section, MAX)));
                }
                other => got.push(format!("{other:?}")),
            }
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
    let whole = frames(std::iter::once(msg));
    let split = frames(msg.chunks(size));
    assert_eq!(whole, split, "pieces of {size}");
    // The bytes as one field section, as a QPACK decoder would meet them.
    let mut n = 0usize;
    let _ = qpack::fields(msg, &mut Vec::new(), &mut Vec::new(), |a, b| {
        n += a.len() + b.len()
    });
});
