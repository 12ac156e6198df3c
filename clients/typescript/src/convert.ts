/**
 * Conversions between the wire types (`src/gen`) and the package's types: requests out (validated,
 * with unset options left unset), and jobs, rejections, server info, dead-letter records,
 * schedules and pauses in.
 * Decoding checks what the protocol promises and reports what it cannot use; it never throws
 * anything but {@link DecodeError} on server data.
 */
import { ValidationError } from "./errors.js";
import type { Duration } from "./gen/google/protobuf/duration.js";
import type { Timestamp } from "./gen/google/protobuf/timestamp.js";
import * as wire from "./gen/sepp/v1/queue.js";
import type { JobFields } from "./job.js";
import { type CustomValue, Payload } from "./payload.js";
import type { JobRejection } from "./rejection.js";
import { type TraceContext, traceparentProblem } from "./trace.js";
import {
  type ClusterInfo,
  DeadLetterCause,
  DeadLetterRecord,
  type EnqueueRequest,
  type PauseOptions,
  type QueuePause,
  type Schedule,
  ScheduleCatchUp,
  type ScheduleInfo,
  type ScheduleJob,
  ScheduleOverlap,
  type ServerInfo,
} from "./types.js";

/** Server data that breaks the protocol; the message says which field. */
export class DecodeError extends Error {
  override name = "DecodeError";
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const UINT32_MAX = 0xffff_ffff;

// ---- durations and timestamps ----

/** A wire duration of `ms` milliseconds (a non-negative finite number). */
export function durationFromMs(ms: number): Duration {
  const whole = Math.floor(ms);
  const seconds = Math.floor(whole / 1000);
  const nanos = Math.round((ms - seconds * 1000) * 1_000_000);
  return { seconds: BigInt(seconds), nanos: Math.min(nanos, 999_999_999) };
}

/** The length of a wire duration in ms; unset, negative or malformed ones are 0. */
export function msFromDuration(duration: Duration | undefined): number {
  if (duration === undefined || duration.seconds < 0n || duration.nanos < 0 || duration.nanos > 999_999_999)
    return 0;
  return Number(duration.seconds) * 1000 + duration.nanos / 1_000_000;
}

/** A wire timestamp for `date`, or undefined before the Unix epoch (such a time is not sent). */
export function timestampFromDate(date: Date): Timestamp | undefined {
  const ms = date.getTime();
  if (ms < 0) return undefined;
  const seconds = Math.floor(ms / 1000);
  return { seconds: BigInt(seconds), nanos: (ms - seconds * 1000) * 1_000_000 };
}

/** The time of a wire timestamp, or undefined when it is unset, before the epoch or malformed. */
export function dateFromTimestamp(timestamp: Timestamp | undefined): Date | undefined {
  if (timestamp === undefined) return undefined;
  const { seconds, nanos } = timestamp;
  if (seconds < 0n || nanos < 0 || nanos > 999_999_999 || seconds > 8_640_000_000_000n) return undefined;
  return new Date(Number(seconds) * 1000 + Math.floor(nanos / 1_000_000));
}

function requiredDate(field: string, timestamp: Timestamp | undefined): Date {
  if (timestamp === undefined) throw new DecodeError(`missing field ${field}`);
  const date = dateFromTimestamp(timestamp);
  if (date === undefined) throw new DecodeError(`invalid timestamp in ${field}: ${timestamp.seconds}s`);
  return date;
}

/** Checks a duration option given in milliseconds. */
export function checkMs(name: string, value: number, minimum = 0): number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < minimum) {
    throw new ValidationError(
      `${name} must be a number of milliseconds of at least ${minimum} (got ${String(value)})`,
    );
  }
  return value;
}

/** Checks a count option (an integer that fits an uint32, at least `minimum`). */
export function checkCount(name: string, value: number, minimum: number): number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < minimum || value > UINT32_MAX) {
    throw new ValidationError(`${name} must be an integer of at least ${minimum} (got ${String(value)})`);
  }
  return value;
}

// ---- custom metadata ----

function customValueToWire(where: string, key: string, value: CustomValue): wire.PrimitiveValue {
  switch (typeof value) {
    case "string":
      return { value: { $case: "stringValue", value } };
    case "boolean":
      return { value: { $case: "boolValue", value } };
    case "bigint":
      if (value < INT64_MIN || value > INT64_MAX) {
        throw new ValidationError(`${where}: custom value ${JSON.stringify(key)} does not fit in 64 bits`);
      }
      return { value: { $case: "intValue", value } };
    case "number":
      return Number.isSafeInteger(value)
        ? { value: { $case: "intValue", value: BigInt(value) } }
        : { value: { $case: "doubleValue", value } };
    default:
      throw new ValidationError(
        `${where}: custom value ${JSON.stringify(key)} must be a string, number, bigint or boolean (got ${typeof value})`,
      );
  }
}

/** Custom metadata from the wire; an entry without a value is an error. */
export function customFromWire(custom: { [key: string]: wire.PrimitiveValue }): Record<string, CustomValue> {
  const out: Record<string, CustomValue> = {};
  for (const [key, primitive] of Object.entries(custom)) {
    const value = primitive.value;
    if (value === undefined) throw new DecodeError(`custom entry ${JSON.stringify(key)} has no value`);
    if (value.$case === "intValue") {
      const asNumber = Number(value.value);
      out[key] = Number.isSafeInteger(asNumber) ? asNumber : value.value;
    } else {
      out[key] = value.value;
    }
  }
  return out;
}

// ---- requests ----

/** Checks a trace context given by the caller. */
export function checkTraceContext(where: string, trace: TraceContext): wire.TraceContext {
  if (typeof trace?.traceparent !== "string")
    throw new ValidationError(`${where}: traceContext.traceparent must be a string`);
  const problem = traceparentProblem(trace.traceparent);
  if (problem !== undefined) throw new ValidationError(`${where}: invalid traceparent (${problem})`);
  const tracestate = trace.tracestate ? trace.tracestate : undefined;
  return { traceparent: trace.traceparent, tracestate };
}

/**
 * The wire form of a request, validated: queue and job type non-empty, priority 0-9, numbers that fit
 * the wire, custom values of the four types. `fallbackTrace` is used when the job has no trace context.
 */
export function enqueueRequestToWire(
  request: EnqueueRequest,
  where: string,
  fallbackTrace: wire.TraceContext | undefined,
): wire.EnqueueRequest {
  if (typeof request !== "object" || request === null)
    throw new ValidationError(`${where}: a job must be an object`);
  const {
    queue,
    jobType,
    payload,
    idempotencyKey,
    priority,
    maxAttempts,
    custom,
    scheduledAt,
    traceContext,
  } = request;
  if (typeof queue !== "string" || queue === "")
    throw new ValidationError(`${where}: queue must be a non-empty string`);
  if (typeof jobType !== "string" || jobType === "") {
    throw new ValidationError(`${where}: jobType must be a non-empty string`);
  }
  if (priority !== undefined && !(Number.isInteger(priority) && priority >= 0 && priority <= 9)) {
    throw new ValidationError(`${where}: priority must be an integer from 0 to 9 (got ${String(priority)})`);
  }
  if (maxAttempts !== undefined) checkCount(`${where}: maxAttempts`, maxAttempts, 0);
  if (idempotencyKey !== undefined && typeof idempotencyKey !== "string") {
    throw new ValidationError(`${where}: idempotencyKey must be a string`);
  }
  let wirePayload: wire.Payload | undefined;
  if (payload !== undefined) {
    if (!(payload?.data instanceof Uint8Array) || typeof payload.encoding !== "string") {
      throw new ValidationError(
        `${where}: payload must be a Payload (see Payload.json, Payload.text, Payload.bytes)`,
      );
    }
    if (payload.data.length === 0) throw new ValidationError(`${where}: payload data must not be empty`);
    wirePayload = { data: payload.data as Buffer, encoding: payload.encoding };
  }
  let scheduled: wire.EnqueueRequest["scheduledAt"];
  if (scheduledAt !== undefined) {
    if (!(scheduledAt instanceof Date) || Number.isNaN(scheduledAt.getTime())) {
      throw new ValidationError(`${where}: scheduledAt must be a valid Date`);
    }
    scheduled = timestampFromDate(scheduledAt);
  }
  const wireCustom: { [key: string]: wire.PrimitiveValue } = {};
  if (custom !== undefined) {
    if (typeof custom !== "object" || custom === null)
      throw new ValidationError(`${where}: custom must be an object`);
    for (const [key, value] of Object.entries(custom)) wireCustom[key] = customValueToWire(where, key, value);
  }
  return {
    queue,
    jobType,
    payload: wirePayload,
    idempotencyKey,
    priority,
    maxAttempts,
    traceContext: traceContext === undefined ? fallbackTrace : checkTraceContext(where, traceContext),
    custom: wireCustom,
    scheduledAt: scheduled,
  };
}

/** Whether a job counts as keyed for retries (an empty key counts as none). */
export function hasIdempotencyKey(request: EnqueueRequest): boolean {
  return typeof request.idempotencyKey === "string" && request.idempotencyKey !== "";
}

// ---- jobs, rejections, info, dead letters ----

/** A received trace context; an invalid one is dropped, never an error. */
function receivedTraceContext(trace: wire.TraceContext | undefined): TraceContext | undefined {
  if (trace === undefined || traceparentProblem(trace.traceparent) !== undefined) return undefined;
  return trace.tracestate
    ? { traceparent: trace.traceparent, tracestate: trace.tracestate }
    : { traceparent: trace.traceparent };
}

function payloadFromWire(payload: wire.Payload | undefined): Payload | undefined {
  if (payload === undefined || payload.data.length === 0) return undefined;
  return new Payload(payload.data, payload.encoding);
}

/** The validated fields shared by reserved jobs and dead-letter records. */
function jobFieldsFromWire(job: wire.Job): JobFields & { payload: Payload | undefined } {
  if (job.id === "") throw new DecodeError("missing field id");
  if (job.jobType === "") throw new DecodeError("missing field job_type");
  if (!(Number.isInteger(job.priority) && job.priority >= 0 && job.priority <= 9)) {
    throw new DecodeError(`priority ${job.priority} is out of range`);
  }
  return {
    id: job.id,
    queue: job.queue,
    jobType: job.jobType,
    priority: job.priority,
    attempt: job.attempt,
    maxAttempts: job.maxAttempts,
    enqueuedAt: requiredDate("enqueued_at", job.enqueuedAt),
    // A malformed schedule or trace context is dropped, not fatal: the job is still usable.
    scheduledAt: dateFromTimestamp(job.scheduledAt),
    custom: customFromWire(job.custom),
    traceContext: receivedTraceContext(job.traceContext),
    payload: payloadFromWire(job.payload),
  };
}

/** A reserved job's fields and its granted lease expiry. */
export function reservedJobFromWire(job: wire.Job): {
  fields: JobFields;
  payload: Payload | undefined;
  leaseExpiresAt: Date;
} {
  const { payload, ...fields } = jobFieldsFromWire(job);
  return { fields, payload, leaseExpiresAt: requiredDate("lease_expires_at", job.leaseExpiresAt) };
}

/** A rejection; an unset or unknown reason is `{ kind: "unknown" }`. */
export function rejectionFromWire(rejection: wire.JobRejection | undefined): JobRejection {
  const reason = rejection?.reason;
  if (reason === undefined) return { kind: "unknown" };
  switch (reason.$case) {
    case "unknownQueue":
      return { kind: "unknownQueue", queue: reason.value.queue };
    case "payloadTooLarge":
      return {
        kind: "payloadTooLarge",
        limit: Number(reason.value.limit),
        actual: Number(reason.value.actual),
      };
    case "encodingNotAllowed":
      return { kind: "encodingNotAllowed", encoding: reason.value.encoding, allowed: reason.value.allowed };
    case "jobTypeNotAllowed":
      return { kind: "jobTypeNotAllowed", jobType: reason.value.jobType, allowed: reason.value.allowed };
    case "customEntriesTooMany":
      return { kind: "customEntriesTooMany", limit: reason.value.limit, actual: reason.value.actual };
    case "customMapTooLarge":
      return {
        kind: "customMapTooLarge",
        limit: Number(reason.value.limit),
        actual: Number(reason.value.actual),
      };
    case "customKeyTooLong":
      return {
        kind: "customKeyTooLong",
        key: reason.value.key,
        limit: reason.value.limit,
        actual: Number(reason.value.actual),
      };
    case "queueNameTooLong":
      return { kind: "queueNameTooLong", limit: reason.value.limit, actual: Number(reason.value.actual) };
    case "jobTypeNameTooLong":
      return { kind: "jobTypeNameTooLong", limit: reason.value.limit, actual: Number(reason.value.actual) };
    case "idempotencyKeyTooLong":
      return {
        kind: "idempotencyKeyTooLong",
        limit: reason.value.limit,
        actual: Number(reason.value.actual),
      };
    case "scheduledTooFar":
      return {
        kind: "scheduledTooFar",
        horizon: msFromDuration(reason.value.horizon),
        actual: dateFromTimestamp(reason.value.actual) ?? new Date(0),
      };
    case "invalidRequest":
      return { kind: "invalidRequest", message: reason.value.message };
    case "queueFull":
      return { kind: "queueFull", queue: reason.value.queue, limit: Number(reason.value.limit) };
    case "queueClosing":
      return { kind: "queueClosing", queue: reason.value.queue };
    default:
      return { kind: "unknown" };
  }
}

/** The server info; an empty version or an unset or pre-epoch server time is an error. */
export function serverInfoFromWire(info: wire.GetServerInfoResponse): ServerInfo {
  if (info.serverVersion === "") throw new DecodeError("missing field server_version");
  const serverTime = requiredDate("server_time", info.serverTime);
  return {
    version: info.serverVersion,
    supportedProtocolVersions: info.supportedProtocolVersions,
    serverTime,
    restrictsEncodings: info.restrictsEncodings,
    allowedEncodings: info.allowedEncodings,
    maxPayloadBytes: Number(info.maxPayloadBytes),
    maxCustomEntries: info.maxCustomEntries,
    maxCustomTotalBytes: Number(info.maxCustomTotalBytes),
    maxCustomKeyBytes: info.maxCustomKeyBytes,
    maxQueueNameBytes: info.maxQueueNameBytes,
    maxJobTypeBytes: info.maxJobTypeBytes,
    maxIdempotencyKeyBytes: info.maxIdempotencyKeyBytes,
    maxScheduleHorizon: msFromDuration(info.maxScheduleHorizon),
    maxEnqueueBatch: info.maxEnqueueBatch,
    maxReserveBatch: info.maxReserveBatch,
    maxReserveQueues: info.maxReserveQueues,
    maxWaitTimeout: msFromDuration(info.maxWaitTimeout),
    maxLeaseDuration: msFromDuration(info.maxLeaseDuration),
    strictQueues: info.strictQueues,
    deadLetterRetentionEnabled: info.deadLetterRetentionEnabled,
    features: [...info.features],
    maxConsumeCredits: info.maxConsumeCredits,
    ...(info.cluster === undefined ? {} : { cluster: clusterFromWire(info.cluster) }),
  };
}

function clusterFromWire(cluster: wire.ClusterInfo): ClusterInfo {
  return {
    nodeId: Number(cluster.nodeId),
    role: cluster.role,
    term: Number(cluster.term),
    ...(cluster.leaderId === undefined ? {} : { leaderId: Number(cluster.leaderId) }),
    leaderAddr: cluster.leaderAddr,
    ...(cluster.lastAppliedIndex === undefined ? {} : { lastAppliedIndex: Number(cluster.lastAppliedIndex) }),
    members: cluster.members.map((member) => ({
      id: Number(member.id),
      addr: member.addr,
      voter: member.voter,
      ...(member.replicationLag === undefined ? {} : { replicationLag: Number(member.replicationLag) }),
    })),
  };
}

const CAUSES: Record<number, DeadLetterCause> = {
  [wire.DeadLetterCause.DEAD_LETTER_CAUSE_ATTEMPTS_EXHAUSTED]: DeadLetterCause.AttemptsExhausted,
  [wire.DeadLetterCause.DEAD_LETTER_CAUSE_REJECTED]: DeadLetterCause.Rejected,
  [wire.DeadLetterCause.DEAD_LETTER_CAUSE_LEASE_EXPIRED]: DeadLetterCause.LeaseExpired,
  [wire.DeadLetterCause.DEAD_LETTER_CAUSE_ADMIN]: DeadLetterCause.Admin,
  [wire.DeadLetterCause.DEAD_LETTER_CAUSE_CANCELLED]: DeadLetterCause.Cancelled,
};

/** A dead-letter record; unknown causes are `unspecified`. */
export function deadLetterFromWire(record: wire.DeadLetterRecord): DeadLetterRecord {
  if (record.job === undefined) throw new DecodeError("missing field job");
  const fields = jobFieldsFromWire(record.job);
  return new DeadLetterRecord({
    queue: fields.queue,
    jobId: fields.id,
    jobType: fields.jobType,
    payload: fields.payload,
    priority: fields.priority,
    maxAttempts: fields.maxAttempts,
    custom: fields.custom,
    traceContext: fields.traceContext,
    enqueuedAt: fields.enqueuedAt,
    scheduledAt: fields.scheduledAt,
    cause: CAUSES[record.cause] ?? DeadLetterCause.Unspecified,
    failedAt: requiredDate("failed_at", record.failedAt),
    finalAttempt: record.finalAttempt,
    lastReason: record.lastReason,
  });
}

// ---- recurring schedules ----

const MAX_SCHEDULE_ID_BYTES = 128;
const MIN_EVERY_MS = 1000;
// C0 controls and DEL to C1 controls, as the server counts control characters.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Checks a schedule id: 1 to 128 bytes in UTF-8, no control characters. */
export function checkScheduleId(where: string, id: unknown): string {
  if (typeof id !== "string") throw new ValidationError(`${where}: a schedule id must be a string`);
  if (id === "") throw new ValidationError(`${where}: a schedule id must not be empty`);
  const bytes = Buffer.byteLength(id, "utf8");
  if (bytes > MAX_SCHEDULE_ID_BYTES)
    throw new ValidationError(
      `${where}: a schedule id is at most ${MAX_SCHEDULE_ID_BYTES} bytes (got ${bytes})`,
    );
  if (CONTROL.test(id))
    throw new ValidationError(`${where}: a schedule id must not contain control characters`);
  return id;
}

const OVERLAP_TO_WIRE: Record<ScheduleOverlap, wire.ScheduleOverlap> = {
  [ScheduleOverlap.Skip]: wire.ScheduleOverlap.SCHEDULE_OVERLAP_SKIP,
  [ScheduleOverlap.Allow]: wire.ScheduleOverlap.SCHEDULE_OVERLAP_ALLOW,
};
const CATCH_UP_TO_WIRE: Record<ScheduleCatchUp, wire.ScheduleCatchUp> = {
  [ScheduleCatchUp.Latest]: wire.ScheduleCatchUp.SCHEDULE_CATCH_UP_LATEST,
  [ScheduleCatchUp.None]: wire.ScheduleCatchUp.SCHEDULE_CATCH_UP_NONE,
};

/**
 * The wire definition of a schedule, validated: the id, exactly one cadence, an interval of at least
 * 1 s, known policies, and a template that is a valid enqueue request without idempotencyKey,
 * scheduledAt or traceContext (the active span's context is never stamped on it). The cron syntax
 * and the time zone are the server's to check.
 */
export function scheduleToWire(schedule: Schedule, where: string): wire.ScheduleDefinition {
  if (typeof schedule !== "object" || schedule === null)
    throw new ValidationError(`${where}: a schedule must be an object`);
  const { id, job, cron, timeZone, every, overlap, catchUp } = schedule;
  checkScheduleId(where, id);
  if ((cron === undefined) === (every === undefined))
    throw new ValidationError(`${where}: a schedule needs exactly one cadence: cron or every`);
  let cadence: wire.ScheduleDefinition["cadence"];
  if (cron !== undefined) {
    if (typeof cron !== "string" || cron.trim() === "")
      throw new ValidationError(`${where}: cron must be a non-empty cron expression`);
    if (timeZone !== undefined && typeof timeZone !== "string")
      throw new ValidationError(`${where}: timeZone must be a string (an IANA time zone name)`);
    cadence = { $case: "cron", value: { expression: cron, timeZone: timeZone ?? "UTC" } };
  } else {
    if (timeZone !== undefined) throw new ValidationError(`${where}: timeZone goes with cron, not every`);
    checkMs(`${where}: every`, every as number, MIN_EVERY_MS);
    cadence = { $case: "every", value: durationFromMs(every as number) };
  }
  if (typeof job !== "object" || job === null) throw new ValidationError(`${where}: job must be an object`);
  for (const field of ["idempotencyKey", "scheduledAt", "traceContext"] as const) {
    if ((job as EnqueueRequest)[field] !== undefined)
      throw new ValidationError(`${where}: a schedule's job must not set ${field}`);
  }
  const overlapWire = OVERLAP_TO_WIRE[overlap ?? ScheduleOverlap.Skip];
  if (overlapWire === undefined)
    throw new ValidationError(`${where}: overlap must be "skip" or "allow" (got ${String(overlap)})`);
  const catchUpWire = CATCH_UP_TO_WIRE[catchUp ?? ScheduleCatchUp.Latest];
  if (catchUpWire === undefined)
    throw new ValidationError(`${where}: catchUp must be "latest" or "none" (got ${String(catchUp)})`);
  return {
    id,
    cadence,
    job: enqueueRequestToWire(job, `${where}: job`, undefined),
    overlap: overlapWire,
    catchUp: catchUpWire,
  };
}

const OVERLAP_FROM_WIRE: Record<number, ScheduleOverlap> = {
  [wire.ScheduleOverlap.SCHEDULE_OVERLAP_UNSPECIFIED]: ScheduleOverlap.Skip,
  [wire.ScheduleOverlap.SCHEDULE_OVERLAP_SKIP]: ScheduleOverlap.Skip,
  [wire.ScheduleOverlap.SCHEDULE_OVERLAP_ALLOW]: ScheduleOverlap.Allow,
};
const CATCH_UP_FROM_WIRE: Record<number, ScheduleCatchUp> = {
  [wire.ScheduleCatchUp.SCHEDULE_CATCH_UP_UNSPECIFIED]: ScheduleCatchUp.Latest,
  [wire.ScheduleCatchUp.SCHEDULE_CATCH_UP_LATEST]: ScheduleCatchUp.Latest,
  [wire.ScheduleCatchUp.SCHEDULE_CATCH_UP_NONE]: ScheduleCatchUp.None,
};

function scheduleJobFromWire(job: wire.EnqueueRequest): ScheduleJob {
  const template: ScheduleJob = { queue: job.queue, jobType: job.jobType };
  const payload = payloadFromWire(job.payload);
  if (payload !== undefined) template.payload = payload;
  if (job.priority !== undefined) template.priority = job.priority;
  if (job.maxAttempts !== undefined) template.maxAttempts = job.maxAttempts;
  const custom = customFromWire(job.custom);
  if (Object.keys(custom).length > 0) template.custom = custom;
  return template;
}

/** A schedule as the server shows it; one this client cannot read throws {@link DecodeError}. */
export function scheduleInfoFromWire(info: wire.ScheduleInfo): ScheduleInfo {
  const definition = info.definition;
  if (definition === undefined) throw new DecodeError("missing field definition");
  const id = definition.id;
  if (id === "") throw new DecodeError("missing field id");
  if (definition.job === undefined) throw new DecodeError(`schedule ${JSON.stringify(id)} has no job`);
  const overlap = OVERLAP_FROM_WIRE[definition.overlap];
  const catchUp = CATCH_UP_FROM_WIRE[definition.catchUp];
  if (overlap === undefined || catchUp === undefined)
    throw new DecodeError(`schedule ${JSON.stringify(id)} has an unknown overlap or catch-up policy`);
  const job = scheduleJobFromWire(definition.job);
  const cadence = definition.cadence;
  let shown: ScheduleInfo["definition"];
  if (cadence?.$case === "cron") {
    shown = {
      id,
      job,
      cron: cadence.value.expression,
      timeZone: cadence.value.timeZone || "UTC",
      overlap,
      catchUp,
    };
  } else if (cadence?.$case === "every") {
    shown = { id, job, every: msFromDuration(cadence.value), overlap, catchUp };
  } else {
    throw new DecodeError(`schedule ${JSON.stringify(id)} has no cadence`);
  }
  const optionalDate = (field: string, timestamp: Timestamp | undefined): Date | undefined =>
    timestamp === undefined ? undefined : requiredDate(field, timestamp);
  return {
    definition: shown,
    nextFireAt: optionalDate("next_fire_at", info.nextFireAt),
    lastSlotAt: optionalDate("last_slot_at", info.lastSlotAt),
    lastJobId: info.lastJobId,
    fired: Number(info.fired),
    createdAt: requiredDate("created_at", info.createdAt),
  };
}

// ---- pausing queues ----

/** Checks the queue of a pause or resume: a string (`ALL_QUEUES`, the empty one, is every queue). */
export function checkPauseQueue(where: string, queue: unknown): string {
  if (typeof queue !== "string")
    throw new ValidationError(`${where}: queue must be a queue name or ALL_QUEUES (a string)`);
  return queue;
}

/**
 * The wire request of a pause, validated as far as the client can: the queue is a string, `until` a
 * valid Date after the Unix epoch, `reason` a string. The queue name's rules, an `until` that is not
 * in the future and the reason's size are the server's to check.
 */
export function pauseRequestToWire(
  queue: string,
  options: PauseOptions,
  where: string,
): wire.PauseQueueRequest {
  checkPauseQueue(where, queue);
  if (typeof options !== "object" || options === null)
    throw new ValidationError(`${where}: options must be an object`);
  const { until, reason } = options;
  let stamp: Timestamp | undefined;
  if (until !== undefined) {
    if (!(until instanceof Date) || Number.isNaN(until.getTime()))
      throw new ValidationError(`${where}: until must be a valid Date`);
    stamp = timestampFromDate(until);
    if (stamp === undefined)
      throw new ValidationError(`${where}: until must be in the future (got ${until.toISOString()})`);
  }
  if (reason !== undefined && typeof reason !== "string")
    throw new ValidationError(`${where}: reason must be a string`);
  return { queue, until: stamp, reason };
}

/** A pause as the server shows it; an unreadable `until` throws {@link DecodeError}. */
export function pauseFromWire(pause: wire.QueuePause): QueuePause {
  const until = pause.until === undefined ? undefined : requiredDate("until", pause.until);
  return { queue: pause.queue, until };
}
