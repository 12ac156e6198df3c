//! The gRPC edge of `sepp.v1.QueueService`: one handler per RPC.
//!
//! A handler converts the request, validates what needs no state (on the caller's task, in
//! parallel), sends one command to the committer, and converts the answer. It makes no queue
//! decisions itself.

use std::sync::Arc;

use sepp_core::validate::{self, LeaseTarget};
use sepp_core::{JobId, Rejection};
use tokio::sync::oneshot;
use tonic::{Request, Response, Status};

use crate::committer::{Command, CommitterHandle, now_ms};
use crate::convert;
use crate::live::LiveConfig;
use crate::proto::v1 as pb;
use crate::status::{ApiError, is_server_fault};

/// The version this server reports; clients of 0.1 check it.
pub const SERVER_VERSION: &str = "0.1.1";

/// A job after stages A to C: an id and the job, ready for the committer, or its rejection.
type Screened = Result<(JobId, sepp_core::NewJob), Rejection>;

pub struct QueueApi {
    pub committer: CommitterHandle,
    pub live: Arc<LiveConfig>,
    /// Who reserved what, for the admin API's workers view (when the admin listener runs).
    pub workers: Option<Arc<crate::admin::workers::Workers>>,
}

impl QueueApi {
    /// Sends `command` built around a fresh reply channel and waits for the answer.
    async fn ask<T>(&self, command: impl FnOnce(oneshot::Sender<T>) -> Command) -> Result<T, ApiError> {
        let (reply, answer) = oneshot::channel();
        self.committer.send(command(reply)).await?;
        Ok(answer.await?)
    }

    /// Stages A to C for every job of a batch: each job gets an id and passes, or is rejected.
    fn screen(&self, jobs: Vec<pb::EnqueueRequest>) -> Result<Vec<Screened>, ApiError> {
        let live = self.live.get();
        validate::validate_batch_size(&live.policy, jobs.len())?;
        let now_ms = now_ms();
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

fn log_rejection(rpc: &str, queue: &str, rejection: &Rejection) {
    tracing::info!(rpc, queue, reason = rejection.label(), detail = ?rejection, "enqueue rejected");
}

fn enqueue_response(enqueued: sepp_core::Enqueued) -> pb::EnqueueResponse {
    pb::EnqueueResponse { job_id: enqueued.job_id.hyphenated().to_string(), deduplicated: enqueued.deduplicated }
}

/// Logs a failed call the way SPEC 2.0 asks: server faults as errors, the rest at debug.
fn logged<T>(rpc: &'static str, result: Result<T, ApiError>) -> Result<T, Status> {
    let result = result.map_err(Status::from);
    if let Err(status) = &result {
        if is_server_fault(status) {
            tracing::error!(rpc, code = ?status.code(), message = status.message(), "request failed");
        } else {
            tracing::debug!(rpc, code = ?status.code(), message = status.message(), "request rejected");
        }
    }
    result
}

#[tonic::async_trait]
impl pb::queue_service_server::QueueService for QueueApi {
    async fn enqueue_batch(
        &self,
        request: Request<pb::EnqueueBatchRequest>,
    ) -> Result<Response<pb::EnqueueBatchResponse>, Status> {
        logged("EnqueueBatch", self.enqueue_batch_inner(request.into_inner()).await)
    }

    async fn enqueue_atomic(
        &self,
        request: Request<pb::EnqueueBatchRequest>,
    ) -> Result<Response<pb::EnqueueAtomicResponse>, Status> {
        logged("EnqueueAtomic", self.enqueue_atomic_inner(request.into_inner()).await)
    }

    async fn reserve(&self, request: Request<pb::ReserveRequest>) -> Result<Response<pb::ReserveResponse>, Status> {
        let result = async {
            let request = convert::reserve_request(request.into_inner());
            let worker_id = self.workers.as_ref().and(request.worker_id.clone());
            let plan = validate::plan_reserve(&self.live.get().policy, request)?;
            let deliveries = self.ask(|reply| Command::Reserve { plan, reply }).await?;
            if let (Some(workers), Some(worker_id)) = (&self.workers, worker_id) {
                let delivered = deliveries.iter().map(|loaded| (loaded.value.job.id, loaded.value.attempt));
                workers.saw(&worker_id, now_ms(), delivered);
            }
            Ok::<_, ApiError>(Response::new(pb::ReserveResponse {
                jobs: deliveries.into_iter().map(convert::delivery).collect(),
            }))
        };
        logged("Reserve", result.await)
    }

    async fn ack(&self, request: Request<pb::AckRequest>) -> Result<Response<pb::AckResponse>, Status> {
        let request = request.into_inner();
        let result = async {
            let target =
                validate::validate_lease_fields(&request.job_id, request.attempt, request.worker_id.as_deref())?;
            let LeaseTarget::Job(job_id) = target else { return Err(sepp_core::LeaseError::NotFound.into()) };
            let attempt = request.attempt;
            self.ask(|reply| Command::Ack { job_id, attempt, reply }).await??;
            Ok::<_, ApiError>(Response::new(pb::AckResponse { job_id: request.job_id.clone() }))
        };
        logged("Ack", result.await)
    }

    async fn nack(&self, request: Request<pb::NackRequest>) -> Result<Response<pb::NackResponse>, Status> {
        let request = request.into_inner();
        let result = async {
            let target =
                validate::validate_lease_fields(&request.job_id, request.attempt, request.worker_id.as_deref())?;
            let strategy = validate::validate_nack_strategy(convert::nack_retry(request.retry))?;
            let LeaseTarget::Job(job_id) = target else { return Err(sepp_core::LeaseError::NotFound.into()) };
            let (attempt, reason) = (request.attempt, request.reason.clone());
            let nacked = self.ask(|reply| Command::Nack { job_id, attempt, strategy, reason, reply }).await??;
            if nacked.dead_lettered {
                tracing::info!(%job_id, attempt, reason = request.reason.as_deref().unwrap_or("<none>"), "job dead-lettered via nack");
            }
            Ok::<_, ApiError>(Response::new(pb::NackResponse {
                job_id: request.job_id.clone(),
                dead_lettered: nacked.dead_lettered,
            }))
        };
        logged("Nack", result.await)
    }

    async fn extend(&self, request: Request<pb::ExtendRequest>) -> Result<Response<pb::ExtendResponse>, Status> {
        let request = request.into_inner();
        let result = async {
            let target = validate::validate_lease_fields(&request.job_id, request.attempt, None)?;
            let lease_ms =
                validate::validate_lease_duration(request.lease_duration.as_ref().map(convert::duration_ms))?;
            validate::validate_worker_id(request.worker_id.as_deref())?;
            let LeaseTarget::Job(job_id) = target else { return Err(sepp_core::LeaseError::NotFound.into()) };
            let attempt = request.attempt;
            let deadline_ms = self.ask(|reply| Command::Extend { job_id, attempt, lease_ms, reply }).await??;
            Ok::<_, ApiError>(Response::new(pb::ExtendResponse {
                job_id: request.job_id.clone(),
                lease_expires_at: Some(convert::timestamp(deadline_ms)),
            }))
        };
        logged("Extend", result.await)
    }

    async fn drain_dead_letters(
        &self,
        request: Request<pb::DrainDeadLettersRequest>,
    ) -> Result<Response<pb::DrainDeadLettersResponse>, Status> {
        let request = request.into_inner();
        let result = async {
            let max = validate::plan_drain(&self.live.get().policy, request.queue.as_deref(), request.max)?;
            let queue = request.queue;
            let records = self.ask(|reply| Command::DrainDeadLetters { queue, max, reply }).await?;
            tracing::warn!(drained = records.len(), "drained dead-letter records");
            Ok::<_, ApiError>(Response::new(pb::DrainDeadLettersResponse {
                records: records.into_iter().map(convert::dead_letter).collect(),
            }))
        };
        logged("DrainDeadLetters", result.await)
    }

    async fn get_server_info(
        &self,
        _request: Request<pb::GetServerInfoRequest>,
    ) -> Result<Response<pb::GetServerInfoResponse>, Status> {
        let live = self.live.get();
        let limits = &live.config.limits;
        Ok(Response::new(pb::GetServerInfoResponse {
            server_version: SERVER_VERSION.into(),
            supported_protocol_versions: vec!["v1".into()],
            server_time: Some(convert::timestamp(now_ms())),
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
        }))
    }
}

impl QueueApi {
    async fn enqueue_batch_inner(
        &self,
        request: pb::EnqueueBatchRequest,
    ) -> Result<Response<pb::EnqueueBatchResponse>, ApiError> {
        let queues = queue_names(&request.jobs);
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
        let results = slots
            .into_iter()
            .zip(&queues)
            .map(|(slot, queue)| {
                let outcome = match slot {
                    Ok(()) => committed.next().expect("one commit result per accepted job"),
                    Err(rejection) => Err(rejection),
                };
                let outcome = match outcome {
                    Ok(enqueued) => pb::job_result::Outcome::Success(enqueue_response(enqueued)),
                    Err(rejection) => {
                        log_rejection("EnqueueBatch", queue, &rejection);
                        pb::job_result::Outcome::Rejection(convert::rejection(rejection))
                    }
                };
                pb::JobResult { outcome: Some(outcome) }
            })
            .collect();
        Ok(Response::new(pb::EnqueueBatchResponse { results }))
    }

    async fn enqueue_atomic_inner(
        &self,
        request: pb::EnqueueBatchRequest,
    ) -> Result<Response<pb::EnqueueAtomicResponse>, ApiError> {
        use pb::enqueue_atomic_response::Outcome;
        let queues = queue_names(&request.jobs);
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
        let outcome = match outcome {
            Ok(enqueued) => Outcome::Success(pb::EnqueueAtomicSuccess {
                responses: enqueued.into_iter().map(enqueue_response).collect(),
            }),
            Err(failures) => Outcome::Rejection(pb::BatchValidationFailure {
                errors: failures
                    .into_iter()
                    .map(|(index, rejection)| {
                        tracing::info!(
                            index,
                            queue = &*queues[index as usize],
                            reason = rejection.label(),
                            "enqueue_atomic rejected job"
                        );
                        pb::JobValidationError { index, rejection: Some(convert::rejection(rejection)) }
                    })
                    .collect(),
            }),
        };
        Ok(Response::new(pb::EnqueueAtomicResponse { outcome: Some(outcome) }))
    }
}
