"""Enqueue coalescing, driven by a scripted `send` instead of a server."""

from __future__ import annotations

import asyncio

import grpc
import pytest

from sepp._pipeline import MAX_JOBS_PER_CALL, EnqueuePipeline
from sepp.errors import BatchResultCountMismatchError
from sepp.v1 import queue_pb2 as pb


class ScriptedSend:
    """Records every call; each call waits until the test releases it."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], bool]] = []
        self.gates: list[asyncio.Future[None]] = []
        self.fail_with: grpc.aio.AioRpcError | None = None
        self.short_answer = False

    async def __call__(
        self, request: pb.EnqueueBatchRequest | bytes, keyed: bool
    ) -> pb.EnqueueBatchResponse:
        batch = (
            pb.EnqueueBatchRequest.FromString(request) if isinstance(request, bytes) else request
        )
        messages = list(batch.jobs)
        self.calls.append(([m.job_type for m in messages], keyed))
        gate = asyncio.get_running_loop().create_future()
        self.gates.append(gate)
        await gate
        if self.fail_with is not None and len(messages) > 1:
            raise self.fail_with
        results = [pb.JobResult(success=pb.EnqueueResponse(job_id=m.job_type)) for m in messages]
        return pb.EnqueueBatchResponse(results=results[:-1] if self.short_answer else results)

    def release_all(self) -> None:
        for gate in self.gates:
            if not gate.done():
                gate.set_result(None)


def jobs(*names: str) -> pb.EnqueueBatchRequest:
    return pb.EnqueueBatchRequest(jobs=[pb.EnqueueRequest(queue="q", job_type=n) for n in names])


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


def ids(results: object) -> list[str]:
    return [r.success.job_id for r in results]  # type: ignore[attr-defined]


async def test_callers_of_one_turn_share_a_call_and_a_later_one_takes_a_free_call() -> None:
    send = ScriptedSend()
    pipeline = EnqueuePipeline(send, max_calls=2)
    first = asyncio.ensure_future(pipeline.submit(jobs("a"), False, 1))
    second = asyncio.ensure_future(pipeline.submit(jobs("b"), False, 1))
    await settle()
    assert send.calls == [(["a", "b"], False)]
    third = asyncio.ensure_future(pipeline.submit(jobs("c"), False, 1))
    await settle()
    assert send.calls == [(["a", "b"], False), (["c"], False)], "one call of two was free"
    send.release_all()
    assert ids(await first) == ["a"] and ids(await second) == ["b"]
    assert ids(await third) == ["c"]


async def test_a_caller_cancelled_in_its_own_turn_sends_nothing() -> None:
    send = ScriptedSend()
    pipeline = EnqueuePipeline(send, max_calls=2)
    gone = asyncio.ensure_future(pipeline.submit(jobs("gone"), False, 1))
    kept = asyncio.ensure_future(pipeline.submit(jobs("kept"), False, 1))
    await asyncio.sleep(0)  # both wait for the end of the turn
    gone.cancel()
    await settle()
    assert send.calls == [(["kept"], False)]
    send.release_all()
    assert ids(await kept) == ["kept"]
    with pytest.raises(asyncio.CancelledError):
        await gone


async def test_waiting_callers_share_the_next_call_and_get_their_own_results() -> None:
    send = ScriptedSend()
    pipeline = EnqueuePipeline(send, max_calls=1)
    first = asyncio.ensure_future(pipeline.submit(jobs("a"), False, 1))
    await settle()
    waiting = [
        asyncio.ensure_future(pipeline.submit(jobs(f"w{i}", f"x{i}"), False, 1)) for i in range(3)
    ]
    await settle()
    assert len(send.calls) == 1
    send.release_all()
    assert ids(await first) == ["a"]
    await settle()
    assert send.calls[1] == (["w0", "x0", "w1", "x1", "w2", "x2"], False)
    send.release_all()
    assert [ids(await w) for w in waiting] == [["w0", "x0"], ["w1", "x1"], ["w2", "x2"]]


async def test_keyed_and_keyless_jobs_never_share_a_call() -> None:
    send = ScriptedSend()
    pipeline = EnqueuePipeline(send, max_calls=1)
    busy = [
        asyncio.ensure_future(pipeline.submit(jobs(n), k, 1))
        for n, k in (("a", False), ("b", True))
    ]
    await settle()
    later = [
        asyncio.ensure_future(pipeline.submit(jobs(n), k, 1))
        for n, k in (("c", False), ("d", True), ("e", False))
    ]
    await settle()
    send.release_all()
    await asyncio.gather(*busy)
    await settle()
    assert sorted(send.calls[2:]) == [(["c", "e"], False), (["d"], True)]
    send.release_all()
    await asyncio.gather(*later)


async def test_a_call_holds_at_most_the_job_limit_and_a_batch_is_never_split() -> None:
    send = ScriptedSend()
    pipeline = EnqueuePipeline(send, max_calls=1)
    first = asyncio.ensure_future(pipeline.submit(jobs("a"), False, 1))
    await settle()
    half = MAX_JOBS_PER_CALL // 2 + 1
    big = [
        asyncio.ensure_future(pipeline.submit(jobs(*[f"{b}-{i}" for i in range(half)]), False, 1))
        for b in range(2)
    ]
    await settle()
    send.release_all()
    await first
    await settle()
    assert len(send.calls[1][0]) == half  # the second batch did not fit next to the first
    send.release_all()
    await big[0]
    await settle()
    send.release_all()
    await big[1]
    assert len(send.calls) == 3


async def test_a_shared_call_refused_as_a_whole_is_resent_per_caller() -> None:
    send = ScriptedSend()
    pipeline = EnqueuePipeline(send, max_calls=1)
    first = asyncio.ensure_future(pipeline.submit(jobs("a"), False, 1))
    await settle()
    waiting = [asyncio.ensure_future(pipeline.submit(jobs(n), False, 1)) for n in ("b", "c")]
    await settle()
    send.fail_with = grpc.aio.AioRpcError(
        grpc.StatusCode.INVALID_ARGUMENT, grpc.aio.Metadata(), grpc.aio.Metadata(), "too many"
    )
    send.release_all()
    await first
    for _ in range(3):
        await settle()
        send.release_all()
    assert [ids(await w) for w in waiting] == [["b"], ["c"]]
    assert send.calls[1:] == [(["b", "c"], False), (["b"], False), (["c"], False)]


async def test_a_failed_shared_call_fails_every_sharer() -> None:
    send = ScriptedSend()
    pipeline = EnqueuePipeline(send, max_calls=1)
    first = asyncio.ensure_future(pipeline.submit(jobs("a"), False, 1))
    await settle()
    waiting = [asyncio.ensure_future(pipeline.submit(jobs(n), False, 1)) for n in ("b", "c")]
    await settle()
    send.fail_with = grpc.aio.AioRpcError(
        grpc.StatusCode.UNAVAILABLE, grpc.aio.Metadata(), grpc.aio.Metadata(), "down"
    )
    send.release_all()
    await first
    await settle()
    send.release_all()
    for w in waiting:
        with pytest.raises(grpc.aio.AioRpcError):
            await w


async def test_a_short_answer_to_a_shared_call_is_a_count_mismatch_for_all() -> None:
    send = ScriptedSend()
    pipeline = EnqueuePipeline(send, max_calls=1)
    first = asyncio.ensure_future(pipeline.submit(jobs("a"), False, 1))
    await settle()
    waiting = [asyncio.ensure_future(pipeline.submit(jobs(n), False, 1)) for n in ("b", "c")]
    await settle()
    send.release_all()
    await first
    await settle()
    send.short_answer = True
    send.release_all()
    for w in waiting:
        with pytest.raises(BatchResultCountMismatchError):
            await w


async def test_a_caller_cancelled_while_waiting_takes_its_jobs_back() -> None:
    send = ScriptedSend()
    pipeline = EnqueuePipeline(send, max_calls=1)
    first = asyncio.ensure_future(pipeline.submit(jobs("a"), False, 1))
    await settle()
    gone = asyncio.ensure_future(pipeline.submit(jobs("gone"), False, 1))
    kept = asyncio.ensure_future(pipeline.submit(jobs("kept"), False, 1))
    await settle()
    gone.cancel()
    await settle()
    send.release_all()
    await first
    await settle()
    send.release_all()
    assert ids(await kept) == ["kept"]
    assert send.calls[1] == (["kept"], False)
