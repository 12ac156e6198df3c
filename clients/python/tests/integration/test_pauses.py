"""Pausing queues against the real server: a paused queue takes enqueues but serves no reserve,
is listed, and serves its jobs again once resumed (a parked long poll at once); the pause of
every queue; bad input is an invalid request; the sync facade."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

import pytest

from sepp import (
    ALL_QUEUES,
    EnqueueRequest,
    InvalidRequestError,
    QueuePause,
    ReserveOptions,
    SeppClient,
)
from sepp import sync as sepp_sync
from tests.sepp_server import WATCH_PARKED, SeppServer

LEASE = timedelta(seconds=30)


def now_or_never(queue: str) -> ReserveOptions:
    """A reserve that answers at once."""
    return ReserveOptions([queue], LEASE, wait_timeout=timedelta(0))


async def test_the_server_offers_pausing(client: SeppClient) -> None:
    assert "pause" in (await client.get_server_info()).features


async def test_a_paused_queue_takes_enqueues_serves_no_reserve_and_is_listed_until_resumed(
    client: SeppClient, queue: str
) -> None:
    pause = await client.pause_queue(queue, reason="deploy")
    assert pause == QueuePause(queue, None)
    assert not pause.all_queues
    ack = await client.enqueue(EnqueueRequest(queue, "t"))  # a paused queue still takes jobs
    assert await client.reserve(now_or_never(queue)) is None
    assert QueuePause(queue, None) in await client.list_pauses()

    assert await client.resume_queue(queue) is True
    assert await client.resume_queue(queue) is False  # no longer paused
    assert queue not in [p.queue for p in await client.list_pauses()]
    jobs = await client.reserve(now_or_never(queue))
    assert jobs is not None
    assert [job.ctx.id for job in jobs] == [ack.job_id]
    await client.ack(jobs[0])


async def test_a_reserve_naming_a_paused_and_another_queue_takes_from_the_other(
    client: SeppClient, new_queue: Callable[[], str]
) -> None:
    paused, other = new_queue(), new_queue()
    await client.pause_queue(paused)
    try:
        await client.enqueue(EnqueueRequest(paused, "t"))
        ack = await client.enqueue(EnqueueRequest(other, "t"))
        jobs = await client.reserve(ReserveOptions([paused, other], LEASE, timedelta(0)))
        assert jobs is not None
        assert [(job.ctx.queue, job.ctx.id) for job in jobs] == [(other, ack.job_id)]
        await client.ack(jobs[0])
    finally:
        assert await client.resume_queue(paused) is True


async def test_pausing_again_replaces_the_end_of_the_pause(client: SeppClient, queue: str) -> None:
    until = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(hours=1)
    assert await client.pause_queue(queue, until=until) == QueuePause(queue, until)
    assert QueuePause(queue, until) in await client.list_pauses()
    assert await client.pause_queue(queue) == QueuePause(queue, None)
    assert [p for p in await client.list_pauses() if p.queue == queue] == [QueuePause(queue, None)]
    assert await client.resume_queue(queue) is True


async def test_a_resume_serves_a_parked_long_poll(
    start_server: Callable[..., SeppServer], queue: str
) -> None:
    server = start_server(WATCH_PARKED)
    async with await SeppClient.connect(server.addr) as client:
        await client.pause_queue(queue)
        ack = await client.enqueue(EnqueueRequest(queue, "t"))
        waiting = asyncio.ensure_future(
            client.reserve(ReserveOptions([queue], LEASE, wait_timeout=timedelta(seconds=60)))
        )
        # The only reserve of this server waits: the resume below comes after it.
        await asyncio.to_thread(server.wait_parked, 1)
        assert not waiting.done()
        assert await client.resume_queue(queue) is True
        jobs = await asyncio.wait_for(waiting, timeout=30)
        assert jobs is not None
        assert [job.ctx.id for job in jobs] == [ack.job_id]
        await client.ack(jobs[0])


async def test_a_pause_with_an_end_lifts_itself_and_serves_the_waiting_reserve(
    client: SeppClient, queue: str
) -> None:
    until = datetime.now(timezone.utc) + timedelta(seconds=1)
    await client.pause_queue(queue, until=until)
    ack = await client.enqueue(EnqueueRequest(queue, "t"))
    # No resume: the long poll is answered once the server has lifted the pause at its end.
    jobs = await client.reserve(ReserveOptions([queue], LEASE, wait_timeout=timedelta(seconds=30)))
    assert jobs is not None, "the pause did not end within the long poll"
    assert [job.ctx.id for job in jobs] == [ack.job_id]
    await client.ack(jobs[0])


async def test_the_pause_of_every_queue_is_listed_first_and_lifted_apart_from_named_ones(
    start_server: Callable[..., SeppServer], new_queue: Callable[[], str]
) -> None:
    # A server of its own: pausing every queue would hold up the other tests' reserves.
    server = start_server()
    named, unnamed = new_queue(), new_queue()
    until = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(hours=1)
    async with await SeppClient.connect(server.addr) as client:
        await client.pause_queue(named)
        every = await client.pause_queue(ALL_QUEUES, until=until, reason="maintenance")
        assert every == QueuePause(ALL_QUEUES, until)
        assert every.all_queues
        assert await client.list_pauses() == [QueuePause("", until), QueuePause(named, None)]
        await client.enqueue(EnqueueRequest(unnamed, "t"))  # a queue that did not exist
        assert await client.reserve(now_or_never(unnamed)) is None

        assert await client.resume_queue(ALL_QUEUES) is True
        assert await client.list_pauses() == [QueuePause(named, None)]  # paused by name: stays
        jobs = await client.reserve(now_or_never(unnamed))
        assert jobs is not None and len(jobs) == 1
        await client.ack(jobs[0])
        assert await client.resume_queue(ALL_QUEUES) is False
        assert await client.resume_queue(named) is True
        assert await client.list_pauses() == []


@pytest.mark.parametrize(
    ("name", "kwargs"),
    [
        ("an until in the past", {"until": datetime.now(timezone.utc) - timedelta(minutes=1)}),
        ("a reason over 1024 bytes", {"reason": "x" * 1025}),
        ("a queue name with a NUL", {"queue": "a\x00b"}),
        ("a queue name with a slash", {"queue": "a/b"}),
    ],
)
async def test_pauses_the_server_refuses_are_invalid_requests(
    client: SeppClient, queue: str, name: str, kwargs: dict[str, object]
) -> None:
    target = str(kwargs.pop("queue", queue))
    with pytest.raises(InvalidRequestError):
        await client.pause_queue(target, **kwargs)  # type: ignore[arg-type]
    assert target not in [p.queue for p in await client.list_pauses()], name


def test_the_sync_client_pauses_and_resumes(server: SeppServer, queue: str) -> None:
    until = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(hours=1)
    with sepp_sync.SeppClient.connect(server.addr) as client:
        assert client.pause_queue(queue, until=until, reason="sync") == QueuePause(queue, until)
        assert QueuePause(queue, until) in client.list_pauses()
        assert client.resume_queue(queue) is True
        assert client.resume_queue(queue) is False
        with pytest.raises(InvalidRequestError):
            client.pause_queue(queue, until=datetime.now(timezone.utc) - timedelta(hours=1))
