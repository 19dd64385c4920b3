use super::*;

fn decode(section: &[u8]) -> Result<Head, SectionError> {
    Decoder::default().head(section, 64 * 1024)
}

#[test]
fn static_entries_and_literals_decode() {
    // :status 200 (index 25), content-length with a value (name ref 4), a literal name.
    let mut s = vec![
        0,
        0,
        0xc0 | 25,
        0x54,
        2,
        b'4',
        b'2',
        0x23,
        b'f',
        b'o',
        b'o',
        1,
        b'x',
    ];
    assert_eq!(
        decode(&s),
        Ok(Head {
            status: 200,
            length: Some(42)
        })
    );
    // A second :status is malformed; a trailer section has none.
    s.push(0xc0 | 25);
    assert_eq!(decode(&s), Err(SectionError::Malformed));
    assert_eq!(
        decode(&[0, 0, 0x23, b'f', b'o', b'o', 0]).map(|h| h.status),
        Ok(0)
    );
}

#[test]
fn huffman_values_decode_as_in_hpack() {
    // "www.example.com" Huffman coded (RFC 7541 C.4.1), as a literal :status would be too.
    let coded = [
        0xf1, 0xe3, 0xc2, 0xe5, 0xf2, 0x3a, 0x6b, 0xa0, 0xab, 0x90, 0xf4, 0xff,
    ];
    let mut s = vec![0, 0, 0xc0 | 25, 0x50, 0x80 | coded.len() as u8];
    s.extend_from_slice(&coded);
    let mut seen = Vec::new();
    fields(&s, &mut Vec::new(), &mut Vec::new(), |n, v| {
        seen.push((n.to_vec(), v.to_vec()))
    })
    .unwrap();
    assert_eq!(
        seen[1],
        (b":authority".to_vec(), b"www.example.com".to_vec())
    );
    // A Huffman literal name (H at 0x08) and value: "custom-key: custom-value" (C.4.3).
    let mut s = vec![0, 0, 0x28 | 0x07, 0x01];
    s.extend_from_slice(&[0x25, 0xa8, 0x49, 0xe9, 0x5b, 0xa9, 0x7d, 0x7f]);
    s.push(0x80 | 9);
    s.extend_from_slice(&[0x25, 0xa8, 0x49, 0xe9, 0x5b, 0xb8, 0xe8, 0xb4, 0xbf]);
    let mut seen = Vec::new();
    fields(&s, &mut Vec::new(), &mut Vec::new(), |n, v| {
        seen.push((n.to_vec(), v.to_vec()))
    })
    .unwrap();
    assert_eq!(seen, [(b"custom-key".to_vec(), b"custom-value".to_vec())]);
    // Bad padding is a decompression failure.
    assert_eq!(
        decode(&[0, 0, 0x50, 0x81, 0x00]),
        Err(SectionError::Decompression)
    );
}

#[test]
fn the_dynamic_table_is_refused() {
    // Required Insert Count 1; indexed dynamic (T=0); name ref dynamic; post-base forms.
    for s in [
        &[1u8, 0, 0xc0 | 25][..],
        &[0, 0, 0x80],
        &[0, 0, 0x40, 0],
        &[0, 0, 0x10],
        &[0, 0, 0x00, 0],
    ] {
        assert_eq!(decode(s), Err(SectionError::Decompression), "{s:?}");
    }
    // Past the static table's 99 entries.
    assert_eq!(
        decode(&[0, 0, 0xff, 99 - 63]),
        Err(SectionError::Decompression)
    );
}

#[test]
fn truncated_and_oversized_input_fails_without_allocating_its_length() {
    // A literal value claiming 2^28 bytes with 3 present.
    let s = [0, 0, 0x54, 0x7f, 0xff, 0xff, 0xff, 0x7f, 1, 2, 3];
    let mut name = Vec::new();
    let mut value = Vec::new();
    assert_eq!(
        fields(&s, &mut name, &mut value, |_, _| {}),
        Err(SectionError::Decompression)
    );
    assert_eq!(value.capacity(), 0);
    for cut in 0..3 {
        assert_eq!(
            decode(&[0, 0, 0x54, 2, b'4', b'2'][..3 + cut]),
            Err(SectionError::Decompression)
        );
    }
    // Larger than the cap.
    let mut s = vec![0, 0, 0xc0 | 25, 0x23, b'f', b'o', b'o'];
    put_int(&mut s, 0, 7, 300);
    s.extend(std::iter::repeat_n(b'v', 300));
    assert_eq!(
        Decoder::default().head(&s, 200),
        Err(SectionError::TooLarge)
    );
}

#[test]
fn requests_encode_to_what_the_decoder_reads() {
    let headers = vec![("X-Trace".to_string(), "1".to_string())];
    let r = RequestParts {
        method: "PATCH",
        scheme: "https",
        authority: "example.com:8443",
        path: "/a?b=c",
        headers: &headers,
        body_len: Some(3),
    };
    let block = encode_request(&r);
    let mut seen = Vec::new();
    fields(&block, &mut Vec::new(), &mut Vec::new(), |n, v| {
        seen.push(format!(
            "{}={}",
            String::from_utf8_lossy(n),
            String::from_utf8_lossy(v)
        ))
    })
    .unwrap();
    assert_eq!(
        seen,
        [
            ":method=PATCH",
            ":scheme=https",
            ":authority=example.com:8443",
            ":path=/a?b=c",
            concat!("user-agent=overload/", env!("CARGO_PKG_VERSION")),
            "accept=*/*",
            "x-trace=1",
            "content-length=3"
        ]
    );
}
