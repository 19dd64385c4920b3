//! Properties of the HTTP/2 client's frame codec and HPACK response decoding: valid frames
//! written with the codec's own `put_*` read back as what was written however `read` cuts the
//! bytes; arbitrary bytes, whole or cut, never panic and decode alike; header blocks encoded
//! as servers do (indexing, Huffman, a dynamic table carried across blocks) decode to their
//! `:status`, and garbage or truncated blocks are refused without a panic.
use overload::engine::h2::frame::{self, Decoder, Frame};
use overload::engine::h2::hpack::{BlockError, ResponseDecoder};
use proptest::prelude::*;

pub fn trials() -> Vec<libtest_mimic::Trial> {
    tests![
        valid_frames_read_back_as_written_however_cut,
        response_blocks_decode_to_their_status_across_a_connection,
        arbitrary_bytes_never_panic_and_decode_alike_in_pieces,
        arbitrary_header_blocks_never_panic
    ]
}

/// A frame as written, and as it must read back (DATA as its total length).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Written {
    Data {
        stream: u32,
        body: Vec<u8>,
        end_stream: bool,
    },
    /// A header block, split by `put_headers` into HEADERS and CONTINUATIONs of `max_frame`.
    Headers {
        stream: u32,
        block: Vec<u8>,
        end_stream: bool,
        max_frame: usize,
    },
    Settings(Vec<(u16, u32)>),
    SettingsAck,
    PingAck([u8; 8]),
    WindowUpdate {
        stream: u32,
        increment: u32,
    },
    RstStream {
        stream: u32,
        code: u32,
    },
    Goaway {
        last_stream: u32,
        code: u32,
    },
}

/// What the decoder yields, owned; DATA pieces added up per frame.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Read {
    Data {
        stream: u32,
        len: u32,
        end_stream: bool,
    },
    Headers {
        stream: u32,
        block: Vec<u8>,
        end_stream: bool,
    },
    Settings(Vec<(u16, u32)>, bool),
    Ping([u8; 8], bool),
    WindowUpdate(u32, u32),
    RstStream(u32, u32),
    Goaway(u32, u32),
    Other(String),
}

fn stream_id() -> impl Strategy<Value = u32> {
    1u32..=frame::MAX_WINDOW
}

fn written() -> impl Strategy<Value = Written> {
    prop_oneof![
        (
            stream_id(),
            prop::collection::vec(any::<u8>(), 0..3000),
            any::<bool>()
        )
            .prop_map(|(stream, body, end_stream)| Written::Data {
                stream,
                body,
                end_stream
            }),
        (
            stream_id(),
            prop::collection::vec(any::<u8>(), 0..2000),
            any::<bool>(),
            1usize..700
        )
            .prop_map(|(stream, block, end_stream, max_frame)| Written::Headers {
                stream,
                block,
                end_stream,
                max_frame
            }),
        prop::collection::vec((any::<u16>(), any::<u32>()), 0..8).prop_map(Written::Settings),
        Just(Written::SettingsAck),
        any::<[u8; 8]>().prop_map(Written::PingAck),
        (0u32..=frame::MAX_WINDOW, 1u32..=frame::MAX_WINDOW)
            .prop_map(|(stream, increment)| Written::WindowUpdate { stream, increment }),
        (stream_id(), any::<u32>()).prop_map(|(stream, code)| Written::RstStream { stream, code }),
        (0u32..=frame::MAX_WINDOW, any::<u32>())
            .prop_map(|(last_stream, code)| Written::Goaway { last_stream, code }),
    ]
}

fn encode(frames: &[Written]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in frames {
        match f {
            Written::Data {
                stream,
                body,
                end_stream,
            } => frame::put_data(&mut out, *stream, body, *end_stream),
            Written::Headers {
                stream,
                block,
                end_stream,
                max_frame,
            } => frame::put_headers(&mut out, *stream, block, *end_stream, *max_frame),
            Written::Settings(p) => frame::put_settings(&mut out, p),
            Written::SettingsAck => frame::put_settings_ack(&mut out),
            Written::PingAck(d) => frame::put_ping_ack(&mut out, *d),
            Written::WindowUpdate { stream, increment } => {
                frame::put_window_update(&mut out, *stream, *increment)
            }
            Written::RstStream { stream, code } => frame::put_rst_stream(&mut out, *stream, *code),
            Written::Goaway { last_stream, code } => {
                frame::put_goaway(&mut out, *last_stream, *code)
            }
        }
    }
    out
}

/// What reading `frames` back must give: a header block reassembled from its CONTINUATIONs.
fn expected(frames: &[Written]) -> Vec<Read> {
    frames
        .iter()
        .map(|f| match f {
            Written::Data {
                stream,
                body,
                end_stream,
            } => Read::Data {
                stream: *stream,
                len: body.len() as u32,
                end_stream: *end_stream,
            },
            Written::Headers {
                stream,
                block,
                end_stream,
                ..
            } => Read::Headers {
                stream: *stream,
                block: block.clone(),
                end_stream: *end_stream,
            },
            Written::Settings(p) => Read::Settings(p.clone(), false),
            Written::SettingsAck => Read::Settings(Vec::new(), true),
            Written::PingAck(d) => Read::Ping(*d, true),
            Written::WindowUpdate { stream, increment } => Read::WindowUpdate(*stream, *increment),
            Written::RstStream { stream, code } => Read::RstStream(*stream, *code),
            Written::Goaway { last_stream, code } => Read::Goaway(*last_stream, *code),
        })
        .collect()
}

/// Decodes `pieces` in order into owned frames: a header block's HEADERS and CONTINUATIONs
/// joined (as the connection does), DATA as the pieces the decoder hands out.
fn decode<'a>(pieces: impl Iterator<Item = &'a [u8]>) -> Result<Vec<Read>, String> {
    let mut d = Decoder::new();
    let mut out: Vec<Read> = Vec::new();
    let mut block: Option<(u32, Vec<u8>, bool)> = None;
    for p in pieces {
        d.feed(p, |f| {
            match f {
                Frame::Data {
                    stream,
                    len,
                    end_stream,
                    ..
                } => out.push(Read::Data {
                    stream,
                    len,
                    end_stream,
                }),
                Frame::Headers {
                    stream,
                    end_stream,
                    end_headers: true,
                    block: b,
                } => out.push(Read::Headers {
                    stream,
                    block: b.to_vec(),
                    end_stream,
                }),
                Frame::Headers {
                    stream,
                    end_stream,
                    block: b,
                    ..
                } => block = Some((stream, b.to_vec(), end_stream)),
                Frame::Continuation {
                    stream,
                    end_headers,
                    block: b,
                } => match block.as_mut() {
                    Some((s, acc, _)) if *s == stream => {
                        acc.extend_from_slice(b);
                        if end_headers {
                            let (stream, block, end_stream) = block.take().unwrap();
                            out.push(Read::Headers {
                                stream,
                                block,
                                end_stream,
                            });
                        }
                    }
                    _ => out.push(Read::Other(format!("{f:?}"))),
                },
                Frame::Settings { ack, params } => {
                    out.push(Read::Settings(frame::settings(params).collect(), ack))
                }
                Frame::Ping { ack, data } => out.push(Read::Ping(data, ack)),
                Frame::WindowUpdate { stream, increment } => {
                    out.push(Read::WindowUpdate(stream, increment))
                }
                Frame::RstStream { stream, code } => out.push(Read::RstStream(stream, code)),
                Frame::Goaway { last_stream, code } => out.push(Read::Goaway(last_stream, code)),
                other => out.push(Read::Other(format!("{other:?}"))),
            }
            true
        })
        .map_err(|e| e.to_string())?;
    }
    Ok(out)
}

/// DATA carries no frame boundary the decoder could mark (only END_STREAM), so both sides are
/// compared with adjacent DATA on one stream added up until an END_STREAM.
fn merge_data(frames: Vec<Read>) -> Vec<Read> {
    let mut out: Vec<Read> = Vec::new();
    for f in frames {
        if let (
            Some(Read::Data {
                stream: s0,
                len: l0,
                end_stream: false,
            }),
            Read::Data {
                stream,
                len,
                end_stream,
            },
        ) = (out.last_mut(), &f)
        {
            if *s0 == *stream {
                *l0 += len;
                let merged = Read::Data {
                    stream: *stream,
                    len: *l0,
                    end_stream: *end_stream,
                };
                *out.last_mut().unwrap() = merged;
                continue;
            }
        }
        out.push(f);
    }
    out
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

/// A response header list as a server sends it: `:status` first, then lowercase fields.
fn response_headers() -> impl Strategy<Value = (u16, Vec<(String, String)>)> {
    (
        100u16..1000,
        prop::collection::vec(("[a-z][a-z0-9-]{0,20}", "[ -~]{0,60}"), 0..8),
    )
}

fn encode_block(
    e: &mut httlib_hpack::Encoder<'_>,
    status: u16,
    fields: &[(String, String)],
) -> Vec<u8> {
    let mut out = Vec::new();
    let flags = httlib_hpack::Encoder::HUFFMAN_VALUE
        | httlib_hpack::Encoder::WITH_INDEXING
        | httlib_hpack::Encoder::BEST_FORMAT;
    let status = status.to_string();
    let all = std::iter::once((":status", status.as_str()))
        .chain(fields.iter().map(|(n, v)| (n.as_str(), v.as_str())));
    for (n, v) in all {
        e.encode(
            (n.as_bytes().to_vec(), v.as_bytes().to_vec(), flags),
            &mut out,
        )
        .unwrap();
    }
    out
}

fn encode_one(e: &mut httlib_hpack::Encoder<'_>, (n, v): &(String, String)) -> Vec<u8> {
    let mut out = Vec::new();
    let flags = httlib_hpack::Encoder::HUFFMAN_VALUE
        | httlib_hpack::Encoder::WITH_INDEXING
        | httlib_hpack::Encoder::BEST_FORMAT;
    e.encode(
        (n.as_bytes().to_vec(), v.as_bytes().to_vec(), flags),
        &mut out,
    )
    .unwrap();
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Frames written by the codec read back as written, whatever pieces `read` returns.
    fn valid_frames_read_back_as_written_however_cut(
        frames in prop::collection::vec(written(), 0..12),
        cuts in prop::collection::vec(any::<usize>(), 0..16),
    ) {
        let bytes = encode(&frames);
        let got = decode(cut(&bytes, &cuts).into_iter());
        prop_assert!(got.is_ok(), "{:?}", got);
        prop_assert_eq!(merge_data(got.unwrap()), merge_data(expected(&frames)));
    }

    /// Response blocks encoded as servers do, over one connection (the dynamic table carried
    /// from block to block), decode to their status; a block cut short is refused, and the
    /// decoder never panics on it.
    fn response_blocks_decode_to_their_status_across_a_connection(
        responses in prop::collection::vec(response_headers(), 1..8),
        cut_at in any::<usize>(),
    ) {
        let mut e = httlib_hpack::Encoder::default();
        let mut d = ResponseDecoder::new();
        for (status, fields) in &responses {
            let block = encode_block(&mut e, *status, fields);
            prop_assert_eq!(d.decode(&block, 1 << 20), Ok(*status));
        }
        // One block again from a fresh encoder, with its field boundaries.
        let (status, fields) = &responses[0];
        let mut fresh_e = httlib_hpack::Encoder::default();
        let mut bounds = vec![0];
        let mut block = Vec::new();
        for i in 0..=fields.len() {
            let one = if i == 0 {
                encode_block(&mut fresh_e, *status, &[])
            } else {
                encode_one(&mut fresh_e, &fields[i - 1])
            };
            block.extend_from_slice(&one);
            bounds.push(block.len());
        }
        let at = cut_at % (block.len() + 1);
        let got = ResponseDecoder::new().decode(&block[..at], 1 << 20);
        if at == 0 {
            prop_assert_eq!(got, Ok(0), "an empty list reads as trailers");
        } else if bounds.contains(&at) {
            // A cut between fields is a shorter, valid list that still starts with :status.
            prop_assert_eq!(got, Ok(*status));
        } else {
            prop_assert_eq!(got, Err(BlockError::Compression), "cut at {} of {}", at, block.len());
        }
    }

    /// Garbage, whole or cut anywhere: no panic, and the same frames (or the same error).
    fn arbitrary_bytes_never_panic_and_decode_alike_in_pieces(
        bytes in prop::collection::vec(any::<u8>(), 0..600),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let whole = decode(std::iter::once(&bytes[..])).map(merge_data);
        let split = decode(cut(&bytes, &cuts).into_iter()).map(merge_data);
        prop_assert_eq!(whole, split);
    }

    /// A header block no server would send never panics the decoder, and the decoder keeps
    /// working (it answers the next block, even if with an error).
    fn arbitrary_header_blocks_never_panic(
        blocks in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..200), 1..6),
    ) {
        let mut d = ResponseDecoder::new();
        for b in &blocks {
            let _ = d.decode(b, 64 << 10);
        }
    }
}
