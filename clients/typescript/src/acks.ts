/**
 * Ack coalescing: the acks of one event-loop turn travel together in one `AckBatch` call.
 *
 * A Worker acks the jobs of one reserve answer within the same turn of the event loop (the answer
 * arrives in one I/O callback, and each job's handler, ack included, runs in the microtasks that
 * follow it). The first ack of a turn schedules a flush with `setImmediate`, which runs once those
 * microtasks have drained; every ack made before it runs joins it. (`queueMicrotask` would flush
 * after the first ack's own microtask, before the other jobs of the answer got to theirs.) A flush
 * of one ack sends a plain `Ack`; a flush of several sends one `AckBatch` per 256 acks, whose items
 * the server answers one by one, so every caller still gets exactly what its own `Ack` would have
 * got. Nobody waits longer than the turn.
 *
 * A server older than `AckBatch` (sepp 0.1) answers it UNIMPLEMENTED: the acks of that flush are
 * then resent one call each, and the pipeline sends plain `Ack` calls from then on.
 *
 * A failure of a whole shared call is every sharer's failure, as it would have been had each sent
 * its own call at that moment; each caller's retry policy then retries its own `Ack` (see
 * `SeppClient.ack`).
 */
import { Metadata, status as Status } from "@grpc/grpc-js";
import { BatchResultCountMismatchError, CANCELLED_TRAILER, MalformedResponseError } from "./errors.js";
import type * as wire from "./gen/sepp/v1/queue.js";

/** The server's default batch limit (`limits.max_enqueue_batch`) is 256. */
export const MAX_ACKS_PER_CALL = 256;

/** The message of a cancelled lease's NOT_FOUND, which the item of a batch carries without a trailer. */
export const CANCELLED_MESSAGE = "job was cancelled";

/** Sends one plain `Ack`; rejects with the grpc-js status error. */
export type SendOne = (request: wire.AckRequest) => Promise<unknown>;
/** Sends one `AckBatch`; rejects with the grpc-js status error. */
export type SendBatch = (request: wire.AckBatchRequest) => Promise<wire.AckBatchResponse>;
/** Runs `flush` at the end of the current turn of the event loop. */
export type Schedule = (flush: () => void) => void;

interface Entry {
  request: wire.AckRequest;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** A status error as grpc-js raises it: `code`, `details` and the trailing `metadata`. */
export interface ItemStatusError extends Error {
  code: number;
  details: string;
  metadata: Metadata;
}

/**
 * The error a failed item of an `AckBatch` (or a settle's result on a Consume stream) stands for, as
 * its own call would have failed. An item carries a code, a message and the flag `cancelled`; the
 * item of a cancelled job (NOT_FOUND with `cancelled` set, or from a server without the flag, the
 * message "job was cancelled") gets the trailer its own call would have had, `sepp-cancelled:
 * true`, so it maps to `JobCancelledError` just the same.
 */
export function itemError(code: number, message: string, cancelled = false): ItemStatusError {
  const known = typeof Status[code] === "string" && code !== Status.OK;
  const status = known ? code : Status.UNKNOWN;
  const metadata = new Metadata();
  if (status === Status.NOT_FOUND && (cancelled || message === CANCELLED_MESSAGE))
    metadata.set(CANCELLED_TRAILER, "true");
  const error = new Error(`${status} ${Status[status]}: ${message}`) as ItemStatusError;
  error.code = status;
  error.details = message;
  error.metadata = metadata;
  return error;
}

/** Coalesces the acks of one event-loop turn (see the module). */
export class AckPipeline {
  readonly #sendOne: SendOne;
  readonly #sendBatch: SendBatch;
  readonly #schedule: Schedule;
  #waiting: Entry[] = [];
  #flushScheduled = false;
  #batchSupported = true;

  constructor(sendOne: SendOne, sendBatch: SendBatch, schedule: Schedule = (flush) => setImmediate(flush)) {
    this.#sendOne = sendOne;
    this.#sendBatch = sendBatch;
    this.#schedule = schedule;
  }

  /** False once the server answered `AckBatch` UNIMPLEMENTED. */
  get batchSupported(): boolean {
    return this.#batchSupported;
  }

  /** Sends `request`'s ack. Rejects with what its own `Ack` call would have rejected with. */
  async submit(request: wire.AckRequest): Promise<void> {
    if (!this.#batchSupported) {
      await this.#sendOne(request);
      return;
    }
    return new Promise<void>((resolve, reject) => {
      this.#waiting.push({ request, resolve, reject });
      if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        this.#schedule(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#flushScheduled = false;
    const waiting = this.#waiting;
    this.#waiting = [];
    for (let start = 0; start < waiting.length; start += MAX_ACKS_PER_CALL) {
      void this.#deliver(waiting.slice(start, start + MAX_ACKS_PER_CALL));
    }
  }

  async #deliver(group: Entry[]): Promise<void> {
    if (group.length === 1 || !this.#batchSupported) {
      await Promise.all(group.map((entry) => this.#deliverOne(entry)));
      return;
    }
    let response: wire.AckBatchResponse;
    try {
      response = await this.#sendBatch({ acks: group.map((entry) => entry.request) });
    } catch (error) {
      if ((error as { code?: unknown } | null)?.code === Status.UNIMPLEMENTED) {
        this.#batchSupported = false;
        await Promise.all(group.map((entry) => this.#deliverOne(entry)));
        return;
      }
      for (const entry of group) entry.reject(error);
      return;
    }
    const results = response.results;
    if (results.length !== group.length) {
      const error = new BatchResultCountMismatchError(group.length, results.length);
      for (const entry of group) entry.reject(error);
      return;
    }
    group.forEach((entry, index) => {
      const outcome = (results[index] as wire.AckResult).outcome;
      if (outcome?.$case === "success") entry.resolve();
      else if (outcome?.$case === "error")
        entry.reject(itemError(outcome.value.code, outcome.value.message, outcome.value.cancelled));
      else entry.reject(new MalformedResponseError("malformed response: an ack result with no outcome"));
    });
  }

  async #deliverOne(entry: Entry): Promise<void> {
    try {
      await this.#sendOne(entry.request);
    } catch (error) {
      entry.reject(error);
      return;
    }
    entry.resolve();
  }
}
