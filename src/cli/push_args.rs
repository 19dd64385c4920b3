//! `--prometheus-remote-write URL` and `--otlp URL`: the run's figures pushed once a second
//! to the monitoring the operator already runs (`crate::push`, docs/metrics-out.md); every
//! run kind has them (`ViewArgs` flattens this group).
use crate::push::Target;
use clap::Args;

#[derive(Args, Debug, Clone, Default)]
#[command(next_help_heading = "Output")]
pub struct PushArgs {
    /// Push the run's figures each second to Prometheus remote-write.
    ///
    /// Remote-write 1.0 (snappy-compressed protobuf) to this endpoint, e.g.
    /// http://prometheus:9090/api/v1/write: offered rate, throughput, goodput, p50/p95/p99,
    /// send lag, errors by kind, connections, generator CPU, labelled run, segment and step
    /// (docs/metrics-out.md). The endpoint receives the run's figures and its labels; a slow
    /// or down endpoint never slows the load (a queue of a minute of figures, the oldest
    /// dropped and counted).
    #[arg(long, value_name = "URL", value_parser = Target::remote_write)]
    pub prometheus_remote_write: Option<Target>,
    /// Push the same figures each second over OTLP/HTTP.
    ///
    /// OpenTelemetry metrics (protobuf) to this collector, e.g. http://collector:4318
    /// (/v1/metrics is added to a URL without a path).
    #[arg(long, value_name = "URL", value_parser = Target::otlp)]
    pub otlp: Option<Target>,
}

impl PushArgs {
    /// The targets given, in a fixed order.
    pub fn targets(self) -> Vec<Target> {
        self.prometheus_remote_write
            .into_iter()
            .chain(self.otlp)
            .collect()
    }
}
