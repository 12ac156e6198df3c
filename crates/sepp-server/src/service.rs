//! The gRPC edge of `sepp.v1.QueueService`: one handler per RPC.
//!
//! A handler converts the request, validates what needs no state (on the caller's task, in
//! parallel), sends one command to the committer, and converts the answer. It makes no queue
//! decisions itself.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use sepp_core::validate::{self, LeaseTarget, NackStrategy, ReservePlan};
use sepp_core::{DeadLetterCause, JobId, Rejection};
use tokio::sync::oneshot;
use tonic::{Request, Response, Status};
use tracing::{Instrument, Span};
use tracing_opentelemetry::OpenTelemetrySpanExt;

use crate::convert;
use crate::live::LiveConfig;
use crate::logtext::{Bounded, MAX_REJECTIONS_LOGGED, RejectionDetail};
use crate::proto::v1 as pb;
use crate::status::{ApiError, is_server_fault};
use crate::telemetry::Telemetry;
use crate::telemetry::metrics::PerQueue;
use crate::telemetry::spans;
use sepp_engine::{Clock, Command, CommitterHandle, Loaded};

/// The version this server reports (`sepp --version`, `GetServerInfo`, the startup line): the
/// crate's own.
pub const SERVER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The longest reason kept with a cancel, in bytes (as a nack's reason is cut at 1 KiB).
const MAX_CANCEL_REASON_BYTES: usize = 1_024;

/// What `GetServerInfo` lists as offered beyond the 0.1 protocol.
pub const FEATURES: &[&str] =
    &["ack_batch", "cancel", "schedules", "pause", "in_flight_limits", "rate_limits", "key_limits", "consume"];

/// Who the audit log says paused or resumed a queue over gRPC (the admin API names its key).
fn grpc_actor() -> crate::admin::access::Actor {
    crate::admin::access::Actor { name: Some("grpc".into()), role: sepp_config::AdminRole::Operator }
}

/// A job after stages A to C: an id and the job, ready for the committer, or its rejection.
type Screened = Result<(JobId, sepp_core::NewJob), Rejection>;

#[derive(Clone)]
pub struct QueueApi {
    pub committer: CommitterHandle,
    pub live: Arc<LiveConfig>,
    /// Who reserved what, for the admin API's workers view (when the admin listener runs).
    pub workers: Option<Arc<crate::admin::workers::Workers>>,
    pub clock: Arc<dyn Clock>,
    pub telemetry: Telemetry,
    /// Cluster mode: this node's view of the cluster; a dropped answer means this node stopped
    /// leading mid-call.
    pub cluster: Option<Arc<crate::cluster::ClusterGate>>,
    /// Becomes true when the server begins to stop: Consume streams end UNAVAILABLE.
    pub stopping: tokio::sync::watch::Receiver<bool>,
    /// Reserves that wait for a job now (the `sepp.reserve.waiting` gauge).
    pub waiting: Arc<WaitingReserves>,
}

/// How many reserves wait for a job now: each Reserve with a `wait_timeout`, and each Consume
/// stream's pending ask, from the moment the committer has it (so it parks before any command
/// sent later) until its answer. One that finds jobs at once counts only for that moment.
#[derive(Default)]
pub struct WaitingReserves(AtomicU64);

impl WaitingReserves {
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Counts one waiting reserve until dropped (answered, or its caller gone).
struct Waiting<'a>(&'a WaitingReserves);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl QueueApi {
    /// The server span of a call, or a disabled span when tracing is off.
    fn span(&self, name: &'static str, metadata: &tonic::metadata::MetadataMap) -> Span {
        if self.telemetry.tracing { spans::rpc(name, metadata) } else { Span::none() }
    }

    /// Runs `call` inside `span` when tracing is on (even a disabled span costs a little on
    /// every poll).
    async fn in_span<F: std::future::Future>(&self, span: &Span, call: F) -> F::Output {
        if self.telemetry.tracing { call.instrument(span.clone()).await } else { call.await }
    }

    /// When the call started, if metrics time it.
    fn started(&self) -> Option<Instant> {
        self.telemetry.metrics.as_ref().map(|_| Instant::now())
    }

    /// Logs a failure, counts the call and closes its span.
    fn finish<T>(
        &self,
        rpc: &'static str,
        started: Option<Instant>,
        span: &Span,
        result: Result<T, ApiError>,
    ) -> Result<T, Status> {
        let result = span.in_scope(|| logged(rpc, result));
        if let (Some(metrics), Some(started)) = (&self.telemetry.metrics, started) {
            metrics.request(rpc, result.is_ok(), started.elapsed().as_secs_f64() * 1000.0);
        }
        if !span.is_disabled()
            && let Err(status) = &result
        {
            spans::failed(span, status);
        }
        result
    }

    /// Sends `command` built around a fresh reply channel and waits for the answer.
    pub(crate) async fn ask<T>(&self, command: impl FnOnce(oneshot::Sender<T>) -> Command) -> Result<T, ApiError> {
        let (reply, answer) = oneshot::channel();
        self.committer.send(command(reply)).await?;
        match answer.await {
            Ok(answer) => Ok(answer),
            Err(_) if self.cluster.is_some() => Err(crate::cluster::ClusterGate::lost_leadership().into()),
            Err(dropped) => Err(dropped.into()),
        }
    }

    /// Sends a reserve to the committer and waits for its answer, counted in
    /// [`QueueApi::waiting`] while it may park.
    pub(crate) async fn reserve_plan(&self, plan: ReservePlan) -> Result<Vec<Loaded<sepp_core::Delivery>>, ApiError> {
        let may_park = plan.wait_ms > 0;
        let (reply, answer) = oneshot::channel();
        self.committer.send(Command::Reserve { plan, reply }).await?;
        let _waiting = may_park.then(|| {
            self.waiting.0.fetch_add(1, Ordering::Relaxed);
            Waiting(&self.waiting)
        });
        match answer.await {
            Ok(answer) => Ok(answer),
            Err(_) if self.cluster.is_some() => Err(crate::cluster::ClusterGate::lost_leadership().into()),
            Err(dropped) => Err(dropped.into()),
        }
    }

    /// Stages A to C for every job of a batch: each job gets an id and passes, or is rejected.
    fn screen(&self, jobs: Vec<pb::EnqueueRequest>) -> Result<Vec<Screened>, ApiError> {
        let live = self.live.get();
        validate::validate_batch_size(&live.policy, jobs.len())?;
        let now_ms = self.clock.now_ms();
        Ok(jobs
            .into_iter()
            .map(|request| {
                let job = convert::new_job(request);
                validate::validate_new_job(&live.policy, &job, now_ms)?;
                Ok((JobId::new_v4(), job))
            })
            .collect())
    }
}

/// The queue of each job of a batch, for logging the rejected ones after the jobs themselves
/// went to the committer. A batch mostly names one queue: a run of equal names shares one copy.
fn queue_names(jobs: &[pb::EnqueueRequest]) -> Vec<Arc<str>> {
    let mut names: Vec<Arc<str>> = Vec::with_capacity(jobs.len());
    for job in jobs {
        let name = match names.last() {
            Some(last) if **last == *job.queue => last.clone(),
            _ => Arc::from(job.queue.as_str()),
        };
        names.push(name);
    }
    names
}

/// Logs the rejected jobs of one call: the first few one line each, then one line that counts
/// the rest, so that a flood of rejections cannot flood the log.
struct RejectionLog {
    rpc: &'static str,
    /// The line's message: `enqueue rejected`, or 0.1's `enqueue_atomic rejected job`.
    message: &'static str,
    logged: usize,
}

impl RejectionLog {
    fn new(rpc: &'static str, message: &'static str) -> RejectionLog {
        RejectionLog { rpc, message, logged: 0 }
    }

    fn note(&mut self, index: usize, queue: &str, rejection: &Rejection) {
        self.logged += 1;
        if self.logged <= MAX_REJECTIONS_LOGGED {
            tracing::info!(
                rpc = self.rpc,
                index,
                queue = %Bounded(queue),
                reason = rejection.label(),
                detail = %RejectionDetail(rejection),
                "{}",
                self.message
            );
        }
    }
}

impl Drop for RejectionLog {
    fn drop(&mut self) {
        if self.logged > MAX_REJECTIONS_LOGGED {
            let more = self.logged - MAX_REJECTIONS_LOGGED;
            tracing::info!(rpc = self.rpc, more, "{}: more jobs of this call were rejected", self.message);
        }
    }
}

fn enqueue_response(enqueued: sepp_core::Enqueued) -> pb::EnqueueResponse {
    pb::EnqueueResponse { job_id: enqueued.job_id.hyphenated().to_string(), deduplicated: enqueued.deduplicated }
}

/// An AckBatch holds at least one ack and no more than an enqueue batch may hold jobs.
fn validate_ack_batch_size(policy: &sepp_core::Policy, acks: usize) -> Result<(), ApiError> {
    let max = policy.server.max_enqueue_batch;
    if acks == 0 {
        return Err(Status::invalid_argument("an ack batch must hold at least one ack").into());
    }
    if acks as u64 > u64::from(max) {
        return Err(Status::invalid_argument(format!("ack batch exceeds max_enqueue_batch ({max})")).into());
    }
    Ok(())
}

/// Logs a failed call the way docs/protocol.md#status-codes says: server faults as errors, the rest at debug.
pub(crate) fn logged<T>(rpc: &'static str, result: Result<T, ApiError>) -> Result<T, Status> {
    let result = result.map_err(Status::from);
    if let Err(status) = &result {
        let message = Bounded(status.message());
        if is_server_fault(status) {
            tracing::error!(rpc, code = ?status.code(), %message, "request failed");
        } else {
            tracing::debug!(rpc, code = ?status.code(), %message, "request rejected");
        }
    }
    result
}

#[tonic::async_trait]
impl pb::queue_service_server::QueueService for QueueApi {
    type ConsumeStream = crate::consume::ConsumeStream;

    async fn consume(
        &self,
        request: Request<tonic::Streaming<pb::ConsumeRequest>>,
    ) -> Result<Response<Self::ConsumeStream>, Status> {
        crate::consume::open(self, request).await
    }

    async fn enqueue_batch(
        &self,
        request: Request<pb::EnqueueBatchRequest>,
    ) -> Result<Response<pb::EnqueueBatchResponse>, Status> {
        let started = self.started();
        let span = self.span("sepp.enqueue", request.metadata());
        let result = self.in_span(&span, self.enqueue_batch_inner(request.into_inner(), &span)).await;
        self.finish("EnqueueBatch", started, &span, result)
    }

    async fn enqueue_atomic(
        &self,
        request: Request<pb::EnqueueBatchRequest>,
    ) -> Result<Response<pb::EnqueueAtomicResponse>, Status> {
        let started = self.started();
        let span = self.span("sepp.enqueue_atomic", request.metadata());
        let result = self.in_span(&span, self.enqueue_atomic_inner(request.into_inner(), &span)).await;
        self.finish("EnqueueAtomic", started, &span, result)
    }

    async fn reserve(&self, request: Request<pb::ReserveRequest>) -> Result<Response<pb::ReserveResponse>, Status> {
        let started = self.started();
        let span = self.span("sepp.reserve", request.metadata());
        let result = async {
            let request = convert::reserve_request(request.into_inner());
            let observed_worker = (!span.is_disabled()).then(|| request.worker_id.clone()).flatten();
            let worker_id = self.workers.as_ref().and(request.worker_id.clone());
            let plan = validate::plan_reserve(&self.live.get().policy, request)?;
            let queues = self.telemetry.is_on().then(|| plan.queues.clone());
            if !span.is_disabled() {
                span.set_attribute("worker_id", observed_worker.unwrap_or_else(|| "<none>".into()));
                span.set_attribute("queues", spans::listed(plan.queues.iter().map(String::as_str)));
                if let [queue] = plan.queues.as_slice() {
                    span.set_attribute("messaging.destination.name", queue.clone());
                }
                span.set_attribute("max_jobs", i64::from(plan.max_jobs));
                span.set_attribute("lease_ms", plan.lease_ms as i64);
                span.set_attribute("wait_ms", plan.wait_ms as i64);
            }
            let deliveries = self.reserve_plan(plan).await?;
            self.delivered(worker_id.as_deref(), &deliveries);
            if let Some(metrics) = &self.telemetry.metrics
                && deliveries.is_empty()
            {
                queues.iter().flatten().for_each(|queue| metrics.reserve_empty(queue));
            }
            if !span.is_disabled() {
                span.set_attribute("job_count", deliveries.len() as i64);
                span.set_attribute("messaging.batch.message_count", deliveries.len() as i64);
                span.set_attribute("timed_out", deliveries.is_empty());
                span.set_attribute("job_ids", spans::job_ids(deliveries.iter().map(|loaded| &loaded.value.job.id)));
                for loaded in &deliveries {
                    let delivery = &loaded.value;
                    let deliver = spans::deliver(&span, &delivery.job, delivery.attempt);
                    deliver.set_attribute("lease_expires_at", delivery.lease_deadline_ms);
                }
            }
            Ok::<_, ApiError>(Response::new(pb::ReserveResponse {
                jobs: deliveries.into_iter().map(convert::delivery).collect(),
            }))
        };
        let result = self.in_span(&span, result).await;
        self.finish("Reserve", started, &span, result)
    }

    async fn ack(&self, request: Request<pb::AckRequest>) -> Result<Response<pb::AckResponse>, Status> {
        let started = self.started();
        let span = self.span("sepp.ack", request.metadata());
        let request = request.into_inner();
        if !span.is_disabled() {
            settle_attributes(&span, &request.job_id, request.attempt, request.worker_id.as_deref());
        }
        let result = async {
            if let Some(job) = self.ack_item(&request).await? {
                settled_job(&span, !span.is_disabled(), &job);
            }
            Ok::<_, ApiError>(Response::new(pb::AckResponse { job_id: request.job_id.clone() }))
        };
        let result = self.in_span(&span, result).await;
        self.finish("Ack", started, &span, result)
    }

    async fn ack_batch(&self, request: Request<pb::AckBatchRequest>) -> Result<Response<pb::AckBatchResponse>, Status> {
        let started = self.started();
        let span = self.span("sepp.ack_batch", request.metadata());
        let acks = request.into_inner().acks;
        if !span.is_disabled() {
            span.set_attribute("batch_size", acks.len() as i64);
        }
        let result = async {
            validate_ack_batch_size(&self.live.get().policy, acks.len())?;
            // Every item goes to the committer at once, so they share its commit cycles.
            let outcomes = futures_util::future::join_all(acks.iter().map(|ack| self.ack_item(ack))).await;
            let mut acked = 0;
            let results = acks
                .into_iter()
                .zip(outcomes)
                .map(|(ack, outcome)| pb::AckResult {
                    outcome: Some(match outcome {
                        Ok(_) => {
                            acked += 1;
                            pb::ack_result::Outcome::Success(pb::AckResponse { job_id: ack.job_id })
                        }
                        Err(error) => pb::ack_result::Outcome::Error(crate::status::call_status(&Status::from(error))),
                    }),
                })
                .collect::<Vec<_>>();
            if !span.is_disabled() {
                span.set_attribute("acked", acked as i64);
            }
            Ok::<_, ApiError>(Response::new(pb::AckBatchResponse { results }))
        };
        let result = self.in_span(&span, result).await;
        self.finish("AckBatch", started, &span, result)
    }

    async fn upsert_schedule(
        &self,
        request: Request<pb::UpsertScheduleRequest>,
    ) -> Result<Response<pb::ScheduleInfo>, Status> {
        let started = self.started();
        let span = self.span("sepp.upsert_schedule", request.metadata());
        let result = async {
            let definition =
                request.into_inner().schedule.ok_or_else(|| Status::invalid_argument("schedule is required"))?;
            let spec = Box::new(convert::schedule_spec(definition).map_err(Status::invalid_argument)?);
            let schedule = self.ask(|reply| Command::UpsertSchedule { spec, reply }).await??;
            Ok::<_, ApiError>(Response::new(convert::schedule_info(&schedule)))
        };
        let result = self.in_span(&span, result).await;
        self.finish("UpsertSchedule", started, &span, result)
    }

    async fn delete_schedule(
        &self,
        request: Request<pb::DeleteScheduleRequest>,
    ) -> Result<Response<pb::DeleteScheduleResponse>, Status> {
        let started = self.started();
        let span = self.span("sepp.delete_schedule", request.metadata());
        let id = request.into_inner().id;
        let result = async {
            let deleted = self.ask(|reply| Command::DeleteSchedule { id, reply }).await?;
            Ok::<_, ApiError>(Response::new(pb::DeleteScheduleResponse { deleted }))
        };
        let result = self.in_span(&span, result).await;
        self.finish("DeleteSchedule", started, &span, result)
    }

    async fn list_schedules(
        &self,
        request: Request<pb::ListSchedulesRequest>,
    ) -> Result<Response<pb::ListSchedulesResponse>, Status> {
        let started = self.started();
        let span = self.span("sepp.list_schedules", request.metadata());
        let result = async {
            let schedules = self.ask(|reply| Command::ListSchedules { reply }).await?;
            let schedules = schedules.iter().map(convert::schedule_info).collect();
            Ok::<_, ApiError>(Response::new(pb::ListSchedulesResponse { schedules }))
        };
        let result = self.in_span(&span, result).await;
        self.finish("ListSchedules", started, &span, result)
    }

    async fn pause_queue(
        &self,
        request: Request<pb::PauseQueueRequest>,
    ) -> Result<Response<pb::PauseQueueResponse>, Status> {
        use crate::admin::commands::{AdminCommand, ask};
        let started = self.started();
        let span = self.span("sepp.pause_queue", request.metadata());
        let request = request.into_inner();
        let result = async {
            let until_ms = request.until.as_ref().map(convert::timestamp_ms);
            let problem = sepp_core::validate::pause_problem(
                &request.queue,
                until_ms,
                request.reason.as_deref(),
                self.clock.now_ms(),
            );
            if let Some(problem) = problem {
                return Err(Status::invalid_argument(problem).into());
            }
            let (queue, reason) = (request.queue.clone(), request.reason.clone());
            let actor = grpc_actor();
            ask(&self.committer, |reply| AdminCommand::Pause { queue, until_ms, reason, actor, reply })
                .await
                .map_err(|_| Status::internal("storage commit failed"))?;
            let pause = pb::QueuePause { queue: request.queue, until: request.until };
            Ok::<_, ApiError>(Response::new(pb::PauseQueueResponse { pause: Some(pause) }))
        };
        let result = self.in_span(&span, result).await;
        self.finish("PauseQueue", started, &span, result)
    }

    async fn resume_queue(
        &self,
        request: Request<pb::ResumeQueueRequest>,
    ) -> Result<Response<pb::ResumeQueueResponse>, Status> {
        use crate::admin::commands::{AdminCommand, ask};
        let started = self.started();
        let span = self.span("sepp.resume_queue", request.metadata());
        let queue = request.into_inner().queue;
        let result = async {
            let actor = grpc_actor();
            let entry = ask(&self.committer, |reply| AdminCommand::Resume { queue, actor, reply })
                .await
                .map_err(|_| Status::internal("storage commit failed"))?;
            Ok::<_, ApiError>(Response::new(pb::ResumeQueueResponse { resumed: entry.is_some() }))
        };
        let result = self.in_span(&span, result).await;
        self.finish("ResumeQueue", started, &span, result)
    }

    async fn list_pauses(
        &self,
        request: Request<pb::ListPausesRequest>,
    ) -> Result<Response<pb::ListPausesResponse>, Status> {
        use crate::admin::commands::{AdminCommand, ask};
        let started = self.started();
        let span = self.span("sepp.list_pauses", request.metadata());
        let result = async {
            let pauses = ask(&self.committer, |reply| AdminCommand::Pauses { reply })
                .await
                .map_err(|_| Status::internal("storage commit failed"))?;
            let pauses = pauses
                .into_iter()
                .map(|(queue, until_ms)| pb::QueuePause {
                    queue: queue.to_string(),
                    until: until_ms.map(convert::timestamp),
                })
                .collect();
            Ok::<_, ApiError>(Response::new(pb::ListPausesResponse { pauses }))
        };
        let result = self.in_span(&span, result).await;
        self.finish("ListPauses", started, &span, result)
    }

    async fn cancel_job(
        &self,
        request: Request<pb::CancelJobRequest>,
    ) -> Result<Response<pb::CancelJobResponse>, Status> {
        let started = self.started();
        let span = self.span("sepp.cancel_job", request.metadata());
        let request = request.into_inner();
        if !span.is_disabled() {
            span.set_attribute("job_id", request.job_id.chars().take(64).collect::<String>());
        }
        let result = async {
            let LeaseTarget::Job(job_id) = validate::validate_job_id(&request.job_id)? else {
                return Err(sepp_core::CancelError::NotFound.into());
            };
            if request.reason.as_ref().is_some_and(|reason| reason.len() > MAX_CANCEL_REASON_BYTES) {
                return Err(
                    Status::invalid_argument(format!("reason is longer than {MAX_CANCEL_REASON_BYTES} bytes")).into()
                );
            }
            let reason = request.reason.clone();
            let outcome = self.ask(|reply| Command::Cancel { job_id, reason, reply }).await??;
            let was_leased = outcome != sepp_core::CancelOutcome::Removed;
            Ok::<_, ApiError>(Response::new(pb::CancelJobResponse { job_id: request.job_id.clone(), was_leased }))
        };
        let result = self.in_span(&span, result).await;
        self.finish("CancelJob", started, &span, result)
    }

    async fn nack(&self, request: Request<pb::NackRequest>) -> Result<Response<pb::NackResponse>, Status> {
        let started = self.started();
        let span = self.span("sepp.nack", request.metadata());
        let request = request.into_inner();
        if !span.is_disabled() {
            settle_attributes(&span, &request.job_id, request.attempt, request.worker_id.as_deref());
            let reason: String = request.reason.as_deref().unwrap_or("<none>").chars().take(256).collect();
            span.set_attribute("reason", reason);
        }
        let result = async { Ok(Response::new(self.nack_item(&request, &span).await?)) };
        let result = self.in_span(&span, result).await;
        self.finish("Nack", started, &span, result)
    }

    async fn extend(&self, request: Request<pb::ExtendRequest>) -> Result<Response<pb::ExtendResponse>, Status> {
        let started = self.started();
        let span = self.span("sepp.extend", request.metadata());
        let request = request.into_inner();
        if !span.is_disabled() {
            settle_attributes(&span, &request.job_id, request.attempt, request.worker_id.as_deref());
        }
        let result = async { Ok(Response::new(self.extend_item(&request, &span).await?)) };
        let result = self.in_span(&span, result).await;
        self.finish("Extend", started, &span, result)
    }

    async fn drain_dead_letters(
        &self,
        request: Request<pb::DrainDeadLettersRequest>,
    ) -> Result<Response<pb::DrainDeadLettersResponse>, Status> {
        let started = self.started();
        let span = self.span("sepp.drain_dead_letters", request.metadata());
        let request = request.into_inner();
        if !span.is_disabled() {
            let queue: String = request.queue.as_deref().unwrap_or("<all>").chars().take(256).collect();
            span.set_attribute("queue", queue);
            span.set_attribute("max", request.max.map_or(0, i64::from));
        }
        let result = async {
            let max = validate::plan_drain(&self.live.get().policy, request.queue.as_deref(), request.max)?;
            let queue = request.queue;
            let records = self.ask(|reply| Command::DrainDeadLetters { queue, max, reply }).await?;
            tracing::warn!(drained = records.len(), "drained dead-letter records");
            if let Some(metrics) = &self.telemetry.metrics {
                metrics.dead_letters_drained(records.len() as u64);
            }
            if !span.is_disabled() {
                span.set_attribute("drained", records.len() as i64);
                span.set_attribute("messaging.batch.message_count", records.len() as i64);
            }
            Ok::<_, ApiError>(Response::new(pb::DrainDeadLettersResponse {
                records: records.into_iter().map(convert::dead_letter).collect(),
            }))
        };
        let result = self.in_span(&span, result).await;
        self.finish("DrainDeadLetters", started, &span, result)
    }

    async fn get_server_info(
        &self,
        request: Request<pb::GetServerInfoRequest>,
    ) -> Result<Response<pb::GetServerInfoResponse>, Status> {
        // Traced, not counted (as in 0.1).
        let _span = self.span("sepp.get_server_info", request.metadata());
        let live = self.live.get();
        let limits = &live.config.limits;
        Ok(Response::new(pb::GetServerInfoResponse {
            server_version: SERVER_VERSION.into(),
            supported_protocol_versions: vec!["v1".into()],
            server_time: Some(convert::timestamp(self.clock.now_ms())),
            restricts_encodings: limits.allowed_encodings.is_some(),
            allowed_encodings: limits.allowed_encodings.clone().unwrap_or_default(),
            max_payload_bytes: limits.max_payload_bytes,
            max_custom_entries: limits.max_custom_entries,
            max_custom_total_bytes: limits.max_custom_total_bytes,
            max_custom_key_bytes: limits.max_custom_key_bytes,
            max_queue_name_bytes: limits.max_queue_name_bytes,
            max_job_type_bytes: limits.max_job_type_bytes,
            max_idempotency_key_bytes: limits.max_idempotency_key_bytes,
            max_schedule_horizon: Some(convert::duration(limits.max_schedule_horizon_ms)),
            max_enqueue_batch: limits.max_enqueue_batch,
            max_reserve_batch: limits.max_reserve_batch,
            max_reserve_queues: limits.max_reserve_queues,
            max_wait_timeout: Some(convert::duration(limits.max_wait_timeout_ms)),
            max_lease_duration: Some(convert::duration(limits.max_lease_duration_ms)),
            strict_queues: live.config.server.strict_queues,
            dead_letter_retention_enabled: self.live.boot.storage.dead_letter_retention_ms > 0,
            features: FEATURES.iter().map(|feature| (*feature).into()).collect(),
            cluster: self.cluster.as_ref().map(|cluster| cluster.info()),
            max_consume_credits: crate::consume::MAX_CONSUME_CREDITS,
        }))
    }
}

impl QueueApi {
    /// Notes jobs leased to a worker, by Reserve or on a Consume stream: the admin API's workers
    /// view, and the per-queue reserve counts.
    pub(crate) fn delivered(&self, worker_id: Option<&str>, deliveries: &[Loaded<sepp_core::Delivery>]) {
        if let (Some(workers), Some(worker_id)) = (&self.workers, worker_id) {
            let delivered = deliveries.iter().map(|loaded| (loaded.value.job.id, loaded.value.attempt));
            workers.saw(worker_id, self.clock.now_ms(), delivered);
        }
        if let Some(metrics) = &self.telemetry.metrics
            && !deliveries.is_empty()
        {
            let mut per_queue = PerQueue::default();
            deliveries.iter().for_each(|loaded| per_queue.add(&loaded.value.job.queue));
            per_queue.each(|queue, count| metrics.reserved(queue, count));
        }
    }

    /// One nack, of a Nack call or a Consume stream: validated, committed, counted and logged.
    pub(crate) async fn nack_item(&self, request: &pb::NackRequest, span: &Span) -> Result<pb::NackResponse, ApiError> {
        let target = validate::validate_lease_fields(&request.job_id, request.attempt, request.worker_id.as_deref())?;
        let strategy = validate::validate_nack_strategy(convert::nack_retry(request.retry))?;
        let LeaseTarget::Job(job_id) = target else { return Err(sepp_core::LeaseError::NotFound.into()) };
        let (attempt, reason) = (request.attempt, request.reason.clone());
        let settled = self.ask(|reply| Command::Nack { job_id, attempt, strategy, reason, reply }).await??;
        let nacked = settled.value;
        if let Some(job) = &settled.job {
            if let Some(metrics) = &self.telemetry.metrics {
                metrics.nacked(&job.queue);
                if nacked.dead_lettered {
                    let cause = if strategy == NackStrategy::DeadLetter {
                        DeadLetterCause::Rejected
                    } else {
                        DeadLetterCause::AttemptsExhausted
                    };
                    metrics.dead_lettered(&job.queue, cause, 1);
                }
            }
            settled_job(span, !span.is_disabled(), job);
        }
        if !span.is_disabled() {
            let retry = match strategy {
                NackStrategy::Default => "default",
                NackStrategy::Delay { .. } => "delay",
                NackStrategy::DeadLetter => "dead_letter",
            };
            span.set_attribute("retry", retry);
            span.set_attribute("dead_lettered", nacked.dead_lettered);
            span.set_attribute("retry_delay_ms", nacked.retry_delay_ms as i64);
        }
        if nacked.dead_lettered {
            let reason = request.reason.as_deref().map_or(Bounded("<none>"), Bounded);
            tracing::info!(%job_id, attempt, %reason, "job dead-lettered via nack");
        }
        Ok(pb::NackResponse { job_id: request.job_id.clone(), dead_lettered: nacked.dead_lettered })
    }

    /// One extend, of an Extend call or a Consume stream: validated and committed.
    pub(crate) async fn extend_item(
        &self,
        request: &pb::ExtendRequest,
        span: &Span,
    ) -> Result<pb::ExtendResponse, ApiError> {
        let target = validate::validate_lease_fields(&request.job_id, request.attempt, None)?;
        let lease_ms = validate::validate_lease_duration(request.lease_duration.as_ref().map(convert::duration_ms))?;
        validate::validate_worker_id(request.worker_id.as_deref())?;
        let LeaseTarget::Job(job_id) = target else { return Err(sepp_core::LeaseError::NotFound.into()) };
        let attempt = request.attempt;
        let settled = self.ask(|reply| Command::Extend { job_id, attempt, lease_ms, reply }).await??;
        let deadline_ms = settled.value;
        if !span.is_disabled() {
            span.set_attribute("lease_duration_ms", lease_ms as i64);
            span.set_attribute("lease_expires_at", deadline_ms);
            if let Some(job) = &settled.job {
                settled_job(span, true, job);
            }
        }
        Ok(pb::ExtendResponse {
            job_id: request.job_id.clone(),
            lease_expires_at: Some(convert::timestamp(deadline_ms)),
        })
    }

    /// One ack, of an Ack call or an AckBatch item: validated, committed and counted. Answers
    /// the job it settled when telemetry asked the committer for it (for the call's span).
    pub(crate) async fn ack_item(&self, request: &pb::AckRequest) -> Result<Option<Arc<sepp_core::Job>>, ApiError> {
        let target = validate::validate_lease_fields(&request.job_id, request.attempt, request.worker_id.as_deref())?;
        let LeaseTarget::Job(job_id) = target else { return Err(sepp_core::LeaseError::NotFound.into()) };
        let settled = self.ask(|reply| Command::Ack { job_id, attempt: request.attempt, reply }).await??;
        if let (Some(job), Some(metrics)) = (&settled.job, &self.telemetry.metrics) {
            metrics.acked(&job.queue);
        }
        Ok(settled.job)
    }

    async fn enqueue_batch_inner(
        &self,
        request: pb::EnqueueBatchRequest,
        span: &Span,
    ) -> Result<Response<pb::EnqueueBatchResponse>, ApiError> {
        let queues = queue_names(&request.jobs);
        if !span.is_disabled() {
            batch_attributes(span, &request.jobs, &queues);
        }
        // The jobs that passed go to the committer (moved, not copied); each slot remembers
        // whether its job went or was rejected here.
        let mut accepted = Vec::with_capacity(request.jobs.len());
        let slots: Vec<Result<(), Rejection>> =
            self.screen(request.jobs)?.into_iter().map(|screened| screened.map(|job| accepted.push(job))).collect();
        let mut committed = if accepted.is_empty() {
            Vec::new().into_iter()
        } else {
            self.ask(|reply| Command::Enqueue { jobs: accepted, reply }).await?.into_iter()
        };
        let mut rejections = RejectionLog::new("EnqueueBatch", "enqueue rejected");
        let mut tally = Tally::new(self);
        let results: Vec<pb::JobResult> = slots
            .into_iter()
            .zip(&queues)
            .enumerate()
            .map(|(index, (slot, queue))| {
                let outcome = match slot {
                    Ok(()) => committed.next().expect("one commit result per accepted job"),
                    Err(rejection) => Err(rejection),
                };
                let outcome = match outcome {
                    Ok(enqueued) => {
                        tally.accepted(queue, &enqueued);
                        pb::job_result::Outcome::Success(enqueue_response(enqueued))
                    }
                    Err(rejection) => {
                        rejections.note(index, queue, &rejection);
                        tally.rejected(self, queue, &rejection);
                        pb::job_result::Outcome::Rejection(convert::rejection(rejection))
                    }
                };
                pb::JobResult { outcome: Some(outcome) }
            })
            .collect();
        tally.finish(self, span);
        Ok(Response::new(pb::EnqueueBatchResponse { results }))
    }

    async fn enqueue_atomic_inner(
        &self,
        request: pb::EnqueueBatchRequest,
        span: &Span,
    ) -> Result<Response<pb::EnqueueAtomicResponse>, ApiError> {
        use pb::enqueue_atomic_response::Outcome;
        let queues = queue_names(&request.jobs);
        if !span.is_disabled() {
            batch_attributes(span, &request.jobs, &queues);
        }
        let screened = self.screen(request.jobs)?;
        let failures: Vec<(u32, Rejection)> = screened
            .iter()
            .enumerate()
            .filter_map(|(index, job)| job.as_ref().err().map(|rejection| (index as u32, rejection.clone())))
            .collect();
        let outcome = if failures.is_empty() {
            let jobs = screened.into_iter().map(|job| job.expect("no failures")).collect();
            self.ask(|reply| Command::EnqueueAtomic { jobs, reply }).await?
        } else {
            Err(failures)
        };
        let mut tally = Tally::new(self);
        let outcome = match outcome {
            Ok(enqueued) => {
                if !span.is_disabled() {
                    span.set_attribute("outcome", "committed");
                }
                Outcome::Success(pb::EnqueueAtomicSuccess {
                    responses: enqueued
                        .into_iter()
                        .zip(&queues)
                        .map(|(enqueued, queue)| {
                            tally.accepted(queue, &enqueued);
                            enqueue_response(enqueued)
                        })
                        .collect(),
                })
            }
            Err(failures) => {
                if !span.is_disabled() {
                    span.set_attribute("outcome", "rejected");
                }
                let mut rejections = RejectionLog::new("EnqueueAtomic", "enqueue_atomic rejected job");
                Outcome::Rejection(pb::BatchValidationFailure {
                    errors: failures
                        .into_iter()
                        .map(|(index, rejection)| {
                            rejections.note(index as usize, &queues[index as usize], &rejection);
                            tally.rejected(self, &queues[index as usize], &rejection);
                            pb::JobValidationError { index, rejection: Some(convert::rejection(rejection)) }
                        })
                        .collect(),
                })
            }
        };
        tally.finish(self, span);
        Ok(Response::new(pb::EnqueueAtomicResponse { outcome: Some(outcome) }))
    }
}

/// What one enqueue call did, counted as the results are converted (only while telemetry is
/// on: otherwise it stays empty and allocates nothing).
#[derive(Default)]
struct Tally<'a> {
    on: bool,
    enqueued: PerQueue<'a>,
    deduplicated: PerQueue<'a>,
    job_ids: Vec<JobId>,
    accepted: u64,
    deduplicated_count: u64,
    rejected: u64,
}

impl<'a> Tally<'a> {
    fn new(api: &QueueApi) -> Tally<'a> {
        Tally { on: api.telemetry.is_on(), ..Tally::default() }
    }

    fn accepted(&mut self, queue: &'a str, enqueued: &sepp_core::Enqueued) {
        if !self.on {
            return;
        }
        self.accepted += 1;
        if enqueued.deduplicated {
            self.deduplicated_count += 1;
            self.deduplicated.add(queue);
        } else {
            self.enqueued.add(queue);
        }
        if self.job_ids.len() < spans::MAX_LISTED {
            self.job_ids.push(enqueued.job_id);
        }
    }

    fn rejected(&mut self, api: &QueueApi, queue: &str, rejection: &Rejection) {
        self.rejected += 1;
        if let Some(metrics) = &api.telemetry.metrics {
            metrics.rejected(queue, rejection);
        }
    }

    fn finish(self, api: &QueueApi, span: &Span) {
        if !self.on {
            return;
        }
        if let Some(metrics) = &api.telemetry.metrics {
            self.enqueued.each(|queue, count| metrics.enqueued(queue, count));
            self.deduplicated.each(|queue, count| metrics.deduplicated(queue, count));
        }
        if !span.is_disabled() {
            span.set_attribute("accepted", self.accepted as i64);
            span.set_attribute("rejected", self.rejected as i64);
            span.set_attribute("deduplicated", self.deduplicated_count as i64);
            span.set_attribute("job_ids", spans::job_ids(&self.job_ids));
        }
    }
}

/// The attributes of an enqueue span that the request alone tells.
fn batch_attributes(span: &Span, jobs: &[pb::EnqueueRequest], queues: &[Arc<str>]) {
    let names = spans::distinct(queues.iter().map(|queue| &**queue));
    if let [queue] = names.as_slice() {
        span.set_attribute("messaging.destination.name", queue.to_string());
    }
    span.set_attribute("queues", spans::listed(names));
    span.set_attribute("job_types", spans::listed(spans::distinct(jobs.iter().map(|job| job.job_type.as_str()))));
    span.set_attribute("batch_size", jobs.len() as i64);
    span.set_attribute("messaging.batch.message_count", jobs.len() as i64);
    span.set_attribute("scheduled", jobs.iter().filter(|job| job.scheduled_at.is_some()).count() as i64);
}

/// What an ack, nack or extend span knows from its request.
fn settle_attributes(span: &Span, job_id: &str, attempt: u32, worker_id: Option<&str>) {
    let job_id: String = job_id.chars().take(64).collect();
    span.set_attribute("job_id", job_id.clone());
    span.set_attribute("messaging.message.id", job_id);
    span.set_attribute("attempt", i64::from(attempt));
    span.set_attribute("worker_id", worker_id.unwrap_or("<none>").chars().take(256).collect::<String>());
}

/// What an ack, nack or extend span learns from the job it settled: its queue, and a link to
/// its producer.
fn settled_job(span: &Span, tracing: bool, job: &sepp_core::Job) {
    if tracing {
        span.set_attribute("queue", opentelemetry::StringValue::from(job.queue.clone()));
        span.set_attribute("messaging.destination.name", opentelemetry::StringValue::from(job.queue.clone()));
        spans::link(span, job);
    }
}
