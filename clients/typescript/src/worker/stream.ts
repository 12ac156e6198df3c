/**
 * The Worker's streaming mode: jobs come on one `Consume` stream (see `consume.ts`) instead of
 * reserve calls.
 *
 * The Worker asks `getServerInfo` first: without the feature `"consume"` it uses the reserve loop;
 * if that call fails it tries the stream anyway. The stream is opened with a credit per free slot.
 * Each pushed job takes a slot and runs; when its handler stops the slot is freed and its credit
 * goes back to the stream open at that moment, in the message that carries the job's ack or nack.
 * A job the stream names as cancelled has `ctx.signal` aborted at once (the reason a
 * `LeaseLostError` whose `cause` is a `JobCancelledError`).
 *
 * When the stream ends: UNIMPLEMENTED (a server without Consume) falls back to the reserve loop for
 * good; UNAVAILABLE from a follower naming the leader reopens at once on the leader the client now
 * follows (at most `MAX_REDIRECTS` times in a row without a message from the server); anything else
 * (a server going down, a leader lost, a refused open) is logged and the stream reopened after the
 * Worker's `reserveErrorBackoff`, on the node the client's failover picked. Jobs still running keep
 * their slots; their settles go on the new stream's connection on calls of their own.
 *
 * On shutdown the stream is half-closed: the server answers the settles it has and ends the stream,
 * and jobs it pushed before seeing the half-close are still processed.
 */
import { status as Status } from "@grpc/grpc-js";
import type { SeppClient } from "../client.js";
import { MAX_REDIRECTS } from "../cluster.js";
import type { ConsumeSession } from "../consume.js";
import { JobCancelledError, LeaseLostError } from "../errors.js";
import { type Job, leaseOf } from "../job.js";
import type { Logger } from "../logger.js";
import type { ServerInfo } from "../types.js";
import type { JobHooks } from "./process.js";
import { pause, type Slots } from "./slots.js";

/** The server's default `max_consume_credits`, for a server whose info could not be read. */
const DEFAULT_MAX_CREDITS = 10_000;
/** The server's default `max_enqueue_batch` (settles per message), likewise. */
const DEFAULT_MAX_SETTLES = 256;

export interface StreamOptions {
  client: SeppClient;
  logger: Logger;
  queues: string[];
  leaseDuration: number;
  workerId: string;
  /** The pause before reopening after a failure. */
  backoff: number;
  slots: Slots;
  stop: AbortSignal;
  /** Runs a job holding a slot; `released` hears when the slot goes back (false: to a waiting job). */
  start(job: Job, hooks: JobHooks, released: (freed: boolean) => void): void;
}

/** Runs the streaming mode until shutdown ("stopped") or until the server turns out to lack it ("fallback"). */
export async function runStream(options: StreamOptions): Promise<"stopped" | "fallback"> {
  const { client, logger, slots, stop } = options;
  let info: ServerInfo | undefined;
  try {
    info = await client.getServerInfo();
  } catch (error) {
    logger.warn("could not read the server's features; trying the Consume stream", { error: String(error) });
  }
  if (info !== undefined && !info.features.includes("consume")) {
    logger.info?.("the server offers no Consume stream; reserving", { workerId: options.workerId });
    return "fallback";
  }
  const limits = {
    maxCredits: info?.maxConsumeCredits || DEFAULT_MAX_CREDITS,
    maxSettles: info?.maxEnqueueBatch || DEFAULT_MAX_SETTLES,
  };
  /** The jobs running, by id, with what stops them when the stream names them cancelled. */
  const running = new Map<string, (reason: LeaseLostError) => void>();
  let current: ConsumeSession | undefined;
  let redirects = 0;
  while (!stop.aborted) {
    let opened: ReturnType<SeppClient["openConsume"]>;
    try {
      opened = client.openConsume(
        {
          queues: options.queues,
          leaseDuration: options.leaseDuration,
          workerId: options.workerId,
          credits: slots.free,
          ...limits,
        },
        {
          jobs: (jobs) => {
            for (const job of jobs) void slots.acquire().then(() => startJob(job));
          },
          cancelled: (ids) => {
            for (const id of ids) running.get(id)?.(cancelledReason(id));
          },
        },
      );
    } catch (error) {
      logger.warn(`cannot open the Consume stream: ${String(error)}; retrying in ${options.backoff} ms`, {
        error,
      });
      await pause(options.backoff, stop);
      continue;
    }
    const session = opened.session;
    current = session;
    const onStop = () => session.halfClose();
    stop.addEventListener("abort", onStop, { once: true });
    if (stop.aborted) session.halfClose();
    const end = await opened.ended;
    stop.removeEventListener("abort", onStop);
    current = undefined;
    const { code, details } = end.status;
    if (code === Status.UNIMPLEMENTED) {
      logger.info?.("the server answered the Consume stream UNIMPLEMENTED; reserving", {
        workerId: options.workerId,
      });
      return "fallback";
    }
    if (stop.aborted) break;
    if (end.received) redirects = 0;
    if (end.redirected && redirects < MAX_REDIRECTS) {
      redirects++;
      continue;
    }
    const label = Status[code] ?? String(code);
    logger.warn(`the Consume stream ended (${label}: ${details}); reopening in ${options.backoff} ms`, {
      code: label,
      details,
      backoffMs: options.backoff,
    });
    await pause(options.backoff, stop);
  }
  return "stopped";

  function startJob(job: Job): void {
    const { ctx } = job;
    let cancel!: (reason: LeaseLostError) => void;
    const cancelled = new Promise<LeaseLostError>((resolve) => {
      cancel = (reason) => {
        leaseOf(ctx).controller.abort(reason);
        resolve(reason);
      };
    });
    running.set(ctx.id, cancel);
    options.start(job, { cancelled }, (freed) => {
      running.delete(ctx.id);
      // The credit goes back unless a job waiting for a slot took it (it came on a credit already).
      if (freed) current?.grant(1);
    });
  }
}

function cancelledReason(id: string): LeaseLostError {
  const cause = new JobCancelledError("named cancelled on the Consume stream");
  return new LeaseLostError(`job ${id} was cancelled: ${cause.message}`, { cause });
}
