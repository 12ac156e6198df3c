"""Cancelling jobs against the real server: queued, leased, under a Worker, and the errors."""

from __future__ import annotations

import asyncio
import logging
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from sepp import (
    DeadLetterCause,
    EnqueueRequest,
    InvalidRequestError,
    JobCancelledError,
    JobCtx,
    JobDeadLetteredError,
    JobNotFoundError,
    Payload,
    ReserveOptions,
    RetryDirective,
    SeppClient,
    Worker,
)
from sepp import sync as sepp_sync
from tests.sepp_server import SeppServer

WAIT = 20.0  # the most any signal below is waited for


def options(queue: str, *, wait: float = 2.0, max_jobs: int | None = None) -> ReserveOptions:
    return ReserveOptions(
        [queue], timedelta(seconds=30), wait_timeout=timedelta(seconds=wait), max_jobs=max_jobs
    )


async def test_the_server_offers_cancel(client: SeppClient) -> None:
    assert "cancel" in (await client.get_server_info()).features


async def test_a_queued_job_is_dead_lettered_at_once_and_never_reserved(
    client: SeppClient, queue: str
) -> None:
    ack = await client.enqueue(EnqueueRequest(queue, "t", payload=Payload(b"x", "text/plain")))
    assert await client.cancel(ack.job_id, "no longer needed") is False
    assert await client.reserve(options(queue, wait=0.2)) is None
    records = await client.drain_dead_letters(queue, max_records=10)
    assert [(r.job_id, r.cause, r.last_reason) for r in records] == [
        (ack.job_id, DeadLetterCause.CANCELLED, "no longer needed")
    ]
    assert records[0].payload == Payload(b"x", "text/plain")


async def test_a_scheduled_job_can_be_cancelled_without_a_reason(
    client: SeppClient, queue: str
) -> None:
    later = datetime.now(timezone.utc) + timedelta(hours=1)
    ack = await client.enqueue(EnqueueRequest(queue, "t", scheduled_at=later))
    assert await client.cancel(ack.job_id) is False
    records = await client.drain_dead_letters(queue)
    assert [(r.cause, r.last_reason) for r in records] == [(DeadLetterCause.CANCELLED, None)]


async def test_a_leased_job_refuses_its_ack_once_with_job_cancelled(
    client: SeppClient, queue: str
) -> None:
    ack = await client.enqueue(EnqueueRequest(queue, "t"))
    jobs = await client.reserve(options(queue))
    assert jobs is not None
    assert await client.cancel(ack.job_id, "stop it") is True
    assert await client.cancel(ack.job_id) is True  # a repeated cancel of a leased job
    with pytest.raises(JobCancelledError, match="job was cancelled"):
        await client.ack(jobs[0])
    with pytest.raises(JobNotFoundError) as second:
        await client.ack(jobs[0])
    assert type(second.value) is JobNotFoundError
    records = await client.drain_dead_letters(queue)
    assert [(r.job_id, r.cause, r.last_reason) for r in records] == [
        (ack.job_id, DeadLetterCause.CANCELLED, "stop it")
    ]
    assert await client.reserve(options(queue, wait=0.2)) is None


async def test_a_cancelled_lease_refuses_extend_and_nack_too(
    client: SeppClient, queue: str
) -> None:
    for _ in range(2):
        await client.enqueue(EnqueueRequest(queue, "t"))
    jobs = await client.reserve(options(queue, max_jobs=2))
    assert jobs is not None and len(jobs) == 2
    for job in jobs:
        assert await client.cancel(job.ctx.id) is True
    with pytest.raises(JobCancelledError):
        await client.extend(jobs[0], timedelta(seconds=30))
    with pytest.raises(JobCancelledError):
        await client.nack(jobs[1], RetryDirective.DEFAULT, "too late")
    records = await client.drain_dead_letters(queue, max_records=10)
    assert sorted(r.cause for r in records) == [DeadLetterCause.CANCELLED] * 2


async def test_coalesced_acks_of_cancelled_jobs_raise_job_cancelled(
    client: SeppClient, queue: str
) -> None:
    for _ in range(3):
        await client.enqueue(EnqueueRequest(queue, "t"))
    jobs = await client.reserve(options(queue, max_jobs=3))
    assert jobs is not None and len(jobs) == 3
    await client.cancel(jobs[0].ctx.id)
    await client.cancel(jobs[2].ctx.id)
    # Acks of one turn share one AckBatch call, whose items carry no trailer.
    results = await asyncio.gather(*(client.ack(job) for job in jobs), return_exceptions=True)
    assert type(results[0]) is JobCancelledError
    assert results[1] is None
    assert type(results[2]) is JobCancelledError


async def test_cancel_errors(client: SeppClient, queue: str) -> None:
    with pytest.raises(InvalidRequestError):
        await client.cancel("not-a-uuid")
    with pytest.raises(InvalidRequestError):
        await client.cancel("")
    with pytest.raises(JobNotFoundError) as unknown:
        await client.cancel(str(uuid.uuid4()))
    assert type(unknown.value) is JobNotFoundError
    ack = await client.enqueue(EnqueueRequest(queue, "t"))
    with pytest.raises(InvalidRequestError):
        await client.cancel(ack.job_id, "r" * 1025)
    await client.cancel(ack.job_id, "r" * 1024)
    with pytest.raises(JobDeadLetteredError):
        await client.cancel(ack.job_id)
    # A finished job is unknown.
    done = await client.enqueue(EnqueueRequest(queue, "t"))
    jobs = await client.reserve(options(queue))
    assert jobs is not None
    await client.ack(jobs[0])
    with pytest.raises(JobNotFoundError):
        await client.cancel(done.job_id)


async def test_without_retention_a_cancelled_job_is_gone(start_server, queue: str) -> None:
    server: SeppServer = start_server({"storage": {"dead_letter_retention_ms": 0}})
    async with await SeppClient.connect(server.addr) as client:
        ack = await client.enqueue(EnqueueRequest(queue, "t"))
        assert await client.cancel(ack.job_id) is False
        assert await client.drain_dead_letters(queue) == []
        assert await client.reserve(options(queue, wait=0.2)) is None
        with pytest.raises(JobNotFoundError):
            await client.cancel(ack.job_id)


def test_the_sync_client_cancels(server: SeppServer, queue: str) -> None:
    with sepp_sync.SeppClient.connect(server.addr) as client:
        ack = client.enqueue(EnqueueRequest(queue, "t"))
        assert client.cancel(ack.job_id, "sync") is False
        with pytest.raises(JobDeadLetteredError):
            client.cancel(ack.job_id)


class Settlements:
    """Wraps a client's ack and nack to record each call and its outcome."""

    def __init__(self, client: SeppClient) -> None:
        self.calls: list[tuple[str, BaseException | None]] = []
        self.settled = asyncio.Event()
        ack, nack = client.ack, client.nack

        async def recorded_ack(ctx: JobCtx) -> None:
            try:
                await ack(ctx)
            except BaseException as err:
                self._record("ack", err)
                raise
            self._record("ack", None)

        async def recorded_nack(ctx: JobCtx, *args: object) -> bool:
            try:
                result = await nack(ctx, *args)  # type: ignore[arg-type]
            except BaseException as err:
                self._record("nack", err)
                raise
            self._record("nack", None)
            return result

        client.ack = recorded_ack  # type: ignore[method-assign]
        client.nack = recorded_nack  # type: ignore[method-assign]

    def _record(self, operation: str, outcome: BaseException | None) -> None:
        self.calls.append((operation, outcome))
        self.settled.set()


async def test_a_worker_stops_the_handler_of_a_cancelled_job(
    client: SeppClient, queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    ack = await client.enqueue(EnqueueRequest(queue, "t"))
    worker = Worker(
        client,
        [queue],
        timedelta(seconds=30),
        wait_timeout=timedelta(seconds=1),
        auto_extend_interval=timedelta(milliseconds=100),
    )
    settlements = Settlements(client)
    started = asyncio.Event()
    stopped = asyncio.Event()
    calls = 0

    @worker.handler("t")
    async def handle(payload: Payload | None, ctx: JobCtx) -> None:
        nonlocal calls
        calls += 1
        started.set()
        try:
            await asyncio.Event().wait()  # forever
        except asyncio.CancelledError:
            stopped.set()
            raise

    with caplog.at_level(logging.INFO, logger="sepp"):
        task = asyncio.ensure_future(worker.run())
        try:
            await asyncio.wait_for(started.wait(), WAIT)
            assert await client.cancel(ack.job_id, "from the test") is True
            await asyncio.wait_for(stopped.wait(), WAIT)
        finally:
            worker.shutdown_handle().shutdown()
            await asyncio.wait_for(task, WAIT)
    assert "job cancelled; handler aborted" in caplog.text
    assert "lease lost" not in caplog.text
    assert settlements.calls == []  # neither acked nor nacked
    assert calls == 1
    records = await client.drain_dead_letters(queue)
    assert [(r.cause, r.last_reason) for r in records] == [
        (DeadLetterCause.CANCELLED, "from the test")
    ]


async def test_without_auto_extend_the_ack_after_a_cancel_is_logged_as_cancelled(
    client: SeppClient, queue: str, caplog: pytest.LogCaptureFixture
) -> None:
    ack = await client.enqueue(EnqueueRequest(queue, "t"))
    # Over reserve calls: on the Consume stream the server pushes the cancel and the handler is
    # stopped at once (test_consume.py).
    worker = Worker(
        client, [queue], timedelta(seconds=30), wait_timeout=timedelta(seconds=1), streaming=False
    )
    settlements = Settlements(client)
    started = asyncio.Event()
    release = asyncio.Event()

    @worker.handler("t")
    async def handle(payload: Payload | None, ctx: JobCtx) -> None:
        started.set()
        await release.wait()

    with caplog.at_level(logging.INFO, logger="sepp"):
        task = asyncio.ensure_future(worker.run())
        try:
            await asyncio.wait_for(started.wait(), WAIT)
            assert await client.cancel(ack.job_id) is True
            release.set()
            await asyncio.wait_for(settlements.settled.wait(), WAIT)
        finally:
            worker.shutdown_handle().shutdown()
            await asyncio.wait_for(task, WAIT)
    assert [(op, type(err)) for op, err in settlements.calls] == [("ack", JobCancelledError)]
    assert "job cancelled: ack of job" in caplog.text
    assert "lease is gone" not in caplog.text
