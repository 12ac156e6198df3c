//! Tracing a job from producer to worker with OpenTelemetry.
//!
//! The host application owns the exporter: here an in-memory exporter, printed at the end, so
//! the example needs nothing but a sepp server. In production, put your OTLP (or other)
//! exporter in its place; nothing else changes.
//!
//! The program enqueues a job inside a `checkout` span. The client's `sepp.enqueue` span is
//! stamped onto the job as a W3C traceparent. The Worker then handles the job in a
//! `sepp.process` span that starts a new trace and *links* to the producer's span.
//!
//! ```text
//! cargo run -p sepp-client --example traced
//! ```

use std::sync::Arc;
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use sepp_client::client::SeppClient;
use sepp_client::worker::Worker;
use sepp_client::{EnqueueRequest, JobCtx};
use tokio::sync::Notify;
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. The host installs a tracer provider and the tracing-opentelemetry layer.
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
    // Info level keeps sepp's spans and drops the transport's debug spans.
    let subscriber = tracing_subscriber::registry()
        .with(tracing_subscriber::filter::LevelFilter::INFO)
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("traced-example")))
        .with(tracing_subscriber::fmt::layer().with_target(false));
    tracing::subscriber::set_global_default(subscriber)?;

    let addr = std::env::var("SEPP_ADDR").unwrap_or_else(|_| "127.0.0.1:50051".to_owned());
    let client = SeppClient::connect(addr).await?;
    let queue = format!("traced-{}", std::process::id());

    // 2. Produce inside an application span.
    let checkout = tracing::info_span!("checkout", order = 1234);
    let ack = client.enqueue(EnqueueRequest::new(&queue, "charge")?).instrument(checkout).await?;
    println!("enqueued {}", ack.job_id);

    // 3. Consume: the handler runs inside `sepp.process`.
    let done = Arc::new(Notify::new());
    let worker = Worker::new(client, [queue.as_str()], Duration::from_secs(30))?.handle("charge", {
        let done = done.clone();
        move |_, ctx: Arc<JobCtx>| {
            let done = done.clone();
            async move {
                tracing::info!(traceparent = ?ctx.trace_context.as_ref().map(|t| t.traceparent().to_owned()), "charging");
                done.notify_one();
                Ok(())
            }
        }
    })?;
    let shutdown = worker.shutdown_handle();
    let running = tokio::spawn(worker.run());
    done.notified().await;
    shutdown.shutdown();
    running.await?;

    // 4. What the exporter received.
    provider.force_flush()?;
    for span in exporter.get_finished_spans()? {
        let links: Vec<String> = span
            .links
            .iter()
            .map(|link| format!("{}/{}", link.span_context.trace_id(), link.span_context.span_id()))
            .collect();
        println!(
            "{:<24} trace {} span {} parent {} links {:?}",
            span.name,
            span.span_context.trace_id(),
            span.span_context.span_id(),
            span.parent_span_id,
            links
        );
    }
    Ok(())
}
