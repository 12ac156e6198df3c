"""Enqueue coalescing: the enqueue calls of one event-loop turn share one gRPC call.

A best-effort batch answers every job on its own, so the jobs of several `enqueue` /
`enqueue_batch` calls can travel in one `EnqueueBatch` call and each caller still gets exactly
its own results. The pipeline does that without a timer:

* the first caller of a turn of the event loop schedules a flush for the end of that turn
  (`call_soon`); every caller of the same turn joins it (a closed loop of producers resumes
  together when their shared call answers, so they go on together);
* at the flush, the waiting jobs go out in one call if fewer than `max_calls` calls are in
  flight; otherwise they wait, and the moment a call finishes every waiting caller's jobs go
  out together (at most `MAX_JOBS_PER_CALL` jobs and about `MAX_BYTES_PER_CALL` bytes per call;
  one caller's batch is never split);
* jobs that all carry an idempotency key and jobs that do not wait apart, because their calls
  are retried under different rules.

A coalesced call that the server refuses as a whole with INVALID_ARGUMENT (its batch limit may
be lower than ours) is resent as one call per caller, so every caller sees what it would have
seen alone. Any other failure of a shared call is every sharer's failure, as it would have been
had each sent its own call at that moment. A caller cancelled while its jobs still wait takes
them back unsent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc

from .errors import BatchResultCountMismatchError, ClientError
from .v1 import queue_pb2 as pb

# The server's default limits are 256 jobs per call and 16 MiB per message; staying at or under
# the first and far under the second keeps coalesced calls acceptable to a default server.
MAX_JOBS_PER_CALL = 256
MAX_BYTES_PER_CALL = 4 * 1024 * 1024

# A call: the batch (a message, or the serialized batches of several callers joined, which
# protobuf reads as one batch with all their jobs), and whether every job has a key.
Send = Callable[[pb.EnqueueBatchRequest | bytes, bool], Awaitable[pb.EnqueueBatchResponse]]


@dataclass(eq=False)
class _Waiting:
    batch: pb.EnqueueBatchRequest
    count: int
    size_bytes: int
    future: asyncio.Future[Sequence[pb.JobResult]]


@dataclass(eq=False)
class _Lane:
    in_flight: int = 0
    flush_scheduled: bool = False
    waiting: list[_Waiting] = field(default_factory=list)


class EnqueuePipeline:
    """Sends enqueue jobs through at most `max_calls` concurrent calls per lane (see module)."""

    def __init__(self, send: Send, max_calls: int) -> None:
        if max_calls < 1:
            raise ValueError("max_calls must be at least 1")
        self._send = send
        self._max_calls = max_calls
        self._lanes = {True: _Lane(), False: _Lane()}
        self._tasks: set[asyncio.Task[None]] = set()

    async def submit(
        self, batch: pb.EnqueueBatchRequest, keyed: bool, size_bytes: int
    ) -> Sequence[pb.JobResult]:
        """The results of the jobs of `batch`, in order. Raises what the call raised."""
        lane = self._lanes[keyed]
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        waiting = _Waiting(batch, len(batch.jobs), size_bytes, future)
        lane.waiting.append(waiting)
        if not lane.flush_scheduled:
            # The callers of this turn go together, into a free call or the next one that ends.
            lane.flush_scheduled = True
            loop.call_soon(self._turn_ends, lane, keyed)
        try:
            return await waiting.future
        except asyncio.CancelledError:
            if waiting in lane.waiting:
                lane.waiting.remove(waiting)
            raise

    def _turn_ends(self, lane: _Lane, keyed: bool) -> None:
        lane.flush_scheduled = False
        self._flush(lane, keyed)

    def _flush(self, lane: _Lane, keyed: bool) -> None:
        # A caller cancelled meanwhile has taken its jobs back.
        lane.waiting[:] = [waiting for waiting in lane.waiting if not waiting.future.done()]
        while lane.waiting and lane.in_flight < self._max_calls:
            group = _take_group(lane.waiting)
            lane.in_flight += 1
            task = asyncio.get_running_loop().create_task(self._send_group(lane, keyed, group))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _send_group(self, lane: _Lane, keyed: bool, group: list[_Waiting]) -> None:
        try:
            await self._deliver(keyed, group)
        finally:
            lane.in_flight -= 1
            self._flush(lane, keyed)

    async def _deliver(self, keyed: bool, group: list[_Waiting]) -> None:
        total = sum(waiting.count for waiting in group)
        request: pb.EnqueueBatchRequest | bytes = (
            group[0].batch
            if len(group) == 1
            else b"".join(waiting.batch.SerializeToString() for waiting in group)
        )
        try:
            response = await self._send(request, keyed)
        except grpc.aio.AioRpcError as err:
            if err.code() == grpc.StatusCode.INVALID_ARGUMENT and len(group) > 1:
                await asyncio.gather(*(self._deliver(keyed, [w]) for w in group))
                return
            _fail(group, err)
            return
        except BaseException as err:  # includes the cancellation of a closing client
            _fail(group, err)
            if not isinstance(err, Exception):
                raise
            return
        results = response.results
        if len(results) != total:
            _fail(group, BatchResultCountMismatchError(total, len(results)))
            return
        start = 0
        for waiting in group:
            end = start + waiting.count
            _resolve(waiting.future, results[start:end])
            start = end


def _take_group(waiting: list[_Waiting]) -> list[_Waiting]:
    """The longest prefix of waiting callers that fits one call (always at least one)."""
    group = [waiting[0]]
    jobs, size = waiting[0].count, waiting[0].size_bytes
    for candidate in waiting[1:]:
        jobs += candidate.count
        size += candidate.size_bytes
        if jobs > MAX_JOBS_PER_CALL or size > MAX_BYTES_PER_CALL:
            break
        group.append(candidate)
    del waiting[: len(group)]
    return group


def _resolve(future: asyncio.Future[Sequence[pb.JobResult]], results: Sequence[Any]) -> None:
    if not future.done():
        future.set_result(results)


def _fail(group: list[_Waiting], err: BaseException) -> None:
    for waiting in group:
        if not waiting.future.done():
            if isinstance(err, asyncio.CancelledError):
                waiting.future.set_exception(
                    ClientError("the call carrying these jobs was cancelled (client closing?)")
                )
            else:
                waiting.future.set_exception(err)
