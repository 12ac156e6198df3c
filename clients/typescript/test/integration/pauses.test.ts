/**
 * Pausing queues against the real server: a paused queue takes enqueues but serves no reserve, is
 * listed, and serves its jobs again once resumed (a parked long poll at once, waited for on the
 * server's count of parked reserves, not a sleep); the pause of every queue, on a server of its own;
 * input the server refuses is InvalidRequestError.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { ALL_QUEUES, InvalidRequestError, type QueuePause, SeppClient } from "../../src/index.js";
import { freshQueue } from "../support/helpers.js";
import { PROMETHEUS, TestServer } from "../support/server.js";

let server: TestServer;
let client: SeppClient;

before(async () => {
  server = await TestServer.start({ tail: PROMETHEUS });
  client = await SeppClient.connect(server.addr);
});

after(async () => {
  client?.close();
  await server?.stop();
});

const LEASE = 30_000;

/** A reserve that answers at once: the ids of the jobs it got, or null. */
async function reserveNow(on: SeppClient, queues: string[]): Promise<string[] | null> {
  const jobs = await on.reserve({ queues, leaseDuration: LEASE, waitTimeout: 0 });
  if (jobs === null) return null;
  for (const job of jobs) await on.ack(job.ctx);
  return jobs.map((job) => job.ctx.id);
}

/** An hour from now, on a whole second (the server keeps milliseconds). */
const inAnHour = () => new Date(Math.floor(Date.now() / 1000) * 1000 + 3_600_000);

const pausesOf = async (queue: string): Promise<QueuePause[]> =>
  (await client.listPauses()).filter((pause) => pause.queue === queue);

describe("pausing queues", () => {
  test("the server offers pausing", async () => {
    assert.ok((await client.getServerInfo()).features.includes("pause"));
  });

  test("a paused queue takes enqueues, serves no reserve and is listed until resumed", async () => {
    const queue = freshQueue("paused");
    assert.deepEqual(await client.pauseQueue(queue, { reason: "deploy" }), { queue, until: undefined });
    const { jobId } = await client.enqueue({ queue, jobType: "t" }); // a paused queue still takes jobs
    assert.equal(await reserveNow(client, [queue]), null);
    assert.deepEqual(await pausesOf(queue), [{ queue, until: undefined }]);

    assert.equal(await client.resumeQueue(queue), true);
    assert.equal(await client.resumeQueue(queue), false); // no longer paused
    assert.deepEqual(await pausesOf(queue), []);
    assert.deepEqual(await reserveNow(client, [queue]), [jobId]);
  });

  test("a reserve naming a paused and another queue takes from the other", async () => {
    const paused = freshQueue("paused");
    const other = freshQueue("other");
    await client.pauseQueue(paused);
    await client.enqueue({ queue: paused, jobType: "t" });
    const { jobId } = await client.enqueue({ queue: other, jobType: "t" });
    assert.deepEqual(await reserveNow(client, [paused, other]), [jobId]);
    assert.equal(await client.resumeQueue(paused), true);
  });

  test("pausing again replaces the end of the pause", async () => {
    const queue = freshQueue("again");
    const until = inAnHour();
    assert.deepEqual(await client.pauseQueue(queue, { until }), { queue, until });
    assert.deepEqual(await pausesOf(queue), [{ queue, until }]);
    assert.deepEqual(await client.pauseQueue(queue), { queue, until: undefined });
    assert.deepEqual(await pausesOf(queue), [{ queue, until: undefined }]);
    assert.equal(await client.resumeQueue(queue), true);
  });

  test("a resume serves a parked long poll at once", async () => {
    const queue = freshQueue("parked");
    await client.pauseQueue(queue);
    const { jobId } = await client.enqueue({ queue, jobType: "t" });
    let settled = false;
    const waiting = client
      .reserve({ queues: [queue], leaseDuration: LEASE, waitTimeout: 60_000 })
      .finally(() => {
        settled = true;
      });
    // The only reserve waiting on this server: the resume below comes after it.
    await server.waitParked(1);
    assert.equal(settled, false);
    assert.equal(await client.resumeQueue(queue), true);
    const jobs = await waiting;
    assert.ok(jobs !== null, "the parked reserve got nothing");
    assert.deepEqual(
      jobs.map((job) => job.ctx.id),
      [jobId],
    );
    for (const job of jobs) await client.ack(job.ctx);
  });

  test("a pause with an end lifts itself and serves the waiting reserve", async () => {
    const queue = freshQueue("ends");
    await client.pauseQueue(queue, { until: new Date(Date.now() + 1_000) });
    const { jobId } = await client.enqueue({ queue, jobType: "t" });
    // No resume: the long poll is answered once the server has lifted the pause at its end.
    const jobs = await client.reserve({ queues: [queue], leaseDuration: LEASE, waitTimeout: 30_000 });
    assert.ok(jobs !== null, "the pause did not end within the long poll");
    assert.deepEqual(
      jobs.map((job) => job.ctx.id),
      [jobId],
    );
    for (const job of jobs) await client.ack(job.ctx);
  });

  test("input the server refuses is InvalidRequestError", async () => {
    const queue = freshQueue("refused");
    await assert.rejects(
      client.pauseQueue(queue, { until: new Date(Date.now() - 60_000) }),
      InvalidRequestError,
    );
    await assert.rejects(client.pauseQueue(queue, { reason: "x".repeat(1025) }), InvalidRequestError);
    await assert.rejects(client.pauseQueue("a\u0000b"), InvalidRequestError);
    await assert.rejects(client.pauseQueue("a/b"), InvalidRequestError);
    assert.deepEqual(await pausesOf(queue), []);
  });
});

describe("the pause of every queue", () => {
  // A server of its own: pausing every queue would hold up the other tests' reserves.
  let own: TestServer;
  let ownClient: SeppClient;

  before(async () => {
    own = await TestServer.start();
    ownClient = await SeppClient.connect(own.addr);
  });

  after(async () => {
    ownClient?.close();
    await own?.stop();
  });

  test("is listed first, holds queues that did not exist and is lifted apart from named ones", async () => {
    const named = freshQueue("named");
    const unnamed = freshQueue("unnamed");
    const until = inAnHour();
    await ownClient.pauseQueue(named);
    assert.deepEqual(await ownClient.pauseQueue(ALL_QUEUES, { until, reason: "maintenance" }), {
      queue: "",
      until,
    });
    assert.deepEqual(await ownClient.listPauses(), [
      { queue: "", until },
      { queue: named, until: undefined },
    ]);
    const { jobId } = await ownClient.enqueue({ queue: unnamed, jobType: "t" });
    assert.equal(await reserveNow(ownClient, [unnamed]), null);

    assert.equal(await ownClient.resumeQueue(ALL_QUEUES), true);
    assert.deepEqual(await ownClient.listPauses(), [{ queue: named, until: undefined }]); // stays paused
    assert.deepEqual(await reserveNow(ownClient, [unnamed]), [jobId]);
    assert.equal(await ownClient.resumeQueue(ALL_QUEUES), false);
    assert.equal(await ownClient.resumeQueue(named), true);
    assert.deepEqual(await ownClient.listPauses(), []);
  });
});
