//! The outcomes that are not successes: per-job rejections, lease fencing failures and whole-call
//! errors. They are values, not I/O errors; the gRPC edge maps them to statuses in one place.

use crate::types::TimeMs;

/// Why one job of an enqueue was not accepted (the `JobRejection` oneof of the wire contract).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rejection {
    UnknownQueue {
        queue: String,
    },
    PayloadTooLarge {
        limit: u64,
        actual: u64,
    },
    EncodingNotAllowed {
        encoding: String,
        allowed: Vec<String>,
    },
    JobTypeNotAllowed {
        job_type: String,
        allowed: Vec<String>,
    },
    CustomEntriesTooMany {
        limit: u32,
        actual: u32,
    },
    CustomMapTooLarge {
        limit: u64,
        actual: u64,
    },
    CustomKeyTooLong {
        key: String,
        limit: u32,
        actual: u64,
    },
    QueueNameTooLong {
        limit: u32,
        actual: u64,
    },
    JobTypeNameTooLong {
        limit: u32,
        actual: u64,
    },
    IdempotencyKeyTooLong {
        limit: u32,
        actual: u64,
    },
    /// `horizon_ms` is the queue's horizon, `actual_ms` the requested `scheduled_at`.
    ScheduledTooFar {
        horizon_ms: u64,
        actual_ms: TimeMs,
    },
    InvalidRequest {
        message: String,
    },
    QueueFull {
        queue: String,
        limit: u64,
    },
    QueueClosing {
        queue: String,
    },
}

impl Rejection {
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Rejection::InvalidRequest { message: message.into() }
    }

    /// The label used in logs and metrics (docs/protocol.md#rejections).
    pub fn label(&self) -> &'static str {
        match self {
            Rejection::UnknownQueue { .. } => "unknown_queue",
            Rejection::PayloadTooLarge { .. } => "payload_too_large",
            Rejection::EncodingNotAllowed { .. } => "encoding_not_allowed",
            Rejection::JobTypeNotAllowed { .. } => "job_type_not_allowed",
            Rejection::CustomEntriesTooMany { .. } => "custom_entries_too_many",
            Rejection::CustomMapTooLarge { .. } => "custom_map_too_large",
            Rejection::CustomKeyTooLong { .. } => "custom_key_too_long",
            Rejection::QueueNameTooLong { .. } => "queue_name_too_long",
            Rejection::JobTypeNameTooLong { .. } => "job_type_name_too_long",
            Rejection::IdempotencyKeyTooLong { .. } => "idempotency_key_too_long",
            Rejection::ScheduledTooFar { .. } => "scheduled_too_far",
            Rejection::InvalidRequest { .. } => "invalid_request",
            Rejection::QueueFull { .. } => "queue_full",
            Rejection::QueueClosing { .. } => "queue_closing",
        }
    }
}

/// A lease operation (ack, nack, extend) that found no matching lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeaseError {
    /// No in-flight job with that id: acked already, lease expired, or never existed.
    NotFound,
    /// The job is in flight under a different attempt.
    AttemptMismatch,
    /// The job was cancelled while leased (this very attempt): it is dead-lettered now.
    Cancelled,
}

/// A whole call refused before it reached the queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallError {
    InvalidArgument(String),
    FailedPrecondition(String),
}
