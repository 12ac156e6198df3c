/** The retry policy: defaults, clamps, the jitter and backoff shape, which codes retry, and the loop. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { status } from "@grpc/grpc-js";
import { ValidationError } from "../../src/errors.js";
import { silentLogger } from "../../src/logger.js";
import { RetryDirective, RetryPolicy, retryAllows, withRetries } from "../../src/retry.js";

describe("RetryPolicy", () => {
  test("the default policy makes one attempt", () => {
    const policy = new RetryPolicy();
    assert.deepEqual(
      { ...policy },
      {
        maxAttempts: 1,
        initialBackoff: 100,
        maxBackoff: 10_000,
        multiplier: 2,
        jitter: true,
        failoverWindow: 15_000,
      },
    );
  });

  test("attempts and the multiplier are clamped; bad durations are refused", () => {
    assert.equal(new RetryPolicy({ maxAttempts: 0 }).maxAttempts, 1);
    assert.equal(new RetryPolicy({ maxAttempts: 3.7 }).maxAttempts, 3);
    assert.equal(new RetryPolicy({ multiplier: 0.5 }).multiplier, 1);
    assert.equal(new RetryPolicy({ multiplier: Number.NaN }).multiplier, 1);
    assert.equal(new RetryPolicy({ multiplier: 3 }).multiplier, 3);
    assert.throws(() => new RetryPolicy({ initialBackoff: -1 }), ValidationError);
    assert.throws(() => new RetryPolicy({ maxBackoff: Number.POSITIVE_INFINITY }), ValidationError);
    assert.throws(() => new RetryPolicy({ maxAttempts: Number.NaN }), ValidationError);
  });

  test("jitter scales the backoff into [0.5, 1)", () => {
    const policy = new RetryPolicy();
    assert.equal(policy.delay(1000, 0), 500);
    assert.equal(policy.delay(1000, 0.5), 750);
    assert.ok(policy.delay(1000, 0.999_999) < 1000);
    for (let i = 0; i < 1000; i++) {
      const delay = policy.delay(1000, Math.random());
      assert.ok(delay >= 500 && delay < 1000, String(delay));
    }
    assert.equal(new RetryPolicy({ jitter: false }).delay(1000, 0.3), 1000);
  });

  test("the backoff grows by the multiplier up to the maximum", () => {
    const policy = new RetryPolicy({ maxBackoff: 500 });
    const seen: number[] = [];
    for (let backoff = policy.firstBackoff(), i = 0; i < 5; i++, backoff = policy.nextBackoff(backoff))
      seen.push(backoff);
    assert.deepEqual(seen, [100, 200, 400, 500, 500]);
    assert.equal(new RetryPolicy({ initialBackoff: 60_000 }).firstBackoff(), 10_000);
  });
});

describe("retry scopes", () => {
  test("only transient codes are retried, and keyless enqueues skip the ambiguous ones", () => {
    for (const code of [
      status.UNAVAILABLE,
      status.DEADLINE_EXCEEDED,
      status.ABORTED,
      status.RESOURCE_EXHAUSTED,
    ]) {
      assert.ok(retryAllows("transient", code), status[code]);
    }
    for (const code of [
      status.INVALID_ARGUMENT,
      status.UNAUTHENTICATED,
      status.INTERNAL,
      status.CANCELLED,
      status.NOT_FOUND,
    ]) {
      assert.ok(!retryAllows("transient", code), status[code]);
      assert.ok(!retryAllows("keylessEnqueue", code), status[code]);
    }
    assert.ok(retryAllows("keylessEnqueue", status.UNAVAILABLE));
    assert.ok(retryAllows("keylessEnqueue", status.RESOURCE_EXHAUSTED));
    assert.ok(!retryAllows("keylessEnqueue", status.DEADLINE_EXCEEDED));
    assert.ok(!retryAllows("keylessEnqueue", status.ABORTED));
  });
});

describe("withRetries", () => {
  /** Runs a call failing `failures` times with `code` under `policy`; returns (succeeded, attempts, sleeps). */
  async function run(
    policy: RetryPolicy,
    failures: number,
    code: number,
    scope: "transient" | "keylessEnqueue" | "reserve" = "transient",
    inCluster = false,
  ) {
    let clock = 0;
    let calls = 0;
    const sleeps: number[] = [];
    const warnings: unknown[] = [];
    const logger = { ...silentLogger, warn: (_: string, meta?: unknown) => warnings.push(meta) };
    const outcome = await withRetries(
      policy,
      "test",
      scope,
      logger,
      async () => {
        calls++;
        if (calls <= failures) throw Object.assign(new Error("no"), { code, details: "no" });
        return "done";
      },
      () => 0,
      async (ms) => {
        sleeps.push(ms);
        clock += ms;
      },
      () => inCluster,
      () => clock,
    );
    assert.equal(outcome.attempts, calls);
    assert.equal(warnings.length, sleeps.length);
    return { ok: outcome.ok, attempts: outcome.attempts, sleeps };
  }

  test("retries transient failures up to max attempts, sleeping the jittered backoff", async () => {
    const policy = new RetryPolicy({ maxAttempts: 3, initialBackoff: 100 });
    assert.deepEqual(await run(policy, 2, status.UNAVAILABLE), { ok: true, attempts: 3, sleeps: [50, 100] });
    assert.deepEqual(await run(policy, 5, status.UNAVAILABLE), { ok: false, attempts: 3, sleeps: [50, 100] });
  });

  test("does not retry permanent failures, ambiguous keyless ones, or by default", async () => {
    const policy = new RetryPolicy({ maxAttempts: 3 });
    assert.deepEqual(await run(policy, 1, status.INVALID_ARGUMENT), { ok: false, attempts: 1, sleeps: [] });
    assert.deepEqual(await run(policy, 1, status.DEADLINE_EXCEEDED, "keylessEnqueue"), {
      ok: false,
      attempts: 1,
      sleeps: [],
    });
    assert.deepEqual(await run(new RetryPolicy(), 1, status.UNAVAILABLE), {
      ok: false,
      attempts: 1,
      sleeps: [],
    });
  });

  test("in a cluster, the default policy rides a failover for the failover window", async () => {
    const policy = new RetryPolicy();
    // Backoffs (jitter takes half here) from 100 ms, doubling, at most 1 s.
    assert.deepEqual(await run(policy, 3, status.UNAVAILABLE, "transient", true), {
      ok: true,
      attempts: 4,
      sleeps: [50, 100, 200],
    });
    assert.equal((await run(policy, 2, status.UNAVAILABLE, "keylessEnqueue", true)).ok, true);
    assert.equal((await run(policy, 2, status.UNAVAILABLE, "reserve", true)).ok, true);
    assert.equal((await run(policy, 2, status.ABORTED, "transient", true)).ok, true);
    // A call that keeps failing gives up when the 15 s window has passed.
    const endless = await run(policy, Number.POSITIVE_INFINITY, status.UNAVAILABLE, "transient", true);
    assert.equal(endless.ok, false);
    assert.equal(
      endless.sleeps.reduce((sum, ms) => sum + ms, 0),
      15_000,
    );
    assert.ok(endless.sleeps.every((ms) => ms <= 1_000));
  });

  test("a failover is ridden only in a cluster, within the window, for what the call may retry", async () => {
    const policy = new RetryPolicy();
    const none = { ok: false, attempts: 1, sleeps: [] };
    assert.deepEqual(await run(policy, 1, status.UNAVAILABLE, "transient", false), none);
    assert.deepEqual(await run(policy, 1, status.RESOURCE_EXHAUSTED, "transient", true), none);
    assert.deepEqual(await run(policy, 1, status.DEADLINE_EXCEEDED, "keylessEnqueue", true), none);
    assert.deepEqual(await run(policy, 1, status.DEADLINE_EXCEEDED, "reserve", true), none);
    assert.deepEqual(await run(policy, 1, status.INVALID_ARGUMENT, "transient", true), none);
    const off = new RetryPolicy({ failoverWindow: 0 });
    assert.deepEqual(await run(off, 1, status.UNAVAILABLE, "transient", true), none);
    assert.throws(() => new RetryPolicy({ failoverWindow: -1 }), ValidationError);
  });

  test("an error without a status code is not retried", async () => {
    let calls = 0;
    const outcome = await withRetries(
      new RetryPolicy({ maxAttempts: 3 }),
      "t",
      "transient",
      silentLogger,
      async () => {
        calls++;
        throw new TypeError("bug");
      },
    );
    assert.equal(outcome.ok, false);
    assert.equal(calls, 1);
  });
});

describe("RetryDirective", () => {
  test("the three directives", () => {
    assert.equal(RetryDirective.default().kind, "default");
    assert.equal(RetryDirective.deadLetter().kind, "deadLetter");
    const after = RetryDirective.after(1500);
    assert.deepEqual([after.kind, after.delay, String(after)], ["after", 1500, "after 1500 ms"]);
    assert.throws(() => RetryDirective.after(-5), ValidationError);
  });
});
