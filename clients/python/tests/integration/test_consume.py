"""The Worker on the Consume stream, against the real server (it must list the feature
"consume", or every test here fails): jobs pushed and acked, the queue's in-flight limit,
cancellations pushed to running handlers, nack and extend answered as the unary calls are, a
cluster's follower ending the stream, and `streaming=False`. The fallback to reserve calls
needs a server without the stream: it is in test_consume_wire.py, against a stub."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest

from sepp import (
    DeadLetterCause,
    EnqueueRequest,
    HandlerError,
    JobCtx,
    JobNotFoundError,
    Payload,
    ReserveOptions,
    SeppClient,
    Worker,
)
from tests.integration.test_cluster import cluster, leader_of  # noqa: F401 (a fixture)
from tests.sepp_server import SeppServer

WAIT = 20.0  # the most any signal below is waited for


@pytest.fixture(autouse=True)
async def consume_server(server: SeppServer) -> None:
    """These tests need a server with the stream; a binary without it fails them, loudly."""
    async with await SeppClient.connect(server.addr) as client:
        features = (await client.get_server_info()).features
    assert "consume" in features, f"SEPP_BIN has no Consume stream (features: {features})"


async def run_until(worker: Worker, done: Callable[[], Awaitable[object]]) -> None:
    """Run `worker` until `done()` resolves, then shut it down and wait for run() to return."""
    task = asyncio.ensure_future(worker.run())
    try:
        await asyncio.wait_for(done(), WAIT)
    finally:
        worker.shutdown_handle().shutdown()
        await asyncio.wait_for(task, WAIT)


async def assert_finished(client: SeppClient, job_ids: list[str]) -> None:
    """The server knows none of `job_ids` any more (a cancel of a finished job is NOT_FOUND)."""
    for job_id in job_ids:
        with pytest.raises(JobNotFoundError):
            await client.cancel(job_id)


async def test_a_streaming_worker_drains_the_queue_and_acks_every_job(
    client: SeppClient, queue: str
) -> None:
    acks = await client.enqueue_batch([EnqueueRequest(queue, "t") for _ in range(30)])
    job_ids = [ack.job_id for ack in acks]  # type: ignore[union-attr]
    worker = Worker(client, [queue], timedelta(seconds=30), max_in_flight=4)
    handled: list[str] = []
    all_handled = asyncio.Event()

    @worker.handler("t")
    async def handle(payload: Payload | None, ctx: JobCtx) -> None:
        handled.append(ctx.id)
        if len(handled) == len(job_ids):
            all_handled.set()

    await run_until(worker, all_handled.wait)
    assert worker.transport == "consume"
    assert sorted(handled) == sorted(job_ids)
    await assert_finished(client, job_ids)
    options = ReserveOptions([queue], timedelta(seconds=30), wait_timeout=timedelta(0))
    assert await client.reserve(options) is None


async def test_a_streaming_worker_runs_no_more_than_the_queues_max_in_flight(
    start_server: Callable[..., SeppServer], queue: str
) -> None:
    limit = 2
    srv = start_server({"queues": [{"name": queue, "max_in_flight": limit}]})
    async with await SeppClient.connect(srv.addr) as client:
        acks = await client.enqueue_batch([EnqueueRequest(queue, "t") for _ in range(8)])
        worker = Worker(client, [queue], timedelta(seconds=30), max_in_flight=8)
        running = peak = done = 0
        changed = asyncio.Condition()
        released = asyncio.Event()
        all_done = asyncio.Event()

        @worker.handler("t")
        async def handle(payload: Payload | None, ctx: JobCtx) -> None:
            nonlocal running, peak, done
            async with changed:
                running += 1
                peak = max(peak, running)
                changed.notify_all()
            await released.wait()  # the first jobs are held until the probe below has run
            running -= 1
            done += 1
            if done == len(acks):
                all_done.set()

        async def probe() -> None:
            async with changed:
                await changed.wait_for(lambda: running >= limit)
            # While the worker holds `limit` jobs, the server leases nothing more to anyone.
            options = ReserveOptions([queue], timedelta(seconds=30), wait_timeout=timedelta(0))
            assert await client.reserve(options) is None
            released.set()
            await all_done.wait()

        await run_until(worker, probe)
        assert worker.transport == "consume"
        assert peak == limit
        await assert_finished(client, [ack.job_id for ack in acks])  # type: ignore[union-attr]


async def test_a_cancel_is_pushed_to_the_running_handler(client: SeppClient, queue: str) -> None:
    ack = await client.enqueue(EnqueueRequest(queue, "t"))
    # A lease far longer than the test, and no auto-extend: only the pushed cancel can stop it.
    worker = Worker(client, [queue], timedelta(minutes=10))
    started = asyncio.Event()
    observed = asyncio.Event()

    @worker.handler("t")
    async def handle(payload: Payload | None, ctx: JobCtx) -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            observed.set()
            raise

    async def cancel_then_observe() -> None:
        await started.wait()
        assert await client.cancel(ack.job_id) is True
        await observed.wait()

    await run_until(worker, cancel_then_observe)
    assert worker.transport == "consume"
    (record,) = await client.drain_dead_letters(queue, 10)
    assert (record.job_id, record.cause) == (ack.job_id, DeadLetterCause.CANCELLED)


async def test_nack_and_extend_on_the_stream_answer_as_the_unary_calls_do(
    client: SeppClient, queue: str
) -> None:
    first = await client.enqueue(EnqueueRequest(queue, "first", max_attempts=3))
    worker = Worker(client, [queue], timedelta(seconds=30), max_in_flight=1)
    seen: dict[str, Any] = {}
    finished = asyncio.Event()

    @worker.handler("first")
    async def handle_first(payload: Payload | None, ctx: JobCtx) -> None:
        # An extend of a lease this stream holds: the deadline granted, kept on the ctx.
        seen["extended"] = await ctx.extend(timedelta(seconds=60))
        seen["deadline"] = ctx.lease_deadline
        seen["first"] = ctx
        await client.enqueue(EnqueueRequest(queue, "second"))
        raise HandlerError.permanent("no retries for this one")  # a nack that dead-letters

    @worker.handler("second")
    async def handle_second(payload: Payload | None, ctx: JobCtx) -> None:
        # The first job's lease is gone (dead-lettered): on the stream and as unary calls.
        stale: JobCtx = seen["first"]
        for extend in (stale.extend, lambda e: client.extend(stale, e)):
            try:
                await extend(timedelta(seconds=5))
            except Exception as err:
                seen.setdefault("errors", []).append((type(err), str(err)))
        finished.set()

    await run_until(worker, finished.wait)
    assert seen["deadline"] == seen["extended"] > seen["first"].lease_expires_at
    on_stream, unary = seen["errors"]
    assert on_stream == unary and on_stream[0] is JobNotFoundError
    (record,) = await client.drain_dead_letters(queue, 10)
    assert (record.job_id, record.cause) == (first.job_id, DeadLetterCause.REJECTED)
    assert record.last_reason == "no retries for this one"


async def test_a_worker_follows_a_follower_to_the_leader_and_streams_there(
    cluster: list[SeppServer],  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    leader = await leader_of(cluster)
    follower = next(node for node in cluster if node is not leader)
    async with await SeppClient.connect(leader.addr) as on_leader:
        await on_leader.get_server_info()  # a cluster: the enqueue waits for it to serve
        ack = await on_leader.enqueue(EnqueueRequest("followed", "t"))
    async with await SeppClient.connect(follower.addr) as client:
        # The follower names the leader once it has heard from it.
        for _ in range(int(WAIT / 0.05)):
            cluster_info = (await client.get_server_info()).cluster
            if cluster_info is not None and cluster_info.leader_addr == leader.addr:
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError(f"the follower at {follower.addr} never named the leader")
        worker = Worker(client, ["followed"], timedelta(seconds=30))
        handled = asyncio.Event()

        @worker.handler("t")
        async def handle(payload: Payload | None, ctx: JobCtx) -> None:
            handled.set()

        with caplog.at_level(logging.INFO, logger="sepp"):
            await run_until(worker, handled.wait)
        assert worker.transport == "consume"
        # The follower ended the stream naming the leader, where it was opened again.
        assert f"following the cluster leader to {leader.addr}" in caplog.text
        assert "consume stream ended" not in caplog.text  # no backoff: reopened at once
        await assert_finished(client, [ack.job_id])


async def test_with_streaming_off_the_worker_reserves(client: SeppClient, queue: str) -> None:
    ack = await client.enqueue(EnqueueRequest(queue, "t"))
    worker = Worker(
        client, [queue], timedelta(seconds=30), wait_timeout=timedelta(seconds=1), streaming=False
    )
    handled = asyncio.Event()

    @worker.handler("t")
    async def handle(payload: Payload | None, ctx: JobCtx) -> None:
        handled.set()

    await run_until(worker, handled.wait)
    assert not worker.streaming and worker.transport == "reserve"
    await assert_finished(client, [ack.job_id])
