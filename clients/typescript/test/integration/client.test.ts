/** Every client method against the real server: producer, consumer, server info and dead letters. */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  AttemptMismatchError,
  BatchValidationError,
  ConnectError,
  DeadLetterCause,
  describeJobRejection,
  EmptyBatchError,
  isJobRejection,
  JobCancelledError,
  JobNotFoundError,
  JobRejectedError,
  OverloadedError,
  Payload,
  Priority,
  RetryDirective,
  SeppClient,
  TransportError,
  ValidationError,
} from "../../src/index.js";
import { freshQueue, RecordingLogger } from "../support/helpers.js";
import { TestServer } from "../support/server.js";

let server: TestServer;
let client: SeppClient;
const logger = new RecordingLogger();

before(async () => {
  server = await TestServer.start();
  client = await SeppClient.connect(server.addr, { logger });
});

after(async () => {
  client?.close();
  await server?.stop();
});

/** Reserves the one job of `queue` (failing the test if there is none). */
async function reserveOne(queue: string, leaseDuration = 30_000) {
  const jobs = await client.reserve({ queues: [queue], leaseDuration, waitTimeout: 5_000 });
  assert.ok(jobs, `no job on ${queue}`);
  assert.equal(jobs.length, 1);
  return jobs[0] as NonNullable<typeof jobs>[number];
}

describe("connecting", () => {
  test("host:port and http:// addresses connect, and close() ends the connection", async () => {
    for (const addr of [server.addr, `http://${server.addr}`]) {
      const other = await SeppClient.connect(addr, { logger });
      assert.equal((await other.getServerInfo()).supportedProtocolVersions.includes("v1"), true);
      other.close();
      await assert.rejects(other.getServerInfo(), TransportError);
    }
    assert.ok(logger.messages("info").includes("connected to the sepp server"));
  });

  test("a refused connection fails at once with its root cause", async () => {
    const closed = await TestServer.start();
    const addr = closed.addr;
    await closed.stop();
    await assert.rejects(SeppClient.connect(addr, { connectTimeout: 30_000 }), (error: unknown) => {
      assert.ok(error instanceof ConnectError);
      assert.equal(error.addr, addr);
      assert.match(error.reason, /ECONNREFUSED/);
      return true;
    });
  });
});

describe("enqueue", () => {
  test("a job with every option arrives as it was sent", async () => {
    const queue = freshQueue();
    const ack = await client.enqueue({
      queue,
      jobType: "send_welcome",
      payload: Payload.json({ to: "a@b.com" }),
      idempotencyKey: `welcome-${queue}`,
      priority: Priority.P7,
      maxAttempts: 5,
      custom: { tenant: "acme", attemptBudget: 3, ratio: 0.5, vip: true, big: 2n ** 60n },
    });
    assert.equal(ack.deduplicated, false);
    const { payload, ctx } = await reserveOne(queue);
    assert.equal(ctx.id, ack.jobId);
    assert.equal(ctx.queue, queue);
    assert.equal(ctx.jobType, "send_welcome");
    assert.equal(ctx.priority, 7);
    assert.equal(ctx.attempt, 1);
    assert.equal(ctx.maxAttempts, 5);
    assert.deepEqual(ctx.custom, { tenant: "acme", attemptBudget: 3, ratio: 0.5, vip: true, big: 2n ** 60n });
    assert.deepEqual(payload?.json(), { to: "a@b.com" });
    assert.equal(payload?.encoding, "application/json");
    assert.ok(ctx.enqueuedAt instanceof Date && ctx.leaseExpiresAt > ctx.enqueuedAt);
    assert.equal(ctx.scheduledAt, undefined);
    await client.ack(ctx);
  });

  test("an idempotency key deduplicates", async () => {
    const queue = freshQueue();
    const job = { queue, jobType: "t", idempotencyKey: "once" };
    const first = await client.enqueue(job);
    const second = await client.enqueue(job);
    assert.deepEqual(second, { jobId: first.jobId, deduplicated: true });
  });

  test("higher priorities are reserved first", async () => {
    const queue = freshQueue();
    const low = await client.enqueue({ queue, jobType: "t", priority: 1 });
    const high = await client.enqueue({ queue, jobType: "t", priority: 9 });
    const jobs = await client.reserve({ queues: [queue], leaseDuration: 30_000, maxJobs: 2 });
    assert.deepEqual(
      jobs?.map((job) => job.ctx.id),
      [high.jobId, low.jobId],
    );
  });

  test("a scheduled job waits for its time", async () => {
    const queue = freshQueue();
    const scheduledAt = new Date(Date.now() + 1_000);
    const ack = await client.enqueue({ queue, jobType: "t", scheduledAt, payload: Payload.text("later") });
    assert.equal(await client.reserve({ queues: [queue], leaseDuration: 30_000, waitTimeout: 0 }), null);
    const { ctx, payload } = await reserveOne(queue);
    assert.equal(ctx.id, ack.jobId);
    assert.equal(ctx.scheduledAt?.getTime(), scheduledAt.getTime());
    assert.equal(payload?.text(), "later");
  });

  test("a rejection throws JobRejectedError; bad input throws before any call", async () => {
    await assert.rejects(client.enqueue({ queue: "q".repeat(600), jobType: "t" }), (error: unknown) => {
      assert.ok(error instanceof JobRejectedError);
      assert.equal(error.rejection.kind, "queueNameTooLong");
      return true;
    });
    await assert.rejects(client.enqueue({ queue: "q", jobType: "t", priority: 10 }), ValidationError);
    await assert.rejects(client.enqueueBatch([]), EmptyBatchError);
    await assert.rejects(client.enqueueAtomic([]), EmptyBatchError);
  });

  test("a best-effort batch answers each job in order, rejections as values", async () => {
    const queue = freshQueue();
    const results = await client.enqueueBatch([
      { queue, jobType: "send_welcome" },
      { queue, jobType: "t", payload: Payload.bytes(new Uint8Array(2 * 1024 * 1024)) },
      { queue, jobType: "send_receipt" },
    ]);
    assert.equal(results.length, 3);
    assert.ok(!isJobRejection(results[0]) && !isJobRejection(results[2]));
    const rejection = results[1];
    assert.ok(isJobRejection(rejection));
    assert.equal(rejection.kind, "payloadTooLarge");
    assert.match(describeJobRejection(rejection), /payload too large: 2097152 bytes, limit 1048576/);
  });

  test("an atomic batch is all or nothing", async () => {
    const queue = freshQueue();
    const acks = await client.enqueueAtomic([
      { queue, jobType: "step_1" },
      { queue, jobType: "step_2" },
    ]);
    assert.equal(acks.length, 2);
    await assert.rejects(
      client.enqueueAtomic([
        { queue, jobType: "step_3" },
        { queue, jobType: "j".repeat(300) },
      ]),
      (error: unknown) => {
        assert.ok(error instanceof BatchValidationError);
        assert.deepEqual(
          error.errors.map((e) => [e.index, e.rejection.kind]),
          [[1, "jobTypeNameTooLong"]],
        );
        return true;
      },
    );
    const jobs = await client.reserve({
      queues: [queue],
      leaseDuration: 30_000,
      maxJobs: 10,
      waitTimeout: 0,
    });
    assert.deepEqual(jobs?.map((job) => job.ctx.jobType).sort(), ["step_1", "step_2"]);
  });
});

describe("reserve, ack, nack and extend", () => {
  test("an empty poll resolves with null", async () => {
    const queue = freshQueue();
    assert.equal(await client.reserve({ queues: [queue], leaseDuration: 1_000, waitTimeout: 0 }), null);
    assert.equal(await client.reserve({ queues: [queue], leaseDuration: 1_000, waitTimeout: 50 }), null);
  });

  test("reserve takes up to maxJobs from the first queue that has jobs", async () => {
    const [empty, full] = [freshQueue(), freshQueue()];
    await client.enqueueBatch([1, 2, 3].map(() => ({ queue: full, jobType: "t" })));
    const jobs = await client.reserve({
      queues: [empty, full],
      leaseDuration: 30_000,
      maxJobs: 2,
      workerId: "w-7",
    });
    assert.equal(jobs?.length, 2);
    assert.equal(jobs?.[0]?.ctx.workerId, "w-7");
    assert.equal(jobs?.[0]?.ctx.queue, full);
  });

  test("bad reserve options are refused before any call", async () => {
    await assert.rejects(client.reserve({ queues: [], leaseDuration: 1 }), /at least one queue/);
    await assert.rejects(client.reserve({ queues: ["a", ""], leaseDuration: 1 }), /index 1 is empty/);
    await assert.rejects(client.reserve({ queues: ["a"], leaseDuration: 0 }), ValidationError);
    await assert.rejects(client.reserve({ queues: ["a"], leaseDuration: 1, maxJobs: 0 }), ValidationError);
    await assert.rejects(client.reserve({ queues: ["a"], leaseDuration: 1, workerId: "" }), ValidationError);
  });

  test("an aborted signal cancels a waiting reserve", async () => {
    const controller = new AbortController();
    const waiting = client.reserve({
      queues: [freshQueue()],
      leaseDuration: 1_000,
      signal: controller.signal,
    });
    controller.abort();
    await assert.rejects(waiting, TransportError);
  });

  test("ack deletes the job; a second ack finds nothing", async () => {
    const queue = freshQueue();
    await client.enqueue({ queue, jobType: "t" });
    const { ctx } = await reserveOne(queue);
    await client.ack(ctx);
    await assert.rejects(client.ack(ctx), JobNotFoundError);
    assert.equal(await client.reserve({ queues: [queue], leaseDuration: 1_000, waitTimeout: 0 }), null);
  });

  test("nack retries under the queue policy, after a delay, or dead-letters", async () => {
    const queue = freshQueue();
    await client.enqueue({ queue, jobType: "t" });
    const first = await reserveOne(queue);
    assert.equal(
      await client.nack(first.ctx, { retry: RetryDirective.default(), reason: "try again" }),
      false,
    );
    const second = await reserveOne(queue);
    assert.equal(second.ctx.attempt, 2);
    assert.equal(await client.nack(second.ctx, { retry: RetryDirective.after(60_000) }), false);
    assert.equal(await client.reserve({ queues: [queue], leaseDuration: 1_000, waitTimeout: 0 }), null);

    const other = freshQueue();
    await client.enqueue({ queue: other, jobType: "t", maxAttempts: 5 });
    const doomed = await reserveOne(other);
    assert.equal(
      await client.nack(doomed.ctx, { retry: RetryDirective.deadLetter(), reason: "bad input" }),
      true,
    );
    const [record] = await client.drainDeadLetters({ queue: other, max: 10 });
    assert.equal(record?.jobId, doomed.ctx.id);
    assert.equal(record?.lastReason, "bad input");
  });

  test("nack of the last attempt reports the dead letter", async () => {
    const queue = freshQueue();
    await client.enqueue({ queue, jobType: "t", maxAttempts: 1 });
    const { ctx } = await reserveOne(queue);
    assert.equal(await client.nack(ctx, { reason: "failed" }), true);
  });

  test("extend moves the lease, through the client or the context", async () => {
    const queue = freshQueue();
    await client.enqueue({ queue, jobType: "t" });
    const { ctx } = await reserveOne(queue, 5_000);
    const granted = ctx.leaseExpiresAt;
    const extended = await ctx.extend(120_000);
    assert.ok(extended > granted);
    assert.deepEqual(ctx.leaseExpiresAt, extended);
    const again = await client.extend(ctx, 60_000);
    assert.deepEqual(ctx.leaseExpiresAt, again);
    await client.ack(ctx);
    await assert.rejects(ctx.extend(1_000), JobNotFoundError);
    await assert.rejects(ctx.extend(0), ValidationError);
  });

  test("acks made together share an AckBatch call, and each gets its own outcome", async () => {
    const queue = freshQueue();
    const stale = freshQueue();
    await client.enqueue({ queue: stale, jobType: "t" });
    const expired = await reserveOne(stale, 100);
    // The lease expires, and the job comes back as attempt 2.
    const current = await reserveOne(stale);
    await client.enqueueBatch([1, 2, 3, 4].map(() => ({ queue, jobType: "t" })));
    const jobs = await client.reserve({ queues: [queue], leaseDuration: 30_000, maxJobs: 4 });
    assert.equal(jobs?.length, 4);
    type Reserved = NonNullable<typeof jobs>[number];
    const [done, fine, cancelled, alsoFine] = jobs as [Reserved, Reserved, Reserved, Reserved];
    await client.ack(done.ctx);
    assert.equal((await client.cancel(cancelled.ctx.id)).wasLeased, true);
    const outcomes = await Promise.allSettled([
      client.ack(done.ctx),
      client.ack(fine.ctx),
      client.ack(cancelled.ctx),
      client.ack(expired.ctx),
      client.ack(alsoFine.ctx),
      client.ack(current.ctx),
    ]);
    const reason = (index: number) => {
      const outcome = outcomes[index];
      assert.equal(outcome?.status, "rejected", `outcome ${index}`);
      return outcome.reason as unknown;
    };
    assert.ok(reason(0) instanceof JobNotFoundError && !(reason(0) instanceof JobCancelledError));
    assert.equal(outcomes[1]?.status, "fulfilled");
    assert.ok(reason(2) instanceof JobCancelledError);
    assert.ok(reason(3) instanceof AttemptMismatchError);
    assert.equal(outcomes[4]?.status, "fulfilled");
    assert.equal(outcomes[5]?.status, "fulfilled");
    assert.equal(
      await client.reserve({ queues: [queue, stale], leaseDuration: 1_000, waitTimeout: 0 }),
      null,
    );
  });

  test("a stale attempt is refused with AttemptMismatchError", async () => {
    const queue = freshQueue();
    await client.enqueue({ queue, jobType: "t" });
    const stale = await reserveOne(queue, 100);
    // The lease expires, and the job comes back as attempt 2.
    const current = await reserveOne(queue);
    assert.equal(current.ctx.attempt, 2);
    await assert.rejects(client.ack(stale.ctx), AttemptMismatchError);
    await assert.rejects(client.nack(stale.ctx), AttemptMismatchError);
    await assert.rejects(stale.ctx.extend(1_000), AttemptMismatchError);
    await client.ack(current.ctx);
  });

  test("a response over maxReceiveMessageBytes fails on the client", async () => {
    const queue = freshQueue();
    const small = await SeppClient.connect(server.addr, { maxReceiveMessageBytes: 64 * 1024 });
    await small.enqueue({ queue, jobType: "t", payload: Payload.bytes(new Uint8Array(200 * 1024).fill(7)) });
    await assert.rejects(small.reserve({ queues: [queue], leaseDuration: 1_000 }), OverloadedError);
    small.close();
  });
});

describe("server info and dead letters", () => {
  test("getServerInfo returns the server's limits", async () => {
    const info = await client.getServerInfo();
    assert.ok(info.version.length > 0);
    assert.ok(info.serverTime instanceof Date);
    assert.equal(info.maxPayloadBytes, 1_048_576);
    assert.equal(info.maxReserveBatch, 256);
    assert.equal(info.maxLeaseDuration, 300_000);
    assert.equal(info.maxScheduleHorizon, 30 * 24 * 3600 * 1000);
    assert.equal(info.strictQueues, false);
    assert.equal(info.deadLetterRetentionEnabled, true);
    assert.deepEqual(info.features, [
      "ack_batch",
      "cancel",
      "schedules",
      "pause",
      "in_flight_limits",
      "rate_limits",
      "key_limits",
      "consume",
    ]);
    assert.equal(info.maxConsumeCredits, 10_000);
    assert.equal(info.cluster, undefined); // a single node
  });

  test("drained records replay through toEnqueueRequest", async () => {
    const queue = freshQueue();
    await client.enqueue({
      queue,
      jobType: "send_welcome",
      payload: Payload.json({ user: 1 }),
      priority: 4,
      custom: { tenant: "acme" },
      idempotencyKey: `dl-${queue}`,
    });
    const { ctx } = await reserveOne(queue);
    await client.nack(ctx, { retry: RetryDirective.deadLetter(), reason: "broken" });
    assert.deepEqual(await client.drainDeadLetters({ queue, max: 0 }), []);
    const records = await client.drainDeadLetters({ queue, max: 100 });
    assert.equal(records.length, 1);
    const record = records[0];
    assert.ok(record);
    assert.equal(record.cause, DeadLetterCause.Rejected);
    assert.equal(record.finalAttempt, 1);
    assert.ok(record.failedAt instanceof Date);
    assert.deepEqual(await client.drainDeadLetters({ queue, max: 100 }), []); // draining removed it
    await client.enqueue(record.toEnqueueRequest()); // no idempotency key: a fresh job
    const replay = await reserveOne(queue);
    assert.notEqual(replay.ctx.id, ctx.id);
    assert.deepEqual(replay.payload?.json(), { user: 1 });
    assert.equal(replay.ctx.priority, 4);
    assert.deepEqual(replay.ctx.custom, { tenant: "acme" });
  });

  test("max 0 makes no call at all", async () => {
    const closed = await SeppClient.connect(server.addr);
    closed.close();
    assert.deepEqual(await closed.drainDeadLetters({ max: 0 }), []);
    await assert.rejects(closed.drainDeadLetters({ max: 1 }), TransportError);
  });
});
