use super::*;
use proptest::prelude::*;

/// An owned copy of a frame, so a test can keep what the callback saw.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Owned {
    Data(u32, u32, bool),
    Headers(u32, bool, bool, Vec<u8>),
    Continuation(u32, bool, Vec<u8>),
    Rst(u32, u32),
    Settings(bool, Vec<(u16, u32)>),
    Push(u32),
    Ping(bool, [u8; 8]),
    Goaway(u32, u32),
    Window(u32, u32),
    Ignored,
}

fn own(f: Frame<'_>) -> Owned {
    match f {
        Frame::Data {
            stream,
            len,
            end_stream,
            ..
        } => Owned::Data(stream, len, end_stream),
        Frame::Headers {
            stream,
            end_stream,
            end_headers,
            block,
        } => Owned::Headers(stream, end_stream, end_headers, block.to_vec()),
        Frame::Continuation {
            stream,
            end_headers,
            block,
        } => Owned::Continuation(stream, end_headers, block.to_vec()),
        Frame::RstStream { stream, code } => Owned::Rst(stream, code),
        Frame::Settings { ack, params } => Owned::Settings(ack, settings(params).collect()),
        Frame::PushPromise { stream } => Owned::Push(stream),
        Frame::Ping { ack, data } => Owned::Ping(ack, data),
        Frame::Goaway { last_stream, code } => Owned::Goaway(last_stream, code),
        Frame::WindowUpdate { stream, increment } => Owned::Window(stream, increment),
        Frame::Ignored => Owned::Ignored,
    }
}

/// Feeds `bytes` in pieces of `step` bytes; DATA pieces of one frame are merged back.
fn decode(bytes: &[u8], step: usize) -> Result<Vec<Owned>, FrameError> {
    let mut d = Decoder::new();
    let mut got: Vec<Owned> = Vec::new();
    for piece in bytes.chunks(step.max(1)) {
        d.feed(piece, |f| {
            push_piece(&mut got, own(f));
            true
        })?;
    }
    Ok(got)
}

/// Appends a decoded frame, joining a DATA frame's pieces: same stream, the earlier one not
/// the end. (Two whole DATA frames of one stream, the first without END_STREAM, join too: the
/// pieces do not say where a frame ended, so the frame count below joins them the same way.)
fn push_piece(got: &mut Vec<Owned>, o: Owned) {
    match (got.last_mut(), &o) {
        (Some(Owned::Data(s, n, false)), Owned::Data(s2, m, end)) if s == s2 && *m > 0 => {
            *n += m;
            if *end {
                *got.last_mut().unwrap() = Owned::Data(*s2, *n, true);
            }
        }
        _ => got.push(o),
    }
}

fn sample() -> (Vec<u8>, Vec<Owned>) {
    let mut out = Vec::new();
    put_settings(&mut out, &[(SETTINGS_MAX_CONCURRENT_STREAMS, 100)]);
    put_settings_ack(&mut out);
    put_headers(&mut out, 1, b"abc", false, 16_384);
    put_data(&mut out, 1, &[7; 40_000][..16_000], true);
    put_ping_ack(&mut out, [1, 2, 3, 4, 5, 6, 7, 8]);
    put_window_update(&mut out, 3, 1000);
    put_rst_stream(&mut out, 3, CANCEL);
    put_goaway(&mut out, 5, NO_ERROR);
    let want = vec![
        Owned::Settings(false, vec![(SETTINGS_MAX_CONCURRENT_STREAMS, 100)]),
        Owned::Settings(true, vec![]),
        Owned::Headers(1, false, true, b"abc".to_vec()),
        Owned::Data(1, 16_000, true),
        Owned::Ping(true, [1, 2, 3, 4, 5, 6, 7, 8]),
        Owned::Window(3, 1000),
        Owned::Rst(3, CANCEL),
        Owned::Goaway(5, NO_ERROR),
    ];
    (out, want)
}

#[test]
fn frames_written_read_back_whole_and_split_at_every_size() {
    let (bytes, want) = sample();
    for step in [1, 2, 8, 9, 10, 17, 100, 4096, bytes.len()] {
        assert_eq!(decode(&bytes, step).unwrap(), want, "step {step}");
    }
}

#[test]
fn a_long_header_block_goes_out_as_headers_and_continuations() {
    let block: Vec<u8> = (0..40u8).collect();
    let mut out = Vec::new();
    put_headers(&mut out, 7, &block, true, 16);
    assert_eq!(
        decode(&out, 5).unwrap(),
        vec![
            Owned::Headers(7, true, false, block[..16].to_vec()),
            Owned::Continuation(7, false, block[16..32].to_vec()),
            Owned::Continuation(7, true, block[32..].to_vec()),
        ]
    );
}

#[test]
fn padding_and_priority_are_stripped_from_headers() {
    // PADDED | PRIORITY | END_HEADERS: pad length 2, 5 priority bytes, block "hi", 2 pad bytes.
    let payload = [2, 0, 0, 0, 3, 16, b'h', b'i', 0, 0];
    let mut out = Vec::new();
    put_head(
        &mut out,
        payload.len(),
        HEADERS,
        PADDED | PRIORITY_FLAG | END_HEADERS,
        1,
    );
    out.extend_from_slice(&payload);
    assert_eq!(
        decode(&out, 3).unwrap(),
        vec![Owned::Headers(1, false, true, b"hi".to_vec())]
    );
}

#[test]
fn an_empty_data_frame_still_ends_its_stream() {
    let mut out = Vec::new();
    put_data(&mut out, 9, &[], true);
    assert_eq!(decode(&out, 1).unwrap(), vec![Owned::Data(9, 0, true)]);
}

#[test]
fn unknown_and_priority_frames_are_ignored() {
    let mut out = Vec::new();
    put_head(&mut out, 3, 0xfa, 0, 0);
    out.extend_from_slice(b"xyz");
    put_head(&mut out, 5, PRIORITY, 0, 1);
    out.extend_from_slice(&[0; 5]);
    assert_eq!(
        decode(&out, 4).unwrap(),
        vec![Owned::Ignored, Owned::Ignored]
    );
}

#[test]
fn malformed_frames_are_connection_errors() {
    let frame = |len: usize, kind: u8, flags: u8, stream: u32| {
        let mut out = Vec::new();
        put_head(&mut out, len, kind, flags, stream);
        out.resize(HEAD_LEN + len, 0);
        out
    };
    let cases = [
        (frame(16_385, DATA, 0, 1), FrameError::Size),
        (
            frame(4, DATA, 0, 0),
            FrameError::Protocol("DATA on stream 0"),
        ),
        (
            frame(6, SETTINGS, 0, 1),
            FrameError::Protocol("SETTINGS on a stream"),
        ),
        (frame(5, SETTINGS, 0, 0), FrameError::Size),
        (frame(6, SETTINGS, ACK, 0), FrameError::Size),
        (frame(7, PING, 0, 0), FrameError::Size),
        (frame(3, RST_STREAM, 0, 1), FrameError::Size),
        (
            frame(4, WINDOW_UPDATE, 0, 1),
            FrameError::Protocol("WINDOW_UPDATE of zero"),
        ),
        (frame(4, GOAWAY, 0, 0), FrameError::Size),
        (
            frame(1, HEADERS, 0, 0),
            FrameError::Protocol("HEADERS on stream 0"),
        ),
    ];
    for (bytes, want) in cases {
        assert_eq!(decode(&bytes, 3), Err(want), "{bytes:?}");
    }
    // Pad length 5 in a 3-byte payload.
    let mut out = Vec::new();
    put_head(&mut out, 3, HEADERS, PADDED | END_HEADERS, 1);
    out.extend_from_slice(&[5, 0, 0]);
    assert!(matches!(decode(&out, 64), Err(FrameError::Protocol(_))));
}

#[test]
fn a_callback_that_stops_stops_the_decoding() {
    let (bytes, _) = sample();
    let mut d = Decoder::new();
    let mut n = 0;
    d.feed(&bytes, |_| {
        n += 1;
        false
    })
    .unwrap();
    assert_eq!(n, 1);
}

fn arb_frame() -> impl Strategy<Value = Vec<u8>> {
    let stream = 1u32..1000;
    prop_oneof![
        (
            stream.clone(),
            proptest::collection::vec(any::<u8>(), 0..3000),
            any::<bool>()
        )
            .prop_map(|(s, d, e)| {
                let mut o = Vec::new();
                put_data(&mut o, s, &d, e);
                o
            }),
        (
            stream.clone(),
            proptest::collection::vec(any::<u8>(), 0..300),
            1usize..200,
            any::<bool>()
        )
            .prop_map(|(s, b, max, e)| {
                let mut o = Vec::new();
                put_headers(&mut o, s, &b, e, max);
                o
            }),
        proptest::collection::vec((any::<u16>(), any::<u32>()), 0..10).prop_map(|p| {
            let mut o = Vec::new();
            put_settings(&mut o, &p);
            o
        }),
        (stream.clone(), any::<u32>()).prop_map(|(s, c)| {
            let mut o = Vec::new();
            put_rst_stream(&mut o, s, c);
            o
        }),
        (0u32..1000, 1u32..MAX_WINDOW).prop_map(|(s, i)| {
            let mut o = Vec::new();
            put_window_update(&mut o, s, i);
            o
        }),
        any::<[u8; 8]>().prop_map(|d| {
            let mut o = Vec::new();
            put_ping_ack(&mut o, d);
            o
        }),
        (0u32..MAX_WINDOW, any::<u32>()).prop_map(|(s, c)| {
            let mut o = Vec::new();
            put_goaway(&mut o, s, c);
            o
        }),
    ]
}

proptest! {
    /// Arbitrary bytes, in arbitrary pieces: an error or frames, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..4000),
                                   step in 1usize..600) {
        let _ = decode(&bytes, step);
    }

    /// Valid frames decode to the same frames however the bytes are split.
    #[test]
    fn valid_frames_decode_the_same_at_any_split(frames in proptest::collection::vec(arb_frame(), 1..12),
                                                 step in 1usize..5000) {
        let bytes: Vec<u8> = frames.concat();
        let whole = decode(&bytes, bytes.len()).unwrap();
        prop_assert_eq!(decode(&bytes, step).unwrap(), whole.clone());
        // One frame written is one frame read (header blocks as HEADERS + CONTINUATIONs).
        let mut each = Vec::new();
        for f in &frames {
            for o in decode(f, f.len()).unwrap() {
                push_piece(&mut each, o);
            }
        }
        prop_assert_eq!(whole.len(), each.len());
    }

    /// The response decoder survives any block and stays usable.
    #[test]
    fn header_blocks_never_panic(block in proptest::collection::vec(any::<u8>(), 0..500)) {
        let mut d = super::super::hpack::ResponseDecoder::new();
        let _ = d.decode(&block, 65_536);
        // A good block still decodes on a fresh decoder (nothing global was harmed).
        prop_assert_eq!(super::super::hpack::ResponseDecoder::new().decode(&[0x89], 65_536), Ok(204));
    }
}

#[test]
fn data_pieces_carry_their_bytes_without_the_padding_at_every_split() {
    // A padded DATA frame: pad length 3, "hello", 3 bytes of padding; then a plain one.
    let mut wire = vec![0, 0, 9, DATA, PADDED | END_STREAM, 0, 0, 0, 1, 3];
    wire.extend_from_slice(b"hello");
    wire.extend_from_slice(&[0, 0, 0]);
    put_data(&mut wire, 3, b" world", true);
    for step in 1..=wire.len() {
        let mut d = Decoder::new();
        let mut got: Vec<(u32, Vec<u8>)> = Vec::new();
        for piece in wire.chunks(step) {
            d.feed(piece, |f| {
                if let Frame::Data { stream, data, .. } = f {
                    match got.last_mut() {
                        Some((s, b)) if *s == stream => b.extend_from_slice(data),
                        _ => got.push((stream, data.to_vec())),
                    }
                }
                true
            })
            .unwrap();
        }
        assert_eq!(
            got,
            vec![(1, b"hello".to_vec()), (3, b" world".to_vec())],
            "split every {step} bytes"
        );
    }
}
