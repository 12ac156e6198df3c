"""The Worker's Consume stream on the wire, against an in-process stub (`recording_server`):
what the worker sends (the opening, credits riding with the settles of one event-loop turn),
how it reads answers the real server gives only in rare moments (a cancelled ack), a stream
that ends before answering its settles (they are sent again as unary calls), and the fallback
to reserve calls against a server without the stream (no feature "consume", or Consume
answered UNIMPLEMENTED, as sepp 0.1 does)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import Any

import grpc
import pytest

from sepp import JobCtx, Payload, SeppClient, Worker
from sepp.v1 import queue_pb2 as pb
from tests.integration.test_wire import wire_job
from tests.recording_server import recording_server

WAIT = 20.0  # the most any signal below is waited for
INFO = pb.GetServerInfoResponse(
    features=["ack_batch", "consume"], max_enqueue_batch=256, max_consume_credits=10_000
)


async def run_until(worker: Worker, done: Callable[[], Awaitable[object]]) -> None:
    task = asyncio.ensure_future(worker.run())
    try:
        await asyncio.wait_for(done(), WAIT)
    finally:
        worker.shutdown_handle().shutdown()
        await asyncio.wait_for(task, WAIT)


async def test_the_acks_of_one_turn_ride_in_one_message_with_the_credits_they_free(
    caplog: pytest.LogCaptureFixture,
) -> None:
    answered = asyncio.Event()

    async def consume(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
        async for request in requests:
            if request.HasField("open"):
                yield pb.ConsumeResponse(jobs=[wire_job(f"j{i}") for i in range(3)])
            results = []
            for settle in request.settles:
                if settle.ack.job_id == "j1":  # cancelled meanwhile
                    error = pb.CallStatus(code=5, message="job was cancelled", cancelled=True)
                    results.append(pb.ConsumeResult(id=settle.id, error=error))
                else:
                    results.append(pb.ConsumeResult(id=settle.id, ack=pb.AckResponse()))
            if results:
                yield pb.ConsumeResponse(results=results)
                answered.set()

    async with recording_server() as stub:
        stub.answer("GetServerInfo", INFO)
        stub.consume = consume
        async with await SeppClient.connect(stub.addr) as client:
            worker = Worker(client, ["q"], timedelta(seconds=30), max_in_flight=3, worker_id="w")
            worker.catch_all(_nothing)
            with caplog.at_level(logging.INFO, logger="sepp"):
                await run_until(worker, answered.wait)
    assert worker.transport == "consume"
    opening, settles = stub.consume_requests[:2]
    assert opening.open.queues == ["q"] and opening.open.credits == 3
    assert opening.open.worker_id == "w" and opening.open.lease_duration.seconds == 30
    assert not opening.settles and not opening.credits
    # The three handlers ended in one turn: their acks and the three credits, one message.
    assert sorted(s.ack.job_id for s in settles.settles) == ["j0", "j1", "j2"]
    assert {s.ack.worker_id for s in settles.settles} == {"w"}
    assert len({s.id for s in settles.settles}) == 3
    assert settles.credits == 3
    assert not stub.calls_to("Ack") and not stub.calls_to("AckBatch")  # nothing went unary
    # The cancelled ack raised JobCancelledError, as the unary Ack's trailer would.
    assert "job cancelled: ack of job j1 refused" in caplog.text


async def test_settles_a_stream_never_answered_are_sent_again_as_unary_calls() -> None:
    acked = asyncio.Event()

    async def consume(requests: AsyncIterator[Any], context: Any) -> AsyncIterator[Any]:
        async for request in requests:
            if request.HasField("open") and len(consume_opened) == 0:
                consume_opened.append(request)
                yield pb.ConsumeResponse(jobs=[wire_job("j1")])
            elif request.settles:
                # The server goes away before answering.
                await context.abort(grpc.StatusCode.UNAVAILABLE, "shutting down")

    consume_opened: list[Any] = []

    def ack(request: pb.AckRequest) -> pb.AckResponse:
        acked.set()
        return pb.AckResponse()

    async with recording_server() as stub:
        stub.answer("GetServerInfo", INFO)
        stub.answer("Ack", ack)
        stub.consume = consume
        async with await SeppClient.connect(stub.addr) as client:
            worker = Worker(
                client, ["q"], timedelta(seconds=30), reserve_error_backoff=timedelta(0)
            )
            worker.catch_all(_nothing)
            await run_until(worker, acked.wait)
    assert [c.request.job_id for c in stub.calls_to("Ack")] == ["j1"]
    assert stub.consume_requests[1].settles[0].ack.job_id == "j1"  # tried on the stream first


@pytest.mark.parametrize("lists_consume", [False, True], ids=["no-feature", "unimplemented"])
async def test_without_the_stream_the_worker_reserves(lists_consume: bool) -> None:
    async with recording_server() as stub:
        features = ["ack_batch", "consume"] if lists_consume else ["ack_batch"]
        stub.answer("GetServerInfo", pb.GetServerInfoResponse(features=features))
        stub.answer("Reserve", pb.ReserveResponse(jobs=[wire_job("j1")]), pb.ReserveResponse())
        acked = asyncio.Event()

        def ack(_: pb.AckRequest) -> pb.AckResponse:
            acked.set()
            return pb.AckResponse()

        stub.answer("Ack", ack)
        async with await SeppClient.connect(stub.addr) as client:
            worker = Worker(
                client,
                ["q"],
                timedelta(seconds=30),
                wait_timeout=timedelta(seconds=1),
                reserve_error_backoff=timedelta(milliseconds=10),
            )
            worker.catch_all(_nothing)
            await run_until(worker, acked.wait)
        assert worker.transport == "reserve"
        assert stub.calls_to("Ack")[0].request.job_id == "j1"


async def _nothing(payload: Payload | None, ctx: JobCtx) -> None:
    return None
