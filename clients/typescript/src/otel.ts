/**
 * Optional OpenTelemetry: when `@opentelemetry/api` can be loaded, every call runs in a client span
 * `sepp.<call>`, the active span's W3C context is sent as `traceparent`/`tracestate` metadata and
 * stamped onto enqueued jobs that have none, and the Worker runs each job in a consumer span
 * `sepp.process` linked to the producer's span. Without the package (or without a registered tracer
 * provider, where the API would hand out no-op spans, so none is started) all of this does nothing.
 *
 * The API is loaded with `require` from this file's location, so an application's own copy is
 * found; the API keeps its providers on a process-wide global, so the application's registrations
 * are seen even when it loaded the ESM build and this is the CommonJS one.
 */
import { createRequire } from "node:module";
import type { Metadata } from "@grpc/grpc-js";
import type * as Api from "@opentelemetry/api";
import { formatTraceparent, parseTraceparent, type TraceContext } from "./trace.js";
import { VERSION } from "./version.js";

type OtelApi = typeof Api;

let loaded: OtelApi | null | undefined;

/** The OpenTelemetry API, or null when it is not installed. */
function api(): OtelApi | null {
  if (loaded === undefined) {
    try {
      loaded = createRequire(import.meta.url)("@opentelemetry/api") as OtelApi;
    } catch {
      loaded = null;
    }
  }
  return loaded;
}

/** Whether `@opentelemetry/api` was found. */
export function otelAvailable(): boolean {
  return api() !== null;
}

/** Attributes of a span, as the API accepts them. */
export type SpanAttributes = Record<string, string | number | boolean | undefined>;

/** The minimal span surface the rest of the package uses. */
export interface SpanHandle {
  setAttribute(key: string, value: string | number | boolean): void;
  fail(error: unknown): void;
}

const NO_SPAN: SpanHandle = { setAttribute() {}, fail() {} };

let noopProvider: Api.TracerProvider | undefined;

/**
 * Whether a tracer provider is registered. Without one the API hands out non-recording spans that
 * carry their parent's context, so running a call in one changes nothing a caller could see (the
 * context sent and stamped is the same either way) and costs a few microseconds a call: skip it.
 * The registered provider is the registering copy's proxy with a delegate; with none, the global
 * is our own proxy, whose delegate is the API's no-op singleton.
 */
function tracing(otel: OtelApi): boolean {
  noopProvider ??= new otel.ProxyTracerProvider().getDelegate();
  const provider = otel.trace.getTracerProvider() as Api.TracerProvider & {
    getDelegate?: () => Api.TracerProvider;
  };
  const delegate = typeof provider.getDelegate === "function" ? provider.getDelegate() : provider;
  return delegate !== noopProvider;
}

function tracer(otel: OtelApi): Api.Tracer {
  return otel.trace.getTracer("sepp-js", VERSION);
}

function settle(span: Api.Span, otel: OtelApi): SpanHandle {
  return {
    setAttribute: (key, value) => span.setAttribute(key, value),
    fail: (error) => {
      span.setStatus({
        code: otel.SpanStatusCode.ERROR,
        message: error instanceof Error ? error.message : String(error),
      });
      if (error instanceof Error) span.recordException(error);
    },
  };
}

function clean(attributes: SpanAttributes): Api.Attributes {
  const out: Api.Attributes = {};
  for (const [key, value] of Object.entries(attributes)) if (value !== undefined) out[key] = value;
  return out;
}

/** Runs `call` inside a client span `name` (active while it runs); the span fails if `call` throws. */
export async function inClientSpan<T>(
  name: string,
  attributes: SpanAttributes,
  call: (span: SpanHandle) => Promise<T>,
): Promise<T> {
  const otel = api();
  if (otel === null || !tracing(otel)) return call(NO_SPAN);
  const options = { kind: otel.SpanKind.CLIENT, attributes: clean(attributes) };
  return tracer(otel).startActiveSpan(name, options, async (span) => {
    const handle = settle(span, otel);
    try {
      return await call(handle);
    } catch (error) {
      handle.fail(error);
      throw error;
    } finally {
      span.end();
    }
  });
}

/**
 * Runs `call` inside a consumer span `sepp.process`: a root span (the consumer's work is its own
 * trace) with a link to the producer's span when the job carries a valid trace context.
 */
export async function inProcessSpan<T>(
  attributes: SpanAttributes,
  producer: TraceContext | undefined,
  call: (span: SpanHandle) => Promise<T>,
): Promise<T> {
  const otel = api();
  if (otel === null || !tracing(otel)) return call(NO_SPAN);
  const links: Api.Link[] = [];
  const parsed = producer === undefined ? undefined : parseTraceparent(producer.traceparent);
  if (parsed !== undefined) {
    const context: Api.SpanContext = {
      traceId: parsed.traceId,
      spanId: parsed.spanId,
      traceFlags: parsed.flags,
      isRemote: true,
    };
    if (producer?.tracestate) context.traceState = otel.createTraceState(producer.tracestate);
    links.push({ context });
  }
  const span = tracer(otel).startSpan("sepp.process", {
    kind: otel.SpanKind.CONSUMER,
    root: true,
    links,
    attributes: clean(attributes),
  });
  const handle = settle(span, otel);
  try {
    return await otel.context.with(otel.trace.setSpan(otel.context.active(), span), () => call(handle));
  } finally {
    span.end();
  }
}

/** The active span's context as a W3C trace context, when there is a valid one. */
export function activeTraceContext(): TraceContext | undefined {
  const otel = api();
  if (otel === null) return undefined;
  const span = otel.trace.getSpan(otel.context.active());
  if (span === undefined) return undefined;
  const context = span.spanContext();
  if (!otel.isSpanContextValid(context)) return undefined;
  const traceparent = formatTraceparent(context.traceId, context.spanId, context.traceFlags);
  const tracestate = context.traceState?.serialize();
  return tracestate ? { traceparent, tracestate } : { traceparent };
}

/** Adds the active trace context to call metadata. */
export function injectTraceMetadata(metadata: Metadata): void {
  const trace = activeTraceContext();
  if (trace === undefined) return;
  metadata.set("traceparent", trace.traceparent);
  if (trace.tracestate) metadata.set("tracestate", trace.tracestate);
}
