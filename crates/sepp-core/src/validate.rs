//! Request validation that needs no queue state: enqueue stages A to C (docs/protocol.md#job-validation), and the
//! argument checks and clamps of Reserve, Ack, Nack, Extend and DrainDeadLetters, and the checks
//! of a queue pause.
//!
//! These functions run on the caller's task, before a command reaches the committer, so the
//! committer only does the work that needs state (stage D). They read the policy and a `now`
//! passed in; they never read a clock.

use crate::errors::{CallError, Rejection};
use crate::limits::Policy;
use crate::types::{JobId, NewJob, TimeMs};

/// The validity rule for queue names shared by enqueue, reserve and configuration (docs/protocol.md#queue-names).
/// Returns the reason, phrased with `subject` (`queue` or `queues item`).
pub fn queue_name_problem(name: &str, subject: &str) -> Option<String> {
    if name.is_empty() {
        Some(format!("{subject} must not be empty"))
    } else if name == "." || name == ".." {
        Some(format!("{subject} must not be \".\" or \"..\""))
    } else if name.contains('/') {
        Some(format!("{subject} must not contain '/'"))
    } else if name.chars().any(char::is_control) {
        Some(format!("{subject} must not contain control characters"))
    } else {
        None
    }
}

/// The longest reason kept with a queue pause, in bytes.
pub const MAX_PAUSE_REASON_BYTES: usize = 1_024;

/// What is wrong with a pause of `queue` (every queue for `ALL_QUEUES`) until `until_ms`, with
/// `reason`, asked at `now_ms`; `None` when nothing is. Shared by the admin API and gRPC's
/// `PauseQueue`.
pub fn pause_problem(queue: &str, until_ms: Option<TimeMs>, reason: Option<&str>, now_ms: TimeMs) -> Option<String> {
    if queue != crate::ALL_QUEUES
        && let Some(problem) = queue_name_problem(queue, "queue")
    {
        return Some(problem);
    }
    if let Some(until_ms) = until_ms
        && until_ms <= now_ms
    {
        return Some(format!("the pause's end {until_ms} is not in the future (the server's time is {now_ms})"));
    }
    if reason.is_some_and(|reason| reason.len() > MAX_PAUSE_REASON_BYTES) {
        return Some(format!("reason is longer than {MAX_PAUSE_REASON_BYTES} bytes"));
    }
    None
}

/// Stages A (structure), B (strict mode) and C (limits) for one job; the first failure wins.
/// `now_ms` is the wall clock used for the schedule horizon.
pub fn validate_new_job(policy: &Policy, job: &NewJob, now_ms: TimeMs) -> Result<(), Rejection> {
    check_structure(job)?;
    if policy.server.strict_queues && !policy.is_declared(&job.queue) {
        return Err(Rejection::UnknownQueue { queue: job.queue.clone() });
    }
    check_limits(policy, job, now_ms)
}

fn check_structure(job: &NewJob) -> Result<(), Rejection> {
    if let Some(problem) = queue_name_problem(&job.queue, "queue") {
        return Err(Rejection::invalid(problem));
    }
    if job.job_type.is_empty() {
        return Err(Rejection::invalid("job_type must not be empty"));
    }
    if let Some(payload) = &job.payload {
        if payload.data.is_empty() {
            return Err(Rejection::invalid("payload.data must not be empty"));
        }
        if payload.encoding.is_empty() {
            return Err(Rejection::invalid("payload.encoding must not be empty"));
        }
    }
    if job.idempotency_key.as_deref() == Some("") {
        return Err(Rejection::invalid("idempotency_key must not be empty"));
    }
    if job.priority.is_some_and(|priority| priority > 9) {
        return Err(Rejection::invalid("priority must be <= 9"));
    }
    if job.max_attempts == Some(0) {
        return Err(Rejection::invalid("max_attempts must be >= 1"));
    }
    if job.trace_context.as_ref().is_some_and(|trace| trace.traceparent.is_empty()) {
        return Err(Rejection::invalid("trace_context.traceparent must not be empty"));
    }
    for (key, value) in &job.custom {
        if key.is_empty() {
            return Err(Rejection::invalid("custom key must not be empty"));
        }
        if value.is_none() {
            return Err(Rejection::invalid(format!("custom[{key}] must set a value")));
        }
    }
    Ok(())
}

fn check_limits(policy: &Policy, job: &NewJob, now_ms: TimeMs) -> Result<(), Rejection> {
    let server = &policy.server;
    let limits = policy.queue(&job.queue);
    if job.queue.len() as u64 > u64::from(server.max_queue_name_bytes) {
        return Err(Rejection::QueueNameTooLong { limit: server.max_queue_name_bytes, actual: job.queue.len() as u64 });
    }
    if job.job_type.len() as u64 > u64::from(server.max_job_type_bytes) {
        return Err(Rejection::JobTypeNameTooLong {
            limit: server.max_job_type_bytes,
            actual: job.job_type.len() as u64,
        });
    }
    if let Some(allowed) = &limits.allowed_job_types
        && !allowed.contains(&job.job_type)
    {
        return Err(Rejection::JobTypeNotAllowed { job_type: job.job_type.clone(), allowed: allowed.clone() });
    }
    if let Some(key) = &job.idempotency_key
        && key.len() as u64 > u64::from(server.max_idempotency_key_bytes)
    {
        return Err(Rejection::IdempotencyKeyTooLong {
            limit: server.max_idempotency_key_bytes,
            actual: key.len() as u64,
        });
    }
    if let Some(payload) = &job.payload {
        if payload.data.len() as u64 > limits.max_payload_bytes {
            return Err(Rejection::PayloadTooLarge {
                limit: limits.max_payload_bytes,
                actual: payload.data.len() as u64,
            });
        }
        if let Some(allowed) = &limits.allowed_encodings
            && !allowed.contains(&payload.encoding)
        {
            return Err(Rejection::EncodingNotAllowed { encoding: payload.encoding.clone(), allowed: allowed.clone() });
        }
    }
    check_custom(limits, job)?;
    if let Some(scheduled_at_ms) = job.scheduled_at_ms
        && i128::from(scheduled_at_ms) > i128::from(now_ms) + i128::from(limits.max_schedule_horizon_ms)
    {
        return Err(Rejection::ScheduledTooFar {
            horizon_ms: limits.max_schedule_horizon_ms,
            actual_ms: scheduled_at_ms,
        });
    }
    Ok(())
}

fn check_custom(limits: &crate::QueueLimits, job: &NewJob) -> Result<(), Rejection> {
    let entries = job.custom.len() as u64;
    if entries > u64::from(limits.max_custom_entries) {
        return Err(Rejection::CustomEntriesTooMany {
            limit: limits.max_custom_entries,
            actual: u32::try_from(entries).unwrap_or(u32::MAX),
        });
    }
    if let Some(key) = job.custom.keys().find(|key| key.len() as u64 > u64::from(limits.max_custom_key_bytes)) {
        return Err(Rejection::CustomKeyTooLong {
            key: key.clone(),
            limit: limits.max_custom_key_bytes,
            actual: key.len() as u64,
        });
    }
    let total: u64 = job
        .custom
        .iter()
        .map(|(key, value)| key.len() as u64 + value.as_ref().map_or(0, |value| value.size_bytes()))
        .sum();
    if total > limits.max_custom_total_bytes {
        return Err(Rejection::CustomMapTooLarge { limit: limits.max_custom_total_bytes, actual: total });
    }
    Ok(())
}

/// The batch-size checks shared by EnqueueBatch and EnqueueAtomic.
pub fn validate_batch_size(policy: &Policy, jobs: usize) -> Result<(), CallError> {
    if jobs == 0 {
        return Err(CallError::InvalidArgument("batch must contain at least one job".into()));
    }
    let max = policy.server.max_enqueue_batch;
    if jobs as u64 > u64::from(max) {
        return Err(CallError::InvalidArgument(format!("batch exceeds max_enqueue_batch ({max})")));
    }
    Ok(())
}

/// A Reserve call as it arrives. Durations are in milliseconds and may be negative; `None` is
/// an unset field. A positive duration below one millisecond arrives as 1.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReserveRequest {
    pub queues: Vec<String>,
    pub wait_timeout_ms: Option<i64>,
    pub lease_duration_ms: Option<i64>,
    pub worker_id: Option<String>,
    pub max_jobs: Option<u32>,
}

/// A validated Reserve with every clamp applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReservePlan {
    pub queues: Vec<String>,
    pub wait_ms: u64,
    pub lease_ms: u64,
    pub max_jobs: u32,
}

/// Validates and clamps a Reserve call (docs/protocol.md#reserve) in the documented order.
pub fn plan_reserve(policy: &Policy, request: ReserveRequest) -> Result<ReservePlan, CallError> {
    let invalid = |message: String| Err(CallError::InvalidArgument(message));
    if request.queues.is_empty() {
        return invalid("queues must contain at least 1 item".into());
    }
    if let Some(problem) = request.queues.iter().find_map(|queue| queue_name_problem(queue, "queues item")) {
        return invalid(problem);
    }
    if request.wait_timeout_ms.is_some_and(|wait| wait < 0) {
        return invalid("wait_timeout must not be negative".into());
    }
    let lease_ms = match request.lease_duration_ms {
        None => return invalid("lease_duration is required".into()),
        Some(lease) if lease <= 0 => return invalid("lease_duration must be greater than 0".into()),
        Some(lease) => lease as u64,
    };
    if request.worker_id.as_deref() == Some("") {
        return invalid("worker_id must not be empty".into());
    }
    if request.max_jobs == Some(0) {
        return invalid("max_jobs must be >= 1".into());
    }
    let server = &policy.server;
    if request.queues.len() as u64 > u64::from(server.max_reserve_queues) {
        return invalid(format!("reserve exceeds max_reserve_queues ({})", server.max_reserve_queues));
    }
    if let Some(queue) = request.queues.iter().find(|queue| queue.len() as u64 > u64::from(server.max_queue_name_bytes))
    {
        return invalid(format!("queue \"{queue}\" exceeds max_queue_name_bytes ({})", server.max_queue_name_bytes));
    }
    if server.strict_queues {
        let undeclared: Vec<&str> =
            request.queues.iter().filter(|queue| !policy.is_declared(queue)).map(String::as_str).collect();
        if !undeclared.is_empty() {
            return Err(CallError::FailedPrecondition(format!(
                "strict_queues is on and these queues are not declared: {}",
                undeclared.join(", ")
            )));
        }
    }
    let lease_cap_ms =
        request.queues.iter().map(|queue| policy.queue(queue).max_lease_duration_ms).min().unwrap_or(u64::MAX);
    Ok(ReservePlan {
        wait_ms: (request.wait_timeout_ms.unwrap_or(0) as u64).min(server.max_wait_timeout_ms),
        lease_ms: lease_ms.min(lease_cap_ms).max(1),
        max_jobs: request.max_jobs.unwrap_or(1).clamp(1, server.max_reserve_batch.max(1)),
        queues: request.queues,
    })
}

/// The target of a lease operation: a job id in canonical form, or an id that has the canonical
/// shape but not its lowercase bytes (it validates, yet matches no job).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseTarget {
    Job(JobId),
    NoSuchJob,
}

/// Checks the fields every lease operation shares: job id, attempt and worker id (docs/protocol.md#ack).
pub fn validate_lease_fields(job_id: &str, attempt: u32, worker_id: Option<&str>) -> Result<LeaseTarget, CallError> {
    let target = parse_job_id(job_id)?;
    if attempt == 0 {
        return Err(CallError::InvalidArgument("attempt must be >= 1".into()));
    }
    validate_worker_id(worker_id)?;
    Ok(target)
}

/// A worker id, when present, must not be empty.
pub fn validate_worker_id(worker_id: Option<&str>) -> Result<(), CallError> {
    if worker_id == Some("") {
        return Err(CallError::InvalidArgument("worker_id must not be empty".into()));
    }
    Ok(())
}

/// Checks a job id as every call by id takes it: a lowercase hyphenated UUID. An uppercase one
/// is well formed but names no job (ids are issued lowercase).
pub fn validate_job_id(job_id: &str) -> Result<LeaseTarget, CallError> {
    parse_job_id(job_id)
}

fn parse_job_id(job_id: &str) -> Result<LeaseTarget, CallError> {
    let bytes = job_id.as_bytes();
    let canonical_shape = bytes.len() == 36
        && bytes.iter().enumerate().all(|(index, byte)| match index {
            8 | 13 | 18 | 23 => *byte == b'-',
            _ => byte.is_ascii_hexdigit(),
        });
    if !canonical_shape {
        return Err(CallError::InvalidArgument("job_id must be a UUID".into()));
    }
    if bytes.iter().any(u8::is_ascii_uppercase) {
        return Ok(LeaseTarget::NoSuchJob);
    }
    let id = JobId::parse_str(job_id).map_err(|_| CallError::InvalidArgument("job_id must be a UUID".into()))?;
    Ok(LeaseTarget::Job(id))
}

/// Checks a lease duration given to Extend; returns it in milliseconds.
pub fn validate_lease_duration(lease_duration_ms: Option<i64>) -> Result<u64, CallError> {
    match lease_duration_ms {
        None => Err(CallError::InvalidArgument("lease_duration is required".into())),
        Some(lease) if lease <= 0 => Err(CallError::InvalidArgument("lease_duration must be greater than 0".into())),
        Some(lease) => Ok(lease as u64),
    }
}

/// Validates a DrainDeadLetters call and returns the clamped maximum.
pub fn plan_drain(policy: &Policy, queue: Option<&str>, max: Option<u32>) -> Result<u32, CallError> {
    if queue == Some("") {
        return Err(CallError::InvalidArgument("queue must not be empty".into()));
    }
    if max == Some(0) {
        return Err(CallError::InvalidArgument("max must be >= 1".into()));
    }
    Ok(max.unwrap_or(1).clamp(1, policy.server.max_reserve_batch.max(1)))
}

/// How a nacked job should be retried (the `NackRetry` oneof).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NackStrategy {
    /// The queue's retry policy.
    Default,
    /// Retry after this many milliseconds (no jitter).
    Delay { delay_ms: u64 },
    /// Dead-letter now, with cause `Rejected`.
    DeadLetter,
}

/// Validates a Nack's `retry` field. `None` is an absent field (the queue policy); `Some(None)`
/// is a present `NackRetry` whose oneof is unset. Delays are in milliseconds.
pub fn validate_nack_strategy(retry: Option<Option<NackRequestRetry>>) -> Result<NackStrategy, CallError> {
    match retry {
        None => Ok(NackStrategy::Default),
        Some(None) => Err(CallError::InvalidArgument("retry strategy is required".into())),
        Some(Some(NackRequestRetry::Default)) => Ok(NackStrategy::Default),
        Some(Some(NackRequestRetry::DeadLetter)) => Ok(NackStrategy::DeadLetter),
        Some(Some(NackRequestRetry::Delay { delay_ms })) if delay_ms < 0 => {
            Err(CallError::InvalidArgument("retry delay must not be negative".into()))
        }
        Some(Some(NackRequestRetry::Delay { delay_ms })) => Ok(NackStrategy::Delay { delay_ms: delay_ms as u64 }),
    }
}

/// A Nack's retry strategy as it arrives, with a possibly negative delay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NackRequestRetry {
    Default,
    Delay { delay_ms: i64 },
    DeadLetter,
}
