/**
 * Cancelling jobs against the real server: queued and scheduled jobs, leased jobs (their next ack,
 * nack or extend throws JobCancelledError), a Worker whose running handler is stopped, and the
 * errors of cancel itself. Every wait is on a signal (a handler call, a log line, run() resolving).
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";
import {
  DeadLetterCause,
  InvalidRequestError,
  JobCancelledError,
  type JobCtx,
  JobDeadLetteredError,
  JobNotFoundError,
  LeaseLostError,
  SeppClient,
  Worker,
} from "../../src/index.js";
import { deferred, freshQueue, RecordingLogger } from "../support/helpers.js";
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

async function reserveOne(queue: string, maxJobs = 1) {
  const jobs = await client.reserve({ queues: [queue], leaseDuration: 30_000, waitTimeout: 2_000, maxJobs });
  assert.ok(jobs !== null && jobs.length === maxJobs);
  return jobs;
}

async function nothingReady(queue: string): Promise<boolean> {
  return (await client.reserve({ queues: [queue], leaseDuration: 1_000, waitTimeout: 200 })) === null;
}

describe("cancel", () => {
  test("the server offers it", async () => {
    assert.ok((await client.getServerInfo()).features.includes("cancel"));
  });

  test("a queued job is dead-lettered at once, with the reason, and never reserved", async () => {
    const queue = freshQueue();
    const { jobId } = await client.enqueue({ queue, jobType: "t" });
    assert.deepEqual(await client.cancel(jobId, { reason: "no longer needed" }), { jobId, wasLeased: false });
    assert.ok(await nothingReady(queue));
    const records = await client.drainDeadLetters({ queue, max: 10 });
    assert.deepEqual(
      records.map((r) => [r.jobId, r.cause, r.lastReason]),
      [[jobId, DeadLetterCause.Cancelled, "no longer needed"]],
    );
  });

  test("a scheduled job can be cancelled without a reason", async () => {
    const queue = freshQueue();
    const { jobId } = await client.enqueue({
      queue,
      jobType: "t",
      scheduledAt: new Date(Date.now() + 3_600_000),
    });
    assert.equal((await client.cancel(jobId)).wasLeased, false);
    const records = await client.drainDeadLetters({ queue });
    assert.deepEqual(
      records.map((r) => [r.cause, r.lastReason]),
      [[DeadLetterCause.Cancelled, undefined]],
    );
  });

  test("a leased job refuses its next ack with JobCancelledError, and the one after with JobNotFoundError", async () => {
    const queue = freshQueue();
    const { jobId } = await client.enqueue({ queue, jobType: "t" });
    const [job] = await reserveOne(queue);
    assert.ok(job);
    assert.deepEqual(await client.cancel(jobId, { reason: "stop it" }), { jobId, wasLeased: true });
    assert.equal((await client.cancel(jobId)).wasLeased, true); // a repeated cancel of a leased job
    const first = await client.ack(job.ctx).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(first instanceof JobCancelledError, String(first));
    assert.match(first.message, /job was cancelled/);
    const second = await client.ack(job.ctx).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(second instanceof JobNotFoundError && !(second instanceof JobCancelledError), String(second));
    const records = await client.drainDeadLetters({ queue });
    assert.deepEqual(
      records.map((r) => [r.jobId, r.cause, r.lastReason]),
      [[jobId, DeadLetterCause.Cancelled, "stop it"]],
    );
    assert.ok(await nothingReady(queue));
  });

  test("extend and nack of a cancelled lease throw JobCancelledError too", async () => {
    const queue = freshQueue();
    await client.enqueueBatch([1, 2].map(() => ({ queue, jobType: "t" })));
    const [a, b] = await reserveOne(queue, 2);
    assert.ok(a && b);
    await client.cancel(a.ctx.id);
    await client.cancel(b.ctx.id);
    await assert.rejects(client.extend(a.ctx, 30_000), JobCancelledError);
    await assert.rejects(client.nack(b.ctx, { reason: "too late" }), JobCancelledError);
    const causes = (await client.drainDeadLetters({ queue, max: 10 })).map((r) => r.cause);
    assert.deepEqual(causes, [DeadLetterCause.Cancelled, DeadLetterCause.Cancelled]);
  });

  test("errors: a malformed id or a too long reason, an unknown or finished job, a dead letter", async () => {
    const queue = freshQueue();
    await assert.rejects(client.cancel("not-a-uuid"), InvalidRequestError);
    await assert.rejects(client.cancel(""), InvalidRequestError);
    const unknown = await client.cancel(randomUUID()).then(
      () => undefined,
      (error: unknown) => error,
    );
    assert.ok(
      unknown instanceof JobNotFoundError && !(unknown instanceof JobCancelledError),
      String(unknown),
    );
    const { jobId } = await client.enqueue({ queue, jobType: "t" });
    await assert.rejects(client.cancel(jobId, { reason: "r".repeat(1025) }), InvalidRequestError);
    await client.cancel(jobId, { reason: "r".repeat(1024) });
    await assert.rejects(client.cancel(jobId), JobDeadLetteredError);
    const done = await client.enqueue({ queue, jobType: "t" });
    const [job] = await reserveOne(queue);
    assert.ok(job);
    await client.ack(job.ctx);
    await assert.rejects(client.cancel(done.jobId), JobNotFoundError);
  });

  test("without dead-letter retention a cancelled job is simply gone", async () => {
    const plain = await TestServer.start({
      storage: 'persist_mode = "buffer"\ndead_letter_retention_ms = 0',
    });
    const other = await SeppClient.connect(plain.addr);
    try {
      const queue = freshQueue();
      const { jobId } = await other.enqueue({ queue, jobType: "t" });
      assert.equal((await other.cancel(jobId)).wasLeased, false);
      assert.deepEqual(await other.drainDeadLetters({ queue }), []);
      assert.equal(await other.reserve({ queues: [queue], leaseDuration: 1_000, waitTimeout: 200 }), null);
      await assert.rejects(other.cancel(jobId), JobNotFoundError);
    } finally {
      other.close();
      await plain.stop();
    }
  });
});

describe("a Worker and a cancelled job", () => {
  /** Records the Worker's acks and nacks and their outcomes (until `restore()`). */
  function recordSettlements(target: SeppClient) {
    const calls: Array<[string, unknown]> = [];
    const settled = deferred();
    const ack = target.ack.bind(target);
    const nack = target.nack.bind(target);
    const record = (operation: string, outcome: unknown) => {
      calls.push([operation, outcome]);
      settled.resolve();
    };
    target.ack = async (ctx) => {
      try {
        await ack(ctx);
      } catch (error) {
        record("ack", error);
        throw error;
      }
      record("ack", undefined);
    };
    target.nack = async (ctx, options) => {
      try {
        const dead = await nack(ctx, options);
        record("nack", undefined);
        return dead;
      } catch (error) {
        record("nack", error);
        throw error;
      }
    };
    const restore = () => {
      // Own properties shadow the prototype's methods; deleting them restores those.
      delete (target as { ack?: unknown }).ack;
      delete (target as { nack?: unknown }).nack;
    };
    return { calls, settled: settled.promise, restore };
  }

  test("with autoExtend, cancelling aborts ctx.signal and the job is neither acked nor nacked", async () => {
    const queue = freshQueue();
    const { jobId } = await client.enqueue({ queue, jobType: "t" });
    const logger = new RecordingLogger();
    const recorded = recordSettlements(client);
    const worker = new Worker(client, {
      queues: [queue],
      leaseDuration: 30_000,
      waitTimeout: 1_000,
      autoExtend: true,
      autoExtendInterval: 100,
      logger,
    });
    const started = deferred<JobCtx>();
    let reason: unknown;
    let calls = 0;
    worker.handle("t", async (_, ctx) => {
      calls += 1;
      started.resolve(ctx);
      await new Promise((resolve) => ctx.signal.addEventListener("abort", resolve, { once: true }));
      reason = ctx.signal.reason;
      worker.shutdownHandle().shutdown();
      // Returning normally now must not ack: the job was cancelled.
    });
    try {
      const running = worker.run();
      await started.promise;
      assert.equal((await client.cancel(jobId, { reason: "from the test" })).wasLeased, true);
      await running;
    } finally {
      recorded.restore();
    }
    assert.equal(calls, 1);
    assert.ok(reason instanceof LeaseLostError, String(reason));
    assert.ok(reason.cause instanceof JobCancelledError, String(reason.cause));
    assert.ok(logger.messages("warn").some((m) => /^job cancelled; handler aborted/.test(m)));
    assert.deepEqual(
      logger.messages("error").filter((m) => /lease lost/.test(m)),
      [],
    );
    assert.deepEqual(recorded.calls, []);
    const records = await client.drainDeadLetters({ queue });
    assert.deepEqual(
      records.map((r) => [r.cause, r.lastReason]),
      [[DeadLetterCause.Cancelled, "from the test"]],
    );
  });

  test("reserving without autoExtend, the ack after a cancel is refused and logged as a cancellation", async () => {
    const queue = freshQueue();
    const { jobId } = await client.enqueue({ queue, jobType: "t" });
    const logger = new RecordingLogger();
    const recorded = recordSettlements(client);
    // The reserve loop: nothing tells the handler of the cancel (a stream would; see stream.test.ts).
    const worker = new Worker(client, {
      queues: [queue],
      leaseDuration: 30_000,
      waitTimeout: 1_000,
      logger,
      streaming: false,
    });
    const started = deferred();
    const release = deferred();
    worker.handle("t", async () => {
      started.resolve();
      await release.promise;
    });
    try {
      const running = worker.run();
      await started.promise;
      assert.equal((await client.cancel(jobId)).wasLeased, true);
      release.resolve();
      await recorded.settled;
      worker.shutdownHandle().shutdown();
      await running;
    } finally {
      recorded.restore();
    }
    assert.equal(recorded.calls.length, 1);
    const [operation, outcome] = recorded.calls[0] ?? [];
    assert.equal(operation, "ack");
    assert.ok(outcome instanceof JobCancelledError, String(outcome));
    assert.ok(logger.messages("warn").some((m) => /^job cancelled: ack refused/.test(m)));
    assert.deepEqual(
      logger.messages("error").filter((m) => /^(ack|nack) failed/.test(m)),
      [],
    );
  });
});
