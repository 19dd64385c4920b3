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

/// None for an empty or corrupt string.
pub fn decode(s: &str) -> Option<Histogram<u64>> {
    if s.is_empty() {
        return None;
    }
    let bytes = base64::engine::general_purpose::STANDARD.decode(s).ok()?;
    Deserializer::new()
        .deserialize(&mut std::io::Cursor::new(bytes))
        .ok()
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
}
