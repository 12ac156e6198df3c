//! # sepp-client
//!
//! The Rust client for sepp, a durable job queue: the producer half (enqueue; beyond 0.1 also
//! `cancel` and recurring schedules), the consumer half (reserve, ack, nack, extend), server
//! info and dead letters, and a [`Worker`](worker::Worker) that runs handlers for you.
//!
//! It is API-compatible with the 0.1 Rust client, `sepp-rs`: the same modules, type names,
//! method signatures, builder options, error enums and defaults. Code written for `sepp-rs` 0.1
//! compiles against this crate by renaming the dependency:
//!
//! ```toml
//! [dependencies]
//! sepp_rs = { package = "sepp-client", version = "0.2" }
//! ```
//!
//! ## Quickstart
//!
//! Start a server (`cargo run -p sepp-server` in this repository, listening on
//! `0.0.0.0:50051`), then:
//!
//! ```no_run
//! use std::sync::Arc;
//! use std::time::Duration;
//!
//! use sepp_client::client::SeppClient;
//! use sepp_client::worker::{HandlerError, Worker};
//! use sepp_client::{EnqueueRequest, JobCtx, Payload, Priority};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let client = SeppClient::connect("127.0.0.1:50051").await?;
//!
//!     // Producer: enqueue a job (a rejection is an `EnqueueError::Rejected`).
//!     let ack = client
//!         .enqueue(
//!             EnqueueRequest::new("emails", "send_welcome")?
//!                 .with_payload(Payload::new(br#"{"user":42}"#.to_vec(), "application/json"))
//!                 .with_priority(Priority::P5)
//!                 .with_idempotency_key("welcome-42"),
//!         )
//!         .await?;
//!     println!("enqueued {}", ack.job_id);
//!
//!     // Consumer: a Worker acks when the handler returns Ok, and nacks as a HandlerError says.
//!     let worker = Worker::new(client, ["emails"], Duration::from_secs(30))?
//!         .handle("send_welcome", |payload: Option<Payload>, ctx: Arc<JobCtx>| async move {
//!             let payload = payload.ok_or_else(|| HandlerError::permanent("no payload"))?;
//!             println!("{ctx}: sending to {}", String::from_utf8_lossy(&payload.data));
//!             Ok(())
//!         })?;
//!     let shutdown = worker.shutdown_handle();
//!     tokio::spawn(async move {
//!         let _ = tokio::signal::ctrl_c().await;
//!         shutdown.shutdown(); // stop reserving, finish in-flight jobs
//!     });
//!     worker.run().await;
//!     Ok(())
//! }
//! ```
//!
//! `examples/quickstart.rs` is the same program, runnable with
//! `cargo run -p sepp-client --example quickstart` (`SEPP_ADDR` picks the server);
//! `examples/traced.rs` shows tracing with OpenTelemetry.
//!
//! ## Cargo features
//!
//! - `opentelemetry` (default): W3C trace propagation, the linked consumer span, and Worker
//!   metrics (see below).
//! - `tls`: TLS through rustls (ring) with the platform's root certificates, a custom CA or a
//!   server-name override.
//!
//! ## Layout
//!
//! - The crate root holds the data types: [`EnqueueRequest`], [`Payload`], [`Priority`],
//!   [`Primitive`], [`TraceContext`], [`Job`] and [`JobCtx`], [`ReserveOptions`],
//!   [`JobRejection`], [`ServerInfo`], [`DeadLetterRecord`], and their validation errors.
//! - [`client`]: [`SeppClient`](client::SeppClient) and its builder, the errors
//!   ([`ClientError`](client::ClientError), [`LeaseError`](client::LeaseError), …),
//!   [`RetryPolicy`](client::RetryPolicy) and [`RetryDirective`](client::RetryDirective).
//! - [`worker`]: [`Worker`](worker::Worker), [`HandlerError`](worker::HandlerError) and
//!   [`ShutdownHandle`](worker::ShutdownHandle).
//!
//! ## Behaviour worth knowing
//!
//! - **Connecting** is eager (5 s timeout). The address may be `host:port`, `http://…` or
//!   `https://…`; `https://` or any TLS option turns TLS on (cargo feature `tls`: rustls with
//!   the platform roots, a custom CA, or a server-name override). HTTP/2 keepalive pings every
//!   30 s (10 s timeout), also while idle, so long polls survive proxies. The `user-agent` is
//!   `sepp-client/<version>`. An API key is sent as `authorization: Bearer <key>` on every
//!   call, and a warning is logged when it would travel without TLS.
//! - **Deadlines**: every call has `rpc_timeout` (30 s); a reserve has its wait plus 10 s, so
//!   the server answers an idle long poll before the deadline fires.
//! - **Retries** are opt-in ([`RetryPolicy`](client::RetryPolicy)): exponential backoff with a
//!   `[0.5, 1.0)` jitter factor, on UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED and
//!   RESOURCE_EXHAUSTED only. Reserve and dead-letter drains are never retried, and an enqueue
//!   in which any job lacks an idempotency key (an empty key counts as none) does not retry
//!   DEADLINE_EXCEEDED or ABORTED, after which its jobs may already exist.
//! - **Message size**: responses are limited to tonic's 4 MiB unless
//!   [`max_receive_message_bytes`](client::SeppClientBuilder::max_receive_message_bytes) says
//!   otherwise; the server allows 16 MiB. A reserve answer over the limit fails after the server
//!   leased its jobs, which then wait for their leases to expire.
//! - **Reserve** returns `Ok(None)` when nothing was ready and skips malformed jobs with a
//!   warning. `drain_dead_letters(_, 0)` makes no call.
//! - **The Worker** handles up to 16 jobs at once, waits 30 s per reserve, backs off 1 s after
//!   a failed reserve and 250 ms after a suspiciously early empty one, and nacks jobs without a
//!   handler, or whose handler panicked, for a retry after `min(2^attempt, 60)` s. With
//!   auto-extend, leases are extended at a third of the remaining granted lease; a handler whose
//!   lease is lost is aborted and its job left alone. Shutdown waits for every in-flight job,
//!   without a deadline: bound your handlers (for example with `tokio::time::timeout`).
//!
//! ## Logging and OpenTelemetry
//!
//! Logs are `tracing` events (info: connect, worker start and stop; warn: retries, skipped
//! jobs, reserve errors, unhandled types, handler errors; error: connect failures, panics, lost
//! leases, failed acks and nacks). Every call runs in a `tracing` span named `sepp.<call>`
//! (`sepp.enqueue`, `sepp.reserve`, `sepp.ack`, …) with `otel.kind = "client"`, and each job
//! the Worker handles runs in a root span `sepp.process` with `otel.kind = "consumer"`.
//!
//! With the default `opentelemetry` feature:
//!
//! - the W3C `traceparent`/`tracestate` of the current span is sent as call metadata, and
//!   written into the `trace_context` of every enqueued job that has none (so it points at the
//!   `sepp.enqueue` span);
//! - the Worker's `sepp.process` span is **linked** to the producer's span (not its child: the
//!   consumer's work is its own trace);
//! - the Worker records metrics on the global meter `sepp`: `sepp.jobs.processed`,
//!   `sepp.jobs.nacked` (`outcome` = `retry` | `dead_letter`), `sepp.jobs.in_flight`,
//!   `sepp.reserves.completed` (`jobs` = `some` | `empty`) and `sepp.reserves.failed`.
//!
//! The host application owns the exporter: it installs a tracer provider behind a
//! `tracing-opentelemetry` layer (and a global meter provider for metrics). Without that
//! layer, or without the feature, the spans are plain `tracing` spans and nothing is injected.
//!
//! ## Where this crate differs from sepp-rs 0.1
//!
//! - Span and metric names follow the other sepp clients: `sepp.<call>`, `sepp.process` and
//!   `sepp.*` on meter `sepp` (0.1 used `sepp-rs.<call>`, `sepp-rs.process` and `sepp_rs.*`).
//! - `host:port` addresses are accepted and `https://` turns TLS on (0.1 required a full URI
//!   and an explicit TLS option).
//! - The user agent is `sepp-client/<version>`.
//! - [`ReserveOptions::new`] refuses leases shorter than a millisecond (the server's unit), not
//!   only zero.
//! - Additions: accessors such as [`JobCtx::lease_expiry`], [`EnqueueRequest::queue`],
//!   [`ReserveOptions::queues`], [`JobRejection::is_transient`] and
//!   [`Worker::worker_id`](worker::Worker::worker_id).
//!
//! Compared with the Python client, this crate treats an empty idempotency key as none, makes
//! no call for `drain_dead_letters(_, 0)`, refuses jobs without `enqueued_at` or
//! `lease_expires_at`, and nacks unhandled or crashed jobs with a backoff instead of an
//! immediate retry.
#![warn(missing_docs)]

pub mod client;
mod convert;
mod otel;
mod types;
pub mod worker;

/// The generated wire types and client stub of `sepp.v1`.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
mod proto {
    tonic::include_proto!("sepp.v1");
}

pub use types::*;
