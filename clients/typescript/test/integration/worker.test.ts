/**
 * The Worker against the real server: acks, each handler verdict, thrown errors, unknown types and
 * the catch-all, max in flight, automatic lease extension, lease loss, and the shutdown drain.
 * Every wait is on a signal (a handler call, a log line, the Worker's run() resolving).
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  HandlerError,
  type JobCtx,
  LeaseLostError,
  Payload,
  SeppClient,
  Worker,
  type WorkerOptions,
} from "../../src/index.js";
import { deferred, freshQueue, RecordingLogger, within } from "../support/helpers.js";
import { TestServer } from "../support/server.js";

let server: TestServer;
let client: SeppClient;

before(async () => {
  server = await TestServer.start();
  client = await SeppClient.connect(server.addr);
});

after(async () => {
  client?.close();
  await server?.stop();
});

function worker(queue: string, options: Partial<WorkerOptions> = {}) {
  const logger = new RecordingLogger();
  const made = new Worker(client, {
    queues: [queue],
    leaseDuration: 30_000,
    waitTimeout: 1_000,
    logger,
    ...options,
  });
  return { worker: made, logger, shutdown: () => made.shutdownHandle().shutdown() };
}

/** Whether the queue has a job ready right now. */
async function hasReadyJob(queue: string): Promise<boolean> {
  const jobs = await client.reserve({ queues: [queue], leaseDuration: 1_000, waitTimeout: 0 });
  for (const job of jobs ?? []) await client.nack(job.ctx);
  return jobs !== null;
}

const SETTLE_FAILURE = /^(ack|nack) failed/;

describe("Worker", () => {
  test("handlers receive payload and context, and returning acks the job", async () => {
    const queue = freshQueue();
    await client.enqueueBatch(
      [1, 2, 3].map((n) => ({ queue, jobType: "send_welcome", payload: Payload.json({ n }) })),
    );
    const { worker: w, logger, shutdown } = worker(queue, { workerId: "worker-under-test" });
    const seen: number[] = [];
    await w
      .handle("send_welcome", (payload, ctx) => {
        assert.equal(ctx.workerId, "worker-under-test");
        seen.push(payload?.json<{ n: number }>().n ?? 0);
        if (seen.length === 3) shutdown();
      })
      .run();
    assert.deepEqual(seen.sort(), [1, 2, 3]);
    assert.equal(await hasReadyJob(queue), false);
    assert.deepEqual(logger.messages("error"), []);
    assert.deepEqual(
      logger.messages("info").filter((m) => /^worker (started|stopped)/.test(m)),
      ["worker started", "worker stopped"],
    );
  });

  test("a Worker handed many jobs at once drains and acks every one (their acks coalesced)", async () => {
    const queue = freshQueue();
    const count = 40;
    await client.enqueueBatch(
      Array.from({ length: count }, (_, n) => ({ queue, jobType: "t", payload: Payload.json({ n }) })),
    );
    const { worker: w, logger, shutdown } = worker(queue, { maxInFlight: count });
    const seen = new Set<number>();
    await w
      .catchAll((payload) => {
        seen.add(payload?.json<{ n: number }>().n ?? -1);
        if (seen.size === count) shutdown();
      })
      .run();
    assert.equal(seen.size, count);
    assert.equal(await hasReadyJob(queue), false);
    assert.deepEqual(logger.messages("error"), []);
    assert.deepEqual(
      logger.messages("warn").filter((m) => SETTLE_FAILURE.test(m)),
      [],
    );
  });

  test("HandlerError.retry redelivers under the queue policy", async () => {
    const queue = freshQueue();
    await client.enqueue({ queue, jobType: "t" });
    const { worker: w, logger, shutdown } = worker(queue);
    const attempts: number[] = [];
    await w
      .handle("t", (_, ctx) => {
        attempts.push(ctx.attempt);
        if (ctx.attempt === 1) throw HandlerError.retry("not yet");
        shutdown();
      })
      .run();
    assert.deepEqual(attempts, [1, 2]);
    assert.ok(logger.messages("warn").includes("handler failed"));
  });

  test("HandlerError.retryAfter delays the retry, and permanent dead-letters", async () => {
    const queue = freshQueue();
    const [later] = await client.enqueueBatch([
      { queue, jobType: "later" },
      { queue, jobType: "doomed", maxAttempts: 5 },
    ]);
    const { worker: w, shutdown } = worker(queue);
    let settled = 0;
    const done = () => {
      if (++settled === 2) shutdown();
    };
    await w
      .handle("later", () => {
        done();
        throw HandlerError.retryAfter("busy", 60_000);
      })
      .handle("doomed", () => {
        done();
        throw HandlerError.permanent("bad input");
      })
      .run();
    assert.equal(await hasReadyJob(queue), false); // "later" waits for its delay
    const records = await client.drainDeadLetters({ queue, max: 10 });
    assert.deepEqual(
      records.map((r) => [r.jobType, r.lastReason, r.finalAttempt]),
      [["doomed", "bad input", 1]],
    );
    assert.ok(later && !("kind" in later));
  });

  test("a thrown error is logged and nacked for a retry after a backoff, not dead-lettered", async () => {
    const queue = freshQueue();
    await client.enqueueBatch([
      { queue, jobType: "t", maxAttempts: 3 },
      { queue, jobType: "t", maxAttempts: 1, custom: { last: true } },
    ]);
    const { worker: w, logger, shutdown } = worker(queue);
    let calls = 0;
    await w
      .handle("t", () => {
        if (++calls === 2) shutdown();
        throw new Error("boom");
      })
      .run();
    assert.equal(logger.messages("error").filter((m) => m === "handler threw").length, 2);
    assert.equal(await hasReadyJob(queue), false); // the first job waits out its backoff
    const records = await client.drainDeadLetters({ queue, max: 10 });
    // Only the job on its last attempt is dead-lettered, by running out of attempts.
    assert.deepEqual(
      records.map((r) => [r.custom.last, r.lastReason]),
      [[true, "handler threw: boom"]],
    );
  });

  test("a job without a handler is nacked for a later retry; a catch-all takes it instead", async () => {
    const queue = freshQueue();
    await client.enqueue({ queue, jobType: "mystery", maxAttempts: 1 });
    const first = worker(queue);
    const running = first.worker.handle("known", () => {}).run();
    await first.logger.waitFor("warn", /no handler registered for job_type mystery/);
    first.shutdown();
    await running;
    const [record] = await client.drainDeadLetters({ queue, max: 10 });
    assert.equal(record?.lastReason, "no handler registered for job_type");

    // A queue of its own: a job enqueued right after the first worker's shutdown could otherwise go
    // to its cancelled reserve before the server has seen the cancellation.
    const other = freshQueue();
    await client.enqueue({ queue: other, jobType: "mystery" });
    const second = worker(other);
    const types: string[] = [];
    await second.worker
      .handle("known", () => {})
      .catchAll((_, ctx) => {
        types.push(ctx.jobType);
        second.shutdown();
      })
      .run();
    assert.deepEqual(types, ["mystery"]);
    assert.equal(await hasReadyJob(other), false);
  });

  test("no more than maxInFlight jobs are leased and handled at once", async () => {
    const queue = freshQueue();
    await client.enqueueBatch(Array.from({ length: 10 }, () => ({ queue, jobType: "t" })));
    const { worker: w, shutdown } = worker(queue, { maxInFlight: 3 });
    const release = deferred();
    const threeRunning = deferred();
    let running = 0;
    let most = 0;
    let handled = 0;
    const run = w
      .handle("t", async () => {
        running++;
        most = Math.max(most, running);
        if (running === 3) threeRunning.resolve();
        await release.promise;
        running--;
        if (++handled === 10) shutdown();
      })
      .run();
    await threeRunning.promise;
    // The Worker holds three leases; the other seven are still on the queue.
    const rest = await client.reserve({
      queues: [queue],
      leaseDuration: 30_000,
      maxJobs: 10,
      waitTimeout: 0,
    });
    assert.equal(rest?.length, 7);
    for (const job of rest ?? []) await client.nack(job.ctx);
    release.resolve();
    await run;
    assert.equal(most, 3);
    assert.equal(handled, 10);
  });

  test("autoExtend keeps the lease of a long handler alive", async () => {
    const queue = freshQueue();
    await client.enqueue({ queue, jobType: "slow" });
    const { worker: w, logger, shutdown } = worker(queue, { leaseDuration: 600, autoExtend: true });
    const attempts: number[] = [];
    await w
      .handle("slow", async (_, ctx) => {
        attempts.push(ctx.attempt);
        const granted = ctx.leaseExpiresAt;
        // Outlive the first lease several times over; the heartbeat extends it meanwhile.
        await logger.waitFor("debug", /lease extended/, 4);
        assert.ok(ctx.leaseExpiresAt > granted);
        assert.equal(ctx.signal.aborted, false);
        shutdown();
      })
      .run();
    assert.deepEqual(attempts, [1]);
    assert.deepEqual(logger.messages("error"), []);
    assert.equal(await hasReadyJob(queue), false);
  });

  test("a lost lease aborts ctx.signal, and the job is neither acked nor nacked", async () => {
    const queue = freshQueue();
    await client.enqueue({ queue, jobType: "t" });
    // The first heartbeat comes long after the lease ran out, so the job is redelivered first.
    const {
      worker: w,
      logger,
      shutdown,
    } = worker(queue, {
      leaseDuration: 300,
      autoExtend: true,
      autoExtendInterval: 2_000,
      maxInFlight: 2,
    });
    let reason: unknown;
    const attempts: number[] = [];
    await w
      .handle("t", async (_, ctx: JobCtx) => {
        attempts.push(ctx.attempt);
        if (ctx.attempt > 1) return; // the redelivery is acked
        await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
        reason = ctx.signal.reason;
        shutdown();
        // Returning normally now must not ack: the job is another attempt's.
      })
      .run();
    assert.deepEqual(attempts, [1, 2]);
    assert.ok(reason instanceof LeaseLostError, String(reason));
    assert.ok(logger.messages("error").some((m) => /^lease lost; handler aborted/.test(m)));
    assert.deepEqual(
      logger.messages("error").filter((m) => SETTLE_FAILURE.test(m)),
      [],
    );
  });

  test("shutdown stops reserving and waits for the jobs in flight", async () => {
    const queue = freshQueue();
    await client.enqueueBatch([1, 2].map(() => ({ queue, jobType: "t" })));
    // With both slots busy the Worker has no reserve pending, so the late job cannot be handed to
    // a reserve that shutdown is cancelling.
    const { worker: w, shutdown } = worker(queue, { maxInFlight: 2 });
    const release = deferred();
    const bothRunning = deferred();
    let started = 0;
    let finished = false;
    const run = w
      .handle("t", async () => {
        if (++started === 2) bothRunning.resolve();
        await release.promise;
      })
      .run()
      .then(() => {
        finished = true;
      });
    await bothRunning.promise;
    shutdown();
    await client.enqueue({ queue, jobType: "t", custom: { late: true } });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(finished, false); // two handlers are still running
    release.resolve();
    await run;
    assert.equal(started, 2);
    const left = await client.reserve({ queues: [queue], leaseDuration: 1_000, maxJobs: 10, waitTimeout: 0 });
    assert.deepEqual(
      left?.map((job) => job.ctx.custom),
      [{ late: true }],
    );
  });

  test("per-key limits hold each tenant's jobs to its limit, and the jobs behind them still run", async () => {
    // At most one leased job per tenant, two for acme. acme's jobs are enqueued first, so if the
    // jobs behind its held ones were not served, solo's and other's would never start.
    const queue = freshQueue();
    const keyed = await TestServer.start({
      tail:
        `[[queues]]\nname = ${JSON.stringify(queue)}\nlimit_key = "tenant"\nkey_max_in_flight = 1\n` +
        "[queues.key_overrides]\nacme = { max_in_flight = 2 }",
    });
    const keyedClient = await SeppClient.connect(keyed.addr);
    try {
      const limits: Record<string, number> = { acme: 2, solo: 1, other: 1 };
      const tenants = [...Array(4).fill("acme"), "solo", "other", "solo", "other", "solo", "other"];
      const results = await keyedClient.enqueueBatch(
        tenants.map((tenant) => ({ queue, jobType: "t", custom: { tenant } })),
      );
      const ids = results.map((result) =>
        "jobId" in result ? result.jobId : assert.fail(`rejected: ${result.kind}`),
      );
      const w = new Worker(keyedClient, {
        queues: [queue],
        leaseDuration: 30_000,
        waitTimeout: 1_000,
        maxInFlight: 8,
        logger: new RecordingLogger(),
      });
      const running: Record<string, number> = { acme: 0, solo: 0, other: 0 };
      const peak: Record<string, number> = { acme: 0, solo: 0, other: 0 };
      const atLimit = deferred(); // every tenant runs as many handlers as its limit allows
      const release = deferred();
      const finished: string[] = [];
      const run = w
        .handle("t", async (_payload, ctx) => {
          const tenant = String(ctx.custom.tenant);
          running[tenant] = (running[tenant] ?? 0) + 1;
          peak[tenant] = Math.max(peak[tenant] ?? 0, running[tenant]);
          if (Object.keys(limits).every((t) => running[t] === limits[t])) atLimit.resolve();
          await release.promise;
          running[tenant]--;
          finished.push(ctx.id);
          if (finished.length === tenants.length) w.shutdownHandle().shutdown();
        })
        .run();
      try {
        await within(atLimit.promise, "two acme, one solo and one other handler running at once");
        // The six jobs left are all held by their tenant's limit: not even a reserve of its own gets one.
        const extra = await keyedClient.reserve({
          queues: [queue],
          leaseDuration: 1_000,
          maxJobs: 10,
          waitTimeout: 0,
        });
        assert.equal(extra, null);
        release.resolve();
        await within(run, "every job handled");
      } finally {
        release.resolve();
        w.shutdownHandle().shutdown();
        await run;
      }
      assert.deepEqual(peak, limits);
      assert.deepEqual([...finished].sort(), [...ids].sort());
      assert.equal(
        await keyedClient.reserve({ queues: [queue], leaseDuration: 1_000, waitTimeout: 200 }),
        null,
      );
    } finally {
      keyedClient.close();
      await keyed.stop();
    }
  });

  test("a queue's max_in_flight holds across connections, and a waiting reserve gets the slot an ack frees", async () => {
    // The limit is the queue's, not a connection's: what one client holds counts against another.
    const queue = freshQueue();
    const limited = await TestServer.start({
      tail: `[[queues]]\nname = ${JSON.stringify(queue)}\nmax_in_flight = 2\n`,
    });
    const first = await SeppClient.connect(limited.addr);
    const second = await SeppClient.connect(limited.addr);
    try {
      const results = await first.enqueueBatch(Array.from({ length: 5 }, () => ({ queue, jobType: "t" })));
      for (const result of results) if (!("jobId" in result)) assert.fail(`rejected: ${result.kind}`);
      const many = { queues: [queue], leaseDuration: 30_000, maxJobs: 10, waitTimeout: 0 };
      const held = (await first.reserve(many)) ?? [];
      assert.equal(held.length, 2);
      assert.equal(await second.reserve(many), null);
      // A waiting reserve is served as soon as an ack frees a slot, with that one slot only.
      const polling = second.reserve({ ...many, waitTimeout: 15_000 });
      polling.catch(() => {}); // awaited below; this keeps a failure before then from going unhandled
      await first.ack(held[0]?.ctx ?? assert.fail("nothing reserved"));
      const freed = (await within(polling, "the long poll served after the ack")) ?? [];
      assert.equal(freed.length, 1);
      assert.ok(!held.some((job) => job.ctx.id === freed[0]?.ctx.id));
      assert.equal(await first.reserve(many), null); // two in flight again, one per client
    } finally {
      first.close();
      second.close();
      await limited.stop();
    }
  });

  test("a queue's rate_limit caps leases, not jobs in flight, and other queues in the reserve get past it", async () => {
    const limitedQueue = freshQueue();
    const other = freshQueue();
    const limited = await TestServer.start({
      tail:
        `[[queues]]\nname = ${JSON.stringify(limitedQueue)}\nrate_limit = 2\nrate_period_ms = 60000\nrate_burst = 2\n` +
        `[[queues]]\nname = ${JSON.stringify(other)}\n`,
    });
    const limitedClient = await SeppClient.connect(limited.addr);
    try {
      const results = await limitedClient.enqueueBatch([
        ...Array.from({ length: 4 }, () => ({ queue: limitedQueue, jobType: "t" })),
        ...Array.from({ length: 3 }, () => ({ queue: other, jobType: "t" })),
      ]);
      for (const result of results) if (!("jobId" in result)) assert.fail(`rejected: ${result.kind}`);
      const many = (...queues: string[]) => ({ queues, leaseDuration: 30_000, maxJobs: 10, waitTimeout: 0 });
      const leased = await limitedClient.reserve(many(limitedQueue));
      assert.equal(leased?.length, 2);
      for (const job of leased ?? []) await limitedClient.ack(job.ctx);
      // Nothing is in flight now, but both tokens of the period are spent.
      assert.equal(await limitedClient.reserve(many(limitedQueue)), null);
      // limitedQueue is listed first and still has two ready jobs; the reserve goes past it.
      const past = await limitedClient.reserve(many(limitedQueue, other));
      assert.deepEqual(
        past?.map((job) => job.ctx.queue),
        [other, other, other],
      );
      assert.equal(await limitedClient.reserve(many(limitedQueue)), null);
    } finally {
      limitedClient.close();
      await limited.stop();
    }
  });

  test("run() refuses to run twice at once", async () => {
    const { worker: w, shutdown } = worker(freshQueue());
    const running = w.catchAll(() => {}).run();
    await assert.rejects(w.run(), /already running/);
    shutdown();
    await running;
  });
});
