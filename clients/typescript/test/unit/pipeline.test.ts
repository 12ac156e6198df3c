/**
 * The enqueue pipeline with scripted sends: what one turn of the event loop sends, the lanes, the
 * calls in flight, the bounds of a shared call, what each caller gets back, and the resend per
 * caller of a shared call refused as a whole.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { status } from "@grpc/grpc-js";
import { BatchResultCountMismatchError } from "../../src/errors.js";
import * as wire from "../../src/gen/sepp/v1/queue.js";
import { EnqueuePipeline, MAX_BYTES_PER_CALL, MAX_JOBS_PER_CALL } from "../../src/pipeline.js";

/** A batch of `count` jobs named `<name>-<i>`, encoded. */
function batch(name: string, count = 1, payloadBytes = 0): Buffer {
  const jobs: wire.EnqueueRequest[] = Array.from({ length: count }, (_, i) => ({
    ...wire.EnqueueRequest.decode(new Uint8Array()),
    queue: "q",
    jobType: `${name}-${i}`,
    payload:
      payloadBytes > 0
        ? { data: Buffer.alloc(payloadBytes), encoding: "application/octet-stream" }
        : undefined,
  }));
  return Buffer.from(wire.EnqueueBatchRequest.encode({ jobs }).finish());
}

/** The job types of a sent request, in order. */
function sentTypes(request: Buffer): string[] {
  return wire.EnqueueBatchRequest.decode(request).jobs.map((job) => job.jobType);
}

/** Answers every job with a success whose job id is its job type. */
function answer(request: Buffer): wire.EnqueueBatchResponse {
  return {
    results: sentTypes(request).map((jobType) => ({
      outcome: { $case: "success", value: { jobId: jobType, deduplicated: false } },
    })),
  };
}

const ids = (results: wire.JobResult[]) =>
  results.map((result) => (result.outcome?.$case === "success" ? result.outcome.value.jobId : "?"));

function statusError(code: status) {
  return Object.assign(new Error(status[code]), { code, details: status[code] });
}

describe("EnqueuePipeline", () => {
  test("the callers of one turn share one call; each gets its own results", async () => {
    const sent: Array<{ types: string[]; keyed: boolean }> = [];
    const pipeline = new EnqueuePipeline(async (request, keyed) => {
      sent.push({ types: sentTypes(request), keyed });
      return answer(request);
    });
    const results = await Promise.all([
      pipeline.submit(batch("a"), 1, false),
      pipeline.submit(batch("b", 2), 2, false),
      pipeline.submit(batch("k"), 1, true),
    ]);
    assert.deepEqual(results.map(ids), [["a-0"], ["b-0", "b-1"], ["k-0"]]);
    // Keyed and keyless jobs go apart: they are retried under different rules.
    assert.deepEqual(sent, [
      { types: ["a-0", "b-0", "b-1"], keyed: false },
      { types: ["k-0"], keyed: true },
    ]);
  });

  test("a lone caller's batch goes out as it is", async () => {
    const sent: Buffer[] = [];
    const pipeline = new EnqueuePipeline(async (request) => {
      sent.push(request);
      return answer(request);
    });
    const encoded = batch("a", 3);
    assert.deepEqual(ids(await pipeline.submit(encoded, 3, false)), ["a-0", "a-1", "a-2"]);
    assert.equal(sent[0], encoded);
  });

  test("with every call in flight, the callers that come meanwhile wait and go together", async () => {
    const sent: string[][] = [];
    const answers: Array<() => void> = [];
    const pipeline = new EnqueuePipeline((request) => {
      sent.push(sentTypes(request));
      return new Promise((resolve) => answers.push(() => resolve(answer(request))));
    }, 1);
    const first = pipeline.submit(batch("a"), 1, false);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(sent.length, 1);
    const later = [
      pipeline.submit(batch("b"), 1, false),
      pipeline.submit(batch("c"), 1, false),
      pipeline.submit(batch("d"), 1, false),
    ];
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(sent.length, 1); // the one call allowed is still in flight
    answers.shift()?.();
    assert.deepEqual(ids(await first), ["a-0"]);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(sent[1], ["b-0", "c-0", "d-0"]);
    answers.shift()?.();
    assert.deepEqual((await Promise.all(later)).map(ids), [["b-0"], ["c-0"], ["d-0"]]);
  });

  test("a shared call holds at most MAX_JOBS_PER_CALL jobs and about MAX_BYTES_PER_CALL bytes; a batch is never split", async () => {
    const sent: number[] = [];
    const pipeline = new EnqueuePipeline(async (request) => {
      sent.push(sentTypes(request).length);
      return answer(request);
    });
    const half = MAX_JOBS_PER_CALL / 2;
    await Promise.all([
      pipeline.submit(batch("a", half), half, false),
      pipeline.submit(batch("b", half), half, false),
      pipeline.submit(batch("c", 1), 1, false),
      pipeline.submit(batch("d", MAX_JOBS_PER_CALL + 1), MAX_JOBS_PER_CALL + 1, false),
    ]);
    assert.deepEqual(sent, [MAX_JOBS_PER_CALL, 1, MAX_JOBS_PER_CALL + 1]);
    sent.length = 0;
    const big = Math.ceil(MAX_BYTES_PER_CALL / 2);
    await Promise.all([
      pipeline.submit(batch("x", 1, big), 1, false),
      pipeline.submit(batch("y", 1, big), 1, false),
    ]);
    assert.deepEqual(sent, [1, 1]);
  });

  test("a shared call refused INVALID_ARGUMENT is resent per caller; other failures are everyone's", async () => {
    const sent: string[][] = [];
    const pipeline = new EnqueuePipeline(async (request) => {
      const types = sentTypes(request);
      sent.push(types);
      if (types.length > 2) throw statusError(status.INVALID_ARGUMENT);
      return answer(request);
    });
    const outcomes = await Promise.allSettled([
      pipeline.submit(batch("a"), 1, false),
      pipeline.submit(batch("b", 2), 2, false),
      pipeline.submit(batch("c", 3), 3, false),
    ]);
    assert.deepEqual(sent, [
      ["a-0", "b-0", "b-1", "c-0", "c-1", "c-2"],
      ["a-0"],
      ["b-0", "b-1"],
      ["c-0", "c-1", "c-2"],
    ]);
    assert.deepEqual(outcomes[0], { status: "fulfilled", value: answer(batch("a")).results });
    assert.equal(outcomes[1]?.status, "fulfilled");
    assert.equal((outcomes[2] as PromiseRejectedResult).reason.code, status.INVALID_ARGUMENT);

    const failing = new EnqueuePipeline(async () => {
      throw statusError(status.UNAVAILABLE);
    });
    const both = await Promise.allSettled([
      failing.submit(batch("a"), 1, false),
      failing.submit(batch("b"), 1, false),
    ]);
    for (const outcome of both)
      assert.equal((outcome as PromiseRejectedResult).reason.code, status.UNAVAILABLE);
  });

  test("an answer with the wrong number of results fails every sharer", async () => {
    const pipeline = new EnqueuePipeline(async () => ({ results: [] }));
    const both = await Promise.allSettled([
      pipeline.submit(batch("a"), 1, false),
      pipeline.submit(batch("b"), 1, false),
    ]);
    for (const outcome of both)
      assert.ok((outcome as PromiseRejectedResult).reason instanceof BatchResultCountMismatchError);
  });
});
