"""The values producers and workers pass to and get from the client.

Requests (`EnqueueRequest`, `ReserveOptions`, `Schedule`) check what can be checked without the
server: non-empty names, priority 0-9, positive leases, one cadence per schedule. Everything else
(sizes, allowed encodings, cron syntax, time zones, ...) is the server's to enforce. Results
(`EnqueueAck`, `Job`, `JobCtx`, `ServerInfo`, `DeadLetterRecord`, `ScheduleInfo`, `QueuePause`)
are built by the client from the server's answers.

All datetimes are timezone-aware UTC; a naive datetime given to the client is taken as UTC.
Durations are `datetime.timedelta`.
"""

from __future__ import annotations

import contextlib
import enum
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, ClassVar

from . import _otel

if TYPE_CHECKING:
    from opentelemetry.trace import SpanContext

    from .client import Lease

__all__ = [
    "ALL_QUEUES",
    "DeadLetterCause",
    "DeadLetterRecord",
    "EnqueueAck",
    "EnqueueRequest",
    "Job",
    "JobCtx",
    "Payload",
    "Primitive",
    "Priority",
    "PriorityOutOfRangeError",
    "QueuePause",
    "ReserveOptions",
    "Schedule",
    "ScheduleCatchUp",
    "ScheduleInfo",
    "ScheduleOverlap",
    "ServerInfo",
    "TraceContext",
    "TraceContextError",
]

# A custom metadata value. On the wire a bool stays a bool and an int stays an int.
Primitive = str | int | float | bool

_MIN_LEASE = timedelta(milliseconds=1)


def as_utc(moment: datetime) -> datetime:
    """`moment` as an aware UTC datetime; a naive one is taken to be UTC already."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc)


@dataclass(frozen=True)
class Payload:
    """The job's opaque bytes and a hint of how to read them (e.g. `application/json`).

    The server never looks inside. Leave the payload out (None) rather than sending empty bytes.
    """

    data: bytes
    encoding: str


class PriorityOutOfRangeError(ValueError):
    """A priority outside 0-9 (a bool is not a priority either)."""

    def __init__(self, value: object) -> None:
        super().__init__(f"a priority is an int from 0 to 9, not {value!r}")
        self.value = value


@dataclass(frozen=True, order=True)
class Priority:
    """A job priority from 0 (lowest, the default) to 9 (highest). Higher is reserved first."""

    value: int

    P0: ClassVar[Priority]
    P1: ClassVar[Priority]
    P2: ClassVar[Priority]
    P3: ClassVar[Priority]
    P4: ClassVar[Priority]
    P5: ClassVar[Priority]
    P6: ClassVar[Priority]
    P7: ClassVar[Priority]
    P8: ClassVar[Priority]
    P9: ClassVar[Priority]
    MIN: ClassVar[Priority]
    MAX: ClassVar[Priority]

    def __post_init__(self) -> None:
        value = self.value
        if type(value) is bool or not isinstance(value, int) or not 0 <= value <= 9:
            raise PriorityOutOfRangeError(value)

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value

    def __str__(self) -> str:
        return str(self.value)


for _level in range(10):
    setattr(Priority, f"P{_level}", Priority(_level))
Priority.MIN = Priority.P0
Priority.MAX = Priority.P9


class TraceContextError(ValueError):
    """A traceparent that is not valid W3C trace context."""


@dataclass(frozen=True)
class TraceContext:
    """W3C trace context carried with a job from its producer to its worker.

    `traceparent` is `version-trace_id-span_id-flags`: 2, 32, 16 and 2 hex digits, with trace and
    span ids not all zeros. `tracestate` is the optional vendor list that travels with it.
    """

    traceparent: str
    tracestate: str | None = None

    def __post_init__(self) -> None:
        if (
            not isinstance(self.traceparent, str)
            or _otel.parse_traceparent(self.traceparent) is None
        ):
            raise TraceContextError(
                f"invalid traceparent {self.traceparent!r}: expected "
                "'<2 hex>-<32 hex trace id>-<16 hex span id>-<2 hex flags>' with non-zero ids"
            )

    @property
    def trace_id(self) -> str:
        """The 32-hex-digit trace id, lower case."""
        return self.traceparent.split("-")[1].lower()

    @property
    def span_id(self) -> str:
        """The 16-hex-digit id of the producer's span, lower case."""
        return self.traceparent.split("-")[2].lower()

    @classmethod
    def from_current_otel(cls) -> TraceContext | None:
        """The active OpenTelemetry span's context, or None (no valid span, or no OTel)."""
        current = _otel.current_trace_context()
        if current is None:
            return None
        return cls(current[0], current[1])

    def attach_to_otel(self) -> contextlib.AbstractContextManager[None]:
        """A context manager that makes this context the current (remote) parent while open.

        Without OpenTelemetry it does nothing.
        """
        if not _otel.enabled():
            return contextlib.nullcontext()
        return _otel.attach_remote(self.traceparent, self.tracestate)

    def otel_span_context(self) -> SpanContext | None:
        """This context as an OpenTelemetry `SpanContext`, or None without OpenTelemetry."""
        return _otel.remote_span_context(self.traceparent, self.tracestate)


@dataclass
class EnqueueRequest:
    """One job to enqueue. Fields left as None take the queue's defaults on the server.

    `priority` may be a `Priority` or a bare int 0-9. `custom` holds primitive metadata
    (str, int, float, bool). `scheduled_at` delays delivery until then; a time in the past means
    now. `idempotency_key` makes the server drop duplicates of this job within its dedup window.
    """

    queue: str
    job_type: str
    payload: Payload | None = None
    idempotency_key: str | None = None
    priority: Priority | int | None = None
    max_attempts: int | None = None
    custom: dict[str, Primitive] = field(default_factory=dict)
    trace_context: TraceContext | None = None
    scheduled_at: datetime | None = None

    def __post_init__(self) -> None:
        if not self.queue:
            raise ValueError("queue must be a non-empty name")
        if not self.job_type:
            raise ValueError("job type (job_type) must be a non-empty name")
        if self.priority is not None and not isinstance(self.priority, Priority):
            self.priority = Priority(self.priority)


@dataclass(frozen=True)
class EnqueueAck:
    """An accepted job: its id, and whether it was a duplicate of one already enqueued."""

    job_id: str
    deduplicated: bool


@dataclass
class JobCtx:
    """Everything about a reserved job except its payload, and the lease to settle it with.

    `lease_expires_at` is the lease deadline the job was delivered with; `lease_deadline`
    follows the extensions.
    """

    id: str
    queue: str
    job_type: str
    priority: Priority
    attempt: int
    max_attempts: int
    enqueued_at: datetime
    custom: dict[str, Primitive]
    trace_context: TraceContext | None
    lease_expires_at: datetime
    scheduled_at: datetime | None = None
    _lease: Lease | None = field(default=None, repr=False, compare=False)

    @property
    def lease_deadline(self) -> datetime:
        """The latest lease deadline the server granted: `lease_expires_at` (the deadline at
        delivery) until an extend moves it."""
        return self._lease.expires_at if self._lease is not None else self.lease_expires_at

    async def extend(self, extension: timedelta) -> datetime:
        """Move this job's lease deadline to now + `extension`; returns the new deadline."""
        lease = self._lease
        if lease is None:
            raise RuntimeError("this JobCtx has no lease (it was not returned by reserve)")
        if lease.extend_via is not None:
            return await lease.extend_via(self, extension)
        return await lease.client.extend(self, extension)

    def __str__(self) -> str:
        return (
            f"JobCtx(id={self.id}, job_type={self.job_type}, "
            f"attempt={self.attempt}/{self.max_attempts}, priority={self.priority})"
        )


@dataclass(frozen=True)
class Job:
    """A reserved job: its payload (None if it has none) and its context."""

    payload: Payload | None
    ctx: JobCtx


@dataclass(frozen=True)
class ReserveOptions:
    """What to reserve: from which queues (in order), for how long, how many at once.

    `wait_timeout` is how long the server may hold the call open waiting for a job (a long poll;
    zero returns at once). `max_jobs` is the most jobs one call returns (server default 1).
    """

    queues: list[str]
    lease_duration: timedelta
    wait_timeout: timedelta = timedelta(seconds=30)
    worker_id: str | None = None
    max_jobs: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.queues, str):
            raise TypeError(f"queues must be a list of queue names, not the string {self.queues!r}")
        queues = list(self.queues)
        if not queues:
            raise ValueError("reserve needs at least one queue")
        for index, name in enumerate(queues):
            if not isinstance(name, str) or not name:
                raise ValueError(f"queue name at index {index} must be a non-empty string")
        object.__setattr__(self, "queues", queues)
        if self.lease_duration < _MIN_LEASE:
            raise ValueError("lease_duration must be at least 1 ms")
        if self.wait_timeout < timedelta(0):
            raise ValueError("wait_timeout must not be negative")
        if self.worker_id is not None and not self.worker_id:
            raise ValueError("worker_id must be a non-empty string when it is set")
        if self.max_jobs is not None and self.max_jobs < 1:
            raise ValueError("max_jobs must be at least 1")


@dataclass(frozen=True)
class ClusterMember:
    """A member of the cluster, as the answering node knows it."""

    id: int
    #: Its client address (``host:port``).
    addr: str
    #: A voter counts towards the quorum; a learner only receives entries.
    voter: bool
    #: Known on the leader only: how many entries of the leader's log this member lacks.
    replication_lag: int | None = None


@dataclass(frozen=True)
class ClusterInfo:
    """A cluster as the answering node sees it (every node answers, leader or not)."""

    node_id: int
    #: ``"leader"``, ``"follower"``, ``"candidate"``, ``"learner"`` or ``"shutdown"``.
    role: str
    #: The Raft term: it grows with every election.
    term: int
    #: The leader's node id, when a leader is known.
    leader_id: int | None = None
    #: The leader's client address (``host:port``), when a leader is known; else ``""``.
    leader_addr: str = ""
    #: The last log entry this node has applied to its state.
    last_applied_index: int | None = None
    members: list[ClusterMember] = field(default_factory=list)

    @property
    def is_leader(self) -> bool:
        """Whether the answering node is the leader."""
        return self.role == "leader"


@dataclass(frozen=True)
class ServerInfo:
    """The server's version, the protocol versions it speaks, its clock and its limits."""

    version: str
    supported_protocol_versions: list[str]
    server_time: datetime
    restricts_encodings: bool
    allowed_encodings: list[str]
    max_payload_bytes: int
    max_custom_entries: int
    max_custom_total_bytes: int
    max_custom_key_bytes: int
    max_queue_name_bytes: int
    max_job_type_bytes: int
    max_idempotency_key_bytes: int
    max_schedule_horizon: timedelta
    max_enqueue_batch: int
    max_reserve_batch: int
    max_reserve_queues: int
    max_wait_timeout: timedelta
    max_lease_duration: timedelta
    strict_queues: bool
    dead_letter_retention_enabled: bool
    #: What the server offers beyond the 0.1 protocol, by name (``"ack_batch"``,
    #: ``"cancel"``, ``"schedules"``, ``"pause"``, ``"consume"``, ...); empty on 0.1.
    features: list[str] = field(default_factory=list)
    #: The answering node's view of its cluster; ``None`` on a single node (and on 0.1).
    cluster: ClusterInfo | None = None
    #: The most credits a Consume stream may have outstanding; 0 from a server without the
    #: feature ``"consume"``.
    max_consume_credits: int = 0


class DeadLetterCause(str, enum.Enum):
    """Why a job ended in the dead-letter queue."""

    UNSPECIFIED = "unspecified"
    ATTEMPTS_EXHAUSTED = "attempts_exhausted"
    REJECTED = "rejected"
    LEASE_EXPIRED = "lease_expired"
    ADMIN = "admin"
    CANCELLED = "cancelled"  # by `SeppClient.cancel` (or the admin API); a server after 0.1


@dataclass(frozen=True)
class DeadLetterRecord:
    """A dead-lettered job as drained from the server, with why and when it failed."""

    queue: str
    job_id: str
    job_type: str
    payload: Payload | None
    priority: Priority
    max_attempts: int
    custom: dict[str, Primitive]
    trace_context: TraceContext | None
    enqueued_at: datetime
    scheduled_at: datetime | None
    cause: DeadLetterCause
    failed_at: datetime
    final_attempt: int
    last_reason: str | None

    def to_enqueue_request(self) -> EnqueueRequest:
        """A fresh request that replays this job on the same queue, to run at once.

        It keeps the type, payload, priority, max_attempts, custom metadata and trace context. It
        sets no idempotency key (the original key may still be remembered and would swallow the
        replay) and no scheduled time. A max_attempts of 0 becomes None, the queue default.
        """
        return EnqueueRequest(
            self.queue,
            self.job_type,
            payload=self.payload,
            priority=self.priority,
            max_attempts=self.max_attempts or None,
            custom=dict(self.custom),
            trace_context=self.trace_context,
        )


# --------------------------------------------------------------------------------------------
# Recurring schedules
# --------------------------------------------------------------------------------------------

_MAX_SCHEDULE_ID_BYTES = 128
_MIN_EVERY = timedelta(seconds=1)


class ScheduleOverlap(str, enum.Enum):
    """What a slot does while the schedule's previous job is still queued or running."""

    SKIP = "skip"  # fire nothing for this slot (the server's default)
    ALLOW = "allow"  # fire it anyway


class ScheduleCatchUp(str, enum.Enum):
    """What the server does with slots it found more than 60 s late (missed, e.g. while down)."""

    LATEST = "latest"  # fire the latest missed slot once (the server's default)
    NONE = "none"  # fire none of them


@dataclass(frozen=True)
class Schedule:
    """A recurring schedule: the server enqueues `job` once per slot of its cadence.

    Give exactly one cadence: `cron` (5 fields, or 6 with seconds first) read in `time_zone` (an
    IANA name such as ``"Europe/Zurich"``), or `every` (at least 1 s, counted from when the
    schedule was created or last replaced). `id` (1 to 128 bytes, no control characters) names
    the schedule; upserting the same id replaces it. `job` is the template of every job fired;
    it must not set `idempotency_key`, `trace_context` or `scheduled_at` (each slot's job gets an
    id derived from the schedule and the slot instead). The cron syntax, the time zone and what
    the queue accepts are checked by the server.
    """

    id: str
    job: EnqueueRequest
    cron: str | None = None
    time_zone: str = "UTC"
    every: timedelta | None = None
    overlap: ScheduleOverlap = ScheduleOverlap.SKIP
    catch_up: ScheduleCatchUp = ScheduleCatchUp.LATEST

    def __post_init__(self) -> None:
        check_schedule_id(self.id)
        if not isinstance(self.job, EnqueueRequest):
            raise TypeError(f"job must be an EnqueueRequest, not {type(self.job).__name__}")
        if (self.cron is None) == (self.every is None):
            raise ValueError("a schedule needs exactly one cadence: cron or every")
        if self.cron is not None:
            if not isinstance(self.cron, str) or not self.cron.strip():
                raise ValueError("cron must be a non-empty cron expression")
            if not isinstance(self.time_zone, str):
                raise TypeError("time_zone must be a string (an IANA time zone name)")
        if self.every is not None:
            if not isinstance(self.every, timedelta):
                raise TypeError(f"every must be a timedelta, not {type(self.every).__name__}")
            if self.every < _MIN_EVERY:
                raise ValueError(f"every must be at least 1 s, not {self.every}")
            if self.time_zone != "UTC":
                raise ValueError("time_zone goes with cron, not with every")
        job = self.job
        for name in ("idempotency_key", "trace_context", "scheduled_at"):
            if getattr(job, name) is not None:
                raise ValueError(f"a schedule's job must not set {name}")
        object.__setattr__(self, "overlap", ScheduleOverlap(self.overlap))
        object.__setattr__(self, "catch_up", ScheduleCatchUp(self.catch_up))


def check_schedule_id(schedule_id: str) -> None:
    """Raise ValueError unless `schedule_id` is 1 to 128 bytes (UTF-8), no control characters."""
    if not isinstance(schedule_id, str):
        raise TypeError(f"a schedule id is a string, not {type(schedule_id).__name__}")
    if not schedule_id:
        raise ValueError("a schedule id must not be empty")
    size = len(schedule_id.encode("utf-8"))
    if size > _MAX_SCHEDULE_ID_BYTES:
        raise ValueError(f"a schedule id is at most {_MAX_SCHEDULE_ID_BYTES} bytes, not {size}")
    if any(unicodedata.category(char) == "Cc" for char in schedule_id):
        raise ValueError(f"a schedule id must not contain control characters: {schedule_id!r}")


@dataclass(frozen=True)
class ScheduleInfo:
    """A schedule as the server keeps it: its definition and what it has done.

    `next_fire_at` is the next slot (None if the cadence has no further slot). `last_slot_at` is
    the latest slot the server has handled and `last_job_id` the last job the schedule fired
    (each None before there is one). `fired` counts the jobs fired so far. `created_at` is when
    the schedule was created or last replaced (an interval schedule's slots count from it);
    replacing keeps `fired` and the last job.
    """

    definition: Schedule
    next_fire_at: datetime | None
    last_slot_at: datetime | None
    last_job_id: str | None
    fired: int
    created_at: datetime

    @property
    def id(self) -> str:
        """The schedule's id (`definition.id`)."""
        return self.definition.id


# --------------------------------------------------------------------------------------------
# Pausing queues
# --------------------------------------------------------------------------------------------

#: The queue name that stands for every queue in `pause_queue` and `resume_queue` (also queues
#: that do not exist yet), and that `QueuePause.queue` holds for the pause of every queue.
ALL_QUEUES = ""


@dataclass(frozen=True)
class QueuePause:
    """A paused queue: reserves skip it until `until` (None: until it is resumed).

    `queue` is `ALL_QUEUES` (the empty string) for the pause of every queue.
    """

    queue: str
    until: datetime | None = None

    @property
    def all_queues(self) -> bool:
        """Whether this is the pause of every queue."""
        return self.queue == ALL_QUEUES
