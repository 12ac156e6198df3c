/**
 * What the client puts on the wire and how it reacts to failures the real server cannot be made to
 * produce on demand: a stand-in QueueService records metadata and deadlines, fails with chosen
 * statuses (to exercise the retry policy), answers with malformed data, or never answers.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { status } from "@grpc/grpc-js";
import * as wire from "../../src/gen/sepp/v1/queue.js";
import {
  ALL_QUEUES,
  AttemptMismatchError,
  BatchResultCountMismatchError,
  InvalidRequestError,
  JobCancelledError,
  JobNotFoundError,
  MalformedResponseError,
  RetryPolicy,
  ScheduleLimitError,
  SeppClient,
  ServerInternalError,
  TransportError,
  UnexpectedStatusError,
  UnknownQueuesError,
  ValidationError,
  VERSION,
  Worker,
} from "../../src/index.js";
import { RecordingLogger } from "../support/helpers.js";
import { type MethodName, type StubAnswer, StubServer } from "../support/stub-server.js";

const stubs: StubServer[] = [];
after(() => {
  for (const stub of stubs) stub.stop();
});

async function stub(answers: Partial<Record<MethodName, (request: unknown) => StubAnswer>>) {
  const server = await StubServer.start(answers);
  stubs.push(server);
  return server;
}

const retrying = new RetryPolicy({ maxAttempts: 3, initialBackoff: 1, maxBackoff: 2 });
const fail = (code: status) => () => ({ code });

const job = (overrides: Partial<wire.Job> = {}): wire.Job => ({
  id: "job-1",
  jobType: "t",
  payload: undefined,
  priority: 0,
  traceContext: undefined,
  enqueuedAt: { seconds: 100n, nanos: 0 },
  attempt: 1,
  maxAttempts: 3,
  leaseExpiresAt: { seconds: BigInt(Math.floor(Date.now() / 1000) + 60), nanos: 0 },
  custom: {},
  scheduledAt: undefined,
  queue: "q",
  ...overrides,
});

describe("metadata and deadlines", () => {
  test("every call carries the user agent and the API key; unary calls get rpcTimeout, reserve its wait + 10 s", async () => {
    const server = await stub({
      getServerInfo: fail(status.UNIMPLEMENTED),
      reserve: () => ({ response: { jobs: [] } }),
    });
    const logger = new RecordingLogger();
    const client = await SeppClient.connect(server.addr, { apiKey: "secret-key", rpcTimeout: 7_000, logger });
    assert.ok(logger.messages("warn").some((message) => /API key configured without TLS/.test(message)));
    const before = Date.now();
    await assert.rejects(client.getServerInfo(), /UNIMPLEMENTED/);
    assert.equal(await client.reserve({ queues: ["q"], leaseDuration: 1_000, waitTimeout: 20_000 }), null);
    const [info, reserve] = server.calls;
    assert.ok(info && reserve);
    for (const call of [info, reserve]) {
      assert.match(
        String(call.metadata.get("user-agent")[0]),
        new RegExp(`^sepp-js/${VERSION.replace(/\./g, "\\.")}`),
      );
      assert.deepEqual(call.metadata.get("authorization"), ["Bearer secret-key"]);
    }
    const remaining = (deadline: unknown) => new Date(deadline as Date).getTime() - before;
    assert.ok(Math.abs(remaining(info.deadline) - 7_000) < 2_000, String(remaining(info.deadline)));
    assert.ok(Math.abs(remaining(reserve.deadline) - 30_000) < 2_000, String(remaining(reserve.deadline)));
    const request = reserve.request as wire.ReserveRequest;
    assert.deepEqual(request.waitTimeout, { seconds: 20n, nanos: 0 });
    assert.deepEqual(request.leaseDuration, { seconds: 1n, nanos: 0 });
    client.close();
  });

  test("a call that gets no answer fails when its deadline passes", async () => {
    const server = await stub({ getServerInfo: () => "hang" });
    const client = await SeppClient.connect(server.addr, { rpcTimeout: 200 });
    await assert.rejects(client.getServerInfo(), (error: unknown) => {
      assert.ok(error instanceof TransportError);
      assert.equal(error.code, status.DEADLINE_EXCEEDED);
      return true;
    });
    client.close();
  });
});

describe("cancellation", () => {
  test("a reserve aborted as soon as it is made is cancelled on the server as well", async () => {
    // grpc-js still starts a call that was cancelled before its stream existed; a reserve left
    // parked that way would take the next job and strand it under its lease.
    const server = await stub({ reserve: () => "hang" });
    const client = await SeppClient.connect(server.addr);
    const controller = new AbortController();
    const waiting = client.reserve({
      queues: ["q"],
      leaseDuration: 1_000,
      waitTimeout: 300_000,
      signal: controller.signal,
    });
    controller.abort();
    await assert.rejects(waiting, TransportError);
    await server.waitForCalls("reserve");
    await server.callsOf("reserve")[0]?.cancelled; // never, if the stream were left open (its deadline is 310 s)
    client.close();
  });
});

describe("the retry policy on the wire", () => {
  test("transient failures are retried up to maxAttempts; the default policy makes one attempt", async () => {
    const server = await stub({ getServerInfo: fail(status.UNAVAILABLE), ack: fail(status.UNAVAILABLE) });
    const client = await SeppClient.connect(server.addr, { retryPolicy: retrying });
    await assert.rejects(client.getServerInfo(), TransportError);
    assert.equal(server.callsOf("getServerInfo").length, 3);
    const plain = await SeppClient.connect(server.addr);
    await assert.rejects(plain.getServerInfo(), TransportError);
    assert.equal(server.callsOf("getServerInfo").length, 4);
    client.close();
    plain.close();
  });

  test("permanent failures are not retried", async () => {
    const server = await stub({ getServerInfo: fail(status.INTERNAL) });
    const client = await SeppClient.connect(server.addr, { retryPolicy: retrying });
    await assert.rejects(client.getServerInfo(), ServerInternalError);
    assert.equal(server.callsOf("getServerInfo").length, 1);
    client.close();
  });

  test("an enqueue with a keyless job does not retry ambiguous failures; a fully keyed one does", async () => {
    const server = await stub({ enqueueBatch: fail(status.DEADLINE_EXCEEDED) });
    const client = await SeppClient.connect(server.addr, { retryPolicy: retrying });
    await assert.rejects(
      client.enqueueBatch([
        { queue: "q", jobType: "t", idempotencyKey: "k" },
        { queue: "q", jobType: "t" },
      ]),
    );
    assert.equal(server.callsOf("enqueueBatch").length, 1);
    await assert.rejects(client.enqueue({ queue: "q", jobType: "t", idempotencyKey: "" }));
    assert.equal(server.callsOf("enqueueBatch").length, 2);
    await assert.rejects(client.enqueueAtomic([{ queue: "q", jobType: "t", idempotencyKey: "k" }]));
    assert.equal(server.callsOf("enqueueBatch").length, 2);
    client.close();

    const unavailable = await stub({ enqueueBatch: fail(status.UNAVAILABLE) });
    const other = await SeppClient.connect(unavailable.addr, { retryPolicy: retrying });
    await assert.rejects(other.enqueue({ queue: "q", jobType: "t" }), TransportError);
    assert.equal(unavailable.callsOf("enqueueBatch").length, 3);
    other.close();
  });

  test("reserve and drainDeadLetters are never retried", async () => {
    const server = await stub({
      reserve: fail(status.UNAVAILABLE),
      drainDeadLetters: fail(status.UNAVAILABLE),
    });
    const client = await SeppClient.connect(server.addr, { retryPolicy: retrying });
    await assert.rejects(client.reserve({ queues: ["q"], leaseDuration: 1_000 }), TransportError);
    await assert.rejects(client.drainDeadLetters({ max: 5 }), TransportError);
    assert.equal(server.callsOf("reserve").length, 1);
    assert.equal(server.callsOf("drainDeadLetters").length, 1);
    client.close();
  });

  test("a retried ack that finds no job warns that an earlier attempt may have succeeded", async () => {
    let acks = 0;
    const server = await stub({
      reserve: () => ({ response: { jobs: [job()] } }),
      ack: () => (++acks === 1 ? { code: status.UNAVAILABLE } : { code: status.NOT_FOUND }),
    });
    const logger = new RecordingLogger();
    const client = await SeppClient.connect(server.addr, { retryPolicy: retrying, logger });
    const [reserved] = (await client.reserve({ queues: ["q"], leaseDuration: 1_000, workerId: "w" })) ?? [];
    assert.ok(reserved);
    await assert.rejects(client.ack(reserved.ctx), JobNotFoundError);
    assert.ok(
      logger.messages("warn").some((message) => /an earlier attempt may have succeeded/.test(message)),
    );
    const ack = server.callsOf("ack")[0]?.request as wire.AckRequest;
    assert.deepEqual(ack, { jobId: "job-1", attempt: 1, workerId: "w" });
    client.close();
  });
});

describe("malformed answers", () => {
  test("malformed jobs are skipped with a warning; if none is left the answer is null", async () => {
    let answer = [job({ id: "" }), job({ id: "good" }), job({ id: "bad", priority: 12 })];
    const server = await stub({ reserve: () => ({ response: { jobs: answer } }) });
    const logger = new RecordingLogger();
    const client = await SeppClient.connect(server.addr, { logger });
    const jobs = await client.reserve({ queues: ["q"], leaseDuration: 1_000 });
    assert.deepEqual(
      jobs?.map((j) => j.ctx.id),
      ["good"],
    );
    assert.equal(
      logger.messages("warn").filter((m) => m === "skipping malformed job in reserve response").length,
      2,
    );
    answer = [job({ enqueuedAt: undefined })];
    assert.equal(await client.reserve({ queues: ["q"], leaseDuration: 1_000 }), null);
    client.close();
  });

  test("a result count that differs from the jobs sent, or a missing outcome, is malformed", async () => {
    let results: wire.JobResult[] = [];
    const server = await stub({
      enqueueBatch: () => ({ response: { results } }),
      enqueueAtomic: () => ({ response: { outcome: undefined } }),
      getServerInfo: () => ({ response: wire.GetServerInfoResponse.decode(new Uint8Array()) }),
    });
    const client = await SeppClient.connect(server.addr);
    await assert.rejects(client.enqueue({ queue: "q", jobType: "t" }), /sent 1 jobs, got 0 results/);
    results = [{ outcome: undefined }];
    await assert.rejects(client.enqueue({ queue: "q", jobType: "t" }), MalformedResponseError);
    await assert.rejects(client.enqueueAtomic([{ queue: "q", jobType: "t" }]), MalformedResponseError);
    await assert.rejects(client.getServerInfo(), /malformed server info: missing field server_version/);
    client.close();
  });

  test("strict mode refusals are UnknownQueuesError", async () => {
    const server = await stub({
      reserve: () => ({ code: status.FAILED_PRECONDITION, details: "undeclared queue nope" }),
    });
    const client = await SeppClient.connect(server.addr);
    await assert.rejects(client.reserve({ queues: ["nope"], leaseDuration: 1_000 }), UnknownQueuesError);
    client.close();
  });
});

describe("the Worker on the wire", () => {
  test("its reserves carry the queues, lease, wait, batch size and worker id; acks the worker id", async () => {
    let served = false;
    const server = await stub({
      reserve: () => {
        if (served) return "hang";
        served = true;
        return { response: { jobs: [job()] } };
      },
      ack: () => ({ response: { jobId: "job-1" } }),
    });
    const client = await SeppClient.connect(server.addr);
    const worker = new Worker(client, {
      queues: ["a", "b"],
      leaseDuration: 2_000,
      waitTimeout: 5_000,
      maxInFlight: 4,
      maxJobs: 2,
      workerId: "w-x",
    });
    await worker.catchAll(() => worker.shutdownHandle().shutdown()).run();
    const first = server.callsOf("reserve")[0]?.request as wire.ReserveRequest;
    assert.deepEqual(first, {
      queues: ["a", "b"],
      waitTimeout: { seconds: 5n, nanos: 0 },
      leaseDuration: { seconds: 2n, nanos: 0 },
      workerId: "w-x",
      maxJobs: 2,
    });
    assert.deepEqual(server.callsOf("ack")[0]?.request, { jobId: "job-1", attempt: 1, workerId: "w-x" });
    client.close();
  });

  test("without maxJobs a reserve asks for every free slot", async () => {
    const server = await stub({ reserve: () => "hang" });
    const client = await SeppClient.connect(server.addr);
    const worker = new Worker(client, { queues: ["q"], leaseDuration: 1_000, maxInFlight: 5 });
    const running = worker.catchAll(() => {}).run();
    await server.waitForCalls("reserve");
    worker.shutdownHandle().shutdown(); // cancels the pending long poll
    await running;
    const request = server.callsOf("reserve")[0]?.request as wire.ReserveRequest | undefined;
    assert.equal(request?.maxJobs, 5);
    client.close();
  });

  test("a failed reserve is logged and retried after the backoff", async () => {
    const server = await stub({ reserve: fail(status.UNAVAILABLE) });
    const logger = new RecordingLogger();
    const client = await SeppClient.connect(server.addr);
    const worker = new Worker(client, {
      queues: ["q"],
      leaseDuration: 1_000,
      reserveErrorBackoff: 10,
      logger,
    });
    const running = worker.catchAll(() => {}).run();
    await logger.waitFor("warn", /^reserve error: TransportError: .*; backing off for 10 ms$/, 3);
    worker.shutdownHandle().shutdown();
    await running;
    assert.ok(server.callsOf("reserve").length >= 3);
    client.close();
  });
});

describe("acks coalesced on the wire", () => {
  const jobs = (count: number, from = 1) =>
    Array.from({ length: count }, (_, n) => job({ id: `job-${from + n}` }));
  const succeed = (request: unknown): StubAnswer => ({
    response: {
      results: (request as wire.AckBatchRequest).acks.map((ack) => ({
        outcome: { $case: "success", value: { jobId: ack.jobId } },
      })),
    },
  });
  const reserveAll = async (client: SeppClient) =>
    (await client.reserve({ queues: ["q"], leaseDuration: 1_000, workerId: "w" })) ?? [];
  const ids = (request: unknown) => (request as wire.AckBatchRequest).acks.map((ack) => ack.jobId);

  test("a Worker acks the jobs of one reserve answer with one AckBatch call", async () => {
    let served = false;
    const server = await stub({
      reserve: () => {
        if (served) return "hang";
        served = true;
        return { response: { jobs: jobs(5) } };
      },
      ackBatch: succeed,
    });
    const client = await SeppClient.connect(server.addr);
    const worker = new Worker(client, { queues: ["q"], leaseDuration: 2_000, maxInFlight: 8, workerId: "w" });
    // Shut down at once: the jobs already handed over are still handled and acked before run() resolves.
    await worker.catchAll(() => worker.shutdownHandle().shutdown()).run();
    assert.deepEqual(
      server.callsOf("ackBatch").map((call) => ids(call.request)),
      [["job-1", "job-2", "job-3", "job-4", "job-5"]],
    );
    assert.deepEqual((server.callsOf("ackBatch")[0]?.request as wire.AckBatchRequest | undefined)?.acks[0], {
      jobId: "job-1",
      attempt: 1,
      workerId: "w",
    });
    assert.equal(server.callsOf("ack").length, 0);
    client.close();
  });

  test("each ack gets its own item's outcome, mapped as its own Ack's would be", async () => {
    const server = await stub({
      reserve: () => ({ response: { jobs: jobs(4) } }),
      ackBatch: () => ({
        response: {
          results: [
            { outcome: { $case: "success", value: { jobId: "job-1" } } },
            { outcome: { $case: "error", value: { code: status.NOT_FOUND, message: "job not found" } } },
            { outcome: { $case: "error", value: { code: status.FAILED_PRECONDITION, message: "stale" } } },
            { outcome: { $case: "error", value: { code: status.NOT_FOUND, message: "job was cancelled" } } },
          ],
        },
      }),
    });
    const client = await SeppClient.connect(server.addr);
    const reserved = await reserveAll(client);
    const outcomes = reserved.map((job) => client.ack(job.ctx));
    await outcomes[0];
    await assert.rejects(outcomes[1] as Promise<void>, (error) => {
      assert.ok(error instanceof JobNotFoundError && !(error instanceof JobCancelledError));
      return true;
    });
    await assert.rejects(outcomes[2] as Promise<void>, AttemptMismatchError);
    await assert.rejects(outcomes[3] as Promise<void>, JobCancelledError);
    assert.equal(server.callsOf("ackBatch").length, 1);
    assert.equal(server.callsOf("ack").length, 0);
    client.close();
  });

  test("against a server without AckBatch the acks are resent one Ack each, and AckBatch is not tried again", async () => {
    let reserves = 0;
    const server = await stub({
      reserve: () => ({ response: { jobs: jobs(3, 1 + 3 * reserves++) } }),
      ack: (request) => ({ response: { jobId: (request as wire.AckRequest).jobId } }),
    });
    const client = await SeppClient.connect(server.addr);
    const first = await reserveAll(client);
    await Promise.all(first.map((job) => client.ack(job.ctx)));
    assert.equal(server.callsOf("ackBatch").length, 1);
    assert.deepEqual(
      server.callsOf("ack").map((call) => (call.request as wire.AckRequest).jobId),
      ["job-1", "job-2", "job-3"],
    );
    const second = await reserveAll(client);
    await Promise.all(second.map((job) => client.ack(job.ctx)));
    assert.equal(server.callsOf("ackBatch").length, 1);
    assert.equal(server.callsOf("ack").length, 6);
    client.close();
  });

  test("a failed shared call fails every ack; the retry policy goes on with each one's own Ack", async () => {
    const server = await stub({
      reserve: () => ({ response: { jobs: jobs(3) } }),
      ackBatch: fail(status.UNAVAILABLE),
      ack: (request) => ({ response: { jobId: (request as wire.AckRequest).jobId } }),
    });
    const once = await SeppClient.connect(server.addr);
    const reserved = await reserveAll(once);
    const outcomes = await Promise.allSettled(reserved.map((job) => once.ack(job.ctx)));
    for (const outcome of outcomes) {
      assert.equal(outcome.status, "rejected");
      assert.ok(outcome.reason instanceof TransportError);
    }
    assert.equal(server.callsOf("ackBatch").length, 1);
    assert.equal(server.callsOf("ack").length, 0); // the default policy: the shared call was the one attempt
    once.close();

    const retried = await SeppClient.connect(server.addr, { retryPolicy: retrying });
    const again = await reserveAll(retried);
    await Promise.all(again.map((job) => retried.ack(job.ctx)));
    assert.equal(server.callsOf("ackBatch").length, 2);
    assert.equal(server.callsOf("ack").length, 3);
    retried.close();
  });

  test("a short AckBatch answer fails every ack with BatchResultCountMismatchError", async () => {
    const server = await stub({
      reserve: () => ({ response: { jobs: jobs(2) } }),
      ackBatch: () => ({ response: { results: [] } }),
    });
    const client = await SeppClient.connect(server.addr);
    const reserved = await reserveAll(client);
    const outcomes = await Promise.allSettled(reserved.map((job) => client.ack(job.ctx)));
    for (const outcome of outcomes) {
      assert.equal(outcome.status, "rejected");
      assert.ok(outcome.reason instanceof BatchResultCountMismatchError);
    }
    client.close();
  });

  test("a lone ack is a plain Ack; coalesceAcks: false sends every ack on its own call", async () => {
    const server = await stub({
      reserve: () => ({ response: { jobs: jobs(3) } }),
      ackBatch: succeed,
      ack: (request) => ({ response: { jobId: (request as wire.AckRequest).jobId } }),
    });
    const client = await SeppClient.connect(server.addr);
    const [lone] = await reserveAll(client);
    assert.ok(lone);
    await client.ack(lone.ctx);
    assert.equal(server.callsOf("ack").length, 1);
    client.close();

    const plain = await SeppClient.connect(server.addr, { coalesceAcks: false });
    const reserved = await reserveAll(plain);
    await Promise.all(reserved.map((job) => plain.ack(job.ctx)));
    assert.equal(server.callsOf("ack").length, 4);
    assert.equal(server.callsOf("ackBatch").length, 0);
    plain.close();
    await assert.rejects(
      SeppClient.connect(server.addr, { coalesceAcks: "no" as unknown as boolean }),
      ValidationError,
    );
  });
});

describe("schedule calls on the wire", () => {
  const scheduleInfo = (id = "tick"): wire.ScheduleInfo => ({
    definition: {
      id,
      cadence: { $case: "every", value: { seconds: 60n, nanos: 0 } },
      job: { queue: "q", jobType: "t", custom: {}, payload: undefined, scheduledAt: undefined },
      overlap: wire.ScheduleOverlap.SCHEDULE_OVERLAP_SKIP,
      catchUp: wire.ScheduleCatchUp.SCHEDULE_CATCH_UP_LATEST,
    },
    nextFireAt: undefined,
    lastSlotAt: undefined,
    fired: 0n,
    createdAt: { seconds: 1_700_000_000n, nanos: 0 },
  });
  /** Fails with each of `codes` in turn, then answers `response`. */
  const failThen = (codes: status[], response: unknown) => {
    let calls = 0;
    return (): StubAnswer => {
      const code = codes[calls++];
      return code === undefined ? { response } : { code };
    };
  };
  const tick = { id: "tick", job: { queue: "q", jobType: "t" }, every: 60_000 };

  test("upsert, delete and list are retried on transient failures by an opted-in policy", async () => {
    const server = await stub({
      upsertSchedule: failThen([status.UNAVAILABLE, status.DEADLINE_EXCEEDED], scheduleInfo()),
      deleteSchedule: failThen([status.DEADLINE_EXCEEDED], { deleted: true }),
      listSchedules: failThen([status.ABORTED], { schedules: [scheduleInfo("a"), scheduleInfo("b")] }),
    });
    const client = await SeppClient.connect(server.addr, { retryPolicy: retrying });
    assert.equal((await client.upsertSchedule(tick)).definition.every, 60_000);
    assert.equal(await client.deleteSchedule("tick"), true);
    assert.deepEqual(
      (await client.listSchedules()).map((s) => s.definition.id),
      ["a", "b"],
    );
    assert.deepEqual(
      [
        server.callsOf("upsertSchedule").length,
        server.callsOf("deleteSchedule").length,
        server.callsOf("listSchedules").length,
      ],
      [3, 2, 2],
    );
    const sent = server.callsOf("upsertSchedule")[0]?.request as wire.UpsertScheduleRequest;
    assert.equal(sent.schedule?.id, "tick");
    assert.deepEqual(sent.schedule?.cadence, { $case: "every", value: { seconds: 60n, nanos: 0 } });
    client.close();
  });

  test("under the default policy one attempt; the errors; a 0.1 server's UNIMPLEMENTED", async () => {
    let upsert: StubAnswer = { code: status.UNAVAILABLE };
    const server = await stub({
      upsertSchedule: () => upsert,
      deleteSchedule: fail(status.INVALID_ARGUMENT),
    });
    const client = await SeppClient.connect(server.addr);
    await assert.rejects(client.upsertSchedule(tick), TransportError);
    assert.equal(server.callsOf("upsertSchedule").length, 1);
    upsert = { code: status.FAILED_PRECONDITION, details: "100000 schedules" };
    await assert.rejects(client.upsertSchedule(tick), ScheduleLimitError);
    await assert.rejects(client.deleteSchedule("tick"), InvalidRequestError);
    await assert.rejects(client.listSchedules(), UnexpectedStatusError);
    // Refused before any call: an empty id, a schedule without a cadence.
    await assert.rejects(client.deleteSchedule(""), ValidationError);
    await assert.rejects(
      client.upsertSchedule({ id: "x", job: { queue: "q", jobType: "t" } }),
      ValidationError,
    );
    assert.equal(server.callsOf("deleteSchedule").length, 1);
    assert.equal(server.callsOf("upsertSchedule").length, 2);
    client.close();
  });

  test("a malformed upsert answer is MalformedResponseError; a list skips what it cannot read", async () => {
    const unreadable = scheduleInfo("unreadable");
    if (unreadable.definition) unreadable.definition.cadence = undefined;
    const server = await stub({
      upsertSchedule: () => ({ response: { ...scheduleInfo(), createdAt: undefined } }),
      listSchedules: () => ({ response: { schedules: [unreadable, scheduleInfo("good")] } }),
    });
    const logger = new RecordingLogger();
    const client = await SeppClient.connect(server.addr, { logger });
    await assert.rejects(client.upsertSchedule(tick), (error: unknown) => {
      assert.ok(error instanceof MalformedResponseError);
      assert.match(error.message, /created_at/);
      return true;
    });
    assert.deepEqual(
      (await client.listSchedules()).map((s) => s.definition.id),
      ["good"],
    );
    assert.ok(logger.messages("warn").includes("skipping a schedule this client cannot read"));
    client.close();
  });
});

describe("pause calls on the wire", () => {
  /** Fails with each of `codes` in turn, then answers `response`. */
  const failThen = (codes: status[], response: unknown) => {
    let calls = 0;
    return (): StubAnswer => {
      const code = codes[calls++];
      return code === undefined ? { response } : { code };
    };
  };
  const until = new Date("2030-03-17T17:46:40.000Z");
  const untilWire = { seconds: 1_900_000_000n, nanos: 0 };

  test("pause, resume and list are retried on transient failures by an opted-in policy", async () => {
    const server = await stub({
      pauseQueue: failThen([status.UNAVAILABLE, status.DEADLINE_EXCEEDED], {
        pause: { queue: "mail", until: untilWire },
      }),
      resumeQueue: failThen([status.DEADLINE_EXCEEDED], { resumed: true }),
      listPauses: failThen([status.ABORTED], {
        pauses: [
          { queue: "", until: undefined },
          { queue: "mail", until: untilWire },
        ],
      }),
    });
    const client = await SeppClient.connect(server.addr, { retryPolicy: retrying });
    assert.deepEqual(await client.pauseQueue("mail", { until, reason: "deploy" }), { queue: "mail", until });
    assert.equal(await client.resumeQueue("mail"), true);
    assert.deepEqual(await client.listPauses(), [
      { queue: ALL_QUEUES, until: undefined },
      { queue: "mail", until },
    ]);
    assert.deepEqual(
      [
        server.callsOf("pauseQueue").length,
        server.callsOf("resumeQueue").length,
        server.callsOf("listPauses").length,
      ],
      [3, 2, 2],
    );
    const sent = server.callsOf("pauseQueue")[0]?.request as wire.PauseQueueRequest;
    assert.deepEqual([sent.queue, sent.until, sent.reason], ["mail", untilWire, "deploy"]);
    const resumed = server.callsOf("resumeQueue")[0]?.request as wire.ResumeQueueRequest | undefined;
    assert.equal(resumed?.queue, "mail");
    client.close();
  });

  test("under the default policy one attempt; the errors; a 0.1 server's UNIMPLEMENTED", async () => {
    let pause: StubAnswer = { code: status.UNAVAILABLE };
    const server = await stub({ pauseQueue: () => pause, resumeQueue: fail(status.INVALID_ARGUMENT) });
    const client = await SeppClient.connect(server.addr);
    await assert.rejects(client.pauseQueue("mail"), TransportError);
    assert.equal(server.callsOf("pauseQueue").length, 1);
    pause = { code: status.INVALID_ARGUMENT, details: "reason is longer than 1024 bytes" };
    await assert.rejects(client.pauseQueue("mail", { reason: "x".repeat(2000) }), InvalidRequestError);
    await assert.rejects(client.resumeQueue("mail"), InvalidRequestError);
    await assert.rejects(client.listPauses(), UnexpectedStatusError);
    // Refused before any call: a queue that is not a string, an until that is not a Date.
    await assert.rejects(client.pauseQueue(undefined as unknown as string), ValidationError);
    await assert.rejects(client.pauseQueue("mail", { until: 60 as unknown as Date }), ValidationError);
    await assert.rejects(client.resumeQueue(["mail"] as unknown as string), ValidationError);
    assert.equal(server.callsOf("pauseQueue").length, 2);
    assert.equal(server.callsOf("resumeQueue").length, 1);
    // The empty name is every queue, sent as it is, with nothing else set.
    pause = { response: { pause: { queue: "", until: undefined } } };
    assert.deepEqual(await client.pauseQueue(ALL_QUEUES), { queue: "", until: undefined });
    const sent = server.callsOf("pauseQueue").at(-1)?.request as wire.PauseQueueRequest;
    assert.deepEqual([sent.queue, sent.until, sent.reason], ["", undefined, undefined]);
    client.close();
  });

  test("a malformed pause answer is MalformedResponseError; a list skips what it cannot read", async () => {
    const unreadable = { queue: "late", until: { seconds: 1n, nanos: -1 } };
    let answer: unknown = { pause: undefined };
    const server = await stub({
      pauseQueue: () => ({ response: answer }),
      listPauses: () => ({ response: { pauses: [unreadable, { queue: "mail", until: undefined }] } }),
    });
    const logger = new RecordingLogger();
    const client = await SeppClient.connect(server.addr, { logger });
    await assert.rejects(client.pauseQueue("mail"), (error: unknown) => {
      assert.ok(error instanceof MalformedResponseError);
      assert.match(error.message, /missing field pause/);
      return true;
    });
    answer = { pause: unreadable };
    await assert.rejects(client.pauseQueue("late"), (error: unknown) => {
      assert.ok(error instanceof MalformedResponseError);
      assert.match(error.message, /until/);
      return true;
    });
    assert.deepEqual(await client.listPauses(), [{ queue: "mail", until: undefined }]);
    assert.ok(logger.messages("warn").includes("skipping a pause this client cannot read"));
    client.close();
  });
});
