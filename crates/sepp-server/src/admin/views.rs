//! The JSON shapes of the admin API: jobs, dead letters, queues and audit entries, plus the
//! handles (`key_b64`) that listings give out, built as the types of `sepp_admin_types`. Only
//! conversions live here.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use sepp_admin_types as api;
use sepp_config::{Config, QueueConfig};
use sepp_core::{
    AuditEntry, DeadLetter, DeadLetterCause, Job, JobKey, JobState, Primitive, QueueLimits, RetryBackoff, TimeMs,
};
use serde_json::{Map, Value};

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

fn custom_json(job: &Job) -> BTreeMap<String, api::CustomValue> {
    custom_map_json(job.custom.iter())
}

/// Custom metadata as a JSON object.
pub fn custom_map_json<'a>(
    custom: impl Iterator<Item = (&'a String, &'a Primitive)>,
) -> BTreeMap<String, api::CustomValue> {
    custom
        .map(|(key, value)| {
            let value = match value {
                Primitive::String(text) => api::CustomValue::String(text.clone()),
                Primitive::Int(number) => api::CustomValue::Int(*number),
                Primitive::Double(number) => api::CustomValue::Double(*number),
                Primitive::Bool(flag) => api::CustomValue::Bool(*flag),
            };
            (key.clone(), value)
        })
        .collect()
}

/// `{encoding, size_bytes[, data_b64]}`: the bytes when they were loaded (`data`), and `""` for
/// a job without payload in a detail view.
fn payload_json(job: &Job, data: Option<&[u8]>, detail: bool) -> api::Payload {
    let Some(payload) = &job.payload else {
        return api::Payload { encoding: String::new(), size_bytes: 0, data_b64: detail.then(String::new) };
    };
    api::Payload {
        encoding: payload.encoding.to_string(),
        size_bytes: payload.data.len() as u64,
        data_b64: data.map(|data| STANDARD.encode(data)),
    }
}

/// A live job: `id, key_b64, job_type, priority, attempt, max_attempts, enqueued_at_ms, custom,
/// payload`, plus `scheduled_at_ms` when it has one, `lease_expires_at_ms` in flight, and
/// `due_at_ms` while scheduled (for a delayed retry too).
pub fn live_job(job: &Job, state: JobState, data: Option<&[u8]>, detail: bool) -> api::Job {
    let (lease_expires_at_ms, due_at_ms) = match state {
        JobState::Inflight { lease_deadline_ms, .. } => (Some(lease_deadline_ms), None),
        JobState::Scheduled { due_ms, .. } => (None, Some(due_ms)),
        JobState::Ready { .. } => (None, None),
    };
    api::Job {
        id: job.id.hyphenated().to_string(),
        key_b64: key_b64(&JobKey::of_live(job, state)),
        job_type: job.job_type.to_string(),
        priority: u64::from(job.priority),
        attempt: u64::from(state.attempt()),
        max_attempts: u64::from(job.max_attempts),
        enqueued_at_ms: job.enqueued_at_ms,
        custom: custom_json(job),
        payload: payload_json(job, data, detail),
        scheduled_at_ms: job.scheduled_at_ms,
        due_at_ms,
        cancelled: None,
        lease_expires_at_ms,
        queue: None,
        state: None,
        failed_at_ms: None,
        cause: None,
        last_reason: None,
    }
}

pub fn state_name(state: JobState) -> api::JobState {
    match state {
        JobState::Ready { .. } => api::JobState::Ready,
        JobState::Scheduled { .. } => api::JobState::Scheduled,
        JobState::Inflight { .. } => api::JobState::Inflight,
    }
}

pub fn cause_name(cause: DeadLetterCause) -> api::DeadLetterCause {
    match cause {
        DeadLetterCause::AttemptsExhausted => api::DeadLetterCause::AttemptsExhausted,
        DeadLetterCause::Rejected => api::DeadLetterCause::Rejected,
        DeadLetterCause::LeaseExpired => api::DeadLetterCause::LeaseExpired,
        DeadLetterCause::Admin => api::DeadLetterCause::Admin,
        DeadLetterCause::Cancelled => api::DeadLetterCause::Cancelled,
    }
}

/// A dead letter: the job's fields with its final attempt, plus `failed_at_ms`, `cause` and
/// `last_reason` when there is one.
pub fn dead_letter(dead: &DeadLetter, data: Option<&[u8]>, detail: bool) -> api::Job {
    let job = &dead.job;
    api::Job {
        id: job.id.hyphenated().to_string(),
        key_b64: key_b64(&JobKey::of_dead(dead)),
        job_type: job.job_type.to_string(),
        priority: u64::from(job.priority),
        attempt: u64::from(dead.final_attempt),
        max_attempts: u64::from(job.max_attempts),
        enqueued_at_ms: job.enqueued_at_ms,
        custom: custom_json(job),
        payload: payload_json(job, data, detail),
        scheduled_at_ms: job.scheduled_at_ms,
        due_at_ms: None,
        cancelled: None,
        lease_expires_at_ms: None,
        queue: None,
        state: None,
        failed_at_ms: Some(dead.failed_at_ms),
        cause: Some(cause_name(dead.cause)),
        last_reason: dead.last_reason.clone(),
    }
}

pub fn audit_entry(entry: &AuditEntry) -> api::AuditEntry {
    let details: Value = serde_json::from_str(&entry.details).unwrap_or_else(|_| Value::Object(Map::new()));
    api::AuditEntry {
        seq: entry.seq,
        ts_ms: entry.ts_ms,
        actor: entry.actor.to_string(),
        role: entry.role.to_string(),
        action: entry.action.to_string(),
        details,
    }
}

fn effective_json(limits: &QueueLimits) -> api::QueueLimits {
    api::QueueLimits {
        max_lease_duration_ms: Some(limits.max_lease_duration_ms),
        default_max_attempts: Some(u64::from(limits.default_max_attempts)),
        max_attempts_ceiling: Some(u64::from(limits.max_attempts_ceiling)),
        default_priority: Some(u64::from(limits.default_priority)),
        retry_delay_ms: Some(limits.retry_delay_ms),
        retry_backoff: Some(match limits.retry_backoff {
            RetryBackoff::None => api::RetryBackoff::None,
            RetryBackoff::Exponential => api::RetryBackoff::Exponential,
        }),
        retry_delay_max_ms: Some(limits.retry_delay_max_ms),
        max_payload_bytes: Some(limits.max_payload_bytes),
        allowed_encodings: limits.allowed_encodings.clone(),
        allowed_job_types: limits.allowed_job_types.clone(),
        max_schedule_horizon_ms: Some(limits.max_schedule_horizon_ms),
        max_custom_entries: Some(u64::from(limits.max_custom_entries)),
        max_custom_total_bytes: Some(limits.max_custom_total_bytes),
        max_custom_key_bytes: Some(u64::from(limits.max_custom_key_bytes)),
        dedup_window_ms: Some(limits.dedup_window_ms),
        max_queue_depth: limits.max_queue_depth,
        max_in_flight: limits.max_in_flight.map(u64::from),
        rate_limit: limits.rate_limit.map(|rate| u64::from(rate.limit)),
        rate_period_ms: limits.rate_limit.map(|rate| rate.period_ms),
        rate_burst: limits.rate_limit.map(|rate| u64::from(rate.burst)),
        limit_key: limits.key_limit.as_ref().map(|key| key.field.clone()),
        key_max_in_flight: limits.key_limit.as_ref().and_then(|key| key.default.max_in_flight).map(u64::from),
        key_rate_limit: limits.key_limit.as_ref().and_then(|key| key.default.rate.map(|rate| u64::from(rate.limit))),
        key_rate_period_ms: limits.key_limit.as_ref().and_then(|key| key_rate_period_ms(key)),
        key_rate_burst: limits.key_limit.as_ref().and_then(|key| key.default.rate.map(|rate| u64::from(rate.burst))),
        key_overrides: limits.key_limit.as_ref().map(|key| key_overrides_json(key)),
    }
}

/// The period every per-key rate of a queue shares, if any key has a rate.
fn key_rate_period_ms(key: &sepp_core::KeyLimit) -> Option<u64> {
    let mut rates = std::iter::once(&key.default).chain(key.overrides.values()).filter_map(|limits| limits.rate);
    rates.next().map(|rate| rate.period_ms)
}

/// The per-value overrides as they take effect: `{value: {max_in_flight, rate_limit, rate_burst}}`.
fn key_overrides_json(key: &sepp_core::KeyLimit) -> BTreeMap<String, api::KeyOverride> {
    key.overrides
        .iter()
        .map(|(value, custom)| {
            let limits = custom.over(key.default);
            let shown = api::KeyOverride {
                max_in_flight: limits.max_in_flight.map(u64::from),
                rate_limit: limits.rate.map(|rate| u64::from(rate.limit)),
                rate_burst: limits.rate.map(|rate| u64::from(rate.burst)),
            };
            (value.clone(), shown)
        })
        .collect()
}

/// A queue: `name, declared, depths, overrides (its [[queues]] entry or null), effective,
/// paused, held_by_key_limit`, where `paused` is null or `{until_ms, all_queues}` (`all_queues`
/// when only the pause of every queue holds it).
pub fn queue(
    name: &str,
    config: &Config,
    limits: &QueueLimits,
    stats: &QueueStats,
    all_paused: Option<Option<TimeMs>>,
) -> api::Queue {
    let entry: Option<&QueueConfig> = config.queues.iter().find(|queue| queue.name == name);
    let depths = &stats.depths;
    let paused = match (stats.paused, all_paused) {
        (Some(until_ms), _) => Some(api::QueuePause { until_ms, all_queues: false }),
        (None, Some(until_ms)) => Some(api::QueuePause { until_ms, all_queues: true }),
        (None, None) => None,
    };
    api::Queue {
        name: name.to_owned(),
        declared: entry.is_some(),
        depths: api::Depths {
            ready: depths.ready,
            scheduled: depths.scheduled,
            inflight: depths.inflight,
            dead_lettered: depths.dead_letter,
        },
        overrides: entry.map(|entry| serde_json::to_value(entry).expect("a queue entry serializes")),
        effective: effective_json(limits),
        paused,
        held_by_key_limit: stats.held_by_key,
    }
}
