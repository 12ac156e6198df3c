"""The Worker: jobs in, handlers run, acks/nacks out, with bounded concurrency and leases kept.

Jobs come one of two ways:

* **the Consume stream** (`streaming=True`, the default, when the server lists the feature
  "consume"): one bidirectional `Consume` call. The worker grants credits for its free slots
  (`max_in_flight` at first), the server pushes leased jobs while credits remain, and each
  finished handler's ack or nack travels on the stream together with the credit its slot gives
  back (what waits in one turn of the event loop goes in one message). Extends (the heartbeat's
  and `ctx.extend`'s) go on the stream too. Each settle's answer is mapped to exactly what the
  unary call would have returned or raised; a settle whose stream ends before its answer is
  sent again as the unary call. A job the server names as cancelled has its handler cancelled
  at once (see below). The stream ending UNAVAILABLE from a cluster's follower is followed to
  the leader it names and reopened there at once (the client's rules in `_cluster`); any other
  end reopens it after `reserve_error_backoff`. Handlers still running keep their leases and
  settle on the new stream.
* **reserve calls** (`streaming=False`, or a server without "consume", or one that answers the
  stream UNIMPLEMENTED, such as sepp 0.1): one loop reserves jobs (never more than the free
  capacity under `max_in_flight`) with a long poll.

Either way the worker starts a task per job, which runs the job's handler inside a
`sepp.process` span and settles the job:

* the handler returned: ack;
* it raised `HandlerError`: nack with the directive it carries;
* it raised anything else: log it and nack for retry after min(2^attempt, 60) s;
* no handler for the job type (and no catch-all): nack for retry after the same backoff.

With `auto_extend` a heartbeat extends the lease while the handler runs, at a third of the time
left on the lease the server granted. If the server says the lease is gone (the job was
redelivered elsewhere), the handler is cancelled and the job is neither acked nor nacked: it
belongs to another worker now. A job cancelled by a producer (`SeppClient.cancel`) while its
handler runs is stopped the same way: over reserve calls, when the next extend raises
`JobCancelledError` (which has already dead-lettered the job), so the worker logs "job
cancelled" and settles nothing; over the Consume stream, as soon as the server pushes the
cancellation (with or without auto-extend), after which the worker's nack dead-letters the job
(answered `JobCancelledError`). The handler sees `asyncio.CancelledError`. Over reserve calls
without auto-extend the handler runs to its end, and the ack or nack that follows raises
`JobCancelledError` (logged as "job cancelled").

`ShutdownHandle.shutdown()` stops the loop: no new reserve starts (a pending one is cancelled),
or no more credits are granted and, once every job in flight is settled, the stream is closed;
`run()` returns once every job in flight is settled. A handler that never returns keeps
`run()` waiting (and, with auto-extend, its lease alive): bound your handlers with
`asyncio.timeout` / `asyncio.wait_for`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, TypeVar

import grpc

from .. import _log, _otel
from .._cluster import MAX_REDIRECTS
from .._convert import duration_to_pb, job_from_pb
from .._retry import RetryDirective
from ..client import (
    SeppClient,
    ack_request_to_pb,
    extend_request_to_pb,
    extended,
    nack_request_to_pb,
    reserve_request_to_pb,
)
from ..errors import (
    AttemptMismatchError,
    JobCancelledError,
    JobConversionError,
    JobNotFoundError,
    SeppError,
)
from ..types import Job, JobCtx, Payload, ReserveOptions
from ..v1 import queue_pb2 as pb
from . import _decisions
from ._consume import (
    DEFAULT_MAX_CREDITS,
    DEFAULT_MAX_SETTLES,
    ConsumeSession,
    StreamEnded,
    consult_after_refusal,
    describe_end,
    response_of,
    status_lost,
)
from ._handler_error import DuplicateHandlerError, HandlerError
from ._shutdown import ShutdownHandle

__all__ = ["Handler", "ShutdownHandle", "Worker"]

Handler = Callable[[Payload | None, JobCtx], Awaitable[None]]
_H = TypeVar("_H", bound=Callable[..., Any])

_OTEL = _otel.enabled()
_NO_SPAN: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
_DEFAULT_WAIT = timedelta(seconds=30)


class _LeaseLost:
    """The outcome of a job whose lease another worker took over while its handler ran, or
    that was cancelled (`cancelled`) while its handler ran: found by a failed extend, which
    dead-lettered it already, or pushed by the server on the Consume stream (`pushed`), after
    which a settle dead-letters it."""

    def __init__(self, cancelled: bool = False, pushed: bool = False) -> None:
        self.cancelled = cancelled
        self.pushed = pushed


_LEASE_LOST = _LeaseLost()
_JOB_CANCELLED = _LeaseLost(cancelled=True)
_CANCEL_PUSHED = _LeaseLost(cancelled=True, pushed=True)


def default_worker_id() -> str:
    """`<hostname>-<pid>-<8 random hex digits>`: unique per process, readable in server logs."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _now() -> datetime:
    return datetime.now(timezone.utc)


class Worker:
    """Runs handlers for the jobs of some queues. See the module docs for the whole behaviour.

    `lease_duration` is how long each reserved job is leased (and, with auto-extend, how far
    each extension reaches). `wait_timeout` is the long-poll wait of each reserve (30 s).
    `max_in_flight` bounds the handlers running at once (16). `max_jobs` caps a single reserve
    (by default it takes as many as there is room for). `auto_extend` keeps leases alive while
    handlers run; giving `auto_extend_interval` turns it on with that fixed period.
    `streaming` (on by default) takes jobs over the server's Consume stream when it has one;
    off, or against a server without it, the worker reserves (see the module docs).
    `wait_timeout` and `max_jobs` only apply to reserve calls.
    """

    def __init__(
        self,
        client: SeppClient,
        queues: Iterable[str],
        lease_duration: timedelta,
        *,
        wait_timeout: timedelta | None = None,
        max_jobs: int | None = None,
        max_in_flight: int = 16,
        reserve_error_backoff: timedelta = timedelta(seconds=1),
        auto_extend: bool = False,
        auto_extend_interval: timedelta | None = None,
        worker_id: str | None = None,
        streaming: bool = True,
    ) -> None:
        wait = _DEFAULT_WAIT if wait_timeout is None else wait_timeout
        if wait < timedelta(milliseconds=1):
            raise ValueError("wait_timeout must be at least 1 ms (a zero wait would spin)")
        if reserve_error_backoff < timedelta(0):
            raise ValueError("reserve_error_backoff must not be negative")
        if isinstance(queues, str):
            raise TypeError(f"queues must be a list of queue names, not the string {queues!r}")
        self._options = ReserveOptions(
            list(queues),
            lease_duration,
            wait,
            worker_id if worker_id is not None else default_worker_id(),
            max_jobs,
        )
        self._client = client
        self._max_in_flight = max(1, int(max_in_flight))
        self._reserve_error_backoff = reserve_error_backoff.total_seconds()
        self._extend_interval = (
            max(auto_extend_interval, _decisions.MIN_HEARTBEAT)
            if auto_extend_interval is not None
            else None
        )
        self._auto_extend = auto_extend or auto_extend_interval is not None
        self._handlers: dict[str, Handler] = {}
        self._catch_all: Handler | None = None
        self._shutdown = ShutdownHandle()
        self._metrics = _otel.WorkerMetrics()
        self._requests: dict[int, pb.ReserveRequest] = {}
        self._in_flight = 0
        self._running = False
        self._wakeup: asyncio.Future[None] | None = None
        self._streaming = bool(streaming)
        self._transport: Literal["consume", "reserve"] | None = None
        # The Consume stream open now, if any, and what the jobs it pushed need.
        self._session: ConsumeSession | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._slots_used = 0  # jobs pushed whose handler has not finished (their credits)
        self._granting = False  # whether freed slots give credits back
        self._aborts: dict[str, Callable[[_LeaseLost], None]] = {}  # by job id, handlers running

    # ----------------------------------------------------------------------------------------
    # Configuration
    # ----------------------------------------------------------------------------------------

    @property
    def client(self) -> SeppClient:
        return self._client

    @property
    def worker_id(self) -> str:
        """The id this worker reserves under (sent with every reserve, ack, nack and extend)."""
        assert self._options.worker_id is not None
        return self._options.worker_id

    @property
    def max_in_flight(self) -> int:
        return self._max_in_flight

    @property
    def streaming(self) -> bool:
        """Whether this worker takes jobs over the Consume stream when the server has it."""
        return self._streaming

    @property
    def transport(self) -> Literal["consume", "reserve"] | None:
        """How the running (or last) `run()` takes jobs: "consume" over the Consume stream,
        "reserve" with reserve calls; None before `run()` has decided."""
        return self._transport

    def handle(self, job_type: str, handler: Handler) -> Worker:
        """Register `handler` for `job_type`. Raises `DuplicateHandlerError` if one exists."""
        _check_handler(job_type, handler)
        if job_type in self._handlers:
            raise DuplicateHandlerError(job_type)
        self._handlers[job_type] = handler
        return self

    def handler(self, job_type: str) -> Callable[[_H], _H]:
        """Decorator form of `handle`: `@worker.handler("send_email")`."""

        def register(handler: _H) -> _H:
            self.handle(job_type, handler)
            return handler

        return register

    def replace_handler(self, job_type: str, handler: Handler) -> Worker:
        """Register `handler` for `job_type`, replacing any handler already there."""
        _check_handler(job_type, handler)
        self._handlers[job_type] = handler
        return self

    def remove_handler(self, job_type: str) -> Worker:
        """Unregister the handler of `job_type`, if there is one."""
        self._handlers.pop(job_type, None)
        return self

    def catch_all(self, handler: _H) -> _H:
        """Register (or replace) the handler for job types that have none. Works as a decorator."""
        if not callable(handler):
            raise TypeError("a handler must be callable")
        self._catch_all = handler
        return handler

    def shutdown_handle(self) -> ShutdownHandle:
        """The handle that stops this worker gracefully."""
        return self._shutdown

    # ----------------------------------------------------------------------------------------
    # The loop
    # ----------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Reserve and handle jobs until shutdown, then wait for the jobs in flight to settle.

        Cancelling the task that runs this is not graceful: the pending reserve and every job
        in flight are cancelled, and their leases left to expire.
        """
        if self._running:
            raise RuntimeError("this worker is already running")
        self._running = True
        self._transport = None
        loop = asyncio.get_running_loop()
        self._shutdown._bind(loop)
        tasks = self._tasks = set()
        stop = loop.create_task(self._shutdown.wait())
        stop.add_done_callback(lambda _: self._wake())
        _log.info(
            "worker started (worker_id=%s, max_in_flight=%d, handlers=%d, auto_extend=%s)",
            self.worker_id,
            self._max_in_flight,
            len(self._handlers),
            self._auto_extend,
        )
        try:
            if not self._streaming or not await self._consume(loop, tasks, stop):
                self._transport = "reserve"
                await self._loop(loop, tasks, stop)
            _log.info("worker shutting down; waiting for in-flight jobs to finish")
            while tasks:
                await asyncio.wait(set(tasks))
            _log.info("worker stopped")
        finally:
            stop.cancel()
            session, self._session = self._session, None
            if session is not None:
                session.abort()
            for task in tasks:
                task.cancel()
            self._running = False

    async def _loop(
        self,
        loop: asyncio.AbstractEventLoop,
        tasks: set[asyncio.Task[None]],
        stop: asyncio.Task[None],
    ) -> None:
        shutdown = self._shutdown
        while not shutdown.is_shutdown:
            while self._in_flight >= self._max_in_flight and not shutdown.is_shutdown:
                await self._wait_for_wakeup(loop)
            if shutdown.is_shutdown:
                return
            jobs = await self._reserve_once(loop, stop)
            if jobs is None:
                continue
            for job in jobs:
                while self._in_flight >= self._max_in_flight:
                    # Only if the server sent more than asked for: never drop a leased job.
                    await self._wait_for_wakeup(loop)
                self._in_flight += 1
                self._metrics.in_flight(1)
                task = loop.create_task(self._process(job))
                tasks.add(task)
                task.add_done_callback(lambda t: self._job_done(t, tasks))

    # ----------------------------------------------------------------------------------------
    # The Consume stream
    # ----------------------------------------------------------------------------------------

    async def _consume(
        self,
        loop: asyncio.AbstractEventLoop,
        tasks: set[asyncio.Task[None]],
        stop: asyncio.Task[None],
    ) -> bool:
        """Take jobs over Consume streams until shutdown. False (at once) if the server has no
        Consume stream: the caller reserves instead."""
        max_settles, max_credits = DEFAULT_MAX_SETTLES, DEFAULT_MAX_CREDITS
        try:
            info = await self._client.get_server_info()
        except SeppError as err:
            # The stream's own answer decides (UNIMPLEMENTED falls back).
            _log.warning("get_server_info failed (%s); trying the Consume stream", err)
        else:
            if "consume" not in info.features:
                _log.info("the server has no Consume stream; reserving jobs")
                return False
            max_settles = info.max_enqueue_batch or max_settles
            max_credits = info.max_consume_credits or max_credits
        shutdown = self._shutdown
        redirects = 0
        self._granting = True
        try:
            while not shutdown.is_shutdown:
                session = ConsumeSession(
                    self._client,
                    self._consume_open(self._max_in_flight - self._slots_used),
                    max_settles=max_settles,
                    max_credits=max_credits,
                    on_jobs=self._pushed,
                    on_cancelled=self._cancel_pushed,
                )
                try:
                    session.start()
                except grpc.aio.UsageError as err:  # e.g. the client was closed
                    self._metrics.reserve_failed()
                    _log.warning(
                        "cannot open the consume stream (%s); retrying in %.3f s",
                        err,
                        self._reserve_error_backoff,
                    )
                    await self._pause(loop, stop, self._reserve_error_backoff)
                    continue
                self._session = session
                self._transport = "consume"
                ended = loop.create_task(session.ended())
                try:
                    await asyncio.wait((ended, stop), return_when=asyncio.FIRST_COMPLETED)
                except asyncio.CancelledError:
                    ended.cancel()
                    raise
                if not ended.done():
                    await self._close_stream(session, ended, tasks)
                    return True
                self._session = None
                ended_with = ended.result()
                if session.answered:
                    redirects = 0
                if ended_with is not None and ended_with.code() == grpc.StatusCode.UNIMPLEMENTED:
                    await session.finish(ended_with, redirects)
                    _log.info("the server answered Consume UNIMPLEMENTED; reserving jobs")
                    return False
                if await session.finish(ended_with, redirects):
                    redirects += 1
                    continue  # a follower named the leader, the current node now
                if status_lost(ended_with) and not session.answered:
                    # gRPC's asyncio client reports INTERNAL instead of the server's status
                    # when the opening write races the server ending the stream (a follower,
                    # a server without Consume): ask the node what it would have said.
                    decision = await consult_after_refusal(self._client)
                    if decision == "reserve":
                        return False
                    if decision == "follow" and redirects < MAX_REDIRECTS:
                        redirects += 1
                        continue
                redirects = 0
                self._metrics.reserve_failed()
                _log.warning(
                    "consume stream ended (%s); reopening in %.3f s",
                    describe_end(ended_with),
                    self._reserve_error_backoff,
                )
                await self._pause(loop, stop, self._reserve_error_backoff)
            return True
        finally:
            self._granting = False

    async def _close_stream(
        self,
        session: ConsumeSession,
        ended: asyncio.Task[grpc.aio.AioRpcError | None],
        tasks: set[asyncio.Task[None]],
    ) -> None:
        """Shutdown with the stream open: no more credits, let the jobs in flight settle on it,
        then half-close and wait for the server to end it."""
        self._granting = False
        _log.info("worker shutting down; settling the jobs in flight before closing the stream")
        while tasks and not ended.done():
            await asyncio.wait((*tasks, ended), return_when=asyncio.FIRST_COMPLETED)
        session.close()
        ended_with = await ended
        self._session = None
        await session.finish(ended_with, 0)
        if ended_with is not None:
            _log.warning("consume stream ended while closing (%s)", describe_end(ended_with))

    def _consume_open(self, credits: int) -> pb.ConsumeOpen:
        options = self._options
        opening = pb.ConsumeOpen(
            queues=options.queues,
            lease_duration=duration_to_pb(options.lease_duration),
            credits=max(0, credits),
        )
        if options.worker_id is not None:
            opening.worker_id = options.worker_id
        return opening

    def _pushed(self, messages: Sequence[pb.Job]) -> None:
        """Start a task for each job the stream pushed (never more than the credits granted,
        which are the free slots)."""
        loop = asyncio.get_running_loop()
        self._metrics.reserve_completed(True)
        for message in messages:
            try:
                job = job_from_pb(message, self._client, self._options.worker_id)
            except JobConversionError as err:
                _log.warning("skipping malformed job pushed on the consume stream: %s", err)
                if self._session is not None and self._granting:
                    self._session.grant(1)
                continue
            assert job.ctx._lease is not None
            job.ctx._lease.extend_via = self._extend
            self._slots_used += 1
            self._in_flight += 1
            self._metrics.in_flight(1)
            task = loop.create_task(self._process(job, streamed=True))
            self._tasks.add(task)
            task.add_done_callback(lambda t: self._job_done(t, self._tasks))

    def _cancel_pushed(self, job_ids: Sequence[str]) -> None:
        """The server cancelled these jobs: stop their handlers now."""
        for job_id in job_ids:
            abort = self._aborts.get(job_id)
            if abort is not None:
                _log.info("job %s: cancelled by the server; cancelling its handler", job_id)
                abort(_CANCEL_PUSHED)

    def _free_slot(self) -> None:
        """A pushed job's handler finished: its credit goes back with the next message."""
        self._slots_used -= 1
        session = self._session
        if session is not None and self._granting:
            session.grant(1)

    async def _settle_on_stream(self, settle: pb.ConsumeSettle, kind: str) -> Any | None:
        """The response of `settle` on the open stream (an `AckResponse`, ...); None if there is
        no stream, or it ended before answering (the caller makes the unary call). Raises what
        the unary call would have raised."""
        session = self._session
        if session is None:
            return None
        try:
            result = await session.settle(settle)
        except StreamEnded:
            return None
        return response_of(result, kind)

    # The settles of the worker: on the stream while one is open (in a client span
    # `sepp.<operation>` as the unary call has), else, or if it ends first, the unary call.

    async def _ack(self, ctx: JobCtx) -> None:
        if self._session is not None:
            settle = pb.ConsumeSettle(ack=ack_request_to_pb(ctx))
            with _otel.client_span("ack", "Consume") if _OTEL else _NO_SPAN:
                if await self._settle_on_stream(settle, "ack") is not None:
                    return
        await self._client.ack(ctx)

    async def _nack(self, ctx: JobCtx, directive: RetryDirective, reason: str) -> bool:
        if self._session is not None:
            settle = pb.ConsumeSettle(nack=nack_request_to_pb(ctx, directive, reason))
            with _otel.client_span("nack", "Consume") if _OTEL else _NO_SPAN:
                response = await self._settle_on_stream(settle, "nack")
            if response is not None:
                return bool(response.dead_lettered)
        return await self._client.nack(ctx, directive, reason)

    async def _extend(self, ctx: JobCtx, extension: timedelta) -> datetime:
        if self._session is not None:
            settle = pb.ConsumeSettle(extend=extend_request_to_pb(ctx, extension))
            with _otel.client_span("extend", "Consume") if _OTEL else _NO_SPAN:
                response = await self._settle_on_stream(settle, "extend")
            if response is not None:
                return extended(ctx, response)
        return await self._client.extend(ctx, extension)

    # ----------------------------------------------------------------------------------------
    # Reserving
    # ----------------------------------------------------------------------------------------

    def _wake(self) -> None:
        wakeup = self._wakeup
        if wakeup is not None and not wakeup.done():
            wakeup.set_result(None)

    async def _wait_for_wakeup(self, loop: asyncio.AbstractEventLoop) -> None:
        self._wakeup = loop.create_future()
        try:
            await self._wakeup
        finally:
            self._wakeup = None

    def _job_done(self, task: asyncio.Task[None], tasks: set[asyncio.Task[None]]) -> None:
        tasks.discard(task)
        self._in_flight -= 1
        self._metrics.in_flight(-1)
        self._wake()
        if not task.cancelled() and task.exception() is not None:
            _log.error("job task failed unexpectedly: %r", task.exception())

    def _reserve_request(self, max_jobs: int) -> pb.ReserveRequest:
        request = self._requests.get(max_jobs)
        if request is None:
            request = reserve_request_to_pb(self._options, max_jobs)
            self._requests[max_jobs] = request
        return request

    async def _reserve_once(
        self, loop: asyncio.AbstractEventLoop, stop: asyncio.Task[None]
    ) -> list[Job] | None:
        """One reserve raced against shutdown; None if nothing is to be processed."""
        options = self._options
        size = _decisions.reserve_size(options.max_jobs, self._max_in_flight, self._in_flight)
        started = loop.time()
        call = loop.create_task(
            self._client.reserve_request(
                self._reserve_request(size), options.wait_timeout, options.worker_id
            )
        )
        try:
            await asyncio.wait((call, stop), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            call.cancel()  # run() itself is being cancelled: do not leave the long poll behind
            raise
        if not call.done():
            call.cancel()
            await asyncio.wait((call,))
            if call.cancelled():
                return None
        # A reserve that finished, even as shutdown arrived, holds leased jobs: process them.
        error = call.exception()
        if error is not None:
            if not isinstance(error, SeppError):
                raise error
            self._metrics.reserve_failed()
            _log.warning(
                "reserve error: %s; backing off for %.3f s", error, self._reserve_error_backoff
            )
            await self._pause(loop, stop, self._reserve_error_backoff)
            return None
        jobs = call.result()
        self._metrics.reserve_completed(jobs is not None)
        if jobs is None:
            elapsed = timedelta(seconds=loop.time() - started)
            pause = _decisions.pause_after_empty(elapsed, options.wait_timeout)
            if pause:
                await self._pause(loop, stop, pause.total_seconds())
        return jobs

    @staticmethod
    async def _pause(
        loop: asyncio.AbstractEventLoop, stop: asyncio.Task[None], seconds: float
    ) -> None:
        """Sleep `seconds`, waking early on shutdown."""
        if seconds <= 0 or stop.done():
            return
        await asyncio.wait((stop,), timeout=seconds)

    # ----------------------------------------------------------------------------------------
    # One job
    # ----------------------------------------------------------------------------------------

    async def _process(self, job: Job, streamed: bool = False) -> None:
        ctx = job.ctx
        span = _otel.consumer_span(_trace_of(ctx), _span_attributes(ctx)) if _OTEL else _NO_SPAN
        freed = not streamed  # whether this job's slot was given back (pushed jobs only)
        try:
            with span:
                handler = self._handlers.get(ctx.job_type) or self._catch_all
                if handler is None:
                    directive, reason = _decisions.nack_for_missing_handler(ctx.attempt)
                    _log.warning(
                        "no handler registered for job_type %r (job %s); nacking for retry",
                        ctx.job_type,
                        ctx.id,
                    )
                    if not freed:
                        freed = True
                        self._free_slot()
                    await self._settle_nack(ctx, directive, reason)
                    return
                if self._auto_extend or streamed:
                    outcome = await self._run_guarded(handler, job)
                else:
                    outcome = None
                    try:
                        result = handler(job.payload, ctx)
                        if inspect.isawaitable(result):
                            await result
                    except Exception as err:
                        outcome = err
                if not freed:
                    freed = True
                    self._free_slot()  # in the same turn as the settle below: one message
                await self._after(ctx, outcome)
        finally:
            if not freed:
                self._free_slot()

    async def _after(self, ctx: JobCtx, outcome: Exception | _LeaseLost | None) -> None:
        """Settle (or not) the job whose handler ended with `outcome`."""
        if outcome is _CANCEL_PUSHED:
            _log.warning("job cancelled; handler aborted (job %s, attempt %d)", ctx.id, ctx.attempt)
            # The job is marked cancelled; a settle dead-letters it (answered cancelled).
            try:
                await self._nack(ctx, RetryDirective.DEFAULT, "job was cancelled")
            except JobCancelledError:
                pass
            except SeppError as err:
                _log_settle_failure("nack", ctx, err)
            return
        if outcome is _JOB_CANCELLED:
            _log.warning("job cancelled; handler aborted (job %s, attempt %d)", ctx.id, ctx.attempt)
            return
        if outcome is _LEASE_LOST:
            _log.error("lease lost; handler aborted (job %s, attempt %d)", ctx.id, ctx.attempt)
            return
        await self._settle(ctx, outcome)

    async def _settle(self, ctx: JobCtx, outcome: Exception | _LeaseLost | None) -> None:
        if outcome is None:
            if _log.logger.isEnabledFor(logging.DEBUG):
                _log.debug("job %s completed; acking", ctx.id)
            try:
                await self._ack(ctx)
            except SeppError as err:
                _log_settle_failure("ack", ctx, err)
                return
            self._metrics.processed()
            return
        assert isinstance(outcome, Exception)
        directive, reason = _decisions.nack_for_failure(outcome, ctx.attempt)
        if isinstance(outcome, HandlerError):
            _log.warning("handler asked to nack job %s (%s): %s", ctx.id, directive.kind, reason)
        else:
            _log.error(
                "handler raised %s on job %s; nacking for retry", type(outcome).__name__, ctx.id
            )
            _log.logger.debug("handler traceback", exc_info=outcome)
        await self._settle_nack(ctx, directive, reason)

    async def _settle_nack(self, ctx: JobCtx, directive: RetryDirective, reason: str) -> None:
        try:
            dead_lettered = await self._nack(ctx, directive, reason)
        except SeppError as err:
            _log_settle_failure("nack", ctx, err)
            return
        self._metrics.nacked(dead_lettered)

    async def _run_guarded(self, handler: Handler, job: Job) -> Exception | _LeaseLost | None:
        """Run the handler as a child task that a lost lease or a cancellation stops: with
        auto-extend, a heartbeat keeps its lease alive; a cancellation the server pushes on
        the Consume stream cancels it at once."""
        ctx = job.ctx
        lease = ctx._lease
        assert lease is not None
        work = asyncio.ensure_future(_invoke(handler, job))
        lost: _LeaseLost | None = None

        def abort(why: _LeaseLost) -> None:
            nonlocal lost
            if lost is None:
                lost = why
            work.cancel()

        async def heartbeat() -> None:
            extension = self._options.lease_duration
            while True:
                interval = _decisions.heartbeat_interval(
                    self._extend_interval, lease.expires_at, _now()
                )
                await asyncio.sleep(interval.total_seconds())
                try:
                    expires_at = await self._extend(ctx, extension)
                except JobCancelledError as err:
                    _log.info("job %s: job cancelled (%s)", ctx.id, err)
                    why = _JOB_CANCELLED
                except (JobNotFoundError, AttemptMismatchError) as err:
                    _log.warning("job %s: lease is gone (%s)", ctx.id, err)
                    why = _LEASE_LOST
                except SeppError as err:
                    if not _decisions.lease_lost_after_failed_extend(lease.expires_at, _now()):
                        _log.warning(
                            "job %s: extend failed (%s); lease still valid, will retry", ctx.id, err
                        )
                        continue
                    _log.warning(
                        "job %s: extend failed (%s) and the lease has expired", ctx.id, err
                    )
                    why = _LEASE_LOST
                else:
                    _log.debug("job %s: lease extended to %s", ctx.id, expires_at.isoformat())
                    continue
                abort(why)
                return

        beat = asyncio.ensure_future(heartbeat()) if self._auto_extend else None
        self._aborts[ctx.id] = abort
        try:
            outcome = await work
        except asyncio.CancelledError:
            if lost is not None:
                return lost
            raise
        finally:
            if self._aborts.get(ctx.id) is abort:
                del self._aborts[ctx.id]
            if beat is not None:
                beat.cancel()
        return lost if lost is not None else outcome


async def _invoke(handler: Handler, job: Job) -> Exception | None:
    """Run a handler; its exception (not a BaseException such as cancellation) is the result."""
    try:
        result = handler(job.payload, job.ctx)
        if inspect.isawaitable(result):
            await result
    except Exception as err:
        return err
    return None


def _check_handler(job_type: str, handler: object) -> None:
    if not isinstance(job_type, str) or not job_type:
        raise ValueError("job_type must be a non-empty string")
    if not callable(handler):
        raise TypeError("a handler must be callable: async def handler(payload, ctx)")


def _trace_of(ctx: JobCtx) -> tuple[str, str | None] | None:
    trace = ctx.trace_context
    return (trace.traceparent, trace.tracestate) if trace is not None else None


def _span_attributes(ctx: JobCtx) -> dict[str, str | int]:
    return {
        "messaging.system": "sepp",
        "messaging.operation.type": "process",
        "messaging.destination.name": ctx.queue,
        "messaging.message.id": ctx.id,
        "sepp.job.type": ctx.job_type,
        "sepp.job.attempt": ctx.attempt,
    }


def _log_settle_failure(operation: str, ctx: JobCtx, err: SeppError) -> None:
    if isinstance(err, JobCancelledError):
        _log.warning(
            "job cancelled: %s of job %s refused (%s); the job is dead-lettered, not redelivered",
            operation,
            ctx.id,
            err,
        )
    elif isinstance(err, (JobNotFoundError, AttemptMismatchError)):
        _log.error(
            "%s of job %s failed (%s): its lease is gone, so the job is redelivered, or an earlier "
            "retry of this %s already succeeded",
            operation,
            ctx.id,
            err,
            operation,
        )
    else:
        _log.error(
            "%s of job %s failed (%s); the job will be redelivered when its lease expires",
            operation,
            ctx.id,
            err,
        )
