"""Conversions between this client's types and the `sepp.v1` protobuf messages.

Outgoing: unset optional fields stay unset so the server applies the queue's defaults, custom
values keep their exact type (bool before int), a `scheduled_at` before the Unix epoch is left
out. Incoming: a job or record that lacks what every valid one has (an id, a type, a priority
0-9, its timestamps, a value for each custom entry) raises `JobConversionError`, which the client
turns into "skip it and log"; a bad trace context or scheduled time only drops that field.

These functions run once per job on the hot paths, so they build messages with keyword
constructors and avoid per-field presence checks where the message makes them unnecessary.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING

from google.protobuf.duration_pb2 import Duration
from google.protobuf.empty_pb2 import Empty
from google.protobuf.timestamp_pb2 import Timestamp

from ._lease import Lease
from .errors import (
    CustomEntriesTooMany,
    CustomKeyTooLong,
    CustomMapTooLarge,
    EncodingNotAllowed,
    IdempotencyKeyTooLong,
    InvalidRequest,
    JobConversionError,
    JobRejection,
    JobTypeNameTooLong,
    JobTypeNotAllowed,
    PayloadTooLarge,
    QueueClosing,
    QueueFull,
    QueueNameTooLong,
    ScheduledTooFar,
    ServerInfoError,
    UnknownQueue,
    UnknownRejection,
)
from .types import (
    ClusterInfo,
    ClusterMember,
    DeadLetterCause,
    DeadLetterRecord,
    EnqueueRequest,
    Job,
    JobCtx,
    Payload,
    Primitive,
    Priority,
    QueuePause,
    Schedule,
    ScheduleCatchUp,
    ScheduleInfo,
    ScheduleOverlap,
    ServerInfo,
    TraceContext,
    TraceContextError,
)
from .v1 import queue_pb2 as pb

if TYPE_CHECKING:
    from google.protobuf.internal.containers import MessageMap, RepeatedCompositeFieldContainer

    from ._retry import RetryDirective
    from .client import SeppClient

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_UINT32_MAX = 2**32 - 1
_PRIORITIES = tuple(Priority(level) for level in range(10))
_EMPTY = Empty()


# --------------------------------------------------------------------------------------------
# Time
# --------------------------------------------------------------------------------------------


def duration_to_pb(value: timedelta) -> Duration:
    """A non-negative timedelta as a protobuf Duration (microsecond precision)."""
    seconds, micros = divmod(value // _MICROSECOND, 1_000_000)
    return Duration(seconds=seconds, nanos=micros * 1000)


_MICROSECOND = timedelta(microseconds=1)


def timedelta_from_pb(value: Duration) -> timedelta:
    return timedelta(seconds=value.seconds, microseconds=value.nanos // 1000)


def timestamp_to_pb(moment: datetime) -> Timestamp | None:
    """A datetime (naive = UTC) as a Timestamp; None for a time before the Unix epoch."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    offset = moment - EPOCH
    if offset < timedelta(0):
        return None
    seconds, micros = divmod(offset // _MICROSECOND, 1_000_000)
    return Timestamp(seconds=seconds, nanos=micros * 1000)


def datetime_from_pb(value: Timestamp) -> datetime | None:
    """A Timestamp as an aware UTC datetime; None if it is before the epoch or unrepresentable."""
    seconds, nanos = value.seconds, value.nanos
    if seconds < 0 or not 0 <= nanos < 1_000_000_000:
        return None
    try:
        return EPOCH + timedelta(seconds=seconds, microseconds=nanos // 1000)
    except OverflowError:
        return None


# --------------------------------------------------------------------------------------------
# Outgoing
# --------------------------------------------------------------------------------------------


def set_custom(target: MessageMap[str, pb.PrimitiveValue], custom: Mapping[str, Primitive]) -> None:
    """Copy custom metadata into a message's map, keeping each value's type."""
    for key, value in custom.items():
        if not isinstance(key, str):
            raise TypeError(f"custom keys must be strings, not {type(key).__name__} {key!r}")
        if isinstance(value, str):
            target[key].string_value = value
        elif isinstance(value, bool):
            target[key].bool_value = value
        elif isinstance(value, int):
            if not _INT64_MIN <= value <= _INT64_MAX:
                raise ValueError(
                    f"custom value {key!r}={value} does not fit in a signed 64-bit int"
                )
            target[key].int_value = value
        elif isinstance(value, float):
            target[key].double_value = value
        else:
            raise TypeError(
                f"custom value {key!r} must be str, int, float or bool, not {type(value).__name__}"
            )


def _uint32(name: str, value: int) -> int:
    if type(value) is bool or not isinstance(value, int) or not 0 <= value <= _UINT32_MAX:
        raise ValueError(f"{name} must be a non-negative int, not {value!r}")
    return value


def add_enqueue_request(
    jobs: RepeatedCompositeFieldContainer[pb.EnqueueRequest], request: EnqueueRequest
) -> pb.EnqueueRequest:
    """Append one job to a batch's `jobs`, built in place (copying a built message costs more)."""
    queue, job_type, payload = request.queue, request.job_type, request.payload
    if not queue or not job_type:
        raise ValueError("queue and job_type must be non-empty names")
    # One constructor call for the common shape (a payload, nothing else) is the cheapest.
    if payload is not None:
        message = jobs.add(
            queue=queue,
            job_type=job_type,
            payload=pb.Payload(data=payload.data, encoding=payload.encoding),
        )
    else:
        message = jobs.add(queue=queue, job_type=job_type)
    if request.idempotency_key is not None:
        message.idempotency_key = request.idempotency_key
    priority = request.priority
    if priority is not None:
        message.priority = (
            priority.value if isinstance(priority, Priority) else Priority(priority).value
        )
    if request.max_attempts is not None:
        message.max_attempts = _uint32("max_attempts", request.max_attempts)
    trace = request.trace_context
    if trace is not None:
        message.trace_context.traceparent = trace.traceparent
        if trace.tracestate is not None:
            message.trace_context.tracestate = trace.tracestate
    if request.custom:
        set_custom(message.custom, request.custom)
    if request.scheduled_at is not None:
        scheduled = timestamp_to_pb(request.scheduled_at)
        if scheduled is not None:
            message.scheduled_at.CopyFrom(scheduled)
    return message


# What a job adds to a call besides its payload bytes, for size estimates.
JOB_OVERHEAD_BYTES = 64


def enqueue_batch_to_pb(requests: list[EnqueueRequest]) -> tuple[pb.EnqueueBatchRequest, bool, int]:
    """The wire batch of `requests`, whether every job has an idempotency key (an empty key is
    no key), and an estimate of its size in bytes."""
    batch = pb.EnqueueBatchRequest()
    jobs = batch.jobs
    keyed = True
    size = 0
    for request in requests:
        add_enqueue_request(jobs, request)
        if not request.idempotency_key:
            keyed = False
        payload = request.payload
        size += JOB_OVERHEAD_BYTES + (len(payload.data) if payload is not None else 0)
    return batch, keyed, size


_OVERLAP_TO_PB = {
    ScheduleOverlap.SKIP: pb.SCHEDULE_OVERLAP_SKIP,
    ScheduleOverlap.ALLOW: pb.SCHEDULE_OVERLAP_ALLOW,
}
_CATCH_UP_TO_PB = {
    ScheduleCatchUp.LATEST: pb.SCHEDULE_CATCH_UP_LATEST,
    ScheduleCatchUp.NONE: pb.SCHEDULE_CATCH_UP_NONE,
}


def schedule_to_pb(schedule: Schedule) -> pb.ScheduleDefinition:
    """The wire definition of `schedule`; the template is built as an enqueue's job would be."""
    holder = pb.EnqueueBatchRequest()
    job = add_enqueue_request(holder.jobs, schedule.job)
    message = pb.ScheduleDefinition(
        id=schedule.id,
        overlap=_OVERLAP_TO_PB[schedule.overlap],
        catch_up=_CATCH_UP_TO_PB[schedule.catch_up],
    )
    message.job.CopyFrom(job)
    if schedule.cron is not None:
        message.cron.expression = schedule.cron
        message.cron.time_zone = schedule.time_zone
    else:
        assert schedule.every is not None  # checked when the schedule was made
        message.every.CopyFrom(duration_to_pb(schedule.every))
    return message


def pause_request_to_pb(
    queue: str, until: datetime | None, reason: str | None
) -> pb.PauseQueueRequest:
    """The wire request of a pause; what the client can tell is wrong raises TypeError or
    ValueError (the queue name's rules, an `until` not in the future and the reason's size are
    the server's to check)."""
    check_pause_queue(queue)
    message = pb.PauseQueueRequest(queue=queue)
    if until is not None:
        if not isinstance(until, datetime):
            raise TypeError(f"until must be a datetime, not {type(until).__name__}")
        stamp = timestamp_to_pb(until)
        if stamp is None:
            raise ValueError(f"until must be in the future, not {until.isoformat()}")
        message.until.CopyFrom(stamp)
    if reason is not None:
        if not isinstance(reason, str):
            raise TypeError(f"reason must be a string, not {type(reason).__name__}")
        message.reason = reason
    return message


def check_pause_queue(queue: str) -> None:
    """Raise TypeError unless `queue` is a string (`ALL_QUEUES`, the empty one, is every queue)."""
    if not isinstance(queue, str):
        raise TypeError(f"queue must be a queue name or ALL_QUEUES, not {type(queue).__name__}")


def nack_retry_to_pb(directive: RetryDirective) -> pb.NackRetry:
    if directive.kind == "default":
        return pb.NackRetry(default=_EMPTY)
    if directive.kind == "dead_letter":
        return pb.NackRetry(dead_letter=_EMPTY)
    assert directive.delay is not None  # checked when the directive was made
    return pb.NackRetry(delay=duration_to_pb(directive.delay))


# --------------------------------------------------------------------------------------------
# Incoming
# --------------------------------------------------------------------------------------------


def _rejection_unknown_queue(r: pb.JobRejection) -> JobRejection:
    return UnknownQueue(r.unknown_queue.queue)


def _rejection_scheduled_too_far(r: pb.JobRejection) -> JobRejection:
    detail = r.scheduled_too_far
    actual = datetime_from_pb(detail.actual) or EPOCH
    return ScheduledTooFar(timedelta_from_pb(detail.horizon), actual)


_REJECTIONS: dict[str, Callable[[pb.JobRejection], JobRejection]] = {
    "unknown_queue": _rejection_unknown_queue,
    "payload_too_large": lambda r: PayloadTooLarge(
        r.payload_too_large.limit, r.payload_too_large.actual
    ),
    "encoding_not_allowed": lambda r: EncodingNotAllowed(
        r.encoding_not_allowed.encoding, list(r.encoding_not_allowed.allowed)
    ),
    "job_type_not_allowed": lambda r: JobTypeNotAllowed(
        r.job_type_not_allowed.job_type, list(r.job_type_not_allowed.allowed)
    ),
    "custom_entries_too_many": lambda r: CustomEntriesTooMany(
        r.custom_entries_too_many.limit, r.custom_entries_too_many.actual
    ),
    "custom_map_too_large": lambda r: CustomMapTooLarge(
        r.custom_map_too_large.limit, r.custom_map_too_large.actual
    ),
    "custom_key_too_long": lambda r: CustomKeyTooLong(
        r.custom_key_too_long.key, r.custom_key_too_long.limit, r.custom_key_too_long.actual
    ),
    "queue_name_too_long": lambda r: QueueNameTooLong(
        r.queue_name_too_long.limit, r.queue_name_too_long.actual
    ),
    "job_type_name_too_long": lambda r: JobTypeNameTooLong(
        r.job_type_name_too_long.limit, r.job_type_name_too_long.actual
    ),
    "idempotency_key_too_long": lambda r: IdempotencyKeyTooLong(
        r.idempotency_key_too_long.limit, r.idempotency_key_too_long.actual
    ),
    "scheduled_too_far": _rejection_scheduled_too_far,
    "invalid_request": lambda r: InvalidRequest(r.invalid_request.message),
    "queue_full": lambda r: QueueFull(r.queue_full.queue, r.queue_full.limit),
    "queue_closing": lambda r: QueueClosing(r.queue_closing.queue),
}


def rejection_from_pb(rejection: pb.JobRejection) -> JobRejection:
    """A rejection value; a reason this client does not know becomes `UnknownRejection`."""
    reason = rejection.WhichOneof("reason")
    convert = _REJECTIONS.get(reason) if reason is not None else None
    return convert(rejection) if convert is not None else UnknownRejection()


def custom_from_pb(custom: MessageMap[str, pb.PrimitiveValue]) -> dict[str, Primitive]:
    result: dict[str, Primitive] = {}
    for key, value in custom.items():
        kind = value.WhichOneof("value")
        if kind is None:
            raise JobConversionError(f"custom entry {key!r} has no value")
        result[key] = getattr(value, kind)
    return result


def trace_context_from_pb(message: pb.Job) -> TraceContext | None:
    if not message.HasField("trace_context"):
        return None
    trace = message.trace_context
    tracestate = trace.tracestate if trace.HasField("tracestate") else None
    try:
        return TraceContext(trace.traceparent, tracestate)
    except TraceContextError:
        return None  # a bad trace context never blocks delivery


def _required_time(message: pb.Job, name: str) -> datetime:
    if not message.HasField(name):
        raise JobConversionError(f"job {message.id} has no {name}")
    moment = datetime_from_pb(getattr(message, name))
    if moment is None:
        raise JobConversionError(f"job {message.id} has an invalid {name}")
    return moment


def _checked_job_fields(message: pb.Job) -> Priority:
    if not message.id:
        raise JobConversionError("job has an empty id")
    if not message.job_type:
        raise JobConversionError(f"job {message.id} has an empty job_type")
    if message.priority > 9:
        raise JobConversionError(f"job {message.id} has priority {message.priority} (not 0-9)")
    return _PRIORITIES[message.priority]


def payload_from_pb(message: pb.Job) -> Payload | None:
    if not message.HasField("payload"):
        return None
    return Payload(message.payload.data, message.payload.encoding)


def scheduled_from_pb(message: pb.Job) -> datetime | None:
    return datetime_from_pb(message.scheduled_at) if message.HasField("scheduled_at") else None


_CAUSES = {
    pb.DEAD_LETTER_CAUSE_UNSPECIFIED: DeadLetterCause.UNSPECIFIED,
    pb.DEAD_LETTER_CAUSE_ATTEMPTS_EXHAUSTED: DeadLetterCause.ATTEMPTS_EXHAUSTED,
    pb.DEAD_LETTER_CAUSE_REJECTED: DeadLetterCause.REJECTED,
    pb.DEAD_LETTER_CAUSE_LEASE_EXPIRED: DeadLetterCause.LEASE_EXPIRED,
    pb.DEAD_LETTER_CAUSE_ADMIN: DeadLetterCause.ADMIN,
    pb.DEAD_LETTER_CAUSE_CANCELLED: DeadLetterCause.CANCELLED,
}


def job_from_pb(message: pb.Job, client: SeppClient, worker_id: str | None) -> Job:
    """A reserved job, with the lease it is held under."""
    priority = _checked_job_fields(message)
    enqueued_at = _required_time(message, "enqueued_at")
    lease_expires_at = _required_time(message, "lease_expires_at")
    ctx = JobCtx(
        id=message.id,
        queue=message.queue,
        job_type=message.job_type,
        priority=priority,
        attempt=message.attempt,
        max_attempts=message.max_attempts,
        enqueued_at=enqueued_at,
        custom=custom_from_pb(message.custom) if message.custom else {},
        trace_context=trace_context_from_pb(message),
        lease_expires_at=lease_expires_at,
        scheduled_at=scheduled_from_pb(message),
        _lease=Lease(client, message.id, message.attempt, worker_id, lease_expires_at),
    )
    return Job(payload_from_pb(message), ctx)


def dead_letter_from_pb(record: pb.DeadLetterRecord) -> DeadLetterRecord:
    if not record.HasField("job"):
        raise JobConversionError("dead-letter record has no job")
    job = record.job
    priority = _checked_job_fields(job)
    enqueued_at = _required_time(job, "enqueued_at")
    if not record.HasField("failed_at"):
        raise JobConversionError(f"dead-letter record of job {job.id} has no failed_at")
    failed_at = datetime_from_pb(record.failed_at)
    if failed_at is None:
        raise JobConversionError(f"dead-letter record of job {job.id} has an invalid failed_at")
    return DeadLetterRecord(
        queue=job.queue,
        job_id=job.id,
        job_type=job.job_type,
        payload=payload_from_pb(job),
        priority=priority,
        max_attempts=job.max_attempts,
        custom=custom_from_pb(job.custom),
        trace_context=trace_context_from_pb(job),
        enqueued_at=enqueued_at,
        scheduled_at=scheduled_from_pb(job),
        cause=_CAUSES.get(record.cause, DeadLetterCause.UNSPECIFIED),
        failed_at=failed_at,
        final_attempt=record.final_attempt,
        last_reason=record.last_reason if record.HasField("last_reason") else None,
    )


def server_info_from_pb(message: pb.GetServerInfoResponse) -> ServerInfo:
    if not message.server_version:
        raise ServerInfoError("server_version is empty")
    if not message.HasField("server_time"):
        raise ServerInfoError("server_time is not set")
    server_time = datetime_from_pb(message.server_time)
    if server_time is None:
        raise ServerInfoError("server_time is before the Unix epoch or out of range")
    return ServerInfo(
        version=message.server_version,
        supported_protocol_versions=list(message.supported_protocol_versions),
        server_time=server_time,
        restricts_encodings=message.restricts_encodings,
        allowed_encodings=list(message.allowed_encodings),
        max_payload_bytes=message.max_payload_bytes,
        max_custom_entries=message.max_custom_entries,
        max_custom_total_bytes=message.max_custom_total_bytes,
        max_custom_key_bytes=message.max_custom_key_bytes,
        max_queue_name_bytes=message.max_queue_name_bytes,
        max_job_type_bytes=message.max_job_type_bytes,
        max_idempotency_key_bytes=message.max_idempotency_key_bytes,
        max_schedule_horizon=timedelta_from_pb(message.max_schedule_horizon),
        max_enqueue_batch=message.max_enqueue_batch,
        max_reserve_batch=message.max_reserve_batch,
        max_reserve_queues=message.max_reserve_queues,
        max_wait_timeout=timedelta_from_pb(message.max_wait_timeout),
        max_lease_duration=timedelta_from_pb(message.max_lease_duration),
        strict_queues=message.strict_queues,
        dead_letter_retention_enabled=message.dead_letter_retention_enabled,
        features=list(message.features),
        cluster=_cluster_from_pb(message.cluster) if message.HasField("cluster") else None,
        max_consume_credits=message.max_consume_credits,
    )


def _cluster_from_pb(message: pb.ClusterInfo) -> ClusterInfo:
    return ClusterInfo(
        node_id=message.node_id,
        role=message.role,
        term=message.term,
        leader_id=message.leader_id if message.HasField("leader_id") else None,
        leader_addr=message.leader_addr,
        last_applied_index=(
            message.last_applied_index if message.HasField("last_applied_index") else None
        ),
        members=[
            ClusterMember(
                id=member.id,
                addr=member.addr,
                voter=member.voter,
                replication_lag=(
                    member.replication_lag if member.HasField("replication_lag") else None
                ),
            )
            for member in message.members
        ],
    )


_OVERLAP_FROM_PB = {
    pb.SCHEDULE_OVERLAP_UNSPECIFIED: ScheduleOverlap.SKIP,
    pb.SCHEDULE_OVERLAP_SKIP: ScheduleOverlap.SKIP,
    pb.SCHEDULE_OVERLAP_ALLOW: ScheduleOverlap.ALLOW,
}
_CATCH_UP_FROM_PB = {
    pb.SCHEDULE_CATCH_UP_UNSPECIFIED: ScheduleCatchUp.LATEST,
    pb.SCHEDULE_CATCH_UP_LATEST: ScheduleCatchUp.LATEST,
    pb.SCHEDULE_CATCH_UP_NONE: ScheduleCatchUp.NONE,
}


def _template_from_pb(message: pb.EnqueueRequest) -> EnqueueRequest:
    return EnqueueRequest(
        message.queue,
        message.job_type,
        payload=(
            Payload(message.payload.data, message.payload.encoding)
            if message.HasField("payload")
            else None
        ),
        priority=message.priority if message.HasField("priority") else None,
        max_attempts=message.max_attempts if message.HasField("max_attempts") else None,
        custom=custom_from_pb(message.custom),
    )


def schedule_from_pb(message: pb.ScheduleDefinition) -> Schedule:
    """A definition from the server; one this client cannot represent raises ValueError."""
    if not message.HasField("job"):
        raise ValueError(f"schedule {message.id!r} has no job")
    try:
        job = _template_from_pb(message.job)
    except (JobConversionError, ValueError) as err:
        raise ValueError(f"schedule {message.id!r} has an invalid job: {err}") from err
    overlap = _OVERLAP_FROM_PB.get(message.overlap)
    catch_up = _CATCH_UP_FROM_PB.get(message.catch_up)
    if overlap is None or catch_up is None:
        raise ValueError(f"schedule {message.id!r} has an unknown overlap or catch-up policy")
    cadence = message.WhichOneof("cadence")
    if cadence == "cron":
        return Schedule(
            message.id,
            job,
            cron=message.cron.expression,
            time_zone=message.cron.time_zone or "UTC",
            overlap=overlap,
            catch_up=catch_up,
        )
    if cadence == "every":
        return Schedule(
            message.id,
            job,
            every=timedelta_from_pb(message.every),
            overlap=overlap,
            catch_up=catch_up,
        )
    raise ValueError(f"schedule {message.id!r} has no cadence")


def _optional_time(message: pb.ScheduleInfo, name: str) -> datetime | None:
    if not message.HasField(name):
        return None
    moment = datetime_from_pb(getattr(message, name))
    if moment is None:
        raise ValueError(f"schedule {message.definition.id!r} has an invalid {name}")
    return moment


def schedule_info_from_pb(message: pb.ScheduleInfo) -> ScheduleInfo:
    """A schedule as the server shows it; a malformed one raises ValueError."""
    if not message.HasField("definition"):
        raise ValueError("a schedule has no definition")
    definition = schedule_from_pb(message.definition)
    created_at = _optional_time(message, "created_at")
    if created_at is None:
        raise ValueError(f"schedule {definition.id!r} has no created_at")
    return ScheduleInfo(
        definition=definition,
        next_fire_at=_optional_time(message, "next_fire_at"),
        last_slot_at=_optional_time(message, "last_slot_at"),
        last_job_id=message.last_job_id if message.HasField("last_job_id") else None,
        fired=message.fired,
        created_at=created_at,
    )


def pause_from_pb(message: pb.QueuePause) -> QueuePause:
    """A pause as the server shows it; an unreadable `until` raises ValueError."""
    until: datetime | None = None
    if message.HasField("until"):
        until = datetime_from_pb(message.until)
        if until is None:
            raise ValueError(f"the pause of queue {message.queue!r} has an invalid until")
    return QueuePause(message.queue, until)
