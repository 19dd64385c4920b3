//! HdrHistogram (de)serialization for the results folder: V2 + deflate, then base64, so a
//! step's full response-time distribution fits on its JSON line and can be merged later.
use base64::Engine;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

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
