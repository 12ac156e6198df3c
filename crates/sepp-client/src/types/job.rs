//! What a consumer gets from `reserve`: [`Job`] and its [`JobCtx`] (with the lease handle), the
//! [`ReserveOptions`] that ask for them, and their validation errors.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::{Payload, Primitive, Priority, TraceContext};
use crate::client::{LeaseError, SeppClient};

/// A reserved job: its data and its context.
#[derive(Debug, Clone)]
pub struct Job {
    /// The job's data, if the producer sent any.
    pub payload: Option<Payload>,
    /// Everything else about the job, and its lease.
    pub ctx: JobCtx,
}

/// A reserved job's metadata and its lease.
///
/// The lease belongs to this attempt: [`SeppClient::ack`], [`SeppClient::nack`] and
/// [`extend`](Self::extend) echo `id` and `attempt`, so a worker whose lease expired (and whose
/// job was given to someone else) gets [`LeaseError::AttemptMismatch`] or
/// [`LeaseError::JobNotFound`] instead of settling another worker's attempt.
#[derive(Clone)]
pub struct JobCtx {
    /// The job id (a UUID).
    pub id: String,
    /// The queue the job was reserved from.
    pub queue: String,
    /// The job type.
    pub job_type: String,
    /// The job's priority.
    pub priority: Priority,
    /// This delivery's number, 1 on the first.
    pub attempt: u32,
    /// The number of deliveries the job gets before it is dead-lettered.
    pub max_attempts: u32,
    /// When the job was enqueued.
    pub enqueued_at: SystemTime,
    /// When the job was scheduled for, if it was.
    pub scheduled_at: Option<SystemTime>,
    /// The producer's custom metadata.
    pub custom: HashMap<String, Primitive>,
    /// The producer's trace context, if it sent a valid one.
    pub trace_context: Option<TraceContext>,
    /// The lease deadline granted by the reserve (see [`lease_expiry`](Self::lease_expiry) for
    /// the deadline after later extensions).
    pub lease_expires_at: SystemTime,
    pub(crate) lease: Arc<Lease>,
}

/// The lease handle behind a [`JobCtx`]: the client to settle it with, the worker id to send,
/// and the latest known expiry, updated by every successful extend.
#[derive(Debug)]
pub(crate) struct Lease {
    pub(crate) client: SeppClient,
    pub(crate) worker_id: Option<String>,
    expires_at: Mutex<SystemTime>,
}

impl Lease {
    pub(crate) fn new(client: SeppClient, worker_id: Option<String>, expires_at: SystemTime) -> Self {
        Self { client, worker_id, expires_at: Mutex::new(expires_at) }
    }

    pub(crate) fn expires_at(&self) -> SystemTime {
        *self.expires_at.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn set_expires_at(&self, at: SystemTime) {
        *self.expires_at.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = at;
    }
}

impl JobCtx {
    /// Pushes the lease deadline to now + `extension` and returns the new deadline (the server
    /// may clamp it to its maximum lease). Call it well before the lease expires: an expired
    /// lease cannot be extended.
    pub async fn extend(&self, extension: Duration) -> Result<SystemTime, LeaseError> {
        self.lease.client.extend(self, extension).await
    }

    /// The latest known lease deadline: the one granted by the reserve or by the last
    /// successful extend.
    pub fn lease_expiry(&self) -> SystemTime {
        self.lease.expires_at()
    }

    /// The worker id sent with this job's lease operations, if any.
    pub fn worker_id(&self) -> Option<&str> {
        self.lease.worker_id.as_deref()
    }
}

impl fmt::Debug for JobCtx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobCtx")
            .field("id", &self.id)
            .field("queue", &self.queue)
            .field("job_type", &self.job_type)
            .field("priority", &self.priority)
            .field("attempt", &self.attempt)
            .field("max_attempts", &self.max_attempts)
            .field("enqueued_at", &self.enqueued_at)
            .field("scheduled_at", &self.scheduled_at)
            .field("custom", &self.custom)
            .field("trace_context", &self.trace_context)
            .field("lease_expires_at", &self.lease_expiry())
            .field("worker_id", &self.worker_id())
            .finish()
    }
}

impl fmt::Display for JobCtx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "JobCtx {{ id: {}, job_type: {}, attempt: {}/{}, priority: {} }}",
            self.id, self.job_type, self.attempt, self.max_attempts, self.priority
        )
    }
}

/// Why a job (or dead-letter record) in a server response could not be decoded. Reserve skips
/// such jobs with a warning instead of failing the whole call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JobConversionError {
    /// A required field was unset or empty.
    #[error("missing field {0}")]
    MissingField(&'static str),
    /// The priority was outside 0–9.
    #[error("priority {0} is out of range")]
    PriorityOutOfRange(u32),
    /// A timestamp was before the Unix epoch or had invalid nanoseconds.
    #[error("invalid timestamp in {field}: {value}s")]
    InvalidTimestamp {
        /// The field.
        field: &'static str,
        /// Its seconds since the Unix epoch.
        value: i64,
    },
    /// A custom metadata entry had no value.
    #[error("custom entry {0:?} has no value")]
    EmptyCustomValue(String),
}

/// What to reserve: the queues (polled in the order given), the lease to take, how long to
/// wait for a job, and optionally a worker id and a batch size.
///
/// ```
/// use std::time::Duration;
/// use sepp_client::ReserveOptions;
///
/// let options = ReserveOptions::new(["urgent", "emails"], Duration::from_secs(60))?
///     .with_wait_timeout(Duration::from_secs(20))
///     .with_max_jobs(8)
///     .with_worker_id("mailer-1")?;
/// assert_eq!(options.wait_timeout(), Duration::from_secs(20));
/// # Ok::<(), sepp_client::ReserveOptionsError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReserveOptions {
    queues: Vec<String>,
    lease_duration: Duration,
    wait_timeout: Duration,
    worker_id: Option<String>,
    max_jobs: Option<u32>,
}

impl ReserveOptions {
    /// How long a reserve waits for a job unless told otherwise.
    pub const DEFAULT_WAIT_TIMEOUT: Duration = Duration::from_secs(30);

    /// Options for `queues` with leases of `lease_duration`. There must be at least one queue,
    /// no empty name, and a lease of at least a millisecond (the server's unit). The wait
    /// defaults to 30 s; the batch size and worker id are unset.
    pub fn new<I>(queues: I, lease_duration: Duration) -> Result<Self, ReserveOptionsError>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let queues: Vec<String> = queues.into_iter().map(Into::into).collect();
        if queues.is_empty() {
            return Err(ReserveOptionsError::EmptyQueues);
        }
        if let Some(index) = queues.iter().position(String::is_empty) {
            return Err(ReserveOptionsError::EmptyQueueName(index));
        }
        if lease_duration < Duration::from_millis(1) {
            return Err(ReserveOptionsError::LeaseDurationTooShort);
        }
        Ok(Self { queues, lease_duration, wait_timeout: Self::DEFAULT_WAIT_TIMEOUT, worker_id: None, max_jobs: None })
    }

    /// How long the server may hold the call open waiting for a job (zero: answer at once).
    /// The call's deadline is this plus 10 s, so the server answers before the deadline fires.
    pub fn with_wait_timeout(mut self, wait_timeout: Duration) -> Self {
        self.wait_timeout = wait_timeout;
        self
    }

    /// Identifies the worker to the server (logs, admin views); must be non-empty.
    pub fn with_worker_id(mut self, worker_id: impl Into<String>) -> Result<Self, ReserveOptionsError> {
        let worker_id = worker_id.into();
        if worker_id.is_empty() {
            return Err(ReserveOptionsError::EmptyWorkerId);
        }
        self.worker_id = Some(worker_id);
        Ok(self)
    }

    /// Asks for up to `max_jobs` jobs in one call (the server's default is 1, and it clamps the
    /// value to its maximum). Zero is sent as is, and the server refuses it.
    pub fn with_max_jobs(mut self, max_jobs: u32) -> Self {
        self.max_jobs = Some(max_jobs);
        self
    }

    /// The queues, in polling order.
    pub fn queues(&self) -> &[String] {
        &self.queues
    }

    /// The requested lease.
    pub fn lease_duration(&self) -> Duration {
        self.lease_duration
    }

    /// The wait timeout.
    pub fn wait_timeout(&self) -> Duration {
        self.wait_timeout
    }

    /// The worker id, if set.
    pub fn worker_id(&self) -> Option<&str> {
        self.worker_id.as_deref()
    }

    /// The batch size, if set.
    pub fn max_jobs(&self) -> Option<u32> {
        self.max_jobs
    }
}

/// Why [`ReserveOptions`] could not be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReserveOptionsError {
    /// No queue was given.
    #[error("at least one queue is required")]
    EmptyQueues,
    /// The queue at this index had an empty name.
    #[error("queue name at index {0} is empty")]
    EmptyQueueName(usize),
    /// The lease was shorter than a millisecond.
    #[error("lease duration must be at least 1 ms")]
    LeaseDurationTooShort,
    /// The worker id was empty.
    #[error("worker id must not be empty")]
    EmptyWorkerId,
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEASE: Duration = Duration::from_secs(30);

    #[test]
    fn reserve_options_default_to_a_30_second_wait_and_no_batch_or_worker() {
        let options = ReserveOptions::new(vec!["a", "b"], LEASE).unwrap();
        assert_eq!(options.queues(), ["a".to_owned(), "b".to_owned()]);
        assert_eq!(options.lease_duration(), LEASE);
        assert_eq!(options.wait_timeout(), Duration::from_secs(30));
        assert_eq!(options.max_jobs(), None);
        assert_eq!(options.worker_id(), None);
    }

    #[test]
    fn reserve_options_are_validated() {
        let none: [&str; 0] = [];
        assert_eq!(ReserveOptions::new(none, LEASE), Err(ReserveOptionsError::EmptyQueues));
        assert_eq!(ReserveOptions::new(["a", "", "c"], LEASE), Err(ReserveOptionsError::EmptyQueueName(1)));
        assert_eq!(ReserveOptions::new(["a"], Duration::ZERO), Err(ReserveOptionsError::LeaseDurationTooShort));
        assert_eq!(
            ReserveOptions::new(["a"], Duration::from_micros(999)),
            Err(ReserveOptionsError::LeaseDurationTooShort)
        );
        let options = ReserveOptions::new(["a"], LEASE).unwrap();
        assert_eq!(options.clone().with_worker_id(""), Err(ReserveOptionsError::EmptyWorkerId));
        assert_eq!(options.with_worker_id("w").unwrap().worker_id(), Some("w"));
    }

    #[test]
    fn zero_max_jobs_is_passed_through_for_the_server_to_refuse() {
        let options = ReserveOptions::new([String::from("a")], LEASE).unwrap().with_max_jobs(0);
        assert_eq!(options.max_jobs(), Some(0));
    }
}
