/** The error hierarchy, the status mapping, and rejections as values. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Metadata, status } from "@grpc/grpc-js";
import {
  AttemptMismatchError,
  BatchValidationError,
  ClientError,
  cancelErrorFromStatus,
  errorFromStatus,
  InvalidRequestError,
  JobCancelledError,
  JobDeadLetteredError,
  JobNotFoundError,
  JobRejectedError,
  LeaseError,
  leaseErrorFromStatus,
  OverloadedError,
  reserveErrorFromStatus,
  SeppError,
  ServerInternalError,
  TransportError,
  UnauthenticatedError,
  UnexpectedStatusError,
  UnknownQueuesError,
} from "../../src/errors.js";
import { describeJobRejection, isJobRejection, type JobRejection } from "../../src/rejection.js";

const map = (code: number) => errorFromStatus({ code, details: "m" });

describe("status mapping", () => {
  test("status codes map onto the client errors", () => {
    for (const code of [status.UNAVAILABLE, status.DEADLINE_EXCEEDED, status.ABORTED, status.CANCELLED]) {
      const error = map(code);
      assert.ok(error instanceof TransportError, status[code]);
      assert.equal(error.code, code);
      assert.equal(error.details, "m");
    }
    for (const code of [status.UNAUTHENTICATED, status.PERMISSION_DENIED])
      assert.ok(map(code) instanceof UnauthenticatedError);
    assert.ok(map(status.RESOURCE_EXHAUSTED) instanceof OverloadedError);
    assert.ok(map(status.INVALID_ARGUMENT) instanceof InvalidRequestError);
    for (const code of [status.INTERNAL, status.DATA_LOSS, status.UNKNOWN])
      assert.ok(map(code) instanceof ServerInternalError);
    for (const code of [
      status.NOT_FOUND,
      status.FAILED_PRECONDITION,
      status.ALREADY_EXISTS,
      status.UNIMPLEMENTED,
    ]) {
      const error = map(code);
      assert.ok(error instanceof UnexpectedStatusError, status[code]);
      assert.match(error.message, new RegExp(status[code] as string));
    }
  });

  test("lease calls map NOT_FOUND and FAILED_PRECONDITION, reserve maps FAILED_PRECONDITION", () => {
    assert.ok(leaseErrorFromStatus({ code: status.NOT_FOUND, details: "x" }) instanceof JobNotFoundError);
    assert.ok(
      leaseErrorFromStatus({ code: status.FAILED_PRECONDITION, details: "x" }) instanceof
        AttemptMismatchError,
    );
    assert.ok(leaseErrorFromStatus({ code: status.UNAVAILABLE, details: "x" }) instanceof TransportError);
    const unknown = reserveErrorFromStatus({ code: status.FAILED_PRECONDITION, details: "queue nope" });
    assert.ok(unknown instanceof UnknownQueuesError);
    assert.match(unknown.message, /queue nope/);
    assert.ok(
      reserveErrorFromStatus({ code: status.NOT_FOUND, details: "x" }) instanceof UnexpectedStatusError,
    );
  });

  test("every error extends SeppError, and carries its class name", () => {
    const errors = [
      map(status.UNAVAILABLE),
      new JobNotFoundError(),
      new AttemptMismatchError(),
      new UnknownQueuesError("u"),
    ];
    for (const error of errors) assert.ok(error instanceof SeppError && error instanceof Error);
    assert.ok(map(status.UNAVAILABLE) instanceof ClientError);
    assert.ok(new JobNotFoundError() instanceof LeaseError);
    assert.equal(new JobNotFoundError().name, "JobNotFoundError");
    assert.equal(map(status.INTERNAL).name, "ServerInternalError");
  });
});

describe("rejections", () => {
  const full: JobRejection = { kind: "queueFull", queue: "q", limit: 10 };

  test("isJobRejection tells rejections from acks", () => {
    assert.equal(isJobRejection(full), true);
    assert.equal(isJobRejection({ kind: "unknown" }), true);
    assert.equal(isJobRejection({ jobId: "j", deduplicated: false }), false);
    assert.equal(isJobRejection(null), false);
  });

  test("describeJobRejection reads like a sentence", () => {
    assert.equal(describeJobRejection(full), 'queue "q" is full (limit 10 jobs)');
    assert.equal(
      describeJobRejection({ kind: "encodingNotAllowed", encoding: "x/y", allowed: ["application/json"] }),
      'encoding "x/y" not allowed (allowed: "application/json")',
    );
    assert.equal(
      describeJobRejection({ kind: "unknown" }),
      "rejected for a reason this client version does not know",
    );
  });

  test("the rejection errors carry their rejections", () => {
    const rejected = new JobRejectedError(full);
    assert.equal(rejected.rejection, full);
    assert.match(rejected.message, /is full/);
    const batch = new BatchValidationError([{ index: 1, rejection: full }]);
    assert.equal(batch.errors[0]?.index, 1);
    assert.match(batch.message, /job 1: queue "q" is full/);
  });
});

describe("cancellation", () => {
  const trailers = (entries: Array<[string, string]>) => {
    const metadata = new Metadata();
    for (const [key, value] of entries) metadata.add(key, value);
    return metadata;
  };
  const notFound = (entries: Array<[string, string]>, details = "job was cancelled") =>
    leaseErrorFromStatus({ code: status.NOT_FOUND, details, metadata: trailers(entries) });

  test("NOT_FOUND with sepp-cancelled: true is a JobCancelledError, which is a JobNotFoundError", () => {
    const error = notFound([["sepp-cancelled", "true"]]);
    assert.ok(error instanceof JobCancelledError);
    assert.ok(error instanceof JobNotFoundError);
    assert.ok(error instanceof LeaseError);
    assert.equal(error.name, "JobCancelledError");
    assert.match(error.message, /job was cancelled/);
    assert.ok(notFound([["Sepp-Cancelled", "TRUE"]]) instanceof JobCancelledError);
  });

  test("NOT_FOUND without the trailer stays a plain JobNotFoundError", () => {
    for (const entries of [[], [["sepp-cancelled", "false"]], [["other", "true"]]] as Array<
      Array<[string, string]>
    >) {
      const error = notFound(entries, "job not found");
      assert.ok(error instanceof JobNotFoundError, JSON.stringify(entries));
      assert.ok(!(error instanceof JobCancelledError), JSON.stringify(entries));
    }
    // The message alone does not make a cancellation, and neither does a missing metadata object.
    const bare = leaseErrorFromStatus({ code: status.NOT_FOUND, details: "job was cancelled" });
    assert.ok(bare instanceof JobNotFoundError && !(bare instanceof JobCancelledError));
  });

  test("the trailer on another code changes nothing", () => {
    const error = leaseErrorFromStatus({
      code: status.UNAVAILABLE,
      details: "x",
      metadata: trailers([["sepp-cancelled", "true"]]),
    });
    assert.ok(error instanceof TransportError);
  });

  test("cancel maps NOT_FOUND, FAILED_PRECONDITION and INVALID_ARGUMENT", () => {
    const unknown = cancelErrorFromStatus({ code: status.NOT_FOUND, details: "job not found" });
    assert.ok(unknown instanceof JobNotFoundError && !(unknown instanceof JobCancelledError));
    const dead = cancelErrorFromStatus({ code: status.FAILED_PRECONDITION, details: "dead" });
    assert.ok(dead instanceof JobDeadLetteredError);
    assert.ok(dead instanceof SeppError && !(dead instanceof LeaseError));
    assert.ok(
      cancelErrorFromStatus({ code: status.INVALID_ARGUMENT, details: "x" }) instanceof InvalidRequestError,
    );
    assert.ok(cancelErrorFromStatus({ code: status.UNAVAILABLE, details: "x" }) instanceof TransportError);
    assert.ok(
      cancelErrorFromStatus({ code: status.UNIMPLEMENTED, details: "x" }) instanceof UnexpectedStatusError,
    );
  });
});
