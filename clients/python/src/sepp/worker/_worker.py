"""The Worker: the reserve -> handle -> ack/nack loop, with bounded concurrency and leases kept.

One loop reserves jobs (never more than the free capacity under `max_in_flight`) and starts a
task per job. Each task runs the job's handler inside a `sepp.process` span and settles the job:

* the handler returned: ack;
* it raised `HandlerError`: nack with the directive it carries;
* it raised anything else: log it and nack for retry after min(2^attempt, 60) s;
* no handler for the job type (and no catch-all): nack for retry after the same backoff.

With `auto_extend` a heartbeat extends the lease while the handler runs, at a third of the time
left on the lease the server granted. If the server says the lease is gone (the job was
redelivered elsewhere), the handler is cancelled and the job is neither acked nor nacked: it
belongs to another worker now. A job cancelled by a producer (`SeppClient.cancel`) while its
handler runs is stopped the same way: the extend raises `JobCancelledError`, which has already
dead-lettered the job, so the worker logs "job cancelled" and settles nothing. Without
auto-extend the handler runs to its end, and the ack or nack that follows raises
`JobCancelledError` (logged as "job cancelled").

`ShutdownHandle.shutdown()` stops the loop: no new reserve starts (a pending one is cancelled),
and `run()` returns once every job in flight is settled. A handler that never returns keeps
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
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar

from .. import _log, _otel
from .._retry import RetryDirective
from ..client import SeppClient, reserve_request_to_pb
from ..errors import AttemptMismatchError, JobCancelledError, JobNotFoundError, SeppError
from ..types import Job, JobCtx, Payload, ReserveOptions
from ..v1 import queue_pb2 as pb
from . import _decisions
from ._handler_error import DuplicateHandlerError, HandlerError

__all__ = ["Handler", "ShutdownHandle", "Worker"]

Handler = Callable[[Payload | None, JobCtx], Awaitable[None]]
_H = TypeVar("_H", bound=Callable[..., Any])

_OTEL = _otel.enabled()
_NO_SPAN: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
_DEFAULT_WAIT = timedelta(seconds=30)


class _LeaseLost:
    """The outcome of a job whose lease another worker took over while its handler ran, or
    that was cancelled (`cancelled`) while its handler ran."""

    def __init__(self, cancelled: bool = False) -> None:
        self.cancelled = cancelled


_LEASE_LOST = _LeaseLost()
_JOB_CANCELLED = _LeaseLost(cancelled=True)


def default_worker_id() -> str:
    """`<hostname>-<pid>-<8 random hex digits>`: unique per process, readable in server logs."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def _now() -> datetime:
    return datetime.now(timezone.utc)


class ShutdownHandle:
    """Stops a Worker gracefully. Share it freely; `shutdown()` may be called from any thread."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._requested = False
        self._loop: asyncio.AbstractEventLoop | None = None

    def shutdown(self) -> None:
        """Ask the worker to stop taking jobs and to return from `run()` once drained."""
        self._requested = True
        loop = self._loop
        if loop is None or loop.is_closed():
            self._event.set()
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._event.set()
        else:
            loop.call_soon_threadsafe(self._event.set)

    @property
    def is_shutdown(self) -> bool:
        """Whether shutdown was requested."""
        return self._requested

    def _bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        if self._requested:
            self._event.set()

    async def wait(self) -> None:
        """Wait until shutdown is requested."""
        await self._event.wait()


class Worker:
    """Runs handlers for the jobs of some queues. See the module docs for the whole behaviour.

    `lease_duration` is how long each reserved job is leased (and, with auto-extend, how far
    each extension reaches). `wait_timeout` is the long-poll wait of each reserve (30 s).
    `max_in_flight` bounds the handlers running at once (16). `max_jobs` caps a single reserve
    (by default it takes as many as there is room for). `auto_extend` keeps leases alive while
    handlers run; giving `auto_extend_interval` turns it on with that fixed period.
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
        loop = asyncio.get_running_loop()
        self._shutdown._bind(loop)
        tasks: set[asyncio.Task[None]] = set()
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
            await self._loop(loop, tasks, stop)
            _log.info("worker shutting down; waiting for in-flight jobs to finish")
            while tasks:
                await asyncio.wait(set(tasks))
            _log.info("worker stopped")
        finally:
            stop.cancel()
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

    async def _process(self, job: Job) -> None:
        ctx = job.ctx
        span = _otel.consumer_span(_trace_of(ctx), _span_attributes(ctx)) if _OTEL else _NO_SPAN
        with span:
            handler = self._handlers.get(ctx.job_type) or self._catch_all
            if handler is None:
                directive, reason = _decisions.nack_for_missing_handler(ctx.attempt)
                _log.warning(
                    "no handler registered for job_type %r (job %s); nacking for retry",
                    ctx.job_type,
                    ctx.id,
                )
                await self._settle_nack(ctx, directive, reason)
                return
            if self._auto_extend:
                outcome = await self._run_with_heartbeat(handler, job)
            else:
                outcome = None
                try:
                    result = handler(job.payload, ctx)
                    if inspect.isawaitable(result):
                        await result
                except Exception as err:
                    outcome = err
            if outcome is _JOB_CANCELLED:
                _log.warning(
                    "job cancelled; handler aborted (job %s, attempt %d)", ctx.id, ctx.attempt
                )
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
                await self._client.ack(ctx)
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
            dead_lettered = await self._client.nack(ctx, directive, reason)
        except SeppError as err:
            _log_settle_failure("nack", ctx, err)
            return
        self._metrics.nacked(dead_lettered)

    async def _run_with_heartbeat(
        self, handler: Handler, job: Job
    ) -> Exception | _LeaseLost | None:
        """Run the handler as a child task while a heartbeat keeps its lease alive."""
        ctx = job.ctx
        lease = ctx._lease
        assert lease is not None
        work = asyncio.ensure_future(_invoke(handler, job))
        lost: _LeaseLost | None = None

        async def heartbeat() -> None:
            nonlocal lost
            extension = self._options.lease_duration
            while True:
                interval = _decisions.heartbeat_interval(
                    self._extend_interval, lease.expires_at, _now()
                )
                await asyncio.sleep(interval.total_seconds())
                try:
                    expires_at = await self._client.extend(ctx, extension)
                except JobCancelledError as err:
                    _log.info("job %s: job cancelled (%s)", ctx.id, err)
                    lost = _JOB_CANCELLED
                except (JobNotFoundError, AttemptMismatchError) as err:
                    _log.warning("job %s: lease is gone (%s)", ctx.id, err)
                    lost = _LEASE_LOST
                except SeppError as err:
                    if not _decisions.lease_lost_after_failed_extend(lease.expires_at, _now()):
                        _log.warning(
                            "job %s: extend failed (%s); lease still valid, will retry", ctx.id, err
                        )
                        continue
                    _log.warning(
                        "job %s: extend failed (%s) and the lease has expired", ctx.id, err
                    )
                    lost = _LEASE_LOST
                else:
                    _log.debug("job %s: lease extended to %s", ctx.id, expires_at.isoformat())
                    continue
                work.cancel()
                return

        beat = asyncio.ensure_future(heartbeat())
        try:
            outcome = await work
        except asyncio.CancelledError:
            if lost is not None:
                return lost
            raise
        finally:
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
