/** Pausing queues without a server: the request's conversion and local checks, pauses read from the
 * server, and the status mapping of the pause calls. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { status } from "@grpc/grpc-js";
import { checkPauseQueue, DecodeError, pauseFromWire, pauseRequestToWire } from "../../src/convert.js";
import {
  errorFromStatus,
  InvalidRequestError,
  UnexpectedStatusError,
  ValidationError,
} from "../../src/errors.js";
import { ALL_QUEUES, type PauseOptions } from "../../src/index.js";

const toWire = (queue: unknown, options: unknown = {}) =>
  pauseRequestToWire(queue as string, options as PauseOptions, "pauseQueue");
const invalid = (queue: unknown, options: unknown, message: RegExp) =>
  assert.throws(
    () => toWire(queue, options),
    (error: unknown) => {
      assert.ok(error instanceof ValidationError, `expected a ValidationError, got ${String(error)}`);
      assert.match(error.message, message);
      assert.match(error.message, /^pauseQueue: /);
      return true;
    },
  );

describe("pause requests", () => {
  test("ALL_QUEUES is the empty name", () => {
    assert.equal(ALL_QUEUES, "");
    assert.deepEqual(toWire(ALL_QUEUES), { queue: "", until: undefined, reason: undefined });
  });

  test("what was not given stays unset; until and reason are carried", () => {
    assert.deepEqual(toWire("mail"), { queue: "mail", until: undefined, reason: undefined });
    const until = new Date("2030-03-17T17:46:40.123Z");
    assert.deepEqual(toWire("mail", { until, reason: "deploy" }), {
      queue: "mail",
      until: { seconds: 1_900_000_000n, nanos: 123_000_000 },
      reason: "deploy",
    });
    assert.equal(toWire("mail", { reason: "" }).reason, ""); // an empty reason is still sent
  });

  test("what the client can tell is wrong is refused", () => {
    invalid(undefined, {}, /queue must be a queue name or ALL_QUEUES/);
    invalid(["mail"], {}, /queue must be a queue name or ALL_QUEUES/);
    invalid("mail", null, /options must be an object/);
    invalid("mail", { until: 1_900_000_000_000 }, /until must be a valid Date/);
    invalid("mail", { until: new Date(Number.NaN) }, /until must be a valid Date/);
    invalid("mail", { until: new Date("1969-12-31T00:00:00Z") }, /until must be in the future/);
    invalid("mail", { reason: 42 }, /reason must be a string/);
    assert.throws(() => checkPauseQueue("resumeQueue", 7), /resumeQueue: queue must be/);
    assert.equal(checkPauseQueue("resumeQueue", ALL_QUEUES), "");
  });
});

describe("pauses from the server", () => {
  test("a pause until resumed, and one with an end", () => {
    assert.deepEqual(pauseFromWire({ queue: "mail", until: undefined }), { queue: "mail", until: undefined });
    assert.deepEqual(pauseFromWire({ queue: "", until: { seconds: 1_900_000_000n, nanos: 123_456_789 } }), {
      queue: ALL_QUEUES,
      until: new Date("2030-03-17T17:46:40.123Z"),
    });
  });

  test("an unreadable until is a DecodeError", () => {
    assert.throws(() => pauseFromWire({ queue: "mail", until: { seconds: -5n, nanos: 0 } }), DecodeError);
    assert.throws(() => pauseFromWire({ queue: "mail", until: { seconds: 1n, nanos: -1 } }), /until/);
  });
});

describe("the pause calls' errors", () => {
  test("statuses map as for every call", () => {
    const refused = errorFromStatus({
      code: status.INVALID_ARGUMENT,
      details: "until must be in the future",
    });
    assert.ok(refused instanceof InvalidRequestError);
    assert.match(refused.message, /until must be in the future/);
    assert.ok(
      errorFromStatus({ code: status.UNIMPLEMENTED, details: "unknown method" }) instanceof
        UnexpectedStatusError,
    );
  });
});
