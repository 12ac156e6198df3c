"""The Worker against the real server: outcomes, concurrency, leases and shutdown."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest

from sepp import (
    DeadLetterCause,
    EnqueueAck,
    EnqueueRequest,
    HandlerError,
    JobCtx,
    JobNotFoundError,
    Payload,
    ReserveOptions,
    SeppClient,
    Worker,
)
from tests.sepp_server import WATCH_PARKED, SeppServer

WAIT = 20.0  # the most any signal below is waited for


def fast_worker(client: SeppClient, queue: str, **kw: Any) -> Worker:
    kw.setdefault("wait_timeout", timedelta(seconds=1))
    return Worker(client, [queue], kw.pop("lease", timedelta(seconds=30)), **kw)


async def run_until(worker: Worker, done: Callable[[], Awaitable[object]]) -> None:
    """Run `worker` until `done()` resolves, then shut it down and wait for run() to return."""
    task = asyncio.ensure_future(worker.run())
    try:
        await asyncio.wait_for(done(), WAIT)
    finally:
        worker.shutdown_handle().shutdown()
        await asyncio.wait_for(task, WAIT)


def reserve(queue: str, wait: float = 5.0) -> ReserveOptions:
    return ReserveOptions([queue], timedelta(seconds=30), wait_timeout=timedelta(seconds=wait))


async def test_returning_acks_and_handlers_see_payload_and_ctx(
    client: SeppClient, queue: str
) -> None:
    await client.enqueue(EnqueueRequest(queue, "greet", payload=Payload(b"hi", "text/plain")))
    worker = fast_worker(client, queue)
    seen: asyncio.Future[tuple[Payload | None, JobCtx]] = asyncio.get_running_loop().create_future()

    @worker.handler("greet")
    async def greet(payload: Payload | None, ctx: JobCtx) -> None:
        seen.set_result((payload, ctx))

    await run_until(worker, lambda: seen)
    payload, ctx = seen.result()
    assert payload == Payload(b"hi", "text/plain") and ctx.job_type == "greet"
    assert ctx._lease is not None and ctx._lease.worker_id == worker.worker_id
    assert await client.reserve(reserve(queue, wait=0.2)) is None  # acked, gone


async def test_handler_errors_map_to_their_nacks(client: SeppClient, queue: str) -> None:
    for job_type in ("retry", "later", "permanent", "crash"):
        await client.enqueue(EnqueueRequest(queue, job_type, max_attempts=5))
    worker = fast_worker(client, queue)
    handled: list[tuple[str, int]] = []
    both_back = asyncio.Event()

    async def fail(payload: Payload | None, ctx: JobCtx) -> None:
        handled.append((ctx.job_type, ctx.attempt))
        if ctx.attempt > 1:
            if {("retry", 2), ("crash", 2)} <= set(handled):
                both_back.set()
            return
        if ctx.job_type == "retry":
            raise HandlerError.retry("not yet")
        if ctx.job_type == "later":
            raise HandlerError.retry_after("much later", timedelta(hours=1))
        if ctx.job_type == "permanent":
            raise HandlerError.permanent("never")
        raise RuntimeError("boom")

    for job_type in ("retry", "later", "permanent", "crash"):
        worker.handle(job_type, fail)
    # retry comes back at once, crash after its 2 s backoff; later is an hour away, and the
    # permanent failure is dead-lettered.
    await run_until(worker, both_back.wait)
    assert sorted(handled) == [
        ("crash", 1), ("crash", 2), ("later", 1), ("permanent", 1), ("retry", 1), ("retry", 2)
    ]  # fmt: skip
    records = await client.drain_dead_letters(queue, max_records=10)
    assert [(r.job_type, r.cause, r.last_reason) for r in records] == [
        ("permanent", DeadLetterCause.REJECTED, "never")
    ]


async def test_retry_after_delays_the_redelivery(client: SeppClient, queue: str) -> None:
    await client.enqueue(EnqueueRequest(queue, "t"))
    worker = fast_worker(client, queue)
    attempts: list[int] = []
    second = asyncio.Event()

    @worker.handler("t")
    async def handle(payload: Payload | None, ctx: JobCtx) -> None:
        attempts.append(ctx.attempt)
        if ctx.attempt == 1:
            raise HandlerError.retry_after("wait a bit", timedelta(milliseconds=300))
        second.set()

    await run_until(worker, second.wait)
    assert attempts == [1, 2]


async def test_a_crashed_handler_is_logged_and_the_worker_goes_on(
    client: SeppClient, queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    for n in range(3):
        await client.enqueue(EnqueueRequest(queue, "t", custom={"n": n}))
    worker = fast_worker(client, queue)
    done: list[int] = []
    finished = asyncio.Event()

    @worker.handler("t")
    async def handle(payload: Payload | None, ctx: JobCtx) -> None:
        if ctx.custom["n"] == 0:
            raise ValueError("bad input")
        done.append(int(ctx.custom["n"]))
        if len(done) == 2:
            finished.set()

    with caplog.at_level(logging.ERROR, logger="sepp"):
        await run_until(worker, finished.wait)
    assert sorted(done) == [1, 2]
    assert "handler raised ValueError" in caplog.text


async def test_unknown_types_go_to_the_catch_all(client: SeppClient, queue: str) -> None:
    await client.enqueue(EnqueueRequest(queue, "mystery"))
    worker = fast_worker(client, queue)
    caught: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    worker.handle("known", lambda p, c: asyncio.sleep(0))

    @worker.catch_all
    async def fallback(payload: Payload | None, ctx: JobCtx) -> None:
        caught.set_result(ctx.job_type)

    await run_until(worker, lambda: caught)
    assert caught.result() == "mystery"
    assert await client.reserve(reserve(queue, wait=0.2)) is None


async def test_an_unknown_type_without_catch_all_is_nacked_with_a_backoff(
    client: SeppClient, queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    await client.enqueue(EnqueueRequest(queue, "mystery"))
    worker = fast_worker(client, queue)
    worker.handle("known", lambda p, c: asyncio.sleep(0))
    with caplog.at_level(logging.WARNING, logger="sepp"):
        task = asyncio.ensure_future(worker.run())
        while "no handler registered" not in caplog.text:
            await asyncio.sleep(0.02)
        worker.shutdown_handle().shutdown()
        await asyncio.wait_for(task, WAIT)
    assert await client.reserve(reserve(queue, wait=0.3)) is None  # not back at once
    again = await client.reserve(reserve(queue, wait=WAIT))  # back after 2 s
    assert again is not None and again[0].ctx.attempt == 2


async def test_max_in_flight_bounds_the_running_handlers(client: SeppClient, queue: str) -> None:
    await client.enqueue_batch([EnqueueRequest(queue, "t") for _ in range(12)])
    worker = fast_worker(client, queue, max_in_flight=4)
    running = 0
    peak = 0
    release = asyncio.Event()
    full = asyncio.Event()
    finished = 0
    all_done = asyncio.Event()

    @worker.handler("t")
    async def handle(payload: Payload | None, ctx: JobCtx) -> None:
        nonlocal running, peak, finished
        running += 1
        peak = max(peak, running)
        if running == 4:
            full.set()
        await release.wait()
        running -= 1
        finished += 1
        if finished == 12:
            all_done.set()

    task = asyncio.ensure_future(worker.run())
    await asyncio.wait_for(full.wait(), WAIT)
    # Four are running; the other eight must still be in the queue, not leased by the worker.
    assert worker._in_flight == 4
    release.set()
    await asyncio.wait_for(all_done.wait(), WAIT)
    worker.shutdown_handle().shutdown()
    await asyncio.wait_for(task, WAIT)
    assert peak == 4


async def test_shutdown_waits_for_the_jobs_in_flight(client: SeppClient, queue: str) -> None:
    await client.enqueue(EnqueueRequest(queue, "slow"))
    worker = fast_worker(client, queue)
    started = asyncio.Event()
    release = asyncio.Event()

    @worker.handler("slow")
    async def slow(payload: Payload | None, ctx: JobCtx) -> None:
        started.set()
        await release.wait()

    task = asyncio.ensure_future(worker.run())
    await asyncio.wait_for(started.wait(), WAIT)
    worker.shutdown_handle().shutdown()
    assert worker.shutdown_handle().is_shutdown
    done, _ = await asyncio.wait({task}, timeout=0.3)
    assert not done  # still draining the slow job
    release.set()
    await asyncio.wait_for(task, WAIT)
    assert await client.reserve(reserve(queue, wait=0.2)) is None  # it was acked


async def test_shutdown_interrupts_an_idle_long_poll(
    start_server: Callable[..., SeppServer], queue: str
) -> None:
    server = start_server(WATCH_PARKED)
    async with await SeppClient.connect(server.addr) as client:
        worker = Worker(client, [queue], timedelta(seconds=30), wait_timeout=timedelta(seconds=60))
        task = asyncio.ensure_future(worker.run())
        # Its long poll (60 s, past WAIT) is parked before the shutdown.
        await asyncio.to_thread(server.wait_parked, 1)
        worker.shutdown_handle().shutdown()
        await asyncio.wait_for(task, WAIT)


async def test_shutdown_before_run_returns_at_once(client: SeppClient, queue: str) -> None:
    worker = fast_worker(client, queue)
    worker.shutdown_handle().shutdown()
    await asyncio.wait_for(worker.run(), WAIT)


async def test_auto_extend_keeps_a_long_handler_alive(client: SeppClient, queue: str) -> None:
    ack = await client.enqueue(EnqueueRequest(queue, "long"))
    worker = fast_worker(client, queue, lease=timedelta(seconds=1), auto_extend=True)
    extended = asyncio.Event()

    @worker.handler("long")
    async def long(payload: Payload | None, ctx: JobCtx) -> None:
        first = ctx.lease_expires_at
        # Outlive the first lease by far: wait until the heartbeat has moved it twice.
        while ctx.lease_deadline < first + timedelta(milliseconds=1200):
            await asyncio.sleep(0.05)
        extended.set()

    await run_until(worker, extended.wait)  # run() returns once the job is settled
    with pytest.raises(JobNotFoundError):  # acked: the server no longer knows it
        await client.cancel(ack.job_id)


async def test_a_lost_lease_cancels_the_handler_and_settles_nothing(
    client: SeppClient, queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    await client.enqueue(EnqueueRequest(queue, "t"))
    worker = fast_worker(
        client,
        queue,
        lease=timedelta(milliseconds=500),
        auto_extend_interval=timedelta(seconds=2),
        max_in_flight=1,  # so that the redelivery goes to the test, not back to the worker
    )
    cancelled = asyncio.Event()
    started = asyncio.Event()

    @worker.handler("t")
    async def handle(payload: Payload | None, ctx: JobCtx) -> None:
        started.set()
        try:
            await asyncio.Event().wait()  # forever
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with caplog.at_level(logging.ERROR, logger="sepp"):
        task = asyncio.ensure_future(worker.run())
        await asyncio.wait_for(started.wait(), WAIT)
        # The lease (0.5 s) runs out before the first heartbeat (2 s); another consumer takes it.
        taken = await client.reserve(reserve(queue, wait=WAIT))
        assert taken is not None and taken[0].ctx.attempt == 2
        await asyncio.wait_for(cancelled.wait(), WAIT)
        worker.shutdown_handle().shutdown()
        await asyncio.wait_for(task, WAIT)
    assert "lease lost; handler aborted" in caplog.text
    await client.ack(taken[0].ctx)  # attempt 2 is still ours: the worker sent no nack or ack


async def test_a_handler_that_swallows_the_cancellation_still_settles_nothing(
    client: SeppClient, queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    await client.enqueue(EnqueueRequest(queue, "t"))
    worker = fast_worker(
        client,
        queue,
        lease=timedelta(milliseconds=500),
        auto_extend_interval=timedelta(seconds=2),
        max_in_flight=1,  # so that the redelivery goes to the test, not back to the worker
    )
    swallowed = asyncio.Event()
    started = asyncio.Event()

    @worker.handler("t")
    async def handle(payload: Payload | None, ctx: JobCtx) -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            swallowed.set()  # and return normally, as if it had finished

    with caplog.at_level(logging.ERROR, logger="sepp"):
        task = asyncio.ensure_future(worker.run())
        await asyncio.wait_for(started.wait(), WAIT)
        taken = await client.reserve(reserve(queue, wait=WAIT))
        assert taken is not None
        await asyncio.wait_for(swallowed.wait(), WAIT)
        worker.shutdown_handle().shutdown()
        await asyncio.wait_for(task, WAIT)
    assert "lease lost; handler aborted" in caplog.text
    await client.ack(taken[0].ctx)


async def test_reserve_errors_back_off_and_the_worker_keeps_going(
    start_server, caplog: pytest.LogCaptureFixture
) -> None:
    srv = start_server({"server": {"strict_queues": True}})
    async with await SeppClient.connect(srv.addr) as client:
        worker = Worker(
            client,
            ["undeclared"],
            timedelta(seconds=5),
            reserve_error_backoff=timedelta(milliseconds=50),
            streaming=False,
        )
        with caplog.at_level(logging.WARNING, logger="sepp"):
            task = asyncio.ensure_future(worker.run())
            while caplog.text.count("reserve error") < 2:
                await asyncio.sleep(0.02)
            worker.shutdown_handle().shutdown()
            await asyncio.wait_for(task, WAIT)
    assert "backing off" in caplog.text


async def test_jobs_of_a_batch_run_concurrently(client: SeppClient, queue: str) -> None:
    await client.enqueue_batch([EnqueueRequest(queue, "t") for _ in range(5)])
    worker = fast_worker(client, queue, max_in_flight=5)
    arrived = 0
    all_there = asyncio.Event()

    @worker.handler("t")
    async def handle(payload: Payload | None, ctx: JobCtx) -> None:
        nonlocal arrived
        arrived += 1
        if arrived == 5:
            all_there.set()
        await all_there.wait()  # only returns once all five run at the same time

    await run_until(worker, all_there.wait)


async def test_per_key_limits_hold_each_tenant_and_let_the_others_past(
    start_server: Callable[..., SeppServer], queue: str
) -> None:
    # At most one leased job per tenant, two for acme. acme's jobs are enqueued first, so if the
    # jobs behind its held ones were not served, solo's and other's would never start.
    server = start_server(
        {
            "queues": [
                {
                    "name": queue,
                    "limit_key": "tenant",
                    "key_max_in_flight": 1,
                    "key_overrides": {"acme": {"max_in_flight": 2}},
                }
            ]
        }
    )
    limits = {"acme": 2, "solo": 1, "other": 1}
    tenants = ["acme"] * 4 + ["solo", "other"] * 3
    async with await SeppClient.connect(server.addr) as client:
        acks = await client.enqueue_batch(
            [EnqueueRequest(queue, "t", custom={"tenant": tenant}) for tenant in tenants]
        )
        ids = [ack.job_id for ack in acks if isinstance(ack, EnqueueAck)]
        assert len(ids) == len(tenants), acks
        worker = fast_worker(client, queue, max_in_flight=8)
        running = dict.fromkeys(limits, 0)
        peak = dict.fromkeys(limits, 0)
        at_limit = asyncio.Event()  # every tenant runs as many handlers as its limit allows
        release = asyncio.Event()
        finished: list[str] = []
        all_done = asyncio.Event()

        @worker.handler("t")
        async def handle(payload: Payload | None, ctx: JobCtx) -> None:
            tenant = str(ctx.custom["tenant"])
            running[tenant] += 1
            peak[tenant] = max(peak[tenant], running[tenant])
            if running == limits:
                at_limit.set()
            await release.wait()
            running[tenant] -= 1
            finished.append(ctx.id)
            if len(finished) == len(tenants):
                all_done.set()

        task = asyncio.ensure_future(worker.run())
        try:
            await asyncio.wait_for(at_limit.wait(), WAIT)
            # Four leased, one per slot; the six left are all held by their tenant's limit, so
            # not even a reserve of its own gets one.
            assert worker._in_flight == 4
            assert await client.reserve(reserve(queue, wait=0)) is None
            release.set()
            await asyncio.wait_for(all_done.wait(), WAIT)
        finally:
            release.set()
            worker.shutdown_handle().shutdown()
            await asyncio.wait_for(task, WAIT)
        assert peak == limits, peak
        assert sorted(finished) == sorted(ids)
        assert await client.reserve(reserve(queue, wait=0.2)) is None  # all acked


async def test_queue_max_in_flight_holds_across_connections_and_an_ack_frees_a_slot(
    start_server: Callable[..., SeppServer], queue: str
) -> None:
    # The limit is the queue's, not a connection's: what one client holds counts against another.
    server = start_server({"queues": [{"name": queue, "max_in_flight": 2}]})
    async with (
        await SeppClient.connect(server.addr) as first,
        await SeppClient.connect(server.addr) as second,
    ):
        acks = await first.enqueue_batch([EnqueueRequest(queue, "t") for _ in range(5)])
        assert all(isinstance(ack, EnqueueAck) for ack in acks), acks
        many = ReserveOptions([queue], timedelta(seconds=30), timedelta(0), max_jobs=10)
        held = await first.reserve(many)
        assert held is not None and len(held) == 2, held
        assert await second.reserve(many) is None
        # A waiting reserve is served as soon as an ack frees a slot, with that one slot only.
        polling = asyncio.ensure_future(
            second.reserve(
                ReserveOptions([queue], timedelta(seconds=30), timedelta(seconds=15), max_jobs=10)
            )
        )
        await first.ack(held[0])
        freed = await asyncio.wait_for(polling, WAIT)
        assert freed is not None and len(freed) == 1, freed
        assert freed[0].ctx.id not in {job.ctx.id for job in held}
        assert await first.reserve(many) is None  # two in flight again, one per client


async def test_queue_rate_limit_caps_leases_not_in_flight_and_lets_other_queues_past(
    start_server: Callable[..., SeppServer], new_queue: Callable[[], str]
) -> None:
    limited, other = new_queue(), new_queue()
    server = start_server(
        {
            "queues": [
                {"name": limited, "rate_limit": 2, "rate_period_ms": 60000, "rate_burst": 2},
                {"name": other},
            ]
        }
    )
    async with await SeppClient.connect(server.addr) as client:
        requests = [EnqueueRequest(limited, "t") for _ in range(4)]
        requests += [EnqueueRequest(other, "t") for _ in range(3)]
        acks = await client.enqueue_batch(requests)
        assert all(isinstance(ack, EnqueueAck) for ack in acks), acks

        def many(*queues: str) -> ReserveOptions:
            return ReserveOptions(list(queues), timedelta(seconds=30), timedelta(0), max_jobs=10)

        first = await client.reserve(many(limited))
        assert first is not None and len(first) == 2, first
        for job in first:
            await client.ack(job)
        # Nothing is in flight now, but both tokens of the period are spent.
        assert await client.reserve(many(limited)) is None
        # limited is listed first and still has two ready jobs; the reserve goes past it.
        past = await client.reserve(many(limited, other))
        assert past is not None and [job.ctx.queue for job in past] == [other] * 3, past
        assert await client.reserve(many(limited)) is None
