//! Conversions between the wire types (`crate::proto`) and the crate's types: requests out,
//! jobs, rejections, server info and dead-letter records in. Decoding validates what the
//! protocol promises and reports what it cannot use; it never panics on server data.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::proto as pb;
use crate::types::Lease;
use crate::{
    ClusterInfo, ClusterMember, DeadLetterCause, DeadLetterRecord, EnqueueAck, EnqueueRequest, Job, JobConversionError,
    JobCtx, JobRejection, Payload, Primitive, Priority, ServerInfo, ServerInfoError, TraceContext,
};

/// A wire timestamp for `at`; `None` before the Unix epoch (such a time is not sent).
pub(crate) fn timestamp(at: SystemTime) -> Option<prost_types::Timestamp> {
    let since = at.duration_since(UNIX_EPOCH).ok()?;
    Some(prost_types::Timestamp {
        seconds: i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
        nanos: since.subsec_nanos() as i32,
    })
}

/// The time of a wire timestamp; `Err(seconds)` when it is before the epoch or malformed.
pub(crate) fn system_time(timestamp: &prost_types::Timestamp) -> Result<SystemTime, i64> {
    let seconds = u64::try_from(timestamp.seconds).map_err(|_| timestamp.seconds)?;
    let nanos = u32::try_from(timestamp.nanos).ok().filter(|nanos| *nanos < 1_000_000_000).ok_or(timestamp.seconds)?;
    UNIX_EPOCH.checked_add(Duration::new(seconds, nanos)).ok_or(timestamp.seconds)
}

/// A wire duration (saturating at the largest representable).
pub(crate) fn duration(duration: Duration) -> prost_types::Duration {
    prost_types::Duration {
        seconds: i64::try_from(duration.as_secs()).unwrap_or(i64::MAX),
        nanos: duration.subsec_nanos() as i32,
    }
}

/// The length of a wire duration; unset, negative or malformed ones are zero.
pub(crate) fn from_duration(duration: Option<&prost_types::Duration>) -> Duration {
    let Some(duration) = duration else {
        return Duration::ZERO;
    };
    match (u64::try_from(duration.seconds), u32::try_from(duration.nanos)) {
        (Ok(seconds), Ok(nanos)) if nanos < 1_000_000_000 => Duration::new(seconds, nanos),
        _ => Duration::ZERO,
    }
}

fn primitive(value: &Primitive) -> pb::PrimitiveValue {
    use pb::primitive_value::Value;
    let value = match value {
        Primitive::String(value) => Value::StringValue(value.clone()),
        Primitive::Int(value) => Value::IntValue(*value),
        Primitive::Double(value) => Value::DoubleValue(*value),
        Primitive::Bool(value) => Value::BoolValue(*value),
    };
    pb::PrimitiveValue { value: Some(value) }
}

fn custom_map(custom: HashMap<String, pb::PrimitiveValue>) -> Result<HashMap<String, Primitive>, JobConversionError> {
    use pb::primitive_value::Value;
    custom
        .into_iter()
        .map(|(key, value)| {
            let value = match value.value {
                Some(Value::StringValue(value)) => Primitive::String(value),
                Some(Value::IntValue(value)) => Primitive::Int(value),
                Some(Value::DoubleValue(value)) => Primitive::Double(value),
                Some(Value::BoolValue(value)) => Primitive::Bool(value),
                None => return Err(JobConversionError::EmptyCustomValue(key)),
            };
            Ok((key, value))
        })
        .collect()
}

pub(crate) fn trace_context(trace: &TraceContext) -> pb::TraceContext {
    pb::TraceContext { traceparent: trace.traceparent().to_owned(), tracestate: trace.tracestate().map(str::to_owned) }
}

/// A received trace context; an invalid one is dropped, never an error.
fn received_trace_context(trace: Option<pb::TraceContext>) -> Option<TraceContext> {
    let trace = trace?;
    let context = TraceContext::new(trace.traceparent).ok()?;
    Some(match trace.tracestate {
        Some(state) => context.with_tracestate(state),
        None => context,
    })
}

/// The wire form of a request, moving its strings and payload rather than copying them; unset
/// options stay unset.
pub(crate) fn enqueue_request(request: EnqueueRequest) -> pb::EnqueueRequest {
    pb::EnqueueRequest {
        queue: request.queue,
        job_type: request.job_type,
        payload: request.payload.map(|payload| pb::Payload { data: payload.data, encoding: payload.encoding }),
        idempotency_key: request.idempotency_key,
        priority: request.priority.map(|priority| u32::from(priority.get())),
        max_attempts: request.max_attempts,
        trace_context: request.trace_context.as_ref().map(trace_context),
        custom: request.custom.into_iter().map(|(key, value)| (key, primitive(&value))).collect(),
        scheduled_at: request.scheduled_at.and_then(timestamp),
    }
}

pub(crate) fn enqueue_ack(response: pb::EnqueueResponse) -> EnqueueAck {
    EnqueueAck { job_id: response.job_id, deduplicated: response.deduplicated }
}

/// A rejection; an unset or unknown reason is [`JobRejection::Unknown`].
pub(crate) fn rejection(rejection: Option<pb::JobRejection>) -> JobRejection {
    use pb::job_rejection::Reason;
    let Some(reason) = rejection.and_then(|rejection| rejection.reason) else {
        return JobRejection::Unknown;
    };
    match reason {
        Reason::UnknownQueue(r) => JobRejection::UnknownQueue { queue: r.queue },
        Reason::PayloadTooLarge(r) => JobRejection::PayloadTooLarge { limit: r.limit, actual: r.actual },
        Reason::EncodingNotAllowed(r) => JobRejection::EncodingNotAllowed { encoding: r.encoding, allowed: r.allowed },
        Reason::JobTypeNotAllowed(r) => JobRejection::JobTypeNotAllowed { job_type: r.job_type, allowed: r.allowed },
        Reason::CustomEntriesTooMany(r) => JobRejection::CustomEntriesTooMany { limit: r.limit, actual: r.actual },
        Reason::CustomMapTooLarge(r) => JobRejection::CustomMapTooLarge { limit: r.limit, actual: r.actual },
        Reason::CustomKeyTooLong(r) => JobRejection::CustomKeyTooLong { key: r.key, limit: r.limit, actual: r.actual },
        Reason::QueueNameTooLong(r) => JobRejection::QueueNameTooLong { limit: r.limit, actual: r.actual },
        Reason::JobTypeNameTooLong(r) => JobRejection::JobTypeNameTooLong { limit: r.limit, actual: r.actual },
        Reason::IdempotencyKeyTooLong(r) => JobRejection::IdempotencyKeyTooLong { limit: r.limit, actual: r.actual },
        Reason::ScheduledTooFar(r) => JobRejection::ScheduledTooFar {
            horizon: from_duration(r.horizon.as_ref()),
            actual: r.actual.as_ref().and_then(|at| system_time(at).ok()).unwrap_or(UNIX_EPOCH),
        },
        Reason::InvalidRequest(r) => JobRejection::InvalidRequest { message: r.message },
        Reason::QueueFull(r) => JobRejection::QueueFull { queue: r.queue, limit: r.limit },
        Reason::QueueClosing(r) => JobRejection::QueueClosing { queue: r.queue },
    }
}

fn required_time(
    field: &'static str,
    timestamp: Option<&prost_types::Timestamp>,
) -> Result<SystemTime, JobConversionError> {
    let timestamp = timestamp.ok_or(JobConversionError::MissingField(field))?;
    system_time(timestamp).map_err(|value| JobConversionError::InvalidTimestamp { field, value })
}

fn priority(value: u32) -> Result<Priority, JobConversionError> {
    u8::try_from(value)
        .ok()
        .and_then(|value| Priority::new(value).ok())
        .ok_or(JobConversionError::PriorityOutOfRange(value))
}

fn payload(payload: Option<pb::Payload>) -> Option<Payload> {
    payload.map(|payload| Payload { data: payload.data, encoding: payload.encoding })
}

/// The parts of a wire job that both reserved jobs and dead-letter records carry, validated.
struct JobFields {
    id: String,
    queue: String,
    job_type: String,
    payload: Option<Payload>,
    priority: Priority,
    max_attempts: u32,
    custom: HashMap<String, Primitive>,
    trace_context: Option<TraceContext>,
    enqueued_at: SystemTime,
    scheduled_at: Option<SystemTime>,
}

fn job_fields(job: pb::Job) -> Result<(JobFields, u32, Option<prost_types::Timestamp>), JobConversionError> {
    if job.id.is_empty() {
        return Err(JobConversionError::MissingField("id"));
    }
    if job.job_type.is_empty() {
        return Err(JobConversionError::MissingField("job_type"));
    }
    let fields = JobFields {
        priority: priority(job.priority)?,
        enqueued_at: required_time("enqueued_at", job.enqueued_at.as_ref())?,
        custom: custom_map(job.custom)?,
        // A malformed schedule or trace context is dropped, not fatal: the job is still usable.
        scheduled_at: job.scheduled_at.as_ref().and_then(|at| system_time(at).ok()),
        trace_context: received_trace_context(job.trace_context),
        payload: payload(job.payload),
        id: job.id,
        queue: job.queue,
        job_type: job.job_type,
        max_attempts: job.max_attempts,
    };
    Ok((fields, job.attempt, job.lease_expires_at))
}

/// A reserved job, with a lease built by `lease` from the granted expiry.
pub(crate) fn job(job: pb::Job, lease: impl FnOnce(SystemTime) -> Lease) -> Result<Job, JobConversionError> {
    let (fields, attempt, lease_expires_at) = job_fields(job)?;
    let lease_expires_at = required_time("lease_expires_at", lease_expires_at.as_ref())?;
    let ctx = JobCtx {
        id: fields.id,
        queue: fields.queue,
        job_type: fields.job_type,
        priority: fields.priority,
        attempt,
        max_attempts: fields.max_attempts,
        enqueued_at: fields.enqueued_at,
        scheduled_at: fields.scheduled_at,
        custom: fields.custom,
        trace_context: fields.trace_context,
        lease_expires_at,
        lease: Arc::new(lease(lease_expires_at)),
    };
    Ok(Job { payload: fields.payload, ctx })
}

fn dead_letter_cause(value: i32) -> DeadLetterCause {
    match pb::DeadLetterCause::try_from(value) {
        Ok(pb::DeadLetterCause::AttemptsExhausted) => DeadLetterCause::AttemptsExhausted,
        Ok(pb::DeadLetterCause::Rejected) => DeadLetterCause::Rejected,
        Ok(pb::DeadLetterCause::LeaseExpired) => DeadLetterCause::LeaseExpired,
        Ok(pb::DeadLetterCause::Admin) => DeadLetterCause::Admin,
        Ok(pb::DeadLetterCause::Cancelled) => DeadLetterCause::Cancelled,
        Ok(pb::DeadLetterCause::Unspecified) | Err(_) => DeadLetterCause::Unspecified,
    }
}

pub(crate) fn dead_letter(record: pb::DeadLetterRecord) -> Result<DeadLetterRecord, JobConversionError> {
    let job = record.job.ok_or(JobConversionError::MissingField("job"))?;
    let (fields, _, _) = job_fields(job)?;
    Ok(DeadLetterRecord {
        queue: fields.queue,
        job_id: fields.id,
        job_type: fields.job_type,
        payload: fields.payload,
        priority: fields.priority,
        max_attempts: fields.max_attempts,
        custom: fields.custom,
        trace_context: fields.trace_context,
        enqueued_at: fields.enqueued_at,
        scheduled_at: fields.scheduled_at,
        cause: dead_letter_cause(record.cause),
        failed_at: required_time("failed_at", record.failed_at.as_ref())?,
        final_attempt: record.final_attempt,
        last_reason: record.last_reason,
    })
}

pub(crate) fn server_info(info: pb::GetServerInfoResponse) -> Result<ServerInfo, ServerInfoError> {
    if info.server_version.is_empty() {
        return Err(ServerInfoError::MissingField("server_version"));
    }
    let server_time = info.server_time.as_ref().ok_or(ServerInfoError::MissingField("server_time"))?;
    let server_time = system_time(server_time).map_err(ServerInfoError::InvalidServerTime)?;
    Ok(ServerInfo {
        version: info.server_version,
        supported_protocol_versions: info.supported_protocol_versions,
        server_time,
        restricts_encodings: info.restricts_encodings,
        allowed_encodings: info.allowed_encodings,
        max_payload_bytes: info.max_payload_bytes,
        max_custom_entries: info.max_custom_entries,
        max_custom_total_bytes: info.max_custom_total_bytes,
        max_custom_key_bytes: info.max_custom_key_bytes,
        max_queue_name_bytes: info.max_queue_name_bytes,
        max_job_type_bytes: info.max_job_type_bytes,
        max_idempotency_key_bytes: info.max_idempotency_key_bytes,
        max_schedule_horizon: from_duration(info.max_schedule_horizon.as_ref()),
        max_enqueue_batch: info.max_enqueue_batch,
        max_reserve_batch: info.max_reserve_batch,
        max_reserve_queues: info.max_reserve_queues,
        max_wait_timeout: from_duration(info.max_wait_timeout.as_ref()),
        max_lease_duration: from_duration(info.max_lease_duration.as_ref()),
        strict_queues: info.strict_queues,
        dead_letter_retention_enabled: info.dead_letter_retention_enabled,
        features: info.features,
        max_consume_credits: info.max_consume_credits,
        cluster: info.cluster.map(cluster_info),
    })
}

fn cluster_info(cluster: pb::ClusterInfo) -> ClusterInfo {
    ClusterInfo {
        node_id: cluster.node_id,
        role: cluster.role,
        term: cluster.term,
        leader_id: cluster.leader_id,
        leader_addr: cluster.leader_addr,
        last_applied_index: cluster.last_applied_index,
        members: cluster
            .members
            .into_iter()
            .map(|member| ClusterMember {
                id: member.id,
                addr: member.addr,
                voter: member.voter,
                replication_lag: member.replication_lag,
            })
            .collect(),
    }
}

pub(crate) fn schedule_definition(definition: crate::ScheduleDefinition) -> pb::ScheduleDefinition {
    use crate::{ScheduleCadence, ScheduleCatchUp, ScheduleOverlap};
    pb::ScheduleDefinition {
        id: definition.id,
        cadence: Some(match definition.cadence {
            ScheduleCadence::Cron { expression, time_zone } => {
                pb::schedule_definition::Cadence::Cron(pb::CronCadence { expression, time_zone })
            }
            ScheduleCadence::Every(every) => pb::schedule_definition::Cadence::Every(duration(every)),
        }),
        job: Some(enqueue_request(definition.job)),
        overlap: match definition.overlap {
            ScheduleOverlap::Skip => pb::ScheduleOverlap::Skip,
            ScheduleOverlap::Allow => pb::ScheduleOverlap::Allow,
        } as i32,
        catch_up: match definition.catch_up {
            ScheduleCatchUp::Latest => pb::ScheduleCatchUp::Latest,
            ScheduleCatchUp::None => pb::ScheduleCatchUp::None,
        } as i32,
    }
}

pub(crate) fn schedule_info(info: pb::ScheduleInfo) -> crate::ScheduleInfo {
    use crate::{ScheduleCadence, ScheduleCatchUp, ScheduleOverlap};
    let definition = info.definition.unwrap_or_default();
    let job = definition.job.unwrap_or_default();
    let time = |timestamp: Option<prost_types::Timestamp>| timestamp.as_ref().and_then(|t| system_time(t).ok());
    crate::ScheduleInfo {
        id: definition.id,
        cadence: match definition.cadence {
            Some(pb::schedule_definition::Cadence::Cron(cron)) => {
                ScheduleCadence::Cron { expression: cron.expression, time_zone: cron.time_zone }
            }
            Some(pb::schedule_definition::Cadence::Every(every)) => ScheduleCadence::Every(from_duration(Some(&every))),
            None => ScheduleCadence::Every(std::time::Duration::ZERO),
        },
        queue: job.queue,
        job_type: job.job_type,
        overlap: match pb::ScheduleOverlap::try_from(definition.overlap) {
            Ok(pb::ScheduleOverlap::Allow) => ScheduleOverlap::Allow,
            _ => ScheduleOverlap::Skip,
        },
        catch_up: match pb::ScheduleCatchUp::try_from(definition.catch_up) {
            Ok(pb::ScheduleCatchUp::None) => ScheduleCatchUp::None,
            _ => ScheduleCatchUp::Latest,
        },
        next_fire_at: time(info.next_fire_at),
        last_slot_at: time(info.last_slot_at),
        last_job_id: info.last_job_id,
        fired: info.fired,
        created_at: time(info.created_at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::SeppClient;

    const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    fn at(seconds: i64) -> Option<prost_types::Timestamp> {
        Some(prost_types::Timestamp { seconds, nanos: 0 })
    }

    fn wire_job() -> pb::Job {
        pb::Job {
            id: "id-1".into(),
            job_type: "email".into(),
            payload: Some(pb::Payload { data: b"{}".to_vec(), encoding: "application/json".into() }),
            priority: 5,
            trace_context: Some(pb::TraceContext { traceparent: TRACEPARENT.into(), tracestate: Some("k=v".into()) }),
            enqueued_at: at(100),
            attempt: 2,
            max_attempts: 3,
            lease_expires_at: at(200),
            custom: HashMap::from([(
                "tenant".to_owned(),
                pb::PrimitiveValue { value: Some(pb::primitive_value::Value::StringValue("acme".into())) },
            )]),
            scheduled_at: at(50),
            queue: "q".into(),
        }
    }

    fn decode(job: pb::Job) -> Result<Job, JobConversionError> {
        let client =
            SeppClient::from_channel(tonic::transport::Endpoint::from_static("http://127.0.0.1:1").connect_lazy());
        super::job(job, |expiry| Lease::new(client, Some("w".into()), expiry))
    }

    #[tokio::test]
    async fn a_wire_job_decodes_into_a_job_and_its_context() {
        let job = decode(wire_job()).unwrap();
        assert_eq!(job.payload, Some(Payload::new(b"{}".to_vec(), "application/json")));
        let ctx = job.ctx;
        assert_eq!((ctx.id.as_str(), ctx.job_type.as_str(), ctx.queue.as_str()), ("id-1", "email", "q"));
        assert_eq!((ctx.priority, ctx.attempt, ctx.max_attempts), (Priority::P5, 2, 3));
        assert_eq!(ctx.enqueued_at, UNIX_EPOCH + Duration::from_secs(100));
        assert_eq!(ctx.lease_expires_at, UNIX_EPOCH + Duration::from_secs(200));
        assert_eq!(ctx.lease_expiry(), ctx.lease_expires_at);
        assert_eq!(ctx.scheduled_at, Some(UNIX_EPOCH + Duration::from_secs(50)));
        assert_eq!(ctx.custom["tenant"], Primitive::String("acme".into()));
        assert_eq!(ctx.trace_context.as_ref().unwrap().tracestate(), Some("k=v"));
        assert_eq!(ctx.worker_id(), Some("w"));
        assert_eq!(ctx.to_string(), "JobCtx { id: id-1, job_type: email, attempt: 2/3, priority: 5 }");
    }

    #[tokio::test]
    async fn malformed_jobs_are_refused_with_the_reason() {
        type Breakage = fn(&mut pb::Job);
        let cases: Vec<(Breakage, JobConversionError)> = vec![
            (|job| job.id.clear(), JobConversionError::MissingField("id")),
            (|job| job.job_type.clear(), JobConversionError::MissingField("job_type")),
            (|job| job.priority = 10, JobConversionError::PriorityOutOfRange(10)),
            (|job| job.enqueued_at = None, JobConversionError::MissingField("enqueued_at")),
            (|job| job.enqueued_at = at(-1), JobConversionError::InvalidTimestamp { field: "enqueued_at", value: -1 }),
            (|job| job.lease_expires_at = None, JobConversionError::MissingField("lease_expires_at")),
            (
                |job| job.lease_expires_at = at(-5),
                JobConversionError::InvalidTimestamp { field: "lease_expires_at", value: -5 },
            ),
            (
                |job| {
                    job.custom.insert("empty".into(), pb::PrimitiveValue { value: None });
                },
                JobConversionError::EmptyCustomValue("empty".into()),
            ),
        ];
        for (break_it, expected) in cases {
            let mut job = wire_job();
            break_it(&mut job);
            assert_eq!(decode(job).unwrap_err(), expected);
        }
    }

    #[tokio::test]
    async fn a_bad_trace_context_or_schedule_is_dropped_but_the_job_kept() {
        let mut job = wire_job();
        job.trace_context = Some(pb::TraceContext { traceparent: "garbage".into(), tracestate: None });
        job.scheduled_at = at(-10);
        let job = decode(job).unwrap();
        assert_eq!(job.ctx.trace_context, None);
        assert_eq!(job.ctx.scheduled_at, None);
    }

    #[test]
    fn a_request_keeps_unset_options_unset() {
        let wire = enqueue_request(EnqueueRequest::new("q", "t").unwrap());
        assert_eq!(wire.queue, "q");
        assert_eq!(wire.job_type, "t");
        assert_eq!(wire.payload, None);
        assert_eq!(wire.idempotency_key, None);
        assert_eq!(wire.priority, None);
        assert_eq!(wire.max_attempts, None);
        assert_eq!(wire.trace_context, None);
        assert!(wire.custom.is_empty());
        assert_eq!(wire.scheduled_at, None);
    }

    #[test]
    fn a_full_request_is_encoded_field_by_field() {
        let request = EnqueueRequest::new("q", "t")
            .unwrap()
            .with_payload(Payload::new(b"x".to_vec(), "text/plain"))
            .with_idempotency_key("k")
            .with_priority(Priority::P9)
            .with_max_attempts(7)
            .with_custom_entry("s", "v")
            .with_custom_entry("i", 3)
            .with_custom_entry("d", 1.5)
            .with_custom_entry("b", false)
            .with_trace_context(TraceContext::new(TRACEPARENT).unwrap())
            .with_scheduled_at(UNIX_EPOCH + Duration::new(10, 5));
        let wire = enqueue_request(request.clone());
        assert_eq!(wire.payload, Some(pb::Payload { data: b"x".to_vec(), encoding: "text/plain".into() }));
        assert_eq!(wire.idempotency_key.as_deref(), Some("k"));
        assert_eq!((wire.priority, wire.max_attempts), (Some(9), Some(7)));
        assert_eq!(wire.trace_context.unwrap().traceparent, TRACEPARENT);
        assert_eq!(wire.scheduled_at, Some(prost_types::Timestamp { seconds: 10, nanos: 5 }));
        let decoded = custom_map(wire.custom).unwrap();
        assert_eq!(&decoded, request.custom());
    }

    #[test]
    fn a_schedule_before_the_epoch_is_not_sent() {
        let request = EnqueueRequest::new("q", "t").unwrap().with_scheduled_at(UNIX_EPOCH - Duration::from_secs(1));
        assert_eq!(enqueue_request(request).scheduled_at, None);
    }

    #[test]
    fn every_rejection_reason_decodes_and_unknown_ones_do_not_fail() {
        use pb::job_rejection::Reason;
        let decode = |reason| rejection(Some(pb::JobRejection { reason: Some(reason) }));
        assert_eq!(
            decode(Reason::UnknownQueue(pb::UnknownQueue { queue: "q".into() })),
            JobRejection::UnknownQueue { queue: "q".into() }
        );
        assert_eq!(
            decode(Reason::PayloadTooLarge(pb::PayloadTooLarge { limit: 1, actual: 2 })),
            JobRejection::PayloadTooLarge { limit: 1, actual: 2 }
        );
        assert_eq!(
            decode(Reason::ScheduledTooFar(pb::ScheduledTooFar {
                horizon: Some(duration(Duration::from_secs(60))),
                actual: at(1000),
            })),
            JobRejection::ScheduledTooFar {
                horizon: Duration::from_secs(60),
                actual: UNIX_EPOCH + Duration::from_secs(1000)
            }
        );
        assert_eq!(
            decode(Reason::QueueFull(pb::QueueFull { queue: "q".into(), limit: 5 })),
            JobRejection::QueueFull { queue: "q".into(), limit: 5 }
        );
        assert_eq!(
            decode(Reason::InvalidRequest(pb::InvalidRequest { message: "m".into() })),
            JobRejection::InvalidRequest { message: "m".into() }
        );
        assert_eq!(rejection(Some(pb::JobRejection { reason: None })), JobRejection::Unknown);
        assert_eq!(rejection(None), JobRejection::Unknown);
    }

    #[test]
    fn server_info_requires_a_version_and_a_valid_time_and_zeroes_unset_durations() {
        let info = pb::GetServerInfoResponse { server_version: "1.0".into(), server_time: at(5), ..Default::default() };
        let decoded = server_info(info.clone()).unwrap();
        assert_eq!(decoded.version, "1.0");
        assert_eq!(decoded.max_wait_timeout, Duration::ZERO);
        let missing = pb::GetServerInfoResponse { server_version: String::new(), ..info.clone() };
        assert_eq!(server_info(missing), Err(ServerInfoError::MissingField("server_version")));
        let no_time = pb::GetServerInfoResponse { server_time: None, ..info.clone() };
        assert_eq!(server_info(no_time), Err(ServerInfoError::MissingField("server_time")));
        let early = pb::GetServerInfoResponse { server_time: at(-3), ..info };
        assert_eq!(server_info(early), Err(ServerInfoError::InvalidServerTime(-3)));
    }

    #[test]
    fn server_info_carries_the_features_and_the_cluster_as_the_node_sees_it() {
        let info = pb::GetServerInfoResponse {
            server_version: "1.0".into(),
            server_time: at(5),
            features: vec!["cancel".into()],
            ..Default::default()
        };
        let single = server_info(info.clone()).unwrap();
        assert_eq!(single.features, ["cancel"]);
        assert_eq!(single.cluster, None);
        let member =
            |id, lag| pb::ClusterMember { id, addr: format!("10.0.0.{id}:50051"), voter: true, replication_lag: lag };
        let cluster = pb::ClusterInfo {
            node_id: 2,
            role: "follower".into(),
            term: 7,
            leader_id: Some(1),
            leader_addr: "10.0.0.1:50051".into(),
            last_applied_index: Some(40),
            members: vec![member(1, Some(0)), member(2, None)],
        };
        let decoded =
            server_info(pb::GetServerInfoResponse { cluster: Some(cluster), ..info }).unwrap().cluster.unwrap();
        assert!(!decoded.is_leader());
        assert_eq!((decoded.node_id, decoded.role.as_str(), decoded.term), (2, "follower", 7));
        assert_eq!((decoded.leader_id, decoded.leader_addr.as_str()), (Some(1), "10.0.0.1:50051"));
        assert_eq!(decoded.last_applied_index, Some(40));
        let members: Vec<_> =
            decoded.members.iter().map(|m| (m.id, m.addr.as_str(), m.voter, m.replication_lag)).collect();
        assert_eq!(members, [(1, "10.0.0.1:50051", true, Some(0)), (2, "10.0.0.2:50051", true, None)]);
    }

    #[test]
    fn dead_letter_records_decode_with_their_cause() {
        let record = pb::DeadLetterRecord {
            job: Some(wire_job()),
            cause: pb::DeadLetterCause::Rejected as i32,
            failed_at: at(300),
            final_attempt: 2,
            last_reason: Some("bad".into()),
        };
        let decoded = dead_letter(record.clone()).unwrap();
        assert_eq!(decoded.cause, DeadLetterCause::Rejected);
        assert_eq!(decoded.failed_at, UNIX_EPOCH + Duration::from_secs(300));
        assert_eq!((decoded.job_id.as_str(), decoded.queue.as_str()), ("id-1", "q"));
        let unknown = pb::DeadLetterRecord { cause: 99, ..record.clone() };
        assert_eq!(dead_letter(unknown).unwrap().cause, DeadLetterCause::Unspecified);
        let no_job = pb::DeadLetterRecord { job: None, ..record.clone() };
        assert_eq!(dead_letter(no_job), Err(JobConversionError::MissingField("job")));
        let no_time = pb::DeadLetterRecord { failed_at: None, ..record };
        assert_eq!(dead_letter(no_time), Err(JobConversionError::MissingField("failed_at")));
    }

    #[test]
    fn durations_and_timestamps_round_trip_and_bad_ones_are_refused() {
        let length = Duration::new(3, 250);
        assert_eq!(from_duration(Some(&duration(length))), length);
        assert_eq!(from_duration(Some(&prost_types::Duration { seconds: -1, nanos: 0 })), Duration::ZERO);
        let time = UNIX_EPOCH + Duration::new(12, 34);
        assert_eq!(system_time(&timestamp(time).unwrap()), Ok(time));
        assert_eq!(system_time(&prost_types::Timestamp { seconds: 1, nanos: -1 }), Err(1));
        assert_eq!(system_time(&prost_types::Timestamp { seconds: 1, nanos: 1_000_000_000 }), Err(1));
    }
}
