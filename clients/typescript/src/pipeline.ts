/**
 * Enqueue coalescing: concurrent `enqueue` and `enqueueBatch` calls share `EnqueueBatch` calls.
 *
 * A best-effort batch answers every job on its own, so the jobs of several callers can travel in
 * one `EnqueueBatch` call and each caller still gets exactly its own results. The pipeline does
 * that without a timer:
 *
 * - the first caller of a turn of the event loop schedules a flush for the end of that turn
 *   (`setImmediate`, which runs once the turn's microtasks have drained); every caller of the same
 *   turn joins it, so a lone caller waits for nothing but the end of its own turn;
 * - at the flush, the waiting jobs go out in one call if fewer than `maxCalls` calls of their lane
 *   are in flight; otherwise they wait, and the moment a call finishes every waiting caller's jobs
 *   go out together (at most {@link MAX_JOBS_PER_CALL} jobs and about {@link MAX_BYTES_PER_CALL}
 *   bytes per call; one caller's batch is never split, so a batch larger than that goes alone);
 * - jobs that all carry an idempotency key and jobs that do not wait in separate lanes, because
 *   their calls are retried under different rules.
 *
 * Each caller's batch is encoded once; a shared call sends the encoded batches joined, which
 * protobuf reads as one batch holding all their jobs, in order.
 *
 * A shared call that the server refuses as a whole with INVALID_ARGUMENT (its batch limit may be
 * lower than ours) is resent as one call per caller, so every caller sees what it would have seen
 * alone. Any other failure of a shared call is every sharer's failure, as it would have been had
 * each sent its own call at that moment.
 */
import { status as Status } from "@grpc/grpc-js";
import { BatchResultCountMismatchError } from "./errors.js";
import type * as wire from "./gen/sepp/v1/queue.js";

/** The server's default batch limit (`limits.max_enqueue_batch`) is 256 jobs per call. */
export const MAX_JOBS_PER_CALL = 256;
/** Far under the server's 16 MiB message limit. */
export const MAX_BYTES_PER_CALL = 4 * 1024 * 1024;
/** Calls of one lane in flight at once; more callers wait, and join the next call. */
export const MAX_CALLS_IN_FLIGHT = 4;

/** Sends one encoded `EnqueueBatchRequest` (retried as its lane says); rejects with the status error. */
export type SendEncoded = (request: Buffer, keyed: boolean) => Promise<wire.EnqueueBatchResponse>;
/** Runs `flush` at the end of the current turn of the event loop. */
export type Schedule = (flush: () => void) => void;

interface Waiting {
  encoded: Buffer;
  count: number;
  resolve: (results: wire.JobResult[]) => void;
  reject: (error: unknown) => void;
}

interface Lane {
  keyed: boolean;
  inFlight: number;
  flushScheduled: boolean;
  waiting: Waiting[];
}

/** Sends enqueue jobs through at most `maxCalls` calls in flight per lane (see the module). */
export class EnqueuePipeline {
  readonly #send: SendEncoded;
  readonly #maxCalls: number;
  readonly #schedule: Schedule;
  readonly #lanes: { keyed: Lane; keyless: Lane } = {
    keyed: { keyed: true, inFlight: 0, flushScheduled: false, waiting: [] },
    keyless: { keyed: false, inFlight: 0, flushScheduled: false, waiting: [] },
  };

  constructor(
    send: SendEncoded,
    maxCalls = MAX_CALLS_IN_FLIGHT,
    schedule: Schedule = (flush) => setImmediate(flush),
  ) {
    if (!Number.isInteger(maxCalls) || maxCalls < 1) throw new RangeError("maxCalls must be at least 1");
    this.#send = send;
    this.#maxCalls = maxCalls;
    this.#schedule = schedule;
  }

  /**
   * The results of `count` jobs encoded as one `EnqueueBatchRequest`, in order. Rejects with what
   * the call carrying them rejected with.
   */
  submit(encoded: Buffer, count: number, keyed: boolean): Promise<wire.JobResult[]> {
    const lane = keyed ? this.#lanes.keyed : this.#lanes.keyless;
    return new Promise((resolve, reject) => {
      lane.waiting.push({ encoded, count, resolve, reject });
      if (!lane.flushScheduled) {
        // The callers of this turn go together, into a free call or the next one that ends.
        lane.flushScheduled = true;
        this.#schedule(() => {
          lane.flushScheduled = false;
          this.#flush(lane);
        });
      }
    });
  }

  #flush(lane: Lane): void {
    while (lane.waiting.length > 0 && lane.inFlight < this.#maxCalls) {
      const group = takeGroup(lane.waiting);
      lane.inFlight++;
      void this.#deliver(lane.keyed, group).finally(() => {
        lane.inFlight--;
        this.#flush(lane);
      });
    }
  }

  async #deliver(keyed: boolean, group: Waiting[]): Promise<void> {
    const total = group.reduce((sum, waiting) => sum + waiting.count, 0);
    const request =
      group.length === 1 ? (group[0] as Waiting).encoded : Buffer.concat(group.map((w) => w.encoded));
    let response: wire.EnqueueBatchResponse;
    try {
      response = await this.#send(request, keyed);
    } catch (error) {
      if (group.length > 1 && (error as { code?: unknown } | null)?.code === Status.INVALID_ARGUMENT) {
        // Refused as a whole: perhaps too many jobs for this server. Each caller alone, as without us.
        await Promise.all(group.map((waiting) => this.#deliver(keyed, [waiting])));
        return;
      }
      for (const waiting of group) waiting.reject(error);
      return;
    }
    const results = response.results;
    if (results.length !== total) {
      const error = new BatchResultCountMismatchError(total, results.length);
      for (const waiting of group) waiting.reject(error);
      return;
    }
    let start = 0;
    for (const waiting of group) {
      waiting.resolve(results.slice(start, start + waiting.count));
      start += waiting.count;
    }
  }
}

/** The longest prefix of the waiting callers that fits one call (always at least one), taken off the list. */
function takeGroup(waiting: Waiting[]): Waiting[] {
  const first = waiting[0] as Waiting;
  let jobs = first.count;
  let bytes = first.encoded.length;
  let taken = 1;
  for (const candidate of waiting.slice(1)) {
    jobs += candidate.count;
    bytes += candidate.encoded.length;
    if (jobs > MAX_JOBS_PER_CALL || bytes > MAX_BYTES_PER_CALL) break;
    taken++;
  }
  return waiting.splice(0, taken);
}
