/**
 * Trace propagation with OpenTelemetry installed and a tracer provider registered: the enqueue span
 * stamps its context onto jobs, calls carry it as metadata, and the Worker's `sepp.process` span is
 * a root span linked to the producer's span. (package.test.ts covers the package without the API.)
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { context, SpanKind, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { Payload, SeppClient, Worker } from "../../src/index.js";
import { freshQueue } from "../support/helpers.js";
import { TestServer } from "../support/server.js";
import { StubServer } from "../support/stub-server.js";

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const tracer = trace.getTracer("sepp-js-tests");
let server: TestServer;
let client: SeppClient;

before(async () => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  server = await TestServer.start();
  client = await SeppClient.connect(server.addr);
});

after(async () => {
  client?.close();
  await server?.stop();
  await provider.shutdown();
});

const finished = (name: string) => exporter.getFinishedSpans().filter((span) => span.name === name);

describe("trace propagation", () => {
  test("an enqueue inside a span stamps the sepp.enqueue span's context onto the job", async () => {
    const queue = freshQueue();
    const parent = await tracer.startActiveSpan("checkout", async (span) => {
      await client.enqueue({ queue, jobType: "t", payload: Payload.text("x") });
      span.end();
      return span.spanContext();
    });
    const enqueue = finished("sepp.enqueue").find((span) => span.parentSpanContext?.spanId === parent.spanId);
    assert.ok(enqueue, "a sepp.enqueue span under the application's span");
    assert.equal(enqueue.kind, SpanKind.CLIENT);
    assert.equal(enqueue.spanContext().traceId, parent.traceId);
    const [job] = (await client.reserve({ queues: [queue], leaseDuration: 1_000 })) ?? [];
    assert.equal(
      job?.ctx.traceContext?.traceparent,
      `00-${parent.traceId}-${enqueue.spanContext().spanId}-01`,
    );
  });

  test("a trace context given with the job wins over the active span", async () => {
    const queue = freshQueue();
    const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    await tracer.startActiveSpan("app", async (span) => {
      await client.enqueue({ queue, jobType: "t", traceContext: { traceparent, tracestate: "vendor=1" } });
      span.end();
    });
    const [job] = (await client.reserve({ queues: [queue], leaseDuration: 1_000 })) ?? [];
    assert.deepEqual(job?.ctx.traceContext, { traceparent, tracestate: "vendor=1" });
  });

  test("every call sends its client span's context as traceparent metadata", async () => {
    const stub = await StubServer.start({ getServerInfo: () => ({ code: 12 }) });
    const stubbed = await SeppClient.connect(stub.addr);
    await assert.rejects(stubbed.getServerInfo());
    const span = finished("sepp.get_server_info").at(-1);
    assert.ok(span);
    assert.equal(span.status.code, 2); // ERROR: the call failed
    const sent = stub.callsOf("getServerInfo")[0]?.metadata.get("traceparent");
    assert.deepEqual(sent, [`00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`]);
    stubbed.close();
    stub.stop();
  });

  test("the pause calls run in client spans naming the queue", async () => {
    const stub = await StubServer.start({
      pauseQueue: () => ({ response: { pause: { queue: "mail", until: undefined } } }),
      resumeQueue: () => ({ response: { resumed: true } }),
      listPauses: () => ({ response: { pauses: [] } }),
    });
    const stubbed = await SeppClient.connect(stub.addr);
    await stubbed.pauseQueue("mail");
    assert.equal(await stubbed.resumeQueue("mail"), true);
    assert.deepEqual(await stubbed.listPauses(), []);
    for (const [name, method] of [
      ["sepp.pause_queue", "pauseQueue"],
      ["sepp.resume_queue", "resumeQueue"],
      ["sepp.list_pauses", "listPauses"],
    ] as const) {
      const span = finished(name).at(-1);
      assert.ok(span, `a ${name} span`);
      assert.equal(span.kind, SpanKind.CLIENT);
      if (name !== "sepp.list_pauses") assert.equal(span.attributes["sepp.queue"], "mail");
      const sent = stub.callsOf(method)[0]?.metadata.get("traceparent");
      assert.deepEqual(sent, [`00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`]);
    }
    stubbed.close();
    stub.stop();
  });

  test("the Worker handles each job in a sepp.process root span linked to the producer", async () => {
    const queue = freshQueue();
    const producer = await tracer.startActiveSpan("produce", async (span) => {
      await client.enqueue({ queue, jobType: "traced" });
      span.end();
      return span.spanContext();
    });
    await client.enqueue({ queue, jobType: "no_app_span" });
    exporter.reset();
    const worker = new Worker(client, { queues: [queue], leaseDuration: 30_000, waitTimeout: 1_000 });
    const activeInHandler: Record<string, string | undefined> = {};
    let handled = 0;
    await worker
      .catchAll((_, ctx) => {
        activeInHandler[ctx.jobType] = trace.getActiveSpan()?.spanContext().spanId;
        if (++handled === 2) worker.shutdownHandle().shutdown();
      })
      .run();
    const processes = finished("sepp.process");
    const traced = processes.find((span) => span.attributes["sepp.job_type"] === "traced");
    assert.ok(traced, "a sepp.process span for the traced job");
    assert.equal(traced.kind, SpanKind.CONSUMER);
    assert.equal(traced.parentSpanContext, undefined); // a root span: its own trace
    assert.notEqual(traced.spanContext().traceId, producer.traceId);
    assert.equal(traced.links.length, 1);
    assert.equal(traced.links[0]?.context.traceId, producer.traceId);
    assert.equal(traced.attributes["sepp.worker_id"], worker.workerId);
    assert.equal(activeInHandler.traced, traced.spanContext().spanId);
    const ack = finished("sepp.ack").find(
      (span) => span.parentSpanContext?.spanId === traced.spanContext().spanId,
    );
    assert.ok(ack, "the ack runs inside the process span");
    // The job enqueued outside any application span still carries its sepp.enqueue span's context.
    const withoutAppSpan = processes.find((span) => span.attributes["sepp.job_type"] === "no_app_span");
    assert.equal(withoutAppSpan?.links.length, 1);
  });

  test("traced acks keep their own Ack calls, each carrying its span's context", async () => {
    const job = (id: string) => ({
      id,
      jobType: "t",
      attempt: 1,
      maxAttempts: 3,
      queue: "q",
      priority: 0,
      custom: {},
      enqueuedAt: { seconds: 100n, nanos: 0 },
      leaseExpiresAt: { seconds: BigInt(Math.floor(Date.now() / 1000) + 60), nanos: 0 },
    });
    const stub = await StubServer.start({
      reserve: () => ({ response: { jobs: [job("job-1"), job("job-2"), job("job-3")] } }),
      ack: (request) => ({ response: { jobId: (request as { jobId: string }).jobId } }),
    });
    const stubbed = await SeppClient.connect(stub.addr);
    const reserved = (await stubbed.reserve({ queues: ["q"], leaseDuration: 1_000 })) ?? [];
    assert.equal(reserved.length, 3);
    exporter.reset();
    await Promise.all(reserved.map((job) => stubbed.ack(job.ctx)));
    assert.equal(stub.callsOf("ackBatch").length, 0);
    const spans = finished("sepp.ack");
    assert.equal(spans.length, 3);
    const sent = stub.callsOf("ack").map((call) => call.metadata.get("traceparent")[0]);
    assert.deepEqual(
      new Set(sent),
      new Set(spans.map((span) => `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`)),
    );
    stubbed.close();
    stub.stop();
  });

  test("a job without a trace context gets a process span without a link", async () => {
    const queue = freshQueue();
    // With no tracer provider the API hands out no-op spans, whose invalid context is not stamped.
    trace.disable();
    await client.enqueue({ queue, jobType: "t" });
    trace.setGlobalTracerProvider(provider);
    exporter.reset();
    const worker = new Worker(client, { queues: [queue], leaseDuration: 30_000, waitTimeout: 1_000 });
    await worker.catchAll(() => worker.shutdownHandle().shutdown()).run();
    const [span] = finished("sepp.process");
    assert.equal(span?.links.length, 0);
  });
});
