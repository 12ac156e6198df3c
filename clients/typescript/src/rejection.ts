/**
 * Why the server refused one job: the {@link JobRejection} union (a value, not an error, in the
 * results of `enqueueBatch`), with {@link isJobRejection} to tell it from an ack and
 * {@link describeJobRejection} for a readable sentence.
 *
 * Every reason is deterministic (the same job is refused again under the same configuration) except
 * `queueFull` and `queueClosing`. A reason this version does not know is `{ kind: "unknown" }`.
 */

export type JobRejection =
  | { kind: "unknownQueue"; queue: string }
  | { kind: "payloadTooLarge"; limit: number; actual: number }
  | { kind: "encodingNotAllowed"; encoding: string; allowed: string[] }
  | { kind: "jobTypeNotAllowed"; jobType: string; allowed: string[] }
  | { kind: "customEntriesTooMany"; limit: number; actual: number }
  | { kind: "customMapTooLarge"; limit: number; actual: number }
  | { kind: "customKeyTooLong"; key: string; limit: number; actual: number }
  | { kind: "queueNameTooLong"; limit: number; actual: number }
  | { kind: "jobTypeNameTooLong"; limit: number; actual: number }
  | { kind: "idempotencyKeyTooLong"; limit: number; actual: number }
  /** `horizon` in milliseconds; `actual` is the requested delivery time. */
  | { kind: "scheduledTooFar"; horizon: number; actual: Date }
  | { kind: "invalidRequest"; message: string }
  | { kind: "queueFull"; queue: string; limit: number }
  | { kind: "queueClosing"; queue: string }
  | { kind: "unknown" };

/** The kinds of rejection. */
export type JobRejectionKind = JobRejection["kind"];

/** Whether a batch result is a rejection (rather than an `EnqueueAck`). */
export function isJobRejection(result: unknown): result is JobRejection {
  return (
    typeof result === "object" &&
    result !== null &&
    typeof (result as { kind?: unknown }).kind === "string" &&
    !("jobId" in result)
  );
}

/** A one-line description of a rejection, for logs and error messages. */
export function describeJobRejection(rejection: JobRejection): string {
  const list = (values: string[]) => values.map((value) => JSON.stringify(value)).join(", ");
  switch (rejection.kind) {
    case "unknownQueue":
      return `unknown queue ${JSON.stringify(rejection.queue)}`;
    case "payloadTooLarge":
      return `payload too large: ${rejection.actual} bytes, limit ${rejection.limit}`;
    case "encodingNotAllowed":
      return `encoding ${JSON.stringify(rejection.encoding)} not allowed (allowed: ${list(rejection.allowed)})`;
    case "jobTypeNotAllowed":
      return `job type ${JSON.stringify(rejection.jobType)} not allowed (allowed: ${list(rejection.allowed)})`;
    case "customEntriesTooMany":
      return `too many custom entries: ${rejection.actual}, limit ${rejection.limit}`;
    case "customMapTooLarge":
      return `custom map too large: ${rejection.actual} bytes, limit ${rejection.limit}`;
    case "customKeyTooLong":
      return `custom key ${JSON.stringify(rejection.key)} too long: ${rejection.actual} bytes, limit ${rejection.limit}`;
    case "queueNameTooLong":
      return `queue name too long: ${rejection.actual} bytes, limit ${rejection.limit}`;
    case "jobTypeNameTooLong":
      return `job type too long: ${rejection.actual} bytes, limit ${rejection.limit}`;
    case "idempotencyKeyTooLong":
      return `idempotency key too long: ${rejection.actual} bytes, limit ${rejection.limit}`;
    case "scheduledTooFar":
      return `scheduled too far ahead: ${rejection.actual.toISOString()} is beyond the horizon of ${rejection.horizon} ms`;
    case "invalidRequest":
      return `invalid request: ${rejection.message}`;
    case "queueFull":
      return `queue ${JSON.stringify(rejection.queue)} is full (limit ${rejection.limit} jobs)`;
    case "queueClosing":
      return `queue ${JSON.stringify(rejection.queue)} is closing`;
    case "unknown":
      return "rejected for a reason this client version does not know";
  }
}
