"""Distributed tracing end to end: a producer span, the job, and the worker's linked span.

    OTEL_ENDPOINT=http://localhost:4317 SEPP_ADDR=127.0.0.1:50051 python examples/traced.py

Needs the `otel` extra and the OTLP exporter:

    pip install "sepp-py[otel]" opentelemetry-exporter-otlp-proto-grpc

It sets up the tracer and meter providers (the application's job, not the client's), enqueues
one job inside a `checkout` span, and runs a Worker until it has handled that job. In the
tracing backend, service `sepp-py-example`, the `sepp.process` span has a link to the
`sepp.enqueue` span that produced the job, which is a child of `checkout`.
"""

from __future__ import annotations

import asyncio
import os
from datetime import timedelta

from opentelemetry import metrics, trace
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from sepp import EnqueueRequest, JobCtx, Payload, SeppClient, Worker

ADDR = os.environ.get("SEPP_ADDR", "127.0.0.1:50051")
OTEL_ENDPOINT = os.environ.get("OTEL_ENDPOINT", "http://localhost:4317")


def setup_telemetry() -> tuple[TracerProvider, MeterProvider]:
    resource = Resource.create({"service.name": "sepp-py-example"})
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(
        BatchSpanProcessor(OTLPSpanExporter(endpoint=OTEL_ENDPOINT, insecure=True))
    )
    trace.set_tracer_provider(tracer_provider)
    reader = PeriodicExportingMetricReader(
        OTLPMetricExporter(endpoint=OTEL_ENDPOINT, insecure=True)
    )
    meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
    metrics.set_meter_provider(meter_provider)
    return tracer_provider, meter_provider


async def main() -> None:
    tracer = trace.get_tracer("sepp-py-example")
    async with await SeppClient.connect(ADDR) as client:
        with tracer.start_as_current_span("checkout") as checkout:
            ack = await client.enqueue(
                EnqueueRequest(
                    "receipts", "send_receipt", payload=Payload(b'{"order": 1}', "application/json")
                )
            )
            print(
                f"enqueued {ack.job_id} in trace {checkout.get_span_context().trace_id:032x}",
                flush=True,
            )

        worker = Worker(
            client, ["receipts"], timedelta(seconds=30), wait_timeout=timedelta(seconds=5)
        )

        @worker.handler("send_receipt")
        async def send_receipt(payload: Payload | None, ctx: JobCtx) -> None:
            here = trace.get_current_span().get_span_context()
            producer = ctx.trace_context.span_id if ctx.trace_context else None
            print(
                f"processing {ctx.id} in trace {here.trace_id:032x}, linked to span {producer}",
                flush=True,
            )
            worker.shutdown_handle().shutdown()  # one job is enough for the example

        await worker.run()


if __name__ == "__main__":
    tracer_provider, meter_provider = setup_telemetry()
    try:
        asyncio.run(main())
    finally:
        tracer_provider.shutdown()  # flush the spans to the collector
        meter_provider.shutdown()
