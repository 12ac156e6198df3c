//! Conversions between the wire types (`proto::v1`) and the core's types, in both directions.
//!
//! This is the only module that knows both vocabularies. It converts; it does not validate
//! (that is `sepp_core::validate`) and it does not choose status codes (that is `status`).

use prost_types::{Duration, Timestamp};
use sepp_core::validate::{NackRequestRetry, ReserveRequest};
use sepp_core::{
    DeadLetter, DeadLetterCause, Delivery, Job, NewJob, Payload, Primitive, Rejection, TimeMs, TraceContext,
};

use crate::proto::v1 as pb;
use pb::job_rejection::Reason;
use sepp_engine::Loaded;

/// Milliseconds of a timestamp; sub-millisecond parts are truncated.
pub fn timestamp_ms(timestamp: &Timestamp) -> TimeMs {
    timestamp.seconds.saturating_mul(1000).saturating_add(i64::from(timestamp.nanos) / 1_000_000)
}

pub fn timestamp(ms: TimeMs) -> Timestamp {
    Timestamp { seconds: ms.div_euclid(1000), nanos: (ms.rem_euclid(1000) * 1_000_000) as i32 }
}

/// Milliseconds of a duration, truncated; a positive duration below one millisecond counts as
/// 1 ms, so a tiny lease is short rather than already expired.
pub fn duration_ms(duration: &Duration) -> i64 {
    let ms = duration.seconds.saturating_mul(1000).saturating_add(i64::from(duration.nanos) / 1_000_000);
    let positive = duration.seconds > 0 || (duration.seconds == 0 && duration.nanos > 0);
    if ms == 0 && positive { 1 } else { ms }
}

pub fn duration(ms: u64) -> Duration {
    Duration { seconds: (ms / 1000) as i64, nanos: ((ms % 1000) * 1_000_000) as i32 }
}

pub fn new_job(request: pb::EnqueueRequest) -> NewJob {
    NewJob {
        queue: request.queue,
        job_type: request.job_type,
        payload: request.payload.map(|payload| Payload { data: payload.data, encoding: payload.encoding }),
        idempotency_key: request.idempotency_key,
        priority: request.priority,
        max_attempts: request.max_attempts,
        trace_context: request.trace_context.map(trace_context),
        custom: request.custom.into_iter().map(|(key, value)| (key, primitive(value))).collect(),
        scheduled_at_ms: request.scheduled_at.as_ref().map(timestamp_ms),
    }
}

fn trace_context(context: pb::TraceContext) -> TraceContext {
    TraceContext { traceparent: context.traceparent, tracestate: context.tracestate }
}

fn primitive(value: pb::PrimitiveValue) -> Option<Primitive> {
    use pb::primitive_value::Value;
    Some(match value.value? {
        Value::StringValue(text) => Primitive::String(text),
        Value::DoubleValue(number) => Primitive::Double(number),
        Value::IntValue(number) => Primitive::Int(number),
        Value::BoolValue(flag) => Primitive::Bool(flag),
    })
}

fn primitive_value(value: &Primitive) -> pb::PrimitiveValue {
    use pb::primitive_value::Value;
    let value = match value {
        Primitive::String(text) => Value::StringValue(text.clone()),
        Primitive::Double(number) => Value::DoubleValue(*number),
        Primitive::Int(number) => Value::IntValue(*number),
        Primitive::Bool(flag) => Value::BoolValue(*flag),
    };
    pb::PrimitiveValue { value: Some(value) }
}

pub fn reserve_request(request: pb::ReserveRequest) -> ReserveRequest {
    ReserveRequest {
        queues: request.queues,
        wait_timeout_ms: request.wait_timeout.as_ref().map(duration_ms),
        lease_duration_ms: request.lease_duration.as_ref().map(duration_ms),
        worker_id: request.worker_id,
        max_jobs: request.max_jobs,
    }
}

/// `None`: no `retry` field. `Some(None)`: a `NackRetry` whose oneof is unset.
pub fn nack_retry(retry: Option<pb::NackRetry>) -> Option<Option<NackRequestRetry>> {
    use pb::nack_retry::Strategy;
    retry.map(|retry| {
        retry.strategy.map(|strategy| match strategy {
            Strategy::Default(_) => NackRequestRetry::Default,
            Strategy::Delay(delay) => NackRequestRetry::Delay { delay_ms: duration_ms(&delay) },
            Strategy::DeadLetter(_) => NackRequestRetry::DeadLetter,
        })
    })
}

/// The wire form of a job with its loaded payload bytes. `lease_expires_at_ms` is the real
/// deadline for a delivery and epoch 0 for a dead-letter snapshot.
pub fn job(job: &Job, payload_data: Option<Vec<u8>>, attempt: u32, lease_expires_at_ms: TimeMs) -> pb::Job {
    pb::Job {
        id: job.id.hyphenated().to_string(),
        job_type: job.job_type.to_string(),
        payload: job
            .payload
            .as_ref()
            .zip(payload_data)
            .map(|(payload, data)| pb::Payload { data, encoding: payload.encoding.to_string() }),
        priority: u32::from(job.priority),
        trace_context: job.trace_context.as_ref().map(|context| pb::TraceContext {
            traceparent: context.traceparent.clone(),
            tracestate: context.tracestate.clone(),
        }),
        enqueued_at: Some(timestamp(job.enqueued_at_ms)),
        attempt,
        max_attempts: job.max_attempts,
        lease_expires_at: Some(timestamp(lease_expires_at_ms)),
        custom: job.custom.iter().map(|(key, value)| (key.clone(), primitive_value(value))).collect(),
        scheduled_at: job.scheduled_at_ms.map(timestamp),
        queue: job.queue.to_string(),
    }
}

pub fn delivery(loaded: Loaded<Delivery>) -> pb::Job {
    let delivery = loaded.value;
    job(&delivery.job, loaded.payload_data, delivery.attempt, delivery.lease_deadline_ms)
}

pub fn dead_letter(loaded: Loaded<DeadLetter>) -> pb::DeadLetterRecord {
    let dead = loaded.value;
    pb::DeadLetterRecord {
        job: Some(job(&dead.job, loaded.payload_data, dead.final_attempt, 0)),
        cause: dead_letter_cause(dead.cause) as i32,
        failed_at: Some(timestamp(dead.failed_at_ms)),
        final_attempt: dead.final_attempt,
        last_reason: dead.last_reason.clone(),
    }
}

fn dead_letter_cause(cause: DeadLetterCause) -> pb::DeadLetterCause {
    match cause {
        DeadLetterCause::AttemptsExhausted => pb::DeadLetterCause::AttemptsExhausted,
        DeadLetterCause::Rejected => pb::DeadLetterCause::Rejected,
        DeadLetterCause::LeaseExpired => pb::DeadLetterCause::LeaseExpired,
        DeadLetterCause::Admin => pb::DeadLetterCause::Admin,
        DeadLetterCause::Cancelled => pb::DeadLetterCause::Cancelled,
    }
}

pub fn rejection(rejection: Rejection) -> pb::JobRejection {
    let reason = match rejection {
        Rejection::UnknownQueue { queue } => Reason::UnknownQueue(pb::UnknownQueue { queue }),
        Rejection::PayloadTooLarge { limit, actual } => Reason::PayloadTooLarge(pb::PayloadTooLarge { limit, actual }),
        Rejection::EncodingNotAllowed { encoding, allowed } => {
            Reason::EncodingNotAllowed(pb::EncodingNotAllowed { encoding, allowed })
        }
        Rejection::JobTypeNotAllowed { job_type, allowed } => {
            Reason::JobTypeNotAllowed(pb::JobTypeNotAllowed { job_type, allowed })
        }
        Rejection::CustomEntriesTooMany { limit, actual } => {
            Reason::CustomEntriesTooMany(pb::CustomEntriesTooMany { limit, actual })
        }
        Rejection::CustomMapTooLarge { limit, actual } => {
            Reason::CustomMapTooLarge(pb::CustomMapTooLarge { limit, actual })
        }
        Rejection::CustomKeyTooLong { key, limit, actual } => {
            Reason::CustomKeyTooLong(pb::CustomKeyTooLong { key, limit, actual })
        }
        Rejection::QueueNameTooLong { limit, actual } => {
            Reason::QueueNameTooLong(pb::QueueNameTooLong { limit, actual })
        }
        Rejection::JobTypeNameTooLong { limit, actual } => {
            Reason::JobTypeNameTooLong(pb::JobTypeNameTooLong { limit, actual })
        }
        Rejection::IdempotencyKeyTooLong { limit, actual } => {
            Reason::IdempotencyKeyTooLong(pb::IdempotencyKeyTooLong { limit, actual })
        }
        Rejection::ScheduledTooFar { horizon_ms, actual_ms } => Reason::ScheduledTooFar(pb::ScheduledTooFar {
            horizon: Some(duration(horizon_ms)),
            actual: Some(timestamp(actual_ms)),
        }),
        Rejection::InvalidRequest { message } => Reason::InvalidRequest(pb::InvalidRequest { message }),
        Rejection::QueueFull { queue, limit } => Reason::QueueFull(pb::QueueFull { queue, limit }),
        Rejection::QueueClosing { queue } => Reason::QueueClosing(pb::QueueClosing { queue }),
    };
    pb::JobRejection { reason: Some(reason) }
}

/// A schedule definition from the wire, checked for what the core does not check: a cadence is
/// given, the job template is given and carries no per-job fields, custom values are set.
pub fn schedule_spec(definition: pb::ScheduleDefinition) -> Result<sepp_core::schedule::ScheduleSpec, String> {
    use sepp_core::schedule::{Cadence, CatchUp, JobTemplate, Overlap, ScheduleSpec};
    let cadence = match definition.cadence {
        Some(pb::schedule_definition::Cadence::Cron(cron)) => Cadence::Cron {
            expression: cron.expression,
            time_zone: if cron.time_zone.is_empty() { "UTC".into() } else { cron.time_zone },
        },
        Some(pb::schedule_definition::Cadence::Every(every)) => {
            let ms = duration_ms(&every);
            if ms <= 0 {
                return Err("every must be a positive duration".into());
            }
            Cadence::Every { interval_ms: ms as u64 }
        }
        None => return Err("a schedule needs a cadence: cron or every".into()),
    };
    let job = definition.job.ok_or("a schedule needs a job")?;
    if job.idempotency_key.is_some() || job.trace_context.is_some() || job.scheduled_at.is_some() {
        return Err("a schedule's job must not set idempotency_key, trace_context or scheduled_at".into());
    }
    let mut custom = std::collections::BTreeMap::new();
    for (key, value) in job.custom {
        let value = primitive(value).ok_or_else(|| format!("custom value {key:?} is unset"))?;
        custom.insert(key, value);
    }
    let template = JobTemplate {
        queue: job.queue,
        job_type: job.job_type,
        payload: job.payload.map(|payload| Payload { data: payload.data, encoding: payload.encoding }),
        priority: job.priority,
        max_attempts: job.max_attempts,
        custom,
    };
    let overlap = match pb::ScheduleOverlap::try_from(definition.overlap) {
        Ok(pb::ScheduleOverlap::Allow) => Overlap::Allow,
        Ok(pb::ScheduleOverlap::Skip | pb::ScheduleOverlap::Unspecified) => Overlap::Skip,
        Err(_) => return Err(format!("unknown overlap policy {}", definition.overlap)),
    };
    let catch_up = match pb::ScheduleCatchUp::try_from(definition.catch_up) {
        Ok(pb::ScheduleCatchUp::None) => CatchUp::Skip,
        Ok(pb::ScheduleCatchUp::Latest | pb::ScheduleCatchUp::Unspecified) => CatchUp::Latest,
        Err(_) => return Err(format!("unknown catch-up policy {}", definition.catch_up)),
    };
    Ok(ScheduleSpec { id: definition.id, cadence, template, overlap, catch_up })
}

/// A schedule as the wire shows it.
pub fn schedule_info(schedule: &sepp_core::schedule::Schedule) -> pb::ScheduleInfo {
    use sepp_core::schedule::{Cadence, CatchUp, Overlap};
    let spec = &schedule.spec;
    let template = &spec.template;
    let cadence = match &spec.cadence {
        Cadence::Cron { expression, time_zone } => pb::schedule_definition::Cadence::Cron(pb::CronCadence {
            expression: expression.clone(),
            time_zone: time_zone.clone(),
        }),
        Cadence::Every { interval_ms } => pb::schedule_definition::Cadence::Every(duration(*interval_ms)),
    };
    let job = pb::EnqueueRequest {
        queue: template.queue.clone(),
        job_type: template.job_type.clone(),
        payload: template
            .payload
            .as_ref()
            .map(|payload| pb::Payload { data: payload.data.clone(), encoding: payload.encoding.clone() }),
        priority: template.priority,
        max_attempts: template.max_attempts,
        custom: template.custom.iter().map(|(key, value)| (key.clone(), primitive_value(value))).collect(),
        ..Default::default()
    };
    pb::ScheduleInfo {
        definition: Some(pb::ScheduleDefinition {
            id: spec.id.clone(),
            cadence: Some(cadence),
            job: Some(job),
            overlap: match spec.overlap {
                Overlap::Skip => pb::ScheduleOverlap::Skip,
                Overlap::Allow => pb::ScheduleOverlap::Allow,
            } as i32,
            catch_up: match spec.catch_up {
                CatchUp::Latest => pb::ScheduleCatchUp::Latest,
                CatchUp::Skip => pb::ScheduleCatchUp::None,
            } as i32,
        }),
        next_fire_at: (schedule.next_ms != TimeMs::MAX).then(|| timestamp(schedule.next_ms)),
        last_slot_at: schedule.last_slot_ms.map(timestamp),
        last_job_id: schedule.last_job.map(|job_id| job_id.hyphenated().to_string()),
        fired: schedule.fired,
        created_at: Some(timestamp(schedule.anchor_ms)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip_at_millisecond_precision_including_before_the_epoch() {
        for ms in [0, 1, 999, 1_000, 1_700_000_000_123, -1, -1_001] {
            assert_eq!(timestamp_ms(&timestamp(ms)), ms);
        }
    }

    #[test]
    fn a_positive_sub_millisecond_duration_counts_as_one_millisecond() {
        assert_eq!(duration_ms(&Duration { seconds: 0, nanos: 10 }), 1);
        assert_eq!(duration_ms(&Duration { seconds: 0, nanos: 0 }), 0);
        assert_eq!(duration_ms(&Duration { seconds: -1, nanos: 0 }), -1000);
        assert_eq!(duration_ms(&Duration { seconds: 2, nanos: 5_000_000 }), 2005);
    }
}
