"""Every error this client raises, the rejection values the server returns, and status mapping.

Two kinds of failure are kept apart on purpose:

* **Exceptions** (`SeppError` and its subclasses) are raised when a call could not do its job:
  the transport failed, the server answered with an error status, the response made no sense, or
  the caller asked for something invalid.
* **Rejections** (`JobRejection` and its subclasses) are *values*: the server looked at one job
  and refused it (its queue is full, its payload too large, ...). `enqueue_batch` returns them in
  the result list; `enqueue` and `enqueue_atomic` wrap them in `JobRejectedError` and
  `BatchValidationError`.

A gRPC status is turned into an exception in exactly one place per family of calls:
`client_error_from_rpc` (every call), `lease_error_from_rpc` (ack, nack, extend),
`reserve_error_from_rpc` (reserve), `cancel_error_from_rpc` (cancel) and
`schedule_error_from_rpc` (upsert_schedule, delete_schedule, list_schedules).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

import grpc

__all__ = [
    "CANCELLED_MESSAGE",
    "CANCELLED_TRAILER",
    "KEYLESS_ENQUEUE_RETRYABLE_CODES",
    "RETRYABLE_CODES",
    "AttemptMismatchError",
    "BatchResultCountMismatchError",
    "BatchValidationError",
    "ClientError",
    "ConnectError",
    "CustomEntriesTooMany",
    "CustomKeyTooLong",
    "CustomMapTooLarge",
    "EmptyBatchError",
    "EncodingNotAllowed",
    "IdempotencyKeyTooLong",
    "InvalidApiKeyError",
    "InvalidRequest",
    "InvalidRequestError",
    "JobCancelledError",
    "JobConversionError",
    "JobDeadLetteredError",
    "JobNotFoundError",
    "JobRejectedError",
    "JobRejection",
    "JobTypeNameTooLong",
    "JobTypeNotAllowed",
    "JobValidationError",
    "LeaseError",
    "MalformedJobError",
    "MalformedResponseError",
    "MalformedServerInfoError",
    "OverloadedError",
    "PayloadTooLarge",
    "QueueClosing",
    "QueueFull",
    "QueueNameTooLong",
    "ReserveError",
    "ScheduledTooFar",
    "ScheduleLimitError",
    "SeppError",
    "ServerInfoError",
    "ServerInternalError",
    "TransportError",
    "UnauthenticatedError",
    "UnexpectedStatusError",
    "UnknownQueue",
    "UnknownQueuesError",
    "UnknownRejection",
    "cancel_error_from_rpc",
    "client_error_from_rpc",
    "lease_error_from_rpc",
    "reserve_error_from_rpc",
    "schedule_error_from_rpc",
]

# Status codes a retry can cure: the server was unreachable, slow, busy or the call lost a race.
RETRYABLE_CODES: frozenset[grpc.StatusCode] = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.ABORTED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
    }
)

# The subset that is safe for an enqueue whose jobs are not all protected by an idempotency key.
# DEADLINE_EXCEEDED and ABORTED are left out because the server may have committed the jobs
# before the answer was lost, and a retry would then add them a second time.
KEYLESS_ENQUEUE_RETRYABLE_CODES: frozenset[grpc.StatusCode] = frozenset(
    {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED}
)


# --------------------------------------------------------------------------------------------
# Rejections (values, not exceptions)
# --------------------------------------------------------------------------------------------


class JobRejection:
    """Why the server refused one job. A value: compare it, match on its type, log it."""

    __slots__ = ()

    @property
    def message(self) -> str:
        """A human-readable sentence describing the rejection."""
        raise NotImplementedError

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class UnknownQueue(JobRejection):
    """The queue is not declared and the server runs in strict mode."""

    queue: str

    @property
    def message(self) -> str:
        return f"queue {self.queue!r} is not declared and the server only accepts declared queues"


@dataclass(frozen=True)
class PayloadTooLarge(JobRejection):
    """The payload is bigger than the queue allows."""

    limit: int
    actual: int

    @property
    def message(self) -> str:
        return f"payload size {self.actual} bytes is over the queue's limit of {self.limit} bytes"


@dataclass(frozen=True)
class EncodingNotAllowed(JobRejection):
    """The payload's encoding is not in the queue's allowed list."""

    encoding: str
    allowed: list[str] = field(default_factory=list)

    @property
    def message(self) -> str:
        return f"payload encoding {self.encoding!r} is not allowed (allowed: {self.allowed})"


@dataclass(frozen=True)
class JobTypeNotAllowed(JobRejection):
    """The queue accepts only some job types and this is not one of them."""

    job_type: str
    allowed: list[str] = field(default_factory=list)

    @property
    def message(self) -> str:
        return f"job_type {self.job_type!r} is not allowed on this queue (allowed: {self.allowed})"


@dataclass(frozen=True)
class CustomEntriesTooMany(JobRejection):
    """The custom metadata map has more entries than allowed."""

    limit: int
    actual: int

    @property
    def message(self) -> str:
        return f"custom map has {self.actual} entries; the limit is {self.limit}"


@dataclass(frozen=True)
class CustomMapTooLarge(JobRejection):
    """The custom metadata map is bigger, in bytes, than allowed."""

    limit: int
    actual: int

    @property
    def message(self) -> str:
        return f"custom map takes {self.actual} bytes; the limit is {self.limit}"


@dataclass(frozen=True)
class CustomKeyTooLong(JobRejection):
    """One custom metadata key is longer than allowed."""

    key: str
    limit: int
    actual: int

    @property
    def message(self) -> str:
        return f"custom key {self.key!r} takes {self.actual} bytes; the limit is {self.limit}"


@dataclass(frozen=True)
class QueueNameTooLong(JobRejection):
    """The queue name is longer than allowed."""

    limit: int
    actual: int

    @property
    def message(self) -> str:
        return f"queue name takes {self.actual} bytes; the limit is {self.limit}"


@dataclass(frozen=True)
class JobTypeNameTooLong(JobRejection):
    """The job type is longer than allowed."""

    limit: int
    actual: int

    @property
    def message(self) -> str:
        return f"job_type takes {self.actual} bytes; the limit is {self.limit}"


@dataclass(frozen=True)
class IdempotencyKeyTooLong(JobRejection):
    """The idempotency key is longer than allowed."""

    limit: int
    actual: int

    @property
    def message(self) -> str:
        return f"idempotency_key takes {self.actual} bytes; the limit is {self.limit}"


@dataclass(frozen=True)
class ScheduledTooFar(JobRejection):
    """`scheduled_at` lies further ahead than the queue's schedule horizon."""

    horizon: timedelta
    actual: datetime

    @property
    def message(self) -> str:
        return (
            f"scheduled_at {self.actual.isoformat()} is further ahead than the "
            f"schedule horizon of {self.horizon}"
        )


@dataclass(frozen=True)
class InvalidRequest(JobRejection):
    """The job is malformed in a way the other reasons do not cover (e.g. an empty custom key)."""

    detail: str

    @property
    def message(self) -> str:
        return f"invalid job: {self.detail}"


@dataclass(frozen=True)
class QueueFull(JobRejection):
    """The queue holds as many jobs as it may. Retrying later can succeed."""

    queue: str
    limit: int

    @property
    def message(self) -> str:
        return f"queue {self.queue!r} is full (it holds at most {self.limit} jobs)"


@dataclass(frozen=True)
class QueueClosing(JobRejection):
    """The queue is being removed and takes no new jobs."""

    queue: str

    @property
    def message(self) -> str:
        return f"queue {self.queue!r} is closing and takes no new jobs"


@dataclass(frozen=True)
class UnknownRejection(JobRejection):
    """A rejection reason this client version does not know (sent by a newer server)."""

    @property
    def message(self) -> str:
        return "the server rejected the job for a reason this client does not know"


@dataclass(frozen=True)
class JobValidationError:
    """One failed job of an atomic batch: its position in the request and why it failed."""

    index: int
    rejection: JobRejection


# --------------------------------------------------------------------------------------------
# Exceptions
# --------------------------------------------------------------------------------------------


class SeppError(Exception):
    """Base of every exception raised by this client (except `HandlerError`)."""


class ClientError(SeppError):
    """A call failed: transport, server status, or a response that makes no sense."""


class ConnectError(ClientError):
    """`SeppClient.connect` could not reach the server within `connect_timeout`."""

    def __init__(self, addr: str, reason: str) -> None:
        super().__init__(f"cannot connect to the sepp server at {addr}: {reason}")
        self.addr = addr
        self.reason = reason


class InvalidApiKeyError(ClientError):
    """The API key cannot be sent as a header value (empty, non-ASCII or with line breaks)."""


class _StatusError(ClientError):
    """A failure the server (or the transport) reported with a gRPC status code."""

    def __init__(self, message: str, *, code: grpc.StatusCode | None = None) -> None:
        super().__init__(message)
        self.code = code


class TransportError(_StatusError):
    """The call did not complete: UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED or CANCELLED."""


class UnauthenticatedError(_StatusError):
    """The server refused the API key: UNAUTHENTICATED or PERMISSION_DENIED."""


class OverloadedError(_StatusError):
    """The server is out of capacity: RESOURCE_EXHAUSTED."""


class InvalidRequestError(_StatusError):
    """The server found the call malformed: INVALID_ARGUMENT."""


class ServerInternalError(_StatusError):
    """The server failed internally: INTERNAL, DATA_LOSS or UNKNOWN."""


class UnexpectedStatusError(ClientError):
    """A status code this client does not expect from this call."""

    def __init__(self, code: grpc.StatusCode, status_message: str) -> None:
        super().__init__(f"unexpected status {code.name} from the server: {status_message}")
        self.code = code
        self.status_message = status_message


class EmptyBatchError(ClientError):
    """An enqueue batch had no jobs; it is refused before any call is made."""

    def __init__(self, message: str = "an enqueue batch needs at least one job") -> None:
        super().__init__(message)


class BatchResultCountMismatchError(ClientError):
    """The server answered a batch with a different number of results than jobs sent."""

    def __init__(self, expected: int, got: int) -> None:
        super().__init__(f"sent {expected} jobs but the server answered with {got} results")
        self.expected = expected
        self.got = got


class MalformedResponseError(ClientError):
    """The server's response lacks something every valid response has."""


class MalformedJobError(ClientError):
    """A job the server sent could not be decoded."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(f"the server sent a job that cannot be decoded: {cause}")
        self.cause = cause


class MalformedServerInfoError(ClientError):
    """The server's info response could not be decoded."""

    def __init__(self, cause: Exception) -> None:
        super().__init__(f"the server sent server info that cannot be decoded: {cause}")
        self.cause = cause


class JobConversionError(SeppError):
    """Why one wire job (or dead-letter record) could not become a `Job`."""


class ServerInfoError(SeppError):
    """Why a server info response could not become a `ServerInfo`."""


class JobRejectedError(SeppError):
    """`enqueue` was answered with a rejection; it is in `.rejection`."""

    def __init__(self, rejection: JobRejection) -> None:
        super().__init__(f"the server rejected the job: {rejection.message}")
        self.rejection = rejection


class BatchValidationError(SeppError):
    """`enqueue_atomic` wrote nothing because some jobs failed; they are in `.errors`."""

    def __init__(self, errors: list[JobValidationError]) -> None:
        details = "; ".join(f"job {e.index}: {e.rejection.message}" for e in errors[:3])
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        super().__init__(
            f"the atomic batch was rejected, {len(errors)} job(s) failed: {details}{more}"
        )
        self.errors = errors


class LeaseError(SeppError):
    """An ack, nack or extend found the lease gone."""


# What a lease's NOT_FOUND and FAILED_PRECONDITION most likely mean, in the errors' messages.
NOT_IN_FLIGHT_MESSAGE = (
    "no in-flight job for this lease: it was acked or nacked already, or its lease expired and "
    "the job was redelivered (or dead-lettered)"
)
REASSIGNED_MESSAGE = (
    "lease was reassigned: this lease expired and the job was delivered again as a later "
    "attempt, which this worker no longer holds"
)


class JobNotFoundError(LeaseError):
    """The job is no longer in flight: acked already, or its lease expired (NOT_FOUND).

    `cancel` raises it too, for a job the server does not know (never enqueued, or finished).
    """

    def __init__(self, message: str = NOT_IN_FLIGHT_MESSAGE) -> None:
        super().__init__(message)


class JobCancelledError(JobNotFoundError):
    """The job was cancelled (`SeppClient.cancel`) while this lease held it (NOT_FOUND with the
    trailer `sepp-cancelled: true`).

    The call that raised it dead-lettered the job (cause `CANCELLED`); it is never delivered
    again, and later calls for this lease raise a plain `JobNotFoundError`. It is a
    `JobNotFoundError`, so code that treats a lost lease keeps working unchanged.
    """

    def __init__(self, message: str = "job was cancelled") -> None:
        super().__init__(message)


class AttemptMismatchError(LeaseError):
    """The job was redelivered; this lease's attempt is stale (FAILED_PRECONDITION)."""

    def __init__(self, message: str = REASSIGNED_MESSAGE) -> None:
        super().__init__(message)


class JobDeadLetteredError(SeppError):
    """`cancel` found the job already in the dead-letter queue (FAILED_PRECONDITION)."""


class ScheduleLimitError(SeppError):
    """The server keeps as many schedules as it may (100,000): FAILED_PRECONDITION on an
    upsert of a new schedule. Delete some, or replace an existing one, instead."""


class ReserveError(SeppError):
    """A reserve failed for a reason specific to reserving."""


class UnknownQueuesError(ReserveError):
    """The server runs in strict mode and some reserved queue is not declared."""


# --------------------------------------------------------------------------------------------
# Status mapping
# --------------------------------------------------------------------------------------------

_TRANSPORT = frozenset(
    {
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.ABORTED,
        grpc.StatusCode.CANCELLED,
    }
)
_UNAUTHENTICATED = frozenset({grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED})
_INTERNAL = frozenset(
    {grpc.StatusCode.INTERNAL, grpc.StatusCode.DATA_LOSS, grpc.StatusCode.UNKNOWN}
)


# The trailer (and its value) a cancelled lease's NOT_FOUND carries, and the server's message.
CANCELLED_TRAILER = "sepp-cancelled"
CANCELLED_MESSAGE = "job was cancelled"


def _is_cancelled(err: grpc.RpcError) -> bool:
    """Whether a NOT_FOUND carries the trailer `sepp-cancelled: true`."""
    trailing = getattr(err, "trailing_metadata", None)
    if not callable(trailing):
        return False
    try:
        metadata = trailing()
    except Exception:
        return False
    for item in metadata or ():
        key, value = item
        if key.lower() != CANCELLED_TRAILER:
            continue
        if isinstance(value, bytes):
            value = value.decode("ascii", "replace")
        if value.strip().lower() == "true":
            return True
    return False


def _status_of(err: grpc.RpcError) -> tuple[grpc.StatusCode, str]:
    code = getattr(err, "code", None)
    details = getattr(err, "details", None)
    status = code() if callable(code) else grpc.StatusCode.UNKNOWN
    message = details() if callable(details) else str(err)
    return status, message or ""


def client_error_from_rpc(err: grpc.RpcError) -> ClientError:
    """The `ClientError` for a failed call's status."""
    code, message = _status_of(err)
    text = f"{code.name}: {message}" if message else code.name
    if code in _TRANSPORT:
        return TransportError(text, code=code)
    if code in _UNAUTHENTICATED:
        return UnauthenticatedError(text, code=code)
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        return OverloadedError(text, code=code)
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        return InvalidRequestError(text, code=code)
    if code in _INTERNAL:
        return ServerInternalError(text, code=code)
    return UnexpectedStatusError(code, message)


def _explained(server_message: str, explanation: str) -> str:
    """A lease error's message: the likely cause, then what the server said."""
    return f"{explanation} (server: {server_message})" if server_message else explanation


def lease_error_from_rpc(err: grpc.RpcError) -> LeaseError | ClientError:
    """The error for a failed ack, nack or extend: lease errors first, then `ClientError`."""
    code, message = _status_of(err)
    if code == grpc.StatusCode.NOT_FOUND:
        if _is_cancelled(err):
            return JobCancelledError(message or CANCELLED_MESSAGE)
        return JobNotFoundError(_explained(message, NOT_IN_FLIGHT_MESSAGE))
    if code == grpc.StatusCode.FAILED_PRECONDITION:
        return AttemptMismatchError(_explained(message, REASSIGNED_MESSAGE))
    return client_error_from_rpc(err)


def reserve_error_from_rpc(err: grpc.RpcError) -> ReserveError | ClientError:
    """The error for a failed reserve: unknown queues in strict mode, then `ClientError`."""
    code, message = _status_of(err)
    if code == grpc.StatusCode.FAILED_PRECONDITION:
        return UnknownQueuesError(message or "some queues are not declared on the server")
    return client_error_from_rpc(err)


def cancel_error_from_rpc(
    err: grpc.RpcError,
) -> JobNotFoundError | JobDeadLetteredError | ClientError:
    """The error for a failed cancel: an unknown or finished job, a dead letter, then
    `ClientError` (a malformed id or a too-long reason is `InvalidRequestError`)."""
    code, message = _status_of(err)
    if code == grpc.StatusCode.NOT_FOUND:
        return JobNotFoundError(message or "the job is not known to the server")
    if code == grpc.StatusCode.FAILED_PRECONDITION:
        return JobDeadLetteredError(message or "the job is already dead-lettered")
    return client_error_from_rpc(err)


def schedule_error_from_rpc(err: grpc.RpcError) -> ScheduleLimitError | ClientError:
    """The error for a failed schedule call: the server's schedule limit, then `ClientError`
    (a bad definition is `InvalidRequestError`; a 0.1 server's UNIMPLEMENTED is
    `UnexpectedStatusError`)."""
    code, message = _status_of(err)
    if code == grpc.StatusCode.FAILED_PRECONDITION:
        return ScheduleLimitError(message or "the server keeps too many schedules")
    return client_error_from_rpc(err)
