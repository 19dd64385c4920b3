//! OpenTelemetry metrics over OTLP/HTTP: an `ExportMetricsServiceRequest` (protobuf, the
//! messages of `opentelemetry-proto`), POSTed to the collector's `/v1/metrics`. Counters
//! are cumulative monotonic sums from the run's start, gauges are gauges; the run's labels
//! are attributes of every data point (as they are labels of every remote-write series), so
//! a collector exporting to Prometheus gives the same series either way.
use super::frame::Kind;
use super::{Frame, Labels};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{
    metric, number_data_point, AggregationTemporality, Gauge, Metric, NumberDataPoint,
    ResourceMetrics, ScopeMetrics, Sum,
};
use opentelemetry_proto::tonic::resource::v1::Resource;

fn kv(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.to_string())),
        }),
        ..Default::default()
    }
}

/// The frames as one export request: one metric per name, its data points in time order.
pub fn request(frames: &[Frame], run: &Labels) -> ExportMetricsServiceRequest {
    let mut metrics: Vec<Metric> = Vec::new();
    for f in frames {
        for p in &f.points {
            let point = NumberDataPoint {
                attributes: run
                    .pairs()
                    .into_iter()
                    .chain(p.labels.iter().map(|(k, v)| (*k, v.as_str())))
                    .map(|(k, v)| kv(k, v))
                    .collect(),
                start_time_unix_nano: f.start_ms * 1_000_000,
                time_unix_nano: f.at_ms * 1_000_000,
                value: Some(number_data_point::Value::AsDouble(p.value)),
                ..Default::default()
            };
            let i = match metrics.iter().position(|m| m.name == p.metric) {
                Some(i) => i,
                None => {
                    let data = match p.kind {
                        Kind::Counter => metric::Data::Sum(Sum {
                            data_points: Vec::new(),
                            aggregation_temporality: AggregationTemporality::Cumulative as i32,
                            is_monotonic: true,
                        }),
                        Kind::Gauge => metric::Data::Gauge(Gauge {
                            data_points: Vec::new(),
                        }),
                    };
                    metrics.push(Metric {
                        name: p.metric.to_string(),
                        description: p.help.to_string(),
                        unit: super::frame::metric(p.metric)
                            .map_or("", |m| m.unit)
                            .to_string(),
                        data: Some(data),
                        ..Default::default()
                    });
                    metrics.len() - 1
                }
            };
            match &mut metrics[i].data {
                Some(metric::Data::Sum(s)) => s.data_points.push(point),
                Some(metric::Data::Gauge(g)) => g.data_points.push(point),
                _ => {}
            }
        }
    }
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: vec![kv("service.name", "overload")],
                ..Default::default()
            }),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(InstrumentationScope {
                    name: "overload".to_string(),
                    version: env!("CARGO_PKG_VERSION").to_string(),
                    ..Default::default()
                }),
                metrics,
                schema_url: String::new(),
            }],
            schema_url: String::new(),
        }],
    }
}

/// The body of an OTLP/HTTP POST (`Content-Type: application/x-protobuf`).
pub fn encode(frames: &[Frame], run: &Labels) -> Vec<u8> {
    prost::Message::encode_to_vec(&request(frames, run))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::push::frame::{FrameMaker, Offered, Reading};

    /// Decoded back with the OTLP messages: a cumulative monotonic sum for the counters
    /// (with the run's start as start time), a gauge for the rest, the run's labels as
    /// attributes of every point.
    #[test]
    fn encoded_export_decodes_back() {
        let fm = FrameMaker::new(Offered::Users(4), 0, 0);
        let r = Reading {
            responses: 7,
            ..Reading::default()
        };
        let f = fm.frame_at(5_000, &r, 0.0);
        let run = Labels {
            run: "shop".into(),
            segment: "0/1".into(),
        };
        let body = encode(&[f], &run);
        let req: ExportMetricsServiceRequest = prost::Message::decode(body.as_slice()).unwrap();
        let metrics = &req.resource_metrics[0].scope_metrics[0].metrics;
        let responses = metrics
            .iter()
            .find(|m| m.name == "overload_responses_total")
            .unwrap();
        let Some(metric::Data::Sum(sum)) = &responses.data else {
            panic!("{responses:?}")
        };
        assert!(sum.is_monotonic);
        assert_eq!(
            sum.aggregation_temporality,
            AggregationTemporality::Cumulative as i32
        );
        let p = &sum.data_points[0];
        assert_eq!(p.value, Some(number_data_point::Value::AsDouble(7.0)));
        assert_eq!(p.time_unix_nano, 5_000_000_000);
        assert!(p.start_time_unix_nano > 0);
        let attrs: Vec<_> = p.attributes.iter().map(|a| a.key.as_str()).collect();
        assert_eq!(attrs, ["run", "segment", "step"]);
        let users = metrics.iter().find(|m| m.name == "overload_users").unwrap();
        assert!(matches!(users.data, Some(metric::Data::Gauge(_))));
    }
}
