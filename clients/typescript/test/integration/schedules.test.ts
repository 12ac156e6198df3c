/**
 * Recurring schedules against the real server: an every-second schedule fires its template into a
 * queue (received with a long poll, no sleeps), is listed with what it did, replaced and deleted;
 * cron slots follow their time zone; definitions the server refuses are InvalidRequestError.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import {
  InvalidRequestError,
  Payload,
  type Schedule,
  ScheduleCatchUp,
  type ScheduleInfo,
  ScheduleOverlap,
  SeppClient,
} from "../../src/index.js";
import { freshQueue } from "../support/helpers.js";
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

/** The next job in `queue`, waited for with a long poll (a slot comes every second). */
async function nextFired(queue: string) {
  const jobs = await client.reserve({ queues: [queue], leaseDuration: 30_000, waitTimeout: 10_000 });
  assert.ok(jobs !== null, "no job fired within ten seconds");
  assert.equal(jobs.length, 1);
  return jobs[0] as NonNullable<typeof jobs>[number];
}

async function listed(id: string): Promise<ScheduleInfo | undefined> {
  const found = (await client.listSchedules()).filter((info) => info.definition.id === id);
  assert.ok(found.length <= 1);
  return found[0];
}

/** The wall-clock hour, minute and second of `date` in `timeZone`. */
function localTime(date: Date, timeZone: string): [number, number, number] {
  const parts = new Intl.DateTimeFormat("en-GB", {
    timeZone,
    hourCycle: "h23",
    hour: "numeric",
    minute: "numeric",
    second: "numeric",
  }).formatToParts(date);
  const part = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  return [part("hour"), part("minute"), part("second")];
}

describe("schedules", () => {
  test("the server offers them", async () => {
    assert.ok((await client.getServerInfo()).features.includes("schedules"));
  });

  test("a schedule fires its template, is listed with what it did, replaced and deleted", async () => {
    const queue = freshQueue();
    const schedule: Schedule = {
      id: `${queue}-tick`,
      job: {
        queue,
        jobType: "tick",
        payload: Payload.json({ report: "daily" }),
        priority: 6,
        maxAttempts: 4,
        custom: { tenant: "acme", shard: 3, dryRun: false },
      },
      every: 1000,
    };
    const before = (await client.getServerInfo()).serverTime;
    const info = await client.upsertSchedule(schedule);
    assert.deepEqual(info.definition, { ...schedule, overlap: "skip", catchUp: "latest" });
    assert.deepEqual([info.fired, info.lastJobId, info.lastSlotAt], [0, undefined, undefined]);
    assert.ok(info.createdAt.getTime() >= before.getTime() - 1000);
    assert.ok(info.nextFireAt !== undefined);
    assert.equal(info.nextFireAt.getTime() - info.createdAt.getTime(), 1000, "slots count from the creation");
    try {
      const job = await nextFired(queue);
      assert.equal(job.ctx.jobType, "tick");
      assert.deepEqual(job.payload?.json(), { report: "daily" });
      assert.deepEqual([job.ctx.priority, job.ctx.maxAttempts], [6, 4]);
      assert.deepEqual(job.ctx.custom, { tenant: "acme", shard: 3, dryRun: false });
      assert.equal(job.ctx.traceContext, undefined);
      await client.ack(job.ctx);

      const shown = await listed(schedule.id);
      assert.ok(shown !== undefined);
      assert.equal(shown.definition.every, 1000);
      assert.ok(shown.fired >= 1, `fired ${shown.fired}`);
      assert.ok(shown.lastSlotAt !== undefined && shown.lastSlotAt <= job.ctx.enqueuedAt);
      assert.ok(shown.lastJobId !== undefined);

      // Replace it: a new template and policies; what it fired so far stays counted.
      const replacement: Schedule = {
        id: schedule.id,
        job: { queue, jobType: "tock", custom: { tenant: "globex" } },
        every: 1000,
        overlap: ScheduleOverlap.Allow,
        catchUp: ScheduleCatchUp.None,
      };
      const replaced = await client.upsertSchedule(replacement);
      assert.deepEqual(replaced.definition, replacement);
      assert.ok(replaced.fired >= shown.fired);
      assert.ok(replaced.createdAt >= shown.createdAt);
      // A "tick" fired before the replacement may still be queued; skip it.
      let next = await nextFired(queue);
      while (next.ctx.jobType === "tick") {
        await client.ack(next.ctx);
        next = await nextFired(queue);
      }
      assert.deepEqual(
        [next.ctx.jobType, next.ctx.custom, next.payload],
        ["tock", { tenant: "globex" }, undefined],
      );
      assert.equal(next.ctx.priority, 0);
      await client.ack(next.ctx);
    } finally {
      assert.equal(await client.deleteSchedule(schedule.id), true);
    }
    assert.equal(await client.deleteSchedule(schedule.id), false);
    assert.equal(await listed(schedule.id), undefined);
  });

  test("a cron slot follows its time zone", async () => {
    const queue = freshQueue();
    const schedule: Schedule = {
      id: `${queue}-zurich`,
      job: { queue, jobType: "t" },
      cron: "0 9 * * *",
      timeZone: "Europe/Zurich",
    };
    const now = (await client.getServerInfo()).serverTime;
    const info = await client.upsertSchedule(schedule);
    try {
      assert.equal(info.definition.timeZone, "Europe/Zurich");
      const next = info.nextFireAt;
      assert.ok(next !== undefined);
      // 09:00 on the clocks of Zurich: 08:00 UTC in winter (UTC+1), 07:00 UTC in summer (UTC+2).
      assert.deepEqual(localTime(next, "Europe/Zurich"), [9, 0, 0]);
      const offsetHours = (9 - next.getUTCHours() + 24) % 24;
      assert.ok(offsetHours === 1 || offsetHours === 2, `offset ${offsetHours}`);
      assert.equal(next.getUTCMinutes(), 0);
      // The next one, not a later one: within a day (and an hour, across a change of offset).
      assert.ok(next > now && next.getTime() <= now.getTime() + 25 * 3_600_000, next.toISOString());
    } finally {
      assert.equal(await client.deleteSchedule(schedule.id), true);
    }
  });

  test("a cron schedule without a zone runs in UTC and may have seconds; the list is sorted by id", async () => {
    const queue = freshQueue();
    const hourly: Schedule = { id: `${queue}-utc`, job: { queue, jobType: "t" }, cron: "15 * * * *" };
    const seconds: Schedule = { id: `${queue}-sec`, job: { queue, jobType: "t" }, cron: "30 0 0 1 1 *" };
    try {
      const info = await client.upsertSchedule(hourly);
      assert.equal(info.definition.timeZone, "UTC");
      assert.deepEqual([info.nextFireAt?.getUTCMinutes(), info.nextFireAt?.getUTCSeconds()], [15, 0]);
      const yearly = await client.upsertSchedule(seconds);
      const at = yearly.nextFireAt;
      assert.ok(at !== undefined);
      assert.deepEqual(
        [at.getUTCMonth(), at.getUTCDate(), at.getUTCHours(), at.getUTCMinutes(), at.getUTCSeconds()],
        [0, 1, 0, 0, 30],
      );
      const ids = (await client.listSchedules()).map((s) => s.definition.id);
      assert.deepEqual(ids, [...ids].sort());
      assert.ok(ids.includes(hourly.id) && ids.includes(seconds.id));
    } finally {
      await client.deleteSchedule(hourly.id);
      await client.deleteSchedule(seconds.id);
    }
  });

  test("definitions the server refuses are InvalidRequestError", async () => {
    const queue = freshQueue();
    const limits = await client.getServerInfo();
    const refused: [Schedule, RegExp][] = [
      [{ id: `${queue}-cron`, job: { queue, jobType: "t" }, cron: "61 * * * *" }, /cron expression/],
      [
        { id: `${queue}-zone`, job: { queue, jobType: "t" }, cron: "0 9 * * *", timeZone: "Mars/Olympus" },
        /time zone/,
      ],
      // A template the queue's rules refuse: a queue name over the server's limit.
      [
        {
          id: `${queue}-long`,
          job: { queue: "q".repeat(limits.maxQueueNameBytes + 1), jobType: "t" },
          every: 60_000,
        },
        /queue/,
      ],
    ];
    for (const [schedule, message] of refused) {
      await assert.rejects(client.upsertSchedule(schedule), (error: unknown) => {
        assert.ok(error instanceof InvalidRequestError, String(error));
        assert.match(error.message, message);
        return true;
      });
    }
    const ids = new Set((await client.listSchedules()).map((s) => s.definition.id));
    for (const [schedule] of refused) assert.ok(!ids.has(schedule.id), schedule.id);
  });
});
