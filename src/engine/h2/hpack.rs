//! Header blocks (RFC 7541). Requests are encoded here, once per URL before the run, as
//! literals without indexing (no dynamic table state to keep in step with the server, and the
//! hot path then only copies ready bytes). Responses are decoded with `httlib-hpack`, which
//! keeps the dynamic table the server's encoder drives; every block must go through it, even
//! one we fail, or the table falls out of step for the rest of the connection.

/// The header table size we allow the server's encoder (SETTINGS_HEADER_TABLE_SIZE default).
pub const TABLE_SIZE: usize = 4096;

/// Appends an HPACK integer with an `n`-bit prefix; `first` holds the bits above the prefix.
fn put_int(out: &mut Vec<u8>, first: u8, n: u32, mut v: usize) {
    let max = (1usize << n) - 1;
    if v < max {
        out.push(first | v as u8);
        return;
    }
    out.push(first | max as u8);
    v -= max;
    while v >= 128 {
        out.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    out.push(v as u8);
}

fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    put_int(out, 0, 7, s.len()); // H = 0: raw octets, no Huffman
    out.extend_from_slice(s);
}

/// A literal without indexing whose name is entry `index` of the static table.
fn put_indexed_name(out: &mut Vec<u8>, index: usize, value: &[u8]) {
    put_int(out, 0, 4, index);
    put_str(out, value);
}

/// A literal without indexing with a new name (lower case, as HTTP/2 requires).
fn put_literal(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    out.push(0);
    put_str(out, name.to_ascii_lowercase().as_bytes());
    put_str(out, value);
}

/// Headers HTTP/2 forbids (RFC 9113 §8.2.2) or that become pseudo-headers.
fn dropped(name: &str) -> bool {
    [
        "host",
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "upgrade",
        "te",
        "content-length",
    ]
    .iter()
    .any(|n| name.eq_ignore_ascii_case(n))
}

/// What a request is made of, as the plan resolved it.
#[derive(Debug, Clone, Copy)]
pub struct RequestParts<'a> {
    pub method: &'a str,
    /// "http" or "https".
    pub scheme: &'a str,
    pub authority: &'a str,
    pub path: &'a str,
    pub headers: &'a [(String, String)],
    pub body_len: Option<usize>,
}

/// Encodes a request's header block: the pseudo-headers, then the user's headers (a `Host`
/// header becomes `:authority`), then the same defaults the HTTP/1.1 rendering adds.
pub fn encode_request(r: &RequestParts<'_>) -> Vec<u8> {
    let has = |name: &str| r.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    let mut out = Vec::with_capacity(128);
    // Static table entries (RFC 7541 Appendix A): 2 `:method GET`, 3 `:method POST`,
    // 6 `:scheme http`, 7 `:scheme https`, 1 `:authority`, 4 `:path`.
    match r.method {
        "GET" => out.push(0x82),
        "POST" => out.push(0x83),
        m => put_indexed_name(&mut out, 2, m.as_bytes()),
    }
    match r.scheme {
        "https" => out.push(0x87),
        _ => out.push(0x86),
    }
    let host = r
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("host"))
        .map_or(r.authority, |(_, v)| v.as_str());
    put_indexed_name(&mut out, 1, host.as_bytes());
    put_indexed_name(&mut out, 4, r.path.as_bytes());
    if !has("user-agent") {
        put_indexed_name(
            &mut out,
            58,
            concat!("overload/", env!("CARGO_PKG_VERSION")).as_bytes(),
        );
    }
    if !has("accept") {
        put_indexed_name(&mut out, 19, b"*/*");
    }
    for (n, v) in r.headers {
        if !dropped(n) {
            put_literal(&mut out, n, v.as_bytes());
        }
    }
    match r.body_len {
        Some(n) => put_indexed_name(&mut out, 28, n.to_string().as_bytes()),
        None if matches!(r.method, "POST" | "PUT" | "PATCH") => {
            put_indexed_name(&mut out, 28, b"0")
        }
        None => {}
    }
    out
}

/// Why a response header block was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockError {
    /// Not valid HPACK: the dynamic table is now unknown, a connection error.
    Compression,
    /// Valid HPACK, but no valid `:status`, or larger than we accept: the stream fails.
    Malformed,
    TooLarge,
}

/// Reads an HPACK integer with an `n`-bit prefix at `b[i..]`: (value, end), or None when it
/// is cut off or longer than 5 bytes (what the decoder accepts).
fn int_at(b: &[u8], mut i: usize, n: u32) -> Option<(usize, usize)> {
    let mask = (1usize << n) - 1;
    let mut v = usize::from(*b.get(i)?) & mask;
    i += 1;
    if v < mask {
        return Some((v, i));
    }
    for k in 0..4 {
        let byte = *b.get(i)?;
        i += 1;
        v += usize::from(byte & 0x7f) << (7 * k);
        if byte & 0x80 == 0 {
            return Some((v, i));
        }
    }
    None
}

/// Every representation of the block is complete: its integers and string lengths stay
/// inside the block (RFC 7541 §6).
fn well_formed(b: &[u8]) -> bool {
    let mut i = 0;
    while i < b.len() {
        let first = b[i];
        // (prefix bits, strings that follow: a new name and a value, or just a value)
        let (prefix, strings) = match first {
            f if f & 0x80 != 0 => (7, 0),
            f if f & 0x40 != 0 => (6, if f & 0x3f == 0 { 2 } else { 1 }),
            f if f & 0x20 != 0 => (5, 0),
            f => (4, if f & 0x0f == 0 { 2 } else { 1 }),
        };
        let Some((_, next)) = int_at(b, i, prefix) else {
            return false;
        };
        i = next;
        for _ in 0..strings {
            let Some((len, start)) = int_at(b, i, 7) else {
                return false;
            };
            if len > b.len() - start {
                return false;
            }
            i = start + len;
        }
    }
    true
}

/// The response headers' decoder, one per connection.
pub struct ResponseDecoder {
    inner: httlib_hpack::Decoder<'static>,
    /// The block being decoded (the crate consumes a `Vec`), reused.
    scratch: Vec<u8>,
    /// Decoded fields (name, value, flags), reused.
    fields: Vec<(Vec<u8>, Vec<u8>, u8)>,
}

impl Default for ResponseDecoder {
    fn default() -> Self {
        ResponseDecoder::new()
    }
}

impl std::fmt::Debug for ResponseDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResponseDecoder")
    }
}

impl ResponseDecoder {
    pub fn new() -> ResponseDecoder {
        ResponseDecoder {
            // A size update above what we advertised is a decoding error, not an allocation.
            inner: httlib_hpack::Decoder::with_dynamic_size(TABLE_SIZE as u32),
            scratch: Vec::new(),
            fields: Vec::new(),
        }
    }

    /// Decodes one complete header block; returns the `:status` (0 for trailers, which have
    /// none). `max_list`: a header list larger than this, as SETTINGS_MAX_HEADER_LIST_SIZE
    /// counts it, is [`BlockError::TooLarge`] (after decoding it all, so the table stays in
    /// step).
    pub fn decode(&mut self, block: &[u8], max_list: usize) -> Result<u16, BlockError> {
        // The crate indexes past the end of a truncated integer or string: checked here first.
        if !well_formed(block) {
            return Err(BlockError::Compression);
        }
        self.scratch.clear();
        self.scratch.extend_from_slice(block);
        self.fields.clear();
        self.inner
            .decode(&mut self.scratch, &mut self.fields)
            .map_err(|_| BlockError::Compression)?;
        let mut status: Option<Option<u16>> = None;
        let mut size = 0usize;
        let mut twice = false;
        for (name, value, _) in &self.fields {
            size += name.len() + value.len() + 32;
            if name == b":status" {
                twice |= status.is_some();
                let v = std::str::from_utf8(value).ok().filter(|v| v.len() == 3);
                status = Some(v.and_then(|v| v.parse::<u16>().ok()).filter(|s| *s >= 100));
            }
        }
        if size > max_list {
            return Err(BlockError::TooLarge);
        }
        match status {
            _ if twice => Err(BlockError::Malformed),
            Some(Some(s)) => Ok(s),
            Some(None) => Err(BlockError::Malformed),
            None => Ok(0),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn parts<'a>(method: &'a str, headers: &'a [(String, String)]) -> RequestParts<'a> {
        RequestParts {
            method,
            scheme: "http",
            authority: "127.0.0.1:8080",
            path: "/a?b=1",
            headers,
            body_len: None,
        }
    }

    /// The encoder's output, read back by an independent decoder, is the request we meant.
    #[test]
    fn requests_decode_to_the_pseudo_headers_then_the_headers() {
        let h = vec![
            ("X-Trace".to_string(), "on".to_string()),
            ("Connection".to_string(), "close".to_string()),
        ];
        let block = encode_request(&parts("GET", &h));
        let got: Vec<(String, String)> = decode_all(&block)
            .into_iter()
            .map(|(n, v)| (String::from_utf8(n).unwrap(), String::from_utf8(v).unwrap()))
            .collect();
        let want: Vec<(String, String)> = [
            (":method", "GET"),
            (":scheme", "http"),
            (":authority", "127.0.0.1:8080"),
            (":path", "/a?b=1"),
            (
                "user-agent",
                concat!("overload/", env!("CARGO_PKG_VERSION")),
            ),
            ("accept", "*/*"),
            ("x-trace", "on"),
        ]
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn host_becomes_authority_and_bodies_carry_their_length() {
        let h = vec![("Host".to_string(), "example.test".to_string())];
        let mut p = parts("PUT", &h);
        p.body_len = Some(300);
        let got = decode_all(&encode_request(&p));
        assert!(got.contains(&(b":method".to_vec(), b"PUT".to_vec())));
        assert!(got.contains(&(b":authority".to_vec(), b"example.test".to_vec())));
        assert!(got.contains(&(b"content-length".to_vec(), b"300".to_vec())));
        assert!(!got.iter().any(|(n, _)| n == b"host"));
    }

    #[test]
    fn long_values_use_multi_byte_lengths() {
        let long = "x".repeat(1000);
        let h = vec![("X-Long".to_string(), long.clone())];
        let got = decode_all(&encode_request(&parts("GET", &h)));
        assert!(got.contains(&(b"x-long".to_vec(), long.into_bytes())));
    }

    /// An independent decoder's reading of a block: (name, value) pairs.
    fn decode_all(block: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut fields = Vec::new();
        httlib_hpack::Decoder::default()
            .decode(&mut block.to_vec(), &mut fields)
            .unwrap();
        fields.into_iter().map(|(n, v, _)| (n, v)).collect()
    }

    /// Encodes with indexing and Huffman, as servers do.
    pub(crate) fn encode_with(
        e: &mut httlib_hpack::Encoder<'_>,
        headers: &[(&[u8], &[u8])],
    ) -> Vec<u8> {
        let mut out = Vec::new();
        for (n, v) in headers {
            let flags = httlib_hpack::Encoder::HUFFMAN_VALUE
                | httlib_hpack::Encoder::WITH_INDEXING
                | httlib_hpack::Encoder::BEST_FORMAT;
            e.encode((n.to_vec(), v.to_vec(), flags), &mut out).unwrap();
        }
        out
    }

    fn block(headers: &[(&[u8], &[u8])]) -> Vec<u8> {
        encode_with(&mut httlib_hpack::Encoder::default(), headers)
    }

    #[test]
    fn responses_yield_their_status_and_keep_the_dynamic_table_in_step() {
        let mut e = httlib_hpack::Encoder::default();
        let mut d = ResponseDecoder::new();
        // The encoder indexes what it sends: the second block refers to the first's entries.
        let first = encode_with(&mut e, &[(b":status", b"200"), (b"server", b"target")]);
        assert_eq!(d.decode(&first, 65536), Ok(200));
        let second = encode_with(&mut e, &[(b":status", b"404"), (b"server", b"target")]);
        assert!(
            second.len() < first.len(),
            "the second block uses the table"
        );
        assert_eq!(d.decode(&second, 65536), Ok(404));
    }

    #[test]
    fn bad_blocks_are_told_apart() {
        let mut d = ResponseDecoder::new();
        assert_eq!(d.decode(&block(&[(b"server", b"x")]), 65536), Ok(0));
        assert_eq!(
            d.decode(&block(&[(b":status", b"2000")]), 65536),
            Err(BlockError::Malformed)
        );
        assert_eq!(
            d.decode(&block(&[(b":status", b"099")]), 65536),
            Err(BlockError::Malformed)
        );
        assert_eq!(
            d.decode(&block(&[(b":status", b"200"), (b":status", b"200")]), 65536),
            Err(BlockError::Malformed)
        );
        let big = vec![b'v'; 70_000];
        assert_eq!(
            d.decode(&block(&[(b":status", b"200"), (b"x", &big)]), 65536),
            Err(BlockError::TooLarge)
        );
        // An index past both tables.
        assert_eq!(d.decode(&[0xff, 0x7f], 65536), Err(BlockError::Compression));
        // Cut off: a multi-byte integer, a name that never comes, a value shorter than said
        // (the crate would index past the end of these: refused before it sees them).
        for cut in [
            &[0xff, 0x80][..],
            &[0x40],
            &[0x40, 0x01],
            &[0x04, 0x85, b'a'],
            &[0x3f],
        ] {
            assert_eq!(
                d.decode(cut, 65536),
                Err(BlockError::Compression),
                "{cut:?}"
            );
        }
    }
}
