//! HTTP/1.1 response parsing for the hot path: the head goes through `httparse` (zero-copy),
//! the body is framed (Content-Length, chunked, until close) and counted, never stored.
//!
//! The parser is fed whatever each `read` returned, in any split: a head cut across reads is
//! kept in a small per-connection buffer (allocated when a head comes split, freed once it is
//! parsed), everything else is parsed in place from the thread's shared read buffer.

/// Largest response head accepted; beyond it the response is a protocol error.
pub const MAX_HEAD: usize = 64 * 1024;
/// Most header lines accepted in one response head.
const MAX_HEADERS: usize = 100;
/// Longest chunk-size line (size, extensions) or trailer line accepted.
const MAX_LINE: usize = 8 * 1024;

/// Why a response could not be parsed. Every variant counts as the `protocol` error kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParseError {
    /// The status line or a header line is malformed.
    BadHead,
    /// The head is larger than [`MAX_HEAD`] or has too many header lines.
    HeadTooLarge,
    /// Content-Length is not a number, or there are conflicting values.
    BadContentLength,
    /// A chunk-size line or the CRLF after a chunk is malformed.
    BadChunk,
    /// The server sent bytes after a complete response that nobody asked for.
    UnexpectedData,
    /// A Transfer-Encoding other than chunked (we do not decode compressed framings).
    UnsupportedEncoding,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ParseError::BadHead => "malformed status line or header",
            ParseError::HeadTooLarge => "response head too large",
            ParseError::BadContentLength => "invalid Content-Length",
            ParseError::BadChunk => "malformed chunked encoding",
            ParseError::UnexpectedData => "data after the end of a response",
            ParseError::UnsupportedEncoding => "unsupported Transfer-Encoding",
        })
    }
}

/// A complete response, as far as a load generator cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    /// Bytes of the head (status line and headers), including 1xx heads before it.
    pub head_bytes: u64,
    /// Bytes of the body as framed on the wire (chunk framing included).
    pub body_bytes: u64,
    /// The server will close the connection (or the body ended with the connection).
    pub close: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Reading the hex size, then optional `;ext`, up to LF.
    Size {
        value: u64,
        digits: u32,
        in_ext: bool,
    },
    /// Inside chunk data, this many bytes left.
    Data(u64),
    /// Expecting the CR (or LF) that ends the chunk data.
    DataEnd { seen_cr: bool },
    /// Reading trailer lines after the last chunk; `len` is the current line's length.
    Trailer { len: usize },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Head,
    Length(u64),
    Chunked(Chunk),
    UntilClose,
    Done,
}

/// Incremental parser for one response at a time on one connection.
#[derive(Debug)]
pub struct ResponseParser {
    state: State,
    /// The head so far, when it arrived split across reads.
    head: Vec<u8>,
    head_only: bool,
    status: u16,
    head_bytes: u64,
    body_bytes: u64,
    close: bool,
    line_len: usize,
    /// Scenarios: the head and (up to a limit) the body kept for the user to read; None on
    /// the plain path, which keeps nothing.
    capture: Option<Box<Capture>>,
}

/// What a response kept for its reader: the last head, the body decoded from its framing.
#[derive(Debug, Default)]
pub struct Capture {
    pub head: Vec<u8>,
    pub body: Vec<u8>,
    /// Most body bytes kept (0: the head only); the rest is counted, not kept.
    pub body_limit: usize,
}

impl Capture {
    /// Keeps what the limit leaves room for of the body's next `bytes`.
    pub(in crate::engine) fn body(&mut self, bytes: &[u8]) {
        let room = self.body_limit.saturating_sub(self.body.len());
        self.body.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// Keeps a multiplexed answer's head (HTTP/2, HTTP/3) in HTTP/1.1's form, so that a
    /// scenario user reads every protocol's answers the same way: the status line, then
    /// `fields`, already written as `name: value` lines.
    pub(in crate::engine) fn set_head(&mut self, status: u16, fields: &[u8]) {
        use std::io::Write;
        self.head.clear();
        let _ = write!(self.head, "HTTP/1.1 {status} \r\n");
        self.head.extend_from_slice(fields);
        self.head.extend_from_slice(b"\r\n");
    }

    /// Gives its head and body to `dst` (whose buffers it keeps for the next answer).
    fn hand_over(&mut self, dst: &mut Capture) {
        std::mem::swap(&mut self.head, &mut dst.head);
        std::mem::swap(&mut self.body, &mut dst.body);
        self.head.clear();
        self.body.clear();
    }
}

/// Adds a decoded header field to `out` as an HTTP/1.1 header line; pseudo-headers
/// (`:status`) are the status line's, not lines.
pub(in crate::engine) fn field_line(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    if name.first() == Some(&b':') {
        return;
    }
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
}

/// The answers a multiplexed connection (HTTP/2, HTTP/3) keeps for the slots whose request
/// asked ([`crate::engine::Prepared::capture`]: scenario users), from the stream's start to
/// the worker's [`Captures::hand_over`] once it is done; one entry per slot that used the
/// connection, reused.
#[derive(Debug, Default)]
pub(in crate::engine) struct Captures {
    kept: Vec<(usize, Capture)>,
}

impl Captures {
    /// A stream of `slot` starts: its entry is emptied, to keep up to `limit` body bytes.
    pub fn start(&mut self, slot: usize, limit: usize) {
        let i = match self.kept.iter().position(|(s, _)| *s == slot) {
            Some(i) => i,
            None => {
                self.kept.push((slot, Capture::default()));
                self.kept.len() - 1
            }
        };
        let c = &mut self.kept[i].1;
        c.head.clear();
        c.body.clear();
        c.body_limit = limit;
    }

    pub fn get(&mut self, slot: usize) -> Option<&mut Capture> {
        self.kept
            .iter_mut()
            .find(|(s, _)| *s == slot)
            .map(|(_, c)| c)
    }

    /// The answer kept for `slot` goes to `dst` (the slot's own capture, which the user reads).
    pub fn hand_over(&mut self, slot: usize, dst: &mut Capture) {
        if let Some(c) = self.get(slot) {
            c.hand_over(dst);
        }
    }
}

impl Default for ResponseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl ResponseParser {
    pub fn new() -> Self {
        ResponseParser {
            state: State::Done,
            head: Vec::new(),
            head_only: false,
            status: 0,
            head_bytes: 0,
            body_bytes: 0,
            close: false,
            line_len: 0,
            capture: None,
        }
    }

    /// Keeps the heads and up to `body_limit` body bytes of the following responses (None:
    /// keeps nothing again).
    pub fn set_capture(&mut self, body_limit: Option<usize>) {
        match body_limit {
            None => self.capture = None,
            Some(limit) => self.capture.get_or_insert_with(Box::default).body_limit = limit,
        }
    }

    /// The head and body kept of the last response.
    pub fn captured(&self) -> Option<&Capture> {
        self.capture.as_deref()
    }

    /// Where a multiplexed protocol's answer is handed to (see [`Captures`]).
    pub fn capture_mut(&mut self) -> Option<&mut Capture> {
        self.capture.as_deref_mut()
    }

    /// Prepares for the response to a new request. `head_only` is true for HEAD requests,
    /// whose responses carry no body whatever their headers say.
    pub fn start(&mut self, head_only: bool) {
        self.state = State::Head;
        self.head.clear();
        self.head_only = head_only;
        self.status = 0;
        self.head_bytes = 0;
        self.body_bytes = 0;
        self.close = false;
        self.line_len = 0;
        if let Some(c) = self.capture.as_mut() {
            c.head.clear();
            c.body.clear();
        }
    }

    /// True once some bytes of the current response have arrived.
    pub fn has_partial(&self) -> bool {
        !(self.state == State::Head && self.head.is_empty() && self.head_bytes == 0)
    }

    /// True when the body is delimited by the connection closing.
    pub fn reads_until_close(&self) -> bool {
        self.state == State::UntilClose
    }

    /// The connection reached EOF. Returns the response if EOF was its legitimate end.
    pub fn finish_on_eof(&mut self) -> Option<Response> {
        if self.state == State::UntilClose {
            self.state = State::Done;
            self.close = true;
            return Some(self.response());
        }
        None
    }

    fn response(&self) -> Response {
        Response {
            status: self.status,
            head_bytes: self.head_bytes,
            body_bytes: self.body_bytes,
            close: self.close,
        }
    }

    /// Feeds bytes read from the socket. Returns how many were consumed and the response if it
    /// completed. Bytes left after a complete response are the caller's to judge.
    pub fn feed(&mut self, data: &[u8]) -> Result<(usize, Option<Response>), ParseError> {
        let mut pos = 0;
        loop {
            match self.state {
                State::Done => return Ok((pos, None)),
                State::Head => {
                    pos += self.feed_head(&data[pos..])?;
                    match self.state {
                        State::Done => return Ok((pos, Some(self.response()))),
                        // Incomplete head (all input buffered), or a 1xx consumed.
                        State::Head if pos >= data.len() => return Ok((pos, None)),
                        _ => continue,
                    }
                }
                State::Length(left) => {
                    let n = left.min((data.len() - pos) as u64);
                    if let Some(c) = self.capture.as_mut() {
                        c.body(&data[pos..pos + n as usize]);
                    }
                    pos += n as usize;
                    self.body_bytes += n;
                    if n == left {
                        self.state = State::Done;
                        return Ok((pos, Some(self.response())));
                    }
                    self.state = State::Length(left - n);
                    return Ok((pos, None));
                }
                State::UntilClose => {
                    if let Some(c) = self.capture.as_mut() {
                        c.body(&data[pos..]);
                    }
                    self.body_bytes += (data.len() - pos) as u64;
                    return Ok((data.len(), None));
                }
                State::Chunked(c) => {
                    pos += self.feed_chunked(c, &data[pos..])?;
                    let done = (self.state == State::Done).then(|| self.response());
                    return Ok((pos, done));
                }
            }
        }
    }

    /// Parses the head from `input` (plus what was buffered). Returns bytes of `input` used.
    fn feed_head(&mut self, input: &[u8]) -> Result<usize, ParseError> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut resp = httparse::Response::new(&mut headers);
        let buffered = self.head.len();
        let parsed = if buffered == 0 {
            resp.parse(input)
        } else {
            let room = MAX_HEAD + 1 - buffered;
            let take = input.len().min(room);
            self.head.extend_from_slice(&input[..take]);
            resp.parse(&self.head)
        };
        let head_len = match parsed {
            Ok(httparse::Status::Complete(n)) => n,
            Ok(httparse::Status::Partial) => {
                if buffered == 0 {
                    if input.len() > MAX_HEAD {
                        return Err(ParseError::HeadTooLarge);
                    }
                    self.head.extend_from_slice(input);
                } else if self.head.len() > MAX_HEAD {
                    return Err(ParseError::HeadTooLarge);
                }
                return Ok(input.len());
            }
            Err(httparse::Error::TooManyHeaders) => return Err(ParseError::HeadTooLarge),
            Err(_) => return Err(ParseError::BadHead),
        };
        // The same limit whether the head came in one read or several.
        if head_len > MAX_HEAD {
            return Err(ParseError::HeadTooLarge);
        }
        let used = head_len - buffered;
        let status = resp.code.unwrap_or(0);
        let http10 = resp.version == Some(0);
        // Framing per RFC 9112 §6: chunked wins over Content-Length.
        let mut length: Option<u64> = None;
        let mut chunked = false;
        let mut conn_close = http10;
        for h in resp.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                let v = parse_content_length(h.value).ok_or(ParseError::BadContentLength)?;
                if length.is_some_and(|l| l != v) {
                    return Err(ParseError::BadContentLength);
                }
                length = Some(v);
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                let last = h
                    .value
                    .rsplit(|&b| b == b',')
                    .next()
                    .map(trim_ascii)
                    .unwrap_or(&[]);
                if last.eq_ignore_ascii_case(b"chunked") {
                    chunked = true;
                } else if !last.eq_ignore_ascii_case(b"identity") {
                    return Err(ParseError::UnsupportedEncoding);
                }
            } else if h.name.eq_ignore_ascii_case("connection") {
                for token in h.value.split(|&b| b == b',').map(trim_ascii) {
                    if token.eq_ignore_ascii_case(b"close") {
                        conn_close = true;
                    } else if token.eq_ignore_ascii_case(b"keep-alive") && http10 {
                        conn_close = false;
                    }
                }
            }
        }
        self.head_bytes += head_len as u64;
        if let Some(c) = self.capture.as_mut() {
            // The last head wins: a 1xx head is replaced by the final one.
            c.head.clear();
            if buffered == 0 {
                c.head.extend_from_slice(&input[..head_len]);
            } else {
                c.head.extend_from_slice(&self.head[..head_len]);
            }
        }
        // The copy of a split head goes once parsed: an idle connection holds no buffer.
        self.head = Vec::new();
        if (100..200).contains(&status) && status != 101 {
            // Interim response: the final one follows on the same connection.
            return Ok(used);
        }
        self.status = status;
        self.close = conn_close;
        self.state =
            if self.head_only || status == 204 || status == 304 || (100..200).contains(&status) {
                State::Done
            } else if chunked {
                State::Chunked(Chunk::Size {
                    value: 0,
                    digits: 0,
                    in_ext: false,
                })
            } else if let Some(n) = length {
                if n == 0 {
                    State::Done
                } else {
                    State::Length(n)
                }
            } else {
                self.close = true;
                State::UntilClose
            };
        Ok(used)
    }

    /// Advances the chunked decoder over `input`; returns bytes used.
    fn feed_chunked(&mut self, mut c: Chunk, input: &[u8]) -> Result<usize, ParseError> {
        let mut i = 0;
        while i < input.len() {
            if let Chunk::Data(left) = c {
                // Chunk data in bulk; the framing around it byte by byte below.
                let n = left.min((input.len() - i) as u64);
                if let Some(cap) = self.capture.as_mut() {
                    cap.body(&input[i..i + n as usize]);
                }
                i += n as usize;
                self.body_bytes += n;
                c = if n == left {
                    Chunk::DataEnd { seen_cr: false }
                } else {
                    Chunk::Data(left - n)
                };
                continue;
            }
            let b = input[i];
            i += 1;
            self.body_bytes += 1;
            match c {
                Chunk::Size {
                    value,
                    digits,
                    in_ext,
                } => {
                    self.line_len += 1;
                    if self.line_len > MAX_LINE {
                        return Err(ParseError::BadChunk);
                    }
                    if b == b'\n' {
                        if digits == 0 {
                            return Err(ParseError::BadChunk);
                        }
                        self.line_len = 0;
                        c = if value == 0 {
                            Chunk::Trailer { len: 0 }
                        } else {
                            Chunk::Data(value)
                        };
                    } else if in_ext || b == b'\r' {
                        // Extensions are skipped; a CR is only allowed right before LF,
                        // which the LF branch accepts.
                        c = Chunk::Size {
                            value,
                            digits,
                            in_ext: true,
                        };
                    } else if b == b';' || b == b' ' || b == b'\t' {
                        if digits == 0 {
                            return Err(ParseError::BadChunk);
                        }
                        c = Chunk::Size {
                            value,
                            digits,
                            in_ext: true,
                        };
                    } else {
                        let d = (b as char).to_digit(16).ok_or(ParseError::BadChunk)?;
                        if digits >= 15 {
                            return Err(ParseError::BadChunk);
                        }
                        c = Chunk::Size {
                            value: value * 16 + d as u64,
                            digits: digits + 1,
                            in_ext: false,
                        };
                    }
                }
                Chunk::DataEnd { seen_cr } => {
                    if b == b'\r' && !seen_cr {
                        c = Chunk::DataEnd { seen_cr: true };
                    } else if b == b'\n' {
                        c = Chunk::Size {
                            value: 0,
                            digits: 0,
                            in_ext: false,
                        };
                    } else {
                        return Err(ParseError::BadChunk);
                    }
                }
                Chunk::Trailer { len } => {
                    if b == b'\n' {
                        if len == 0 {
                            self.state = State::Done;
                            return Ok(i);
                        }
                        c = Chunk::Trailer { len: 0 };
                    } else if b == b'\r' {
                        c = Chunk::Trailer { len };
                    } else {
                        if len >= MAX_LINE {
                            return Err(ParseError::BadChunk);
                        }
                        c = Chunk::Trailer { len: len + 1 };
                    }
                }
                Chunk::Data(_) => unreachable!("handled above"),
            }
        }
        self.state = State::Chunked(c);
        Ok(i)
    }
}

fn trim_ascii(s: &[u8]) -> &[u8] {
    let start = s
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &s[start..end]
}

fn parse_content_length(v: &[u8]) -> Option<u64> {
    let v = trim_ascii(v);
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A head split across reads is copied aside until it is whole; then the copy is freed,
    /// so an idle kept-alive connection holds no buffer (a million of them would hold a
    /// million heads).
    #[test]
    fn a_split_head_leaves_no_buffer_behind() {
        let mut p = ResponseParser::new();
        p.start(false);
        assert_eq!(p.feed(b"HTTP/1.1 200 OK\r\nContent-Le").unwrap().1, None);
        assert!(p.head.capacity() > 0, "the first part is kept");
        let (_, done) = p.feed(b"ngth: 2\r\n\r\nok").unwrap();
        assert_eq!(done.map(|r| r.status), Some(200));
        assert_eq!(
            p.head.capacity(),
            0,
            "the copy is freed with the head parsed"
        );
    }

    /// Feeds `chunks` one after another; returns the response and leftover byte count.
    fn parse_split(
        chunks: &[&[u8]],
        head_only: bool,
    ) -> Result<Option<(Response, usize)>, ParseError> {
        let mut p = ResponseParser::new();
        p.start(head_only);
        for (i, c) in chunks.iter().enumerate() {
            let (used, done) = p.feed(c)?;
            if let Some(r) = done {
                let rest: usize =
                    c.len() - used + chunks[i + 1..].iter().map(|c| c.len()).sum::<usize>();
                return Ok(Some((r, rest)));
            }
            assert_eq!(used, c.len(), "incomplete response must consume all input");
        }
        Ok(p.finish_on_eof().map(|r| (r, 0)))
    }

    fn parse_whole(data: &[u8]) -> Result<Option<(Response, usize)>, ParseError> {
        parse_split(&[data], false)
    }

    #[test]
    fn content_length() {
        let r = parse_whole(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello")
            .unwrap()
            .unwrap();
        assert_eq!(r.0.status, 200);
        assert_eq!(r.0.body_bytes, 5);
        assert_eq!(r.0.head_bytes, 38);
        assert!(!r.0.close);
        assert_eq!(r.1, 0);
    }

    #[test]
    fn chunked_with_extensions_and_trailers() {
        let msg = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
            5;name=value\r\nhello\r\n6\r\n world\r\n0\r\nX-Trailer: yes\r\nOther: 1\r\n\r\n";
        let (r, rest) = parse_whole(msg).unwrap().unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(rest, 0);
        // The whole body as framed on the wire.
        let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".len();
        assert_eq!(r.body_bytes as usize, msg.len() - head);
    }

    #[test]
    fn chunked_bare_lf_and_uppercase_hex() {
        let msg = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nA\n0123456789\n0\n\n";
        let (r, rest) = parse_whole(msg).unwrap().unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(rest, 0);
    }

    #[test]
    fn malformed_chunks() {
        for bad in [
            &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"[..],
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffff\r\n",
        ] {
            assert_eq!(
                parse_whole(bad).unwrap_err(),
                ParseError::BadChunk,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn connection_close_and_http10() {
        let (r, _) =
            parse_whole(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
                .unwrap()
                .unwrap();
        assert!(r.close);
        let (r, _) = parse_whole(b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")
            .unwrap()
            .unwrap();
        assert!(r.close);
        let (r, _) =
            parse_whole(b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0\r\n\r\n")
                .unwrap()
                .unwrap();
        assert!(!r.close);
    }

    #[test]
    fn body_until_close() {
        let mut p = ResponseParser::new();
        p.start(false);
        let (used, done) = p.feed(b"HTTP/1.1 200 OK\r\n\r\nabc").unwrap();
        assert_eq!(used, 22);
        assert!(done.is_none());
        assert!(p.reads_until_close());
        let r = p.finish_on_eof().unwrap();
        assert_eq!(r.body_bytes, 3);
        assert!(r.close);
    }

    #[test]
    fn no_body_statuses_and_head() {
        for msg in [
            &b"HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n"[..],
            b"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n",
        ] {
            let (r, rest) = parse_whole(msg).unwrap().unwrap();
            assert_eq!(r.body_bytes, 0);
            assert_eq!(rest, 0);
        }
        let (r, _) = parse_split(&[b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"], true)
            .unwrap()
            .unwrap();
        assert_eq!(r.body_bytes, 0);
        assert_eq!(r.status, 200);
    }

    #[test]
    fn interim_1xx_then_final() {
        let msg = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
        let (r, rest) = parse_whole(msg).unwrap().unwrap();
        assert_eq!(r.status, 201);
        assert_eq!(r.body_bytes, 2);
        assert_eq!(r.head_bytes as usize, msg.len() - 2);
        assert_eq!(rest, 0);
    }

    #[test]
    fn leftover_bytes_are_reported() {
        let (_, rest) = parse_whole(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\naEXTRA")
            .unwrap()
            .unwrap();
        assert_eq!(rest, 5);
    }

    #[test]
    fn bad_heads() {
        assert_eq!(
            parse_whole(b"garbage\r\n\r\n").unwrap_err(),
            ParseError::BadHead
        );
        assert_eq!(
            parse_whole(b"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n").unwrap_err(),
            ParseError::BadHead
        );
        assert_eq!(
            parse_whole(b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n").unwrap_err(),
            ParseError::BadContentLength
        );
        assert_eq!(
            parse_whole(b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n")
                .unwrap_err(),
            ParseError::BadContentLength
        );
        assert_eq!(
            parse_whole(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n").unwrap_err(),
            ParseError::UnsupportedEncoding
        );
        let mut big = b"HTTP/1.1 200 OK\r\nX: ".to_vec();
        big.extend(std::iter::repeat_n(b'a', MAX_HEAD + 10));
        assert_eq!(parse_whole(&big).unwrap_err(), ParseError::HeadTooLarge);
        // The same, arriving in small pieces, is caught as well.
        let pieces: Vec<&[u8]> = big.chunks(1000).collect();
        assert_eq!(
            parse_split(&pieces, false).unwrap_err(),
            ParseError::HeadTooLarge
        );
    }

    /// Every split point of every sample parses exactly as the whole message.
    #[test]
    fn split_reads_at_every_byte_boundary() {
        let samples: [&[u8]; 4] = [
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n0\r\nT: 1\r\n\r\n",
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 3\r\n\r\nnop",
            b"HTTP/1.0 200 OK\r\nServer: x\r\n\r\nuntil close",
        ];
        for s in samples {
            let whole = parse_whole(s).unwrap().unwrap();
            for cut in 0..=s.len() {
                let got = parse_split(&[&s[..cut], &s[cut..]], false)
                    .unwrap()
                    .unwrap();
                assert_eq!(
                    got,
                    whole,
                    "cut at {cut} of {:?}",
                    String::from_utf8_lossy(s)
                );
            }
            let bytes: Vec<&[u8]> = s.chunks(1).collect();
            assert_eq!(parse_split(&bytes, false).unwrap().unwrap(), whole);
        }
    }

    #[test]
    fn parser_is_reusable_across_responses() {
        let mut p = ResponseParser::new();
        for _ in 0..3 {
            p.start(false);
            let (_, r) = p
                .feed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .unwrap();
            assert_eq!(r.unwrap().body_bytes, 2);
        }
    }

    /// Scenarios keep the head and the decoded body, in any split, up to the limit; the
    /// plain path keeps nothing.
    #[test]
    fn capture_keeps_head_and_decoded_body() {
        let chunked: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\n\
            Transfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
        for split in 1..chunked.len() {
            let mut p = ResponseParser::new();
            p.set_capture(Some(1024));
            p.start(false);
            let (a, b) = chunked.split_at(split);
            let (used, done) = p.feed(a).unwrap();
            assert_eq!(used, a.len());
            let done = done.or_else(|| p.feed(b).unwrap().1).expect("complete");
            assert_eq!(done.status, 200);
            let c = p.captured().unwrap();
            assert_eq!(c.body, b"hello world", "split at {split}");
            assert!(c
                .head
                .starts_with(b"HTTP/1.1 200 OK\r\nSet-Cookie: a=1\r\n"));
        }
        let mut p = ResponseParser::new();
        p.set_capture(Some(4));
        p.start(false);
        let r = p
            .feed(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789")
            .unwrap();
        assert_eq!(r.1.unwrap().body_bytes, 10, "framing counts every byte");
        assert_eq!(p.captured().unwrap().body, b"0123");
        // The next response starts empty; without capture nothing is kept.
        p.start(false);
        assert!(p.captured().unwrap().body.is_empty());
        p.set_capture(None);
        p.start(false);
        p.feed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nab")
            .unwrap();
        assert!(p.captured().is_none());
    }
}
