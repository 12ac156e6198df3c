/**
 * Transport-level retries ({@link RetryPolicy}) and what a nack asks for ({@link RetryDirective}).
 *
 * Retries are opt-in: the default policy makes one attempt. Only transient codes are retried
 * (UNAVAILABLE, DEADLINE_EXCEEDED, ABORTED, RESOURCE_EXHAUSTED); reserve and dead-letter drains never
 * are, and an enqueue carrying a job without an idempotency key does not retry the ambiguous codes
 * (DEADLINE_EXCEEDED, ABORTED), after which its jobs may already be written. Following a cluster
 * follower's redirect to the leader happens below this, in every call, and is no retry (`cluster.ts`).
 *
 * A client that knows it talks to a cluster (a node named the leader, or `getServerInfo` answered with
 * `cluster`) rides a failover on top of the policy: once the policy's attempts are used up, a call that
 * failed with a code its scope retries (never RESOURCE_EXHAUSTED, which is overload, not failover; a
 * reserve on UNAVAILABLE) goes again until `failoverWindow` (15 s by default) has passed since the
 * first such failure, every `initialBackoff` at first and at most every second.
 */
import { status as Status } from "@grpc/grpc-js";
import { ValidationError } from "./errors.js";
import type { Logger } from "./logger.js";

/** The options of a {@link RetryPolicy}; durations are milliseconds. */
export interface RetryPolicyOptions {
  /** Total attempts, the first included (default 1: no retries); values below 1 count as 1. */
  maxAttempts?: number;
  /** The backoff before the first retry (default 100 ms). */
  initialBackoff?: number;
  /** The largest backoff (default 10 000 ms). */
  maxBackoff?: number;
  /** The factor the backoff grows by after each retry (default 2); values below 1 count as 1. */
  multiplier?: number;
  /** Whether each sleep is the backoff times a random factor in [0.5, 1) (default true). */
  jitter?: boolean;
  /**
   * How long a call to a cluster keeps being retried, once the attempts are used up, while the
   * cluster fails over (default 15 000 ms; 0 turns it off). See the module's comment.
   */
  failoverWindow?: number;
}

/** The longest backoff between the retries that ride a cluster failover. */
export const FAILOVER_MAX_BACKOFF_MS = 1_000;

/**
 * How often, and how patiently, the client retries a failed call. The delay before retry n is the
 * current backoff times a random factor in [0.5, 1) (exactly the backoff without jitter); after each
 * retry the backoff is multiplied by `multiplier`, up to `maxBackoff`. Each retry is logged at warn.
 */
export class RetryPolicy {
  readonly maxAttempts: number;
  readonly initialBackoff: number;
  readonly maxBackoff: number;
  readonly multiplier: number;
  readonly jitter: boolean;
  readonly failoverWindow: number;

  constructor(options: RetryPolicyOptions = {}) {
    const attempts = options.maxAttempts ?? 1;
    if (!Number.isFinite(attempts))
      throw new ValidationError("retryPolicy.maxAttempts must be a finite number");
    this.maxAttempts = Math.max(1, Math.floor(attempts));
    this.initialBackoff = milliseconds("retryPolicy.initialBackoff", options.initialBackoff ?? 100);
    this.maxBackoff = milliseconds("retryPolicy.maxBackoff", options.maxBackoff ?? 10_000);
    const multiplier = options.multiplier ?? 2;
    // biome-ignore lint/complexity/useMathMinMax: Math.max would keep NaN, which fails this comparison.
    this.multiplier = multiplier >= 1 ? multiplier : 1;
    this.jitter = options.jitter ?? true;
    this.failoverWindow = milliseconds("retryPolicy.failoverWindow", options.failoverWindow ?? 15_000);
  }

  /** The sleep before a retry whose backoff is `backoff`, given a uniform random number in [0, 1). */
  delay(backoff: number, random: number): number {
    if (!this.jitter) return backoff;
    return backoff * (0.5 + 0.5 * Math.min(Math.max(random, 0), 1));
  }

  /** The backoff that follows `backoff`. */
  nextBackoff(backoff: number): number {
    return Math.min(backoff * this.multiplier, this.maxBackoff);
  }

  /** The backoff before the first retry. */
  firstBackoff(): number {
    return Math.min(this.initialBackoff, this.maxBackoff);
  }
}

function milliseconds(name: string, value: number): number {
  if (!Number.isFinite(value) || value < 0) {
    throw new ValidationError(`${name} must be a non-negative number of milliseconds (got ${value})`);
  }
  return value;
}

/** What happens to a nacked job. Build one with the static methods. */
export class RetryDirective {
  private constructor(
    /** `default`: the queue's retry policy; `after`: after `delay` ms; `deadLetter`: dead-letter now. */
    readonly kind: "default" | "after" | "deadLetter",
    /** The delay in milliseconds, for `after`. */
    readonly delay?: number,
  ) {}

  private static readonly DEFAULT = new RetryDirective("default");
  private static readonly DEAD_LETTER = new RetryDirective("deadLetter");

  /** Retry under the queue's retry policy (or dead-letter the job if this was its last attempt). */
  static default(): RetryDirective {
    return RetryDirective.DEFAULT;
  }

  /** Retry after `delayMs` (capped by the server's schedule horizon), or dead-letter after the last attempt. */
  static after(delayMs: number): RetryDirective {
    return new RetryDirective("after", milliseconds("RetryDirective.after delay", delayMs));
  }

  /** Dead-letter the job now, whatever attempts it has left. */
  static deadLetter(): RetryDirective {
    return RetryDirective.DEAD_LETTER;
  }

  toString(): string {
    return this.kind === "after" ? `after ${this.delay} ms` : this.kind;
  }
}

/**
 * Which failures a call may retry: `transient` allows every transient code; `keylessEnqueue` (an
 * enqueue with a job that has no idempotency key) only those that mean the request was not processed.
 */
export type RetryScope = "transient" | "keylessEnqueue" | "reserve";

/** Whether a call in `scope` may retry after a failure with `code` (a reserve never may). */
export function retryAllows(scope: RetryScope, code: number): boolean {
  if (scope === "reserve") return false;
  if (code === Status.UNAVAILABLE || code === Status.RESOURCE_EXHAUSTED) return true;
  return scope === "transient" && (code === Status.DEADLINE_EXCEEDED || code === Status.ABORTED);
}

/** Whether a failure with `code` is one a cluster's failover causes and a call in `scope` may ride. */
export function ridesFailover(scope: RetryScope, code: number): boolean {
  if (scope === "reserve") return code === Status.UNAVAILABLE;
  return code !== Status.RESOURCE_EXHAUSTED && retryAllows(scope, code);
}

/** The outcome of {@link withRetries}: the last attempt's result, and how many attempts were made. */
export type Attempted<T> =
  | { ok: true; value: T; attempts: number }
  | { ok: false; error: unknown; attempts: number };

/**
 * Runs `call` under `policy`: a failure whose gRPC `code` the scope allows is retried after a backoff
 * until the attempts run out. Never throws: the last outcome is returned.
 */
export async function withRetries<T>(
  policy: RetryPolicy,
  operation: string,
  scope: RetryScope,
  logger: Logger,
  call: () => Promise<T>,
  random: () => number = Math.random,
  sleep: (ms: number) => Promise<void> = defaultSleep,
  inCluster: () => boolean = () => false,
  now: () => number = Date.now,
): Promise<Attempted<T>> {
  let backoff = policy.firstBackoff();
  let failoverBackoff = Math.min(policy.initialBackoff, FAILOVER_MAX_BACKOFF_MS);
  let failoverEnds: number | undefined;
  for (let attempt = 1; ; attempt++) {
    try {
      return { ok: true, value: await call(), attempts: attempt };
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code !== "number") return { ok: false, error, attempts: attempt };
      let delay: number;
      if (attempt < policy.maxAttempts && retryAllows(scope, code)) {
        delay = policy.delay(backoff, random());
        backoff = policy.nextBackoff(backoff);
        logger.warn("retrying sepp call after a transient failure", {
          operation,
          attempt,
          code: Status[code],
          message: (error as { details?: string }).details,
          delayMs: Math.round(delay),
        });
      } else if (policy.failoverWindow > 0 && ridesFailover(scope, code) && inCluster()) {
        const at = now();
        failoverEnds ??= at + policy.failoverWindow;
        if (at >= failoverEnds) return { ok: false, error, attempts: attempt };
        delay = Math.min(policy.delay(failoverBackoff, random()), failoverEnds - at);
        failoverBackoff = Math.min(failoverBackoff * policy.multiplier, FAILOVER_MAX_BACKOFF_MS);
        logger.warn("retrying sepp call while the cluster fails over", {
          operation,
          attempt,
          code: Status[code],
          message: (error as { details?: string }).details,
          delayMs: Math.round(delay),
        });
      } else {
        return { ok: false, error, attempts: attempt };
      }
      await sleep(delay);
    }
  }
}

function defaultSleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
