//! The JSON shapes of the admin API: jobs, dead letters, queues and audit entries, plus the
//! handles (`key_b64`) that listings give out. Only conversions live here.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sepp_config::{Config, QueueConfig};
use sepp_core::{
    AuditEntry, DeadLetter, DeadLetterCause, Job, JobKey, JobState, Primitive, QueueLimits, RetryBackoff, TimeMs,
};
use serde_json::{Map, Value, json};

use crate::admin::errors::AdminError;
use crate::admin::stats::QueueStats;

/// The opaque handle of a job where it is now.
pub fn key_b64(key: &JobKey) -> String {
    STANDARD.encode(key.to_bytes())
}

/// Decodes a handle: Err when it is not base64 at all, `None` when it decodes to something that
/// is not a handle (which actions count as missing).
pub fn decode_key(text: &str, what: &str) -> Result<Option<JobKey>, AdminError> {
    let bytes =
        STANDARD.decode(text).map_err(|_| AdminError::invalid_argument(format!("{what} is not valid base64")))?;
    Ok(JobKey::from_bytes(&bytes))
}

fn custom_json(job: &Job) -> Value {
    custom_map_json(job.custom.iter())
}

/// Custom metadata as a JSON object.
pub fn custom_map_json<'a>(custom: impl Iterator<Item = (&'a String, &'a Primitive)>) -> Value {
    let entries: Map<String, Value> = custom
        .map(|(key, value)| {
            let value = match value {
                Primitive::String(text) => json!(text),
                Primitive::Int(number) => json!(number),
                Primitive::Double(number) => json!(number),
                Primitive::Bool(flag) => json!(flag),
            };
            (key.clone(), value)
        })
        .collect();
    Value::Object(entries)
}

/// `{encoding, size_bytes[, data_b64]}`: the bytes when they were loaded (`data`), and `""` for
/// a job without payload in a detail view.
fn payload_json(job: &Job, data: Option<&[u8]>, detail: bool) -> Value {
    let Some(payload) = &job.payload else {
        let mut empty = json!({ "encoding": "", "size_bytes": 0 });
        if detail {
            empty["data_b64"] = json!("");
        }
        return empty;
    };
    let mut shown = json!({ "encoding": &*payload.encoding, "size_bytes": payload.data.len() });
    if let Some(data) = data {
        shown["data_b64"] = json!(STANDARD.encode(data));
    }
    shown
}

/// A live job: `id, key_b64, job_type, priority, attempt, max_attempts, enqueued_at_ms, custom,
/// payload`, plus `scheduled_at_ms` when it has one, `lease_expires_at_ms` in flight, and
/// `due_at_ms` while scheduled (for a delayed retry too).
pub fn live_job(job: &Job, state: JobState, data: Option<&[u8]>, detail: bool) -> Value {
    let mut shown = json!({
        "id": job.id.hyphenated().to_string(),
        "key_b64": key_b64(&JobKey::of_live(job, state)),
        "job_type": &*job.job_type,
        "priority": job.priority,
        "attempt": state.attempt(),
        "max_attempts": job.max_attempts,
        "enqueued_at_ms": job.enqueued_at_ms,
        "custom": custom_json(job),
        "payload": payload_json(job, data, detail),
    });
    if let Some(scheduled_at_ms) = job.scheduled_at_ms {
        shown["scheduled_at_ms"] = json!(scheduled_at_ms);
    }
    match state {
        JobState::Inflight { lease_deadline_ms, .. } => shown["lease_expires_at_ms"] = json!(lease_deadline_ms),
        JobState::Scheduled { due_ms, .. } => shown["due_at_ms"] = json!(due_ms),
        JobState::Ready { .. } => {}
    }
    shown
}

pub fn state_name(state: JobState) -> &'static str {
    match state {
        JobState::Ready { .. } => "ready",
        JobState::Scheduled { .. } => "scheduled",
        JobState::Inflight { .. } => "inflight",
    }
}

pub fn cause_name(cause: DeadLetterCause) -> &'static str {
    match cause {
        DeadLetterCause::AttemptsExhausted => "attempts_exhausted",
        DeadLetterCause::Rejected => "rejected",
        DeadLetterCause::LeaseExpired => "lease_expired",
        DeadLetterCause::Admin => "admin",
        DeadLetterCause::Cancelled => "cancelled",
    }
}

/// A dead letter: the job's fields with its final attempt, plus `failed_at_ms`, `cause` and
/// `last_reason` when there is one.
pub fn dead_letter(dead: &DeadLetter, data: Option<&[u8]>, detail: bool) -> Value {
    let job = &dead.job;
    let mut shown = json!({
        "id": job.id.hyphenated().to_string(),
        "key_b64": key_b64(&JobKey::of_dead(dead)),
        "job_type": &*job.job_type,
        "priority": job.priority,
        "attempt": dead.final_attempt,
        "max_attempts": job.max_attempts,
        "enqueued_at_ms": job.enqueued_at_ms,
        "custom": custom_json(job),
        "payload": payload_json(job, data, detail),
        "failed_at_ms": dead.failed_at_ms,
        "cause": cause_name(dead.cause),
    });
    if let Some(scheduled_at_ms) = job.scheduled_at_ms {
        shown["scheduled_at_ms"] = json!(scheduled_at_ms);
    }
    if let Some(reason) = &dead.last_reason {
        shown["last_reason"] = json!(reason);
    }
    shown
}

pub fn audit_entry(entry: &AuditEntry) -> Value {
    let details: Value = serde_json::from_str(&entry.details).unwrap_or_else(|_| json!({}));
    json!({
        "seq": entry.seq,
        "ts_ms": entry.ts_ms,
        "actor": entry.actor,
        "role": entry.role,
        "action": entry.action,
        "details": details,
    })
}

fn effective_json(limits: &QueueLimits) -> Value {
    json!({
        "max_lease_duration_ms": limits.max_lease_duration_ms,
        "default_max_attempts": limits.default_max_attempts,
        "max_attempts_ceiling": limits.max_attempts_ceiling,
        "default_priority": limits.default_priority,
        "retry_delay_ms": limits.retry_delay_ms,
        "retry_backoff": match limits.retry_backoff {
            RetryBackoff::None => "none",
            RetryBackoff::Exponential => "exponential",
        },
        "retry_delay_max_ms": limits.retry_delay_max_ms,
        "max_payload_bytes": limits.max_payload_bytes,
        "allowed_encodings": limits.allowed_encodings,
        "allowed_job_types": limits.allowed_job_types,
        "max_schedule_horizon_ms": limits.max_schedule_horizon_ms,
        "max_custom_entries": limits.max_custom_entries,
        "max_custom_total_bytes": limits.max_custom_total_bytes,
        "max_custom_key_bytes": limits.max_custom_key_bytes,
        "dedup_window_ms": limits.dedup_window_ms,
        "max_queue_depth": limits.max_queue_depth,
        "max_in_flight": limits.max_in_flight,
        "rate_limit": limits.rate_limit.map(|rate| rate.limit),
        "rate_period_ms": limits.rate_limit.map(|rate| rate.period_ms),
        "rate_burst": limits.rate_limit.map(|rate| rate.burst),
        "limit_key": limits.key_limit.as_ref().map(|key| &key.field),
        "key_max_in_flight": limits.key_limit.as_ref().and_then(|key| key.default.max_in_flight),
        "key_rate_limit": limits.key_limit.as_ref().and_then(|key| key.default.rate.map(|rate| rate.limit)),
        "key_rate_period_ms": limits.key_limit.as_ref().and_then(|key| key_rate_period_ms(key)),
        "key_rate_burst": limits.key_limit.as_ref().and_then(|key| key.default.rate.map(|rate| rate.burst)),
        "key_overrides": limits.key_limit.as_ref().map(|key| key_overrides_json(key)),
    })
}

/// The period every per-key rate of a queue shares, if any key has a rate.
fn key_rate_period_ms(key: &sepp_core::KeyLimit) -> Option<u64> {
    let mut rates = std::iter::once(&key.default).chain(key.overrides.values()).filter_map(|limits| limits.rate);
    rates.next().map(|rate| rate.period_ms)
}

/// The per-value overrides as they take effect: `{value: {max_in_flight, rate_limit, rate_burst}}`.
fn key_overrides_json(key: &sepp_core::KeyLimit) -> Value {
    let mut values: Vec<(&String, &sepp_core::KeyLimits)> = key.overrides.iter().collect();
    values.sort_by(|a, b| a.0.cmp(b.0));
    let shown = values.into_iter().map(|(value, custom)| {
        let limits = custom.over(key.default);
        let shown = json!({
            "max_in_flight": limits.max_in_flight,
            "rate_limit": limits.rate.map(|rate| rate.limit),
            "rate_burst": limits.rate.map(|rate| rate.burst),
        });
        (value.clone(), shown)
    });
    Value::Object(shown.collect())
}

/// A queue: `{name, declared, depths, overrides (its [[queues]] entry or null), effective}`.
/// A queue: `name, declared, depths, overrides, effective, paused`, where `paused` is null or
/// `{until_ms, all_queues}` (`all_queues` when only the pause of every queue holds it).
pub fn queue(
    name: &str,
    config: &Config,
    limits: &QueueLimits,
    stats: &QueueStats,
    all_paused: Option<Option<TimeMs>>,
) -> Value {
    let entry: Option<&QueueConfig> = config.queues.iter().find(|queue| queue.name == name);
    let depths = &stats.depths;
    let paused = match (stats.paused, all_paused) {
        (Some(until_ms), _) => json!({ "until_ms": until_ms, "all_queues": false }),
        (None, Some(until_ms)) => json!({ "until_ms": until_ms, "all_queues": true }),
        (None, None) => Value::Null,
    };
    json!({
        "name": name,
        "declared": entry.is_some(),
        "depths": {
            "ready": depths.ready,
            "scheduled": depths.scheduled,
            "inflight": depths.inflight,
            "dead_lettered": depths.dead_letter,
        },
        "overrides": entry.map(|entry| serde_json::to_value(entry).expect("a queue entry serializes")),
        "effective": effective_json(limits),
        "paused": paused,
        "held_by_key_limit": stats.held_by_key,
    })
}
