use super::*;

fn frames(pieces: &[&[u8]], max: usize) -> Result<Vec<String>, FrameError> {
    let mut d = Decoder::new(max);
    let mut got = Vec::new();
    for p in pieces {
        d.feed(p, |f| {
            got.push(format!("{f:?}"));
            true
        })?;
    }
    Ok(got)
}

#[test]
fn varints_round_trip_at_every_length() {
    for v in [
        0,
        63,
        64,
        16_383,
        16_384,
        (1 << 30) - 1,
        1 << 30,
        VARINT_MAX,
    ] {
        let mut b = Vec::new();
        put_varint(&mut b, v);
        assert_eq!(varint(&b), Some((v, b.len())), "{v}");
        assert_eq!(varint(&b[..b.len() - 1]), None, "{v} cut");
    }
    // RFC 9000 §A.1's examples.
    assert_eq!(varint(&[0x9d, 0x7f, 0x3e, 0x7d]), Some((494_878_333, 4)));
    assert_eq!(varint(&[0x7b, 0xbd]), Some((15_293, 2)));
}

#[test]
fn a_response_decodes_the_same_in_every_split() {
    let mut msg = Vec::new();
    put_frame(&mut msg, HEADERS, &[0, 0, 0xd9]);
    put_frame(&mut msg, 0x21, b"grease"); // reserved type 0x1f * N + 0x21: skipped
    put_frame(&mut msg, DATA, b"hello");
    put_frame(&mut msg, DATA, b"");
    put_frame(&mut msg, HEADERS, &[0, 0]);
    let whole = frames(&[&msg], 1024).unwrap();
    assert_eq!(
        whole,
        [
            "Headers([0, 0, 217])",
            "Skipped(33)",
            "Data([104, 101, 108, 108, 111])",
            "Headers([0, 0])"
        ]
    );
    for size in 1..msg.len() {
        let pieces: Vec<&[u8]> = msg.chunks(size).collect();
        let got = frames(&pieces, 1024).unwrap();
        let joined: Vec<String> = got.into_iter().filter(|f| !f.starts_with("Data")).collect();
        assert_eq!(joined.len(), 3, "split {size}");
    }
}

#[test]
fn a_huge_length_prefix_allocates_nothing_and_fails_headers() {
    // HEADERS claiming 2^62 - 1 bytes: refused at its header, nothing reserved.
    let mut msg = Vec::new();
    put_varint(&mut msg, HEADERS);
    put_varint(&mut msg, VARINT_MAX);
    let mut d = Decoder::new(1024);
    assert_eq!(d.feed(&msg, |_| true), Err(FrameError(H3_MESSAGE_ERROR)));
    assert!(d.keep.capacity() <= 1024);
    // DATA of that size is counted as it comes, never kept.
    let mut msg = Vec::new();
    put_varint(&mut msg, DATA);
    put_varint(&mut msg, VARINT_MAX);
    msg.extend_from_slice(&[7; 100]);
    let mut d = Decoder::new(1024);
    let mut n = 0;
    d.feed(&msg, |f| {
        if let Frame::Data(p) = f {
            n += p.len();
        }
        true
    })
    .unwrap();
    assert_eq!((n, d.keep.capacity()), (100, 0));
    assert!(!d.at_boundary());
}

#[test]
fn frames_a_server_may_not_send_fail_the_stream() {
    for ty in [PUSH_PROMISE, 0x02, 0x06, 0x08, 0x09] {
        let mut msg = Vec::new();
        put_frame(&mut msg, ty, b"x");
        assert_eq!(frames(&[&msg], 64), Err(FrameError(H3_FRAME_UNEXPECTED)));
    }
    // A GOAWAY whose payload is not exactly one varint.
    let mut msg = Vec::new();
    put_frame(&mut msg, GOAWAY, &[0x04, 0x00]);
    assert_eq!(frames(&[&msg], 64), Err(FrameError(H3_FRAME_ERROR)));
    let mut msg = Vec::new();
    put_frame(&mut msg, GOAWAY, &[0x44, 0x00]);
    assert_eq!(frames(&[&msg], 64).unwrap(), ["Goaway(1024)"]);
}

#[test]
fn the_request_head_and_the_control_stream_are_well_formed() {
    let head = request_head(&[0, 0, 0xd1], 5);
    let mut d = Decoder::new(64);
    let mut got = Vec::new();
    d.feed(&head, |f| {
        got.push(format!("{f:?}"));
        true
    })
    .unwrap();
    d.feed(b"hello", |f| {
        got.push(format!("{f:?}"));
        true
    })
    .unwrap();
    assert_eq!(
        got,
        ["Headers([0, 0, 209])", "Data([104, 101, 108, 108, 111])"]
    );
    assert!(d.at_boundary());
    let ctl = control_stream(65_536);
    assert_eq!(ctl[0], STREAM_CONTROL as u8);
    let mut d = Decoder::new(64);
    let mut settings = Vec::new();
    d.feed(&ctl[1..], |f| {
        if let Frame::Settings(p) = f {
            settings = p.to_vec();
        }
        true
    })
    .unwrap();
    assert_eq!(check_settings(&settings), Ok(()));
    assert_eq!(&settings[..4], &[0x01, 0x00, 0x07, 0x00]);
}

#[test]
fn settings_twice_or_of_http2_are_refused() {
    assert_eq!(
        check_settings(&[0x01, 0x00, 0x01, 0x00]),
        Err(FrameError(H3_SETTINGS_ERROR))
    );
    assert_eq!(
        check_settings(&[0x02, 0x00]),
        Err(FrameError(H3_SETTINGS_ERROR))
    );
    assert_eq!(check_settings(&[0x06]), Err(FrameError(H3_FRAME_ERROR)));
    assert_eq!(check_settings(&[0x21, 0x05]), Ok(()));
}
