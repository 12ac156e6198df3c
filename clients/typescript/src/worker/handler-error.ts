/**
 * {@link HandlerError}: how a handler tells the Worker to nack its job, and with which directive.
 */
import { checkMs } from "../convert.js";
import { SeppError } from "../errors.js";

const BRAND = Symbol.for("sepp-js.HandlerError");

/**
 * Thrown by a handler to nack its job: `retry` (the queue's retry policy), `retryAfter` (after a
 * delay) or `permanent` (dead-letter now). Anything else a handler throws is also nacked for retry,
 * after a backoff, and logged as an error.
 */
export class HandlerError extends SeppError {
  override name = "HandlerError";
  readonly [BRAND] = true;

  private constructor(
    readonly kind: "retry" | "retryAfter" | "permanent",
    readonly reason: string,
    /** The delay in ms, for `retryAfter`. */
    readonly delay?: number,
  ) {
    super(kind === "retryAfter" ? `retry after ${delay} ms: ${reason}` : `${kind}: ${reason}`);
  }

  /** Nack for a retry under the queue's retry policy. */
  static retry(reason: string): HandlerError {
    return new HandlerError("retry", String(reason));
  }

  /** Nack for a retry after `delayMs`. */
  static retryAfter(reason: string, delayMs: number): HandlerError {
    return new HandlerError("retryAfter", String(reason), checkMs("HandlerError.retryAfter delay", delayMs));
  }

  /** Nack to the dead-letter store, whatever attempts are left. */
  static permanent(reason: string): HandlerError {
    return new HandlerError("permanent", String(reason));
  }

  /** Whether `error` is a HandlerError, also across copies of this package (ESM and CJS). */
  static is(error: unknown): error is HandlerError {
    return typeof error === "object" && error !== null && (error as { [BRAND]?: unknown })[BRAND] === true;
  }
}
