//! Properties of the engine's HTTP/1.1 response parser: a response cut into arbitrary pieces
//! (as `read` may return it) parses exactly as when given whole, with the status and framed
//! body size it was built with; and no input, however broken, makes it panic.
use overload::engine::http::{ParseError, Response, ResponseParser};
use proptest::prelude::*;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        any_split_parses_as_the_whole,
        random_bytes_never_panic,
        garbage_after_a_valid_head_never_panics
    ]
}

/// Feeds `pieces` in order; returns the response and how many bytes followed it.
fn parse_pieces(
    pieces: &[&[u8]],
    head_only: bool,
) -> Result<Option<(Response, usize)>, ParseError> {
    let mut p = ResponseParser::new();
    p.start(head_only);
    for (i, piece) in pieces.iter().enumerate() {
        let (used, done) = p.feed(piece)?;
        if let Some(r) = done {
            let rest = piece.len() - used + pieces[i + 1..].iter().map(|c| c.len()).sum::<usize>();
            return Ok(Some((r, rest)));
        }
        assert_eq!(
            used,
            piece.len(),
            "an incomplete response consumes all input"
        );
    }
    Ok(p.finish_on_eof().map(|r| (r, 0)))
}

/// Cuts `data` at the given (unsorted, possibly repeated) offsets.
fn cut<'a>(data: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c % (data.len() + 1)).collect();
    at.sort_unstable();
    let mut out = Vec::new();
    let mut prev = 0;
    for c in at {
        out.push(&data[prev..c]);
        prev = c;
    }
    out.push(&data[prev..]);
    out
}

#[derive(Debug, Clone)]
enum Body {
    Length(Vec<u8>),
    /// Chunks (data, extension), then trailer lines.
    Chunked(Vec<(Vec<u8>, Option<String>)>, Vec<(String, String)>),
    /// Delimited by the end of the connection: only as the last response.
    UntilClose(Vec<u8>),
}

#[derive(Debug, Clone)]
struct Built {
    bytes: Vec<u8>,
    status: u16,
    head_bytes: u64,
    body_bytes: u64,
    /// Bytes after the response (not part of it).
    extra: usize,
    head_only: bool,
}

fn token() -> impl Strategy<Value = String> {
    "[A-Za-z][A-Za-z0-9-]{0,15}"
}

fn value() -> impl Strategy<Value = String> {
    "[ -~]{0,40}".prop_map(|v| v.trim().to_string())
}

fn headers() -> impl Strategy<Value = Vec<(String, String)>> {
    prop::collection::vec((token(), value()), 0..6).prop_map(|hs| {
        // Names that change framing are the generator's to set, not the random ones'.
        hs.into_iter()
            .filter(|(n, _)| {
                let n = n.to_ascii_lowercase();
                n != "content-length" && n != "transfer-encoding" && n != "connection"
            })
            .collect()
    })
}

fn body() -> impl Strategy<Value = Body> {
    let data = prop::collection::vec(any::<u8>(), 0..300);
    let ext = prop::option::of("[a-z]{1,8}(=[a-z0-9]{1,8})?");
    prop_oneof![
        data.clone().prop_map(Body::Length),
        (
            prop::collection::vec((prop::collection::vec(any::<u8>(), 1..200), ext), 0..5),
            prop::collection::vec((token(), value()), 0..3),
        )
            .prop_map(|(c, t)| Body::Chunked(c, t)),
        data.prop_map(Body::UntilClose),
    ]
}

prop_compose! {
    fn response()(
        interim in prop::collection::vec((prop::sample::select(vec![100u16, 102, 103]), headers()), 0..3),
        http10 in any::<bool>(),
        status in prop::sample::select(vec![200u16, 201, 204, 301, 304, 404, 500, 503, 599]),
        hs in headers(),
        close in prop::option::of(any::<bool>()),
        b in body(),
        crlf in any::<bool>(),
        extra in prop::collection::vec(any::<u8>(), 0..20),
        head_only in prop::bool::weighted(0.1),
    ) -> Built {
        let nl: &[u8] = if crlf { b"\r\n" } else { b"\n" };
        let mut out = Vec::new();
        for (code, hs) in &interim {
            out.extend_from_slice(format!("HTTP/1.1 {code} Interim").as_bytes());
            out.extend_from_slice(nl);
            for (n, v) in hs {
                out.extend_from_slice(format!("{n}: {v}").as_bytes());
                out.extend_from_slice(nl);
            }
            out.extend_from_slice(nl);
        }
        let version = if http10 { "1.0" } else { "1.1" };
        out.extend_from_slice(format!("HTTP/{version} {status} Some Reason").as_bytes());
        out.extend_from_slice(nl);
        for (n, v) in &hs {
            out.extend_from_slice(format!("{n}: {v}").as_bytes());
            out.extend_from_slice(nl);
        }
        match close {
            Some(true) => out.extend_from_slice(b"Connection: close\r\n"),
            Some(false) => out.extend_from_slice(b"Connection: keep-alive\r\n"),
            None => {}
        }
        let no_body = head_only || status == 204 || status == 304;
        let mut wire_body = Vec::new();
        let until_close = matches!(b, Body::UntilClose(_)) && !no_body;
        match &b {
            Body::Length(d) => {
                out.extend_from_slice(format!("Content-Length: {}", d.len()).as_bytes());
                out.extend_from_slice(nl);
                wire_body.extend_from_slice(d);
            }
            Body::Chunked(chunks, trailers) => {
                out.extend_from_slice(b"Transfer-Encoding: chunked");
                out.extend_from_slice(nl);
                for (d, ext) in chunks {
                    wire_body.extend_from_slice(format!("{:x}", d.len()).as_bytes());
                    if let Some(e) = ext {
                        wire_body.extend_from_slice(format!(";{e}").as_bytes());
                    }
                    wire_body.extend_from_slice(b"\r\n");
                    wire_body.extend_from_slice(d);
                    wire_body.extend_from_slice(b"\r\n");
                }
                wire_body.extend_from_slice(b"0\r\n");
                for (n, v) in trailers {
                    wire_body.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
                }
                wire_body.extend_from_slice(b"\r\n");
            }
            Body::UntilClose(d) => wire_body.extend_from_slice(d),
        }
        out.extend_from_slice(nl);
        let head_bytes = out.len() as u64;
        let body_bytes = if no_body { 0 } else { wire_body.len() as u64 };
        // HEAD, 204 and 304 carry no body whatever the headers say: what follows is extra.
        out.extend_from_slice(&wire_body);
        let mut extra_n = if no_body { wire_body.len() } else { 0 };
        if !until_close {
            out.extend_from_slice(&extra);
            extra_n += extra.len();
        }
        Built { bytes: out, status, head_bytes, body_bytes, extra: extra_n, head_only }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    fn any_split_parses_as_the_whole(b in response(), cuts in prop::collection::vec(any::<usize>(), 0..12)) {
        let whole = parse_pieces(&[&b.bytes], b.head_only);
        let (r, rest) = whole.expect("a well-formed response parses").expect("complete");
        prop_assert_eq!(r.status, b.status);
        prop_assert_eq!(r.head_bytes, b.head_bytes);
        prop_assert_eq!(r.body_bytes, b.body_bytes);
        prop_assert_eq!(rest, b.extra);
        let pieces = cut(&b.bytes, &cuts);
        prop_assert_eq!(parse_pieces(&pieces, b.head_only), whole);
        // And byte by byte, the worst case.
        let bytes: Vec<&[u8]> = b.bytes.chunks(1).collect();
        prop_assert_eq!(parse_pieces(&bytes, b.head_only), whole);
    }

    fn random_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..2000), cuts in prop::collection::vec(any::<usize>(), 0..8), head_only in any::<bool>()) {
        let _ = parse_pieces(&cut(&data, &cuts), head_only);
    }

    /// A valid head followed by garbage reaches the body decoders with hostile input.
    fn garbage_after_a_valid_head_never_panics(
        chunked in any::<bool>(),
        data in prop::collection::vec(prop::sample::select(b"0123456789abcdefABCDEF;=\r\n \txz".to_vec()), 0..600),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        let mut msg = if chunked {
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec()
        } else {
            b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n".to_vec()
        };
        msg.extend_from_slice(&data);
        let whole = parse_pieces(&[&msg], false);
        prop_assert_eq!(parse_pieces(&cut(&msg, &cuts), false), whole);
    }
}
