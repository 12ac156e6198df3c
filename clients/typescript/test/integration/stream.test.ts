/**
 * The Worker's streaming mode against the real server (SEPP_BIN must offer "consume"): it drains a
 * queue over one Consume stream with no Reserve, Ack or AckBatch call (counted by the server's own
 * `sepp.requests` metric), holds a queue's max_in_flight and its own maxInFlight, answers settles on
 * the stream as the unary calls would, and stops a running handler when the stream names its job
 * cancelled, long before its lease would run out. Then, on stubs: the fallback to Reserve for a
 * server without "consume" or one that answers the stream UNIMPLEMENTED, the reopen after an
 * UNAVAILABLE, and following a follower's `sepp-leader` to the real server.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { status } from "@grpc/grpc-js";
import * as wire from "../../src/gen/sepp/v1/queue.js";
import {
  DeadLetterCause,
  JobCancelledError,
  type JobCtx,
  JobNotFoundError,
  LeaseLostError,
  SeppClient,
  Worker,
  type WorkerOptions,
} from "../../src/index.js";
import { deferred, freshQueue, RecordingLogger, within } from "../support/helpers.js";
import { PROMETHEUS, TestServer } from "../support/server.js";
import { type MethodName, redirectTo, type StubAnswer, StubServer } from "../support/stub-server.js";

const LIMITED = freshQueue("limited");

let server: TestServer;
let client: SeppClient;

before(async () => {
  server = await TestServer.start({
    tail: `${PROMETHEUS}\n[[queues]]\nname = ${JSON.stringify(LIMITED)}\nmax_in_flight = 3\n`,
  });
  client = await SeppClient.connect(server.addr);
});

after(async () => {
  client?.close();
  await server?.stop();
});

function worker(on: SeppClient, queue: string, options: Partial<WorkerOptions> = {}) {
  return new Worker(on, {
    queues: [queue],
    leaseDuration: 300_000,
    waitTimeout: 1_000,
    logger: new RecordingLogger(),
    ...options,
  });
}

/**
 * Shuts `w` down once the settles of the handlers that have returned are on the stream: they are
 * made in the microtasks after each handler returns and written at the end of that turn, before the
 * answer of a call made now can arrive. (A settle made after the shutdown half-closed the stream
 * goes on a call of its own.)
 */
async function shutdownAfterSettles(w: Worker, run: Promise<void>): Promise<void> {
  await client.getServerInfo();
  w.shutdownHandle().shutdown();
  await within(run, "the Worker stopped");
}

/** The calls of each method the server counts while `work` runs. */
async function callsDuring(methods: string[], work: () => Promise<unknown>): Promise<Record<string, number>> {
  const before = await Promise.all(methods.map((method) => server.requestCount(method)));
  await work();
  const afterwards = await Promise.all(methods.map((method) => server.requestCount(method)));
  return Object.fromEntries(methods.map((method, i) => [method, (afterwards[i] ?? 0) - (before[i] ?? 0)]));
}

describe("a streaming Worker", () => {
  test("drains a queue over the stream: no Reserve, Ack or AckBatch call", async () => {
    assert.ok((await client.getServerInfo()).features.includes("consume"), "SEPP_BIN offers no Consume");
    const queue = freshQueue();
    const results = await client.enqueueBatch(
      Array.from({ length: 50 }, (_, n) => ({ queue, jobType: "t", custom: { n } })),
    );
    const ids = results.map((r) => ("jobId" in r ? r.jobId : assert.fail(r.kind)));
    const w = worker(client, queue, { maxInFlight: 4 });
    const seen: string[] = [];
    const all = deferred();
    w.handle("t", (_payload, ctx) => {
      seen.push(ctx.id);
      if (seen.length === ids.length) all.resolve();
    });
    const calls = await callsDuring(["Reserve", "Ack", "AckBatch", "Nack"], async () => {
      const run = w.run();
      await within(all.promise, "50 jobs handled");
      await shutdownAfterSettles(w, run);
    });
    assert.deepEqual(calls, { Reserve: 0, Ack: 0, AckBatch: 0, Nack: 0 });
    assert.deepEqual([...seen].sort(), [...ids].sort());
    // Every job was acked (on the stream): nothing is left to reserve, also once leases would expire.
    assert.equal(await client.reserve({ queues: [queue], leaseDuration: 1_000, waitTimeout: 0 }), null);
  });

  test("never runs more than a queue's max_in_flight, nor its own maxInFlight", async () => {
    for (const [queue, maxInFlight, limit] of [
      [LIMITED, 10, 3],
      [freshQueue(), 2, 2],
    ] as const) {
      const results = await client.enqueueBatch(Array.from({ length: 12 }, () => ({ queue, jobType: "t" })));
      for (const r of results) if (!("jobId" in r)) assert.fail(r.kind);
      const w = worker(client, queue, { maxInFlight });
      let running = 0;
      let peak = 0;
      let done = 0;
      const atLimit = deferred();
      const release = deferred();
      w.handle("t", async () => {
        running++;
        peak = Math.max(peak, running);
        if (running === limit) atLimit.resolve();
        await release.promise;
        running--;
        if (++done === results.length) w.shutdownHandle().shutdown();
      });
      const run = w.run();
      try {
        await within(atLimit.promise, `${limit} handlers running`);
        // A round trip to the server, in which one more pushed job would have started.
        await client.getServerInfo();
        assert.equal(running, limit);
        release.resolve();
        await within(run, "every job handled");
      } finally {
        release.resolve();
        w.shutdownHandle().shutdown();
        await run;
      }
      assert.equal(peak, limit, queue);
      assert.equal(done, results.length);
    }
  });

  test("settles on the stream answer as the unary calls do", async () => {
    const queue = freshQueue();
    await client.enqueue({ queue, jobType: "t" });
    const logger = new RecordingLogger();
    const w = worker(client, queue, { logger });
    const outcomes: unknown[] = [];
    const handled = deferred();
    w.handle("t", async (_payload, ctx) => {
      const expiry = await ctx.extend(120_000);
      outcomes.push(expiry instanceof Date && expiry.getTime() === ctx.leaseExpiresAt.getTime());
      await client.ack(ctx);
      outcomes.push("acked");
      outcomes.push(await client.ack(ctx).catch((error: unknown) => error));
      outcomes.push(await client.nack(ctx).catch((error: unknown) => error));
      handled.resolve();
    });
    const calls = await callsDuring(["Ack", "AckBatch", "Nack", "Extend"], async () => {
      const run = w.run();
      await within(handled.promise, "the job handled");
      await shutdownAfterSettles(w, run);
    });
    assert.deepEqual(calls, { Ack: 0, AckBatch: 0, Nack: 0, Extend: 0 });
    assert.equal(outcomes[0], true);
    assert.equal(outcomes[1], "acked");
    assert.ok(
      outcomes[2] instanceof JobNotFoundError && !(outcomes[2] instanceof JobCancelledError),
      String(outcomes[2]),
    );
    assert.ok(outcomes[3] instanceof JobNotFoundError, String(outcomes[3]));
    // The Worker's own ack after the handler returned found the job gone too, and said so.
    await logger.waitFor("error", /^ack failed/);
  });

  test("a cancel reaches the running handler through the stream, long before its lease ends", async () => {
    const queue = freshQueue();
    const { jobId } = await client.enqueue({ queue, jobType: "t" });
    const logger = new RecordingLogger();
    // No autoExtend: no extend would notice the cancel; the lease runs for five minutes.
    const w = worker(client, queue, { logger, leaseDuration: 300_000 });
    const started = deferred<JobCtx>();
    let reason: unknown;
    w.handle("t", async (_payload, ctx) => {
      started.resolve(ctx);
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
      reason = ctx.signal.reason;
      w.shutdownHandle().shutdown();
    });
    const run = w.run();
    await within(started.promise, "the handler started");
    const calls = await callsDuring(["Ack", "AckBatch", "Nack"], async () => {
      assert.equal((await client.cancel(jobId, { reason: "from the test" })).wasLeased, true);
      await within(run, "the handler aborted by the cancel");
    });
    assert.deepEqual(calls, { Ack: 0, AckBatch: 0, Nack: 0 });
    assert.ok(reason instanceof LeaseLostError, String(reason));
    assert.ok(reason.cause instanceof JobCancelledError, String(reason.cause));
    assert.ok(logger.messages("warn").some((m) => /^job cancelled; handler aborted/.test(m)));
    // The Worker's one extend after the cancel dead-lettered the job at once.
    const records = await client.drainDeadLetters({ queue });
    assert.deepEqual(
      records.map((r) => [r.jobId, r.cause, r.lastReason]),
      [[jobId, DeadLetterCause.Cancelled, "from the test"]],
    );
  });

  test("streaming: false reserves", async () => {
    const queue = freshQueue();
    await client.enqueue({ queue, jobType: "t" });
    const w = worker(client, queue, { streaming: false });
    w.handle("t", () => w.shutdownHandle().shutdown());
    const calls = await callsDuring(["Reserve"], () => within(w.run(), "the job handled"));
    assert.ok((calls.Reserve ?? 0) >= 1);
    assert.throws(() => worker(client, queue, { streaming: "yes" as never }), /streaming must be a boolean/);
  });
});

describe("a streaming Worker and servers without the stream", () => {
  const stubs: StubServer[] = [];
  after(() => {
    for (const stub of stubs) stub.stop();
  });

  const info = (features: string[]): StubAnswer => ({
    response: {
      ...wire.GetServerInfoResponse.decode(new Uint8Array()),
      serverVersion: "0.1.1",
      serverTime: { seconds: 1n, nanos: 0 },
      maxEnqueueBatch: 256,
      features,
    },
  });
  const job: wire.Job = {
    id: "job-1",
    jobType: "t",
    payload: undefined,
    priority: 0,
    traceContext: undefined,
    enqueuedAt: { seconds: 100n, nanos: 0 },
    attempt: 1,
    maxAttempts: 3,
    leaseExpiresAt: { seconds: BigInt(Math.floor(Date.now() / 1000) + 600), nanos: 0 },
    custom: {},
    scheduledAt: undefined,
    queue: "q",
  };
  /** A server that answers one job to the first Reserve, and holds every later one open. */
  async function reservingStub(answers: Partial<Record<MethodName, (request: unknown) => StubAnswer>>) {
    let reserves = 0;
    const stub = await StubServer.start({
      reserve: () => (reserves++ === 0 ? { response: { jobs: [job] } } : "hang"),
      ack: () => ({ response: {} }),
      ...answers,
    });
    stubs.push(stub);
    return stub;
  }

  async function handleOne(stub: StubServer): Promise<void> {
    const on = await SeppClient.connect(stub.addr);
    try {
      const w = worker(on, "q", { reserveErrorBackoff: 1 });
      w.handle("t", () => w.shutdownHandle().shutdown());
      await within(w.run(), "the reserved job handled");
    } finally {
      on.close();
    }
    assert.equal(stub.callsOf("ack").length, 1);
  }

  test("without the feature consume, it reserves and never opens a stream", async () => {
    const stub = await reservingStub({ getServerInfo: () => info(["ack_batch"]) });
    await handleOne(stub);
    assert.equal(stub.callsOf("consume").length, 0);
    assert.equal(stub.callsOf("reserve").length >= 1, true);
  });

  test("a stream answered UNIMPLEMENTED falls back to reserving", async () => {
    // The feature listed, the stream refused (and GetServerInfo failing: it tries the stream anyway).
    for (const getServerInfo of [() => info(["consume"]), () => ({ code: status.UNIMPLEMENTED })]) {
      const stub = await reservingStub({ getServerInfo, consume: () => ({ code: status.UNIMPLEMENTED }) });
      await handleOne(stub);
      assert.equal(stub.callsOf("consume").length, 1);
    }
  });

  test("a stream ended UNAVAILABLE is reopened", async () => {
    let consumes = 0;
    const stub = await reservingStub({
      getServerInfo: () => info(["consume"]),
      consume: () =>
        consumes++ === 0
          ? { code: status.UNAVAILABLE, details: "shutting down" }
          : { code: status.UNIMPLEMENTED },
    });
    await handleOne(stub);
    assert.equal(stub.callsOf("consume").length, 2);
  });

  test("a follower's sepp-leader moves the stream to the leader", async () => {
    const follower = await StubServer.start({
      getServerInfo: () => info(["consume"]),
      consume: () => redirectTo(server.addr),
    });
    stubs.push(follower);
    const queue = freshQueue();
    const { jobId } = await client.enqueue({ queue, jobType: "t" });
    const on = await SeppClient.connect(follower.addr);
    try {
      const w = worker(on, queue);
      let handled = "";
      w.handle("t", (_payload, ctx) => {
        handled = ctx.id;
        w.shutdownHandle().shutdown();
      });
      await within(w.run(), "the job handled on the leader");
      assert.equal(handled, jobId);
    } finally {
      on.close();
    }
    assert.equal(follower.callsOf("consume").length, 1);
    assert.equal(follower.callsOf("reserve").length, 0);
    assert.equal(await client.reserve({ queues: [queue], leaseDuration: 1_000, waitTimeout: 0 }), null);
  });
});
