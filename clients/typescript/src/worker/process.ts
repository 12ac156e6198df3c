/**
 * The life of one job in a Worker: find its handler, run it (in a `sepp.process` span), keep its
 * lease alive while it runs if asked, and settle the job: ack on success, nack on a HandlerError
 * (with its directive) or any other failure (after a backoff), nothing when the lease was lost.
 * A job cancelled while its handler runs is stopped like a lost lease (its extend throws
 * `JobCancelledError`, or the Consume stream it came on names it), logged as "job cancelled", and
 * never acked or nacked (a cancel named by the stream is answered with one extend, which
 * dead-letters the job at once instead of when its lease runs out).
 * A failed ack or nack is logged, never thrown: the job is redelivered when its lease expires
 * (unless it was cancelled: then it is dead-lettered).
 */
import type { SeppClient } from "../client.js";
import { AttemptMismatchError, JobCancelledError, JobNotFoundError, LeaseLostError } from "../errors.js";
import { type Job, type JobCtx, leaseOf } from "../job.js";
import type { Logger } from "../logger.js";
import { inProcessSpan, type SpanHandle } from "../otel.js";
import type { Payload } from "../payload.js";
import type { RetryDirective } from "../retry.js";
import { HandlerError } from "./handler-error.js";
import { failureBackoff, handlerVerdict, heartbeatInterval } from "./policy.js";

/** A job handler: returning acks the job, throwing nacks it (see {@link HandlerError}). */
export type Handler = (payload: Payload | undefined, ctx: JobCtx) => Promise<void> | void;

/** What every job of a Worker shares. */
export interface ProcessContext {
  client: SeppClient;
  logger: Logger;
  leaseDuration: number;
  /** Undefined: no auto-extend; null: at a third of the remaining lease; a number: that fixed interval. */
  autoExtend: number | null | undefined;
  handlers: ReadonlyMap<string, Handler>;
  catchAll: Handler | undefined;
}

/** How a handler run ended. */
type Ending =
  | { kind: "returned" }
  | { kind: "threw"; error: unknown }
  | { kind: "leaseLost"; error: unknown; cancelled: boolean; pushed?: boolean };

/** What the Worker's streaming mode adds to one job's processing. */
export interface JobHooks {
  /** Called once the handler has stopped, before the job is settled (the stream's credit goes back). */
  handlerDone?: () => void;
  /** Resolves with the abort reason when the stream names the job as cancelled (`ctx.signal` is aborted then). */
  cancelled?: Promise<LeaseLostError>;
}

/** Processes one job to its end; never rejects. */
export async function processJob(shared: ProcessContext, job: Job, hooks: JobHooks = {}): Promise<void> {
  const { ctx } = job;
  const attributes = {
    "sepp.job_id": ctx.id,
    "sepp.job_type": ctx.jobType,
    "sepp.queue": ctx.queue,
    "sepp.attempt": ctx.attempt,
    "sepp.worker_id": ctx.workerId,
  };
  try {
    await inProcessSpan(attributes, ctx.traceContext, (span) => handle(shared, job, span, hooks));
  } catch (error) {
    // Only a bug gets here: settling already swallows and logs its own failures.
    shared.logger.error("unexpected failure while processing a job", {
      job: String(ctx),
      error: String(error),
    });
  }
}

async function handle(
  shared: ProcessContext,
  { payload, ctx }: Job,
  span: SpanHandle,
  hooks: JobHooks,
): Promise<void> {
  const handler = shared.handlers.get(ctx.jobType) ?? shared.catchAll;
  if (handler === undefined) {
    hooks.handlerDone?.();
    const retry = failureBackoff(ctx.attempt);
    shared.logger.warn(`no handler registered for job_type ${ctx.jobType}; nacking`, {
      job: String(ctx),
      retry: retry.toString(),
    });
    span.fail(new Error("no handler registered for job_type"));
    await settleNack(shared, ctx, retry, "no handler registered for job_type");
    return;
  }
  const run = Promise.resolve()
    .then(() => handler(payload, ctx))
    .then(
      (): Ending => ({ kind: "returned" }),
      (error): Ending => ({ kind: "threw", error }),
    );
  const pushed: Promise<Ending> | undefined = hooks.cancelled?.then((error) => ({
    kind: "leaseLost",
    error,
    cancelled: true,
    pushed: true,
  }));
  const watched = shared.autoExtend === undefined ? run : supervise(shared, ctx, run);
  const ending = await (pushed === undefined ? watched : Promise.race([watched, pushed]));
  // A cancel named by the stream: one extend dead-letters the job now (it fails JobCancelledError).
  const finalized = ending.kind === "leaseLost" && ending.pushed ? finalizeCancel(shared, ctx) : undefined;
  if (ending.kind === "leaseLost") await run; // the slot stays taken until the handler has actually stopped
  hooks.handlerDone?.();
  switch (ending.kind) {
    case "leaseLost":
      span.fail(ending.error);
      if (ending.cancelled) {
        shared.logger.warn("job cancelled; handler aborted (the job is dead-lettered, not acked or nacked)", {
          job: String(ctx),
          error: String(ending.error),
        });
      } else {
        shared.logger.error("lease lost; handler aborted (the job is neither acked nor nacked)", {
          job: String(ctx),
          error: String(ending.error),
        });
      }
      await finalized;
      return;
    case "returned":
      try {
        await shared.client.ack(ctx);
      } catch (error) {
        logSettleFailure(shared.logger, "ack", ctx, error);
      }
      return;
    case "threw": {
      span.fail(ending.error);
      if (HandlerError.is(ending.error)) {
        shared.logger.warn("handler failed", { job: String(ctx), error: ending.error.message });
        const { retry, reason } = handlerVerdict(ending.error);
        await settleNack(shared, ctx, retry, reason);
      } else {
        const message = ending.error instanceof Error ? ending.error.message : String(ending.error);
        shared.logger.error("handler threw", { job: String(ctx), error: ending.error });
        await settleNack(
          shared,
          ctx,
          failureBackoff(ctx.attempt),
          `handler threw: ${message}`.slice(0, 1024),
        );
      }
      return;
    }
  }
}

/** The extend that answers a cancel the stream named; its expected JobCancelledError is no news. */
async function finalizeCancel(shared: ProcessContext, ctx: JobCtx): Promise<void> {
  try {
    await shared.client.extend(ctx, shared.leaseDuration);
    shared.logger.warn("the server named a job cancelled, but its lease could still be extended", {
      job: String(ctx),
    });
  } catch (error) {
    if (error instanceof JobNotFoundError) return;
    shared.logger.warn("could not settle a cancelled job; it is dead-lettered when its lease expires", {
      job: String(ctx),
      error: String(error),
    });
  }
}

/**
 * Waits for the handler while extending its lease; aborts `ctx.signal` when the lease is lost. Stops
 * extending once `ctx.signal` is aborted (by a cancel the stream named; the caller handles that).
 */
async function supervise(shared: ProcessContext, ctx: JobCtx, run: Promise<Ending>): Promise<Ending> {
  const fixed = shared.autoExtend ?? undefined;
  for (;;) {
    const interval = heartbeatInterval(fixed, ctx.leaseExpiresAt.getTime(), Date.now());
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const tick = new Promise<"tick" | "aborted">((resolve) => {
      timer = setTimeout(() => resolve("tick"), interval);
      onAbort = () => resolve("aborted");
      ctx.signal.addEventListener("abort", onAbort, { once: true });
    });
    const first = ctx.signal.aborted ? "aborted" : await Promise.race([run, tick]);
    clearTimeout(timer);
    if (onAbort !== undefined) ctx.signal.removeEventListener("abort", onAbort);
    if (first === "aborted") {
      const reason: unknown = ctx.signal.reason;
      const cancelled = (reason as { cause?: unknown } | null)?.cause instanceof JobCancelledError;
      return { kind: "leaseLost", error: reason, cancelled, pushed: true };
    }
    if (first !== "tick") return first;
    try {
      const expiry = await shared.client.extend(ctx, shared.leaseDuration);
      shared.logger.debug?.("lease extended", { jobId: ctx.id, expiry: expiry.toISOString() });
    } catch (error) {
      const gone = error instanceof JobNotFoundError || error instanceof AttemptMismatchError;
      if (gone || Date.now() >= ctx.leaseExpiresAt.getTime()) {
        if (!gone)
          shared.logger.warn("could not extend the lease before it expired", {
            jobId: ctx.id,
            error: String(error),
          });
        const cancelled = error instanceof JobCancelledError;
        const what = cancelled ? `${ctx} was cancelled` : `the lease of ${ctx} was lost`;
        const reason = new LeaseLostError(`${what}: ${(error as Error).message}`, { cause: error });
        leaseOf(ctx).controller.abort(reason);
        return { kind: "leaseLost", error: reason, cancelled };
      }
      shared.logger.warn("could not extend the lease; lease still valid, will retry", {
        jobId: ctx.id,
        error: String(error),
      });
    }
  }
}

async function settleNack(
  shared: ProcessContext,
  ctx: JobCtx,
  retry: RetryDirective,
  reason: string,
): Promise<void> {
  try {
    await shared.client.nack(ctx, { retry, reason });
  } catch (error) {
    logSettleFailure(shared.logger, "nack", ctx, error);
  }
}

function logSettleFailure(logger: Logger, operation: string, ctx: JobCtx, error: unknown): void {
  if (error instanceof JobCancelledError) {
    logger.warn(`job cancelled: ${operation} refused; the job is dead-lettered, not redelivered`, {
      job: String(ctx),
      error: String(error),
    });
    return;
  }
  logger.error(
    `${operation} failed: the job will be redelivered when its lease expires (or an earlier retry already settled it)`,
    { job: String(ctx), error: String(error) },
  );
}
