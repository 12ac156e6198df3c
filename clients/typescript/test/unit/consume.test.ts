/**
 * A Consume stream's session on a scripted duplex: the opening, settles and credits of one turn in
 * one message, the bounds on settles per message and on credits outstanding, each settle's result
 * as its unary call would give it, and what the settles left get when the stream ends.
 */
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { describe, test } from "node:test";
import { Metadata, status } from "@grpc/grpc-js";
import { ConsumeSession, NotSentError } from "../../src/consume.js";
import { JobCancelledError, JobNotFoundError, leaseErrorFromStatus } from "../../src/errors.js";
import type * as wire from "../../src/gen/sepp/v1/queue.js";

/** A client duplex stream that records what is written and lets the test answer and end it. */
class FakeCall extends EventEmitter {
  readonly written: wire.ConsumeRequest[] = [];
  ended = false;
  write(message: wire.ConsumeRequest): boolean {
    this.written.push(message);
    return true;
  }
  end(): void {
    this.ended = true;
  }
  cancel(): void {
    this.finish(status.CANCELLED, "cancelled");
  }
  respond(response: Partial<wire.ConsumeResponse>): void {
    this.emit("data", { jobs: [], results: [], cancelled: [], ...response });
  }
  finish(code: status, details = "", metadata = new Metadata()): void {
    this.emit("status", { code, details, metadata });
    this.emit("close");
  }
}

function session(limits = { maxCredits: 100, maxSettles: 256 }, credits = 4) {
  const call = new FakeCall();
  const pushed: wire.Job[] = [];
  const cancelled: string[] = [];
  const made = new ConsumeSession(
    call as never,
    { queues: ["q"], leaseDuration: { seconds: 30n, nanos: 0 }, workerId: "w" },
    credits,
    limits,
    { jobs: (jobs) => pushed.push(...jobs), cancelled: (ids) => cancelled.push(...ids) },
  );
  return { call, session: made, pushed, cancelled };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));
const ack = (jobId: string) => ({ $case: "ack" as const, value: { jobId, attempt: 1, workerId: "w" } });
const job = (id: string) => ({ id }) as wire.Job;

describe("ConsumeSession", () => {
  test("opens with the credits, then sends a turn's settles and credits in one message", async () => {
    const { call, session: s } = session();
    assert.deepEqual(call.written[0]?.open?.credits, 4);
    assert.deepEqual(call.written[0]?.open?.queues, ["q"]);
    const first = s.settle(ack("a"));
    s.grant(1);
    const second = s.settle(ack("b"));
    await turn();
    assert.equal(call.written.length, 2);
    const message = call.written[1] as wire.ConsumeRequest;
    assert.equal(message.credits, 1);
    assert.deepEqual(
      message.settles.map((settle) => settle.op?.value.jobId),
      ["a", "b"],
    );
    call.respond({
      results: [
        { id: message.settles[1]?.id ?? 0n, outcome: { $case: "ack", value: { jobId: "b" } } },
        {
          id: message.settles[0]?.id ?? 0n,
          outcome: { $case: "error", value: { code: status.NOT_FOUND, message: "gone", cancelled: true } },
        },
      ],
    });
    assert.deepEqual(await second, { $case: "ack", value: { jobId: "b" } });
    const error = await first?.catch((e: unknown) => e);
    const mapped = leaseErrorFromStatus(error as never);
    assert.ok(mapped instanceof JobCancelledError, String(mapped));
  });

  test("at most maxSettles settles per message", async () => {
    const { call, session: s } = session({ maxCredits: 100, maxSettles: 2 });
    for (const id of ["a", "b", "c", "d", "e"]) s.settle(ack(id))?.catch(() => {});
    await turn();
    assert.deepEqual(
      call.written.slice(1).map((message) => message.settles.length),
      [2, 2, 1],
    );
  });

  test("credits outstanding stay within maxCredits; the rest is granted as pushes use some", async () => {
    const { call, session: s, pushed } = session({ maxCredits: 5, maxSettles: 256 }, 8);
    assert.equal(call.written[0]?.open?.credits, 5);
    s.grant(2);
    await turn();
    assert.equal(call.written.length, 1); // nothing more while 5 are outstanding
    call.respond({ jobs: [job("1"), job("2"), job("3")] });
    assert.equal(pushed.length, 3);
    await turn();
    assert.equal(call.written[1]?.credits, 3); // 3 of the 5 owed (3 + the 2 granted)
    call.respond({ jobs: [job("4"), job("5"), job("6"), job("7"), job("8")] });
    await turn();
    assert.equal(call.written[2]?.credits, 2);
  });

  test("cancelled ids are passed on", () => {
    const { call, cancelled } = session();
    call.respond({ cancelled: ["x", "y"] });
    assert.deepEqual(cancelled, ["x", "y"]);
  });

  test("at the end, settles not sent reject NotSentError and settles not answered the stream's status", async () => {
    const { call, session: s } = session();
    const sent = s.settle(ack("a"));
    await turn();
    const unsent = s.settle(ack("b"));
    const metadata = new Metadata();
    metadata.set("sepp-leader", "127.0.0.1:1");
    call.finish(status.UNAVAILABLE, "not the leader", metadata);
    const end = await s.ended;
    assert.equal(end.status.code, status.UNAVAILABLE);
    assert.equal(end.received, false);
    assert.ok((await unsent?.catch((e: unknown) => e)) instanceof NotSentError);
    const error = (await sent?.catch((e: unknown) => e)) as { code: number; metadata: Metadata };
    assert.equal(error.code, status.UNAVAILABLE);
    assert.ok(leaseErrorFromStatus(error as never) instanceof Error);
    assert.equal(s.settle(ack("c")), undefined); // later settles go on calls of their own
  });

  test("half-closing sends what waits, then ends the writes", async () => {
    const { call, session: s } = session();
    const pending = s.settle(ack("a"));
    s.halfClose();
    assert.equal(call.ended, true);
    assert.deepEqual(
      call.written[1]?.settles.map((settle) => settle.op?.value.jobId),
      ["a"],
    );
    assert.equal(s.settle(ack("b")), undefined);
    call.respond({
      results: [
        {
          id: call.written[1]?.settles[0]?.id ?? 0n,
          outcome: { $case: "error", value: { code: status.NOT_FOUND, message: "gone", cancelled: false } },
        },
      ],
    });
    const error = leaseErrorFromStatus((await pending?.catch((e: unknown) => e)) as never);
    assert.ok(error instanceof JobNotFoundError && !(error instanceof JobCancelledError));
    call.finish(status.OK);
    assert.equal((await s.ended).status.code, status.OK);
  });
});
