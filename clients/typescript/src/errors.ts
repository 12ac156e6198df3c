/**
 * The error classes (all extend {@link SeppError}) and the one function that maps a gRPC status onto
 * them ({@link errorFromStatus}).
 *
 * Status mapping: UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED and CANCELLED are {@link TransportError};
 * UNAUTHENTICATED and PERMISSION_DENIED are {@link UnauthenticatedError}; RESOURCE_EXHAUSTED is
 * {@link OverloadedError}; INVALID_ARGUMENT is {@link InvalidRequestError}; INTERNAL, DATA_LOSS and
 * UNKNOWN are {@link ServerInternalError}; any other code is {@link UnexpectedStatusError}. Ack, nack
 * and extend turn NOT_FOUND into {@link JobNotFoundError} ({@link JobCancelledError} when it carries
 * the trailer `sepp-cancelled: true`) and FAILED_PRECONDITION into {@link AttemptMismatchError};
 * reserve turns FAILED_PRECONDITION into {@link UnknownQueuesError}; cancel turns NOT_FOUND into
 * {@link JobNotFoundError} and FAILED_PRECONDITION into {@link JobDeadLetteredError}; the schedule
 * calls turn FAILED_PRECONDITION into {@link ScheduleLimitError}.
 */
import { status as Status } from "@grpc/grpc-js";
import { describeJobRejection, type JobRejection } from "./rejection.js";

/** The base class of every error this package throws. */
export class SeppError extends Error {
  override name = "SeppError";
}

/** Bad input to a client method (an empty queue name, a priority of 12, ...): nothing was sent. */
export class ValidationError extends SeppError {
  override name = "ValidationError";
}

/** A failed call, or a response the client could not make sense of. */
export class ClientError extends SeppError {
  override name = "ClientError";
  /** The gRPC status code, when the failure came from one. */
  readonly code: number | undefined;
  /** The status message as the server (or grpc-js) gave it. */
  readonly details: string;

  constructor(message: string, options: { code?: number; details?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = options.code;
    this.details = options.details ?? message;
  }
}

/** The connection could not be established (or the address is unusable); `reason` is the root cause. */
export class ConnectError extends ClientError {
  override name = "ConnectError";
  constructor(
    readonly addr: string,
    readonly reason: string,
  ) {
    super(`could not connect to ${addr}: ${reason}`);
  }
}

/** The API key cannot be sent as a header value (it must be non-empty, printable ASCII). */
export class InvalidApiKeyError extends ClientError {
  override name = "InvalidApiKeyError";
  constructor() {
    super("the API key is not a valid header value (it must be non-empty printable ASCII)");
  }
}

/** The call failed in transit or ran out of time (UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED, CANCELLED). */
export class TransportError extends ClientError {
  override name = "TransportError";
}

/** The server refused the credentials (UNAUTHENTICATED, PERMISSION_DENIED). */
export class UnauthenticatedError extends ClientError {
  override name = "UnauthenticatedError";
}

/** The server is overloaded, or a message was larger than allowed (RESOURCE_EXHAUSTED). */
export class OverloadedError extends ClientError {
  override name = "OverloadedError";
}

/** The server refused the request as malformed (INVALID_ARGUMENT). */
export class InvalidRequestError extends ClientError {
  override name = "InvalidRequestError";
}

/** The server failed (INTERNAL, DATA_LOSS, UNKNOWN). */
export class ServerInternalError extends ClientError {
  override name = "ServerInternalError";
}

/** Any other status code. */
export class UnexpectedStatusError extends ClientError {
  override name = "UnexpectedStatusError";
}

/** An enqueue call was given no job; nothing was sent. */
export class EmptyBatchError extends ClientError {
  override name = "EmptyBatchError";
  constructor() {
    super("an enqueue batch needs at least one job");
  }
}

/** The server answered a batch with a different number of results than jobs were sent. */
export class BatchResultCountMismatchError extends ClientError {
  override name = "BatchResultCountMismatchError";
  constructor(
    readonly expected: number,
    readonly got: number,
  ) {
    super(`batch result count mismatch: sent ${expected} jobs, got ${got} results`);
  }
}

/** The response broke the protocol; the message says how. */
export class MalformedResponseError extends ClientError {
  override name = "MalformedResponseError";
}

/** `enqueue` got a rejection for its job. */
export class JobRejectedError extends SeppError {
  override name = "JobRejectedError";
  constructor(readonly rejection: JobRejection) {
    super(`job rejected: ${describeJobRejection(rejection)}`);
  }
}

/** One refused job of an atomic batch: its position in the request, and why. */
export interface JobValidationError {
  index: number;
  rejection: JobRejection;
}

/** `enqueueAtomic` was refused as a whole; `errors` lists every job that failed validation. */
export class BatchValidationError extends SeppError {
  override name = "BatchValidationError";
  constructor(readonly errors: JobValidationError[]) {
    const list = errors.map((error) => `job ${error.index}: ${describeJobRejection(error.rejection)}`);
    super(`atomic batch rejected (${list.join("; ")})`);
  }
}

/** The worker no longer holds the job's lease (ack, nack, extend). */
export class LeaseError extends SeppError {
  override name = "LeaseError";
}

/**
 * The job is no longer in flight: settled already, or its lease expired (NOT_FOUND). After a retried
 * ack or nack this can also mean an earlier attempt succeeded and only its answer was lost.
 */
export class JobNotFoundError extends LeaseError {
  override name = "JobNotFoundError";
  constructor(details = "") {
    super(`job not found (already settled, or its lease expired)${details ? `: ${details}` : ""}`);
  }
}

/**
 * The job was cancelled (`SeppClient.cancel`) while this lease held it: NOT_FOUND with the trailer
 * `sepp-cancelled: true`. The call that got it dead-lettered the job (cause `cancelled`); it is never
 * delivered again, and later calls for this lease throw a plain {@link JobNotFoundError}. It extends
 * `JobNotFoundError`, so code that handles a lost lease keeps working unchanged.
 */
export class JobCancelledError extends JobNotFoundError {
  override name = "JobCancelledError";
  constructor(details = "") {
    super(details);
    this.message = `job cancelled (it is dead-lettered and never delivered again)${details ? `: ${details}` : ""}`;
  }
}

/** The job was redelivered: this attempt's lease is no longer the current one (FAILED_PRECONDITION). */
export class AttemptMismatchError extends LeaseError {
  override name = "AttemptMismatchError";
  constructor(details = "") {
    super(`attempt mismatch (the job was redelivered to another attempt)${details ? `: ${details}` : ""}`);
  }
}

/**
 * The reason a Worker aborts `ctx.signal`: the lease could not be kept alive while the handler ran,
 * so the job belongs to another attempt now and this one's result is ignored.
 */
export class LeaseLostError extends LeaseError {
  override name = "LeaseLostError";
}

/** Reserve named a queue the server does not know while it runs with strict queues (FAILED_PRECONDITION). */
export class UnknownQueuesError extends SeppError {
  override name = "UnknownQueuesError";
}

/** `cancel` found the job already in the dead-letter queue (FAILED_PRECONDITION). */
export class JobDeadLetteredError extends SeppError {
  override name = "JobDeadLetteredError";
}

/**
 * `upsertSchedule` of a new schedule found the server keeping as many schedules as it may (100,000):
 * FAILED_PRECONDITION. Delete some, or replace an existing one, instead.
 */
export class ScheduleLimitError extends SeppError {
  override name = "ScheduleLimitError";
}

/** The parts of a grpc-js `ServiceError` the mapping reads. */
export interface StatusLike {
  code: number;
  details: string;
  /** The trailing metadata (grpc-js puts it on the error as `metadata`). */
  metadata?: { get(key: string): unknown[] } | undefined;
}

/** The trailer that tells a cancelled lease's NOT_FOUND from a lost lease's. */
export const CANCELLED_TRAILER = "sepp-cancelled";

/** Whether a status carries the trailer `sepp-cancelled: true`. */
function isCancelled(status: StatusLike): boolean {
  const metadata = status.metadata;
  if (metadata === undefined || metadata === null || typeof metadata.get !== "function") return false;
  let values: unknown[];
  try {
    values = metadata.get(CANCELLED_TRAILER);
  } catch {
    return false;
  }
  return values.some((value) => String(value).trim().toLowerCase() === "true");
}

/** The error for a failed call (see the module documentation for the mapping). */
export function errorFromStatus(status: StatusLike): ClientError {
  const { code, details } = status;
  const options = { code, details };
  const label = Status[code] ?? String(code);
  switch (code) {
    case Status.UNAVAILABLE:
    case Status.DEADLINE_EXCEEDED:
    case Status.ABORTED:
    case Status.CANCELLED:
      return new TransportError(`transport error (${label}): ${details}`, options);
    case Status.UNAUTHENTICATED:
    case Status.PERMISSION_DENIED:
      return new UnauthenticatedError(`unauthenticated (${label}): ${details}`, options);
    case Status.RESOURCE_EXHAUSTED:
      return new OverloadedError(`server overloaded (${label}): ${details}`, options);
    case Status.INVALID_ARGUMENT:
      return new InvalidRequestError(`invalid request: ${details}`, options);
    case Status.INTERNAL:
    case Status.DATA_LOSS:
    case Status.UNKNOWN:
      return new ServerInternalError(`server internal error (${label}): ${details}`, options);
    default:
      return new UnexpectedStatusError(`unexpected status ${label}: ${details}`, options);
  }
}

/** The error of a failed ack, nack or extend. */
export function leaseErrorFromStatus(status: StatusLike): LeaseError | ClientError {
  if (status.code === Status.NOT_FOUND)
    return isCancelled(status) ? new JobCancelledError(status.details) : new JobNotFoundError(status.details);
  if (status.code === Status.FAILED_PRECONDITION) return new AttemptMismatchError(status.details);
  return errorFromStatus(status);
}

/**
 * The error of a failed cancel: NOT_FOUND (no such job, or it finished) is {@link JobNotFoundError},
 * FAILED_PRECONDITION {@link JobDeadLetteredError}; a malformed id or too long a reason
 * (INVALID_ARGUMENT) is {@link InvalidRequestError} as for every call.
 */
export function cancelErrorFromStatus(
  status: StatusLike,
): JobNotFoundError | JobDeadLetteredError | ClientError {
  if (status.code === Status.NOT_FOUND) return new JobNotFoundError(status.details);
  if (status.code === Status.FAILED_PRECONDITION)
    return new JobDeadLetteredError(`job already dead-lettered: ${status.details}`);
  return errorFromStatus(status);
}

/**
 * The error of a failed upsertSchedule, deleteSchedule or listSchedules: FAILED_PRECONDITION is
 * {@link ScheduleLimitError}; a definition the server refuses (INVALID_ARGUMENT) is
 * {@link InvalidRequestError} and a 0.1 server's UNIMPLEMENTED {@link UnexpectedStatusError}, as for
 * every call.
 */
export function scheduleErrorFromStatus(status: StatusLike): ScheduleLimitError | ClientError {
  if (status.code === Status.FAILED_PRECONDITION)
    return new ScheduleLimitError(`too many schedules: ${status.details}`);
  return errorFromStatus(status);
}

/** The error of a failed reserve. */
export function reserveErrorFromStatus(status: StatusLike): UnknownQueuesError | ClientError {
  if (status.code === Status.FAILED_PRECONDITION)
    return new UnknownQueuesError(`unknown queues: ${status.details}`);
  return errorFromStatus(status);
}
