//! Observability: OpenTelemetry traces and metrics, and the Prometheus scrape endpoint
//! (docs/observability.md).
//!
//! - [`Tracing`]: the OTLP/gRPC span exporter, the ParentBased(TraceIdRatio) sampler and the
//!   `tracing` layer that turns the server's `sepp` spans into OpenTelemetry spans.
//! - [`metrics`]: every instrument, and the bounded per-queue labels.
//! - [`prometheus`]: `GET /metrics`.
//! - [`spans`]: the spans of each call, W3C propagation, links to a job's producer.
//! - [`observer`]: the task that turns what a sweep did into metrics and spans, off the
//!   committer.

pub mod metrics;
pub mod observer;
pub mod prometheus;
pub mod spans;

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use sepp_config::Config;
use tokio::sync::watch;

use crate::admin::stats::StatsSnapshot;
use sepp_engine::CommitterHandle;

pub use metrics::Metrics;

/// Why telemetry could not start.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    #[error("could not build the OTLP exporter for {endpoint}: {message}")]
    Exporter { endpoint: String, message: String },
    #[error("could not build the Prometheus exporter: {0}")]
    Prometheus(String),
}

fn resource(config: &Config) -> Resource {
    Resource::builder().with_service_name(config.tracing.service_name.clone()).build()
}

/// The span pipeline, when `tracing.enabled`.
pub struct Tracing {
    pub provider: SdkTracerProvider,
}

impl Tracing {
    /// Builds the exporter and provider. Must run inside the tokio runtime (the gRPC channel
    /// spawns its worker there).
    pub fn new(config: &Config) -> Result<Option<Tracing>, TelemetryError> {
        let settings = &config.tracing;
        if !settings.enabled {
            return Ok(None);
        }
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_tonic()
            .with_endpoint(settings.otlp_endpoint.clone())
            .build()
            .map_err(|error| TelemetryError::Exporter {
                endpoint: settings.otlp_endpoint.clone(),
                message: error.to_string(),
            })?;
        let sampler = Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(settings.sample_ratio)));
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_sampler(sampler)
            .with_resource(resource(config))
            .build();
        Ok(Some(Tracing { provider }))
    }

    /// The tracer the `tracing` layer exports through.
    pub fn tracer(&self) -> opentelemetry_sdk::trace::Tracer {
        self.provider.tracer("sepp")
    }

    /// Exports what is buffered and stops.
    pub fn shutdown(&self) {
        if let Err(error) = self.provider.shutdown() {
            tracing::warn!(%error, "flushing the last spans failed");
        }
    }
}

/// The metric pipeline, when `metrics.enabled` or `metrics.prometheus_enabled`.
pub struct MetricsPipeline {
    pub provider: SdkMeterProvider,
    /// What `GET /metrics` renders, when the Prometheus endpoint is on.
    pub registry: Option<::prometheus::Registry>,
}

impl MetricsPipeline {
    /// Builds the provider with its readers: the OTLP periodic push and/or the Prometheus
    /// registry. `None` when both are off. Must run inside the tokio runtime.
    pub fn new(config: &Config) -> Result<Option<MetricsPipeline>, TelemetryError> {
        let settings = &config.metrics;
        if !settings.enabled && !settings.prometheus_enabled {
            return Ok(None);
        }
        let mut builder = SdkMeterProvider::builder().with_resource(resource(config));
        if settings.enabled {
            let exporter = opentelemetry_otlp::MetricExporter::builder()
                .with_tonic()
                .with_endpoint(settings.otlp_endpoint.clone())
                .build()
                .map_err(|error| TelemetryError::Exporter {
                    endpoint: settings.otlp_endpoint.clone(),
                    message: error.to_string(),
                })?;
            let reader = PeriodicReader::builder(exporter)
                .with_interval(Duration::from_millis(settings.export_interval_ms.max(1)))
                .build();
            builder = builder.with_reader(reader);
        }
        let registry = if settings.prometheus_enabled {
            let registry = ::prometheus::Registry::new();
            let exporter = opentelemetry_prometheus::exporter()
                .with_registry(registry.clone())
                .build()
                .map_err(|error| TelemetryError::Prometheus(error.to_string()))?;
            builder = builder.with_reader(exporter);
            Some(registry)
        } else {
            None
        };
        Ok(Some(MetricsPipeline { provider: builder.build(), registry }))
    }

    /// Every instrument, on meter `sepp`.
    pub fn instruments(
        &self,
        snapshots: watch::Receiver<Arc<StatsSnapshot>>,
        committer: CommitterHandle,
        waiting: Arc<crate::service::WaitingReserves>,
    ) -> Arc<Metrics> {
        let meter = self.provider.meter("sepp");
        meter
            .u64_observable_gauge("sepp.reserve.waiting")
            .with_description("Reserves waiting for a job (long polls and Consume streams' asks)")
            .with_callback(move |observer| observer.observe(waiting.get(), &[]))
            .build();
        Metrics::new(&meter, metrics::MAX_QUEUE_LABELS, snapshots, committer)
    }

    /// The cluster's instruments, on meter `sepp`: how far each member's log is behind the
    /// leader's (reported by the leader) and the entry this node applied last.
    pub fn cluster_instruments(&self, gate: Arc<crate::cluster::ClusterGate>) {
        let meter = self.provider.meter("sepp");
        let lags = gate.clone();
        meter
            .u64_observable_gauge("sepp.cluster.replication_lag")
            .with_description("Log entries each member lacks of the leader's log, reported by the leader")
            .with_callback(move |observer| {
                for member in lags.info().members {
                    if let Some(lag) = member.replication_lag {
                        observer.observe(lag, &[opentelemetry::KeyValue::new("node_id", member.id.to_string())]);
                    }
                }
            })
            .build();
        meter
            .u64_observable_gauge("sepp.cluster.applied_index")
            .with_description("The Raft log index of the last entry this node applied to its state")
            .with_callback(move |observer| {
                if let Some(applied) = gate.status().last_applied_index {
                    observer.observe(applied, &[]);
                }
            })
            .build();
    }

    /// Pushes the last values (OTLP) and stops.
    pub fn shutdown(&self) {
        if let Err(error) = self.provider.shutdown() {
            tracing::debug!(%error, "stopping the metric pipeline failed");
        }
    }
}

/// What the handlers and the observer record into; both halves are optional.
#[derive(Clone, Default)]
pub struct Telemetry {
    pub metrics: Option<Arc<Metrics>>,
    /// Whether spans are built at all (`tracing.enabled`).
    pub tracing: bool,
}

impl Telemetry {
    pub fn is_on(&self) -> bool {
        self.metrics.is_some() || self.tracing
    }
}
