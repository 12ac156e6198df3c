"""Without the `otel` extra every OpenTelemetry entry point is a no-op and nothing breaks.

Runs only in an environment where `opentelemetry` is not importable (the test script has one).
"""

from __future__ import annotations

import asyncio
import importlib.util
from datetime import timedelta

import pytest

from sepp import (
    EnqueueRequest,
    JobCtx,
    Payload,
    ReserveOptions,
    SeppClient,
    TraceContext,
    Worker,
    _otel,
)

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("opentelemetry") is not None,
    reason="opentelemetry is installed here; this checks the environment without it",
)
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def test_otel_reports_itself_disabled() -> None:
    assert _otel.enabled() is False
    assert _otel.current_trace_context() is None and _otel.trace_metadata() == []
    assert TraceContext.from_current_otel() is None
    context = TraceContext(TRACEPARENT)
    assert context.otel_span_context() is None
    with context.attach_to_otel():
        pass


async def test_jobs_carry_no_trace_context_unless_given_one(client: SeppClient, queue: str) -> None:
    await client.enqueue(EnqueueRequest(queue, "plain"))
    await client.enqueue(EnqueueRequest(queue, "traced", trace_context=TraceContext(TRACEPARENT)))
    jobs = await client.reserve(ReserveOptions([queue], timedelta(seconds=30), max_jobs=2))
    assert jobs is not None
    carried = {j.ctx.job_type: j.ctx.trace_context for j in jobs}
    assert carried == {"plain": None, "traced": TraceContext(TRACEPARENT)}


async def test_the_worker_runs_and_hands_over_the_trace_context(
    client: SeppClient, queue: str
) -> None:
    await client.enqueue(
        EnqueueRequest(
            queue, "t", payload=Payload(b"x", "x"), trace_context=TraceContext(TRACEPARENT)
        )
    )
    worker = Worker(client, [queue], timedelta(seconds=30), wait_timeout=timedelta(seconds=1))
    seen: asyncio.Future[TraceContext | None] = asyncio.get_running_loop().create_future()

    @worker.handler("t")
    async def handle(payload: Payload | None, ctx: JobCtx) -> None:
        seen.set_result(ctx.trace_context)
        worker.shutdown_handle().shutdown()

    await asyncio.wait_for(worker.run(), 20)
    assert seen.result() == TraceContext(TRACEPARENT)
