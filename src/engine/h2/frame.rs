//! HTTP/2 framing (RFC 9113 §4, §6): a decoder fed whatever each `read` returned, and writers
//! that append frames to a connection's output buffer.
//!
//! DATA payloads are streamed, never buffered: a load generator only counts them, so a 16 KiB
//! frame split across reads costs no copy. Every other frame is at most the advertised
//! SETTINGS_MAX_FRAME_SIZE (we keep the default, 16 KiB) and is kept whole until complete.

/// What a client sends first on every HTTP/2 connection (RFC 9113 §3.4).
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// The frame header: length (24 bits), type, flags, stream id (31 bits).
pub const HEAD_LEN: usize = 9;
/// SETTINGS_MAX_FRAME_SIZE's initial value; we never raise it, so no peer frame may be larger.
pub const MAX_FRAME: u32 = 16_384;

pub const DATA: u8 = 0x0;
pub const HEADERS: u8 = 0x1;
pub const PRIORITY: u8 = 0x2;
pub const RST_STREAM: u8 = 0x3;
pub const SETTINGS: u8 = 0x4;
pub const PUSH_PROMISE: u8 = 0x5;
pub const PING: u8 = 0x6;
pub const GOAWAY: u8 = 0x7;
pub const WINDOW_UPDATE: u8 = 0x8;
pub const CONTINUATION: u8 = 0x9;

pub const END_STREAM: u8 = 0x1;
pub const ACK: u8 = 0x1;
pub const END_HEADERS: u8 = 0x4;
pub const PADDED: u8 = 0x8;
pub const PRIORITY_FLAG: u8 = 0x20;

/// SETTINGS parameters (RFC 9113 §6.5.2).
pub const SETTINGS_HEADER_TABLE_SIZE: u16 = 0x1;
pub const SETTINGS_ENABLE_PUSH: u16 = 0x2;
pub const SETTINGS_MAX_CONCURRENT_STREAMS: u16 = 0x3;
pub const SETTINGS_INITIAL_WINDOW_SIZE: u16 = 0x4;
pub const SETTINGS_MAX_FRAME_SIZE: u16 = 0x5;
pub const SETTINGS_MAX_HEADER_LIST_SIZE: u16 = 0x6;

/// Error codes (RFC 9113 §7).
pub const NO_ERROR: u32 = 0x0;
pub const PROTOCOL_ERROR: u32 = 0x1;
pub const STREAM_CLOSED: u32 = 0x5;
pub const FLOW_CONTROL_ERROR: u32 = 0x3;
pub const FRAME_SIZE_ERROR: u32 = 0x6;
pub const REFUSED_STREAM: u32 = 0x7;
pub const CANCEL: u32 = 0x8;
pub const ENHANCE_YOUR_CALM: u32 = 0xb;

/// Largest flow-control window (2^31 - 1).
pub const MAX_WINDOW: u32 = 0x7fff_ffff;

/// A frame as the connection needs it. Payload slices borrow the decoder's input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A piece of a DATA frame's payload (`len` bytes, padding included: it counts against
    /// flow control). `end_stream` is set on the frame's last piece when the flag is.
    /// `padding`: on a padded frame's first piece, the bytes of the whole frame that are not
    /// data (the pad length byte and the padding); 0 otherwise.
    Data {
        stream: u32,
        len: u32,
        end_stream: bool,
        padding: u32,
        /// The piece's data bytes, padding excluded (for a reader that keeps the body).
        data: &'a [u8],
    },
    /// A header block fragment, padding and priority fields removed.
    Headers {
        stream: u32,
        end_stream: bool,
        end_headers: bool,
        block: &'a [u8],
    },
    Continuation {
        stream: u32,
        end_headers: bool,
        block: &'a [u8],
    },
    RstStream {
        stream: u32,
        code: u32,
    },
    /// `params`: 6-byte (id, value) pairs; read them with [`settings`].
    Settings {
        ack: bool,
        params: &'a [u8],
    },
    PushPromise {
        stream: u32,
    },
    Ping {
        ack: bool,
        data: [u8; 8],
    },
    Goaway {
        last_stream: u32,
        code: u32,
    },
    WindowUpdate {
        stream: u32,
        increment: u32,
    },
    /// PRIORITY and unknown types: read and ignored (RFC 9113 §4.1, §5.5).
    Ignored,
}

/// A malformed frame: a connection error (RFC 9113 §5.4.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// Larger than SETTINGS_MAX_FRAME_SIZE, or a fixed-size frame of the wrong size.
    Size,
    /// A frame on the wrong stream, padding longer than the payload, a zero increment, ...
    Protocol(&'static str),
}

impl FrameError {
    pub fn code(self) -> u32 {
        match self {
            FrameError::Size => FRAME_SIZE_ERROR,
            FrameError::Protocol(_) => PROTOCOL_ERROR,
        }
    }
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::Size => f.write_str("frame size error"),
            FrameError::Protocol(what) => f.write_str(what),
        }
    }
}

/// Iterates the (id, value) pairs of a SETTINGS payload (its length was checked).
pub fn settings(params: &[u8]) -> impl Iterator<Item = (u16, u32)> + '_ {
    params.chunks_exact(6).map(|p| {
        (
            u16::from_be_bytes([p[0], p[1]]),
            u32::from_be_bytes([p[2], p[3], p[4], p[5]]),
        )
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Head {
    len: u32,
    kind: u8,
    flags: u8,
    stream: u32,
}

fn head(b: &[u8]) -> Head {
    Head {
        len: u32::from_be_bytes([0, b[0], b[1], b[2]]),
        kind: b[3],
        flags: b[4],
        // The reserved bit is ignored on receipt (RFC 9113 §4.1).
        stream: u32::from_be_bytes([b[5], b[6], b[7], b[8]]) & MAX_WINDOW,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Collecting the 9-byte frame header.
    Head,
    /// Streaming a DATA payload: `left` bytes to go, the last `pad` of which are padding
    /// (known from the frame's first byte when it is padded).
    Data { head: Head, left: u32, pad: u32 },
    /// Collecting a whole non-DATA payload.
    Payload(Head),
}

/// Incremental frame decoder for one connection.
#[derive(Debug)]
pub struct Decoder {
    state: State,
    /// The frame header or a non-DATA payload so far, when it arrived split across reads.
    partial: Vec<u8>,
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new()
    }
}

impl Decoder {
    pub fn new() -> Decoder {
        Decoder {
            state: State::Head,
            partial: Vec::new(),
        }
    }

    /// Decodes every complete frame (and every piece of DATA) in `input`, calling `on` for
    /// each; keeps what is left for the next call. `on` returning false stops decoding (the
    /// connection failed): the decoder must not be fed again.
    pub fn feed(
        &mut self,
        mut input: &[u8],
        mut on: impl FnMut(Frame<'_>) -> bool,
    ) -> Result<(), FrameError> {
        while !input.is_empty() {
            match self.state {
                State::Head => {
                    let (h, rest) = if self.partial.is_empty() && input.len() >= HEAD_LEN {
                        (head(&input[..HEAD_LEN]), &input[HEAD_LEN..])
                    } else {
                        let take = (HEAD_LEN - self.partial.len()).min(input.len());
                        self.partial.extend_from_slice(&input[..take]);
                        input = &input[take..];
                        if self.partial.len() < HEAD_LEN {
                            return Ok(());
                        }
                        let h = head(&self.partial);
                        self.partial.clear();
                        (h, input)
                    };
                    input = rest;
                    if h.len > MAX_FRAME {
                        return Err(FrameError::Size);
                    }
                    if h.kind == DATA {
                        if h.stream == 0 {
                            return Err(FrameError::Protocol("DATA on stream 0"));
                        }
                        if h.len == 0 && h.flags & PADDED != 0 {
                            return Err(FrameError::Protocol("padded DATA without a pad length"));
                        }
                        self.state = State::Data {
                            head: h,
                            left: h.len,
                            pad: 0,
                        };
                        if h.len == 0 && !on(data(h, 0, true, 0, &[])) {
                            return Ok(());
                        }
                        if h.len == 0 {
                            self.state = State::Head;
                        }
                    } else if h.len == 0 {
                        if !on(parse(h, &[])?) {
                            return Ok(());
                        }
                    } else {
                        self.state = State::Payload(h);
                    }
                }
                State::Data {
                    head: h,
                    left,
                    mut pad,
                } => {
                    // A padded frame's first byte is its pad length, which must leave room
                    // for itself within the frame (RFC 9113 §6.1).
                    let padded = h.flags & PADDED != 0;
                    let padding = if left == h.len && padded {
                        pad = u32::from(input[0]);
                        if pad >= h.len {
                            return Err(FrameError::Protocol("padding longer than the frame"));
                        }
                        pad + 1
                    } else {
                        0
                    };
                    let n = left.min(u32::try_from(input.len()).unwrap_or(u32::MAX));
                    // The piece covers the frame's bytes [at, at + n); its data are those
                    // past the pad length byte and before the padding.
                    let at = h.len - left;
                    let from = at.max(u32::from(padded));
                    let to = (at + n).min(h.len - pad);
                    let bytes = if from < to {
                        &input[(from - at) as usize..(to - at) as usize]
                    } else {
                        &[]
                    };
                    input = &input[n as usize..];
                    let last = n == left;
                    self.state = if last {
                        State::Head
                    } else {
                        State::Data {
                            head: h,
                            left: left - n,
                            pad,
                        }
                    };
                    if !on(data(h, n, last, padding, bytes)) {
                        return Ok(());
                    }
                }
                State::Payload(h) => {
                    let len = h.len as usize;
                    let frame_bytes;
                    if self.partial.is_empty() && input.len() >= len {
                        frame_bytes = &input[..len];
                        input = &input[len..];
                    } else {
                        let take = (len - self.partial.len()).min(input.len());
                        self.partial.extend_from_slice(&input[..take]);
                        input = &input[take..];
                        if self.partial.len() < len {
                            return Ok(());
                        }
                        frame_bytes = &self.partial;
                    }
                    let frame = parse(h, frame_bytes)?;
                    let go = on(frame);
                    self.partial.clear();
                    self.state = State::Head;
                    if !go {
                        return Ok(());
                    }
                }
            }
        }
        Ok(())
    }
}

fn data(h: Head, len: u32, last: bool, padding: u32, data: &[u8]) -> Frame<'_> {
    Frame::Data {
        stream: h.stream,
        len,
        end_stream: last && h.flags & END_STREAM != 0,
        padding,
        data,
    }
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// Strips the pad length byte and the padding (RFC 9113 §6.1).
fn unpad(flags: u8, p: &[u8]) -> Result<&[u8], FrameError> {
    if flags & PADDED == 0 {
        return Ok(p);
    }
    let Some((&pad, rest)) = p.split_first() else {
        return Err(FrameError::Size);
    };
    rest.len()
        .checked_sub(pad as usize)
        .map(|end| &rest[..end])
        .ok_or(FrameError::Protocol("padding longer than the frame"))
}

/// Parses one complete non-DATA frame.
fn parse(h: Head, p: &[u8]) -> Result<Frame<'_>, FrameError> {
    let on_stream = |what| {
        if h.stream == 0 {
            Err(FrameError::Protocol(what))
        } else {
            Ok(h.stream)
        }
    };
    let on_conn = |what| {
        if h.stream != 0 {
            Err(FrameError::Protocol(what))
        } else {
            Ok(())
        }
    };
    Ok(match h.kind {
        HEADERS => {
            let stream = on_stream("HEADERS on stream 0")?;
            let mut block = unpad(h.flags, p)?;
            if h.flags & PRIORITY_FLAG != 0 {
                block = block.get(5..).ok_or(FrameError::Size)?;
            }
            Frame::Headers {
                stream,
                end_stream: h.flags & END_STREAM != 0,
                end_headers: h.flags & END_HEADERS != 0,
                block,
            }
        }
        CONTINUATION => Frame::Continuation {
            stream: on_stream("CONTINUATION on stream 0")?,
            end_headers: h.flags & END_HEADERS != 0,
            block: p,
        },
        PRIORITY => {
            on_stream("PRIORITY on stream 0")?;
            if p.len() != 5 {
                return Err(FrameError::Size);
            }
            Frame::Ignored
        }
        RST_STREAM => {
            let stream = on_stream("RST_STREAM on stream 0")?;
            if p.len() != 4 {
                return Err(FrameError::Size);
            }
            Frame::RstStream {
                stream,
                code: be32(p),
            }
        }
        SETTINGS => {
            on_conn("SETTINGS on a stream")?;
            let ack = h.flags & ACK != 0;
            if p.len() % 6 != 0 || (ack && !p.is_empty()) {
                return Err(FrameError::Size);
            }
            Frame::Settings { ack, params: p }
        }
        PUSH_PROMISE => Frame::PushPromise {
            stream: on_stream("PUSH_PROMISE on stream 0")?,
        },
        PING => {
            on_conn("PING on a stream")?;
            let data: [u8; 8] = p.try_into().map_err(|_| FrameError::Size)?;
            Frame::Ping {
                ack: h.flags & ACK != 0,
                data,
            }
        }
        GOAWAY => {
            on_conn("GOAWAY on a stream")?;
            if p.len() < 8 {
                return Err(FrameError::Size);
            }
            Frame::Goaway {
                last_stream: be32(p) & MAX_WINDOW,
                code: be32(&p[4..]),
            }
        }
        WINDOW_UPDATE => {
            if p.len() != 4 {
                return Err(FrameError::Size);
            }
            let increment = be32(p) & MAX_WINDOW;
            if increment == 0 {
                return Err(FrameError::Protocol("WINDOW_UPDATE of zero"));
            }
            Frame::WindowUpdate {
                stream: h.stream,
                increment,
            }
        }
        _ => Frame::Ignored,
    })
}

/// Appends a frame header.
pub fn put_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, stream: u32) {
    let len = len as u32;
    out.extend_from_slice(&len.to_be_bytes()[1..]);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&(stream & MAX_WINDOW).to_be_bytes());
}

pub fn put_settings(out: &mut Vec<u8>, params: &[(u16, u32)]) {
    put_head(out, params.len() * 6, SETTINGS, 0, 0);
    for (id, v) in params {
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&v.to_be_bytes());
    }
}

pub fn put_settings_ack(out: &mut Vec<u8>) {
    put_head(out, 0, SETTINGS, ACK, 0);
}

pub fn put_ping_ack(out: &mut Vec<u8>, data: [u8; 8]) {
    put_head(out, 8, PING, ACK, 0);
    out.extend_from_slice(&data);
}

pub fn put_window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    put_head(out, 4, WINDOW_UPDATE, 0, stream);
    out.extend_from_slice(&(increment & MAX_WINDOW).to_be_bytes());
}

pub fn put_rst_stream(out: &mut Vec<u8>, stream: u32, code: u32) {
    put_head(out, 4, RST_STREAM, 0, stream);
    out.extend_from_slice(&code.to_be_bytes());
}

pub fn put_goaway(out: &mut Vec<u8>, last_stream: u32, code: u32) {
    put_head(out, 8, GOAWAY, 0, 0);
    out.extend_from_slice(&(last_stream & MAX_WINDOW).to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}

/// A header block as HEADERS plus as many CONTINUATION frames as `max_frame` requires.
pub fn put_headers(
    out: &mut Vec<u8>,
    stream: u32,
    block: &[u8],
    end_stream: bool,
    max_frame: usize,
) {
    let max_frame = max_frame.max(1);
    let mut chunks = block.chunks(max_frame);
    let first = chunks.next().unwrap_or(&[]);
    let single = block.len() <= max_frame;
    let flags = if end_stream { END_STREAM } else { 0 } | if single { END_HEADERS } else { 0 };
    put_head(out, first.len(), HEADERS, flags, stream);
    out.extend_from_slice(first);
    let rest = block.len().saturating_sub(max_frame);
    let mut done = 0;
    for c in chunks {
        done += c.len();
        let flags = if done == rest { END_HEADERS } else { 0 };
        put_head(out, c.len(), CONTINUATION, flags, stream);
        out.extend_from_slice(c);
    }
}

pub fn put_data(out: &mut Vec<u8>, stream: u32, data: &[u8], end_stream: bool) {
    put_head(
        out,
        data.len(),
        DATA,
        if end_stream { END_STREAM } else { 0 },
        stream,
    );
    out.extend_from_slice(data);
}

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
