//! The connection and its calls: [`SeppClient`] with its producer half (`enqueue`,
//! `enqueue_batch`, `enqueue_atomic`, `cancel`), its consumer half (`reserve`, `ack`, `nack`,
//! `extend`; a Worker's `Consume` stream is the Worker's own), schedules (`upsert_schedule`,
//! `delete_schedule`, `list_schedules`), pauses (`pause_queue`, `resume_queue`, `list_pauses`),
//! server info and dead-letter drains; plus its builder, errors, retry policy and the
//! coalescing of concurrent enqueues and acks (`coalesce`).
//!
//! Every call runs in a `tracing` span named `sepp.<call>` (`otel.kind = "client"`), carries
//! the current trace context as `traceparent`/`tracestate` metadata (with the `opentelemetry`
//! feature), and has a deadline: `rpc_timeout` (30 s), or for reserve its wait plus 10 s.
//! Against a cluster, every call follows a follower's redirect to the leader (see the crate's
//! Clusters section), which is no retry.

mod builder;
mod cluster;
mod coalesce;
mod error;
mod retry;
mod wire;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use prost::Message;
use prost::bytes::Bytes;
use tonic::transport::Channel;
use tonic::{Response, Status};
use tracing::Instrument;
use tracing::field::Empty;

pub use builder::{ApiKeyInterceptor, SeppClientBuilder};
pub use error::{CancelError, ClientError, EnqueueError, LeaseError, ReserveError};
pub use retry::{RetryDirective, RetryPolicy};

use crate::types::Lease;
use crate::{
    AtomicEnqueueError, DeadLetterRecord, EnqueueAck, EnqueueRequest, Job, JobCtx, JobRejection, JobValidationError,
    ReserveOptions, ServerInfo, convert, otel, proto as pb,
};
use cluster::Route;
use retry::{RetryScope, with_retries};
pub(crate) use wire::Node;
use wire::Rpc;

/// Slack added to a reserve's wait for its call deadline, so the server answers (empty) before
/// the deadline fires.
const RESERVE_DEADLINE_SLACK: Duration = Duration::from_secs(10);

/// A connection to a sepp server, or to the leader of a sepp cluster, which it follows (see the
/// crate's [Clusters](crate#clusters) section). Cheap to clone: clones share the channel (and
/// follow the leader together), the retry policy and the timeout, and it is `Send + Sync`. There
/// is nothing to close: dropping the last clone closes the connection.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use sepp_client::client::{RetryDirective, SeppClient};
/// use sepp_client::{EnqueueRequest, Payload, ReserveOptions};
///
/// let client = SeppClient::connect("http://127.0.0.1:50051").await?;
/// let ack = client
///     .enqueue(EnqueueRequest::new("emails", "send")?.with_payload(Payload::new(b"hi".to_vec(), "text/plain")))
///     .await?;
/// let options = ReserveOptions::new(["emails"], Duration::from_secs(30))?;
/// if let Some(jobs) = client.reserve(&options).await? {
///     for job in jobs {
///         if job.payload.is_some() {
///             client.ack(&job.ctx).await?;
///         } else {
///             client.nack(&job.ctx, RetryDirective::DeadLetter, "no payload").await?;
///         }
///     }
/// }
/// # let _ = ack; Ok(()) }
/// ```
#[derive(Clone)]
pub struct SeppClient {
    route: Arc<Route>,
    retry_policy: RetryPolicy,
    rpc_timeout: Duration,
    /// Shared by clones; `None` when enqueue coalescing is off.
    pipeline: Option<Arc<coalesce::EnqueuePipeline>>,
    /// Shared by clones; `None` when ack coalescing is off.
    acks: Option<Arc<coalesce::AckPipeline>>,
}

impl fmt::Debug for SeppClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SeppClient")
            .field("addr", &self.route.current().name())
            .field("retry_policy", &self.retry_policy)
            .field("rpc_timeout", &self.rpc_timeout)
            .field("coalesce_enqueues", &self.pipeline.is_some())
            .field("coalesce_acks", &self.acks.is_some())
            .finish_non_exhaustive()
    }
}

impl SeppClient {
    /// The default deadline of every call but reserve.
    pub const DEFAULT_RPC_TIMEOUT: Duration = Duration::from_secs(30);

    /// Connects to `addr` (`host:port`, `http://…` or `https://…`) without an API key and with
    /// the defaults; the same as `SeppClient::builder(addr).connect()`.
    pub async fn connect(addr: impl Into<String>) -> Result<Self, ClientError> {
        Self::builder(addr).connect().await
    }

    /// A builder for a connection to `addr`, to set an API key, TLS, retries and limits.
    pub fn builder(addr: impl Into<String>) -> SeppClientBuilder {
        SeppClientBuilder::new(addr.into())
    }

    /// Wraps an existing channel: no API key, no retries, the 30 s call deadline.
    ///
    /// Such a client cannot dial another address, so it does not follow a cluster's leader: a
    /// node that is not the leader fails its calls with [`ClientError::Transport`]
    /// (UNAVAILABLE, with a message that names the leader). Give it a channel to the leader, or
    /// use [`connect`](Self::connect) or [`builder`](Self::builder).
    pub fn from_channel(channel: Channel) -> Self {
        let node = Node::new(None, channel, ApiKeyInterceptor::none(), None);
        Self::new(Route::fixed(node), RetryPolicy::default(), Self::DEFAULT_RPC_TIMEOUT)
    }

    pub(crate) fn new(route: Route, retry_policy: RetryPolicy, rpc_timeout: Duration) -> Self {
        let (pipeline, acks) = (Some(Arc::default()), Some(Arc::default()));
        Self { route: Arc::new(route), retry_policy, rpc_timeout, pipeline, acks }
    }

    /// This client (and the clones made from it afterwards) with ack coalescing on (the
    /// default) or off; see [`SeppClientBuilder::coalesce_acks`].
    #[must_use]
    pub fn with_coalesced_acks(mut self, coalesce: bool) -> Self {
        self.acks = coalesce.then(Arc::default);
        self
    }

    /// This client (and the clones made from it afterwards) with enqueue coalescing on (the
    /// default) or off; see [`SeppClientBuilder::coalesce_enqueues`].
    #[must_use]
    pub fn with_coalesced_enqueues(mut self, coalesce: bool) -> Self {
        self.pipeline = coalesce.then(Arc::default);
        self
    }

    /// The retry policy.
    pub fn retry_policy(&self) -> &RetryPolicy {
        &self.retry_policy
    }

    /// The deadline of every call but reserve.
    pub fn rpc_timeout(&self) -> Duration {
        self.rpc_timeout
    }

    /// Enqueues jobs, each accepted or rejected on its own: the answer has one result per job,
    /// in order, and a rejection is a value, not an error. Jobs without a trace context get the
    /// current span's. An empty batch fails with [`ClientError::EmptyBatch`] without a call.
    ///
    /// Concurrent `enqueue` / `enqueue_batch` calls of this client and its clones share
    /// `EnqueueBatch` calls (see the crate's [Coalescing](crate#coalescing) section): each
    /// caller still gets exactly its own results and errors, and a lone caller's call goes out
    /// at once.
    pub async fn enqueue_batch(
        &self,
        jobs: impl IntoIterator<Item = EnqueueRequest>,
    ) -> Result<Vec<Result<EnqueueAck, JobRejection>>, ClientError> {
        let jobs: Vec<EnqueueRequest> = jobs.into_iter().collect();
        if jobs.is_empty() {
            return Err(ClientError::EmptyBatch);
        }
        let span =
            tracing::info_span!("sepp.enqueue", otel.kind = "client", jobs = jobs.len(), otel.status_code = Empty);
        let call = async {
            let expected = jobs.len();
            let (request, scope) = batch_request(jobs);
            // A traced call keeps its own gRPC call, so the server's span is its child.
            let results = match &self.pipeline {
                Some(pipeline) if otel::current_trace_context().is_none() => {
                    let keyed = scope == RetryScope::Transient;
                    coalesce::submit(self, pipeline, request.jobs, keyed).await?
                }
                _ => {
                    let (result, _) = self.unary(wire::ENQUEUE_BATCH, Some(scope), self.rpc_timeout, request).await;
                    result?.into_inner().results
                }
            };
            if results.len() != expected {
                return Err(ClientError::BatchResultCountMismatch { expected, got: results.len() });
            }
            results
                .into_iter()
                .map(|result| match result.outcome {
                    Some(pb::job_result::Outcome::Success(ack)) => Ok(Ok(convert::enqueue_ack(ack))),
                    Some(pb::job_result::Outcome::Rejection(rejection)) => Ok(Err(convert::rejection(Some(rejection)))),
                    None => Err(ClientError::MalformedResponse("missing outcome in job result")),
                })
                .collect()
        };
        traced(span, call).await
    }

    /// Enqueues one job; a rejection is [`EnqueueError::Rejected`].
    pub async fn enqueue(&self, job: EnqueueRequest) -> Result<EnqueueAck, EnqueueError> {
        let mut results = self.enqueue_batch([job]).await?;
        match results.pop() {
            Some(Ok(ack)) => Ok(ack),
            Some(Err(rejection)) => Err(EnqueueError::Rejected(rejection)),
            None => Err(EnqueueError::Client(ClientError::BatchResultCountMismatch { expected: 1, got: 0 })),
        }
    }

    /// Enqueues jobs all or nothing: either every job is written (their receipts come back in
    /// order) or none is, and [`AtomicEnqueueError::Validation`] lists every refused job.
    pub async fn enqueue_atomic(
        &self,
        jobs: impl IntoIterator<Item = EnqueueRequest>,
    ) -> Result<Vec<EnqueueAck>, AtomicEnqueueError> {
        let jobs: Vec<EnqueueRequest> = jobs.into_iter().collect();
        if jobs.is_empty() {
            return Err(ClientError::EmptyBatch.into());
        }
        let span = tracing::info_span!(
            "sepp.enqueue_atomic",
            otel.kind = "client",
            jobs = jobs.len(),
            otel.status_code = Empty
        );
        let call = async {
            let expected = jobs.len();
            let (request, scope) = batch_request(jobs);
            let (result, _) = self.unary(wire::ENQUEUE_ATOMIC, Some(scope), self.rpc_timeout, request).await;
            match result.map_err(ClientError::from)?.into_inner().outcome {
                Some(pb::enqueue_atomic_response::Outcome::Success(success)) => {
                    if success.responses.len() != expected {
                        let got = success.responses.len();
                        return Err(ClientError::BatchResultCountMismatch { expected, got }.into());
                    }
                    Ok(success.responses.into_iter().map(convert::enqueue_ack).collect())
                }
                Some(pb::enqueue_atomic_response::Outcome::Rejection(failure)) => {
                    let errors = failure
                        .errors
                        .into_iter()
                        .map(|error| JobValidationError {
                            index: error.index,
                            rejection: convert::rejection(error.rejection),
                        })
                        .collect();
                    Err(AtomicEnqueueError::Validation(errors))
                }
                None => Err(ClientError::MalformedResponse("missing outcome in atomic enqueue response").into()),
            }
        };
        traced(span, call).await
    }

    /// Reserves up to `max_jobs` ready jobs from the first queue that has any, waiting up to
    /// the wait timeout; `Ok(None)` when nothing became ready. Not retried under the retry
    /// policy (it is a long poll: just call it again), but on UNAVAILABLE while a cluster fails
    /// over, within the policy's failover window. Malformed jobs in the answer are skipped with a warning.
    pub async fn reserve(&self, options: &ReserveOptions) -> Result<Option<Vec<Job>>, ReserveError> {
        let span = tracing::info_span!(
            "sepp.reserve",
            otel.kind = "client",
            queues = ?options.queues(),
            worker_id = options.worker_id(),
            jobs = Empty,
            otel.status_code = Empty
        );
        let call = async {
            let request = pb::ReserveRequest {
                queues: options.queues().to_vec(),
                wait_timeout: (!options.wait_timeout().is_zero()).then(|| convert::duration(options.wait_timeout())),
                lease_duration: Some(convert::duration(options.lease_duration())),
                worker_id: options.worker_id().map(str::to_owned),
                max_jobs: options.max_jobs(),
            };
            let deadline = options.wait_timeout().saturating_add(RESERVE_DEADLINE_SLACK);
            let (result, _) = self.unary(wire::RESERVE, Some(RetryScope::Reserve), deadline, request).await;
            let wire_jobs = result.map_err(|status| ReserveError::from_status(&status))?.into_inner().jobs;
            let worker_id = options.worker_id().map(str::to_owned);
            let jobs: Vec<Job> = wire_jobs
                .into_iter()
                .filter_map(|job| {
                    let id = job.id.clone();
                    match convert::job(job, |expiry| Lease::new(self.clone(), worker_id.clone(), expiry)) {
                        Ok(job) => Some(job),
                        Err(error) => {
                            tracing::warn!(job_id = %id, %error, "skipping malformed job in reserve response");
                            None
                        }
                    }
                })
                .collect();
            tracing::Span::current().record("jobs", jobs.len());
            Ok((!jobs.is_empty()).then_some(jobs))
        };
        traced(span, call).await
    }

    /// Completes a job: it is deleted.
    ///
    /// Concurrent acks of this client and its clones share `AckBatch` calls where the server
    /// has them (see the crate's [Coalescing](crate#coalescing) section); each still gets
    /// exactly what its own `Ack` would have given.
    pub async fn ack(&self, ctx: &JobCtx) -> Result<(), LeaseError> {
        let span = lease_span("sepp.ack", ctx);
        let call = async {
            let request = pb::AckRequest { job_id: ctx.id.clone(), attempt: ctx.attempt, worker_id: worker_id(ctx) };
            // A traced ack keeps its own gRPC call, so the server's span is its child.
            let (result, attempts) = match &self.acks {
                Some(acks) if otel::current_trace_context().is_none() => {
                    coalesce::submit_ack(self, acks, request).await
                }
                _ => {
                    let (result, attempts) =
                        self.unary(wire::ACK, Some(RetryScope::Transient), self.rpc_timeout, request).await;
                    (result.map(drop), attempts)
                }
            };
            result.map_err(|status| lease_error("ack", &status, attempts))
        };
        traced(span, call).await
    }

    /// Fails a job: it is retried as `retry` says (or dead-lettered after its last attempt),
    /// with `reason` recorded (an empty reason is not sent). Returns whether the job was
    /// dead-lettered.
    pub async fn nack(
        &self,
        ctx: &JobCtx,
        retry: RetryDirective,
        reason: impl Into<String>,
    ) -> Result<bool, LeaseError> {
        let reason = reason.into();
        let span = lease_span("sepp.nack", ctx);
        let call = async {
            let strategy = match retry {
                RetryDirective::Default => pb::nack_retry::Strategy::Default(()),
                RetryDirective::After(delay) => pb::nack_retry::Strategy::Delay(convert::duration(delay)),
                RetryDirective::DeadLetter => pb::nack_retry::Strategy::DeadLetter(()),
            };
            let request = pb::NackRequest {
                job_id: ctx.id.clone(),
                attempt: ctx.attempt,
                reason: (!reason.is_empty()).then(|| reason.clone()),
                retry: Some(pb::NackRetry { strategy: Some(strategy) }),
                worker_id: worker_id(ctx),
            };
            let (result, attempts) =
                self.unary(wire::NACK, Some(RetryScope::Transient), self.rpc_timeout, request).await;
            result
                .map(|response| response.into_inner().dead_lettered)
                .map_err(|status| lease_error("nack", &status, attempts))
        };
        traced(span, call).await
    }

    /// Moves the job's lease deadline to now + `extension` (the server may clamp it) and
    /// returns the new deadline, which the context also remembers
    /// ([`JobCtx::lease_expiry`]).
    pub async fn extend(&self, ctx: &JobCtx, extension: Duration) -> Result<SystemTime, LeaseError> {
        let span = lease_span("sepp.extend", ctx);
        let call = async {
            let request = pb::ExtendRequest {
                job_id: ctx.id.clone(),
                attempt: ctx.attempt,
                lease_duration: Some(convert::duration(extension)),
                worker_id: worker_id(ctx),
            };
            let (result, attempts) =
                self.unary(wire::EXTEND, Some(RetryScope::Transient), self.rpc_timeout, request).await;
            let response = result.map_err(|status| lease_error("extend", &status, attempts))?.into_inner();
            Ok(extended(ctx, &response)?)
        };
        traced(span, call).await
    }

    /// The server's version, clock, limits and, on a cluster's node, its view of the cluster.
    /// An answer with a cluster tells the client that it talks to a cluster, so that its calls
    /// ride a failover from then on (see [`RetryPolicy::with_failover_window`]).
    pub async fn get_server_info(&self) -> Result<ServerInfo, ClientError> {
        let span = tracing::info_span!("sepp.get_server_info", otel.kind = "client", otel.status_code = Empty);
        let call = async {
            let request = pb::GetServerInfoRequest {};
            let (result, _) =
                self.unary(wire::GET_SERVER_INFO, Some(RetryScope::Transient), self.rpc_timeout, request).await;
            let info = convert::server_info(result?.into_inner())?;
            if let Some(acks) = &self.acks {
                acks.learned_features(&info.features);
            }
            if let Some(cluster) = &info.cluster {
                self.route.learned_cluster();
                self.route.learned_members(cluster.members.iter().map(|member| member.addr.clone()).collect());
            }
            Ok(info)
        };
        traced(span, call).await
    }

    /// Cancels the job `job_id`, whatever it is doing, with `reason` kept as its dead letter's
    /// last reason. A ready or scheduled job is dead-lettered at once (cause
    /// [`DeadLetterCause::Cancelled`](crate::DeadLetterCause::Cancelled)); a leased one is
    /// marked, its worker's next extend, ack or nack fails with [`LeaseError::JobNotFound`]
    /// (as a lost lease, so a [`Worker`](crate::worker::Worker) with auto-extend stops its
    /// handler) and it is never delivered again. Returns whether the job was leased. Needs a
    /// server of 0.2 or later (a 0.1 server answers UNIMPLEMENTED). Retried on transient failures under the retry policy:
    /// a repeated cancel is harmless.
    pub async fn cancel(&self, job_id: &str, reason: Option<&str>) -> Result<bool, CancelError> {
        let span = tracing::info_span!("sepp.cancel_job", otel.kind = "client", job_id, otel.status_code = Empty);
        let call = async {
            let request = pb::CancelJobRequest { job_id: job_id.to_owned(), reason: reason.map(str::to_owned) };
            let (result, _) =
                self.unary(wire::CANCEL_JOB, Some(RetryScope::Transient), self.rpc_timeout, request).await;
            result.map(|response| response.into_inner().was_leased).map_err(|status| CancelError::from_status(&status))
        };
        traced(span, call).await
    }

    /// Creates or replaces the recurring schedule `definition.id`: each slot of its cadence
    /// fires one job made from its template (see [`ScheduleDefinition`](crate::ScheduleDefinition)).
    /// Needs a server of 0.2 or later. Retried on transient failures: setting twice is harmless.
    pub async fn upsert_schedule(
        &self,
        definition: crate::ScheduleDefinition,
    ) -> Result<crate::ScheduleInfo, ClientError> {
        let span = tracing::info_span!(
            "sepp.upsert_schedule",
            otel.kind = "client",
            id = definition.id.as_str(),
            otel.status_code = Empty
        );
        let call = async {
            let request = pb::UpsertScheduleRequest { schedule: Some(convert::schedule_definition(definition)) };
            let (result, _) =
                self.unary(wire::UPSERT_SCHEDULE, Some(RetryScope::Transient), self.rpc_timeout, request).await;
            Ok(convert::schedule_info(result?.into_inner()))
        };
        traced(span, call).await
    }

    /// Deletes a schedule; answers whether there was one. The jobs it fired stay.
    pub async fn delete_schedule(&self, id: &str) -> Result<bool, ClientError> {
        let span = tracing::info_span!("sepp.delete_schedule", otel.kind = "client", id, otel.status_code = Empty);
        let call = async {
            let request = pb::DeleteScheduleRequest { id: id.to_owned() };
            let (result, _) =
                self.unary(wire::DELETE_SCHEDULE, Some(RetryScope::Transient), self.rpc_timeout, request).await;
            Ok(result?.into_inner().deleted)
        };
        traced(span, call).await
    }

    /// Pauses `queue` (every queue, also those that do not exist yet, when it is empty) until
    /// `until` or until resumed: reserves skip it, enqueues are still accepted, leases already
    /// held go on. Needs a server of 0.2 or later.
    pub async fn pause_queue(
        &self,
        queue: &str,
        until: Option<SystemTime>,
        reason: Option<&str>,
    ) -> Result<(), ClientError> {
        let span = tracing::info_span!("sepp.pause_queue", otel.kind = "client", queue, otel.status_code = Empty);
        let call = async {
            let request = pb::PauseQueueRequest {
                queue: queue.to_owned(),
                until: until.and_then(convert::timestamp),
                reason: reason.map(str::to_owned),
            };
            let (result, _) =
                self.unary(wire::PAUSE_QUEUE, Some(RetryScope::Transient), self.rpc_timeout, request).await;
            result?;
            Ok(())
        };
        traced(span, call).await
    }

    /// Lifts the pause of `queue` (of every queue when empty; queues paused by name stay
    /// paused); answers whether it was paused.
    pub async fn resume_queue(&self, queue: &str) -> Result<bool, ClientError> {
        let span = tracing::info_span!("sepp.resume_queue", otel.kind = "client", queue, otel.status_code = Empty);
        let call = async {
            let request = pb::ResumeQueueRequest { queue: queue.to_owned() };
            let (result, _) =
                self.unary(wire::RESUME_QUEUE, Some(RetryScope::Transient), self.rpc_timeout, request).await;
            Ok(result?.into_inner().resumed)
        };
        traced(span, call).await
    }

    /// The paused queues with the end of each pause (`None`: until resumed); an empty queue
    /// name stands for the pause of every queue.
    pub async fn list_pauses(&self) -> Result<Vec<(String, Option<SystemTime>)>, ClientError> {
        let span = tracing::info_span!("sepp.list_pauses", otel.kind = "client", otel.status_code = Empty);
        let call = async {
            let (result, _) = self
                .unary(wire::LIST_PAUSES, Some(RetryScope::Transient), self.rpc_timeout, pb::ListPausesRequest {})
                .await;
            Ok(result?
                .into_inner()
                .pauses
                .into_iter()
                .map(|pause| (pause.queue, pause.until.as_ref().and_then(|until| convert::system_time(until).ok())))
                .collect())
        };
        traced(span, call).await
    }

    /// Every schedule, by id, with its next firing.
    pub async fn list_schedules(&self) -> Result<Vec<crate::ScheduleInfo>, ClientError> {
        let span = tracing::info_span!("sepp.list_schedules", otel.kind = "client", otel.status_code = Empty);
        let call = async {
            let (result, _) = self
                .unary(wire::LIST_SCHEDULES, Some(RetryScope::Transient), self.rpc_timeout, pb::ListSchedulesRequest {})
                .await;
            Ok(result?.into_inner().schedules.into_iter().map(convert::schedule_info).collect())
        };
        traced(span, call).await
    }

    /// Removes and returns up to `max` of the oldest dead-letter records, of one queue or of all.
    /// Destructive, so never retried (a lost answer would lose the records). `max == 0` returns
    /// nothing without a call. An empty answer may also mean the server keeps no dead letters
    /// (see [`ServerInfo::dead_letter_retention_enabled`]). Malformed records are skipped with
    /// a warning.
    pub async fn drain_dead_letters(
        &self,
        queue: Option<&str>,
        max: u32,
    ) -> Result<Vec<DeadLetterRecord>, ClientError> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let span = tracing::info_span!(
            "sepp.drain_dead_letters",
            otel.kind = "client",
            queue,
            max,
            drained = Empty,
            otel.status_code = Empty
        );
        let call = async {
            let request = pb::DrainDeadLettersRequest { queue: queue.map(str::to_owned), max: Some(max) };
            let (result, _) = self.unary(wire::DRAIN_DEAD_LETTERS, None, self.rpc_timeout, request).await;
            let records: Vec<DeadLetterRecord> = result?
                .into_inner()
                .records
                .into_iter()
                .filter_map(|record| {
                    let id = record.job.as_ref().map(|job| job.id.clone()).unwrap_or_default();
                    convert::dead_letter(record)
                        .inspect_err(
                            |error| tracing::warn!(job_id = %id, %error, "skipping malformed dead-letter record"),
                        )
                        .ok()
                })
                .collect();
            tracing::Span::current().record("drained", records.len());
            Ok(records)
        };
        traced(span, call).await
    }

    /// Opens a `Consume` stream with `open` as its first message, following a cluster's leader
    /// (at most `cluster::MAX_REDIRECTS` times). Returns the sender of the later messages
    /// (encoded) and the server's messages; the node it runs on is remembered for
    /// [`consume_unavailable`](Self::consume_unavailable).
    pub(crate) async fn open_consume(&self, open: pb::ConsumeRequest) -> Result<ConsumeStream, Status> {
        let first = Bytes::from(open.encode_to_vec());
        let mut redirects = 0;
        loop {
            let node = self.route.current();
            let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
            sender.send(first.clone()).expect("the receiver is alive");
            let mut request =
                tonic::Request::new(tonic::codegen::tokio_stream::wrappers::UnboundedReceiverStream::new(receiver));
            otel::inject(request.metadata_mut());
            match node.consume(request).await {
                Ok(response) => return Ok(ConsumeStream { sender, inbound: response.into_inner(), node }),
                Err(status) if status.code() == tonic::Code::Unavailable && redirects < cluster::MAX_REDIRECTS => {
                    if !self.route.stream_unavailable(&node, &status, "consume") {
                        return Err(status);
                    }
                    redirects += 1;
                }
                Err(status) => return Err(status),
            }
        }
    }

    /// After a `Consume` stream ended or failed UNAVAILABLE: follows the leader it names or
    /// asks another node, as calls do; whether it may be reopened at once (at the leader).
    pub(crate) fn consume_unavailable(&self, stream_node: &Arc<Node>, status: &Status) -> bool {
        self.route.stream_unavailable(stream_node, status, "consume")
    }

    /// One unary call with a deadline, trace metadata and, when `scope` is given, the retry
    /// policy; each attempt follows a cluster's leader (see `cluster`). Returns the last result
    /// and the number of attempts (redirects are no attempts).
    async fn unary<Req, Resp>(
        &self,
        rpc: Rpc<Req, Resp>,
        scope: Option<RetryScope>,
        deadline: Duration,
        message: Req,
    ) -> (Result<Response<Resp>, Status>, u32)
    where
        Req: Message,
        Resp: Message + Default + Send + Sync + 'static,
    {
        // Encoded once: every attempt, and every redirect within one, sends these bytes.
        self.unary_encoded(rpc, scope, deadline, Bytes::from(message.encode_to_vec())).await
    }

    /// [`SeppClient::unary`] with the request already encoded (`body`): coalesced enqueues
    /// encode each caller's jobs in the caller's task and send the bytes joined.
    pub(crate) async fn unary_encoded<Req, Resp>(
        &self,
        rpc: Rpc<Req, Resp>,
        scope: Option<RetryScope>,
        deadline: Duration,
        body: Bytes,
    ) -> (Result<Response<Resp>, Status>, u32)
    where
        Resp: Message + Default + Send + Sync + 'static,
    {
        let operation = rpc.operation;
        let attempt = || {
            let body = body.clone();
            async move {
                // The header tells the server; this bounds the wait on our side too, redirects
                // included.
                match tokio::time::timeout(deadline, self.route.send(rpc, body, deadline)).await {
                    Ok(result) => result,
                    Err(_) => Err(Status::deadline_exceeded(format!("{operation} exceeded its {deadline:?} deadline"))),
                }
            }
        };
        match scope {
            Some(scope) => {
                with_retries(&self.retry_policy, operation, scope, || self.route.in_cluster(), attempt).await
            }
            None => (attempt().await, 1),
        }
    }
}

/// An open `Consume` stream: what the worker sends (encoded `ConsumeRequest`s; dropping the
/// sender half-closes), what the server sends, and the node it runs on.
pub(crate) struct ConsumeStream {
    pub(crate) sender: tokio::sync::mpsc::UnboundedSender<Bytes>,
    pub(crate) inbound: tonic::Streaming<pb::ConsumeResponse>,
    pub(crate) node: Arc<Node>,
}

/// The wire batch, with the current trace context stamped on jobs that have none, and how it
/// may be retried: a job without an idempotency key makes ambiguous failures unsafe to repeat.
fn batch_request(jobs: Vec<EnqueueRequest>) -> (pb::EnqueueBatchRequest, RetryScope) {
    let scope = if jobs.iter().all(EnqueueRequest::has_idempotency_key) {
        RetryScope::Transient
    } else {
        RetryScope::KeylessEnqueue
    };
    let current = otel::current_trace_context();
    let wire = jobs
        .into_iter()
        .map(|job| {
            let mut wire = convert::enqueue_request(job);
            if wire.trace_context.is_none() {
                wire.trace_context = current.as_ref().map(convert::trace_context);
            }
            wire
        })
        .collect();
    (pb::EnqueueBatchRequest { jobs: wire }, scope)
}

/// The new lease deadline an `Extend` answered (by a call or on a Worker's stream), which `ctx`
/// remembers from now on.
pub(crate) fn extended(ctx: &JobCtx, response: &pb::ExtendResponse) -> Result<SystemTime, ClientError> {
    let expiry = response
        .lease_expires_at
        .as_ref()
        .and_then(|at| convert::system_time(at).ok())
        .ok_or(ClientError::MalformedResponse("extend returned an invalid lease_expires_at"))?;
    ctx.lease.set_expires_at(expiry);
    Ok(expiry)
}

fn worker_id(ctx: &JobCtx) -> Option<String> {
    ctx.worker_id().map(str::to_owned)
}

fn lease_span(name: &'static str, ctx: &JobCtx) -> tracing::Span {
    // `tracing` needs literal span names, hence one arm per operation.
    let worker_id = ctx.worker_id();
    match name {
        "sepp.ack" => tracing::info_span!(
            "sepp.ack", otel.kind = "client", job_id = %ctx.id, attempt = ctx.attempt, worker_id, otel.status_code = Empty
        ),
        "sepp.nack" => tracing::info_span!(
            "sepp.nack", otel.kind = "client", job_id = %ctx.id, attempt = ctx.attempt, worker_id, otel.status_code = Empty
        ),
        _ => tracing::info_span!(
            "sepp.extend", otel.kind = "client", job_id = %ctx.id, attempt = ctx.attempt, worker_id, otel.status_code = Empty
        ),
    }
}

fn lease_error(operation: &'static str, status: &Status, attempts: u32) -> LeaseError {
    let error = LeaseError::from_status(status);
    if attempts > 1 && matches!(error, LeaseError::JobNotFound) {
        tracing::warn!(
            operation,
            attempts,
            "job not found after a retried call: an earlier attempt may have succeeded and only its answer was lost"
        );
    }
    error
}

/// Runs `call` in `span`, marking the span as failed when it returns an error.
async fn traced<T, E>(span: tracing::Span, call: impl Future<Output = Result<T, E>>) -> Result<T, E> {
    let result = call.instrument(span.clone()).await;
    if result.is_err() {
        span.record("otel.status_code", "error");
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_retried_fully_only_when_every_job_has_a_key() {
        let keyed = EnqueueRequest::new("q", "t").unwrap().with_idempotency_key("k");
        let keyless = EnqueueRequest::new("q", "t").unwrap();
        let empty_key = EnqueueRequest::new("q", "t").unwrap().with_idempotency_key("");
        assert_eq!(batch_request(vec![keyed.clone(), keyed.clone()]).1, RetryScope::Transient);
        assert_eq!(batch_request(vec![keyed.clone(), keyless]).1, RetryScope::KeylessEnqueue);
        assert_eq!(batch_request(vec![keyed, empty_key]).1, RetryScope::KeylessEnqueue);
    }

    #[test]
    fn without_a_current_span_no_trace_context_is_stamped() {
        let (wire, _) = batch_request(vec![EnqueueRequest::new("q", "t").unwrap()]);
        assert_eq!(wire.jobs[0].trace_context, None);
    }

    #[tokio::test]
    async fn empty_batches_fail_before_any_call() {
        let client =
            SeppClient::from_channel(tonic::transport::Endpoint::from_static("http://127.0.0.1:1").connect_lazy());
        assert!(matches!(client.enqueue_batch([]).await, Err(ClientError::EmptyBatch)));
        assert!(matches!(
            client.enqueue_atomic(Vec::new()).await,
            Err(AtomicEnqueueError::Client(ClientError::EmptyBatch))
        ));
        // max == 0 returns at once, without reaching for the (unreachable) server.
        assert!(client.drain_dead_letters(None, 0).await.unwrap().is_empty());
        assert_eq!(client.rpc_timeout(), Duration::from_secs(30));
        assert_eq!(client.retry_policy().max_attempts(), 1);
    }

    #[tokio::test]
    async fn a_call_gives_up_at_the_rpc_timeout() {
        // A socket that completes the TCP handshake but never speaks: every call hangs.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{}", listener.local_addr().unwrap()));
        let node = Node::new(None, endpoint.unwrap().connect_lazy(), ApiKeyInterceptor::none(), None);
        let client = SeppClient::new(Route::fixed(node), RetryPolicy::default(), Duration::from_millis(50));
        let result = client.get_server_info().await;
        assert!(matches!(&result, Err(ClientError::Transport(_))), "{result:?}");
    }
}
