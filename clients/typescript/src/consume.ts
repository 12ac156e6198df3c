/**
 * One `Consume` stream (a server with the feature `"consume"`): the worker's credits, the jobs the
 * server pushes, and acks, nacks and extends sent as settles on the stream and answered on it.
 *
 * Writes are coalesced like acks (`acks.ts`): the first settle or credit of a turn of the event
 * loop schedules a flush with `setImmediate`, and every settle and credit made before it runs goes
 * out in one `ConsumeRequest` (at most `maxSettles` settles per message, the server's
 * `max_enqueue_batch`; more make more messages). So the credit a finished job gives back travels
 * with that job's ack. Credits outstanding (granted, not yet used by a pushed job) never exceed
 * `maxCredits`, the server's `max_consume_credits`: what is over waits until pushes use some.
 *
 * Each settle's result is what the unary call would have given: a success, or a `CallStatus`
 * turned into the status error that call would have failed with (`itemError`, with the trailer
 * `sepp-cancelled: true` for a cancelled job). When the stream ends, settles it never sent reject
 * with {@link NotSentError} (the caller sends them on their own call instead), and settles sent but
 * not answered reject with the stream's status error, as a unary call cut off would.
 */
import type * as grpc from "@grpc/grpc-js";
import { Metadata, status as Status } from "@grpc/grpc-js";
import { itemError } from "./acks.js";
import type { StatusLike } from "./errors.js";
import type * as wire from "./gen/sepp/v1/queue.js";

/** An ack, nack or extend as a settle carries it. */
export type SettleOp = NonNullable<wire.ConsumeSettle["op"]>;
/** A settle's successful outcome. */
export type SettleOutcome = Exclude<NonNullable<wire.ConsumeResult["outcome"]>, { $case: "error" }>;

/** Where a lease's settles go first: the stream its job came on. */
export interface SettleRoute {
  /** The outcome of `op` sent on the stream, or undefined when the stream takes no more settles. */
  settle(op: SettleOp): Promise<SettleOutcome> | undefined;
}

/** A settle the stream ended before sending: send it on a call of its own. */
export class NotSentError extends Error {
  override name = "NotSentError";
}

/** What the stream tells its owner. */
export interface ConsumeEvents {
  /** Jobs pushed, in order, each using one credit. */
  jobs(jobs: wire.Job[]): void;
  /** Ids of jobs leased on this stream that were cancelled. */
  cancelled(ids: string[]): void;
}

/** How a stream ended: its final status (OK after a half-close), and whether the server sent anything. */
export interface ConsumeEnd {
  status: StatusLike & { metadata: Metadata };
  received: boolean;
}

interface Pending {
  settle: wire.ConsumeSettle;
  resolve: (outcome: SettleOutcome) => void;
  reject: (error: unknown) => void;
}

/** One open Consume stream (see the module). */
export class ConsumeSession implements SettleRoute {
  readonly #call: grpc.ClientDuplexStream<wire.ConsumeRequest, wire.ConsumeResponse>;
  readonly #events: ConsumeEvents;
  readonly #maxCredits: number;
  readonly #maxSettles: number;
  /** False once half-closed or ended: settles then go on calls of their own. */
  #writable = true;
  #flushScheduled = false;
  /** Credits to grant with the next message. */
  #owed = 0;
  /** Credits granted and not yet used by a pushed job. */
  #outstanding = 0;
  #waiting: Pending[] = [];
  readonly #sent = new Map<bigint, Pending>();
  #nextId = 1n;
  #received = false;
  #status: (StatusLike & { metadata: Metadata }) | undefined;
  /** Resolves once the stream has ended, with how. */
  readonly ended: Promise<ConsumeEnd>;

  constructor(
    call: grpc.ClientDuplexStream<wire.ConsumeRequest, wire.ConsumeResponse>,
    open: Omit<wire.ConsumeOpen, "credits">,
    credits: number,
    limits: { maxCredits: number; maxSettles: number },
    events: ConsumeEvents,
  ) {
    this.#call = call;
    this.#events = events;
    this.#maxCredits = Math.max(1, limits.maxCredits);
    this.#maxSettles = Math.max(1, limits.maxSettles);
    const first = Math.min(credits, this.#maxCredits);
    this.#owed = credits - first;
    this.#outstanding = first;
    this.ended = new Promise((resolve) => {
      call.on("data", (response: wire.ConsumeResponse) => this.#receive(response));
      // The status comes with "error" too; "status" carries it in every case.
      call.on("error", () => {});
      call.on("status", (status: grpc.StatusObject) => {
        this.#status = { code: status.code, details: status.details, metadata: status.metadata };
        if (this.#writable) {
          this.#writable = false;
          call.end();
        }
      });
      call.on("close", () => resolve(this.#finish()));
    });
    call.write({ open: { ...open, credits: first }, credits: 0, settles: [] });
  }

  /** Gives the server `count` more credits (with the next message). */
  grant(count: number): void {
    if (!this.#writable || count <= 0) return;
    this.#owed += count;
    this.#scheduleFlush();
  }

  settle(op: SettleOp): Promise<SettleOutcome> | undefined {
    if (!this.#writable) return undefined;
    return new Promise((resolve, reject) => {
      const settle: wire.ConsumeSettle = { id: this.#nextId++, op };
      this.#waiting.push({ settle, resolve, reject });
      this.#scheduleFlush();
    });
  }

  /**
   * Sends what waits, then half-closes: the server answers the settles it has and ends the stream.
   * Settles from now on go on calls of their own.
   */
  halfClose(): void {
    if (!this.#writable) return;
    this.#owed = 0;
    this.#flush();
    this.#writable = false;
    this.#call.end();
  }

  /** Ends the stream at once (CANCELLED); settles not answered reject. */
  cancel(): void {
    this.#call.cancel();
  }

  #scheduleFlush(): void {
    if (this.#flushScheduled) return;
    this.#flushScheduled = true;
    setImmediate(() => {
      this.#flushScheduled = false;
      this.#flush();
    });
  }

  #flush(): void {
    if (!this.#writable) return;
    for (;;) {
      const credits = Math.max(0, Math.min(this.#owed, this.#maxCredits - this.#outstanding));
      if (credits <= 0 && this.#waiting.length === 0) return;
      const group = this.#waiting.splice(0, this.#maxSettles);
      for (const pending of group) this.#sent.set(pending.settle.id, pending);
      this.#owed -= credits;
      this.#outstanding += credits;
      this.#call.write({ credits, settles: group.map((pending) => pending.settle) });
    }
  }

  #receive(response: wire.ConsumeResponse): void {
    this.#received = true;
    if (response.jobs.length > 0) {
      this.#outstanding = Math.max(0, this.#outstanding - response.jobs.length);
      if (this.#owed > 0) this.#scheduleFlush();
      this.#events.jobs(response.jobs);
    }
    for (const result of response.results) {
      const pending = this.#sent.get(result.id);
      if (pending === undefined) continue;
      this.#sent.delete(result.id);
      const outcome = result.outcome;
      if (outcome === undefined) {
        pending.reject(itemError(Status.INTERNAL, "malformed response: a settle result with no outcome"));
      } else if (outcome.$case === "error") {
        pending.reject(itemError(outcome.value.code, outcome.value.message, outcome.value.cancelled));
      } else {
        pending.resolve(outcome);
      }
    }
    if (response.cancelled.length > 0) this.#events.cancelled(response.cancelled);
  }

  #finish(): ConsumeEnd {
    this.#writable = false;
    const status = this.#status ?? {
      code: Status.UNKNOWN,
      details: "the stream ended without a status",
      metadata: new Metadata(),
    };
    for (const pending of this.#waiting.splice(0)) pending.reject(new NotSentError("the stream has ended"));
    const cutOff =
      status.code === Status.OK
        ? { code: Status.UNKNOWN, details: "the stream ended without answering", metadata: new Metadata() }
        : status;
    for (const pending of this.#sent.values()) pending.reject(statusError(cutOff));
    this.#sent.clear();
    return { status, received: this.#received };
  }
}

/** A status as grpc-js raises it: an Error with `code`, `details` and `metadata`. */
function statusError(status: StatusLike & { metadata: Metadata }): Error & StatusLike {
  const label = Status[status.code] ?? String(status.code);
  return Object.assign(new Error(`${status.code} ${label}: ${status.details}`), {
    code: status.code,
    details: status.details,
    metadata: status.metadata,
  });
}
