"""An in-process gRPC server that speaks `sepp.v1.QueueService` from a script and records calls.

The real server is used wherever it can show a behaviour. This one exists for what it cannot
show: the metadata and deadlines the client sends (user-agent, authorization, traceparent, the
reserve deadline), answers a correct server never gives (malformed jobs, missing outcomes,
wrong result counts, transient failures to retry), and failures with metadata (`Abort`, e.g. a
cluster follower's UNAVAILABLE naming the leader in `sepp-leader`).

The Consume stream is answered by `consume` when a test sets it (an async generator of
responses, given the request iterator and the context), and UNIMPLEMENTED otherwise, as sepp 0.1
does; every request message it reads is recorded in `consume_requests`.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import grpc

from sepp.v1 import queue_pb2 as pb

METHODS = {
    "EnqueueBatch": (pb.EnqueueBatchRequest, pb.EnqueueBatchResponse),
    "EnqueueAtomic": (pb.EnqueueBatchRequest, pb.EnqueueAtomicResponse),
    "Reserve": (pb.ReserveRequest, pb.ReserveResponse),
    "Ack": (pb.AckRequest, pb.AckResponse),
    "AckBatch": (pb.AckBatchRequest, pb.AckBatchResponse),
    "Nack": (pb.NackRequest, pb.NackResponse),
    "Extend": (pb.ExtendRequest, pb.ExtendResponse),
    "DrainDeadLetters": (pb.DrainDeadLettersRequest, pb.DrainDeadLettersResponse),
    "GetServerInfo": (pb.GetServerInfoRequest, pb.GetServerInfoResponse),
    "UpsertSchedule": (pb.UpsertScheduleRequest, pb.ScheduleInfo),
    "DeleteSchedule": (pb.DeleteScheduleRequest, pb.DeleteScheduleResponse),
    "ListSchedules": (pb.ListSchedulesRequest, pb.ListSchedulesResponse),
    "PauseQueue": (pb.PauseQueueRequest, pb.PauseQueueResponse),
    "ResumeQueue": (pb.ResumeQueueRequest, pb.ResumeQueueResponse),
    "ListPauses": (pb.ListPausesRequest, pb.ListPausesResponse),
}

# An answer: a response message, a status code to fail with, an `Abort`, or a function of the
# request.
Answer = Any


@dataclass(frozen=True)
class Abort:
    """An answer failing the call with `code` and `details`: `trailing` goes in the trailers;
    `initial` is sent as the initial metadata first (else the failure is trailers-only)."""

    code: grpc.StatusCode
    details: str = ""
    trailing: tuple[tuple[str, str], ...] = ()
    initial: tuple[tuple[str, str], ...] = ()


@dataclass
class Call:
    method: str
    request: Any
    metadata: dict[str, str]
    time_remaining: float | None


@dataclass
class RecordingServer:
    addr: str = ""
    calls: list[Call] = field(default_factory=list)
    # Per method, the answers to give in turn; the last one repeats.
    script: dict[str, list[Answer]] = field(default_factory=dict)
    server: grpc.aio.Server | None = None
    consume: Callable[[AsyncIterator[Any], grpc.aio.ServicerContext], AsyncIterator[Any]] | None = (
        None
    )
    consume_requests: list[Any] = field(default_factory=list)

    def answer(self, method: str, *answers: Answer) -> None:
        self.script[method] = list(answers)

    def calls_to(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    async def stop(self) -> None:
        """Stop serving (at once, failing calls in flight); the port then refuses connections."""
        if self.server is not None:
            server, self.server = self.server, None
            await server.stop(None)

    def _handler(self, method: str) -> Callable[[Any, grpc.aio.ServicerContext], Any]:
        async def handle(request: Any, context: grpc.aio.ServicerContext) -> Any:
            metadata = {k: v for k, v in context.invocation_metadata() or () if isinstance(v, str)}
            self.calls.append(Call(method, request, metadata, context.time_remaining()))
            answers = self.script.get(method)
            if not answers:
                await context.abort(
                    grpc.StatusCode.UNIMPLEMENTED, f"no answer scripted for {method}"
                )
            answer = answers.pop(0) if len(answers) > 1 else answers[0]
            if isinstance(answer, grpc.StatusCode):
                await context.abort(answer, f"scripted {answer.name}")
            if isinstance(answer, Abort):
                if answer.initial:
                    await context.send_initial_metadata(answer.initial)
                await context.abort(answer.code, answer.details, answer.trailing)
            if callable(answer):
                answer = answer(request)
                if inspect.isawaitable(answer):
                    answer = await answer
            return answer

        return handle

    async def _consume(
        self, requests: AsyncIterator[Any], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[Any]:
        if self.consume is None:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "Consume is not served here")
            return

        async def recorded() -> AsyncIterator[Any]:
            async for request in requests:
                self.consume_requests.append(request)
                yield request

        async for response in self.consume(recorded(), context):
            yield response


@asynccontextmanager
async def recording_server(
    tls: tuple[bytes, bytes] | None = None,
) -> AsyncIterator[RecordingServer]:
    """A recording server on a free port; with `tls` (key PEM, certificate PEM) it speaks TLS."""
    recorder = RecordingServer()
    server = grpc.aio.server()
    handlers = {
        name: grpc.unary_unary_rpc_method_handler(
            recorder._handler(name),
            request_deserializer=request.FromString,
            response_serializer=response.SerializeToString,
        )
        for name, (request, response) in METHODS.items()
    }
    handlers["Consume"] = grpc.stream_stream_rpc_method_handler(
        recorder._consume,
        request_deserializer=pb.ConsumeRequest.FromString,
        response_serializer=pb.ConsumeResponse.SerializeToString,
    )
    server.add_generic_rpc_handlers(
        (grpc.method_handlers_generic_handler("sepp.v1.QueueService", handlers),)
    )
    port = (
        server.add_insecure_port("127.0.0.1:0")
        if tls is None
        else server.add_secure_port("127.0.0.1:0", grpc.ssl_server_credentials([tls]))
    )
    await server.start()
    recorder.addr = f"127.0.0.1:{port}"
    recorder.server = server
    try:
        yield recorder
    finally:
        await recorder.stop()
