//! The request side of the codec: the head (parsed by httparse, nothing allocated) reduced to
//! the few facts the server acts on, and the body framing (Content-Length or chunked), whose
//! bytes are read and thrown away.
use super::routes::Route;

/// A request head larger than this is refused (431) rather than buffered without end.
pub(crate) const MAX_HEAD: usize = 64 * 1024;
/// Headers parsed per request; more is refused (431). On the stack: 64 × 32 bytes.
const MAX_HEADERS: usize = 64;
/// Bytes of chunk-size lines and trailers allowed between two data runs of a chunked body.
const MAX_CHUNK_META: usize = 16 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    None,
    Length(u64),
    Chunked,
}

/// What the server keeps of a request head: small and `Copy`, so the read buffer it was parsed
/// from can be reused at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Head {
    /// Bytes the head took in the buffer.
    pub len: usize,
    pub is_head: bool,
    /// HTTP/1.0 (else 1.1): a kept-alive 1.0 connection must be told so in the response.
    pub http10: bool,
    pub keep_alive: bool,
    pub body: Framing,
    pub expect_continue: bool,
    pub route: Route,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reject {
    /// 400: not HTTP/1.x or a framing we cannot trust.
    BadRequest,
    /// 431: the head is too large or has too many headers.
    TooLarge,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Parsed {
    Complete(Head),
    Partial,
    Reject(Reject),
}

/// Parses one request head from the start of `buf`.
pub(crate) fn parse(buf: &[u8]) -> Parsed {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD => {
            return Parsed::Reject(Reject::TooLarge)
        }
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(httparse::Error::TooManyHeaders) => return Parsed::Reject(Reject::TooLarge),
        Err(_) => return Parsed::Reject(Reject::BadRequest),
    };
    let (Some(method), Some(path), Some(version)) = (req.method, req.path, req.version) else {
        return Parsed::Reject(Reject::BadRequest);
    };

    let mut close = false;
    let mut keep = false;
    let mut length: Option<u64> = None;
    let mut chunked = false;
    let mut has_te = false;
    let mut expect_continue = false;
    for h in req.headers.iter() {
        let name = h.name;
        if name.eq_ignore_ascii_case("content-length") {
            let Some(n) = parse_decimal(trim(h.value)) else {
                return Parsed::Reject(Reject::BadRequest);
            };
            // Two different lengths make the framing ambiguous (request smuggling).
            if length.is_some_and(|l| l != n) {
                return Parsed::Reject(Reject::BadRequest);
            }
            length = Some(n);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            has_te = true;
            // Only a final `chunked` coding tells where the body ends (RFC 9112 §6.3).
            chunked = h
                .value
                .rsplit(|&b| b == b',')
                .next()
                .is_some_and(|last| trim(last).eq_ignore_ascii_case(b"chunked"));
        } else if name.eq_ignore_ascii_case("connection") {
            for token in h.value.split(|&b| b == b',') {
                let token = trim(token);
                close |= token.eq_ignore_ascii_case(b"close");
                keep |= token.eq_ignore_ascii_case(b"keep-alive");
            }
        } else if name.eq_ignore_ascii_case("expect") {
            expect_continue = trim(h.value).eq_ignore_ascii_case(b"100-continue");
        }
    }
    let body = match (has_te, chunked, length) {
        // Both framings at once, or a coding we cannot delimit: refuse rather than guess.
        (true, _, Some(_)) | (true, false, _) => return Parsed::Reject(Reject::BadRequest),
        (true, true, None) => Framing::Chunked,
        (false, _, Some(0)) | (false, _, None) => Framing::None,
        (false, _, Some(n)) => Framing::Length(n),
    };
    let http10 = version == 0;
    let keep_alive = if http10 { keep && !close } else { !close };
    Parsed::Complete(Head {
        len,
        is_head: method == "HEAD",
        http10,
        keep_alive,
        body,
        expect_continue: expect_continue && body != Framing::None,
        route: Route::parse(path),
    })
}

fn trim(v: &[u8]) -> &[u8] {
    let start = v
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(v.len());
    let end = v
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |i| i + 1);
    &v[start..end.max(start)]
}

/// Digits only (no sign, no spaces), without overflow.
pub(crate) fn parse_decimal(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 {
        return None;
    }
    v.iter().try_fold(0u64, |acc, &b| {
        if b.is_ascii_digit() {
            acc.checked_mul(10)?.checked_add(u64::from(b - b'0'))
        } else {
            None
        }
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ChunkState {
    /// Reading a chunk-size line: its value so far, digit count, inside an extension.
    Size {
        value: u64,
        digits: u32,
        ext: bool,
    },
    SizeLf {
        value: u64,
    },
    Data(u64),
    DataCr,
    DataLf,
    /// Reading trailer lines; `empty` while the current line has no bytes yet.
    Trailer {
        empty: bool,
    },
    TrailerLf {
        empty: bool,
    },
    Done,
}

/// Incremental decoder that walks a chunked body without keeping it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChunkedDecoder {
    state: ChunkState,
    meta: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MalformedChunk;

impl ChunkedDecoder {
    pub(crate) fn new() -> Self {
        ChunkedDecoder {
            state: ChunkState::Size {
                value: 0,
                digits: 0,
                ext: false,
            },
            meta: 0,
        }
    }

    pub(crate) fn is_done(&self) -> bool {
        self.state == ChunkState::Done
    }

    /// Consumes body bytes from `buf` and returns how many belonged to the body (it stops at
    /// the end of the body, so pipelined bytes after it are left alone).
    pub(crate) fn feed(&mut self, buf: &[u8]) -> Result<usize, MalformedChunk> {
        use ChunkState::*;
        let mut i = 0;
        while i < buf.len() {
            match self.state {
                Done => break,
                Data(n) => {
                    // Skip data in bulk: it is the bulk of the body.
                    let take = n.min((buf.len() - i) as u64);
                    i += take as usize;
                    self.state = if take == n { DataCr } else { Data(n - take) };
                    self.meta = 0;
                    continue;
                }
                _ => {}
            }
            let b = buf[i];
            i += 1;
            self.meta += 1;
            if self.meta > MAX_CHUNK_META {
                return Err(MalformedChunk);
            }
            self.state = match self.state {
                Size { value, digits, ext } => match b {
                    b'\r' if digits > 0 => SizeLf { value },
                    b'\n' if digits > 0 => after_size(value),
                    _ if ext => Size { value, digits, ext },
                    b';' | b' ' | b'\t' if digits > 0 => Size {
                        value,
                        digits,
                        ext: true,
                    },
                    _ => {
                        let d = hex_digit(b).ok_or(MalformedChunk)?;
                        // 16 hex digits fill a u64; more is an absurd chunk.
                        if digits >= 16 {
                            return Err(MalformedChunk);
                        }
                        Size {
                            value: value << 4 | d,
                            digits: digits + 1,
                            ext,
                        }
                    }
                },
                SizeLf { value } if b == b'\n' => after_size(value),
                DataCr if b == b'\r' => DataLf,
                DataCr | DataLf if b == b'\n' => Size {
                    value: 0,
                    digits: 0,
                    ext: false,
                },
                Trailer { empty } if b == b'\r' => TrailerLf { empty },
                Trailer { empty } | TrailerLf { empty } if b == b'\n' => {
                    if empty {
                        Done
                    } else {
                        Trailer { empty: true }
                    }
                }
                Trailer { .. } => Trailer { empty: false },
                _ => return Err(MalformedChunk),
            };
        }
        Ok(i)
    }
}

fn after_size(value: u64) -> ChunkState {
    if value == 0 {
        ChunkState::Trailer { empty: true }
    } else {
        ChunkState::Data(value)
    }
}

fn hex_digit(b: u8) -> Option<u64> {
    match b {
        b'0'..=b'9' => Some(u64::from(b - b'0')),
        b'a'..=b'f' => Some(u64::from(b - b'a' + 10)),
        b'A'..=b'F' => Some(u64::from(b - b'A' + 10)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(raw: &str) -> Head {
        match parse(raw.as_bytes()) {
            Parsed::Complete(h) => h,
            other => panic!("expected a complete head, got {other:?}"),
        }
    }

    #[test]
    fn keep_alive_rules() {
        assert!(head("GET / HTTP/1.1\r\nHost: x\r\n\r\n").keep_alive);
        assert!(!head("GET / HTTP/1.1\r\nConnection: close\r\n\r\n").keep_alive);
        assert!(!head("GET / HTTP/1.0\r\n\r\n").keep_alive);
        let h = head("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n");
        assert!(h.keep_alive && h.http10);
        assert!(!head("GET / HTTP/1.1\r\nConnection: keep-alive, close\r\n\r\n").keep_alive);
    }

    #[test]
    fn framing() {
        assert_eq!(head("GET / HTTP/1.1\r\n\r\n").body, Framing::None);
        assert_eq!(
            head("POST / HTTP/1.1\r\nContent-Length: 12\r\n\r\n").body,
            Framing::Length(12)
        );
        assert_eq!(
            head("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, Chunked\r\n\r\n").body,
            Framing::Chunked
        );
        let bad = [
            "POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
            "NOT HTTP AT ALL\r\n\r\n",
            "GET / HTTP/2.0\r\n\r\n",
        ];
        for raw in bad {
            assert_eq!(
                parse(raw.as_bytes()),
                Parsed::Reject(Reject::BadRequest),
                "{raw:?}"
            );
        }
    }

    #[test]
    fn partial_and_oversized_heads() {
        assert_eq!(parse(b"GET / HTTP/1.1\r\nHost:"), Parsed::Partial);
        assert_eq!(parse(b""), Parsed::Partial);
        let mut big = b"GET / HTTP/1.1\r\nX: ".to_vec();
        big.resize(MAX_HEAD + 10, b'a');
        assert_eq!(parse(&big), Parsed::Reject(Reject::TooLarge));
        let mut many = String::from("GET / HTTP/1.1\r\n");
        for i in 0..100 {
            many.push_str(&format!("X-{i}: y\r\n"));
        }
        many.push_str("\r\n");
        assert_eq!(parse(many.as_bytes()), Parsed::Reject(Reject::TooLarge));
    }

    #[test]
    fn head_length_allows_pipelining() {
        let two = b"GET / HTTP/1.1\r\n\r\nGET /x HTTP/1.1\r\n\r\n";
        let first = head(std::str::from_utf8(two).unwrap_or_default());
        assert_eq!(first.len, 18);
        assert_eq!(first.route, Route::Root);
    }

    #[test]
    fn head_method_and_expect() {
        let h = head("HEAD / HTTP/1.1\r\n\r\n");
        assert!(h.is_head);
        let h = head("PUT / HTTP/1.1\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
        assert!(h.expect_continue && !h.is_head);
        // No body, nothing to continue.
        assert!(!head("GET / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n").expect_continue);
    }

    fn decode_all(body: &[u8]) -> Result<(usize, bool), MalformedChunk> {
        let mut d = ChunkedDecoder::new();
        let n = d.feed(body)?;
        Ok((n, d.is_done()))
    }

    #[test]
    fn chunked_whole_and_split() {
        let body =
            b"5\r\nhello\r\n1a;ext=1\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-T: 1\r\n\r\nNEXT";
        assert_eq!(decode_all(body), Ok((body.len() - 4, true)));
        // Byte by byte gives the same answer.
        let mut d = ChunkedDecoder::new();
        let mut used = 0;
        for b in body.iter() {
            if d.is_done() {
                break;
            }
            used += d.feed(std::slice::from_ref(b)).expect("valid");
        }
        assert!(d.is_done());
        assert_eq!(used, body.len() - 4);
        // Bare LF line ends are tolerated.
        assert_eq!(decode_all(b"3\nabc\n0\n\n"), Ok((9, true)));
        // Incomplete body: not done, everything consumed.
        assert_eq!(decode_all(b"10\r\nabc"), Ok((7, false)));
    }

    #[test]
    fn chunked_malformed() {
        for body in [
            &b"zz\r\nhello\r\n0\r\n\r\n"[..],
            b"\r\n",
            b"5\r\nhelloX\r\n",
            b"11111111111111111\r\n",
            b"5\rX",
        ] {
            assert_eq!(decode_all(body), Err(MalformedChunk), "{body:?}");
        }
        let long_ext = [b"1;".as_slice(), &[b'a'; MAX_CHUNK_META + 1]].concat();
        assert_eq!(decode_all(&long_ext), Err(MalformedChunk));
    }

    #[test]
    fn decimal() {
        assert_eq!(parse_decimal(b"0"), Some(0));
        assert_eq!(parse_decimal(b"18446744073709551615"), None);
        assert_eq!(
            parse_decimal(b"1844674407370955161"),
            Some(1844674407370955161)
        );
        assert_eq!(parse_decimal(b""), None);
        assert_eq!(parse_decimal(b"+1"), None);
    }

    proptest::proptest! {
        // Network input must never panic the parser or the decoder.
        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            let _ = parse(&bytes);
        }

        #[test]
        fn heads_with_random_targets_never_panic(target in "[ -~]{0,64}") {
            let _ = parse(format!("GET {target} HTTP/1.1\r\n\r\n").as_bytes());
        }

        #[test]
        fn chunked_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..512), split in 0usize..512) {
            let mut d = ChunkedDecoder::new();
            let (a, b) = bytes.split_at(split.min(bytes.len()));
            if let Ok(n) = d.feed(a) {
                proptest::prop_assert!(n <= a.len());
                if let Ok(m) = d.feed(b) {
                    proptest::prop_assert!(m <= b.len());
                }
            }
        }
    }
}
