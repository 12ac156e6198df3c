"""One `Consume` stream of a Worker: the credits it grants, the jobs pushed to it, its settles.

The stream opens with a `ConsumeOpen` (queues, lease duration, worker id, the first credits).
The server then pushes leased jobs while credits remain, each using one; the Worker grants a
credit again when a handler finishes (`grant`), in the same message as that job's ack or nack.

`settle` sends an ack, nack or extend as a `ConsumeSettle` with an id of this stream, and
returns the `ConsumeResult` the server answers with that id. The settles and credits of one
turn of the event loop travel in one `ConsumeRequest` (at most `max_settles` settles each, the
server's `max_enqueue_batch`); credits are only granted up to `max_credits` outstanding (the
server's `max_consume_credits`), the rest when pushed jobs have used some.

A settle raises `StreamEnded` when the stream is gone before its answer came (or was closing
when it was asked for): the caller then makes the unary call instead, so a settle never gets
lost with a stream. Pushed cancellations (`ConsumeResponse.cancelled`) are handed to
`on_cancelled`, pushed jobs to `on_jobs`; both run in the reader, so they must not block.

`response_of` turns a `ConsumeResult` into what the unary call returns or raises. gRPC's
asyncio client can report a stream the server refused at once (a follower, a server without
Consume) as INTERNAL "Internal error from Core", having lost the server's status to the failed
opening write (`status_lost`); `consult_after_refusal` then asks the node what it would have
said.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Sequence
from typing import Any, Literal

import grpc

from .. import _log
from .._acks import item_error
from .._cluster import Node
from ..client import SeppClient
from ..errors import MalformedResponseError, SeppError, lease_error_from_rpc
from ..v1 import queue_pb2 as pb

CONSUME_METHOD = "/sepp.v1.QueueService/Consume"

# What a server that answered no GetServerInfo is assumed to allow.
DEFAULT_MAX_SETTLES = 256
DEFAULT_MAX_CREDITS = 10_000


class StreamEnded(Exception):
    """The stream ended (or is closing) before a settle was answered: send it another way."""


class ConsumeSession:
    """One Consume stream (see the module)."""

    def __init__(
        self,
        client: SeppClient,
        opening: pb.ConsumeOpen,
        *,
        max_settles: int,
        max_credits: int,
        on_jobs: Callable[[Sequence[pb.Job]], None],
        on_cancelled: Callable[[Sequence[str]], None],
    ) -> None:
        self._client = client
        self._max_settles = max(1, max_settles)
        self._max_credits = max(1, max_credits)
        self._on_jobs = on_jobs
        self._on_cancelled = on_cancelled
        # The credits of the opening are at most the maximum; the rest are owed.
        self._outstanding = min(opening.credits, self._max_credits)
        self._owed = opening.credits - self._outstanding
        opening.credits = self._outstanding
        self._opening = opening
        self._ids = itertools.count(1)
        self._pending: list[tuple[pb.ConsumeSettle, asyncio.Future[pb.ConsumeResult]]] = []
        self._waiting: dict[int, asyncio.Future[pb.ConsumeResult]] = {}
        self._outbox: asyncio.Queue[pb.ConsumeRequest | None] = asyncio.Queue()
        self._flush_scheduled = False
        self._writable = False
        self._node: Node | None = None
        self._call: Any = None
        self._reader: asyncio.Task[grpc.aio.AioRpcError | None] | None = None
        self._writer: asyncio.Task[None] | None = None
        #: Whether any message came from the server (the stream was accepted).
        self.answered = False

    def start(self) -> None:
        """Open the stream on the client's current node and start reading and writing."""
        nodes = self._client._nodes
        self._node, self._call = nodes.open_stream(
            CONSUME_METHOD,
            pb.ConsumeRequest.SerializeToString,
            pb.ConsumeResponse.FromString,
            self._client._auth or None,
        )
        self._writable = True
        self._outbox.put_nowait(pb.ConsumeRequest(open=self._opening))
        loop = asyncio.get_running_loop()
        self._writer = loop.create_task(self._write())
        self._reader = loop.create_task(self._read())

    async def ended(self) -> grpc.aio.AioRpcError | None:
        """Wait for the stream to end: its failure, or None if it ended cleanly."""
        assert self._reader is not None
        return await asyncio.shield(self._reader)

    async def finish(self, err: grpc.aio.AioRpcError | None, redirects: int) -> bool:
        """Record the ended stream with the client's nodes; whether to reopen at once (a
        follower named the leader, which is now the client's current node)."""
        node, self._node = self._node, None
        if node is None:
            return False
        return await self._client._nodes.stream_ended(node, err, redirects)

    def close(self) -> None:
        """Half-close after sending what is pending: the server answers the settles it has
        and ends the stream. Settles asked for from now on raise `StreamEnded`."""
        if not self._writable:
            return
        self._flush()
        self._writable = False
        self._outbox.put_nowait(None)

    def abort(self) -> None:
        """Cancel the stream at once (leases held are left to expire)."""
        self._writable = False
        if self._call is not None:
            self._call.cancel()

    # ----------------------------------------------------------------------------------------
    # Credits and settles
    # ----------------------------------------------------------------------------------------

    def grant(self, credits: int) -> None:
        """Grant `credits` more jobs, with the next message."""
        if credits <= 0 or not self._writable:
            return
        self._owed += credits
        self._schedule_flush()

    async def settle(self, settle: pb.ConsumeSettle) -> pb.ConsumeResult:
        """Send `settle` (its id is set here) and return the server's answer to it. Raises
        `StreamEnded` if the stream ends (or is closing) first."""
        if not self._writable:
            raise StreamEnded
        future: asyncio.Future[pb.ConsumeResult] = asyncio.get_running_loop().create_future()
        settle.id = next(self._ids)
        entry = (settle, future)
        self._pending.append(entry)
        self._schedule_flush()
        try:
            return await future
        finally:
            self._waiting.pop(settle.id, None)
            if entry in self._pending:
                self._pending.remove(entry)

    def _schedule_flush(self) -> None:
        if not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        """Everything waiting, in as few messages as the settle limit allows; the credits ride
        in the first."""
        self._flush_scheduled = False
        pending = [entry for entry in self._pending if not entry[1].done()]
        self._pending = []
        if not self._writable:
            _fail(pending, StreamEnded())
            return
        credits = min(self._owed, self._max_credits - self._outstanding)
        self._owed -= credits
        self._outstanding += credits
        while credits or pending:
            chunk, pending = pending[: self._max_settles], pending[self._max_settles :]
            message = pb.ConsumeRequest(settles=[settle for settle, _ in chunk])
            if credits:
                message.credits = credits
                credits = 0
            for settle, future in chunk:
                self._waiting[settle.id] = future
            self._outbox.put_nowait(message)

    # ----------------------------------------------------------------------------------------
    # The stream's two directions
    # ----------------------------------------------------------------------------------------

    async def _write(self) -> None:
        while True:
            message = await self._outbox.get()
            try:
                if message is None:
                    await self._call.done_writing()
                    return
                await self._call.write(message)
            except asyncio.CancelledError:
                raise
            except Exception as err:  # the stream ended; the reader sees why
                _log.debug("consume stream: write failed: %r", err)
                self._writable = False
                return

    async def _read(self) -> grpc.aio.AioRpcError | None:
        error: grpc.aio.AioRpcError | None = None
        try:
            while True:
                response = await self._call.read()
                if response is grpc.aio.EOF:
                    break
                self.answered = True
                self._received(response)
        except grpc.aio.AioRpcError as err:
            error = err
        except asyncio.CancelledError:
            self._call.cancel()
            raise
        finally:
            self._writable = False
            ended = StreamEnded()
            _fail(self._pending, ended)
            self._pending = []
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(ended)
            self._waiting.clear()
            if self._writer is not None:
                self._writer.cancel()
        return error

    def _received(self, response: pb.ConsumeResponse) -> None:
        for result in response.results:
            future = self._waiting.pop(result.id, None)
            if future is not None and not future.done():
                future.set_result(result)
        if response.jobs:
            self._outstanding = max(0, self._outstanding - len(response.jobs))
            if self._owed:
                self._schedule_flush()
            self._on_jobs(response.jobs)
        if response.cancelled:
            self._on_cancelled(response.cancelled)


def _fail(
    entries: list[tuple[pb.ConsumeSettle, asyncio.Future[pb.ConsumeResult]]], err: Exception
) -> None:
    for _, future in entries:
        if not future.done():
            future.set_exception(err)


async def consult_after_refusal(client: SeppClient) -> Literal["reserve", "follow", "retry"]:
    """After a stream ended without a status (see `status_lost`): "reserve" if the node has no
    Consume stream, "follow" if it is a follower that names the leader (the client's current
    node now), else "retry"."""
    try:
        info = await client.get_server_info()
    except SeppError as err:
        _log.debug("get_server_info after a refused stream failed: %s", err)
        return "retry"
    if "consume" not in info.features:
        _log.info("the server has no Consume stream; reserving jobs")
        return "reserve"
    cluster = info.cluster
    if cluster is not None and not cluster.is_leader and cluster.leader_addr:
        if client._nodes.follow_named_leader(cluster.leader_addr):
            return "follow"
    return "retry"


def response_of(result: pb.ConsumeResult, kind: str) -> Any:
    """The response of a settle of `kind` ("ack", "nack", "extend") that `result` answers.
    Raises what the unary call would have raised."""
    outcome = result.WhichOneof("outcome")
    if outcome == "error":
        error = result.error
        raise lease_error_from_rpc(item_error(error.code, error.message, error.cancelled))
    if outcome != kind:
        raise MalformedResponseError(
            f"the server answered a {kind} on the consume stream with {outcome or 'nothing'}"
        )
    return getattr(result, kind)


def status_lost(err: grpc.aio.AioRpcError | None) -> bool:
    """Whether `err` is gRPC's asyncio client hiding the server's status behind INTERNAL (a
    write that failed as the server ended the call)."""
    return (
        err is not None
        and err.code() == grpc.StatusCode.INTERNAL
        and err.details() == "Internal error from Core"
    )


def describe_end(err: grpc.aio.AioRpcError | None) -> str:
    if err is None:
        return "the server ended it"
    details = err.details()
    return f"{err.code().name}: {details}" if details else err.code().name
