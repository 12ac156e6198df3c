"""A blocking client for code that is not async: scripts, WSGI apps, task runners.

    from sepp.sync import SeppClient

    with SeppClient.connect("127.0.0.1:50051") as client:
        ack = client.enqueue(EnqueueRequest("emails", "send_welcome"))

It is a thin shell around the async `sepp.SeppClient`: the client runs on an event loop in a
daemon thread of its own, and every method hands its call to that loop and waits for the answer.
It offers the producer calls (`cancel` and the schedule calls among them), pausing queues and
`get_server_info`, takes the same `connect` options but `coalesce_acks` (it makes no acks),
raises the same exceptions, and is safe to share between threads (calls from several threads
run concurrently on the loop). The caller's OpenTelemetry context travels with each call, so an
enqueue made inside a span is traced and stamped exactly as the async client would do it.
Consumers should use the async `Worker`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import threading
from collections.abc import Coroutine, Iterable
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, TypeVar

import grpc

from ._retry import RetryPolicy
from .client import SeppClient as AsyncSeppClient
from .errors import JobRejection
from .types import EnqueueAck, EnqueueRequest, QueuePause, Schedule, ScheduleInfo, ServerInfo

__all__ = ["SeppClient"]

_T = TypeVar("_T")


class _LoopThread:
    """An event loop running forever in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="sepp-sync-client", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def call(self, coroutine: Coroutine[Any, Any, _T], timeout: float | None = None) -> _T:
        """Run `coroutine` on the loop, in a copy of the caller's context; wait for its result."""
        if threading.current_thread() is self._thread:
            coroutine.close()
            raise RuntimeError("a sync SeppClient cannot be called from its own loop thread")
        context = contextvars.copy_context()
        result: concurrent.futures.Future[_T] = concurrent.futures.Future()
        tasks: list[asyncio.Task[_T]] = []

        def start() -> None:
            task = context.run(self.loop.create_task, coroutine)
            tasks.append(task)
            task.add_done_callback(lambda t: _copy_outcome(t, result))

        self.loop.call_soon_threadsafe(start)
        try:
            return result.result(timeout)
        except BaseException:
            # Interrupted (Ctrl-C) or timed out: do not leave the call running unseen.
            self.loop.call_soon_threadsafe(lambda: [t.cancel() for t in tasks])
            raise

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join()
        self.loop.close()


def _copy_outcome(task: asyncio.Task[_T], result: concurrent.futures.Future[_T]) -> None:
    if result.done():
        return
    if task.cancelled():
        result.cancel()
    elif (error := task.exception()) is not None:
        result.set_exception(error)
    else:
        result.set_result(task.result())


class SeppClient:
    """A blocking sepp client. Create it with `SeppClient.connect(addr, **options)`."""

    def __init__(self, runner: _LoopThread, client: AsyncSeppClient) -> None:
        self._runner = runner
        self._client = client
        self._closed = False

    @classmethod
    def connect(
        cls,
        addr: str,
        *,
        api_key: str | None = None,
        retry_policy: RetryPolicy | None = None,
        tls: bool = False,
        tls_ca_cert: bytes | str | None = None,
        tls_domain: str | None = None,
        credentials: grpc.ChannelCredentials | None = None,
        connect_timeout: timedelta = timedelta(seconds=5),
        rpc_timeout: timedelta = timedelta(seconds=30),
        max_receive_message_bytes: int | None = None,
        coalesce_enqueues: bool = True,
        follow_leader: bool = True,
    ) -> SeppClient:
        """Connect like `sepp.SeppClient.connect` (its options but `coalesce_acks`), blocking."""
        runner = _LoopThread()
        try:
            client = runner.call(
                AsyncSeppClient.connect(
                    addr,
                    api_key=api_key,
                    retry_policy=retry_policy,
                    tls=tls,
                    tls_ca_cert=tls_ca_cert,
                    tls_domain=tls_domain,
                    credentials=credentials,
                    connect_timeout=connect_timeout,
                    rpc_timeout=rpc_timeout,
                    max_receive_message_bytes=max_receive_message_bytes,
                    coalesce_enqueues=coalesce_enqueues,
                    follow_leader=follow_leader,
                )
            )
        except BaseException:
            runner.stop()
            raise
        return cls(runner, client)

    @property
    def async_client(self) -> AsyncSeppClient:
        """The async client underneath (use it only on `loop`)."""
        return self._client

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The event loop the client runs on (in its own thread)."""
        return self._runner.loop

    def _call(self, coroutine: Coroutine[Any, Any, _T]) -> _T:
        if self._closed:
            coroutine.close()
            raise RuntimeError("this SeppClient is closed")
        return self._runner.call(coroutine)

    def enqueue(self, request: EnqueueRequest) -> EnqueueAck:
        """Enqueue one job. Raises `JobRejectedError` if the server refuses it."""
        return self._call(self._client.enqueue(request))

    def enqueue_batch(self, requests: Iterable[EnqueueRequest]) -> list[EnqueueAck | JobRejection]:
        """Enqueue jobs each on its own: one ack or rejection per job, in order."""
        return self._call(self._client.enqueue_batch(list(requests)))

    def enqueue_atomic(self, requests: Iterable[EnqueueRequest]) -> list[EnqueueAck]:
        """Enqueue all the jobs or none. Raises `BatchValidationError` listing every failed job."""
        return self._call(self._client.enqueue_atomic(list(requests)))

    def cancel(self, job_id: str, reason: str | None = None) -> bool:
        """Cancel a job by id; returns True if it was leased. See `sepp.SeppClient.cancel`."""
        return self._call(self._client.cancel(job_id, reason))

    def upsert_schedule(self, schedule: Schedule) -> ScheduleInfo:
        """Create or replace a recurring schedule. See `sepp.SeppClient.upsert_schedule`."""
        return self._call(self._client.upsert_schedule(schedule))

    def delete_schedule(self, schedule_id: str) -> bool:
        """Delete a schedule by id; False if there was none. See `sepp.SeppClient`."""
        return self._call(self._client.delete_schedule(schedule_id))

    def list_schedules(self) -> list[ScheduleInfo]:
        """Every schedule the server keeps, sorted by id."""
        return self._call(self._client.list_schedules())

    def pause_queue(
        self, queue: str, *, until: datetime | None = None, reason: str | None = None
    ) -> QueuePause:
        """Pause a queue (`ALL_QUEUES`: every queue). See `sepp.SeppClient.pause_queue`."""
        return self._call(self._client.pause_queue(queue, until=until, reason=reason))

    def resume_queue(self, queue: str) -> bool:
        """Lift a queue's pause; False if it was not paused. See `sepp.SeppClient`."""
        return self._call(self._client.resume_queue(queue))

    def list_pauses(self) -> list[QueuePause]:
        """Every pause, the pause of every queue first, then by queue name."""
        return self._call(self._client.list_pauses())

    def get_server_info(self) -> ServerInfo:
        """The server's version, clock and limits."""
        return self._call(self._client.get_server_info())

    def close(self) -> None:
        """Close the channel and stop the loop thread. Closing twice is harmless."""
        if self._closed:
            return
        self._closed = True
        try:
            self._runner.call(self._client.close())
        finally:
            self._runner.stop()

    def __enter__(self) -> SeppClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
