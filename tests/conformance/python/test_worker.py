"""The sepp-py Worker driving a real server: ack, retry, dead-letter, shutdown."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta

import pytest
from sepp import (
    DeadLetterCause,
    EnqueueRequest,
    HandlerError,
    JobNotFoundError,
    Payload,
    SeppClient,
    Worker,
)

from harness import running_server
from helpers import assert_empty, drain_until, reserve_one

STEP_TIMEOUT = 10.0


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(
        tmp_path_factory, {"storage": {"dead_letter_retention_ms": 3_600_000}}
    ) as srv:
        yield srv


def make_worker(client: SeppClient, queue: str, **kwargs) -> Worker:
    kwargs.setdefault("wait_timeout", timedelta(seconds=1))
    return Worker(client, [queue], timedelta(seconds=30), **kwargs)


async def run_until(worker: Worker, done: Callable[[], Awaitable[object]]) -> None:
    """Run ``worker`` until ``done()`` completes, then shut it down gracefully."""
    handle = worker.shutdown_handle()
    task = asyncio.create_task(worker.run())
    try:
        await asyncio.wait_for(done(), timeout=STEP_TIMEOUT)
    finally:
        handle.shutdown()
        await asyncio.wait_for(task, timeout=STEP_TIMEOUT)
    assert handle.is_shutdown


async def test_worker_runs_the_handler_for_each_job_and_acks_it(client, new_queue):
    q = new_queue()
    acks = await client.enqueue_batch(
        [EnqueueRequest(q, "add", payload=Payload(str(i).encode(), "text/plain")) for i in range(5)]
    )
    seen: dict[str, bytes] = {}
    ctxs = []
    all_done = asyncio.Event()

    worker = make_worker(client, q)

    @worker.handler("add")
    async def add(payload, ctx):
        seen[ctx.id] = payload.data
        ctxs.append(ctx)
        assert ctx.queue == q and ctx.attempt == 1
        if len(seen) == 5:
            all_done.set()

    await run_until(worker, all_done.wait)
    assert seen == {a.job_id: str(i).encode() for i, a in enumerate(acks)}
    # run() returned after the in-flight jobs were disposed of: all are acked.
    for ctx in ctxs:
        with pytest.raises(JobNotFoundError):
            await client.ack(ctx)
    await assert_empty(client, q)


async def test_worker_retries_a_job_whose_handler_raised(client, new_queue):
    q = new_queue()
    ack = await client.enqueue(EnqueueRequest(q, "flaky"))
    attempts: list[int] = []
    succeeded = asyncio.Event()
    worker = make_worker(client, q)

    @worker.handler("flaky")
    async def flaky(payload, ctx):
        attempts.append(ctx.attempt)
        if ctx.attempt == 1:
            raise RuntimeError("boom")
        succeeded.set()

    await run_until(worker, succeeded.wait)
    assert attempts == [1, 2]
    await assert_empty(client, q)
    assert ack.job_id


async def test_worker_retry_after_delays_the_next_attempt(client, new_queue):
    q = new_queue()
    await client.enqueue(EnqueueRequest(q, "later"))
    calls: list[int] = []
    succeeded = asyncio.Event()
    worker = make_worker(client, q)

    @worker.handler("later")
    async def later(payload, ctx):
        calls.append(ctx.attempt)
        if ctx.attempt == 1:
            raise HandlerError.retry_after("not yet", timedelta(milliseconds=300))
        succeeded.set()

    # Retried, not dead-lettered. (That a nack's delay holds the job back:
    # test_leases.py, test_nack_with_a_delay_is_not_redelivered_before_the_delay.)
    await run_until(worker, succeeded.wait)
    assert calls == [1, 2]


async def test_worker_permanent_error_dead_letters_the_job(client, new_queue):
    q = new_queue()
    ack = await client.enqueue(EnqueueRequest(q, "poison", max_attempts=5))
    calls: list[int] = []
    worker = make_worker(client, q)

    @worker.handler("poison")
    async def poison(payload, ctx):
        calls.append(ctx.attempt)
        raise HandlerError.permanent("cannot parse")

    records = []

    async def dead_lettered():
        records.extend(await drain_until(client, q, 1, timeout=STEP_TIMEOUT))

    await run_until(worker, dead_lettered)
    assert calls == [1]
    [record] = records
    assert record.job_id == ack.job_id
    assert record.cause == DeadLetterCause.REJECTED
    assert record.last_reason == "cannot parse"


async def test_worker_dead_letters_a_job_that_keeps_failing_after_max_attempts(client, new_queue):
    q = new_queue()
    ack = await client.enqueue(EnqueueRequest(q, "always-fails", max_attempts=2))
    calls: list[int] = []
    worker = make_worker(client, q)

    @worker.handler("always-fails")
    async def always_fails(payload, ctx):
        calls.append(ctx.attempt)
        raise HandlerError.retry("still broken")

    records = []

    async def dead_lettered():
        records.extend(await drain_until(client, q, 1, timeout=STEP_TIMEOUT))

    await run_until(worker, dead_lettered)
    assert calls == [1, 2]
    [record] = records
    assert record.job_id == ack.job_id
    assert record.cause == DeadLetterCause.ATTEMPTS_EXHAUSTED
    assert record.final_attempt == 2
    assert record.last_reason == "still broken"


async def test_worker_catch_all_handles_job_types_without_a_handler(client, new_queue):
    q = new_queue()
    await client.enqueue_batch([EnqueueRequest(q, "known"), EnqueueRequest(q, "unknown")])
    handled: list[tuple[str, str]] = []
    both = asyncio.Event()
    worker = make_worker(client, q)

    def record(kind: str, ctx) -> None:
        handled.append((kind, ctx.job_type))
        if len(handled) == 2:
            both.set()

    @worker.handler("known")
    async def known(payload, ctx):
        record("handler", ctx)

    @worker.catch_all
    async def fallback(payload, ctx):
        record("catch_all", ctx)

    await run_until(worker, both.wait)
    assert sorted(handled) == [("catch_all", "unknown"), ("handler", "known")]
    await assert_empty(client, q)


async def test_worker_shutdown_waits_for_in_flight_jobs_and_takes_no_new_ones(client, new_queue):
    q = new_queue()
    first = await client.enqueue(EnqueueRequest(q, "slow"))
    started = asyncio.Event()
    release = asyncio.Event()
    ctxs = []
    worker = make_worker(client, q, max_in_flight=1)

    @worker.handler("slow")
    async def slow(payload, ctx):
        ctxs.append(ctx)
        started.set()
        await release.wait()

    handle = worker.shutdown_handle()
    task = asyncio.create_task(worker.run())
    await asyncio.wait_for(started.wait(), timeout=STEP_TIMEOUT)
    second = await client.enqueue(EnqueueRequest(q, "slow"))
    handle.shutdown()
    # run() must not return while the handler is still running.
    done, _ = await asyncio.wait({task}, timeout=0.3)
    assert not done, "worker.run() returned before its in-flight job finished"
    release.set()
    await asyncio.wait_for(task, timeout=STEP_TIMEOUT)

    assert [c.id for c in ctxs] == [first.job_id]
    with pytest.raises(JobNotFoundError):
        await client.ack(ctxs[0])  # acked by the worker on its way out
    leftover = await reserve_one(client, q)
    assert leftover.ctx.id == second.job_id and leftover.ctx.attempt == 1
    await client.ack(leftover.ctx)
