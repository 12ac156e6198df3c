import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import empty_pb2 as _empty_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ScheduleOverlap(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCHEDULE_OVERLAP_UNSPECIFIED: _ClassVar[ScheduleOverlap]
    SCHEDULE_OVERLAP_SKIP: _ClassVar[ScheduleOverlap]
    SCHEDULE_OVERLAP_ALLOW: _ClassVar[ScheduleOverlap]

class ScheduleCatchUp(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SCHEDULE_CATCH_UP_UNSPECIFIED: _ClassVar[ScheduleCatchUp]
    SCHEDULE_CATCH_UP_LATEST: _ClassVar[ScheduleCatchUp]
    SCHEDULE_CATCH_UP_NONE: _ClassVar[ScheduleCatchUp]

class DeadLetterCause(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DEAD_LETTER_CAUSE_UNSPECIFIED: _ClassVar[DeadLetterCause]
    DEAD_LETTER_CAUSE_ATTEMPTS_EXHAUSTED: _ClassVar[DeadLetterCause]
    DEAD_LETTER_CAUSE_REJECTED: _ClassVar[DeadLetterCause]
    DEAD_LETTER_CAUSE_LEASE_EXPIRED: _ClassVar[DeadLetterCause]
    DEAD_LETTER_CAUSE_ADMIN: _ClassVar[DeadLetterCause]
    DEAD_LETTER_CAUSE_CANCELLED: _ClassVar[DeadLetterCause]
SCHEDULE_OVERLAP_UNSPECIFIED: ScheduleOverlap
SCHEDULE_OVERLAP_SKIP: ScheduleOverlap
SCHEDULE_OVERLAP_ALLOW: ScheduleOverlap
SCHEDULE_CATCH_UP_UNSPECIFIED: ScheduleCatchUp
SCHEDULE_CATCH_UP_LATEST: ScheduleCatchUp
SCHEDULE_CATCH_UP_NONE: ScheduleCatchUp
DEAD_LETTER_CAUSE_UNSPECIFIED: DeadLetterCause
DEAD_LETTER_CAUSE_ATTEMPTS_EXHAUSTED: DeadLetterCause
DEAD_LETTER_CAUSE_REJECTED: DeadLetterCause
DEAD_LETTER_CAUSE_LEASE_EXPIRED: DeadLetterCause
DEAD_LETTER_CAUSE_ADMIN: DeadLetterCause
DEAD_LETTER_CAUSE_CANCELLED: DeadLetterCause

class PrimitiveValue(_message.Message):
    __slots__ = ("string_value", "double_value", "int_value", "bool_value")
    STRING_VALUE_FIELD_NUMBER: _ClassVar[int]
    DOUBLE_VALUE_FIELD_NUMBER: _ClassVar[int]
    INT_VALUE_FIELD_NUMBER: _ClassVar[int]
    BOOL_VALUE_FIELD_NUMBER: _ClassVar[int]
    string_value: str
    double_value: float
    int_value: int
    bool_value: bool
    def __init__(self, string_value: _Optional[str] = ..., double_value: _Optional[float] = ..., int_value: _Optional[int] = ..., bool_value: _Optional[bool] = ...) -> None: ...

class TraceContext(_message.Message):
    __slots__ = ("traceparent", "tracestate")
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    TRACESTATE_FIELD_NUMBER: _ClassVar[int]
    traceparent: str
    tracestate: str
    def __init__(self, traceparent: _Optional[str] = ..., tracestate: _Optional[str] = ...) -> None: ...

class Payload(_message.Message):
    __slots__ = ("data", "encoding")
    DATA_FIELD_NUMBER: _ClassVar[int]
    ENCODING_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    encoding: str
    def __init__(self, data: _Optional[bytes] = ..., encoding: _Optional[str] = ...) -> None: ...

class Job(_message.Message):
    __slots__ = ("id", "job_type", "payload", "priority", "trace_context", "enqueued_at", "attempt", "max_attempts", "lease_expires_at", "custom", "scheduled_at", "queue")
    class CustomEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: PrimitiveValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[PrimitiveValue, _Mapping]] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    JOB_TYPE_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    TRACE_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    ENQUEUED_AT_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    LEASE_EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_AT_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    id: str
    job_type: str
    payload: Payload
    priority: int
    trace_context: TraceContext
    enqueued_at: _timestamp_pb2.Timestamp
    attempt: int
    max_attempts: int
    lease_expires_at: _timestamp_pb2.Timestamp
    custom: _containers.MessageMap[str, PrimitiveValue]
    scheduled_at: _timestamp_pb2.Timestamp
    queue: str
    def __init__(self, id: _Optional[str] = ..., job_type: _Optional[str] = ..., payload: _Optional[_Union[Payload, _Mapping]] = ..., priority: _Optional[int] = ..., trace_context: _Optional[_Union[TraceContext, _Mapping]] = ..., enqueued_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., attempt: _Optional[int] = ..., max_attempts: _Optional[int] = ..., lease_expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., custom: _Optional[_Mapping[str, PrimitiveValue]] = ..., scheduled_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., queue: _Optional[str] = ...) -> None: ...

class EnqueueRequest(_message.Message):
    __slots__ = ("queue", "job_type", "payload", "idempotency_key", "priority", "max_attempts", "trace_context", "custom", "scheduled_at")
    class CustomEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: PrimitiveValue
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[PrimitiveValue, _Mapping]] = ...) -> None: ...
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    JOB_TYPE_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    TRACE_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_AT_FIELD_NUMBER: _ClassVar[int]
    queue: str
    job_type: str
    payload: Payload
    idempotency_key: str
    priority: int
    max_attempts: int
    trace_context: TraceContext
    custom: _containers.MessageMap[str, PrimitiveValue]
    scheduled_at: _timestamp_pb2.Timestamp
    def __init__(self, queue: _Optional[str] = ..., job_type: _Optional[str] = ..., payload: _Optional[_Union[Payload, _Mapping]] = ..., idempotency_key: _Optional[str] = ..., priority: _Optional[int] = ..., max_attempts: _Optional[int] = ..., trace_context: _Optional[_Union[TraceContext, _Mapping]] = ..., custom: _Optional[_Mapping[str, PrimitiveValue]] = ..., scheduled_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class EnqueueResponse(_message.Message):
    __slots__ = ("job_id", "deduplicated")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    DEDUPLICATED_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    deduplicated: bool
    def __init__(self, job_id: _Optional[str] = ..., deduplicated: _Optional[bool] = ...) -> None: ...

class EnqueueBatchRequest(_message.Message):
    __slots__ = ("jobs",)
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[EnqueueRequest]
    def __init__(self, jobs: _Optional[_Iterable[_Union[EnqueueRequest, _Mapping]]] = ...) -> None: ...

class EnqueueBatchResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[JobResult]
    def __init__(self, results: _Optional[_Iterable[_Union[JobResult, _Mapping]]] = ...) -> None: ...

class JobResult(_message.Message):
    __slots__ = ("success", "rejection")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    REJECTION_FIELD_NUMBER: _ClassVar[int]
    success: EnqueueResponse
    rejection: JobRejection
    def __init__(self, success: _Optional[_Union[EnqueueResponse, _Mapping]] = ..., rejection: _Optional[_Union[JobRejection, _Mapping]] = ...) -> None: ...

class EnqueueAtomicResponse(_message.Message):
    __slots__ = ("success", "rejection")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    REJECTION_FIELD_NUMBER: _ClassVar[int]
    success: EnqueueAtomicSuccess
    rejection: BatchValidationFailure
    def __init__(self, success: _Optional[_Union[EnqueueAtomicSuccess, _Mapping]] = ..., rejection: _Optional[_Union[BatchValidationFailure, _Mapping]] = ...) -> None: ...

class EnqueueAtomicSuccess(_message.Message):
    __slots__ = ("responses",)
    RESPONSES_FIELD_NUMBER: _ClassVar[int]
    responses: _containers.RepeatedCompositeFieldContainer[EnqueueResponse]
    def __init__(self, responses: _Optional[_Iterable[_Union[EnqueueResponse, _Mapping]]] = ...) -> None: ...

class BatchValidationFailure(_message.Message):
    __slots__ = ("errors",)
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    errors: _containers.RepeatedCompositeFieldContainer[JobValidationError]
    def __init__(self, errors: _Optional[_Iterable[_Union[JobValidationError, _Mapping]]] = ...) -> None: ...

class JobValidationError(_message.Message):
    __slots__ = ("index", "rejection")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    REJECTION_FIELD_NUMBER: _ClassVar[int]
    index: int
    rejection: JobRejection
    def __init__(self, index: _Optional[int] = ..., rejection: _Optional[_Union[JobRejection, _Mapping]] = ...) -> None: ...

class JobRejection(_message.Message):
    __slots__ = ("unknown_queue", "payload_too_large", "encoding_not_allowed", "job_type_not_allowed", "custom_entries_too_many", "custom_map_too_large", "custom_key_too_long", "queue_name_too_long", "job_type_name_too_long", "idempotency_key_too_long", "scheduled_too_far", "invalid_request", "queue_full", "queue_closing")
    UNKNOWN_QUEUE_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_TOO_LARGE_FIELD_NUMBER: _ClassVar[int]
    ENCODING_NOT_ALLOWED_FIELD_NUMBER: _ClassVar[int]
    JOB_TYPE_NOT_ALLOWED_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_ENTRIES_TOO_MANY_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_MAP_TOO_LARGE_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_KEY_TOO_LONG_FIELD_NUMBER: _ClassVar[int]
    QUEUE_NAME_TOO_LONG_FIELD_NUMBER: _ClassVar[int]
    JOB_TYPE_NAME_TOO_LONG_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_TOO_LONG_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_TOO_FAR_FIELD_NUMBER: _ClassVar[int]
    INVALID_REQUEST_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FULL_FIELD_NUMBER: _ClassVar[int]
    QUEUE_CLOSING_FIELD_NUMBER: _ClassVar[int]
    unknown_queue: UnknownQueue
    payload_too_large: PayloadTooLarge
    encoding_not_allowed: EncodingNotAllowed
    job_type_not_allowed: JobTypeNotAllowed
    custom_entries_too_many: CustomEntriesTooMany
    custom_map_too_large: CustomMapTooLarge
    custom_key_too_long: CustomKeyTooLong
    queue_name_too_long: QueueNameTooLong
    job_type_name_too_long: JobTypeNameTooLong
    idempotency_key_too_long: IdempotencyKeyTooLong
    scheduled_too_far: ScheduledTooFar
    invalid_request: InvalidRequest
    queue_full: QueueFull
    queue_closing: QueueClosing
    def __init__(self, unknown_queue: _Optional[_Union[UnknownQueue, _Mapping]] = ..., payload_too_large: _Optional[_Union[PayloadTooLarge, _Mapping]] = ..., encoding_not_allowed: _Optional[_Union[EncodingNotAllowed, _Mapping]] = ..., job_type_not_allowed: _Optional[_Union[JobTypeNotAllowed, _Mapping]] = ..., custom_entries_too_many: _Optional[_Union[CustomEntriesTooMany, _Mapping]] = ..., custom_map_too_large: _Optional[_Union[CustomMapTooLarge, _Mapping]] = ..., custom_key_too_long: _Optional[_Union[CustomKeyTooLong, _Mapping]] = ..., queue_name_too_long: _Optional[_Union[QueueNameTooLong, _Mapping]] = ..., job_type_name_too_long: _Optional[_Union[JobTypeNameTooLong, _Mapping]] = ..., idempotency_key_too_long: _Optional[_Union[IdempotencyKeyTooLong, _Mapping]] = ..., scheduled_too_far: _Optional[_Union[ScheduledTooFar, _Mapping]] = ..., invalid_request: _Optional[_Union[InvalidRequest, _Mapping]] = ..., queue_full: _Optional[_Union[QueueFull, _Mapping]] = ..., queue_closing: _Optional[_Union[QueueClosing, _Mapping]] = ...) -> None: ...

class UnknownQueue(_message.Message):
    __slots__ = ("queue",)
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    def __init__(self, queue: _Optional[str] = ...) -> None: ...

class PayloadTooLarge(_message.Message):
    __slots__ = ("limit", "actual")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_FIELD_NUMBER: _ClassVar[int]
    limit: int
    actual: int
    def __init__(self, limit: _Optional[int] = ..., actual: _Optional[int] = ...) -> None: ...

class EncodingNotAllowed(_message.Message):
    __slots__ = ("encoding", "allowed")
    ENCODING_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_FIELD_NUMBER: _ClassVar[int]
    encoding: str
    allowed: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, encoding: _Optional[str] = ..., allowed: _Optional[_Iterable[str]] = ...) -> None: ...

class JobTypeNotAllowed(_message.Message):
    __slots__ = ("job_type", "allowed")
    JOB_TYPE_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_FIELD_NUMBER: _ClassVar[int]
    job_type: str
    allowed: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, job_type: _Optional[str] = ..., allowed: _Optional[_Iterable[str]] = ...) -> None: ...

class CustomEntriesTooMany(_message.Message):
    __slots__ = ("limit", "actual")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_FIELD_NUMBER: _ClassVar[int]
    limit: int
    actual: int
    def __init__(self, limit: _Optional[int] = ..., actual: _Optional[int] = ...) -> None: ...

class CustomMapTooLarge(_message.Message):
    __slots__ = ("limit", "actual")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_FIELD_NUMBER: _ClassVar[int]
    limit: int
    actual: int
    def __init__(self, limit: _Optional[int] = ..., actual: _Optional[int] = ...) -> None: ...

class CustomKeyTooLong(_message.Message):
    __slots__ = ("key", "limit", "actual")
    KEY_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_FIELD_NUMBER: _ClassVar[int]
    key: str
    limit: int
    actual: int
    def __init__(self, key: _Optional[str] = ..., limit: _Optional[int] = ..., actual: _Optional[int] = ...) -> None: ...

class QueueNameTooLong(_message.Message):
    __slots__ = ("limit", "actual")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_FIELD_NUMBER: _ClassVar[int]
    limit: int
    actual: int
    def __init__(self, limit: _Optional[int] = ..., actual: _Optional[int] = ...) -> None: ...

class JobTypeNameTooLong(_message.Message):
    __slots__ = ("limit", "actual")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_FIELD_NUMBER: _ClassVar[int]
    limit: int
    actual: int
    def __init__(self, limit: _Optional[int] = ..., actual: _Optional[int] = ...) -> None: ...

class IdempotencyKeyTooLong(_message.Message):
    __slots__ = ("limit", "actual")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_FIELD_NUMBER: _ClassVar[int]
    limit: int
    actual: int
    def __init__(self, limit: _Optional[int] = ..., actual: _Optional[int] = ...) -> None: ...

class ScheduledTooFar(_message.Message):
    __slots__ = ("horizon", "actual")
    HORIZON_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_FIELD_NUMBER: _ClassVar[int]
    horizon: _duration_pb2.Duration
    actual: _timestamp_pb2.Timestamp
    def __init__(self, horizon: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., actual: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class InvalidRequest(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: str
    def __init__(self, message: _Optional[str] = ...) -> None: ...

class QueueFull(_message.Message):
    __slots__ = ("queue", "limit")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    queue: str
    limit: int
    def __init__(self, queue: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class QueueClosing(_message.Message):
    __slots__ = ("queue",)
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    def __init__(self, queue: _Optional[str] = ...) -> None: ...

class ReserveRequest(_message.Message):
    __slots__ = ("queues", "wait_timeout", "lease_duration", "worker_id", "max_jobs")
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    WAIT_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    LEASE_DURATION_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_JOBS_FIELD_NUMBER: _ClassVar[int]
    queues: _containers.RepeatedScalarFieldContainer[str]
    wait_timeout: _duration_pb2.Duration
    lease_duration: _duration_pb2.Duration
    worker_id: str
    max_jobs: int
    def __init__(self, queues: _Optional[_Iterable[str]] = ..., wait_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., lease_duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., worker_id: _Optional[str] = ..., max_jobs: _Optional[int] = ...) -> None: ...

class ReserveResponse(_message.Message):
    __slots__ = ("jobs",)
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    def __init__(self, jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ...) -> None: ...

class AckRequest(_message.Message):
    __slots__ = ("job_id", "attempt", "worker_id")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    attempt: int
    worker_id: str
    def __init__(self, job_id: _Optional[str] = ..., attempt: _Optional[int] = ..., worker_id: _Optional[str] = ...) -> None: ...

class AckResponse(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class ScheduleDefinition(_message.Message):
    __slots__ = ("id", "cron", "every", "job", "overlap", "catch_up")
    ID_FIELD_NUMBER: _ClassVar[int]
    CRON_FIELD_NUMBER: _ClassVar[int]
    EVERY_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_FIELD_NUMBER: _ClassVar[int]
    CATCH_UP_FIELD_NUMBER: _ClassVar[int]
    id: str
    cron: CronCadence
    every: _duration_pb2.Duration
    job: EnqueueRequest
    overlap: ScheduleOverlap
    catch_up: ScheduleCatchUp
    def __init__(self, id: _Optional[str] = ..., cron: _Optional[_Union[CronCadence, _Mapping]] = ..., every: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., job: _Optional[_Union[EnqueueRequest, _Mapping]] = ..., overlap: _Optional[_Union[ScheduleOverlap, str]] = ..., catch_up: _Optional[_Union[ScheduleCatchUp, str]] = ...) -> None: ...

class CronCadence(_message.Message):
    __slots__ = ("expression", "time_zone")
    EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    TIME_ZONE_FIELD_NUMBER: _ClassVar[int]
    expression: str
    time_zone: str
    def __init__(self, expression: _Optional[str] = ..., time_zone: _Optional[str] = ...) -> None: ...

class ScheduleInfo(_message.Message):
    __slots__ = ("definition", "next_fire_at", "last_slot_at", "last_job_id", "fired", "created_at")
    DEFINITION_FIELD_NUMBER: _ClassVar[int]
    NEXT_FIRE_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_SLOT_AT_FIELD_NUMBER: _ClassVar[int]
    LAST_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    FIRED_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    definition: ScheduleDefinition
    next_fire_at: _timestamp_pb2.Timestamp
    last_slot_at: _timestamp_pb2.Timestamp
    last_job_id: str
    fired: int
    created_at: _timestamp_pb2.Timestamp
    def __init__(self, definition: _Optional[_Union[ScheduleDefinition, _Mapping]] = ..., next_fire_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_slot_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., last_job_id: _Optional[str] = ..., fired: _Optional[int] = ..., created_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class UpsertScheduleRequest(_message.Message):
    __slots__ = ("schedule",)
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    schedule: ScheduleDefinition
    def __init__(self, schedule: _Optional[_Union[ScheduleDefinition, _Mapping]] = ...) -> None: ...

class DeleteScheduleRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class DeleteScheduleResponse(_message.Message):
    __slots__ = ("deleted",)
    DELETED_FIELD_NUMBER: _ClassVar[int]
    deleted: bool
    def __init__(self, deleted: _Optional[bool] = ...) -> None: ...

class ListSchedulesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListSchedulesResponse(_message.Message):
    __slots__ = ("schedules",)
    SCHEDULES_FIELD_NUMBER: _ClassVar[int]
    schedules: _containers.RepeatedCompositeFieldContainer[ScheduleInfo]
    def __init__(self, schedules: _Optional[_Iterable[_Union[ScheduleInfo, _Mapping]]] = ...) -> None: ...

class PauseQueueRequest(_message.Message):
    __slots__ = ("queue", "until", "reason")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    queue: str
    until: _timestamp_pb2.Timestamp
    reason: str
    def __init__(self, queue: _Optional[str] = ..., until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., reason: _Optional[str] = ...) -> None: ...

class PauseQueueResponse(_message.Message):
    __slots__ = ("pause",)
    PAUSE_FIELD_NUMBER: _ClassVar[int]
    pause: QueuePause
    def __init__(self, pause: _Optional[_Union[QueuePause, _Mapping]] = ...) -> None: ...

class ResumeQueueRequest(_message.Message):
    __slots__ = ("queue",)
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    def __init__(self, queue: _Optional[str] = ...) -> None: ...

class ResumeQueueResponse(_message.Message):
    __slots__ = ("resumed",)
    RESUMED_FIELD_NUMBER: _ClassVar[int]
    resumed: bool
    def __init__(self, resumed: _Optional[bool] = ...) -> None: ...

class ListPausesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListPausesResponse(_message.Message):
    __slots__ = ("pauses",)
    PAUSES_FIELD_NUMBER: _ClassVar[int]
    pauses: _containers.RepeatedCompositeFieldContainer[QueuePause]
    def __init__(self, pauses: _Optional[_Iterable[_Union[QueuePause, _Mapping]]] = ...) -> None: ...

class QueuePause(_message.Message):
    __slots__ = ("queue", "until")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    queue: str
    until: _timestamp_pb2.Timestamp
    def __init__(self, queue: _Optional[str] = ..., until: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class CancelJobRequest(_message.Message):
    __slots__ = ("job_id", "reason")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    reason: str
    def __init__(self, job_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class CancelJobResponse(_message.Message):
    __slots__ = ("job_id", "was_leased")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    WAS_LEASED_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    was_leased: bool
    def __init__(self, job_id: _Optional[str] = ..., was_leased: _Optional[bool] = ...) -> None: ...

class AckBatchRequest(_message.Message):
    __slots__ = ("acks",)
    ACKS_FIELD_NUMBER: _ClassVar[int]
    acks: _containers.RepeatedCompositeFieldContainer[AckRequest]
    def __init__(self, acks: _Optional[_Iterable[_Union[AckRequest, _Mapping]]] = ...) -> None: ...

class AckBatchResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[AckResult]
    def __init__(self, results: _Optional[_Iterable[_Union[AckResult, _Mapping]]] = ...) -> None: ...

class AckResult(_message.Message):
    __slots__ = ("success", "error")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    success: AckResponse
    error: CallStatus
    def __init__(self, success: _Optional[_Union[AckResponse, _Mapping]] = ..., error: _Optional[_Union[CallStatus, _Mapping]] = ...) -> None: ...

class CallStatus(_message.Message):
    __slots__ = ("code", "message", "cancelled")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    cancelled: bool
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ..., cancelled: _Optional[bool] = ...) -> None: ...

class NackRequest(_message.Message):
    __slots__ = ("job_id", "attempt", "reason", "retry", "worker_id")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RETRY_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    attempt: int
    reason: str
    retry: NackRetry
    worker_id: str
    def __init__(self, job_id: _Optional[str] = ..., attempt: _Optional[int] = ..., reason: _Optional[str] = ..., retry: _Optional[_Union[NackRetry, _Mapping]] = ..., worker_id: _Optional[str] = ...) -> None: ...

class NackRetry(_message.Message):
    __slots__ = ("default", "delay", "dead_letter")
    DEFAULT_FIELD_NUMBER: _ClassVar[int]
    DELAY_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTER_FIELD_NUMBER: _ClassVar[int]
    default: _empty_pb2.Empty
    delay: _duration_pb2.Duration
    dead_letter: _empty_pb2.Empty
    def __init__(self, default: _Optional[_Union[_empty_pb2.Empty, _Mapping]] = ..., delay: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., dead_letter: _Optional[_Union[_empty_pb2.Empty, _Mapping]] = ...) -> None: ...

class NackResponse(_message.Message):
    __slots__ = ("job_id", "dead_lettered")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTERED_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    dead_lettered: bool
    def __init__(self, job_id: _Optional[str] = ..., dead_lettered: _Optional[bool] = ...) -> None: ...

class ExtendRequest(_message.Message):
    __slots__ = ("job_id", "attempt", "lease_duration", "worker_id")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    LEASE_DURATION_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    attempt: int
    lease_duration: _duration_pb2.Duration
    worker_id: str
    def __init__(self, job_id: _Optional[str] = ..., attempt: _Optional[int] = ..., lease_duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., worker_id: _Optional[str] = ...) -> None: ...

class ExtendResponse(_message.Message):
    __slots__ = ("job_id", "lease_expires_at")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    lease_expires_at: _timestamp_pb2.Timestamp
    def __init__(self, job_id: _Optional[str] = ..., lease_expires_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class DeadLetterRecord(_message.Message):
    __slots__ = ("job", "cause", "failed_at", "final_attempt", "last_reason")
    JOB_FIELD_NUMBER: _ClassVar[int]
    CAUSE_FIELD_NUMBER: _ClassVar[int]
    FAILED_AT_FIELD_NUMBER: _ClassVar[int]
    FINAL_ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    LAST_REASON_FIELD_NUMBER: _ClassVar[int]
    job: Job
    cause: DeadLetterCause
    failed_at: _timestamp_pb2.Timestamp
    final_attempt: int
    last_reason: str
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ..., cause: _Optional[_Union[DeadLetterCause, str]] = ..., failed_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., final_attempt: _Optional[int] = ..., last_reason: _Optional[str] = ...) -> None: ...

class DrainDeadLettersRequest(_message.Message):
    __slots__ = ("queue", "max")
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    queue: str
    max: int
    def __init__(self, queue: _Optional[str] = ..., max: _Optional[int] = ...) -> None: ...

class DrainDeadLettersResponse(_message.Message):
    __slots__ = ("records",)
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[DeadLetterRecord]
    def __init__(self, records: _Optional[_Iterable[_Union[DeadLetterRecord, _Mapping]]] = ...) -> None: ...

class GetServerInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetServerInfoResponse(_message.Message):
    __slots__ = ("server_version", "supported_protocol_versions", "server_time", "restricts_encodings", "allowed_encodings", "max_payload_bytes", "max_custom_entries", "max_custom_total_bytes", "max_custom_key_bytes", "max_queue_name_bytes", "max_job_type_bytes", "max_idempotency_key_bytes", "max_schedule_horizon", "max_enqueue_batch", "max_reserve_batch", "max_reserve_queues", "max_wait_timeout", "max_lease_duration", "strict_queues", "dead_letter_retention_enabled", "features", "cluster", "max_consume_credits")
    SERVER_VERSION_FIELD_NUMBER: _ClassVar[int]
    SUPPORTED_PROTOCOL_VERSIONS_FIELD_NUMBER: _ClassVar[int]
    SERVER_TIME_FIELD_NUMBER: _ClassVar[int]
    RESTRICTS_ENCODINGS_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_ENCODINGS_FIELD_NUMBER: _ClassVar[int]
    MAX_PAYLOAD_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_CUSTOM_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    MAX_CUSTOM_TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_CUSTOM_KEY_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_QUEUE_NAME_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_JOB_TYPE_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_IDEMPOTENCY_KEY_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_SCHEDULE_HORIZON_FIELD_NUMBER: _ClassVar[int]
    MAX_ENQUEUE_BATCH_FIELD_NUMBER: _ClassVar[int]
    MAX_RESERVE_BATCH_FIELD_NUMBER: _ClassVar[int]
    MAX_RESERVE_QUEUES_FIELD_NUMBER: _ClassVar[int]
    MAX_WAIT_TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    MAX_LEASE_DURATION_FIELD_NUMBER: _ClassVar[int]
    STRICT_QUEUES_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTER_RETENTION_ENABLED_FIELD_NUMBER: _ClassVar[int]
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    MAX_CONSUME_CREDITS_FIELD_NUMBER: _ClassVar[int]
    server_version: str
    supported_protocol_versions: _containers.RepeatedScalarFieldContainer[str]
    server_time: _timestamp_pb2.Timestamp
    restricts_encodings: bool
    allowed_encodings: _containers.RepeatedScalarFieldContainer[str]
    max_payload_bytes: int
    max_custom_entries: int
    max_custom_total_bytes: int
    max_custom_key_bytes: int
    max_queue_name_bytes: int
    max_job_type_bytes: int
    max_idempotency_key_bytes: int
    max_schedule_horizon: _duration_pb2.Duration
    max_enqueue_batch: int
    max_reserve_batch: int
    max_reserve_queues: int
    max_wait_timeout: _duration_pb2.Duration
    max_lease_duration: _duration_pb2.Duration
    strict_queues: bool
    dead_letter_retention_enabled: bool
    features: _containers.RepeatedScalarFieldContainer[str]
    cluster: ClusterInfo
    max_consume_credits: int
    def __init__(self, server_version: _Optional[str] = ..., supported_protocol_versions: _Optional[_Iterable[str]] = ..., server_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., restricts_encodings: _Optional[bool] = ..., allowed_encodings: _Optional[_Iterable[str]] = ..., max_payload_bytes: _Optional[int] = ..., max_custom_entries: _Optional[int] = ..., max_custom_total_bytes: _Optional[int] = ..., max_custom_key_bytes: _Optional[int] = ..., max_queue_name_bytes: _Optional[int] = ..., max_job_type_bytes: _Optional[int] = ..., max_idempotency_key_bytes: _Optional[int] = ..., max_schedule_horizon: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., max_enqueue_batch: _Optional[int] = ..., max_reserve_batch: _Optional[int] = ..., max_reserve_queues: _Optional[int] = ..., max_wait_timeout: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., max_lease_duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., strict_queues: _Optional[bool] = ..., dead_letter_retention_enabled: _Optional[bool] = ..., features: _Optional[_Iterable[str]] = ..., cluster: _Optional[_Union[ClusterInfo, _Mapping]] = ..., max_consume_credits: _Optional[int] = ...) -> None: ...

class ClusterInfo(_message.Message):
    __slots__ = ("node_id", "role", "term", "leader_id", "leader_addr", "last_applied_index", "members")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    TERM_FIELD_NUMBER: _ClassVar[int]
    LEADER_ID_FIELD_NUMBER: _ClassVar[int]
    LEADER_ADDR_FIELD_NUMBER: _ClassVar[int]
    LAST_APPLIED_INDEX_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    node_id: int
    role: str
    term: int
    leader_id: int
    leader_addr: str
    last_applied_index: int
    members: _containers.RepeatedCompositeFieldContainer[ClusterMember]
    def __init__(self, node_id: _Optional[int] = ..., role: _Optional[str] = ..., term: _Optional[int] = ..., leader_id: _Optional[int] = ..., leader_addr: _Optional[str] = ..., last_applied_index: _Optional[int] = ..., members: _Optional[_Iterable[_Union[ClusterMember, _Mapping]]] = ...) -> None: ...

class ClusterMember(_message.Message):
    __slots__ = ("id", "addr", "voter", "replication_lag")
    ID_FIELD_NUMBER: _ClassVar[int]
    ADDR_FIELD_NUMBER: _ClassVar[int]
    VOTER_FIELD_NUMBER: _ClassVar[int]
    REPLICATION_LAG_FIELD_NUMBER: _ClassVar[int]
    id: int
    addr: str
    voter: bool
    replication_lag: int
    def __init__(self, id: _Optional[int] = ..., addr: _Optional[str] = ..., voter: _Optional[bool] = ..., replication_lag: _Optional[int] = ...) -> None: ...

class ConsumeRequest(_message.Message):
    __slots__ = ("open", "credits", "settles")
    OPEN_FIELD_NUMBER: _ClassVar[int]
    CREDITS_FIELD_NUMBER: _ClassVar[int]
    SETTLES_FIELD_NUMBER: _ClassVar[int]
    open: ConsumeOpen
    credits: int
    settles: _containers.RepeatedCompositeFieldContainer[ConsumeSettle]
    def __init__(self, open: _Optional[_Union[ConsumeOpen, _Mapping]] = ..., credits: _Optional[int] = ..., settles: _Optional[_Iterable[_Union[ConsumeSettle, _Mapping]]] = ...) -> None: ...

class ConsumeOpen(_message.Message):
    __slots__ = ("queues", "lease_duration", "worker_id", "credits")
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    LEASE_DURATION_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    CREDITS_FIELD_NUMBER: _ClassVar[int]
    queues: _containers.RepeatedScalarFieldContainer[str]
    lease_duration: _duration_pb2.Duration
    worker_id: str
    credits: int
    def __init__(self, queues: _Optional[_Iterable[str]] = ..., lease_duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., worker_id: _Optional[str] = ..., credits: _Optional[int] = ...) -> None: ...

class ConsumeSettle(_message.Message):
    __slots__ = ("id", "ack", "nack", "extend")
    ID_FIELD_NUMBER: _ClassVar[int]
    ACK_FIELD_NUMBER: _ClassVar[int]
    NACK_FIELD_NUMBER: _ClassVar[int]
    EXTEND_FIELD_NUMBER: _ClassVar[int]
    id: int
    ack: AckRequest
    nack: NackRequest
    extend: ExtendRequest
    def __init__(self, id: _Optional[int] = ..., ack: _Optional[_Union[AckRequest, _Mapping]] = ..., nack: _Optional[_Union[NackRequest, _Mapping]] = ..., extend: _Optional[_Union[ExtendRequest, _Mapping]] = ...) -> None: ...

class ConsumeResponse(_message.Message):
    __slots__ = ("jobs", "results", "cancelled")
    JOBS_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    results: _containers.RepeatedCompositeFieldContainer[ConsumeResult]
    cancelled: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ..., results: _Optional[_Iterable[_Union[ConsumeResult, _Mapping]]] = ..., cancelled: _Optional[_Iterable[str]] = ...) -> None: ...

class ConsumeResult(_message.Message):
    __slots__ = ("id", "ack", "nack", "extend", "error")
    ID_FIELD_NUMBER: _ClassVar[int]
    ACK_FIELD_NUMBER: _ClassVar[int]
    NACK_FIELD_NUMBER: _ClassVar[int]
    EXTEND_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    id: int
    ack: AckResponse
    nack: NackResponse
    extend: ExtendResponse
    error: CallStatus
    def __init__(self, id: _Optional[int] = ..., ack: _Optional[_Union[AckResponse, _Mapping]] = ..., nack: _Optional[_Union[NackResponse, _Mapping]] = ..., extend: _Optional[_Union[ExtendResponse, _Mapping]] = ..., error: _Optional[_Union[CallStatus, _Mapping]] = ...) -> None: ...
