//! Micro-benchmarks of the pieces every request goes through in the engine's hot loop: the
//! HTTP/1.1 response parser, the HTTP/2 frame decoder and HPACK response decoding, the
//! recorder, and the arrival schedule. Whole-generator CPU per request against wrk, h2load
//! and the others is measured by the scripts under bench/; these figures say which piece
//! moved when that figure does. Run: `cargo bench --bench hot_path`.
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use overload::engine::h2::frame::Decoder;
use overload::engine::h2::hpack::ResponseDecoder;
use overload::engine::http::ResponseParser;
use overload::engine::pacing::{Arrival, Schedule};
use overload::metrics::recorder::Recorder;
use overload::plan::segment::Lane;

/// nginx's answer for its default index page: the response the bench/ scripts load.
fn nginx_response() -> Vec<u8> {
    let body = vec![b'x'; 615];
    let mut r = format!(
        "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Mon, 23 Nov 2026 07:00:00 GMT\r\n\
         Content-Type: text/html\r\nContent-Length: {}\r\nLast-Modified: Mon, 23 Nov 2026 \
         06:00:00 GMT\r\nConnection: keep-alive\r\nETag: \"5f1a-267\"\r\nAccept-Ranges: \
         bytes\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(&body);
    r
}

/// A PHP page's answer: chunked, as PHP-FPM behind nginx sends a page of unknown length.
fn chunked_response() -> Vec<u8> {
    let mut r = b"HTTP/1.1 200 OK\r\nServer: nginx\r\nContent-Type: text/html; charset=UTF-8\r\n\
                  Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n"
        .to_vec();
    for _ in 0..4 {
        r.extend_from_slice(b"100\r\n");
        r.extend_from_slice(&[b'y'; 256]);
        r.extend_from_slice(b"\r\n");
    }
    r.extend_from_slice(b"0\r\n\r\n");
    r
}

fn http1(c: &mut Criterion) {
    let mut g = c.benchmark_group("http1_response");
    for (name, bytes) in [
        ("content_length", nginx_response()),
        ("chunked", chunked_response()),
    ] {
        g.throughput(Throughput::Elements(1));
        let mut p = ResponseParser::new();
        g.bench_function(format!("{name}/one_read"), |b| {
            b.iter(|| {
                p.start(false);
                let (used, resp) = p.feed(black_box(&bytes)).expect("valid response");
                black_box((used, resp.is_some()))
            })
        });
        // The head split from the body, as a response larger than a read arrives.
        let split = bytes.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 10;
        g.bench_function(format!("{name}/two_reads"), |b| {
            b.iter(|| {
                p.start(false);
                let (n, first) = p.feed(black_box(&bytes[..split])).expect("valid head");
                assert!(first.is_none() && n == split);
                let (_, resp) = p.feed(black_box(&bytes[split..])).expect("valid body");
                black_box(resp.is_some())
            })
        });
    }
    g.finish();
}

/// A HEADERS frame (`:status 200`, content-type, server, content-length) and a DATA frame
/// with the END_STREAM flag, on stream 1.
fn h2_response() -> (Vec<u8>, Vec<u8>) {
    let mut block = vec![0x88]; // indexed: :status 200
    for (index, value) in [(31u8, "text/html"), (54, "nginx"), (28, "615")] {
        // Literal without indexing, indexed name (4-bit prefix; every index here ≥ 15).
        block.push(0x0f);
        block.push(index - 15);
        block.push(value.len() as u8);
        block.extend_from_slice(value.as_bytes());
    }
    let mut frames = Vec::new();
    let head = |out: &mut Vec<u8>, len: usize, kind: u8, flags: u8| {
        out.extend_from_slice(&(len as u32).to_be_bytes()[1..]);
        out.extend_from_slice(&[kind, flags]);
        out.extend_from_slice(&1u32.to_be_bytes());
    };
    head(&mut frames, block.len(), 0x1, 0x4); // HEADERS, END_HEADERS
    frames.extend_from_slice(&block);
    head(&mut frames, 615, 0x0, 0x1); // DATA, END_STREAM
    frames.extend_from_slice(&[b'x'; 615]);
    (frames, block)
}

fn h2(c: &mut Criterion) {
    let (frames, block) = h2_response();
    let mut g = c.benchmark_group("h2_response");
    g.throughput(Throughput::Elements(1));
    let mut d = Decoder::new();
    g.bench_function("frames", |b| {
        b.iter(|| {
            let mut n = 0u32;
            d.feed(black_box(&frames), |_| {
                n += 1;
                true
            })
            .expect("valid frames");
            black_box(n)
        })
    });
    let mut hd = ResponseDecoder::new();
    g.bench_function("hpack_block", |b| {
        b.iter(|| {
            black_box(
                hd.decode(black_box(&block), 16 * 1024)
                    .expect("valid block"),
            )
        })
    });
    g.finish();
}

fn recorder(c: &mut Criterion) {
    let t0 = Instant::now();
    let mut r = Recorder::new(t0, t0, 60);
    let mut i = 0u64;
    c.bench_function("recorder/response", |b| {
        b.iter(|| {
            // Times spread over the minute and a range of values, as a run records them.
            i = (i + 7919) % 60_000_000;
            let intended = t0 + Duration::from_micros(i);
            let written = intended + Duration::from_micros(i % 97);
            let done = written + Duration::from_micros(200 + i % 50_000);
            r.response(200, intended, Duration::ZERO, written, written, done, 860);
        })
    });
}

fn schedule(c: &mut Criterion) {
    let mut g = c.benchmark_group("schedule");
    for (name, arrival) in [
        ("constant", Arrival::Constant),
        ("poisson", Arrival::Poisson),
    ] {
        let lane = Lane {
            offset: 0,
            stride: 1,
        };
        let mut s = Schedule::new(Instant::now(), 100_000.0, arrival, lane, 42);
        g.bench_function(name, |b| {
            b.iter(|| {
                s.advance();
                black_box(s.next())
            })
        });
    }
    g.finish();
}

criterion_group!(benches, http1, h2, recorder, schedule);
criterion_main!(benches);
