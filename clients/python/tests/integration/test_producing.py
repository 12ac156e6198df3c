"""Enqueue, enqueue_batch and enqueue_atomic against the real server."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

import pytest

from sepp import (
    BatchValidationError,
    EmptyBatchError,
    EnqueueAck,
    EnqueueRequest,
    JobRejectedError,
    JobTypeNotAllowed,
    Payload,
    PayloadTooLarge,
    Priority,
    ReserveOptions,
    SeppClient,
    TraceContext,
    UnknownQueue,
)
from tests.sepp_server import SeppServer

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def take(queue: str, max_jobs: int = 1, wait: float = 2.0) -> ReserveOptions:
    return ReserveOptions(
        [queue], timedelta(seconds=30), wait_timeout=timedelta(seconds=wait), max_jobs=max_jobs
    )


async def test_every_field_of_a_job_reaches_the_worker(client: SeppClient, queue: str) -> None:
    request = EnqueueRequest(
        queue,
        "send_welcome",
        payload=Payload(b'{"user": 42}', "application/json"),
        idempotency_key="welcome-42",
        priority=Priority.P7,
        max_attempts=5,
        custom={"user_id": 42, "vip": True, "score": 1.5, "plan": "pro", "big": 2**62},
        trace_context=TraceContext(TRACEPARENT, "vendor=1"),
    )
    ack = await client.enqueue(request)
    assert ack.job_id and not ack.deduplicated

    jobs = await client.reserve(take(queue))
    assert jobs is not None and len(jobs) == 1
    job = jobs[0]
    assert job.payload == Payload(b'{"user": 42}', "application/json")
    ctx = job.ctx
    assert (ctx.id, ctx.queue, ctx.job_type) == (ack.job_id, queue, "send_welcome")
    assert ctx.priority == Priority.P7 and ctx.attempt == 1 and ctx.max_attempts == 5
    assert ctx.custom == {"user_id": 42, "vip": True, "score": 1.5, "plan": "pro", "big": 2**62}
    assert type(ctx.custom["user_id"]) is int and type(ctx.custom["vip"]) is bool
    assert ctx.trace_context == TraceContext(TRACEPARENT, "vendor=1")
    assert ctx.enqueued_at.tzinfo is not None and ctx.lease_expires_at > ctx.enqueued_at
    assert ctx.scheduled_at is None
    await client.ack(ctx)


async def test_unset_fields_take_the_queue_defaults(start_server, queue: str) -> None:
    srv: SeppServer = start_server({"limits": {"default_priority": 4, "default_max_attempts": 7}})
    async with await SeppClient.connect(srv.addr) as client:
        await client.enqueue(EnqueueRequest(queue, "t"))
        jobs = await client.reserve(take(queue))
        assert jobs is not None
        assert jobs[0].payload is None
        assert jobs[0].ctx.priority == Priority(4) and jobs[0].ctx.max_attempts == 7
        assert jobs[0].ctx.custom == {} and jobs[0].ctx.trace_context is None


async def test_a_repeated_idempotency_key_is_deduplicated(client: SeppClient, queue: str) -> None:
    first = await client.enqueue(EnqueueRequest(queue, "t", idempotency_key="k1"))
    second = await client.enqueue(EnqueueRequest(queue, "t", idempotency_key="k1"))
    assert second.deduplicated and second.job_id == first.job_id


async def test_a_scheduled_job_is_not_ready_before_its_time(client: SeppClient, queue: str) -> None:
    later = datetime.now(timezone.utc) + timedelta(hours=1)
    await client.enqueue(EnqueueRequest(queue, "t", scheduled_at=later))
    assert await client.reserve(take(queue, wait=0.2)) is None


async def test_a_scheduled_time_in_the_past_means_now(client: SeppClient, queue: str) -> None:
    await client.enqueue(EnqueueRequest(queue, "t", scheduled_at=datetime(1960, 1, 1)))
    await client.enqueue(EnqueueRequest(queue, "t", scheduled_at=datetime(2001, 1, 1)))
    jobs = await client.reserve(take(queue, max_jobs=2))
    assert jobs is not None and len(jobs) == 2


async def test_enqueue_raises_the_rejection(start_server, queue: str) -> None:
    srv = start_server({"queues": [{"name": queue, "max_payload_bytes": 4}]})
    async with await SeppClient.connect(srv.addr) as client:
        with pytest.raises(JobRejectedError) as caught:
            await client.enqueue(EnqueueRequest(queue, "t", payload=Payload(b"12345", "x")))
    assert caught.value.rejection == PayloadTooLarge(limit=4, actual=5)


async def test_a_batch_answers_each_job_in_order(start_server) -> None:
    srv = start_server(
        {
            "server": {"strict_queues": True},
            "queues": [{"name": "only", "allowed_job_types": ["a"]}],
        }
    )
    async with await SeppClient.connect(srv.addr) as client:
        results = await client.enqueue_batch(
            [
                EnqueueRequest("only", "a"),
                EnqueueRequest("undeclared", "a"),
                EnqueueRequest("only", "b"),
                EnqueueRequest("only", "a"),
            ]
        )
    assert isinstance(results[0], EnqueueAck) and isinstance(results[3], EnqueueAck)
    assert results[1] == UnknownQueue("undeclared")
    assert results[2] == JobTypeNotAllowed("b", ["a"])
    assert results[0].job_id != results[3].job_id


async def test_an_atomic_batch_is_all_or_nothing(start_server, queue: str) -> None:
    srv = start_server({"queues": [{"name": queue, "allowed_job_types": ["a"]}]})
    async with await SeppClient.connect(srv.addr) as client:
        acks = await client.enqueue_atomic([EnqueueRequest(queue, "a"), EnqueueRequest(queue, "a")])
        assert len(acks) == 2 and all(isinstance(a, EnqueueAck) for a in acks)
        with pytest.raises(BatchValidationError) as caught:
            await client.enqueue_atomic(
                [EnqueueRequest(queue, "a"), EnqueueRequest(queue, "b"), EnqueueRequest(queue, "c")]
            )
        assert [(e.index, e.rejection) for e in caught.value.errors] == [
            (1, JobTypeNotAllowed("b", ["a"])),
            (2, JobTypeNotAllowed("c", ["a"])),
        ]
        jobs = await client.reserve(take(queue, max_jobs=10, wait=0.2))
        assert jobs is not None and len(jobs) == 2  # only the first batch went in


async def test_empty_batches_are_refused_before_any_call(client: SeppClient) -> None:
    with pytest.raises(EmptyBatchError):
        await client.enqueue_batch([])
    with pytest.raises(EmptyBatchError):
        await client.enqueue_atomic(iter([]))


async def test_bad_custom_values_fail_before_any_call(client: SeppClient, queue: str) -> None:
    with pytest.raises(TypeError, match="custom value 'when'"):
        await client.enqueue(EnqueueRequest(queue, "t", custom={"when": datetime.now()}))  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="64-bit"):
        await client.enqueue(EnqueueRequest(queue, "t", custom={"n": 2**63}))


async def test_concurrent_enqueues_each_get_their_own_answer(start_server, new_queue) -> None:
    srv = start_server({"queues": [{"name": "tiny", "max_payload_bytes": 1}]})
    good = new_queue()
    async with await SeppClient.connect(srv.addr) as client:
        requests = [
            EnqueueRequest(good, "t", custom={"n": i})
            if i % 5
            else EnqueueRequest("tiny", "t", payload=Payload(b"too big", "x"))
            for i in range(200)
        ]
        outcomes = await asyncio.gather(
            *(client.enqueue(r) for r in requests), return_exceptions=True
        )
        acks = [o for o in outcomes if isinstance(o, EnqueueAck)]
        rejected = [i for i, o in enumerate(outcomes) if isinstance(o, JobRejectedError)]
        assert rejected == list(range(0, 200, 5))
        assert len({a.job_id for a in acks}) == 160
        jobs = await client.reserve(take(good, max_jobs=200))
        assert jobs is not None
        assert sorted(int(j.ctx.custom["n"]) for j in jobs) == [i for i in range(200) if i % 5]
        assert {j.ctx.id for j in jobs} == {a.job_id for a in acks}


async def test_coalesced_calls_over_the_servers_batch_limit_are_resent_per_caller(
    start_server, queue: str
) -> None:
    srv = start_server({"limits": {"max_enqueue_batch": 3}})
    async with await SeppClient.connect(srv.addr) as client:
        batches = [
            [EnqueueRequest(queue, "t", custom={"b": b, "i": i}) for i in range(2)]
            for b in range(40)
        ]
        results = await asyncio.gather(*(client.enqueue_batch(batch) for batch in batches))
        assert all(isinstance(r, EnqueueAck) for batch in results for r in batch)
        jobs = await client.reserve(take(queue, max_jobs=100))
        assert jobs is not None and len(jobs) == 80


async def test_without_coalescing_every_enqueue_is_its_own_call(start_server, queue: str) -> None:
    srv = start_server({"limits": {"max_enqueue_batch": 1}})
    async with await SeppClient.connect(srv.addr, coalesce_enqueues=False) as client:
        acks = await asyncio.gather(
            *(client.enqueue(EnqueueRequest(queue, "t")) for _ in range(30))
        )
        assert len({a.job_id for a in acks}) == 30
