/** Request validation and the conversions between wire types and the package's types. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  customFromWire,
  DecodeError,
  dateFromTimestamp,
  deadLetterFromWire,
  durationFromMs,
  enqueueRequestToWire,
  hasIdempotencyKey,
  msFromDuration,
  rejectionFromWire,
  reservedJobFromWire,
  serverInfoFromWire,
  timestampFromDate,
} from "../../src/convert.js";
import { ValidationError } from "../../src/errors.js";
import * as wire from "../../src/gen/sepp/v1/queue.js";
import { Payload } from "../../src/payload.js";
import { DeadLetterCause, type EnqueueRequest } from "../../src/types.js";

const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const toWire = (request: EnqueueRequest) => enqueueRequestToWire(request, "job 0", undefined);
const invalid = (request: unknown, message: RegExp) =>
  assert.throws(
    () => toWire(request as EnqueueRequest),
    (error: unknown) => {
      assert.ok(error instanceof ValidationError, `expected a ValidationError, got ${String(error)}`);
      assert.match(error.message, message);
      return true;
    },
  );

describe("enqueue requests", () => {
  test("unset options stay unset on the wire, so the queue's defaults apply", () => {
    const request = toWire({ queue: "q", jobType: "t" });
    assert.deepEqual(request, {
      queue: "q",
      jobType: "t",
      payload: undefined,
      idempotencyKey: undefined,
      priority: undefined,
      maxAttempts: undefined,
      traceContext: undefined,
      custom: {},
      scheduledAt: undefined,
    });
    const bytes = wire.EnqueueRequest.encode(request).finish();
    assert.deepEqual(wire.EnqueueRequest.decode(bytes).priority, undefined);
  });

  test("every option is carried over", () => {
    const at = new Date(Date.UTC(2030, 0, 1, 0, 0, 0, 250));
    const request = toWire({
      queue: "q",
      jobType: "t",
      payload: Payload.json({ a: 1 }),
      idempotencyKey: "k",
      priority: 9,
      maxAttempts: 5,
      custom: { s: "x" },
      scheduledAt: at,
      traceContext: { traceparent: TRACEPARENT, tracestate: "v=1" },
    });
    assert.equal(request.payload?.encoding, "application/json");
    assert.equal(request.payload?.data.toString(), '{"a":1}');
    assert.equal(request.idempotencyKey, "k");
    assert.equal(request.priority, 9);
    assert.equal(request.maxAttempts, 5);
    assert.deepEqual(request.scheduledAt, {
      seconds: BigInt(Math.floor(at.getTime() / 1000)),
      nanos: 250_000_000,
    });
    assert.deepEqual(request.traceContext, { traceparent: TRACEPARENT, tracestate: "v=1" });
  });

  test("queue and job type must be non-empty strings", () => {
    invalid({ queue: "", jobType: "t" }, /job 0: queue must be a non-empty string/);
    invalid({ jobType: "t" }, /queue must be a non-empty string/);
    invalid({ queue: "q", jobType: "" }, /jobType must be a non-empty string/);
    invalid(null, /a job must be an object/);
  });

  test("priority must be an integer from 0 to 9", () => {
    for (const priority of [0, 5, 9])
      assert.equal(toWire({ queue: "q", jobType: "t", priority }).priority, priority);
    for (const priority of [-1, 10, 1.5, Number.NaN, "3"]) {
      invalid({ queue: "q", jobType: "t", priority }, /priority must be an integer from 0 to 9/);
    }
  });

  test("max attempts must fit the wire's unsigned 32 bits", () => {
    invalid({ queue: "q", jobType: "t", maxAttempts: 2.5 }, /maxAttempts must be an integer/);
    invalid({ queue: "q", jobType: "t", maxAttempts: -1 }, /maxAttempts/);
    invalid({ queue: "q", jobType: "t", maxAttempts: 2 ** 32 }, /maxAttempts/);
  });

  test("a scheduled time before the epoch is dropped, an invalid Date refused", () => {
    assert.equal(toWire({ queue: "q", jobType: "t", scheduledAt: new Date(-1000) }).scheduledAt, undefined);
    invalid({ queue: "q", jobType: "t", scheduledAt: new Date("nope") }, /scheduledAt must be a valid Date/);
    invalid({ queue: "q", jobType: "t", scheduledAt: "2030-01-01" }, /scheduledAt must be a valid Date/);
  });

  test("an invalid trace context is refused; the fallback applies only to jobs without one", () => {
    invalid({ queue: "q", jobType: "t", traceContext: { traceparent: "00-abc" } }, /invalid traceparent/);
    const fallback = { traceparent: TRACEPARENT };
    assert.deepEqual(
      enqueueRequestToWire({ queue: "q", jobType: "t" }, "x", fallback).traceContext,
      fallback,
    );
    const own = "00-11111111111111111111111111111111-2222222222222222-00";
    const request = { queue: "q", jobType: "t", traceContext: { traceparent: own } };
    assert.equal(enqueueRequestToWire(request, "x", fallback).traceContext?.traceparent, own);
  });

  test("a payload must be a non-empty Payload", () => {
    invalid({ queue: "q", jobType: "t", payload: "text" }, /payload must be a Payload/);
    assert.throws(() => Payload.bytes(new Uint8Array(0)), /must not be empty/);
    assert.throws(() => Payload.text(""), /must not be empty/);
    assert.throws(() => Payload.json(undefined), /JSON/);
  });

  test("custom values map to string, int, double and bool", () => {
    const request = toWire({
      queue: "q",
      jobType: "t",
      custom: { s: "x", i: 3, neg: -7, d: 1.5, big: 2n ** 62n, t: true, huge: 2 ** 60 },
    });
    assert.deepEqual(request.custom, {
      s: { value: { $case: "stringValue", value: "x" } },
      i: { value: { $case: "intValue", value: 3n } },
      neg: { value: { $case: "intValue", value: -7n } },
      d: { value: { $case: "doubleValue", value: 1.5 } },
      big: { value: { $case: "intValue", value: 2n ** 62n } },
      t: { value: { $case: "boolValue", value: true } },
      // Beyond 2^53 a number is no longer an exact integer: it travels as the double it is.
      huge: { value: { $case: "doubleValue", value: 2 ** 60 } },
    });
    invalid(
      { queue: "q", jobType: "t", custom: { x: null } },
      /custom value "x" must be a string, number, bigint or boolean/,
    );
    invalid({ queue: "q", jobType: "t", custom: { x: { nested: 1 } } }, /custom value "x"/);
    invalid({ queue: "q", jobType: "t", custom: { x: 2n ** 63n } }, /does not fit in 64 bits/);
  });

  test("an empty idempotency key counts as none for retries", () => {
    assert.equal(hasIdempotencyKey({ queue: "q", jobType: "t", idempotencyKey: "k" }), true);
    assert.equal(hasIdempotencyKey({ queue: "q", jobType: "t", idempotencyKey: "" }), false);
    assert.equal(hasIdempotencyKey({ queue: "q", jobType: "t" }), false);
  });
});

describe("durations and timestamps", () => {
  test("milliseconds convert to and from wire durations", () => {
    assert.deepEqual(durationFromMs(30_000), { seconds: 30n, nanos: 0 });
    assert.deepEqual(durationFromMs(1_500), { seconds: 1n, nanos: 500_000_000 });
    assert.deepEqual(durationFromMs(0.5), { seconds: 0n, nanos: 500_000 });
    assert.equal(msFromDuration({ seconds: 2n, nanos: 250_000_000 }), 2_250);
    assert.equal(msFromDuration(undefined), 0);
    assert.equal(msFromDuration({ seconds: -1n, nanos: 0 }), 0);
  });

  test("dates convert to and from wire timestamps; pre-epoch and malformed ones are refused", () => {
    const date = new Date(Date.UTC(2026, 11, 1, 9, 30, 0, 123));
    const timestamp = timestampFromDate(date);
    assert.deepEqual(dateFromTimestamp(timestamp), date);
    assert.equal(timestampFromDate(new Date(-1)), undefined);
    assert.equal(dateFromTimestamp({ seconds: -5n, nanos: 0 }), undefined);
    assert.equal(dateFromTimestamp({ seconds: 5n, nanos: 1_000_000_000 }), undefined);
    assert.equal(dateFromTimestamp(undefined), undefined);
  });
});

function wireJob(overrides: Partial<wire.Job> = {}): wire.Job {
  return {
    id: "id-1",
    jobType: "email",
    payload: { data: Buffer.from("{}"), encoding: "application/json" },
    priority: 5,
    traceContext: { traceparent: TRACEPARENT, tracestate: "k=v" },
    enqueuedAt: { seconds: 100n, nanos: 0 },
    attempt: 2,
    maxAttempts: 3,
    leaseExpiresAt: { seconds: 200n, nanos: 0 },
    custom: { tenant: { value: { $case: "stringValue", value: "acme" } } },
    scheduledAt: { seconds: 50n, nanos: 0 },
    queue: "q",
    ...overrides,
  };
}

describe("received jobs", () => {
  test("a wire job decodes into its fields and lease expiry", () => {
    const { fields, payload, leaseExpiresAt } = reservedJobFromWire(wireJob());
    assert.equal(payload?.json<object>().constructor, Object);
    assert.equal(payload?.encoding, "application/json");
    assert.deepEqual(
      { ...fields },
      {
        id: "id-1",
        queue: "q",
        jobType: "email",
        priority: 5,
        attempt: 2,
        maxAttempts: 3,
        enqueuedAt: new Date(100_000),
        scheduledAt: new Date(50_000),
        custom: { tenant: "acme" },
        traceContext: { traceparent: TRACEPARENT, tracestate: "k=v" },
      },
    );
    assert.deepEqual(leaseExpiresAt, new Date(200_000));
  });

  test("malformed jobs are refused with the reason", () => {
    const cases: Array<[Partial<wire.Job>, RegExp]> = [
      [{ id: "" }, /missing field id/],
      [{ jobType: "" }, /missing field job_type/],
      [{ priority: 10 }, /priority 10 is out of range/],
      [{ enqueuedAt: undefined }, /missing field enqueued_at/],
      [{ enqueuedAt: { seconds: -1n, nanos: 0 } }, /invalid timestamp in enqueued_at/],
      [{ leaseExpiresAt: undefined }, /missing field lease_expires_at/],
      [{ custom: { k: { value: undefined } } }, /custom entry "k" has no value/],
    ];
    for (const [overrides, message] of cases) {
      assert.throws(
        () => reservedJobFromWire(wireJob(overrides)),
        (error: unknown) => {
          assert.ok(error instanceof DecodeError);
          assert.match(error.message, message);
          return true;
        },
      );
    }
  });

  test("an invalid trace context or schedule is dropped, not fatal", () => {
    const { fields } = reservedJobFromWire(
      wireJob({ traceContext: { traceparent: "garbage" }, scheduledAt: { seconds: -3n, nanos: 0 } }),
    );
    assert.equal(fields.traceContext, undefined);
    assert.equal(fields.scheduledAt, undefined);
  });

  test("received ints are numbers within 2^53 and bigints beyond", () => {
    const custom = customFromWire({
      small: { value: { $case: "intValue", value: 42n } },
      large: { value: { $case: "intValue", value: 2n ** 60n } },
      d: { value: { $case: "doubleValue", value: 0.25 } },
      b: { value: { $case: "boolValue", value: false } },
    });
    assert.deepEqual(custom, { small: 42, large: 2n ** 60n, d: 0.25, b: false });
  });
});

describe("rejections, server info and dead letters", () => {
  test("every rejection reason decodes, and an unknown one is 'unknown'", () => {
    const r = (reason: wire.JobRejection["reason"]) => rejectionFromWire({ reason });
    assert.deepEqual(r({ $case: "unknownQueue", value: { queue: "q" } }), {
      kind: "unknownQueue",
      queue: "q",
    });
    assert.deepEqual(r({ $case: "payloadTooLarge", value: { limit: 10n, actual: 11n } }), {
      kind: "payloadTooLarge",
      limit: 10,
      actual: 11,
    });
    assert.deepEqual(r({ $case: "customKeyTooLong", value: { key: "k", limit: 1, actual: 2n } }), {
      kind: "customKeyTooLong",
      key: "k",
      limit: 1,
      actual: 2,
    });
    assert.deepEqual(
      r({
        $case: "scheduledTooFar",
        value: { horizon: { seconds: 60n, nanos: 0 }, actual: { seconds: 1n, nanos: 0 } },
      }),
      { kind: "scheduledTooFar", horizon: 60_000, actual: new Date(1000) },
    );
    assert.deepEqual(r({ $case: "queueFull", value: { queue: "q", limit: 5n } }), {
      kind: "queueFull",
      queue: "q",
      limit: 5,
    });
    assert.deepEqual(r({ $case: "invalidRequest", value: { message: "m" } }), {
      kind: "invalidRequest",
      message: "m",
    });
    assert.deepEqual(r(undefined), { kind: "unknown" });
    assert.deepEqual(rejectionFromWire(undefined), { kind: "unknown" });
    // A reason added to the protocol later decodes as an unknown field, so as an unknown rejection.
    const future = Buffer.from([0xfa, 0x01, 0x00]); // field 31, length-delimited, empty
    assert.deepEqual(rejectionFromWire(wire.JobRejection.decode(future)), { kind: "unknown" });
  });

  test("server info needs a version and a valid server time", () => {
    const info = wire.GetServerInfoResponse.decode(
      wire.GetServerInfoResponse.encode({
        ...wire.GetServerInfoResponse.decode(new Uint8Array()),
        serverVersion: "1.2.3",
        serverTime: { seconds: 1_000n, nanos: 0 },
        maxPayloadBytes: 1_048_576n,
        maxLeaseDuration: { seconds: 300n, nanos: 0 },
        deadLetterRetentionEnabled: true,
      }).finish(),
    );
    const decoded = serverInfoFromWire(info);
    assert.equal(decoded.version, "1.2.3");
    assert.deepEqual(decoded.serverTime, new Date(1_000_000));
    assert.equal(decoded.maxPayloadBytes, 1_048_576);
    assert.equal(decoded.maxLeaseDuration, 300_000);
    assert.equal(decoded.maxWaitTimeout, 0); // unset durations are zero
    assert.equal(decoded.deadLetterRetentionEnabled, true);
    assert.throws(() => serverInfoFromWire({ ...info, serverVersion: "" }), /missing field server_version/);
    assert.throws(() => serverInfoFromWire({ ...info, serverTime: undefined }), /missing field server_time/);
    assert.throws(
      () => serverInfoFromWire({ ...info, serverTime: { seconds: -1n, nanos: 0 } }),
      /invalid timestamp/,
    );
    assert.equal(decoded.cluster, undefined); // a single node (or 0.1)
    assert.equal("cluster" in decoded, false);
  });

  test("the server info carries the cluster as the answering node sees it", () => {
    const info = wire.GetServerInfoResponse.decode(
      wire.GetServerInfoResponse.encode({
        ...wire.GetServerInfoResponse.decode(new Uint8Array()),
        serverVersion: "1.2.3",
        serverTime: { seconds: 1n, nanos: 0 },
        cluster: {
          nodeId: 2n,
          role: "follower",
          term: 7n,
          leaderId: 1n,
          leaderAddr: "10.0.0.1:50051",
          members: [
            { id: 1n, addr: "10.0.0.1:50051", voter: true, replicationLag: 0n },
            { id: 2n, addr: "10.0.0.2:50051", voter: true },
          ],
        },
      }).finish(),
    );
    assert.deepEqual(serverInfoFromWire(info).cluster, {
      nodeId: 2,
      role: "follower",
      term: 7,
      leaderId: 1,
      leaderAddr: "10.0.0.1:50051",
      members: [
        { id: 1, addr: "10.0.0.1:50051", voter: true, replicationLag: 0 },
        { id: 2, addr: "10.0.0.2:50051", voter: true },
      ],
    });
  });

  test("a dead-letter record decodes and replays as a fresh request", () => {
    const record = deadLetterFromWire({
      job: wireJob(),
      cause: wire.DeadLetterCause.DEAD_LETTER_CAUSE_ATTEMPTS_EXHAUSTED,
      failedAt: { seconds: 300n, nanos: 0 },
      finalAttempt: 3,
      lastReason: "boom",
    });
    assert.equal(record.cause, DeadLetterCause.AttemptsExhausted);
    assert.equal(record.lastReason, "boom");
    assert.deepEqual(record.failedAt, new Date(300_000));
    const replay = record.toEnqueueRequest();
    assert.deepEqual(
      { ...replay, payload: replay.payload?.text() },
      {
        queue: "q",
        jobType: "email",
        payload: "{}",
        priority: 5,
        maxAttempts: 3,
        custom: { tenant: "acme" },
        traceContext: { traceparent: TRACEPARENT, tracestate: "k=v" },
      },
    );
    assert.equal("idempotencyKey" in replay, false);
    assert.equal("scheduledAt" in replay, false);
    const unknownCause = deadLetterFromWire({
      job: wireJob({ maxAttempts: 0 }),
      cause: 99 as wire.DeadLetterCause,
      failedAt: { seconds: 1n, nanos: 0 },
      finalAttempt: 1,
    });
    assert.equal(unknownCause.cause, DeadLetterCause.Unspecified);
    const cancelled = deadLetterFromWire({
      job: wireJob(),
      cause: wire.DeadLetterCause.DEAD_LETTER_CAUSE_CANCELLED,
      failedAt: { seconds: 1n, nanos: 0 },
      finalAttempt: 1,
      lastReason: "not needed",
    });
    assert.equal(cancelled.cause, DeadLetterCause.Cancelled);
    assert.equal(DeadLetterCause.Cancelled, "cancelled");
    assert.equal(unknownCause.toEnqueueRequest().maxAttempts, undefined);
    assert.throws(
      () => deadLetterFromWire({ job: undefined, cause: 1, failedAt: undefined, finalAttempt: 1 }),
      /missing field job/,
    );
    assert.throws(
      () => deadLetterFromWire({ job: wireJob(), cause: 1, failedAt: undefined, finalAttempt: 1 }),
      /failed_at/,
    );
  });
});
