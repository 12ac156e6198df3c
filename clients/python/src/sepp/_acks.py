"""Ack coalescing: the acks of one event-loop turn travel together in one `AckBatch` call.

A Worker acks the jobs of one reserve answer within the same turn of the event loop, one
`ack` each. The first ack of a turn schedules a flush for the end of that turn (`call_soon`);
every ack made before the flush runs joins it. A flush of one ack sends a plain `Ack`; a flush
of several sends one `AckBatch`, whose items the server answers one by one, so every caller
still gets exactly what its own `Ack` would have got. Nobody waits longer than the turn.

A server older than `AckBatch` (sepp 0.1) answers it UNIMPLEMENTED: the acks of that flush are
then resent one call each, and this client sends plain `Ack` calls from then on.

A failure of a whole shared call is every sharer's failure, as it would have been had each
sent its own call at that moment; each caller's retry policy then retries its own `Ack`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from .errors import (
    CANCELLED_MESSAGE,
    CANCELLED_TRAILER,
    BatchResultCountMismatchError,
    ClientError,
    MalformedResponseError,
)
from .v1 import queue_pb2 as pb

# The server's default batch limit (`limits.max_enqueue_batch`) is 256.
MAX_ACKS_PER_CALL = 256

SendOne = Callable[[pb.AckRequest], Awaitable[Any]]
SendBatch = Callable[[pb.AckBatchRequest], Awaitable[pb.AckBatchResponse]]

_CODES = {code.value[0]: code for code in grpc.StatusCode}


def item_error(code: int, message: str, cancelled: bool = False) -> grpc.aio.AioRpcError:
    """The error a failed item of an `AckBatch` (or a settle of a Consume stream) stands for, as
    its own `Ack` would have raised.

    An item carries a code, a message and whether the job was cancelled. The item of a
    cancelled job (NOT_FOUND with `cancelled`, or from a server that predates that flag, the
    message "job was cancelled") gets the trailer its own call would have had,
    `sepp-cancelled: true`, so it raises `JobCancelledError` just the same.
    """
    status = _CODES.get(code, grpc.StatusCode.UNKNOWN)
    if status == grpc.StatusCode.OK:
        status = grpc.StatusCode.UNKNOWN
    trailing = (
        grpc.aio.Metadata((CANCELLED_TRAILER, "true"))
        if status == grpc.StatusCode.NOT_FOUND and (cancelled or message == CANCELLED_MESSAGE)
        else grpc.aio.Metadata()
    )
    return grpc.aio.AioRpcError(status, grpc.aio.Metadata(), trailing, message)


class AckPipeline:
    """Coalesces the acks of one event-loop turn (see the module)."""

    def __init__(self, send_one: SendOne, send_batch: SendBatch) -> None:
        self._send_one = send_one
        self._send_batch = send_batch
        self._waiting: list[tuple[pb.AckRequest, asyncio.Future[None]]] = []
        self._flush_scheduled = False
        self._batch_supported = True
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def batch_supported(self) -> bool:
        """False once the server answered `AckBatch` UNIMPLEMENTED."""
        return self._batch_supported

    async def submit(self, request: pb.AckRequest) -> None:
        """Sends `request`'s ack. Raises what its own `Ack` call would have raised."""
        if not self._batch_supported:
            await self._send_one(request)
            return
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        entry = (request, future)
        self._waiting.append(entry)
        if not self._flush_scheduled:
            self._flush_scheduled = True
            loop.call_soon(self._flush)
        try:
            await future
        except asyncio.CancelledError:
            if entry in self._waiting:
                self._waiting.remove(entry)
            raise

    def _flush(self) -> None:
        self._flush_scheduled = False
        # A caller cancelled meanwhile has taken its ack back.
        waiting = [entry for entry in self._waiting if not entry[1].done()]
        self._waiting = []
        loop = asyncio.get_running_loop()
        for start in range(0, len(waiting), MAX_ACKS_PER_CALL):
            task = loop.create_task(self._deliver(waiting[start : start + MAX_ACKS_PER_CALL]))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _deliver(self, group: list[tuple[pb.AckRequest, asyncio.Future[None]]]) -> None:
        if len(group) == 1 or not self._batch_supported:
            await asyncio.gather(*(self._deliver_one(request, future) for request, future in group))
            return
        try:
            response = await self._send_batch(pb.AckBatchRequest(acks=[r for r, _ in group]))
        except grpc.aio.AioRpcError as err:
            if err.code() == grpc.StatusCode.UNIMPLEMENTED:
                self._batch_supported = False
                await asyncio.gather(*(self._deliver_one(r, f) for r, f in group))
                return
            _fail(group, err)
            return
        except BaseException as err:  # includes the cancellation of a closing client
            _fail(group, err)
            if not isinstance(err, Exception):
                raise
            return
        results = response.results
        if len(results) != len(group):
            _fail(group, BatchResultCountMismatchError(len(group), len(results)))
            return
        for (_, future), result in zip(group, results, strict=True):
            if future.done():
                continue
            outcome = result.WhichOneof("outcome")
            if outcome == "success":
                future.set_result(None)
            elif outcome == "error":
                future.set_exception(
                    item_error(result.error.code, result.error.message, result.error.cancelled)
                )
            else:
                future.set_exception(
                    MalformedResponseError("the server sent an ack result with no outcome")
                )

    async def _deliver_one(self, request: pb.AckRequest, future: asyncio.Future[None]) -> None:
        try:
            await self._send_one(request)
        except BaseException as err:
            _fail([(request, future)], err)
            if not isinstance(err, Exception):
                raise
            return
        if not future.done():
            future.set_result(None)


def _fail(group: list[tuple[pb.AckRequest, asyncio.Future[None]]], err: BaseException) -> None:
    for _, future in group:
        if future.done():
            continue
        if isinstance(err, asyncio.CancelledError):
            future.set_exception(ClientError("the call carrying this ack was cancelled"))
        else:
            future.set_exception(err)
