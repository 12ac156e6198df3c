//! Tracing and logging, with OpenTelemetry on: the producer's `sepp.enqueue` span is stamped
//! onto the job as a W3C traceparent, comes back on the reserved job, and the Worker's
//! `sepp.process` consumer span links to it (a link, not a parent). Spans are collected by an
//! in-memory exporter behind a `tracing-opentelemetry` layer, as a host application would set
//! up; log lines go to an in-memory buffer, so tests can wait for what the client logs.
#![cfg(feature = "opentelemetry")]

mod common;

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use common::{Server, eventually, signalled, unique};
use opentelemetry::trace::{SpanContext, SpanId, SpanKind, TraceContextExt, TraceId, TracerProvider as _};
use opentelemetry_sdk::metrics::data::{AggregatedMetrics, MetricData};
use opentelemetry_sdk::metrics::{InMemoryMetricExporter, PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use sepp_client::client::SeppClient;
use sepp_client::worker::{HandlerError, Worker};
use sepp_client::{EnqueueRequest, JobCtx, ReserveOptions, TraceContext};
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;

const LEASE: Duration = Duration::from_secs(30);

/// What the host application installed: span and metric exporters behind the global
/// subscriber and meter provider (once per test binary).
struct Telemetry {
    spans: InMemorySpanExporter,
    metrics: InMemoryMetricExporter,
    meters: SdkMeterProvider,
}

fn telemetry() -> &'static Telemetry {
    static TELEMETRY: OnceLock<Telemetry> = OnceLock::new();
    TELEMETRY.get_or_init(|| {
        let spans = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder().with_simple_exporter(spans.clone()).build();
        let tracer = provider.tracer("sepp-client-tests");
        let logs = tracing_subscriber::fmt::layer().with_ansi(false).with_writer(|| Logs);
        let subscriber = tracing_subscriber::registry()
            .with(tracing_subscriber::filter::LevelFilter::INFO)
            .with(tracing_opentelemetry::layer().with_tracer(tracer))
            .with(logs);
        tracing::subscriber::set_global_default(subscriber).expect("install the test subscriber");
        let metrics = InMemoryMetricExporter::default();
        let meters = SdkMeterProvider::builder().with_reader(PeriodicReader::builder(metrics.clone()).build()).build();
        opentelemetry::global::set_meter_provider(meters.clone());
        Telemetry { spans, metrics, meters }
    })
}

fn exporter() -> &'static InMemorySpanExporter {
    &telemetry().spans
}

/// The latest cumulative value of a counter, summed over the points that carry `attribute`.
fn counter(name: &str, attribute: Option<(&str, &str)>) -> Option<i128> {
    let telemetry = telemetry();
    telemetry.meters.force_flush().expect("flush metrics");
    let batches = telemetry.metrics.get_finished_metrics().expect("read metrics");
    let latest = batches.last()?;
    let metric = latest.scope_metrics().flat_map(|scope| scope.metrics()).find(|metric| metric.name() == name)?;
    let matches = |attributes: Vec<&opentelemetry::KeyValue>| {
        attribute
            .is_none_or(|(key, value)| attributes.iter().any(|kv| kv.key.as_str() == key && kv.value.as_str() == value))
    };
    Some(match metric.data() {
        AggregatedMetrics::U64(MetricData::Sum(sum)) => sum
            .data_points()
            .filter(|point| matches(point.attributes().collect()))
            .map(|point| i128::from(point.value()))
            .sum(),
        AggregatedMetrics::I64(MetricData::Sum(sum)) => sum
            .data_points()
            .filter(|point| matches(point.attributes().collect()))
            .map(|point| i128::from(point.value()))
            .sum(),
        other => panic!("{name} is not a counter: {other:?}"),
    })
}

/// Everything logged in this test binary.
static LOGGED: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// The log writer behind the global subscriber.
struct Logs;

impl std::io::Write for Logs {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        LOGGED.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Whether a logged line contains every one of `parts`.
fn logged(parts: &[&str]) -> bool {
    let logged = LOGGED.lock().unwrap();
    String::from_utf8_lossy(&logged).lines().any(|line| parts.iter().all(|part| line.contains(part)))
}

fn finished(name: &str, trace_id: TraceId) -> Vec<SpanData> {
    let spans = exporter().get_finished_spans().expect("read the exported spans");
    spans.into_iter().filter(|span| span.name == name && span.span_context.trace_id() == trace_id).collect()
}

fn attribute(span: &SpanData, key: &str) -> Option<String> {
    span.attributes.iter().find(|kv| kv.key.as_str() == key).map(|kv| kv.value.to_string())
}

fn context_of(span: &tracing::Span) -> SpanContext {
    span.context().span().span_context().clone()
}

#[tokio::test]
async fn the_enqueue_span_is_stamped_on_the_job_and_comes_back_on_reserve() {
    exporter();
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("traced");
    let producer = tracing::info_span!("producer");
    let producer_context = context_of(&producer);
    assert!(producer_context.is_valid());
    let explicit = TraceContext::new("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01").unwrap();
    let results = client
        .enqueue_batch([
            EnqueueRequest::new(&queue, "stamped").unwrap(),
            EnqueueRequest::new(&queue, "explicit").unwrap().with_trace_context(explicit.clone()),
        ])
        .instrument(producer.clone())
        .await
        .unwrap();
    assert!(results.iter().all(Result::is_ok));
    drop(producer);

    let enqueue_spans = finished("sepp.enqueue", producer_context.trace_id());
    assert_eq!(enqueue_spans.len(), 1, "one client span per call");
    let enqueue = &enqueue_spans[0];
    assert_eq!(enqueue.span_kind, SpanKind::Client);
    assert_eq!(enqueue.parent_span_id, producer_context.span_id());

    let options =
        ReserveOptions::new([queue.as_str()], LEASE).unwrap().with_wait_timeout(Duration::ZERO).with_max_jobs(2);
    let jobs = client.reserve(&options).await.unwrap().unwrap();
    let stamped = jobs.iter().find(|job| job.ctx.job_type == "stamped").unwrap();
    let trace = stamped.ctx.trace_context.as_ref().expect("the job carries the producer's context");
    assert_eq!(trace.trace_id(), producer_context.trace_id().to_string());
    assert_eq!(trace.span_id(), enqueue.span_context.span_id().to_string(), "it points at sepp.enqueue");
    assert!(trace.is_sampled());
    let explicit_job = jobs.iter().find(|job| job.ctx.job_type == "explicit").unwrap();
    assert_eq!(explicit_job.ctx.trace_context.as_ref(), Some(&explicit), "an explicit context is kept");

    let span_context = trace.otel_span_context().unwrap();
    assert!(span_context.is_remote());
    assert_eq!(span_context.span_id(), enqueue.span_context.span_id());
}

#[tokio::test]
async fn lease_calls_are_client_spans_marked_failed_on_errors() {
    exporter();
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("lease-spans");
    client.enqueue(EnqueueRequest::new(&queue, "t").unwrap()).await.unwrap();
    let options = ReserveOptions::new([queue.as_str()], LEASE).unwrap().with_wait_timeout(Duration::ZERO);
    let job = client.reserve(&options).await.unwrap().unwrap().remove(0);
    let consumer = tracing::info_span!("consumer");
    let trace_id = context_of(&consumer).trace_id();
    async {
        client.ack(&job.ctx).await.unwrap();
        assert!(client.ack(&job.ctx).await.is_err());
    }
    .instrument(consumer)
    .await;
    let acks = finished("sepp.ack", trace_id);
    assert_eq!(acks.len(), 2);
    assert!(acks.iter().all(|span| span.span_kind == SpanKind::Client));
    assert!(acks.iter().all(|span| attribute(span, "job_id").as_deref() == Some(job.ctx.id.as_str())));
    let failed = acks.iter().filter(|span| matches!(span.status, opentelemetry::trace::Status::Error { .. })).count();
    assert_eq!(failed, 1, "{acks:#?}");
}

#[tokio::test]
async fn the_worker_span_links_to_the_producer_instead_of_joining_its_trace() {
    exporter();
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("linked");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let worker = Worker::new(client.clone(), [queue.as_str()], LEASE)
        .unwrap()
        .handle("t", move |_, ctx: Arc<JobCtx>| {
            let tx = tx.clone();
            async move {
                // The handler runs inside the consumer span.
                tx.send((ctx.id.clone(), context_of(&tracing::Span::current()), ctx.trace_context.clone())).unwrap();
                Ok(())
            }
        })
        .unwrap();
    let producer = tracing::info_span!("producer");
    let producer_trace = context_of(&producer).trace_id();
    let traced = client.enqueue(EnqueueRequest::new(&queue, "t").unwrap()).instrument(producer).await.unwrap();
    // With no subscriber there is no span to stamp: this job travels without a trace context.
    // (Both jobs are enqueued before the worker starts, so only this call runs unobserved.)
    let untraced = {
        let _quiet = tracing::subscriber::set_default(tracing::subscriber::NoSubscriber::default());
        client.enqueue(EnqueueRequest::new(&queue, "t").unwrap()).await.unwrap()
    };
    let shutdown = worker.shutdown_handle();
    let running = tokio::spawn(worker.run());
    let mut handled = [signalled("a handler", &mut rx).await, signalled("a handler", &mut rx).await];
    shutdown.shutdown();
    running.await.unwrap();
    handled.sort_by_key(|(id, _, _)| id != &traced.job_id);
    let enqueue = finished("sepp.enqueue", producer_trace).pop().expect("the producer's enqueue span");

    // The traced job: a new trace, linked to the producer's enqueue span.
    let (_, consumer, trace) = &handled[0];
    assert!(trace.is_some());
    assert!(consumer.is_valid());
    assert_ne!(consumer.trace_id(), producer_trace, "linked, not parented");
    let process = finished("sepp.process", consumer.trace_id()).pop().expect("the consumer span");
    assert_eq!(process.span_context.span_id(), consumer.span_id());
    assert_eq!(process.span_kind, SpanKind::Consumer);
    assert_eq!(process.parent_span_id, SpanId::INVALID, "a root span");
    assert_eq!(attribute(&process, "job_id").as_deref(), Some(traced.job_id.as_str()));
    assert_eq!(attribute(&process, "job_type").as_deref(), Some("t"));
    assert_eq!(attribute(&process, "attempt").as_deref(), Some("1"));
    let links: Vec<&SpanContext> = process.links.iter().map(|link| &link.span_context).collect();
    assert_eq!(links.len(), 1);
    assert_eq!(links[0].trace_id(), producer_trace);
    assert_eq!(links[0].span_id(), enqueue.span_context.span_id());

    // The untraced job still gets a consumer span, without a link.
    let (id, consumer, trace) = &handled[1];
    assert_eq!(id, &untraced.job_id);
    assert_eq!(trace, &None);
    let process = finished("sepp.process", consumer.trace_id()).pop().expect("the consumer span");
    assert!(process.links.is_empty());
}

#[test]
fn a_received_context_can_become_the_current_otel_parent() {
    let trace = TraceContext::new("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").unwrap();
    let _guard = trace.attach_to_otel();
    let current = opentelemetry::Context::current();
    assert_eq!(current.span().span_context().trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(TraceContext::from_current_otel(), Some(trace));
}

#[tokio::test]
async fn a_failing_reserve_is_logged_and_backed_off_and_shutdown_wakes_the_backoff() {
    exporter();
    let server = Server::start_with("strict_queues = true", "[[queues]]\nname = \"declared\"\n");
    let client = server.client().await;
    let queue = unique("undeclared");
    let worker_id = unique("backoff-worker");
    let worker = Worker::new(client, [queue.as_str()], LEASE)
        .unwrap()
        .with_worker_id(worker_id.clone())
        .unwrap()
        .with_reserve_error_backoff(Duration::from_secs(3600))
        .handle("t", |_, _| async { Ok(()) })
        .unwrap();
    let shutdown = worker.shutdown_handle();
    let running = tokio::spawn(worker.run());
    eventually("the reserve error to be logged", || async {
        logged(&["reserve error", &queue, "backing off for 3600s"]).then_some(())
    })
    .await;
    assert!(logged(&["worker started", &worker_id]));
    // The worker now sleeps for an hour unless shutdown wakes it.
    shutdown.shutdown();
    tokio::time::timeout(Duration::from_secs(30), running).await.unwrap().unwrap();
    assert!(logged(&["worker stopped", &worker_id]));
}

#[tokio::test]
async fn an_api_key_without_tls_is_warned_about_and_never_logged() {
    telemetry();
    let server = Server::start();
    let _client = SeppClient::builder(server.url()).api_key("plain-secret").connect().await.unwrap();
    assert!(logged(&["API key configured without TLS", &server.url()]));
    assert!(logged(&["connected to the sepp server", &server.url(), "auth=true"]));
    assert!(!logged(&["plain-secret"]));
}

#[tokio::test]
async fn the_worker_records_its_metrics_on_the_global_meter() {
    telemetry();
    let server = Server::start();
    let client = server.client().await;
    let queue = unique("metrics");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let worker = Worker::new(client.clone(), [queue.as_str()], LEASE).unwrap().with_catch_all_handler(
        move |_, ctx: Arc<JobCtx>| {
            let tx = tx.clone();
            async move {
                tx.send(()).unwrap();
                if ctx.job_type == "ok" { Ok(()) } else { Err(HandlerError::permanent("no")) }
            }
        },
    );
    let shutdown = worker.shutdown_handle();
    let running = tokio::spawn(worker.run());
    client.enqueue(EnqueueRequest::new(&queue, "ok").unwrap()).await.unwrap();
    client.enqueue(EnqueueRequest::new(&queue, "bad").unwrap()).await.unwrap();
    signalled("the first handler", &mut rx).await;
    signalled("the second handler", &mut rx).await;
    // Shutdown waits for both jobs to be settled, so their counts are in.
    shutdown.shutdown();
    running.await.unwrap();
    assert!(counter("sepp.jobs.processed", None) >= Some(1));
    assert!(counter("sepp.jobs.nacked", Some(("outcome", "dead_letter"))) >= Some(1));
    assert!(counter("sepp.reserves.completed", Some(("jobs", "some"))) >= Some(1));
    assert!(counter("sepp.jobs.in_flight", None).is_some());
}
