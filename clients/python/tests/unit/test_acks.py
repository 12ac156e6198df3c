"""Ack coalescing, driven by scripted sends instead of a server."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from sepp._acks import MAX_ACKS_PER_CALL, AckPipeline, item_error
from sepp.errors import BatchResultCountMismatchError, ClientError
from sepp.v1 import queue_pb2 as pb


def status(code: grpc.StatusCode, message: str = "") -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), message)


class Server:
    """Answers Ack and AckBatch like a server: ids starting with `gone` are not in flight."""

    def __init__(self, *, batch: bool = True) -> None:
        self.batch = batch
        self.singles: list[str] = []
        self.batches: list[list[str]] = []
        self.batch_fails_with: grpc.aio.AioRpcError | None = None
        self.short_answer = False

    @staticmethod
    def _gone(job_id: str) -> bool:
        return job_id.startswith("gone")

    async def send_one(self, request: pb.AckRequest) -> None:
        self.singles.append(request.job_id)
        await asyncio.sleep(0)
        if self._gone(request.job_id):
            raise status(grpc.StatusCode.NOT_FOUND, "job not found")

    async def send_batch(self, request: pb.AckBatchRequest) -> pb.AckBatchResponse:
        ids = [ack.job_id for ack in request.acks]
        self.batches.append(ids)
        await asyncio.sleep(0)
        if not self.batch:
            raise status(grpc.StatusCode.UNIMPLEMENTED, "unknown method")
        if self.batch_fails_with is not None:
            raise self.batch_fails_with
        results = [
            pb.AckResult(error=pb.CallStatus(code=5, message="job not found"))
            if self._gone(job_id)
            else pb.AckResult(success=pb.AckResponse(job_id=job_id))
            for job_id in ids
        ]
        return pb.AckBatchResponse(results=results[:-1] if self.short_answer else results)

    def pipeline(self) -> AckPipeline:
        return AckPipeline(self.send_one, self.send_batch)


def ack(job_id: str) -> pb.AckRequest:
    return pb.AckRequest(job_id=job_id, attempt=1)


async def outcomes(pipeline: AckPipeline, *ids: str) -> list[BaseException | None]:
    """Submits every ack in one turn of the loop and returns each one's outcome."""
    results = await asyncio.gather(
        *(pipeline.submit(ack(job_id)) for job_id in ids), return_exceptions=True
    )
    return list(results)


async def test_a_lone_ack_is_a_plain_ack_call() -> None:
    server = Server()
    assert await outcomes(server.pipeline(), "a") == [None]
    assert server.singles == ["a"]
    assert server.batches == []


async def test_the_acks_of_one_turn_share_one_batch_call() -> None:
    server = Server()
    assert await outcomes(server.pipeline(), "a", "b", "c") == [None, None, None]
    assert server.batches == [["a", "b", "c"]]
    assert server.singles == []


async def test_acks_of_later_turns_go_in_later_calls() -> None:
    server = Server()
    pipeline = server.pipeline()
    await outcomes(pipeline, "a", "b")
    await outcomes(pipeline, "c", "d")
    assert server.batches == [["a", "b"], ["c", "d"]]


async def test_each_item_gets_its_own_outcome() -> None:
    server = Server()
    results = await outcomes(server.pipeline(), "a", "gone-b", "c")
    assert results[0] is None and results[2] is None
    error = results[1]
    assert isinstance(error, grpc.aio.AioRpcError)
    assert error.code() == grpc.StatusCode.NOT_FOUND
    assert error.details() == "job not found"


async def test_a_server_without_ack_batch_gets_plain_acks_from_then_on() -> None:
    server = Server(batch=False)
    pipeline = server.pipeline()
    results = await outcomes(pipeline, "a", "gone-b", "c")
    assert results[0] is None and results[2] is None
    assert isinstance(results[1], grpc.aio.AioRpcError)
    assert results[1].code() == grpc.StatusCode.NOT_FOUND
    assert server.batches == [["a", "gone-b", "c"]]
    assert sorted(server.singles) == ["a", "c", "gone-b"]
    assert not pipeline.batch_supported
    await outcomes(pipeline, "d", "e")
    assert server.batches == [["a", "gone-b", "c"]]
    assert sorted(server.singles) == ["a", "c", "d", "e", "gone-b"]


async def test_a_failed_batch_call_is_every_sharers_failure() -> None:
    server = Server()
    server.batch_fails_with = status(grpc.StatusCode.UNAVAILABLE, "connection reset")
    results = await outcomes(server.pipeline(), "a", "b")
    for result in results:
        assert isinstance(result, grpc.aio.AioRpcError)
        assert result.code() == grpc.StatusCode.UNAVAILABLE


async def test_a_short_answer_fails_the_whole_call() -> None:
    server = Server()
    server.short_answer = True
    results = await outcomes(server.pipeline(), "a", "b")
    assert all(isinstance(result, BatchResultCountMismatchError) for result in results)


async def test_a_flush_holds_at_most_the_batch_limit_per_call() -> None:
    server = Server()
    ids = [f"j{i}" for i in range(MAX_ACKS_PER_CALL + 3)]
    assert await outcomes(server.pipeline(), *ids) == [None] * len(ids)
    assert [len(batch) for batch in server.batches] == [MAX_ACKS_PER_CALL, 3]


async def test_a_caller_cancelled_before_the_flush_takes_its_ack_back() -> None:
    server = Server()
    pipeline = server.pipeline()
    first = asyncio.ensure_future(pipeline.submit(ack("a")))
    second = asyncio.ensure_future(pipeline.submit(ack("b")))
    await asyncio.sleep(0)  # both are waiting for the flush
    second.cancel()
    await asyncio.sleep(0)
    await first
    with pytest.raises(asyncio.CancelledError):
        await second
    assert server.singles == ["a"]
    assert server.batches == []


async def test_a_cancelled_shared_call_fails_its_sharers_with_a_client_error() -> None:
    gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def hang(request: pb.AckBatchRequest) -> pb.AckBatchResponse:
        await gate
        raise AssertionError("unreachable")

    async def one(request: pb.AckRequest) -> None:
        raise AssertionError("unreachable")

    pipeline = AckPipeline(one, hang)
    submitted = asyncio.gather(
        pipeline.submit(ack("a")), pipeline.submit(ack("b")), return_exceptions=True
    )
    for _ in range(5):
        await asyncio.sleep(0)
    for task in list(pipeline._tasks):
        task.cancel()
    results = await submitted
    assert all(isinstance(result, ClientError) for result in results)


def test_an_item_error_keeps_the_code_and_never_reads_as_ok() -> None:
    assert item_error(9, "stale attempt").code() == grpc.StatusCode.FAILED_PRECONDITION
    assert item_error(9, "stale attempt").details() == "stale attempt"
    assert item_error(0, "").code() == grpc.StatusCode.UNKNOWN
    assert item_error(999, "").code() == grpc.StatusCode.UNKNOWN
