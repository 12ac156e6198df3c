/**
 * sepp-js: the TypeScript client of the sepp job queue.
 *
 * - {@link SeppClient}: connect, then enqueue (one job, best-effort batches, atomic batches),
 *   cancel, recurring schedules, reserve / ack / nack / extend, server info, dead-letter drains and
 *   pausing queues.
 * - {@link Worker}: the reserve → handle → ack/nack loop with bounded concurrency, automatic lease
 *   extension and graceful shutdown; handlers throw {@link HandlerError} to nack.
 * - Data types: {@link Payload}, {@link Priority}, {@link RetryPolicy}, {@link RetryDirective}, the
 *   request and result types, and the error classes (all extend {@link SeppError}).
 */
export { SeppClient } from "./client.js";
export type { ConnectOptions } from "./connect.js";
export {
  AttemptMismatchError,
  BatchResultCountMismatchError,
  BatchValidationError,
  ClientError,
  ConnectError,
  EmptyBatchError,
  InvalidApiKeyError,
  InvalidRequestError,
  JobCancelledError,
  JobDeadLetteredError,
  JobNotFoundError,
  JobRejectedError,
  type JobValidationError,
  LeaseError,
  LeaseLostError,
  MalformedResponseError,
  OverloadedError,
  ScheduleLimitError,
  SeppError,
  ServerInternalError,
  TransportError,
  UnauthenticatedError,
  UnexpectedStatusError,
  UnknownQueuesError,
  ValidationError,
} from "./errors.js";
export { type Job, JobCtx } from "./job.js";
export type { Logger, LogMeta } from "./logger.js";
export { type CustomValue, Payload, Priority } from "./payload.js";
export {
  describeJobRejection,
  isJobRejection,
  type JobRejection,
  type JobRejectionKind,
} from "./rejection.js";
export { RetryDirective, RetryPolicy, type RetryPolicyOptions } from "./retry.js";
export type { TraceContext } from "./trace.js";
export {
  ALL_QUEUES,
  type CancelOptions,
  type CancelResult,
  type ClusterInfo,
  type ClusterMember,
  DeadLetterCause,
  type DeadLetterFields,
  DeadLetterRecord,
  type DrainDeadLettersOptions,
  type EnqueueAck,
  type EnqueueRequest,
  type NackOptions,
  type PauseOptions,
  type QueuePause,
  type ReserveOptions,
  type Schedule,
  ScheduleCatchUp,
  type ScheduleInfo,
  type ScheduleJob,
  ScheduleOverlap,
  type ServerInfo,
} from "./types.js";
export { VERSION } from "./version.js";
export { HandlerError } from "./worker/handler-error.js";
export { type Handler, ShutdownHandle, Worker, type WorkerOptions } from "./worker/worker.js";
