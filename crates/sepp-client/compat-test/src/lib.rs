//! A program written against the sepp-rs 0.1 API, compiled against `sepp-client` renamed to
//! `sepp_rs` (see `Cargo.toml`). It names every public path of the sepp-rs 0.1 API (the crate
//! root types, `sepp_rs::client::*` and `sepp_rs::worker::*`) and calls the 0.1 methods with
//! their 0.1 argument and result types, spelled out, so a renamed or retyped item fails to
//! build. `tests/compat.rs` runs it against the real server.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use sepp_rs::client::{
    ApiKeyInterceptor, ClientError, EnqueueError, LeaseError, ReserveError, RetryDirective, RetryPolicy, SeppClient,
    SeppClientBuilder,
};
use sepp_rs::worker::{HandlerError, ShutdownHandle, Worker, WorkerBuilderError};
use sepp_rs::{
    AtomicEnqueueError, DeadLetterCause, DeadLetterRecord, EnqueueAck, EnqueueRequest, EnqueueRequestBuilderError, Job,
    JobConversionError, JobCtx, JobRejection, JobValidationError, Payload, Primitive, Priority, PriorityOutOfRange,
    ReserveOptions, ReserveOptionsError, ServerInfo, ServerInfoError, TraceContext, TraceContextError,
};

/// Any error of the program.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// What one run saw.
#[derive(Debug, Default)]
pub struct Report {
    /// Jobs acked by the worker's handler.
    pub handled: usize,
    /// Records drained from the dead-letter queue.
    pub drained: usize,
    /// The server's version.
    pub server_version: String,
}

/// Builds requests, options and policies only (no server needed).
pub fn build_values() -> Result<(Vec<EnqueueRequest>, ReserveOptions, RetryPolicy), Error> {
    let priority: Result<Priority, PriorityOutOfRange> = Priority::new(7);
    let priority = priority?;
    let _: Priority = Priority::try_from(3u8)?;
    let _: u8 = Priority::MAX.get();
    let _ = [Priority::MIN, Priority::P0, Priority::P5, Priority::P9];
    let trace: Result<TraceContext, TraceContextError> =
        TraceContext::new("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    let trace = trace?.with_tracestate("vendor=1");
    let _: &str = trace.traceparent();
    let _: Option<&str> = trace.tracestate();
    let _: Option<TraceContext> = TraceContext::from_current_otel();
    let _: Option<opentelemetry::trace::SpanContext> = trace.otel_span_context();
    drop(trace.attach_to_otel());

    let custom: HashMap<String, Primitive> = HashMap::from([
        ("s".to_owned(), Primitive::from("text")),
        ("owned".to_owned(), Primitive::from(String::from("text"))),
        ("i64".to_owned(), Primitive::from(1i64)),
        ("i32".to_owned(), Primitive::from(1i32)),
        ("f64".to_owned(), Primitive::from(0.5f64)),
        ("bool".to_owned(), Primitive::from(true)),
    ]);
    let first: Result<EnqueueRequest, EnqueueRequestBuilderError> = EnqueueRequest::new("compat", "greet");
    let first = first?
        .with_payload(Payload::new(b"ada".to_vec(), "text/plain"))
        .with_idempotency_key("compat-1")
        .with_priority(priority)
        .with_max_attempts(3)
        .with_custom(custom)
        .with_custom_entry("extra", 42)
        .with_trace_context(trace)
        .with_scheduled_at(SystemTime::now());
    let second = EnqueueRequest::new("compat", "other")?;
    let payload = Payload { data: vec![1, 2], encoding: "application/octet-stream".into() };
    let third = EnqueueRequest::new(String::from("compat"), String::from("doomed"))?.with_payload(payload).clone();
    assert!(matches!(EnqueueRequest::new("", "t"), Err(EnqueueRequestBuilderError::EmptyQueue)));

    let options: Result<ReserveOptions, ReserveOptionsError> =
        ReserveOptions::new(vec!["compat"], Duration::from_secs(30));
    let options =
        options?.with_wait_timeout(Duration::from_secs(5)).with_max_jobs(10).with_worker_id("compat-consumer")?;
    let _: Duration = options.wait_timeout();
    assert!(matches!(
        ReserveOptions::new(Vec::<String>::new(), Duration::from_secs(1)),
        Err(ReserveOptionsError::EmptyQueues)
    ));

    let policy = RetryPolicy::default()
        .with_max_attempts(3)
        .with_initial_backoff(Duration::from_millis(50))
        .with_max_backoff(Duration::from_secs(1))
        .with_multiplier(2.0)
        .without_jitter();
    let _: u32 = policy.max_attempts();
    Ok((vec![first, second, third], options, policy))
}

/// The 0.1 TLS options (cargo feature `tls`): a builder for a TLS connection, not connected.
pub fn tls_builder(ca_pem: &[u8]) -> SeppClientBuilder {
    SeppClient::builder("https://sepp.example:443")
        .tls()
        .tls_ca_certificate(ca_pem)
        .tls_domain("sepp.example")
        .tls_config(tonic::transport::ClientTlsConfig::new())
        .api_key("key")
}

/// Runs the producer, consumer and worker halves against the server at `addr`.
pub async fn run(addr: &str) -> Result<Report, Error> {
    let (requests, options, policy) = build_values()?;
    let builder: SeppClientBuilder =
        SeppClient::builder(addr).retry_policy(policy).rpc_timeout(Duration::from_secs(10));
    let client: SeppClient = builder.max_receive_message_bytes(16 << 20).connect().await?;
    let _plain: Result<SeppClient, ClientError> = SeppClient::connect(addr.to_owned()).await;
    let _interceptor: Result<ApiKeyInterceptor, ClientError> = ApiKeyInterceptor::new("key");

    let info: Result<ServerInfo, ClientError> = client.get_server_info().await;
    let info = info?;
    let _: (SystemTime, Duration, u32, u64, bool) =
        (info.server_time, info.max_lease_duration, info.max_reserve_batch, info.max_payload_bytes, info.strict_queues);

    let results: Result<Vec<Result<EnqueueAck, JobRejection>>, ClientError> =
        client.enqueue_batch(requests.clone()).await;
    for result in results? {
        let ack: EnqueueAck = result?;
        let _: (String, bool) = (ack.job_id, ack.deduplicated);
    }
    let single: Result<EnqueueAck, EnqueueError> = client.enqueue(requests[1].clone()).await;
    single?;
    let atomic: Result<Vec<EnqueueAck>, AtomicEnqueueError> = client.enqueue_atomic(vec![requests[1].clone()]).await;
    if let Err(AtomicEnqueueError::Validation(errors)) = &atomic {
        let _: Vec<(u32, &JobRejection)> =
            errors.iter().map(|e: &JobValidationError| (e.index, &e.rejection)).collect();
    }
    atomic?;

    // Consumer half: one batch by hand.
    let reserved: Result<Option<Vec<Job>>, ReserveError> = client.reserve(&options).await;
    for Job { payload, ctx } in reserved?.unwrap_or_default() {
        let _: (&str, &str, &str, Priority, u32, u32) =
            (&ctx.id, &ctx.queue, &ctx.job_type, ctx.priority, ctx.attempt, ctx.max_attempts);
        let _: (SystemTime, Option<SystemTime>, &HashMap<String, Primitive>, Option<&TraceContext>, SystemTime) =
            (ctx.enqueued_at, ctx.scheduled_at, &ctx.custom, ctx.trace_context.as_ref(), ctx.lease_expires_at);
        let extended: Result<SystemTime, LeaseError> = ctx.extend(Duration::from_secs(30)).await;
        extended?;
        let _: Result<SystemTime, LeaseError> = client.extend(&ctx, Duration::from_secs(30)).await;
        if ctx.job_type == "doomed" {
            let dead: Result<bool, LeaseError> = client.nack(&ctx, RetryDirective::DeadLetter, "compat").await;
            assert!(dead?);
        } else if payload.is_some() {
            let done: Result<(), LeaseError> = client.ack(&ctx).await;
            done?;
        } else {
            let retried: bool = client.nack(&ctx, RetryDirective::After(Duration::ZERO), String::from("again")).await?;
            assert!(!retried);
            let _ = RetryDirective::Default;
        }
        println!("{ctx}");
    }

    let drained: Result<Vec<DeadLetterRecord>, ClientError> = client.drain_dead_letters(Some("compat"), 10).await;
    let drained = drained?;
    for record in &drained {
        let _: DeadLetterCause = record.cause;
        let _: EnqueueRequest = record.to_enqueue_request();
        let _: EnqueueRequest = EnqueueRequest::from(record);
    }
    let _: Vec<DeadLetterRecord> = client.drain_dead_letters(None, 0).await?;

    // Worker half: whatever is left.
    let handled = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let first_handled = Arc::new(tokio::sync::Notify::new());
    let (counter, signal) = (handled.clone(), first_handled.clone());
    let worker: Result<Worker, WorkerBuilderError> =
        Worker::new(client.clone(), vec!["compat"], Duration::from_secs(30));
    let worker = worker?
        .with_wait_timeout(Duration::from_secs(1))
        .with_max_jobs(4)
        .with_max_in_flight(4)
        .with_reserve_error_backoff(Duration::from_millis(100))
        .with_worker_id("compat-worker")?
        .with_auto_extend()
        .with_auto_extend_interval(Duration::from_secs(10))
        .handle("other", move |payload: Option<Payload>, ctx: Arc<JobCtx>| {
            let (counter, signal) = (counter.clone(), signal.clone());
            async move {
                let _ = (payload, ctx.attempt);
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                signal.notify_one();
                Ok::<(), HandlerError>(())
            }
        })?
        .replace_handler("greet", |_, _| async { Err(HandlerError::retry("later")) })
        .remove_handler("greet")
        .with_catch_all_handler(|_, _| async { Err(HandlerError::retry_after("unknown", Duration::from_secs(1))) });
    let _ = HandlerError::permanent("never");
    let shutdown: ShutdownHandle = worker.shutdown_handle();
    let running = tokio::spawn(worker.run());
    tokio::time::timeout(Duration::from_secs(30), first_handled.notified()).await?;
    shutdown.shutdown();
    assert!(shutdown.is_shutdown());
    running.await?;

    // Error types that 0.1 code matches on.
    let _ = |error: ClientError| match error {
        ClientError::Connect { addr, reason } => format!("{addr}: {reason}"),
        ClientError::BatchResultCountMismatch { expected, got } => format!("{expected}/{got}"),
        ClientError::MalformedJob(JobConversionError::MissingField(field)) => field.to_owned(),
        ClientError::MalformedServerInfo(ServerInfoError::InvalidServerTime(seconds)) => seconds.to_string(),
        other => other.to_string(),
    };
    let _ = |error: LeaseError| {
        matches!(error, LeaseError::JobNotFound | LeaseError::AttemptMismatch | LeaseError::Client(_))
    };
    let _ = |error: ReserveError| matches!(error, ReserveError::UnknownQueues(_) | ReserveError::Client(_));
    let _ = |error: EnqueueError| matches!(error, EnqueueError::Rejected(_) | EnqueueError::Client(_));
    let _ = |error: WorkerBuilderError| matches!(error, WorkerBuilderError::DuplicateHandler(_));

    Ok(Report {
        handled: handled.load(std::sync::atomic::Ordering::SeqCst),
        drained: drained.len(),
        server_version: info.version,
    })
}
