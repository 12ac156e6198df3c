//! The OpenTelemetry seams, all no-ops without the `opentelemetry` feature: reading the current
//! span's W3C context for injection, linking the consumer span to the producer's, and the
//! Worker's metrics (meter `sepp`). The host application installs the tracer and meter
//! providers and the `tracing-opentelemetry` layer; this crate only uses the global ones.

use tonic::metadata::{MetadataMap, MetadataValue};

use crate::TraceContext;

/// The current span's trace context, if tracing is on and a valid span is current.
pub(crate) fn current_trace_context() -> Option<TraceContext> {
    #[cfg(feature = "opentelemetry")]
    {
        TraceContext::from_current_otel()
    }
    #[cfg(not(feature = "opentelemetry"))]
    {
        None
    }
}

/// Adds `traceparent` (and a non-empty `tracestate`) of the current span to call metadata.
pub(crate) fn inject(metadata: &mut MetadataMap) {
    let Some(trace) = current_trace_context() else {
        return;
    };
    if let Ok(value) = MetadataValue::try_from(trace.traceparent()) {
        metadata.insert("traceparent", value);
    }
    if let Some(Ok(value)) = trace.tracestate().map(MetadataValue::try_from) {
        metadata.insert("tracestate", value);
    }
}

/// Links `span` to the producer span described by `trace` (a link, not a parent).
#[cfg_attr(not(feature = "opentelemetry"), allow(unused_variables))]
pub(crate) fn link(span: &tracing::Span, trace: Option<&TraceContext>) {
    #[cfg(feature = "opentelemetry")]
    if let Some(span_context) = trace.and_then(TraceContext::otel_span_context) {
        use tracing_opentelemetry::OpenTelemetrySpanExt;
        span.add_link(span_context);
    }
}

/// The Worker's instruments. Without the feature every method does nothing.
#[derive(Clone)]
pub(crate) struct WorkerMetrics {
    #[cfg(feature = "opentelemetry")]
    instruments: std::sync::Arc<Instruments>,
}

#[cfg(feature = "opentelemetry")]
struct Instruments {
    processed: opentelemetry::metrics::Counter<u64>,
    nacked: opentelemetry::metrics::Counter<u64>,
    in_flight: opentelemetry::metrics::UpDownCounter<i64>,
    reserves_completed: opentelemetry::metrics::Counter<u64>,
    reserves_failed: opentelemetry::metrics::Counter<u64>,
}

#[cfg(feature = "opentelemetry")]
impl WorkerMetrics {
    /// Instruments from the global meter provider, as installed when the Worker starts.
    pub(crate) fn new() -> Self {
        let meter = opentelemetry::global::meter("sepp");
        let instruments = Instruments {
            processed: meter.u64_counter("sepp.jobs.processed").with_description("Jobs acked after success").build(),
            nacked: meter.u64_counter("sepp.jobs.nacked").with_description("Jobs nacked, by outcome").build(),
            in_flight: meter.i64_up_down_counter("sepp.jobs.in_flight").with_description("Jobs being handled").build(),
            reserves_completed: meter
                .u64_counter("sepp.reserves.completed")
                .with_description("Reserve calls that returned, by whether they had jobs")
                .build(),
            reserves_failed: meter
                .u64_counter("sepp.reserves.failed")
                .with_description("Reserve calls that failed")
                .build(),
        };
        Self { instruments: std::sync::Arc::new(instruments) }
    }

    pub(crate) fn processed(&self) {
        self.instruments.processed.add(1, &[]);
    }

    pub(crate) fn nacked(&self, dead_lettered: bool) {
        let outcome = if dead_lettered { "dead_letter" } else { "retry" };
        self.instruments.nacked.add(1, &[opentelemetry::KeyValue::new("outcome", outcome)]);
    }

    pub(crate) fn in_flight(&self, delta: i64) {
        self.instruments.in_flight.add(delta, &[]);
    }

    pub(crate) fn reserve_completed(&self, had_jobs: bool) {
        let jobs = if had_jobs { "some" } else { "empty" };
        self.instruments.reserves_completed.add(1, &[opentelemetry::KeyValue::new("jobs", jobs)]);
    }

    pub(crate) fn reserve_failed(&self) {
        self.instruments.reserves_failed.add(1, &[]);
    }
}

#[cfg(not(feature = "opentelemetry"))]
#[allow(clippy::unused_self)]
impl WorkerMetrics {
    pub(crate) fn new() -> Self {
        Self {}
    }
    pub(crate) fn processed(&self) {}
    pub(crate) fn nacked(&self, _dead_lettered: bool) {}
    pub(crate) fn in_flight(&self, _delta: i64) {}
    pub(crate) fn reserve_completed(&self, _had_jobs: bool) {}
    pub(crate) fn reserve_failed(&self) {}
}

#[cfg(all(test, feature = "opentelemetry"))]
mod tests {
    use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
    use opentelemetry_sdk::trace::SdkTracerProvider;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    use tracing_subscriber::layer::SubscriberExt;

    use super::*;

    #[test]
    fn the_current_span_is_injected_into_call_metadata() {
        let provider = SdkTracerProvider::builder().build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("call");
            let _entered = span.enter();
            let expected = span.context().span().span_context().clone();
            let mut metadata = MetadataMap::new();
            inject(&mut metadata);
            let traceparent = format!("00-{}-{}-01", expected.trace_id(), expected.span_id());
            assert_eq!(metadata.get("traceparent").unwrap(), traceparent.as_str());
            assert!(metadata.get("tracestate").is_none(), "an empty tracestate is not sent");
        });
    }

    #[test]
    fn without_a_tracing_layer_nothing_is_injected() {
        let mut metadata = MetadataMap::new();
        inject(&mut metadata);
        assert!(metadata.is_empty());
        assert_eq!(current_trace_context(), None);
    }
}
