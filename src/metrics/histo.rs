//! The response-time histogram: its bounds, the statistics read from it, and its
//! (de)serialization for the results folder (V2 + deflate, then base64, so a step's full
//! distribution fits on its JSON line and can be merged later). A leaf: the recorder, the
//! summary and the per-name statistics all build on it.
use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// One hour in microseconds: the longest response time a histogram holds (longer ones are
/// recorded as this).
pub(super) const MAX_US: u64 = 3_600_000_000;

/// A response-time histogram in microseconds, 3 significant digits.
pub(crate) fn new_hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_US, 3).expect("static histogram bounds are valid")
}

/// Latency statistics in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    /// Absent from results written before p95 was added: read as 0.
    #[serde(default)]
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub count: u64,
}

impl LatencyStats {
    /// From a histogram of microseconds.
    pub fn from_hist(h: &Histogram<u64>) -> LatencyStats {
        if h.is_empty() {
            return LatencyStats::default();
        }
        let ms = |v: u64| v as f64 / 1000.0;
        LatencyStats {
            mean: h.mean() / 1000.0,
            p50: ms(h.value_at_quantile(0.50)),
            p90: ms(h.value_at_quantile(0.90)),
            p95: ms(h.value_at_quantile(0.95)),
            p99: ms(h.value_at_quantile(0.99)),
            p999: ms(h.value_at_quantile(0.999)),
            max: ms(h.max()),
            count: h.len(),
        }
    }
}

pub fn encode(h: &Histogram<u64>) -> String {
    let mut buf = Vec::new();
    match V2DeflateSerializer::new().serialize(h, &mut buf) {
        Ok(_) => base64::engine::general_purpose::STANDARD.encode(&buf),
        Err(_) => String::new(),
    }
}

/// None for an empty or corrupt string (see [`try_decode`] for why).
pub fn decode(s: &str) -> Option<Histogram<u64>> {
    try_decode(s).ok()
}

/// The most counters a decoded histogram may have: 512 KiB of them. overload's own hold
/// 23,552 (1 µs to an hour, 3 digits) and a request name's 3,328 (2 digits); HdrHistogram's
/// header can claim up to 6.3 million (49 MB) in a few bytes, which a results folder or an
/// agent's answer must not be able to make us allocate.
pub const MAX_BINS: u64 = 1 << 16;

/// HdrHistogram's V2 encoding, plain and deflated: their first four bytes (the base cookie
/// with the word size, 8 bytes, in bits 4-7 as the Java implementation writes it).
const V2_COOKIE: u32 = 0x1c84_9303 | 0x10;
const V2_DEFLATE_COOKIE: u32 = 0x1c84_9304 | 0x10;
/// A V2 header: cookie, payload length, normalizing offset, digits (u32 each), lowest and
/// highest value (u64 each), integer-to-double ratio (f64).
const V2_HEADER: usize = 40;
/// A counter takes at most 9 bytes in V2's LEB128 payload.
const MAX_BYTES_PER_BIN: u64 = 9;

/// Decodes a stored histogram (base64 of HdrHistogram's V2, deflated or not), bounded before
/// anything is allocated: the header's claimed range and digits must fit [`MAX_BINS`]
/// counters, its claimed payload what those counters can take, and the deflated stream may
/// inflate to that and no further (a zlib bomb stops there). The error says which bound.
pub fn try_decode(s: &str) -> Result<Histogram<u64>, String> {
    if s.is_empty() {
        return Err("empty".into());
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|_| "not base64".to_string())?;
    decode_bytes(bytes)
}

/// [`try_decode`] of the bytes under the base64 (the fuzz target's way in).
pub fn decode_bytes(bytes: Vec<u8>) -> Result<Histogram<u64>, String> {
    let be32 = |b: &[u8], at: usize| -> Result<u32, String> {
        b.get(at..at + 4)
            .map(|x| u32::from_be_bytes([x[0], x[1], x[2], x[3]]))
            .ok_or_else(|| "truncated".to_string())
    };
    let v2 = match be32(&bytes, 0)? {
        V2_COOKIE => {
            let payload = check_header(&bytes)?;
            if (bytes.len() - V2_HEADER) < payload {
                return Err("truncated".into());
            }
            bytes
        }
        V2_DEFLATE_COOKIE => {
            let len = be32(&bytes, 4)? as usize;
            let deflated = &bytes[8..bytes.len().min(8usize.saturating_add(len))];
            let mut z = flate2::read::ZlibDecoder::new(deflated);
            let mut v2 = Vec::with_capacity(V2_HEADER);
            read_up_to(&mut z, &mut v2, V2_HEADER as u64)?;
            let payload = check_header(&v2)?;
            // One byte more than the payload may take tells an honest stream from a bomb.
            read_up_to(&mut z, &mut v2, payload as u64 + 1)?;
            if v2.len() > V2_HEADER + payload {
                return Err(format!(
                    "inflates beyond the {payload} bytes its header announces"
                ));
            }
            v2
        }
        _ => return Err("not an HdrHistogram V2 encoding".into()),
    };
    Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(v2))
        .map_err(|e| e.to_string())
}

/// Appends at most `n` bytes of `r` to `out`.
fn read_up_to(r: &mut impl std::io::Read, out: &mut Vec<u8>, n: u64) -> Result<(), String> {
    use std::io::Read;
    r.take(n)
        .read_to_end(out)
        .map(|_| ())
        .map_err(|e| format!("corrupt deflate stream: {e}"))
}

/// Checks a plain V2 header (the first [`V2_HEADER`] bytes of `b`) against [`MAX_BINS`];
/// returns the payload length it announces.
fn check_header(b: &[u8]) -> Result<usize, String> {
    if b.len() < V2_HEADER {
        return Err("truncated header".into());
    }
    let u32_at = |at: usize| u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let u64_at = |at: usize| u64::from(u32_at(at)) << 32 | u64::from(u32_at(at + 4));
    if u32_at(0) != V2_COOKIE {
        return Err("not an HdrHistogram V2 encoding".into());
    }
    let payload = u64::from(u32_at(4));
    let (digits, low, high) = (u32_at(12), u64_at(16), u64_at(24));
    let bins = bins(low, high, digits)
        .ok_or_else(|| format!("invalid range {low}..{high} with {digits} digits"))?;
    if bins > MAX_BINS {
        return Err(format!(
            "its range {low}..{high} with {digits} digits takes {bins} counters (at most {MAX_BINS})"
        ));
    }
    if payload > bins * MAX_BYTES_PER_BIN {
        return Err(format!(
            "its header announces {payload} bytes for {bins} counters (at most {})",
            bins * MAX_BYTES_PER_BIN
        ));
    }
    Ok(payload as usize)
}

/// How many counters HdrHistogram allocates for a histogram of `low..high` with `digits`
/// significant digits (its own arithmetic, without allocating); None when it would refuse them.
fn bins(low: u64, high: u64, digits: u32) -> Option<u64> {
    if !(1..=u64::MAX / 2).contains(&low) || high < 2 * low || digits > 5 {
        return None;
    }
    let largest = 2 * 10u64.pow(digits);
    // As HdrHistogram computes it, in floating point.
    let unit_magnitude = (low as f64).log2().floor() as u32;
    let sub_bucket_magnitude = 64 - (largest - 1).leading_zeros();
    if unit_magnitude + sub_bucket_magnitude > 63 {
        return None;
    }
    let sub_buckets = 1u64 << sub_bucket_magnitude;
    let mut untrackable = sub_buckets << unit_magnitude;
    let mut buckets = 1u64;
    while untrackable <= high {
        if untrackable > u64::MAX / 2 {
            buckets += 1;
            break;
        }
        untrackable <<= 1;
        buckets += 1;
    }
    Some((buckets + 1) * (sub_buckets / 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for v in [10u64, 200, 3000, 3000, 1_000_000] {
            h.record(v).unwrap();
        }
        let d = decode(&encode(&h)).unwrap();
        assert_eq!(d.len(), 5);
        assert_eq!(d.value_at_quantile(0.5), h.value_at_quantile(0.5));
        assert_eq!(d.max(), h.max());
        assert!(decode("not base64!").is_none());
        assert!(decode("").is_none());
    }

    #[test]
    fn counted_bins_are_hdrhistograms() {
        for (low, high, digits) in [
            (1, MAX_US, 3),
            (1, MAX_US, 2),
            (1, 2, 0),
            (1000, 1 << 40, 4),
            (7, u64::MAX / 2, 5),
            (1, u64::MAX, 1),
            ((1 << 40) + 3, 1 << 62, 3),
        ] {
            let h = Histogram::<u64>::new_with_bounds(low, high, digits).unwrap();
            assert_eq!(
                bins(low, high, u32::from(digits)),
                Some(h.distinct_values() as u64),
                "{low}..{high} {digits}"
            );
        }
        assert_eq!(bins(0, 10, 3), None);
        assert_eq!(bins(1, 10, 6), None);
        assert_eq!(bins(1 << 60, 1 << 62, 5), None);
    }

    /// A V2 header (plain) claiming `payload` bytes for `low..high` with `digits`.
    fn header(payload: u32, digits: u32, low: u64, high: u64) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend(V2_COOKIE.to_be_bytes());
        b.extend(payload.to_be_bytes());
        b.extend(0u32.to_be_bytes());
        b.extend(digits.to_be_bytes());
        b.extend(low.to_be_bytes());
        b.extend(high.to_be_bytes());
        b.extend(1.0f64.to_be_bytes());
        b
    }

    fn deflated(v2: &[u8]) -> String {
        use std::io::Write;
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
        z.write_all(v2).unwrap();
        let z = z.finish().unwrap();
        let mut b = V2_DEFLATE_COOKIE.to_be_bytes().to_vec();
        b.extend((z.len() as u32).to_be_bytes());
        b.extend(z);
        base64::engine::general_purpose::STANDARD.encode(b)
    }

    #[test]
    fn crafted_headers_are_refused_before_allocating() {
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        // The widest range with the most digits: 49 MB of counters from 40 bytes.
        let e = try_decode(&b64(&header(0, 5, 1, u64::MAX / 2))).unwrap_err();
        assert!(e.contains("counters (at most 65536)"), "{e}");
        let e = try_decode(&deflated(&header(0, 5, 1, u64::MAX / 2))).unwrap_err();
        assert!(e.contains("counters (at most 65536)"), "{e}");
        // A 2 GB payload claimed by an honest range: refused, not allocated.
        let e = try_decode(&deflated(&header(u32::MAX >> 1, 3, 1, MAX_US))).unwrap_err();
        assert!(e.contains("announces"), "{e}");
        let e = try_decode(&b64(&header(u32::MAX >> 1, 3, 1, MAX_US))).unwrap_err();
        assert!(e.contains("announces"), "{e}");
        assert!(try_decode(&b64(&header(0, 3, 0, MAX_US))).is_err());
        assert!(try_decode(&b64(&[0x1c, 0x84])).is_err());
    }

    #[test]
    fn a_zlib_bomb_inflates_no_further_than_its_counters() {
        // A payload of zero runs that deflates a thousandfold: 50 MB from 50 KB.
        let mut v2 = header(64, 3, 1, MAX_US);
        v2.extend(std::iter::repeat_n(0u8, 50 << 20));
        let bomb = deflated(&v2);
        assert!(bomb.len() < 200_000, "{}", bomb.len());
        let e = try_decode(&bomb).unwrap_err();
        assert!(e.contains("inflates beyond"), "{e}");
        // An honest histogram still decodes, deflated or plain.
        let mut h = new_hist();
        h.record_n(1234, 5).unwrap();
        assert_eq!(try_decode(&encode(&h)).unwrap().len(), 5);
        let mut plain = Vec::new();
        hdrhistogram::serialization::V2Serializer::new()
            .serialize(&h, &mut plain)
            .unwrap();
        let plain = base64::engine::general_purpose::STANDARD.encode(plain);
        assert_eq!(try_decode(&plain).unwrap().value_at_quantile(0.5), 1234);
    }
}
