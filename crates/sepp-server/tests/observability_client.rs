//! One job's trace across the Rust client (`crates/sepp-client`) and the real server: the
//! producer's `sepp.enqueue` client span parents the server's `sepp.enqueue`, is stamped on the
//! job, and both the server's later spans of that job (deliver, ack) and the Worker's
//! `sepp.process` consumer span link to it. The client's spans are collected in memory behind a
//! `tracing-opentelemetry` layer, as a host application would set up; the server's arrive at an
//! OTLP receiver.

mod common;
mod otlp_support;

use std::sync::Arc;
use std::time::Duration;

use common::{TestServer, unique};
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use otlp_support::{Receiver, has_link, hex};
use sepp_client::client::SeppClient;
use sepp_client::worker::Worker;
use sepp_client::{EnqueueRequest, JobCtx};
use tracing::Instrument;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::layer::SubscriberExt;

const WAIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_clients_process_span_and_the_servers_spans_of_a_job_share_the_producers_trace_context() {
    let spans = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(spans.clone()).build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_subscriber::filter::LevelFilter::INFO)
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("producer-app")));
    tracing::subscriber::set_global_default(subscriber).expect("install the subscriber");

    let receiver = Receiver::start().await;
    let config =
        format!("[tracing]\nenabled = true\notlp_endpoint = \"{}\"\nsample_ratio = 1.0\n", receiver.endpoint());
    let server = TestServer::start_with_env(&config, &[("OTEL_BSP_SCHEDULE_DELAY", "100")]);
    let client = SeppClient::connect(server.addr()).await.expect("connect");
    let queue = unique("client-trace");

    let producer = tracing::info_span!("producer");
    let producer_trace = producer.context().span().span_context().trace_id();
    let enqueued = client.enqueue(EnqueueRequest::new(&queue, "t").unwrap()).instrument(producer).await.unwrap();

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    // The server traces Reserve and Ack calls; the settles of a Consume stream are not traced
    // one by one (docs/protocol.md#consume), so this Worker uses the calls.
    let worker = Worker::new(client.clone(), [queue.as_str()], Duration::from_secs(30))
        .unwrap()
        .with_streaming(false)
        .handle("t", move |_, ctx: Arc<JobCtx>| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(ctx.id.clone());
                Ok(())
            }
        })
        .unwrap();
    let shutdown = worker.shutdown_handle();
    let running = tokio::spawn(worker.run());
    let handled = tokio::time::timeout(WAIT, rx.recv()).await.expect("the job is handled").unwrap();
    assert_eq!(handled, enqueued.job_id);

    let server_spans = receiver.wait_for_spans(|spans| spans.iter().any(|span| span.name == "sepp.ack"), WAIT).await;
    shutdown.shutdown();
    running.await.unwrap();

    let client_spans = spans.get_finished_spans().unwrap();
    let client_enqueue = client_spans
        .iter()
        .find(|span| span.name == "sepp.enqueue" && span.span_context.trace_id() == producer_trace)
        .expect("the client's enqueue span");
    let producer_trace = producer_trace.to_string();
    let producer_span = client_enqueue.span_context.span_id().to_string();

    let server_enqueue = server_spans.iter().find(|span| span.name == "sepp.enqueue").expect("the server's enqueue");
    assert_eq!(hex(&server_enqueue.trace_id), producer_trace, "the server's enqueue joins the producer's trace");
    assert_eq!(hex(&server_enqueue.parent_span_id), producer_span, "its parent is the client's sepp.enqueue");
    for name in ["sepp.deliver", "sepp.ack"] {
        let span = server_spans.iter().find(|span| span.name == name).unwrap_or_else(|| panic!("no {name}"));
        assert!(has_link(span, &producer_trace, &producer_span), "{name} links to the producer: {span:?}");
    }
    let process = client_spans.iter().find(|span| span.name == "sepp.process").expect("the worker's process span");
    assert!(
        process.links.iter().any(|link| link.span_context.trace_id().to_string() == producer_trace
            && link.span_context.span_id().to_string() == producer_span),
        "sepp.process links to the same producer span: {process:?}"
    );
}
