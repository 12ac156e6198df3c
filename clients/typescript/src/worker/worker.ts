/**
 * The {@link Worker}: runs the reserve → handle → ack/nack loop so application code only writes
 * handlers, with bounded concurrency, optional automatic lease extension, and graceful shutdown
 * through a {@link ShutdownHandle}.
 *
 * Against a server with the feature `"consume"` (unless `streaming` is false) the Worker opens one
 * `Consume` stream (see `stream.ts`): it grants the server a credit per free slot, runs each job the
 * server pushes in its own slot, gives the credit back when the handler has stopped, and sends the
 * jobs' acks, nacks and extends on the stream. It falls back to the reserve loop when the server
 * lacks `"consume"` or answers the stream UNIMPLEMENTED.
 *
 * The reserve loop: take a free slot (or stop on shutdown); reserve up to the free capacity
 * (cancelled by shutdown, though jobs already handed over are still processed); after a failed
 * reserve back off (1 s by default), after an empty one that came back suspiciously early pause
 * 250 ms; run each job in its own slot.
 *
 * On shutdown the Worker stops taking jobs (a stream is half-closed; the jobs the server pushed
 * before it saw that are still processed) and resolves `run()` once every job in flight has been
 * settled, with no deadline: bound your handlers yourself.
 */
import type { SeppClient } from "../client.js";
import { checkCount, checkMs } from "../convert.js";
import { ValidationError } from "../errors.js";
import type { Job } from "../job.js";
import type { Logger } from "../logger.js";
import { defaultWorkerId, EARLY_EMPTY_PAUSE_MS, isEarlyEmpty, reserveBatch } from "./policy.js";
import { type Handler, type JobHooks, type ProcessContext, processJob } from "./process.js";
import { pause, Slots } from "./slots.js";
import { runStream } from "./stream.js";

export type { Handler } from "./process.js";

/** The options of a {@link Worker}. Durations are milliseconds. */
export interface WorkerOptions {
  /** Queues to reserve from, in order of preference. */
  queues: string[];
  /** The lease requested for each job (and by each extension). */
  leaseDuration: number;
  /** Jobs processed at once (default 16). */
  maxInFlight?: number | undefined;
  /** Keep leases alive while handlers run, extending at a third of the remaining lease (default false). */
  autoExtend?: boolean | undefined;
  /** With `autoExtend`, extend at this fixed interval instead. */
  autoExtendInterval?: number | undefined;
  /** How long each reserve waits for a job (default 30 000; must be above 0). */
  waitTimeout?: number | undefined;
  /** The most jobs one reserve takes (default: as many as there are free slots). */
  maxJobs?: number | undefined;
  /** The pause after a failed reserve (default 1 000). */
  reserveErrorBackoff?: number | undefined;
  /** Names this worker to the server (default `host-pid-8hex`). */
  workerId?: string | undefined;
  /** Where diagnostics go (default: the client's logger). */
  logger?: Logger | undefined;
  /** Aborting it shuts the Worker down, like `shutdownHandle().shutdown()`. */
  signal?: AbortSignal | undefined;
  /**
   * Take jobs on one `Consume` stream when the server offers it (feature `"consume"`), and settle
   * them on it (default true); false always uses the reserve loop. `waitTimeout` and `maxJobs`
   * apply to the reserve loop only.
   */
  streaming?: boolean | undefined;
}

/** Stops a Worker: it finishes the jobs in flight, then `run()` resolves. Safe to call more than once. */
export class ShutdownHandle {
  readonly #controller = new AbortController();

  /** Stop reserving, finish the jobs in flight, then let `run()` resolve. */
  shutdown(): void {
    this.#controller.abort();
  }

  /** Whether shutdown was asked for. */
  get isShutdown(): boolean {
    return this.#controller.signal.aborted;
  }

  /** Aborts on shutdown. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }
}

/** Runs handlers for the jobs of some queues. Register handlers with `handle`, then `await run()`. */
export class Worker {
  /** The worker id sent with every reserve, ack, nack and extend. */
  readonly workerId: string;
  readonly #client: SeppClient;
  readonly #queues: string[];
  readonly #leaseDuration: number;
  readonly #maxInFlight: number;
  readonly #autoExtend: number | null | undefined;
  readonly #waitTimeout: number;
  readonly #maxJobs: number | undefined;
  readonly #reserveErrorBackoff: number;
  readonly #streaming: boolean;
  readonly #logger: Logger;
  readonly #handlers = new Map<string, Handler>();
  #catchAll: Handler | undefined;
  readonly #shutdown = new ShutdownHandle();
  #running = false;

  constructor(client: SeppClient, options: WorkerOptions) {
    if (typeof options !== "object" || options === null) throw new ValidationError("a Worker needs options");
    const { queues } = options;
    if (!Array.isArray(queues) || queues.length === 0)
      throw new ValidationError("Worker: at least one queue is required");
    queues.forEach((queue, index) => {
      if (typeof queue !== "string" || queue === "")
        throw new ValidationError(`Worker: queue name at index ${index} is empty`);
    });
    this.#client = client;
    this.#queues = [...queues];
    this.#leaseDuration = checkMs("Worker: leaseDuration", options.leaseDuration, 1);
    this.#maxInFlight = checkCount("Worker: maxInFlight", options.maxInFlight ?? 16, 1);
    this.#waitTimeout = checkMs("Worker: waitTimeout", options.waitTimeout ?? 30_000);
    if (this.#waitTimeout === 0)
      throw new ValidationError("Worker: waitTimeout must be above 0 (a zero wait would poll in a hot loop)");
    this.#maxJobs =
      options.maxJobs === undefined ? undefined : checkCount("Worker: maxJobs", options.maxJobs, 1);
    this.#reserveErrorBackoff = checkMs("Worker: reserveErrorBackoff", options.reserveErrorBackoff ?? 1_000);
    if (options.streaming !== undefined && typeof options.streaming !== "boolean")
      throw new ValidationError("Worker: streaming must be a boolean");
    this.#streaming = options.streaming ?? true;
    if (options.autoExtendInterval !== undefined)
      checkMs("Worker: autoExtendInterval", options.autoExtendInterval);
    this.#autoExtend = options.autoExtend ? (options.autoExtendInterval ?? null) : undefined;
    const workerId = options.workerId ?? defaultWorkerId();
    if (typeof workerId !== "string" || workerId === "")
      throw new ValidationError("Worker: workerId must not be empty");
    this.workerId = workerId;
    this.#logger = options.logger ?? client.logger;
    const signal = options.signal;
    if (signal?.aborted) this.#shutdown.shutdown();
    else signal?.addEventListener("abort", () => this.#shutdown.shutdown(), { once: true });
  }

  /** Runs `handler` for jobs of `jobType`; chainable. A second handler for one type throws. */
  handle(jobType: string, handler: Handler): this {
    if (typeof jobType !== "string" || jobType === "")
      throw new ValidationError("Worker.handle: jobType must not be empty");
    if (typeof handler !== "function")
      throw new ValidationError("Worker.handle: the handler must be a function");
    if (this.#handlers.has(jobType)) {
      throw new ValidationError(
        `Worker.handle: a handler for job type ${JSON.stringify(jobType)} is already registered`,
      );
    }
    this.#handlers.set(jobType, handler);
    return this;
  }

  /** Runs `handler` for jobs whose type has no handler of its own (replacing an earlier one); chainable. */
  catchAll(handler: Handler): this {
    if (typeof handler !== "function")
      throw new ValidationError("Worker.catchAll: the handler must be a function");
    this.#catchAll = handler;
    return this;
  }

  /** The handle that stops this Worker. */
  shutdownHandle(): ShutdownHandle {
    return this.#shutdown;
  }

  /** Processes jobs until shut down; resolves once the jobs in flight are settled. Runs once at a time. */
  async run(): Promise<void> {
    if (this.#running) throw new ValidationError("Worker.run: this Worker is already running");
    this.#running = true;
    const logger = this.#logger;
    const stop = this.#shutdown.signal;
    const shared: ProcessContext = {
      client: this.#client,
      logger,
      leaseDuration: this.#leaseDuration,
      autoExtend: this.#autoExtend,
      handlers: this.#handlers,
      catchAll: this.#catchAll,
    };
    const slots = new Slots(this.#maxInFlight);
    const inFlight = new Set<Promise<void>>();
    /** Runs a job that holds a slot; `released` hears when the slot is given back. */
    const start = (job: Job, hooks: JobHooks = {}, released?: (freed: boolean) => void) => {
      let holding = true;
      const release = () => {
        if (!holding) return;
        holding = false;
        const freed = slots.release();
        released?.(freed);
      };
      // A streamed job's slot (and credit) goes back once its handler stops, before it is settled.
      const own: JobHooks =
        released === undefined
          ? hooks
          : {
              ...hooks,
              handlerDone: () => {
                hooks.handlerDone?.();
                release();
              },
            };
      const task = processJob(shared, job, own).finally(() => {
        inFlight.delete(task);
        release();
      });
      inFlight.add(task);
    };
    logger.info?.("worker started", {
      workerId: this.workerId,
      maxInFlight: this.#maxInFlight,
      handlers: this.#handlers.size,
      catchAll: this.#catchAll !== undefined,
      autoExtend: this.#autoExtend !== undefined,
      queues: this.#queues,
      streaming: this.#streaming,
    });
    try {
      const streamed = this.#streaming
        ? await runStream({
            client: this.#client,
            logger,
            queues: this.#queues,
            leaseDuration: this.#leaseDuration,
            workerId: this.workerId,
            backoff: this.#reserveErrorBackoff,
            slots,
            stop,
            start,
          })
        : "fallback";
      while (streamed === "fallback" && (await slots.acquire(stop))) {
        const jobs = await this.#reserveOnce(slots, stop);
        if (jobs === null) continue;
        // Later jobs of a batch wait for their own slot: they are leased to us already.
        start(jobs[0] as Job);
        for (const job of jobs.slice(1)) {
          await slots.acquire();
          start(job);
        }
      }
      logger.info?.("worker shutting down; waiting for in-flight jobs to finish", {
        workerId: this.workerId,
        inFlight: inFlight.size,
      });
      while (inFlight.size > 0) await Promise.all(inFlight);
      logger.info?.("worker stopped", { workerId: this.workerId });
    } finally {
      this.#running = false;
    }
  }

  /** One reserve while holding a slot: the jobs (the slot passes to the first), or null with the slot released. */
  async #reserveOnce(slots: Slots, stop: AbortSignal): Promise<Job[] | null> {
    const started = Date.now();
    let jobs: Job[] | null;
    try {
      jobs = await this.#client.reserve({
        queues: this.#queues,
        leaseDuration: this.#leaseDuration,
        waitTimeout: this.#waitTimeout,
        maxJobs: reserveBatch(this.#maxJobs, slots.free),
        workerId: this.workerId,
        signal: stop,
      });
    } catch (error) {
      slots.release();
      if (stop.aborted) return null; // the reserve was cancelled by the shutdown
      const backoff = this.#reserveErrorBackoff;
      this.#logger.warn(`reserve error: ${String(error)}; backing off for ${backoff} ms`, {
        error,
        backoffMs: backoff,
      });
      await pause(backoff, stop);
      return null;
    }
    if (jobs === null) {
      slots.release();
      if (isEarlyEmpty(Date.now() - started, this.#waitTimeout)) await pause(EARLY_EMPTY_PAUSE_MS, stop);
    }
    return jobs;
  }
}
