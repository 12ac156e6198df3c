/**
 * The ack pipeline with scripted sends: what one turn of the event loop sends, what each caller
 * gets back, the fallback to plain Acks, and the mapping of a batch item's error.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { status } from "@grpc/grpc-js";
import { AckPipeline, CANCELLED_MESSAGE, itemError, MAX_ACKS_PER_CALL } from "../../src/acks.js";
import {
  AttemptMismatchError,
  BatchResultCountMismatchError,
  JobCancelledError,
  JobNotFoundError,
  leaseErrorFromStatus,
  MalformedResponseError,
  UnexpectedStatusError,
} from "../../src/errors.js";
import type * as wire from "../../src/gen/sepp/v1/queue.js";

type Sent = { kind: "ack"; request: wire.AckRequest } | { kind: "batch"; request: wire.AckBatchRequest };

/** A status error as grpc-js raises it. */
function statusError(code: status, details: string) {
  return Object.assign(new Error(details), { code, details });
}

/** One turn of the event loop later: after the pipeline's flush has run and its sends settled. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** A pipeline whose sends are recorded and answered by the given scripts. */
function scripted(
  options: {
    one?: (request: wire.AckRequest) => Promise<unknown>;
    batch?: (request: wire.AckBatchRequest) => Promise<wire.AckBatchResponse>;
  } = {},
) {
  const sent: Sent[] = [];
  const pipeline = new AckPipeline(
    (request) => {
      sent.push({ kind: "ack", request });
      return options.one ? options.one(request) : Promise.resolve({});
    },
    (request) => {
      sent.push({ kind: "batch", request });
      return options.batch
        ? options.batch(request)
        : Promise.resolve({ results: request.acks.map((a) => success(a.jobId)) });
    },
  );
  return { pipeline, sent };
}

function success(jobId: string): wire.AckResult {
  return { outcome: { $case: "success", value: { jobId } } };
}

function ack(n: number): wire.AckRequest {
  return { jobId: `job-${n}`, attempt: 1, workerId: "w" };
}

/** Every outcome, as "ok" or the error, without rejecting. */
function settled(promises: Promise<void>[]): Promise<unknown[]> {
  return Promise.all(
    promises.map((p) =>
      p.then(
        () => "ok" as const,
        (error: unknown) => error,
      ),
    ),
  );
}

describe("AckPipeline", () => {
  test("the acks of one turn share one AckBatch, in order", async () => {
    const { pipeline, sent } = scripted();
    const outcomes = await settled([1, 2, 3].map((n) => pipeline.submit(ack(n))));
    assert.deepEqual(outcomes, ["ok", "ok", "ok"]);
    assert.equal(sent.length, 1);
    assert.deepEqual(sent[0], { kind: "batch", request: { acks: [ack(1), ack(2), ack(3)] } });
  });

  test("acks made in the microtasks of a turn join its batch", async () => {
    const { pipeline, sent } = scripted();
    // As a Worker's handlers do: each ack a few promise hops after the previous one.
    const chained = async (n: number, hops: number) => {
      for (let i = 0; i < hops; i++) await Promise.resolve();
      return pipeline.submit(ack(n));
    };
    await settled([chained(1, 0), chained(2, 5), chained(3, 20)]);
    assert.equal(sent.length, 1);
    assert.equal(sent[0]?.kind, "batch");
  });

  test("acks of later turns go in later calls", async () => {
    const { pipeline, sent } = scripted();
    const first = [pipeline.submit(ack(1)), pipeline.submit(ack(2))];
    await nextTurn();
    const second = [pipeline.submit(ack(3)), pipeline.submit(ack(4))];
    await settled([...first, ...second]);
    assert.deepEqual(
      sent.map((s) => (s.kind === "batch" ? s.request.acks.map((a) => a.jobId) : [s.request.jobId])),
      [
        ["job-1", "job-2"],
        ["job-3", "job-4"],
      ],
    );
  });

  test("a lone ack is a plain Ack", async () => {
    const { pipeline, sent } = scripted();
    await pipeline.submit(ack(1));
    assert.deepEqual(sent, [{ kind: "ack", request: ack(1) }]);
  });

  test("each caller gets its own item's outcome", async () => {
    const { pipeline } = scripted({
      batch: async (): Promise<wire.AckBatchResponse> => ({
        results: [
          success("job-1"),
          {
            outcome: {
              $case: "error",
              value: { code: status.NOT_FOUND, message: "job not found", cancelled: false },
            },
          },
          {
            outcome: {
              $case: "error",
              value: { code: status.FAILED_PRECONDITION, message: "attempt mismatch", cancelled: false },
            },
          },
          {
            outcome: {
              $case: "error",
              value: { code: status.NOT_FOUND, message: CANCELLED_MESSAGE, cancelled: false },
            },
          },
          { outcome: undefined },
        ],
      }),
    });
    const outcomes = await settled([1, 2, 3, 4, 5].map((n) => pipeline.submit(ack(n))));
    assert.equal(outcomes[0], "ok");
    const lease = (error: unknown) => leaseErrorFromStatus(error as never);
    assert.ok(lease(outcomes[1]) instanceof JobNotFoundError);
    assert.ok(!(lease(outcomes[1]) instanceof JobCancelledError));
    assert.ok(lease(outcomes[2]) instanceof AttemptMismatchError);
    assert.ok(lease(outcomes[3]) instanceof JobCancelledError);
    assert.ok(outcomes[4] instanceof MalformedResponseError);
  });

  test("after UNIMPLEMENTED the flush is resent one Ack each, and AckBatch is never tried again", async () => {
    const { pipeline, sent } = scripted({
      batch: () => Promise.reject(statusError(status.UNIMPLEMENTED, "unknown method")),
      one: async (request) => {
        if (request.jobId === "job-2") throw statusError(status.NOT_FOUND, "job not found");
        return {};
      },
    });
    const outcomes = await settled([1, 2, 3].map((n) => pipeline.submit(ack(n))));
    assert.equal(outcomes[0], "ok");
    assert.equal((outcomes[1] as { code: number }).code, status.NOT_FOUND);
    assert.equal(outcomes[2], "ok");
    assert.equal(pipeline.batchSupported, false);
    assert.deepEqual(
      sent.map((s) => s.kind),
      ["batch", "ack", "ack", "ack"],
    );
    await settled([4, 5, 6].map((n) => pipeline.submit(ack(n))));
    assert.deepEqual(
      sent.slice(4).map((s) => s.kind),
      ["ack", "ack", "ack"],
    );
  });

  test("a failed shared call is every sharer's failure", async () => {
    const failure = statusError(status.UNAVAILABLE, "connection reset");
    const { pipeline, sent } = scripted({ batch: () => Promise.reject(failure) });
    const outcomes = await settled([1, 2, 3].map((n) => pipeline.submit(ack(n))));
    assert.deepEqual(outcomes, [failure, failure, failure]);
    assert.equal(sent.length, 1);
    assert.equal(pipeline.batchSupported, true);
  });

  test("a short answer fails every sharer", async () => {
    const { pipeline } = scripted({
      batch: async () => ({ results: [success("job-1")] }),
    });
    const outcomes = await settled([1, 2, 3].map((n) => pipeline.submit(ack(n))));
    for (const outcome of outcomes) {
      assert.ok(outcome instanceof BatchResultCountMismatchError);
      assert.equal(outcome.expected, 3);
      assert.equal(outcome.got, 1);
    }
  });

  test("more than 256 acks in a turn go in chunks of at most 256", async () => {
    const { pipeline, sent } = scripted();
    const count = 2 * MAX_ACKS_PER_CALL + 1;
    const outcomes = await settled(Array.from({ length: count }, (_, n) => pipeline.submit(ack(n))));
    assert.equal(outcomes.filter((o) => o === "ok").length, count);
    assert.equal(MAX_ACKS_PER_CALL, 256);
    // The last chunk holds one ack: a plain Ack.
    assert.deepEqual(
      sent.map((s) => (s.kind === "batch" ? s.request.acks.length : "ack")),
      [256, 256, "ack"],
    );
    const ids = sent.flatMap((s) => (s.kind === "batch" ? s.request.acks : [s.request])).map((a) => a.jobId);
    assert.deepEqual(
      ids,
      Array.from({ length: count }, (_, n) => `job-${n}`),
    );
  });
});

describe("itemError", () => {
  test("carries the item's code and message, as a status error", () => {
    const error = itemError(status.NOT_FOUND, "job not found");
    assert.equal(error.code, status.NOT_FOUND);
    assert.equal(error.details, "job not found");
    assert.deepEqual(error.metadata.get("sepp-cancelled"), []);
  });

  test("the cancelled message gets the sepp-cancelled trailer; only with NOT_FOUND", () => {
    assert.deepEqual(itemError(status.NOT_FOUND, CANCELLED_MESSAGE).metadata.get("sepp-cancelled"), ["true"]);
    assert.deepEqual(itemError(status.NOT_FOUND, "gone", true).metadata.get("sepp-cancelled"), ["true"]);
    const other = itemError(status.FAILED_PRECONDITION, CANCELLED_MESSAGE);
    assert.deepEqual(other.metadata.get("sepp-cancelled"), []);
    assert.ok(leaseErrorFromStatus(other) instanceof AttemptMismatchError);
  });

  test("OK or an unknown code is UNKNOWN", () => {
    assert.equal(itemError(status.OK, "x").code, status.UNKNOWN);
    assert.equal(itemError(999, "x").code, status.UNKNOWN);
    assert.ok(leaseErrorFromStatus(itemError(status.UNIMPLEMENTED, "x")) instanceof UnexpectedStatusError);
  });
});
