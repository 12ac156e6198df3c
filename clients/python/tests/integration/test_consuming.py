"""Reserve, ack, nack, extend, server info and dead letters against the real server."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

import pytest

from sepp import (
    AttemptMismatchError,
    DeadLetterCause,
    EnqueueRequest,
    JobNotFoundError,
    Payload,
    Priority,
    ReserveOptions,
    RetryDirective,
    SeppClient,
    TraceContext,
    UnknownQueuesError,
)

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def options(queue: str, *, lease: float = 30.0, wait: float = 2.0, **kw: object) -> ReserveOptions:
    return ReserveOptions(
        [queue],
        timedelta(seconds=lease),
        wait_timeout=timedelta(seconds=wait),
        **kw,  # type: ignore[arg-type]
    )


async def test_reserve_returns_none_when_the_wait_ends_empty(
    client: SeppClient, queue: str
) -> None:
    assert await client.reserve(options(queue, wait=0.1)) is None
    assert await client.reserve(options(queue, wait=0)) is None


async def test_reserve_takes_queues_in_order_and_priorities_first(
    client: SeppClient, new_queue
) -> None:
    first, second = new_queue(), new_queue()
    await client.enqueue(EnqueueRequest(second, "t"))
    await client.enqueue(EnqueueRequest(first, "t", priority=1))
    await client.enqueue(EnqueueRequest(first, "t", priority=9))
    opts = ReserveOptions([first, second], timedelta(seconds=30), max_jobs=3)
    jobs = await client.reserve(opts)
    assert jobs is not None
    assert [(j.ctx.queue, int(j.ctx.priority)) for j in jobs] == [
        (first, 9),
        (first, 1),
        (second, 0),
    ]


async def test_a_long_poll_returns_a_job_enqueued_while_it_waits(
    client: SeppClient, queue: str
) -> None:
    waiting = asyncio.ensure_future(client.reserve(options(queue, wait=20)))
    await asyncio.sleep(0)  # let the reserve go out first; correctness does not depend on it
    await client.enqueue(EnqueueRequest(queue, "t"))
    jobs = await asyncio.wait_for(waiting, 20)
    assert jobs is not None and len(jobs) == 1


async def test_ack_completes_a_job_and_a_second_ack_finds_nothing(
    client: SeppClient, queue: str
) -> None:
    await client.enqueue(EnqueueRequest(queue, "t"))
    jobs = await client.reserve(options(queue, worker_id="w-1"))
    assert jobs is not None
    await client.ack(jobs[0].ctx)
    with pytest.raises(JobNotFoundError):
        await client.ack(jobs[0])
    assert await client.reserve(options(queue, wait=0.1)) is None


async def test_acks_made_together_each_get_their_own_outcome(
    client: SeppClient, queue: str
) -> None:
    for _ in range(3):
        await client.enqueue(EnqueueRequest(queue, "t"))
    jobs = await client.reserve(options(queue, max_jobs=3))
    assert jobs is not None and len(jobs) == 3
    await client.ack(jobs[1].ctx)
    # One turn of the loop: the three acks travel as one AckBatch call.
    results = await asyncio.gather(*(client.ack(job.ctx) for job in jobs), return_exceptions=True)
    assert results[0] is None and results[2] is None
    assert isinstance(results[1], JobNotFoundError)
    for job in jobs:
        with pytest.raises(JobNotFoundError):
            await client.ack(job.ctx)


async def test_a_stale_attempt_is_refused_after_redelivery(client: SeppClient, queue: str) -> None:
    await client.enqueue(EnqueueRequest(queue, "t"))
    first = await client.reserve(options(queue, lease=0.2))
    assert first is not None
    again = await client.reserve(options(queue, wait=10))  # after the short lease expired
    assert again is not None and again[0].ctx.attempt == 2
    with pytest.raises(AttemptMismatchError):
        await client.ack(first[0].ctx)
    with pytest.raises(AttemptMismatchError):
        await client.nack(first[0].ctx)
    with pytest.raises(AttemptMismatchError):
        await client.extend(first[0].ctx, timedelta(seconds=5))
    await client.ack(again[0].ctx)


async def test_nack_default_redelivers_with_the_next_attempt(
    client: SeppClient, queue: str
) -> None:
    await client.enqueue(EnqueueRequest(queue, "t", max_attempts=3))
    jobs = await client.reserve(options(queue))
    assert jobs is not None
    assert await client.nack(jobs[0].ctx, RetryDirective.DEFAULT, "try again") is False
    again = await client.reserve(options(queue, wait=10))
    assert again is not None and again[0].ctx.attempt == 2 and again[0].ctx.id == jobs[0].ctx.id


async def test_nack_after_holds_the_job_back(client: SeppClient, queue: str) -> None:
    await client.enqueue(EnqueueRequest(queue, "t"))
    jobs = await client.reserve(options(queue))
    assert jobs is not None
    await client.nack(jobs[0].ctx, RetryDirective.after(timedelta(hours=1)), "later")
    assert await client.reserve(options(queue, wait=0.3)) is None


async def test_nack_dead_letter_and_drain_the_record(client: SeppClient, queue: str) -> None:
    request = EnqueueRequest(
        queue,
        "t",
        payload=Payload(b"data", "text/plain"),
        priority=6,
        max_attempts=4,
        custom={"a": 1},
        trace_context=TraceContext(TRACEPARENT),
    )
    ack = await client.enqueue(request)
    jobs = await client.reserve(options(queue))
    assert jobs is not None
    assert await client.nack(jobs[0].ctx, RetryDirective.dead_letter(), "poison") is True
    records = await client.drain_dead_letters(queue, max_records=10)
    assert len(records) == 1
    record = records[0]
    assert (record.queue, record.job_id, record.job_type) == (queue, ack.job_id, "t")
    assert record.payload == Payload(b"data", "text/plain")
    assert record.priority == Priority(6) and record.max_attempts == 4
    assert record.custom == {"a": 1} and record.trace_context == TraceContext(TRACEPARENT)
    assert record.cause is DeadLetterCause.REJECTED
    assert record.final_attempt == 1 and record.last_reason == "poison"
    assert record.failed_at >= record.enqueued_at
    assert await client.drain_dead_letters(queue, max_records=10) == []

    replay = record.to_enqueue_request()
    assert replay.idempotency_key is None and replay.scheduled_at is None
    await client.enqueue(replay)
    replayed = await client.reserve(options(queue))
    assert replayed is not None and replayed[0].payload == Payload(b"data", "text/plain")


async def test_exhausted_attempts_are_dead_lettered(client: SeppClient, queue: str) -> None:
    await client.enqueue(EnqueueRequest(queue, "t", max_attempts=1))
    jobs = await client.reserve(options(queue))
    assert jobs is not None
    assert await client.nack(jobs[0].ctx) is True
    records = await client.drain_dead_letters(queue)
    assert [r.cause for r in records] == [DeadLetterCause.ATTEMPTS_EXHAUSTED]


async def test_draining_zero_records_makes_no_call(client: SeppClient) -> None:
    await client.close()  # a call on a closed channel would fail
    assert await client.drain_dead_letters(max_records=0) == []


async def test_extend_moves_the_lease_deadline(client: SeppClient, queue: str) -> None:
    await client.enqueue(EnqueueRequest(queue, "t"))
    jobs = await client.reserve(options(queue, lease=2))
    assert jobs is not None
    ctx = jobs[0].ctx
    before = ctx.lease_expires_at
    granted = await ctx.extend(timedelta(seconds=60))
    assert granted > before + timedelta(seconds=30)
    assert ctx.lease_deadline == granted and ctx.lease_expires_at == before  # as at delivery
    assert ctx._lease is not None and ctx._lease.expires_at == granted


async def test_the_server_caps_an_extension_at_its_maximum(start_server, queue: str) -> None:
    srv = start_server({"limits": {"max_lease_duration_ms": 5000}})
    async with await SeppClient.connect(srv.addr) as client:
        await client.enqueue(EnqueueRequest(queue, "t"))
        jobs = await client.reserve(options(queue, lease=1))
        assert jobs is not None
        granted = await client.extend(jobs[0].ctx, timedelta(hours=1))
        assert granted < datetime.now(timezone.utc) + timedelta(seconds=30)


async def test_strict_mode_refuses_undeclared_queues_on_reserve(start_server) -> None:
    srv = start_server({"server": {"strict_queues": True}, "queues": [{"name": "known"}]})
    async with await SeppClient.connect(srv.addr) as client:
        with pytest.raises(UnknownQueuesError):
            await client.reserve(options("unknown"))


async def test_server_info_has_every_limit(start_server) -> None:
    srv = start_server(
        {"limits": {"max_reserve_batch": 77, "allowed_encodings": ["application/json"]}}
    )
    async with await SeppClient.connect(srv.addr) as client:
        info = await client.get_server_info()
    assert info.version and info.supported_protocol_versions
    assert abs(info.server_time - datetime.now(timezone.utc)) < timedelta(minutes=5)
    assert info.max_reserve_batch == 77
    assert info.restricts_encodings and info.allowed_encodings == ["application/json"]
    assert info.max_enqueue_batch == 256 and info.max_reserve_queues == 32
    assert info.max_lease_duration == timedelta(minutes=5)
    assert info.max_wait_timeout == timedelta(minutes=5)
    assert info.max_schedule_horizon == timedelta(days=30)
    assert info.max_payload_bytes == 1048576 and info.max_custom_entries == 64
    assert info.max_custom_total_bytes == 16384 and info.max_custom_key_bytes == 256
    assert (info.max_queue_name_bytes, info.max_job_type_bytes) == (512, 256)
    assert info.max_idempotency_key_bytes == 256
    assert info.strict_queues is False and info.dead_letter_retention_enabled is True
    assert info.cluster is None  # a single node
    assert info.features == [
        "ack_batch",
        "cancel",
        "schedules",
        "pause",
        "in_flight_limits",
        "rate_limits",
        "key_limits",
        "consume",
    ]
    assert info.max_consume_credits == 10_000


async def test_the_receive_limit_applies_to_reserve_answers(start_server, queue: str) -> None:
    srv = start_server()
    async with await SeppClient.connect(srv.addr, max_receive_message_bytes=10_000) as client:
        await client.enqueue(EnqueueRequest(queue, "t", payload=Payload(b"x" * 20_000, "x")))
        with pytest.raises(Exception) as caught:
            await client.reserve(options(queue))
    assert "RESOURCE_EXHAUSTED" in str(caught.value)
