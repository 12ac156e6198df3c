"""Status mapping of cancellation: the trailer that tells a cancelled lease from a lost one."""

from __future__ import annotations

import grpc
import pytest

from sepp import (
    AttemptMismatchError,
    DeadLetterCause,
    EnqueueRequest,
    InvalidRequestError,
    JobCancelledError,
    JobDeadLetteredError,
    JobNotFoundError,
    JobRejectedError,
    PayloadTooLarge,
    TransportError,
    UnexpectedStatusError,
    _convert,
)
from sepp._acks import item_error
from sepp.errors import cancel_error_from_rpc, lease_error_from_rpc
from sepp.v1 import queue_pb2 as pb


def rpc_error(
    code: grpc.StatusCode, message: str, trailers: tuple[tuple[str, str | bytes], ...] = ()
) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(*trailers), message)


def test_not_found_with_the_cancelled_trailer_is_job_cancelled() -> None:
    error = lease_error_from_rpc(
        rpc_error(grpc.StatusCode.NOT_FOUND, "job was cancelled", (("sepp-cancelled", "true"),))
    )
    assert type(error) is JobCancelledError
    assert isinstance(error, JobNotFoundError)  # existing `except JobNotFoundError` still works
    assert "job was cancelled" in str(error)


def test_the_trailer_is_read_whatever_its_case_or_type() -> None:
    for trailer in (("Sepp-Cancelled", "TRUE"), ("sepp-cancelled", b"true")):
        error = lease_error_from_rpc(
            rpc_error(grpc.StatusCode.NOT_FOUND, "job was cancelled", (trailer,))
        )
        assert type(error) is JobCancelledError, trailer


def test_not_found_without_the_trailer_stays_a_plain_not_found() -> None:
    for trailers in ((), (("sepp-cancelled", "false"),), (("other", "true"),)):
        error = lease_error_from_rpc(
            rpc_error(grpc.StatusCode.NOT_FOUND, "job not found", trailers)
        )
        assert type(error) is JobNotFoundError, trailers
    # The message alone does not make a single call's NOT_FOUND a cancellation: only the trailer.
    error = lease_error_from_rpc(rpc_error(grpc.StatusCode.NOT_FOUND, "job was cancelled"))
    assert type(error) is JobNotFoundError


def test_the_trailer_on_another_code_changes_nothing() -> None:
    error = lease_error_from_rpc(
        rpc_error(grpc.StatusCode.UNAVAILABLE, "down", (("sepp-cancelled", "true"),))
    )
    assert isinstance(error, TransportError)


def test_an_ack_batch_item_of_a_cancelled_job_is_job_cancelled() -> None:
    cancelled = lease_error_from_rpc(item_error(5, "job was cancelled"))
    assert type(cancelled) is JobCancelledError
    plain = lease_error_from_rpc(item_error(5, "job not found"))
    assert type(plain) is JobNotFoundError
    other = lease_error_from_rpc(item_error(9, "job was cancelled"))  # FAILED_PRECONDITION
    assert not isinstance(other, JobNotFoundError)


def test_cancel_errors() -> None:
    not_found = cancel_error_from_rpc(rpc_error(grpc.StatusCode.NOT_FOUND, "job not found"))
    assert type(not_found) is JobNotFoundError
    dead = cancel_error_from_rpc(
        rpc_error(grpc.StatusCode.FAILED_PRECONDITION, "job is already dead-lettered")
    )
    assert type(dead) is JobDeadLetteredError and "dead-lettered" in str(dead)
    invalid = cancel_error_from_rpc(rpc_error(grpc.StatusCode.INVALID_ARGUMENT, "bad job_id"))
    assert type(invalid) is InvalidRequestError
    assert isinstance(
        cancel_error_from_rpc(rpc_error(grpc.StatusCode.UNAVAILABLE, "down")), TransportError
    )
    old_server = cancel_error_from_rpc(rpc_error(grpc.StatusCode.UNIMPLEMENTED, "no CancelJob"))
    assert isinstance(old_server, UnexpectedStatusError)


@pytest.mark.parametrize(
    ("wire", "cause"),
    [
        (pb.DEAD_LETTER_CAUSE_CANCELLED, DeadLetterCause.CANCELLED),
        (pb.DEAD_LETTER_CAUSE_ADMIN, DeadLetterCause.ADMIN),
        (99, DeadLetterCause.UNSPECIFIED),
    ],
)
def test_dead_letter_causes(wire: int, cause: DeadLetterCause) -> None:
    record = pb.DeadLetterRecord(cause=wire, final_attempt=1)  # type: ignore[arg-type]
    record.job.id = "0190a1c2-0000-7000-8000-000000000000"
    record.job.queue = "q"
    record.job.job_type = "t"
    record.job.attempt = 1
    record.job.enqueued_at.seconds = 1_700_000_000
    record.failed_at.seconds = 1_700_000_100
    assert _convert.dead_letter_from_pb(record).cause is cause
    assert DeadLetterCause.CANCELLED.value == "cancelled"


def test_lease_errors_say_what_most_likely_happened() -> None:
    assert str(JobNotFoundError()).startswith("no in-flight job")
    assert str(AttemptMismatchError()).startswith("lease was reassigned")
    # A second ack of a job (or an ack after its lease ran out) gets the server's bare
    # "job not found"; the error explains the likely causes and keeps the server's words.
    twice = str(lease_error_from_rpc(rpc_error(grpc.StatusCode.NOT_FOUND, "job not found")))
    assert "acked or nacked already" in twice and "lease expired" in twice
    assert "redelivered" in twice and twice.endswith("(server: job not found)")
    stale = lease_error_from_rpc(rpc_error(grpc.StatusCode.FAILED_PRECONDITION, "attempt mismatch"))
    assert type(stale) is AttemptMismatchError
    assert str(stale).startswith("lease was reassigned") and "attempt mismatch" in str(stale)
    # A cancellation keeps the server's own message.
    assert str(JobCancelledError()) == "job was cancelled"


def test_rejection_and_validation_messages_name_what_is_wrong() -> None:
    rejected = JobRejectedError(PayloadTooLarge(limit=1, actual=2))
    assert "payload size 2 bytes" in str(rejected)
    with pytest.raises(ValueError, match="job type"):
        EnqueueRequest("q", "")
