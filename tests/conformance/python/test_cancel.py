"""An unmodified sepp-py 0.1 Worker meets a job that is cancelled while it runs.

sepp-py knows nothing of CancelJob (this server's addition), so the test sends it as raw bytes.
To the 0.1 client a cancelled lease is a lost lease: its auto-extend heartbeat gets NOT_FOUND,
it stops the handler, settles nothing, and goes on serving other jobs. The dead letter it may
drain carries a cause it does not know, which it reads as unspecified. (This suite also runs
with our own Python client, which knows the cause.)
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import grpc
import pytest
from sepp import DeadLetterCause, EnqueueRequest, Worker

from harness import binary_version, running_server

STEP_TIMEOUT = 10.0

pytestmark = pytest.mark.skipif(
    binary_version().startswith("0.1."), reason="0.1 has no CancelJob"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(
        tmp_path_factory, {"storage": {"dead_letter_retention_ms": 3_600_000}}
    ) as srv:
        yield srv


async def cancel_job(addr: str, job_id: str) -> bytes:
    """CancelJob with field 1 (job_id) hand-encoded: sepp-py has no stub for it."""
    encoded = job_id.encode()
    request = b"\x0a" + bytes([len(encoded)]) + encoded
    async with grpc.aio.insecure_channel(addr) as channel:
        call = channel.unary_unary(
            "/sepp.v1.QueueService/CancelJob",
            request_serializer=lambda raw: raw,
            response_deserializer=lambda raw: raw,
        )
        return await call(request, timeout=STEP_TIMEOUT)


async def test_a_cancelled_job_stops_its_handler_and_the_worker_keeps_serving(
    server, client, new_queue
):
    q = new_queue()
    started, stopped, finished = asyncio.Event(), asyncio.Event(), asyncio.Event()

    worker = Worker(
        client,
        [q],
        timedelta(seconds=30),
        wait_timeout=timedelta(seconds=1),
        auto_extend_interval=timedelta(milliseconds=200),
    )

    @worker.handler("long")
    async def long(payload, ctx):
        started.set()
        try:
            await asyncio.Event().wait()  # runs until something stops it
        finally:
            stopped.set()

    @worker.handler("short")
    async def short(payload, ctx):
        finished.set()

    handle = worker.shutdown_handle()
    task = asyncio.create_task(worker.run())
    try:
        ack = await client.enqueue(EnqueueRequest(q, "long"))
        await asyncio.wait_for(started.wait(), STEP_TIMEOUT)
        await cancel_job(server.addr, ack.job_id)
        await asyncio.wait_for(stopped.wait(), STEP_TIMEOUT)
        await client.enqueue(EnqueueRequest(q, "short"))
        await asyncio.wait_for(finished.wait(), STEP_TIMEOUT)
    finally:
        handle.shutdown()
        await asyncio.wait_for(task, STEP_TIMEOUT)

    records = await client.drain_dead_letters(q, 10)
    assert [record.job_id for record in records] == [ack.job_id]
    # sepp-py 0.1 does not know the cause and reads it as unspecified; our client knows it.
    expected = getattr(DeadLetterCause, "CANCELLED", DeadLetterCause.UNSPECIFIED)
    assert records[0].cause == expected
