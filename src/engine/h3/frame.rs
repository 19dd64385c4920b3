//! HTTP/3 framing (RFC 9114 §7): QUIC variable-length integers, the frames a client writes
//! (HEADERS, DATA, SETTINGS on its control stream) and a decoder fed the bytes of one
//! stream in whatever pieces QUIC hands them over. The decoder keeps at most one frame
//! header and, for HEADERS and the control stream's small frames, the payload up to a cap:
//! a length prefix is never trusted with an allocation, and DATA is counted, not copied.

/// Frame types (RFC 9114 §7.2).
pub const DATA: u64 = 0x00;
pub const HEADERS: u64 = 0x01;
pub const CANCEL_PUSH: u64 = 0x03;
pub const SETTINGS: u64 = 0x04;
pub const PUSH_PROMISE: u64 = 0x05;
pub const GOAWAY: u64 = 0x07;
pub const MAX_PUSH_ID: u64 = 0x0d;

/// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2).
pub const STREAM_CONTROL: u64 = 0x00;
pub const STREAM_PUSH: u64 = 0x01;
pub const STREAM_QPACK_ENCODER: u64 = 0x02;
pub const STREAM_QPACK_DECODER: u64 = 0x03;

/// Settings we send (RFC 9114 §7.2.4.1, RFC 9204 §5).
pub const SETTINGS_QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
pub const SETTINGS_MAX_FIELD_SECTION_SIZE: u64 = 0x06;
pub const SETTINGS_QPACK_BLOCKED_STREAMS: u64 = 0x07;

/// Error codes (RFC 9114 §8.1, RFC 9204 §6).
pub const H3_NO_ERROR: u64 = 0x100;
pub const H3_GENERAL_PROTOCOL_ERROR: u64 = 0x101;
pub const H3_STREAM_CREATION_ERROR: u64 = 0x103;
pub const H3_CLOSED_CRITICAL_STREAM: u64 = 0x104;
pub const H3_FRAME_UNEXPECTED: u64 = 0x105;
pub const H3_FRAME_ERROR: u64 = 0x106;
pub const H3_ID_ERROR: u64 = 0x108;
pub const H3_SETTINGS_ERROR: u64 = 0x109;
pub const H3_MISSING_SETTINGS: u64 = 0x10a;
pub const H3_REQUEST_REJECTED: u64 = 0x10b;
pub const H3_REQUEST_CANCELLED: u64 = 0x10c;
pub const H3_MESSAGE_ERROR: u64 = 0x10e;
pub const QPACK_DECOMPRESSION_FAILED: u64 = 0x200;

/// The name of an HTTP/3 or QPACK error code, for notes.
pub fn code_name(code: u64) -> Option<&'static str> {
    Some(match code {
        0x100 => "H3_NO_ERROR",
        0x101 => "H3_GENERAL_PROTOCOL_ERROR",
        0x102 => "H3_INTERNAL_ERROR",
        0x103 => "H3_STREAM_CREATION_ERROR",
        0x104 => "H3_CLOSED_CRITICAL_STREAM",
        0x105 => "H3_FRAME_UNEXPECTED",
        0x106 => "H3_FRAME_ERROR",
        0x107 => "H3_EXCESSIVE_LOAD",
        0x108 => "H3_ID_ERROR",
        0x109 => "H3_SETTINGS_ERROR",
        0x10a => "H3_MISSING_SETTINGS",
        0x10b => "H3_REQUEST_REJECTED",
        0x10c => "H3_REQUEST_CANCELLED",
        0x10d => "H3_REQUEST_INCOMPLETE",
        0x10e => "H3_MESSAGE_ERROR",
        0x10f => "H3_CONNECT_ERROR",
        0x110 => "H3_VERSION_FALLBACK",
        0x200 => "QPACK_DECOMPRESSION_FAILED",
        0x201 => "QPACK_ENCODER_STREAM_ERROR",
        0x202 => "QPACK_DECODER_STREAM_ERROR",
        _ => return None,
    })
}

/// Largest value a QUIC varint holds (2^62 - 1).
pub const VARINT_MAX: u64 = (1 << 62) - 1;

/// Appends `v` as a QUIC variable-length integer (RFC 9000 §16), shortest form.
pub fn put_varint(out: &mut Vec<u8>, v: u64) {
    debug_assert!(v <= VARINT_MAX);
    if v < 1 << 6 {
        out.push(v as u8);
    } else if v < 1 << 14 {
        out.extend_from_slice(&(v as u16 | 0x4000).to_be_bytes());
    } else if v < 1 << 30 {
        out.extend_from_slice(&(v as u32 | 0x8000_0000).to_be_bytes());
    } else {
        out.extend_from_slice(&(v | 0xc000_0000_0000_0000).to_be_bytes());
    }
}

/// The varint at the start of `b`: (value, its length), or None when `b` ends inside it.
pub fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let first = *b.first()?;
    let len = 1usize << (first >> 6);
    let bytes = b.get(..len)?;
    let mut v = u64::from(first & 0x3f);
    for &x in &bytes[1..] {
        v = v << 8 | u64::from(x);
    }
    Some((v, len))
}

/// A frame's header and payload appended to `out`.
pub fn put_frame(out: &mut Vec<u8>, ty: u64, payload: &[u8]) {
    put_varint(out, ty);
    put_varint(out, payload.len() as u64);
    out.extend_from_slice(payload);
}

/// The request's first bytes on its stream: its HEADERS frame, then the header of the DATA
/// frame that carries the body, if any (the body follows as it is: one DATA frame).
pub fn request_head(section: &[u8], body_len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(section.len() + 16);
    put_frame(&mut out, HEADERS, section);
    if body_len > 0 {
        put_varint(&mut out, DATA);
        put_varint(&mut out, body_len as u64);
    }
    out
}

/// Our control stream's opening: its stream type and SETTINGS (a dynamic table of 0, no
/// blocked streams, the field section size we accept).
pub fn control_stream(max_field_section: u64) -> Vec<u8> {
    let mut settings = Vec::new();
    for (id, v) in [
        (SETTINGS_QPACK_MAX_TABLE_CAPACITY, 0),
        (SETTINGS_QPACK_BLOCKED_STREAMS, 0),
        (SETTINGS_MAX_FIELD_SECTION_SIZE, max_field_section),
    ] {
        put_varint(&mut settings, id);
        put_varint(&mut settings, v);
    }
    let mut out = Vec::new();
    put_varint(&mut out, STREAM_CONTROL);
    put_frame(&mut out, SETTINGS, &settings);
    out
}

/// Why a stream's bytes were refused: the HTTP/3 error code to close with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameError(pub u64);

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match code_name(self.0) {
            Some(n) => write!(f, "{n}"),
            None => write!(f, "0x{:x}", self.0),
        }
    }
}

/// A frame as the decoder hands it over: DATA as the piece of payload just read (a frame
/// may come in several), the others whole.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    Data(&'a [u8]),
    Headers(&'a [u8]),
    Settings(&'a [u8]),
    Goaway(u64),
    /// A frame type the stream allows and we ignore (unknown and reserved types, §9;
    /// CANCEL_PUSH, MAX_PUSH_ID), skipped without keeping its payload.
    Skipped(u64),
}

/// Where the decoder is in its stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum At {
    /// Reading a frame header (type, length): its bytes so far are in `head`.
    Head,
    /// Reading `left` more payload bytes of a frame of type `ty`.
    Payload { ty: u64, left: u64 },
}

/// Decodes the frames of one stream from its bytes in any pieces.
#[derive(Debug)]
pub struct Decoder {
    at: At,
    head: [u8; 16],
    head_len: usize,
    /// The payload of a frame kept whole (HEADERS, SETTINGS, GOAWAY) while it arrives.
    keep: Vec<u8>,
    /// Largest payload kept: a larger HEADERS or SETTINGS fails the stream.
    max_keep: usize,
}

impl Decoder {
    pub fn new(max_keep: usize) -> Decoder {
        Decoder {
            at: At::Head,
            head: [0; 16],
            head_len: 0,
            keep: Vec::new(),
            max_keep,
        }
    }

    /// Ready for a new stream, keeping the room it has.
    pub fn reset(&mut self) {
        self.at = At::Head;
        self.head_len = 0;
        self.keep.clear();
    }

    /// True between frames (a stream may end only there, §7.1).
    pub fn at_boundary(&self) -> bool {
        self.at == At::Head && self.head_len == 0
    }

    /// Feeds the next bytes of the stream; `each` gets every frame completed (DATA as it
    /// arrives) and may stop the decoding by returning false. Errors: a frame that is too
    /// large to keep or malformed, and the frames no stream of a client carries from a server
    /// (PUSH_PROMISE: we never allow pushes; the HTTP/2 frame types reserved in §7.2.8).
    pub fn feed(
        &mut self,
        mut data: &[u8],
        mut each: impl FnMut(Frame<'_>) -> bool,
    ) -> Result<(), FrameError> {
        while !data.is_empty() {
            match self.at {
                At::Head => {
                    // Frame type and length: two varints of at most 8 bytes each.
                    let take = (self.head.len() - self.head_len).min(data.len());
                    self.head[self.head_len..self.head_len + take].copy_from_slice(&data[..take]);
                    let have = self.head_len + take;
                    let Some((ty, a)) = varint(&self.head[..have]) else {
                        self.head_len = have;
                        data = &data[take..];
                        continue;
                    };
                    let Some((len, b)) = varint(&self.head[a..have]) else {
                        self.head_len = have;
                        data = &data[take..];
                        continue;
                    };
                    // Bytes of `data` past the header are payload.
                    let used = a + b - self.head_len;
                    data = &data[used..];
                    self.head_len = 0;
                    self.begin(ty, len)?;
                    if len == 0 && !self.finish_frame(ty, &mut each)? {
                        return Ok(());
                    }
                }
                At::Payload { ty, left } => {
                    let n = (left.min(data.len() as u64)) as usize;
                    let (piece, rest) = data.split_at(n);
                    data = rest;
                    let left = left - n as u64;
                    self.at = At::Payload { ty, left };
                    if ty == DATA {
                        if n > 0 && !each(Frame::Data(piece)) {
                            if left == 0 {
                                self.at = At::Head;
                            }
                            return Ok(());
                        }
                    } else if kept(ty) {
                        self.keep.extend_from_slice(piece);
                    }
                    if left == 0 && !self.finish_frame(ty, &mut each)? {
                        return Ok(());
                    }
                }
            }
        }
        Ok(())
    }

    /// A frame header was read: check it and get ready for its payload.
    fn begin(&mut self, ty: u64, len: u64) -> Result<(), FrameError> {
        match ty {
            PUSH_PROMISE | 0x02 | 0x06 | 0x08 | 0x09 => {
                return Err(FrameError(H3_FRAME_UNEXPECTED))
            }
            _ if kept(ty) && len > self.max_keep as u64 => {
                return Err(FrameError(if ty == HEADERS {
                    H3_MESSAGE_ERROR
                } else {
                    H3_FRAME_ERROR
                }))
            }
            _ => {}
        }
        self.keep.clear();
        self.at = At::Payload { ty, left: len };
        Ok(())
    }

    /// A frame's payload is complete: hand it over.
    fn finish_frame(
        &mut self,
        ty: u64,
        each: &mut impl FnMut(Frame<'_>) -> bool,
    ) -> Result<bool, FrameError> {
        self.at = At::Head;
        let go = match ty {
            DATA => true,
            HEADERS => each(Frame::Headers(&self.keep)),
            SETTINGS => each(Frame::Settings(&self.keep)),
            GOAWAY => match varint(&self.keep) {
                Some((id, n)) if n == self.keep.len() => each(Frame::Goaway(id)),
                _ => return Err(FrameError(H3_FRAME_ERROR)),
            },
            other => each(Frame::Skipped(other)),
        };
        Ok(go)
    }
}

/// Frames whose payload is kept whole until it is complete.
fn kept(ty: u64) -> bool {
    matches!(ty, HEADERS | SETTINGS | GOAWAY)
}

/// Checks a SETTINGS payload (§7.2.4): pairs of varints, no setting twice, none of HTTP/2's
/// reserved identifiers. Returns the server's SETTINGS_QPACK_MAX_TABLE_CAPACITY etc. only as
/// far as we need them: nothing (we use no dynamic table whatever it allows).
pub fn check_settings(mut p: &[u8]) -> Result<(), FrameError> {
    let mut seen: [u64; 16] = [u64::MAX; 16];
    let mut n = 0;
    while !p.is_empty() {
        let (id, a) = varint(p).ok_or(FrameError(H3_FRAME_ERROR))?;
        let (_, b) = varint(&p[a..]).ok_or(FrameError(H3_FRAME_ERROR))?;
        p = &p[a + b..];
        if matches!(id, 0x02..=0x05) {
            return Err(FrameError(H3_SETTINGS_ERROR));
        }
        if seen[..n.min(16)].contains(&id) {
            return Err(FrameError(H3_SETTINGS_ERROR));
        }
        if n < 16 {
            seen[n] = id;
        }
        n += 1;
    }
    Ok(())
}

#[cfg(test)]
#[path = "frame_tests.rs"]
mod tests;
