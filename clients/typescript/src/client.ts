/**
 * {@link SeppClient}: one connection to a sepp server and its fifteen calls — the producer half
 * (`enqueue`, `enqueueBatch`, `enqueueAtomic`, `cancel`, and the recurring schedules'
 * `upsertSchedule`, `deleteSchedule`, `listSchedules`), the consumer half (`reserve`, `ack`, `nack`,
 * `extend`), `getServerInfo`, `drainDeadLetters`, and pausing queues (`pauseQueue`, `resumeQueue`,
 * `listPauses`).
 *
 * Every call has a deadline (`rpcTimeout`, or for reserve its wait plus 10 s), sends the API key and
 * the active trace context as metadata, and runs in an OpenTelemetry client span `sepp.<call>` when
 * the API is installed. Enqueue, cancel, the schedule and pause calls, ack, nack, extend and
 * getServerInfo follow the retry policy; reserve and drainDeadLetters are never retried. Every call
 * follows a cluster follower's redirect to the leader (see `cluster.ts`), which is no retry.
 *
 * Concurrent enqueues share `EnqueueBatch` calls (`pipeline.ts`) and the acks of one turn share an
 * `AckBatch` (`acks.ts`), unless turned off. The ack, nack and extend of a job that came on a
 * Worker's `Consume` stream go on that stream first (`consume.ts`, opened by `openConsume`).
 */
import * as grpc from "@grpc/grpc-js";
import { AckPipeline } from "./acks.js";
import { type Connection, Connections, isLeaderless, leaderFrom, MAX_REDIRECTS } from "./cluster.js";
import {
  authorizationHeader,
  type ConnectOptions,
  channelOptions,
  connectChannel,
  credentials,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_RPC_TIMEOUT_MS,
  parseAddress,
} from "./connect.js";
import {
  type ConsumeEnd,
  ConsumeSession,
  NotSentError,
  type SettleOp,
  type SettleOutcome,
  type SettleRoute,
} from "./consume.js";
import {
  checkCount,
  checkMs,
  checkPauseQueue,
  checkScheduleId,
  DecodeError,
  dateFromTimestamp,
  deadLetterFromWire,
  durationFromMs,
  enqueueRequestToWire,
  hasIdempotencyKey,
  pauseFromWire,
  pauseRequestToWire,
  rejectionFromWire,
  reservedJobFromWire,
  scheduleInfoFromWire,
  scheduleToWire,
  serverInfoFromWire,
} from "./convert.js";
import {
  BatchResultCountMismatchError,
  BatchValidationError,
  type ClientError,
  ConnectError,
  cancelErrorFromStatus,
  EmptyBatchError,
  errorFromStatus,
  JobNotFoundError,
  JobRejectedError,
  type LeaseError,
  leaseErrorFromStatus,
  MalformedResponseError,
  reserveErrorFromStatus,
  type StatusLike,
  scheduleErrorFromStatus,
  ValidationError,
} from "./errors.js";
import * as wire from "./gen/sepp/v1/queue.js";
import { type Job, JobCtx, type Lease, leaseOf } from "./job.js";
import { type Logger, silentLogger } from "./logger.js";
import { activeTraceContext, inClientSpan, injectTraceMetadata } from "./otel.js";
import { EnqueuePipeline } from "./pipeline.js";
import type { JobRejection } from "./rejection.js";
import { RetryDirective, RetryPolicy, type RetryScope, withRetries } from "./retry.js";
import type {
  CancelOptions,
  CancelResult,
  DeadLetterRecord,
  DrainDeadLettersOptions,
  EnqueueAck,
  EnqueueRequest,
  NackOptions,
  PauseOptions,
  QueuePause,
  ReserveOptions,
  Schedule,
  ScheduleInfo,
  ServerInfo,
} from "./types.js";

export type { ConnectOptions } from "./connect.js";

/** Added to a reserve's wait for its deadline, so the server answers an idle poll first. */
const RESERVE_DEADLINE_SLACK_MS = 10_000;
/** A reserve's wait when none is given. */
const DEFAULT_WAIT_TIMEOUT_MS = 30_000;

/** One generated method: its path and (de)serializers. */
interface Method<Req, Resp> {
  path: string;
  requestSerialize(value: Req): Buffer;
  responseDeserialize(value: Buffer): Resp;
}

const Q = wire.QueueServiceService;

/** `EnqueueBatch` with a request that is encoded already (the enqueue pipeline joins encoded batches). */
const ENCODED_ENQUEUE_BATCH: Method<Buffer, wire.EnqueueBatchResponse> = {
  path: Q.enqueueBatch.path,
  requestSerialize: (value) => value,
  responseDeserialize: Q.enqueueBatch.responseDeserialize,
};

/** A connection to a sepp server. Every method returns a Promise; `close()` ends the connection. */
export class SeppClient {
  /** The retry policy of enqueue, cancel, the schedule and pause calls, ack, nack, extend and getServerInfo. */
  readonly retryPolicy: RetryPolicy;
  /** The deadline of every call except reserve, in ms. */
  readonly rpcTimeout: number;
  /** Where the client's diagnostics go (the Worker's too, unless it is given its own). */
  readonly logger: Logger;
  /** The connection calls go to: the configured address, or the cluster leader it redirected to. */
  readonly #connections: Connections;
  readonly #authorization: string | undefined;
  /** Whether calls carry `sepp-follow-leader` (the `followLeader` option). */
  readonly #followLeader: boolean;
  /** The ack coalescing pipeline, unless `coalesceAcks` is false. */
  readonly #acks: AckPipeline | undefined;
  /** The enqueue coalescing pipeline, unless `coalesceEnqueues` is false. */
  readonly #enqueues: EnqueuePipeline | undefined;

  /** The metadata every call carries: the API key, and `sepp-follow-leader` unless turned off. */
  #metadata(): grpc.Metadata {
    const metadata = new grpc.Metadata();
    if (this.#authorization !== undefined) metadata.set("authorization", this.#authorization);
    if (this.#followLeader) metadata.set("sepp-follow-leader", "1");
    return metadata;
  }

  private constructor(
    connections: Connections,
    options: ConnectOptions,
    authorization: string | undefined,
    rpcTimeout: number,
  ) {
    this.#connections = connections;
    this.#authorization = authorization;
    this.#followLeader = options.followLeader !== false;
    this.retryPolicy = options.retryPolicy ?? new RetryPolicy();
    this.rpcTimeout = rpcTimeout;
    this.logger = options.logger ?? silentLogger;
    this.#acks =
      options.coalesceAcks === false
        ? undefined
        : new AckPipeline(
            (request) => this.#call(Q.ack, request, this.rpcTimeout, undefined),
            (request) => this.#call(Q.ackBatch, request, this.rpcTimeout, undefined),
          );
    this.#enqueues =
      options.coalesceEnqueues === false
        ? undefined
        : new EnqueuePipeline(async (encoded, keyed) => {
            const outcome = await this.#withRetries("enqueue", keyed ? "transient" : "keylessEnqueue", () =>
              this.#call(ENCODED_ENQUEUE_BATCH, encoded, this.rpcTimeout, undefined),
            );
            if (outcome.ok) return outcome.value;
            throw outcome.error;
          });
  }

  /**
   * Connects to `addr` (`host:port`, `http://host:port` or `https://host:port`) and resolves once the
   * connection is up; rejects with a `ConnectError` (or `InvalidApiKeyError`, `ValidationError`).
   */
  static async connect(addr: string, options: ConnectOptions = {}): Promise<SeppClient> {
    const tlsRequested =
      options.tls === true || options.tlsCaCert !== undefined || options.tlsDomain !== undefined;
    const { target, tls } = parseAddress(addr, tlsRequested);
    const authorization = options.apiKey === undefined ? undefined : authorizationHeader(options.apiKey);
    const logger = options.logger ?? silentLogger;
    const timeout = checkMs("connectTimeout", options.connectTimeout ?? DEFAULT_CONNECT_TIMEOUT_MS, 1);
    const rpcTimeout = checkMs("rpcTimeout", options.rpcTimeout ?? DEFAULT_RPC_TIMEOUT_MS, 1);
    if (options.retryPolicy !== undefined && !(options.retryPolicy instanceof RetryPolicy)) {
      throw new ValidationError("retryPolicy must be a RetryPolicy");
    }
    if (options.coalesceAcks !== undefined && typeof options.coalesceAcks !== "boolean") {
      throw new ValidationError("coalesceAcks must be a boolean");
    }
    if (options.coalesceEnqueues !== undefined && typeof options.coalesceEnqueues !== "boolean") {
      throw new ValidationError("coalesceEnqueues must be a boolean");
    }
    if (options.followLeader !== undefined && typeof options.followLeader !== "boolean") {
      throw new ValidationError("followLeader must be a boolean");
    }
    const settings = channelOptions(options);
    let channelCredentials: grpc.ChannelCredentials;
    try {
      channelCredentials = credentials(tls, options);
    } catch (error) {
      throw new ConnectError(addr, `unusable TLS settings: ${(error as Error).message}`);
    }
    if (authorization !== undefined && !tls) {
      logger.warn("API key configured without TLS; it will be sent to the server in plaintext", { addr });
    }
    // A cluster leader a follower redirects to is dialed just like the configured address.
    const dial = (to: string) => new grpc.Client(to, channelCredentials, settings);
    const channel = dial(target);
    const connections = new Connections(target, channel, dial, logger);
    const client = new SeppClient(connections, options, authorization, rpcTimeout);
    try {
      await connectChannel(channel, addr, timeout);
    } catch (error) {
      channel.close();
      logger.error("could not connect to the sepp server", { addr, error: String(error) });
      throw error;
    }
    logger.info?.("connected to the sepp server", { addr, tls, auth: authorization !== undefined });
    return client;
  }

  /** Closes the connection (every one, after redirects); calls in flight fail with a `TransportError`. */
  close(): void {
    this.#connections.close();
  }

  // ---- producer ----

  /** Enqueues one job; a rejection throws `JobRejectedError`. */
  async enqueue(job: EnqueueRequest): Promise<EnqueueAck> {
    const [result] = await this.#enqueueBatch([job], "enqueue");
    if (result === undefined) throw new BatchResultCountMismatchError(1, 0);
    if ("kind" in result) throw new JobRejectedError(result);
    return result;
  }

  /**
   * Enqueues jobs, each accepted or rejected on its own: one result per job, in order, where a
   * rejection is a value (narrow with `isJobRejection`). An empty batch throws `EmptyBatchError`.
   */
  enqueueBatch(jobs: readonly EnqueueRequest[]): Promise<(EnqueueAck | JobRejection)[]> {
    return this.#enqueueBatch(jobs, undefined);
  }

  async #enqueueBatch(jobs: readonly EnqueueRequest[], single: string | undefined) {
    const { request, scope } = batchRequest(jobs, single);
    return inClientSpan("sepp.enqueue", { "sepp.jobs": jobs.length }, async () => {
      const results = await this.#enqueueResults(request, scope, jobs.length);
      return results.map((result): EnqueueAck | JobRejection => {
        const outcome = result.outcome;
        if (outcome === undefined)
          throw new MalformedResponseError("malformed response: missing outcome in job result");
        if (outcome.$case === "success") return ackFromWire(outcome.value);
        return rejectionFromWire(outcome.value);
      });
    });
  }

  /**
   * The results of an enqueue batch, one per job. Unless `coalesceEnqueues` is false, the batch
   * shares an `EnqueueBatch` call with the other enqueues waiting at the end of this turn of the
   * event loop (see `pipeline.ts`); a traced enqueue (one whose span context would be propagated)
   * keeps its own call, so the server's span is its child.
   */
  async #enqueueResults(
    request: () => wire.EnqueueBatchRequest,
    scope: RetryScope,
    count: number,
  ): Promise<wire.JobResult[]> {
    const pipeline = this.#enqueues;
    let results: wire.JobResult[];
    if (pipeline === undefined || activeTraceContext() !== undefined) {
      results = (await this.#unary("enqueue", Q.enqueueBatch, request(), scope, this.rpcTimeout)).results;
    } else {
      const encoded = Buffer.from(wire.EnqueueBatchRequest.encode(request()).finish());
      try {
        results = await pipeline.submit(encoded, count, scope === "transient");
      } catch (error) {
        throw mapped(error, errorFromStatus);
      }
    }
    if (results.length !== count) throw new BatchResultCountMismatchError(count, results.length);
    return results;
  }

  /**
   * Enqueues jobs all or nothing: either every job is written (their acks come back in order) or
   * none is, and `BatchValidationError` lists every refused job.
   */
  async enqueueAtomic(jobs: readonly EnqueueRequest[]): Promise<EnqueueAck[]> {
    const { request, scope } = batchRequest(jobs, undefined);
    return inClientSpan("sepp.enqueue_atomic", { "sepp.jobs": jobs.length }, async () => {
      const response = await this.#unary(
        "enqueue_atomic",
        Q.enqueueAtomic,
        request(),
        scope,
        this.rpcTimeout,
      );
      const outcome = response.outcome;
      if (outcome === undefined) {
        throw new MalformedResponseError("malformed response: missing outcome in atomic enqueue response");
      }
      if (outcome.$case === "rejection") {
        throw new BatchValidationError(
          outcome.value.errors.map((error) => ({
            index: error.index,
            rejection: rejectionFromWire(error.rejection),
          })),
        );
      }
      if (outcome.value.responses.length !== jobs.length) {
        throw new BatchResultCountMismatchError(jobs.length, outcome.value.responses.length);
      }
      return outcome.value.responses.map(ackFromWire);
    });
  }

  /**
   * Cancels a job by id (a server with the feature `"cancel"`). A ready or scheduled job is
   * dead-lettered at once (cause `cancelled`, with `reason` as its `lastReason`; kept only when the
   * server retains dead letters) and `wasLeased` is false. A leased job is marked (`wasLeased` true,
   * also when cancelled again): its worker's next extend, ack or nack throws `JobCancelledError` and
   * dead-letters it, or its lease runs out. Either way it is never delivered again. Throws
   * `JobNotFoundError` for an unknown or finished job, `JobDeadLetteredError` for a dead letter and
   * `InvalidRequestError` for a malformed id or a reason over 1024 bytes.
   */
  async cancel(jobId: string, options: CancelOptions = {}): Promise<CancelResult> {
    if (typeof jobId !== "string") throw new ValidationError("cancel: jobId must be a string");
    const reason = options.reason;
    if (reason !== undefined && typeof reason !== "string")
      throw new ValidationError("cancel: reason must be a string");
    const request: wire.CancelJobRequest = { jobId, reason };
    return inClientSpan("sepp.cancel", { "sepp.job_id": jobId }, async () => {
      const response = await this.#unary(
        "cancel",
        Q.cancelJob,
        request,
        "transient",
        this.rpcTimeout,
        cancelErrorFromStatus,
      );
      return { jobId: response.jobId || jobId, wasLeased: response.wasLeased };
    });
  }

  // ---- recurring schedules ----

  /**
   * Creates a schedule, or replaces the one with the same id, and returns it as stored (a server
   * with the feature `"schedules"`). From then on the server enqueues `schedule.job` once per slot.
   * Replacing keeps the `fired` count and the last job, and restarts an interval's slots from now.
   * Throws `ValidationError` before any call for what the client can check (the id, one cadence, an
   * interval of at least 1000 ms, a template without idempotencyKey, scheduledAt or traceContext),
   * `InvalidRequestError` for a definition the server refuses (a bad cron expression or time zone, a
   * template the queue's rules refuse) and `ScheduleLimitError` when the server keeps 100,000
   * schedules already.
   */
  async upsertSchedule(schedule: Schedule): Promise<ScheduleInfo> {
    const definition = scheduleToWire(schedule, "upsertSchedule");
    return inClientSpan("sepp.upsert_schedule", { "sepp.schedule.id": definition.id }, async () => {
      const response = await this.#unary(
        "upsert_schedule",
        Q.upsertSchedule,
        { schedule: definition },
        "transient",
        this.rpcTimeout,
        scheduleErrorFromStatus,
      );
      try {
        return scheduleInfoFromWire(response);
      } catch (error) {
        if (!(error instanceof DecodeError)) throw error;
        throw new MalformedResponseError(`malformed schedule: ${error.message}`);
      }
    });
  }

  /**
   * Deletes a schedule by id; resolves to false if there was no such schedule. The jobs it fired
   * stay. A retry whose first attempt reached the server resolves to false.
   */
  async deleteSchedule(id: string): Promise<boolean> {
    checkScheduleId("deleteSchedule", id);
    return inClientSpan("sepp.delete_schedule", { "sepp.schedule.id": id }, async () => {
      const response = await this.#unary(
        "delete_schedule",
        Q.deleteSchedule,
        { id },
        "transient",
        this.rpcTimeout,
        scheduleErrorFromStatus,
      );
      return response.deleted;
    });
  }

  /**
   * Every schedule the server keeps, sorted by id. One this client cannot read (say, with a cadence
   * of a newer server) is skipped with a warning, as drainDeadLetters does with a malformed record.
   */
  async listSchedules(): Promise<ScheduleInfo[]> {
    return inClientSpan("sepp.list_schedules", {}, async () => {
      const response = await this.#unary(
        "list_schedules",
        Q.listSchedules,
        {},
        "transient",
        this.rpcTimeout,
        scheduleErrorFromStatus,
      );
      const schedules: ScheduleInfo[] = [];
      for (const info of response.schedules) {
        try {
          schedules.push(scheduleInfoFromWire(info));
        } catch (error) {
          if (!(error instanceof DecodeError)) throw error;
          this.logger.warn("skipping a schedule this client cannot read", {
            scheduleId: info.definition?.id,
            error: error.message,
          });
        }
      }
      return schedules;
    });
  }

  // ---- pausing queues ----

  /**
   * Pauses a queue until `options.until` (a Date in the future), or until resumed when it is unset,
   * and returns the pause as stored (a server with the feature `"pause"`). Reserves skip a paused
   * queue (one naming only paused queues waits, or resolves empty); enqueues are still accepted and
   * leases already held go on. `ALL_QUEUES` (`""`) pauses every queue, also queues that do not
   * exist yet. Pausing a paused queue replaces the end of its pause. `reason` (at most 1024 bytes)
   * goes to the server's audit log. Throws `ValidationError` before any call for a queue that is not a
   * string or an `until` that is not a valid Date after the epoch, and `InvalidRequestError` for a
   * malformed queue name, an `until` not in the future or a too-long reason.
   */
  async pauseQueue(queue: string, options: PauseOptions = {}): Promise<QueuePause> {
    const request = pauseRequestToWire(queue, options, "pauseQueue");
    return inClientSpan("sepp.pause_queue", { "sepp.queue": queue }, async () => {
      const response = await this.#unary(
        "pause_queue",
        Q.pauseQueue,
        request,
        "transient",
        this.rpcTimeout,
        errorFromStatus,
      );
      if (response.pause === undefined)
        throw new MalformedResponseError("malformed pause: missing field pause");
      try {
        return pauseFromWire(response.pause);
      } catch (error) {
        if (!(error instanceof DecodeError)) throw error;
        throw new MalformedResponseError(`malformed pause: ${error.message}`);
      }
    });
  }

  /**
   * Lifts the pause of a queue; resolves to false if it was not paused. A reserve waiting on the
   * queue is served at once. `ALL_QUEUES` lifts the pause of every queue only: queues paused by
   * name stay paused. A retry whose first attempt reached the server resolves to false.
   */
  async resumeQueue(queue: string): Promise<boolean> {
    checkPauseQueue("resumeQueue", queue);
    return inClientSpan("sepp.resume_queue", { "sepp.queue": queue }, async () => {
      const response = await this.#unary(
        "resume_queue",
        Q.resumeQueue,
        { queue },
        "transient",
        this.rpcTimeout,
        errorFromStatus,
      );
      return response.resumed;
    });
  }

  /**
   * Every pause the server keeps: the pause of every queue first, then by queue name. The server lifts
   * a pause by itself once its `until` has passed; it is listed no more. One this client cannot read
   * is skipped with a warning, as listSchedules does.
   */
  async listPauses(): Promise<QueuePause[]> {
    return inClientSpan("sepp.list_pauses", {}, async () => {
      const response = await this.#unary(
        "list_pauses",
        Q.listPauses,
        {},
        "transient",
        this.rpcTimeout,
        errorFromStatus,
      );
      const pauses: QueuePause[] = [];
      for (const pause of response.pauses) {
        try {
          pauses.push(pauseFromWire(pause));
        } catch (error) {
          if (!(error instanceof DecodeError)) throw error;
          this.logger.warn("skipping a pause this client cannot read", {
            queue: pause.queue,
            error: error.message,
          });
        }
      }
      return pauses;
    });
  }

  // ---- consumer ----

  /**
   * Reserves up to `maxJobs` ready jobs from the first listed queue that has any, waiting up to
   * `waitTimeout`; resolves with `null` when nothing became ready. Not retried under the retry policy
   * (call it again), but on UNAVAILABLE while a cluster fails over, within its failover window.
   * Malformed jobs in the answer are skipped with a warning. Strict-mode servers reject undeclared
   * queues with `UnknownQueuesError`.
   */
  async reserve(options: ReserveOptions): Promise<Job[] | null> {
    const request = reserveRequest(options);
    const wait = options.waitTimeout ?? DEFAULT_WAIT_TIMEOUT_MS;
    const attributes = { "sepp.queues": options.queues.join(","), "sepp.worker_id": options.workerId };
    return inClientSpan("sepp.reserve", attributes, async (span) => {
      // Not retried under the policy (a long poll), but through a cluster's failover on UNAVAILABLE.
      const outcome = await this.#withRetries("reserve", "reserve", () =>
        this.#call(Q.reserve, request, wait + RESERVE_DEADLINE_SLACK_MS, options.signal),
      );
      if (!outcome.ok) throw mapped(outcome.error, reserveErrorFromStatus);
      const jobs = this.#jobsFromWire(outcome.value.jobs, options.workerId, undefined, "reserve response");
      span.setAttribute("sepp.jobs", jobs.length);
      return jobs.length > 0 ? jobs : null;
    });
  }

  /** Leased jobs as the application sees them; malformed ones are skipped with a warning. */
  #jobsFromWire(
    wireJobs: wire.Job[],
    workerId: string | undefined,
    route: SettleRoute | undefined,
    where: string,
  ): Job[] {
    const jobs: Job[] = [];
    for (const job of wireJobs) {
      try {
        const { fields, payload, leaseExpiresAt } = reservedJobFromWire(job);
        const lease: Lease = {
          expiresAt: leaseExpiresAt,
          workerId,
          controller: new AbortController(),
          extend: (ctx, extension) => this.extend(ctx, extension),
          route,
        };
        jobs.push({ payload, ctx: new JobCtx(fields, lease) });
      } catch (error) {
        if (!(error instanceof DecodeError)) throw error;
        this.logger.warn(`skipping malformed job in ${where}`, { jobId: job.id, error: error.message });
      }
    }
    return jobs;
  }

  /**
   * @internal Opens a `Consume` stream on the current connection (the Worker's streaming mode; see
   * `consume.ts`). `ended` resolves with how the stream ended, and whether the client switched to
   * the leader a follower named (then reopening at once reaches it). An UNAVAILABLE naming no
   * leader sends the next call or stream to another node, as for unary calls.
   */
  openConsume(
    options: {
      queues: string[];
      leaseDuration: number;
      workerId: string;
      credits: number;
      maxCredits: number;
      maxSettles: number;
    },
    events: { jobs(jobs: Job[]): void; cancelled(ids: string[]): void },
  ): { session: ConsumeSession; ended: Promise<ConsumeEnd & { redirected: boolean }> } {
    const connection = this.#connections.current;
    const metadata = this.#metadata();
    connection.begin();
    let call: grpc.ClientDuplexStream<wire.ConsumeRequest, wire.ConsumeResponse>;
    try {
      call = connection.grpc.makeBidiStreamRequest(
        Q.consume.path,
        Q.consume.requestSerialize,
        Q.consume.responseDeserialize,
        metadata,
        {},
      );
    } catch (error) {
      connection.end();
      throw error;
    }
    let session: ConsumeSession | undefined;
    session = new ConsumeSession(
      call,
      {
        queues: [...options.queues],
        leaseDuration: durationFromMs(options.leaseDuration),
        workerId: options.workerId,
      },
      options.credits,
      { maxCredits: options.maxCredits, maxSettles: options.maxSettles },
      {
        jobs: (pushed) => {
          const jobs = this.#jobsFromWire(pushed, options.workerId, session, "Consume stream");
          // A job skipped as malformed gives its credit back at once.
          session?.grant(pushed.length - jobs.length);
          events.jobs(jobs);
        },
        cancelled: (ids) => events.cancelled(ids),
      },
    );
    const ended = session.ended.then((end) => {
      connection.end();
      let redirected = false;
      const leader = leaderFrom(end.status);
      if (leader !== undefined) {
        this.#connections.learnedCluster([]);
        redirected = this.#connections.follow(connection, leader, "Consume");
      } else if (isLeaderless(end.status)) {
        this.#connections.lost(connection, "Consume");
      }
      return { ...end, redirected };
    });
    return { session, ended };
  }

  /**
   * Completes a job: the server deletes it. Throws `JobNotFoundError` or `AttemptMismatchError` when
   * the lease is gone, `JobCancelledError` when the job was cancelled. Unless `coalesceAcks` is
   * false, the acks made in one turn of the event loop share one `AckBatch` call (see `acks.ts`); a
   * traced ack (one whose span context would be propagated) keeps its own call, so the server's
   * span is its child.
   */
  async ack(ctx: JobCtx): Promise<void> {
    const request: wire.AckRequest = { jobId: ctx.id, attempt: ctx.attempt, workerId: ctx.workerId };
    await inClientSpan("sepp.ack", leaseAttributes(ctx), () => {
      const route = leaseOf(ctx).route;
      if (route !== undefined)
        return this.#leaseAttempts(
          "ack",
          viaStream(route, { $case: "ack", value: request }, () =>
            this.#call(Q.ack, request, this.rpcTimeout, undefined),
          ),
        );
      const acks = this.#acks;
      if (acks === undefined || activeTraceContext() !== undefined)
        return this.#leaseCall("ack", Q.ack, request);
      // The first attempt shares the turn's call; the retry policy goes on with plain Acks.
      let first = true;
      return this.#leaseAttempts("ack", (): Promise<unknown> => {
        if (!first) return this.#call(Q.ack, request, this.rpcTimeout, undefined);
        first = false;
        return acks.submit(request);
      });
    });
  }

  /**
   * Fails a job: it is retried as `retry` says (default: the queue's policy), or dead-lettered after
   * its last attempt, with `reason` recorded. Resolves with whether the job was dead-lettered.
   */
  async nack(ctx: JobCtx, options: NackOptions = {}): Promise<boolean> {
    const retry = options.retry ?? RetryDirective.default();
    if (!(retry instanceof RetryDirective)) throw new ValidationError("nack: retry must be a RetryDirective");
    const reason = options.reason;
    if (reason !== undefined && typeof reason !== "string")
      throw new ValidationError("nack: reason must be a string");
    const request: wire.NackRequest = {
      jobId: ctx.id,
      attempt: ctx.attempt,
      reason: reason ? reason : undefined,
      retry: { strategy: nackStrategy(retry) },
      workerId: ctx.workerId,
    };
    const attributes = { ...leaseAttributes(ctx), "sepp.retry": retry.toString() };
    const route = leaseOf(ctx).route;
    const response = await inClientSpan("sepp.nack", attributes, () =>
      route === undefined
        ? this.#leaseCall("nack", Q.nack, request)
        : this.#leaseAttempts(
            "nack",
            viaStream(route, { $case: "nack", value: request }, () =>
              this.#call(Q.nack, request, this.rpcTimeout, undefined),
            ),
          ),
    );
    return response.deadLettered;
  }

  /**
   * Moves the job's lease deadline to now + `extensionMs` (the server may clamp it) and resolves with
   * the new deadline, which `ctx.leaseExpiresAt` reflects from then on.
   */
  async extend(ctx: JobCtx, extensionMs: number): Promise<Date> {
    checkMs("extend: extensionMs", extensionMs, 1);
    const request: wire.ExtendRequest = {
      jobId: ctx.id,
      attempt: ctx.attempt,
      leaseDuration: durationFromMs(extensionMs),
      workerId: ctx.workerId,
    };
    return inClientSpan("sepp.extend", leaseAttributes(ctx), async () => {
      const route = leaseOf(ctx).route;
      const response =
        route === undefined
          ? await this.#leaseCall("extend", Q.extend, request)
          : await this.#leaseAttempts(
              "extend",
              viaStream(route, { $case: "extend", value: request }, () =>
                this.#call(Q.extend, request, this.rpcTimeout, undefined),
              ),
            );
      const expiry = dateFromTimestamp(response.leaseExpiresAt);
      if (expiry === undefined)
        throw new MalformedResponseError("malformed response: extend returned an invalid lease_expires_at");
      leaseOf(ctx).expiresAt = expiry;
      return expiry;
    });
  }

  // ---- server info and dead letters ----

  /**
   * The server's version, clock, limits and, on a cluster's node, its view of the cluster. An answer
   * with a cluster tells the client that it talks to a cluster: its calls ride a failover from then on
   * (`RetryPolicy.failoverWindow`), and may ask any member who leads.
   */
  async getServerInfo(): Promise<ServerInfo> {
    return inClientSpan("sepp.get_server_info", {}, async () => {
      const response = await this.#unary(
        "get_server_info",
        Q.getServerInfo,
        {},
        "transient",
        this.rpcTimeout,
      );
      let info: ServerInfo;
      try {
        info = serverInfoFromWire(response);
      } catch (error) {
        throw new MalformedResponseError(`malformed server info: ${(error as Error).message}`);
      }
      // From now on calls ride a failover, and may ask any member who leads.
      if (info.cluster !== undefined)
        this.#connections.learnedCluster(info.cluster.members.map((m) => m.addr));
      return info;
    });
  }

  /**
   * Removes and returns up to `max` (default 1) of the oldest dead-letter records, of one queue or
   * all. Destructive, so never retried. `max: 0` returns `[]` without a call; an empty answer can
   * also mean the server keeps no dead letters (`ServerInfo.deadLetterRetentionEnabled`). Malformed
   * records are skipped with a warning.
   */
  async drainDeadLetters(options: DrainDeadLettersOptions = {}): Promise<DeadLetterRecord[]> {
    const max = checkCount("drainDeadLetters: max", options.max ?? 1, 0);
    const queue = options.queue;
    if (queue !== undefined && typeof queue !== "string")
      throw new ValidationError("drainDeadLetters: queue must be a string");
    if (max === 0) return [];
    return inClientSpan("sepp.drain_dead_letters", { "sepp.queue": queue, "sepp.max": max }, async (span) => {
      let response: wire.DrainDeadLettersResponse;
      try {
        response = await this.#call(Q.drainDeadLetters, { queue, max }, this.rpcTimeout, undefined);
      } catch (error) {
        throw mapped(error, errorFromStatus);
      }
      const records: DeadLetterRecord[] = [];
      for (const record of response.records) {
        try {
          records.push(deadLetterFromWire(record));
        } catch (error) {
          if (!(error instanceof DecodeError)) throw error;
          this.logger.warn("skipping malformed dead-letter record", {
            jobId: record.job?.id,
            error: error.message,
          });
        }
      }
      span.setAttribute("sepp.drained", records.length);
      return records;
    });
  }

  // ---- plumbing ----

  /** An ack, nack or extend: retried under the policy, its failure mapped to a lease error. */
  #leaseCall<Req, Resp>(operation: string, method: Method<Req, Resp>, request: Req): Promise<Resp> {
    return this.#leaseAttempts(operation, () => this.#call(method, request, this.rpcTimeout, undefined));
  }

  /** Attempts of an ack, nack or extend under the retry policy, the failure mapped to a lease error. */
  async #leaseAttempts<Resp>(operation: string, attempt: () => Promise<Resp>): Promise<Resp> {
    const outcome = await this.#withRetries(operation, "transient", attempt);
    if (outcome.ok) return outcome.value;
    const error = mapped(outcome.error, leaseErrorFromStatus);
    if (outcome.attempts > 1 && error instanceof JobNotFoundError) {
      this.logger.warn(
        "job not found after a retried call: an earlier attempt may have succeeded and only its answer was lost",
        { operation, attempts: outcome.attempts },
      );
    }
    throw error;
  }

  /** A call retried under the policy within `scope`, its failure mapped to a client error. */
  async #unary<Req, Resp>(
    operation: string,
    method: Method<Req, Resp>,
    request: Req,
    scope: RetryScope,
    deadlineMs: number,
    map: (status: StatusLike) => Error = errorFromStatus,
  ): Promise<Resp> {
    const outcome = await this.#withRetries(operation, scope, () =>
      this.#call(method, request, deadlineMs, undefined),
    );
    if (outcome.ok) return outcome.value;
    throw mapped(outcome.error, map);
  }

  /** `call` under the retry policy, riding a failover once the client knows it talks to a cluster. */
  #withRetries<T>(operation: string, scope: RetryScope, call: () => Promise<T>) {
    const inCluster = () => this.#connections.inCluster;
    return withRetries(
      this.retryPolicy,
      operation,
      scope,
      this.logger,
      call,
      Math.random,
      undefined,
      inCluster,
    );
  }

  /**
   * One attempt of a call: rejects with the grpc-js status error. A cluster follower's UNAVAILABLE
   * naming the leader (`sepp-leader`) switches the client to the leader and re-sends the call at
   * once, up to MAX_REDIRECTS times, within the same deadline: the follower executed nothing, so this
   * is no retry and holds for every call. An UNAVAILABLE naming no leader from a followed leader
   * sends the next attempt (the retry policy's, or the next call) back to the configured address.
   */
  async #call<Req, Resp>(
    method: Method<Req, Resp>,
    request: Req,
    deadlineMs: number,
    signal: AbortSignal | undefined,
  ): Promise<Resp> {
    const deadline = Date.now() + deadlineMs;
    const operation = method.path.slice(method.path.lastIndexOf("/") + 1);
    for (let redirects = 0; ; redirects++) {
      const connection = this.#connections.current;
      try {
        return await this.#send(connection, method, request, deadline, signal);
      } catch (error) {
        const leader = leaderFrom(error);
        if (leader !== undefined) {
          this.#connections.learnedCluster([]);
          if (redirects < MAX_REDIRECTS) {
            if (this.#connections.follow(connection, leader, operation)) continue;
            throw error;
          }
          this.logger.warn(`giving up on following the cluster leader after ${MAX_REDIRECTS} redirects`, {
            operation,
            addr: connection.target,
            leader,
          });
        } else if (isLeaderless(error)) {
          this.#connections.lost(connection, operation);
        }
        throw error;
      }
    }
  }

  /** One call on `connection`: rejects with the grpc-js status error. */
  #send<Req, Resp>(
    connection: Connection,
    method: Method<Req, Resp>,
    request: Req,
    deadline: number,
    signal: AbortSignal | undefined,
  ) {
    return new Promise<Resp>((resolve, reject) => {
      if (signal?.aborted) {
        reject({ code: grpc.status.CANCELLED, details: "cancelled by the caller" } satisfies StatusLike);
        return;
      }
      const metadata = this.#metadata();
      injectTraceMetadata(metadata);
      let call: grpc.ClientUnaryCall;
      // grpc-js starts a call's stream a few microtasks after creating it, and a cancel that comes
      // before that start does not stop it: the request still reaches the server (where a reserve
      // would then take jobs nobody receives). Cancelling again once the stream exists stops it.
      const onAbort = () => {
        call.cancel();
        setImmediate(() => call.cancel());
      };
      connection.begin();
      try {
        call = connection.grpc.makeUnaryRequest(
          method.path,
          method.requestSerialize,
          method.responseDeserialize,
          request,
          metadata,
          { deadline },
          (error, response) => {
            signal?.removeEventListener("abort", onAbort);
            connection.end();
            if (error) reject(error);
            else if (response === undefined)
              reject({ code: grpc.status.INTERNAL, details: "empty response" });
            else resolve(response);
          },
        );
      } catch (error) {
        connection.end();
        // grpc-js throws when the channel was closed.
        reject({
          code: grpc.status.CANCELLED,
          details: `the client is closed (${(error as Error).message})`,
        });
        return;
      }
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
}

/** The wire batch (built lazily inside the enqueue span, so it picks up that span's context) and its retry scope. */
function batchRequest(jobs: readonly EnqueueRequest[], single: string | undefined) {
  if (!Array.isArray(jobs)) throw new ValidationError("an enqueue batch must be an array of jobs");
  if (jobs.length === 0) throw new EmptyBatchError();
  const scope: RetryScope = jobs.every(hasIdempotencyKey) ? "transient" : "keylessEnqueue";
  const request = (): wire.EnqueueBatchRequest => {
    const active = activeTraceContext();
    return {
      jobs: jobs.map((job, index) => enqueueRequestToWire(job, single ?? `job ${index}`, active)),
    };
  };
  return { request, scope };
}

function reserveRequest(options: ReserveOptions): wire.ReserveRequest {
  if (typeof options !== "object" || options === null) throw new ValidationError("reserve needs options");
  const { queues, leaseDuration, waitTimeout, maxJobs, workerId } = options;
  if (!Array.isArray(queues) || queues.length === 0)
    throw new ValidationError("reserve: at least one queue is required");
  queues.forEach((queue, index) => {
    if (typeof queue !== "string" || queue === "") {
      throw new ValidationError(`reserve: queue name at index ${index} is empty`);
    }
  });
  checkMs("reserve: leaseDuration", leaseDuration, 1);
  const wait = checkMs("reserve: waitTimeout", waitTimeout ?? DEFAULT_WAIT_TIMEOUT_MS, 0);
  if (maxJobs !== undefined) checkCount("reserve: maxJobs", maxJobs, 1);
  if (workerId !== undefined && (typeof workerId !== "string" || workerId === "")) {
    throw new ValidationError("reserve: workerId must not be empty");
  }
  return {
    queues: [...queues],
    waitTimeout: wait > 0 ? durationFromMs(wait) : undefined,
    leaseDuration: durationFromMs(leaseDuration),
    workerId,
    maxJobs,
  };
}

/**
 * The attempts of an ack, nack or extend of a job that came on a Consume stream: the first goes on
 * that stream (or on a call of its own when the stream takes no more settles, or ended before
 * sending it), the retries the policy allows on calls of their own.
 */
function viaStream<C extends SettleOp["$case"], Resp>(
  route: SettleRoute,
  op: SettleOp & { $case: C },
  plain: () => Promise<Resp>,
): () => Promise<Resp> {
  let first = true;
  return async () => {
    if (!first) return plain();
    first = false;
    const sent = route.settle(op);
    if (sent === undefined) return plain();
    let outcome: SettleOutcome;
    try {
      outcome = await sent;
    } catch (error) {
      if (error instanceof NotSentError) return plain();
      throw error;
    }
    if (outcome.$case !== op.$case)
      throw new MalformedResponseError(`malformed response: a ${op.$case} answered as a ${outcome.$case}`);
    return outcome.value as Resp;
  };
}

function nackStrategy(retry: RetryDirective): wire.NackRetry["strategy"] {
  switch (retry.kind) {
    case "default":
      return { $case: "default", value: {} };
    case "after":
      return { $case: "delay", value: durationFromMs(retry.delay ?? 0) };
    case "deadLetter":
      return { $case: "deadLetter", value: {} };
  }
}

function ackFromWire(response: wire.EnqueueResponse): EnqueueAck {
  return { jobId: response.jobId, deduplicated: response.deduplicated };
}

function leaseAttributes(ctx: JobCtx) {
  return { "sepp.job_id": ctx.id, "sepp.attempt": ctx.attempt, "sepp.worker_id": ctx.workerId };
}

/** A call's failure as the package's error: statuses through `map`, anything else as it is. */
function mapped<E extends ClientError | LeaseError | Error>(
  error: unknown,
  map: (status: StatusLike) => E,
): unknown {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === "number" && typeof (error as { details?: unknown }).details === "string") {
    const result = map(error as StatusLike);
    if (error instanceof Error) Object.defineProperty(result, "cause", { value: error, configurable: true });
    return result;
  }
  return error;
}
