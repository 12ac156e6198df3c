//! From configuration to the core's `Policy`, and what a reload cannot change.
//!
//! This module owns the merge rule of docs/protocol.md#per-queue-limits (a `[[queues]]` override, else the global), the
//! boot pinning of dedup windows (docs/configuration.md#hot-reload), and the restart-only list. It does not validate:
//! `validate` uses the same merge so that what is checked is what the core receives.

use std::collections::BTreeMap;

use sepp_core::{Policy, QueueLimits, ServerLimits};

use crate::schema::{Config, LimitsConfig, QueueConfig};

/// The fields a reload does not apply (docs/configuration.md#hot-reload), as named by the admin config API. `logging`,
/// `tracing` and `metrics` stand for their whole sections.
pub const RESTART_ONLY: &[&str] = &[
    "server.listen_addr",
    "server.db_path",
    "server.tls_cert_path",
    "server.tls_key_path",
    "server.max_connections",
    "server.handshake_timeout_ms",
    "limits.max_message_bytes",
    "storage.persist_mode",
    "storage.sweep_interval_ms",
    "storage.sweep_limit",
    "storage.dead_letter_retention_ms",
    "storage.dedup_window_ms",
    "queues[].dedup_window_ms",
    "storage.command_queue_capacity",
    "storage.cache_size_bytes",
    "storage.max_journaling_size_bytes",
    "storage.max_cached_files",
    "storage.worker_threads",
    "logging",
    "tracing",
    "metrics",
    "admin.enabled",
    "admin.listen_addr",
    "admin.tls_cert_path",
    "admin.tls_key_path",
    "admin.max_connections",
    "admin.handshake_timeout_ms",
    "admin.idle_timeout_ms",
    "cluster",
];

impl Config {
    /// The core's view of this configuration. Dedup windows come from `boot`, the configuration
    /// the server started with: a queue declared at boot with its own window keeps it, every
    /// other queue (including one added later by a reload) uses boot's `storage.dedup_window_ms`.
    /// Pass `boot = self` at startup.
    pub fn policy(&self, boot: &Config) -> Policy {
        let defaults = global_limits(&self.limits, boot.storage.dedup_window_ms);
        let declared = self
            .queues
            .iter()
            .map(|queue| {
                let limits = QueueLimits {
                    dedup_window_ms: boot.pinned_dedup_window_ms(&queue.name),
                    ..merged_limits(&defaults, queue)
                };
                (queue.name.clone(), limits)
            })
            .collect();
        Policy { server: self.server_limits(), defaults, declared }
    }

    fn server_limits(&self) -> ServerLimits {
        let limits = &self.limits;
        ServerLimits {
            max_queue_name_bytes: limits.max_queue_name_bytes,
            max_job_type_bytes: limits.max_job_type_bytes,
            max_idempotency_key_bytes: limits.max_idempotency_key_bytes,
            max_enqueue_batch: limits.max_enqueue_batch,
            max_reserve_batch: limits.max_reserve_batch,
            max_reserve_queues: limits.max_reserve_queues,
            max_wait_timeout_ms: limits.max_wait_timeout_ms,
            strict_queues: self.server.strict_queues,
        }
    }

    /// The dedup window `queue` gets when this is the boot configuration.
    fn pinned_dedup_window_ms(&self, queue: &str) -> u64 {
        self.queues
            .iter()
            .find(|q| q.name == queue)
            .and_then(|q| q.dedup_window_ms)
            .unwrap_or(self.storage.dedup_window_ms)
    }

    /// The restart-only fields (named as in [`RESTART_ONLY`]) whose value differs between
    /// `self` and `newer`, in the order of that list.
    pub fn restart_only_changes(&self, newer: &Config) -> Vec<String> {
        RESTART_ONLY
            .iter()
            .filter(|field| !self.same_restart_only_field(newer, field))
            .map(|field| (*field).to_owned())
            .collect()
    }

    fn same_restart_only_field(&self, other: &Config, field: &str) -> bool {
        let (a, b) = (self, other);
        match field {
            "server.listen_addr" => a.server.listen_addr == b.server.listen_addr,
            "server.db_path" => a.server.db_path == b.server.db_path,
            "server.tls_cert_path" => a.server.tls_cert_path == b.server.tls_cert_path,
            "server.tls_key_path" => a.server.tls_key_path == b.server.tls_key_path,
            "server.max_connections" => a.server.max_connections == b.server.max_connections,
            "server.handshake_timeout_ms" => a.server.handshake_timeout_ms == b.server.handshake_timeout_ms,
            "limits.max_message_bytes" => a.limits.max_message_bytes == b.limits.max_message_bytes,
            "storage.persist_mode" => a.storage.persist_mode == b.storage.persist_mode,
            "storage.sweep_interval_ms" => a.storage.sweep_interval_ms == b.storage.sweep_interval_ms,
            "storage.sweep_limit" => a.storage.sweep_limit == b.storage.sweep_limit,
            "storage.dead_letter_retention_ms" => {
                a.storage.dead_letter_retention_ms == b.storage.dead_letter_retention_ms
            }
            "storage.dedup_window_ms" => a.storage.dedup_window_ms == b.storage.dedup_window_ms,
            "queues[].dedup_window_ms" => queue_dedup_windows(a) == queue_dedup_windows(b),
            "storage.command_queue_capacity" => a.storage.command_queue_capacity == b.storage.command_queue_capacity,
            "storage.cache_size_bytes" => a.storage.cache_size_bytes == b.storage.cache_size_bytes,
            "storage.max_journaling_size_bytes" => {
                a.storage.max_journaling_size_bytes == b.storage.max_journaling_size_bytes
            }
            "storage.max_cached_files" => a.storage.max_cached_files == b.storage.max_cached_files,
            "storage.worker_threads" => a.storage.worker_threads == b.storage.worker_threads,
            "logging" => a.logging == b.logging,
            "tracing" => a.tracing == b.tracing,
            "metrics" => a.metrics == b.metrics,
            "cluster" => a.cluster == b.cluster,
            "admin.enabled" => a.admin.enabled == b.admin.enabled,
            "admin.listen_addr" => a.admin.listen_addr == b.admin.listen_addr,
            "admin.tls_cert_path" => a.admin.tls_cert_path == b.admin.tls_cert_path,
            "admin.tls_key_path" => a.admin.tls_key_path == b.admin.tls_key_path,
            "admin.max_connections" => a.admin.max_connections == b.admin.max_connections,
            "admin.handshake_timeout_ms" => a.admin.handshake_timeout_ms == b.admin.handshake_timeout_ms,
            "admin.idle_timeout_ms" => a.admin.idle_timeout_ms == b.admin.idle_timeout_ms,
            other => unreachable!("{other} is not in RESTART_ONLY"),
        }
    }
}

/// Every queue's own dedup window, for the queues that set one. Adding or removing a queue
/// without a window is a hot change; setting, changing or dropping a window is not.
fn queue_dedup_windows(config: &Config) -> BTreeMap<&str, u64> {
    config.queues.iter().filter_map(|q| Some((q.name.as_str(), q.dedup_window_ms?))).collect()
}

/// The limits of an undeclared queue.
pub(crate) fn global_limits(limits: &LimitsConfig, dedup_window_ms: u64) -> QueueLimits {
    QueueLimits {
        max_lease_duration_ms: limits.max_lease_duration_ms,
        default_max_attempts: limits.default_max_attempts,
        max_attempts_ceiling: limits.max_attempts_ceiling,
        default_priority: limits.default_priority,
        retry_delay_ms: limits.retry_delay_ms,
        retry_backoff: limits.retry_backoff.into(),
        retry_delay_max_ms: limits.retry_delay_max_ms,
        max_payload_bytes: limits.max_payload_bytes,
        allowed_encodings: limits.allowed_encodings.clone(),
        allowed_job_types: None,
        max_schedule_horizon_ms: limits.max_schedule_horizon_ms,
        max_custom_entries: limits.max_custom_entries,
        max_custom_total_bytes: limits.max_custom_total_bytes,
        max_custom_key_bytes: limits.max_custom_key_bytes,
        dedup_window_ms,
        max_queue_depth: limits.max_queue_depth,
        max_in_flight: None,
        rate_limit: None,
        key_limit: None,
    }
}

/// `queue`'s overrides over `globals`: each field is the queue's value if set, else the global.
/// A queue's `allowed_encodings` replaces the global list; its `max_queue_depth` replaces the
/// global cap but cannot remove it.
pub(crate) fn merged_limits(globals: &QueueLimits, queue: &QueueConfig) -> QueueLimits {
    let g = globals;
    QueueLimits {
        max_lease_duration_ms: queue.max_lease_duration_ms.unwrap_or(g.max_lease_duration_ms),
        default_max_attempts: queue.default_max_attempts.unwrap_or(g.default_max_attempts),
        max_attempts_ceiling: queue.max_attempts_ceiling.unwrap_or(g.max_attempts_ceiling),
        default_priority: queue.default_priority.unwrap_or(g.default_priority),
        retry_delay_ms: queue.retry_delay_ms.unwrap_or(g.retry_delay_ms),
        retry_backoff: queue.retry_backoff.map_or(g.retry_backoff, Into::into),
        retry_delay_max_ms: queue.retry_delay_max_ms.unwrap_or(g.retry_delay_max_ms),
        max_payload_bytes: queue.max_payload_bytes.unwrap_or(g.max_payload_bytes),
        allowed_encodings: queue.allowed_encodings.clone().or_else(|| g.allowed_encodings.clone()),
        allowed_job_types: queue.allowed_job_types.clone(),
        max_schedule_horizon_ms: queue.max_schedule_horizon_ms.unwrap_or(g.max_schedule_horizon_ms),
        max_custom_entries: queue.max_custom_entries.unwrap_or(g.max_custom_entries),
        max_custom_total_bytes: queue.max_custom_total_bytes.unwrap_or(g.max_custom_total_bytes),
        max_custom_key_bytes: queue.max_custom_key_bytes.unwrap_or(g.max_custom_key_bytes),
        dedup_window_ms: queue.dedup_window_ms.unwrap_or(g.dedup_window_ms),
        max_queue_depth: queue.max_queue_depth.or(g.max_queue_depth),
        max_in_flight: queue.max_in_flight,
        rate_limit: queue.rate_limit.map(|limit| sepp_core::RateLimit {
            limit,
            period_ms: queue.rate_period_ms.unwrap_or(1_000),
            burst: queue.rate_burst.unwrap_or(limit),
        }),
        key_limit: key_limit(queue),
    }
}

/// The per-key limits of `queue`, when it names a `limit_key`.
fn key_limit(queue: &QueueConfig) -> Option<std::sync::Arc<sepp_core::KeyLimit>> {
    let field = queue.limit_key.clone()?;
    let period_ms = queue.key_rate_period_ms.unwrap_or(1_000);
    let rate = |limit: Option<u32>, burst: Option<u32>| {
        limit.map(|limit| sepp_core::RateLimit { limit, period_ms, burst: burst.unwrap_or(limit) })
    };
    let default = sepp_core::KeyLimits {
        max_in_flight: queue.key_max_in_flight,
        rate: rate(queue.key_rate_limit, queue.key_rate_burst),
    };
    let overrides = queue
        .key_overrides
        .iter()
        .flatten()
        .map(|(value, custom)| {
            let limits = sepp_core::KeyLimits {
                max_in_flight: custom.max_in_flight,
                rate: rate(custom.rate_limit, custom.rate_burst),
            };
            (value.clone(), limits)
        })
        .collect();
    Some(std::sync::Arc::new(sepp_core::KeyLimit { field, default, overrides }))
}

/// Whether `queue` sets `field` itself (for naming the key an error is about).
pub(crate) fn overrides(queue: &QueueConfig, field: &str) -> bool {
    let q = queue;
    match field {
        "max_lease_duration_ms" => q.max_lease_duration_ms.is_some(),
        "default_max_attempts" => q.default_max_attempts.is_some(),
        "max_attempts_ceiling" => q.max_attempts_ceiling.is_some(),
        "default_priority" => q.default_priority.is_some(),
        "retry_delay_ms" => q.retry_delay_ms.is_some(),
        "retry_backoff" => q.retry_backoff.is_some(),
        "retry_delay_max_ms" => q.retry_delay_max_ms.is_some(),
        "max_payload_bytes" => q.max_payload_bytes.is_some(),
        "allowed_encodings" => q.allowed_encodings.is_some(),
        "allowed_job_types" => q.allowed_job_types.is_some(),
        "max_schedule_horizon_ms" => q.max_schedule_horizon_ms.is_some(),
        "max_custom_entries" => q.max_custom_entries.is_some(),
        "max_custom_total_bytes" => q.max_custom_total_bytes.is_some(),
        "max_custom_key_bytes" => q.max_custom_key_bytes.is_some(),
        "dedup_window_ms" => q.dedup_window_ms.is_some(),
        "max_queue_depth" => q.max_queue_depth.is_some(),
        "max_in_flight" => q.max_in_flight.is_some(),
        "rate_limit" => q.rate_limit.is_some(),
        "rate_period_ms" => q.rate_period_ms.is_some(),
        "rate_burst" => q.rate_burst.is_some(),
        "limit_key" => q.limit_key.is_some(),
        "key_max_in_flight" => q.key_max_in_flight.is_some(),
        "key_rate_limit" => q.key_rate_limit.is_some(),
        "key_rate_period_ms" => q.key_rate_period_ms.is_some(),
        "key_rate_burst" => q.key_rate_burst.is_some(),
        "key_overrides" => q.key_overrides.is_some(),
        other => unreachable!("{other} is not a per-queue field"),
    }
}
