/** The Worker's decisions, its option checks, HandlerError, and the slot semaphore. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { SeppClient } from "../../src/client.js";
import { ValidationError } from "../../src/errors.js";
import { silentLogger } from "../../src/logger.js";
import { HandlerError } from "../../src/worker/handler-error.js";
import {
  defaultWorkerId,
  failureBackoff,
  handlerVerdict,
  heartbeatInterval,
  isEarlyEmpty,
  reserveBatch,
} from "../../src/worker/policy.js";
import { pause, Slots } from "../../src/worker/slots.js";
import { Worker } from "../../src/worker/worker.js";

describe("Worker decisions", () => {
  test("failures back off exponentially up to a minute", () => {
    const after = (attempt: number) => failureBackoff(attempt).delay;
    assert.deepEqual([after(0), after(1), after(2), after(3), after(5)], [1000, 2000, 4000, 8000, 32_000]);
    assert.equal(after(6), 60_000);
    assert.equal(after(64), 60_000);
    assert.equal(after(2 ** 32 - 1), 60_000);
    assert.equal(failureBackoff(1).kind, "after");
  });

  test("handler errors map onto nack directives", () => {
    const retry = handlerVerdict(HandlerError.retry("r"));
    assert.deepEqual([retry.retry.kind, retry.reason], ["default", "r"]);
    const later = handlerVerdict(HandlerError.retryAfter("later", 5000));
    assert.deepEqual([later.retry.kind, later.retry.delay, later.reason], ["after", 5000, "later"]);
    const permanent = handlerVerdict(HandlerError.permanent("bad"));
    assert.deepEqual([permanent.retry.kind, permanent.reason], ["deadLetter", "bad"]);
  });

  test("the heartbeat runs at a third of the remaining lease, or the fixed interval, at least 1 ms", () => {
    const now = 1_000_000;
    assert.equal(heartbeatInterval(undefined, now + 30_000, now), 10_000);
    assert.equal(heartbeatInterval(undefined, now + 2, now), 1);
    assert.equal(heartbeatInterval(undefined, now - 1000, now), 1);
    assert.equal(heartbeatInterval(7000, now, now), 7000);
    assert.equal(heartbeatInterval(0, now, now), 1);
  });

  test("the reserve batch is capped by the free capacity", () => {
    assert.equal(reserveBatch(undefined, 15), 16);
    assert.equal(reserveBatch(undefined, 0), 1);
    assert.equal(reserveBatch(4, 15), 4);
    assert.equal(reserveBatch(40, 3), 4);
  });

  test("an empty reserve is early under 100 ms or half the wait", () => {
    assert.ok(isEarlyEmpty(5, 30_000));
    assert.ok(!isEarlyEmpty(100, 30_000));
    assert.ok(isEarlyEmpty(20, 60));
    assert.ok(!isEarlyEmpty(30, 60));
  });

  test("the default worker id is host-pid-8hex", () => {
    const id = defaultWorkerId({ HOSTNAME: "box" });
    assert.match(id, new RegExp(`^box-${process.pid}-[0-9a-f]{8}$`));
    assert.notEqual(defaultWorkerId({ HOSTNAME: "box" }), id);
    assert.match(defaultWorkerId({ COMPUTERNAME: "win" }), /^win-/);
    assert.ok(defaultWorkerId({}).length > 0);
  });
});

describe("HandlerError", () => {
  test("the three verdicts, recognised across package copies", () => {
    const error = HandlerError.retryAfter("busy", 250);
    assert.deepEqual([error.kind, error.reason, error.delay], ["retryAfter", "busy", 250]);
    assert.ok(error instanceof Error);
    assert.ok(HandlerError.is(error));
    assert.ok(!HandlerError.is(new Error("plain")));
    assert.ok(HandlerError.is({ [Symbol.for("sepp-js.HandlerError")]: true }));
    assert.throws(() => HandlerError.retryAfter("x", -1), ValidationError);
  });
});

describe("Worker options", () => {
  const client = { logger: silentLogger } as unknown as SeppClient;
  const make = (options: object) => new Worker(client, { queues: ["q"], leaseDuration: 30_000, ...options });

  test("invalid options are refused", () => {
    assert.throws(() => new Worker(client, { queues: [], leaseDuration: 1000 }), /at least one queue/);
    assert.throws(() => new Worker(client, { queues: ["a", ""], leaseDuration: 1000 }), /index 1 is empty/);
    assert.throws(() => make({ leaseDuration: 0 }), /leaseDuration/);
    assert.throws(() => make({ waitTimeout: 0 }), /waitTimeout must be above 0/);
    assert.throws(() => make({ maxJobs: 0 }), /maxJobs/);
    assert.throws(() => make({ maxInFlight: 0 }), /maxInFlight/);
    assert.throws(() => make({ maxInFlight: 1.5 }), /maxInFlight/);
    assert.throws(() => make({ workerId: "" }), /workerId must not be empty/);
    assert.throws(() => make({ reserveErrorBackoff: -1 }), /reserveErrorBackoff/);
  });

  test("handlers chain, a second one for a type is refused, and the worker id defaults", () => {
    const worker = make({});
    const noop = () => {};
    assert.equal(worker.handle("a", noop).handle("b", noop).catchAll(noop), worker);
    assert.throws(() => worker.handle("a", noop), /already registered/);
    assert.throws(() => worker.handle("", noop), ValidationError);
    assert.match(worker.workerId, /-\d+-[0-9a-f]{8}$/);
    assert.equal(make({ workerId: "w-1" }).workerId, "w-1");
  });

  test("a shutdown handle is shared, and an aborted signal shuts down", () => {
    const worker = make({});
    assert.equal(worker.shutdownHandle(), worker.shutdownHandle());
    assert.equal(worker.shutdownHandle().isShutdown, false);
    worker.shutdownHandle().shutdown();
    worker.shutdownHandle().shutdown();
    assert.equal(worker.shutdownHandle().isShutdown, true);
    const controller = new AbortController();
    const signalled = make({ signal: controller.signal });
    controller.abort();
    assert.equal(signalled.shutdownHandle().isShutdown, true);
  });
});

describe("Slots", () => {
  test("acquire waits for a release, in order, and gives up on abort", async () => {
    const slots = new Slots(1);
    assert.equal(await slots.acquire(), true);
    assert.equal(slots.free, 0);
    const order: string[] = [];
    const first = slots.acquire().then((got) => order.push(`first ${got}`));
    const controller = new AbortController();
    const abandoned = slots.acquire(controller.signal).then((got) => order.push(`abandoned ${got}`));
    const second = slots.acquire().then((got) => order.push(`second ${got}`));
    controller.abort();
    await abandoned;
    slots.release();
    await first;
    slots.release();
    await second;
    assert.deepEqual(order, ["abandoned false", "first true", "second true"]);
    slots.release();
    assert.equal(slots.free, 1);
    assert.equal(await slots.acquire(AbortSignal.abort()), false);
  });

  test("pause wakes early on abort", async () => {
    const controller = new AbortController();
    const paused = pause(60_000, controller.signal);
    controller.abort();
    await paused; // resolves without the minute passing (the test would time out otherwise)
  });
});
