"""Trace propagation and worker metrics with the `otel` extra installed (SDK in memory)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest

otel_trace = pytest.importorskip("opentelemetry.trace")
from opentelemetry import metrics as otel_metrics  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (  # noqa: E402
    InMemorySpanExporter,
)
from opentelemetry.trace import SpanKind  # noqa: E402

from sepp import (  # noqa: E402
    EnqueueRequest,
    HandlerError,
    JobCtx,
    Payload,
    ReserveOptions,
    Schedule,
    SeppClient,
    TraceContext,
    Worker,
    _otel,
)
from sepp.v1 import queue_pb2 as pb  # noqa: E402
from tests.recording_server import recording_server  # noqa: E402

_EXPORTER = InMemorySpanExporter()
_READER = InMemoryMetricReader()


@pytest.fixture(scope="module", autouse=True)
def providers() -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    otel_trace.set_tracer_provider(provider)
    otel_metrics.set_meter_provider(MeterProvider(metric_readers=[_READER]))
    assert _otel.enabled()


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    _EXPORTER.clear()
    yield _EXPORTER


def named(exporter: InMemorySpanExporter, name: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def tracer() -> Any:
    return otel_trace.get_tracer("tests")


def metric_points(name: str) -> list[tuple[dict[str, Any], Any]]:
    data = _READER.get_metrics_data()
    points = []
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    points += [(dict(p.attributes or {}), p.value) for p in metric.data.data_points]  # type: ignore[union-attr]
    return points


async def test_enqueue_stamps_its_own_span_on_the_job(
    client: SeppClient, queue: str, spans: InMemorySpanExporter
) -> None:
    with tracer().start_as_current_span("request") as parent:
        await client.enqueue(EnqueueRequest(queue, "t"))
    (enqueue,) = named(spans, "sepp.enqueue")
    assert enqueue.kind is SpanKind.CLIENT
    assert (
        enqueue.parent is not None and enqueue.parent.span_id == parent.get_span_context().span_id
    )
    jobs = await client.reserve(ReserveOptions([queue], timedelta(seconds=30)))
    assert jobs is not None and jobs[0].ctx.trace_context is not None
    trace = jobs[0].ctx.trace_context
    assert trace.trace_id == f"{parent.get_span_context().trace_id:032x}"
    assert trace.span_id == f"{enqueue.context.span_id:016x}"
    assert named(spans, "sepp.reserve")[0].kind is SpanKind.CLIENT


async def test_a_job_keeps_a_trace_context_it_already_has(
    client: SeppClient, queue: str, spans: InMemorySpanExporter
) -> None:
    own = TraceContext("00-11111111111111111111111111111111-2222222222222222-01")
    with tracer().start_as_current_span("request"):
        await client.enqueue_batch([EnqueueRequest(queue, "t", trace_context=own)])
    jobs = await client.reserve(ReserveOptions([queue], timedelta(seconds=30)))
    assert jobs is not None and jobs[0].ctx.trace_context == own


async def test_concurrent_traced_enqueues_each_carry_their_own_span(
    client: SeppClient, queue: str, spans: InMemorySpanExporter
) -> None:
    async def produce(n: int) -> None:
        with tracer().start_as_current_span(f"request-{n}"):
            await client.enqueue(EnqueueRequest(queue, "t", custom={"n": n}))

    await asyncio.gather(*(produce(n) for n in range(20)))
    by_span = {f"{s.context.span_id:016x}" for s in named(spans, "sepp.enqueue")}
    jobs = await client.reserve(ReserveOptions([queue], timedelta(seconds=30), max_jobs=20))
    assert jobs is not None and len(jobs) == 20
    carried = {j.ctx.trace_context.span_id for j in jobs if j.ctx.trace_context}
    assert carried == by_span and len(by_span) == 20


async def test_the_worker_links_its_process_span_to_the_producer(
    client: SeppClient, queue: str, spans: InMemorySpanExporter
) -> None:
    with tracer().start_as_current_span("request"):
        await client.enqueue(EnqueueRequest(queue, "t", payload=Payload(b"x", "text/plain")))
    (enqueue,) = named(spans, "sepp.enqueue")
    worker = Worker(client, [queue], timedelta(seconds=30), wait_timeout=timedelta(seconds=1))
    inside: asyncio.Future[tuple[Any, TraceContext | None]] = (
        asyncio.get_running_loop().create_future()
    )

    @worker.handler("t")
    async def handle(payload: Payload | None, ctx: JobCtx) -> None:
        inside.set_result((otel_trace.get_current_span().get_span_context(), ctx.trace_context))
        worker.shutdown_handle().shutdown()

    await asyncio.wait_for(worker.run(), 20)
    (process,) = named(spans, "sepp.process")
    assert process.kind is SpanKind.CONSUMER
    assert process.parent is None  # a trace of its own ...
    assert [link.context.span_id for link in process.links] == [enqueue.context.span_id]
    assert process.links[0].context.trace_id == enqueue.context.trace_id  # ... linked back
    assert (
        process.attributes is not None and process.attributes["messaging.destination.name"] == queue
    )
    current, seen = inside.result()
    assert current.span_id == process.context.span_id  # the handler runs inside it
    assert seen is not None and seen.span_id == f"{enqueue.context.span_id:016x}"
    (ack,) = named(spans, "sepp.ack")
    assert ack.parent is not None and ack.parent.span_id == process.context.span_id


async def test_an_untraced_job_still_gets_a_process_span(
    client: SeppClient, queue: str, spans: InMemorySpanExporter
) -> None:
    # Through the client every job gets the enqueue span's context; a bare call sends none.
    raw = client.channel.unary_unary(
        "/sepp.v1.QueueService/EnqueueBatch",
        request_serializer=pb.EnqueueBatchRequest.SerializeToString,
        response_deserializer=pb.EnqueueBatchResponse.FromString,
    )
    await raw(pb.EnqueueBatchRequest(jobs=[pb.EnqueueRequest(queue=queue, job_type="t")]))
    worker = Worker(client, [queue], timedelta(seconds=30), wait_timeout=timedelta(seconds=1))

    @worker.handler("t")
    async def handle(payload: Payload | None, ctx: JobCtx) -> None:
        assert ctx.trace_context is None
        worker.shutdown_handle().shutdown()

    await asyncio.wait_for(worker.run(), 20)
    (process,) = named(spans, "sepp.process")
    assert process.links == () or list(process.links) == []


async def test_worker_metrics_and_log_events(
    client: SeppClient, queue: str, spans: InMemorySpanExporter
) -> None:
    before = {tuple(sorted(a.items())): v for a, v in metric_points("sepp.jobs.nacked")}
    processed_before = sum(v for _, v in metric_points("sepp.jobs.processed"))
    for job_type in ("ok", "retry", "dead"):
        await client.enqueue(EnqueueRequest(queue, job_type, max_attempts=5))
    worker = Worker(client, [queue], timedelta(seconds=30), wait_timeout=timedelta(seconds=1))
    seen: set[str] = set()

    async def handle(payload: Payload | None, ctx: JobCtx) -> None:
        seen.add(ctx.job_type)
        if len(seen) == 3:
            worker.shutdown_handle().shutdown()
        if ctx.job_type == "retry":
            raise HandlerError.retry_after("again", timedelta(hours=1))
        if ctx.job_type == "dead":
            raise HandlerError.permanent("broken")

    for job_type in ("ok", "retry", "dead"):
        worker.handle(job_type, handle)
    await asyncio.wait_for(worker.run(), 20)

    nacked = {tuple(sorted(a.items())): v for a, v in metric_points("sepp.jobs.nacked")}
    assert nacked[(("outcome", "retry"),)] - before.get((("outcome", "retry"),), 0) == 1
    assert nacked[(("outcome", "dead_letter"),)] - before.get((("outcome", "dead_letter"),), 0) == 1
    assert sum(v for _, v in metric_points("sepp.jobs.processed")) - processed_before == 1
    assert any(a == {"jobs": "some"} for a, _ in metric_points("sepp.reserves.completed"))
    assert sum(v for _, v in metric_points("sepp.jobs.in_flight")) == 0

    events = [
        e.attributes
        for s in named(spans, "sepp.process")
        for e in s.events
        if e.name == "log" and e.attributes
    ]
    assert any("broken" in str(e["log.message"]) and e["log.severity"] == 13 for e in events)


async def test_every_call_sends_its_span_as_traceparent_metadata(
    spans: InMemorySpanExporter,
) -> None:
    async with recording_server() as fake:
        fake.answer(
            "EnqueueBatch",
            pb.EnqueueBatchResponse(results=[pb.JobResult(success=pb.EnqueueResponse(job_id="a"))]),
        )
        fake.answer("Reserve", pb.ReserveResponse())
        async with await SeppClient.connect(fake.addr) as client:
            with tracer().start_as_current_span("outer"):
                await client.enqueue(EnqueueRequest("q", "t"))
                await client.reserve(
                    ReserveOptions(["q"], timedelta(seconds=1), wait_timeout=timedelta(0))
                )
    by_name = {s.name: s for s in spans.get_finished_spans()}
    for call, span_name in (
        (fake.calls_to("EnqueueBatch")[0], "sepp.enqueue"),
        (fake.calls_to("Reserve")[0], "sepp.reserve"),
    ):
        span = by_name[span_name].context
        assert (
            call.metadata["traceparent"]
            == f"00-{span.trace_id:032x}-{span.span_id:016x}-{span.trace_flags:02x}"
        )
    sent = fake.calls_to("EnqueueBatch")[0].request.jobs[0]
    assert (
        sent.trace_context.traceparent == fake.calls_to("EnqueueBatch")[0].metadata["traceparent"]
    )


async def test_schedule_calls_have_spans_and_their_template_gets_no_trace_context(
    spans: InMemorySpanExporter,
) -> None:
    info = pb.ScheduleInfo(
        definition=pb.ScheduleDefinition(id="tick", job=pb.EnqueueRequest(queue="q", job_type="t"))
    )
    info.definition.every.seconds = 60
    info.created_at.seconds = 1_700_000_000
    async with recording_server() as fake:
        fake.answer("UpsertSchedule", info)
        fake.answer("DeleteSchedule", pb.DeleteScheduleResponse(deleted=True))
        fake.answer("ListSchedules", pb.ListSchedulesResponse(schedules=[info]))
        async with await SeppClient.connect(fake.addr) as client:
            with tracer().start_as_current_span("outer"):
                await client.upsert_schedule(
                    Schedule("tick", EnqueueRequest("q", "t"), every=timedelta(minutes=1))
                )
                await client.list_schedules()
                assert await client.delete_schedule("tick") is True
    for name in ("sepp.upsert_schedule", "sepp.delete_schedule", "sepp.list_schedules"):
        (span,) = named(spans, name)
        assert span.kind == SpanKind.CLIENT
        attributes = dict(span.attributes or {})
        assert attributes["rpc.method"] == name.removeprefix("sepp.").title().replace("_", "")
        if name != "sepp.list_schedules":
            assert attributes["sepp.schedule.id"] == "tick"
    upsert = fake.calls_to("UpsertSchedule")[0]
    assert "traceparent" in upsert.metadata  # the call is traced...
    assert not upsert.request.schedule.job.HasField("trace_context")  # ...its template is not


async def test_pause_calls_have_spans_naming_the_queue(spans: InMemorySpanExporter) -> None:
    async with recording_server() as fake:
        fake.answer("PauseQueue", pb.PauseQueueResponse(pause=pb.QueuePause(queue="mail")))
        fake.answer("ResumeQueue", pb.ResumeQueueResponse(resumed=True))
        fake.answer("ListPauses", pb.ListPausesResponse())
        async with await SeppClient.connect(fake.addr) as client:
            with tracer().start_as_current_span("outer"):
                await client.pause_queue("mail")
                assert await client.resume_queue("mail") is True
                assert await client.list_pauses() == []
    for name in ("sepp.pause_queue", "sepp.resume_queue", "sepp.list_pauses"):
        (span,) = named(spans, name)
        assert span.kind == SpanKind.CLIENT
        attributes = dict(span.attributes or {})
        assert attributes["rpc.method"] == name.removeprefix("sepp.").title().replace("_", "")
        if name != "sepp.list_pauses":
            assert attributes["messaging.destination.name"] == "mail"
    for method in ("PauseQueue", "ResumeQueue", "ListPauses"):
        assert "traceparent" in fake.calls_to(method)[0].metadata


def test_the_blocking_client_carries_the_callers_span(
    server: Any, queue: str, spans: InMemorySpanExporter
) -> None:
    from sepp.sync import SeppClient as BlockingClient

    with BlockingClient.connect(server.addr) as client:
        with tracer().start_as_current_span("sync-request") as parent:
            client.enqueue(EnqueueRequest(queue, "t"))
    (enqueue,) = named(spans, "sepp.enqueue")
    assert (
        enqueue.parent is not None and enqueue.parent.span_id == parent.get_span_context().span_id
    )
