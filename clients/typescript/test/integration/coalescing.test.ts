/**
 * Enqueue coalescing against the real server: concurrent enqueues share `EnqueueBatch` calls (counted
 * by the server's own `sepp.requests` metric on its Prometheus endpoint) while every caller gets
 * exactly its own results and errors; a lone caller's enqueue goes out on its own; a server with a
 * lower batch limit sees each caller's own call; `coalesceEnqueues: false` turns it off.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  type EnqueueAck,
  type EnqueueRequest,
  InvalidRequestError,
  JobRejectedError,
  type JobRejection,
  SeppClient,
} from "../../src/index.js";
import { freshQueue } from "../support/helpers.js";
import { PROMETHEUS, TestServer } from "../support/server.js";

const QUEUE = freshQueue("strict");

let server: TestServer;
let client: SeppClient;

before(async () => {
  server = await TestServer.start({
    tail: `${PROMETHEUS}\n[[queues]]\nname = ${JSON.stringify(QUEUE)}\nallowed_job_types = ["ok"]\n`,
  });
  client = await SeppClient.connect(server.addr);
});

after(async () => {
  client?.close();
  await server?.stop();
});

/** The EnqueueBatch calls the server counts while `work` runs. */
async function enqueueCalls(work: () => Promise<unknown>): Promise<number> {
  const before = await server.requestCount("EnqueueBatch");
  await work();
  return (await server.requestCount("EnqueueBatch")) - before;
}

describe("enqueue coalescing", () => {
  test("concurrent enqueues share calls; each caller gets its own results and errors", async () => {
    // Accepted and rejected jobs interleaved, with and without idempotency keys (separate lanes).
    const jobs: EnqueueRequest[] = Array.from({ length: 60 }, (_, n) => ({
      queue: QUEUE,
      jobType: n % 3 === 0 ? "forbidden" : "ok",
      custom: { n },
      idempotencyKey: n % 2 === 0 ? `key-${n}-${QUEUE}` : undefined,
    }));
    let singles: PromiseSettledResult<EnqueueAck>[] = [];
    let batches: (EnqueueAck | JobRejection)[][] = [];
    const calls = await enqueueCalls(async () => {
      const batchJobs = [jobs.slice(0, 3), jobs.slice(3, 5)];
      const [one, many] = await Promise.all([
        Promise.allSettled(jobs.slice(5).map((job) => client.enqueue(job))),
        Promise.all(batchJobs.map((batch) => client.enqueueBatch(batch))),
      ]);
      singles = one;
      batches = many;
    });
    // Two lanes, one turn: far fewer calls than the 57 callers.
    assert.ok(calls >= 1 && calls < 10, `${calls} EnqueueBatch calls for 57 callers`);
    // One outcome per job, in job order: an ack, or the rejection (a value, or thrown by enqueue).
    const outcomes = [...batches.flat(), ...singles].map((outcome): EnqueueAck | JobRejection => {
      if (!("status" in outcome)) return outcome;
      if (outcome.status === "fulfilled") return outcome.value;
      assert.ok(outcome.reason instanceof JobRejectedError, String(outcome.reason));
      return outcome.reason.rejection;
    });
    assert.equal(outcomes.length, jobs.length);
    const ids = new Map<string, number>();
    outcomes.forEach((outcome, n) => {
      if (n % 3 === 0) assert.equal("kind" in outcome && outcome.kind, "jobTypeNotAllowed", `job ${n}`);
      else if ("jobId" in outcome) ids.set(outcome.jobId, n);
      else assert.fail(`job ${n} rejected: ${outcome.kind}`);
    });
    assert.equal(ids.size, 40);
    // Each accepted job is the one its caller sent: its custom field says which.
    const leased = await client.reserve({
      queues: [QUEUE],
      leaseDuration: 30_000,
      maxJobs: 100,
      waitTimeout: 0,
    });
    assert.equal(leased?.length, 40);
    for (const job of leased ?? []) {
      assert.equal(ids.get(job.ctx.id), Number(job.ctx.custom.n));
      await client.ack(job.ctx);
    }
  });

  test("a lone enqueue is one call of its own", async () => {
    const queue = freshQueue();
    let ack: EnqueueAck | undefined;
    const calls = await enqueueCalls(async () => {
      ack = await client.enqueue({ queue, jobType: "t" });
    });
    assert.equal(calls, 1);
    const jobs = await client.reserve({ queues: [queue], leaseDuration: 30_000, waitTimeout: 0 });
    assert.equal(jobs?.[0]?.ctx.id, ack?.jobId);
  });

  test("coalesceEnqueues: false sends every enqueue on its own call", async () => {
    const own = await SeppClient.connect(server.addr, { coalesceEnqueues: false });
    try {
      const queue = freshQueue();
      const calls = await enqueueCalls(() =>
        Promise.all(Array.from({ length: 8 }, () => own.enqueue({ queue, jobType: "t" }))),
      );
      assert.equal(calls, 8);
    } finally {
      own.close();
    }
    await assert.rejects(
      SeppClient.connect(server.addr, { coalesceEnqueues: "no" as never }),
      /coalesceEnqueues/,
    );
  });
});

describe("enqueue coalescing and a server's lower batch limit", () => {
  test("a shared call the server refuses as a whole is resent per caller", async () => {
    const small = await TestServer.start({ tail: "[limits]\nmax_enqueue_batch = 4\n" });
    const smallClient = await SeppClient.connect(small.addr);
    try {
      const queue = freshQueue();
      // Ten lone enqueues of one turn (one shared call of 10, refused), and a batch of 5 (too many on its own).
      const [singles, tooMany] = await Promise.all([
        Promise.allSettled(Array.from({ length: 10 }, () => smallClient.enqueue({ queue, jobType: "t" }))),
        smallClient.enqueueBatch(Array.from({ length: 5 }, () => ({ queue, jobType: "t" }))).then(
          () => assert.fail("a batch over the server's limit was accepted"),
          (error: unknown) => error,
        ),
      ]);
      for (const single of singles)
        assert.equal(single.status, "fulfilled", String((single as { reason?: unknown }).reason));
      assert.ok(tooMany instanceof InvalidRequestError, String(tooMany));
      const jobs = await smallClient.reserve({
        queues: [queue],
        leaseDuration: 30_000,
        maxJobs: 20,
        waitTimeout: 0,
      });
      assert.equal(jobs?.length, 10);
    } finally {
      smallClient.close();
      await small.stop();
    }
  });
});
