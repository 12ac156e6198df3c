"""OpenTelemetry glue: client spans, W3C propagation, the worker's consumer span and metrics.

Everything here works when the `otel` extra (`opentelemetry-api` and `-sdk`) is installed and is
a cheap no-op when it is not: `enabled()` says which. This module never configures a provider or
an exporter; the host application owns those, and until it sets one the API's own no-op provider
answers.

Names: tracer and meter `sepp`; client spans `sepp.<operation>` (kind CLIENT); the worker's span
around each job `sepp.process` (kind CONSUMER), a root span *linked* to the producer's span so
the asynchronous hand-off is recorded without merging the two traces.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ._version import VERSION

try:
    from opentelemetry import context as otel_context
    from opentelemetry import metrics as otel_metrics
    from opentelemetry import trace as otel_trace
    from opentelemetry.trace import (
        Link,
        NonRecordingSpan,
        SpanContext,
        SpanKind,
        TraceFlags,
        TraceState,
    )
except ImportError:  # the `otel` extra is not installed
    _ENABLED = False
else:
    _ENABLED = True

# Whether the `otel` extra is importable (the name sepp-py 0.1 gave it; `enabled()` says the same).
OTEL_AVAILABLE = _ENABLED

if TYPE_CHECKING:
    from opentelemetry.trace import Span

__all__ = [
    "WorkerMetrics",
    "attach_remote",
    "client_span",
    "consumer_span",
    "current_trace_context",
    "enabled",
    "parse_traceparent",
    "record_log",
    "remote_span_context",
    "trace_metadata",
]

_RPC_SERVICE = "sepp.v1.QueueService"

# OpenTelemetry log severity numbers for the stdlib levels we emit.
SEVERITY_DEBUG = 5
SEVERITY_INFO = 9
SEVERITY_WARN = 13
SEVERITY_ERROR = 17

if _ENABLED:
    _tracer = otel_trace.get_tracer("sepp", VERSION)


def enabled() -> bool:
    """Whether OpenTelemetry is importable, so that spans, propagation and metrics are live."""
    return _ENABLED


def parse_traceparent(traceparent: str) -> tuple[str, str, str, str] | None:
    """Split a W3C traceparent into (version, trace_id, span_id, flags), or None if invalid.

    The four fields must be 2, 32, 16 and 2 hex digits (either case); the trace and span ids must
    not be all zeros.
    """
    parts = traceparent.split("-")
    if len(parts) != 4:
        return None
    version, trace_id, span_id, flags = parts
    if len(version) != 2 or len(trace_id) != 32 or len(span_id) != 16 or len(flags) != 2:
        return None
    if not _HEX.issuperset(version + trace_id + span_id + flags):
        return None
    if int(trace_id, 16) == 0 or int(span_id, 16) == 0:
        return None
    return version, trace_id, span_id, flags


_HEX = frozenset("0123456789abcdefABCDEF")


def current_trace_context() -> tuple[str, str | None] | None:
    """The (traceparent, tracestate) of the active span, or None if there is no valid one."""
    if not _ENABLED:
        return None
    context = otel_trace.get_current_span().get_span_context()
    if not context.is_valid:
        return None
    traceparent = f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"
    tracestate = context.trace_state.to_header() if context.trace_state else ""
    return traceparent, (tracestate or None)


def trace_metadata() -> list[tuple[str, str]]:
    """gRPC metadata carrying the active span's context (empty when there is none)."""
    current = current_trace_context()
    if current is None:
        return []
    traceparent, tracestate = current
    if tracestate:
        return [("traceparent", traceparent), ("tracestate", tracestate)]
    return [("traceparent", traceparent)]


@contextlib.contextmanager
def _no_span() -> Iterator[None]:
    yield None


def client_span(
    operation: str, method: str, attributes: dict[str, str | int] | None = None
) -> contextlib.AbstractContextManager[Span | None]:
    """A CLIENT span `sepp.<operation>` for one client call, made current while it runs."""
    if not _ENABLED:
        return _no_span()
    attrs: dict[str, str | int] = {
        "rpc.system": "grpc",
        "rpc.service": _RPC_SERVICE,
        "rpc.method": method,
    }
    if attributes:
        attrs.update(attributes)
    return _tracer.start_as_current_span(
        f"sepp.{operation}", kind=SpanKind.CLIENT, attributes=attrs
    )


def remote_span_context(traceparent: str, tracestate: str | None) -> SpanContext | None:
    """The producer's span context carried by a job, or None if invalid (or OTel is absent)."""
    if not _ENABLED:
        return None
    parsed = parse_traceparent(traceparent)
    if parsed is None:
        return None
    _, trace_id, span_id, flags = parsed
    state = TraceState.from_header([tracestate]) if tracestate else None
    return SpanContext(
        trace_id=int(trace_id, 16),
        span_id=int(span_id, 16),
        is_remote=True,
        trace_flags=TraceFlags(int(flags, 16)),
        trace_state=state,
    )


def consumer_span(
    trace_context: tuple[str, str | None] | None, attributes: dict[str, str | int]
) -> contextlib.AbstractContextManager[Span | None]:
    """The worker's `sepp.process` CONSUMER span for one job, linked to its producer's span.

    It is a root span (a fresh trace): the producer's context becomes a link, not the parent.
    A job without a valid trace context still gets the span, without a link.
    """
    if not _ENABLED:
        return _no_span()
    links = []
    if trace_context is not None:
        producer = remote_span_context(*trace_context)
        if producer is not None:
            links.append(Link(producer))
    return _tracer.start_as_current_span(
        "sepp.process",
        context=otel_context.Context(),
        kind=SpanKind.CONSUMER,
        links=links,
        attributes=attributes,
    )


@contextlib.contextmanager
def attach_remote(traceparent: str, tracestate: str | None) -> Iterator[None]:
    """Make a carried trace context the current one (as a remote parent) inside the block."""
    span_context = remote_span_context(traceparent, tracestate)
    if span_context is None:
        yield
        return
    token = otel_context.attach(otel_trace.set_span_in_context(NonRecordingSpan(span_context)))
    try:
        yield
    finally:
        otel_context.detach(token)


def record_log(severity: int, message: str, args: tuple[object, ...] = ()) -> None:
    """Add a log line (`message % args`) as an event on the active span, if one is recording."""
    if not _ENABLED:
        return
    span = otel_trace.get_current_span()
    if span.is_recording():
        text = message % args if args else message
        span.add_event("log", {"event.name": "log", "log.severity": severity, "log.message": text})


class WorkerMetrics:
    """The Worker's instruments (meter `sepp`); every method is a no-op without OTel.

    * `sepp.jobs.processed` - jobs handled successfully and acked;
    * `sepp.jobs.nacked` - jobs nacked, attribute `outcome` = `retry` or `dead_letter`;
    * `sepp.jobs.in_flight` - jobs whose handler is running (up-down counter);
    * `sepp.reserves.completed` - reserve calls answered, attribute `jobs` = `some` or `empty`;
    * `sepp.reserves.failed` - reserve calls that failed.
    """

    def __init__(self) -> None:
        self._live = _ENABLED
        if not _ENABLED:
            return
        meter = otel_metrics.get_meter("sepp", VERSION)
        self._processed = meter.create_counter(
            "sepp.jobs.processed", unit="{job}", description="Jobs handled and acked."
        )
        self._nacked = meter.create_counter(
            "sepp.jobs.nacked",
            unit="{job}",
            description="Jobs nacked; attribute `outcome` is `retry` or `dead_letter`.",
        )
        self._in_flight = meter.create_up_down_counter(
            "sepp.jobs.in_flight", unit="{job}", description="Jobs whose handler is running."
        )
        self._reserves = meter.create_counter(
            "sepp.reserves.completed",
            unit="{call}",
            description="Reserve calls answered; attribute `jobs` is `some` or `empty`.",
        )
        self._reserve_failures = meter.create_counter(
            "sepp.reserves.failed", unit="{call}", description="Reserve calls that failed."
        )

    def processed(self) -> None:
        if self._live:
            self._processed.add(1)

    def nacked(self, dead_lettered: bool) -> None:
        if self._live:
            self._nacked.add(1, {"outcome": "dead_letter" if dead_lettered else "retry"})

    def in_flight(self, delta: int) -> None:
        if self._live:
            self._in_flight.add(delta)

    def reserve_completed(self, got_jobs: bool) -> None:
        if self._live:
            self._reserves.add(1, {"jobs": "some" if got_jobs else "empty"})

    def reserve_failed(self) -> None:
        if self._live:
            self._reserve_failures.add(1)
