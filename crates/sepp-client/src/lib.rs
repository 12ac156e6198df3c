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
//! - **Connecting** to the given address is eager (5 s timeout); a cluster leader the client
//!   is redirected to is dialed on its first call. The address may be `host:port`, `http://…` or
//!   `https://…`; `https://` or any TLS option turns TLS on (cargo feature `tls`: rustls with
//!   the platform roots, a custom CA, or a server-name override). HTTP/2 keepalive pings every
//!   30 s (10 s timeout), also while idle, so long polls survive proxies. The `user-agent` is
//!   `sepp-client/<version>`. An API key is sent as `authorization: Bearer <key>` on every
//!   call, and a warning is logged when it would travel without TLS.
//! - **Deadlines**: every call has `rpc_timeout` (30 s); a reserve has its wait plus 10 s, so
//!   the server answers an idle long poll before the deadline fires.
//! - **Retries** are opt-in ([`RetryPolicy`](client::RetryPolicy)), except through a cluster's
//!   failover (see [Riding a failover](#riding-a-failover)): exponential backoff with a
//!   `[0.5, 1.0)` jitter factor, on UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED and
//!   RESOURCE_EXHAUSTED only. Reserve and dead-letter drains are never retried, and an enqueue
//!   in which any job lacks an idempotency key (an empty key counts as none) does not retry
//!   DEADLINE_EXCEEDED or ABORTED, after which its jobs may already exist.
//! - **Clusters**: a call that reaches a node which is not the leader is sent to the leader at
//!   once, whatever the retry policy (see [Clusters](#clusters)).
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
//!   Where the server offers it, the Worker consumes on a `Consume` stream instead of reserve
//!   calls (see [The Consume stream](#the-consume-stream)).
//! - **Coalescing**: concurrent enqueues share `EnqueueBatch` calls, and concurrent acks
//!   `AckBatch` calls, without delaying anyone (see [Coalescing](#coalescing)).
//!
//! ## Coalescing
//!
//! A [`SeppClient`](client::SeppClient) (with its clones) sends the calls that wait at the same
//! moment together, and never waits for more: no timer, no batch to fill. A lone caller's call
//! goes out at once.
//!
//! - **Enqueues**: the jobs of concurrent `enqueue` and `enqueue_batch` calls travel in one
//!   `EnqueueBatch` (at most 256 jobs and about 4 MiB per call; one caller's batch is never
//!   split), with at most 2 such calls in flight per lane; what arrives meanwhile goes out,
//!   together, the moment one of them returns. Calls whose jobs all carry an idempotency key
//!   and the others wait in separate lanes, since they are retried under different rules:
//!   each shared call is retried exactly as one caller's call of its kind would be. Every
//!   caller gets exactly its
//!   own jobs' results, in order (a rejected job is the same [`JobRejection`] its own call
//!   would give); a failure of the whole call is every sharer's error. A shared call the server
//!   refuses as a whole with INVALID_ARGUMENT (its `limits.max_enqueue_batch` may be lower) is
//!   sent again as one call per caller, so each sees what it would have seen alone. A caller
//!   dropped before its jobs went out takes them back. `enqueue_atomic` is never coalesced.
//! - **Acks**: concurrent `ack` calls (a [`Worker`](worker::Worker) reserving with calls acks
//!   the jobs of one reserve at about the same moment) share one `AckBatch` (at most 256 acks);
//!   one ack alone is a plain `Ack`. The server answers each item exactly as that `Ack` alone,
//!   so each caller gets what its own call would have given; the batch is retried as a whole
//!   under the retry policy, as each `Ack` would be. A server without the feature `ack_batch`
//!   (seen in [`get_server_info`](client::SeppClient::get_server_info), or an UNIMPLEMENTED
//!   answer) gets plain `Ack` calls from then on.
//!
//! Both are on by default; turn them off with
//! [`coalesce_enqueues(false)`](client::SeppClientBuilder::coalesce_enqueues) and
//! [`coalesce_acks(false)`](client::SeppClientBuilder::coalesce_acks) on the builder (or
//! [`with_coalesced_enqueues`](client::SeppClient::with_coalesced_enqueues) /
//! [`with_coalesced_acks`](client::SeppClient::with_coalesced_acks) on a client), and every
//! call is its own gRPC call. With the `opentelemetry` feature, a call made inside a trace keeps
//! its own gRPC call too, so that the server's span is its child.
//!
//! ## The Consume stream
//!
//! When the server lists the feature `consume` in `GetServerInfo`, a
//! [`Worker`](worker::Worker) opens one `Consume` stream instead of calling reserve: it grants
//! as many credits as it has free slots (`max_in_flight`), the server pushes jobs as soon as
//! they are ready (under every queue limit: `max_in_flight`, rates, pauses), and the Worker runs
//! them exactly as reserved jobs. Acks, nacks and extends go on the stream, what is ready at the
//! same moment in one message together with a credit for each slot an ack or nack frees; each
//! answer means exactly what the unary call's would (a cancelled job's settle is
//! [`LeaseError::JobNotFound`](client::LeaseError::JobNotFound), as on a call). A job cancelled
//! ([`SeppClient::cancel`](client::SeppClient::cancel)) while its handler runs is pushed on the
//! stream, and the Worker aborts that handler at once (no wait for its lease or the next
//! extend); the job is neither acked nor nacked.
//!
//! - A server without `Consume` (sepp 0.1, or an older 0.2 build: it answers UNIMPLEMENTED or
//!   lacks the feature) gets the reserve calls, as before.
//! - A stream that ends UNAVAILABLE naming the leader (`sepp-leader`: it reached a cluster
//!   follower) is reopened at the leader at once, as calls follow it; one that ends otherwise
//!   (a server shutting down, an error) is reopened after the Worker's reserve-error backoff,
//!   having asked another node who leads, as calls do. Settles that waited for a stream, or
//!   were unanswered when it ended, are sent as unary calls under the retry policy. Jobs the
//!   Worker holds keep running across a reopening.
//! - On shutdown the Worker grants no more credits, lets its jobs finish and settle, and then
//!   closes the stream.
//! - [`with_streaming(false)`](worker::Worker::with_streaming) keeps the Worker on reserve calls.
//!
//! ## Clusters
//!
//! A sepp cluster runs three or more nodes, and only its leader serves the queue calls. Give
//! [`SeppClient::connect`](client::SeppClient::connect) (or the builder) the address of any
//! node. Every call says the client follows the leader itself (the metadata entry
//! `sepp-follow-leader`), so a node that is not the leader refuses it with UNAVAILABLE before
//! doing any of it and, when it knows the leader, names the leader's address (`host:port`, in
//! the response metadata entry `sepp-leader`). The client then switches to the leader and sends
//! the same call there at once (with
//! [`follow_leader(false)`](client::SeppClientBuilder::follow_leader), calls go without that
//! entry and a follower forwards them to the leader instead: one hop more, for a client that can
//! reach only some nodes):
//!
//! - The leader's channel gets everything the client was configured with: plaintext or TLS
//!   (with the same trusted roots or CA, the same TLS configuration and the same server-name
//!   override), the API key, the connect timeout, keepalive, user agent and receive limit; the
//!   call keeps its deadline, which covers the redirects. With TLS, each node's certificate must
//!   be valid for the name the client checks: the node's host, or the override when one is set.
//!   The leader's channel connects on its first call (within the 5 s connect timeout), so a
//!   leader that is down fails that call quickly.
//! - Each switch is logged at info level, `following the cluster leader` with the fields `to`
//!   and `from`. Later calls, from every clone of the client and from a
//!   [`Worker`](worker::Worker) built on it, go straight to the leader. The channel switched
//!   away from closes when the calls still running on it have ended; those calls finish or fail
//!   normally. When several calls are redirected at once, one of them switches and the others
//!   follow it.
//! - Sending a redirected call again is not a retry, because the node that refused it executed
//!   nothing: it does not use up an attempt of the [`RetryPolicy`](client::RetryPolicy), it
//!   happens with the default policy (one attempt), and it applies to every call, reserve and
//!   `drain_dead_letters` included, although those two are otherwise never retried.
//! - An attempt follows at most 3 redirects, because nodes that disagree during an election can
//!   send a call round in a circle (a warning is logged). After that the UNAVAILABLE fails the
//!   attempt like any other: the retry policy may try again (and each new attempt may again
//!   follow up to 3 redirects), or the call fails with
//!   [`ClientError::Transport`](client::ClientError::Transport).
//! - A node that knows no leader, because an election is running, answers a plain UNAVAILABLE:
//!   a transient failure like any other, for the retry policy.
//! - When the node calls go to fails with UNAVAILABLE and names no leader (it stopped, so the
//!   connection is refused, or it lost its leadership), the next attempt, or the next call, asks
//!   another node who leads now: the address the client was configured with, after a leader it
//!   followed, or, once `get_server_info` has listed the members, the next member (in address
//!   order, round). Each such switch is logged at info level. Until the election that follows
//!   has ended, the other nodes still name the old leader, or none.
//! - A leader that loses its leadership while a write is being committed answers ABORTED: the
//!   outcome is unknown. The retry rules treat it like any other ABORTED, so an enqueue with a
//!   job that has no idempotency key is not retried.
//!
//! A client made with [`SeppClient::from_channel`](client::SeppClient::from_channel) cannot dial
//! another address, so it does not follow the leader: a node that is not the leader fails its
//! calls with [`ClientError::Transport`](client::ClientError::Transport) (UNAVAILABLE, with a
//! message that names the leader). Give such a client a channel to the leader, or use `connect`.
//! It does not ride failovers either, since its retries could not reach a new leader.
//!
//! ### Riding a failover
//!
//! When a leader goes down, the cluster serves again after an election (about a second with the
//! default timings). With the default [`RetryPolicy`](client::RetryPolicy) the client rides
//! that gap without the application seeing it, once it knows it talks to a cluster: a node has
//! named it the leader (any redirect), or `get_server_info` answered with
//! [`cluster`](ServerInfo::cluster). From then on a call that fails with a code it may retry
//! goes again, after the policy's own attempts are used up, until the policy's
//! [`failover_window`](client::RetryPolicy::with_failover_window) (15 s by default) has passed
//! since its first such failure; the sleeps start at the initial backoff (100 ms) and double up
//! to 1 s, with jitter, and each is logged at warn (`retrying sepp call while the cluster fails
//! over`). That is every call the policy may retry, with the codes it may retry except
//! RESOURCE_EXHAUSTED (overload, not a failover), so an enqueue with a job that has no
//! idempotency key rides only UNAVAILABLE; a reserve (and so a Worker) rides UNAVAILABLE only;
//! `drain_dead_letters` never rides. A call still failing when the window has passed fails as
//! usual. `with_failover_window(Duration::ZERO)` turns this off; a longer window rides a slower
//! failover. A client given the leader's own address has met no redirect: call
//! `get_server_info` once after connecting, so that it knows, and knows the other members to ask
//! when that leader dies. The same answer serves health checks: `cluster` is `None` on a single
//! server, and otherwise a [`ClusterInfo`] with the node's id, role, term, leader and members.
//!
//! ## Logging and OpenTelemetry
//!
//! Logs are `tracing` events (info: connect, following a cluster's leader, worker start and
//! stop; warn: retries, giving up on redirects, skipped jobs, reserve errors, unhandled types,
//! handler errors; error: connect failures, panics, lost leases, failed acks and nacks). Every call runs in a `tracing` span named `sepp.<call>`
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
//!   [`Worker::worker_id`](worker::Worker::worker_id); following a cluster's leader (see
//!   [Clusters](#clusters)).
//!
//! Compared with the Python client, this crate treats an empty idempotency key as none, makes
//! no call for `drain_dead_letters(_, 0)`, refuses jobs without `enqueued_at` or
//! `lease_expires_at`, and nacks unhandled or crashed jobs with a backoff instead of an
//! immediate retry.

// No unsafe code here; a panic in the library is a bug with a message (`expect` says what was
// assumed).
#![forbid(unsafe_code)]
#![deny(clippy::unwrap_used)]
#![cfg_attr(test, allow(clippy::unwrap_used))]
#![warn(missing_docs)]

pub mod client;
mod convert;
mod otel;
mod types;
pub mod worker;

/// The generated wire types of `sepp.v1` (the client sends them itself: see `client::wire`).
#[allow(missing_docs, dead_code, clippy::all, clippy::pedantic)]
mod proto {
    tonic::include_proto!("sepp.v1");
}

pub use types::*;
