"""Conversions between the client's types and the wire messages."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from sepp import (
    CustomEntriesTooMany,
    CustomKeyTooLong,
    CustomMapTooLarge,
    DeadLetterCause,
    EncodingNotAllowed,
    EnqueueRequest,
    IdempotencyKeyTooLong,
    InvalidRequest,
    JobConversionError,
    JobTypeNameTooLong,
    JobTypeNotAllowed,
    Payload,
    PayloadTooLarge,
    Priority,
    QueueClosing,
    QueueFull,
    QueueNameTooLong,
    RetryDirective,
    ScheduledTooFar,
    ServerInfoError,
    TraceContext,
    UnknownQueue,
    UnknownRejection,
    _convert,
)
from sepp.v1 import queue_pb2 as pb

UTC = timezone.utc


def one(request: EnqueueRequest) -> pb.EnqueueRequest:
    return _convert.enqueue_batch_to_pb([request])[0].jobs[0]


def test_a_full_request_becomes_the_wire_message() -> None:
    when = datetime(2030, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    message = one(
        EnqueueRequest(
            "q",
            "t",
            payload=Payload(b"\x00\x01", "application/octet-stream"),
            idempotency_key="k",
            priority=Priority.P9,
            max_attempts=4,
            custom={"s": "x", "i": -5, "f": 0.25, "b": False, "t": True},
            trace_context=TraceContext(
                "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "a=b"
            ),
            scheduled_at=when,
        )
    )
    assert (message.queue, message.job_type, message.idempotency_key) == ("q", "t", "k")
    assert message.payload == pb.Payload(data=b"\x00\x01", encoding="application/octet-stream")
    assert (message.priority, message.max_attempts) == (9, 4)
    kinds = {k: v.WhichOneof("value") for k, v in message.custom.items()}
    assert kinds == {
        "s": "string_value",
        "i": "int_value",
        "f": "double_value",
        "b": "bool_value",
        "t": "bool_value",
    }
    assert message.custom["i"].int_value == -5 and message.custom["b"].bool_value is False
    assert message.trace_context.tracestate == "a=b"
    assert (message.scheduled_at.seconds, message.scheduled_at.nanos) == (
        int(when.timestamp()),
        123456000,
    )


def test_naive_times_are_utc_and_times_before_the_epoch_are_dropped() -> None:
    naive = one(EnqueueRequest("q", "t", scheduled_at=datetime(2030, 1, 1)))
    assert naive.scheduled_at.seconds == int(datetime(2030, 1, 1, tzinfo=UTC).timestamp())
    early = one(EnqueueRequest("q", "t", scheduled_at=datetime(1969, 12, 31, tzinfo=UTC)))
    assert not early.HasField("scheduled_at")


def test_custom_values_of_other_types_are_refused() -> None:
    for value in (None, b"bytes", [1], 2**63, -(2**63) - 1):
        with pytest.raises((TypeError, ValueError)):
            one(EnqueueRequest("q", "t", custom={"k": value}))  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        one(EnqueueRequest("q", "t", custom={1: "x"}))  # type: ignore[dict-item]
    with pytest.raises(ValueError):
        one(EnqueueRequest("q", "t", max_attempts=-1))


def test_a_batch_knows_whether_every_job_has_a_key() -> None:
    keyed = [
        EnqueueRequest("q", "t", idempotency_key="a"),
        EnqueueRequest("q", "t", idempotency_key="b"),
    ]
    assert _convert.enqueue_batch_to_pb(keyed)[1] is True
    assert _convert.enqueue_batch_to_pb([*keyed, EnqueueRequest("q", "t")])[1] is False
    assert _convert.enqueue_batch_to_pb([EnqueueRequest("q", "t", idempotency_key="")])[1] is False


def test_nack_directives_on_the_wire() -> None:
    assert _convert.nack_retry_to_pb(RetryDirective.DEFAULT).WhichOneof("strategy") == "default"
    assert (
        _convert.nack_retry_to_pb(RetryDirective.DEAD_LETTER).WhichOneof("strategy")
        == "dead_letter"
    )
    delay = _convert.nack_retry_to_pb(RetryDirective.after(timedelta(seconds=1, milliseconds=500)))
    assert (delay.delay.seconds, delay.delay.nanos) == (1, 500_000_000)


def rejection(**reason: object) -> pb.JobRejection:
    return pb.JobRejection(**reason)  # type: ignore[arg-type]


def test_every_rejection_reason_has_a_value() -> None:
    horizon = pb.ScheduledTooFar(horizon={"seconds": 60})
    horizon.actual.seconds = 1_900_000_000
    cases = [
        (rejection(unknown_queue=pb.UnknownQueue(queue="q")), UnknownQueue("q")),
        (rejection(payload_too_large=pb.PayloadTooLarge(limit=1, actual=2)), PayloadTooLarge(1, 2)),
        (
            rejection(encoding_not_allowed=pb.EncodingNotAllowed(encoding="e", allowed=["a"])),
            EncodingNotAllowed("e", ["a"]),
        ),
        (
            rejection(job_type_not_allowed=pb.JobTypeNotAllowed(job_type="t", allowed=["a"])),
            JobTypeNotAllowed("t", ["a"]),
        ),
        (
            rejection(custom_entries_too_many=pb.CustomEntriesTooMany(limit=1, actual=2)),
            CustomEntriesTooMany(1, 2),
        ),
        (
            rejection(custom_map_too_large=pb.CustomMapTooLarge(limit=1, actual=2)),
            CustomMapTooLarge(1, 2),
        ),
        (
            rejection(custom_key_too_long=pb.CustomKeyTooLong(key="k", limit=1, actual=2)),
            CustomKeyTooLong("k", 1, 2),
        ),
        (
            rejection(queue_name_too_long=pb.QueueNameTooLong(limit=1, actual=2)),
            QueueNameTooLong(1, 2),
        ),
        (
            rejection(job_type_name_too_long=pb.JobTypeNameTooLong(limit=1, actual=2)),
            JobTypeNameTooLong(1, 2),
        ),
        (
            rejection(idempotency_key_too_long=pb.IdempotencyKeyTooLong(limit=1, actual=2)),
            IdempotencyKeyTooLong(1, 2),
        ),
        (
            rejection(scheduled_too_far=horizon),
            ScheduledTooFar(timedelta(seconds=60), datetime.fromtimestamp(1_900_000_000, UTC)),
        ),
        (rejection(invalid_request=pb.InvalidRequest(message="m")), InvalidRequest("m")),
        (rejection(queue_full=pb.QueueFull(queue="q", limit=3)), QueueFull("q", 3)),
        (rejection(queue_closing=pb.QueueClosing(queue="q")), QueueClosing("q")),
        (pb.JobRejection(), UnknownRejection()),
    ]
    for wire, expected in cases:
        value = _convert.rejection_from_pb(wire)
        assert value == expected
        assert str(value) == value.message and value.message


def test_an_unknown_future_reason_is_an_unknown_rejection() -> None:
    # Field 99 is not in our proto: a newer server's reason arrives as an unknown field.
    wire = pb.JobRejection.FromString(b"\x9a\x06\x02\x08\x01")
    assert _convert.rejection_from_pb(wire) == UnknownRejection()


def dead_letter(**job: object) -> pb.DeadLetterRecord:
    record = pb.DeadLetterRecord(cause=pb.DEAD_LETTER_CAUSE_LEASE_EXPIRED, final_attempt=3)
    record.job.id, record.job.job_type, record.job.queue = "j", "t", "q"
    record.job.enqueued_at.seconds = 1_700_000_000
    record.failed_at.seconds = 1_700_000_100
    for name, value in job.items():
        setattr(record.job, name, value)
    return record


def test_dead_letter_records_and_their_replay() -> None:
    record = _convert.dead_letter_from_pb(dead_letter(max_attempts=0, priority=2))
    assert record.cause is DeadLetterCause.LEASE_EXPIRED and record.last_reason is None
    assert record.failed_at - record.enqueued_at == timedelta(seconds=100)
    replay = record.to_enqueue_request()
    assert (replay.queue, replay.job_type, replay.max_attempts) == ("q", "t", None)
    assert replay.priority == Priority(2)
    unknown = dead_letter()
    unknown.cause = 42  # type: ignore[assignment]
    assert _convert.dead_letter_from_pb(unknown).cause is DeadLetterCause.UNSPECIFIED
    for broken in (dead_letter(id=""), dead_letter(job_type=""), dead_letter(priority=10)):
        with pytest.raises(JobConversionError):
            _convert.dead_letter_from_pb(broken)
    no_job = pb.DeadLetterRecord()
    with pytest.raises(JobConversionError):
        _convert.dead_letter_from_pb(no_job)


def test_server_info_needs_a_version_and_a_time() -> None:
    info = pb.GetServerInfoResponse(server_version="1.0", max_enqueue_batch=5)
    info.server_time.seconds = 1_700_000_000
    info.max_wait_timeout.seconds = 9
    converted = _convert.server_info_from_pb(info)
    assert converted.max_enqueue_batch == 5 and converted.max_wait_timeout == timedelta(seconds=9)
    assert converted.max_lease_duration == timedelta(0)  # unset durations are zero
    for broken in (
        pb.GetServerInfoResponse(server_version="1.0"),
        pb.GetServerInfoResponse(server_time={"seconds": 5}),
        pb.GetServerInfoResponse(server_version="1.0", server_time={"seconds": -5}),
    ):
        with pytest.raises(ServerInfoError):
            _convert.server_info_from_pb(broken)


def test_server_info_carries_the_cluster_as_the_node_sees_it() -> None:
    info = pb.GetServerInfoResponse(server_version="1.0")
    info.server_time.seconds = 1_700_000_000
    assert _convert.server_info_from_pb(info).cluster is None  # a single node (or 0.1)
    info.cluster.node_id = 2
    info.cluster.role = "follower"
    info.cluster.term = 7
    info.cluster.leader_id = 1
    info.cluster.leader_addr = "10.0.0.1:50051"
    info.cluster.members.add(id=1, addr="10.0.0.1:50051", voter=True, replication_lag=0)
    info.cluster.members.add(id=2, addr="10.0.0.2:50051", voter=True)
    cluster = _convert.server_info_from_pb(info).cluster
    assert cluster is not None and not cluster.is_leader
    assert (cluster.node_id, cluster.role, cluster.term) == (2, "follower", 7)
    assert (cluster.leader_id, cluster.leader_addr) == (1, "10.0.0.1:50051")
    assert cluster.last_applied_index is None
    assert [(m.id, m.addr, m.voter, m.replication_lag) for m in cluster.members] == [
        (1, "10.0.0.1:50051", True, 0),
        (2, "10.0.0.2:50051", True, None),
    ]
    # An election: no leader known yet.
    info.cluster.ClearField("leader_id")
    info.cluster.leader_addr = ""
    info.cluster.role = "candidate"
    cluster = _convert.server_info_from_pb(info).cluster
    assert cluster is not None and cluster.leader_id is None and cluster.leader_addr == ""
