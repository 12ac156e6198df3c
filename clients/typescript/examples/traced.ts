/**
 * Distributed tracing end to end: a producer enqueues inside its own span, and the worker's
 * `sepp.process` span links back to it. Spans are printed to the console as they end.
 *
 *     SEPP_ADDR=127.0.0.1:50051 npx tsx examples/traced.ts
 *
 * Tracing needs `@opentelemetry/api` plus an SDK in the application; this uses
 * `@opentelemetry/sdk-trace-base` and `@opentelemetry/context-async-hooks`.
 */
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, ConsoleSpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { Payload, SeppClient, Worker } from "sepp-js";

// The context manager carries the active span across `await`; the provider prints finished spans.
context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
const provider = new BasicTracerProvider({
  spanProcessors: [new SimpleSpanProcessor(new ConsoleSpanExporter())],
});
trace.setGlobalTracerProvider(provider);
const tracer = trace.getTracer("traced-example");

const client = await SeppClient.connect(process.env.SEPP_ADDR ?? "127.0.0.1:50051");
const queue = `traced-${process.pid}`;

// Producer: the job carries the `sepp.enqueue` span's context (a child of `checkout`).
await tracer.startActiveSpan("checkout", async (span) => {
  const ack = await client.enqueue({
    queue,
    jobType: "send_receipt",
    payload: Payload.json({ order: 1001 }),
  });
  console.log(`enqueued ${ack.jobId} in trace ${span.spanContext().traceId}`);
  span.end();
});

// Worker: each job runs in a `sepp.process` span linked to the producer; spans the handler opens
// (and the ack) are its children.
const worker = new Worker(client, { queues: [queue], leaseDuration: 30_000, waitTimeout: 5_000 });
await worker
  .handle("send_receipt", async (payload, ctx) => {
    await tracer.startActiveSpan("render_receipt", async (span) => {
      console.log(
        `rendering ${JSON.stringify(payload?.json())} for ${ctx.id}, produced in ${ctx.traceContext?.traceparent}`,
      );
      span.end();
    });
    worker.shutdownHandle().shutdown();
  })
  .run();

client.close();
await provider.shutdown();
