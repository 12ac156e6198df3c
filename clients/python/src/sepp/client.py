"""`SeppClient`: a gRPC channel to a sepp server (or cluster) and every call of the queue service.

Producer calls: `enqueue`, `enqueue_batch`, `enqueue_atomic`, `cancel`, and the recurring
schedules `upsert_schedule`, `delete_schedule`, `list_schedules`. Consumer calls: `reserve`, then
`ack` / `nack` / `extend` on each job's context. Operations: `get_server_info`,
`drain_dead_letters`, and pausing queues with `pause_queue`, `resume_queue`, `list_pauses`. All
are coroutines; the client is safe to share between tasks.

Every call but reserve carries a deadline (`rpc_timeout`, 30 s by default); reserve's is its wait
timeout plus 10 s, so the server's own "nothing arrived" answer always comes back before the
deadline fires. The API key, when set, is sent on every call. Failed calls raise the exceptions of
`sepp.errors`; the optional `RetryPolicy` retries transient failures first.

Against a cluster, a node that is not the leader answers UNAVAILABLE naming the leader; the
client then switches its channel to the leader and sends the call there at once (at most 3
times per attempt), which is not a retry, so it holds for every call (see `_cluster`).

With OpenTelemetry (the `otel` extra) each call runs in a CLIENT span `sepp.<operation>`, sends
the span's W3C context as `traceparent`/`tracestate` metadata, and an enqueue stamps that context
on every job that has none, so the worker's span can link back to the producer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from types import TracebackType
from typing import Any, TypeVar

import grpc

from . import _convert, _log, _otel
from ._acks import AckPipeline
from ._channel import FOLLOW_LEADER_METADATA, auth_metadata, channel_settings
from ._cluster import Nodes, Unary
from ._lease import Lease
from ._pipeline import EnqueuePipeline
from ._retry import RetryDirective, RetryPolicy
from ._version import VERSION
from .errors import (
    KEYLESS_ENQUEUE_RETRYABLE_CODES,
    RETRYABLE_CODES,
    BatchResultCountMismatchError,
    BatchValidationError,
    ClientError,
    ConnectError,
    EmptyBatchError,
    JobConversionError,
    JobRejectedError,
    JobRejection,
    JobValidationError,
    MalformedResponseError,
    MalformedServerInfoError,
    ServerInfoError,
    UnknownRejection,
    cancel_error_from_rpc,
    client_error_from_rpc,
    lease_error_from_rpc,
    reserve_error_from_rpc,
    schedule_error_from_rpc,
)
from .types import (
    DeadLetterRecord,
    EnqueueAck,
    EnqueueRequest,
    Job,
    JobCtx,
    QueuePause,
    ReserveOptions,
    Schedule,
    ScheduleInfo,
    ServerInfo,
    check_schedule_id,
)
from .v1 import queue_pb2 as pb

__all__ = ["Lease", "RetryDirective", "RetryPolicy", "SeppClient"]

_SERVICE = "/sepp.v1.QueueService/"
# The deadline of every call but reserve, unless `connect(rpc_timeout=...)` sets another.
_DEFAULT_RPC_TIMEOUT = timedelta(seconds=30)

# Reserve's deadline is its wait timeout plus this, so an empty long poll ends cleanly.
RESERVE_DEADLINE_SLACK = timedelta(seconds=10)

# What a reserve retries through a cluster's failover (it is never retried under the policy).
_RESERVE_FAILOVER_CODES = frozenset({grpc.StatusCode.UNAVAILABLE})

# Enqueue calls a client keeps in flight before further enqueues wait and share the next call.
ENQUEUE_CALLS_IN_FLIGHT = 4

_OTEL = _otel.enabled()
_NO_SPAN: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()

_Response = TypeVar("_Response")


class SeppClient:
    """A connection to a sepp server, or to the leader of a sepp cluster (which it follows).
    Create it with `await SeppClient.connect(addr)`."""

    def __init__(
        self,
        channel: grpc.aio.Channel,
        retry_policy: RetryPolicy | None = None,
        auth_metadata: Sequence[tuple[str, str]] | None = None,
        rpc_timeout: timedelta = _DEFAULT_RPC_TIMEOUT,
        *,
        coalesce_enqueues: bool = True,
        coalesce_acks: bool = True,
    ) -> None:
        if rpc_timeout <= timedelta(0):
            raise ValueError("rpc_timeout must be positive")
        self._nodes = Nodes(channel, _bind)
        self._retry = retry_policy if retry_policy is not None else RetryPolicy()
        self._auth: tuple[tuple[str, str], ...] = tuple(auth_metadata or ())
        self._rpc_timeout = rpc_timeout.total_seconds()
        self._pipeline = (
            EnqueuePipeline(self._send_enqueue, ENQUEUE_CALLS_IN_FLIGHT)
            if coalesce_enqueues
            else None
        )
        self._acks = AckPipeline(self._send_ack, self._send_ack_batch) if coalesce_acks else None

    # ----------------------------------------------------------------------------------------
    # Connecting
    # ----------------------------------------------------------------------------------------

    @classmethod
    async def connect(
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
        rpc_timeout: timedelta = _DEFAULT_RPC_TIMEOUT,
        max_receive_message_bytes: int | None = None,
        coalesce_enqueues: bool = True,
        coalesce_acks: bool = True,
        follow_leader: bool = True,
    ) -> SeppClient:
        """Open a channel to `addr` and wait until it is connected.

        `addr` is `host:port`, `http://host:port` or `https://host:port` (TLS). TLS is also on
        when `tls=True` (system roots), `tls_ca_cert` (PEM of the CA to trust), `tls_domain` (the
        name to verify instead of the host) or `credentials` (a full `grpc.ChannelCredentials`,
        e.g. with a client certificate) is given. `api_key` is sent as `authorization: Bearer`.
        Raises `ConnectError` if the server is not reachable within `connect_timeout`.

        `coalesce_enqueues` (on by default) lets concurrent `enqueue` / `enqueue_batch` calls
        share gRPC calls (those of one event-loop turn, and those waiting while several calls
        are in flight); each still gets exactly its own results.
        `coalesce_acks` (on by default) sends the acks made in one turn of the event loop (a
        Worker's acks of one reserve answer) as one `AckBatch` call, or one `Ack` each against
        a server without it.

        `addr` may be any node of a cluster: a call that reaches a node which is not the leader
        is sent again to the leader it names, over a channel with the same settings, and later
        calls go to the leader directly. When the followed leader becomes unreachable, the next
        attempt goes to `addr` again to learn who leads now. Calls say so with the metadata
        `sepp-follow-leader`, so a follower refuses them naming the leader rather than forwarding
        them; with `follow_leader=False` they go without it and a follower forwards them to the
        leader (one hop more: for a client that can reach only some nodes).
        """
        dialer, target, metadata = channel_settings(
            addr,
            api_key=api_key,
            tls=tls,
            tls_ca_cert=tls_ca_cert,
            tls_domain=tls_domain,
            credentials=credentials,
            max_receive_message_bytes=max_receive_message_bytes,
        )
        channel = dialer.dial(target)
        try:
            await asyncio.wait_for(channel.channel_ready(), connect_timeout.total_seconds())
        except asyncio.TimeoutError:
            await channel.close()
            raise ConnectError(
                addr, f"no connection within {connect_timeout.total_seconds():g} s"
            ) from None
        except BaseException:
            await channel.close()
            raise
        _log.info(
            "connected to sepp server at %s (tls=%s, api key=%s)",
            target,
            dialer.tls,
            api_key is not None,
        )
        if follow_leader:
            metadata = (*metadata, FOLLOW_LEADER_METADATA)
        client = cls(
            channel,
            retry_policy,
            metadata,
            rpc_timeout,
            coalesce_enqueues=coalesce_enqueues,
            coalesce_acks=coalesce_acks,
        )
        client._nodes.follow_leaders(dialer, target)
        return client

    @classmethod
    def from_channel(
        cls,
        channel: grpc.aio.Channel,
        *,
        retry_policy: RetryPolicy | None = None,
        rpc_timeout: timedelta = _DEFAULT_RPC_TIMEOUT,
        api_key: str | None = None,
        coalesce_enqueues: bool = True,
        coalesce_acks: bool = True,
    ) -> SeppClient:
        """Wrap a channel you built yourself (interceptors, custom options, ...).

        Such a client cannot dial another address, so it does not follow a cluster's leader: its
        calls go without `sepp-follow-leader`, and a node that is not the leader forwards them to
        the leader (or, with the node's `cluster.forward_calls` off, fails them with
        `TransportError`, UNAVAILABLE).
        """
        metadata = auth_metadata(api_key) if api_key is not None else None
        return cls(
            channel,
            retry_policy,
            metadata,
            rpc_timeout,
            coalesce_enqueues=coalesce_enqueues,
            coalesce_acks=coalesce_acks,
        )

    @property
    def channel(self) -> grpc.aio.Channel:
        """The gRPC channel calls go to now: once the client follows a cluster's leader, the
        leader's (a channel switched away from is closed once its calls have ended)."""
        return self._nodes.channel

    async def close(self) -> None:
        """Close the channel (and any still closing). Calls still running fail with a
        cancellation."""
        await self._nodes.close()

    async def __aenter__(self) -> SeppClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # ----------------------------------------------------------------------------------------
    # Calling
    # ----------------------------------------------------------------------------------------

    def _metadata(self) -> tuple[tuple[str, str], ...] | None:
        if _OTEL:
            trace = _otel.trace_metadata()
            if trace:
                return self._auth + tuple(trace)
        return self._auth or None

    async def _call(
        self,
        operation: str,
        rpc: str,
        request: Any,
        codes: frozenset[grpc.StatusCode],
        timeout: float | None = None,
    ) -> Any:
        """One unary call of the RPC `rpc` under the retry policy, each attempt following the
        cluster's leader (see `_cluster`). Raises the last `grpc.aio.AioRpcError`."""
        metadata = self._metadata() if _OTEL else (self._auth or None)
        deadline = self._rpc_timeout if timeout is None else timeout
        try:
            return await self._nodes.call(rpc, request, deadline, metadata)
        except grpc.aio.AioRpcError as err:
            return await self._retry_failed(operation, rpc, request, codes, deadline, metadata, err)
        except grpc.aio.UsageError as err:
            raise ClientError(f"{operation} failed: {err}") from err

    async def _retry_failed(
        self,
        operation: str,
        rpc: str,
        request: Any,
        codes: frozenset[grpc.StatusCode],
        deadline: float | None,
        metadata: tuple[tuple[str, str], ...] | None,
        failed: grpc.aio.AioRpcError,
    ) -> Any:
        """Goes on after the first attempt of a call failed with `failed`, under the retry
        policy (the first attempt counts). Raises the last `grpc.aio.AioRpcError`."""
        policy = self._retry
        delays = policy.delays()
        attempt = 1
        err = failed
        failover_ends: float | None = None  # the end of the failover window, once it began
        failover_delays = policy.failover_delays()
        while True:
            code = err.code()
            if policy.should_retry(code, attempt, codes):
                delay = next(delays)
                _log.warning(
                    "%s failed with %s (%s); retrying in %.3f s (attempt %d of %d)",
                    operation,
                    code.name,
                    err.details(),
                    delay,
                    attempt + 1,
                    policy.max_attempts,
                )
            elif self._rides_failover(code, codes):
                now = asyncio.get_running_loop().time()
                if failover_ends is None:
                    failover_ends = now + policy.failover_window.total_seconds()
                if now >= failover_ends:
                    raise err
                delay = min(next(failover_delays), failover_ends - now)
                _log.warning(
                    "%s failed with %s (%s) while the cluster fails over; retrying in %.3f s",
                    operation,
                    code.name,
                    err.details(),
                    delay,
                )
            else:
                raise err
            await asyncio.sleep(delay)
            attempt += 1
            try:
                return await self._nodes.call(rpc, request, deadline, metadata)
            except grpc.aio.AioRpcError as again:
                err = again
            except grpc.aio.UsageError as usage:
                raise ClientError(f"{operation} failed: {usage}") from usage

    def _rides_failover(self, code: grpc.StatusCode, codes: frozenset[grpc.StatusCode]) -> bool:
        """Whether a failure with `code` of a call that may retry `codes` is one a cluster's
        failover causes, for a client that knows it talks to a cluster."""
        return (
            code in codes
            and code != grpc.StatusCode.RESOURCE_EXHAUSTED
            and self._nodes.in_cluster
            and self._retry.failover_window > timedelta(0)
        )

    async def _traced_call(
        self,
        operation: str,
        rpc: str,
        request: Any,
        to_error: Callable[[grpc.aio.AioRpcError], Exception],
        attributes: dict[str, str | int] | None = None,
    ) -> Any:
        """One call that is safe to retry, in a client span `sepp.<operation>`; a failure is
        raised as `to_error` maps it."""
        span = _otel.client_span(operation, rpc, attributes) if _OTEL else _NO_SPAN
        with span:
            try:
                return await self._call(operation, rpc, request, RETRYABLE_CODES)
            except grpc.aio.AioRpcError as err:
                raise to_error(err) from err

    # ----------------------------------------------------------------------------------------
    # Producing
    # ----------------------------------------------------------------------------------------

    async def enqueue(self, request: EnqueueRequest) -> EnqueueAck:
        """Enqueue one job. Raises `JobRejectedError` if the server refuses it."""
        result = (await self._enqueue_jobs([request]))[0]
        if isinstance(result, JobRejection):
            raise JobRejectedError(result)
        return result

    async def enqueue_batch(
        self, requests: Iterable[EnqueueRequest]
    ) -> list[EnqueueAck | JobRejection]:
        """Enqueue jobs each on its own: one result per job, in order, an ack or a rejection."""
        return await self._enqueue_jobs(list(requests))

    async def _enqueue_jobs(self, jobs: list[EnqueueRequest]) -> list[EnqueueAck | JobRejection]:
        if not jobs:
            raise EmptyBatchError()
        span = (
            _otel.client_span(
                "enqueue", "EnqueueBatch", {"messaging.batch.message_count": len(jobs)}
            )
            if _OTEL
            else _NO_SPAN
        )
        with span:
            batch, keyed, size = _convert.enqueue_batch_to_pb(jobs)
            traced = _OTEL and _stamp_trace(batch)
            try:
                if self._pipeline is not None and not traced:
                    # A traced call keeps its own gRPC call, so the server's span is its child.
                    results = await self._pipeline.submit(batch, keyed, size)
                else:
                    results = (await self._send_enqueue(batch, keyed)).results
            except grpc.aio.AioRpcError as err:
                raise client_error_from_rpc(err) from err
        if len(results) != len(jobs):
            raise BatchResultCountMismatchError(len(jobs), len(results))
        out: list[EnqueueAck | JobRejection] = []
        for result in results:
            outcome = result.WhichOneof("outcome")
            if outcome == "success":
                success = result.success
                out.append(EnqueueAck(success.job_id, success.deduplicated))
            elif outcome == "rejection":
                out.append(_convert.rejection_from_pb(result.rejection))
            else:
                raise MalformedResponseError("the server sent a job result with no outcome")
        return out

    async def _send_enqueue(
        self, request: pb.EnqueueBatchRequest | bytes, keyed: bool
    ) -> pb.EnqueueBatchResponse:
        codes = RETRYABLE_CODES if keyed else KEYLESS_ENQUEUE_RETRYABLE_CODES
        response: pb.EnqueueBatchResponse = await self._call(
            "enqueue", "EnqueueBatch", request, codes
        )
        return response

    async def enqueue_atomic(self, requests: Iterable[EnqueueRequest]) -> list[EnqueueAck]:
        """Enqueue all the jobs or none. Raises `BatchValidationError` listing every failed job."""
        jobs = list(requests)
        if not jobs:
            raise EmptyBatchError()
        span = (
            _otel.client_span(
                "enqueue_atomic", "EnqueueAtomic", {"messaging.batch.message_count": len(jobs)}
            )
            if _OTEL
            else _NO_SPAN
        )
        with span:
            batch, keyed, _ = _convert.enqueue_batch_to_pb(jobs)
            if _OTEL:
                _stamp_trace(batch)
            codes = RETRYABLE_CODES if keyed else KEYLESS_ENQUEUE_RETRYABLE_CODES
            try:
                response = await self._call("enqueue_atomic", "EnqueueAtomic", batch, codes)
            except grpc.aio.AioRpcError as err:
                raise client_error_from_rpc(err) from err
        outcome = response.WhichOneof("outcome")
        if outcome == "success":
            acks = [EnqueueAck(r.job_id, r.deduplicated) for r in response.success.responses]
            if len(acks) != len(jobs):
                raise BatchResultCountMismatchError(len(jobs), len(acks))
            return acks
        if outcome == "rejection":
            errors = [
                JobValidationError(
                    e.index,
                    _convert.rejection_from_pb(e.rejection)
                    if e.HasField("rejection")
                    else UnknownRejection(),
                )
                for e in response.rejection.errors
            ]
            raise BatchValidationError(errors)
        raise MalformedResponseError("the server's atomic enqueue answer has no outcome")

    async def cancel(self, job_id: str, reason: str | None = None) -> bool:
        """Cancel a job by id; returns True if it was leased (a worker holds it).

        A ready or scheduled job is dead-lettered at once (cause `CANCELLED`; kept only when the
        server retains dead letters). A leased job is marked: its worker's next extend, ack or
        nack raises `JobCancelledError` and dead-letters it, or its lease runs out; either way it
        is never delivered again. `reason` (at most 1024 bytes) becomes the dead letter's
        `last_reason`. Cancelling a leased job again returns True again.

        Raises `JobNotFoundError` for a job the server does not know (or that has finished),
        `JobDeadLetteredError` for a job already dead-lettered and `InvalidRequestError` for a
        malformed id or a too-long reason. Needs a server with the feature "cancel"
        (`ServerInfo.features`); an older one answers `UnexpectedStatusError` (UNIMPLEMENTED).
        """
        request = pb.CancelJobRequest(job_id=job_id)
        if reason is not None:
            request.reason = reason
        response = await self._traced_call(
            "cancel",
            "CancelJob",
            request,
            cancel_error_from_rpc,
            {"messaging.message.id": job_id},
        )
        return bool(response.was_leased)

    # ----------------------------------------------------------------------------------------
    # Recurring schedules
    # ----------------------------------------------------------------------------------------

    async def upsert_schedule(self, schedule: Schedule) -> ScheduleInfo:
        """Create the schedule, or replace the one with the same id; returns it as stored.

        From then on the server enqueues `schedule.job` once per slot (see `Schedule`). Replacing
        keeps the schedule's `fired` count and last job, and restarts an interval's slots from
        now. Idempotent, so retried on transient failures like every call but enqueue.

        Raises `InvalidRequestError` for a definition the server refuses (a bad id, cron
        expression or time zone, an interval under 1 s, a template the queue's rules refuse) and
        `ScheduleLimitError` when the server already keeps 100,000 schedules. Needs a server
        with the feature "schedules"; an older one answers `UnexpectedStatusError`
        (UNIMPLEMENTED).
        """
        if not isinstance(schedule, Schedule):
            raise TypeError(f"upsert_schedule takes a Schedule, not {type(schedule).__name__}")
        request = pb.UpsertScheduleRequest(schedule=_convert.schedule_to_pb(schedule))
        response = await self._traced_call(
            "upsert_schedule",
            "UpsertSchedule",
            request,
            schedule_error_from_rpc,
            {"sepp.schedule.id": schedule.id},
        )
        return _schedule_info(response)

    async def delete_schedule(self, schedule_id: str) -> bool:
        """Delete a schedule by id; returns False if there was no such schedule.

        The jobs it already fired stay. Idempotent (a retry whose first attempt reached the
        server returns False), so retried on transient failures.
        """
        check_schedule_id(schedule_id)
        request = pb.DeleteScheduleRequest(id=schedule_id)
        response = await self._traced_call(
            "delete_schedule",
            "DeleteSchedule",
            request,
            schedule_error_from_rpc,
            {"sepp.schedule.id": schedule_id},
        )
        return bool(response.deleted)

    async def list_schedules(self) -> list[ScheduleInfo]:
        """Every schedule the server keeps, sorted by id.

        One this client cannot read (say, a cadence of a newer server) is skipped and logged, as
        `drain_dead_letters` does with a malformed record.
        """
        response = await self._traced_call(
            "list_schedules",
            "ListSchedules",
            pb.ListSchedulesRequest(),
            schedule_error_from_rpc,
        )
        schedules: list[ScheduleInfo] = []
        for message in response.schedules:
            try:
                schedules.append(_convert.schedule_info_from_pb(message))
            except (ValueError, TypeError) as err:
                _log.warning("skipping a schedule this client cannot read: %s", err)
        return schedules

    # ----------------------------------------------------------------------------------------
    # Pausing queues
    # ----------------------------------------------------------------------------------------

    async def pause_queue(
        self, queue: str, *, until: datetime | None = None, reason: str | None = None
    ) -> QueuePause:
        """Pause `queue` until `until` (None: until resumed); returns the pause as stored.

        Reserves skip a paused queue (one naming only paused queues waits, or answers None);
        enqueues are still accepted and leases already held go on. `ALL_QUEUES` (the empty name)
        pauses every queue, also queues that do not exist yet. Pausing a paused queue replaces
        the end of its pause. `until` (naive = UTC) must be in the future; `reason` (at most
        1024 bytes) goes to the server's audit log. Idempotent, so retried on transient failures
        like every call but enqueue.

        Raises `InvalidRequestError` for a malformed queue name, an `until` that is not in the
        future or a too-long reason. Needs a server with the feature "pause"; an older one
        answers `UnexpectedStatusError` (UNIMPLEMENTED).
        """
        request = _convert.pause_request_to_pb(queue, until, reason)
        response = await self._traced_call(
            "pause_queue",
            "PauseQueue",
            request,
            client_error_from_rpc,
            {"messaging.destination.name": queue},
        )
        if not response.HasField("pause"):
            raise MalformedResponseError("the server's pause answer has no pause")
        try:
            return _convert.pause_from_pb(response.pause)
        except ValueError as err:
            raise MalformedResponseError(f"the server sent a malformed pause: {err}") from err

    async def resume_queue(self, queue: str) -> bool:
        """Lift the pause of `queue`; returns False if it was not paused.

        A reserve waiting on the queue is served at once. `ALL_QUEUES` lifts the pause of every
        queue only: queues paused by name stay paused. Idempotent (a retry whose first attempt
        reached the server returns False), so retried on transient failures.
        """
        _convert.check_pause_queue(queue)
        request = pb.ResumeQueueRequest(queue=queue)
        response = await self._traced_call(
            "resume_queue",
            "ResumeQueue",
            request,
            client_error_from_rpc,
            {"messaging.destination.name": queue},
        )
        return bool(response.resumed)

    async def list_pauses(self) -> list[QueuePause]:
        """Every pause the server keeps: the pause of every queue first, then by queue name.

        The server lifts a pause by itself once its `until` has passed; it is listed no more.
        One this client cannot read is skipped and logged, as `list_schedules` does.
        """
        response = await self._traced_call(
            "list_pauses",
            "ListPauses",
            pb.ListPausesRequest(),
            client_error_from_rpc,
        )
        pauses: list[QueuePause] = []
        for message in response.pauses:
            try:
                pauses.append(_convert.pause_from_pb(message))
            except ValueError as err:
                _log.warning("skipping a pause this client cannot read: %s", err)
        return pauses

    # ----------------------------------------------------------------------------------------
    # Consuming
    # ----------------------------------------------------------------------------------------

    async def reserve(self, options: ReserveOptions) -> list[Job] | None:
        """Lease up to `options.max_jobs` jobs, waiting up to `options.wait_timeout` for one.

        Returns None when the wait ended with nothing ready. Never retried: call it again. (A
        follower's redirect to the cluster's leader is followed: the follower leased nothing.)
        Raises `UnknownQueuesError` when the server only serves declared queues and one is not.
        """
        return await self.reserve_request(
            reserve_request_to_pb(options), options.wait_timeout, options.worker_id
        )

    async def reserve_request(
        self, request: pb.ReserveRequest, wait_timeout: timedelta, worker_id: str | None
    ) -> list[Job] | None:
        """`reserve` with a prepared request message (the Worker builds its own once)."""
        deadline = (wait_timeout + RESERVE_DEADLINE_SLACK).total_seconds()
        with _otel.client_span("reserve", "Reserve") if _OTEL else _NO_SPAN:
            try:
                response = await self._nodes.call("Reserve", request, deadline, self._metadata())
            except grpc.aio.AioRpcError as err:
                # Not retried under the policy (a long poll), but through a cluster's failover.
                if not self._rides_failover(err.code(), _RESERVE_FAILOVER_CODES):
                    raise reserve_error_from_rpc(err) from err
                try:
                    response = await self._retry_failed(
                        "reserve",
                        "Reserve",
                        request,
                        _RESERVE_FAILOVER_CODES,
                        deadline,
                        self._metadata(),
                        err,
                    )
                except grpc.aio.AioRpcError as last:
                    raise reserve_error_from_rpc(last) from last
            except grpc.aio.UsageError as err:
                raise ClientError(f"reserve failed: {err}") from err
        if not response.jobs:
            return None
        jobs: list[Job] = []
        for message in response.jobs:
            try:
                jobs.append(_convert.job_from_pb(message, self, worker_id))
            except JobConversionError as err:
                _log.warning("skipping malformed job in reserve response: %s", err)
        return jobs or None

    async def ack(self, ctx: JobCtx | Job) -> None:
        """Complete a job: the server deletes it."""
        ctx = _ctx_of(ctx)
        request = ack_request_to_pb(ctx)
        if _OTEL:
            with _otel.client_span("ack", "Ack"):
                try:
                    if _otel.trace_metadata() or self._acks is None:
                        # A traced ack keeps its own gRPC call, so the server's span is its child.
                        await self._call("ack", "Ack", request, RETRYABLE_CODES)
                    else:
                        await self._ack_coalesced(self._acks, request)
                except grpc.aio.AioRpcError as err:
                    raise lease_error_from_rpc(err) from err
            return
        try:
            if self._acks is not None:
                await self._ack_coalesced(self._acks, request)
            else:
                await self._call("ack", "Ack", request, RETRYABLE_CODES)
        except grpc.aio.AioRpcError as err:
            raise lease_error_from_rpc(err) from err

    async def _ack_coalesced(self, acks: AckPipeline, request: pb.AckRequest) -> None:
        """An ack through the pipeline; if its share of a call fails, the retry policy goes on
        with a plain `Ack` (the first attempt counts). Raises the last `AioRpcError`."""
        try:
            await acks.submit(request)
        except grpc.aio.AioRpcError as first:
            await self._retry_failed(
                "ack",
                "Ack",
                request,
                RETRYABLE_CODES,
                self._rpc_timeout,
                self._auth or None,
                first,
            )
        except grpc.aio.UsageError as err:
            raise ClientError(f"ack failed: {err}") from err

    async def _send_ack(self, request: pb.AckRequest) -> None:
        await self._nodes.call("Ack", request, self._rpc_timeout, self._auth or None)

    async def _send_ack_batch(self, request: pb.AckBatchRequest) -> pb.AckBatchResponse:
        response: pb.AckBatchResponse = await self._nodes.call(
            "AckBatch", request, self._rpc_timeout, self._auth or None
        )
        return response

    async def nack(
        self,
        ctx: JobCtx | Job,
        retry: RetryDirective = RetryDirective.DEFAULT,
        reason: str = "",
    ) -> bool:
        """Fail a job; `retry` says what happens next. Returns True if it was dead-lettered."""
        request = nack_request_to_pb(_ctx_of(ctx), retry, reason)
        with _otel.client_span("nack", "Nack") if _OTEL else _NO_SPAN:
            try:
                response = await self._call("nack", "Nack", request, RETRYABLE_CODES)
            except grpc.aio.AioRpcError as err:
                raise lease_error_from_rpc(err) from err
        return bool(response.dead_lettered)

    async def extend(self, ctx: JobCtx | Job, extension: timedelta) -> datetime:
        """Move the lease deadline to now + `extension`; returns the deadline the server granted.

        The server may grant less than asked (it caps leases at its maximum).
        """
        ctx = _ctx_of(ctx)
        request = extend_request_to_pb(ctx, extension)
        with _otel.client_span("extend", "Extend") if _OTEL else _NO_SPAN:
            try:
                response = await self._call("extend", "Extend", request, RETRYABLE_CODES)
            except grpc.aio.AioRpcError as err:
                raise lease_error_from_rpc(err) from err
        return extended(ctx, response)

    # ----------------------------------------------------------------------------------------
    # Operating
    # ----------------------------------------------------------------------------------------

    async def get_server_info(self) -> ServerInfo:
        """The server's version, clock, limits and, on a cluster's node, its view of the cluster.

        An answer with a cluster tells the client that it talks to a cluster: its calls ride a
        failover from then on (`RetryPolicy.failover_window`), and may ask any member who leads.
        """
        with _otel.client_span("get_server_info", "GetServerInfo") if _OTEL else _NO_SPAN:
            try:
                response = await self._call(
                    "get_server_info", "GetServerInfo", pb.GetServerInfoRequest(), RETRYABLE_CODES
                )
            except grpc.aio.AioRpcError as err:
                raise client_error_from_rpc(err) from err
        try:
            info = _convert.server_info_from_pb(response)
        except ServerInfoError as err:
            raise MalformedServerInfoError(err) from err
        if info.cluster is not None:
            # From now on calls ride a failover, and may ask any member who leads.
            self._nodes.learned_cluster([member.addr for member in info.cluster.members])
        return info

    async def drain_dead_letters(
        self, queue: str | None = None, max_records: int = 1
    ) -> list[DeadLetterRecord]:
        """Remove and return up to `max_records` of the oldest dead-letter records.

        Destructive, so never retried: a lost answer would lose the records (a follower's
        redirect to the cluster's leader is followed: it removed nothing). `max_records=0`
        returns [] without calling the server. An empty result can also mean the server keeps
        no dead letters (see `ServerInfo.dead_letter_retention_enabled`).
        """
        if type(max_records) is bool or not isinstance(max_records, int) or max_records < 0:
            raise ValueError("max_records must be a non-negative int")
        if max_records == 0:
            return []
        request = pb.DrainDeadLettersRequest(max=max_records)
        if queue is not None:
            if not queue:
                raise ValueError("queue must be a non-empty name (or None for every queue)")
            request.queue = queue
        with _otel.client_span("drain_dead_letters", "DrainDeadLetters") if _OTEL else _NO_SPAN:
            try:
                response = await self._call(
                    "drain_dead_letters", "DrainDeadLetters", request, frozenset()
                )
            except grpc.aio.AioRpcError as err:
                raise client_error_from_rpc(err) from err
        records: list[DeadLetterRecord] = []
        for message in response.records:
            try:
                records.append(_convert.dead_letter_from_pb(message))
            except JobConversionError as err:
                _log.warning("skipping malformed dead-letter record: %s", err)
        return records

    def __repr__(self) -> str:
        return f"<SeppClient sepp-py/{VERSION}>"


def _serialize_batch(request: pb.EnqueueBatchRequest | bytes) -> bytes:
    """A batch for the wire; coalesced batches arrive already serialized and joined."""
    return request if isinstance(request, bytes) else request.SerializeToString()


# The queue service's methods: per RPC, the request's serializer and the response's parser.
_METHODS: dict[str, tuple[Callable[[Any], bytes], Callable[[bytes], Any]]] = {
    "EnqueueBatch": (_serialize_batch, pb.EnqueueBatchResponse.FromString),
    "EnqueueAtomic": (
        pb.EnqueueBatchRequest.SerializeToString,
        pb.EnqueueAtomicResponse.FromString,
    ),
    "Reserve": (pb.ReserveRequest.SerializeToString, pb.ReserveResponse.FromString),
    "Ack": (pb.AckRequest.SerializeToString, pb.AckResponse.FromString),
    "AckBatch": (pb.AckBatchRequest.SerializeToString, pb.AckBatchResponse.FromString),
    "Nack": (pb.NackRequest.SerializeToString, pb.NackResponse.FromString),
    "Extend": (pb.ExtendRequest.SerializeToString, pb.ExtendResponse.FromString),
    "DrainDeadLetters": (
        pb.DrainDeadLettersRequest.SerializeToString,
        pb.DrainDeadLettersResponse.FromString,
    ),
    "CancelJob": (pb.CancelJobRequest.SerializeToString, pb.CancelJobResponse.FromString),
    "UpsertSchedule": (pb.UpsertScheduleRequest.SerializeToString, pb.ScheduleInfo.FromString),
    "DeleteSchedule": (
        pb.DeleteScheduleRequest.SerializeToString,
        pb.DeleteScheduleResponse.FromString,
    ),
    "ListSchedules": (
        pb.ListSchedulesRequest.SerializeToString,
        pb.ListSchedulesResponse.FromString,
    ),
    "PauseQueue": (pb.PauseQueueRequest.SerializeToString, pb.PauseQueueResponse.FromString),
    "ResumeQueue": (pb.ResumeQueueRequest.SerializeToString, pb.ResumeQueueResponse.FromString),
    "ListPauses": (pb.ListPausesRequest.SerializeToString, pb.ListPausesResponse.FromString),
    "GetServerInfo": (
        pb.GetServerInfoRequest.SerializeToString,
        pb.GetServerInfoResponse.FromString,
    ),
}


def _bind(channel: grpc.aio.Channel) -> dict[str, Unary]:
    """The queue service's methods on `channel`, by RPC name."""
    return {
        name: channel.unary_unary(  # type: ignore[call-arg]
            _SERVICE + name,
            request_serializer=serialize,
            response_deserializer=parse,
            _registered_method=True,
        )
        for name, (serialize, parse) in _METHODS.items()
    }


def _stamp_trace(batch: pb.EnqueueBatchRequest) -> bool:
    """Give the active span's context to every job without one; whether there was a span."""
    current = _otel.current_trace_context()
    if current is None:
        return False
    traceparent, tracestate = current
    for message in batch.jobs:
        if not message.HasField("trace_context"):
            message.trace_context.traceparent = traceparent
            if tracestate:
                message.trace_context.tracestate = tracestate
    return True


def _schedule_info(message: pb.ScheduleInfo) -> ScheduleInfo:
    try:
        return _convert.schedule_info_from_pb(message)
    except (ValueError, TypeError) as err:
        raise MalformedResponseError(f"the server sent a malformed schedule: {err}") from err


def _ctx_of(job: JobCtx | Job) -> JobCtx:
    return job.ctx if isinstance(job, Job) else job


def reserve_request_to_pb(
    options: ReserveOptions, max_jobs: int | None = None
) -> pb.ReserveRequest:
    """The wire request for `options`, optionally with a different `max_jobs`."""
    request = pb.ReserveRequest(
        queues=options.queues,
        wait_timeout=_convert.duration_to_pb(options.wait_timeout),
        lease_duration=_convert.duration_to_pb(options.lease_duration),
    )
    if options.worker_id is not None:
        request.worker_id = options.worker_id
    jobs = max_jobs if max_jobs is not None else options.max_jobs
    if jobs is not None:
        request.max_jobs = jobs
    return request


def ack_request_to_pb(ctx: JobCtx) -> pb.AckRequest:
    """The wire ack of `ctx`'s lease."""
    lease = ctx._lease
    worker_id = lease.worker_id if lease is not None else None
    if worker_id is not None:
        return pb.AckRequest(job_id=ctx.id, attempt=ctx.attempt, worker_id=worker_id)
    return pb.AckRequest(job_id=ctx.id, attempt=ctx.attempt)


def nack_request_to_pb(ctx: JobCtx, retry: RetryDirective, reason: str) -> pb.NackRequest:
    """The wire nack of `ctx`'s lease."""
    request = pb.NackRequest(
        job_id=ctx.id, attempt=ctx.attempt, retry=_convert.nack_retry_to_pb(retry)
    )
    if reason:
        request.reason = reason
    lease = ctx._lease
    if lease is not None and lease.worker_id is not None:
        request.worker_id = lease.worker_id
    return request


def extend_request_to_pb(ctx: JobCtx, extension: timedelta) -> pb.ExtendRequest:
    """The wire extend of `ctx`'s lease; refuses an extension that is not positive."""
    if extension <= timedelta(0):
        raise ValueError("a lease extension must be positive")
    request = pb.ExtendRequest(
        job_id=ctx.id, attempt=ctx.attempt, lease_duration=_convert.duration_to_pb(extension)
    )
    lease = ctx._lease
    if lease is not None and lease.worker_id is not None:
        request.worker_id = lease.worker_id
    return request


def extended(ctx: JobCtx, response: pb.ExtendResponse) -> datetime:
    """The deadline an extend of `ctx` was granted, recorded on its lease."""
    expires_at = (
        _convert.datetime_from_pb(response.lease_expires_at)
        if response.HasField("lease_expires_at")
        else None
    )
    if expires_at is None:
        raise MalformedResponseError("extend returned an invalid lease_expires_at")
    lease = ctx._lease
    if lease is not None:
        lease.expires_at = expires_at  # ctx.lease_expires_at keeps the delivery's deadline
    return expires_at
