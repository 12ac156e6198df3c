/** Recurring schedules without a server: validation, conversions both ways, and status mapping. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { status } from "@grpc/grpc-js";
import { checkScheduleId, DecodeError, scheduleInfoFromWire, scheduleToWire } from "../../src/convert.js";
import {
  InvalidRequestError,
  ScheduleLimitError,
  scheduleErrorFromStatus,
  UnexpectedStatusError,
  ValidationError,
} from "../../src/errors.js";
import * as wire from "../../src/gen/sepp/v1/queue.js";
import { Payload } from "../../src/payload.js";
import { type Schedule, ScheduleCatchUp, ScheduleOverlap } from "../../src/types.js";

const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const TEMPLATE = { queue: "reports", jobType: "nightly" };
const toWire = (schedule: Schedule) => scheduleToWire(schedule, "upsertSchedule");
const invalid = (schedule: unknown, message: RegExp) =>
  assert.throws(
    () => toWire(schedule as Schedule),
    (error: unknown) => {
      assert.ok(error instanceof ValidationError, `expected a ValidationError, got ${String(error)}`);
      assert.match(error.message, message);
      return true;
    },
  );

describe("schedule validation", () => {
  test("exactly one cadence, a non-empty cron, an interval of at least 1000 ms", () => {
    invalid({ id: "s", job: TEMPLATE }, /exactly one cadence/);
    invalid({ id: "s", job: TEMPLATE, cron: "0 9 * * *", every: 60_000 }, /exactly one cadence/);
    invalid({ id: "s", job: TEMPLATE, cron: "  " }, /non-empty cron/);
    invalid(
      { id: "s", job: TEMPLATE, every: 999 },
      /every must be a number of milliseconds of at least 1000/,
    );
    invalid({ id: "s", job: TEMPLATE, every: Number.NaN }, /every/);
    invalid({ id: "s", job: TEMPLATE, every: "60000" }, /every/);
    invalid({ id: "s", job: TEMPLATE, every: 60_000, timeZone: "Europe/Zurich" }, /timeZone goes with cron/);
    assert.equal(toWire({ id: "s", job: TEMPLATE, every: 1000 }).cadence?.$case, "every");
  });

  test("the template must not set the per-job fields, and must be a valid job", () => {
    for (const [field, value] of [
      ["idempotencyKey", "once"],
      ["scheduledAt", new Date(2_000_000_000_000)],
      ["traceContext", { traceparent: TRACEPARENT }],
    ] as const) {
      invalid({ id: "s", job: { ...TEMPLATE, [field]: value }, every: 60_000 }, new RegExp(field));
    }
    invalid({ id: "s", job: { queue: "", jobType: "t" }, every: 60_000 }, /job: queue must be a non-empty/);
    invalid({ id: "s", job: { ...TEMPLATE, priority: 10 }, every: 60_000 }, /priority/);
    invalid({ id: "s", every: 60_000 }, /job must be an object/);
  });

  test("ids are 1 to 128 bytes of UTF-8 without control characters", () => {
    for (const [id, message] of [
      ["", /must not be empty/],
      ["x".repeat(129), /at most 128 bytes \(got 129\)/],
      ["é".repeat(65), /at most 128 bytes \(got 130\)/],
      ["a\nb", /control characters/],
      ["a\u007fb", /control characters/],
      [42, /must be a string/],
    ] as const) {
      assert.throws(() => checkScheduleId("deleteSchedule", id), message);
      invalid({ id, job: TEMPLATE, every: 60_000 }, message);
    }
    assert.equal(checkScheduleId("x", "x".repeat(128)), "x".repeat(128));
    assert.equal(checkScheduleId("x", "ünïcode report"), "ünïcode report");
  });

  test("policies are the named values", () => {
    invalid(
      { id: "s", job: TEMPLATE, every: 60_000, overlap: "sometimes" },
      /overlap must be "skip" or "allow"/,
    );
    invalid({ id: "s", job: TEMPLATE, every: 60_000, catchUp: "all" }, /catchUp must be "latest" or "none"/);
  });
});

describe("schedules on the wire", () => {
  test("a cron schedule with every template field and both policies", () => {
    const definition = toWire({
      id: "nightly-report",
      job: {
        queue: "reports",
        jobType: "nightly",
        payload: Payload.json({ kind: "nightly" }),
        priority: 7,
        maxAttempts: 2,
        custom: { tenant: "acme", n: 3, on: true, ratio: 0.5 },
      },
      cron: "0 9 * * MON-FRI",
      timeZone: "Europe/Zurich",
      overlap: ScheduleOverlap.Allow,
      catchUp: ScheduleCatchUp.None,
    });
    assert.equal(definition.id, "nightly-report");
    assert.deepEqual(definition.cadence, {
      $case: "cron",
      value: { expression: "0 9 * * MON-FRI", timeZone: "Europe/Zurich" },
    });
    assert.equal(definition.overlap, wire.ScheduleOverlap.SCHEDULE_OVERLAP_ALLOW);
    assert.equal(definition.catchUp, wire.ScheduleCatchUp.SCHEDULE_CATCH_UP_NONE);
    const job = definition.job;
    assert.ok(job !== undefined);
    assert.deepEqual([job.queue, job.jobType, job.priority, job.maxAttempts], ["reports", "nightly", 7, 2]);
    assert.equal(job.payload?.encoding, "application/json");
    assert.deepEqual(job.custom.n, { value: { $case: "intValue", value: 3n } });
    assert.deepEqual(job.custom.ratio, { value: { $case: "doubleValue", value: 0.5 } });
    assert.deepEqual(
      [job.idempotencyKey, job.scheduledAt, job.traceContext],
      [undefined, undefined, undefined],
    );
  });

  test("an interval schedule sends the defaults explicitly and a cron one defaults to UTC", () => {
    const every = toWire({ id: "tick", job: TEMPLATE, every: 90_005 });
    assert.deepEqual(every.cadence, { $case: "every", value: { seconds: 90n, nanos: 5_000_000 } });
    assert.equal(every.overlap, wire.ScheduleOverlap.SCHEDULE_OVERLAP_SKIP);
    assert.equal(every.catchUp, wire.ScheduleCatchUp.SCHEDULE_CATCH_UP_LATEST);
    assert.deepEqual(
      [every.job?.payload, every.job?.priority, every.job?.maxAttempts],
      [undefined, undefined, undefined],
    );
    const cron = toWire({ id: "c", job: TEMPLATE, cron: "* * * * *" });
    assert.deepEqual(cron.cadence, { $case: "cron", value: { expression: "* * * * *", timeZone: "UTC" } });
  });

  const info = (overrides: Partial<wire.ScheduleInfo> = {}): wire.ScheduleInfo => ({
    definition: {
      id: "tick",
      cadence: { $case: "every", value: { seconds: 60n, nanos: 0 } },
      job: { queue: "q", jobType: "t", priority: 3, custom: {}, payload: undefined, scheduledAt: undefined },
      overlap: wire.ScheduleOverlap.SCHEDULE_OVERLAP_ALLOW,
      catchUp: wire.ScheduleCatchUp.SCHEDULE_CATCH_UP_UNSPECIFIED,
    },
    nextFireAt: { seconds: 1_700_000_300n, nanos: 0 },
    lastSlotAt: { seconds: 1_700_000_240n, nanos: 0 },
    lastJobId: "0190c7a0-0000-7000-8000-000000000000",
    fired: 4n,
    createdAt: { seconds: 1_700_000_000n, nanos: 0 },
    ...overrides,
  });

  test("a schedule info comes back with Dates, a number count and the defaults filled in", () => {
    assert.deepEqual(scheduleInfoFromWire(info()), {
      definition: {
        id: "tick",
        job: { queue: "q", jobType: "t", priority: 3 },
        every: 60_000,
        overlap: ScheduleOverlap.Allow,
        catchUp: ScheduleCatchUp.Latest,
      },
      nextFireAt: new Date(1_700_000_300_000),
      lastSlotAt: new Date(1_700_000_240_000),
      lastJobId: "0190c7a0-0000-7000-8000-000000000000",
      fired: 4,
      createdAt: new Date(1_700_000_000_000),
    });
    const cron = scheduleInfoFromWire(
      info({
        definition: {
          ...(info().definition as wire.ScheduleDefinition),
          cadence: { $case: "cron", value: { expression: "0 9 * * *", timeZone: "" } },
        },
        nextFireAt: undefined,
        lastSlotAt: undefined,
        lastJobId: undefined,
        fired: 0n,
      }),
    );
    assert.equal(cron.definition.cron, "0 9 * * *");
    assert.equal(cron.definition.timeZone, "UTC");
    assert.deepEqual(
      [cron.nextFireAt, cron.lastSlotAt, cron.lastJobId, cron.fired],
      [undefined, undefined, undefined, 0],
    );
  });

  test("what this client cannot read is a DecodeError naming the field", () => {
    const base = info().definition as wire.ScheduleDefinition;
    for (const [bad, message] of [
      [info({ definition: undefined }), /definition/],
      [info({ createdAt: undefined }), /created_at/],
      [info({ nextFireAt: { seconds: -1n, nanos: 0 } }), /next_fire_at/],
      [info({ definition: { ...base, cadence: undefined } }), /no cadence/],
      [info({ definition: { ...base, job: undefined } }), /no job/],
      [info({ definition: { ...base, overlap: 7 as wire.ScheduleOverlap } }), /policy/],
    ] as const) {
      assert.throws(
        () => scheduleInfoFromWire(bad),
        (error: unknown) => error instanceof DecodeError && message.test(error.message),
      );
    }
  });
});

describe("schedule errors", () => {
  test("FAILED_PRECONDITION is the schedule limit; the rest map as for every call", () => {
    const limit = scheduleErrorFromStatus({ code: status.FAILED_PRECONDITION, details: "100000 schedules" });
    assert.ok(limit instanceof ScheduleLimitError && /100000 schedules/.test(limit.message));
    assert.ok(
      scheduleErrorFromStatus({ code: status.INVALID_ARGUMENT, details: "bad cron" }) instanceof
        InvalidRequestError,
    );
    assert.ok(
      scheduleErrorFromStatus({ code: status.UNIMPLEMENTED, details: "" }) instanceof UnexpectedStatusError,
    );
  });
});
