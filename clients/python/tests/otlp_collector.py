"""A minimal OTLP/gRPC collector in the test process: it keeps the spans it is sent.

Used to check `examples/traced.py` end to end, exporter included. Metrics are accepted and
dropped.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2 as metrics_pb
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as trace_pb


@dataclass
class Collector:
    addr: str = ""
    spans: list[Any] = field(default_factory=list)

    async def export_traces(self, request: Any, context: Any) -> Any:
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                self.spans.extend(scope.spans)
        return trace_pb.ExportTraceServiceResponse()

    async def export_metrics(self, request: Any, context: Any) -> Any:
        return metrics_pb.ExportMetricsServiceResponse()


@asynccontextmanager
async def otlp_collector() -> AsyncIterator[Collector]:
    collector = Collector()
    server = grpc.aio.server()
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "opentelemetry.proto.collector.trace.v1.TraceService",
                {
                    "Export": grpc.unary_unary_rpc_method_handler(
                        collector.export_traces,
                        request_deserializer=trace_pb.ExportTraceServiceRequest.FromString,
                        response_serializer=trace_pb.ExportTraceServiceResponse.SerializeToString,
                    )
                },
            ),
            grpc.method_handlers_generic_handler(
                "opentelemetry.proto.collector.metrics.v1.MetricsService",
                {
                    "Export": grpc.unary_unary_rpc_method_handler(
                        collector.export_metrics,
                        request_deserializer=metrics_pb.ExportMetricsServiceRequest.FromString,
                        response_serializer=metrics_pb.ExportMetricsServiceResponse.SerializeToString,
                    )
                },
            ),
        )
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    collector.addr = f"127.0.0.1:{port}"
    try:
        yield collector
    finally:
        await server.stop(None)
