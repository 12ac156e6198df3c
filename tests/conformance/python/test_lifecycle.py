"""Process lifecycle: graceful shutdown (docs/operations.md#stopping) and durability across restarts."""

from __future__ import annotations

import asyncio
from datetime import timedelta

from sepp import (
    DeadLetterCause,
    EnqueueAck,
    EnqueueRequest,
    Payload,
    RetryDirective,
    SeppClient,
)

from harness import WATCH_PARKED
from helpers import assert_empty, opts, reserve_one, utcnow


async def test_sigterm_ends_a_parked_reserve_empty_and_exits_0(start_server, new_queue):
    srv = start_server(WATCH_PARKED)
    async with await SeppClient.connect(srv.addr) as c:
        waiter = asyncio.create_task(c.reserve(opts(new_queue(), wait=timedelta(seconds=60))))
        await srv.wait_parked(1)  # the SIGTERM below comes after the server parked it
        assert not waiter.done()
        rc = await asyncio.to_thread(srv.stop)
        assert rc == 0
        # Answered by the shutdown: its own wait (60 s) outlasts this one.
        assert await asyncio.wait_for(waiter, timeout=10) is None
    assert "shutdown signal received" in srv.output()


async def test_jobs_dedup_records_and_dead_letters_survive_a_restart(start_server, new_queue):
    srv = start_server({"storage": {"dead_letter_retention_ms": 3_600_000}})
    q, dq = new_queue("jobs"), new_queue("dead")
    payload = Payload(b"durable", "text/plain")
    due = utcnow() + timedelta(milliseconds=800)
    async with await SeppClient.connect(srv.addr) as c:
        ready = await c.enqueue(
            EnqueueRequest(q, "t", payload=payload, priority=3, idempotency_key="once")
        )
        scheduled = await c.enqueue(EnqueueRequest(q, "later", scheduled_at=due))
        await c.enqueue(EnqueueRequest(dq, "t"))
        job = await reserve_one(c, dq)
        await c.nack(job.ctx, RetryDirective.DEAD_LETTER, "kept")

    srv.restart()

    async with await SeppClient.connect(srv.addr) as c:
        dup = await c.enqueue(EnqueueRequest(q, "t", idempotency_key="once"))
        assert dup == EnqueueAck(job_id=ready.job_id, deduplicated=True)
        first = await reserve_one(c, q)
        assert first.ctx.id == ready.job_id
        assert first.payload == payload
        assert int(first.ctx.priority) == 3
        assert first.ctx.attempt == 1
        second = await reserve_one(c, q)  # the scheduled job, once due
        assert second.ctx.id == scheduled.job_id
        assert utcnow() >= due - timedelta(milliseconds=5)
        [record] = await c.drain_dead_letters(queue=dq, max_records=10)
        assert record.job_id == job.ctx.id
        assert record.cause == DeadLetterCause.REJECTED
        assert record.last_reason == "kept"


async def test_a_lease_held_across_a_restart_is_redelivered_as_the_next_attempt(
    start_server, new_queue
):
    srv = start_server()
    q = new_queue()
    async with await SeppClient.connect(srv.addr) as c:
        ack = await c.enqueue(EnqueueRequest(q, "t"))
        await reserve_one(c, q, lease=timedelta(milliseconds=500))

    srv.restart()

    async with await SeppClient.connect(srv.addr) as c:
        again = await reserve_one(c, q)
        assert again.ctx.id == ack.job_id
        assert again.ctx.attempt == 2
        await c.ack(again.ctx)
        await assert_empty(c, q)


async def test_large_payloads_come_back_byte_for_byte_before_and_after_a_restart(
    start_server, new_queue
):
    # Payloads above a few dozen bytes are read back from the log rather than kept in memory;
    # this checks that path with distinct bytes per job, live and after the log is replayed.
    srv = start_server({"storage": {"dead_letter_retention_ms": 3_600_000}})
    q, dq = new_queue("big"), new_queue("bigdead")
    blobs = [bytes((i * 7 + k) % 256 for k in range(1000 + i)) for i in range(6)]
    async with await SeppClient.connect(srv.addr) as c:
        ids = [
            (await c.enqueue(EnqueueRequest(q, "t", payload=Payload(b, "application/octet-stream")))).job_id
            for b in blobs
        ]
        first = await reserve_one(c, q)
        assert (first.ctx.id, first.payload.data) == (ids[0], blobs[0])
        await c.ack(first.ctx)
        await c.enqueue(EnqueueRequest(dq, "t", payload=Payload(blobs[5], "bin")))
        dead = await reserve_one(c, dq)
        await c.nack(dead.ctx, RetryDirective.DEAD_LETTER, "kept")

    srv.restart()

    async with await SeppClient.connect(srv.addr) as c:
        for job_id, blob in zip(ids[1:], blobs[1:]):
            job = await reserve_one(c, q)
            assert job.ctx.id == job_id
            assert job.payload == Payload(blob, "application/octet-stream")
        [record] = await c.drain_dead_letters(queue=dq, max_records=10)
        assert record.payload == Payload(blobs[5], "bin")
