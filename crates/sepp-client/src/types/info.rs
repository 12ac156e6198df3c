//! [`ServerInfo`]: the server's version and limits, from `GetServerInfo`.

use std::time::{Duration, SystemTime};

/// The server's version, protocol versions, clock and limits.
///
/// Limits let a producer check jobs before sending them, and tell a consumer how long a wait
/// or lease may be (the server clamps larger values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerInfo {
    /// The server's version, for example `0.2.0`.
    pub version: String,
    /// The wire protocol versions it speaks, for example `["v1"]`.
    pub supported_protocol_versions: Vec<String>,
    /// The server's clock when it answered.
    pub server_time: SystemTime,
    /// Whether only `allowed_encodings` are accepted for payloads.
    pub restricts_encodings: bool,
    /// The accepted payload encodings, when restricted.
    pub allowed_encodings: Vec<String>,
    /// The largest payload, in bytes.
    pub max_payload_bytes: u64,
    /// The most custom metadata entries on one job.
    pub max_custom_entries: u32,
    /// The largest custom metadata map, in bytes.
    pub max_custom_total_bytes: u64,
    /// The longest custom metadata key, in bytes.
    pub max_custom_key_bytes: u32,
    /// The longest queue name, in bytes.
    pub max_queue_name_bytes: u32,
    /// The longest job type, in bytes.
    pub max_job_type_bytes: u32,
    /// The longest idempotency key, in bytes.
    pub max_idempotency_key_bytes: u32,
    /// How far ahead a job may be scheduled (also caps nack delays).
    pub max_schedule_horizon: Duration,
    /// The most jobs in one enqueue call.
    pub max_enqueue_batch: u32,
    /// The most jobs one reserve (or dead-letter drain) returns.
    pub max_reserve_batch: u32,
    /// The most queues one reserve may name.
    pub max_reserve_queues: u32,
    /// The longest reserve wait.
    pub max_wait_timeout: Duration,
    /// The longest lease.
    pub max_lease_duration: Duration,
    /// Whether only declared queues may be used.
    pub strict_queues: bool,
    /// Whether dead-lettered jobs are kept (and can be drained); when false, a drain is always
    /// empty.
    pub dead_letter_retention_enabled: bool,
}

/// Why a `GetServerInfo` answer could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ServerInfoError {
    /// A required field was unset or empty.
    #[error("missing field {0}")]
    MissingField(&'static str),
    /// The server time was before the Unix epoch or had invalid nanoseconds; carries its seconds.
    #[error("invalid server time: {0}s")]
    InvalidServerTime(i64),
}
