"""Small helpers shared by the conformance tests (sepp-py public API only)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from sepp import Job, ReserveOptions, SeppClient

LEASE = timedelta(seconds=30)
WAIT = timedelta(seconds=5)
NO_WAIT = timedelta(0)
# Tolerance for comparing server timestamps with our wall clock (same host).
CLOCK_SLACK = timedelta(milliseconds=50)


def utcnow() -> datetime:
    return datetime.now(UTC)


def opts(
    queues: str | Sequence[str],
    *,
    lease: timedelta = LEASE,
    wait: timedelta = NO_WAIT,
    max_jobs: int | None = None,
    worker_id: str | None = None,
) -> ReserveOptions:
    qs = [queues] if isinstance(queues, str) else list(queues)
    return ReserveOptions(qs, lease, wait_timeout=wait, worker_id=worker_id, max_jobs=max_jobs)


async def reserve_one(
    client: SeppClient,
    queue: str | Sequence[str],
    *,
    lease: timedelta = LEASE,
    wait: timedelta = WAIT,
) -> Job:
    """Reserve exactly one job, waiting (long-poll) up to ``wait`` for it."""
    jobs = await client.reserve(opts(queue, lease=lease, wait=wait, max_jobs=1))
    assert jobs is not None, f"expected a job from {queue!r} within {wait}, got none"
    assert len(jobs) == 1
    return jobs[0]


async def reserve_all(
    client: SeppClient, queue: str | Sequence[str], n: int, *, lease: timedelta = LEASE
) -> list[Job]:
    """Reserve ``n`` ready jobs in one call (no waiting)."""
    jobs = await client.reserve(opts(queue, lease=lease, max_jobs=n))
    assert jobs is not None, f"expected {n} jobs from {queue!r}, got none"
    return jobs


async def assert_empty(client: SeppClient, queue: str | Sequence[str]) -> None:
    """The queue has nothing ready right now."""
    jobs = await client.reserve(opts(queue, max_jobs=10))
    assert jobs is None, f"expected no ready job, got {[j.ctx for j in jobs]}"


async def drain_until(client: SeppClient, queue: str, count: int, *, timeout: float = 5.0) -> list:
    """Drain dead letters of ``queue`` until ``count`` records were returned.

    Dead-lettering by lease expiry happens in the server's sweep, so the
    record may appear a little after the event that caused it.
    """
    records: list = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while len(records) < count:
        records += await client.drain_dead_letters(queue=queue, max_records=count - len(records))
        if len(records) >= count:
            break
        if loop.time() > deadline:
            raise AssertionError(f"only {len(records)} of {count} dead letters after {timeout}s")
        await asyncio.sleep(0.02)
    return records


async def next_millisecond() -> None:
    """Return once the wall clock is past the millisecond it was in when called. The server
    on this machine reads the same clock, so whatever it stamped before this call (an enqueue,
    a dead letter) has an earlier millisecond than anything it stamps after."""
    start = time.time_ns() // 1_000_000
    while time.time_ns() // 1_000_000 == start:
        await asyncio.sleep(0)
