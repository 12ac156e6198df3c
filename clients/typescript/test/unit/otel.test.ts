/**
 * The client's spans with OpenTelemetry installed: none is started while no tracer provider is
 * registered (the call runs as it would without the API, under its caller's context), and one is
 * as soon as a provider is registered.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { inClientSpan } from "../../src/otel.js";

test("a call starts a span only once a tracer provider is registered", async () => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());

  const before = await inClientSpan("sepp.enqueue", {}, async () => trace.getActiveSpan());
  assert.equal(before, undefined, "no provider: no span, not even a non-recording one, is made active");

  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  trace.setGlobalTracerProvider(provider);
  try {
    const recording = await inClientSpan("sepp.enqueue", { "sepp.jobs": 1 }, async () =>
      trace.getActiveSpan()?.isRecording(),
    );
    assert.equal(recording, true, "a registered provider records the call's span");
    assert.deepEqual(
      exporter.getFinishedSpans().map((span) => span.name),
      ["sepp.enqueue"],
    );
  } finally {
    trace.disable();
    context.disable();
    await provider.shutdown();
  }
});
