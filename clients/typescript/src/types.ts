/**
 * The request and result types of the producer, consumer and admin calls: {@link EnqueueRequest},
 * {@link EnqueueAck}, {@link ReserveOptions}, {@link NackOptions}, {@link ServerInfo},
 * {@link DeadLetterRecord}, the recurring {@link Schedule} and {@link ScheduleInfo}, and
 * {@link QueuePause}. Durations are milliseconds; timestamps are `Date`s.
 */
import type { CustomValue, Payload } from "./payload.js";
import type { RetryDirective } from "./retry.js";
import type { TraceContext } from "./trace.js";

/** One job to enqueue. Unset options take the queue's defaults on the server. */
export interface EnqueueRequest {
  /** The queue (non-empty). */
  queue: string;
  /** The job type, which picks the Worker handler (non-empty). */
  jobType: string;
  /** The data; omit it for a job without data. */
  payload?: Payload | undefined;
  /** The server drops a job whose key it has seen within its deduplication window. */
  idempotencyKey?: string | undefined;
  /** 0 (lowest) to 9 (highest). */
  priority?: number | undefined;
  /** How many deliveries the job gets before it is dead-lettered. */
  maxAttempts?: number | undefined;
  /** Small typed key/value metadata. */
  custom?: Record<string, CustomValue> | undefined;
  /** Deliver no earlier than this; a time in the past means now. */
  scheduledAt?: Date | undefined;
  /** The job's trace context; by default the active OpenTelemetry span's, when there is one. */
  traceContext?: TraceContext | undefined;
}

/** The server's receipt for an enqueued job. */
export interface EnqueueAck {
  jobId: string;
  /** True when the idempotency key matched an earlier job: `jobId` is that job's. */
  deduplicated: boolean;
}

/** What to reserve, and for how long. */
export interface ReserveOptions {
  /** Queues to take from, in order of preference (at least one, none empty). */
  queues: string[];
  /** How long the jobs stay leased to this worker, in ms (at least 1). */
  leaseDuration: number;
  /** How long to wait for a job when none is ready, in ms (default 30 000; 0 answers at once). */
  waitTimeout?: number | undefined;
  /** The most jobs to take (server default 1, capped by its `maxReserveBatch`). */
  maxJobs?: number | undefined;
  /** Names this worker to the server; acks, nacks and extends of the jobs send it too. */
  workerId?: string | undefined;
  /** Aborting it cancels the call, which then rejects with a `TransportError` (CANCELLED). */
  signal?: AbortSignal | undefined;
}

/** How to cancel a job. */
export interface CancelOptions {
  /** Kept as the dead letter's `lastReason` (at most 1024 bytes). */
  reason?: string | undefined;
}

/** The server's answer to a cancel. */
export interface CancelResult {
  jobId: string;
  /**
   * True when a worker held the job: it is dead-lettered at that worker's next extend, ack or nack
   * (which throws `JobCancelledError`), or when its lease runs out. False when it was ready or
   * scheduled and is dead-lettered already. Also true for a repeated cancel of a leased job.
   */
  wasLeased: boolean;
}

/** How to fail a job. */
export interface NackOptions {
  /** What happens next (default: the queue's retry policy). */
  retry?: RetryDirective | undefined;
  /** Recorded with the job (an empty reason is not sent). */
  reason?: string | undefined;
}

/** Which dead letters to take. */
export interface DrainDeadLettersOptions {
  /** Only this queue's (default: every queue's). */
  queue?: string | undefined;
  /** The most records to take (default 1; 0 returns none without a call). */
  max?: number | undefined;
}

/** The server's version, clock and limits. Durations are in ms, sizes in bytes. */
export interface ServerInfo {
  version: string;
  supportedProtocolVersions: string[];
  serverTime: Date;
  restrictsEncodings: boolean;
  allowedEncodings: string[];
  maxPayloadBytes: number;
  maxCustomEntries: number;
  maxCustomTotalBytes: number;
  maxCustomKeyBytes: number;
  maxQueueNameBytes: number;
  maxJobTypeBytes: number;
  maxIdempotencyKeyBytes: number;
  maxScheduleHorizon: number;
  maxEnqueueBatch: number;
  maxReserveBatch: number;
  maxReserveQueues: number;
  maxWaitTimeout: number;
  maxLeaseDuration: number;
  strictQueues: boolean;
  deadLetterRetentionEnabled: boolean;
  /**
   * What the server offers beyond the 0.1 protocol, by name (`"ack_batch"`, `"cancel"`,
   * `"schedules"`, `"pause"`, `"consume"`, ...); empty on 0.1.
   */
  features: string[];
  /** The most credits a Consume stream may have outstanding; 0 from a server without `"consume"`. */
  maxConsumeCredits: number;
  /** The answering node's view of its cluster; `undefined` on a single node (and on 0.1). */
  cluster?: ClusterInfo;
}

/** A cluster as the answering node sees it (every node answers, leader or not). */
export interface ClusterInfo {
  nodeId: number;
  /** `"leader"`, `"follower"`, `"candidate"`, `"learner"` or `"shutdown"`. */
  role: string;
  /** The Raft term: it grows with every election. */
  term: number;
  /** The leader's node id, when a leader is known. */
  leaderId?: number;
  /** The leader's client address (`host:port`), when a leader is known; else `""`. */
  leaderAddr: string;
  /** The last log entry this node has applied to its state. */
  lastAppliedIndex?: number;
  members: ClusterMember[];
}

/** A member of the cluster, as the answering node knows it. */
export interface ClusterMember {
  id: number;
  /** Its client address (`host:port`). */
  addr: string;
  /** A voter counts towards the quorum; a learner only receives entries. */
  voter: boolean;
  /** Known on the leader only: how many entries of the leader's log this member lacks. */
  replicationLag?: number;
}

/** Why a job was dead-lettered. */
export const DeadLetterCause = {
  Unspecified: "unspecified",
  AttemptsExhausted: "attempts_exhausted",
  Rejected: "rejected",
  LeaseExpired: "lease_expired",
  Admin: "admin",
  /** Cancelled by `SeppClient.cancel` (or the admin API); a server after 0.1. */
  Cancelled: "cancelled",
} as const;

/** Why a job was dead-lettered. */
export type DeadLetterCause = (typeof DeadLetterCause)[keyof typeof DeadLetterCause];

/** The fields of a {@link DeadLetterRecord}. */
export interface DeadLetterFields {
  queue: string;
  jobId: string;
  jobType: string;
  payload: Payload | undefined;
  priority: number;
  maxAttempts: number;
  custom: Record<string, CustomValue>;
  traceContext: TraceContext | undefined;
  enqueuedAt: Date;
  scheduledAt: Date | undefined;
  cause: DeadLetterCause;
  failedAt: Date;
  finalAttempt: number;
  lastReason: string | undefined;
}

/** A job that failed for good, as `drainDeadLetters` returns it. */
export class DeadLetterRecord implements DeadLetterFields {
  readonly queue: string;
  readonly jobId: string;
  readonly jobType: string;
  readonly payload: Payload | undefined;
  readonly priority: number;
  readonly maxAttempts: number;
  readonly custom: Record<string, CustomValue>;
  readonly traceContext: TraceContext | undefined;
  readonly enqueuedAt: Date;
  readonly scheduledAt: Date | undefined;
  readonly cause: DeadLetterCause;
  readonly failedAt: Date;
  readonly finalAttempt: number;
  readonly lastReason: string | undefined;

  constructor(fields: DeadLetterFields) {
    this.queue = fields.queue;
    this.jobId = fields.jobId;
    this.jobType = fields.jobType;
    this.payload = fields.payload;
    this.priority = fields.priority;
    this.maxAttempts = fields.maxAttempts;
    this.custom = fields.custom;
    this.traceContext = fields.traceContext;
    this.enqueuedAt = fields.enqueuedAt;
    this.scheduledAt = fields.scheduledAt;
    this.cause = fields.cause;
    this.failedAt = fields.failedAt;
    this.finalAttempt = fields.finalAttempt;
    this.lastReason = fields.lastReason;
  }

  /**
   * A fresh request to replay this job on its queue: the same type, payload, priority, max attempts,
   * custom metadata and trace context, but no idempotency key and no schedule, so it runs at once.
   * A max attempts of 0 is left to the queue's default.
   */
  toEnqueueRequest(): EnqueueRequest {
    return {
      queue: this.queue,
      jobType: this.jobType,
      payload: this.payload,
      priority: this.priority,
      maxAttempts: this.maxAttempts > 0 ? this.maxAttempts : undefined,
      custom: { ...this.custom },
      traceContext: this.traceContext,
    };
  }
}

// ---- recurring schedules ----

/** What a slot does while the schedule's previous job is still queued or running. */
export const ScheduleOverlap = {
  /** Fire nothing for this slot (the default). */
  Skip: "skip",
  /** Fire it anyway. */
  Allow: "allow",
} as const;

/** What a slot does while the schedule's previous job is still queued or running. */
export type ScheduleOverlap = (typeof ScheduleOverlap)[keyof typeof ScheduleOverlap];

/** What happens to slots the server found more than 60 s late (missed, e.g. while it was down). */
export const ScheduleCatchUp = {
  /** Fire the latest missed slot once (the default). */
  Latest: "latest",
  /** Fire none of them. */
  None: "none",
} as const;

/** What happens to slots the server found more than 60 s late. */
export type ScheduleCatchUp = (typeof ScheduleCatchUp)[keyof typeof ScheduleCatchUp];

/**
 * The job a schedule fires at each slot: an {@link EnqueueRequest} without the per-job fields
 * (each slot's job gets an id derived from the schedule id and the slot instead of a key).
 */
export type ScheduleJob = Omit<EnqueueRequest, "idempotencyKey" | "scheduledAt" | "traceContext">;

/**
 * A recurring schedule: the server enqueues `job` once per slot of its cadence. Give exactly one
 * cadence: `cron` (five fields, or six with seconds first) read in `timeZone` (an IANA name such as
 * `"Europe/Zurich"`, default `"UTC"`), or `every` (ms, at least 1000, counted from when the schedule
 * was created or last replaced). Upserting a schedule with an existing `id` replaces it.
 */
export interface Schedule {
  /** 1 to 128 bytes (UTF-8), no control characters. */
  id: string;
  /** The template of every job fired; must not set idempotencyKey, scheduledAt or traceContext. */
  job: ScheduleJob;
  /** A cron expression; set this or `every`. */
  cron?: string | undefined;
  /** The IANA time zone `cron` is read in (default "UTC"); only with `cron`. */
  timeZone?: string | undefined;
  /** An interval in ms (at least 1000); set this or `cron`. */
  every?: number | undefined;
  /** Default {@link ScheduleOverlap.Skip}. */
  overlap?: ScheduleOverlap | undefined;
  /** Default {@link ScheduleCatchUp.Latest}. */
  catchUp?: ScheduleCatchUp | undefined;
}

/**
 * A schedule as the server keeps it: its definition (with the defaults filled in: `timeZone` for a
 * cron schedule, `overlap` and `catchUp`) and what it has done so far.
 */
export interface ScheduleInfo {
  definition: Schedule & { overlap: ScheduleOverlap; catchUp: ScheduleCatchUp };
  /** The next slot; undefined if the cadence has no further slot. */
  nextFireAt: Date | undefined;
  /** The latest slot the server handled (fired or skipped); undefined before the first. */
  lastSlotAt: Date | undefined;
  /** The last job the schedule fired; undefined before the first. */
  lastJobId: string | undefined;
  /** How many jobs it has fired; replacing the schedule keeps the count. */
  fired: number;
  /** When it was created or last replaced (an interval's slots count from it). */
  createdAt: Date;
}

// ---- pausing queues ----

/**
 * The queue name that stands for every queue in `pauseQueue` and `resumeQueue` (also queues that do
 * not exist yet), and that {@link QueuePause.queue} holds for the pause of every queue.
 */
export const ALL_QUEUES = "";

/** How to pause a queue. */
export interface PauseOptions {
  /** When the pause ends by itself; must be in the future. Unset: until resumed. */
  until?: Date | undefined;
  /** Kept in the server's audit log (at most 1024 bytes). */
  reason?: string | undefined;
}

/** A paused queue: reserves skip it until `until`. */
export interface QueuePause {
  /** The queue; {@link ALL_QUEUES} (`""`) for the pause of every queue. */
  queue: string;
  /** When the pause ends by itself; undefined: until resumed. */
  until: Date | undefined;
}
