//! Prometheus remote-write 1.0: a `WriteRequest` of time series (labels, samples), protobuf
//! encoded, then compressed with snappy's block format (not its framed format), as the
//! receiver requires. The messages are the few remote-write 1.0 defines (prometheus/prompb
//! `remote.proto`, `types.proto`), derived here with prost: no build step, no protoc.
use super::{Frame, Labels};

#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
    #[prost(message, repeated, tag = "3")]
    pub metadata: Vec<MetricMetadata>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    /// Sorted by name, `__name__` among them.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Unix ms.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct MetricMetadata {
    /// 1: counter, 2: gauge (prompb's `MetricType`).
    #[prost(int32, tag = "1")]
    pub r#type: i32,
    #[prost(string, tag = "2")]
    pub metric_family_name: String,
    #[prost(string, tag = "4")]
    pub help: String,
    #[prost(string, tag = "5")]
    pub unit: String,
}

/// The frames as one `WriteRequest`: one series per metric and label set, its samples in
/// time order (the frames come oldest first), the run's labels on every series.
pub fn request(frames: &[Frame], run: &Labels) -> WriteRequest {
    let mut series: Vec<TimeSeries> = Vec::new();
    let mut index: std::collections::HashMap<Vec<(String, String)>, usize> = Default::default();
    let mut metadata: Vec<MetricMetadata> = Vec::new();
    for f in frames {
        for p in &f.points {
            let mut labels: Vec<Label> = std::iter::once(("__name__", p.metric))
                .chain(run.pairs())
                .chain(p.labels.iter().map(|(k, v)| (*k, v.as_str())))
                .map(|(name, value)| Label {
                    name: name.to_string(),
                    value: value.to_string(),
                })
                .collect();
            labels.sort_by(|a, b| a.name.cmp(&b.name));
            let sample = Sample {
                value: p.value,
                timestamp: f.at_ms as i64,
            };
            let key: Vec<(String, String)> = labels
                .iter()
                .map(|l| (l.name.clone(), l.value.clone()))
                .collect();
            match index.get(&key) {
                Some(&i) => series[i].samples.push(sample),
                None => {
                    index.insert(key, series.len());
                    series.push(TimeSeries {
                        labels,
                        samples: vec![sample],
                    });
                }
            }
            if !metadata.iter().any(|m| m.metric_family_name == p.metric) {
                metadata.push(MetricMetadata {
                    r#type: match p.kind {
                        super::frame::Kind::Counter => 1,
                        super::frame::Kind::Gauge => 2,
                    },
                    metric_family_name: p.metric.to_string(),
                    help: p.help.to_string(),
                    unit: String::new(),
                });
            }
        }
    }
    WriteRequest {
        timeseries: series,
        metadata,
    }
}

/// The body of a remote-write POST: the request, protobuf encoded, snappy compressed.
pub fn encode(frames: &[Frame], run: &Labels) -> Vec<u8> {
    let raw = prost::Message::encode_to_vec(&request(frames, run));
    // Compressing a buffer in memory fails only for an input above snappy's 4 GiB limit,
    // which a batch of frames never nears.
    snap::raw::Encoder::new()
        .compress_vec(&raw)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::push::frame::{FrameMaker, Offered, Reading};

    fn labels() -> Labels {
        Labels {
            run: "shop".into(),
            segment: "1/2".into(),
        }
    }

    /// Snappy, then protobuf, decoded back: every point is a series with its run labels,
    /// sorted label names, samples in time order.
    #[test]
    fn encoded_request_decodes_back() {
        let fm = FrameMaker::new(Offered::Rate(100.0), 0, 0);
        let mut r = Reading {
            responses: 10,
            ..Reading::default()
        };
        let a = fm.frame_at(1_000, &r, 0.5);
        r.responses = 25;
        let b = fm.frame_at(2_000, &r, 0.5);
        let body = encode(&[a.clone(), b], &labels());
        let raw = snap::raw::Decoder::new().decompress_vec(&body).unwrap();
        let req: WriteRequest = prost::Message::decode(raw.as_slice()).unwrap();
        assert_eq!(req.timeseries.len(), a.points.len());
        let responses = req
            .timeseries
            .iter()
            .find(|s| {
                s.labels
                    .iter()
                    .any(|l| l.name == "__name__" && l.value == "overload_responses_total")
            })
            .unwrap();
        let names: Vec<_> = responses.labels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["__name__", "run", "segment", "step"]);
        assert_eq!(responses.labels[2].value, "1/2");
        let samples: Vec<_> = responses
            .samples
            .iter()
            .map(|s| (s.timestamp, s.value))
            .collect();
        assert_eq!(samples, [(1_000, 10.0), (2_000, 25.0)]);
        let timeout = req
            .timeseries
            .iter()
            .find(|s| s.labels.iter().any(|l| l.value == "timeout"))
            .unwrap();
        assert!(timeout.labels.windows(2).all(|w| w[0].name < w[1].name));
        let meta = req
            .metadata
            .iter()
            .find(|m| m.metric_family_name == "overload_responses_total")
            .unwrap();
        assert_eq!(meta.r#type, 1);
    }
}
