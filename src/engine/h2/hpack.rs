//! Header blocks (RFC 7541). Requests are encoded here, once per URL before the run, as
//! literals without indexing (no dynamic table state to keep in step with the server, and the
//! hot path then only copies ready bytes). Responses are decoded here too, without an
//! allocation per block: the static and dynamic tables (the one the server's encoder drives),
//! integers, strings, and Huffman codes read as the canonical code they are; every block must go
//! through the decoder, even one we fail, or its table falls out of step for the rest of the
//! connection.

/// The header table size we allow the server's encoder (SETTINGS_HEADER_TABLE_SIZE default).
pub const TABLE_SIZE: usize = 4096;

/// Appends an HPACK integer with an `n`-bit prefix; `first` holds the bits above the prefix.
pub(in crate::engine) fn put_int(out: &mut Vec<u8>, first: u8, n: u32, mut v: usize) {
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
pub(in crate::engine) fn dropped(name: &str) -> bool {
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
pub(in crate::engine) fn int_at(b: &[u8], mut i: usize, n: u32) -> Option<(usize, usize)> {
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

/// The static table (RFC 7541 Appendix A): entry `i` is index `i + 1`.
const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// What an entry costs in the table (RFC 7541 §4.1): its octets plus 32.
fn entry_size(name: &[u8], value: &[u8]) -> usize {
    name.len() + value.len() + 32
}

/// The dynamic table, without an allocation after its creation: entries' octets lie end to
/// end in `bytes` (oldest first), and `entries` holds (offset, name length, value length),
/// newest at the back. Live octets never exceed the table's size, so with twice that room a
/// compaction (moving the live octets to the front) is needed at most once per table-full of
/// insertions, and `bytes` never grows.
struct Table {
    bytes: Vec<u8>,
    entries: std::collections::VecDeque<(usize, usize, usize)>,
    /// The RFC's size of the entries (octets + 32 each).
    size: usize,
    /// The current maximum (the encoder's last size update), at most `limit`.
    max: usize,
    /// What we allow the encoder (SETTINGS_HEADER_TABLE_SIZE).
    limit: usize,
}

impl Table {
    fn new(limit: usize) -> Table {
        Table {
            bytes: Vec::with_capacity(2 * limit),
            entries: std::collections::VecDeque::with_capacity(limit / 32 + 1),
            size: 0,
            max: limit,
            limit,
        }
    }

    /// Entry `i` counting from the newest (0).
    fn get(&self, i: usize) -> Option<(&[u8], &[u8])> {
        let &(at, n, v) = self.entries.get(self.entries.len().checked_sub(i + 1)?)?;
        Some((&self.bytes[at..at + n], &self.bytes[at + n..at + n + v]))
    }

    fn evict_to(&mut self, max: usize) {
        while self.size > max {
            let Some((_, n, v)) = self.entries.pop_front() else {
                break;
            };
            self.size -= n + v + 32;
        }
        if self.entries.is_empty() {
            self.bytes.clear();
        }
    }

    /// A dynamic table size update: above what we allow is a decoding error (§6.3).
    fn resize(&mut self, max: usize) -> Result<(), BlockError> {
        if max > self.limit {
            return Err(BlockError::Compression);
        }
        self.max = max;
        self.evict_to(max);
        Ok(())
    }

    /// Adds an entry, evicting the oldest to make room; one larger than the whole table
    /// empties it and is not added (§4.4).
    fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = entry_size(name, value);
        self.evict_to(self.max.saturating_sub(size));
        if size > self.max {
            return;
        }
        let len = name.len() + value.len();
        if self.bytes.len() + len > self.bytes.capacity() {
            let first = self.entries.front().map_or(self.bytes.len(), |e| e.0);
            self.bytes.drain(..first);
            for e in &mut self.entries {
                e.0 -= first;
            }
        }
        self.entries
            .push_back((self.bytes.len(), name.len(), value.len()));
        self.bytes.extend_from_slice(name);
        self.bytes.extend_from_slice(value);
        self.size += size;
    }
}

/// One field from the static table (1..=61) or the dynamic one (62..).
fn indexed(table: &Table, i: usize) -> Result<(&[u8], &[u8]), BlockError> {
    match i {
        0 => Err(BlockError::Compression),
        1..=61 => Ok(STATIC[i - 1]),
        _ => table.get(i - 62).ok_or(BlockError::Compression),
    }
}

/// The Huffman code of RFC 7541 Appendix B, (length, code) per symbol (from `httlib-huffman`;
/// symbol 256 is EOS). The code is canonical (checked below, at compile time): the codes of
/// one length are consecutive numbers, in symbol order, so a code is found by comparing the
/// next bits with each length's last code, not by walking a tree.
const CODES: &[(u8, u32); 257] = &httlib_huffman::encoder::table::ENCODE_TABLE;
const LONGEST: usize = 30;

/// The decoding tables, built from [`CODES`] at compile time. `limit[l]`: one past the last
/// code of length `l`, left-justified in 32 bits (a window below it holds a code of length
/// `l` or shorter); `first[l]`, `offset[l]`: the first code of length `l` and its symbol's
/// place in `symbols` (sorted by length, then symbol). `fast`: per first byte, the symbol
/// and length of a code of 8 bits or fewer that it starts with (length 0: a longer code):
/// the characters of header values (letters, digits, punctuation) nearly all have one.
struct Canonical {
    limit: [u64; LONGEST + 1],
    first: [u32; LONGEST + 1],
    offset: [u16; LONGEST + 1],
    symbols: [u16; 257],
    fast: [(u16, u8); 256],
}

const fn canonical() -> Canonical {
    let mut count = [0u32; LONGEST + 1];
    let mut s = 0;
    while s < 257 {
        count[CODES[s].0 as usize] += 1;
        s += 1;
    }
    let mut first = [0u32; LONGEST + 1];
    let mut offset = [0u16; LONGEST + 1];
    let mut limit = [0u64; LONGEST + 1];
    let (mut code, mut at) = (0u32, 0u16);
    let mut l = 1;
    while l <= LONGEST {
        code = (code + count[l - 1]) << 1;
        first[l] = code;
        offset[l] = at;
        at += count[l] as u16;
        limit[l] = ((code + count[l]) as u64) << (32 - l);
        l += 1;
    }
    // The code is complete (every 30-bit string starts with a code): the last limit is 2^32.
    assert!(limit[LONGEST] == 1 << 32);
    let mut symbols = [0u16; 257];
    let mut fast = [(0u16, 0u8); 256];
    let mut seen = [0u32; LONGEST + 1];
    let mut s = 0;
    while s < 257 {
        let (len, code) = (CODES[s].0 as usize, CODES[s].1);
        // Canonical: each symbol's code is its length's first plus its rank among them.
        assert!(code == first[len] + seen[len]);
        symbols[offset[len] as usize + seen[len] as usize] = s as u16;
        seen[len] += 1;
        if len <= 8 {
            let lead = (code as usize) << (8 - len);
            let mut j = 0;
            while j < 1 << (8 - len) {
                fast[lead + j] = (s as u16, len as u8);
                j += 1;
            }
        }
        s += 1;
    }
    Canonical {
        limit,
        first,
        offset,
        symbols,
        fast,
    }
}

static HUFFMAN: Canonical = canonical();

/// The symbol and code length that the left-justified bits of `acc` start with (the bits
/// past the input are zeros: a code found longer than what is left is no code).
#[inline]
fn symbol_at(acc: u64) -> (u16, u32) {
    let t = &HUFFMAN;
    let (sym, len) = t.fast[(acc >> 56) as usize];
    if len != 0 {
        return (sym, u32::from(len));
    }
    let window = acc >> 32;
    let mut l = 9;
    // Ends by l = 30 at the latest: its limit is 2^32, above every window.
    while window >= t.limit[l] {
        l += 1;
    }
    let rank = (window >> (32 - l)) as u32 - t.first[l];
    (
        t.symbols[usize::from(t.offset[l]) + rank as usize],
        l as u32,
    )
}

/// Appends the Huffman-decoded `src` to `out`. The padding must be at most 7 bits, all 1s (a
/// prefix of EOS), and EOS itself must not appear (§5.2).
pub(in crate::engine) fn huffman(src: &[u8], out: &mut Vec<u8>) -> Result<(), BlockError> {
    // A code is 5 bits or more: this is room for every symbol.
    out.reserve(src.len() * 8 / 5);
    // The bits not yet decoded, left-justified, and how many there are.
    let mut acc = 0u64;
    let mut bits = 0u32;
    let mut next = src.iter();
    loop {
        // At least 57 bits (above the longest code) unless the input ends first.
        while bits <= 56 {
            match next.next() {
                Some(&b) => {
                    acc |= u64::from(b) << (56 - bits);
                    bits += 8;
                }
                None => break,
            }
        }
        if bits == 0 {
            return Ok(());
        }
        let (sym, len) = symbol_at(acc);
        if len > bits {
            break; // the input ended inside a code: padding, checked below
        }
        out.push(u8::try_from(sym).map_err(|_| BlockError::Compression)?); // 256: EOS
        acc <<= len;
        bits -= len;
    }
    if bits > 7 || acc >> (64 - bits) != (1 << bits) - 1 {
        return Err(BlockError::Compression);
    }
    Ok(())
}

/// The string literal at `b[*i..]` (§5.2), raw from the block or Huffman-decoded into
/// `scratch`; `*i` moves past it.
fn string<'a>(
    b: &'a [u8],
    i: &mut usize,
    scratch: &'a mut Vec<u8>,
) -> Result<&'a [u8], BlockError> {
    let coded = b.get(*i).ok_or(BlockError::Compression)? & 0x80 != 0;
    let (len, start) = int_at(b, *i, 7).ok_or(BlockError::Compression)?;
    if len > b.len() - start {
        return Err(BlockError::Compression);
    }
    *i = start + len;
    let raw = &b[start..*i];
    if !coded {
        return Ok(raw);
    }
    scratch.clear();
    huffman(raw, scratch)?;
    Ok(scratch)
}

/// A `:status` value: three digits, 100 or more.
pub(in crate::engine) fn status_code(v: &[u8]) -> Option<u16> {
    match *v {
        [a, b, c] if v.iter().all(u8::is_ascii_digit) => {
            let s = [a, b, c]
                .iter()
                .fold(0u16, |s, d| s * 10 + u16::from(d - b'0'));
            (s >= 100).then_some(s)
        }
        _ => None,
    }
}

/// The response headers' decoder, one per connection: the dynamic table the server's encoder
/// drives, and room for Huffman-decoded strings. Both are reused, so a block decodes without
/// an allocation once the connection has seen its longest header (the engine reads only
/// `:status` and the sizes: no field is kept). Every block must go through it, even one we
/// fail, or the table falls out of step for the rest of the connection.
pub struct ResponseDecoder {
    table: Table,
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Default for ResponseDecoder {
    fn default() -> Self {
        ResponseDecoder::new()
    }
}

impl std::fmt::Debug for ResponseDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResponseDecoder")
            .field("entries", &self.table.entries.len())
            .field("size", &self.table.size)
            .finish()
    }
}

impl ResponseDecoder {
    pub fn new() -> ResponseDecoder {
        ResponseDecoder::with_table_size(TABLE_SIZE)
    }

    /// A decoder whose encoder may use a table of `limit` octets (SETTINGS_HEADER_TABLE_SIZE).
    fn with_table_size(limit: usize) -> ResponseDecoder {
        ResponseDecoder {
            table: Table::new(limit),
            name: Vec::with_capacity(64),
            value: Vec::with_capacity(256),
        }
    }

    /// Decodes one complete header block, handing `each` every field in order (name, value),
    /// and updates the dynamic table as the block says.
    pub fn fields(
        &mut self,
        block: &[u8],
        mut each: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), BlockError> {
        use BlockError::Compression as Bad;
        let ResponseDecoder { table, name, value } = self;
        let mut i = 0;
        let mut any_field = false;
        while i < block.len() {
            let first = block[i];
            if first & 0x80 != 0 {
                // Indexed field (§6.1).
                let (index, next) = int_at(block, i, 7).ok_or(Bad)?;
                i = next;
                let (n, v) = indexed(table, index)?;
                each(n, v);
            } else if first & 0xe0 == 0x20 {
                // Dynamic table size update (§6.3): only before the block's first field (§4.2).
                if any_field {
                    return Err(Bad);
                }
                let (max, next) = int_at(block, i, 5).ok_or(Bad)?;
                i = next;
                table.resize(max)?;
                continue;
            } else {
                // Literal (§6.2): with incremental indexing (01, 6-bit index), without
                // indexing (0000) or never indexed (0001, 4-bit index); index 0: a new name.
                let add = first & 0x40 != 0;
                let (index, next) = int_at(block, i, if add { 6 } else { 4 }).ok_or(Bad)?;
                i = next;
                if index == 0 {
                    let n = string(block, &mut i, name)?;
                    let v = string(block, &mut i, value)?;
                    each(n, v);
                    if add {
                        table.insert(n, v);
                    }
                } else if add {
                    // The insertion may evict the very entry that names it (§4.4): copied.
                    let (n, _) = indexed(table, index)?;
                    name.clear();
                    name.extend_from_slice(n);
                    let v = string(block, &mut i, value)?;
                    each(name, v);
                    table.insert(name, v);
                } else {
                    let (n, _) = indexed(table, index)?;
                    let v = string(block, &mut i, value)?;
                    each(n, v);
                }
            }
            any_field = true;
        }
        Ok(())
    }

    /// Decodes one complete header block; returns the `:status` (0 for trailers, which have
    /// none). `max_list`: a header list larger than this, as SETTINGS_MAX_HEADER_LIST_SIZE
    /// counts it, is [`BlockError::TooLarge`] (after decoding it all, so the table stays in
    /// step).
    pub fn decode(&mut self, block: &[u8], max_list: usize) -> Result<u16, BlockError> {
        self.decode_head(block, max_list).map(|(status, _)| status)
    }

    /// [`ResponseDecoder::decode`], with the block's `content-length` too (RFC 9110 §8.6:
    /// digits only; repeated, the same value): one that is not is [`BlockError::Malformed`].
    pub fn decode_head(
        &mut self,
        block: &[u8],
        max_list: usize,
    ) -> Result<(u16, Option<u64>), BlockError> {
        self.decode_head_with(block, max_list, |_, _| {})
    }

    /// [`ResponseDecoder::decode_head`], handing `each` every field too (a scenario user's
    /// answer keeps its headers).
    pub fn decode_head_with(
        &mut self,
        block: &[u8],
        max_list: usize,
        mut each: impl FnMut(&[u8], &[u8]),
    ) -> Result<(u16, Option<u64>), BlockError> {
        let mut status: Option<Option<u16>> = None;
        let mut size = 0usize;
        let mut twice = false;
        let mut length: Option<Option<u64>> = None;
        let mut bad_length = false;
        self.fields(block, |name, value| {
            each(name, value);
            size += entry_size(name, value);
            if name == b":status" {
                twice |= status.is_some();
                status = Some(status_code(value));
            } else if name == b"content-length" {
                let v = content_length(value);
                bad_length |= v.is_none() || length.is_some_and(|l| l != v);
                length = Some(v);
            }
        })?;
        if size > max_list {
            return Err(BlockError::TooLarge);
        }
        if bad_length {
            return Err(BlockError::Malformed);
        }
        let length = length.flatten();
        match status {
            _ if twice => Err(BlockError::Malformed),
            Some(Some(s)) => Ok((s, length)),
            Some(None) => Err(BlockError::Malformed),
            None => Ok((0, length)),
        }
    }
}

/// A content-length value: 1 to 19 ASCII digits (no sign, no space, fits in u64).
pub(in crate::engine) fn content_length(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 19 || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(v.iter().fold(0u64, |n, d| n * 10 + u64::from(d - b'0')))
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
        // Cut off: a multi-byte integer, a name that never comes, a value shorter than said.
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

    /// Decoded fields, (name, value).
    type Fields = Vec<(Vec<u8>, Vec<u8>)>;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn text(b: &[u8]) -> String {
        String::from_utf8_lossy(b).into_owned()
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    fn fields_of(d: &mut ResponseDecoder, block: &[u8]) -> Result<Fields, BlockError> {
        let mut got = Vec::new();
        d.fields(block, |n, v| got.push((n.to_vec(), v.to_vec())))?;
        Ok(got)
    }

    fn texts(f: Fields) -> Vec<(String, String)> {
        f.iter().map(|(n, v)| (text(n), text(v))).collect()
    }

    /// The dynamic table, newest first, and its size.
    fn table_of(d: &ResponseDecoder) -> (Vec<(String, String)>, usize) {
        let t = &d.table;
        let entries = (0..t.entries.len())
            .map(|i| t.get(i).map(|(n, v)| (text(n), text(v))).unwrap())
            .collect();
        (entries, t.size)
    }

    /// RFC 7541 Appendix C.3 (raw strings) and C.4 (Huffman): three requests on one
    /// connection, each block using the table the previous ones filled.
    #[test]
    fn rfc7541_request_examples() {
        let raw = [
            "8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d",
            "8286 84be 5808 6e6f 2d63 6163 6865",
            "8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65",
        ];
        let huffman = [
            "8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff",
            "8286 84be 5886 a8eb 1064 9cbf",
            "8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf",
        ];
        let auth = (":authority", "www.example.com");
        let nc = ("cache-control", "no-cache");
        let custom = ("custom-key", "custom-value");
        let want = [
            (
                pairs(&[
                    (":method", "GET"),
                    (":scheme", "http"),
                    (":path", "/"),
                    auth,
                ]),
                pairs(&[auth]),
                57,
            ),
            (
                pairs(&[
                    (":method", "GET"),
                    (":scheme", "http"),
                    (":path", "/"),
                    auth,
                    nc,
                ]),
                pairs(&[nc, auth]),
                110,
            ),
            (
                pairs(&[
                    (":method", "GET"),
                    (":scheme", "https"),
                    (":path", "/index.html"),
                    auth,
                    custom,
                ]),
                pairs(&[custom, nc, auth]),
                164,
            ),
        ];
        for blocks in [raw, huffman] {
            let mut d = ResponseDecoder::new();
            for (b, (fields, table, size)) in blocks.iter().zip(&want) {
                assert_eq!(texts(fields_of(&mut d, &hex(b)).unwrap()), *fields, "{b}");
                assert_eq!(table_of(&d), (table.clone(), *size), "{b}");
                // Requests have no :status: decode() reads them as trailers would be read.
            }
        }
    }

    /// RFC 7541 Appendix C.5 (raw) and C.6 (Huffman): three responses with a 256-octet
    /// table, so entries are evicted.
    #[test]
    fn rfc7541_response_examples_with_eviction() {
        let raw = [
            "4803 3330 3258 0770 7269 7661 7465 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 \
             2032 303a 3133 3a32 3120 474d 546e 1768 7474 7073 3a2f 2f77 7777 2e65 7861 6d70 \
             6c65 2e63 6f6d",
            "4803 3330 37c1 c0bf",
            "88c1 611d 4d6f 6e2c 2032 3120 4f63 7420 3230 3133 2032 303a 3133 3a32 3220 474d \
             54c0 5a04 677a 6970 7738 666f 6f3d 4153 444a 4b48 514b 425a 584f 5157 454f 5049 \
             5541 5851 5745 4f49 553b 206d 6178 2d61 6765 3d33 3630 303b 2076 6572 7369 6f6e \
             3d31",
        ];
        let huffman = [
            "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 \
             2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3",
            "4883 640e ffc1 c0bf",
            "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab \
             77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f \
             9587 3160 65c0 03ed 4ee5 b106 3d50 07",
        ];
        let private = ("cache-control", "private");
        let d21 = ("date", "Mon, 21 Oct 2013 20:13:21 GMT");
        let d22 = ("date", "Mon, 21 Oct 2013 20:13:22 GMT");
        let loc = ("location", "https://www.example.com");
        let gzip = ("content-encoding", "gzip");
        let cookie = (
            "set-cookie",
            "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1",
        );
        let want = [
            (
                302,
                pairs(&[(":status", "302"), private, d21, loc]),
                pairs(&[loc, d21, private, (":status", "302")]),
                222,
            ),
            (
                307,
                pairs(&[(":status", "307"), private, d21, loc]),
                pairs(&[(":status", "307"), loc, d21, private]),
                222,
            ),
            (
                200,
                pairs(&[(":status", "200"), private, d22, loc, gzip, cookie]),
                pairs(&[cookie, gzip, d22]),
                215,
            ),
        ];
        for blocks in [raw, huffman] {
            let mut d = ResponseDecoder::with_table_size(256);
            let mut status = ResponseDecoder::with_table_size(256);
            for (b, (code, fields, table, size)) in blocks.iter().zip(&want) {
                assert_eq!(texts(fields_of(&mut d, &hex(b)).unwrap()), *fields, "{b}");
                assert_eq!(table_of(&d), (table.clone(), *size), "{b}");
                assert_eq!(status.decode(&hex(b), 65536), Ok(*code));
            }
        }
    }

    fn huffman_of(s: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        httlib_huffman::encode(s, &mut out).unwrap();
        out
    }

    #[test]
    fn huffman_padding_must_be_short_ones_and_eos_is_refused() {
        let mut out = Vec::new();
        // "a" is 00011 (5 bits): 3 bits of 1s pad it to a byte.
        assert_eq!(huffman(&[0x1f], &mut out), Ok(()));
        assert_eq!(out, b"a");
        for bad in [
            &[0x18][..],               // padded with 0s
            &[0x1f, 0xff],             // 11 bits of padding
            &[0xff, 0xff, 0xff, 0xfc], // EOS (30 ones) itself
            &[0xfe],                   // a code cut off, not all ones
        ] {
            out.clear();
            assert_eq!(
                huffman(bad, &mut out),
                Err(BlockError::Compression),
                "{bad:?}"
            );
        }
        // An empty string; "0" (00000) padded with 3 bits.
        assert_eq!(huffman(&[], &mut out), Ok(()));
        out.clear();
        assert_eq!(huffman(&huffman_of(b"0"), &mut out), Ok(()));
        assert_eq!(out, b"0");
    }

    proptest::proptest! {
        /// Any octets the reference encoder codes decode back to themselves.
        #[test]
        fn huffman_decodes_what_the_reference_encodes(
            s in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)
        ) {
            let mut out = Vec::new();
            proptest::prop_assert_eq!(huffman(&huffman_of(&s), &mut out), Ok(()));
            proptest::prop_assert_eq!(out, s);
        }

        /// Blocks from the reference encoder (indexed, literal with and without indexing,
        /// never indexed, raw and Huffman, the table filling and evicting over a connection)
        /// decode to the fields encoded; the table's storage never grows.
        #[test]
        fn blocks_decode_to_what_the_reference_encoder_encoded(
            blocks in proptest::collection::vec(
                proptest::collection::vec(
                    (
                        proptest::prop_oneof![
                            proptest::strategy::Just(":status".to_string()),
                            proptest::strategy::Just("server".to_string()),
                            proptest::strategy::Just("content-length".to_string()),
                            "[a-z][a-z0-9-]{0,24}",
                        ],
                        proptest::prop_oneof![
                            proptest::strategy::Just(b"200".to_vec()),
                            proptest::strategy::Just(b"nginx".to_vec()),
                            proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400),
                        ],
                        0u8..32,
                    ),
                    1..10,
                ),
                1..16,
            ),
            shrink_to in proptest::option::of(0u32..4096),
        ) {
            let mut e = httlib_hpack::Encoder::default();
            let mut d = ResponseDecoder::new();
            let (cap, slots) = (d.table.bytes.capacity(), d.table.entries.capacity());
            for (k, b) in blocks.iter().enumerate() {
                let mut out = Vec::new();
                if let (1, Some(size)) = (k, shrink_to) {
                    e.update_max_dynamic_size(size, &mut out).unwrap();
                }
                for (n, v, f) in b {
                    use httlib_hpack::Encoder as E;
                    let mut flags = f & (E::HUFFMAN_NAME | E::HUFFMAN_VALUE | E::BEST_FORMAT);
                    flags |= match f >> 3 {
                        0 | 1 => E::WITH_INDEXING,
                        2 => E::NEVER_INDEXED,
                        _ => 0,
                    };
                    e.encode((n.as_bytes().to_vec(), v.clone(), flags), &mut out).unwrap();
                }
                let want: Fields =
                    b.iter().map(|(n, v, _)| (n.as_bytes().to_vec(), v.clone())).collect();
                proptest::prop_assert_eq!(fields_of(&mut d, &out), Ok(want));
            }
            proptest::prop_assert_eq!(d.table.bytes.capacity(), cap);
            proptest::prop_assert_eq!(d.table.entries.capacity(), slots);
            proptest::prop_assert!(d.table.size <= d.table.max);
        }
    }

    #[test]
    fn size_updates_bound_the_table_and_come_first() {
        let mut d = ResponseDecoder::new();
        let mut e = httlib_hpack::Encoder::default();
        let first = encode_with(&mut e, &[(b":status", b"200"), (b"server", b"target")]);
        assert_eq!(d.decode(&first, 65536), Ok(200));
        assert_eq!(d.table.entries.len(), 1, "server: target indexed");
        // Size 0 empties the table: its old entries are gone.
        assert_eq!(d.decode(&[0x20, 0x88], 65536), Ok(200));
        assert_eq!(table_of(&d), (vec![], 0));
        assert_eq!(d.decode(&[0x88, 0xbe], 65536), Err(BlockError::Compression));
        // Back up to the limit, not beyond it; and never after a field.
        assert_eq!(d.decode(&[0x3f, 0xe1, 0x1f, 0x88], 65536), Ok(200));
        assert_eq!(d.table.max, TABLE_SIZE);
        assert_eq!(
            d.decode(&[0x3f, 0xe2, 0x1f, 0x88], 65536),
            Err(BlockError::Compression)
        );
        assert_eq!(d.decode(&[0x88, 0x20], 65536), Err(BlockError::Compression));
    }

    /// An entry larger than the table empties it and is not added (RFC 7541 §4.4), and a
    /// literal naming an entry that its own insertion evicts keeps that name.
    #[test]
    fn oversized_entries_empty_the_table_and_evicted_names_survive() {
        let mut d = ResponseDecoder::with_table_size(64);
        // 0x40: literal with indexing, new name "ab" = "cd" (36 octets with the overhead).
        let small = [0x40, 2, b'a', b'b', 2, b'c', b'd'];
        assert_eq!(
            fields_of(&mut d, &small).map(texts),
            Ok(pairs(&[("ab", "cd")]))
        );
        // 0x7e: literal with indexing, name = index 62 ("ab", which it evicts), value 30 x.
        let mut evicting = vec![0x7e, 30];
        evicting.extend_from_slice(&[b'x'; 30]);
        let want = pairs(&[("ab", &"x".repeat(30))]);
        assert_eq!(fields_of(&mut d, &evicting).map(texts), Ok(want.clone()));
        assert_eq!(table_of(&d), (want, 64));
        let mut huge = vec![0x40, 2, b'a', b'b', 40];
        huge.extend_from_slice(&[b'y'; 40]);
        assert!(fields_of(&mut d, &huge).is_ok());
        assert_eq!(table_of(&d), (vec![], 0));
    }
}
