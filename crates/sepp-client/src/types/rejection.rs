//! Why the server refused a job: [`JobRejection`] (a value, not an error, in batch results),
//! [`JobValidationError`] and the atomic enqueue's [`AtomicEnqueueError`].

use std::time::{Duration, SystemTime};

use crate::client::ClientError;

/// Why the server did not accept one job. A rejection is an answer about that job only: in a
/// batch, the other jobs may have been accepted.
///
/// Every reason is deterministic (the same job is refused again under the same configuration)
/// except [`QueueFull`](Self::QueueFull) and [`QueueClosing`](Self::QueueClosing); see
/// [`is_transient`](Self::is_transient). A reason this version does not know becomes
/// [`Unknown`](Self::Unknown).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JobRejection {
    /// The queue is not declared and the server runs with strict queues.
    #[error("unknown queue {queue:?}")]
    UnknownQueue {
        /// The queue named by the job.
        queue: String,
    },
    /// The payload is larger than the server allows.
    #[error("payload too large: {actual} bytes, limit {limit}")]
    PayloadTooLarge {
        /// The limit in bytes.
        limit: u64,
        /// The payload's size in bytes.
        actual: u64,
    },
    /// The payload encoding is not in the server's allow list.
    #[error("encoding {encoding:?} not allowed (allowed: {allowed:?})")]
    EncodingNotAllowed {
        /// The refused encoding.
        encoding: String,
        /// The encodings the server accepts.
        allowed: Vec<String>,
    },
    /// The job type is not allowed on this queue.
    #[error("job type {job_type:?} not allowed (allowed: {allowed:?})")]
    JobTypeNotAllowed {
        /// The refused job type.
        job_type: String,
        /// The job types the queue accepts.
        allowed: Vec<String>,
    },
    /// Too many custom metadata entries.
    #[error("too many custom entries: {actual}, limit {limit}")]
    CustomEntriesTooMany {
        /// The most entries allowed.
        limit: u32,
        /// The number sent.
        actual: u32,
    },
    /// The custom metadata map is too large in total.
    #[error("custom map too large: {actual} bytes, limit {limit}")]
    CustomMapTooLarge {
        /// The limit in bytes.
        limit: u64,
        /// The map's size in bytes.
        actual: u64,
    },
    /// A custom metadata key is too long.
    #[error("custom key {key:?} too long: {actual} bytes, limit {limit}")]
    CustomKeyTooLong {
        /// The key.
        key: String,
        /// The limit in bytes.
        limit: u32,
        /// The key's length in bytes.
        actual: u64,
    },
    /// The queue name is too long.
    #[error("queue name too long: {actual} bytes, limit {limit}")]
    QueueNameTooLong {
        /// The limit in bytes.
        limit: u32,
        /// The name's length in bytes.
        actual: u64,
    },
    /// The job type name is too long.
    #[error("job type too long: {actual} bytes, limit {limit}")]
    JobTypeNameTooLong {
        /// The limit in bytes.
        limit: u32,
        /// The name's length in bytes.
        actual: u64,
    },
    /// The idempotency key is too long.
    #[error("idempotency key too long: {actual} bytes, limit {limit}")]
    IdempotencyKeyTooLong {
        /// The limit in bytes.
        limit: u32,
        /// The key's length in bytes.
        actual: u64,
    },
    /// The job is scheduled further ahead than the server's horizon.
    #[error("scheduled too far ahead (horizon {horizon:?})")]
    ScheduledTooFar {
        /// How far ahead jobs may be scheduled.
        horizon: Duration,
        /// The requested delivery time.
        actual: SystemTime,
    },
    /// The request is malformed in another way; the message says how.
    #[error("invalid request: {message}")]
    InvalidRequest {
        /// The server's explanation.
        message: String,
    },
    /// The queue holds as many jobs as it may (transient).
    #[error("queue {queue:?} is full (limit {limit} jobs)")]
    QueueFull {
        /// The queue.
        queue: String,
        /// Its depth limit.
        limit: u64,
    },
    /// The queue is being removed (transient).
    #[error("queue {queue:?} is closing")]
    QueueClosing {
        /// The queue.
        queue: String,
    },
    /// A reason this client version does not know.
    #[error("rejected for an unknown reason")]
    Unknown,
}

impl JobRejection {
    /// Whether the same job might be accepted later without changes (a full or closing
    /// queue); every other reason repeats for the same job and configuration.
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::QueueFull { .. } | Self::QueueClosing { .. })
    }
}

/// One job's failure in a refused atomic enqueue.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("job {index}: {rejection}")]
pub struct JobValidationError {
    /// The job's position in the request.
    pub index: u32,
    /// Why it was refused.
    pub rejection: JobRejection,
}

/// Why [`SeppClient::enqueue_atomic`](crate::client::SeppClient::enqueue_atomic) wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum AtomicEnqueueError {
    /// The call itself failed (transport, auth, an empty batch, …).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// At least one job was refused, so none was written; every refused job is listed.
    #[error("atomic enqueue refused: {}", describe(.0))]
    Validation(Vec<JobValidationError>),
}

fn describe(errors: &[JobValidationError]) -> String {
    errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_full_and_closing_queues_are_transient() {
        assert!(JobRejection::QueueFull { queue: "q".into(), limit: 1 }.is_transient());
        assert!(JobRejection::QueueClosing { queue: "q".into() }.is_transient());
        assert!(!JobRejection::UnknownQueue { queue: "q".into() }.is_transient());
        assert!(!JobRejection::Unknown.is_transient());
    }

    #[test]
    fn rejections_read_well() {
        let rejection = JobRejection::PayloadTooLarge { limit: 10, actual: 12 };
        assert_eq!(rejection.to_string(), "payload too large: 12 bytes, limit 10");
        let error = AtomicEnqueueError::Validation(vec![
            JobValidationError { index: 0, rejection: JobRejection::UnknownQueue { queue: "q".into() } },
            JobValidationError { index: 2, rejection: JobRejection::Unknown },
        ]);
        assert_eq!(
            error.to_string(),
            "atomic enqueue refused: job 0: unknown queue \"q\"; job 2: rejected for an unknown reason"
        );
    }
}
