//! The NATS JetStream driver of `peers` (`sepp-bench nats-driver`), on the official Rust client
//! `async-nats`. It speaks the drivers' protocol (see `peers/node/driver.js`): connect, print
//! `ready`, wait for a line on stdin, run one phase, print one JSON line.
//!
//! A work-queue stream on file storage and one durable pull consumer with explicit acks: a
//! published message counts once the server's publish acknowledgement arrives (the stream has
//! it, synced as the server is configured to), and a drained one once the server confirmed its
//! ack (`double_ack`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_nats::jetstream::{self, consumer, stream};
use futures_util::{StreamExt, TryStreamExt};

use crate::BenchError;
use crate::peers::DriverReport;

/// What one phase is asked to do.
pub struct NatsPhase<'a> {
    pub url: &'a str,
    pub phase: &'a str,
    pub jobs: u64,
    pub concurrency: usize,
    pub queue: &'a str,
    pub payload_bytes: usize,
    /// One connection for the whole phase (publishes concurrent on it, one pull consumer with
    /// `concurrency` messages in flight) instead of one connection per producer or worker.
    pub shared: bool,
}

fn failed(what: &str, error: impl std::fmt::Display) -> BenchError {
    BenchError::Unexpected(format!("{what}: {error}"))
}

/// Hands out the remaining jobs to concurrent loops.
struct Tickets(AtomicU64);

impl Tickets {
    fn take(&self) -> bool {
        self.0.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| left.checked_sub(1)).is_ok()
    }
}

pub fn run(args: NatsPhase<'_>) -> Result<(), BenchError> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(phase(args))
}

async fn phase(args: NatsPhase<'_>) -> Result<(), BenchError> {
    let server = args.url.trim_start_matches("nats://").to_owned();
    let stream_name: String =
        args.queue.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect();
    let subject = format!("jobs.{stream_name}");
    let payload = bytes::Bytes::from(vec![b'x'; args.payload_bytes]);
    let mut clients = Vec::new();
    let connections = if args.shared { 1 } else { args.concurrency.max(1) };
    for _ in 0..connections {
        clients.push(async_nats::connect(&server).await.map_err(|error| failed("connect", error))?);
    }
    let server_version = format!("nats-server {}", clients[0].server_info().version);
    let first = jetstream::new(clients[0].clone());
    let stream = first
        .get_or_create_stream(stream::Config {
            name: stream_name.clone(),
            subjects: vec![subject.clone()],
            retention: stream::RetentionPolicy::WorkQueue,
            storage: stream::StorageType::File,
            ..Default::default()
        })
        .await
        .map_err(|error| failed("create the stream", error))?;
    let config = consumer::pull::Config {
        durable_name: Some("workers".into()),
        ack_policy: consumer::AckPolicy::Explicit,
        ..Default::default()
    };
    stream.get_or_create_consumer("workers", config).await.map_err(|error| failed("create the consumer", error))?;

    println!("ready");
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    let tickets = Arc::new(Tickets(AtomicU64::new(args.jobs)));
    let started = Instant::now();
    let mut times = Vec::new();
    match args.phase {
        "enqueue-single" => {
            // A producer per connection, or (shared) all producers on the one connection.
            let producers = (0..args.concurrency.max(1)).map(|i| &clients[i % clients.len()]);
            let loops = producers.map(|client| {
                let (js, tickets, subject, payload) =
                    (jetstream::new(client.clone()), tickets.clone(), subject.clone(), payload.clone());
                async move {
                    while tickets.take() {
                        // The second await is the server's acknowledgement: the stream has it.
                        let ack =
                            js.publish(subject.clone(), payload.clone()).await.map_err(|e| failed("publish", e))?;
                        ack.await.map_err(|error| failed("publish acknowledgement", error))?;
                    }
                    Ok::<_, BenchError>(())
                }
            });
            for result in futures_util::future::join_all(loops).await {
                result?;
            }
        }
        "enqueue-batch" => return Err(BenchError::Unexpected("JetStream has no batch publish".into())),
        "drain" if args.shared => {
            // One pull consumer streaming batches of up to `concurrency` messages, acked
            // `concurrency` at a time, as the client's documentation consumes a work queue.
            let consumer: consumer::PullConsumer =
                stream.get_consumer("workers").await.map_err(|error| failed("get the consumer", error))?;
            let messages = consumer
                .stream()
                .max_messages_per_batch(args.concurrency.max(1))
                .messages()
                .await
                .map_err(|error| failed("consume", error))?;
            messages
                .take(usize::try_from(args.jobs).unwrap_or(usize::MAX))
                .map(|message| message.map_err(|error| failed("message", error)))
                .try_for_each_concurrent(args.concurrency.max(1), |message| async move {
                    message.double_ack().await.map_err(|error| failed("ack", error))
                })
                .await?;
        }
        "drain" => {
            let mut consumers = Vec::new();
            for client in &clients {
                let js = jetstream::new(client.clone());
                let stream = js.get_stream(&stream_name).await.map_err(|error| failed("get the stream", error))?;
                let consumer: consumer::PullConsumer =
                    stream.get_consumer("workers").await.map_err(|error| failed("get the consumer", error))?;
                consumers.push(consumer);
            }
            let loops = consumers.into_iter().map(|consumer| {
                let tickets = tickets.clone();
                async move {
                    while tickets.take() {
                        take_and_ack(&consumer).await?;
                    }
                    Ok::<_, BenchError>(())
                }
            });
            for result in futures_util::future::join_all(loops).await {
                result?;
            }
        }
        "latency" => {
            let js = jetstream::new(clients[0].clone());
            let consumer: consumer::PullConsumer =
                stream.get_consumer("workers").await.map_err(|error| failed("get the consumer", error))?;
            for round in 0..args.jobs + 20 {
                let began = Instant::now();
                let ack = js.publish(subject.clone(), payload.clone()).await.map_err(|e| failed("publish", e))?;
                ack.await.map_err(|error| failed("publish acknowledgement", error))?;
                take_and_ack(&consumer).await?;
                if round >= 20 {
                    // The first 20 warm the connection up.
                    times.push(began.elapsed().as_secs_f64() * 1e6);
                }
            }
        }
        other => return Err(BenchError::Unexpected(format!("unknown phase {other}"))),
    }
    let seconds = started.elapsed().as_secs_f64();
    times.sort_by(f64::total_cmp);
    let quantile = |q: f64| (!times.is_empty()).then(|| times[((times.len() - 1) as f64 * q).round() as usize]);
    let report = DriverReport {
        client: "async-nats".into(),
        client_version: "0.42.0".into(),
        server_version,
        phase: args.phase.into(),
        jobs: args.jobs,
        seconds,
        p50_us: quantile(0.5),
        p99_us: quantile(0.99),
    };
    println!("{}", serde_json::to_string(&report).map_err(|error| failed("report", error))?);
    if args.phase == "drain" {
        let mut stream = first.get_stream(&stream_name).await.map_err(|error| failed("get the stream", error))?;
        let left = stream.info().await.map_err(|error| failed("stream info", error))?.state.messages;
        if left != 0 {
            return Err(BenchError::Unexpected(format!("{left} messages left after the drain")));
        }
    }
    for client in clients {
        client.drain().await.map_err(|error| failed("close", error))?;
    }
    Ok(())
}

/// Takes one message (waiting up to 5 s at a time for one) and acknowledges it, waiting for the
/// server to confirm the acknowledgement.
async fn take_and_ack(consumer: &consumer::PullConsumer) -> Result<(), BenchError> {
    loop {
        let mut batch = consumer
            .fetch()
            .max_messages(1)
            .expires(Duration::from_secs(5))
            .messages()
            .await
            .map_err(|error| failed("fetch", error))?;
        if let Some(message) = batch.next().await {
            let message = message.map_err(|error| failed("message", error))?;
            message.double_ack().await.map_err(|error| failed("ack", error))?;
            return Ok(());
        }
    }
}
