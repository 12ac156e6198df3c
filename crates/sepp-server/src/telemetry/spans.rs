//! The spans of each call and each sweep transition, built on the handlers' tasks and on the
//! observer task, never on the committer.
//!
//! Every span is a `tracing` span of target `sepp::rpc` or `sepp::sweep` whose OpenTelemetry
//! name is its `otel.name` field (`sepp.enqueue`, ...). It carries the attributes of the
//! OpenTelemetry messaging conventions (`messaging.system = "sepp"`, operation name and type,
//! destination, message id, batch size) next to sepp's own. Its `trace_id` and `span_id`
//! fields are recorded once it starts, so log lines inside it carry them.

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{Status, TraceContextExt};
use opentelemetry::{Array, StringValue, Value};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use sepp_core::{Job, JobId, TraceContext};
use tracing::Span;
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// At most this many job ids (or queue names, job types) go into one attribute; how many there
/// were in all is in `batch_size` / `job_count`.
pub const MAX_LISTED: usize = 32;

/// Reads W3C headers from gRPC metadata.
struct Metadata<'a>(&'a tonic::metadata::MetadataMap);

impl Extractor for Metadata<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        Vec::new()
    }
}

/// Reads a job's stored trace context.
struct Stored<'a>(&'a TraceContext);

impl Extractor for Stored<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => Some(&self.0.traceparent),
            "tracestate" => self.0.tracestate.as_deref(),
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate"]
    }
}

/// The messaging operation type of each span.
fn operation_type(name: &str) -> Option<&'static str> {
    match name {
        "sepp.enqueue" | "sepp.enqueue_atomic" => Some("send"),
        "sepp.reserve" | "sepp.deliver" => Some("receive"),
        "sepp.ack" | "sepp.nack" | "sepp.dead_letter" | "sepp.drain_dead_letters" => Some("settle"),
        _ => None,
    }
}

/// `sepp.enqueue` -> `enqueue`.
fn operation_name(name: &'static str) -> &'static str {
    name.strip_prefix("sepp.").unwrap_or(name)
}

fn common(span: &Span, name: &'static str) {
    span.set_attribute("messaging.system", "sepp");
    span.set_attribute("messaging.operation.name", operation_name(name));
    if let Some(kind) = operation_type(name) {
        span.set_attribute("messaging.operation.type", kind);
    }
}

/// The server span of one call, parented by the caller's `traceparent` / `tracestate`.
pub fn rpc(name: &'static str, metadata: &tonic::metadata::MetadataMap) -> Span {
    let span = tracing::info_span!(
        target: "sepp::rpc",
        "rpc",
        otel.name = name,
        otel.kind = "server",
        trace_id = Empty,
        span_id = Empty
    );
    let parent = TraceContextPropagator::new().extract(&Metadata(metadata));
    if parent.span().span_context().is_valid() {
        let _ = span.set_parent(parent);
    }
    // The sampler decides when the span starts: an unsampled call gets no span at all, so none
    // of its attributes, links or children are built.
    if !record_ids(&span) {
        return Span::none();
    }
    common(&span, name);
    span
}

/// An internal span of the sweep (`sepp.promote`, `sepp.redeliver`, `sepp.dead_letter`), a
/// root of its own linked to the job's producer.
pub fn sweep(name: &'static str, job: &Job, attempt: u32) -> Span {
    let span =
        tracing::info_span!(target: "sepp::sweep", parent: None, "sweep", otel.name = name, otel.kind = "internal");
    if !span.context().span().span_context().is_sampled() {
        return Span::none();
    }
    link(&span, job);
    common(&span, name);
    job_attributes(&span, job, attempt);
    span
}

/// `sepp.deliver`: one delivered job, a child of its reserve, linked to the producer.
pub fn deliver(reserve: &Span, job: &Job, attempt: u32) -> Span {
    let span = tracing::info_span!(target: "sepp::rpc", parent: reserve, "deliver", otel.name = "sepp.deliver");
    link(&span, job);
    common(&span, "sepp.deliver");
    job_attributes(&span, job, attempt);
    span.set_attribute("job_type", StringValue::from(job.job_type.clone()));
    span.set_attribute("priority", i64::from(job.priority));
    span.set_attribute("max_attempts", i64::from(job.max_attempts));
    span
}

/// The job's id, queue and attempt, in sepp's names and the conventions'.
pub fn job_attributes(span: &Span, job: &Job, attempt: u32) {
    let id = job.id.hyphenated().to_string();
    span.set_attribute("job_id", id.clone());
    span.set_attribute("messaging.message.id", id);
    span.set_attribute("queue", StringValue::from(job.queue.clone()));
    span.set_attribute("messaging.destination.name", StringValue::from(job.queue.clone()));
    span.set_attribute("attempt", i64::from(attempt));
}

/// Links the span to the context the job was enqueued with, when it has a valid one.
pub fn link(span: &Span, job: &Job) {
    if let Some(context) = &job.trace_context {
        let producer = TraceContextPropagator::new().extract(&Stored(context));
        let producer = producer.span().span_context().clone();
        if producer.is_valid() {
            span.add_link(producer);
        }
    }
}

/// Records the span's trace and span ids as fields, for the log lines inside it. False when
/// the span is not sampled (or not exported at all).
fn record_ids(span: &Span) -> bool {
    let context = span.context();
    let span_context = context.span().span_context().clone();
    if span_context.is_valid() {
        span.record("trace_id", tracing::field::display(span_context.trace_id()));
        span.record("span_id", tracing::field::display(span_context.span_id()));
    }
    span_context.is_sampled()
}

/// A string-array attribute of at most [`MAX_LISTED`] values.
pub fn listed<'a>(values: impl IntoIterator<Item = &'a str>) -> Value {
    let values: Vec<StringValue> = values.into_iter().take(MAX_LISTED).map(|value| value.to_owned().into()).collect();
    Value::Array(Array::String(values))
}

/// The distinct values of `values` (a batch's queues or job types), at most [`MAX_LISTED`].
pub fn distinct<'a>(values: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen: Vec<&str> = Vec::new();
    for value in values {
        if !seen.contains(&value) {
            seen.push(value);
            if seen.len() == MAX_LISTED {
                break;
            }
        }
    }
    seen
}

/// The job ids attribute: the first [`MAX_LISTED`] ids.
pub fn job_ids<'a>(ids: impl IntoIterator<Item = &'a JobId>) -> Value {
    let ids: Vec<StringValue> = ids.into_iter().take(MAX_LISTED).map(|id| id.hyphenated().to_string().into()).collect();
    Value::Array(Array::String(ids))
}

/// Marks a failed call: `error` (and `error.type`) for every failure, the span status error
/// only for server faults.
pub fn failed(span: &Span, status: &tonic::Status) {
    span.set_attribute("error", status.message().chars().take(256).collect::<String>());
    span.set_attribute("error.type", format!("{:?}", status.code()));
    if crate::status::is_server_fault(status) {
        span.set_status(Status::error(status.message().chars().take(256).collect::<String>()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_names_and_types_follow_the_span_names() {
        assert_eq!(operation_name("sepp.enqueue_atomic"), "enqueue_atomic");
        assert_eq!(operation_type("sepp.enqueue"), Some("send"));
        assert_eq!(operation_type("sepp.reserve"), Some("receive"));
        assert_eq!(operation_type("sepp.deliver"), Some("receive"));
        assert_eq!(operation_type("sepp.ack"), Some("settle"));
        assert_eq!(operation_type("sepp.nack"), Some("settle"));
        assert_eq!(operation_type("sepp.extend"), None);
    }

    #[test]
    fn listed_attributes_are_bounded() {
        let names: Vec<String> = (0..1000).map(|n| format!("q{n}")).collect();
        let Value::Array(Array::String(listed)) = listed(names.iter().map(String::as_str)) else { panic!() };
        assert_eq!(listed.len(), MAX_LISTED);
        let ids: Vec<JobId> = (0..1000).map(|_| JobId::new_v4()).collect();
        let Value::Array(Array::String(ids)) = job_ids(&ids) else { panic!() };
        assert_eq!(ids.len(), MAX_LISTED);
        assert_eq!(distinct(["a", "b", "a", "c", "b"]), vec!["a", "b", "c"]);
    }
}
