//! The limits and policies the queue rules obey, already resolved per queue.
//!
//! This module owns the *values*; it does not parse configuration files or environment variables
//! (that is the `sepp-config` crate, which builds a [`Policy`] from them). A `Policy` is
//! immutable: a hot reload builds a new one and hands it to the state machine.

use std::collections::HashMap;

/// How a nack's retry delay grows with the attempt number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryBackoff {
    /// Every retry waits `retry_delay_ms`.
    None,
    /// Retry n waits `retry_delay_ms * 2^(n-1)`.
    Exponential,
}

/// The effective limits of one queue: its `[[queues]]` overrides merged over the globals.
#[derive(Clone, Debug, PartialEq)]
pub struct QueueLimits {
    pub max_lease_duration_ms: u64,
    pub default_max_attempts: u32,
    pub max_attempts_ceiling: u32,
    pub default_priority: u8,
    pub retry_delay_ms: u64,
    pub retry_backoff: RetryBackoff,
    pub retry_delay_max_ms: u64,
    pub max_payload_bytes: u64,
    /// `None` accepts any encoding; `Some(vec![])` rejects every payload.
    pub allowed_encodings: Option<Vec<String>>,
    /// Per-queue only; `None` accepts any job type.
    pub allowed_job_types: Option<Vec<String>>,
    pub max_schedule_horizon_ms: u64,
    pub max_custom_entries: u32,
    pub max_custom_total_bytes: u64,
    pub max_custom_key_bytes: u32,
    /// Pinned from the boot-time configuration (docs/configuration.md#hot-reload): reloads never change it.
    pub dedup_window_ms: u64,
    /// `None` is unlimited; `Some(0)` rejects every new job.
    pub max_queue_depth: Option<u64>,
    /// Per-queue only: at most this many of the queue's jobs in flight at once, across all
    /// workers; `None` is unlimited.
    pub max_in_flight: Option<u32>,
    /// Per-queue only: at most so many leases per period; `None` is unlimited.
    pub rate_limit: Option<RateLimit>,
    /// Per-queue only: limits per value of one custom metadata field; `None` is unlimited.
    pub key_limit: Option<std::sync::Arc<KeyLimit>>,
}

/// Limits that apply to each value of one custom metadata field on its own (for example at most
/// 5 jobs in flight per `tenant`). Jobs without the field are held only by the queue's limits.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct KeyLimit {
    /// The custom metadata key whose value names a job's key.
    pub field: String,
    /// The limits of every value without an override.
    pub default: KeyLimits,
    /// Per-value overrides: each replaces the default's fields it sets.
    pub overrides: HashMap<String, KeyLimits>,
}

/// The limits of one key value.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyLimits {
    /// At most this many of the value's jobs in flight at once; `None` is unlimited.
    pub max_in_flight: Option<u32>,
    /// At most so many of the value's jobs leased per period; `None` is unlimited.
    pub rate: Option<RateLimit>,
}

impl KeyLimit {
    /// The effective limits of `value`.
    pub fn of(&self, value: &str) -> KeyLimits {
        match self.overrides.get(value) {
            None => self.default,
            Some(custom) => custom.over(self.default),
        }
    }

    /// Whether any value has an in-flight limit or a rate limit at all.
    pub fn limits_anything(&self) -> bool {
        let limits = |limits: &KeyLimits| limits.max_in_flight.is_some() || limits.rate.is_some();
        limits(&self.default) || self.overrides.values().any(limits)
    }
}

impl KeyLimits {
    /// These limits where set, `base`'s elsewhere.
    pub fn over(self, base: KeyLimits) -> KeyLimits {
        KeyLimits { max_in_flight: self.max_in_flight.or(base.max_in_flight), rate: self.rate.or(base.rate) }
    }
}

/// A token bucket: `limit` leases per `period_ms`, up to `burst` at once after a quiet spell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    pub limit: u32,
    pub period_ms: u64,
    pub burst: u32,
}

/// The bucket as GCRA keeps it: `tat_us`, the theoretical arrival time of the next lease
/// (`None`: never used, so full). A lease is allowed while `tat_us - now_us` is within the
/// tolerance, `(burst - 1)` intervals; each lease moves `tat_us` one interval on.
impl RateLimit {
    /// The time one token takes to come back, in microseconds (at least 1).
    pub fn interval_us(&self) -> i64 {
        ((self.period_ms.saturating_mul(1000)) / u64::from(self.limit.max(1))).max(1) as i64
    }

    fn tolerance_us(&self) -> i64 {
        i64::from(self.burst.max(1) - 1) * self.interval_us()
    }

    /// How many leases the bucket allows at `now_us`.
    pub fn room(&self, tat_us: Option<i64>, now_us: i64) -> usize {
        let tat = tat_us.unwrap_or(now_us).max(now_us);
        let slack = self.tolerance_us() - (tat - now_us);
        if slack < 0 { 0 } else { (slack / self.interval_us() + 1) as usize }
    }

    /// The bucket's `tat_us` after `leases` more at `now_us`.
    pub fn spent(&self, tat_us: Option<i64>, now_us: i64, leases: usize) -> i64 {
        let tat = tat_us.unwrap_or(now_us).max(now_us);
        tat.saturating_add(self.interval_us().saturating_mul(leases as i64))
    }

    /// When the bucket at `tat_us` next allows a lease, in microseconds.
    pub fn next_token_us(&self, tat_us: i64) -> i64 {
        tat_us - self.tolerance_us()
    }
}

impl Default for QueueLimits {
    /// The built-in defaults (docs/configuration.md#limits).
    fn default() -> Self {
        QueueLimits {
            max_lease_duration_ms: 300_000,
            default_max_attempts: 3,
            max_attempts_ceiling: 100,
            default_priority: 0,
            retry_delay_ms: 0,
            retry_backoff: RetryBackoff::None,
            retry_delay_max_ms: 3_600_000,
            max_payload_bytes: 1_048_576,
            allowed_encodings: None,
            allowed_job_types: None,
            max_schedule_horizon_ms: 2_592_000_000,
            max_custom_entries: 64,
            max_custom_total_bytes: 16_384,
            max_custom_key_bytes: 256,
            dedup_window_ms: 86_400_000,
            max_queue_depth: None,
            max_in_flight: None,
            rate_limit: None,
            key_limit: None,
        }
    }
}

/// Server-wide limits that no queue overrides.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerLimits {
    pub max_queue_name_bytes: u32,
    pub max_job_type_bytes: u32,
    pub max_idempotency_key_bytes: u32,
    pub max_enqueue_batch: u32,
    pub max_reserve_batch: u32,
    pub max_reserve_queues: u32,
    pub max_wait_timeout_ms: u64,
    pub strict_queues: bool,
}

impl Default for ServerLimits {
    fn default() -> Self {
        ServerLimits {
            max_queue_name_bytes: 512,
            max_job_type_bytes: 256,
            max_idempotency_key_bytes: 256,
            max_enqueue_batch: 256,
            max_reserve_batch: 256,
            max_reserve_queues: 32,
            max_wait_timeout_ms: 300_000,
            strict_queues: false,
        }
    }
}

/// Everything the rules need to know about configuration, resolved once per (re)load.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Policy {
    pub server: ServerLimits,
    /// The limits of every undeclared queue (the global values).
    pub defaults: QueueLimits,
    /// Declared queues (`[[queues]]`) with their effective limits.
    pub declared: HashMap<String, QueueLimits>,
}

impl Policy {
    /// The effective limits of `queue`: its declaration, else the globals.
    pub fn queue(&self, queue: &str) -> &QueueLimits {
        self.declared.get(queue).unwrap_or(&self.defaults)
    }

    pub fn is_declared(&self, queue: &str) -> bool {
        self.declared.contains_key(queue)
    }
}
