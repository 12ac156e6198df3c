/**
 * A reserved job: {@link Job} (payload plus context) and {@link JobCtx}, which carries the lease that
 * ack, nack and extend act on. The lease itself (expiry, worker id, the abort signal the Worker
 * fires when it is lost) is internal and reached through {@link leaseOf}.
 */
import type { SettleRoute } from "./consume.js";
import type { CustomValue, Payload } from "./payload.js";
import type { TraceContext } from "./trace.js";

/** A reserved job. */
export interface Job {
  payload: Payload | undefined;
  ctx: JobCtx;
}

/** @internal What a context needs to act on its lease. */
export interface Lease {
  expiresAt: Date;
  readonly workerId: string | undefined;
  readonly controller: AbortController;
  readonly extend: (ctx: JobCtx, extensionMs: number) => Promise<Date>;
  /** The Consume stream the job came on, where its ack, nack and extends go first. */
  readonly route?: SettleRoute | undefined;
}

/** @internal The fields of a job's context, decoded from the wire. */
export interface JobFields {
  id: string;
  queue: string;
  jobType: string;
  priority: number;
  attempt: number;
  maxAttempts: number;
  enqueuedAt: Date;
  scheduledAt: Date | undefined;
  custom: Record<string, CustomValue>;
  traceContext: TraceContext | undefined;
}

const leases = new WeakMap<JobCtx, Lease>();

/** Everything about a reserved job except its payload, and the handle on its lease. */
export class JobCtx {
  readonly id: string;
  readonly queue: string;
  readonly jobType: string;
  readonly priority: number;
  /** 1 on the first delivery. */
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly enqueuedAt: Date;
  readonly scheduledAt: Date | undefined;
  readonly custom: Record<string, CustomValue>;
  /** The producer's trace context, when it sent a valid one. */
  readonly traceContext: TraceContext | undefined;
  /** The worker id the job was reserved with, when one was given. */
  readonly workerId: string | undefined;
  /**
   * Aborted by a Worker when it loses the job's lease (the reason is a `LeaseLostError`): the job
   * belongs to another attempt, so the handler should stop; its result is ignored. Also aborted when
   * the job was cancelled while the handler ran (the reason is a `LeaseLostError` whose `cause` is a
   * `JobCancelledError`).
   */
  readonly signal: AbortSignal;

  /** @internal Made by the client when it decodes a reserved job. */
  constructor(fields: JobFields, lease: Lease) {
    this.id = fields.id;
    this.queue = fields.queue;
    this.jobType = fields.jobType;
    this.priority = fields.priority;
    this.attempt = fields.attempt;
    this.maxAttempts = fields.maxAttempts;
    this.enqueuedAt = fields.enqueuedAt;
    this.scheduledAt = fields.scheduledAt;
    this.custom = fields.custom;
    this.traceContext = fields.traceContext;
    this.workerId = lease.workerId;
    this.signal = lease.controller.signal;
    leases.set(this, lease);
  }

  /** When the lease ends, as last granted by the server (updated by every successful extend). */
  get leaseExpiresAt(): Date {
    return leaseOf(this).expiresAt;
  }

  /** Extends the lease to now + `extensionMs` (the server may clamp it); resolves with the new expiry. */
  extend(extensionMs: number): Promise<Date> {
    return leaseOf(this).extend(this, extensionMs);
  }

  toString(): string {
    return `job ${this.id} (${this.jobType} on ${this.queue}, attempt ${this.attempt})`;
  }
}

/** @internal The lease of a context. */
export function leaseOf(ctx: JobCtx): Lease {
  const lease = leases.get(ctx);
  if (lease === undefined) throw new TypeError("this JobCtx was not made by a sepp-js client");
  return lease;
}
