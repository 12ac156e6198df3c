/**
 * Following the cluster leader, against stand-in QueueServices: node A answers as a follower
 * (UNAVAILABLE with `sepp-leader` naming B), B answers as the leader. The client follows the
 * redirect at once, whatever its retry policy, sends later calls to B directly, and goes back to A
 * when B is gone.
 */
import assert from "node:assert/strict";
import { after, describe, test } from "node:test";
import { status } from "@grpc/grpc-js";
import * as wire from "../../src/gen/sepp/v1/queue.js";
import { RetryPolicy, SeppClient, TransportError, Worker } from "../../src/index.js";
import { RecordingLogger } from "../support/helpers.js";
import { type MethodName, redirectTo, type StubAnswer, StubServer } from "../support/stub-server.js";

type Answers = Partial<Record<MethodName, (request: unknown) => StubAnswer>>;

const stubs: StubServer[] = [];
after(() => {
  for (const stub of stubs) stub.stop();
});

async function stub(answers: Answers) {
  const server = await StubServer.start(answers);
  stubs.push(server);
  return server;
}

/** A follower: every call is answered with a redirect to `leader()`. */
function follower(leader: () => string): Answers {
  const answers: Answers = {};
  for (const method of [
    "enqueueBatch",
    "reserve",
    "ack",
    "ackBatch",
    "drainDeadLetters",
    "listPauses",
  ] as const) {
    answers[method] = () => redirectTo(leader());
  }
  return answers;
}

const accepted = (request: unknown): StubAnswer => ({
  response: {
    results: (request as wire.EnqueueBatchRequest).jobs.map((_, index) => ({
      outcome: { $case: "success", value: { jobId: `job-${index + 1}`, deduplicated: false } },
    })),
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

// The tests of following the leader turn the failover window off, so that a call the cluster does
// not serve fails at once; the window has a test of its own.
const retrying = new RetryPolicy({ maxAttempts: 3, initialBackoff: 1, maxBackoff: 2, failoverWindow: 0 });
const noFailover = new RetryPolicy({ failoverWindow: 0 });

const following = (logger: RecordingLogger) =>
  logger.entries.filter(
    (entry) => entry.level === "info" && /^following the cluster leader/.test(entry.message),
  );

describe("following the cluster leader", () => {
  test("an enqueue under the default policy follows the redirect; the next call goes to the leader directly", async () => {
    const leader = await stub({ enqueueBatch: accepted, listPauses: () => ({ response: { pauses: [] } }) });
    const seed = await stub(follower(() => leader.addr));
    const logger = new RecordingLogger();
    const client = await SeppClient.connect(seed.addr, { apiKey: "secret-key", logger });

    const ack = await client.enqueue({ queue: "q", jobType: "t" }); // keyless, one attempt
    assert.deepEqual(ack, { jobId: "job-1", deduplicated: false });
    assert.equal(seed.callsOf("enqueueBatch").length, 1);
    const [received] = leader.callsOf("enqueueBatch");
    assert.ok(received, "the leader received no enqueue");
    assert.deepEqual(received.request, seed.callsOf("enqueueBatch")[0]?.request);
    assert.deepEqual(received.metadata.get("authorization"), ["Bearer secret-key"]);
    const [switched, ...more] = following(logger);
    assert.equal(more.length, 0);
    assert.equal(switched?.message, `following the cluster leader to ${leader.addr}`);
    assert.equal(switched?.meta?.from, seed.addr);

    await client.enqueue({ queue: "q", jobType: "t" });
    assert.deepEqual(await client.listPauses(), []);
    assert.equal(seed.calls.length, 1, "the seed saw a second call");
    assert.equal(leader.callsOf("enqueueBatch").length, 2);
    assert.equal(leader.callsOf("listPauses").length, 1);
    client.close();
  });

  test("reserve and drainDeadLetters, which are never retried, follow the redirect", async () => {
    const leader = await stub({
      reserve: () => ({ response: { jobs: [job] } }),
      drainDeadLetters: () => ({ response: { records: [] } }),
    });
    const seed = await stub(follower(() => leader.addr));
    const reserving = await SeppClient.connect(seed.addr);
    const jobs = await reserving.reserve({ queues: ["q"], leaseDuration: 1_000, workerId: "w" });
    assert.equal(jobs?.[0]?.ctx.id, "job-1");
    assert.equal(seed.callsOf("reserve").length, 1);
    assert.deepEqual(leader.callsOf("reserve")[0]?.request, seed.callsOf("reserve")[0]?.request);

    const draining = await SeppClient.connect(seed.addr, { retryPolicy: retrying });
    assert.deepEqual(await draining.drainDeadLetters({ max: 5 }), []);
    assert.equal(seed.callsOf("drainDeadLetters").length, 1);
    assert.equal(leader.callsOf("drainDeadLetters").length, 1);
    reserving.close();
    draining.close();
  });

  test("a redirect loop gives up after 3 redirects with the transport error", async () => {
    let a = "";
    const b = await stub(follower(() => a));
    const seed = await stub(follower(() => b.addr));
    a = seed.addr;
    const logger = new RecordingLogger();
    const client = await SeppClient.connect(seed.addr, { logger, retryPolicy: noFailover });
    await assert.rejects(
      client.enqueue({ queue: "q", jobType: "t", idempotencyKey: "k" }),
      (error: unknown) => {
        assert.ok(error instanceof TransportError, String(error));
        assert.equal(error.code, status.UNAVAILABLE);
        assert.match(error.details, /not the cluster's leader/);
        return true;
      },
    );
    // The first attempt and 3 redirects: A, B, A, B.
    assert.equal(seed.callsOf("enqueueBatch").length, 2);
    assert.equal(b.callsOf("enqueueBatch").length, 2);
    assert.equal(following(logger).length, 3);
    assert.deepEqual(
      logger.messages("warn").filter((message) => /redirects/.test(message)),
      ["giving up on following the cluster leader after 3 redirects"],
    );
    client.close();
  });

  test("once the followed leader is gone, the next attempt goes back to the configured address", async () => {
    // The default policy: the call to the gone leader fails, the next call asks the seed.
    let seedLeads = false;
    const leader = await stub({ enqueueBatch: accepted });
    const seed = await stub({
      enqueueBatch: (request) => (seedLeads ? accepted(request) : redirectTo(leader.addr)),
    });
    const logger = new RecordingLogger();
    // A call still sent to the gone leader would wait out its deadline on the reconnecting channel.
    const client = await SeppClient.connect(seed.addr, {
      logger,
      rpcTimeout: 5_000,
      retryPolicy: noFailover,
    });
    await client.enqueue({ queue: "q", jobType: "t" });
    await leader.stopGracefully();
    seedLeads = true;
    await assert.rejects(client.enqueue({ queue: "q", jobType: "t" }), (error: unknown) => {
      assert.ok(error instanceof TransportError, String(error));
      assert.equal(error.code, status.UNAVAILABLE);
      return true;
    });
    assert.equal(seed.callsOf("enqueueBatch").length, 1);
    assert.deepEqual(
      logger.messages("info").filter((message) => /is unavailable; asking/.test(message)),
      [`the cluster node ${leader.addr} is unavailable; asking ${seed.addr} who leads`],
    );
    await client.enqueue({ queue: "q", jobType: "t" });
    assert.equal(seed.callsOf("enqueueBatch").length, 2);
    client.close();

    // An opted-in policy: its next attempt asks the seed.
    let seedLeadsToo = false;
    const other = await stub({ enqueueBatch: accepted });
    const otherSeed = await stub({
      enqueueBatch: (request) => (seedLeadsToo ? accepted(request) : redirectTo(other.addr)),
    });
    const retried = await SeppClient.connect(otherSeed.addr, { retryPolicy: retrying, rpcTimeout: 5_000 });
    await retried.enqueue({ queue: "q", jobType: "t" });
    await other.stopGracefully();
    seedLeadsToo = true;
    await retried.enqueue({ queue: "q", jobType: "t" });
    assert.equal(otherSeed.callsOf("enqueueBatch").length, 2);
    assert.equal(other.callsOf("enqueueBatch").length, 1);
    retried.close();
  });

  test("the default policy rides a failover until a leader serves", async () => {
    // The client met the cluster (the seed named the leader); the leader then goes. The seed names
    // the gone leader twice more, as during an election, then leads: the caller sees only success.
    let namesGone = 3;
    const leader = await stub({ enqueueBatch: accepted });
    const seed = await stub({
      enqueueBatch: (request) => (namesGone-- > 0 ? redirectTo(leader.addr) : accepted(request)),
    });
    const client = await SeppClient.connect(seed.addr, { rpcTimeout: 5_000 });
    await client.enqueue({ queue: "q", jobType: "t" });
    await leader.stopGracefully();
    await client.enqueue({ queue: "q", jobType: "t" });
    assert.equal(seed.callsOf("enqueueBatch").length, 4);
    client.close();
  });

  test("a client given the leader learns the members from getServerInfo and reaches another when it dies", async () => {
    const other = await stub({ enqueueBatch: accepted });
    const info: wire.GetServerInfoResponse = {
      ...wire.GetServerInfoResponse.decode(new Uint8Array()),
      serverVersion: "0.2.0",
      serverTime: { seconds: 1n, nanos: 0 },
    };
    let leaderAddr = "";
    const leader = await stub({
      enqueueBatch: accepted,
      getServerInfo: () => ({
        response: {
          ...info,
          cluster: {
            nodeId: 1n,
            role: "leader",
            term: 1n,
            leaderAddr,
            members: [
              { id: 1n, addr: leaderAddr, voter: true },
              { id: 2n, addr: other.addr, voter: true },
            ],
          },
        },
      }),
    });
    leaderAddr = leader.addr;
    const client = await SeppClient.connect(leader.addr, { rpcTimeout: 5_000 });
    assert.equal((await client.getServerInfo()).cluster?.role, "leader");
    await client.enqueue({ queue: "q", jobType: "t" });
    await leader.stopGracefully();
    await client.enqueue({ queue: "q", jobType: "t" });
    assert.equal(other.callsOf("enqueueBatch").length, 1);
    client.close();
  });

  test("an UNAVAILABLE without a leader from the configured address surfaces, and nothing switches", async () => {
    const seed = await stub({ enqueueBatch: () => ({ code: status.UNAVAILABLE, details: "election" }) });
    const logger = new RecordingLogger();
    const client = await SeppClient.connect(seed.addr, { logger });
    await assert.rejects(client.enqueue({ queue: "q", jobType: "t" }), TransportError);
    await assert.rejects(client.enqueue({ queue: "q", jobType: "t" }), TransportError);
    assert.equal(seed.callsOf("enqueueBatch").length, 2);
    assert.deepEqual(
      logger.messages("info").filter((message) => /cluster leader/.test(message)),
      [],
    );
    client.close();
  });

  test("concurrent calls redirected together switch the client once", async () => {
    const leader = await stub({ enqueueBatch: accepted });
    const seed = await stub(follower(() => leader.addr));
    const logger = new RecordingLogger();
    // Twenty calls of their own (coalesced, they would be one).
    const client = await SeppClient.connect(seed.addr, { logger, coalesceEnqueues: false });
    const acks = await Promise.all(
      Array.from({ length: 20 }, () => client.enqueue({ queue: "q", jobType: "t" })),
    );
    assert.equal(acks.length, 20);
    assert.equal(leader.callsOf("enqueueBatch").length, 20);
    assert.equal(following(logger).length, 1);
    client.close();
  });

  test("a Worker processes a job whose reserve was redirected, and acks it at the leader", async () => {
    let served = false;
    const leader = await stub({
      reserve: () => {
        if (served) return "hang";
        served = true;
        return { response: { jobs: [job] } };
      },
      ack: () => ({ response: { jobId: "job-1" } }),
    });
    const seed = await stub(follower(() => leader.addr));
    const client = await SeppClient.connect(seed.addr);
    const logger = new RecordingLogger();
    const worker = new Worker(client, { queues: ["q"], leaseDuration: 2_000, workerId: "w", logger });
    // A reserve that fails (did not follow) stops the Worker, so the test fails instead of waiting.
    void logger.waitFor("warn", /^reserve error/).then(() => worker.shutdownHandle().shutdown());
    const handled: string[] = [];
    await worker
      .catchAll((_payload, ctx) => {
        handled.push(ctx.id);
        worker.shutdownHandle().shutdown();
      })
      .run();
    assert.deepEqual(handled, ["job-1"]);
    assert.deepEqual(leader.callsOf("ack")[0]?.request, { jobId: "job-1", attempt: 1, workerId: "w" });
    assert.equal(seed.callsOf("reserve").length, 1);
    assert.equal(seed.callsOf("ack").length, 0);
    client.close();
  });
});
