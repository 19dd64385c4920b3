//! The engine's HTTP/1.1 response parser on arbitrary bytes, whole and cut into pieces.
//! Oracle: no panic, and the same outcome whatever the pieces (a response arrives in whatever
//! splits `read` returns). Input: byte 0 = HEAD request (bit 0), byte 1 = piece size, rest =
//! what the server sent.
#![no_main]
use libfuzzer_sys::fuzz_target;
use overload::engine::http::{ParseError, Response, ResponseParser};

/// Feeds `pieces` in order; the response and how many bytes followed it, or the error.
fn parse<'a>(
    pieces: impl Iterator<Item = &'a [u8]>,
    head_only: bool,
) -> Result<Option<(Response, usize)>, ParseError> {
    let mut p = ResponseParser::new();
    p.start(head_only);
    let mut done: Option<Response> = None;
    let mut rest = 0;
    for piece in pieces {
        if done.is_some() {
            rest += piece.len();
            continue;
        }
        let (used, r) = p.feed(piece)?;
        assert!(used <= piece.len());
        match r {
            Some(r) => {
                done = Some(r);
                rest += piece.len() - used;
            }
            None => assert_eq!(used, piece.len(), "incomplete, yet input left over"),
        }
    }
    match done {
        Some(r) => Ok(Some((r, rest))),
        None => Ok(p.finish_on_eof().map(|r| (r, 0))),
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let head_only = data[0] & 1 == 1;
    let size = data[1] as usize % 97 + 1;
    let msg = &data[2..];
    let whole = parse(std::iter::once(msg), head_only);
    if let Ok(Some((r, rest))) = &whole {
        assert!(r.head_bytes + r.body_bytes + *rest as u64 <= msg.len() as u64);
    }
    assert_eq!(
        parse(msg.chunks(size), head_only),
        whole,
        "pieces of {size}"
    );
    assert_eq!(parse(msg.chunks(1), head_only), whole, "byte by byte");
});
