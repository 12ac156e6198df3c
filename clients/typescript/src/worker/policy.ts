/**
 * The Worker's decisions as small pure functions of their inputs (the attempt, the clock, the
 * capacity), so they are tested without a server: the backoff of a job that failed without a
 * verdict, the nack for a handler's verdict, the heartbeat interval, the reserve batch size, and the
 * early-empty rule.
 */
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { RetryDirective } from "../retry.js";
import type { HandlerError } from "./handler-error.js";

/** The longest backoff for a job no handler took, or whose handler threw something else than a HandlerError. */
const MAX_FAILURE_BACKOFF_MS = 60_000;
/** The shortest heartbeat interval. */
const MIN_HEARTBEAT_MS = 1;
/** An empty reserve sooner than this (or half its wait) suggests the server is not long-polling... */
const EARLY_EMPTY_THRESHOLD_MS = 100;
/** ...so the Worker pauses this long before polling again instead of hot-looping. */
export const EARLY_EMPTY_PAUSE_MS = 250;

/** The retry of a job that failed without a verdict: after `min(2^attempt, 60)` seconds. */
export function failureBackoff(attempt: number): RetryDirective {
  const seconds = 2 ** Math.max(0, attempt);
  return RetryDirective.after(Math.min(seconds * 1000, MAX_FAILURE_BACKOFF_MS));
}

/** The nack for a handler's verdict. */
export function handlerVerdict(error: HandlerError): { retry: RetryDirective; reason: string } {
  switch (error.kind) {
    case "retry":
      return { retry: RetryDirective.default(), reason: error.reason };
    case "retryAfter":
      return { retry: RetryDirective.after(error.delay ?? 0), reason: error.reason };
    case "permanent":
      return { retry: RetryDirective.deadLetter(), reason: error.reason };
  }
}

/**
 * How long to wait before the next lease extension: the fixed interval if one was set, else a third
 * of what is left of the known lease; never less than a millisecond.
 */
export function heartbeatInterval(fixedMs: number | undefined, knownExpiryMs: number, nowMs: number): number {
  const interval = fixedMs ?? Math.max(0, knownExpiryMs - nowMs) / 3;
  return Math.max(interval, MIN_HEARTBEAT_MS);
}

/** How many jobs to ask for: the user's batch size (if any) capped by the free capacity (the held slot plus the free ones). */
export function reserveBatch(maxJobs: number | undefined, freeSlots: number): number {
  const capacity = freeSlots + 1;
  return maxJobs === undefined ? capacity : Math.min(maxJobs, capacity);
}

/** Whether an empty reserve came back suspiciously early for its wait. */
export function isEarlyEmpty(elapsedMs: number, waitTimeoutMs: number): boolean {
  return elapsedMs < Math.min(EARLY_EMPTY_THRESHOLD_MS, waitTimeoutMs / 2);
}

/** `host-pid-8hex`: the host from `HOSTNAME`/`COMPUTERNAME`, else the OS. */
export function defaultWorkerId(env: NodeJS.ProcessEnv = process.env): string {
  const host = env.HOSTNAME || env.COMPUTERNAME || hostname() || "unknown-host";
  return `${host}-${process.pid}-${randomBytes(4).toString("hex")}`;
}
