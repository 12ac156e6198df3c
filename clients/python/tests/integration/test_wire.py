"""What the client puts on the wire, and how it copes with answers a correct server never gives.

These run against the in-process recording server (see `tests/recording_server.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import datetime, timedelta, timezone

import grpc
import pytest

from sepp import (
    ALL_QUEUES,
    AttemptMismatchError,
    BatchResultCountMismatchError,
    EnqueueAck,
    EnqueueRequest,
    InvalidRequestError,
    JobNotFoundError,
    MalformedResponseError,
    MalformedServerInfoError,
    OverloadedError,
    QueuePause,
    ReserveOptions,
    RetryPolicy,
    Schedule,
    ScheduleLimitError,
    SeppClient,
    ServerInternalError,
    TransportError,
    UnauthenticatedError,
    UnexpectedStatusError,
    UnknownRejection,
)
from sepp.v1 import queue_pb2 as pb
from tests.recording_server import RecordingServer, recording_server

RETRY = RetryPolicy(max_attempts=3, initial_backoff=timedelta(milliseconds=1), jitter=False)


@pytest.fixture
async def fake() -> AsyncIterator[RecordingServer]:
    async with recording_server() as server:
        yield server


def ok(*ids: str) -> pb.EnqueueBatchResponse:
    return pb.EnqueueBatchResponse(
        results=[pb.JobResult(success=pb.EnqueueResponse(job_id=i)) for i in ids]
    )


def wire_job(job_id: str = "j1", **fields: object) -> pb.Job:
    job = pb.Job(id=job_id, job_type="t", attempt=1, max_attempts=3, queue="q")
    job.enqueued_at.seconds = 1_700_000_000
    job.lease_expires_at.seconds = 1_700_000_030
    for name, value in fields.items():
        if name == "no_lease":
            job.ClearField("lease_expires_at")
        elif name == "bad_custom":
            job.custom["k"].Clear()
            job.custom["k"].SetInParent()
        elif name == "traceparent":
            job.trace_context.traceparent = str(value)
        else:
            setattr(job, name, value)
    return job


def opts(wait: float = 2.0) -> ReserveOptions:
    return ReserveOptions(["q"], timedelta(seconds=30), wait_timeout=timedelta(seconds=wait))


async def test_user_agent_and_api_key_go_with_every_call(fake: RecordingServer) -> None:
    fake.answer("EnqueueBatch", ok("a"))
    fake.answer("Reserve", pb.ReserveResponse())
    fake.answer("Ack", pb.AckResponse())
    async with await SeppClient.connect(fake.addr, api_key="s3cret") as client:
        await client.enqueue(EnqueueRequest("q", "t"))
        await client.reserve(opts(wait=0))
    for call in fake.calls:
        assert call.metadata["authorization"] == "Bearer s3cret"
        assert call.metadata["user-agent"].startswith("sepp-py/0.2.0")


async def test_reserve_waits_ten_seconds_longer_than_its_long_poll(fake: RecordingServer) -> None:
    fake.answer("Reserve", pb.ReserveResponse())
    fake.answer("GetServerInfo", grpc.StatusCode.INTERNAL)
    client = await SeppClient.connect(fake.addr, rpc_timeout=timedelta(seconds=3))
    await client.reserve(opts(wait=20))
    with pytest.raises(ServerInternalError):
        await client.get_server_info()
    await client.close()
    (reserve,) = fake.calls_to("Reserve")
    assert reserve.time_remaining is not None and 25 < reserve.time_remaining < 31
    (info,) = fake.calls_to("GetServerInfo")
    assert info.time_remaining is not None and info.time_remaining <= 3.5
    assert (
        reserve.request.wait_timeout.seconds == 20 and reserve.request.lease_duration.seconds == 30
    )


async def test_an_unset_optional_stays_unset_on_the_wire(fake: RecordingServer) -> None:
    fake.answer("EnqueueBatch", ok("a"))
    fake.answer("Nack", pb.NackResponse())
    fake.answer("Reserve", pb.ReserveResponse(jobs=[wire_job()]))
    async with await SeppClient.connect(fake.addr) as client:
        await client.enqueue(EnqueueRequest("q", "t"))
        jobs = await client.reserve(opts())
        assert jobs is not None
        await client.nack(jobs[0].ctx)
    sent = fake.calls_to("EnqueueBatch")[0].request.jobs[0]
    for name in ("payload", "idempotency_key", "priority", "max_attempts"):
        assert not sent.HasField(name)
    assert not sent.HasField("scheduled_at") and len(sent.custom) == 0
    nack = fake.calls_to("Nack")[0].request
    assert not nack.HasField("reason") and nack.retry.WhichOneof("strategy") == "default"
    assert not nack.HasField("worker_id")


async def test_malformed_jobs_are_skipped_and_the_rest_kept(
    fake: RecordingServer, caplog: pytest.LogCaptureFixture
) -> None:
    fake.answer(
        "Reserve",
        pb.ReserveResponse(
            jobs=[
                wire_job("good"),
                wire_job(""),
                wire_job("p", priority=12),
                wire_job("n", no_lease=True),
                wire_job("c", bad_custom=True),
                wire_job("bad-trace", traceparent="not-a-traceparent"),
            ]
        ),
        pb.ReserveResponse(jobs=[wire_job("")]),
    )
    async with await SeppClient.connect(fake.addr) as client:
        with caplog.at_level(logging.WARNING, logger="sepp"):
            jobs = await client.reserve(opts())
            assert jobs is not None
            assert [j.ctx.id for j in jobs] == ["good", "bad-trace"]
            assert jobs[1].ctx.trace_context is None  # dropped, the job kept
            assert await client.reserve(opts()) is None  # every job malformed
    assert caplog.text.count("skipping malformed job") == 5


async def test_answers_without_an_outcome_or_with_the_wrong_count(fake: RecordingServer) -> None:
    fake.answer(
        "EnqueueBatch",
        pb.EnqueueBatchResponse(results=[pb.JobResult()]),
        ok("a"),
        pb.EnqueueBatchResponse(results=[pb.JobResult(rejection=pb.JobRejection())]),
    )
    fake.answer("EnqueueAtomic", pb.EnqueueAtomicResponse())
    fake.answer("Extend", pb.ExtendResponse(job_id="j1"))
    fake.answer("GetServerInfo", pb.GetServerInfoResponse())
    fake.answer("Reserve", pb.ReserveResponse(jobs=[wire_job()]))
    async with await SeppClient.connect(fake.addr) as client:
        with pytest.raises(MalformedResponseError):
            await client.enqueue(EnqueueRequest("q", "t"))
        with pytest.raises(BatchResultCountMismatchError) as mismatch:
            await client.enqueue_batch([EnqueueRequest("q", "t"), EnqueueRequest("q", "t")])
        assert (mismatch.value.expected, mismatch.value.got) == (2, 1)
        assert await client.enqueue_batch([EnqueueRequest("q", "t")]) == [UnknownRejection()]
        with pytest.raises(MalformedResponseError):
            await client.enqueue_atomic([EnqueueRequest("q", "t")])
        jobs = await client.reserve(opts())
        assert jobs is not None
        with pytest.raises(MalformedResponseError, match="lease_expires_at"):
            await client.extend(jobs[0].ctx, timedelta(seconds=5))
        with pytest.raises(MalformedServerInfoError):
            await client.get_server_info()


async def test_status_codes_map_to_the_error_hierarchy(fake: RecordingServer) -> None:
    codes = [
        (grpc.StatusCode.UNAVAILABLE, TransportError),
        (grpc.StatusCode.UNAUTHENTICATED, UnauthenticatedError),
        (grpc.StatusCode.PERMISSION_DENIED, UnauthenticatedError),
        (grpc.StatusCode.RESOURCE_EXHAUSTED, OverloadedError),
        (grpc.StatusCode.INVALID_ARGUMENT, InvalidRequestError),
        (grpc.StatusCode.DATA_LOSS, ServerInternalError),
        (grpc.StatusCode.NOT_FOUND, UnexpectedStatusError),
    ]
    async with await SeppClient.connect(fake.addr, coalesce_enqueues=False) as client:
        for code, error in codes:
            fake.answer("EnqueueBatch", code)
            with pytest.raises(error) as caught:
                await client.enqueue(EnqueueRequest("q", "t"))
            assert caught.value.code == code  # type: ignore[attr-defined]
        fake.answer("Reserve", pb.ReserveResponse(jobs=[wire_job()]))
        fake.answer("Ack", grpc.StatusCode.NOT_FOUND)
        jobs = await client.reserve(opts())
        assert jobs is not None
        with pytest.raises(JobNotFoundError):
            await client.ack(jobs[0].ctx)


async def test_transient_failures_are_retried_by_an_opted_in_policy(fake: RecordingServer) -> None:
    fake.answer("EnqueueBatch", grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNAVAILABLE, ok("a"))
    async with await SeppClient.connect(fake.addr, retry_policy=RETRY) as client:
        assert await client.enqueue(EnqueueRequest("q", "t")) == EnqueueAck("a", False)
    assert len(fake.calls_to("EnqueueBatch")) == 3


async def test_the_default_policy_never_retries(fake: RecordingServer) -> None:
    fake.answer("GetServerInfo", grpc.StatusCode.UNAVAILABLE)
    async with await SeppClient.connect(fake.addr) as client:
        with pytest.raises(TransportError):
            await client.get_server_info()
    assert len(fake.calls_to("GetServerInfo")) == 1


async def test_ambiguous_failures_are_retried_only_when_every_job_has_a_key(
    fake: RecordingServer,
) -> None:
    async with await SeppClient.connect(fake.addr, retry_policy=RETRY) as client:
        fake.answer("EnqueueBatch", grpc.StatusCode.ABORTED, ok("a"))
        with pytest.raises(TransportError):
            await client.enqueue(EnqueueRequest("q", "t"))
        fake.answer("EnqueueBatch", grpc.StatusCode.DEADLINE_EXCEEDED, ok("a", "b"))
        with pytest.raises(TransportError):
            await client.enqueue_batch(
                [
                    EnqueueRequest("q", "t", idempotency_key="k"),
                    EnqueueRequest("q", "t", idempotency_key=""),
                ]
            )
        assert len(fake.calls_to("EnqueueBatch")) == 2
        fake.answer("EnqueueBatch", grpc.StatusCode.ABORTED, ok("a"))
        ack = await client.enqueue(EnqueueRequest("q", "t", idempotency_key="k"))
        assert ack.job_id == "a" and len(fake.calls_to("EnqueueBatch")) == 4


async def test_acks_are_retried_with_the_first_attempt_counted(fake: RecordingServer) -> None:
    fake.answer("Reserve", pb.ReserveResponse(jobs=[wire_job("j1"), wire_job("j2")]))
    fake.answer("Ack", grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNAVAILABLE, pb.AckResponse())
    async with await SeppClient.connect(fake.addr, retry_policy=RETRY) as client:
        jobs = await client.reserve(opts())
        assert jobs is not None
        await client.ack(jobs[0].ctx)
        assert len(fake.calls_to("Ack")) == 3, "two failures, then the answer"
        fake.answer("Ack", *[grpc.StatusCode.UNAVAILABLE] * 3)
        with pytest.raises(TransportError):
            await client.ack(jobs[1].ctx)
    assert len(fake.calls_to("Ack")) == 6, "three attempts in all, the first one counted"


@pytest.fixture
def untraced(monkeypatch: pytest.MonkeyPatch) -> None:
    """As without the otel extra: a traced ack keeps its own call, so coalescing shows only here
    (an earlier test may have installed a tracer provider for the whole process)."""
    monkeypatch.setattr("sepp.client._OTEL", False)


@pytest.mark.usefixtures("untraced")
async def test_acks_of_one_turn_share_an_ack_batch_call(fake: RecordingServer) -> None:
    fake.answer("Reserve", pb.ReserveResponse(jobs=[wire_job("j1"), wire_job("j2")]))
    fake.answer(
        "AckBatch",
        pb.AckBatchResponse(
            results=[
                pb.AckResult(success=pb.AckResponse(job_id="j1")),
                pb.AckResult(error=pb.CallStatus(code=9, message="attempt 1 is not current")),
            ]
        ),
    )
    async with await SeppClient.connect(fake.addr, api_key="s3cret") as client:
        jobs = await client.reserve(opts())
        assert jobs is not None
        results = await asyncio.gather(
            *(client.ack(job.ctx) for job in jobs), return_exceptions=True
        )
    assert results[0] is None
    assert isinstance(results[1], AttemptMismatchError)
    (call,) = fake.calls_to("AckBatch")
    assert [(a.job_id, a.attempt) for a in call.request.acks] == [("j1", 1), ("j2", 1)]
    assert call.metadata["authorization"] == "Bearer s3cret"
    assert fake.calls_to("Ack") == []


@pytest.mark.usefixtures("untraced")
async def test_a_server_without_ack_batch_gets_one_ack_per_job(fake: RecordingServer) -> None:
    # Nothing scripted for AckBatch: the fake answers UNIMPLEMENTED, as a 0.1 server does.
    fake.answer("Reserve", pb.ReserveResponse(jobs=[wire_job("j1"), wire_job("j2")]))
    fake.answer("Ack", pb.AckResponse())
    async with await SeppClient.connect(fake.addr) as client:
        jobs = await client.reserve(opts())
        assert jobs is not None
        await asyncio.gather(*(client.ack(job.ctx) for job in jobs))
        assert sorted(c.request.job_id for c in fake.calls_to("Ack")) == ["j1", "j2"]
        again = await client.reserve(opts())
        assert again is not None
        await asyncio.gather(*(client.ack(job.ctx) for job in again))
    assert len(fake.calls_to("AckBatch")) == 1, "asked once, then plain acks only"
    assert len(fake.calls_to("Ack")) == 4


@pytest.mark.usefixtures("untraced")
async def test_a_failed_ack_batch_is_retried_one_ack_each(fake: RecordingServer) -> None:
    fake.answer("Reserve", pb.ReserveResponse(jobs=[wire_job("j1"), wire_job("j2")]))
    fake.answer("AckBatch", grpc.StatusCode.UNAVAILABLE)
    fake.answer("Ack", pb.AckResponse())
    async with await SeppClient.connect(fake.addr, retry_policy=RETRY) as client:
        jobs = await client.reserve(opts())
        assert jobs is not None
        await asyncio.gather(*(client.ack(job.ctx) for job in jobs))
    assert len(fake.calls_to("AckBatch")) == 1
    assert sorted(c.request.job_id for c in fake.calls_to("Ack")) == ["j1", "j2"]


async def test_coalesce_acks_off_sends_one_ack_per_job(fake: RecordingServer) -> None:
    fake.answer("Reserve", pb.ReserveResponse(jobs=[wire_job("j1"), wire_job("j2")]))
    fake.answer("Ack", pb.AckResponse())
    async with await SeppClient.connect(fake.addr, coalesce_acks=False) as client:
        jobs = await client.reserve(opts())
        assert jobs is not None
        await asyncio.gather(*(client.ack(job.ctx) for job in jobs))
    assert fake.calls_to("AckBatch") == []
    assert len(fake.calls_to("Ack")) == 2


async def test_reserve_drain_and_permanent_errors_are_never_retried(fake: RecordingServer) -> None:
    fake.answer("Reserve", grpc.StatusCode.UNAVAILABLE)
    fake.answer("DrainDeadLetters", grpc.StatusCode.UNAVAILABLE)
    fake.answer("Ack", grpc.StatusCode.INVALID_ARGUMENT)
    async with await SeppClient.connect(fake.addr, retry_policy=RETRY) as client:
        with pytest.raises(TransportError):
            await client.reserve(opts())
        with pytest.raises(TransportError):
            await client.drain_dead_letters()
        fake.answer("Reserve", pb.ReserveResponse(jobs=[wire_job()]))
        jobs = await client.reserve(opts())
        assert jobs is not None
        with pytest.raises(InvalidRequestError):
            await client.ack(jobs[0].ctx)
    assert len(fake.calls_to("Reserve")) == 2
    assert len(fake.calls_to("DrainDeadLetters")) == 1 and len(fake.calls_to("Ack")) == 1


async def test_a_slow_answer_hits_the_rpc_timeout(fake: RecordingServer) -> None:
    async def slow(request: object) -> pb.GetServerInfoResponse:
        await asyncio.Event().wait()  # never answers: the client's deadline ends the call
        return pb.GetServerInfoResponse()

    fake.answer("GetServerInfo", slow)
    async with await SeppClient.connect(
        fake.addr, rpc_timeout=timedelta(milliseconds=200)
    ) as client:
        with pytest.raises(TransportError, match="DEADLINE_EXCEEDED"):
            await client.get_server_info()


def wire_schedule(schedule_id: str = "tick") -> pb.ScheduleInfo:
    info = pb.ScheduleInfo(
        definition=pb.ScheduleDefinition(
            id=schedule_id, job=pb.EnqueueRequest(queue="q", job_type="t")
        )
    )
    info.definition.every.seconds = 60
    info.created_at.seconds = 1_700_000_000
    return info


TICK = Schedule("tick", EnqueueRequest("q", "t"), every=timedelta(minutes=1))


async def test_schedule_calls_are_retried_by_an_opted_in_policy(fake: RecordingServer) -> None:
    unavailable, deadline = grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED
    fake.answer("UpsertSchedule", unavailable, deadline, wire_schedule())
    fake.answer("DeleteSchedule", deadline, pb.DeleteScheduleResponse(deleted=True))
    fake.answer(
        "ListSchedules",
        grpc.StatusCode.ABORTED,
        pb.ListSchedulesResponse(schedules=[wire_schedule("a"), wire_schedule("b")]),
    )
    async with await SeppClient.connect(fake.addr, retry_policy=RETRY) as client:
        assert (await client.upsert_schedule(TICK)).definition == TICK
        assert await client.delete_schedule("tick") is True
        assert [info.id for info in await client.list_schedules()] == ["a", "b"]
    assert [
        len(fake.calls_to(m)) for m in ("UpsertSchedule", "DeleteSchedule", "ListSchedules")
    ] == [
        3,
        2,
        2,
    ]
    sent = fake.calls_to("UpsertSchedule")[0].request
    assert sent.schedule.id == "tick" and sent.schedule.every.seconds == 60


async def test_schedule_calls_under_the_default_policy_and_their_errors(
    fake: RecordingServer,
) -> None:
    fake.answer("UpsertSchedule", grpc.StatusCode.UNAVAILABLE)
    fake.answer("DeleteSchedule", grpc.StatusCode.INVALID_ARGUMENT)
    async with await SeppClient.connect(fake.addr) as client:
        with pytest.raises(TransportError):
            await client.upsert_schedule(TICK)
        assert len(fake.calls_to("UpsertSchedule")) == 1
        with pytest.raises(InvalidRequestError):
            await client.delete_schedule("tick")
        fake.answer("UpsertSchedule", grpc.StatusCode.FAILED_PRECONDITION)
        with pytest.raises(ScheduleLimitError):
            await client.upsert_schedule(TICK)
        # Nothing scripted for ListSchedules: the fake answers UNIMPLEMENTED, as a 0.1 server does.
        with pytest.raises(UnexpectedStatusError) as old:
            await client.list_schedules()
        assert old.value.code == grpc.StatusCode.UNIMPLEMENTED
        # A schedule id the server could not take is refused before any call.
        with pytest.raises(ValueError):
            await client.delete_schedule("")
        assert len(fake.calls_to("DeleteSchedule")) == 1


async def test_a_malformed_schedule_answer_is_a_malformed_response_or_skipped_in_a_list(
    fake: RecordingServer, caplog: pytest.LogCaptureFixture
) -> None:
    no_created_at = wire_schedule()
    no_created_at.ClearField("created_at")
    no_cadence = wire_schedule()
    no_cadence.definition.ClearField("every")
    fake.answer("UpsertSchedule", no_created_at)
    fake.answer("ListSchedules", pb.ListSchedulesResponse(schedules=[no_cadence, wire_schedule()]))
    async with await SeppClient.connect(fake.addr) as client:
        with pytest.raises(MalformedResponseError, match="created_at"):
            await client.upsert_schedule(TICK)
        with caplog.at_level(logging.WARNING, logger="sepp"):
            assert [info.id for info in await client.list_schedules()] == ["tick"]
    assert "skipping a schedule this client cannot read" in caplog.text
    assert "has no cadence" in caplog.text


def wire_pause(queue: str = "mail", until_s: int | None = None) -> pb.QueuePause:
    pause = pb.QueuePause(queue=queue)
    if until_s is not None:
        pause.until.seconds = until_s
    return pause


async def test_pause_calls_are_retried_by_an_opted_in_policy(fake: RecordingServer) -> None:
    unavailable, deadline = grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED
    fake.answer(
        "PauseQueue",
        unavailable,
        deadline,
        pb.PauseQueueResponse(pause=wire_pause("mail", 1_900_000_000)),
    )
    fake.answer("ResumeQueue", deadline, pb.ResumeQueueResponse(resumed=True))
    fake.answer(
        "ListPauses",
        grpc.StatusCode.ABORTED,
        pb.ListPausesResponse(pauses=[wire_pause(""), wire_pause("mail", 1_900_000_000)]),
    )
    until = datetime(2030, 3, 17, 17, 46, 40, tzinfo=timezone.utc)
    async with await SeppClient.connect(fake.addr, retry_policy=RETRY) as client:
        assert await client.pause_queue("mail", until=until, reason="deploy") == QueuePause(
            "mail", until
        )
        assert await client.resume_queue("mail") is True
        assert await client.list_pauses() == [QueuePause(ALL_QUEUES), QueuePause("mail", until)]
    assert [len(fake.calls_to(m)) for m in ("PauseQueue", "ResumeQueue", "ListPauses")] == [3, 2, 2]
    sent = fake.calls_to("PauseQueue")[0].request
    assert (sent.queue, sent.until.seconds, sent.reason) == ("mail", 1_900_000_000, "deploy")
    assert fake.calls_to("ResumeQueue")[0].request.queue == "mail"


async def test_pause_calls_under_the_default_policy_and_their_errors(
    fake: RecordingServer,
) -> None:
    fake.answer("PauseQueue", grpc.StatusCode.UNAVAILABLE)
    fake.answer("ResumeQueue", grpc.StatusCode.INVALID_ARGUMENT)
    async with await SeppClient.connect(fake.addr) as client:
        with pytest.raises(TransportError):
            await client.pause_queue("mail")
        assert len(fake.calls_to("PauseQueue")) == 1
        with pytest.raises(InvalidRequestError):
            await client.resume_queue("mail")
        fake.answer("PauseQueue", grpc.StatusCode.INVALID_ARGUMENT)
        with pytest.raises(InvalidRequestError):
            await client.pause_queue("mail", reason="x" * 2000)
        # Nothing scripted for ListPauses: the fake answers UNIMPLEMENTED, as a 0.1 server does.
        with pytest.raises(UnexpectedStatusError) as old:
            await client.list_pauses()
        assert old.value.code == grpc.StatusCode.UNIMPLEMENTED
        # What the client can tell is wrong is refused before any call.
        with pytest.raises(TypeError):
            await client.pause_queue(None)  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            await client.pause_queue("mail", until=60)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="in the future"):
            await client.pause_queue("mail", until=datetime(1960, 1, 1, tzinfo=timezone.utc))
        with pytest.raises(TypeError):
            await client.resume_queue(["mail"])  # type: ignore[arg-type]
        assert [len(fake.calls_to(m)) for m in ("PauseQueue", "ResumeQueue")] == [2, 1]
    # The empty name is every queue, sent as it is.
    fake.answer("PauseQueue", pb.PauseQueueResponse(pause=wire_pause("")))
    fake.answer("ResumeQueue", pb.ResumeQueueResponse(resumed=False))
    async with await SeppClient.connect(fake.addr) as client:
        assert (await client.pause_queue(ALL_QUEUES)).all_queues
        assert await client.resume_queue(ALL_QUEUES) is False
    assert fake.calls_to("PauseQueue")[-1].request.queue == ""
    assert not fake.calls_to("PauseQueue")[-1].request.HasField("until")
    assert not fake.calls_to("PauseQueue")[-1].request.HasField("reason")
    assert fake.calls_to("ResumeQueue")[-1].request.queue == ""


async def test_a_malformed_pause_answer_is_a_malformed_response_or_skipped_in_a_list(
    fake: RecordingServer, caplog: pytest.LogCaptureFixture
) -> None:
    bad_until = wire_pause("late")
    bad_until.until.nanos = -1
    fake.answer("PauseQueue", pb.PauseQueueResponse(), pb.PauseQueueResponse(pause=bad_until))
    fake.answer("ListPauses", pb.ListPausesResponse(pauses=[bad_until, wire_pause("mail")]))
    async with await SeppClient.connect(fake.addr) as client:
        with pytest.raises(MalformedResponseError, match="no pause"):
            await client.pause_queue("mail")
        with pytest.raises(MalformedResponseError, match="invalid until"):
            await client.pause_queue("late")
        with caplog.at_level(logging.WARNING, logger="sepp"):
            assert await client.list_pauses() == [QueuePause("mail")]
    assert "skipping a pause this client cannot read" in caplog.text
