//! QPACK field sections (RFC 9204) with a dynamic table of 0: we advertise
//! SETTINGS_QPACK_MAX_TABLE_CAPACITY 0, so the server may only use the static table and
//! literals, and neither side keeps decoder state (no encoder or decoder stream, no blocked
//! streams). Requests are encoded once per URL before the run (as HTTP/2's are); responses
//! are decoded without keeping anything: a reference to the dynamic table is a
//! QPACK_DECOMPRESSION_FAILED connection error. Integers and Huffman strings are HPACK's
//! (`h2/hpack.rs`: the same prefix integers and the same Huffman code, RFC 9204 §4.1).
use crate::engine::h2::hpack::{
    content_length, dropped, huffman, int_at, put_int, status_code, RequestParts,
};

/// Why a field section was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SectionError {
    /// Not valid QPACK, or a reference to a dynamic table we said has no room: the
    /// connection fails (QPACK_DECOMPRESSION_FAILED, RFC 9204 §2.2.3).
    Decompression,
    /// Valid QPACK, but no valid `:status` or a bad content-length: the request fails
    /// (H3_MESSAGE_ERROR).
    Malformed,
    /// Larger than we accept (our SETTINGS_MAX_FIELD_SECTION_SIZE).
    TooLarge,
}

/// The static table (RFC 9204 Appendix A), index 0 first.
pub const STATIC: [(&[u8], &[u8]); 99] = [
    (b":authority", b""),
    (b":path", b"/"),
    (b"age", b"0"),
    (b"content-disposition", b""),
    (b"content-length", b"0"),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"referer", b""),
    (b"set-cookie", b""),
    (b":method", b"CONNECT"),
    (b":method", b"DELETE"),
    (b":method", b"GET"),
    (b":method", b"HEAD"),
    (b":method", b"OPTIONS"),
    (b":method", b"POST"),
    (b":method", b"PUT"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"103"),
    (b":status", b"200"),
    (b":status", b"304"),
    (b":status", b"404"),
    (b":status", b"503"),
    (b"accept", b"*/*"),
    (b"accept", b"application/dns-message"),
    (b"accept-encoding", b"gzip, deflate, br"),
    (b"accept-ranges", b"bytes"),
    (b"access-control-allow-headers", b"cache-control"),
    (b"access-control-allow-headers", b"content-type"),
    (b"access-control-allow-origin", b"*"),
    (b"cache-control", b"max-age=0"),
    (b"cache-control", b"max-age=2592000"),
    (b"cache-control", b"max-age=604800"),
    (b"cache-control", b"no-cache"),
    (b"cache-control", b"no-store"),
    (b"cache-control", b"public, max-age=31536000"),
    (b"content-encoding", b"br"),
    (b"content-encoding", b"gzip"),
    (b"content-type", b"application/dns-message"),
    (b"content-type", b"application/javascript"),
    (b"content-type", b"application/json"),
    (b"content-type", b"application/x-www-form-urlencoded"),
    (b"content-type", b"image/gif"),
    (b"content-type", b"image/jpeg"),
    (b"content-type", b"image/png"),
    (b"content-type", b"text/css"),
    (b"content-type", b"text/html; charset=utf-8"),
    (b"content-type", b"text/plain"),
    (b"content-type", b"text/plain;charset=utf-8"),
    (b"range", b"bytes=0-"),
    (b"strict-transport-security", b"max-age=31536000"),
    (
        b"strict-transport-security",
        b"max-age=31536000; includesubdomains",
    ),
    (
        b"strict-transport-security",
        b"max-age=31536000; includesubdomains; preload",
    ),
    (b"vary", b"accept-encoding"),
    (b"vary", b"origin"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-xss-protection", b"1; mode=block"),
    (b":status", b"100"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"302"),
    (b":status", b"400"),
    (b":status", b"403"),
    (b":status", b"421"),
    (b":status", b"425"),
    (b":status", b"500"),
    (b"accept-language", b""),
    (b"access-control-allow-credentials", b"FALSE"),
    (b"access-control-allow-credentials", b"TRUE"),
    (b"access-control-allow-headers", b"*"),
    (b"access-control-allow-methods", b"get"),
    (b"access-control-allow-methods", b"get, post, options"),
    (b"access-control-allow-methods", b"options"),
    (b"access-control-expose-headers", b"content-length"),
    (b"access-control-request-headers", b"content-type"),
    (b"access-control-request-method", b"get"),
    (b"access-control-request-method", b"post"),
    (b"alt-svc", b"clear"),
    (b"authorization", b""),
    (
        b"content-security-policy",
        b"script-src 'none'; object-src 'none'; base-uri 'none'",
    ),
    (b"early-data", b"1"),
    (b"expect-ct", b""),
    (b"forwarded", b""),
    (b"if-range", b""),
    (b"origin", b""),
    (b"purpose", b"prefetch"),
    (b"server", b""),
    (b"timing-allow-origin", b"*"),
    (b"upgrade-insecure-requests", b"1"),
    (b"user-agent", b""),
    (b"x-forwarded-for", b""),
    (b"x-frame-options", b"deny"),
    (b"x-frame-options", b"sameorigin"),
];

/// An indexed field line of static entry `i` (`11` + 6-bit index, §4.5.2).
fn put_static(out: &mut Vec<u8>, i: usize) {
    put_int(out, 0xc0, 6, i);
}

/// A literal with a static name reference (`01N1` + 4-bit index, §4.5.4), raw value.
fn put_static_name(out: &mut Vec<u8>, i: usize, value: &[u8]) {
    put_int(out, 0x50, 4, i);
    put_int(out, 0, 7, value.len());
    out.extend_from_slice(value);
}

/// A literal with a literal name (`001N H=0` + 3-bit length, §4.5.6), lower case.
fn put_literal(out: &mut Vec<u8>, name: &str, value: &[u8]) {
    put_int(out, 0x20, 3, name.len());
    out.extend(name.bytes().map(|b| b.to_ascii_lowercase()));
    put_int(out, 0, 7, value.len());
    out.extend_from_slice(value);
}

/// Encodes a request's field section: the prefix (Required Insert Count 0, Base 0), the
/// pseudo-headers, the user's headers (`Host` becomes `:authority`; the connection-specific
/// ones HTTP/3 forbids are dropped, as for HTTP/2, RFC 9114 §4.2), then the defaults the
/// HTTP/1.1 rendering adds.
pub fn encode_request(r: &RequestParts<'_>) -> Vec<u8> {
    let has = |name: &str| r.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(&[0, 0]);
    match r.method {
        "GET" => put_static(&mut out, 17),
        "POST" => put_static(&mut out, 20),
        "HEAD" => put_static(&mut out, 18),
        "PUT" => put_static(&mut out, 21),
        "DELETE" => put_static(&mut out, 16),
        "OPTIONS" => put_static(&mut out, 19),
        m => put_static_name(&mut out, 15, m.as_bytes()),
    }
    match r.scheme {
        "https" => put_static(&mut out, 23),
        _ => put_static(&mut out, 22),
    }
    let host = r
        .headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("host"))
        .map_or(r.authority, |(_, v)| v.as_str());
    put_static_name(&mut out, 0, host.as_bytes());
    if r.path == "/" {
        put_static(&mut out, 1);
    } else {
        put_static_name(&mut out, 1, r.path.as_bytes());
    }
    if !has("user-agent") {
        put_static_name(
            &mut out,
            95,
            concat!("overload/", env!("CARGO_PKG_VERSION")).as_bytes(),
        );
    }
    if !has("accept") {
        put_static(&mut out, 29);
    }
    for (n, v) in r.headers {
        if !dropped(n) {
            put_literal(&mut out, n, v.as_bytes());
        }
    }
    match r.body_len {
        Some(n) => put_static_name(&mut out, 4, n.to_string().as_bytes()),
        None if matches!(r.method, "POST" | "PUT" | "PATCH") => put_static(&mut out, 4),
        None => {}
    }
    out
}

/// A string literal whose length has an `n`-bit prefix and whose Huffman flag is bit `n` of
/// its first byte (§4.1.2): raw from the section, or decoded into `scratch`. The length is
/// checked against what is left before anything is decoded, so a huge length costs nothing.
fn string<'a>(
    b: &'a [u8],
    i: &mut usize,
    n: u32,
    scratch: &'a mut Vec<u8>,
) -> Result<&'a [u8], SectionError> {
    use SectionError::Decompression as Bad;
    let coded = b.get(*i).ok_or(Bad)? & (1 << n) != 0;
    let (len, start) = int_at(b, *i, n).ok_or(Bad)?;
    if len > b.len() - start {
        return Err(Bad);
    }
    *i = start + len;
    let raw = &b[start..*i];
    if !coded {
        return Ok(raw);
    }
    scratch.clear();
    huffman(raw, scratch).map_err(|_| Bad)?;
    Ok(scratch)
}

/// A static entry, or the error for an index past the table.
fn entry(i: usize) -> Result<(&'static [u8], &'static [u8]), SectionError> {
    STATIC.get(i).copied().ok_or(SectionError::Decompression)
}

/// Decodes one complete field section, handing `each` every field line (name, value), with
/// `name` and `value` as the reused room for Huffman-decoded strings. Anything that refers
/// to the dynamic table fails: its capacity is 0.
pub fn fields(
    section: &[u8],
    name: &mut Vec<u8>,
    value: &mut Vec<u8>,
    mut each: impl FnMut(&[u8], &[u8]),
) -> Result<(), SectionError> {
    use SectionError::Decompression as Bad;
    // The prefix: Required Insert Count (8-bit prefix) must be 0; the Base (sign + 7 bits)
    // means nothing without a dynamic table but must be well formed.
    let (ric, i) = int_at(section, 0, 8).ok_or(Bad)?;
    if ric != 0 {
        return Err(Bad);
    }
    let (_, mut i) = int_at(section, i, 7).ok_or(Bad)?;
    while i < section.len() {
        let first = section[i];
        if first & 0x80 != 0 {
            // Indexed field line (§4.5.2): T (0x40) set for the static table.
            if first & 0x40 == 0 {
                return Err(Bad);
            }
            let (index, next) = int_at(section, i, 6).ok_or(Bad)?;
            i = next;
            let (n, v) = entry(index)?;
            each(n, v);
        } else if first & 0x40 != 0 {
            // Literal with name reference (§4.5.4): T (0x10) set for the static table.
            if first & 0x10 == 0 {
                return Err(Bad);
            }
            let (index, next) = int_at(section, i, 4).ok_or(Bad)?;
            i = next;
            let (n, _) = entry(index)?;
            let v = string(section, &mut i, 7, value)?;
            each(n, v);
        } else if first & 0x20 != 0 {
            // Literal with literal name (§4.5.6): H at 0x08, 3-bit length.
            let n = string(section, &mut i, 3, name)?;
            let v = string(section, &mut i, 7, value)?;
            each(n, v);
        } else {
            // Post-base indexed (0001) and post-base name reference (0000): dynamic only.
            return Err(Bad);
        }
    }
    Ok(())
}

/// What a response's field section says: its `:status` (0 for trailers, which have none)
/// and its content-length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub status: u16,
    pub length: Option<u64>,
}

/// The response decoder's scratch room, one per connection, reused (no allocation per
/// section once the longest Huffman string was seen).
#[derive(Debug, Default)]
pub struct Decoder {
    name: Vec<u8>,
    value: Vec<u8>,
}

impl Decoder {
    /// Decodes a response field section. `max`: the largest field section (RFC 9114 §4.2.2
    /// counts each field as name + value + 32) we accept.
    pub fn head(&mut self, section: &[u8], max: usize) -> Result<Head, SectionError> {
        self.head_with(section, max, |_, _| {})
    }

    /// [`Decoder::head`], handing `each` every field line too (a scenario user's answer
    /// keeps its headers).
    pub fn head_with(
        &mut self,
        section: &[u8],
        max: usize,
        mut each: impl FnMut(&[u8], &[u8]),
    ) -> Result<Head, SectionError> {
        let mut status: Option<Option<u16>> = None;
        let mut twice = false;
        let mut size = 0usize;
        let mut length: Option<Option<u64>> = None;
        let mut bad_length = false;
        fields(section, &mut self.name, &mut self.value, |n, v| {
            each(n, v);
            size += n.len() + v.len() + 32;
            if n == b":status" {
                twice |= status.is_some();
                status = Some(status_code(v));
            } else if n == b"content-length" {
                let l = content_length(v);
                bad_length |= l.is_none() || length.is_some_and(|x| x != l);
                length = Some(l);
            }
        })?;
        if size > max {
            return Err(SectionError::TooLarge);
        }
        if bad_length || twice {
            return Err(SectionError::Malformed);
        }
        let length = length.flatten();
        match status {
            Some(Some(status)) => Ok(Head { status, length }),
            Some(None) => Err(SectionError::Malformed),
            None => Ok(Head { status: 0, length }),
        }
    }
}

#[cfg(test)]
#[path = "qpack_tests.rs"]
mod tests;
